//! Loading a repository's input: its settings (`aiml.yaml`) first, then every blueprint file,
//! YAML read and parsed once, Jsonnet evaluated by [`crate::jsonnet`] (in parallel, results
//! kept in path order), and the envelope of every document checked, names unique across files.
//! Documents that fail to parse, break the envelope or reuse a name become diagnostics; the
//! files themselves are read through [`crate::repo`], which keeps them inside the repository.

use std::collections::BTreeMap;
use std::path::Path;

use rayon::prelude::*;

use crate::blueprint::{Blueprint, KnownKinds};
use crate::diagnostic::Diagnostic;
use crate::repo::{
    BLUEPRINTS_DIR, ReadError, SourceFile, case_collision, display_path, ensure_inside, is_jsonnet,
    read_source, read_text, source_files,
};

/// All blueprint files of a repository, parsed.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Files in path order.
    pub files: Vec<SourceFile>,
    /// Problems found while loading (syntax, envelope, duplicate names, settings).
    pub diagnostics: Vec<Diagnostic>,
    /// The repository's settings (`aiml.yaml`; defaults without it).
    pub settings: crate::settings::Settings,
    /// `aiml.yaml`, when the repository has one (for diagnostic snippets).
    pub settings_file: Option<SourceFile>,
    /// What Jsonnet blueprint files produced, by path.
    pub jsonnet: BTreeMap<String, JsonnetFile>,
}

/// A Jsonnet blueprint file's evaluation, besides its documents.
#[derive(Debug, Default)]
pub struct JsonnetFile {
    /// Where each document sits in the output (`[2]`, an object key, or `""`).
    pub labels: Vec<String>,
    /// The files it imported (path → text), for snippets.
    pub imports: BTreeMap<String, String>,
    /// The file's text followed by every input of its evaluation (imports, settings): what the
    /// render cache keys its blueprints by. Spans index into its start, the file's text.
    pub key_text: String,
}

impl Loaded {
    /// Every blueprint whose envelope is valid, in file and document order.
    #[must_use]
    pub fn blueprints<'a>(&'a self, kinds: &'a dyn KnownKinds) -> Vec<Blueprint<'a>> {
        let mut blueprints = Vec::new();
        for file in &self.files {
            let source = self.source(file);
            for node in &file.documents {
                if let Ok(blueprint) =
                    Blueprint::from_node(&file.path, node, kinds).map(|b| b.with_source(source))
                {
                    blueprints.push(blueprint);
                }
            }
        }
        blueprints
    }

    /// Checks every document's blueprint envelope and that names are unique, adding the
    /// problems to `diagnostics`. Documents of other apiVersions are reported as unsupported,
    /// so a stray manifest among blueprints is never silently ignored.
    pub fn check_envelopes(&mut self, kinds: &dyn KnownKinds) {
        let mut found = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for file in &self.files {
            let labels = self.jsonnet.get(&file.path).map(|j| j.labels.as_slice());
            for (index, node) in file.documents.iter().enumerate() {
                let label = labels
                    .and_then(|labels| labels.get(index))
                    .filter(|l| !l.is_empty());
                let mut document = Vec::new();
                match Blueprint::from_node(&file.path, node, kinds)
                    .map(|b| b.with_source(self.source(file)))
                {
                    Ok(blueprint) => {
                        let name_line = node.at(&["metadata", "name"]).map_or(0, |n| n.span.line);
                        let location = match (label, name_line) {
                            (None, _) => format!("{}:{}", file.path, node.span.line),
                            (Some(label), 0) => format!("{} (`{label}`)", file.path),
                            (Some(label), line) => format!("{}:{line} (`{label}`)", file.path),
                        };
                        if let Some(first) = seen.insert(blueprint.name.to_string(), location) {
                            document.push(
                                blueprint
                                    .error_at(
                                        "blueprint-name-duplicate",
                                        "metadata.name",
                                        format!(
                                            "blueprint name `{}` is already used",
                                            blueprint.name
                                        ),
                                    )
                                    .found(format!("also defined at {first}"))
                                    .expected("unique blueprint names in a repository")
                                    .fix("rename one of them"),
                            );
                        }
                    }
                    Err(diagnostic) => document.push(diagnostic),
                }
                // Not placed in Jsonnet output: say which document.
                if let Some(label) = label {
                    for diagnostic in document.iter_mut().filter(|d| d.line == 0) {
                        let field = diagnostic.field.take().unwrap_or_default();
                        diagnostic.field = Some(match (field.is_empty(), label.starts_with('[')) {
                            (true, _) => label.clone(),
                            (false, true) => format!("{label}.{field}"),
                            (false, false) => format!("{label:?}.{field}"),
                        });
                    }
                }
                found.extend(document);
            }
        }
        self.diagnostics.extend(found);
    }

    /// The text blueprints of `file` are keyed by: the file's text, and for Jsonnet every
    /// input of its evaluation.
    fn source<'a>(&'a self, file: &'a SourceFile) -> &'a str {
        self.jsonnet
            .get(&file.path)
            .map_or(file.text.as_str(), |j| j.key_text.as_str())
    }

    /// The text of a loaded file, for diagnostic snippets.
    #[must_use]
    pub fn text(&self, path: &str) -> Option<String> {
        self.files
            .iter()
            .chain(&self.settings_file)
            .find(|f| f.path == path)
            .map(|f| f.text.clone())
            .or_else(|| {
                self.jsonnet
                    .values()
                    .find_map(|j| j.imports.get(path).cloned())
            })
    }
}

/// Loads every blueprint file of the repository at `root`. A repository without a
/// `blueprints/` folder is an error: rendering it would delete every output.
pub fn load(root: &Path, kinds: &dyn KnownKinds, limit: u64) -> Result<Loaded, ReadError> {
    let dir = root.join(BLUEPRINTS_DIR);
    let mut loaded = Loaded::default();
    if !dir.is_dir() {
        return Err(ReadError::NoBlueprintsFolder {
            root: root.display().to_string(),
        });
    }
    // Settings first: Jsonnet blueprints read their variables from them.
    let canonical = fs_err::canonicalize(root)?;
    let settings_path = root.join(crate::settings::SETTINGS_FILE);
    if fs_err::symlink_metadata(&settings_path).is_ok() {
        ensure_inside(&canonical, &settings_path, crate::settings::SETTINGS_FILE)?;
    }
    let settings = crate::settings::load(root, limit)?;
    loaded.settings = settings.settings;
    loaded.settings_file = settings.file;
    loaded.diagnostics.extend(settings.diagnostics);
    let (files, libraries) = source_files(&dir)?;
    let displayed: Vec<String> = files.iter().map(|path| display_path(root, path)).collect();
    let libraries: Vec<String> = libraries
        .iter()
        .map(|path| display_path(root, path))
        .collect();
    if let Some((first, second)) =
        case_collision(displayed.iter().chain(&libraries).map(String::as_str))
    {
        return Err(ReadError::CaseCollision { first, second });
    }
    // Jsonnet files evaluate in a child process each, mostly waiting: read every file in
    // parallel, then keep the results (and the first error) in path order, as one by one.
    let timeout = if files.iter().any(|path| is_jsonnet(path)) {
        Some(crate::jsonnet::timeout()?)
    } else {
        None
    };
    let settings = &loaded.settings;
    let reads: Vec<Result<FileRead, ReadError>> = files
        .into_par_iter()
        .zip(displayed)
        .map(|(path, display)| {
            ensure_inside(&canonical, &path, &display)?;
            Ok(match timeout {
                Some(timeout) if is_jsonnet(&path) => {
                    let read =
                        read_jsonnet(root, &path, display, &settings.jsonnet, limit, timeout)?;
                    (
                        read.file,
                        read.diagnostic.into_iter().collect(),
                        read.jsonnet,
                    )
                }
                _ => {
                    let (file, diagnostics) = read_source(&path, display, limit)?;
                    (file, diagnostics, None)
                }
            })
        })
        .collect();
    for read in reads {
        let (file, diagnostics, jsonnet) = read?;
        if let Some(jsonnet) = jsonnet {
            loaded.jsonnet.insert(file.path.clone(), jsonnet);
        }
        loaded.diagnostics.extend(diagnostics);
        loaded.files.push(file);
    }
    loaded.check_envelopes(kinds);
    Ok(loaded)
}

/// One blueprint file as [`load`] reads it: its documents, their findings and, for Jsonnet,
/// what its evaluation read.
type FileRead = (SourceFile, Vec<Diagnostic>, Option<JsonnetFile>);

/// A Jsonnet file read and evaluated: its documents, what else its evaluation read, or why
/// it failed.
#[derive(Debug)]
pub struct JsonnetRead {
    /// The file, with the documents it evaluated to (none when it failed).
    pub file: SourceFile,
    /// Labels, imports and cache key; on failure, the library a finding points into.
    pub jsonnet: Option<JsonnetFile>,
    /// The evaluation's failure.
    pub diagnostic: Option<Diagnostic>,
}

/// Reads and evaluates the Jsonnet file `path` (shown as `display`) of the repository at
/// `root`, whose imports must stay inside `root`.
pub fn read_jsonnet(
    root: &Path,
    path: &Path,
    display: String,
    inputs: &crate::jsonnet::Inputs,
    limit: u64,
    timeout: std::time::Duration,
) -> Result<JsonnetRead, ReadError> {
    let text = read_text(path, &display, limit)?;
    let (documents, jsonnet, diagnostic) =
        match crate::jsonnet::evaluate(root, path, &display, &text, inputs, limit, timeout) {
            Ok(evaluated) => {
                let mut key_text = text.clone();
                // After the text, so that spans still index into it.
                key_text.push_str("\n\0jsonnet inputs\0");
                key_text.push_str(&format!("{inputs:?}"));
                for (import, content) in &evaluated.imports {
                    key_text.push_str(&format!("\0{import}\0{}\0{content}", content.len()));
                }
                let jsonnet = JsonnetFile {
                    labels: evaluated.labels,
                    imports: evaluated.imports,
                    key_text,
                };
                (evaluated.documents, Some(jsonnet), None)
            }
            Err(diagnostic) => {
                // A location in a library: keep its text for the snippet.
                let library = (diagnostic.file != display)
                    .then(|| read_text(&root.join(&diagnostic.file), &diagnostic.file, limit).ok())
                    .flatten()
                    .map(|library| JsonnetFile {
                        imports: BTreeMap::from([(diagnostic.file.clone(), library)]),
                        ..JsonnetFile::default()
                    });
                (Vec::new(), library, Some(diagnostic))
            }
        };
    Ok(JsonnetRead {
        file: SourceFile {
            path: display,
            text,
            documents,
        },
        jsonnet,
        diagnostic,
    })
}

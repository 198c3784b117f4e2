//! A GitOps repository managed by `kubectl aiml`: finding and loading its blueprints.
//!
//! Blueprint files are `blueprints/**/*.yaml|yml`, read in sorted path order so that every run
//! sees them the same way. Each file is read and parsed once; documents that fail to parse,
//! break the blueprint envelope or reuse a name become diagnostics.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::blueprint::Blueprint;
use crate::diagnostic::Diagnostic;
use crate::kinds::Registry;
use crate::yaml::{self, Node};

/// Folder of human-written blueprints.
pub const BLUEPRINTS_DIR: &str = "blueprints";
/// Folder of generated overlays.
pub const OVERLAYS_DIR: &str = "overlays";
/// Folder of rendered objects.
pub const RENDERED_DIR: &str = "rendered";

/// A parsed input file.
#[derive(Debug)]
pub struct SourceFile {
    /// Path relative to the repository (or as given), with `/` separators.
    pub path: String,
    /// Its text.
    pub text: String,
    /// Its documents.
    pub documents: Vec<Node>,
}

/// All blueprint files of a repository, parsed.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Files in path order.
    pub files: Vec<SourceFile>,
    /// Problems found while loading (syntax, envelope, duplicate names).
    pub diagnostics: Vec<Diagnostic>,
}

impl Loaded {
    /// Every blueprint whose envelope is valid, in file and document order.
    #[must_use]
    pub fn blueprints<'a>(&'a self, registry: &'a Registry) -> Vec<Blueprint<'a>> {
        let mut blueprints = Vec::new();
        for file in &self.files {
            for node in &file.documents {
                if let Ok(blueprint) = Blueprint::from_node(&file.path, node, registry) {
                    blueprints.push(blueprint);
                }
            }
        }
        blueprints
    }

    /// Checks every document's blueprint envelope and that names are unique, adding the
    /// problems to `diagnostics`. Documents of other apiVersions are reported as unsupported,
    /// so a stray manifest among blueprints is never silently ignored.
    pub fn check_envelopes(&mut self, registry: &Registry) {
        let mut found = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for file in &self.files {
            for node in &file.documents {
                match Blueprint::from_node(&file.path, node, registry) {
                    Ok(blueprint) => {
                        let location = format!("{}:{}", file.path, node.span.line);
                        if let Some(first) = seen.insert(blueprint.name.to_string(), location) {
                            found.push(
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
                    Err(diagnostic) => found.push(diagnostic),
                }
            }
        }
        self.diagnostics.extend(found);
    }

    /// The text of a loaded file, for diagnostic snippets.
    #[must_use]
    pub fn text(&self, path: &str) -> Option<String> {
        self.files
            .iter()
            .find(|f| f.path == path)
            .map(|f| f.text.clone())
    }
}

/// Recursively lists every file under `dir`, sorted by path, without following symbolic
/// links.
pub fn files_under(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry?;
        if !entry.file_type().is_dir() {
            files.push(entry.into_path());
        }
    }
    files.sort();
    Ok(files)
}

/// Recursively lists `*.yaml` / `*.yml` files under `dir`, sorted.
pub fn yaml_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = files_under(dir)?;
    files.retain(|path| path.extension().is_some_and(|e| e == "yaml" || e == "yml"));
    Ok(files)
}

/// `path` relative to `root`, with `/` separators, for messages and output.
#[must_use]
pub fn display_path(root: &Path, path: &Path) -> String {
    let relative = path.strip_prefix(root).unwrap_or(path);
    relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Reads and parses one file; a syntax error becomes a `yaml-syntax` diagnostic.
pub fn read_source(
    path: &Path,
    display: String,
) -> std::io::Result<(SourceFile, Option<Diagnostic>)> {
    let text = fs_err::read_to_string(path)?;
    let (documents, diagnostic) = match yaml::parse_documents(&text) {
        Ok(documents) => (documents, None),
        Err(error) => {
            let mut d =
                Diagnostic::error("yaml-syntax", format!("malformed YAML: {}", error.message))
                    .expected("well-formed YAML");
            d.file.clone_from(&display);
            if let Some(span) = error.span {
                d = d.at(display.clone(), span);
            }
            (Vec::new(), Some(d))
        }
    };
    Ok((
        SourceFile {
            path: display,
            text,
            documents,
        },
        diagnostic,
    ))
}

/// Loads every blueprint file of the repository at `root`.
pub fn load(root: &Path, registry: &Registry) -> std::io::Result<Loaded> {
    let dir = root.join(BLUEPRINTS_DIR);
    let mut loaded = Loaded::default();
    if !dir.is_dir() {
        return Ok(loaded);
    }
    for path in yaml_files(&dir)? {
        let (file, diagnostic) = read_source(&path, display_path(root, &path))?;
        loaded.diagnostics.extend(diagnostic);
        loaded.files.push(file);
    }
    loaded.check_envelopes(registry);
    Ok(loaded)
}

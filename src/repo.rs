//! A GitOps repository managed by `kubectl aiml`: finding and loading its blueprints.
//!
//! Blueprint files are `blueprints/**/*.yaml|yml`, and `*.jsonnet` evaluated by
//! [`crate::jsonnet`] into the same documents, read in sorted path order so that every run sees
//! them the same way. Each file is read and parsed once; documents that fail to parse, break
//! the blueprint envelope or reuse a name become diagnostics.
//!
//! A cloned repository is untrusted input: a blueprint file, folder or `aiml.yaml` that leads
//! outside the repository through a symbolic link is refused (links inside it are fine), as
//! Jsonnet imports are, and so are input paths that differ only by case, which a clone on a
//! case-insensitive file system (macOS, Windows) would fold into one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

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
    pub fn blueprints<'a>(&'a self, registry: &'a Registry) -> Vec<Blueprint<'a>> {
        let mut blueprints = Vec::new();
        for file in &self.files {
            let source = self.source(file);
            for node in &file.documents {
                if let Ok(blueprint) =
                    Blueprint::from_node(&file.path, node, registry).map(|b| b.with_source(source))
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
    pub fn check_envelopes(&mut self, registry: &Registry) {
        let mut found = Vec::new();
        let mut seen: BTreeMap<String, String> = BTreeMap::new();
        for file in &self.files {
            let labels = self.jsonnet.get(&file.path).map(|j| j.labels.as_slice());
            for (index, node) in file.documents.iter().enumerate() {
                let label = labels
                    .and_then(|labels| labels.get(index))
                    .filter(|l| !l.is_empty());
                let mut document = Vec::new();
                match Blueprint::from_node(&file.path, node, registry)
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

/// Why an input file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The operating system said no (missing, permissions, …); the path is in the message.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// Not a regular file: a folder, FIFO, device or socket is never read as input.
    #[error("`{path}` is {what}, not a regular file")]
    NotAFile {
        /// The path as given.
        path: String,
        /// What it is, e.g. "a character device".
        what: &'static str,
    },
    /// Larger than the limit.
    #[error(
        "`{path}` is larger than {} (set `{}` to raise the limit)",
        crate::limits::human_size(*limit),
        crate::limits::MAX_FILE_SIZE_VAR
    )]
    TooLarge {
        /// The path.
        path: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// Not UTF-8 text.
    #[error("`{path}` is not UTF-8 text")]
    NotText {
        /// The path.
        path: String,
    },
    /// The repository has no `blueprints/` folder.
    #[error("`{root}` has no `{BLUEPRINTS_DIR}/` folder: nothing to render or validate")]
    NoBlueprintsFolder {
        /// The repository root.
        root: String,
    },
    /// An `AIML_*` limit variable does not parse.
    #[error(transparent)]
    Limit(#[from] crate::limits::LimitError),
    /// An input of the repository is a symbolic link (or under one) that leads outside it.
    #[error(
        "`{path}` leads outside the repository through a symbolic link (to `{target}`): blueprints, `aiml.yaml` and kinds are read only from inside the repository, like Jsonnet imports; copy the file into the repository instead of linking to it"
    )]
    OutsideRepository {
        /// Repository-relative path.
        path: String,
        /// Where it leads.
        target: String,
    },
    /// Two input paths differ only by case.
    #[error("{}", case_collision_message(.first, .second))]
    CaseCollision {
        /// The first path, repository-relative.
        first: String,
        /// The other.
        second: String,
    },
    /// A folder walk failed (a loop of symbolic links, permissions, …).
    #[error("could not read the folder `{path}`: {source}")]
    Walk {
        /// Where.
        path: String,
        /// Why.
        #[source]
        source: walkdir::Error,
    },
}

/// Why two paths that differ only by case are refused, and the fix.
#[must_use]
pub fn case_collision_message(first: &str, second: &str) -> String {
    let (first, second) = (
        crate::diagnostic::sanitize(first, 200),
        crate::diagnostic::sanitize(second, 200),
    );
    format!(
        "`{first}` and `{second}` differ only by case: on a case-insensitive file system (macOS, Windows) they are one and the same, so a clone there loses one of them; rename one of them"
    )
}

/// The first two of `paths` (`/`-separated) that differ only by case, in themselves or in a
/// folder on their way (`a/B/x` and `a/b/y`): what a case-insensitive file system folds into
/// one. Letters are compared by their Unicode lower case.
#[must_use]
pub fn case_collision<'a>(paths: impl IntoIterator<Item = &'a str>) -> Option<(String, String)> {
    let mut seen: std::collections::HashMap<String, &'a str> = std::collections::HashMap::new();
    for path in paths {
        let ends = path
            .char_indices()
            .filter(|(_, c)| *c == '/')
            .map(|(index, _)| index)
            .chain([path.len()]);
        for end in ends {
            let prefix = &path[..end];
            match seen.entry(prefix.to_lowercase()) {
                std::collections::hash_map::Entry::Occupied(first) if *first.get() != prefix => {
                    return Some((first.get().to_string(), prefix.to_string()));
                }
                std::collections::hash_map::Entry::Occupied(_) => {}
                std::collections::hash_map::Entry::Vacant(slot) => {
                    slot.insert(prefix);
                }
            }
        }
    }
    None
}

/// Checks that `path`, an input of the repository at `root` (canonical) shown as `display`,
/// does not lead outside it through a symbolic link (of the file or of a folder on its way).
pub fn ensure_inside(root: &Path, path: &Path, display: &str) -> Result<(), ReadError> {
    // A dangling link, or a link to a device or FIFO: reading it says what it is, and reads
    // nothing.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file() || m.is_dir()) {
        return Ok(());
    }
    let Ok(target) = path.canonicalize() else {
        return Ok(());
    };
    if target.starts_with(root) {
        return Ok(());
    }
    Err(ReadError::OutsideRepository {
        path: display.to_string(),
        target: crate::diagnostic::sanitize(&target.display().to_string(), 200),
    })
}

/// What a file system entry is, in words, for messages.
#[must_use]
pub fn describe_file_type(file_type: std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt as _;
        if file_type.is_fifo() {
            return "a FIFO (named pipe)";
        }
        if file_type.is_char_device() {
            return "a character device";
        }
        if file_type.is_block_device() {
            return "a block device";
        }
        if file_type.is_socket() {
            return "a socket";
        }
    }
    if file_type.is_dir() {
        "a folder"
    } else if file_type.is_symlink() {
        "a symbolic link"
    } else if file_type.is_file() {
        "a regular file"
    } else {
        "a special file"
    }
}

/// Reads a regular file of at most `limit` bytes as UTF-8 text. Anything else (a FIFO that
/// would block, a device that never ends, a huge file) is an error naming the path, before
/// a byte is read.
pub fn read_text(path: &Path, display: &str, limit: u64) -> Result<String, ReadError> {
    use std::io::Read as _;
    let metadata = fs_err::metadata(path)?;
    if !metadata.is_file() {
        return Err(ReadError::NotAFile {
            path: display.to_string(),
            what: describe_file_type(metadata.file_type()),
        });
    }
    if metadata.len() > limit {
        return Err(ReadError::TooLarge {
            path: display.to_string(),
            limit,
        });
    }
    // Sized for the file (bounded by the limit above): one read, no regrowth, for each of
    // the tens of thousands of files a `validate` of a fleet reads.
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0) + 1);
    // The file may grow between the check and the read.
    fs_err::File::open(path)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(ReadError::TooLarge {
            path: display.to_string(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| ReadError::NotText {
        path: display.to_string(),
    })
}

/// The repository root for a command run in `start`: the nearest folder (from `start` up)
/// that holds `blueprints/`, else the nearest git work tree. `None` outside of both, so that
/// a job run in the wrong folder fails instead of checking nothing.
#[must_use]
pub fn discover(start: &Path) -> Option<PathBuf> {
    let start = start.canonicalize().ok()?;
    let with_blueprints = start
        .ancestors()
        .find(|dir| dir.join(BLUEPRINTS_DIR).is_dir());
    with_blueprints
        .or_else(|| start.ancestors().find(|dir| dir.join(".git").exists()))
        .map(Path::to_path_buf)
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

/// Recursively lists `*.yaml` / `*.yml` inputs under `dir`, sorted, following symbolic links
/// (a loop is an error). Entries that are not regular files are listed too, so that reading
/// them reports what they are instead of skipping them silently.
pub fn input_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    let mut files = Vec::new();
    for entry in walkdir::WalkDir::new(dir).follow_links(true) {
        let entry = entry.map_err(|source| ReadError::Walk {
            path: display_path(Path::new(""), dir),
            source,
        })?;
        let is_yaml = entry
            .path()
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml");
        if is_yaml && !entry.file_type().is_dir() {
            files.push(entry.into_path());
        }
    }
    files.sort();
    Ok(files)
}

/// Recursively lists blueprint files under `dir`: YAML ([`input_files`]) and `*.jsonnet`.
/// `*.libsonnet` files are libraries, imported and never blueprints themselves.
pub fn blueprint_files(dir: &Path) -> Result<Vec<PathBuf>, ReadError> {
    Ok(source_files(dir)?.0)
}

/// Blueprint files under `dir` (sorted, as [`blueprint_files`]) and Jsonnet libraries
/// (`*.libsonnet`), in one walk that follows symbolic links (a loop is an error).
fn source_files(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ReadError> {
    let (mut blueprints, mut libraries) = (Vec::new(), Vec::new());
    for entry in walkdir::WalkDir::new(dir).follow_links(true) {
        let entry = entry.map_err(|source| ReadError::Walk {
            path: display_path(Path::new(""), dir),
            source,
        })?;
        if entry.file_type().is_dir() {
            continue;
        }
        let extension = entry.path().extension().and_then(|e| e.to_str());
        match extension {
            Some("yaml" | "yml" | crate::jsonnet::EXTENSION) => blueprints.push(entry.into_path()),
            Some("libsonnet") => libraries.push(entry.into_path()),
            _ => {}
        }
    }
    blueprints.sort();
    libraries.sort();
    Ok((blueprints, libraries))
}

/// Whether `path` is a Jsonnet blueprint file.
#[must_use]
pub fn is_jsonnet(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e == crate::jsonnet::EXTENSION)
}

/// The rule of plain values that YAML readers take differently (`010`, `yes`): a warning.
pub const YAML_AMBIGUOUS: &str = "yaml-ambiguous";

/// Reads (see [`read_text`]) and parses one file; each malformed document becomes a
/// `yaml-syntax` diagnostic, and the other documents are still read. Plain values that
/// YAML readers take differently are `yaml-ambiguous` warnings.
pub fn read_source(
    path: &Path,
    display: String,
    limit: u64,
) -> Result<(SourceFile, Vec<Diagnostic>), ReadError> {
    let text = read_text(path, &display, limit)?;
    Ok(parse_source(text, display))
}

/// Parses a text read elsewhere (standard input) as [`read_source`] parses a file's.
#[must_use]
pub fn parse_source(text: String, display: String) -> (SourceFile, Vec<Diagnostic>) {
    let (documents, errors) = yaml::parse_documents_lenient(&text);
    let ambiguous =
        yaml::ambiguous_scalars(&text, &documents)
            .into_iter()
            .map(|(span, field, found)| {
                Diagnostic::warning(YAML_AMBIGUOUS, found.message)
                    .at(display.clone(), span)
                    .field(field)
                    .fix(found.fix)
            });
    let diagnostics = errors
        .into_iter()
        .map(|error| {
            let mut d =
                Diagnostic::error("yaml-syntax", format!("malformed YAML: {}", error.message))
                    .expected("well-formed YAML");
            d.file.clone_from(&display);
            if let Some(span) = error.span {
                d = d.at(display.clone(), span);
            }
            d
        })
        .chain(ambiguous)
        .collect();
    (
        SourceFile {
            path: display,
            text,
            documents,
        },
        diagnostics,
    )
}

/// Loads every blueprint file of the repository at `root`. A repository without a
/// `blueprints/` folder is an error: rendering it would delete every output.
pub fn load(root: &Path, registry: &Registry, limit: u64) -> Result<Loaded, ReadError> {
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
    loaded.check_envelopes(registry);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_differ_only_by_case_collide_in_themselves_or_their_folders() {
        let collision = |paths: &[&str]| case_collision(paths.iter().copied());
        assert_eq!(collision(&["blueprints/a.yaml", "blueprints/b.yaml"]), None);
        assert_eq!(
            collision(&["blueprints/A.yaml", "blueprints/a.yaml"]),
            Some(("blueprints/A.yaml".into(), "blueprints/a.yaml".into()))
        );
        assert_eq!(
            collision(&["blueprints/Team/a.yaml", "blueprints/team/b.yaml"]),
            Some(("blueprints/Team".into(), "blueprints/team".into()))
        );
        assert_eq!(
            collision(&["blueprints/ÉTÉ.yaml", "blueprints/été.yaml"]),
            Some(("blueprints/ÉTÉ.yaml".into(), "blueprints/été.yaml".into()))
        );
        // The same path twice is one file, not a collision.
        assert_eq!(collision(&["a/b", "a/b", "a/c"]), None);
    }
}

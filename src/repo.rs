//! The layout of a repository managed by `kubectl aiml` and the safe reading of its files.
//!
//! Blueprint files are `blueprints/**/*.yaml|yml`, and `*.jsonnet`, listed in sorted path order
//! so that every run sees them the same way; each file is read with a size bound and parsed
//! once, its malformed documents becoming diagnostics. Loading a whole repository (settings,
//! Jsonnet evaluation, envelopes) is [`crate::input`]'s, a layer above.
//!
//! A cloned repository is untrusted input: a blueprint file, folder or `aiml.yaml` that leads
//! outside the repository through a symbolic link is refused (links inside it are fine), as
//! Jsonnet imports are, and so are input paths that differ only by case, which a clone on a
//! case-insensitive file system (macOS, Windows) would fold into one.

use std::path::{Path, PathBuf};

use crate::diagnostic::Diagnostic;
use crate::yaml::{self, Node};

/// Folder of human-written blueprints.
pub const BLUEPRINTS_DIR: &str = "blueprints";
/// Folder of generated overlays.
pub const OVERLAYS_DIR: &str = "overlays";
/// Folder of rendered objects.
pub const RENDERED_DIR: &str = "rendered";
/// Extension of Jsonnet blueprint files (`*.libsonnet` files are libraries).
pub const JSONNET_EXTENSION: &str = "jsonnet";

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
pub fn source_files(dir: &Path) -> Result<(Vec<PathBuf>, Vec<PathBuf>), ReadError> {
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
            Some("yaml" | "yml" | JSONNET_EXTENSION) => blueprints.push(entry.into_path()),
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
    path.extension().is_some_and(|e| e == JSONNET_EXTENSION)
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

//! What the repository targets share: a fuzz input as a small repository, written to a scratch
//! folder that each run reuses.
//!
//! An input is a series of files, each introduced by a line `=== <path>` (a path relative to
//! the repository root, of letters, digits, `.`, `_`, `-` and `/`, without `..`); text before
//! the first such line goes to the target's default path. `scripts/fuzz` packs seeds so.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Most files in one input: a kind is a handful of files, a fleet a file and its libraries.
const MAX_FILES: usize = 8;

/// The files of `data` (path, text); `None` when it is not text or names an unusable path.
pub fn unpack(data: &[u8], default: &str) -> Option<Vec<(String, String)>> {
    let text = std::str::from_utf8(data).ok()?;
    let mut files: Vec<(String, String)> = Vec::new();
    let mut current = (default.to_string(), String::new());
    for line in text.split_inclusive('\n') {
        if let Some(path) = line.strip_prefix("=== ") {
            let path = path.trim_end();
            let usable = !path.is_empty()
                && path.len() < 100
                && path.split('/').count() <= 4
                && path
                    .split('/')
                    .all(|part| !part.is_empty() && part != "." && part != "..")
                && path
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | '/'));
            if !usable {
                return None;
            }
            let done = std::mem::replace(&mut current, (path.to_string(), String::new()));
            if !done.1.is_empty() || done.0 != default {
                files.push(done);
            }
        } else {
            current.1.push_str(line);
        }
    }
    files.push(current);
    // Later files of the same path replace earlier ones; a path cannot be a file and a folder.
    files.dedup_by(|later, earlier| later.0 == earlier.0);
    let clash = files
        .iter()
        .any(|(a, _)| files.iter().any(|(b, _)| b.starts_with(&format!("{a}/"))));
    (files.len() <= MAX_FILES && !clash).then_some(files)
}

/// A scratch repository holding exactly `files` (and an empty `blueprints/`): its root.
pub fn repository(files: &[(String, String)]) -> &'static Path {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    let root = ROOT.get_or_init(|| {
        let dir = tempfile::Builder::new()
            .prefix("aiml-fuzz-")
            .tempdir()
            .expect("scratch folder");
        // Kept for the whole process; canonical so that paths compare as the tool's do.
        dir.keep().canonicalize().expect("scratch folder")
    });
    for entry in std::fs::read_dir(root).expect("scratch folder") {
        let path = entry.expect("scratch entry").path();
        if path.is_dir() {
            std::fs::remove_dir_all(&path).expect("clear scratch");
        } else {
            std::fs::remove_file(&path).expect("clear scratch");
        }
    }
    std::fs::create_dir_all(root.join("blueprints")).expect("blueprints folder");
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("folder");
        std::fs::write(&path, text).expect("write");
    }
    root
}

/// Renders `diagnostics` as the command line does (human and JSON), with `files` as sources.
pub fn show(diagnostics: &[aiml::diagnostic::Diagnostic], files: &[(String, String)]) {
    let diagnostics = aiml::jsonnet::relocate(diagnostics);
    let lookup = |path: &str| {
        files
            .iter()
            .find(|(p, _)| p == path)
            .map(|(_, text)| text.clone())
    };
    let _ = aiml::diagnostic::render_human(&diagnostics, &lookup, false);
    let _ = aiml::diagnostic::render_json(&diagnostics);
}

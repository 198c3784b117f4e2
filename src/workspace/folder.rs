//! Generated folders and their marker: writing a folder with the list of what the tool wrote
//! (each file's git blob id), reading that list back, and telling a current folder, a hand
//! edit and a foreign file apart.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{MARKER, MARKER_HEADER};
use crate::repo;

/// Refuses a generated folder whose file paths a case-insensitive file system (macOS,
/// Windows) would fold into one, or that names one file twice: a clone there would hold
/// one object where the repository has two.
fn check_output_paths<'a>(dir: &Path, files: &[(&'a str, &'a [u8])]) -> std::io::Result<()> {
    // `rendered/<name>`, whether `dir` is under staging or the repository.
    let folder: Vec<String> = dir
        .components()
        .rev()
        .take(2)
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let shown = |path: &str| format!("{}/{}/{path}", folder[1..].join("/"), folder[0]);
    let mut seen = BTreeSet::new();
    for (path, _) in files {
        if !seen.insert(*path) {
            return Err(std::io::Error::other(format!(
                "two objects would be written to `{}`: their identities differ only by case; rename one of them",
                crate::diagnostic::sanitize(&shown(path), 200)
            )));
        }
    }
    match repo::case_collision(files.iter().map(|(path, _)| *path)) {
        Some((first, second)) => Err(std::io::Error::other(repo::case_collision_message(
            &shown(&first),
            &shown(&second),
        ))),
        None => Ok(()),
    }
}

/// Refuses what [`write_folder`] would refuse for `files` in `dir`, without writing.
pub fn check_folder(dir: &Path, files: &[(&str, &[u8])]) -> std::io::Result<()> {
    check_output_paths(dir, files)
}

/// Writes a generated folder: `files` (relative path → content) and the marker listing them.
/// Paths that differ only by case are refused (`check_output_paths`) before a file is
/// written.
pub fn write_folder<'a>(
    dir: &Path,
    source: &str,
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> std::io::Result<()> {
    let files: Vec<(&str, &[u8])> = files.into_iter().collect();
    check_output_paths(dir, &files)?;
    let mut written = BTreeMap::new();
    for (relative, content) in files {
        let path = dir.join(relative);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent)?;
        }
        fs_err::write(&path, content)?;
        written.insert(relative.to_string(), blob_id(content)?);
    }
    fs_err::create_dir_all(dir)?;
    fs_err::write(dir.join(MARKER), marker(source, &written))
}

/// Whether the generated folder `dir` already holds exactly `files` and the marker a render
/// would write with them, and nothing else: then it need not be staged, compared or swapped.
/// Reads only; anything unexpected (a link, a missing or extra file) is `false`.
pub fn folder_is_current<'a>(
    dir: &Path,
    source: &str,
    files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
) -> std::io::Result<bool> {
    let files: Vec<(&str, &[u8])> = files.into_iter().collect();
    check_output_paths(dir, &files)?;
    if !fs_err::symlink_metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Ok(false);
    }
    let same = |path: &Path, content: &[u8]| {
        std::fs::symlink_metadata(path)
            .is_ok_and(|m| m.is_file() && m.len() == content.len() as u64)
            && std::fs::read(path).is_ok_and(|on_disk| on_disk == content)
    };
    let mut written = BTreeMap::new();
    let mut expected = BTreeSet::from([MARKER.to_string()]);
    for (relative, content) in files {
        if !same(&dir.join(relative), content) {
            return Ok(false);
        }
        written.insert(relative.to_string(), blob_id(content)?);
        expected.insert(relative.to_string());
    }
    if !same(&dir.join(MARKER), marker(source, &written).as_bytes()) {
        return Ok(false);
    }
    Ok(tree_paths(dir)? == expected)
}

/// The marker text for a generated folder holding `files` (relative path → git blob id of
/// the content written), generated from the blueprint file `source`.
#[must_use]
pub fn marker(source: &str, files: &BTreeMap<String, String>) -> String {
    let mut text = format!(
        "{MARKER_HEADER} from {source}; edit the blueprint, not this folder.\n\
         # A render replaces the files listed below, and only those. Each line: the git blob id\n\
         # of what it wrote (`git hash-object FILE`), then the file.\n"
    );
    for (file, id) in files {
        text.push_str(&format!("{id}  {file}\n"));
    }
    text
}

/// The git blob id of `content` (what `git hash-object` prints), in hex: how markers record
/// what the tool wrote, so that hand edits show.
pub fn blob_id(content: &[u8]) -> std::io::Result<String> {
    git2::Oid::hash_object(git2::ObjectType::Blob, content)
        .map(|oid| oid.to_string())
        .map_err(std::io::Error::other)
}

/// The files a generated folder's marker lists (the marker included), each with the blob id
/// the marker records for it (`None` for the marker, and in markers written before ids were
/// recorded), or `None` when `dir` is not a real folder with a marker.
pub(super) fn generated_files(
    dir: &Path,
) -> std::io::Result<Option<BTreeMap<String, Option<String>>>> {
    let Ok(metadata) = fs_err::symlink_metadata(dir) else {
        return Ok(None);
    };
    let marker_path = dir.join(MARKER);
    let marker_is_file =
        fs_err::symlink_metadata(&marker_path).is_ok_and(|m| m.file_type().is_file());
    if !metadata.file_type().is_dir() || !marker_is_file {
        return Ok(None);
    }
    let text = fs_err::read_to_string(&marker_path)?;
    if !text.starts_with(MARKER_HEADER) {
        return Ok(None);
    }
    let mut files: BTreeMap<String, Option<String>> = text
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(marker_line)
        // A listed path never leaves its folder.
        .filter(|(path, _)| {
            !path
                .split('/')
                .any(|part| part.is_empty() || part == "." || part == "..")
        })
        .collect();
    files.insert(MARKER.to_string(), None);
    Ok(Some(files))
}

/// A marker line: `<blob id>  <path>`, or a bare path (markers of earlier versions).
fn marker_line(line: &str) -> (String, Option<String>) {
    match line.split_once("  ") {
        Some((id, path))
            if id.len() == 40 && id.bytes().all(|b| b.is_ascii_hexdigit()) && !path.is_empty() =>
        {
            (path.to_string(), Some(id.to_string()))
        }
        _ => (line.to_string(), None),
    }
}

/// Every entry under `dir` that is not a folder (files, links, FIFOs …), relative, without
/// following links.
pub(super) fn tree_paths(dir: &Path) -> std::io::Result<BTreeSet<String>> {
    let mut paths = BTreeSet::new();
    for entry in walkdir::WalkDir::new(dir).min_depth(1) {
        let entry = entry?;
        if !entry.file_type().is_dir() {
            paths.insert(repo::display_path(dir, entry.path()));
        }
    }
    Ok(paths)
}

/// A generated file as found on disk.
#[derive(Debug)]
pub(super) struct GeneratedFile {
    pub(super) content: Vec<u8>,
    /// The blob id its marker records, when it records one.
    recorded: Option<String>,
}

impl GeneratedFile {
    /// Whether the content is no longer what the tool wrote (only knowable when the marker
    /// records an id).
    pub(super) fn edited_by_hand(&self) -> std::io::Result<bool> {
        Ok(match &self.recorded {
            Some(recorded) => blob_id(&self.content)? != *recorded,
            None => false,
        })
    }
}

/// The generated files of `dir` (relative path → content and recorded id): those its marker
/// lists that are regular files. `None` when `dir` is not a generated folder.
pub(super) fn read_generated(
    dir: &Path,
) -> std::io::Result<Option<BTreeMap<String, GeneratedFile>>> {
    let Some(listed) = generated_files(dir)? else {
        return Ok(None);
    };
    let mut files = BTreeMap::new();
    for (path, recorded) in listed {
        let full = dir.join(&path);
        // Never read through a link or a special file, even one a marker names.
        if fs_err::symlink_metadata(&full).is_ok_and(|m| m.file_type().is_file()) {
            let content = fs_err::read(&full)?;
            files.insert(path, GeneratedFile { content, recorded });
        }
    }
    Ok(Some(files))
}

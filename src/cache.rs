//! The render cache: a blueprint whose output on disk is what a render would write again is
//! neither compiled, built nor validated.
//!
//! A blueprint's render is a pure function of its blueprint file (for a Jsonnet blueprint, the
//! file and every file its evaluation read: [`crate::input::JsonnetFile::key_text`], which
//! [`Inputs::text`] receives), of what planning read of the
//! other blueprints (their exports, [`crate::plan::Lookups`]), of the repository settings, of
//! the checks asked for, and of this binary (its build fingerprint covers templates, catalog,
//! schemas and rules). After a render commits, the cache records per blueprint
//! (`.aiml/cache/<name>.json`): a key over those inputs, the exports it read, its result
//! (findings, objects, sync roots), the markers it wrote, and the size and modification time
//! of every file it wrote. A later run whose key and read exports match, and whose folders on
//! disk still hold exactly those files — unchanged in size and time, or else in content, by
//! the blob ids the markers record — reuses the result and leaves the folders alone.
//!
//! The cache can never change what is written: it only decides that writing is not needed,
//! and anything it cannot prove (an unreadable or foreign entry, a changed file, a build that
//! fell back to the kustomize binary of another version) is a miss. Entries are written
//! atomically under the render lock, by name, so concurrent runs never see half an entry; a
//! reader tolerates any entry. `.aiml/` is ignored by git.
//!
//! A cloned repository may carry a `.aiml/cache/` of its own, with entries whose keys match
//! (they are hashes of public inputs) and whose results lie. So an entry also records the
//! identity of each marker file it vouches for (device, inode and change time, which the
//! kernel sets and no file content can forge); a checkout creates new files, so an entry that
//! was not written on this machine after this render never matches. Entries are read and
//! written without following links. `AIML_CACHE=off` or
//! `--no-cache` turns it off.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::diagnostic::{Diagnostic, ObjectRef};
use crate::plan::{Lookups, Repository};
use crate::repo::{OVERLAYS_DIR, RENDERED_DIR};
use crate::sync::Roots;
use crate::workspace::{CACHE_DIR, MARKER, STATE_DIR};

/// Environment variable that turns the cache off (`off`, `0` or `false`).
pub const CACHE_VAR: &str = "AIML_CACHE";
/// What decides every blueprint's output besides its inputs: this build.
const FINGERPRINT: &str = include_str!(concat!(env!("OUT_DIR"), "/fingerprint.txt"));
/// Entry format; bump when [`Entry`] changes shape.
const FORMAT: u32 = 2;
/// Largest entry read: a blueprint's entry is a few kilobytes.
const MAX_ENTRY_SIZE: u64 = 64 * 1024 * 1024;

/// The cache of one repository.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
    /// Run-wide inputs: settings, checks, kustomize.
    context: String,
}

/// What a cached render of one blueprint produced, as the pipeline reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CachedResult {
    /// Findings (already pointed at the blueprint).
    pub diagnostics: Vec<Diagnostic>,
    /// Identities of the rendered objects, sorted.
    pub objects: Vec<ObjectRef>,
    /// Findings the blueprint's own annotation dropped.
    pub suppressed: usize,
    /// One-line description.
    pub description: String,
    /// Objects per target folder.
    pub roots: Roots,
}

/// The record of one blueprint's last render.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    format: u32,
    key: String,
    /// Exports read while planning: name → hash (`None`: no such blueprint).
    reads: BTreeMap<String, Option<String>>,
    /// Hash of every blueprint name, when planning listed them.
    all_names: Option<String>,
    result: CachedResult,
    /// `overlays/<name>` and `rendered/<name>` → their marker text.
    markers: BTreeMap<String, String>,
    /// Repository-relative path → (size, modification time in ns) after the render.
    stats: BTreeMap<String, (u64, u128)>,
    /// `overlays/<name>` and `rendered/<name>` → the identity of their marker file on disk
    /// ([`file_identity`]): proof that this machine wrote the entry after the render.
    identities: BTreeMap<String, String>,
}

/// What a render read, to be stored with its result.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    key: String,
    reads: BTreeMap<String, Option<String>>,
    all_names: Option<String>,
}

/// Inputs of one blueprint that decide its output, besides other blueprints.
pub struct Inputs<'a> {
    /// `metadata.name`.
    pub name: &'a str,
    /// Repository-relative path of its file.
    pub file: &'a str,
    /// The whole file's text (for Jsonnet, followed by every input of its evaluation).
    pub text: &'a str,
    /// The fingerprint of its kind when the repository defines it (`kinds/<Kind>/`).
    pub kind: Option<&'a str>,
}

impl Cache {
    /// The cache of the repository at `root`, for a run whose settings, checks and kustomize
    /// are summed up in `context`; `None` when turned off.
    #[must_use]
    pub fn open(root: &Path, context: &str) -> Option<Self> {
        let off = std::env::var(CACHE_VAR)
            .is_ok_and(|v| matches!(v.to_ascii_lowercase().as_str(), "off" | "0" | "false"));
        let dir = root.join(STATE_DIR).join(CACHE_DIR);
        // Never read or written through a link (`render` refuses them; `--check` reads).
        let linked = [root.join(STATE_DIR), dir.clone()]
            .iter()
            .any(|path| std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()));
        if off || linked {
            return None;
        }
        Some(Self {
            dir,
            context: context.to_string(),
        })
    }

    /// The key of a blueprint's own inputs.
    #[must_use]
    pub fn key(&self, inputs: &Inputs<'_>) -> String {
        hash(&[
            FINGERPRINT.as_bytes(),
            self.context.as_bytes(),
            inputs.name.as_bytes(),
            inputs.file.as_bytes(),
            inputs.text.as_bytes(),
            inputs.kind.unwrap_or_default().as_bytes(),
        ])
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(format!("{name}.json"))
    }

    /// The cached result of `name` when its key and the exports it read still hold and its
    /// folders under `root` hold exactly what it wrote.
    #[must_use]
    pub fn lookup(
        &self,
        root: &Path,
        name: &str,
        key: &str,
        repository: &Repository,
    ) -> Option<CachedResult> {
        let text = read_entry(&self.path(name))?;
        let entry: Entry = serde_json::from_str(&text).ok()?;
        if entry.format != FORMAT || entry.key != key {
            return None;
        }
        for (other, recorded) in &entry.reads {
            if exports_hash(repository, other) != *recorded {
                return None;
            }
        }
        if let Some(recorded) = &entry.all_names
            && *recorded != names_hash(repository)
        {
            return None;
        }
        on_disk(root, name, &entry).then_some(entry.result)
    }

    /// What a render of a blueprint with `key` read of the repository, to store once its
    /// output is on disk.
    #[must_use]
    pub fn record(&self, key: String, lookups: &Lookups, repository: &Repository) -> Record {
        Record {
            key,
            reads: lookups
                .names
                .iter()
                .map(|other| (other.clone(), exports_hash(repository, other)))
                .collect(),
            all_names: lookups.all_names.then(|| names_hash(repository)),
        }
    }

    /// Records the render of `name`, whose folders under `root` now hold its output.
    pub fn store(
        &self,
        root: &Path,
        name: &str,
        record: &Record,
        result: CachedResult,
    ) -> std::io::Result<()> {
        let mut markers = BTreeMap::new();
        let mut stats = BTreeMap::new();
        let mut identities = BTreeMap::new();
        for top in [OVERLAYS_DIR, RENDERED_DIR] {
            let folder = format!("{top}/{name}");
            let dir = root.join(&folder);
            let Ok(marker) = std::fs::read_to_string(dir.join(MARKER)) else {
                // Nothing written (a blueprint stopped by findings): nothing to reuse.
                return Ok(());
            };
            for (file, _) in listed(&marker) {
                let path = format!("{folder}/{file}");
                let Some(stat) = stat(&root.join(&path)) else {
                    return Ok(());
                };
                stats.insert(path, stat);
            }
            stats.insert(
                format!("{folder}/{MARKER}"),
                stat(&dir.join(MARKER)).unwrap_or_default(),
            );
            let Some(identity) = file_identity(&dir.join(MARKER)) else {
                return Ok(());
            };
            identities.insert(folder.clone(), identity);
            markers.insert(folder, marker);
        }
        let entry = Entry {
            format: FORMAT,
            key: record.key.clone(),
            reads: record.reads.clone(),
            all_names: record.all_names.clone(),
            result,
            markers,
            stats,
            identities,
        };
        if std::fs::symlink_metadata(&self.dir).is_ok_and(|m| !m.file_type().is_dir()) {
            return Err(std::io::Error::other("the cache folder is not a folder"));
        }
        std::fs::create_dir_all(&self.dir)?;
        let path = self.path(name);
        let temporary = path.with_extension(format!("json.{}.tmp", std::process::id()));
        // A stale temporary file (or a link in its place) is replaced, never written through.
        let _ = std::fs::remove_file(&temporary);
        let mut file = crate::workspace::create_new(&temporary)?;
        file.write_all(serde_json::to_string(&entry)?.as_bytes())?;
        drop(file);
        std::fs::rename(&temporary, &path)
    }

    /// Drops the entries of blueprints not in `names` (deleted blueprints).
    pub fn retain(&self, names: &BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        for entry in entries.flatten() {
            let file = entry.file_name().to_string_lossy().into_owned();
            let keep = file
                .strip_suffix(".json")
                .is_some_and(|name| names.contains(name));
            if !keep {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// Whether the folders of `name` hold exactly what `entry` says was written.
fn on_disk(root: &Path, name: &str, entry: &Entry) -> bool {
    for top in [OVERLAYS_DIR, RENDERED_DIR] {
        let folder = format!("{top}/{name}");
        let Some(expected) = entry.markers.get(&folder) else {
            return false;
        };
        let dir = root.join(&folder);
        // A real folder (never followed through a link) with our marker, as written.
        let is_dir = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_dir());
        if !is_dir || std::fs::read_to_string(dir.join(MARKER)).ok().as_ref() != Some(expected) {
            return false;
        }
        // The marker is the file this machine wrote (or found current) before recording the
        // entry: a copied or committed entry never vouches for a checkout's files.
        let proven = entry.identities.get(&folder).is_some_and(|recorded| {
            file_identity(&dir.join(MARKER)).is_some_and(|identity| identity == *recorded)
        });
        if !proven {
            return false;
        }
        let listed: BTreeMap<String, String> = listed(expected).collect();
        // Nothing more and nothing less: a foreign file is reported by a full render.
        let Some(present) = files_under(&dir) else {
            return false;
        };
        if present.len() != listed.len() + 1 {
            return false;
        }
        for (file, blob) in &listed {
            if !present.contains(file) {
                return false;
            }
            let path = format!("{folder}/{file}");
            let full = root.join(&path);
            let unchanged = entry
                .stats
                .get(&path)
                .is_some_and(|s| stat(&full) == Some(*s));
            if !unchanged && !same_blob(&full, blob) {
                return false;
            }
        }
    }
    true
}

/// `(file, blob id)` of each line of a marker.
fn listed(marker: &str) -> impl Iterator<Item = (String, String)> + '_ {
    marker
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let (blob, file) = line.split_once("  ")?;
            Some((file.to_string(), blob.to_string()))
        })
}

/// Every file under `dir` (relative, `/`-separated), marker included; `None` when a link or
/// something else than files and folders is found.
fn files_under(dir: &Path) -> Option<BTreeSet<String>> {
    let mut found = BTreeSet::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(current) = stack.pop() {
        for entry in std::fs::read_dir(&current).ok()? {
            let entry = entry.ok()?;
            let kind = entry.file_type().ok()?;
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                let relative = entry.path();
                let relative = relative.strip_prefix(dir).ok()?;
                found.insert(relative.to_string_lossy().replace('\\', "/"));
            } else {
                return None;
            }
        }
    }
    Some(found)
}

fn stat(path: &Path) -> Option<(u64, u128)> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if !metadata.file_type().is_file() {
        return None;
    }
    let modified = metadata
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some((metadata.len(), modified))
}

/// What identifies a file on this machine and cannot be set from its content: device, inode
/// and change time (which the kernel sets on every change; no call sets it back). `None` when
/// it cannot be known (then nothing is reused).
fn file_identity(path: &Path) -> Option<String> {
    let metadata = std::fs::symlink_metadata(path).ok()?;
    if !metadata.file_type().is_file() {
        return None;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        Some(format!(
            "{}:{}:{}.{:09}",
            metadata.dev(),
            metadata.ino(),
            metadata.ctime(),
            metadata.ctime_nsec()
        ))
    }
    #[cfg(not(unix))]
    {
        None
    }
}

/// An entry's text, read without following a link and bounded in size; `None` when it
/// cannot be read (a miss).
fn read_entry(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let mut text = String::new();
    crate::workspace::open_no_follow(fs_err::OpenOptions::new().read(true), path)
        .ok()?
        .take(MAX_ENTRY_SIZE)
        .read_to_string(&mut text)
        .ok()?;
    Some(text)
}

fn same_blob(path: &Path, blob: &str) -> bool {
    std::fs::read(path)
        .ok()
        .and_then(|content| crate::workspace::blob_id(&content).ok())
        .is_some_and(|id| id == blob)
}

/// A content hash (git's SHA-1 object id over the parts, each length-prefixed).
fn hash(parts: &[&[u8]]) -> String {
    let mut material = Vec::new();
    for part in parts {
        material.extend_from_slice(&(part.len() as u64).to_le_bytes());
        material.extend_from_slice(part);
    }
    git2::Oid::hash_object(git2::ObjectType::Blob, &material)
        .map(|oid| oid.to_string())
        .unwrap_or_default()
}

fn exports_hash(repository: &Repository, name: &str) -> Option<String> {
    let exported = repository.get(name)?;
    let text = serde_json::to_string(exported).unwrap_or_default();
    Some(hash(&[text.as_bytes()]))
}

fn names_hash(repository: &Repository) -> String {
    let names: Vec<&str> = repository.keys().map(String::as_str).collect();
    hash(&[names.join("\n").as_bytes()])
}

/// The run-wide part of the key: what else decides every blueprint's output.
#[must_use]
pub fn context(parts: &[&str]) -> String {
    hash(&parts.iter().map(|p| p.as_bytes()).collect::<Vec<_>>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_change_with_every_input() {
        let cache = Cache {
            dir: PathBuf::from("/nonexistent"),
            context: "c".into(),
        };
        let base = Inputs {
            name: "a",
            file: "blueprints/a.yaml",
            text: "x",
            kind: None,
        };
        let key = cache.key(&base);
        for other in [
            Inputs { name: "b", ..base },
            Inputs {
                file: "blueprints/b.yaml",
                ..base
            },
            Inputs { text: "y", ..base },
            Inputs {
                kind: Some("k"),
                ..base
            },
        ] {
            assert_ne!(cache.key(&other), key);
        }
        let other_context = Cache {
            context: "d".into(),
            ..cache.clone()
        };
        assert_ne!(other_context.key(&base), key);
        // Parts are delimited: moving a byte between them changes the key.
        assert_ne!(hash(&[b"ab", b"c"]), hash(&[b"a", b"bc"]));
    }
}

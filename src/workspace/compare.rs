//! What a render would change: the staged folders against the repository's generated ones,
//! file by file, with the foreign entries and hand-edited files found on the way. `render
//! --check` reports it; a render's swap acts on it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::WriteError;
use super::folder::{generated_files, read_generated, tree_paths};
use super::state::is_present;
use crate::repo::{OVERLAYS_DIR, RENDERED_DIR};

/// A difference between what a render would write and what is on disk.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Drift {
    /// Repository-relative path of the file.
    pub path: String,
    /// What differs.
    pub change: Change,
}

/// How a file differs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    /// A render would create it.
    Added,
    /// A render would change it.
    Modified,
    /// A render would delete it.
    Removed,
}

/// What a render would change, and what it found that it did not generate.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Generated files that differ, sorted.
    pub drift: Vec<Drift>,
    /// Entries under `overlays/` and `rendered/` the tool did not generate (left alone).
    pub foreign: Vec<String>,
    /// Generated files that were edited by hand (their content no longer has the blob id
    /// their marker records) and that the render would overwrite or delete, sorted.
    pub hand_edited: Vec<String>,
}

impl Comparison {
    /// The blueprint folders (`overlays/<name>`) with drift.
    pub(super) fn changed_folders(&self) -> Vec<String> {
        let folders: BTreeSet<String> = self
            .drift
            .iter()
            .filter_map(|d| {
                let mut parts = d.path.splitn(3, '/');
                Some(format!("{}/{}", parts.next()?, parts.next()?))
            })
            .collect();
        folders.into_iter().collect()
    }
}

/// Compares a staged render under `staging` with the repository at `root`, reading only
/// generated files (never through a symbolic link). Folders of blueprints in `unchanged` (the
/// cache vouched that they hold what a render writes) are neither staged nor compared.
pub fn compare(
    root: &Path,
    staging: &Path,
    names: &[String],
    unchanged: &BTreeSet<String>,
    full: bool,
) -> Result<Comparison, WriteError> {
    let mut comparison = Comparison::default();
    for top in [OVERLAYS_DIR, RENDERED_DIR] {
        let mut folders: BTreeSet<String> = names.iter().cloned().collect();
        // A full render also owns the generated folders of blueprints that no longer exist.
        if full {
            for base in [root, staging] {
                let dir = base.join(top);
                if dir.is_dir() {
                    for entry in fs_err::read_dir(&dir)? {
                        folders.insert(entry?.file_name().to_string_lossy().into_owned());
                    }
                }
            }
        }
        for name in folders.into_iter().filter(|name| !unchanged.contains(name)) {
            let relative = format!("{top}/{name}");
            let current_dir = root.join(&relative);
            let staged = read_generated(&staging.join(&relative))?.unwrap_or_default();
            let current = match read_generated(&current_dir)? {
                Some(files) => files,
                None if is_present(&current_dir) => {
                    // Not ours: never compared or removed; a render that wants to write here
                    // stops (its files show as added).
                    comparison.foreign.push(relative.clone());
                    BTreeMap::new()
                }
                None => BTreeMap::new(),
            };
            for (path, file) in &staged {
                let change = match current.get(path) {
                    None => Change::Added,
                    Some(existing) if existing.content != file.content => Change::Modified,
                    Some(_) => continue,
                };
                comparison.drift.push(Drift {
                    path: format!("{relative}/{path}"),
                    change,
                });
            }
            for path in current.keys().filter(|p| !staged.contains_key(*p)) {
                comparison.drift.push(Drift {
                    path: format!("{relative}/{path}"),
                    change: Change::Removed,
                });
            }
            // What the render would overwrite or delete, and was not left as it wrote it.
            for (path, file) in &current {
                let replaced = staged
                    .get(path)
                    .is_none_or(|staged| staged.content != file.content);
                if replaced && file.edited_by_hand()? {
                    comparison.hand_edited.push(format!("{relative}/{path}"));
                }
            }
            if let Some(listed) = generated_files(&current_dir)? {
                for path in tree_paths(&current_dir)?
                    .iter()
                    .filter(|path| !listed.contains_key(*path))
                {
                    comparison.foreign.push(format!("{relative}/{path}"));
                }
            }
        }
    }
    comparison.drift.sort();
    comparison.foreign.sort();
    comparison.foreign.dedup();
    comparison.hand_edited.sort();
    Ok(comparison)
}

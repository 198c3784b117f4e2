//! The render's swap: a locked [`Workspace`] stages folders, then moves them into place under
//! a journal, so that an interrupted run is finished or rolled back by the next one, and a
//! failed move is undone and explained (which folder, why, the fix).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::compare::{Comparison, compare};
use super::folder::{generated_files, tree_paths};
use super::state::{
    check_state, create_new, ensure_real_folder, is_present, is_swapped_folder, lock,
    open_no_follow,
};
use super::{
    BACKUP_DIR, HandEdits, IGNORE_FILE, JOURNAL_FILE, JOURNAL_TEMPORARY, LOCK_FILE,
    MAX_JOURNAL_SIZE, STAGING_DIR, STATE_DIR, WriteError,
};
use crate::repo::{self, OVERLAYS_DIR, RENDERED_DIR};

/// A locked repository, ready to stage and swap.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    _lock: fs_err::File,
    /// What recovery found and did, for the user.
    pub recovered: Option<String>,
    /// Tests simulate a crash by keeping staging, backups and journal when dropped.
    #[cfg(test)]
    pub(super) crashed: bool,
}

/// One folder swap of a render.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Swap {
    /// Repository-relative target (`overlays/<name>`).
    pub(super) target: String,
    /// Whether the target existed before (and went to `backup`).
    pub(super) existed: bool,
    /// Whether a new folder replaces it (false: the folder is removed).
    pub(super) replaced: bool,
}

#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct Journal {
    /// Every swap of the render, in order.
    pub(super) swaps: Vec<Swap>,
    /// All renames done: the next run finishes (removes backups) instead of rolling back.
    pub(super) committed: bool,
}

impl Workspace {
    /// Locks the repository at `root` (waiting up to `lock_timeout`), recovers an interrupted
    /// render and removes leftover staging.
    pub fn open(root: &Path, lock_timeout: Duration) -> Result<Self, WriteError> {
        let root = fs_err::canonicalize(root)?;
        for top in [OVERLAYS_DIR, RENDERED_DIR, STATE_DIR] {
            ensure_real_folder(&root, top)?;
        }
        let state = root.join(STATE_DIR);
        fs_err::create_dir_all(&state)?;
        check_state(&root)?;
        let lock = lock(&state.join(LOCK_FILE), lock_timeout)?;
        // Under the lock: renders started together would otherwise race to create it.
        let ignore = state.join(IGNORE_FILE);
        if !is_present(&ignore) {
            let mut file = create_new(&ignore)?;
            file.write_all(b"# kubectl-aiml's lock, staging and journal: never committed.\n*\n")?;
        }
        let mut workspace = Self {
            root,
            _lock: lock,
            recovered: None,
            #[cfg(test)]
            crashed: false,
        };
        workspace.recovered = workspace.recover()?;
        let staging = workspace.staging();
        if is_present(&staging) {
            fs_err::remove_dir_all(&staging)?;
        }
        fs_err::create_dir_all(&staging)?;
        Ok(workspace)
    }

    /// The repository root (canonical).
    #[must_use]
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The staging folder: `overlays/<name>/` and `rendered/<name>/` are built here.
    #[must_use]
    pub fn staging(&self) -> PathBuf {
        self.root.join(STATE_DIR).join(STAGING_DIR)
    }

    pub(super) fn backups(&self) -> PathBuf {
        self.root.join(STATE_DIR).join(BACKUP_DIR)
    }

    fn journal_path(&self) -> PathBuf {
        self.root.join(STATE_DIR).join(JOURNAL_FILE)
    }

    /// Finishes or undoes a render that was interrupted during its swap.
    fn recover(&self) -> Result<Option<String>, WriteError> {
        let path = self.journal_path();
        if !is_present(&path) {
            if is_present(&self.backups()) {
                fs_err::remove_dir_all(self.backups())?;
            }
            return Ok(None);
        }
        let journal = self.read_journal()?;
        let message = if journal.committed {
            "finished the swap of an interrupted render"
        } else {
            for (index, swap) in journal.swaps.iter().enumerate().rev() {
                self.undo(index, swap)?;
            }
            "rolled back the swap of an interrupted render"
        };
        if is_present(&self.backups()) {
            fs_err::remove_dir_all(self.backups())?;
        }
        fs_err::remove_file(&path)?;
        Ok(Some(message.to_string()))
    }

    /// Reads and checks the journal: this tool's format, and only folders a render swaps
    /// (`overlays/<name>`, `rendered/<name>`), each backup a real folder. Anything else is
    /// refused before a file moves.
    fn read_journal(&self) -> Result<Journal, WriteError> {
        use std::io::Read as _;
        let path = self.journal_path();
        let mut text = String::new();
        open_no_follow(fs_err::OpenOptions::new().read(true), &path)?
            .take(MAX_JOURNAL_SIZE)
            .read_to_string(&mut text)
            .map_err(|_| WriteError::Journal("not UTF-8 text, or too large".into()))?;
        let journal: Journal =
            serde_json::from_str(&text).map_err(|e| WriteError::Journal(e.to_string()))?;
        let mut seen = BTreeSet::new();
        for (index, swap) in journal.swaps.iter().enumerate() {
            let shown = crate::diagnostic::sanitize(&swap.target, 200);
            if !is_swapped_folder(&swap.target) {
                return Err(WriteError::Journal(format!(
                    "it names `{shown}`, which is not a folder a render replaces (`{OVERLAYS_DIR}/<name>` or `{RENDERED_DIR}/<name>`)"
                )));
            }
            if !seen.insert(swap.target.as_str()) {
                return Err(WriteError::Journal(format!("it names `{shown}` twice")));
            }
            let backup = self.backups().join(index.to_string());
            if let Ok(metadata) = fs_err::symlink_metadata(&backup)
                && !metadata.file_type().is_dir()
            {
                return Err(WriteError::Journal(format!(
                    "its backup `{STATE_DIR}/{BACKUP_DIR}/{index}` is {}, not a folder",
                    repo::describe_file_type(metadata.file_type())
                )));
            }
        }
        Ok(journal)
    }

    /// Puts the folder of `swap` back as it was before the render.
    fn undo(&self, index: usize, swap: &Swap) -> Result<(), WriteError> {
        let target = self.root.join(&swap.target);
        let backup = self.backups().join(index.to_string());
        let staged = self.staging().join(&swap.target);
        if swap.existed {
            if is_present(&backup) {
                // The backup holds the old folder, so what stands at the target is ours.
                if is_present(&target) {
                    fs_err::remove_dir_all(&target)?;
                }
                fs_err::rename(&backup, &target)?;
            }
        } else if swap.replaced && is_present(&target) && !is_present(&staged) {
            fs_err::remove_dir_all(&target)?;
        }
        Ok(())
    }

    /// What stands at `folders` (repository-relative, e.g. `rendered/<name>`), the folders
    /// this render replaces: generated folders (with their marker's list) and foreign
    /// entries. Only those are walked: a fleet's unchanged folders cost nothing.
    fn survey(&self, folders: &[String]) -> Result<Survey, WriteError> {
        let mut survey = Survey::default();
        for relative in folders {
            let path = self.root.join(relative);
            if !is_present(&path) {
                continue;
            }
            match generated_files(&path)? {
                Some(files) => {
                    for file in tree_paths(&path)?
                        .iter()
                        .filter(|file| !files.contains_key(*file))
                    {
                        survey.foreign.insert(format!("{relative}/{file}"));
                    }
                    survey.generated.insert(relative.clone(), files);
                }
                None => {
                    survey.foreign.insert(relative.clone());
                }
            }
        }
        Ok(survey)
    }

    /// Compares the staged render with the repository: what a render would change, and what
    /// it found that it did not generate. `names` are the rendered blueprints; `full` means
    /// every blueprint (folders of removed blueprints are then stale).
    pub fn compare(
        &self,
        names: &[String],
        unchanged: &BTreeSet<String>,
        full: bool,
    ) -> Result<Comparison, WriteError> {
        compare(&self.root, &self.staging(), names, unchanged, full)
    }

    /// Swaps the staged folders in. Folders that did not change are left alone; foreign
    /// files inside generated folders are carried over; a render that would replace a foreign
    /// entry, or (with [`HandEdits::Refuse`]) overwrite a generated file edited by hand, stops
    /// before writing. On failure every swap done is undone.
    pub fn commit(
        &self,
        names: &[String],
        unchanged: &BTreeSet<String>,
        full: bool,
        hand_edits: HandEdits,
    ) -> Result<Comparison, WriteError> {
        // `std`'s error keeps the system's error code, which says why (see `swap_error`).
        self.commit_with(names, unchanged, full, hand_edits, &mut |from, to| {
            std::fs::rename(from, to)
        })
    }

    pub(super) fn commit_with(
        &self,
        names: &[String],
        unchanged: &BTreeSet<String>,
        full: bool,
        hand_edits: HandEdits,
        rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
    ) -> Result<Comparison, WriteError> {
        let comparison = self.compare(names, unchanged, full)?;
        if hand_edits == HandEdits::Refuse && !comparison.hand_edited.is_empty() {
            return Err(WriteError::HandEdited {
                paths: comparison.hand_edited.clone(),
            });
        }
        let changed: Vec<String> = comparison.changed_folders();
        if changed.is_empty() {
            return Ok(comparison);
        }
        let survey = self.survey(&changed)?;
        let staging = self.staging();
        // Refuse before anything moves: foreign folders in the way, and foreign files the new
        // folder would overwrite.
        for folder in &changed {
            if survey.foreign.contains(folder) {
                return Err(WriteError::Foreign {
                    path: format!("`{folder}`"),
                });
            }
            let prefix = format!("{folder}/");
            for foreign in survey.foreign.iter().filter(|f| f.starts_with(&prefix)) {
                if is_present(&staging.join(foreign)) {
                    return Err(WriteError::Foreign {
                        path: format!("`{foreign}`"),
                    });
                }
            }
        }
        // Foreign files inside generated folders go along into the new folder.
        for folder in &changed {
            let prefix = format!("{folder}/");
            let staged = staging.join(folder);
            for foreign in survey.foreign.iter().filter(|f| f.starts_with(&prefix)) {
                if staged.exists() {
                    let to = staging.join(foreign);
                    if let Some(parent) = to.parent() {
                        fs_err::create_dir_all(parent)?;
                    }
                    copy_entry(&self.root.join(foreign), &to)?;
                }
            }
        }
        let swaps: Vec<Swap> = changed
            .iter()
            .map(|folder| Swap {
                target: folder.clone(),
                existed: is_present(&self.root.join(folder)),
                replaced: is_present(&staging.join(folder)),
            })
            .collect();
        if swaps.is_empty() {
            return Ok(comparison);
        }
        let mut journal = Journal {
            swaps,
            committed: false,
        };
        // Folders move by rename, which works only within one file system: say which
        // folder is elsewhere before anything moves.
        for swap in &journal.swaps {
            if let Some(error) = other_device(&staging, &self.root.join(&swap.target)) {
                return Err(swap_error(&swap.target, &error, true));
            }
        }
        self.write_journal(&journal)?;
        let backups = self.backups();
        fs_err::create_dir_all(&backups)?;
        let result = (|| -> Result<(), (&str, std::io::Error)> {
            for (index, swap) in journal.swaps.iter().enumerate() {
                let failed = |error| (swap.target.as_str(), error);
                let target = self.root.join(&swap.target);
                if swap.existed {
                    rename(&target, &backups.join(index.to_string())).map_err(failed)?;
                }
                if swap.replaced {
                    if let Some(parent) = target.parent() {
                        std::fs::create_dir_all(parent).map_err(failed)?;
                    }
                    rename(&staging.join(&swap.target), &target).map_err(failed)?;
                }
            }
            Ok(())
        })();
        if let Err((folder, error)) = result {
            for (index, swap) in journal.swaps.iter().enumerate().rev() {
                // Best effort: the original error is what matters; the journal stays for the
                // next run if this fails too.
                if self.undo(index, swap).is_err() {
                    return Err(swap_error(folder, &error, false));
                }
            }
            let _ = fs_err::remove_file(self.journal_path());
            return Err(swap_error(folder, &error, true));
        }
        journal.committed = true;
        self.write_journal(&journal)?;
        fs_err::remove_dir_all(&backups)?;
        fs_err::remove_file(self.journal_path())?;
        Ok(comparison)
    }

    /// Writes the journal atomically (temporary file, flush to disk, rename). The temporary
    /// file is created new, so that a link left in its place is never written through.
    pub(super) fn write_journal(&self, journal: &Journal) -> std::io::Result<()> {
        let path = self.journal_path();
        let temporary = self.root.join(STATE_DIR).join(JOURNAL_TEMPORARY);
        if is_present(&temporary) {
            fs_err::remove_file(&temporary)?;
        }
        let mut file = create_new(&temporary)?;
        file.write_all(serde_json::to_string_pretty(journal)?.as_bytes())?;
        file.sync_all()?;
        fs_err::rename(&temporary, &path)
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        #[cfg(test)]
        if self.crashed {
            return;
        }
        // Staging is only a cache of this run; the next run removes it anyway.
        let _ = fs_err::remove_dir_all(self.staging());
    }
}

/// What the survey of `overlays/` and `rendered/` found.
#[derive(Debug, Default)]
struct Survey {
    /// Generated folders and the files their marker lists, with the blob ids it records.
    generated: BTreeMap<String, BTreeMap<String, Option<String>>>,
    /// Repository-relative paths of everything else.
    foreign: BTreeSet<String>,
}

/// The error of moving the folder `folder` (`rendered/<name>`) into place, in words: which
/// folder, why (read-only, immutable, another file system) and the fix.
fn swap_error(folder: &str, error: &std::io::Error, rolled_back: bool) -> WriteError {
    let top = folder.split('/').next().unwrap_or(folder);
    // The system's words without the internal paths that `fs_err` adds.
    let system = error.raw_os_error().map_or_else(
        || error.to_string(),
        |code| std::io::Error::from_raw_os_error(code).to_string(),
    );
    let code = error.raw_os_error().or(match error.kind() {
        std::io::ErrorKind::CrossesDevices => Some(libc::EXDEV),
        std::io::ErrorKind::ReadOnlyFilesystem => Some(libc::EROFS),
        _ => None,
    });
    let (cause, fix) = match code {
        Some(libc::EXDEV) => (
            format!(
                "`{folder}` and `{STATE_DIR}/{STAGING_DIR}/`, where a render builds it, are on different file systems (a separate or read-only mount), and a folder moves into place only within one ({system})"
            ),
            format!(
                "Keep `{STATE_DIR}/` on the file system of `{OVERLAYS_DIR}/` and `{RENDERED_DIR}/` (mount the repository as a whole, writable), or render in a writable clone."
            ),
        ),
        Some(libc::EROFS) => (
            format!("`{top}/` is on a read-only file system ({system})"),
            "Mount it writable, or render in a writable clone.".to_string(),
        ),
        Some(libc::EPERM) => (
            format!(
                "the system refused to change `{top}/` or `{folder}`, which is most likely immutable (`lsattr -d {folder}` shows an `i`) ({system})"
            ),
            format!(
                "Remove the attribute (`chattr -i {top} {folder}`, as root), or render in a writable clone."
            ),
        ),
        Some(libc::EACCES) => (
            format!("`{top}/` or `{folder}` is not writable by this user ({system})"),
            format!("Make it writable (`chmod u+w {top} {folder}`), or render as its owner."),
        ),
        _ => (error.to_string(), String::new()),
    };
    WriteError::Swap {
        folder: crate::diagnostic::sanitize(folder, 200),
        cause,
        fix: if fix.is_empty() {
            fix
        } else {
            format!(" {fix}")
        },
        rolled_back,
    }
}

/// `EXDEV` when `target` (or, when it does not exist yet, the nearest folder above it) is on
/// another file system than `staging`: what the rename would fail with, found before anything
/// moves.
fn other_device(staging: &Path, target: &Path) -> Option<std::io::Error> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt as _;
        let device = |path: &Path| fs_err::symlink_metadata(path).ok().map(|m| m.dev());
        let staging = device(staging)?;
        let mut folders = vec![target];
        folders.extend(target.parent());
        let differs = folders
            .into_iter()
            .filter_map(device)
            .any(|dev| dev != staging);
        differs.then(|| std::io::Error::from_raw_os_error(libc::EXDEV))
    }
    #[cfg(not(unix))]
    {
        let _ = (staging, target);
        None
    }
}

/// Copies a file or link (not following it) from `from` to `to`.
fn copy_entry(from: &Path, to: &Path) -> std::io::Result<()> {
    let metadata = fs_err::symlink_metadata(from)?;
    if metadata.file_type().is_symlink() {
        #[cfg(unix)]
        {
            let target = fs_err::read_link(from)?;
            return std::os::unix::fs::symlink(target, to);
        }
    }
    fs_err::copy(from, to).map(|_| ())
}

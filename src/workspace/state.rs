//! The state folder (`.aiml/`) as untrusted input: its entries are checked before use, its
//! files opened without following links, and the lock that keeps one render at a time.

use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use super::{
    BACKUP_DIR, CACHE_DIR, IGNORE_FILE, JOURNAL_FILE, JOURNAL_TEMPORARY, LOCK_FILE, STAGING_DIR,
    STATE_DIR, WriteError,
};
use crate::repo::{self, OVERLAYS_DIR, RENDERED_DIR};

/// Whether something (file, folder or link) stands at `path`, without following links.
pub(super) fn is_present(path: &Path) -> bool {
    fs_err::symlink_metadata(path).is_ok()
}

/// Checks that `root/relative`, if anything stands there, is a real folder (not a link).
pub(super) fn ensure_real_folder(root: &Path, relative: &str) -> Result<(), WriteError> {
    match fs_err::symlink_metadata(root.join(relative)) {
        Ok(metadata) if metadata.file_type().is_dir() => Ok(()),
        Ok(metadata) => Err(WriteError::NotAFolder {
            path: relative.to_string(),
            what: repo::describe_file_type(metadata.file_type()),
        }),
        Err(_) => Ok(()),
    }
}

/// Whether `relative` is a folder a render swaps: `overlays/<name>` or `rendered/<name>`,
/// with a plain name (no separator, `..`, control character).
pub(super) fn is_swapped_folder(relative: &str) -> bool {
    let Some((top, name)) = relative.split_once('/') else {
        return false;
    };
    [OVERLAYS_DIR, RENDERED_DIR].contains(&top)
        && !name.is_empty()
        && name != "."
        && name != ".."
        && name.len() <= 253
        && !name
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control())
}

/// Checks the state folder's entries before any is used: its folders must be real folders
/// and its files regular files (or absent), never links a cloned repository put there.
pub(super) fn check_state(root: &Path) -> Result<(), WriteError> {
    for folder in [STAGING_DIR, BACKUP_DIR, CACHE_DIR] {
        ensure_real_folder(root, &format!("{STATE_DIR}/{folder}")).map_err(
            |error| match error {
                WriteError::NotAFolder { path, what } => WriteError::StateLink { path, what },
                other => other,
            },
        )?;
    }
    for file in [IGNORE_FILE, LOCK_FILE, JOURNAL_FILE, JOURNAL_TEMPORARY] {
        let relative = format!("{STATE_DIR}/{file}");
        if let Ok(metadata) = fs_err::symlink_metadata(root.join(&relative))
            && !metadata.file_type().is_file()
        {
            return Err(WriteError::StateLink {
                path: relative,
                what: repo::describe_file_type(metadata.file_type()),
            });
        }
    }
    Ok(())
}

/// Opens `path` with `options`, refusing to follow a symbolic link in its last component
/// (`O_NOFOLLOW`): the state folder's files are the tool's own, and a link there is an attempt
/// to make a render write or read elsewhere.
pub fn open_no_follow(
    options: &mut fs_err::OpenOptions,
    path: &Path,
) -> std::io::Result<fs_err::File> {
    #[cfg(unix)]
    {
        use fs_err::os::unix::fs::OpenOptionsExt as _;
        options.custom_flags(libc::O_NOFOLLOW);
    }
    options.open(path)
}

/// Creates the file `path`, which must not exist (nor a link in its place), for writing.
pub fn create_new(path: &Path) -> std::io::Result<fs_err::File> {
    open_no_follow(
        fs_err::OpenOptions::new().write(true).create_new(true),
        path,
    )
}

/// Takes the exclusive lock on `path`, waiting up to `timeout`. The lock file names the
/// holder (pid), for the message of the next run that has to wait.
pub(super) fn lock(path: &Path, timeout: Duration) -> Result<fs_err::File, WriteError> {
    let file = open_no_follow(
        fs_err::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false),
        path,
    )?;
    let started = Instant::now();
    loop {
        match file.file().try_lock() {
            Ok(()) => break,
            Err(std::fs::TryLockError::WouldBlock) => {
                if started.elapsed() >= timeout {
                    let holder = fs_err::read_to_string(path)
                        .ok()
                        .map(|t| t.trim().to_string())
                        .filter(|t| !t.is_empty())
                        .unwrap_or_else(|| "holder unknown".into());
                    return Err(WriteError::Locked {
                        holder,
                        waited: started.elapsed(),
                    });
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(error.into()),
        }
    }
    file.set_len(0)?;
    let mut writer = &file;
    writer.write_all(format!("pid {}\n", std::process::id()).as_bytes())?;
    Ok(file)
}

/// Waits (up to `timeout`) for a render of the repository at `root` to finish, without
/// writing anything: for `render --check`, which must not read a half-done swap.
pub fn wait_for_renders(root: &Path, timeout: Duration) -> Result<(), WriteError> {
    let path = root.join(STATE_DIR).join(LOCK_FILE);
    // No lock file (or a link in its place, which no render of this tool holds): no render.
    let Ok(file) = open_no_follow(fs_err::OpenOptions::new().read(true), &path) else {
        return Ok(());
    };
    let started = Instant::now();
    loop {
        match file.file().try_lock_shared() {
            Ok(()) => return Ok(()),
            Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < timeout => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(std::fs::TryLockError::WouldBlock) => {
                return Err(WriteError::Locked {
                    holder: fs_err::read_to_string(&path)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                    waited: started.elapsed(),
                });
            }
            Err(std::fs::TryLockError::Error(error)) => return Err(error.into()),
        }
    }
}

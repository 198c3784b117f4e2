//! An interrupted run (Ctrl-C, `kill`, a CI job's timeout, a closed terminal) removes the
//! temporary folders it made before it exits, with the shell's conventional code (128 + the
//! signal: 130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
//!
//! The signals are taken by a thread of their own (signal-hook's iterator: no code runs in
//! the signal handler itself), which removes every folder made by [`temporary_dir`] and ends
//! the process. A render's swap needs nothing from here: its journal makes any interruption
//! recoverable by the next run (see `aiml::workspace`).

use std::path::PathBuf;
use std::sync::Mutex;

/// Temporary folders of this run. A folder already removed (its `TempDir` dropped) stays
/// listed: removing a missing folder does nothing, and the names are random.
static TEMPORARY: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Starts waiting for SIGINT, SIGTERM and SIGHUP. Without signal support (or when the
/// handlers cannot be installed) the operating system's defaults stay: the run still stops.
pub(crate) fn install() {
    #[cfg(unix)]
    {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    clean_up();
                    std::process::exit(128 + signal);
                }
            });
    }
}

/// A temporary folder named `<prefix>XXXXXX` in the system's temporary folder (`TMPDIR`),
/// removed when dropped, or by [`install`]'s thread when the run is interrupted.
pub(crate) fn temporary_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    // Held while the folder is created, so an interruption never misses one just made.
    let mut listed = TEMPORARY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
    listed.push(dir.path().to_path_buf());
    Ok(dir)
}

/// Removes every temporary folder of this run. Worker threads may still be writing into one
/// (creating folders as they go), so each removal is retried until the folder stays gone.
fn clean_up() {
    let listed = TEMPORARY
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    for dir in listed.iter() {
        for _ in 0..20 {
            let _ = std::fs::remove_dir_all(dir);
            if std::fs::symlink_metadata(dir).is_err() {
                break;
            }
        }
    }
}

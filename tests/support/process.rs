//! Other programs the tests run: fakes of kustomize, helpers like git, and signals.

use std::path::Path;
use std::process::Command;

/// Runs `command` and panics, naming it with its exit code and output, unless it succeeds;
/// `why` says what its failure means (or what to do about it).
#[track_caller]
pub fn succeed(command: &mut Command, why: &str) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{why}: cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{why}: {command:?} exited with {}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}

/// Writes `text` (a script with its `#!` line) to `path` and makes it executable: a fake
/// program for the binary to run.
pub fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
}

/// Waits until `path` exists (a fake program touches it when it starts), and fails if it
/// does not within `within`.
#[track_caller]
pub fn wait_for_file(path: &Path, within: std::time::Duration) {
    let deadline = std::time::Instant::now() + within;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the fake kustomize never started: no {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `signal` (`TERM`, `KILL`…) to `child` with `kill`, which must succeed.
#[track_caller]
pub fn kill(child: &std::process::Child, signal: &str) {
    succeed(
        Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]),
        "kill",
    );
}

/// The path of `program` on PATH. A test that needs a program it cannot find fails, naming it:
/// a skipped test would pass without checking anything (scripts/install-test-deps installs
/// every program the tests run).
pub fn require(program: &str) -> std::path::PathBuf {
    which::which(program).unwrap_or_else(|_| {
        panic!(
            "`{program}` is not on PATH, and this test runs it; run scripts/install-test-deps (as root on Debian it installs it), or install {program}"
        )
    })
}

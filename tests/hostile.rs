//! A cloned repository is untrusted input, `.aiml/` included: state files, links, names that
//! only differ by case, output folders the system refuses, interruptions. Each test is a
//! hostile repository (or environment) that changed something outside the repository, lost
//! data or left litter before the protection it tests.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use support::TestRepo;

fn walk(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        found.push(path.display().to_string());
        if path.is_dir() && !path.is_symlink() {
            found.extend(walk(&path));
        }
    }
    found
}

/// Ctrl-C, `kill` or a CI timeout in the middle of a run: its temporary folders go, and the
/// exit code is the shell's convention for the signal.
#[test]
fn an_interrupted_run_removes_its_temporary_folders() {
    let repo = TestRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let started = bin.path().join("started");
    let fake = bin.path().join("kustomize");
    std::fs::write(
        &fake,
        format!(
            "#!/bin/sh\ncase \"$1\" in version) echo v5.5.0 ;; *) touch '{}'; exec sleep 20 ;; esac\n",
            started.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).unwrap();
    for (args, signal, code) in [
        (&["validate"][..], "TERM", 143),
        (&["validate"][..], "INT", 130),
        (&["render", "--check"][..], "TERM", 143),
        (&["render", "--check"][..], "HUP", 129),
    ] {
        let _ = std::fs::remove_file(&started);
        let mut child = Command::new(cargo_bin("kubectl-aiml"))
            .args(args)
            .arg("--kustomize=binary")
            .current_dir(repo.path())
            .env("AIML_KUSTOMIZE", &fake)
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        while !started.exists() {
            assert!(
                Instant::now() < deadline,
                "the fake kustomize never started"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(
            !walk(tmp.path()).is_empty(),
            "{args:?}: no temporary folder to clean up"
        );
        let status = Command::new("kill")
            .args([&format!("-{signal}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let exit = child.wait().unwrap();
        assert_eq!(exit.code(), Some(code), "{args:?} {signal}: {exit:?}");
        assert_eq!(
            walk(tmp.path()),
            Vec::<String>::new(),
            "{args:?} {signal}: left in the temporary folder"
        );
    }
}

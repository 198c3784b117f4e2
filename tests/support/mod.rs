//! What the integration tests share: a temporary repository and a run of the binary.

#![allow(dead_code, reason = "each test crate uses a part of this module")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

/// The repository's own example blueprint.
pub const EXAMPLE: &str = include_str!("../../blueprints/multislice-v4-32-training.yaml");

/// A temporary repository with the example blueprint.
pub struct TestRepo {
    /// The folder.
    pub dir: tempfile::TempDir,
}

impl TestRepo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Self { dir };
        repo.write("blueprints/multislice-v4-32-training.yaml", EXAMPLE);
        repo
    }

    /// A temporary repository with no blueprint yet.
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    pub fn aiml(&self, args: &[&str]) -> Run {
        self.aiml_with_env(args, &[])
    }

    pub fn aiml_with_env(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Run {
        let output = Command::new(cargo_bin("kubectl-aiml"))
            .args(args)
            .current_dir(self.path())
            .env("NO_COLOR", "1")
            .envs(env.iter().copied())
            .output()
            .expect("run kubectl-aiml");
        Run {
            code: output.status.code().expect("exit code"),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    }

    /// Every file under overlays/ and rendered/.
    pub fn generated(&self) -> BTreeMap<String, Vec<u8>> {
        let mut all = BTreeMap::new();
        for top in ["overlays", "rendered"] {
            for (path, content) in aiml::render::read_tree(&self.path().join(top)).expect("read") {
                all.insert(format!("{top}/{path}"), content);
            }
        }
        all
    }
}

pub struct Run {
    /// Exit code.
    pub code: i32,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

impl Run {
    /// What a person sees, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

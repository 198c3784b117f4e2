//! Golden tests of the compiler: blueprint → overlay, without kustomize.
//!
//! Each `tests/fixtures/compile/<case>/blueprints/` is a repository's blueprints. Compiling
//! it must give no finding, and each blueprint's overlay (every file of every target folder)
//! is snapshotted as `compile__<case>@<blueprint>.snap`. The cases cover every `existing: true`
//! branch, single- and multi-host TPU types, a cluster shared between blueprints and the
//! optional parts of the spec. A second test renders each case with the real kustomize binary
//! (and checks that the in-process build writes the same bytes) and
//! checks that the pipeline accepts the result (every rule passes). A case may hold an
//! `aiml.yaml` (the repository settings): its GitOps wiring is then part of the overlays.

use std::path::{Path, PathBuf};
use std::process::Command;

use aiml::kinds::Registry;

const CASES: &str = "tests/fixtures/compile";

fn cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(CASES)
        .expect("compile fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 5,
        "expected the compile cases, found {cases:?}"
    );
    cases
}

fn case_name(case: &Path) -> String {
    case.file_name()
        .expect("case name")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn overlays_match_their_golden_files() {
    let registry = Registry::builtin();
    for case in cases() {
        let name = case_name(&case);
        let loaded = aiml::repo::load(&case, &registry, u64::MAX).expect("load");
        let (compiled, diagnostics) =
            aiml::render::compile(&loaded, &registry, &[]).expect("compile");
        assert!(
            diagnostics.is_empty(),
            "{name}: unexpected findings: {diagnostics:#?}"
        );
        assert!(!compiled.is_empty(), "{name}: no blueprint");
        for blueprint in compiled {
            let overlay = blueprint
                .compiled
                .unwrap_or_else(|| panic!("{name}/{}: no overlay", blueprint.name))
                .overlay;
            let mut text = String::new();
            for (path, content) in &overlay.files {
                text.push_str(&format!("=== {path}\n{content}"));
            }
            insta::with_settings!({snapshot_suffix => format!("{name}@{}", blueprint.name), prepend_module_to_snapshot => false}, {
                insta::assert_snapshot!("compile", text);
            });
        }
    }
}

#[test]
fn every_case_renders_with_kustomize_and_passes_every_rule() {
    for case in cases() {
        let name = case_name(&case);
        let repo = tempfile::tempdir().expect("temp dir");
        copy_dir(&case.join("blueprints"), &repo.path().join("blueprints"));
        let settings = case.join(aiml::settings::SETTINGS_FILE);
        if settings.exists() {
            std::fs::copy(&settings, repo.path().join(aiml::settings::SETTINGS_FILE))
                .expect("copy settings");
        }
        // The real kustomize builds every overlay here; the in-process build must agree.
        let output = Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
            .args(["render", "--kustomize=binary", "--no-cache"])
            .current_dir(repo.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert!(
            output.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let in_process = Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
            .args(["render", "--check", "--no-cache"])
            .current_dir(repo.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert!(
            in_process.status.success(),
            "{name}: the in-process build differs from kustomize's: {}",
            String::from_utf8_lossy(&in_process.stderr)
        );
        let check = Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
            .args(["validate", "--strict", "rendered"])
            .current_dir(repo.path())
            .env("NO_COLOR", "1")
            .output()
            .expect("run");
        assert!(
            check.status.success(),
            "{name}: validate rendered/: {}",
            String::from_utf8_lossy(&check.stderr)
        );
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

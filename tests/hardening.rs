//! The binary under hostile input and faults: each test removes one protection's reason to
//! exist. Writes never escape the repository or destroy what the tool did not generate,
//! resources stay bounded, crashes and concurrent runs lose nothing, exits stay honest.

mod support;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use assert_cmd::cargo::cargo_bin;
use support::{EXAMPLE, TestRepo};

/// An executable shell script standing in for kustomize.
fn fake_kustomize(repo: &TestRepo, name: &str, script: &str) -> PathBuf {
    let dir = repo.path().join("..").join(format!(
        "{}-bin",
        repo.path().file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    support::write_script(&path, &format!("#!/bin/sh\n{script}\n"));
    path
}

fn env<'v>(key: &'static str, value: &'v Path) -> (&'static str, &'v std::ffi::OsStr) {
    (key, value.as_os_str())
}

#[test]
fn symlinked_output_folders_are_refused_and_their_targets_untouched() {
    for top in ["rendered", "overlays"] {
        let repo = TestRepo::new();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(outside.path().join("precious")).unwrap();
        std::fs::write(outside.path().join("precious/data.txt"), "keep\n").unwrap();
        std::os::unix::fs::symlink(outside.path(), repo.path().join(top)).unwrap();
        let run = repo.aiml(&["render"]);
        assert_eq!(run.code, 2, "{top}: {}", run.transcript());
        run.stderr_has("symbolic link");
        assert!(outside.path().join("precious/data.txt").exists());
        let entries: Vec<_> = std::fs::read_dir(outside.path()).unwrap().collect();
        assert_eq!(entries.len(), 1, "{top}: something was written outside");
    }
}

#[test]
fn object_names_from_kustomize_never_become_paths() {
    let repo = TestRepo::new();
    for (name, object) in [
        (
            "dotdot",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ../../../escape\n  namespace: x\n",
        ),
        (
            "slash",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a/b\n  namespace: x\n",
        ),
        (
            "escape",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\\e[31mb\"\n  namespace: x\n",
        ),
        (
            "namespace",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ../..\n",
        ),
    ] {
        let script = format!("cat <<'EOF'\n{object}EOF");
        let fake = fake_kustomize(&repo, &format!("kustomize-{name}"), &script);
        let run = repo.aiml_with_env(
            &["render", "--kustomize=binary"],
            &[env("AIML_KUSTOMIZE", &fake)],
        );
        assert_eq!(run.code, 2, "{name}: {}", run.transcript());
        assert!(
            run.stderr.contains("not a valid Kubernetes"),
            "{name}: {}",
            run.stderr
        );
        assert!(!run.stderr.contains('\u{1b}'), "{name}: raw escape printed");
        assert!(repo.generated().is_empty(), "{name}: something was written");
        assert!(!repo.path().join("../escape").exists());
    }
}

#[test]
fn a_blueprint_that_builds_to_nothing_writes_nothing() {
    let repo = TestRepo::new();
    repo.aiml(&["render"]).expect_code(0);
    let before = repo.generated();
    let fake = fake_kustomize(&repo, "kustomize-empty", "exit 0");
    let run = repo.aiml_with_env(
        &["render", "--kustomize=binary"],
        &[env("AIML_KUSTOMIZE", &fake)],
    );
    run.expect_code(2).stderr_has("builds to no object");
    assert_eq!(before, repo.generated());
}

#[test]
fn a_missing_or_empty_blueprints_folder_deletes_nothing() {
    let repo = TestRepo::new();
    repo.aiml(&["render"]).expect_code(0);
    let before = repo.generated();
    // An empty blueprints/ folder.
    std::fs::remove_file(
        repo.path()
            .join("blueprints/multislice-v4-32-training.yaml"),
    )
    .unwrap();
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("no blueprint under `blueprints/`");
    repo.aiml(&["render", "--check"]).expect_code(2);
    repo.aiml(&["validate"]).expect_code(2);
    // No blueprints/ folder at all, in a git work tree.
    std::fs::remove_dir(repo.path().join("blueprints")).unwrap();
    std::fs::create_dir(repo.path().join(".git")).unwrap();
    let run = repo.aiml(&["render"]);
    run.expect_code(2).stderr_has("no `blueprints/` folder");
    assert_eq!(before, repo.generated());
}

#[test]
fn the_repository_is_found_from_a_sub_folder_or_said_to_be_missing() {
    let repo = TestRepo::new();
    let nested = repo.path().join("blueprints/team");
    std::fs::create_dir_all(&nested).unwrap();
    let output = Command::new(cargo_bin("kubectl-aiml"))
        .arg("render")
        .current_dir(&nested)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        repo.path()
            .join("rendered/multislice-v4-32-training")
            .is_dir()
    );
    assert!(!nested.join("rendered").exists());

    let elsewhere = tempfile::tempdir().unwrap();
    for args in [&["render"][..], &["render", "--check"], &["validate"]] {
        let output = Command::new(cargo_bin("kubectl-aiml"))
            .args(args)
            .current_dir(elsewhere.path())
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("not in a kubectl-aiml repository"),
            "{stderr}"
        );
    }

    let file = repo
        .path()
        .join("blueprints/multislice-v4-32-training.yaml");
    let run = repo.aiml(&["--repo", file.to_str().unwrap(), "render"]);
    run.expect_code(2).stderr_has("not a folder");
}

/// kill -9 while kustomize runs: the tree stays as it was, and the next run cleans up and
/// renders. (Every point of the swap itself is covered by `workspace` unit tests.)
#[test]
fn a_killed_render_leaves_the_old_tree_and_the_next_run_recovers() {
    let repo = TestRepo::new();
    repo.aiml(&["render"]).expect_code(0);
    repo.write(
        "blueprints/multislice-v4-32-training.yaml",
        &EXAMPLE.replace("slices: 2", "slices: 3"),
    );
    let before = repo.generated();
    let started = repo.path().join("started");
    let fake = fake_kustomize(
        &repo,
        "kustomize-slow",
        &format!("touch '{}'\nsleep 30\n", started.display()),
    );
    for signal in ["KILL", "TERM", "INT"] {
        let _ = std::fs::remove_file(&started);
        let mut child = support::aiml_command(repo.path())
            .args(["render", "--kustomize=binary"])
            .env("AIML_KUSTOMIZE", &fake)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        support::wait_for_file(&started, Duration::from_secs(20));
        support::kill(&child, signal);
        let _ = child.wait();
        assert_eq!(before, repo.generated(), "{signal}: the tree changed");
    }
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    assert!(!repo.path().join(".aiml/staging").exists());
    repo.aiml(&["render", "--check"]).expect_code(0);
}

/// Five renders at once, with a slow kustomize: one at a time, none loses a folder.
#[test]
fn concurrent_renders_lose_nothing() {
    let repo = TestRepo::new();
    for index in 0..4 {
        repo.write(
            &format!("blueprints/b{index}.yaml"),
            &EXAMPLE.replace(
                "name: multislice-v4-32-training\n",
                &format!("name: training-{index}\n"),
            ),
        );
    }
    let kubectl = which_kubectl();
    let fake = fake_kustomize(
        &repo,
        "kustomize-slowly",
        &format!("sleep 0.2\nexec '{kubectl}' kustomize \"$2\""),
    );
    let children: Vec<_> = (0..5)
        .map(|_| {
            Command::new(cargo_bin("kubectl-aiml"))
                .args(["render", "--kustomize=binary"])
                .current_dir(repo.path())
                .env("AIML_KUSTOMIZE", &fake)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let names: Vec<String> = std::fs::read_dir(repo.path().join("overlays"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 5, "{names:?}");
    repo.aiml(&["render", "--check"]).expect_code(0);
}

fn which_kubectl() -> String {
    support::require("kubectl").display().to_string()
}

#[test]
fn a_hanging_kustomize_is_stopped_and_named() {
    let repo = TestRepo::new();
    let fake = fake_kustomize(&repo, "kustomize-hangs", "sleep 600");
    let started = Instant::now();
    let run = repo.aiml_with_env(
        &["render", "--kustomize=binary"],
        &[
            env("AIML_KUSTOMIZE", &fake),
            ("AIML_KUSTOMIZE_TIMEOUT", std::ffi::OsStr::new("1")),
        ],
    );
    run.expect_code(2);
    assert!(started.elapsed() < Duration::from_secs(30));
    run.stderr_has("overlays/multislice-v4-32-training/")
        .stderr_has("AIML_KUSTOMIZE_TIMEOUT");
    assert!(repo.generated().is_empty());
}

#[test]
fn an_endless_kustomize_output_is_stopped() {
    let repo = TestRepo::new();
    let fake = fake_kustomize(&repo, "kustomize-floods", "exec yes");
    let run = repo.aiml_with_env(
        &["render", "--kustomize=binary"],
        &[
            env("AIML_KUSTOMIZE", &fake),
            ("AIML_MAX_FILE_SIZE", std::ffi::OsStr::new("1M")),
        ],
    );
    run.expect_code(2).stderr_has("printed more than 1 MiB");
}

#[test]
fn fifos_devices_and_huge_files_are_named_not_read() {
    let repo = TestRepo::new();
    let fifo = repo.path().join("blueprints/pipe.yaml");
    let status = Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(status.success());
    let run = repo.aiml(&["render"]);
    run.expect_code(2).stderr_has("is a FIFO");
    std::fs::remove_file(&fifo).unwrap();

    std::os::unix::fs::symlink("/dev/zero", repo.path().join("blueprints/zero.yaml")).unwrap();
    let run = repo.aiml(&["validate"]);
    run.expect_code(2).stderr_has("a character device");
    std::fs::remove_file(repo.path().join("blueprints/zero.yaml")).unwrap();

    let run = repo.aiml(&["validate", "/dev/null"]);
    run.expect_code(2)
        .stderr_has("`/dev/null` is a character device");

    let run = repo.aiml_with_env(
        &["render"],
        &[("AIML_MAX_FILE_SIZE", std::ffi::OsStr::new("100"))],
    );
    run.expect_code(2)
        .stderr_has("larger than 100 bytes")
        .stderr_has("AIML_MAX_FILE_SIZE");
}

#[test]
fn huge_counts_in_manifests_are_checked_quickly() {
    let repo = TestRepo::new();
    repo.write(
        "k8s/jobset.yaml",
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: j, namespace: n}\nspec:\n  replicatedJobs:\n  - name: slice\n    replicas: 2147483647\n    template:\n      spec:\n        parallelism: 2147483647\n        completions: 2147483647\n        template:\n          spec:\n            nodeSelector:\n              cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice\n              cloud.google.com/gke-tpu-topology: 2x2x4\n            containers:\n            - name: c\n              image: busybox:1\n              resources:\n                limits:\n                  google.com/tpu: 4\n",
    );
    let started = Instant::now();
    let run = repo.aiml(&["validate", "k8s"]);
    run.expect_code(1);
    assert!(started.elapsed() < Duration::from_secs(10));
}

#[test]
fn files_with_thousands_of_documents_are_read() {
    let repo = TestRepo::new();
    let text: String = (0..1_100)
        .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n  namespace: ns\ndata:\n  k: v\n"))
        .collect();
    repo.write("k8s/many.yaml", &text);
    let run = repo.aiml(&["validate", "k8s/many.yaml"]);
    run.expect_code(0).stderr_has("1100 objects");
}

#[test]
fn a_closed_stdout_does_not_turn_findings_into_success() {
    let repo = TestRepo::new();
    repo.write(
        "k8s/flavor.yaml",
        "apiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: v4-8\nspec:\n  nodeLabels:\n    cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice\n    cloud.google.com/gke-tpu-topology: 1x2x2\n",
    );
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let status = Command::new(cargo_bin("kubectl-aiml"))
        .args(["validate", "-o", "json", "k8s"])
        .current_dir(repo.path())
        .stdout(writer)
        .stderr(Stdio::null())
        .status()
        .unwrap();
    assert_eq!(status.code(), Some(1));
}

#[test]
fn control_characters_from_input_are_escaped() {
    let repo = TestRepo::new();
    let run = repo.validate_manifest(
        "evil.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  labels:\n    \"\\e]0;owned\\a\": \"\\e[2J\"\n  namespace: n\ndata:\n  \"k\\e[31m\": 1\n",
    );
    run.expect_failure();
    assert!(!run.stderr.contains('\u{1b}'), "{:?}", run.stderr);
    assert!(!run.stderr.contains('\u{7}'), "{:?}", run.stderr);
}

#[test]
fn the_fix_for_an_unquoted_version_keeps_its_digits() {
    let repo = TestRepo::new();
    repo.write(
        "blueprints/multislice-v4-32-training.yaml",
        &EXAMPLE.replace(
            "image: us-docker.pkg.dev/cloud-tpu-images/jax-stable-stack/tpu:jax0.5.2-rev1",
            "image: 1.10",
        ),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(2).stderr_has("quote the value: `\"1.10\"`");
}

//! End-to-end tests of the `kubectl-aiml` binary against temporary repositories, with the real
//! kustomize (`kustomize` or `kubectl kustomize`, which these machines have).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

const EXAMPLE: &str = include_str!("../blueprints/multislice-v4-32-training.yaml");

/// A temporary repository with the example blueprint.
struct TestRepo {
    dir: tempfile::TempDir,
}

impl TestRepo {
    fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Self { dir };
        repo.write("blueprints/multislice-v4-32-training.yaml", EXAMPLE);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn aiml(&self, args: &[&str]) -> Run {
        self.aiml_with_env(args, &[])
    }

    fn aiml_with_env(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Run {
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
    fn generated(&self) -> BTreeMap<String, Vec<u8>> {
        let mut all = BTreeMap::new();
        for top in ["overlays", "rendered"] {
            for (path, content) in aiml::render::read_tree(&self.path().join(top)).expect("read") {
                all.insert(format!("{top}/{path}"), content);
            }
        }
        all
    }
}

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Run {
    /// What a person sees, for snapshots.
    fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

#[test]
fn render_is_deterministic_and_check_passes() {
    let repo = TestRepo::new();
    let first = repo.aiml(&["render"]);
    assert_eq!(first.code, 0, "{}", first.transcript());
    let before = repo.generated();
    assert!(
        before
            .keys()
            .any(|p| p.starts_with("overlays/multislice-v4-32-training/"))
    );
    assert!(
        before
            .keys()
            .any(|p| p.contains("/config-connector/my-project/"))
    );
    assert!(
        before
            .keys()
            .any(|p| p.contains("/workload/multislice-v4-32-training/jobset"))
    );

    let second = repo.aiml(&["render"]);
    assert_eq!(second.code, 0, "{}", second.transcript());
    assert!(
        second.stderr.contains("0 files changed"),
        "{}",
        second.stderr
    );
    assert_eq!(
        before,
        repo.generated(),
        "a second render must be byte-identical"
    );

    let check = repo.aiml(&["render", "--check"]);
    assert_eq!(check.code, 0, "{}", check.transcript());
    // No staging folders are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(repo.path())
        .expect("list")
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with(".aiml"))
        .collect();
    assert!(leftovers.is_empty());
}

#[test]
fn check_reports_stale_missing_and_extra_files() {
    let repo = TestRepo::new();
    assert_eq!(repo.aiml(&["render"]).code, 0);
    let jobset = "rendered/multislice-v4-32-training/workload/multislice-v4-32-training/jobset.jobset.x-k8s.io_multislice-v4-32-training.yaml";
    repo.write(jobset, "edited: by hand\n");
    std::fs::remove_file(
        repo.path()
            .join("overlays/multislice-v4-32-training/workload/resources.yaml"),
    )
    .expect("rm");
    repo.write(
        "rendered/deleted-blueprint/workload/_cluster/namespace_x.yaml",
        "x: 1\n",
    );
    let before = repo.generated();

    let check = repo.aiml(&["render", "--check"]);
    assert_eq!(check.code, 1, "{}", check.transcript());
    insta::assert_snapshot!(check.stderr, @r"
    would add overlays/multislice-v4-32-training/workload/resources.yaml
    would remove rendered/deleted-blueprint/workload/_cluster/namespace_x.yaml
    would change rendered/multislice-v4-32-training/workload/multislice-v4-32-training/jobset.jobset.x-k8s.io_multislice-v4-32-training.yaml
    3 files out of date: run `kubectl aiml render` and commit the result
    ");
    assert_eq!(before, repo.generated(), "--check must not write");

    assert_eq!(repo.aiml(&["render"]).code, 0);
    assert_eq!(repo.aiml(&["render", "--check"]).code, 0);
    assert!(!repo.path().join("rendered/deleted-blueprint").exists());
}

/// The contract's faithful-overlay invariant, checked with kustomize itself: each target
/// folder builds alone to exactly the objects of its rendered folder, and only those.
#[test]
fn overlays_build_to_exactly_the_rendered_objects() {
    let repo = TestRepo::new();
    assert_eq!(repo.aiml(&["render"]).code, 0);
    let overlays = repo.path().join("overlays/multislice-v4-32-training");
    let targets: Vec<String> = std::fs::read_dir(&overlays)
        .expect("overlay folder")
        .map(|entry| {
            entry
                .expect("entry")
                .file_name()
                .to_string_lossy()
                .into_owned()
        })
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(targets, ["config-connector", "workload"]);
    for target in &targets {
        let output = Command::new("kubectl")
            .arg("kustomize")
            .arg(overlays.join(target))
            .output()
            .expect("kubectl");
        assert!(
            output.status.success(),
            "{target}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let mut built: Vec<String> = String::from_utf8(output.stdout)
            .expect("utf-8")
            .split("\n---\n")
            .map(|d| format!("{}\n", d.trim_end_matches('\n')))
            .collect();
        let mut rendered: Vec<String> = aiml::render::read_tree(
            &repo
                .path()
                .join("rendered/multislice-v4-32-training")
                .join(target),
        )
        .expect("read")
        .into_values()
        .map(|bytes| String::from_utf8(bytes).expect("utf-8"))
        .collect();
        assert!(!rendered.is_empty(), "{target}: nothing rendered");
        built.sort();
        rendered.sort();
        assert_eq!(built, rendered, "{target}");
    }
}

/// Bad blueprints: a clear message, the right exit code, and nothing changed on disk.
fn assert_rejected(name: &str, blueprint: &str, expected_code: i32) -> String {
    let repo = TestRepo::new();
    assert_eq!(repo.aiml(&["render"]).code, 0);
    let before = repo.generated();
    repo.write("blueprints/bad.yaml", blueprint);
    let run = repo.aiml(&["render"]);
    assert_eq!(run.code, expected_code, "{name}: {}", run.transcript());
    assert_eq!(
        before,
        repo.generated(),
        "{name}: a failed render must change nothing"
    );
    assert!(
        run.stderr.contains("nothing was written") || expected_code == 2,
        "{}",
        run.stderr
    );
    run.stderr
}

fn bad(spec: &str) -> String {
    format!(
        "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata:\n  name: bad\nspec:\n  project: my-project\n{spec}"
    )
}

#[test]
fn rejects_unknown_tpu_type() {
    let stderr = assert_rejected("unknown type", &bad("  tpu:\n    type: v4-33\n"), 1);
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_topology_that_disagrees_with_type() {
    let stderr = assert_rejected(
        "mismatch",
        &bad("  tpu:\n    type: v4-32\n    topology: 2x2x2\n"),
        1,
    );
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_multislice_on_single_host_type() {
    let stderr = assert_rejected(
        "single host",
        &bad("  tpu:\n    type: v5litepod-8\n    slices: 2\n"),
        1,
    );
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_unknown_field_with_suggestion() {
    let stderr = assert_rejected(
        "unknown field",
        &bad("  tpu:\n    type: v4-32\n    topolgy: 2x2x4\n"),
        2,
    );
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_quoted_number() {
    let stderr = assert_rejected(
        "quoted number",
        &bad("  tpu:\n    type: v4-32\n    slices: \"2\"\n"),
        2,
    );
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_malformed_yaml() {
    let stderr = assert_rejected(
        "malformed",
        "apiVersion: aiml.dev/v1alpha1\nkind: [MultisliceTraining\n",
        2,
    );
    insta::assert_snapshot!(stderr);
}

#[test]
fn rejects_unknown_kind_and_duplicate_names() {
    let unknown =
        "apiVersion: aiml.dev/v1alpha1\nkind: MultiSliceTraining\nmetadata: {name: x}\nspec: {}\n";
    insta::assert_snapshot!(assert_rejected("unknown kind", unknown, 2));
    let duplicate = EXAMPLE.to_string();
    insta::assert_snapshot!(assert_rejected("duplicate", &duplicate, 2));
}

#[test]
fn reports_every_problem_at_once_as_json() {
    let repo = TestRepo::new();
    repo.write(
        "blueprints/bad.yaml",
        &bad("  zone: europe-west4-a\n  tpu:\n    type: v4-32\n    topology: 4x4\n  bucket:\n    name: goog-data\n"),
    );
    let run = repo.aiml(&["render", "-o", "json"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let rules: Vec<&str> = findings
        .as_array()
        .expect("array")
        .iter()
        .map(|f| f["rule"].as_str().expect("rule"))
        .collect();
    assert_eq!(
        rules,
        ["gcp-location", "tpu-topology-shape", "gcs-bucket-name"]
    );
    assert_eq!(findings[0]["file"], "blueprints/bad.yaml");
    assert_eq!(findings[0]["line"], 7);
    assert!(!repo.path().join("rendered").exists());
}

#[test]
fn renders_only_named_blueprints_and_rejects_unknown_names() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["render", "nope"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("no blueprint named `nope`"),
        "{}",
        run.stderr
    );
    assert_eq!(repo.aiml(&["render", "multislice-v4-32-training"]).code, 0);
}

#[test]
fn missing_kustomize_fails_with_exit_2() {
    let repo = TestRepo::new();
    let run = repo.aiml_with_env(
        &["render"],
        &[("AIML_KUSTOMIZE", "/nonexistent/kustomize".as_ref())],
    );
    assert_eq!(run.code, 2);
    let stderr = run.stderr;
    assert!(stderr.contains("kustomize not found"), "{stderr}");
    assert!(repo.generated().is_empty());
}

#[test]
fn failing_kustomize_names_the_overlay_and_keeps_its_message() {
    let repo = TestRepo::new();
    let fake = repo.path().join("fake-kustomize");
    std::fs::write(&fake, "#!/bin/sh\necho 'Error: boom' >&2\nexit 1\n").expect("write");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fake, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let run = repo.aiml_with_env(&["render"], &[("AIML_KUSTOMIZE", fake.as_os_str())]);
    assert_eq!(run.code, 2);
    let stderr = run.stderr;
    assert!(
        stderr.contains("fake-kustomize build overlays/multislice-v4-32-training"),
        "{stderr}"
    );
    assert!(stderr.contains("Error: boom"), "{stderr}");
    assert!(repo.generated().is_empty());
}

#[test]
fn blueprints_lists_kinds_and_blueprints() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["blueprints"]);
    assert_eq!(run.code, 0);
    insta::assert_snapshot!(run.stdout);
    let json: serde_json::Value =
        serde_json::from_str(&repo.aiml(&["blueprints", "-o", "json"]).stdout).expect("json");
    assert_eq!(json["blueprints"][0]["name"], "multislice-v4-32-training");
}

#[test]
fn version_and_help() {
    let repo = TestRepo::new();
    let version = repo.aiml(&["version"]);
    let mut lines = version.stdout.lines();
    assert_eq!(
        lines.next(),
        Some(format!("kubectl-aiml {}", env!("CARGO_PKG_VERSION")).as_str())
    );
    // The kustomize renders use, and its version.
    let kustomize = lines.next().expect("kustomize line");
    assert!(kustomize.starts_with("kustomize v5."), "{kustomize}");
    assert_eq!(repo.aiml(&["--version"]).code, 0);
    for command in ["render", "validate", "blueprints", "version"] {
        let help = repo.aiml(&[command, "--help"]);
        assert_eq!(help.code, 0);
        assert!(
            help.stdout.contains("Example"),
            "{command} --help has no example"
        );
    }
    assert_eq!(repo.aiml(&["render", "--bogus"]).code, 2);
}

#[test]
fn validate_defaults_to_the_repository() {
    let repo = TestRepo::new();
    let run = repo.aiml(&["validate"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(repo.generated().is_empty(), "validate writes nothing");
}

/// kubectl finds the binary on PATH and runs it as `kubectl aiml`.
#[test]
fn kubectl_discovers_the_plugin() {
    if Command::new("kubectl")
        .arg("version")
        .arg("--client")
        .output()
        .is_err()
    {
        #[expect(clippy::print_stderr, reason = "the skip notice is the point")]
        {
            eprintln!("skipping: kubectl is not installed");
        }
        return;
    }
    let bin: PathBuf = cargo_bin("kubectl-aiml");
    let dir = bin.parent().expect("bin dir");
    let path = std::env::join_paths(std::iter::once(dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("PATH");
    let output = Command::new("kubectl")
        .args(["aiml", "version"])
        .env("PATH", path)
        .output()
        .expect("kubectl");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&output.stdout).lines().next(),
        Some(format!("kubectl-aiml {}", env!("CARGO_PKG_VERSION")).as_str())
    );
}

/// The repository's own committed overlays and rendered output are what a render produces.
#[test]
fn committed_output_is_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let output = Command::new(cargo_bin("kubectl-aiml"))
        .args(["render", "--check"])
        .current_dir(root)
        .output()
        .expect("run");
    assert!(
        output.status.success(),
        "run `cargo run -- render` and commit:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `validate PATH` runs every rule on plain manifests (here the reference guide's v4-8 flavor
/// bug: `1x2x2` instead of `2x2x1`), and passes good ones.
#[test]
fn validate_checks_manifests_given_as_paths() {
    let repo = TestRepo::new();
    repo.write(
        "k8s/flavor.yaml",
        "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: v4-8\nspec:\n  nodeLabels:\n    cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice\n    cloud.google.com/gke-tpu-topology: 1x2x2\n",
    );
    let run = repo.aiml(&["validate", "-o", "json", "k8s"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let of_rule = |rule: &str| {
        findings
            .as_array()
            .expect("array")
            .iter()
            .find(|f| f["rule"] == rule)
            .unwrap_or_else(|| panic!("no {rule} in {findings:#}"))
            .clone()
    };
    let flavor = of_rule("kueue-flavor-labels");
    assert_eq!(flavor["file"], "k8s/flavor.yaml");
    assert_eq!(flavor["line"], 8);
    assert_eq!(flavor["object"]["name"], "v4-8");
    // Kueue v0.19 still serves v1beta1, deprecated: a warning, not an error.
    assert_eq!(of_rule("api-version-deprecated")["severity"], "warning");

    repo.write("k8s/flavor.yaml", "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata:\n  name: v4-8\nspec:\n  nodeLabels:\n    cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice\n    cloud.google.com/gke-tpu-topology: 2x2x1\n");
    let run = repo.aiml(&["validate", "k8s/flavor.yaml"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}

/// Schemas are checked by the tool itself: an API version Kubernetes 1.32 no longer serves and
/// a number where a string belongs are findings at their file, line and field.
#[test]
fn validate_checks_schemas_and_removed_api_versions() {
    let repo = TestRepo::new();
    repo.write(
        "k8s/hpa.yaml",
        "apiVersion: autoscaling/v2beta1\nkind: HorizontalPodAutoscaler\nmetadata:\n  name: triton\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: triton}\n  maxReplicas: 3\n",
    );
    repo.write(
        "k8s/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  selector:\n    matchLabels: {app: web}\n  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n        env:\n        - name: VERSION\n          value: 1.10\n",
    );
    let run = repo.aiml(&["validate", "k8s"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    insta::assert_snapshot!(run.stderr);
    // The rendered output of the repository passes its schemas.
    assert_eq!(repo.aiml(&["render"]).code, 0);
    let run = repo.aiml(&["validate", "--strict", "rendered"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
}

/// `--schemas DIR` adds schemas for other custom resources; without it they are unknown
/// kinds, a warning (an error with `--strict`).
#[test]
fn extra_schemas_and_strict_mode() {
    let repo = TestRepo::new();
    repo.write(
        "k8s/widget.yaml",
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: large\n",
    );
    let run = repo.aiml(&["validate", "k8s"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    assert!(run.stderr.contains("schema-unknown-kind"), "{}", run.stderr);
    assert_eq!(repo.aiml(&["validate", "--strict", "k8s"]).code, 1);
    repo.write(
        "extra/example.com/widget_v1.json",
        r#"{"type": "object", "properties": {"apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"}, "spec": {"type": "object", "properties": {"size": {"type": "integer"}}, "additionalProperties": false}}}"#,
    );
    let run = repo.aiml(&["validate", "--schemas", "extra", "k8s"]);
    assert_eq!(run.code, 1, "{}", run.transcript());
    assert!(run.stderr.contains("spec.size"), "{}", run.stderr);
}

/// The example under another name: what a team adds for a second training.
fn second_blueprint(name: &str) -> String {
    EXAMPLE.replace(
        "name: multislice-v4-32-training\n",
        &format!("name: {name}\n"),
    )
}

/// A second `MultisliceTraining` gets its own cluster-scoped and project-scoped names:
/// nothing collides, and both render.
#[test]
fn a_second_training_blueprint_renders_without_collisions() {
    let repo = TestRepo::new();
    repo.write(
        "blueprints/second.yaml",
        &second_blueprint("multislice-v4-32-training-second"),
    );
    let run = repo.aiml(&["render"]);
    assert_eq!(run.code, 0, "{}", run.transcript());
    let generated = repo.generated();
    let files = |name: &str| -> std::collections::BTreeSet<String> {
        generated
            .keys()
            .filter_map(|p| p.strip_prefix(&format!("rendered/{name}/")))
            .map(ToString::to_string)
            .collect()
    };
    let first = files("multislice-v4-32-training");
    let second = files("multislice-v4-32-training-second");
    assert_eq!(first.len(), second.len());
    assert!(
        first.is_disjoint(&second),
        "shared objects: {:?}",
        first.intersection(&second).collect::<Vec<_>>()
    );
}

/// Two blueprints that would render the same object are refused, naming both.
#[test]
fn blueprints_rendering_the_same_object_are_refused() {
    let repo = TestRepo::new();
    assert_eq!(repo.aiml(&["render"]).code, 0);
    let before = repo.generated();
    let shared = second_blueprint("other-training").replace(
        "  project: my-project",
        "  project: my-project\n  namespace: multislice-v4-32-training",
    );
    repo.write("blueprints/other.yaml", &shared);
    let run = repo.aiml(&["render", "-o", "json"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    let collisions: Vec<&str> = findings
        .as_array()
        .expect("array")
        .iter()
        .filter(|f| f["rule"] == "blueprint-object-collision")
        .map(|f| f["message"].as_str().expect("message"))
        .collect();
    assert!(
        collisions.iter().any(|m| m.contains("`other-training`")
            && m.contains("`multislice-v4-32-training`")
            && m.contains("`Namespace` `multislice-v4-32-training`")),
        "{collisions:#?}"
    );
    assert_eq!(before, repo.generated(), "nothing written");

    // Rendering only the new blueprint still sees the other one's committed objects.
    let run = repo.aiml(&["render", "other-training"]);
    assert_eq!(run.code, 2, "{}", run.transcript());
    assert!(
        run.stderr.contains("blueprint-object-collision"),
        "{}",
        run.stderr
    );
}

/// Same blueprints, another folder, other file names, files written in another order: the
/// rendered objects are byte for byte the same.
#[test]
fn output_does_not_depend_on_folders_file_names_or_walk_order() {
    let second = second_blueprint("second-training");
    let one = TestRepo::new();
    one.write("blueprints/second.yaml", &second);
    let other = tempfile::tempdir().expect("temp dir");
    let nested = other.path().join("some/deeper/checkout");
    let two = TestRepo {
        dir: tempfile::tempdir_in({
            std::fs::create_dir_all(&nested).expect("mkdir");
            &nested
        })
        .expect("temp dir"),
    };
    // Both blueprints in one file, in reverse order, in a sub-folder.
    two.write(
        "blueprints/team/all.yml",
        &format!("{second}---\n{EXAMPLE}"),
    );
    for repo in [&one, &two] {
        let run = repo.aiml(&["render"]);
        assert_eq!(run.code, 0, "{}", run.transcript());
    }
    let objects = |repo: &TestRepo| -> BTreeMap<String, Vec<u8>> {
        repo.generated()
            .into_iter()
            .filter(|(path, _)| !path.ends_with("kustomization.yaml"))
            .collect()
    };
    assert_eq!(objects(&one), objects(&two));
}

//! Golden tests of the compiler: blueprint → overlay, without kustomize.
//!
//! Each `tests/fixtures/compile/<case>/blueprints/` is a repository's blueprints. Compiling
//! it must give no finding, and each blueprint's overlay (every file of every target folder)
//! is snapshotted as `compile__<case>@<blueprint>.snap`. The cases cover every `existing: true`
//! branch, single- and multi-host TPU types, a cluster shared between blueprints and the
//! optional parts of the spec. A second test renders each case with the real kustomize binary
//! (and checks that the in-process build writes the same bytes) and
//! checks that the pipeline accepts the result (every rule passes). A case may hold an
//! `aiml.yaml` (the repository settings): its GitOps wiring is then part of the overlays. A
//! third test holds every container of the cases and of `rendered/` to CPU and memory
//! requests and limits, but for the documented exceptions.

mod support;

use std::path::{Path, PathBuf};

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
        let loaded = aiml::input::load(&case, &registry, u64::MAX).expect("load");
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
        let run = |args: &[&str], why: &str| {
            support::succeed(
                support::aiml_command(repo.path()).args(args),
                &format!("{name}: {why}"),
            )
        };
        run(&["render", "--kustomize=binary", "--no-cache"], "render");
        run(
            &["render", "--check", "--no-cache"],
            "the in-process build differs from kustomize's",
        );
        run(&["validate", "--strict", "rendered"], "validate rendered/");
    }
}

/// Containers that go without some CPU or memory request or limit, each for a reason its
/// template and the README give: (object kind, container, what it lacks).
const RESOURCE_EXCEPTIONS: &[(&str, &str, &[&str])] = &[
    // Saxml's TPU model server has its TPU VM to itself; throttling would stall the chips.
    ("LeaderWorkerSet", "model-server", &["limits.cpu"]),
    // Kueue admits the training only if its ClusterQueue (TPU chips) covers every request.
    (
        "JobSet",
        "tpu-job",
        &[
            "requests.cpu",
            "requests.memory",
            "limits.cpu",
            "limits.memory",
        ],
    ),
];

/// Every container (and init container) under `node`, with its name.
fn containers<'n>(node: &'n aiml::yaml::Node, out: &mut Vec<&'n aiml::yaml::Node>) {
    match &node.value {
        aiml::yaml::Value::Map(entries) => {
            for (key, value) in entries {
                if matches!(key.text.as_str(), "containers" | "initContainers")
                    && let Some(items) = value.as_seq()
                {
                    out.extend(items.iter().filter(|item| item.get("image").is_some()));
                }
                containers(value, out);
            }
        }
        aiml::yaml::Value::Seq(items) => items.iter().for_each(|item| containers(item, out)),
        _ => {}
    }
}

/// What CPU and memory requests and limits the containers of `text` lack, beyond the
/// documented exceptions, as `file: Kind/container: field` lines.
fn missing_resources(file: &str, text: &str) -> Vec<String> {
    let mut missing = Vec::new();
    for document in aiml::yaml::parse_documents(text).expect("YAML") {
        let kind = document.get("kind").and_then(|k| k.as_str()).unwrap_or("");
        let mut found = Vec::new();
        containers(&document, &mut found);
        for container in found {
            let name = container.get("name").and_then(|n| n.as_str()).unwrap_or("");
            let allowed = RESOURCE_EXCEPTIONS
                .iter()
                .find(|(k, c, _)| *k == kind && *c == name)
                .map_or(&[][..], |(_, _, fields)| *fields);
            for section in ["requests", "limits"] {
                for resource in ["cpu", "memory"] {
                    let field = format!("{section}.{resource}");
                    let set = container.at(&["resources", section, resource]).is_some();
                    if !set && !allowed.contains(&field.as_str()) {
                        missing.push(format!("{file}: {kind}/{name}: {field}"));
                    }
                }
            }
        }
    }
    missing
}

/// Issue 8 and 10: workloads carry resource requests and limits. Checked over every compile
/// case and the repository's own rendered output.
#[test]
fn every_container_requests_and_limits_cpu_and_memory() {
    let registry = Registry::builtin();
    let mut missing = Vec::new();
    let mut checked = 0;
    for case in cases() {
        let name = case_name(&case);
        let loaded = aiml::input::load(&case, &registry, u64::MAX).expect("load");
        let (compiled, _) = aiml::render::compile(&loaded, &registry, &[]).expect("compile");
        for blueprint in compiled {
            let Some(compiled) = blueprint.compiled else {
                continue;
            };
            for (path, content) in &compiled.overlay.files {
                if path.ends_with("resources.yaml") {
                    checked += 1;
                    missing.extend(missing_resources(&format!("{name}/{path}"), content));
                }
            }
        }
    }
    let mut pending = vec![PathBuf::from("rendered")];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).expect("rendered/") {
            let path = entry.expect("entry").path();
            // The platform controllers' release manifests are upstream's, as released.
            if path.ends_with("_sync/platform") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|ext| ext == "yaml") {
                checked += 1;
                let text = std::fs::read_to_string(&path).expect("read");
                missing.extend(missing_resources(&path.display().to_string(), &text));
            }
        }
    }
    assert!(checked > 50, "checked only {checked} files");
    assert!(missing.is_empty(), "{missing:#?}");
    // The check itself sees a missing limit, in a Job's pod template too.
    let job = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  template:\n    spec:\n      containers:\n      - name: c\n        image: i:1\n        resources:\n          requests: {cpu: 1, memory: 1Gi}\n          limits: {memory: 1Gi}\n";
    assert_eq!(
        missing_resources("job.yaml", job),
        ["job.yaml: Job/c: limits.cpu"]
    );
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

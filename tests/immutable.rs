//! `diff` and the Kubernetes changes that cannot be applied in place: the README's own example
//! (`slices: 2` → `3` on `blueprints/multislice-v4-32-training.yaml`) changes the JobSet's
//! `spec.replicatedJobs`, which the JobSet webhook refuses on an existing JobSet; the JobSet is
//! named after its content, so the change is a new run replacing the old one. The same JobSet
//! edited in place is still named as a refused update. The repository is copied
//! into a temporary git repository (its blueprints, settings and committed output), edited,
//! rendered, and diffed in every output format, as a reviewer would.

mod support;

use std::path::Path;

use support::{Run, TestRepo};

const BLUEPRINT: &str = "blueprints/multislice-v4-32-training.yaml";
const JOBSET: &str = "JobSet/multislice-v4-32-training/multislice-v4-32-training";

/// This repository's blueprints, settings and committed output, committed in a temporary git
/// repository, then `slices: 2` → `3` and a render.
fn edited_clone() -> TestRepo {
    let repo = TestRepo::empty();
    support::copy_this_repository(repo.path());
    let git = git2::Repository::init(repo.path()).unwrap();
    let who = git2::Signature::new("Test", "test@example.com", &git2::Time::new(0, 0)).unwrap();
    support::commit_all(&git, &who, "clean");
    let text = std::fs::read_to_string(repo.path().join(BLUEPRINT)).unwrap();
    assert!(
        text.contains("slices: 2"),
        "the README's example edit still applies"
    );
    repo.write(BLUEPRINT, &text.replace("slices: 2", "slices: 3"));
    let render = repo.aiml(&["render"]);
    render.expect_code(0);
    repo
}

fn diff(repo: &TestRepo, args: &[&str]) -> Run {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    let run = repo.aiml(&all);
    run.expect_code(0);
    run
}

#[test]
fn the_readme_slices_edit_replaces_the_run_instead_of_a_refused_update() {
    let repo = edited_clone();

    let text = diff(&repo, &[]).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("new run replaces the old one"))
        .unwrap_or_else(|| panic!("no replaced-run line:\n{text}"));
    assert!(
        line.starts_with(&format!("  new run replaces the old one: {JOBSET}-")),
        "{line}"
    );
    for part in [
        format!("(was {}-", JOBSET.rsplit('/').next().unwrap()),
        "[multislice-v4-32-training]".to_string(),
        "the old JobSet is pruned with its Jobs and pods".to_string(),
    ] {
        assert!(line.contains(&part), "{part}: {line}");
    }
    // Nothing is refused, nothing recreated in GCP: the new JobSet is a new object.
    assert!(!text.contains("cannot be applied in place"), "{text}");
    assert!(!text.contains("! recreate"), "{text}");
    assert!(
        text.lines().any(
            |l| l.starts_with(&format!("  > {}", JOBSET.replacen('/', " ", 1)))
                && l.contains("(new run, replaces multislice-v4-32-training-")
        ),
        "{text}"
    );

    let markdown = diff(&repo, &["-o", "markdown"]).stdout;
    assert!(
        markdown.contains(&format!("**new run replaces the old one**: `{JOBSET}-")),
        "{markdown}"
    );
    assert!(!markdown.contains("**Refused updates**"), "{markdown}");

    let json: serde_json::Value =
        serde_json::from_str(&diff(&repo, &["-o", "json"]).stdout).unwrap();
    assert_eq!(json["impact"]["refused"], serde_json::json!([]));
    let replaced = json["impact"]["replaced_runs"].as_array().unwrap();
    assert_eq!(replaced.len(), 1, "{replaced:?}");
    assert_eq!(replaced[0]["object"]["kind"], "JobSet");
    assert_ne!(replaced[0]["object"]["name"], replaced[0]["from"]);
    assert_eq!(json["impact"]["destructive"], serde_json::json!([]));
}

/// The refused-update table still reads manifests the tool did not name: the same JobSet
/// edited in place (same name, three slices) is refused by the JobSet webhook.
#[test]
fn a_jobset_edited_in_place_cannot_be_applied() {
    let repo = edited_clone();
    // Back to the committed render, then the committed JobSet edited by hand.
    let git = git2::Repository::open(repo.path()).unwrap();
    git.checkout_head(Some(
        git2::build::CheckoutBuilder::new()
            .force()
            .remove_untracked(true),
    ))
    .unwrap();
    let folder = repo
        .path()
        .join("rendered/multislice-v4-32-training/workload/multislice-v4-32-training");
    let file = std::fs::read_dir(&folder)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("jobset.jobset.x-k8s.io_")
        })
        .unwrap();
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("replicas: 2"), "{text}");
    std::fs::write(&file, text.replacen("replicas: 2", "replicas: 3", 1)).unwrap();

    let text = diff(&repo, &[]).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("cannot be applied in place"))
        .unwrap_or_else(|| panic!("no refused-update line:\n{text}"));
    assert!(
        line.starts_with(&format!("  ! cannot be applied in place: {JOBSET}-"))
            && line.contains(" spec.replicatedJobs[name=slice].replicas changed"),
        "{line}"
    );
    for part in [
        "the JobSet webhook refuses changes to `spec.replicatedJobs`",
        "kubernetes-sigs/jobset v0.12.0, pkg/webhooks/jobset_webhook.go ValidateUpdate",
        "[multislice-v4-32-training]",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    assert!(
        text.contains(
            "the apply fails until the JobSet is deleted and created again: the run restarts"
        ),
        "{text}"
    );
    let markdown = diff(&repo, &["-o", "markdown"]).stdout;
    assert!(
        markdown.contains("(https://github.com/kubernetes-sigs/jobset/blob/f22e565ac3cc3265c7c45ef67ecffdc689af5d77/pkg/webhooks/jobset_webhook.go)"),
        "{markdown}"
    );
    let json: serde_json::Value =
        serde_json::from_str(&diff(&repo, &["-o", "json"]).stdout).unwrap();
    let refused = json["impact"]["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["refused_by"], "the JobSet webhook");
    assert_eq!(refused[0]["source"]["ref"], "v0.12.0");
    assert_eq!(refused[0]["source"]["function"], "ValidateUpdate");
}

/// `(path, rule)` of every `x-kubernetes-validations` rule of a schema that reads `oldSelf`.
fn transition_rules(schema: &serde_json::Value, path: &str, out: &mut Vec<(String, String)>) {
    for rule in schema["x-kubernetes-validations"]
        .as_array()
        .into_iter()
        .flatten()
    {
        let text = rule["rule"].as_str().unwrap_or_default();
        if text.contains("oldSelf") {
            out.push((path.to_string(), text.to_string()));
        }
    }
    for (key, child) in schema["properties"].as_object().into_iter().flatten() {
        let child_path = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        transition_rules(child, &child_path, out);
    }
    if schema["items"].is_object() {
        transition_rules(&schema["items"], &format!("{path}[]"), out);
    }
}

#[test]
fn every_self_equals_old_self_rule_of_the_vendored_crds_is_in_the_table() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let table = std::fs::read_to_string(root.join("data/refused-updates.tsv")).unwrap();
    let rows: Vec<Vec<&str>> = table
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').collect())
        .collect();
    let index: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("schemas/crds/index.json")).unwrap(),
    )
    .unwrap();
    let mut found = 0;
    for entry in index.as_object().unwrap().values() {
        let file = entry["file"].as_str().unwrap();
        let schema: serde_json::Value = serde_json::from_str(
            &std::fs::read_to_string(root.join("schemas/crds").join(file)).unwrap(),
        )
        .unwrap();
        let mut rules = Vec::new();
        transition_rules(&schema, "", &mut rules);
        for (path, rule) in rules {
            if rule.replace(' ', "") != "self==oldSelf" {
                continue;
            }
            found += 1;
            let (group, kind) = (
                entry["group"].as_str().unwrap(),
                entry["kind"].as_str().unwrap(),
            );
            assert!(
                rows.iter()
                    .any(|r| r[..4] == [group, kind, "immutable", path.as_str()]),
                "{kind} {path} ({file}) is not in data/refused-updates.tsv: run scripts/derive-immutable-fields"
            );
        }
    }
    assert!(
        found >= 15,
        "the vendored CRDs keep their transition rules ({found})"
    );
}

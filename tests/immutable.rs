//! `diff` names the Kubernetes changes that cannot be applied in place: the README's own
//! example (`slices: 2` → `3` on `blueprints/multislice-v4-32-training.yaml`) changes the
//! JobSet's `spec.replicatedJobs`, which the JobSet webhook refuses. The repository is copied
//! into a temporary git repository (its blueprints, settings and committed output), edited,
//! rendered, and diffed in every output format, as a reviewer would.

mod support;

use std::path::Path;

use support::{Run, TestRepo};

const BLUEPRINT: &str = "blueprints/multislice-v4-32-training.yaml";
const JOBSET: &str = "JobSet/multislice-v4-32-training/multislice-v4-32-training";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// This repository's blueprints, settings and committed output, committed in a temporary git
/// repository, then `slices: 2` → `3` and a render.
fn edited_clone() -> TestRepo {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let repo = TestRepo::empty();
    for folder in ["blueprints", "overlays", "rendered"] {
        copy_dir(&root.join(folder), &repo.path().join(folder));
    }
    std::fs::copy(root.join("aiml.yaml"), repo.path().join("aiml.yaml")).unwrap();
    let git = git2::Repository::init(repo.path()).unwrap();
    let mut index = git.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.write().unwrap();
    let tree = git.find_tree(index.write_tree().unwrap()).unwrap();
    let who = git2::Signature::new("Test", "test@example.com", &git2::Time::new(0, 0)).unwrap();
    git.commit(Some("HEAD"), &who, &who, "clean", &tree, &[])
        .unwrap();
    let text = std::fs::read_to_string(repo.path().join(BLUEPRINT)).unwrap();
    assert!(
        text.contains("slices: 2"),
        "the README's example edit still applies"
    );
    repo.write(BLUEPRINT, &text.replace("slices: 2", "slices: 3"));
    let render = repo.aiml(&["render"]);
    assert_eq!(render.code, 0, "{}", render.transcript());
    repo
}

fn diff(repo: &TestRepo, args: &[&str]) -> Run {
    let mut all = vec!["diff"];
    all.extend_from_slice(args);
    let run = repo.aiml(&all);
    assert_eq!(run.code, 0, "{}", run.transcript());
    run
}

#[test]
fn the_readme_slices_edit_cannot_be_applied_in_place() {
    let repo = edited_clone();

    let text = diff(&repo, &[]).stdout;
    let line = text
        .lines()
        .find(|l| l.contains("cannot be applied in place"))
        .unwrap_or_else(|| panic!("no refused-update line:\n{text}"));
    assert!(
        line.starts_with(&format!(
            "  ! cannot be applied in place: {JOBSET} spec.replicatedJobs[name=slice].replicas, "
        )),
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
    // The new node pool, the quota and the rest are not refused: one line only, and the
    // refusal is not called a GCP recreation.
    assert_eq!(
        text.matches("cannot be applied in place").count(),
        1,
        "{text}"
    );
    assert!(!text.contains("! recreate"), "{text}");

    let markdown = diff(&repo, &["-o", "markdown"]).stdout;
    assert!(
        markdown.contains("**Refused updates** (the API server or a webhook rejects"),
        "{markdown}"
    );
    assert!(
        markdown.contains(&format!("**cannot be applied in place**: `{JOBSET}`")),
        "{markdown}"
    );
    assert!(
        markdown.contains("(https://github.com/kubernetes-sigs/jobset/blob/f22e565ac3cc3265c7c45ef67ecffdc689af5d77/pkg/webhooks/jobset_webhook.go)"),
        "{markdown}"
    );

    let json: serde_json::Value =
        serde_json::from_str(&diff(&repo, &["-o", "json"]).stdout).unwrap();
    let refused = json["impact"]["refused"].as_array().unwrap();
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(refused[0]["object"]["kind"], "JobSet");
    assert_eq!(refused[0]["refused_by"], "the JobSet webhook");
    assert_eq!(refused[0]["source"]["repository"], "kubernetes-sigs/jobset");
    assert_eq!(refused[0]["source"]["ref"], "v0.12.0");
    assert_eq!(refused[0]["source"]["function"], "ValidateUpdate");
    assert_eq!(
        refused[0]["fields"][0],
        "spec.replicatedJobs[name=slice].replicas"
    );
    assert_eq!(json["impact"]["destructive"], serde_json::json!([]));
}

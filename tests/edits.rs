//! Every edit a person makes to a shipped blueprint applies under continuous reconciliation:
//! rendered and diffed against the committed output, it never changes a field that the API
//! server, a webhook or a CRD rule refuses to change on an existing object (the impact's
//! refused updates, `data/refused-updates.tsv`). Runs and Kueue flavors are named after their
//! content instead, so an edit creates new objects and prunes old ones.
//!
//! The repository's blueprints, settings and committed output are copied into a temporary git
//! repository; each edit is rendered there, diffed as JSON, and undone.

mod support;

use support::TestRepo;

/// (blueprint file, text, replacement everywhere): one edit each, as a person would make it.
const EDITS: &[(&str, &str, &str)] = &[
    // The README's GitOps example, and its way back.
    ("multislice-v4-32-training", "slices: 2", "slices: 3"),
    ("multislice-v4-32-training", "slices: 2", "slices: 1"),
    (
        "multislice-v4-32-training",
        "type: v4-32\n    topology: 2x2x4",
        "type: v4-64\n    topology: 2x4x4",
    ),
    (
        "multislice-v4-32-training",
        "tpu:jax0.5.2-rev1",
        "tpu:jax0.6.1-rev1",
    ),
    (
        "multislice-v4-32-training",
        "print(\"Global device count:\"",
        "print(\"Devices:\"",
    ),
    ("sax-llama2-70b-v5e-16", "replicas: 1", "replicas: 2"),
    ("sax-llama2-70b-v5e-16", ":2a12db6", ":3b23ec7"),
    ("sax-llama2-70b-v5e-16", "maxReplicas: 3", "maxReplicas: 5"),
    (
        "triton-t4-hpa",
        "tritonserver:26.07-py3",
        "tritonserver:26.08-py3",
    ),
    ("triton-t4-hpa", "maxNodes: 3", "maxNodes: 4"),
    (
        "triton-t4-hpa",
        "targetUtilization: 85",
        "targetUtilization: 70",
    ),
    (
        "triton-t4-hpa",
        "ingress: {}",
        "ingress: {hosts: [triton.example.internal]}",
    ),
    ("triton-t4-hpa", "minReplicas: 1", "minReplicas: 2"),
    ("locust-bench", "users: 20", "users: 40"),
    ("locust-bench", "workers: 4", "workers: 8"),
    ("locust-bench", "duration: 600", "duration: 1200"),
];

#[test]
fn every_blueprint_edit_applies_without_a_refused_update() {
    let repo = TestRepo::empty();
    support::copy_this_repository(repo.path());
    let git = git2::Repository::init(repo.path()).unwrap();
    let who = git2::Signature::new("Test", "test@example.com", &git2::Time::new(0, 0)).unwrap();
    // The base is what this binary renders (the committed output may lag a change under test).
    repo.aiml(&["render"]).expect_code(0);
    support::commit_all(&git, &who, "clean");

    let mut failures = Vec::new();
    for (name, from, to) in EDITS {
        let file = format!("blueprints/{name}.yaml");
        let text = std::fs::read_to_string(repo.path().join(&file)).unwrap();
        assert!(
            text.contains(from),
            "{file} no longer holds `{from}`: update the edit"
        );
        repo.write(&file, &text.replace(from, to));
        let render = repo.aiml(&["render"]);
        render.expect_code(0);
        let diff = repo.aiml(&["diff", "-o", "json"]);
        diff.expect_code(0);
        let json: serde_json::Value = serde_json::from_str(&diff.stdout).unwrap();
        assert_ne!(
            json["objects"],
            serde_json::json!([]),
            "`{from}` → `{to}` in {file} changed nothing"
        );
        let refused = &json["impact"]["refused"];
        if refused != &serde_json::json!([]) {
            failures.push(format!("`{from}` → `{to}` in {file}: {refused:#}"));
        }
        git.checkout_head(Some(
            git2::build::CheckoutBuilder::new()
                .force()
                .remove_untracked(true),
        ))
        .unwrap();
    }
    assert!(
        failures.is_empty(),
        "edits the sync engine could not apply:\n{}",
        failures.join("\n")
    );
}

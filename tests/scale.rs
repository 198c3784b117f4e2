//! Work that must grow with the input, not with its square, and limits that hold on every
//! path. Speed targets live in `scripts/bench`; these tests count instead of timing, or check
//! what bounds the work (a stream refused whole, findings summarised).

mod support;

use support::TestRepo;

/// A stream one document over the limit is refused whole (exit 2, naming the file), even
/// though every document alone is a valid object: reading it document by document would lift
/// the limit.
#[test]
fn a_stream_over_the_document_limit_is_refused_whole() {
    let repo = TestRepo::new();
    let over = aiml::limits::MAX_DOCUMENTS + 1;
    let text = "---\n{apiVersion: v1, kind: ConfigMap, metadata: {name: c}}\n".repeat(over);
    repo.write("k8s/storm.yaml", &text);
    let run = repo.aiml(&["-o", "json", "validate", "k8s/storm.yaml"]);
    assert_eq!(
        run.code,
        2,
        "{}",
        &run.stderr[..run.stderr.len().min(2_000)]
    );
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let findings = findings.as_array().unwrap();
    assert_eq!(findings.len(), 1, "one finding, not one per document");
    assert_eq!(findings[0]["rule"], "yaml-syntax");
    assert_eq!(findings[0]["file"], "k8s/storm.yaml");
    let message = findings[0]["message"].as_str().unwrap();
    assert!(
        message.contains(&format!(
            "more than {} documents",
            aiml::limits::MAX_DOCUMENTS
        )),
        "{message}"
    );
}

/// Blueprint files go through the same reader: the limit stops `render` too, before anything
/// is written.
#[test]
fn a_blueprint_file_over_the_document_limit_stops_render() {
    let repo = TestRepo::new();
    let over = aiml::limits::MAX_DOCUMENTS + 1;
    repo.write("blueprints/storm.yaml", &"---\n{}\n".repeat(over));
    let run = repo.aiml(&["render"]);
    assert_eq!(
        run.code,
        2,
        "{}",
        &run.stderr[..run.stderr.len().min(2_000)]
    );
    assert!(
        run.stderr.contains("blueprints/storm.yaml")
            && run.stderr.contains("documents in one file"),
        "{}",
        &run.stderr[..run.stderr.len().min(2_000)]
    );
    assert!(repo.generated().is_empty());
}

/// People see the first findings of a rule and a count of the rest; JSON keeps every one.
#[test]
fn repeated_findings_are_summarised_for_people_and_kept_in_json() {
    let repo = TestRepo::new();
    repo.write("k8s/empty.yaml", &"---\n{}\n".repeat(1_000));
    let run = repo.aiml(&["validate", "k8s/empty.yaml"]);
    assert_eq!(run.code, 0, "warnings never change the exit code");
    let shown = run.stderr.matches("warning[not-an-object]").count();
    assert_eq!(shown, aiml::diagnostic::SHOWN_PER_RULE, "{}", run.stderr);
    run.stderr_has("… and 980 more `not-an-object` findings (`-o json` lists every finding)")
        .stderr_has("0 errors, 1000 warnings");
    let json = repo.aiml(&["-o", "json", "validate", "k8s/empty.yaml"]);
    let findings: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(findings.as_array().unwrap().len(), 1_000);
}

const CLUSTER_QUEUE: &str = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: NAME\nspec:\n  namespaceSelector: {}\n";
const LOCAL_QUEUE: &str = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata:\n  name: jobs\n  namespace: team\nspec:\n  clusterQueue: shared\n";

/// Two environments' trees with the same object names are different clusters: each is
/// checked against its own objects, so prod's queue cannot be satisfied by dev's
/// ClusterQueue (the cross-object rules used to compare every object with every other).
#[test]
fn environments_repeating_names_are_checked_apart() {
    let repo = TestRepo::new();
    repo.write(
        "envs/dev/queues.yaml",
        &format!(
            "{}---\n{LOCAL_QUEUE}",
            CLUSTER_QUEUE.replace("NAME", "shared")
        ),
    );
    repo.write(
        "envs/prod/queues.yaml",
        &format!(
            "{}---\n{LOCAL_QUEUE}",
            CLUSTER_QUEUE.replace("NAME", "other")
        ),
    );
    let run = repo.aiml(&["-o", "json", "validate", "envs"]);
    run.expect_code(1);
    let findings: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    let missing: Vec<&str> = findings
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["rule"] == "kueue-clusterqueue-missing")
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(missing, ["envs/prod/queues.yaml"], "{}", run.stdout);
}

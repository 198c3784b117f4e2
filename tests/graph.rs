//! `kubectl aiml graph`: this repository's own rendered blueprints as Mermaid and DOT, hostile
//! object names kept inside their labels, edges to objects outside the graph, an unknown
//! blueprint name and the node limit.

mod support;

use std::path::Path;

use support::{Run, TestRepo, aiml_command};

/// Runs the binary on this repository's own committed `rendered/`.
fn own(args: &[&str]) -> Run {
    Run::from_output(
        args,
        aiml_command(Path::new(env!("CARGO_MANIFEST_DIR")))
            .args(args)
            .output()
            .expect("run kubectl-aiml"),
    )
}

#[test]
fn draws_this_repository_as_mermaid_and_dot() {
    let mermaid = own(&["graph"]);
    mermaid.expect_code(0);
    assert_eq!(mermaid.stderr, "");
    insta::assert_snapshot!("own_mermaid", mermaid.stdout);
    let dot = own(&["graph", "-o", "dot"]);
    dot.expect_code(0);
    insta::assert_snapshot!("own_dot", dot.stdout);
    // The README's example is the graph of one blueprint, as printed now.
    let triton = own(&["graph", "triton-t4-hpa", "-o", "mermaid"]);
    triton.expect_code(0);
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md"))
        .expect("README.md");
    assert!(
        readme.contains(&format!("```mermaid\n{}```", triton.stdout)),
        "README.md's `graph` example differs from `kubectl aiml graph triton-t4-hpa`:\n{}",
        triton.stdout
    );
}

/// Object names must be DNS names to be read at all, so hostile text reaches the graph through
/// what objects say about others (annotations, selectors, targets) and through folder names.
const HOSTILE: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: app
  annotations:
    config.kubernetes.io/depends-on: "/namespaces/app/ConfigMap/gone\"] --> evil[\"x\n%% y\x1b[31m|z;#<b>`"
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: c, image: i}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: app}
spec:
  selector: {app: "w\"]\n{eb}"}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: scaler, namespace: app}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: elsewhere}
  maxReplicas: 3
"#;

/// The folder of `rendered/` that holds `HOSTILE`: quotes and brackets in a folder name.
const FOLDER: &str = "ev\"il[x]";

/// A repository whose `rendered/<FOLDER>/` holds `HOSTILE`.
fn hostile_repo() -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        &format!("rendered/{FOLDER}/workload/app/objects.yaml"),
        HOSTILE,
    );
    repo
}

#[test]
fn hostile_names_stay_inside_their_labels() {
    let repo = hostile_repo();
    let mermaid = repo.aiml(&["graph", FOLDER]);
    mermaid.expect_code(0);
    for line in mermaid.stdout.lines() {
        assert!(
            !line.chars().any(|c| c.is_control()),
            "a control character in {line:?}"
        );
        assert_eq!(line.matches('"').count() % 2, 0, "an odd quote in {line:?}");
    }
    // The injected node and edge never become syntax.
    assert!(!mermaid.stdout.contains("evil["), "{}", mermaid.stdout);
    assert!(!mermaid.stdout.contains("\n%%"), "{}", mermaid.stdout);
    insta::assert_snapshot!("hostile_mermaid", mermaid.stdout);
    let dot = repo.aiml(&["graph", FOLDER, "-o", "dot"]);
    dot.expect_code(0);
    for line in dot.stdout.lines() {
        assert!(!line.chars().any(|c| c.is_control()), "{line:?}");
        let unescaped = line.replace("\\\\", "").replace("\\\"", "");
        assert_eq!(unescaped.matches('"').count() % 2, 0, "{line:?}");
    }
    insta::assert_snapshot!("hostile_dot", dot.stdout);
}

#[test]
fn edges_to_objects_outside_the_graph_go_to_dashed_external_nodes() {
    let repo = hostile_repo();
    let run = repo.aiml(&["graph", FOLDER]);
    run.expect_code(0)
        .stdout_has("[\"external: Deployment/app/elsewhere\"]:::external")
        .stdout_has("-.->|\"scales\"|")
        .stdout_has("-.->|\"depends-on\"|");
    repo.aiml(&["graph", FOLDER, "-o", "dot"])
        .expect_code(0)
        .stdout_has("[label=\"external: Deployment/app/elsewhere\", style=dashed];")
        .stdout_has("[label=\"scales\", style=dashed];");
}

#[test]
fn an_unknown_name_fails_with_the_closest() {
    let run = own(&["graph", "triton-t4"]);
    run.expect_code(2).stderr_has(
        "no blueprint named `triton-t4` under `rendered/`; did you mean `triton-t4-hpa`?",
    );
    assert_eq!(run.stdout, "");
    own(&["graph", "_sync"])
        .expect_code(2)
        .stderr_has("no blueprint named `_sync`");
}

#[test]
fn a_graph_above_the_node_limit_is_refused() {
    let repo = hostile_repo();
    let run = repo.aiml_with_env(&["graph"], &[("AIML_MAX_GRAPH_NODES", "2".as_ref())]);
    run.expect_code(2).stderr_has(
        "more than the limit of 2: name one blueprint (`kubectl aiml graph NAME`) or raise `AIML_MAX_GRAPH_NODES`",
    );
    assert_eq!(run.stdout, "");
    repo.aiml_with_env(&["graph"], &[("AIML_MAX_GRAPH_NODES", "many".as_ref())])
        .expect_code(2)
        .stderr_has("`AIML_MAX_GRAPH_NODES=many` is not valid");
    repo.aiml_with_env(&["graph"], &[("AIML_MAX_GRAPH_NODES", "6".as_ref())])
        .expect_code(0);
}

#[test]
fn graph_formats_belong_to_graph() {
    let repo = hostile_repo();
    repo.aiml(&["graph", "-o", "json"])
        .expect_code(2)
        .stderr_has("`kubectl aiml graph` prints `-o mermaid` (the default) or `-o dot`");
    repo.aiml(&["rules", "-o", "dot"])
        .expect_code(2)
        .stderr_has("`-o mermaid` and `-o dot` are for `kubectl aiml graph`");
}

#[test]
fn files_that_are_not_objects_and_an_empty_tree_are_warnings() {
    let repo = hostile_repo();
    repo.write("rendered/evil/workload/app/notes.yaml", "just: text\n");
    let run = repo.aiml(&["graph"]);
    run.expect_code(0).stderr_has(
        "warning: 1 file under `rendered/` not Kubernetes objects, left out of the graph: rendered/evil/workload/app/notes.yaml",
    );
    assert!(run.stdout.contains("Deployment/app/web"), "{}", run.stdout);
    let empty = TestRepo::new();
    let run = empty.aiml(&["graph"]);
    run.expect_code(0).stderr_has(
        "warning: no rendered object under `rendered/`: run `kubectl aiml render` first",
    );
    assert_eq!(
        run.stdout,
        "flowchart LR\n    classDef external stroke-dasharray: 5 5\n"
    );
}

//! Runs every fixture under `tests/fixtures/validate/` through `aiml::validate::validate`.
//!
//! File names carry the expectation: `ok_*.yaml` must produce no findings at all, and
//! `err_<rule-id>[_<case>].yaml` must produce at least one finding of that rule and no error of
//! any other rule, except those a `# also: <rule-id>, …` line in the fixture lists; a
//! `# policy: requireDigests` line validates it as a repository that requires digests. Every
//! fixture's findings are also snapshotted (with the blueprint field each points back to), and
//! every rule in `aiml::validate::RULES` must have at least one `err_` fixture. Every fixture
//! object must be one `aiml::validate::applies_to` says a rule reads, and every rule doc's
//! failing example must fail with its rule.
//!
//! Objects with `metadata.generateName` and no `metadata.name` are validated like any other,
//! named by their `generateName` value. [`object`] builds them itself when
//! `Object::from_node` does not yet (its identity comes from `aiml::manifest`).

mod support;

use std::path::Path;

use aiml::diagnostic::{Diagnostic, ObjectRef};
use aiml::validate::{Object, RULES, applies_to, validate, validate_with};
use aiml::yaml::{Node, parse_documents};
use support::{also_allowed, policy_of, rule_of};

const FIXTURES: &str = "tests/fixtures/validate";
const PUBLIC: &str = "tests/fixtures/public";

/// The findings for one fixture file, with the path shown as `fixtures/validate/<name>`.
fn findings(path: &Path, text: &str) -> Vec<Diagnostic> {
    let name = path.file_name().unwrap().to_str().unwrap();
    let file = format!("fixtures/validate/{name}");
    let documents = parse_documents(text).unwrap_or_else(|error| panic!("{name}: {error}"));
    let objects: Vec<Object<'_>> = documents
        .iter()
        .filter_map(|document| object(&file, document))
        .collect();
    assert_eq!(
        objects.len(),
        documents.len(),
        "{name}: every document must be an object"
    );
    for object in &objects {
        assert!(
            applies_to(object),
            "{name}: no rule reads {} `{}`, so it does not belong in a fixture",
            object.id.kind,
            object.id.name
        );
    }
    validate_with(&objects, policy_of(text))
}

/// The object of a document: its identity as `aiml::manifest` reads it, or, for an object
/// with only `metadata.generateName`, that value as its name.
fn object<'a>(file: &'a str, node: &'a Node) -> Option<Object<'a>> {
    if let Some(object) = Object::from_node(file, node) {
        return Some(object);
    }
    let text = |path: &[&str]| node.at(path).and_then(Node::as_str);
    let api_version = text(&["apiVersion"])?;
    Some(Object {
        file,
        api_version,
        id: ObjectRef {
            group: api_version
                .rsplit_once('/')
                .map_or("", |(group, _)| group)
                .to_string(),
            kind: text(&["kind"])?.to_string(),
            namespace: text(&["metadata", "namespace"]).map(str::to_string),
            name: text(&["metadata", "generateName"])?.to_string(),
        },
        node,
    })
}

/// Findings as JSON, with the blueprint field, which `Diagnostic`'s own serialization omits.
fn snapshot(findings: &[Diagnostic]) -> serde_json::Value {
    findings
        .iter()
        .map(|finding| {
            let mut value = serde_json::to_value(finding).unwrap();
            if let Some(field) = &finding.blueprint_field {
                value["blueprint_field"] = serde_json::Value::from(field.as_str());
            }
            value
        })
        .collect()
}

#[test]
fn fixture_findings() {
    insta::glob!("fixtures/validate/*.yaml", |path| {
        let text = std::fs::read_to_string(path).unwrap();
        let stem = path.file_stem().unwrap().to_str().unwrap();
        let found = findings(path, &text);
        let rules: Vec<&str> = found.iter().map(|finding| finding.rule.as_str()).collect();
        for rule in &rules {
            assert!(
                RULES.iter().any(|known| known.id == *rule),
                "{stem}: `{rule}` is not in RULES"
            );
        }
        if stem.starts_with("ok_") {
            assert!(found.is_empty(), "{stem} should be clean, found {rules:?}");
        } else if let Some(rule) = rule_of(stem) {
            assert!(
                RULES.iter().any(|known| known.id == rule),
                "{stem}: no rule `{rule}`"
            );
            assert!(
                rules.contains(&rule),
                "{stem} should report `{rule}`, found {rules:?}"
            );
            let allowed = also_allowed(&text);
            for finding in found.iter().filter(|finding| finding.is_error()) {
                assert!(
                    finding.rule == rule || allowed.contains(&finding.rule.as_str()),
                    "{stem}: unexpected error `{}`: {}",
                    finding.rule,
                    finding.message
                );
            }
        } else {
            panic!("{stem}: fixture names start with `ok_` or `err_<rule-id>`");
        }
        insta::assert_json_snapshot!(snapshot(&found));
    });
}

/// Patterns of public manifests that are valid as published (`tests/fixtures/public/`, each
/// naming the upstream file that showed it): no rule reports anything. Each was a false
/// alarm once; the fixture says which rule raised it and why it was wrong.
#[test]
fn public_patterns_valid_as_published_are_clean() {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(PUBLIC).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            continue; // `sources/`: whole files for the CLI (tests/warnings.rs).
        }
        let name = path.file_name().unwrap().to_str().unwrap().to_string();
        assert!(
            name.starts_with("ok_") && name.ends_with(".yaml"),
            "{name}: public fixtures are `ok_*.yaml`"
        );
        let text = std::fs::read_to_string(&path).unwrap();
        let documents = parse_documents(&text).unwrap_or_else(|error| panic!("{name}: {error}"));
        let objects: Vec<Object<'_>> = documents
            .iter()
            .filter_map(|document| object(&name, document))
            .collect();
        assert_eq!(objects.len(), documents.len(), "{name}: not all objects");
        let found: Vec<String> = validate(&objects)
            .iter()
            .map(|finding| format!("{}: {}", finding.rule, finding.message))
            .collect();
        assert!(found.is_empty(), "{name} should be clean: {found:#?}");
        names.push(name);
    }
    assert!(names.len() >= 4, "{names:?}");
}

/// A `null` in a Go map of a built-in kind is kept as the zero value (the API server decodes
/// `nodeSelector: {k: null}` to `k: ""`), unlike a custom resource's, which is dropped: the
/// same pod template selects an empty accelerator in a Deployment and none in a JobSet.
#[test]
fn a_null_selector_value_is_empty_in_a_builtin_kind_and_absent_in_a_custom_resource() {
    let pod = "nodeSelector:\n        cloud.google.com/gke-accelerator: null\n      containers:\n      - name: c\n        image: x@sha256:0000000000000000000000000000000000000000000000000000000000000000\n        resources: {limits: {nvidia.com/gpu: 1}}\n";
    let deployment = format!(
        "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  selector: {{matchLabels: {{app: d}}}}\n  template:\n    metadata: {{labels: {{app: d}}}}\n    spec:\n      {pod}"
    );
    let rules = |text: &str| -> Vec<String> {
        let documents = parse_documents(text).unwrap();
        let objects: Vec<Object<'_>> = documents
            .iter()
            .filter_map(|document| object("f.yaml", document))
            .collect();
        validate(&objects)
            .into_iter()
            .filter(|finding| finding.is_error())
            .map(|finding| format!("{}: {}", finding.rule, finding.message))
            .collect()
    };
    assert_eq!(
        rules(&deployment),
        ["gpu-accelerator-unknown: unknown GPU accelerator: ``"]
    );
    let jobset = format!(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: j}}\nspec:\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          spec:\n            {}",
        pod.replace("\n      ", "\n            ")
    );
    assert_eq!(rules(&jobset), Vec::<String>::new());
}

#[test]
fn every_rule_has_a_failing_fixture() {
    let stems: Vec<String> = std::fs::read_dir(FIXTURES)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "yaml")
        })
        .map(|path| path.file_stem().unwrap().to_str().unwrap().to_string())
        .collect();
    let missing: Vec<&str> = RULES
        .iter()
        .map(|rule| rule.id)
        .filter(|id| !stems.iter().any(|stem| rule_of(stem) == Some(id)))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without an `err_` fixture: {missing:?}"
    );
    assert!(stems.iter().any(|stem| stem.starts_with("ok_")));
}

#[test]
fn findings_do_not_depend_on_object_order() {
    let path = Path::new(FIXTURES).join("err_accelerator-no-node-pool.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let documents = parse_documents(&text).unwrap();
    let forward: Vec<Object<'_>> = documents
        .iter()
        .filter_map(|document| object("f.yaml", document))
        .collect();
    let mut backward = forward.clone();
    backward.reverse();
    assert_eq!(validate(&forward), validate(&backward));
}

/// Every manifest rule's doc shows an example that the rule reports, so the docs cannot drift
/// from what the rules do.
#[test]
fn every_rule_doc_example_fails_with_its_rule() {
    let mut problems = Vec::new();
    for rule in RULES {
        if aiml::rules::doc(rule.id).is_none() {
            continue; // `rules::tests::every_rule_has_its_doc` reports it.
        }
        let Some(example) = aiml::rules::failing_example(rule.id) else {
            problems.push(format!("{}: no YAML example under `## Fails`", rule.id));
            continue;
        };
        let documents = match parse_documents(example) {
            Ok(documents) => documents,
            Err(error) => {
                problems.push(format!("{}: the example does not parse: {error}", rule.id));
                continue;
            }
        };
        let objects: Vec<Object<'_>> = documents
            .iter()
            .filter_map(|document| object("doc.yaml", document))
            .collect();
        let found = validate_with(&objects, policy_of(example));
        problems.extend(support::example_fails_with(rule.id, &found));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The rules of the API server's Go validation through the binary: each failing fixture exits
/// 1 and prints its rule, its message and the field's line; the fixture of what the server
/// accepts exits 0.
#[test]
fn apiserver_rules_exit_one_with_their_messages() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "err_workload-spec.yaml",
            "error[workload-spec]: a Job's pods need a `restartPolicy`",
            "fixtures/validate/err_workload-spec.yaml:40",
        ),
        (
            "err_pod-spec-names.yaml",
            "error[pod-spec-names]: the volume mount names `checkpoints`, which is not a volume of the pod",
            "fixtures/validate/err_pod-spec-names.yaml:50",
        ),
        (
            "err_resource-request-above-limit.yaml",
            "error[resource-request-above-limit]: the request of `memory` is above its limit",
            "fixtures/validate/err_resource-request-above-limit.yaml:11",
        ),
        (
            "err_service-ports.yaml",
            "error[service-ports]: a `ClusterIP` Service without ports",
            "fixtures/validate/err_service-ports.yaml:8",
        ),
        (
            "err_hpa-spec.yaml",
            "error[hpa-spec]: a `Pods` metric without `pods`",
            "fixtures/validate/err_hpa-spec.yaml:11",
        ),
        (
            "err_network-policy-peer.yaml",
            "error[network-policy-peer]: a NetworkPolicy peer selects nothing",
            "fixtures/validate/err_network-policy-peer.yaml:10",
        ),
        (
            "err_rbac-rule.yaml",
            "error[rbac-rule]: a Role rule without verbs",
            "fixtures/validate/err_rbac-rule.yaml:7",
        ),
        (
            "err_pdb-spec.yaml",
            "error[pdb-spec]: a PodDisruptionBudget sets both `minAvailable` and `maxUnavailable`",
            "fixtures/validate/err_pdb-spec.yaml:8",
        ),
        (
            "err_priority-class-value.yaml",
            "error[priority-class-value]: the priority 2000000000 is above what a user's PriorityClass may have",
            "fixtures/validate/err_priority-class-value.yaml:6",
        ),
        (
            "err_config-data-keys.yaml",
            "error[config-data-keys]: the ConfigMap key `configs/train.yaml` is not a legal key",
            "fixtures/validate/err_config-data-keys.yaml:6",
        ),
        (
            "err_pvc-spec.yaml",
            "error[pvc-spec]: a PersistentVolumeClaim without a storage request",
            "fixtures/validate/err_pvc-spec.yaml:7",
        ),
        (
            "err_container-probes.yaml",
            "error[container-probes]: a `livenessProbe` with `successThreshold: 2`",
            "fixtures/validate/err_container-probes.yaml:34",
        ),
    ];
    let run = |name: &str| {
        std::process::Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
            .current_dir("tests")
            .env("NO_COLOR", "1")
            .args(["validate", &format!("fixtures/validate/{name}")])
            .output()
            .expect("run kubectl-aiml")
    };
    for (name, message, place) in cases {
        let out = run(name);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(
            stderr.contains(message),
            "{name}: no `{message}` in\n{stderr}"
        );
        assert!(stderr.contains(place), "{name}: no `{place}` in\n{stderr}");
    }
    let out = run("ok_apiserver_accepts.yaml");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

//! The committed output of this repository and its examples (`committed_output_is_up_to_date`
//! in tests/cli.rs keeps it fresh) closes every namespace a blueprint renders: a default-deny
//! NetworkPolicy, DNS, and an allow for each edge its objects show; and every pod is locked
//! down (tests of `overlay::hardening` cover the pass itself).

#[path = "support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The `rendered/<blueprint>/workload` folders of this repository and its examples.
fn workload_folders() -> Vec<PathBuf> {
    let mut folders = Vec::new();
    for repository in support::repositories_with_output() {
        for entry in std::fs::read_dir(repository.join("rendered")).expect("rendered") {
            let workload = entry.expect("entry").path().join("workload");
            if workload.is_dir() {
                folders.push(workload);
            }
        }
    }
    folders.sort();
    assert!(folders.len() > 4, "{folders:?}");
    folders
}

/// Every object under `dir`.
fn objects(dir: &Path) -> Vec<Value> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.expect("walk"))
        .filter(|e| e.path().extension().is_some_and(|x| x == "yaml"))
        .flat_map(|e| {
            let text = std::fs::read_to_string(e.path()).expect("read");
            aiml::yaml::parse_documents(&text)
                .expect("yaml")
                .iter()
                .map(aiml::yaml::to_json)
                .collect::<Vec<_>>()
        })
        .collect()
}

fn of_kind<'o>(objects: &'o [Value], kind: &str) -> Vec<&'o Value> {
    objects.iter().filter(|o| o["kind"] == kind).collect()
}

/// Whether `selector` (a label selector with `matchLabels` only, or empty) selects `labels`.
fn selects(selector: &Value, labels: &Value) -> bool {
    selector["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v))
}

/// The pod templates of a workload object: (labels, spec).
fn pods(object: &Value) -> Vec<(Value, &Value)> {
    let spec = &object["spec"];
    let templates: Vec<&Value> = match object["kind"].as_str() {
        Some("Deployment" | "StatefulSet" | "DaemonSet" | "Job") => vec![&spec["template"]],
        Some("LeaderWorkerSet") => vec![
            &spec["leaderWorkerTemplate"]["leaderTemplate"],
            &spec["leaderWorkerTemplate"]["workerTemplate"],
        ],
        Some("JobSet") => spec["replicatedJobs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|job| &job["template"]["spec"]["template"])
            .collect(),
        _ => vec![],
    };
    templates
        .into_iter()
        .map(|t| (t["metadata"]["labels"].clone(), &t["spec"]))
        .collect()
}

#[test]
fn every_rendered_namespace_is_closed_and_each_edge_allowed() {
    let mut checked = BTreeMap::new();
    for folder in workload_folders() {
        let objects = objects(&folder);
        let policies = of_kind(&objects, "NetworkPolicy");
        let in_namespace = |namespace: &str| -> Vec<&Value> {
            policies
                .iter()
                .copied()
                .filter(|p| p["metadata"]["namespace"] == namespace)
                .collect()
        };
        for namespace in of_kind(&objects, "Namespace") {
            let name = namespace["metadata"]["name"].as_str().unwrap();
            let own = in_namespace(name);
            let deny = own
                .iter()
                .find(|p| p["metadata"]["name"] == "aiml-default-deny")
                .unwrap_or_else(|| panic!("{}: {name} has no default deny", folder.display()));
            assert_eq!(
                deny["spec"],
                json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]})
            );
            let dns = own
                .iter()
                .find(|p| p["metadata"]["name"] == "aiml-allow-dns")
                .unwrap_or_else(|| panic!("{}: {name} allows no DNS", folder.display()));
            assert_eq!(dns["spec"]["egress"][0]["ports"][0]["port"], 53);
            *checked.entry("namespaces").or_insert(0) += 1;
        }
        // Each pod's declared ports are open to its namespace, unless on the host network.
        for object in &objects {
            let namespace = object["metadata"]["namespace"].as_str().unwrap_or_default();
            for (labels, spec) in pods(object) {
                let ports: Vec<&Value> = spec["containers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .flat_map(|c| c["ports"].as_array().into_iter().flatten())
                    .map(|p| &p["containerPort"])
                    .collect();
                if ports.is_empty() || spec["hostNetwork"] == true {
                    continue;
                }
                let labels = if labels.is_null() {
                    json!({"batch.kubernetes.io/job-name": object["metadata"]["name"],
                           "jobset.sigs.k8s.io/jobset-name": object["metadata"]["name"]})
                } else {
                    labels
                };
                let open: Vec<&Value> = in_namespace(namespace)
                    .into_iter()
                    .filter(|p| selects(&p["spec"]["podSelector"], &labels))
                    .flat_map(|p| p["spec"]["ingress"].as_array().into_iter().flatten())
                    .filter(|rule| rule["from"] == json!([{"podSelector": {}}]))
                    .flat_map(|rule| rule["ports"].as_array().into_iter().flatten())
                    .map(|p| &p["port"])
                    .collect();
                for port in ports {
                    assert!(
                        open.contains(&port),
                        "{}: {} {}: port {port} is closed to its namespace",
                        folder.display(),
                        object["kind"],
                        object["metadata"]["name"]
                    );
                    *checked.entry("pod ports").or_insert(0) += 1;
                }
            }
        }
        for (kind, from) in [
            (
                "PodMonitoring",
                json!({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "gmp-system"}}}),
            ),
            ("Service", json!({"ipBlock": {"cidr": "0.0.0.0/0"}})),
        ] {
            for object in of_kind(&objects, kind) {
                let selector = if kind == "Service" {
                    if !matches!(
                        object["spec"]["type"].as_str(),
                        Some("LoadBalancer" | "NodePort")
                    ) {
                        continue;
                    }
                    json!({"matchLabels": object["spec"]["selector"]})
                } else {
                    object["spec"]["selector"].clone()
                };
                let namespace = object["metadata"]["namespace"].as_str().unwrap();
                let allowed = in_namespace(namespace).iter().any(|p| {
                    p["spec"]["podSelector"] == selector
                        && p["spec"]["ingress"][0]["from"][0] == from
                });
                assert!(
                    allowed,
                    "{}: {kind} {} has no allow",
                    folder.display(),
                    object["metadata"]["name"]
                );
                *checked.entry(kind).or_insert(0) += 1;
            }
        }
    }
    assert!(
        checked.get("namespaces").copied().unwrap_or(0) >= 4,
        "{checked:?}"
    );
    assert!(
        checked.get("pod ports").copied().unwrap_or(0) > 0,
        "{checked:?}"
    );
    assert!(
        checked.get("PodMonitoring").copied().unwrap_or(0) > 0,
        "{checked:?}"
    );
    assert!(
        checked.get("Service").copied().unwrap_or(0) > 0,
        "{checked:?}"
    );
}

#[test]
fn locust_reaches_its_target_blueprint_through_both_namespaces() {
    let locust = objects(&root().join("rendered/locust-bench/workload"));
    let egress = of_kind(&locust, "NetworkPolicy")
        .into_iter()
        .find(|p| p["metadata"]["name"] == "aiml-allow-target")
        .expect("Locust's egress to its target");
    let target = egress["spec"]["egress"][0]["to"][0]["namespaceSelector"]["matchLabels"]
        ["kubernetes.io/metadata.name"]
        .as_str()
        .expect("the target's namespace");
    let labels = &of_kind(&locust, "Namespace")[0]["metadata"]["labels"];
    // The target blueprint (its namespace is its name) lets its consumers in.
    let served = objects(&root().join(format!("rendered/{target}/workload")));
    let service = of_kind(&served, "Service")[0];
    let ingress = of_kind(&served, "NetworkPolicy").into_iter().find(|p| {
        p["spec"]["podSelector"]["matchLabels"] == service["spec"]["selector"]
            && p["spec"]["ingress"][0]["from"][0]["namespaceSelector"]["matchLabels"]
                .as_object()
                .is_some_and(|wanted| wanted.iter().all(|(k, v)| labels.get(k) == Some(v)))
    });
    assert!(
        ingress.is_some(),
        "{target} lets no namespace labelled {labels} reach {}",
        service["metadata"]["name"]
    );
}

#[test]
fn every_rendered_pod_is_locked_down() {
    for folder in workload_folders() {
        for object in objects(&folder) {
            for (_, spec) in pods(&object) {
                let what = format!(
                    "{}: {} {}",
                    folder.display(),
                    object["kind"],
                    object["metadata"]["name"]
                );
                assert!(
                    spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault",
                    "{what}: no RuntimeDefault seccomp profile"
                );
                for container in spec["containers"].as_array().into_iter().flatten() {
                    let context = &container["securityContext"];
                    assert_eq!(context["allowPrivilegeEscalation"], false, "{what}");
                    assert_eq!(context["capabilities"]["drop"], json!(["ALL"]), "{what}");
                }
            }
        }
    }
}

#[test]
fn no_rendered_container_installs_packages_at_start() {
    // An init container may install a lock (the TensorBoard uploader's): every package pinned
    // with its hash, wheels only, no resolver. Nothing else installs anything.
    let locked = ["--require-hashes", "--no-deps", "--only-binary=:all:"];
    let (mut checked, mut locks) = (0, 0);
    for folder in workload_folders() {
        for object in objects(&folder) {
            for (_, spec) in pods(&object) {
                for (key, container) in containers(spec) {
                    let run = format!("{} {}", container["command"], container["args"]);
                    let what = format!(
                        "{}: {} {} {}",
                        folder.display(),
                        object["kind"],
                        object["metadata"]["name"],
                        container["name"]
                    );
                    checked += 1;
                    let installs =
                        run.contains("pip install") || run.contains(r#""pip","install""#);
                    if key == "initContainers" && installs {
                        locks += 1;
                        for flag in locked {
                            assert!(run.contains(flag), "{what} installs without {flag}: {run}");
                        }
                    } else {
                        assert!(!installs, "{what} installs packages at start: {run}");
                    }
                }
            }
        }
    }
    assert!(checked > 10, "{checked}");
    assert!(locks > 0, "the uploader's init container was not seen");
}

/// `(containers or initContainers, container)` of a pod spec.
fn containers(spec: &Value) -> impl Iterator<Item = (&'static str, &Value)> {
    ["initContainers", "containers"]
        .into_iter()
        .flat_map(move |key| {
            spec[key]
                .as_array()
                .into_iter()
                .flatten()
                .map(move |container| (key, container))
        })
}

/// The shipped TPU blueprints, whose pods were the last without these settings.
const TPU_BLUEPRINTS: &[&str] = &["multislice-v4-32-training", "sax-llama2-70b-v5e-16"];

#[test]
fn tpu_blueprint_pods_run_on_read_only_roots_and_as_non_root_where_they_can() {
    // The one exception, listed in the README's pod-security table: sax-http, Google's image,
    // whose writes nothing documents.
    let writable_roots = ["http"];
    let mut checked = 0;
    for blueprint in TPU_BLUEPRINTS {
        let folder = root().join("rendered").join(blueprint).join("workload");
        for object in objects(&folder) {
            for (_, spec) in pods(&object) {
                let pod = &spec["securityContext"];
                for (_, container) in containers(spec) {
                    let name = container["name"].as_str().unwrap_or_default();
                    let what = format!("{blueprint}: {} {name}", object["kind"]);
                    let context = &container["securityContext"];
                    let field = |key: &str| match &context[key] {
                        Value::Null => &pod[key],
                        value => value,
                    };
                    checked += 1;
                    let tpu = !container["resources"]["limits"]["google.com/tpu"].is_null();
                    if tpu {
                        // Root-owned TPU device files: the UID stays the image's.
                        assert!(field("runAsNonRoot").is_null(), "{what}");
                    } else {
                        assert_eq!(field("runAsNonRoot"), &json!(true), "{what}");
                        let user = field("runAsUser").as_i64().unwrap_or_default();
                        assert!(user > 0, "{what}: runAsUser {user}");
                    }
                    if writable_roots.contains(&name) {
                        continue;
                    }
                    assert_eq!(context["readOnlyRootFilesystem"], true, "{what}");
                    let mounts = container["volumeMounts"]
                        .as_array()
                        .cloned()
                        .unwrap_or_default();
                    assert!(
                        mounts.iter().any(|m| m["mountPath"] == "/tmp"),
                        "{what}: no writable /tmp"
                    );
                }
            }
        }
    }
    // Multislice: the TPU job, the uploader and its installer; Sax: admin, proxy, leader,
    // worker, util, converter and publisher.
    assert!(checked >= 10, "{checked}");
}

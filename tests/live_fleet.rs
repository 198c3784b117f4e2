//! `kubectl aiml status` of a fleet against a real kube-apiserver (tests/support/apiserver.rs):
//! copies of every shipped blueprint, rendered by the tool, every rendered object created on
//! the one server that all the fleet's contexts reach, then one `status -o json` of them all.
//! It must cover every blueprint and target, find every object, and cost one LIST per kind
//! (in pages of 500), never a GET per object: the server's own request counters
//! (`apiserver_request_total`) are read before and after, and the user `status` runs as may
//! only list, so a GET would be refused.
//!
//! Timings go to stderr; the speed target (a 1,000-blueprint fleet in under 3 s) is a figure of
//! `scripts/bench`, not an assertion here. Needs `kube-apiserver` and `etcd` from
//! `scripts/install-test-deps`; without them the test fails, saying why.

#![allow(
    clippy::print_stderr,
    reason = "timings and counts are reported on stderr"
)]

mod support;

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use apiserver_support::{ApiServer, User};
use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::GroupVersionKind;
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::{Value, json};
use support::shipped_blueprints;

/// Copies of the shipped blueprints: 25 × 4 = 100 blueprints, about 4,700 objects, created
/// in about 20 s. The harness serves Service IPs from a /24: at most ~250 Services fit, and
/// the shipped blueprints have 5 per 4 blueprints.
const COPIES: usize = 25;
/// The context of the Config Connector host (the kubeconfig's current context).
const HOST_CONTEXT: &str = "host";
/// The user `status` runs as (tests/support/apiserver.rs: `User::Viewer`).
const LIST_ONLY_USER: &str = "aiml-test-viewer";
/// Objects one page of the tool's LISTs holds (src/live/fetch.rs).
const PAGE: usize = 500;
/// Requests in flight while creating the fleet's objects.
const CONCURRENT_APPLIES: usize = 16;
/// The field manager that creates the objects.
const MANAGER: &str = "aiml-fleet-test";

/// `text` with every whole-word `word` (not touching a letter, digit or `_`, as sed's `\b`)
/// replaced by `with`.
fn replace_word(text: &str, word: &str, with: &str) -> String {
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(word) {
        let (before, after) = (&rest[..at], &rest[at + word.len()..]);
        let bounded = !before
            .chars()
            .next_back()
            .or(out.chars().next_back())
            .is_some_and(is_word)
            && !after.chars().next().is_some_and(is_word);
        out.push_str(before);
        out.push_str(if bounded { with } else { word });
        rest = after;
    }
    out.push_str(rest);
    out
}

/// A git repository in `dir` holding `copies` copies of every shipped blueprint, as
/// scripts/bench makes them: each blueprint name and the project suffixed per copy, so that
/// copies reference their own copies. Returns the blueprint names.
fn write_fleet(dir: &Path, copies: usize) -> BTreeSet<String> {
    let shipped = shipped_blueprints();
    let names: BTreeSet<String> = shipped.iter().map(|b| b.name.clone()).collect();
    let files: BTreeMap<&str, &str> = shipped
        .iter()
        .map(|b| (b.file.as_str(), b.text.as_str()))
        .collect();
    std::fs::create_dir_all(dir.join("blueprints")).expect("mkdir");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("aiml.yaml"),
        dir.join("aiml.yaml"),
    )
    .expect("copy aiml.yaml");
    let mut fleet = BTreeSet::new();
    for copy in 0..copies {
        let suffix = format!("f{copy}");
        for (file, text) in &files {
            let mut text = text.replace("my-project", &format!("p{suffix}-proj"));
            for name in &names {
                text = replace_word(&text, name, &format!("{name}-{suffix}"));
            }
            let stem = Path::new(file).file_stem().expect("stem").to_string_lossy();
            let path = dir.join(format!("blueprints/{stem}-{suffix}.yaml"));
            std::fs::write(path, text).expect("write blueprint");
        }
        fleet.extend(names.iter().map(|name| format!("{name}-{suffix}")));
    }
    fleet
}

/// One rendered object: its repository-relative file and its content.
struct Rendered {
    file: String,
    object: Value,
}

/// The `(group, version, kind)` of an object.
fn gvk_of(object: &Value) -> GroupVersionKind {
    let api_version = object["apiVersion"].as_str().expect("apiVersion");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    GroupVersionKind::gvk(group, version, object["kind"].as_str().expect("kind"))
}

fn namespace_of(object: &Value) -> Option<&str> {
    object["metadata"]["namespace"].as_str()
}

fn name_of(object: &Value) -> &str {
    object["metadata"]["name"].as_str().expect("name")
}

/// Every object under `rendered/` (one per file), in path order, but the platform
/// controllers' (`rendered/_sync/platform/`): no controller runs here, and their webhook
/// configurations would send every later request to a Service with no pod behind it
/// (`tests/platform.rs` applies them on a server of their own).
fn rendered_objects(repo: &Path) -> Vec<Rendered> {
    let platform = repo.join("rendered/_sync/platform");
    walkdir::WalkDir::new(repo.join("rendered"))
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("walk").into_path())
        .filter(|p| !p.starts_with(&platform))
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .filter(|p| {
            !p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        })
        .map(|path| {
            let text = std::fs::read_to_string(&path).expect("read");
            Rendered {
                file: path
                    .strip_prefix(repo)
                    .expect("under")
                    .display()
                    .to_string(),
                object: serde_saphyr::from_str(&text).expect("yaml"),
            }
        })
        .collect()
}

/// The kubeconfig contexts of the fleet's workload clusters, from the sync folders
/// (`rendered/_sync/clusters/<project>/<location>/<cluster>/`), as GKE names them.
fn workload_contexts(repo: &Path) -> Vec<String> {
    let clusters = repo.join("rendered/_sync/clusters");
    walkdir::WalkDir::new(&clusters)
        .min_depth(3)
        .max_depth(3)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.expect("walk").into_path())
        .map(|p| {
            let parts: Vec<String> = p
                .strip_prefix(&clusters)
                .expect("under")
                .iter()
                .map(|s| s.to_string_lossy().into_owned())
                .collect();
            format!("gke_{}", parts.join("_"))
        })
        .collect()
}

/// One of the server's request counters: `(group, resource, verb, code)`.
type Counter = (String, String, String, String);

/// The server's request counters, each summed over the other labels (scope, version...).
fn request_counts(server: &ApiServer) -> BTreeMap<Counter, u64> {
    let out = server.run_kubectl(&["get", "--raw", "/metrics"]);
    assert!(
        out.status.success(),
        "metrics: {}",
        apiserver_support::output_text(&out)
    );
    let mut counts = BTreeMap::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some(rest) = line.strip_prefix("apiserver_request_total{") else {
            continue;
        };
        let (labels, value) = rest.rsplit_once("} ").expect("a counter line");
        let labels: BTreeMap<&str, &str> = labels
            .split("\",")
            .filter_map(|pair| pair.split_once("=\""))
            .map(|(k, v)| (k, v.trim_end_matches('"')))
            .collect();
        let label = |k: &str| labels.get(k).copied().unwrap_or_default().to_string();
        let value: f64 = value.trim().parse().expect("a counter value");
        *counts
            .entry((
                label("group"),
                label("resource"),
                label("verb"),
                label("code"),
            ))
            .or_insert(0) += value as u64;
    }
    counts
}

/// A client of the server as `system:masters`.
async fn admin_client(server: &ApiServer) -> kube::Client {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig()).expect("kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("client config");
    kube::Client::try_from(config).expect("client")
}

/// Creates `objects` by server-side apply, `CONCURRENT_APPLIES` at a time; returns the
/// resource of each `(group, kind)`.
async fn apply_all(
    client: &kube::Client,
    objects: &[Value],
) -> BTreeMap<(String, String), ApiResource> {
    let discovery = Discovery::new(client.clone())
        .run_aggregated()
        .await
        .expect("discovery");
    let mut resources = BTreeMap::new();
    let mut requests = Vec::new();
    for object in objects {
        let gvk = gvk_of(object);
        let (resource, capabilities) = discovery
            .resolve_gvk(&gvk)
            .unwrap_or_else(|| panic!("the server does not serve {gvk:?}"));
        resources.insert((gvk.group.clone(), gvk.kind.clone()), resource.clone());
        let api: Api<DynamicObject> = match (capabilities.scope, namespace_of(object)) {
            (Scope::Namespaced, Some(namespace)) => {
                Api::namespaced_with(client.clone(), namespace, &resource)
            }
            _ => Api::all_with(client.clone(), &resource),
        };
        let name = name_of(object).to_string();
        let body: DynamicObject = serde_json::from_value(object.clone()).expect("object");
        requests.push(async move {
            api.patch(
                &name,
                &PatchParams::apply(MANAGER).force(),
                &Patch::Apply(&body),
            )
            .await
            .map_err(|e| {
                format!(
                    "{}/{name}: {e}",
                    body.types.map(|t| t.kind).unwrap_or_default()
                )
            })
        });
    }
    let failures: Vec<String> = futures::stream::iter(requests)
        .buffer_unordered(CONCURRENT_APPLIES)
        .filter_map(|result| async move { result.err() })
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "the server refused:\n{}",
        failures.join("\n")
    );
    resources
}

use support::aiml_with_kubeconfig as aiml;

#[test]
fn status_of_a_fleet_lists_each_kind_once_and_gets_no_object() {
    let began = Instant::now();
    let Some(server) =
        ApiServer::start_or_skip("status_of_a_fleet_lists_each_kind_once_and_gets_no_object")
    else {
        return;
    };
    server.install_crds();
    let scratch = server.scratch();
    let repo = scratch.join("fleet");
    let kubeconfig: PathBuf = scratch.join("kubeconfig");
    let fleet = write_fleet(&repo, COPIES);
    let git = git2::Repository::init(&repo).expect("git init");
    let setup = began.elapsed();

    let clock = Instant::now();
    aiml(&repo, &kubeconfig, &["render"]).expect_code(0);
    let head = support::commit_all(
        &git,
        &git2::Signature::now("Test", "test@example.com").expect("signature"),
        "the fleet",
    )
    .to_string();
    let render = clock.elapsed();

    // Every rendered object on the server: namespaces first (those rendered, and those the
    // objects use without rendering them, like each project's), then everything else, and a
    // role for the status user that grants `list` alone.
    let clock = Instant::now();
    let rendered = rendered_objects(&repo);
    let mut namespaces: BTreeMap<String, Value> = rendered
        .iter()
        .filter_map(|o| namespace_of(&o.object))
        .map(|n| {
            (
                n.to_string(),
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}}),
            )
        })
        .collect();
    for object in rendered.iter().filter(|o| o.object["kind"] == "Namespace") {
        namespaces.insert(name_of(&object.object).to_string(), object.object.clone());
    }
    let others: Vec<Value> = rendered
        .iter()
        .filter(|o| o.object["kind"] != "Namespace")
        .map(|o| o.object.clone())
        .chain([
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": {"name": "aiml-list-only"},
                "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["list"]}]}),
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": "aiml-list-only"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "aiml-list-only"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": LIST_ONLY_USER}]}),
        ])
        .collect();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let resources = runtime.block_on(async {
        let client = admin_client(&server).await;
        let mut resources = apply_all(&client, &namespaces.into_values().collect::<Vec<_>>()).await;
        resources.extend(apply_all(&client, &others).await);
        resources
    });
    let create = clock.elapsed();

    // Every context of the fleet reaches the one server, as the list-only user.
    let mut contexts = vec![HOST_CONTEXT.to_string()];
    contexts.extend(workload_contexts(&repo));
    let pairs: Vec<(&str, User)> = contexts
        .iter()
        .map(|c| (c.as_str(), User::Viewer))
        .collect();
    server.write_kubeconfig_with(&kubeconfig, &pairs, HOST_CONTEXT, None);

    let before = request_counts(&server);
    let clock = Instant::now();
    let run = aiml(
        &repo,
        &kubeconfig,
        &["status", "-o", "json", "--request-timeout=120s"],
    );
    let status = clock.elapsed();
    let after = request_counts(&server);
    // Nothing was patched ready (no controller runs): findings, not a failure to ask.
    run.expect_code(1);
    let report: Value = serde_json::from_str(&run.stdout).expect("status JSON");
    assert_eq!(report["head"], head.as_str());

    // Every blueprint and target, with exactly its rendered objects, each found.
    let mut expected: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for object in &rendered {
        let parts: Vec<&str> = object.file.splitn(4, '/').collect();
        if parts[1] != "_sync" {
            expected
                .entry((parts[1].to_string(), parts[2].to_string()))
                .or_default()
                .insert(object.file.clone());
        }
    }
    let blueprints: BTreeSet<String> = expected.keys().map(|(b, _)| b.clone()).collect();
    assert_eq!(blueprints, fleet, "the rendered folders are not the fleet");
    let targets = report["targets"].as_array().expect("targets");
    let mut seen: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for target in targets {
        let key = (
            target["blueprint"].as_str().expect("blueprint").to_string(),
            target["target"].as_str().expect("target").to_string(),
        );
        assert!(target.get("error").is_none(), "could not ask: {target}");
        let objects = target["objects"].as_array().expect("objects");
        assert_eq!(target["total"], objects.len(), "{key:?}");
        for object in objects {
            assert_ne!(object["health"]["state"], "missing", "{key:?}: {object}");
        }
        let sync = &target["sync"];
        assert!(
            sync["health"]["state"] != "missing" && sync["health"]["state"].is_string(),
            "{key:?}: its sync object is not found: {sync}"
        );
        let files = objects
            .iter()
            .map(|o| o["file"].as_str().expect("file").to_string());
        let twice = seen.insert(key.clone(), files.collect());
        assert!(twice.is_none(), "{key:?} twice");
    }
    let counted: usize = seen.values().map(BTreeSet::len).sum();
    assert_eq!(
        seen, expected,
        "targets and their objects differ from rendered/"
    );

    // The cost: for each kind, one LIST (more only for pages of 500), and no GET of anything.
    let deltas: Vec<(&Counter, u64)> = after
        .iter()
        .map(|(key, n)| (key, n - before.get(key).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect();
    let delta = |group: &str, resource: &str, verb: &str| -> u64 {
        deltas
            .iter()
            .filter(|((g, r, v, _), _)| g == group && r == resource && v == verb)
            .map(|(_, n)| n)
            .sum()
    };
    // Objects of each kind on the server, by identity.
    let mut live: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    for object in &rendered {
        let gvk = gvk_of(&object.object);
        live.entry((gvk.group, gvk.kind))
            .or_default()
            .insert(format!(
                "{}/{}",
                namespace_of(&object.object).unwrap_or_default(),
                name_of(&object.object)
            ));
    }
    let mut lists = 0;
    let mut problems = Vec::new();
    for ((group, kind), identities) in &live {
        let plural = &resources[&(group.clone(), kind.clone())].plural;
        let listed = delta(group, plural, "LIST");
        let pages = identities.len() / PAGE + 1;
        if listed == 0 || listed as usize > pages {
            problems.push(format!(
                "{kind} ({group}): {listed} LISTs for {} objects, expected 1 to {pages}",
                identities.len()
            ));
        }
        lists += listed;
    }
    // Kueue's Workloads are found by their jobs' uids (one LIST per 50 queued jobs), nodes
    // once.
    let queued = rendered
        .iter()
        .filter(|o| o.object["metadata"]["labels"]["kueue.x-k8s.io/queue-name"].is_string())
        .count();
    let workloads = delta("kueue.x-k8s.io", "workloads", "LIST");
    if workloads as usize > queued.div_ceil(50) {
        problems.push(format!(
            "{workloads} LISTs of Kueue Workloads for {queued} queued jobs, expected at most {}",
            queued.div_ceil(50)
        ));
    }
    let nodes = delta("", "nodes", "LIST");
    if nodes > 1 {
        problems.push(format!("{nodes} LISTs of nodes"));
    }
    // Meanwhile the server's own loops only renew their leases (PUT), so any GET of a
    // resource is the command's; and the status user may only list, so a GET of it would
    // also be refused (403).
    for ((group, resource, verb, code), n) in &deltas {
        if (verb == "GET" && !resource.is_empty()) || code == "403" {
            let group = if group.is_empty() { "core" } else { group };
            problems.push(format!("{n} × {verb} {resource} ({group}): {code}"));
        }
    }
    assert!(
        problems.is_empty(),
        "status asked too much:\n{}",
        problems.join("\n")
    );

    eprintln!(
        "fleet: {} blueprints, {} objects in their targets ({} distinct with the sync \
         objects), {} kinds, {} contexts; \
         {lists} LISTs of our kinds + {workloads} of Workloads + {nodes} of nodes; \
         server and CRDs {:.1} s, render {:.1} s, create {:.1} s, status {:.2} s",
        fleet.len(),
        counted,
        live.values().map(BTreeSet::len).sum::<usize>(),
        live.len(),
        contexts.len(),
        setup.as_secs_f64(),
        render.as_secs_f64(),
        create.as_secs_f64(),
        status.as_secs_f64(),
    );
}

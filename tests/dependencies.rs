//! Apply order. Config Sync applies an object only once everything its
//! `config.kubernetes.io/depends-on` names is reconciled, and only within one sync root; Argo CD
//! applies wave by wave. A first apply converges without rounds of failures when every object
//! comes after what it needs:
//!
//! - every reference a Config Connector object makes to another object of its sync root (the
//!   `…Ref` fields `graph` finds, plus what no field names: the grants of the account a cluster
//!   or node pool runs as, the API a resource belongs to, the API whose service agent a grant
//!   names and the grants of the service agent that acts for a resource, the cluster that
//!   creates a Workload Identity pool) has a depends-on path;
//! - every depends-on entry parses and names an object of the same sync root, and no root has
//!   a cycle;
//! - with `sync.engine: argocd`, each object's sync wave is the longest depends-on path below
//!   it, so Argo CD applies in Config Sync's order.
//!
//! Checked over this repository's `rendered/`, every example repository's, and a fresh render
//! of every compile fixture (which adds existing resources, shared clusters and every metrics
//! sink variant).

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use aiml::diagnostic::ObjectRef;
use aiml::gitops::diff::{Object, read_dir};
use aiml::graph::{DEPENDS_ON_ANNOTATION, NodeKind, parse_depends_on};
use aiml::overlay::Plane;
use aiml::yaml::Node;
use support::TestRepo;

use aiml::render::waves::SYNC_WAVE_ANNOTATION as WAVE_ANNOTATION;

/// A sync root: a blueprint folder and one of its planes.
type Root = (String, Plane);

/// One object of a root, by its index in the root's list.
struct RootObjects<'a> {
    objects: Vec<&'a Object>,
    index: BTreeMap<ObjectRef, usize>,
}

impl<'a> RootObjects<'a> {
    fn find(&self, id: &ObjectRef) -> Option<usize> {
        self.index.get(id).copied()
    }
}

fn string_at<'n>(node: &'n Node, path: &[&str]) -> Option<&'n str> {
    node.at(path).and_then(Node::as_str)
}

/// Every sync root of a `rendered/` tree but the sync folder's own.
fn roots(side: &aiml::gitops::diff::Side) -> BTreeMap<Root, RootObjects<'_>> {
    let mut roots: BTreeMap<Root, RootObjects<'_>> = BTreeMap::new();
    for object in side.objects.values() {
        if object.folder == aiml::graph::SYNC_FOLDER {
            continue;
        }
        let root = roots
            .entry((object.folder.clone(), aiml::graph::plane_of(object)))
            .or_insert_with(|| RootObjects {
                objects: Vec::new(),
                index: BTreeMap::new(),
            });
        root.index.insert(object.id.clone(), root.objects.len());
        root.objects.push(object);
    }
    roots
}

fn entry_of(id: &ObjectRef) -> String {
    match &id.namespace {
        Some(ns) => format!("{}/namespaces/{ns}/{}/{}", id.group, id.kind, id.name),
        None => format!("{}/{}/{}", id.group, id.kind, id.name),
    }
}

/// The depends-on edges of a root (from → to, indices), or why an entry is wrong.
fn depends_on_edges(
    root: &Root,
    objects: &RootObjects<'_>,
    errors: &mut Vec<String>,
) -> Vec<Vec<usize>> {
    let mut edges = vec![Vec::new(); objects.objects.len()];
    for (from, object) in objects.objects.iter().enumerate() {
        let Some(value) = string_at(
            &object.node,
            &["metadata", "annotations", DEPENDS_ON_ANNOTATION],
        ) else {
            continue;
        };
        for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            match parse_depends_on(entry).and_then(|id| objects.find(&id)) {
                Some(to) => edges[from].push(to),
                None => errors.push(format!(
                    "{}: depends-on `{entry}` names no object of its sync root `rendered/{}/{}/` \
                     (Config Sync refuses dependencies outside the root)",
                    object.path,
                    root.0,
                    root.1.dir()
                )),
            }
        }
    }
    edges
}

/// The depth of each object (longest depends-on path below it); `None` when the root has a
/// cycle, with the objects on it reported.
fn depths(
    objects: &RootObjects<'_>,
    edges: &[Vec<usize>],
    errors: &mut Vec<String>,
) -> Option<Vec<usize>> {
    // 0 unvisited, 1 on the stack, 2 done.
    let mut state = vec![0u8; edges.len()];
    let mut depth = vec![0usize; edges.len()];
    fn visit(
        at: usize,
        edges: &[Vec<usize>],
        state: &mut [u8],
        depth: &mut [usize],
        stack: &mut Vec<usize>,
    ) -> Result<(), Vec<usize>> {
        state[at] = 1;
        stack.push(at);
        let mut deepest = 0;
        for &to in &edges[at] {
            match state[to] {
                1 => {
                    let start = stack.iter().position(|&i| i == to).unwrap_or(0);
                    return Err(stack[start..].to_vec());
                }
                0 => visit(to, edges, state, depth, stack)?,
                _ => {}
            }
            deepest = deepest.max(depth[to] + 1);
        }
        stack.pop();
        state[at] = 2;
        depth[at] = deepest;
        Ok(())
    }
    for start in 0..edges.len() {
        if state[start] == 0
            && let Err(cycle) = visit(start, edges, &mut state, &mut depth, &mut Vec::new())
        {
            let names: Vec<String> = cycle
                .iter()
                .map(|&i| objects.objects[i].id.to_string())
                .collect();
            errors.push(format!("depends-on cycle: {}", names.join(" → ")));
            return None;
        }
    }
    Some(depth)
}

/// Whether `to` is reachable from `from` through depends-on edges.
fn reaches(edges: &[Vec<usize>], from: usize, to: usize) -> bool {
    let mut seen = BTreeSet::new();
    let mut stack = vec![from];
    while let Some(at) = stack.pop() {
        for &next in &edges[at] {
            if next == to {
                return true;
            }
            if seen.insert(next) {
                stack.push(next);
            }
        }
    }
    false
}

/// The email of the account a `serviceAccountRef` names: `external` as written, or the
/// account object of the root by name.
fn account_email(
    objects: &RootObjects<'_>,
    reference: &Node,
    namespace: Option<&str>,
) -> Option<String> {
    if let Some(external) = string_at(reference, &["external"]) {
        return Some(external.trim_start_matches("serviceAccount:").to_string());
    }
    let name = string_at(reference, &["name"])?;
    let id = ObjectRef {
        group: "iam.cnrm.cloud.google.com".into(),
        kind: "IAMServiceAccount".into(),
        namespace: string_at(reference, &["namespace"])
            .or(namespace)
            .map(str::to_string),
        name: name.to_string(),
    };
    let account = objects.objects[objects.find(&id)?];
    let project = string_at(
        &account.node,
        &[
            "metadata",
            "annotations",
            "cnrm.cloud.google.com/project-id",
        ],
    )?;
    Some(format!("{name}@{project}.iam.gserviceaccount.com"))
}

/// Who an IAMPolicyMember grants to, as a principal (`serviceAccount:…`).
fn grantee(objects: &RootObjects<'_>, grant: &Object) -> Option<String> {
    if let Some(member) = string_at(&grant.node, &["spec", "member"]) {
        return Some(member.to_string());
    }
    let reference = grant
        .node
        .at(&["spec", "memberFrom", "serviceAccountRef"])?;
    account_email(objects, reference, grant.id.namespace.as_deref())
        .map(|email| format!("serviceAccount:{email}"))
}

/// The `serviceAccountRef` mappings under `node` outside `memberFrom` (the account an object
/// runs as, not one it grants to).
fn runs_as<'n>(node: &'n Node, path: &str, out: &mut Vec<&'n Node>) {
    if let Some(entries) = node.as_map() {
        for (key, value) in entries {
            if key.text == "memberFrom" {
                continue;
            }
            if key.text == "serviceAccountRef" {
                out.push(value);
            } else {
                runs_as(value, &format!("{path}.{}", key.text), out);
            }
        }
    } else if let Some(items) = node.as_seq() {
        for item in items {
            runs_as(item, path, out);
        }
    }
}

/// The API (`<name>.googleapis.com`) a Config Connector object is a resource of: its group's,
/// or for an IAM binding that of the resource it is on (the project's is Resource Manager).
fn api_of(object: &Object) -> Option<String> {
    let group = if object.id.kind == "IAMPolicyMember" {
        match string_at(&object.node, &["spec", "resourceRef", "apiVersion"]) {
            Some(api_version) => api_version.split('/').next()?.to_string(),
            None => return Some("cloudresourcemanager.googleapis.com".into()),
        }
    } else {
        object.id.group.clone()
    };
    let short = group.strip_suffix(".cnrm.cloud.google.com")?;
    (short != "serviceusage").then(|| format!("{short}.googleapis.com"))
}

/// The API whose Google service agent a principal is
/// (`serviceAccount:service-<number>@gcp-sa-<api>.iam.gserviceaccount.com`).
fn agent_api(principal: &str) -> Option<String> {
    let domain = principal
        .strip_prefix("serviceAccount:service-")?
        .split_once('@')?
        .1;
    let api = domain
        .strip_prefix("gcp-sa-")?
        .strip_suffix(".iam.gserviceaccount.com")?;
    Some(format!("{api}.googleapis.com"))
}

/// Every reference of a Config Connector root that needs a depends-on path: (from, to, why).
fn references(
    graph: &aiml::graph::Graph,
    root: &Root,
    objects: &RootObjects<'_>,
) -> BTreeSet<(usize, usize, String)> {
    let mut found = BTreeSet::new();
    // `…Ref` fields, as `graph` reads them, between two objects of this root.
    let in_root = |node: usize| -> Option<usize> {
        let node = &graph.nodes[node];
        if node.kind != NodeKind::Object || node.folder != root.0 || node.plane != Some(root.1) {
            return None;
        }
        objects.find(node.object.as_ref()?)
    };
    for edge in &graph.edges {
        if edge.label == "depends-on" {
            continue;
        }
        if let (Some(from), Some(to)) = (in_root(edge.from), in_root(edge.to)) {
            found.insert((from, to, edge.label.clone()));
        }
    }
    let apis: BTreeMap<&str, usize> = objects
        .objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.id.kind == "Service")
        .filter_map(|(i, o)| Some((string_at(&o.node, &["spec", "resourceID"])?, i)))
        .collect();
    let grants: Vec<(usize, String)> = objects
        .objects
        .iter()
        .enumerate()
        .filter(|(_, o)| o.id.kind == "IAMPolicyMember")
        .filter_map(|(i, o)| Some((i, grantee(objects, o)?)))
        .collect();
    for (from, object) in objects.objects.iter().enumerate() {
        // The API the object is a resource of.
        if let Some(api) = api_of(object)
            && let Some(&to) = apis.get(api.as_str())
        {
            found.insert((from, to, format!("a resource of {api}")));
        }
        // The grants of the account it runs as (nodes start working with their roles).
        let mut accounts = Vec::new();
        if let Some(spec) = object.node.get("spec") {
            runs_as(spec, "spec", &mut accounts);
        }
        for reference in accounts {
            let Some(email) = account_email(objects, reference, object.id.namespace.as_deref())
            else {
                continue;
            };
            let principal = format!("serviceAccount:{email}");
            for (to, member) in &grants {
                if *member == principal {
                    found.insert((from, *to, format!("runs as {email}, granted by")));
                }
            }
        }
        if object.id.kind == "IAMPolicyMember"
            && let Some(member) = grantee(objects, object)
        {
            // A service agent exists once its API is enabled.
            if let Some(api) = agent_api(&member)
                && let Some(&to) = apis.get(api.as_str())
            {
                found.insert((from, to, format!("grants to the service agent of {api}")));
            }
            // A Workload Identity principal needs the project's identity pool, which the
            // first cluster with Workload Identity creates.
            if let Some(pool) = member
                .strip_prefix("serviceAccount:")
                .and_then(|m| m.split_once('['))
                .map(|(pool, _)| pool)
            {
                for (to, cluster) in objects.objects.iter().enumerate() {
                    if cluster.id.kind == "ContainerCluster"
                        && string_at(
                            &cluster.node,
                            &["spec", "workloadIdentityConfig", "workloadPool"],
                        ) == Some(pool)
                    {
                        found.insert((from, to, format!("Workload Identity pool {pool}")));
                    }
                }
            }
        }
    }
    // A resource that names a resource of another API acts through its own API's service
    // agent (a BigQuery subscription writes as the Pub/Sub agent): it needs that agent's grants.
    let edges: Vec<(usize, usize)> = found.iter().map(|(f, t, _)| (*f, *t)).collect();
    for (from, to) in edges {
        let (a, b) = (objects.objects[from], objects.objects[to]);
        let (Some(own), Some(other)) = (api_of(a), api_of(b)) else {
            continue;
        };
        if own == other || b.id.kind == "Service" || a.id.kind == "IAMPolicyMember" {
            continue;
        }
        for (grant, member) in &grants {
            if agent_api(member).as_deref() == Some(own.as_str()) {
                found.insert((
                    from,
                    *grant,
                    format!("writes to {} as the {own} service agent, granted by", b.id),
                ));
            }
        }
    }
    found
}

/// Checks one `rendered/` tree; returns every problem found.
fn check_tree(rendered: &Path) -> Vec<String> {
    let side = read_dir(rendered, u64::MAX).expect("read rendered/");
    let graph = aiml::graph::build(&side, None, usize::MAX).expect("graph");
    let mut errors = Vec::new();
    let roots = roots(&side);
    assert!(!roots.is_empty(), "{}: no sync root", rendered.display());
    for (root, objects) in &roots {
        let edges = depends_on_edges(root, objects, &mut errors);
        let Some(depth) = depths(objects, &edges, &mut errors) else {
            continue;
        };
        if root.1 == Plane::ConfigConnector {
            // Workload objects need no order: Kubernetes controllers wait for what a Service
            // selects or a workload queues on; Config Connector retries with backoff.
            for (from, to, why) in references(&graph, root, objects) {
                if !reaches(&edges, from, to) {
                    errors.push(format!(
                        "{}: {} references {} ({why}) with no depends-on path: add `{}` to its {DEPENDS_ON_ANNOTATION}",
                        objects.objects[from].path,
                        objects.objects[from].id,
                        objects.objects[to].id,
                        entry_of(&objects.objects[to].id),
                    ));
                }
            }
        }
        // Argo CD: the sync wave, when written, is the depth.
        for (i, object) in objects.objects.iter().enumerate() {
            let wave = string_at(&object.node, &["metadata", "annotations", WAVE_ANNOTATION]);
            if let Some(wave) = wave
                && wave != depth[i].to_string()
            {
                errors.push(format!(
                    "{}: sync wave {wave}, but its longest depends-on path is {}",
                    object.path, depth[i]
                ));
            }
        }
    }
    errors
}

fn assert_ordered(what: &str, rendered: &Path) {
    let errors = check_tree(rendered);
    assert!(
        errors.is_empty(),
        "{what}: {} apply-order problem(s):\n{}",
        errors.len(),
        errors.join("\n")
    );
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Every example repository with rendered output.
fn example_trees() -> Vec<PathBuf> {
    let mut trees: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join("examples"))
        .expect("examples/")
        .map(|entry| entry.expect("entry").path().join("rendered"))
        .filter(|rendered| rendered.is_dir())
        .collect();
    trees.sort();
    assert!(!trees.is_empty(), "no example repository with rendered/");
    trees
}

#[test]
fn this_repository_applies_in_order() {
    assert_ordered("rendered/", &manifest_dir().join("rendered"));
}

#[test]
fn every_example_repository_applies_in_order() {
    for tree in example_trees() {
        assert_ordered(&tree.display().to_string(), &tree);
    }
}

/// Copies a folder's files into `repo` under `prefix`.
fn copy_into(repo: &TestRepo, from: &Path, prefix: &str) {
    for (path, content) in aiml::render::read_tree(from).expect("read") {
        repo.write(
            &format!("{prefix}{path}"),
            std::str::from_utf8(&content).expect("utf-8"),
        );
    }
}

#[test]
fn every_compile_fixture_applies_in_order() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(manifest_dir().join("tests/fixtures/compile"))
        .expect("compile fixtures")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 5, "compile fixtures: {cases:?}");
    for case in cases {
        let repo = TestRepo::empty();
        copy_into(&repo, &case, "");
        repo.aiml(&["render"]).about(case.display()).expect_code(0);
        assert_ordered(&case.display().to_string(), &repo.path().join("rendered"));
    }
}
/// The repository's blueprints rendered with `sync.engine: argocd`: every object with
/// dependencies carries a sync wave, the same depends-on graph as Config Sync's render, and
/// each wave is its longest depends-on path (checked by [`check_tree`]).
#[test]
fn argocd_waves_follow_the_depends_on_graph() {
    let root = manifest_dir();
    let settings = std::fs::read_to_string(root.join("aiml.yaml")).expect("aiml.yaml");
    assert!(settings.contains("engine: config-sync"), "{settings}");
    let repo = TestRepo::empty();
    copy_into(&repo, &root.join("blueprints"), "blueprints/");
    repo.write(
        "aiml.yaml",
        &settings.replace("engine: config-sync", "engine: argocd"),
    );
    repo.aiml(&["render"]).expect_code(0);
    let rendered = repo.path().join("rendered");
    assert_ordered("argocd render", &rendered);

    // Config Sync's graph (the committed render) and Argo CD's are the same, but for the
    // fleet registration only Config Sync has.
    let config_sync = read_dir(&root.join("rendered"), u64::MAX).expect("rendered/");
    let argocd = read_dir(&rendered, u64::MAX).expect("argocd rendered/");
    let mut waves = 0;
    for (key, object) in &argocd.objects {
        if object.folder == aiml::graph::SYNC_FOLDER {
            continue;
        }
        let depends = |o: &Object| {
            string_at(&o.node, &["metadata", "annotations", DEPENDS_ON_ANNOTATION])
                .map(str::to_string)
        };
        let committed = config_sync
            .objects
            .get(key)
            .unwrap_or_else(|| panic!("{}: not in the Config Sync render", object.path));
        assert_eq!(depends(object), depends(committed), "{}", object.path);
        let wave = string_at(&object.node, &["metadata", "annotations", WAVE_ANNOTATION]);
        assert_eq!(
            wave.is_some(),
            depends(object).is_some(),
            "{}: an object with dependencies has a wave, one without has none",
            object.path
        );
        waves += usize::from(wave.is_some());
    }
    assert!(waves > 10, "only {waves} objects with a sync wave");
}

/// Objects a repository kind adds to its template that depend on each other: no wave order
/// exists, so an Argo CD render stops (exit 2) naming them and writes nothing; Config Sync's
/// render does not order by waves and is not affected.
const CYCLE: &str = r#"
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: first
  namespace: {{ namespace }}
  annotations:
    config.kubernetes.io/depends-on: {{ "/namespaces/" ~ namespace ~ "/ConfigMap/second" }}
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: second
  namespace: {{ namespace }}
  annotations:
    config.kubernetes.io/depends-on: {{ "/namespaces/" ~ namespace ~ "/ConfigMap/first" }}
"#;

#[test]
fn a_depends_on_cycle_stops_an_argocd_render() {
    let example = manifest_dir().join("examples/repository-kind");
    let repo = TestRepo::empty();
    copy_into(&repo, &example.join("blueprints"), "blueprints/");
    copy_into(&repo, &example.join("kinds"), "kinds/");
    let template = "kinds/TpuSmokeTest/templates/job.yaml";
    let text = std::fs::read_to_string(example.join(template)).expect("template");
    repo.write(template, &format!("{text}{CYCLE}"));
    repo.write(
        "aiml.yaml",
        "git:\n  repo: https://example.com/acme/ml.git\nsync:\n  engine: argocd\n",
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has("blueprint `smoke-v5e-16`: config.kubernetes.io/depends-on forms a cycle")
        .stderr_has("ConfigMap/smoke-v5e-16/first");
    assert!(
        !repo.path().join("rendered").exists(),
        "{}",
        run.transcript()
    );
    assert!(
        !repo.path().join("overlays").exists(),
        "{}",
        run.transcript()
    );
}

//! `kubectl aiml graph [NAME]`: the committed rendered objects and the edges between them,
//! as Mermaid (renders in a pull-request comment) or Graphviz DOT.
//!
//! The graph reads `rendered/` as [`crate::gitops::diff::read_dir`] does: what is committed
//! is what gets applied. Nodes are objects, grouped by the cluster that applies them (the
//! Config Connector host or a workload cluster) and by their folder under `rendered/`. Edges
//! come from what the objects say about each other:
//!
//! - Config Connector references (`spec…xxxRef` with `name` or `external`);
//! - `config.kubernetes.io/depends-on` annotations;
//! - a Service to the workloads whose pod labels its selector matches;
//! - a HorizontalPodAutoscaler to its `scaleTargetRef`;
//! - Kueue: workload → LocalQueue (`kueue.x-k8s.io/queue-name`) → ClusterQueue →
//!   ResourceFlavor;
//! - a sync object of `rendered/_sync/` (RootSync, RepoSync, Argo CD Application) to the
//!   folder it syncs.
//!
//! An edge whose end is not in the graph goes to a dashed "external" node, so nothing a
//! reader should know about is dropped. Workload-cluster edges resolve inside the object's
//! own folder (each blueprint's workloads may run on a cluster of their own); Config
//! Connector edges resolve across every folder (there is one host). Every label is input
//! text: control characters are escaped as [`crate::diagnostic::sanitize`] does, then quoted
//! for the output language. Output is sorted, so the same tree prints the same graph.

use std::collections::{BTreeMap, BTreeSet};

use crate::diagnostic::{ObjectRef, sanitize};
use crate::gitops::diff::{Object, Side};
use crate::overlay::Plane;
use crate::repo::RENDERED_DIR;
use crate::validate::Object as ValidateObject;
use crate::validate::model::{autoscaler, workload};
use crate::yaml::{Node, Value};

/// The folder of `rendered/` that holds the sync objects.
pub const SYNC_FOLDER: &str = "_sync";
/// The annotation that orders Config Sync's (and Config Connector's) apply.
pub const DEPENDS_ON_ANNOTATION: &str = "config.kubernetes.io/depends-on";
const KUEUE_GROUP: &str = "kueue.x-k8s.io";
const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Longest label printed (characters); longer input is cut with a note.
const MAX_LABEL: usize = 200;
/// How deep the search for `…Ref` fields goes into a Config Connector `spec`.
const MAX_REF_DEPTH: usize = 16;

/// Why no graph was drawn.
#[derive(Debug, thiserror::Error)]
pub enum GraphError {
    /// The name is not a folder of `rendered/`.
    #[error("no blueprint named `{name}` under `{RENDERED_DIR}/`{}; known: {}",
        .suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default(),
        if .known.is_empty() { "none (run `kubectl aiml render` first)".to_string() }
        else { .known.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ") })]
    UnknownName {
        /// The name asked for.
        name: String,
        /// The closest blueprint name.
        suggestion: Option<String>,
        /// The blueprints with rendered output.
        known: Vec<String>,
    },
    /// More nodes than anyone can read.
    #[error(
        "the graph has {nodes} nodes, more than the limit of {limit}: name one blueprint (`kubectl aiml graph NAME`) or raise `{}`",
        crate::limits::MAX_GRAPH_NODES_VAR
    )]
    TooLarge {
        /// Nodes the graph would have (at least).
        nodes: usize,
        /// The limit.
        limit: usize,
    },
}

/// What a node stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum NodeKind {
    /// A folder of `rendered/` that a sync object syncs.
    Folder,
    /// A rendered object.
    Object,
    /// Something an edge names that is not in the graph.
    External,
}

/// One node of the graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GraphNode {
    /// Identifier in the output, stable for the same object (a hash of what it stands for).
    pub id: String,
    /// What it stands for.
    pub kind: NodeKind,
    /// The label, as read (escaped only when printed).
    pub label: String,
    /// The cluster that applies it (`None` for external nodes).
    pub plane: Option<Plane>,
    /// Its folder under `rendered/` (empty for external nodes).
    pub folder: String,
    /// The object it stands for (object nodes only).
    pub object: Option<ObjectRef>,
    /// A style class set by the caller (`graph --live`: the object's state), drawn as a
    /// colour; `None` draws the node plain.
    pub class: Option<NodeClass>,
}

/// How `graph --live` colours a node: the state of its object on the cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NodeClass {
    /// Ready.
    Ready,
    /// Not ready yet.
    Progressing,
    /// Needs a person.
    Failed,
    /// Not on the cluster.
    Missing,
}

impl NodeClass {
    fn name(self) -> &'static str {
        match self {
            NodeClass::Ready => "ready",
            NodeClass::Progressing => "progressing",
            NodeClass::Failed => "failed",
            NodeClass::Missing => "missing",
        }
    }

    /// Fill and stroke colours (green, amber, red, grey), the same in both languages.
    fn colours(self) -> (&'static str, &'static str) {
        match self {
            NodeClass::Ready => ("#d4edda", "#28a745"),
            NodeClass::Progressing => ("#fff3cd", "#d39e00"),
            NodeClass::Failed => ("#f8d7da", "#dc3545"),
            NodeClass::Missing => ("#e2e3e5", "#6c757d"),
        }
    }
}

const CLASSES: [NodeClass; 4] = [
    NodeClass::Ready,
    NodeClass::Progressing,
    NodeClass::Failed,
    NodeClass::Missing,
];

/// One edge: `from` and `to` index [`Graph::nodes`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Edge {
    /// The node the edge starts at.
    pub from: usize,
    /// The node it points to.
    pub to: usize,
    /// What the edge means (`spec.clusterRef`, `depends-on`, `selects`, …).
    pub label: String,
}

/// The objects of one selection and their edges, sorted.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// Nodes: by plane, folder, then identity; external nodes last.
    pub nodes: Vec<GraphNode>,
    /// Edges, sorted and without repeats.
    pub edges: Vec<Edge>,
}

/// Where an edge found in the objects points.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum To {
    /// The object at this index of the selection.
    Object(usize),
    /// A folder, `rendered/<folder>/<plane folder>`.
    Folder(String),
    /// Something outside the selection, described.
    External(String),
}

/// An edge as a finder reports it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Found {
    from: usize,
    to: To,
    label: String,
}

/// One object of the selection with what the finders need.
struct Item<'a> {
    object: &'a Object,
    plane: Plane,
}

/// The graph of the rendered objects of `side`: every folder (`None`) or the blueprint
/// `name` only. More than `max_nodes` nodes is an error, never an unreadable picture.
pub fn build(side: &Side, name: Option<&str>, max_nodes: usize) -> Result<Graph, GraphError> {
    if let Some(name) = name {
        let known: Vec<String> = side
            .objects
            .values()
            .map(|o| o.folder.clone())
            .filter(|f| f != SYNC_FOLDER)
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if name == SYNC_FOLDER || !known.iter().any(|k| k == name) {
            let suggestion =
                crate::catalog::closest(name, known.iter().map(String::as_str)).map(str::to_string);
            return Err(GraphError::UnknownName {
                name: name.to_string(),
                suggestion,
                known,
            });
        }
    }
    let items: Vec<Item<'_>> = side
        .objects
        .values()
        .filter(|o| name.is_none_or(|n| o.folder == n))
        .map(|object| Item {
            object,
            plane: plane_of(object),
        })
        .collect();
    if items.len() > max_nodes {
        return Err(GraphError::TooLarge {
            nodes: items.len(),
            limit: max_nodes,
        });
    }
    let found = find_edges(&items);
    assemble(&items, found, max_nodes)
}

/// Every edge of the selection, from every finder.
fn find_edges(items: &[Item<'_>]) -> Vec<Found> {
    let validate: Vec<ValidateObject<'_>> = items
        .iter()
        .map(|item| ValidateObject {
            file: &item.object.path,
            api_version: &item.object.api_version,
            id: item.object.id.clone(),
            node: &item.object.node,
        })
        .collect();
    let mut found = Vec::new();
    for (index, item) in items.iter().enumerate() {
        found.extend(config_connector_refs(items, index));
        found.extend(depends_on(items, index));
        found.extend(service_selects(items, &validate, index));
        found.extend(scale_target(items, &validate, index));
        found.extend(kueue(items, &validate, index));
        if item.object.folder == SYNC_FOLDER {
            found.extend(sync_target(item, index));
        }
    }
    found
}

/// The cluster that applies an object, from its folder: `rendered/<blueprint>/config-connector/`
/// and `rendered/_sync/{config-connector-host,bootstrap}/` go to the Config Connector host.
#[must_use]
pub fn plane_of(object: &Object) -> Plane {
    let inner = object
        .path
        .strip_prefix(&format!("{RENDERED_DIR}/{}/", object.folder))
        .unwrap_or_default();
    let first = inner.split('/').next().unwrap_or_default();
    if object.folder == SYNC_FOLDER {
        if matches!(first, "config-connector-host" | "bootstrap") {
            Plane::ConfigConnector
        } else {
            Plane::Workload
        }
    } else if first == Plane::ConfigConnector.dir() {
        Plane::ConfigConnector
    } else {
        Plane::Workload
    }
}

fn string_at<'n>(node: &'n Node, path: &[&str]) -> Option<&'n str> {
    node.at(path)
        .and_then(Node::as_str)
        .filter(|s| !s.is_empty())
}

/// `Kind/namespace/name` (or `Kind/name`) for external nodes.
fn describe(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(namespace) => format!("{kind}/{namespace}/{name}"),
        None => format!("{kind}/{name}"),
    }
}

/// Config Connector `…Ref` fields anywhere under `spec` of a Config Connector object:
/// `name` (with `kind` and `namespace` when written) resolves among the host's objects,
/// `external` names something outside.
fn config_connector_refs(items: &[Item<'_>], index: usize) -> Vec<Found> {
    let item = &items[index];
    if Plane::of_group(&item.object.id.group) != Plane::ConfigConnector {
        return Vec::new();
    }
    let Some(spec) = item.object.node.get("spec") else {
        return Vec::new();
    };
    let mut refs = Vec::new();
    collect_refs(spec, "spec", 0, &mut refs);
    refs.into_iter()
        .map(|(field, reference)| {
            let mut segments = field.rsplit('.');
            let stem = segments.next().unwrap_or_default().trim_end_matches("Ref");
            // `gkeCluster.resourceRef` names a cluster: the parent's last word is the hint
            // when the field's own stem is as generic as `resource`.
            let parent = segments.next().map(last_word).unwrap_or_default();
            let kind = string_at(reference, &["kind"]);
            let shown = kind.map_or_else(|| capitalized(stem), str::to_string);
            let to = if let Some(name) = string_at(reference, &["name"]) {
                let namespace =
                    string_at(reference, &["namespace"]).or(item.object.id.namespace.as_deref());
                let target = resolve_ref(items, index, kind, stem, namespace, name).or_else(|| {
                    kind.is_none()
                        .then(|| resolve_ref(items, index, None, parent, namespace, name))
                        .flatten()
                });
                match target {
                    Some(target) => To::Object(target),
                    None => To::External(describe(&shown, namespace, name)),
                }
            } else {
                let external = string_at(reference, &["external"]).unwrap_or_default();
                To::External(format!("{shown} {external}"))
            };
            Found {
                from: index,
                to,
                label: field,
            }
        })
        .collect()
}

/// `nodeConfig` → `Config`: the last camel-case word of a field name.
fn last_word(field: &str) -> &str {
    let field = field.split('[').next().unwrap_or_default();
    let start = field.rfind(|c: char| c.is_ascii_uppercase()).unwrap_or(0);
    &field[start..]
}

/// `project` → `Project`.
fn capitalized(word: &str) -> String {
    let mut chars = word.chars();
    chars
        .next()
        .map(|first| first.to_uppercase().chain(chars).collect())
        .unwrap_or_default()
}

/// The `…Ref` mappings (with `name` or `external`) under `node`, with their dotted paths.
fn collect_refs<'n>(node: &'n Node, path: &str, depth: usize, out: &mut Vec<(String, &'n Node)>) {
    if depth > MAX_REF_DEPTH {
        return;
    }
    match &node.value {
        Value::Map(entries) => {
            for (key, value) in entries {
                let field = format!("{path}.{}", key.text);
                let is_ref = key.text.len() > 3
                    && key.text.ends_with("Ref")
                    && (string_at(value, &["name"]).is_some()
                        || string_at(value, &["external"]).is_some());
                if is_ref {
                    out.push((field, value));
                } else {
                    collect_refs(value, &field, depth + 1, out);
                }
            }
        }
        Value::Seq(values) => {
            for (i, value) in values.iter().enumerate() {
                collect_refs(value, &format!("{path}[{i}]"), depth + 1, out);
            }
        }
        _ => {}
    }
}

/// The Config Connector object a reference names: its `kind` when written, else the kind
/// the field's name ends (`clusterRef` → `ContainerCluster`, `networkRef` → `ComputeNetwork`
/// rather than `ComputeSubnetwork`: the shortest kind that ends with the stem wins).
fn resolve_ref(
    items: &[Item<'_>],
    from: usize,
    kind: Option<&str>,
    stem: &str,
    namespace: Option<&str>,
    name: &str,
) -> Option<usize> {
    let stem = stem.to_ascii_lowercase();
    if kind.is_none() && stem.is_empty() {
        return None;
    }
    items
        .iter()
        .enumerate()
        .filter(|(i, candidate)| {
            let id = &candidate.object.id;
            *i != from
                && Plane::of_group(&id.group) == Plane::ConfigConnector
                && id.name == name
                && (id.namespace.is_none() || id.namespace.as_deref() == namespace)
                && match kind {
                    Some(kind) => id.kind == kind,
                    None => id.kind.to_ascii_lowercase().ends_with(&stem),
                }
        })
        .min_by_key(|(i, candidate)| (candidate.object.id.kind.len(), *i))
        .map(|(i, _)| i)
}

/// `config.kubernetes.io/depends-on`: `group/namespaces/NS/Kind/name` or `group/Kind/name`,
/// comma-separated; an entry that names nothing in the graph (or does not parse) is external.
fn depends_on(items: &[Item<'_>], index: usize) -> Vec<Found> {
    let object = items[index].object;
    let Some(value) = string_at(
        &object.node,
        &["metadata", "annotations", DEPENDS_ON_ANNOTATION],
    ) else {
        return Vec::new();
    };
    value
        .split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            let to = parse_depends_on(entry)
                .and_then(|id| items.iter().position(|candidate| candidate.object.id == id))
                .map_or_else(|| To::External(entry.to_string()), To::Object);
            Found {
                from: index,
                to,
                label: "depends-on".to_string(),
            }
        })
        .collect()
}

/// One `depends-on` entry as an identity: `group/namespaces/NS/Kind/name` or
/// `group/Kind/name`.
#[must_use]
pub fn parse_depends_on(entry: &str) -> Option<ObjectRef> {
    let parts: Vec<&str> = entry.split('/').collect();
    let (group, namespace, kind, name) = match parts.as_slice() {
        [group, "namespaces", namespace, kind, name] => (group, Some(*namespace), kind, name),
        [group, kind, name] => (group, None, kind, name),
        _ => return None,
    };
    Some(ObjectRef {
        group: (*group).to_string(),
        kind: (*kind).to_string(),
        namespace: namespace.map(str::to_string),
        name: (*name).to_string(),
    })
}

/// Whether `candidate` is applied where `item` is: same folder, same plane.
fn beside(item: &Item<'_>, candidate: &Item<'_>) -> bool {
    candidate.object.folder == item.object.folder && candidate.plane == item.plane
}

/// The labels of a mapping of strings (non-string values are left out).
fn string_map(node: Option<&Node>) -> BTreeMap<&str, &str> {
    node.and_then(Node::as_map)
        .unwrap_or_default()
        .iter()
        .filter_map(|(key, value)| Some((key.text.as_str(), value.as_str()?)))
        .collect()
}

/// A core Service to each workload in its folder and namespace whose pod template labels
/// its `spec.selector` matches; a selector that matches none points at an external node.
fn service_selects(
    items: &[Item<'_>],
    validate: &[ValidateObject<'_>],
    index: usize,
) -> Vec<Found> {
    let item = &items[index];
    let id = &item.object.id;
    if !(id.group.is_empty() && id.kind == "Service") {
        return Vec::new();
    }
    let selector = string_map(item.object.node.at(&["spec", "selector"]));
    if selector.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<Found> = Vec::new();
    for (target, candidate) in items.iter().enumerate() {
        if !beside(item, candidate) || candidate.object.id.namespace != id.namespace {
            continue;
        }
        let matches = workload::templates(std::slice::from_ref(&validate[target]))
            .iter()
            .any(|template| {
                let labels = string_map(template.metadata.and_then(|m| m.get("labels")));
                selector.iter().all(|(k, v)| labels.get(k) == Some(v))
            });
        if matches {
            found.push(Found {
                from: index,
                to: To::Object(target),
                label: "selects".to_string(),
            });
        }
    }
    if found.is_empty() {
        let pairs: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
        found.push(Found {
            from: index,
            to: To::External(format!("pods {}", pairs.join(","))),
            label: "selects".to_string(),
        });
    }
    found
}

/// A HorizontalPodAutoscaler to the object its `scaleTargetRef` names.
fn scale_target(items: &[Item<'_>], validate: &[ValidateObject<'_>], index: usize) -> Vec<Found> {
    let object = std::slice::from_ref(&validate[index]);
    let Some(hpa) = autoscaler::autoscalers(object).into_iter().next() else {
        return Vec::new();
    };
    let Some(target) = &hpa.target else {
        return Vec::new();
    };
    let to = items
        .iter()
        .enumerate()
        .position(|(i, candidate)| beside(&items[index], candidate) && hpa.scales(&validate[i]))
        .map_or_else(
            || {
                To::External(describe(
                    target.kind,
                    validate[index].id.namespace.as_deref(),
                    target.name,
                ))
            },
            To::Object,
        );
    vec![Found {
        from: index,
        to,
        label: "scales".to_string(),
    }]
}

/// The object of `kind` in Kueue's group named `name`, beside `item` (in `namespace`, or
/// cluster-scoped when `None`).
fn kueue_object(
    items: &[Item<'_>],
    item: &Item<'_>,
    kind: &str,
    namespace: Option<&str>,
    name: &str,
) -> To {
    items
        .iter()
        .position(|candidate| {
            let id = &candidate.object.id;
            beside(item, candidate)
                && id.group == KUEUE_GROUP
                && id.kind == kind
                && id.namespace.as_deref() == namespace
                && id.name == name
        })
        .map_or_else(|| To::External(describe(kind, namespace, name)), To::Object)
}

/// Kueue: a workload to its LocalQueue (`kueue.x-k8s.io/queue-name`), a LocalQueue to its
/// ClusterQueue, a ClusterQueue to the ResourceFlavors of its resource groups.
fn kueue(items: &[Item<'_>], validate: &[ValidateObject<'_>], index: usize) -> Vec<Found> {
    let item = &items[index];
    let id = &item.object.id;
    let node = &item.object.node;
    let edge = |to: To, label: &str| Found {
        from: index,
        to,
        label: label.to_string(),
    };
    let mut found = Vec::new();
    if workload::is_workload(&validate[index])
        && let Some(queue) = workload::queue_label(&validate[index]).and_then(Node::as_str)
    {
        let namespace = id.namespace.as_deref();
        found.push(edge(
            kueue_object(items, item, "LocalQueue", namespace, queue),
            QUEUE_NAME_LABEL,
        ));
    }
    if id.group != KUEUE_GROUP {
        return found;
    }
    match id.kind.as_str() {
        "LocalQueue" => {
            if let Some(queue) = string_at(node, &["spec", "clusterQueue"]) {
                found.push(edge(
                    kueue_object(items, item, "ClusterQueue", None, queue),
                    "spec.clusterQueue",
                ));
            }
        }
        "ClusterQueue" => {
            let flavors: BTreeSet<&str> = node
                .at(&["spec", "resourceGroups"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
                .iter()
                .flat_map(|group| group.items("flavors"))
                .filter_map(|flavor| string_at(flavor, &["name"]))
                .collect();
            for flavor in flavors {
                found.push(edge(
                    kueue_object(items, item, "ResourceFlavor", None, flavor),
                    "flavor",
                ));
            }
        }
        _ => {}
    }
    found
}

/// A sync object to the folder it syncs: RootSync and RepoSync (`spec.git.dir`,
/// `spec.oci.dir`), Argo CD Application (`spec.source.path`, `spec.sources[].path`).
fn sync_target(item: &Item<'_>, index: usize) -> Vec<Found> {
    synced_folders(item.object)
        .into_iter()
        .map(|(folder, label)| Found {
            from: index,
            to: To::Folder(folder),
            label: label.to_string(),
        })
        .collect()
}

/// The folders a sync object (RootSync, RepoSync, Argo CD Application) syncs, as written
/// without `./` and a trailing `/`, each with the field that names it; none for other objects.
#[must_use]
pub fn synced_folders(object: &Object) -> Vec<(String, &'static str)> {
    let id = &object.id;
    let node = &object.node;
    let mut dirs: Vec<(&str, &'static str)> = Vec::new();
    match (id.group.as_str(), id.kind.as_str()) {
        ("configsync.gke.io", "RootSync" | "RepoSync") => {
            for (path, label) in [
                (["spec", "git", "dir"], "spec.git.dir"),
                (["spec", "oci", "dir"], "spec.oci.dir"),
            ] {
                dirs.extend(string_at(node, &path).map(|dir| (dir, label)));
            }
        }
        ("argoproj.io", "Application") => {
            dirs.extend(
                string_at(node, &["spec", "source", "path"]).map(|d| (d, "spec.source.path")),
            );
            for source in node
                .at(&["spec", "sources"])
                .and_then(Node::as_seq)
                .unwrap_or_default()
            {
                dirs.extend(string_at(source, &["path"]).map(|d| (d, "spec.sources.path")));
            }
        }
        _ => {}
    }
    dirs.into_iter()
        .map(|(dir, label)| {
            (
                dir.trim_start_matches("./")
                    .trim_end_matches('/')
                    .to_string(),
                label,
            )
        })
        .collect()
}

/// FNV-1a, 64 bits: a stable id from what a node stands for (no dependency, same on every
/// platform and release, unlike `DefaultHasher`).
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Where a node sorts: plane (the host first, external nodes last), folder, what it stands for,
/// then the text its id is hashed from.
type NodeKey = (u8, String, NodeKind, String);

/// Nodes and edges, sorted, with stable ids.
fn assemble(items: &[Item<'_>], found: Vec<Found>, max_nodes: usize) -> Result<Graph, GraphError> {
    // A folder node sits in the subgraph of the objects it holds; a folder that holds none of
    // the selection is external.
    let folder_home = |dir: &str| -> Option<(Plane, String)> {
        let prefix = format!("{dir}/");
        items
            .iter()
            .find(|item| item.object.path.starts_with(&prefix))
            .map(|item| (item.plane, item.object.folder.clone()))
    };
    // (plane order, folder, kind, sort key) → node; plane order puts the host first.
    let mut nodes: BTreeMap<NodeKey, GraphNode> = BTreeMap::new();
    let plane_order = |plane: Plane| u8::from(plane != Plane::ConfigConnector);
    let mut object_keys = Vec::with_capacity(items.len());
    for item in items {
        let id = &item.object.id;
        let key = format!(
            "object\u{0}{}\u{0}{}\u{0}{}\u{0}{}\u{0}{}",
            item.object.folder,
            id.group,
            id.kind,
            id.namespace.as_deref().unwrap_or_default(),
            id.name
        );
        let node_key = (
            plane_order(item.plane),
            item.object.folder.clone(),
            NodeKind::Object,
            key.clone(),
        );
        nodes.insert(
            node_key.clone(),
            GraphNode {
                id: String::new(),
                kind: NodeKind::Object,
                label: id.to_string(),
                plane: Some(item.plane),
                folder: item.object.folder.clone(),
                object: Some(id.clone()),
                class: None,
            },
        );
        object_keys.push(node_key);
    }
    let mut edges = Vec::with_capacity(found.len());
    for Found { from, to, label } in found {
        let to_key = match to {
            To::Object(target) => object_keys[target].clone(),
            To::Folder(dir) => match folder_home(&dir) {
                Some((plane, folder)) => {
                    let key = (
                        plane_order(plane),
                        folder.clone(),
                        NodeKind::Folder,
                        dir.clone(),
                    );
                    nodes.entry(key.clone()).or_insert(GraphNode {
                        id: String::new(),
                        kind: NodeKind::Folder,
                        label: format!("{dir}/"),
                        plane: Some(plane),
                        folder,
                        object: None,
                        class: None,
                    });
                    key
                }
                None => external(&mut nodes, format!("folder {dir}/")),
            },
            To::External(label) => external(&mut nodes, label),
        };
        edges.push((object_keys[from].clone(), to_key, label));
    }
    if nodes.len() > max_nodes {
        return Err(GraphError::TooLarge {
            nodes: nodes.len(),
            limit: max_nodes,
        });
    }
    let mut ids = BTreeSet::new();
    let mut position = BTreeMap::new();
    let mut graph = Graph::default();
    for (index, (key, mut node)) in nodes.into_iter().enumerate() {
        let mut id = format!("n{:016x}", fnv(&key.3));
        // Two keys with one hash: keep both, the later one suffixed (stable for the same tree).
        while !ids.insert(id.clone()) {
            id.push('_');
        }
        node.id = id;
        position.insert(key, index);
        graph.nodes.push(node);
    }
    graph.edges = edges
        .into_iter()
        .map(|(from, to, label)| Edge {
            from: position[&from],
            to: position[&to],
            label,
        })
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    Ok(graph)
}

/// The key of the external node `label`, added when new.
fn external(nodes: &mut BTreeMap<NodeKey, GraphNode>, label: String) -> NodeKey {
    let key = (
        u8::MAX,
        String::new(),
        NodeKind::External,
        format!("external\u{0}{label}"),
    );
    nodes.entry(key.clone()).or_insert(GraphNode {
        id: String::new(),
        kind: NodeKind::External,
        label,
        plane: None,
        folder: String::new(),
        object: None,
        class: None,
    });
    key
}

/// The title of a plane's subgraph.
fn plane_title(plane: Plane) -> &'static str {
    match plane {
        Plane::ConfigConnector => "Config Connector host",
        Plane::Workload => "workload clusters",
    }
}

/// A folder's subgraph: its name and the indexes of its nodes.
type Folder<'g> = (&'g str, Vec<usize>);

/// Subgraphs in order: plane, then folder, with the indexes of their nodes.
fn groups(graph: &Graph) -> Vec<(Plane, Vec<Folder<'_>>)> {
    let mut out: Vec<(Plane, Vec<Folder<'_>>)> = Vec::new();
    for (index, node) in graph.nodes.iter().enumerate() {
        let Some(plane) = node.plane else { continue };
        if out.last().is_none_or(|(p, _)| *p != plane) {
            out.push((plane, Vec::new()));
        }
        let folders = &mut out.last_mut().expect("pushed above").1;
        if folders.last().is_none_or(|(f, _)| *f != node.folder) {
            folders.push((&node.folder, Vec::new()));
        }
        folders.last_mut().expect("pushed above").1.push(index);
    }
    out
}

/// Label text for Mermaid, inside double quotes: hostile characters escaped first, then every
/// character outside a plain set as an entity (`#quot;` style, by code), so no quote,
/// bracket, pipe or markup can end the label or start syntax.
#[must_use]
pub fn mermaid_text(text: &str) -> String {
    let mut out = String::new();
    for c in sanitize(text, MAX_LABEL).chars() {
        if c.is_ascii_alphanumeric() || " .-_/:,=+@*?!".contains(c) {
            out.push(c);
        } else {
            out.push_str(&format!("#{};", u32::from(c)));
        }
    }
    out
}

/// Label text for DOT, inside double quotes: hostile characters escaped first, then `\` and
/// `"` escaped.
#[must_use]
pub fn dot_text(text: &str) -> String {
    sanitize(text, MAX_LABEL)
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
}

/// How one output language spells each part of a graph; labels come escaped.
struct Syntax {
    /// The opening lines.
    header: &'static str,
    /// The closing lines.
    footer: &'static str,
    /// Escapes a label for the language's double quotes.
    escape: fn(&str) -> String,
    /// Opens a subgraph: indent, id, escaped title.
    open: fn(&str, &str, &str) -> String,
    /// Closes a subgraph at an indent.
    close: fn(&str) -> String,
    /// A node inside a subgraph: id, escaped label, whether it is a folder, its class.
    node: fn(&str, &str, bool, Option<NodeClass>) -> String,
    /// The definitions of the classes, when any node has one.
    classes: fn() -> String,
    /// An external node: id, escaped label.
    external: fn(&str, &str) -> String,
    /// An edge: from, to, escaped label, whether it ends at an external node.
    edge: fn(&str, &str, &str, bool) -> String,
}

const MERMAID: Syntax = Syntax {
    header: "flowchart LR\n    classDef external stroke-dasharray: 5 5\n",
    footer: "",
    escape: mermaid_text,
    open: |indent, id, title| format!("{indent}subgraph {id}[\"{title}\"]\n"),
    close: |indent| format!("{indent}end\n"),
    node: |id, label, folder, class| {
        let class = class
            .map(|c| format!(":::{}", c.name()))
            .unwrap_or_default();
        if folder {
            format!("            {id}([\"{label}\"]){class}\n")
        } else {
            format!("            {id}[\"{label}\"]{class}\n")
        }
    },
    classes: || {
        CLASSES
            .iter()
            .map(|c| {
                let (fill, stroke) = c.colours();
                format!("    classDef {} fill:{fill},stroke:{stroke}\n", c.name())
            })
            .collect()
    },
    external: |id, label| format!("    {id}[\"external: {label}\"]:::external\n"),
    edge: |from, to, label, external| {
        let arrow = if external { "-.->" } else { "-->" };
        format!("    {from} {arrow}|\"{label}\"| {to}\n")
    },
};

const DOT: Syntax = Syntax {
    header: "digraph aiml {\n    rankdir=LR;\n    node [shape=box];\n",
    footer: "}\n",
    escape: dot_text,
    open: |indent, id, title| {
        format!("{indent}subgraph cluster_{id} {{\n{indent}    label=\"{title}\";\n")
    },
    close: |indent| format!("{indent}}}\n"),
    node: |id, label, folder, class| {
        let shape = if folder { ", shape=folder" } else { "" };
        let colour = class
            .map(|c| {
                let (fill, stroke) = c.colours();
                format!(", style=filled, fillcolor=\"{fill}\", color=\"{stroke}\"")
            })
            .unwrap_or_default();
        format!("            {id} [label=\"{label}\"{shape}{colour}];\n")
    },
    classes: String::new,
    external: |id, label| format!("    {id} [label=\"external: {label}\", style=dashed];\n"),
    edge: |from, to, label, external| {
        let style = if external { ", style=dashed" } else { "" };
        format!("    {from} -> {to} [label=\"{label}\"{style}];\n")
    },
};

/// The graph in one output language: planes, folders and their nodes, external nodes, edges.
fn write(graph: &Graph, syntax: &Syntax) -> String {
    let mut out = String::from(syntax.header);
    if graph.nodes.iter().any(|n| n.class.is_some()) {
        out.push_str(&(syntax.classes)());
    }
    for (plane, folders) in groups(graph) {
        let plane_id = plane_id(plane);
        out.push_str(&(syntax.open)("    ", plane_id, plane_title(plane)));
        for (folder, members) in folders {
            let id = format!("{plane_id}_g{:016x}", fnv(folder));
            out.push_str(&(syntax.open)("        ", &id, &(syntax.escape)(folder)));
            for index in members {
                let node = &graph.nodes[index];
                let label = (syntax.escape)(&node.label);
                out.push_str(&(syntax.node)(
                    &node.id,
                    &label,
                    node.kind == NodeKind::Folder,
                    node.class,
                ));
            }
            out.push_str(&(syntax.close)("        "));
        }
        out.push_str(&(syntax.close)("    "));
    }
    for node in graph.nodes.iter().filter(|n| n.kind == NodeKind::External) {
        out.push_str(&(syntax.external)(&node.id, &(syntax.escape)(&node.label)));
    }
    for edge in &graph.edges {
        let to = &graph.nodes[edge.to];
        out.push_str(&(syntax.edge)(
            &graph.nodes[edge.from].id,
            &to.id,
            &(syntax.escape)(&edge.label),
            to.kind == NodeKind::External,
        ));
    }
    out.push_str(syntax.footer);
    out
}

/// The graph as a Mermaid flowchart.
#[must_use]
pub fn mermaid(graph: &Graph) -> String {
    write(graph, &MERMAID)
}

/// The graph as Graphviz DOT.
#[must_use]
pub fn dot(graph: &Graph) -> String {
    write(graph, &DOT)
}

fn plane_id(plane: Plane) -> &'static str {
    match plane {
        Plane::ConfigConnector => "host",
        Plane::Workload => "workload",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A side holding `files` (`rendered/<folder>/…`, one object each).
    fn side(files: &[(&str, &str)]) -> Side {
        let mut side = Side::default();
        for (path, text) in files {
            let folder = path.split('/').nth(1).expect("rendered/<folder>/…");
            for manifest in crate::manifest::split(text).expect("objects") {
                let id = manifest.id.clone();
                side.objects.insert(
                    (
                        folder.to_string(),
                        id.group.clone(),
                        id.kind.clone(),
                        id.namespace.clone(),
                        id.name.clone(),
                    ),
                    Object {
                        folder: folder.to_string(),
                        path: (*path).to_string(),
                        api_version: manifest.api_version,
                        id,
                        text: manifest.text,
                        node: manifest.node,
                    },
                );
            }
        }
        side
    }

    /// `(from label, to label, edge label)` of every edge.
    fn edges(files: &[(&str, &str)]) -> Vec<(String, String, String)> {
        let graph = build(&side(files), None, 100).expect("graph");
        graph
            .edges
            .iter()
            .map(|e| {
                (
                    graph.nodes[e.from].label.clone(),
                    graph.nodes[e.to].label.clone(),
                    e.label.clone(),
                )
            })
            .collect()
    }

    fn edge(from: &str, to: &str, label: &str) -> (String, String, String) {
        (from.to_string(), to.to_string(), label.to_string())
    }

    const CC: &str = "rendered/b/config-connector/p";

    fn cc(kind: &str, group: &str, name: &str, spec: &str) -> String {
        format!(
            "apiVersion: {group}.cnrm.cloud.google.com/v1beta1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: p\nspec:\n{spec}"
        )
    }

    #[test]
    fn config_connector_refs_resolve_by_field_kind_and_external() {
        let cluster = cc("ContainerCluster", "container", "c", "  location: x\n");
        let network = cc("ComputeNetwork", "compute", "net", "  x: 1\n");
        let subnet = cc(
            "ComputeSubnetwork",
            "compute",
            "net",
            "  networkRef: {name: net}\n",
        );
        let pool = cc(
            "ContainerNodePool",
            "container",
            "pool",
            "  clusterRef: {name: c}\n  nodeConfig:\n    serviceAccountRef: {name: gone}\n",
        );
        let member = cc(
            "IAMPolicyMember",
            "iam",
            "m",
            "  resourceRef: {kind: Project, external: projects/p}\n",
        );
        let membership = cc(
            "GKEHubMembership",
            "gkehub",
            "c",
            "  endpoint:\n    gkeCluster:\n      resourceRef: {name: c}\n",
        );
        let files = [
            (CC, cluster.as_str()),
            (CC, network.as_str()),
            (CC, subnet.as_str()),
            (CC, pool.as_str()),
            (CC, member.as_str()),
            (CC, membership.as_str()),
        ];
        assert_eq!(
            edges(&files),
            [
                // The subnetwork's `networkRef` is the network, not the subnetwork itself.
                edge(
                    "ComputeSubnetwork/p/net",
                    "ComputeNetwork/p/net",
                    "spec.networkRef"
                ),
                edge(
                    "ContainerNodePool/p/pool",
                    "ContainerCluster/p/c",
                    "spec.clusterRef"
                ),
                edge(
                    "ContainerNodePool/p/pool",
                    "ServiceAccount/p/gone",
                    "spec.nodeConfig.serviceAccountRef"
                ),
                edge(
                    "GKEHubMembership/p/c",
                    "ContainerCluster/p/c",
                    "spec.endpoint.gkeCluster.resourceRef"
                ),
                edge(
                    "IAMPolicyMember/p/m",
                    "Project projects/p",
                    "spec.resourceRef"
                ),
            ]
        );
        let graph = build(&side(&files), None, 100).unwrap();
        let external: Vec<&str> = graph
            .nodes
            .iter()
            .filter(|n| n.kind == NodeKind::External)
            .map(|n| n.label.as_str())
            .collect();
        assert_eq!(external, ["Project projects/p", "ServiceAccount/p/gone"]);
    }

    #[test]
    fn depends_on_resolves_identities_and_keeps_the_rest_external() {
        let topic = cc("PubSubTopic", "pubsub", "t", "  x: 1\n");
        let subscription = "apiVersion: pubsub.cnrm.cloud.google.com/v1beta1\nkind: PubSubSubscription\nmetadata:\n  name: s\n  namespace: p\n  annotations:\n    config.kubernetes.io/depends-on: pubsub.cnrm.cloud.google.com/namespaces/p/PubSubTopic/t, bigquery.cnrm.cloud.google.com/namespaces/p/BigQueryTable/gone,not-an-id\nspec: {}\n";
        assert_eq!(
            edges(&[(CC, &topic), (CC, subscription)]),
            [
                edge("PubSubSubscription/p/s", "PubSubTopic/p/t", "depends-on"),
                edge(
                    "PubSubSubscription/p/s",
                    "bigquery.cnrm.cloud.google.com/namespaces/p/BigQueryTable/gone",
                    "depends-on"
                ),
                edge("PubSubSubscription/p/s", "not-an-id", "depends-on"),
            ]
        );
        assert_eq!(
            parse_depends_on("apps/Deployment/d"),
            Some(ObjectRef {
                group: "apps".into(),
                kind: "Deployment".into(),
                namespace: None,
                name: "d".into()
            })
        );
    }

    const WL: &str = "rendered/b/workload/ns";

    fn deployment(name: &str, app: &str, extra_labels: &str) -> String {
        format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {name}\n  namespace: ns\n{extra_labels}spec:\n  selector: {{matchLabels: {{app: {app}}}}}\n  template:\n    metadata:\n      labels: {{app: {app}, tier: web}}\n    spec:\n      containers: [{{name: c, image: i}}]\n"
        )
    }

    #[test]
    fn services_select_the_workloads_their_selector_matches() {
        let web = deployment("web", "web", "");
        let other = deployment("other", "other", "");
        let service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\nspec:\n  selector: {app: web, tier: web}\n";
        let lonely = "apiVersion: v1\nkind: Service\nmetadata: {name: lonely, namespace: ns}\nspec:\n  selector: {app: nobody}\n";
        // The same labels in another folder run on another cluster: not selected.
        let elsewhere = deployment("web2", "web", "");
        assert_eq!(
            edges(&[
                (WL, &web),
                (WL, &other),
                (WL, service),
                (WL, lonely),
                ("rendered/c/workload/ns", &elsewhere),
            ]),
            [
                edge("Service/ns/lonely", "pods app=nobody", "selects"),
                edge("Service/ns/web", "Deployment/ns/web", "selects"),
            ]
        );
    }

    #[test]
    fn autoscalers_point_at_their_target() {
        let web = deployment("web", "web", "");
        let hpa = |name: &str, target: &str| {
            format!(
                "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {{name: {name}, namespace: ns}}\nspec:\n  scaleTargetRef: {{apiVersion: apps/v1, kind: Deployment, name: {target}}}\n  maxReplicas: 3\n"
            )
        };
        assert_eq!(
            edges(&[(WL, &web), (WL, &hpa("h", "web")), (WL, &hpa("g", "gone"))]),
            [
                edge(
                    "HorizontalPodAutoscaler/ns/g",
                    "Deployment/ns/gone",
                    "scales"
                ),
                edge(
                    "HorizontalPodAutoscaler/ns/h",
                    "Deployment/ns/web",
                    "scales"
                ),
            ]
        );
    }

    #[test]
    fn kueue_chains_workload_queue_cluster_queue_and_flavors() {
        let job = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: j\n  namespace: ns\n  labels: {kueue.x-k8s.io/queue-name: q}\nspec:\n  template:\n    spec:\n      containers: [{name: c, image: i}]\n";
        let queue = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: q, namespace: ns}\nspec: {clusterQueue: cq}\n";
        let cluster_queue = "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: cq}\nspec:\n  resourceGroups:\n  - coveredResources: [google.com/tpu]\n    flavors:\n    - name: f\n      resources: [{name: google.com/tpu, nominalQuota: 8}]\n    - name: missing\n      resources: [{name: google.com/tpu, nominalQuota: 8}]\n";
        let flavor =
            "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: f}\n";
        let cluster = "rendered/b/workload/_cluster";
        assert_eq!(
            edges(&[
                (WL, job),
                (WL, queue),
                (cluster, cluster_queue),
                (cluster, flavor)
            ]),
            [
                edge("Job/ns/j", "LocalQueue/ns/q", QUEUE_NAME_LABEL),
                edge("ClusterQueue/cq", "ResourceFlavor/f", "flavor"),
                edge("ClusterQueue/cq", "ResourceFlavor/missing", "flavor"),
                edge("LocalQueue/ns/q", "ClusterQueue/cq", "spec.clusterQueue"),
            ]
        );
    }

    #[test]
    fn sync_objects_point_at_the_folders_they_sync() {
        let root = |name: &str, dir: &str| {
            format!(
                "apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nmetadata: {{name: {name}, namespace: config-management-system}}\nspec:\n  git: {{repo: r, dir: {dir}}}\n"
            )
        };
        let app = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata: {name: a, namespace: argocd}\nspec:\n  source: {repoURL: r, path: rendered/b/workload/}\n";
        let web = deployment("web", "web", "");
        let host = "rendered/_sync/config-connector-host/config-management-system";
        let files = [
            (WL, web.as_str()),
            (host, &root("cc-b", "rendered/b/config-connector")),
            (
                "rendered/_sync/clusters/x",
                &root("b", "rendered/b/workload"),
            ),
            ("rendered/_sync/clusters/y", app),
        ];
        assert_eq!(
            edges(&files),
            [
                edge(
                    "RootSync/config-management-system/cc-b",
                    "folder rendered/b/config-connector/",
                    "spec.git.dir"
                ),
                edge(
                    "Application/argocd/a",
                    "rendered/b/workload/",
                    "spec.source.path"
                ),
                edge(
                    "RootSync/config-management-system/b",
                    "rendered/b/workload/",
                    "spec.git.dir"
                ),
            ]
        );
        let graph = build(&side(&files), None, 100).unwrap();
        let folder = graph
            .nodes
            .iter()
            .find(|n| n.kind == NodeKind::Folder)
            .unwrap();
        assert_eq!(
            (folder.plane, folder.folder.as_str()),
            (Some(Plane::Workload), "b")
        );
        let sync = graph
            .nodes
            .iter()
            .find(|n| n.label.ends_with("/cc-b"))
            .unwrap();
        assert_eq!(sync.plane, Some(Plane::ConfigConnector));
    }

    #[test]
    fn a_name_selects_one_folder_and_an_unknown_one_is_an_error() {
        let web = deployment("web", "web", "");
        let files = [
            (WL, web.as_str()),
            ("rendered/other/workload/ns", web.as_str()),
        ];
        let graph = build(&side(&files), Some("b"), 100).unwrap();
        assert_eq!(graph.nodes.len(), 1);
        let error = build(&side(&files), Some("bb"), 100)
            .unwrap_err()
            .to_string();
        assert!(error.contains("no blueprint named `bb`"), "{error}");
        assert!(error.contains("did you mean `b`?"), "{error}");
        assert!(build(&side(&files), Some(SYNC_FOLDER), 100).is_err());
        let error = build(&side(&files), None, 1).unwrap_err().to_string();
        assert!(
            error.contains("2 nodes, more than the limit of 1"),
            "{error}"
        );
    }

    #[test]
    fn labels_cannot_break_out_of_their_quotes() {
        let hostile = "a\"]\n--> x[\"b\u{1b}[31m|c;#<d>\\";
        let mermaid = mermaid_text(hostile);
        assert!(
            mermaid
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || " .-_/:,=+@*?!#;".contains(c)),
            "{mermaid}"
        );
        assert!(mermaid.contains("#34;#93;#92;u#123;a#125;"), "{mermaid}");
        let dot = dot_text(hostile);
        assert!(!dot.contains('\n') && !dot.contains('\u{1b}'), "{dot}");
        assert_eq!(dot_text("a\"b\\"), "a\\\"b\\\\");
        assert!(
            dot.replace("\\\\", "")
                .replace("\\\"", "")
                .find('"')
                .is_none(),
            "{dot}"
        );
    }

    #[test]
    fn ids_are_stable_and_output_is_sorted() {
        let web = deployment("web", "web", "");
        let service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: ns}\nspec:\n  selector: {app: web}\n";
        let one = build(&side(&[(WL, &web), (WL, service)]), None, 100).unwrap();
        let two = build(&side(&[(WL, service), (WL, &web)]), None, 100).unwrap();
        assert_eq!(mermaid(&one), mermaid(&two));
        assert_eq!(
            one.nodes[0].id,
            format!(
                "n{:016x}",
                fnv("object\u{0}b\u{0}\u{0}Service\u{0}ns\u{0}web")
            )
        );
        let text = dot(&one);
        assert!(
            text.starts_with("digraph aiml {\n") && text.ends_with("}\n"),
            "{text}"
        );
    }
}

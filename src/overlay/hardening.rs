//! Hardened pods by default: one pass over every pod template a workload target renders, for
//! built-in and repository kinds alike, that fills in the restrictive settings a template left
//! out and never changes one it wrote.
//!
//! - the pod: `securityContext.seccompProfile: {type: RuntimeDefault}`;
//! - every container and init container: `imagePullPolicy: Always` when its image is named by
//!   a tag alone (see [`pull_by_tag_always`]); `allowPrivilegeEscalation: false` and
//!   `capabilities.drop: [ALL]`, except a container that says `privileged: true` (the API
//!   server refuses `allowPrivilegeEscalation: false` beside it, and dropping capabilities of a
//!   privileged container means nothing): the template has said what it needs;
//! - `automountServiceAccountToken: false`, unless the pod's ServiceAccount is a subject of a
//!   RoleBinding or ClusterRoleBinding in the same output (it calls the Kubernetes API), or
//!   Istio injects the pod (the injected proxy's settings come from Istio's template). GKE
//!   Workload Identity needs no token mount: the pod's Google credentials come from the GKE
//!   metadata server, which identifies the pod by its address, not by a mounted token
//!   (<https://cloud.google.com/kubernetes-engine/docs/concepts/workload-identity#metadata_server>).
//!
//! Pod templates are found where the workload API puts them: `spec.template` (Deployment,
//! StatefulSet, DaemonSet, ReplicaSet, Job), `spec.jobTemplate.spec.template` (CronJob),
//! `spec.replicatedJobs[].template.spec.template` (JobSet), the leader and worker templates of
//! a LeaderWorkerSet, and `spec` of a bare Pod.
//!
//! Like [`super::runs`], the pass edits the rendered text in place, so the templates' comments
//! and layout stay: a missing key is written as a new first entry of its mapping, at the
//! mapping's indentation (above the comment lines that head that entry, so they keep
//! describing the key they were written for).

use std::collections::BTreeSet;

use serde_json::{Value as Json, json};

use crate::yaml::{Node, Value};

use super::TemplateError;

/// `(apiVersion group, kind)` → the paths from the object to its pod templates' `spec`s
/// (`*` steps into every item of a sequence).
const POD_SPECS: &[(&str, &str, &[&str])] = &[
    ("", "Pod", &["spec"]),
    ("apps", "Deployment", &["spec", "template", "spec"]),
    ("apps", "StatefulSet", &["spec", "template", "spec"]),
    ("apps", "DaemonSet", &["spec", "template", "spec"]),
    ("apps", "ReplicaSet", &["spec", "template", "spec"]),
    ("batch", "Job", &["spec", "template", "spec"]),
    (
        "batch",
        "CronJob",
        &["spec", "jobTemplate", "spec", "template", "spec"],
    ),
    (
        "jobset.x-k8s.io",
        "JobSet",
        &[
            "spec",
            "replicatedJobs",
            "*",
            "template",
            "spec",
            "template",
            "spec",
        ],
    ),
    (
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        &["spec", "leaderWorkerTemplate", "leaderTemplate", "spec"],
    ),
    (
        "leaderworkerset.x-k8s.io",
        "LeaderWorkerSet",
        &["spec", "leaderWorkerTemplate", "workerTemplate", "spec"],
    ),
];

/// One insertion into the text: at `offset`, `text`.
struct Edit {
    offset: usize,
    text: String,
    /// Into an empty flow mapping (`{}`): edits at one such offset are joined with `, `.
    into_empty_flow: bool,
}

/// `resources` (a YAML stream a workload template rendered) with every pod template hardened
/// as the module says. Text without pods comes back unchanged.
pub fn harden_pods(template: &str, resources: String) -> Result<String, TemplateError> {
    let documents = crate::yaml::parse_documents(&resources).map_err(|e| TemplateError {
        template: template.to_string(),
        message: format!("the rendered objects do not parse: {e}"),
    })?;
    let bound = bound_service_accounts(&documents);
    let mut edits = Vec::new();
    for document in &documents {
        let namespace = document
            .at(&["metadata", "namespace"])
            .and_then(Node::as_str)
            .unwrap_or("default");
        for (pod, spec) in pod_templates(document) {
            harden_pod(&resources, pod, spec, namespace, &bound, &mut edits);
        }
    }
    // Back to front, so every offset still points where it was found; two edits at one offset
    // keep the order they were made in.
    let mut text = resources;
    let mut ordered: Vec<(usize, &Edit)> = edits.iter().enumerate().collect();
    ordered.sort_by_key(|(index, edit)| std::cmp::Reverse((edit.offset, *index)));
    let mut previous: Option<&Edit> = None;
    for (_, edit) in ordered {
        let joined = previous.is_some_and(|p| p.offset == edit.offset && p.into_empty_flow);
        if joined && edit.into_empty_flow {
            text.insert_str(edit.offset, &format!("{}, ", edit.text));
        } else {
            text.insert_str(edit.offset, &edit.text);
        }
        previous = Some(edit);
    }
    Ok(text)
}

/// The group of an object's `apiVersion` (`""` for the core group).
fn group(object: &Node) -> &str {
    object
        .get("apiVersion")
        .and_then(Node::as_str)
        .and_then(|v| v.rsplit_once('/'))
        .map_or("", |(group, _)| group)
}

/// Every pod template of `object`: the template (the node holding `metadata` and `spec`, or
/// the object itself for a Pod) and its `spec`.
pub(super) fn pod_templates(object: &Node) -> Vec<(&Node, &Node)> {
    let Some(kind) = object.get("kind").and_then(Node::as_str) else {
        return Vec::new();
    };
    let group = group(object);
    let mut found = Vec::new();
    for (g, k, path) in POD_SPECS {
        if *g == group && *k == kind {
            walk(object, object, path, &mut found);
        }
    }
    found
}

/// Follows `path` from `node`; `parent` is the node that holds the current one.
fn walk<'n>(
    node: &'n Node,
    parent: &'n Node,
    path: &[&str],
    found: &mut Vec<(&'n Node, &'n Node)>,
) {
    match path.split_first() {
        None => {
            if matches!(node.value, Value::Map(_)) {
                found.push((parent, node));
            }
        }
        Some((&"*", rest)) => {
            for item in node.as_seq().unwrap_or_default() {
                walk(item, node, rest, found);
            }
        }
        Some((step, rest)) => {
            if let Some(next) = node.get(step) {
                walk(next, node, rest, found);
            }
        }
    }
}

/// `(namespace, name)` of every ServiceAccount that a RoleBinding or ClusterRoleBinding in
/// `documents` binds: these pods call the Kubernetes API and keep their token.
fn bound_service_accounts(documents: &[Node]) -> BTreeSet<(String, String)> {
    let mut bound = BTreeSet::new();
    for document in documents {
        let kind = document.get("kind").and_then(Node::as_str);
        if group(document) != "rbac.authorization.k8s.io"
            || !matches!(kind, Some("RoleBinding" | "ClusterRoleBinding"))
        {
            continue;
        }
        let own = document
            .at(&["metadata", "namespace"])
            .and_then(Node::as_str)
            .unwrap_or("default");
        for subject in document.items("subjects") {
            if subject.get("kind").and_then(Node::as_str) != Some("ServiceAccount") {
                continue;
            }
            let Some(name) = subject.get("name").and_then(Node::as_str) else {
                continue;
            };
            let namespace = subject
                .get("namespace")
                .and_then(Node::as_str)
                .unwrap_or(own);
            bound.insert((namespace.to_string(), name.to_string()));
        }
    }
    bound
}

/// Whether Istio injects `pod` (a pod template or Pod): its proxy is Istio's to configure.
pub(super) fn istio_injected(pod: &Node) -> bool {
    let metadata = pod.get("metadata");
    let label = metadata
        .and_then(|m| m.at(&["labels", "sidecar.istio.io/inject"]))
        .and_then(Node::as_str);
    let annotation = metadata
        .and_then(|m| m.at(&["annotations", "sidecar.istio.io/inject"]))
        .and_then(Node::as_str);
    let templates = metadata.and_then(|m| m.at(&["annotations", "inject.istio.io/templates"]));
    label == Some("true") || annotation == Some("true") || templates.is_some()
}

/// The edits that harden one pod.
fn harden_pod(
    text: &str,
    pod: &Node,
    spec: &Node,
    namespace: &str,
    bound: &BTreeSet<(String, String)>,
    edits: &mut Vec<Edit>,
) {
    match spec.get("securityContext") {
        None => insert(
            text,
            spec,
            "securityContext",
            &json!({"seccompProfile": {"type": "RuntimeDefault"}}),
            edits,
        ),
        Some(context) if context.get("seccompProfile").is_none() => insert(
            text,
            context,
            "seccompProfile",
            &json!({"type": "RuntimeDefault"}),
            edits,
        ),
        Some(_) => {}
    }
    let account = spec
        .get("serviceAccountName")
        .and_then(Node::as_str)
        .unwrap_or("default");
    if spec.get("automountServiceAccountToken").is_none()
        && !istio_injected(pod)
        && !bound.contains(&(namespace.to_string(), account.to_string()))
    {
        insert(
            text,
            spec,
            "automountServiceAccountToken",
            &json!(false),
            edits,
        );
    }
    for container in spec
        .items("initContainers")
        .iter()
        .chain(spec.items("containers"))
    {
        harden_container(text, container, edits);
    }
}

/// The edits that lock one container down.
fn harden_container(text: &str, container: &Node, edits: &mut Vec<Edit>) {
    pull_by_tag_always(text, container, edits);
    let Some(context) = container.get("securityContext") else {
        insert(
            text,
            container,
            "securityContext",
            &json!({"allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}),
            edits,
        );
        return;
    };
    if !matches!(context.value, Value::Map(_))
        || context
            .get("privileged")
            .is_some_and(|p| p.value == Value::Bool(true))
    {
        return;
    }
    if context.get("allowPrivilegeEscalation").is_none() {
        insert(
            text,
            context,
            "allowPrivilegeEscalation",
            &json!(false),
            edits,
        );
    }
    match context.get("capabilities") {
        None => insert(
            text,
            context,
            "capabilities",
            &json!({"drop": ["ALL"]}),
            edits,
        ),
        Some(capabilities)
            if matches!(capabilities.value, Value::Map(_))
                && capabilities.get("drop").is_none() =>
        {
            insert(text, capabilities, "drop", &json!(["ALL"]), edits);
        }
        Some(_) => {}
    }
}

/// `imagePullPolicy: Always` for an image named by tag alone, unless the template chose: a
/// tag can move, and `IfNotPresent` would then run whichever image each node cached first,
/// and start a private image on a node that pulled it for another pod without asking the
/// registry whether this pod may have it. With `Always` the kubelet checks the tag's digest at
/// every start (cached layers are reused). An image pinned by digest cannot move and keeps
/// the default. Istio's `auto` placeholder is the injector's to set.
fn pull_by_tag_always(text: &str, container: &Node, edits: &mut Vec<Edit>) {
    let Some(image) = container.get("image").and_then(Node::as_str) else {
        return;
    };
    if container.get("imagePullPolicy").is_none() && !image.contains('@') && image != "auto" {
        insert(text, container, "imagePullPolicy", &json!("Always"), edits);
    }
}

/// Adds `key: value` as the first entry of the mapping `map` (block or flow). A mapping
/// written some other way (a null, an alias) is left alone.
fn insert(text: &str, map: &Node, key: &str, value: &Json, edits: &mut Vec<Edit>) {
    let Value::Map(entries) = &map.value else {
        return;
    };
    let at_map = &text[map.span.offset.min(text.len())..];
    if at_map.starts_with('{') {
        let separator = if entries.is_empty() { "" } else { ", " };
        edits.push(Edit {
            offset: map.span.offset + 1,
            text: format!("{key}: {value}{separator}"),
            into_empty_flow: entries.is_empty(),
        });
        return;
    }
    let Some((first, _)) = entries.first() else {
        return;
    };
    let offset = first.span.offset;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let lead = &text[line_start..offset];
    let width = usize::try_from(first.span.column.saturating_sub(1)).unwrap_or(0);
    let indent = " ".repeat(width);
    let entry = format!("{key}:{}", block(value, width));
    if lead.chars().all(|c| c == ' ') {
        // The key starts its line: go above the comment lines that head it.
        let mut start = line_start;
        while start > 0 {
            let previous = text[..start - 1].rfind('\n').map_or(0, |i| i + 1);
            let line = &text[previous..start - 1];
            if line.starts_with(&indent) && line.trim_start().starts_with('#') {
                start = previous;
            } else {
                break;
            }
        }
        edits.push(Edit {
            offset: start,
            text: format!("{indent}{entry}\n"),
            into_empty_flow: false,
        });
    } else {
        // After `- ` of a sequence item: the new entry takes the item's first line.
        edits.push(Edit {
            offset,
            text: format!("{entry}\n{indent}"),
            into_empty_flow: false,
        });
    }
}

/// `value` as the text after `key:` of a block mapping entry at column `width` (0-based):
/// scalars and sequences of scalars inline (as JSON, which is YAML), mappings as indented
/// lines.
fn block(value: &Json, width: usize) -> String {
    match value {
        Json::Object(entries) => {
            let indent = " ".repeat(width + 2);
            entries
                .iter()
                .map(|(key, value)| format!("\n{indent}{key}:{}", block(value, width + 2)))
                .collect()
        }
        other => format!(" {other}"),
    }
}

#[cfg(test)]
mod tests;

//! `kubectl aiml diff --live`: every rendered object through a server-side apply dry run
//! (`dryRun=All`, field manager `kubectl-aiml`, conflicts forced: the sync engine owns the
//! fields today) on the cluster it targets, compared with what the cluster holds now.
//!
//! The comparison is the one `diff` makes between two revisions ([`crate::gitops::diff`]):
//! the base side is the live objects, the new side what the server says they would become (its
//! defaults filled in on both sides, so only real changes show), so the impact — destroyed,
//! recreated, accelerators, cost — reads the same. What the server refuses (schema, CEL rules,
//! immutable fields, admission) is an impact line of its own. Objects that carry the tool's
//! labels for a blueprint asked about but are no longer rendered show as removed: the sync
//! engine prunes them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use futures::StreamExt;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::Value;

use super::clusters::{self, AskError, Connection, Options, Source};
use super::fetch::{self, KindListing, Query};
use super::targets::{self, ClusterId};
use crate::diagnostic::ObjectRef;
use crate::gitops::diff::{self, Diff, Object, Side};
use crate::gitops::impact::ServerRefusal;
use crate::settings::Settings;

/// The field manager of the dry runs.
pub const FIELD_MANAGER: &str = "kubectl-aiml";
/// Dry runs in flight on one cluster.
const CONCURRENT_APPLIES: usize = 16;
/// The label naming an object's blueprint.
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
/// Longest server message kept.
const MAX_MESSAGE: usize = 600;

/// The live comparison, and the clusters that could not be asked.
#[derive(Debug)]
pub struct LiveDiff {
    /// Live objects → what a sync would make of them.
    pub diff: Diff,
    /// Clusters that could not be asked, with the blueprints they hold.
    pub errors: Vec<(Vec<String>, AskError)>,
    /// Objects the server could not check because their namespace does not exist yet and the
    /// same apply creates it (a namespaced dry run needs its namespace): shown as added.
    pub unchecked: Vec<String>,
}

/// One rendered object, where it goes.
struct Planned<'s> {
    object: &'s Object,
    blueprint: String,
}

/// Compares the blueprints `names` (all when empty) with the clusters they target.
pub async fn compare(
    side: &Side,
    settings: &Settings,
    names: &[String],
    options: &Options,
    source: &Source,
    max_objects: usize,
) -> LiveDiff {
    let all = targets::targets(side, settings, names);
    let mut by_cluster: BTreeMap<ClusterId, Vec<Planned<'_>>> = BTreeMap::new();
    let mut errors: Vec<(Vec<String>, AskError)> = Vec::new();
    for target in &all {
        let Some(cluster) = &target.cluster else {
            errors.push((
                vec![target.blueprint.clone()],
                AskError::NoContext {
                    cluster: format!("workload cluster of `{}`", target.blueprint),
                    context: String::new(),
                    fix: "no sync object or ContainerCluster in `rendered/` names it: pass `--context`".into(),
                },
            ));
            continue;
        };
        let planned = by_cluster.entry(cluster.clone()).or_default();
        planned.extend(target.objects.iter().map(|object| Planned {
            object,
            blueprint: target.blueprint.clone(),
        }));
        if let Some(sync) = &target.sync
            && let Some(object) = side.get(crate::graph::SYNC_FOLDER, &sync.id)
        {
            by_cluster
                .entry(sync.cluster.clone())
                .or_default()
                .push(Planned {
                    object,
                    blueprint: target.blueprint.clone(),
                });
        }
    }
    // Contexts, then one connection per distinct server and user.
    let mut per_context: BTreeMap<String, Vec<Planned<'_>>> = BTreeMap::new();
    for (cluster, planned) in by_cluster {
        match clusters::context_for(&cluster, settings, options, source) {
            Ok(context) => per_context.entry(context).or_default().extend(planned),
            Err(error) => errors.push((blueprints_of(&planned), error)),
        }
    }
    let contexts: BTreeSet<String> = per_context.keys().cloned().collect();
    let connections = clusters::connect(&contexts, source, options).await;
    let mut per_connection: BTreeMap<usize, (Arc<Connection>, Vec<Planned<'_>>)> = BTreeMap::new();
    for (context, planned) in per_context {
        match &connections[&context] {
            Ok(connection) => per_connection
                .entry(Arc::as_ptr(connection) as usize)
                .or_insert_with(|| (connection.clone(), Vec::new()))
                .1
                .extend(planned),
            Err(error) => errors.push((blueprints_of(&planned), error.clone())),
        }
    }
    let selected: BTreeSet<String> = all.iter().map(|t| t.blueprint.clone()).collect();
    let results: Vec<_> =
        futures::stream::iter(per_connection.into_values().map(|(connection, planned)| {
            let selected = &selected;
            async move {
                let outcome = tokio::time::timeout(
                    connection.timeout,
                    compare_cluster(&connection, &planned, selected, max_objects),
                )
                .await
                .unwrap_or_else(|_| {
                    Err(AskError::Timeout {
                        context: connection.context.clone(),
                        server: connection.server.clone(),
                        seconds: connection.timeout.as_secs(),
                    })
                });
                (blueprints_of(&planned), outcome)
            }
        }))
        .buffer_unordered(8)
        .collect()
        .await;
    let mut live = Side::default();
    let mut would_be = Side::default();
    let mut refusals = Vec::new();
    let mut unchecked = Vec::new();
    for (blueprints, outcome) in results {
        match outcome {
            Ok(cluster) => {
                for (folder, path, text) in cluster.live {
                    live.insert_text(&folder, path, &text);
                }
                for (folder, path, text) in cluster.would_be {
                    would_be.insert_text(&folder, path, &text);
                }
                refusals.extend(cluster.refusals);
                unchecked.extend(cluster.unchecked);
            }
            Err(error) => errors.push((blueprints, error)),
        }
    }
    let mut diff = diff::diff(&live, &would_be, "the clusters", "rendered/ applied");
    refusals.sort_by(|a: &ServerRefusal, b| {
        (&a.blueprint, a.object.to_string()).cmp(&(&b.blueprint, b.object.to_string()))
    });
    diff.impact.server_refused = refusals;
    errors.sort_by_key(|(blueprints, _)| blueprints.clone());
    unchecked.sort();
    LiveDiff {
        diff,
        errors,
        unchecked,
    }
}

fn blueprints_of(planned: &[Planned<'_>]) -> Vec<String> {
    let names: BTreeSet<String> = planned.iter().map(|p| p.blueprint.clone()).collect();
    names.into_iter().collect()
}

/// One cluster's two sides, as `(folder, path, JSON text)`, and its refusals.
#[derive(Default)]
struct ClusterComparison {
    live: Vec<(String, String, String)>,
    would_be: Vec<(String, String, String)>,
    refusals: Vec<ServerRefusal>,
    unchecked: Vec<String>,
}

async fn compare_cluster(
    connection: &Connection,
    planned: &[Planned<'_>],
    selected: &BTreeSet<String>,
    max_objects: usize,
) -> Result<ClusterComparison, AskError> {
    let mut query = Query::new(max_objects);
    for item in planned {
        query.ask_for(item.object);
    }
    let listed = fetch::fetch(connection, &query).await?;
    let groups: BTreeSet<&str> = query.kinds.keys().map(|(g, _, _)| g.as_str()).collect();
    let groups: Vec<&str> = groups.into_iter().collect();
    let discovery = fetch::discover(connection, &groups).await?;
    let mut comparison = ClusterComparison::default();
    let rendered_keys: BTreeSet<fetch::Key> = planned
        .iter()
        .map(|item| fetch::key_of_id(&item.object.id))
        .collect();
    // Namespaces this apply creates: objects in them cannot be dry-run before they exist.
    let new_namespaces: BTreeSet<&str> = planned
        .iter()
        .map(|item| &item.object.id)
        .filter(|id| id.group.is_empty() && id.kind == "Namespace")
        .filter(|id| !listed.objects.contains_key(&fetch::key_of_id(id)))
        .map(|id| id.name.as_str())
        .collect();
    let dry_runs = futures::stream::iter(planned.iter().map(|item| {
        let discovery = &discovery;
        let listed = &listed;
        async move { (item, dry_run(connection, discovery, listed, item).await) }
    }))
    .buffer_unordered(CONCURRENT_APPLIES)
    .collect::<Vec<_>>()
    .await;
    for (item, result) in dry_runs {
        let id = &item.object.id;
        let key = fetch::key_of_id(id);
        let live = listed.objects.get(&key);
        let (folder, path) = (item.object.folder.clone(), item.object.path.clone());
        match result? {
            Ok(mut result) => {
                let mut live = live.cloned();
                redact_secret(id, live.as_mut(), &mut result);
                if let Some(live) = &live {
                    comparison
                        .live
                        .push((folder.clone(), path.clone(), normalized(live)));
                }
                comparison
                    .would_be
                    .push((folder, path, normalized(&result)));
            }
            Err((reason, _))
                if reason == "NotFound"
                    && id
                        .namespace
                        .as_deref()
                        .is_some_and(|n| new_namespaces.contains(n)) =>
            {
                comparison
                    .unchecked
                    .push(format!("{id} ({})", connection.context));
                comparison.would_be.push((
                    folder,
                    path,
                    serde_json::to_string_pretty(&crate::yaml::to_json(&item.object.node))
                        .unwrap_or_default(),
                ));
            }
            Err((reason, message)) => {
                // No server result to compare: the rendered object against the fields of the
                // live one it sets, so the change shows without the server's defaults.
                let mut rendered = crate::yaml::to_json(&item.object.node);
                let mut live = live.cloned();
                redact_secret(id, live.as_mut(), &mut rendered);
                if let Some(live) = &live {
                    let projected = project(
                        &serde_json::from_str(&normalized(live)).unwrap_or(Value::Null),
                        &rendered,
                    );
                    comparison.live.push((
                        folder.clone(),
                        path.clone(),
                        serde_json::to_string_pretty(&projected).unwrap_or_default(),
                    ));
                }
                comparison.would_be.push((
                    folder,
                    path,
                    serde_json::to_string_pretty(&rendered).unwrap_or_default(),
                ));
                comparison.refusals.push(ServerRefusal {
                    blueprint: item.blueprint.clone(),
                    object: item.object.id.clone(),
                    context: connection.context.clone(),
                    reason,
                    message,
                });
            }
        }
    }
    // Ours on the cluster but no longer rendered: the sync engine prunes them.
    let mut extras: Vec<(&fetch::Key, &Value)> = listed
        .objects
        .iter()
        .filter(|(key, _)| !rendered_keys.contains(*key))
        .collect();
    extras.sort_by(|a, b| a.0.cmp(b.0));
    for (key, object) in extras {
        let Some(blueprint) = object
            .pointer("/metadata/labels")
            .and_then(|labels| labels.get(INSTANCE_LABEL))
            .and_then(Value::as_str)
            .filter(|b| selected.contains(*b))
        else {
            continue;
        };
        let (group, kind, namespace, name) = key;
        let path = format!(
            "{}: {kind}{}/{}{name}",
            connection.context,
            if group.is_empty() {
                String::new()
            } else {
                format!(".{group}")
            },
            namespace
                .as_ref()
                .map(|n| format!("{n}/"))
                .unwrap_or_default()
        );
        let mut object = object.clone();
        if group.is_empty() && kind == "Secret" {
            redact_secret_values(&mut object, None);
        }
        comparison
            .live
            .push((blueprint.to_string(), path, normalized(&object)));
    }
    Ok(comparison)
}

/// The server-side apply dry run of one object: `Ok(Ok(result))`, `Ok(Err((reason,
/// message)))` when the server refuses it, `Err` when the cluster cannot be asked (RBAC
/// forbids the patch, the connection fails).
async fn dry_run(
    connection: &Connection,
    discovery: &kube::Discovery,
    listed: &fetch::Listed,
    item: &Planned<'_>,
) -> Result<Result<Value, (String, String)>, AskError> {
    let id = &item.object.id;
    let (group, version) = fetch::split_api_version(&item.object.api_version);
    if listed.kinds.get(&(group.clone(), id.kind.clone())) == Some(&KindListing::NotServed) {
        return Ok(Err((
            "KindNotServed".into(),
            format!(
                "the cluster does not serve {} ({}): its CustomResourceDefinition is not installed",
                id.kind, item.object.api_version
            ),
        )));
    }
    let Some((resource, _)) = fetch::resolve(discovery, &group, &version, &id.kind) else {
        return Ok(Err((
            "KindNotServed".into(),
            format!("the cluster does not serve {}", item.object.api_version),
        )));
    };
    if !fetch::is_path_safe(&id.name) || !id.namespace.as_deref().is_none_or(fetch::is_path_safe) {
        return Ok(Err((
            "Invalid".into(),
            "the name or namespace is not one the API server accepts; not sent".into(),
        )));
    }
    let api: Api<DynamicObject> = match &id.namespace {
        Some(namespace) => Api::namespaced_with(connection.client.clone(), namespace, &resource),
        None => Api::all_with(connection.client.clone(), &resource),
    };
    let body = crate::yaml::to_json(&item.object.node);
    let params = PatchParams::apply(FIELD_MANAGER).dry_run().force();
    match api.patch(&id.name, &params, &Patch::Apply(&body)).await {
        Ok(object) => Ok(Ok(serde_json::to_value(&object).unwrap_or(Value::Null))),
        Err(kube::Error::Api(status)) if is_refusal(&status) => Ok(Err((
            if status.reason.is_empty() {
                status.code.to_string()
            } else {
                status.reason.clone()
            },
            crate::diagnostic::sanitize(&refusal_message(&status), MAX_MESSAGE),
        ))),
        Err(error) => {
            let resource = format!("{}.{}", resource.plural, resource.group);
            Err(clusters::ask_error(
                connection,
                &error,
                "patch",
                resource.trim_end_matches('.'),
                id.namespace.as_deref(),
            ))
        }
    }
}

/// Whether the server refused the object itself (schema, CEL, immutable field, admission, a
/// missing namespace), as opposed to refusing the user (RBAC) or failing.
fn is_refusal(status: &kube::core::Status) -> bool {
    match status.code {
        400 | 404 | 409 | 422 => true,
        // RBAC says "cannot patch resource"; an admission webhook or policy denies the request.
        403 => !status.message.contains("cannot patch resource"),
        _ => false,
    }
}

/// What the server says is wrong, field by field when it says so (`spec.template: field is
/// immutable`): an invalid value is printed by the server as a Go structure, which says
/// nothing a person can use, so a long cause keeps only its last clause.
fn refusal_message(status: &kube::core::Status) -> String {
    let causes: Vec<String> = status
        .details
        .as_ref()
        .map(|details| details.causes.as_slice())
        .unwrap_or_default()
        .iter()
        .take(10)
        .map(|cause| {
            let message = if cause.message.chars().count() > 200 {
                cause
                    .message
                    .rsplit_once(": ")
                    .map_or(cause.message.as_str(), |(_, last)| last)
            } else {
                cause.message.as_str()
            };
            if cause.field.is_empty() {
                message.to_string()
            } else {
                format!("{}: {message}", cause.field)
            }
        })
        .collect();
    if causes.is_empty() {
        status.message.clone()
    } else {
        causes.join("; ")
    }
}

/// `live` keeping only the fields `rendered` sets (lists of the same length field by field).
fn project(live: &Value, rendered: &Value) -> Value {
    match (live, rendered) {
        (Value::Object(live), Value::Object(rendered)) => Value::Object(
            rendered
                .iter()
                .filter_map(|(key, value)| Some((key.clone(), project(live.get(key)?, value))))
                .collect(),
        ),
        (Value::Array(live), Value::Array(rendered)) if live.len() == rendered.len() => {
            Value::Array(
                live.iter()
                    .zip(rendered)
                    .map(|(l, r)| project(l, r))
                    .collect(),
            )
        }
        _ => live.clone(),
    }
}

/// Secret values never reach a report: each value of a Secret's `data` and `stringData` on
/// both sides becomes a marker, which says whether it would change.
fn redact_secret(id: &ObjectRef, live: Option<&mut Value>, would_be: &mut Value) {
    if !(id.group.is_empty() && id.kind == "Secret") {
        return;
    }
    let before = live.as_deref().cloned();
    redact_secret_values(would_be, before.as_ref());
    if let Some(live) = live {
        redact_secret_values(live, None);
    }
}

/// Replaces every value of `data` and `stringData` with `(redacted)`, or `(redacted,
/// changed)` where `before` holds another value under the same key.
fn redact_secret_values(object: &mut Value, before: Option<&Value>) {
    for field in ["data", "stringData"] {
        let Some(Value::Object(values)) = object.get_mut(field) else {
            continue;
        };
        for (key, value) in values.iter_mut() {
            let old = before.and_then(|b| b.get(field)).and_then(|d| d.get(key));
            let marker = match old {
                Some(old) if old != value => "(redacted, changed)",
                None if before.is_some() => "(redacted, new)",
                _ => "(redacted)",
            };
            *value = Value::String(marker.to_string());
        }
    }
}

/// A live object without what the server alone sets (status, managed fields, versions,
/// uid, timestamps): JSON text, which reads as YAML.
fn normalized(object: &Value) -> String {
    let mut object = object.clone();
    if let Value::Object(map) = &mut object {
        map.remove("status");
        if let Some(Value::Object(metadata)) = map.get_mut("metadata") {
            for field in [
                "managedFields",
                "resourceVersion",
                "uid",
                "creationTimestamp",
                "generation",
                "selfLink",
            ] {
                metadata.remove(field);
            }
            if let Some(Value::Object(annotations)) = metadata.get_mut("annotations") {
                annotations.remove("kubectl.kubernetes.io/last-applied-configuration");
                if annotations.is_empty() {
                    metadata.remove("annotations");
                }
            }
        }
    }
    serde_json::to_string_pretty(&object).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_projection_keeps_only_the_fields_the_rendered_object_sets() {
        let live = json!({"spec": {"replicas": 3, "strategy": {"type": "RollingUpdate"},
            "template": {"spec": {"containers": [{"name": "a", "image": "x", "imagePullPolicy": "Always"}]}}}});
        let rendered = json!({"spec": {"replicas": 2,
            "template": {"spec": {"containers": [{"name": "a", "image": "y"}]}}}});
        assert_eq!(
            project(&live, &rendered),
            json!({"spec": {"replicas": 3, "template": {"spec": {"containers": [{"name": "a", "image": "x"}]}}}})
        );
    }

    #[test]
    fn refusals_name_fields_not_go_structures() {
        let status: kube::core::Status = serde_json::from_value(json!({
            "code": 422, "reason": "Invalid", "message": "Job.batch \"j\" is invalid: …",
            "details": {"causes": [{"field": "spec.template", "reason": "FieldValueInvalid",
                "message": format!("Invalid value: core.PodTemplateSpec{{{}}}: field is immutable", "x".repeat(300))}]},
        }))
        .expect("status");
        assert_eq!(
            refusal_message(&status),
            "spec.template: field is immutable"
        );
        assert!(is_refusal(&status));
        let rbac: kube::core::Status = serde_json::from_value(json!({
            "code": 403, "reason": "Forbidden",
            "message": "deployments.apps \"d\" is forbidden: User \"u\" cannot patch resource \"deployments\"",
        }))
        .expect("status");
        assert!(!is_refusal(&rbac), "RBAC refuses the user, not the object");
        let webhook: kube::core::Status = serde_json::from_value(json!({
            "code": 403, "reason": "Forbidden",
            "message": "admission webhook \"validate.kyverno.svc\" denied the request",
        }))
        .expect("status");
        assert!(is_refusal(&webhook));
    }

    #[test]
    fn secret_values_never_reach_the_report() {
        let id = ObjectRef {
            group: String::new(),
            kind: "Secret".into(),
            namespace: Some("n".into()),
            name: "s".into(),
        };
        let mut live = json!({"data": {"a": "c2VjcmV0", "b": "c2FtZQ=="}});
        let mut would_be = json!({"data": {"a": "bmV3", "b": "c2FtZQ==", "c": "eA=="}, "stringData": {"d": "plain"}});
        redact_secret(&id, Some(&mut live), &mut would_be);
        assert_eq!(
            live,
            json!({"data": {"a": "(redacted)", "b": "(redacted)"}})
        );
        assert_eq!(
            would_be,
            json!({"data": {"a": "(redacted, changed)", "b": "(redacted)", "c": "(redacted, new)"},
                "stringData": {"d": "(redacted, new)"}})
        );
    }

    #[test]
    fn names_that_would_change_the_request_path_are_not_sent() {
        for bad in ["", ".", "..", "a/b", "..%2f", "a b", "a\nb", "x?y"] {
            assert!(!fetch::is_path_safe(bad), "{bad:?}");
        }
        for good in ["triton", "system:controller:x", "a.b-c_d", "v1.2"] {
            assert!(fetch::is_path_safe(good), "{good:?}");
        }
    }

    #[test]
    fn normalized_objects_lose_what_the_server_alone_sets() {
        let live = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c",
            "uid": "u", "resourceVersion": "7", "generation": 2, "creationTimestamp": "t",
            "managedFields": [], "annotations": {"kubectl.kubernetes.io/last-applied-configuration": "{}"}},
            "data": {"a": "b"}, "status": {}});
        let text = normalized(&live);
        let back: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(
            back,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}})
        );
    }
}

//! What one cluster holds of ours: one LIST per kind (every namespace at once, selected by the
//! tool's `managed-by` label, in pages), never a request per object. When RBAC forbids a
//! cluster-wide list, the kind is listed in each namespace the rendered objects use. Kueue
//! `Workload`s (Kueue creates them, without our labels) are listed in the namespaces of our
//! jobs, and nodes by their node-pool label.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use futures::StreamExt;
use kube::api::{DynamicObject, ListParams};
use kube::discovery::{ApiResource, Discovery, Scope};
use serde_json::Value;

use super::clusters::{AskError, Connection, ask_error};

/// The label every rendered object carries.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by=kubectl-aiml";
/// GKE's label of a node's pool.
pub const NODE_POOL_LABEL: &str = "cloud.google.com/gke-nodepool";
/// Objects one page of a LIST holds.
const PAGE: u32 = 500;
/// Kueue's label naming a job's queue.
const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";
/// Kueue's label on a Workload naming the uid of its job.
const JOB_UID_LABEL: &str = "kueue.x-k8s.io/job-uid";
/// Job uids in one Workload LIST's selector (keeps the URL short).
const UIDS_PER_LIST: usize = 50;
/// Lists in flight on one cluster.
const CONCURRENT_LISTS: usize = 8;

/// What to ask one cluster.
#[derive(Clone, Debug, Default)]
pub struct Query {
    /// `(group, version, kind)` → the namespaces its rendered objects use (none: cluster-scoped).
    pub kinds: BTreeMap<(String, String, String), BTreeSet<String>>,
    /// Node pools whose nodes to list.
    pub pools: BTreeSet<String>,
    /// Namespaces of our queued jobs: where Kueue Workloads are listed when a cluster-wide
    /// LIST is forbidden.
    pub kueue_namespaces: BTreeSet<String>,
    /// At most this many objects in all; more is an error rather than unbounded memory.
    pub max_objects: usize,
}

/// Identity of a live object: group, kind, namespace, name.
pub type Key = (String, String, Option<String>, String);

/// Whether a name can stand in a request path as it is: never `/`, `%`, `.`, `..`, spaces
/// or control characters (a rendered name is input: it must not turn a request for one object
/// into a request for another path). Every name the API server accepts passes.
#[must_use]
pub fn is_path_safe(segment: &str) -> bool {
    !segment.is_empty()
        && segment.len() <= 253
        && crate::names::path_segment(segment).is_ok()
        && !segment
            .chars()
            .any(|c| c == '?' || c == '#' || c.is_whitespace() || c.is_control())
}

/// `group/version` → (group, version); the core group is `""`.
#[must_use]
pub fn split_api_version(api_version: &str) -> (String, String) {
    match api_version.rsplit_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.to_string()),
    }
}

/// The identity of a rendered object, as [`key_of`] reads a live one.
#[must_use]
pub fn key_of_id(id: &crate::diagnostic::ObjectRef) -> Key {
    (
        id.group.clone(),
        id.kind.clone(),
        id.namespace.clone(),
        id.name.clone(),
    )
}

impl Query {
    /// A query bounded by `max_objects`.
    #[must_use]
    pub fn new(max_objects: usize) -> Self {
        Self {
            max_objects,
            ..Self::default()
        }
    }

    /// Asks for the kind of the rendered `object`, in its namespace.
    pub fn ask_for(&mut self, object: &crate::gitops::diff::Object) {
        let (group, version) = split_api_version(&object.api_version);
        self.kinds
            .entry((group, version, object.id.kind.clone()))
            .or_default()
            .extend(object.id.namespace.clone());
    }
}

/// Whether a kind could be listed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KindListing {
    /// Listed; the objects are in [`Listed::objects`].
    Listed,
    /// The server does not serve the kind (its CRD is not installed), in any version.
    NotServed,
}

/// What one cluster answered.
#[derive(Debug, Default)]
pub struct Listed {
    /// Our objects, by identity.
    pub objects: HashMap<Key, Value>,
    /// How each `(group, kind)` asked went.
    pub kinds: BTreeMap<(String, String), KindListing>,
    /// The nodes of the pools asked for.
    pub nodes: Vec<Value>,
    /// The Kueue Workloads of the namespaces asked for.
    pub workloads: Vec<Value>,
    /// What could not be read of what only adds detail (nodes, Kueue Workloads), and why: a
    /// user who may read the blueprint's objects but not the cluster's nodes still gets a
    /// status.
    pub unread: Vec<String>,
}

/// Asks `connection` everything in `query`, within its time limit.
pub async fn fetch(connection: &Connection, query: &Query) -> Result<Listed, AskError> {
    match tokio::time::timeout(connection.timeout, fetch_all(connection, query)).await {
        Ok(listed) => listed,
        Err(_) => Err(AskError::Timeout {
            context: connection.context.clone(),
            server: connection.server.clone(),
            seconds: connection.timeout.as_secs(),
        }),
    }
}

/// One LIST job: a resource, where, and with which selector.
struct Job {
    resource: ApiResource,
    namespace: Option<String>,
    selector: Option<String>,
    /// The namespaces to fall back to when a cluster-wide list is forbidden.
    fallback: BTreeSet<String>,
    /// Which bucket the objects go to.
    bucket: Bucket,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Bucket {
    Ours,
    Nodes,
    Workloads,
}

async fn fetch_all(connection: &Connection, query: &Query) -> Result<Listed, AskError> {
    let mut groups: BTreeSet<&str> = query.kinds.keys().map(|(g, _, _)| g.as_str()).collect();
    if !query.pools.is_empty() {
        groups.insert("");
    }
    if !query.kueue_namespaces.is_empty() {
        groups.insert("kueue.x-k8s.io");
    }
    let filter: Vec<&str> = groups.iter().copied().collect();
    let discovery = discover(connection, &filter).await?;
    let mut listed = Listed::default();
    let mut jobs = Vec::new();
    for ((group, version, kind), namespaces) in &query.kinds {
        match resolve(&discovery, group, version, kind) {
            Some((resource, scope)) => {
                listed
                    .kinds
                    .insert((group.clone(), kind.clone()), KindListing::Listed);
                jobs.push(Job {
                    resource,
                    namespace: None,
                    selector: Some(MANAGED_BY.to_string()),
                    fallback: if scope == Scope::Namespaced {
                        namespaces.clone()
                    } else {
                        BTreeSet::new()
                    },
                    bucket: Bucket::Ours,
                });
            }
            None => {
                listed
                    .kinds
                    .insert((group.clone(), kind.clone()), KindListing::NotServed);
            }
        }
    }
    if !query.pools.is_empty()
        && let Some((resource, _)) = resolve(&discovery, "", "v1", "Node")
    {
        let pools: Vec<&str> = query.pools.iter().map(String::as_str).collect();
        jobs.push(Job {
            resource,
            namespace: None,
            selector: Some(format!("{NODE_POOL_LABEL} in ({})", pools.join(","))),
            fallback: BTreeSet::new(),
            bucket: Bucket::Nodes,
        });
    }
    let mut total = 0usize;
    collect(connection, query, &jobs, &mut listed, &mut total).await?;
    // Kueue's Workloads carry the uid of their job in a label: one LIST (in chunks of uids)
    // finds the Workloads of our queued jobs, whatever else the cluster queues.
    if let Some((resource, _)) = resolve(&discovery, "kueue.x-k8s.io", "v1beta1", "Workload") {
        let mut uids: Vec<&str> = listed
            .objects
            .values()
            .filter(|o| {
                o.pointer("/metadata/labels")
                    .and_then(|l| l.get(QUEUE_NAME_LABEL))
                    .is_some()
            })
            .filter_map(|o| o.pointer("/metadata/uid").and_then(Value::as_str))
            .filter(|uid| is_path_safe(uid) && !uid.contains([',', '(', ')', '!', '=']))
            .collect();
        uids.sort_unstable();
        let workloads: Vec<Job> = uids
            .chunks(UIDS_PER_LIST)
            .map(|chunk| Job {
                resource: resource.clone(),
                namespace: None,
                selector: Some(format!("{JOB_UID_LABEL} in ({})", chunk.join(","))),
                fallback: query.kueue_namespaces.clone(),
                bucket: Bucket::Workloads,
            })
            .collect();
        collect(connection, query, &workloads, &mut listed, &mut total).await?;
    }
    Ok(listed)
}

/// Runs `jobs` (at most [`CONCURRENT_LISTS`] at once) into `listed`, counting objects
/// against the query's bound.
async fn collect(
    connection: &Connection,
    query: &Query,
    jobs: &[Job],
    listed: &mut Listed,
    total: &mut usize,
) -> Result<(), AskError> {
    let mut results = futures::stream::iter(jobs.iter().map(|job| run(connection, job)))
        .buffer_unordered(CONCURRENT_LISTS);
    while let Some((bucket, result)) = results.next().await {
        let objects = match result {
            Ok(objects) => objects,
            Err(error) if bucket != Bucket::Ours => {
                listed.unread.push(match bucket {
                    Bucket::Nodes => format!("nodes not read: {error}"),
                    _ => format!("Kueue Workloads not read: {error}"),
                });
                continue;
            }
            Err(error) => return Err(error),
        };
        *total += objects.len();
        if *total > query.max_objects {
            return Err(AskError::Failed {
                context: connection.context.clone(),
                message: format!(
                    "more than {} objects listed; ask about fewer blueprints, or raise `{}`",
                    query.max_objects,
                    crate::limits::MAX_LIVE_OBJECTS_VAR
                ),
            });
        }
        for object in objects {
            match bucket {
                Bucket::Nodes => listed.nodes.push(object),
                Bucket::Workloads => listed.workloads.push(object),
                Bucket::Ours => {
                    if let Some(key) = key_of(&object) {
                        listed.objects.insert(key, object);
                    }
                }
            }
        }
    }
    Ok(())
}

/// The identity of a live object, from its `apiVersion`, `kind` and metadata.
#[must_use]
pub fn key_of(object: &Value) -> Option<Key> {
    let api_version = object.get("apiVersion")?.as_str()?;
    let (group, _) = split_api_version(api_version);
    let metadata = object.get("metadata")?;
    Some((
        group,
        object.get("kind")?.as_str()?.to_string(),
        metadata
            .get("namespace")
            .and_then(Value::as_str)
            .map(str::to_string),
        metadata.get("name")?.as_str()?.to_string(),
    ))
}

pub(super) async fn discover(
    connection: &Connection,
    groups: &[&str],
) -> Result<Discovery, AskError> {
    let aggregated = Discovery::new(connection.client.clone())
        .filter(groups)
        .run_aggregated()
        .await;
    match aggregated {
        Ok(discovery) => Ok(discovery),
        // Servers before 1.30 may not serve aggregated discovery: one request per group then.
        Err(_) => Discovery::new(connection.client.clone())
            .filter(groups)
            .run()
            .await
            .map_err(|e| ask_error(connection, &e, "discover", "API groups", None)),
    }
}

/// The served resource of a kind: the rendered version when served, else the group's
/// preferred version that has the kind (the server converts between them).
pub(super) fn resolve(
    discovery: &Discovery,
    group: &str,
    version: &str,
    kind: &str,
) -> Option<(ApiResource, Scope)> {
    let group_info = discovery.get(group)?;
    let exact = group_info
        .versioned_resources(version)
        .into_iter()
        .find(|(resource, _)| resource.kind == kind);
    let found = exact.or_else(|| {
        group_info
            .recommended_resources()
            .into_iter()
            .find(|(resource, _)| resource.kind == kind)
    })?;
    Some((found.0, found.1.scope))
}

async fn run(connection: &Connection, job: &Job) -> (Bucket, Result<Vec<Value>, AskError>) {
    (job.bucket, run_job(connection, job).await)
}

async fn run_job(connection: &Connection, job: &Job) -> Result<Vec<Value>, AskError> {
    let resource = format!("{}.{}", job.resource.plural, job.resource.group)
        .trim_end_matches('.')
        .to_string();
    match list(connection, job, job.namespace.as_deref()).await {
        Ok(objects) => Ok(objects),
        Err(error)
            if is_forbidden(&error) && job.namespace.is_none() && !job.fallback.is_empty() =>
        {
            let mut objects = Vec::new();
            for namespace in job.fallback.iter().filter(|n| is_path_safe(n)) {
                objects.extend(
                    list(connection, job, Some(namespace)).await.map_err(|e| {
                        ask_error(connection, &e, "list", &resource, Some(namespace))
                    })?,
                );
            }
            Ok(objects)
        }
        Err(error) => Err(ask_error(
            connection,
            &error,
            "list",
            &resource,
            job.namespace.as_deref(),
        )),
    }
}

fn is_forbidden(error: &kube::Error) -> bool {
    matches!(error, kube::Error::Api(status) if status.code == 403)
}

/// One page of a LIST, its items kept as JSON (decoded once, never through a typed object).
#[derive(serde::Deserialize)]
struct Page {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default)]
    items: Vec<Value>,
}

#[derive(Default, serde::Deserialize)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    continue_token: Option<String>,
}

/// Every page of one LIST.
async fn list(
    connection: &Connection,
    job: &Job,
    namespace: Option<&str>,
) -> Result<Vec<Value>, kube::Error> {
    use kube::Resource as _;
    let request = kube::core::Request::new(DynamicObject::url_path(&job.resource, namespace));
    // `resourceVersion=0`: the server may answer from its watch cache instead of a quorum
    // read of etcd (a status is a snapshot; a moment's lag is fine). Later pages carry the
    // continue token alone, as the API requires.
    let mut params = ListParams::default().limit(PAGE).match_any();
    if let Some(selector) = &job.selector {
        params = params.labels(selector);
    }
    let mut objects = Vec::new();
    loop {
        let http = request.list(&params).map_err(kube::Error::BuildRequest)?;
        let page: Page = connection.client.request(http).await?;
        for mut item in page.items {
            // Lists leave apiVersion and kind out of their items' JSON; put them back.
            if let Value::Object(map) = &mut item {
                map.insert(
                    "apiVersion".into(),
                    Value::String(job.resource.api_version.clone()),
                );
                map.insert("kind".into(), Value::String(job.resource.kind.clone()));
            }
            objects.push(item);
        }
        match page.metadata.continue_token.filter(|c| !c.is_empty()) {
            Some(token) => {
                params.resource_version = None;
                params.version_match = None;
                params = params.continue_token(&token);
            }
            None => return Ok(objects),
        }
    }
}

//! `kubectl aiml status`: for each blueprint and cluster it targets, what was applied and
//! whether it is ready, and why not.
//!
//! The rendered objects say what should be there ([`super::targets`]); each cluster is asked
//! once, with one LIST per kind ([`super::fetch`]), all clusters at once with a time limit
//! each; every object's readiness comes from its own `status` ([`super::health`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use serde::Serialize;
use serde_json::Value;

use super::clusters::{self, AskError, Connection, Options, Source};
use super::fetch::{self, KindListing, Listed, Query};
use super::health::{self, Health, State, Synced};
use super::targets::{self, ClusterId, Target};
use crate::gitops::diff::{Object, Side};
use crate::overlay::Plane;
use crate::settings::Settings;

/// The context of a cluster, or why there is none (`None`: no cluster to ask).
type Resolved = Option<Result<String, AskError>>;

/// Clusters asked at once.
const CONCURRENT_CLUSTERS: usize = 16;
/// Kueue's label naming the LocalQueue of a job.
const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The status of every target asked about.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    /// The repository's HEAD commit, which the sync objects should have applied.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// One entry per blueprint and cluster, in blueprint then plane order.
    pub targets: Vec<TargetStatus>,
}

/// Where a whole report stands, for the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Everything ready (exit 0).
    Ready,
    /// Something not ready, failed or missing (exit 1).
    NotReady,
    /// Some cluster could not be asked (exit 2).
    CouldNotAsk,
}

impl Report {
    /// Where the report stands.
    #[must_use]
    pub fn verdict(&self) -> Verdict {
        if self.targets.iter().any(|t| t.error.is_some()) {
            Verdict::CouldNotAsk
        } else if self.targets.iter().all(|t| t.state == State::Ready) {
            Verdict::Ready
        } else {
            Verdict::NotReady
        }
    }

    /// Whether waiting longer cannot help: something failed, or a cluster cannot be asked
    /// for a reason time does not fix (no context, no rights).
    #[must_use]
    pub fn is_terminal(&self) -> bool {
        self.targets.iter().any(|t| {
            t.state == State::Failed
                || t.error.as_ref().is_some_and(|e| {
                    !matches!(e, AskError::Unreachable { .. } | AskError::Timeout { .. })
                })
        })
    }
}

/// One blueprint's objects on one cluster.
#[derive(Clone, Debug, Serialize)]
pub struct TargetStatus {
    /// The blueprint.
    pub blueprint: String,
    /// `config-connector` or `workload`.
    pub target: &'static str,
    /// The cluster, as the output names it (`None`: nothing rendered names it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterId>,
    /// The kubeconfig context used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// Where the whole target stands.
    pub state: State,
    /// Objects ready.
    pub ready: usize,
    /// Objects rendered for it.
    pub total: usize,
    /// The sync object that applies it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sync: Option<SyncStatus>,
    /// The first problem, for the one-line view: `Kind/namespace/name: reason: message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// Why the cluster could not be asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<AskError>,
    /// Every rendered object, in path order.
    pub objects: Vec<ObjectStatus>,
    /// The accelerator node pools the blueprint creates, with their nodes (workload targets).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_pools: Vec<PoolStatus>,
    /// Details that could not be read (nodes, Kueue Workloads), and why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unread: Vec<String>,
}

/// The sync object of a target.
#[derive(Clone, Debug, Serialize)]
pub struct SyncStatus {
    /// `RootSync/config-management-system/aiml-x`.
    pub object: String,
    /// Its readiness.
    pub health: Health,
    /// What it applied.
    #[serde(flatten)]
    pub synced: Synced,
}

/// One rendered object.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectStatus {
    /// `Kind/namespace/name`.
    pub object: String,
    /// Its file under `rendered/`.
    pub file: String,
    /// Its readiness.
    pub health: Health,
    /// Kueue's admission of it, for a job in a queue.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admission: Option<Health>,
}

/// One node pool and its nodes.
#[derive(Clone, Debug, Serialize)]
pub struct PoolStatus {
    /// The GKE node pool name.
    pub pool: String,
    /// Its nodes' readiness.
    pub health: Health,
}

/// Asks the clusters about the blueprints `names` (every blueprint when empty) of the rendered
/// output `side`. Each target either has its objects' status or the reason its cluster could
/// not be asked; nothing here fails as a whole.
pub async fn collect(
    side: &Side,
    settings: &Settings,
    names: &[String],
    head: Option<String>,
    options: &Options,
    source: &Source,
    max_objects: usize,
) -> Report {
    let all = targets::targets(side, settings, names);
    // The context of each target and of each sync object.
    let context_of =
        |cluster: &ClusterId| clusters::context_for(cluster, settings, options, source);
    let mut contexts: BTreeSet<String> = BTreeSet::new();
    let mut resolved: Vec<(Resolved, Resolved)> = Vec::new();
    for target in &all {
        let own = target.cluster.as_ref().map(context_of);
        let sync = target.sync.as_ref().map(|s| context_of(&s.cluster));
        for context in [&own, &sync].into_iter().flatten().flatten() {
            contexts.insert(context.clone());
        }
        resolved.push((own, sync));
    }
    let connections = clusters::connect(&contexts, source, options).await;
    // One query per distinct connection.
    let mut queries: BTreeMap<usize, (Arc<Connection>, Query)> = BTreeMap::new();
    let connection_of = |context: &Resolved| -> Option<Arc<Connection>> {
        match context {
            Some(Ok(context)) => connections
                .get(context)
                .and_then(|c| c.as_ref().ok())
                .cloned(),
            _ => None,
        }
    };
    let pools = pools_by_blueprint(side);
    for (target, (own, sync)) in all.iter().zip(&resolved) {
        if let Some(connection) = connection_of(own) {
            let query = query_for(&mut queries, &connection, max_objects);
            for object in &target.objects {
                query.ask_for(object);
            }
            if target.plane == Plane::Workload {
                if let Some(pools) = pools.get(&target.blueprint) {
                    query.pools.extend(pools.iter().map(|p| p.name.clone()));
                }
                for object in &target.objects {
                    if is_queued_job(object) {
                        query.kueue_namespaces.extend(object.id.namespace.clone());
                    }
                }
            }
        }
        if let (Some(connection), Some(sync)) = (connection_of(sync), &target.sync)
            && let Some(object) = sync_object(side, sync)
        {
            query_for(&mut queries, &connection, max_objects).ask_for(object);
        }
    }
    let answers: HashMap<usize, Result<Listed, AskError>> = futures::stream::iter(
        queries
            .into_iter()
            .map(|(key, (connection, query))| async move {
                (key, fetch::fetch(&connection, &query).await)
            }),
    )
    .buffer_unordered(CONCURRENT_CLUSTERS)
    .collect()
    .await;
    let answer_of = |context: &Resolved| -> Option<Result<&Listed, AskError>> {
        match context {
            None => None,
            Some(Err(error)) => Some(Err(error.clone())),
            Some(Ok(context)) => Some(match connections.get(context) {
                Some(Ok(connection)) => match answers.get(&(Arc::as_ptr(connection) as usize)) {
                    Some(Ok(listed)) => Ok(listed),
                    Some(Err(error)) => Err(error.clone()),
                    None => Ok(EMPTY.get_or_init(Listed::default)),
                },
                Some(Err(error)) => Err(error.clone()),
                None => Err(AskError::Failed {
                    context: context.clone(),
                    message: "no connection was made".into(),
                }),
            }),
        }
    };
    let targets = all
        .iter()
        .zip(&resolved)
        .map(|(target, (own, sync))| {
            let context = own.as_ref().and_then(|c| c.as_ref().ok()).cloned();
            let mut status = assess_target(
                side,
                target,
                context,
                answer_of(own),
                answer_of(sync),
                head.as_deref(),
                pools
                    .get(&target.blueprint)
                    .map(Vec::as_slice)
                    .unwrap_or_default(),
            );
            status.summarize();
            status
        })
        .collect();
    Report { head, targets }
}

static EMPTY: std::sync::OnceLock<Listed> = std::sync::OnceLock::new();

/// The query of `connection` (one per distinct connection).
fn query_for<'q>(
    queries: &'q mut BTreeMap<usize, (Arc<Connection>, Query)>,
    connection: &Arc<Connection>,
    max_objects: usize,
) -> &'q mut Query {
    &mut queries
        .entry(Arc::as_ptr(connection) as usize)
        .or_insert_with(|| (connection.clone(), Query::new(max_objects)))
        .1
}

fn is_queued_job(object: &Object) -> bool {
    matches!(
        (object.id.group.as_str(), object.id.kind.as_str()),
        ("jobset.x-k8s.io", "JobSet")
            | ("batch", "Job")
            | ("leaderworkerset.x-k8s.io", "LeaderWorkerSet")
    ) && object
        .node
        .at(&["metadata", "labels", QUEUE_NAME_LABEL])
        .is_some()
}

fn sync_object<'s>(side: &'s Side, sync: &targets::SyncObject) -> Option<&'s Object> {
    side.get(crate::graph::SYNC_FOLDER, &sync.id)
}

/// A node pool a blueprint creates.
#[derive(Clone, Debug)]
struct Pool {
    name: String,
    topology: Option<String>,
    accelerated: bool,
    /// Nodes it must have (`spec.nodeCount` without autoscaling): a TPU slice works only
    /// with every host.
    fixed_nodes: Option<usize>,
}

/// The node pools of each blueprint's Config Connector objects.
fn pools_by_blueprint(side: &Side) -> BTreeMap<String, Vec<Pool>> {
    let mut pools: BTreeMap<String, Vec<Pool>> = BTreeMap::new();
    for object in side.objects.values() {
        if object.id.group != "container.cnrm.cloud.google.com"
            || object.id.kind != "ContainerNodePool"
        {
            continue;
        }
        let text = |path: &[&str]| {
            object
                .node
                .at(path)
                .and_then(crate::yaml::Node::as_str)
                .map(str::to_string)
        };
        let accelerated = text(&["spec", "nodeConfig", "machineType"])
            .is_some_and(|m| m.starts_with("ct") || m.starts_with("tpu"))
            || object
                .node
                .at(&["spec", "nodeConfig", "guestAccelerator"])
                .is_some()
            || object
                .node
                .at(&["spec", "placementPolicy", "tpuTopology"])
                .is_some();
        let autoscaled = object.node.at(&["spec", "autoscaling"]).is_some();
        let fixed_nodes = object
            .node
            .at(&["spec", "nodeCount"])
            .and_then(crate::yaml::Node::as_i64)
            .and_then(|n| usize::try_from(n).ok())
            .filter(|_| !autoscaled);
        pools.entry(object.folder.clone()).or_default().push(Pool {
            name: text(&["spec", "resourceID"]).unwrap_or_else(|| object.id.name.clone()),
            topology: text(&["spec", "placementPolicy", "tpuTopology"]),
            accelerated,
            fixed_nodes,
        });
    }
    pools
}

fn describe(object: &Object) -> String {
    object.id.to_string()
}

fn missing(reason: &str, message: String) -> Health {
    Health {
        state: State::Missing,
        reason: Some(reason.to_string()),
        message: Some(message),
        detail: None,
    }
}

#[allow(
    clippy::too_many_arguments,
    reason = "one call site; the parts are unrelated"
)]
fn assess_target(
    side: &Side,
    target: &Target<'_>,
    context: Option<String>,
    own: Option<Result<&Listed, AskError>>,
    sync: Option<Result<&Listed, AskError>>,
    head: Option<&str>,
    pools: &[Pool],
) -> TargetStatus {
    let mut status = TargetStatus {
        blueprint: target.blueprint.clone(),
        target: target.plane.dir(),
        cluster: target.cluster.clone(),
        context,
        state: State::Ready,
        ready: 0,
        total: target.objects.len(),
        sync: None,
        problem: None,
        error: None,
        objects: Vec::new(),
        node_pools: Vec::new(),
        unread: Vec::new(),
    };
    if target.cluster.is_none() {
        status.error = Some(AskError::NoContext {
            cluster: format!("workload cluster of `{}`", target.blueprint),
            context: String::new(),
            fix: "no sync object or ContainerCluster in `rendered/` names it: pass `--context`"
                .into(),
        });
        return status;
    }
    if let (Some(sync_object), Some(answer)) = (&target.sync, sync) {
        match answer {
            Ok(listed) => {
                let object = fetch::key_of_id(&sync_object.id);
                let (health, synced) = match listed.objects.get(&object) {
                    Some(live) => health::sync_root(&sync_object.id.kind, live, head),
                    None => {
                        let mut health =
                            not_there(listed, &sync_object.id.group, &sync_object.id.kind);
                        // The sync object is applied by the cluster's own bootstrap: say where
                        // to look, since nothing of the blueprint can arrive without it.
                        health.message = Some(match health.reason.as_deref() {
                            Some("KindNotServed") if sync_object.id.group == "argoproj.io" => {
                                "Argo CD is not installed there (no Application kind)".to_string()
                            }
                            Some("KindNotServed") => {
                                "Config Sync is not installed there (no RootSync kind): see `rendered/_sync/README.md`".to_string()
                            }
                            _ => "not on the cluster yet: its bootstrap applies it (see `rendered/_sync/README.md`)".to_string(),
                        });
                        (health, Synced::default())
                    }
                };
                status.sync = Some(SyncStatus {
                    object: sync_object.id.to_string(),
                    health,
                    synced,
                });
            }
            Err(error) => {
                status.error = Some(error);
                return status;
            }
        }
    }
    let listed = match own {
        Some(Ok(listed)) => listed,
        Some(Err(error)) => {
            status.error = Some(error);
            return status;
        }
        None => return status,
    };
    let owned_workloads = workloads_by_owner(listed);
    status.unread.clone_from(&listed.unread);
    for object in &target.objects {
        let key = fetch::key_of_id(&object.id);
        let (health, admission) = match listed.objects.get(&key) {
            Some(live) => {
                let health = health::assess(&object.id.group, &object.id.kind, live);
                let admission = uid(live)
                    .and_then(|uid| owned_workloads.get(uid))
                    .map(|workload| health::kueue_workload(workload));
                (health, admission)
            }
            None => (not_there(listed, &object.id.group, &object.id.kind), None),
        };
        status.objects.push(ObjectStatus {
            object: describe(object),
            file: object.path.clone(),
            health,
            admission,
        });
    }
    let nodes_read = !listed.unread.iter().any(|u| u.starts_with("nodes"));
    if target.plane == Plane::Workload && nodes_read {
        for pool in pools.iter().filter(|p| p.accelerated) {
            let nodes: Vec<&Value> = listed
                .nodes
                .iter()
                .filter(|n| {
                    n.pointer("/metadata/labels")
                        .and_then(|l| l.get(fetch::NODE_POOL_LABEL))
                        .and_then(Value::as_str)
                        == Some(pool.name.as_str())
                })
                .collect();
            let mut health = health::node_pool(&nodes, pool.topology.as_deref());
            if let Some(expected) = pool.fixed_nodes
                && nodes.len() < expected
                && health.state != State::Failed
            {
                health.state = State::Progressing;
                health.reason = Some("NodesMissing".into());
                health.message = Some(format!(
                    "{} of {expected} nodes registered; a TPU slice runs only with every host",
                    nodes.len()
                ));
            }
            status.node_pools.push(PoolStatus {
                pool: pool.name.clone(),
                health,
            });
        }
    }
    let _ = side;
    status
}

/// A rendered object the cluster does not have: its kind is not served, or it is not there.
fn not_there(listed: &Listed, group: &str, kind: &str) -> Health {
    match listed.kinds.get(&(group.to_string(), kind.to_string())) {
        Some(KindListing::NotServed) => missing(
            "KindNotServed",
            format!(
                "the cluster does not serve {kind}{}: its CustomResourceDefinition is not installed",
                if group.is_empty() {
                    String::new()
                } else {
                    format!(" ({group})")
                }
            ),
        ),
        _ => missing("NotFound", "not applied yet".to_string()),
    }
}

fn uid(object: &Value) -> Option<&str> {
    object.pointer("/metadata/uid").and_then(Value::as_str)
}

/// Kueue Workloads by the uid of the job that owns them.
fn workloads_by_owner(listed: &Listed) -> HashMap<&str, &Value> {
    let mut owned = HashMap::new();
    for workload in &listed.workloads {
        let owners = workload
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for owner in owners {
            if let Some(uid) = owner.get("uid").and_then(Value::as_str) {
                owned.insert(uid, workload);
            }
        }
    }
    owned
}

impl TargetStatus {
    /// Counts, the overall state and the first problem: the sync object's errors first (they
    /// explain everything else), then failed, missing and progressing objects, then nodes.
    fn summarize(&mut self) {
        if self.error.is_some() {
            self.state = State::Missing;
            return;
        }
        self.ready = self
            .objects
            .iter()
            .filter(|o| o.health.state == State::Ready)
            .count();
        let mut problems: Vec<(u8, String, &Health)> = Vec::new();
        if let Some(sync) = &self.sync
            && sync.health.state != State::Ready
        {
            problems.push((rank(sync.health.state), sync.object.clone(), &sync.health));
        }
        for object in &self.objects {
            let shown = match (&object.admission, object.health.state) {
                (Some(admission), state)
                    if state != State::Ready && admission.state != State::Ready =>
                {
                    admission
                }
                _ => &object.health,
            };
            if object.health.state != State::Ready {
                problems.push((rank(object.health.state), object.object.clone(), shown));
            }
        }
        for pool in &self.node_pools {
            if pool.health.state != State::Ready {
                problems.push((
                    rank(pool.health.state) + 1,
                    format!("node pool {}", pool.pool),
                    &pool.health,
                ));
            }
        }
        problems.sort_by_key(|(rank, _, _)| *rank);
        self.state = problems
            .iter()
            .map(|(_, _, health)| health.state)
            .min_by_key(|state| rank(*state))
            .map_or(State::Ready, |state| state);
        self.problem = problems.first().map(|(_, what, health)| {
            let mut line = what.clone();
            for part in [&health.reason, &health.message].into_iter().flatten() {
                line.push_str(": ");
                line.push_str(part);
            }
            line
        });
    }
}

/// Failed first, then missing, then progressing.
fn rank(state: State) -> u8 {
    match state {
        State::Failed => 0,
        State::Missing => 1,
        State::Progressing => 2,
        State::Ready => 3,
    }
}

/// A runtime for the cluster calls of one command.
pub fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(
            std::thread::available_parallelism()
                .map_or(2, std::num::NonZero::get)
                .min(4),
        )
        .enable_all()
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn health(state: State, reason: &str) -> Health {
        Health {
            state,
            reason: (!reason.is_empty()).then(|| reason.to_string()),
            message: None,
            detail: None,
        }
    }

    fn object(name: &str, state: State, reason: &str) -> ObjectStatus {
        ObjectStatus {
            object: name.to_string(),
            file: format!("rendered/b/workload/{name}.yaml"),
            health: health(state, reason),
            admission: None,
        }
    }

    fn target(objects: Vec<ObjectStatus>, sync: Option<Health>) -> TargetStatus {
        TargetStatus {
            blueprint: "b".into(),
            target: "workload",
            cluster: None,
            context: None,
            state: State::Ready,
            ready: 0,
            total: objects.len(),
            sync: sync.map(|health| SyncStatus {
                object: "RootSync/config-management-system/aiml-b".into(),
                health,
                synced: Synced::default(),
            }),
            problem: None,
            error: None,
            objects,
            node_pools: Vec::new(),
            unread: Vec::new(),
        }
    }

    #[test]
    fn the_first_problem_is_the_sync_error_then_failures_then_missing_then_progress() {
        let mut t = target(
            vec![
                object("Deployment/n/a", State::Progressing, "Rolling"),
                object("Job/n/b", State::Missing, "NotFound"),
                object("JobSet/n/c", State::Failed, "FailedJobs"),
                object("Service/n/d", State::Ready, ""),
            ],
            Some(health(State::Failed, "KNV1021")),
        );
        t.summarize();
        assert_eq!(t.state, State::Failed);
        assert_eq!((t.ready, t.total), (1, 4));
        assert_eq!(
            t.problem.as_deref(),
            Some("RootSync/config-management-system/aiml-b: KNV1021")
        );

        let mut t = target(
            vec![
                object("Deployment/n/a", State::Progressing, "Rolling"),
                object("Job/n/b", State::Missing, "NotFound"),
            ],
            Some(health(State::Ready, "")),
        );
        t.summarize();
        assert_eq!(t.state, State::Missing);
        assert_eq!(t.problem.as_deref(), Some("Job/n/b: NotFound"));

        let mut t = target(vec![object("Service/n/d", State::Ready, "")], None);
        t.summarize();
        assert_eq!((t.state, t.problem), (State::Ready, None));
    }

    #[test]
    fn a_queued_job_shows_kueues_reason() {
        let mut job = object("JobSet/n/c", State::Progressing, "Suspended");
        job.admission = Some(health(State::Progressing, "Pending"));
        let mut t = target(vec![job], None);
        t.summarize();
        assert_eq!(t.problem.as_deref(), Some("JobSet/n/c: Pending"));
    }
}

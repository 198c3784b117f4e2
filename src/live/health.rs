//! How ready one live object is, read from its `status` alone (no request is made here).
//!
//! Pure functions over the objects the API server returned, as `serde_json::Value`: every
//! field is untrusted, so nothing here panics on any JSON shape, every scan is bounded and
//! every text taken from an object is cut before it is formatted into another.

use serde::Serialize;
use serde_json::Value;

/// Where an object stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Nothing to wait for.
    Ready,
    /// Not ready yet, but may become ready without anyone acting (a dependency, a rollout,
    /// a controller that has not reconciled it yet, Kueue that has not admitted it).
    Progressing,
    /// Needs a person: `--wait` stops on it.
    Failed,
    /// Not on the server. Set by the caller, never returned for an object.
    Missing,
}

/// One object's readiness, as shown to a person.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Health {
    /// Where the object stands.
    pub state: State,
    /// Machine-readable cause given by the server: a condition reason (`UpdateFailed`), a
    /// KNV code (`KNV1021`), Argo CD's status (`OutOfSync`). None when ready.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The server's message for it, cut to [`MAX_MESSAGE`] characters.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A short summary worth showing even when ready (`3/4 replicas available`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a sync root applied, and the errors it reports.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Synced {
    /// Commit applied (RootSync `status.sync.commit`, Application `status.sync.revision`).
    pub commit: Option<String>,
    /// Whether `commit` is the repository's HEAD (None when either is unknown).
    pub at_head: Option<bool>,
    /// Errors reported, first ones first, at most [`MAX_ERRORS`].
    pub errors: Vec<SyncError>,
}

/// One error a sync root reports.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SyncError {
    /// Its code (`KNV2009`, or Argo CD's condition type `ComparisonError`), when there is one.
    pub code: Option<String>,
    /// The server's message, cut to [`MAX_MESSAGE`] characters.
    pub message: String,
}

/// Longest message kept from the server, in characters; longer text is cut with `…`.
pub const MAX_MESSAGE: usize = 400;
/// Most errors kept from one sync root.
pub const MAX_ERRORS: usize = 20;
/// Longest reason, name or quantity kept from an object, in characters.
const MAX_WORD: usize = 80;
/// Most entries of any list read from an object (conditions, metrics, errors per list).
const MAX_ITEMS: usize = 256;
/// Most entries summarised in one detail.
const MAX_SHOWN: usize = 4;

const NOT_RECONCILED: &str = "not reconciled yet";
const SUSPENDED: &str = "suspended (waiting for admission)";
const TPU_TOPOLOGY: &str = "cloud.google.com/gke-tpu-topology";
const ACCELERATOR_LABELS: [&str; 2] = [
    "cloud.google.com/gke-tpu-accelerator",
    "cloud.google.com/gke-accelerator",
];

/// Any object, dispatched on its group (apiVersion's group, "" for core) and kind.
pub fn assess(group: &str, kind: &str, object: &Value) -> Health {
    if group == "cnrm.cloud.google.com" || group.ends_with(".cnrm.cloud.google.com") {
        return config_connector(object);
    }
    match (group, kind) {
        ("apps", "Deployment") => deployment(object),
        ("apps", "StatefulSet") => stateful_set(object),
        ("apps", "DaemonSet") => daemon_set(object),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") => leader_worker_set(object),
        ("jobset.x-k8s.io", "JobSet") => job_set(object),
        ("batch", "Job") => job(object),
        ("autoscaling", "HorizontalPodAutoscaler") => hpa(object),
        ("kueue.x-k8s.io", "Workload") => kueue_workload(object),
        ("kueue.x-k8s.io", "ClusterQueue" | "LocalQueue") => kueue_queue(object),
        ("monitoring.googleapis.com", "PodMonitoring" | "ClusterPodMonitoring") => {
            pod_monitoring(object)
        }
        ("configsync.gke.io", "RootSync" | "RepoSync") | ("argoproj.io", "Application") => {
            sync_root(kind, object, None).0
        }
        ("", "Service") => service(object),
        ("", "PersistentVolumeClaim") => claim(object),
        ("", "Namespace") => namespace(object),
        ("", "Node") => node_pool(&[object], None),
        _ => generic(object),
    }
}

/// A Config Sync RootSync/RepoSync or an Argo CD Application: its health, plus what it
/// synced. `head`: the full commit id of the repository's HEAD, when known.
pub fn sync_root(kind: &str, object: &Value, head: Option<&str>) -> (Health, Synced) {
    match kind {
        "RootSync" | "RepoSync" => config_sync(object, head),
        "Application" => argo_application(object, head),
        _ => (generic(object), Synced::default()),
    }
}

/// A Kueue `Workload`: admitted (detail: the ClusterQueue), finished, or pending with the
/// reason Kueue gives; evicted for good, deactivated, rejected or inadmissible is Failed.
pub fn kueue_workload(object: &Value) -> Health {
    let queue = word_at(object, "/status/admission/clusterQueue");
    if object.pointer("/spec/active") == Some(&Value::Bool(false)) {
        return Health::failed("Deactivated", None).detail("deactivated (spec.active is false)");
    }
    if let Some(c) = condition(object, "Finished").filter(Cond::is_true) {
        // Succeeded is the only good end; Failed, AdmissionChecksRejected, OutOfSync need a person.
        return match c.reason {
            Some("Succeeded") | None => Health::ready(Some("finished".into())),
            Some(reason) => Health::failed(reason, c.message).detail("finished"),
        };
    }
    for check in items(object.pointer("/status/admissionChecks")) {
        if str_at(check, "/state") == Some("Rejected") {
            let name = word_at(check, "/name").unwrap_or_default();
            return Health::failed("AdmissionCheckRejected", str_at(check, "/message"))
                .detail(format!("rejected by admission check {name}"));
        }
    }
    if let Some(c) = condition(object, "Evicted").filter(Cond::is_true) {
        // Preemption and timeouts requeue the workload; these do not come back by themselves.
        let terminal = [
            "Deactivated",
            "InactiveWorkload",
            "RequeuingLimitExceeded",
            "MaximumExecutionTimeExceeded",
        ];
        let reason = c.reason.unwrap_or("Evicted");
        return if terminal.contains(&reason) {
            Health::failed(reason, c.message).detail("evicted")
        } else {
            Health::progressing(Some(reason), c.message).detail("evicted, waiting to be requeued")
        };
    }
    if condition(object, "Admitted").is_some_and(|c| c.is_true()) {
        let detail = match queue {
            Some(queue) => format!("admitted to ClusterQueue {queue}"),
            None => "admitted".into(),
        };
        return Health::ready(Some(detail));
    }
    match condition(object, "QuotaReserved") {
        Some(c) if c.is_true() => {
            let pending = condition(object, "Admitted");
            let detail = match queue {
                Some(queue) => format!("quota reserved in ClusterQueue {queue}, checks pending"),
                None => "quota reserved, checks pending".into(),
            };
            Health::progressing(
                pending.and_then(|c| c.reason),
                pending.and_then(|c| c.message),
            )
            .detail(detail)
        }
        Some(c) if c.reason == Some("Inadmissible") => {
            Health::failed("Inadmissible", c.message).detail("inadmissible")
        }
        Some(c) => Health::progressing(c.reason, c.message).detail("pending"),
        None => Health::progressing(None, None).detail("not yet considered by Kueue"),
    }
}

/// Nodes of one node pool (core/v1 Node objects): how many are Ready, their accelerator and
/// topology; Failed when a node's TPU topology label differs from `expected_topology`.
pub fn node_pool(nodes: &[&Value], expected_topology: Option<&str>) -> Health {
    let Some(first) = nodes.first() else {
        return Health::ready(Some("0 nodes (scaled to zero)".into()));
    };
    let ready = nodes
        .iter()
        .filter(|node| condition(node, "Ready").is_some_and(|c| c.is_true()))
        .count();
    let mut detail = format!("{ready}/{} nodes ready", nodes.len());
    let accelerator = ACCELERATOR_LABELS
        .iter()
        .find_map(|label| label_of(first, label));
    if let Some(accelerator) = accelerator {
        detail.push_str(&format!(", {accelerator}"));
        if let Some(topology) = label_of(first, TPU_TOPOLOGY) {
            detail.push_str(&format!(" {topology}"));
        }
    }
    if let Some(expected) = expected_topology {
        let wrong: Vec<&&Value> = nodes
            .iter()
            .filter(|node| label_of(node, TPU_TOPOLOGY).as_deref() != Some(expected))
            .collect();
        if let Some(node) = wrong.first() {
            let name = word_at(node, "/metadata/name").unwrap_or_default();
            let found = label_of(node, TPU_TOPOLOGY).unwrap_or_else(|| "none".into());
            let expected = cut(expected, MAX_WORD);
            let mut message = format!("node {name} has TPU topology {found}, expected {expected}");
            if wrong.len() > 1 {
                message.push_str(&format!(" (and {} more nodes)", wrong.len() - 1));
            }
            return Health::failed("TopologyMismatch", Some(&message)).detail(detail);
        }
    }
    if let Some(node) = nodes
        .iter()
        .find(|node| !condition(node, "Ready").is_some_and(|c| c.is_true()))
    {
        let c = condition(node, "Ready");
        return Health::progressing(c.and_then(|c| c.reason), c.and_then(|c| c.message))
            .detail(detail);
    }
    Health::ready(Some(detail))
}

impl Health {
    fn ready(detail: Option<String>) -> Self {
        Self {
            state: State::Ready,
            reason: None,
            message: None,
            detail,
        }
    }

    fn progressing(reason: Option<&str>, message: Option<&str>) -> Self {
        Self::with(State::Progressing, reason, message)
    }

    fn failed(reason: &str, message: Option<&str>) -> Self {
        Self::with(State::Failed, Some(reason), message)
    }

    fn with(state: State, reason: Option<&str>, message: Option<&str>) -> Self {
        Self {
            state,
            reason: reason.filter(|r| !r.is_empty()).map(|r| cut(r, MAX_WORD)),
            message: message
                .filter(|m| !m.is_empty())
                .map(|m| cut(m, MAX_MESSAGE)),
            detail: None,
        }
    }

    fn detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }
}

/// One entry of `status.conditions`.
#[derive(Clone, Copy)]
struct Cond<'a> {
    status: Option<&'a str>,
    reason: Option<&'a str>,
    message: Option<&'a str>,
}

impl Cond<'_> {
    fn is_true(&self) -> bool {
        self.status == Some("True")
    }

    fn is_false(&self) -> bool {
        self.status == Some("False")
    }
}

/// The first condition of type `kind` among the first [`MAX_ITEMS`] conditions.
fn condition<'a>(object: &'a Value, kind: &str) -> Option<Cond<'a>> {
    items(object.pointer("/status/conditions"))
        .find(|c| str_at(c, "/type") == Some(kind))
        .map(|c| Cond {
            status: str_at(c, "/status"),
            reason: str_at(c, "/reason"),
            message: str_at(c, "/message"),
        })
}

/// The first [`MAX_ITEMS`] entries of an array; nothing for anything else.
fn items(value: Option<&Value>) -> impl Iterator<Item = &Value> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .take(MAX_ITEMS)
}

fn str_at<'a>(object: &'a Value, pointer: &str) -> Option<&'a str> {
    object.pointer(pointer).and_then(Value::as_str)
}

/// A string field cut to [`MAX_WORD`], for names and reasons put into a detail.
fn word_at(object: &Value, pointer: &str) -> Option<String> {
    str_at(object, pointer)
        .filter(|s| !s.is_empty())
        .map(|s| cut(s, MAX_WORD))
}

fn int_at(object: &Value, pointer: &str) -> Option<i64> {
    object.pointer(pointer).and_then(Value::as_i64)
}

fn label_of(node: &Value, label: &str) -> Option<String> {
    node.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(label))
        .and_then(Value::as_str)
        .map(|s| cut(s, MAX_WORD))
}

/// A string or number (Kubernetes quantities may be either), cut to [`MAX_WORD`].
fn scalar(value: Option<&Value>) -> Option<String> {
    match value? {
        Value::String(s) => Some(cut(s, MAX_WORD)),
        Value::Number(n) => Some(cut(&n.to_string(), MAX_WORD)),
        _ => None,
    }
}

/// A metric source's name: `name` for resource metrics, `metric.name` for the others.
fn metric_name(source: &Value) -> Option<&str> {
    str_at(source, "/name").or_else(|| str_at(source, "/metric/name"))
}

/// `text` cut to `max` characters, the last one `…` when cut.
fn cut(text: &str, max: usize) -> String {
    let mut chars = text.char_indices();
    match chars.nth(max) {
        None => text.to_owned(),
        Some(_) => {
            let end = text
                .char_indices()
                .nth(max.saturating_sub(1))
                .map_or(0, |(at, _)| at);
            format!("{}…", &text[..end])
        }
    }
}

/// The controller has not seen the latest spec: `status.observedGeneration` is behind
/// `metadata.generation` (objects whose controller never sets it are never stale).
fn stale(object: &Value) -> bool {
    match (
        int_at(object, "/metadata/generation"),
        int_at(object, "/status/observedGeneration"),
    ) {
        (Some(generation), Some(observed)) => observed < generation,
        _ => false,
    }
}

/// The first 7 characters of a commit id, as people quote them.
fn short(commit: &str) -> String {
    commit.chars().take(7).collect()
}

fn config_connector(object: &Value) -> Health {
    if stale(object) {
        return Health::progressing(None, None).detail(NOT_RECONCILED);
    }
    let Some(ready) = condition(object, "Ready") else {
        return Health::progressing(None, None).detail(NOT_RECONCILED);
    };
    if ready.is_true() {
        return Health::ready(None);
    }
    // Config Connector's reasons (pkg/k8s/constants.go): these wait for a person; the others
    // (DependencyNotReady, DependencyNotFound, Updating, Deleting) resolve by themselves.
    const FAILED: [&str; 8] = [
        "CreateFailed",
        "UpdateFailed",
        "DeleteFailed",
        "DependencyInvalid",
        "ManagementConflict",
        "PreActuationTransformFailed",
        "PostActuationTransformFailed",
        "Unmanaged",
    ];
    match ready.reason {
        Some(reason) if FAILED.contains(&reason) => Health::failed(reason, ready.message),
        reason => Health::progressing(reason, ready.message),
    }
}

/// The conditions every apps workload shares: stale, ProgressDeadlineExceeded, ReplicaFailure.
fn rollout_blocked(object: &Value) -> Option<Health> {
    if stale(object) || object.get("status").is_none_or(Value::is_null) {
        return Some(Health::progressing(None, None).detail(NOT_RECONCILED));
    }
    if let Some(c) = condition(object, "ReplicaFailure").filter(Cond::is_true) {
        return Some(Health::failed(
            c.reason.unwrap_or("ReplicaFailure"),
            c.message,
        ));
    }
    let deadline = condition(object, "Progressing")
        .filter(|c| c.is_false() && c.reason == Some("ProgressDeadlineExceeded"));
    deadline.map(|c| Health::failed("ProgressDeadlineExceeded", c.message))
}

/// Ready when `have` reaches `want` and every replica runs the latest template.
fn replicas(have: i64, want: i64, updated: i64, noun: &str) -> Health {
    let detail = format!("{have}/{want} {noun}");
    if updated < want {
        Health::progressing(None, None).detail(format!("{detail}, {updated} updated"))
    } else if have < want {
        Health::progressing(None, None).detail(detail)
    } else {
        Health::ready(Some(detail))
    }
}

fn deployment(object: &Value) -> Health {
    if let Some(blocked) = rollout_blocked(object) {
        return blocked;
    }
    let want = int_at(object, "/spec/replicas").unwrap_or(1);
    let total = int_at(object, "/status/replicas").unwrap_or(0);
    let updated = int_at(object, "/status/updatedReplicas").unwrap_or(0);
    let available = int_at(object, "/status/availableReplicas").unwrap_or(0);
    if total > updated && updated >= want {
        let old = total.saturating_sub(updated);
        return Health::progressing(None, None).detail(format!(
            "{available}/{want} replicas available, {old} old replicas terminating"
        ));
    }
    replicas(available, want, updated, "replicas available")
}

fn stateful_set(object: &Value) -> Health {
    if let Some(blocked) = rollout_blocked(object) {
        return blocked;
    }
    let want = int_at(object, "/spec/replicas").unwrap_or(1);
    let ready = int_at(object, "/status/readyReplicas").unwrap_or(0);
    // OnDelete and partitioned rollouts update only when someone deletes pods or moves the
    // partition: the replicas being ready is all there is to wait for.
    let waits_for_update = str_at(object, "/spec/updateStrategy/type") != Some("OnDelete")
        && int_at(object, "/spec/updateStrategy/rollingUpdate/partition").unwrap_or(0) == 0;
    let updated = if waits_for_update {
        int_at(object, "/status/updatedReplicas").unwrap_or(0)
    } else {
        want
    };
    replicas(ready, want, updated, "replicas ready")
}

fn daemon_set(object: &Value) -> Health {
    if let Some(blocked) = rollout_blocked(object) {
        return blocked;
    }
    let want = int_at(object, "/status/desiredNumberScheduled").unwrap_or(0);
    let available = int_at(object, "/status/numberAvailable").unwrap_or(0);
    let updated = if str_at(object, "/spec/updateStrategy/type") == Some("OnDelete") {
        want
    } else {
        int_at(object, "/status/updatedNumberScheduled").unwrap_or(0)
    };
    replicas(available, want, updated, "pods available")
}

fn leader_worker_set(object: &Value) -> Health {
    if let Some(blocked) = rollout_blocked(object) {
        return blocked;
    }
    let want = int_at(object, "/spec/replicas").unwrap_or(1);
    let ready = int_at(object, "/status/readyReplicas").unwrap_or(0);
    let detail = format!("{ready}/{want} groups ready");
    if let Some(c) = condition(object, "UpdateInProgress").filter(Cond::is_true) {
        return Health::progressing(c.reason, c.message).detail(detail);
    }
    if condition(object, "Available").is_some_and(|c| c.is_true()) {
        return Health::ready(Some(detail));
    }
    let why = condition(object, "Progressing").or_else(|| condition(object, "Available"));
    Health::progressing(why.and_then(|c| c.reason), why.and_then(|c| c.message)).detail(detail)
}

fn job_set(object: &Value) -> Health {
    let terminal = str_at(object, "/status/terminalState");
    if let Some(c) = condition(object, "Failed").filter(Cond::is_true) {
        return Health::failed(c.reason.unwrap_or("Failed"), c.message);
    }
    if terminal == Some("Failed") {
        return Health::failed("Failed", None);
    }
    if condition(object, "Completed").is_some_and(|c| c.is_true()) || terminal == Some("Completed")
    {
        return Health::ready(Some("completed".into()));
    }
    let suspended = condition(object, "Suspended").filter(Cond::is_true);
    if suspended.is_some() || object.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        return Health::progressing(suspended.and_then(|c| c.reason), None).detail(SUSPENDED);
    }
    let jobs: Vec<&Value> = items(object.pointer("/status/replicatedJobsStatus")).collect();
    if jobs.is_empty() {
        return Health::progressing(None, None).detail("no jobs started yet");
    }
    let wanted = |name: Option<&str>| {
        items(object.pointer("/spec/replicatedJobs"))
            .find(|job| str_at(job, "/name") == name)
            .and_then(|job| int_at(job, "/replicas"))
    };
    let mut parts: Vec<String> = jobs
        .iter()
        .take(MAX_SHOWN)
        .map(|job| {
            let name = word_at(job, "/name").unwrap_or_else(|| "jobs".into());
            let ready = int_at(job, "/ready").unwrap_or(0);
            match wanted(str_at(job, "/name")) {
                Some(want) => format!("{name} {ready}/{want} ready"),
                None => format!("{name} {ready} ready"),
            }
        })
        .collect();
    if jobs.len() > MAX_SHOWN {
        parts.push(format!("+{} more", jobs.len() - MAX_SHOWN));
    }
    let restarts = int_at(object, "/status/restarts").unwrap_or(0);
    if restarts > 0 {
        parts.push(format!("{restarts} restarts"));
    }
    Health::ready(Some(parts.join(", ")))
}

fn job(object: &Value) -> Health {
    for failed in ["Failed", "FailureTarget"] {
        if let Some(c) = condition(object, failed).filter(Cond::is_true) {
            return Health::failed(c.reason.unwrap_or(failed), c.message);
        }
    }
    for done in ["Complete", "SuccessCriteriaMet"] {
        if condition(object, done).is_some_and(|c| c.is_true()) {
            return Health::ready(Some("completed".into()));
        }
    }
    let suspended = condition(object, "Suspended").filter(Cond::is_true);
    if suspended.is_some() || object.pointer("/spec/suspend") == Some(&Value::Bool(true)) {
        return Health::progressing(suspended.and_then(|c| c.reason), None).detail(SUSPENDED);
    }
    if object.pointer("/status/startTime").is_none() {
        return Health::progressing(None, None).detail("not started yet");
    }
    let active = int_at(object, "/status/active").unwrap_or(0);
    let succeeded = int_at(object, "/status/succeeded").unwrap_or(0);
    let detail = match int_at(object, "/spec/completions") {
        Some(want) => format!("{active} active, {succeeded}/{want} succeeded"),
        None => format!("{active} active, {succeeded} succeeded"),
    };
    Health::ready(Some(detail))
}

fn hpa(object: &Value) -> Health {
    let current: Vec<&Value> = items(object.pointer("/status/currentMetrics")).collect();
    let specs: Vec<&Value> = items(object.pointer("/spec/metrics")).collect();
    let mut parts: Vec<String> = specs
        .iter()
        .take(MAX_SHOWN)
        .filter_map(|spec| metric(spec, &current))
        .collect();
    if specs.len() > MAX_SHOWN {
        parts.push(format!("+{} more metrics", specs.len() - MAX_SHOWN));
    }
    let replicas = int_at(object, "/status/currentReplicas").unwrap_or(0);
    let min = int_at(object, "/spec/minReplicas").unwrap_or(1);
    let max = int_at(object, "/spec/maxReplicas").unwrap_or(0);
    parts.push(format!("{replicas} replicas ({min}–{max})"));
    let detail = parts.join(", ");
    for kind in ["AbleToScale", "ScalingActive"] {
        if let Some(c) = condition(object, kind).filter(Cond::is_false) {
            return Health::progressing(c.reason, c.message).detail(detail);
        }
    }
    Health::ready(Some(detail))
}

/// One `spec.metrics` entry with its current value: `cpu 45% / target 60%`.
fn metric(spec: &Value, current: &[&Value]) -> Option<String> {
    let kind = str_at(spec, "/type")?;
    let key = match kind {
        "Resource" => "resource",
        "ContainerResource" => "containerResource",
        "Pods" => "pods",
        "Object" => "object",
        "External" => "external",
        _ => return None,
    };
    let source = spec.get(key)?;
    let name = metric_name(source)?;
    let now = current
        .iter()
        .filter(|m| str_at(m, "/type") == Some(kind))
        .filter_map(|m| m.get(key))
        .find(|m| metric_name(m) == Some(name))
        .and_then(|m| m.get("current"));
    let target = source.get("target")?;
    let shown = cut(name, MAX_WORD);
    if let Some(percent) = scalar(target.get("averageUtilization")) {
        let now = scalar(now.and_then(|n| n.get("averageUtilization")));
        let now = now.map_or("<unknown>".into(), |n| format!("{n}%"));
        return Some(format!("{shown} {now} / target {percent}%"));
    }
    let field = if target.get("averageValue").is_some() {
        "averageValue"
    } else {
        "value"
    };
    let wanted = scalar(target.get(field))?;
    let now = scalar(now.and_then(|n| n.get(field))).unwrap_or_else(|| "<unknown>".into());
    Some(format!("{shown} {now} / target {wanted}"))
}

fn kueue_queue(object: &Value) -> Health {
    let Some(active) = condition(object, "Active") else {
        return Health::progressing(None, None).detail(NOT_RECONCILED);
    };
    let admitted = int_at(object, "/status/admittedWorkloads").unwrap_or(0);
    let pending = int_at(object, "/status/pendingWorkloads").unwrap_or(0);
    let detail = format!("{admitted} admitted, {pending} pending");
    if active.is_true() {
        return Health::ready(Some(detail));
    }
    // A stopped queue or a contradictory admission-check setup waits for a person; missing
    // flavors and checks appear as the rest of the sync lands.
    let needs_person = ["Stopped", "MultipleSingleInstance", "AppliedPerFlavor"];
    match active.reason {
        Some(reason) if needs_person.iter().any(|p| reason.contains(p)) => {
            Health::failed(reason, active.message).detail(detail)
        }
        reason => Health::progressing(reason, active.message).detail(detail),
    }
}

fn pod_monitoring(object: &Value) -> Health {
    if stale(object) {
        return Health::progressing(None, None).detail(NOT_RECONCILED);
    }
    let Some(created) = condition(object, "ConfigurationCreateSuccess") else {
        return Health::progressing(None, None).detail(NOT_RECONCILED);
    };
    if !created.is_true() {
        return Health::failed(
            created.reason.unwrap_or("ConfigurationCreateFailed"),
            created.message,
        );
    }
    let endpoints: Vec<&Value> = items(object.pointer("/status/endpointStatuses")).collect();
    if endpoints.is_empty() {
        return Health::ready(None);
    }
    let sum = |field: &str| {
        endpoints
            .iter()
            .filter_map(|e| int_at(e, field))
            .fold(0i64, i64::saturating_add)
    };
    let (active, unhealthy) = (sum("/activeTargets"), sum("/unhealthyTargets"));
    Health::ready(Some(format!("{active} targets, {unhealthy} unhealthy")))
}

fn service(object: &Value) -> Health {
    if str_at(object, "/spec/type") != Some("LoadBalancer") {
        return Health::ready(None);
    }
    let first = items(object.pointer("/status/loadBalancer/ingress")).next();
    match first.and_then(|i| word_at(i, "/ip").or_else(|| word_at(i, "/hostname"))) {
        Some(address) => Health::ready(Some(format!("address {address}"))),
        None => Health::progressing(None, None).detail("waiting for an address"),
    }
}

fn claim(object: &Value) -> Health {
    match str_at(object, "/status/phase") {
        Some("Bound") => Health::ready(Some("bound".into())),
        Some("Lost") => Health::failed("Lost", Some("the bound volume no longer exists")),
        // Pending is normal until a pod uses a WaitForFirstConsumer claim.
        _ => Health::progressing(None, None).detail("pending"),
    }
}

fn namespace(object: &Value) -> Health {
    match str_at(object, "/status/phase") {
        Some("Terminating") => Health::progressing(None, None).detail("terminating"),
        _ => Health::ready(None),
    }
}

/// Anything else: its `Ready` condition when it has one; it exists and nothing says otherwise.
fn generic(object: &Value) -> Health {
    match condition(object, "Ready") {
        Some(c) if !c.is_true() => Health::progressing(c.reason, c.message),
        _ => Health::ready(None),
    }
}

/// Config Sync's errors carry the bare number (`"2009"`); people know them as `KNV2009`.
fn knv_code(code: Option<&str>, message: &str) -> Option<String> {
    match code.map(str::trim).filter(|c| !c.is_empty()) {
        Some(code) if code.bytes().all(|b| b.is_ascii_digit()) => {
            Some(cut(&format!("KNV{code}"), MAX_WORD))
        }
        Some(code) => Some(cut(code, MAX_WORD)),
        None => {
            let prefix = message.get(..7)?;
            (prefix.starts_with("KNV") && prefix[3..].bytes().all(|b| b.is_ascii_digit()))
                .then(|| prefix.to_owned())
        }
    }
}

fn config_sync(object: &Value, head: Option<&str>) -> (Health, Synced) {
    let errors: Vec<SyncError> = ["source", "rendering", "sync"]
        .iter()
        .flat_map(|stage| items(object.pointer(&format!("/status/{stage}/errors"))))
        .take(MAX_ERRORS)
        .map(|e| {
            let message = str_at(e, "/errorMessage").unwrap_or_default();
            SyncError {
                code: knv_code(str_at(e, "/code"), message),
                message: cut(message, MAX_MESSAGE),
            }
        })
        .collect();
    let commit = str_at(object, "/status/sync/commit").filter(|c| !c.is_empty());
    let synced = Synced {
        commit: commit.map(|c| cut(c, MAX_WORD)),
        at_head: at_head(commit, head),
        errors,
    };
    let health = if let Some(c) = condition(object, "Stalled").filter(Cond::is_true) {
        Health::failed(c.reason.unwrap_or("Stalled"), c.message)
    } else if let Some(first) = synced.errors.first() {
        let mut health = Health::with(State::Failed, first.code.as_deref(), Some(&first.message));
        if synced.errors.len() > 1 {
            health = health.detail(format!("{} errors", synced.errors.len()));
        }
        health
    } else if stale(object) {
        Health::progressing(None, None).detail(NOT_RECONCILED)
    } else if let Some(c) = ["Reconciling", "Syncing"]
        .iter()
        .find_map(|kind| condition(object, kind).filter(Cond::is_true))
    {
        Health::progressing(c.reason, c.message).detail(match commit {
            Some(commit) => format!("syncing, last {}", short(commit)),
            None => "syncing".into(),
        })
    } else {
        let source = str_at(object, "/status/source/commit").filter(|c| !c.is_empty());
        match (commit, source) {
            (Some(commit), Some(source)) if commit != source => Health::progressing(None, None)
                .detail(format!(
                    "synced {}, fetched {}",
                    short(commit),
                    short(source)
                )),
            _ => applied(commit, head),
        }
    };
    (health, synced)
}

fn at_head(commit: Option<&str>, head: Option<&str>) -> Option<bool> {
    Some(commit?.trim().eq_ignore_ascii_case(head?.trim()))
}

/// Synced without errors: Ready at HEAD (or HEAD unknown), Progressing behind it.
fn applied(commit: Option<&str>, head: Option<&str>) -> Health {
    let Some(commit) = commit else {
        return Health::progressing(None, None).detail("nothing synced yet");
    };
    match (at_head(Some(commit), head), head) {
        (Some(false), Some(head)) => Health::progressing(None, None).detail(format!(
            "synced {}, HEAD is {}",
            short(commit),
            short(head)
        )),
        (Some(true), _) => Health::ready(Some(format!("synced {} (HEAD)", short(commit)))),
        _ => Health::ready(Some(format!("synced {}", short(commit)))),
    }
}

fn argo_application(object: &Value, head: Option<&str>) -> (Health, Synced) {
    let commit = str_at(object, "/status/sync/revision")
        .or_else(|| str_at(object, "/status/sync/revisions/0"))
        .filter(|c| !c.is_empty());
    let phase = str_at(object, "/status/operationState/phase");
    let operation_message = str_at(object, "/status/operationState/message");
    let operation_failed = matches!(phase, Some("Failed" | "Error"));
    let mut errors: Vec<SyncError> = Vec::new();
    if operation_failed {
        errors.push(SyncError {
            code: None,
            message: cut(
                operation_message.unwrap_or("sync operation failed"),
                MAX_MESSAGE,
            ),
        });
    }
    // Argo CD names its error conditions `…Error` (SyncError, ComparisonError,
    // InvalidSpecError); `…Warning` conditions are not errors.
    let failing = items(object.pointer("/status/conditions"))
        .filter(|c| str_at(c, "/type").is_some_and(|t| t.ends_with("Error")));
    for c in failing {
        if errors.len() == MAX_ERRORS {
            break;
        }
        errors.push(SyncError {
            code: word_at(c, "/type"),
            message: cut(str_at(c, "/message").unwrap_or_default(), MAX_MESSAGE),
        });
    }
    let sync = str_at(object, "/status/sync/status").unwrap_or("Unknown");
    let health = str_at(object, "/status/health/status").unwrap_or("Unknown");
    let health_message = str_at(object, "/status/health/message");
    let state = if operation_failed {
        Health::failed(phase.unwrap_or("Failed"), operation_message)
    } else if let Some(first) = errors.first() {
        Health::with(State::Failed, first.code.as_deref(), Some(&first.message))
    } else if health == "Degraded" {
        Health::failed("Degraded", health_message)
    } else if matches!(phase, Some("Running" | "Terminating")) {
        Health::progressing(phase, operation_message).detail("sync operation running")
    } else if sync != "Synced" {
        Health::progressing(Some(sync), None)
    } else if health != "Healthy" {
        Health::progressing(Some(health), health_message)
    } else {
        applied(commit, head)
    };
    let synced = Synced {
        commit: commit.map(|c| cut(c, MAX_WORD)),
        at_head: at_head(commit, head),
        errors,
    };
    (state, synced)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn health(
        state: State,
        reason: Option<&str>,
        message: Option<&str>,
        detail: Option<&str>,
    ) -> Health {
        Health {
            state,
            reason: reason.map(str::to_owned),
            message: message.map(str::to_owned),
            detail: detail.map(str::to_owned),
        }
    }

    fn ready(detail: Option<&str>) -> Health {
        health(State::Ready, None, None, detail)
    }

    fn progressing(detail: &str) -> Health {
        health(State::Progressing, None, None, Some(detail))
    }

    /// An object with `generation` 2 and the given status.
    fn with_status(spec: Value, status: Value) -> Value {
        json!({"metadata": {"name": "x", "generation": 2}, "spec": spec, "status": status})
    }

    fn conditions(list: Value) -> Value {
        with_status(
            json!({}),
            json!({"observedGeneration": 2, "conditions": list}),
        )
    }

    #[test]
    fn cut_keeps_short_text_and_cuts_long_text_on_a_character() {
        assert_eq!(cut("short", 10), "short");
        assert_eq!(cut("exactly10!", 10), "exactly10!");
        let long = "é".repeat(1000);
        let kept = cut(&long, MAX_MESSAGE);
        assert_eq!(kept.chars().count(), MAX_MESSAGE);
        assert!(kept.ends_with("é…"));
    }

    #[test]
    fn state_and_health_serialize_for_json_output() {
        let failed = health(State::Failed, Some("UpdateFailed"), Some("boom"), None);
        assert_eq!(
            serde_json::to_value(&failed).unwrap(),
            json!({"state": "failed", "reason": "UpdateFailed", "message": "boom"})
        );
        assert_eq!(
            serde_json::to_value(State::Missing).unwrap(),
            json!("missing")
        );
        assert_eq!(
            serde_json::to_value(Synced::default()).unwrap(),
            json!({"commit": null, "at_head": null, "errors": []})
        );
    }

    #[test]
    fn config_connector_ready_condition() {
        let object = |reason: &str, status: &str| {
            conditions(json!([{"type": "Ready", "status": status, "reason": reason,
                "message": format!("{reason} message")}]))
        };
        let iam = "iam.cnrm.cloud.google.com";
        assert_eq!(
            assess(iam, "IAMPolicyMember", &object("UpToDate", "True")),
            ready(None)
        );
        for failed in [
            "UpdateFailed",
            "DependencyInvalid",
            "ManagementConflict",
            "Unmanaged",
        ] {
            let got = assess(
                "container.cnrm.cloud.google.com",
                "ContainerNodePool",
                &object(failed, "False"),
            );
            let message = format!("{failed} message");
            assert_eq!(
                got,
                health(State::Failed, Some(failed), Some(&message), None)
            );
        }
        for waiting in ["DependencyNotReady", "DependencyNotFound", "Updating"] {
            let got = assess(iam, "IAMServiceAccount", &object(waiting, "False"));
            let message = format!("{waiting} message");
            assert_eq!(
                got,
                health(State::Progressing, Some(waiting), Some(&message), None)
            );
        }
        let mut stale = object("UpdateFailed", "False");
        stale["status"]["observedGeneration"] = json!(1);
        assert_eq!(
            assess(iam, "IAMPolicy", &stale),
            progressing(NOT_RECONCILED)
        );
        let fresh = with_status(json!({}), json!({}));
        assert_eq!(
            assess("cnrm.cloud.google.com", "Any", &fresh),
            progressing(NOT_RECONCILED)
        );
    }

    fn deployment_object(updated: i64, available: i64, total: i64) -> Value {
        with_status(
            json!({"replicas": 3}),
            json!({"observedGeneration": 2, "replicas": total, "updatedReplicas": updated,
                "readyReplicas": available, "availableReplicas": available,
                "conditions": [{"type": "Available", "status": "True"},
                    {"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable"}]}),
        )
    }

    #[test]
    fn deployment_rollout() {
        let assess = |object: &Value| assess("apps", "Deployment", object);
        assert_eq!(
            assess(&deployment_object(3, 3, 3)),
            ready(Some("3/3 replicas available"))
        );
        assert_eq!(
            assess(&deployment_object(1, 3, 4)),
            progressing("3/3 replicas available, 1 updated")
        );
        assert_eq!(
            assess(&deployment_object(3, 2, 4)),
            progressing("2/3 replicas available, 1 old replicas terminating")
        );
        assert_eq!(
            assess(&deployment_object(3, 2, 3)),
            progressing("2/3 replicas available")
        );
        let mut stuck = deployment_object(1, 2, 3);
        stuck["status"]["conditions"][1] = json!({"type": "Progressing", "status": "False",
            "reason": "ProgressDeadlineExceeded", "message": "ReplicaSet \"web-5d\" has timed out progressing."});
        assert_eq!(
            assess(&stuck),
            health(
                State::Failed,
                Some("ProgressDeadlineExceeded"),
                Some("ReplicaSet \"web-5d\" has timed out progressing."),
                None
            )
        );
        let mut quota = deployment_object(1, 2, 3);
        quota["status"]["conditions"][0] = json!({"type": "ReplicaFailure", "status": "True",
            "reason": "FailedCreate", "message": "exceeded quota"});
        assert_eq!(
            assess(&quota),
            health(
                State::Failed,
                Some("FailedCreate"),
                Some("exceeded quota"),
                None
            )
        );
        let mut stale = deployment_object(3, 3, 3);
        stale["status"]["observedGeneration"] = json!(1);
        assert_eq!(assess(&stale), progressing(NOT_RECONCILED));
        let new = json!({"metadata": {"generation": 1}, "spec": {"replicas": 1}});
        assert_eq!(assess(&new), progressing(NOT_RECONCILED));
    }

    #[test]
    fn stateful_and_daemon_sets() {
        let sts = |ready: i64, updated: i64, partition: i64| {
            let spec = json!({"replicas": 2, "updateStrategy": {"type": "RollingUpdate",
                "rollingUpdate": {"partition": partition}}});
            let status = json!({"observedGeneration": 2, "replicas": 2, "readyReplicas": ready,
                "updatedReplicas": updated, "currentRevision": "a", "updateRevision": "b"});
            assess("apps", "StatefulSet", &with_status(spec, status))
        };
        assert_eq!(sts(2, 2, 0), ready(Some("2/2 replicas ready")));
        assert_eq!(sts(2, 1, 0), progressing("2/2 replicas ready, 1 updated"));
        assert_eq!(sts(2, 1, 1), ready(Some("2/2 replicas ready")));
        assert_eq!(sts(1, 2, 0), progressing("1/2 replicas ready"));
        let ds = |available: i64, updated: i64| {
            let status = json!({"observedGeneration": 2, "desiredNumberScheduled": 4,
                "numberAvailable": available, "updatedNumberScheduled": updated, "numberReady": available});
            assess("apps", "DaemonSet", &with_status(json!({}), status))
        };
        assert_eq!(ds(4, 4), ready(Some("4/4 pods available")));
        assert_eq!(ds(3, 4), progressing("3/4 pods available"));
        assert_eq!(ds(4, 2), progressing("4/4 pods available, 2 updated"));
    }

    #[test]
    fn leader_worker_set_conditions() {
        let lws = |list: Value, ready: i64| {
            let status = json!({"observedGeneration": 2, "readyReplicas": ready, "replicas": 2,
                "updatedReplicas": 2, "conditions": list});
            assess(
                "leaderworkerset.x-k8s.io",
                "LeaderWorkerSet",
                &with_status(json!({"replicas": 2}), status),
            )
        };
        let available = json!({"type": "Available", "status": "True", "reason": "AllGroupsReady"});
        assert_eq!(lws(json!([available]), 2), ready(Some("2/2 groups ready")));
        let updating = json!({"type": "UpdateInProgress", "status": "True", "reason": "GroupsUpdating",
            "message": "Rolling Upgrade is in progress"});
        assert_eq!(
            lws(json!([available, updating]), 1),
            health(
                State::Progressing,
                Some("GroupsUpdating"),
                Some("Rolling Upgrade is in progress"),
                Some("1/2 groups ready")
            )
        );
        let starting = json!([{"type": "Progressing", "status": "True", "reason": "GroupsProgressing",
            "message": "Replicas are progressing"}]);
        assert_eq!(
            lws(starting, 0),
            health(
                State::Progressing,
                Some("GroupsProgressing"),
                Some("Replicas are progressing"),
                Some("0/2 groups ready")
            )
        );
    }

    #[test]
    fn job_set_states() {
        let spec = json!({"replicatedJobs": [{"name": "slice", "replicas": 2}, {"name": "driver", "replicas": 1}]});
        let jobset = |status: Value| {
            assess(
                "jobset.x-k8s.io",
                "JobSet",
                &with_status(spec.clone(), status),
            )
        };
        let failed = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "FailedJobs",
            "message": "jobset failed due to reaching max number of restarts"}], "terminalState": "Failed"});
        assert_eq!(
            jobset(failed),
            health(
                State::Failed,
                Some("FailedJobs"),
                Some("jobset failed due to reaching max number of restarts"),
                None
            )
        );
        let done = json!({"conditions": [{"type": "Completed", "status": "True", "reason": "AllJobsCompleted"}]});
        assert_eq!(jobset(done), ready(Some("completed")));
        let suspended = json!({"conditions": [{"type": "Suspended", "status": "True", "reason": "SuspendedJobs"}]});
        assert_eq!(
            jobset(suspended),
            health(
                State::Progressing,
                Some("SuspendedJobs"),
                None,
                Some(SUSPENDED)
            )
        );
        let running = json!({"restarts": 1, "replicatedJobsStatus": [
            {"name": "slice", "ready": 2, "active": 2, "succeeded": 0, "failed": 0, "suspended": 0},
            {"name": "driver", "ready": 0, "active": 1, "succeeded": 0, "failed": 0, "suspended": 0}]});
        assert_eq!(
            jobset(running),
            ready(Some("slice 2/2 ready, driver 0/1 ready, 1 restarts"))
        );
        assert_eq!(jobset(json!({})), progressing("no jobs started yet"));
    }

    #[test]
    fn batch_job_states() {
        let job = |spec: Value, status: Value| assess("batch", "Job", &with_status(spec, status));
        let failed = json!({"conditions": [{"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
            "message": "Job has reached the specified backoff limit"}]});
        assert_eq!(
            job(json!({}), failed),
            health(
                State::Failed,
                Some("BackoffLimitExceeded"),
                Some("Job has reached the specified backoff limit"),
                None
            )
        );
        let complete =
            json!({"conditions": [{"type": "Complete", "status": "True"}], "succeeded": 1});
        assert_eq!(job(json!({}), complete), ready(Some("completed")));
        assert_eq!(
            job(json!({"suspend": true}), json!({})),
            progressing(SUSPENDED)
        );
        let running = json!({"startTime": "2026-11-27T10:00:00Z", "active": 3, "succeeded": 1});
        assert_eq!(
            job(json!({"completions": 4}), running),
            ready(Some("3 active, 1/4 succeeded"))
        );
        assert_eq!(job(json!({}), json!({})), progressing("not started yet"));
    }

    #[test]
    fn hpa_metrics_and_conditions() {
        let spec = json!({"minReplicas": 1, "maxReplicas": 4, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "External", "external": {"metric": {"name": "pubsub"}, "target": {"type": "Value", "value": "100"}}}]});
        let status = |able: &str, active: &str| {
            json!({"currentReplicas": 2, "desiredReplicas": 2,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "90m"}}},
                {"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "current": {"averageValue": "7500m"}}}],
            "conditions": [
                {"type": "AbleToScale", "status": able, "reason": "ReadyForNewScale"},
                {"type": "ScalingActive", "status": active, "reason": "FailedGetResourceMetric",
                    "message": "the HPA was unable to compute the replica count"}]})
        };
        let hpa = |status: Value| {
            assess(
                "autoscaling",
                "HorizontalPodAutoscaler",
                &with_status(spec.clone(), status),
            )
        };
        let detail = "cpu 45% / target 60%, queue_depth 7500m / target 10, pubsub <unknown> / target 100, 2 replicas (1–4)";
        assert_eq!(hpa(status("True", "True")), ready(Some(detail)));
        assert_eq!(
            hpa(status("True", "False")),
            health(
                State::Progressing,
                Some("FailedGetResourceMetric"),
                Some("the HPA was unable to compute the replica count"),
                Some(detail)
            )
        );
        assert_eq!(
            hpa(status("False", "True")),
            health(
                State::Progressing,
                Some("ReadyForNewScale"),
                None,
                Some(detail)
            )
        );
    }

    fn workload(status: Value) -> Value {
        json!({"metadata": {"name": "job-train-1"}, "spec": {"queueName": "tpu", "active": true}, "status": status})
    }

    #[test]
    fn kueue_workload_admission() {
        let admitted = workload(
            json!({"admission": {"clusterQueue": "tpu-v4"}, "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "True", "reason": "Admitted"}]}),
        );
        assert_eq!(
            kueue_workload(&admitted),
            ready(Some("admitted to ClusterQueue tpu-v4"))
        );
        assert_eq!(
            assess("kueue.x-k8s.io", "Workload", &admitted),
            kueue_workload(&admitted)
        );
        let message = "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu in flavor v5e, 16 more needed";
        let pending = workload(json!({"conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": message}]}));
        assert_eq!(
            kueue_workload(&pending),
            health(
                State::Progressing,
                Some("Pending"),
                Some(message),
                Some("pending")
            )
        );
        let inadmissible = workload(
            json!({"conditions": [{"type": "QuotaReserved", "status": "False",
            "reason": "Inadmissible", "message": "LocalQueue tpu doesn't exist"}]}),
        );
        assert_eq!(
            kueue_workload(&inadmissible),
            health(
                State::Failed,
                Some("Inadmissible"),
                Some("LocalQueue tpu doesn't exist"),
                Some("inadmissible")
            )
        );
        let checking = workload(
            json!({"admission": {"clusterQueue": "tpu-v4"}, "conditions": [
            {"type": "QuotaReserved", "status": "True", "reason": "QuotaReserved"},
            {"type": "Admitted", "status": "False", "reason": "UnsatisfiedChecks",
                "message": "The workload has not all checks ready"}]}),
        );
        assert_eq!(
            kueue_workload(&checking),
            health(
                State::Progressing,
                Some("UnsatisfiedChecks"),
                Some("The workload has not all checks ready"),
                Some("quota reserved in ClusterQueue tpu-v4, checks pending")
            )
        );
        assert_eq!(
            kueue_workload(&workload(json!({}))),
            progressing("not yet considered by Kueue")
        );
    }

    #[test]
    fn kueue_workload_ends() {
        let evicted = |reason: &str| {
            workload(json!({"conditions": [
            {"type": "Evicted", "status": "True", "reason": reason, "message": "evicted"},
            {"type": "QuotaReserved", "status": "False", "reason": "Pending"}]}))
        };
        assert_eq!(
            kueue_workload(&evicted("Preempted")),
            health(
                State::Progressing,
                Some("Preempted"),
                Some("evicted"),
                Some("evicted, waiting to be requeued")
            )
        );
        assert_eq!(
            kueue_workload(&evicted("RequeuingLimitExceeded")),
            health(
                State::Failed,
                Some("RequeuingLimitExceeded"),
                Some("evicted"),
                Some("evicted")
            )
        );
        let mut inactive = workload(json!({}));
        inactive["spec"]["active"] = json!(false);
        assert_eq!(kueue_workload(&inactive).state, State::Failed);
        assert_eq!(
            kueue_workload(&inactive).reason.as_deref(),
            Some("Deactivated")
        );
        let finished = |reason: &str| {
            workload(json!({"conditions": [
            {"type": "Finished", "status": "True", "reason": reason, "message": "Job finished"}]}))
        };
        assert_eq!(
            kueue_workload(&finished("Succeeded")),
            ready(Some("finished"))
        );
        assert_eq!(
            kueue_workload(&finished("Failed")),
            health(
                State::Failed,
                Some("Failed"),
                Some("Job finished"),
                Some("finished")
            )
        );
        let rejected = workload(
            json!({"admissionChecks": [{"name": "dws-prov", "state": "Rejected",
            "message": "Provisioning request failed"}], "conditions": []}),
        );
        assert_eq!(
            kueue_workload(&rejected),
            health(
                State::Failed,
                Some("AdmissionCheckRejected"),
                Some("Provisioning request failed"),
                Some("rejected by admission check dws-prov")
            )
        );
    }

    #[test]
    fn kueue_queues_are_active_or_say_why() {
        let queue = |kind: &str, status: &str, reason: &str| {
            let object = json!({"status": {"admittedWorkloads": 1, "pendingWorkloads": 3, "conditions": [
                {"type": "Active", "status": status, "reason": reason, "message": "Can't admit new workloads"}]}});
            assess("kueue.x-k8s.io", kind, &object)
        };
        assert_eq!(
            queue("ClusterQueue", "True", "Ready"),
            ready(Some("1 admitted, 3 pending"))
        );
        let flavor = queue("ClusterQueue", "False", "FlavorNotFound");
        assert_eq!(flavor.state, State::Progressing);
        assert_eq!(flavor.reason.as_deref(), Some("FlavorNotFound"));
        assert_eq!(flavor.message.as_deref(), Some("Can't admit new workloads"));
        assert_eq!(queue("LocalQueue", "False", "Stopped").state, State::Failed);
        assert_eq!(
            assess(
                "kueue.x-k8s.io",
                "LocalQueue",
                &json!({"spec": {"clusterQueue": "tpu"}})
            ),
            progressing(NOT_RECONCILED)
        );
        assert_eq!(
            assess("kueue.x-k8s.io", "ResourceFlavor", &json!({"spec": {}})),
            ready(None)
        );
    }

    #[test]
    fn pod_monitoring_configuration() {
        let object = |status: &str| {
            json!({"metadata": {"generation": 1}, "status": {"observedGeneration": 1,
            "conditions": [{"type": "ConfigurationCreateSuccess", "status": status,
                "reason": "ConfigurationCreateFailed", "message": "invalid relabel rule"}],
            "endpointStatuses": [{"name": "PodMonitoring/ns/x/metrics", "activeTargets": 4, "unhealthyTargets": 1}]}})
        };
        let group = "monitoring.googleapis.com";
        assert_eq!(
            assess(group, "PodMonitoring", &object("True")),
            ready(Some("4 targets, 1 unhealthy"))
        );
        assert_eq!(
            assess(group, "ClusterPodMonitoring", &object("False")),
            health(
                State::Failed,
                Some("ConfigurationCreateFailed"),
                Some("invalid relabel rule"),
                None
            )
        );
        assert_eq!(
            assess(group, "PodMonitoring", &json!({})),
            progressing(NOT_RECONCILED)
        );
    }

    #[test]
    fn core_objects() {
        let lb = |status: Value| {
            assess(
                "",
                "Service",
                &json!({"spec": {"type": "LoadBalancer"}, "status": status}),
            )
        };
        assert_eq!(
            lb(json!({"loadBalancer": {}})),
            progressing("waiting for an address")
        );
        assert_eq!(
            lb(json!({"loadBalancer": {"ingress": [{"ip": "34.1.2.3"}]}})),
            ready(Some("address 34.1.2.3"))
        );
        assert_eq!(
            assess("", "Service", &json!({"spec": {"type": "ClusterIP"}})),
            ready(None)
        );
        let pvc = |phase: &str| {
            assess(
                "",
                "PersistentVolumeClaim",
                &json!({"status": {"phase": phase}}),
            )
        };
        assert_eq!(pvc("Bound"), ready(Some("bound")));
        assert_eq!(pvc("Pending"), progressing("pending"));
        assert_eq!(pvc("Lost").state, State::Failed);
        let ns = |phase: &str| assess("", "Namespace", &json!({"status": {"phase": phase}}));
        assert_eq!(ns("Terminating"), progressing("terminating"));
        assert_eq!(ns("Active"), ready(None));
    }

    #[test]
    fn anything_else_reads_a_ready_condition() {
        let gateway = json!({"status": {"conditions": [{"type": "Ready", "status": "False",
            "reason": "NotReconciled", "message": "waiting for istiod"}]}});
        assert_eq!(
            assess("networking.istio.io", "Gateway", &gateway),
            health(
                State::Progressing,
                Some("NotReconciled"),
                Some("waiting for istiod"),
                None
            )
        );
        assert_eq!(
            assess("networking.istio.io", "VirtualService", &json!({})),
            ready(None)
        );
        assert_eq!(assess("", "ConfigMap", &json!({"data": {}})), ready(None));
    }

    const COMMIT: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
    const HEAD: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";

    fn root_sync(sync_commit: &str, stages: Value) -> Value {
        let mut status = json!({"observedGeneration": 2,
            "source": {"commit": sync_commit}, "rendering": {"commit": sync_commit},
            "sync": {"commit": sync_commit, "lastUpdate": "2026-11-27T10:00:00Z"},
            "conditions": [
                {"type": "Reconciling", "status": "False", "reason": "DeploymentReady"},
                {"type": "Stalled", "status": "False"},
                {"type": "Syncing", "status": "False", "reason": "Sync", "message": "Sync Completed", "commit": sync_commit}]});
        for (stage, errors) in stages.as_object().into_iter().flatten() {
            status[stage]["errors"] = errors.clone();
        }
        with_status(json!({"sourceType": "git"}), status)
    }

    #[test]
    fn root_sync_at_head_behind_head_and_unknown_head() {
        let object = root_sync(COMMIT, json!({}));
        let (at, synced) = sync_root("RootSync", &object, Some(COMMIT));
        assert_eq!(at, ready(Some("synced 1a2b3c4 (HEAD)")));
        assert_eq!(
            synced,
            Synced {
                commit: Some(COMMIT.into()),
                at_head: Some(true),
                errors: vec![]
            }
        );
        let (behind, synced) = sync_root("RepoSync", &object, Some(HEAD));
        assert_eq!(behind, progressing("synced 1a2b3c4, HEAD is 9f8e7d6"));
        assert_eq!(synced.at_head, Some(false));
        let (unknown, synced) = sync_root("RootSync", &object, None);
        assert_eq!(unknown, ready(Some("synced 1a2b3c4")));
        assert_eq!(synced.at_head, None);
        assert_eq!(assess("configsync.gke.io", "RootSync", &object), unknown);
    }

    #[test]
    fn root_sync_errors_and_conditions() {
        let apply = json!({"code": "2009", "errorMessage": "KNV2009: failed to apply Deployment.apps, ml/web: forbidden"});
        let parse = json!({"code": "1021", "errorMessage": "KNV1021: unknown object kind"});
        let object = root_sync(COMMIT, json!({"rendering": [parse], "sync": [apply]}));
        let (failed, synced) = sync_root("RootSync", &object, Some(COMMIT));
        assert_eq!(
            failed,
            health(
                State::Failed,
                Some("KNV1021"),
                Some("KNV1021: unknown object kind"),
                Some("2 errors")
            )
        );
        let codes: Vec<_> = synced.errors.iter().map(|e| e.code.as_deref()).collect();
        assert_eq!(codes, [Some("KNV1021"), Some("KNV2009")]);

        let mut stalled = root_sync(COMMIT, json!({}));
        stalled["status"]["conditions"][1] = json!({"type": "Stalled", "status": "True",
            "reason": "Validation", "message": "spec.git.repo must be specified"});
        assert_eq!(
            sync_root("RootSync", &stalled, None).0,
            health(
                State::Failed,
                Some("Validation"),
                Some("spec.git.repo must be specified"),
                None
            )
        );
        let mut syncing = root_sync(COMMIT, json!({}));
        syncing["status"]["conditions"][2] = json!({"type": "Syncing", "status": "True",
            "reason": "Sync", "message": "Sync"});
        assert_eq!(
            sync_root("RootSync", &syncing, None).0,
            health(
                State::Progressing,
                Some("Sync"),
                Some("Sync"),
                Some("syncing, last 1a2b3c4")
            )
        );
        let mut fetched = root_sync(COMMIT, json!({}));
        fetched["status"]["source"]["commit"] = json!(HEAD);
        assert_eq!(
            sync_root("RootSync", &fetched, Some(HEAD)).0,
            progressing("synced 1a2b3c4, fetched 9f8e7d6")
        );
        let new = json!({"metadata": {"generation": 1}, "spec": {}});
        assert_eq!(
            sync_root("RootSync", &new, None).0,
            progressing("nothing synced yet")
        );
    }

    #[test]
    fn sync_errors_are_bounded_and_cut() {
        let long = json!({"code": "2009", "errorMessage": "x".repeat(10_000)});
        let many = Value::Array(vec![long; 5_000]);
        let (failed, synced) =
            sync_root("RootSync", &root_sync(COMMIT, json!({"sync": many})), None);
        assert_eq!(synced.errors.len(), MAX_ERRORS);
        assert!(
            synced
                .errors
                .iter()
                .all(|e| e.message.chars().count() == MAX_MESSAGE)
        );
        assert_eq!(
            failed.message.as_deref().map(|m| m.chars().count()),
            Some(MAX_MESSAGE)
        );
        assert_eq!(failed.detail.as_deref(), Some("20 errors"));
    }

    #[test]
    fn knv_codes_from_code_or_message() {
        assert_eq!(knv_code(Some("2009"), ""), Some("KNV2009".into()));
        assert_eq!(knv_code(Some("KNV1021"), ""), Some("KNV1021".into()));
        assert_eq!(
            knv_code(None, "KNV2004: source error"),
            Some("KNV2004".into())
        );
        assert_eq!(knv_code(None, "plain error"), None);
        assert_eq!(knv_code(Some(""), "KNVé"), None);
    }

    fn application(sync: &str, health_status: &str) -> Value {
        json!({"status": {
            "sync": {"status": sync, "revision": COMMIT},
            "health": {"status": health_status, "message": "Deployment web is degraded"},
            "operationState": {"phase": "Succeeded", "message": "successfully synced (all tasks run)"}}})
    }

    #[test]
    fn argo_application_states() {
        let (healthy, synced) = sync_root(
            "Application",
            &application("Synced", "Healthy"),
            Some(COMMIT),
        );
        assert_eq!(healthy, ready(Some("synced 1a2b3c4 (HEAD)")));
        assert_eq!(synced.commit.as_deref(), Some(COMMIT));
        assert_eq!(
            sync_root("Application", &application("Synced", "Healthy"), Some(HEAD)).0,
            progressing("synced 1a2b3c4, HEAD is 9f8e7d6")
        );
        assert_eq!(
            sync_root("Application", &application("OutOfSync", "Healthy"), None).0,
            health(State::Progressing, Some("OutOfSync"), None, None)
        );
        assert_eq!(
            sync_root("Application", &application("Synced", "Progressing"), None).0,
            health(
                State::Progressing,
                Some("Progressing"),
                Some("Deployment web is degraded"),
                None
            )
        );
        assert_eq!(
            assess(
                "argoproj.io",
                "Application",
                &application("Synced", "Degraded")
            ),
            health(
                State::Failed,
                Some("Degraded"),
                Some("Deployment web is degraded"),
                None
            )
        );
    }

    #[test]
    fn argo_application_errors() {
        let mut failed = application("OutOfSync", "Missing");
        failed["status"]["operationState"] = json!({"phase": "Failed",
            "message": "one or more objects failed to apply, reason: namespaces \"ml\" not found"});
        failed["status"]["conditions"] = json!([
            {"type": "SharedResourceWarning", "message": "shared"},
            {"type": "ComparisonError", "message": "Failed to load target state"}]);
        let (health_now, synced) = sync_root("Application", &failed, None);
        assert_eq!(health_now.state, State::Failed);
        assert_eq!(health_now.reason.as_deref(), Some("Failed"));
        assert_eq!(
            synced.errors,
            vec![
                SyncError {
                    code: None,
                    message:
                        "one or more objects failed to apply, reason: namespaces \"ml\" not found"
                            .into()
                },
                SyncError {
                    code: Some("ComparisonError".into()),
                    message: "Failed to load target state".into()
                },
            ]
        );
        let mut comparison = application("Unknown", "Healthy");
        comparison["status"]["conditions"] =
            json!([{"type": "ComparisonError", "message": "repo not found"}]);
        assert_eq!(
            sync_root("Application", &comparison, None).0,
            health(
                State::Failed,
                Some("ComparisonError"),
                Some("repo not found"),
                None
            )
        );
        let mut running = application("OutOfSync", "Progressing");
        running["status"]["operationState"] =
            json!({"phase": "Running", "message": "waiting for healthy state"});
        assert_eq!(
            sync_root("Application", &running, None).0,
            health(
                State::Progressing,
                Some("Running"),
                Some("waiting for healthy state"),
                Some("sync operation running")
            )
        );
    }

    fn node(name: &str, ready: &str, topology: Option<&str>) -> Value {
        let mut labels = json!({"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice",
            "cloud.google.com/gke-nodepool": "tpu"});
        if let Some(topology) = topology {
            labels[TPU_TOPOLOGY] = json!(topology);
        }
        json!({"metadata": {"name": name, "labels": labels}, "status": {"conditions": [
            {"type": "MemoryPressure", "status": "False"},
            {"type": "Ready", "status": ready, "reason": "KubeletReady", "message": "kubelet is posting ready status"}]}})
    }

    #[test]
    fn node_pools() {
        assert_eq!(
            node_pool(&[], Some("4x4")),
            ready(Some("0 nodes (scaled to zero)"))
        );
        let nodes: Vec<Value> = (0..4)
            .map(|i| node(&format!("n{i}"), "True", Some("4x4")))
            .collect();
        let refs: Vec<&Value> = nodes.iter().collect();
        assert_eq!(
            node_pool(&refs, Some("4x4")),
            ready(Some("4/4 nodes ready, tpu-v5-lite-podslice 4x4"))
        );
        let slow = [&nodes[0], &node("n9", "Unknown", Some("4x4"))];
        assert_eq!(node_pool(&slow, None).state, State::Progressing);
        assert_eq!(
            node_pool(&slow, None).detail.as_deref(),
            Some("1/2 nodes ready, tpu-v5-lite-podslice 4x4")
        );
        let wrong = [
            &nodes[0],
            &node("n8", "True", Some("2x2")),
            &node("n9", "True", None),
        ];
        assert_eq!(
            node_pool(&wrong, Some("4x4")),
            health(
                State::Failed,
                Some("TopologyMismatch"),
                Some("node n8 has TPU topology 2x2, expected 4x4 (and 1 more nodes)"),
                Some("3/3 nodes ready, tpu-v5-lite-podslice 4x4")
            )
        );
        let gpu = json!({"metadata": {"name": "g", "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(
            node_pool(&[&gpu], None),
            ready(Some("1/1 nodes ready, nvidia-l4"))
        );
    }

    const KEYS: &[&str] = &[
        "metadata",
        "generation",
        "name",
        "labels",
        "spec",
        "status",
        "conditions",
        "type",
        "reason",
        "message",
        "replicas",
        "observedGeneration",
        "updatedReplicas",
        "availableReplicas",
        "readyReplicas",
        "errors",
        "code",
        "errorMessage",
        "source",
        "sync",
        "rendering",
        "commit",
        "revision",
        "health",
        "operationState",
        "phase",
        "admission",
        "clusterQueue",
        "admissionChecks",
        "state",
        "active",
        "suspend",
        "metrics",
        "resource",
        "target",
        "current",
        "averageUtilization",
        "averageValue",
        "value",
        "currentMetrics",
        "replicatedJobsStatus",
        "replicatedJobs",
        "ready",
        "loadBalancer",
        "ingress",
        "ip",
        "endpointStatuses",
        "activeTargets",
        "updateStrategy",
        "rollingUpdate",
        "partition",
        "startTime",
        "cloud.google.com/gke-tpu-topology",
        "revisions",
        "0",
    ];
    const WORDS: &[&str] = &[
        "True",
        "False",
        "Unknown",
        "Ready",
        "Failed",
        "Complete",
        "Completed",
        "Suspended",
        "Stalled",
        "Syncing",
        "Reconciling",
        "Admitted",
        "QuotaReserved",
        "Finished",
        "Evicted",
        "Inadmissible",
        "Active",
        "Available",
        "UpdateInProgress",
        "Progressing",
        "ProgressDeadlineExceeded",
        "ReplicaFailure",
        "ScalingActive",
        "AbleToScale",
        "ConfigurationCreateSuccess",
        "Resource",
        "Pods",
        "External",
        "Object",
        "Utilization",
        "LoadBalancer",
        "Bound",
        "Lost",
        "Terminating",
        "Synced",
        "Healthy",
        "Degraded",
        "Running",
        "Error",
        "ComparisonError",
        "Rejected",
        "UpdateFailed",
        "2009",
        "KNV1021: x",
        "OnDelete",
        "4x4",
        "cpu",
    ];

    fn arbitrary_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::from),
            any::<f64>().prop_map(Value::from),
            prop::sample::select(WORDS).prop_map(Value::from),
            ".{0,600}".prop_map(Value::from),
        ];
        leaf.prop_recursive(6, 96, 6, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(
                    |pairs| {
                        Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
                    }
                ),
            ]
        })
    }

    fn arbitrary_object() -> impl Strategy<Value = Value> {
        prop_oneof![
            arbitrary_json(),
            (arbitrary_json(), arbitrary_json(), arbitrary_json()).prop_map(
                |(metadata, spec, status)| {
                    json!({"metadata": metadata, "spec": spec, "status": status})
                }
            ),
        ]
    }

    const KINDS: &[(&str, &str)] = &[
        ("iam.cnrm.cloud.google.com", "IAMPolicyMember"),
        ("apps", "Deployment"),
        ("apps", "StatefulSet"),
        ("apps", "DaemonSet"),
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
        ("jobset.x-k8s.io", "JobSet"),
        ("batch", "Job"),
        ("autoscaling", "HorizontalPodAutoscaler"),
        ("kueue.x-k8s.io", "Workload"),
        ("kueue.x-k8s.io", "ClusterQueue"),
        ("monitoring.googleapis.com", "PodMonitoring"),
        ("configsync.gke.io", "RootSync"),
        ("argoproj.io", "Application"),
        ("", "Service"),
        ("", "PersistentVolumeClaim"),
        ("", "Namespace"),
        ("", "Node"),
        ("networking.istio.io", "Gateway"),
    ];

    fn bounded(health: &Health) -> bool {
        health.state != State::Missing
            && health
                .message
                .as_ref()
                .is_none_or(|m| m.chars().count() <= MAX_MESSAGE)
            && health
                .reason
                .as_ref()
                .is_none_or(|r| r.chars().count() <= MAX_WORD)
    }

    proptest! {
        #[test]
        fn never_panics_and_stays_bounded(object in arbitrary_object(), head in prop::option::of(".{0,50}")) {
            for (group, kind) in KINDS {
                prop_assert!(bounded(&assess(group, kind, &object)));
            }
            for kind in ["RootSync", "Application", "Other"] {
                let (health, synced) = sync_root(kind, &object, head.as_deref());
                prop_assert!(bounded(&health));
                prop_assert!(synced.errors.len() <= MAX_ERRORS);
                prop_assert!(synced.errors.iter().all(|e| e.message.chars().count() <= MAX_MESSAGE));
            }
            prop_assert!(bounded(&kueue_workload(&object)));
            prop_assert!(bounded(&node_pool(&[&object, &object], head.as_deref())));
        }
    }
}

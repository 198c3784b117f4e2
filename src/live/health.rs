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
        ("apps", "Deployment" | "StatefulSet" | "DaemonSet") => apps(object, kind),
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
        .find_map(|label| label_of(first, label).map(|l| cut(l, MAX_WORD)));
    if let Some(accelerator) = accelerator {
        detail.push_str(&format!(", {accelerator}"));
        if let Some(topology) = label_of(first, TPU_TOPOLOGY).map(|t| cut(t, MAX_WORD)) {
            detail.push_str(&format!(" {topology}"));
        }
    }
    if let Some(expected) = expected_topology {
        let differs = |node: &&&Value| label_of(node, TPU_TOPOLOGY) != Some(expected);
        let wrong = nodes.iter().filter(differs).count();
        if let Some(node) = nodes.iter().find(differs) {
            let name = word_at(node, "/metadata/name").unwrap_or_default();
            let found = cut(label_of(node, TPU_TOPOLOGY).unwrap_or("none"), MAX_WORD);
            let expected = cut(expected, MAX_WORD);
            let mut message = format!("node {name} has TPU topology {found}, expected {expected}");
            if wrong > 1 {
                message.push_str(&format!(" (and {} more nodes)", wrong - 1));
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

/// A node's label (label keys hold `/`, so no JSON pointer reaches them).
fn label_of<'a>(node: &'a Value, label: &str) -> Option<&'a str> {
    node.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(|l| l.get(label))
        .and_then(Value::as_str)
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

/// Deployment, StatefulSet, DaemonSet: ready when every replica is updated and available.
fn apps(object: &Value, kind: &str) -> Health {
    if let Some(blocked) = rollout_blocked(object) {
        return blocked;
    }
    let int = |pointer: &str| int_at(object, pointer).unwrap_or(0);
    let want = int_at(object, "/spec/replicas").unwrap_or(1);
    let (want, have, updated, noun) = match kind {
        "DaemonSet" => (
            int("/status/desiredNumberScheduled"),
            int("/status/numberAvailable"),
            int("/status/updatedNumberScheduled"),
            "pods available",
        ),
        "StatefulSet" => (
            want,
            int("/status/readyReplicas"),
            int("/status/updatedReplicas"),
            "replicas ready",
        ),
        _ => (
            want,
            int("/status/availableReplicas"),
            int("/status/updatedReplicas"),
            "replicas available",
        ),
    };
    // OnDelete and partitioned rollouts update only when someone deletes pods or moves the
    // partition: the replicas being ready is all there is to wait for.
    let manual = str_at(object, "/spec/updateStrategy/type") == Some("OnDelete")
        || int("/spec/updateStrategy/rollingUpdate/partition") > 0;
    let detail = format!("{have}/{want} {noun}");
    let old = int("/status/replicas").saturating_sub(updated);
    if !manual && updated < want {
        Health::progressing(None, None).detail(format!("{detail}, {updated} updated"))
    } else if kind == "Deployment" && old > 0 {
        Health::progressing(None, None).detail(format!("{detail}, {old} old replicas terminating"))
    } else if have < want {
        Health::progressing(None, None).detail(detail)
    } else {
        Health::ready(Some(detail))
    }
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
        let health = Health::with(State::Failed, first.code.as_deref(), Some(&first.message));
        // Config Sync truncates its lists; the summary counts them all.
        let total = ["source", "rendering", "sync"]
            .iter()
            .filter_map(|stage| int_at(object, &format!("/status/{stage}/errorSummary/totalCount")))
            .fold(0i64, i64::saturating_add)
            .max(synced.errors.len() as i64);
        if total > 1 {
            health.detail(format!("{total} errors"))
        } else {
            health
        }
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

// The tests are tables: one object and the line it shows as per row reads best unwrapped.
#[rustfmt::skip]
#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// One line per result, to compare with a literal: `state reason: message [detail]`.
    fn show(health: &Health) -> String {
        let mut out = format!("{:?}", health.state).to_lowercase();
        if let Some(reason) = &health.reason {
            out.push_str(&format!(" {reason}"));
        }
        if let Some(message) = &health.message {
            out.push_str(&format!(": {message}"));
        }
        if let Some(detail) = &health.detail {
            out.push_str(&format!(" [{detail}]"));
        }
        out
    }

    /// Each object of `cases`, assessed as `group`/`kind`, shows as its line.
    fn check(group: &str, kind: &str, cases: &[(Value, &str)]) {
        for (object, want) in cases {
            assert_eq!(show(&assess(group, kind, object)), *want, "{object}");
        }
    }

    /// An object at `generation` 2 whose controller has seen it.
    fn seen(spec: Value, mut status: Value) -> Value {
        status["observedGeneration"] = json!(2);
        json!({"metadata": {"name": "x", "generation": 2}, "spec": spec, "status": status})
    }

    fn conditions(list: Value) -> Value {
        seen(json!({}), json!({"conditions": list}))
    }

    fn cond(kind: &str, status: &str, reason: &str, message: &str) -> Value {
        json!({"type": kind, "status": status, "reason": reason, "message": message})
    }

    #[test]
    fn cut_keeps_short_text_and_cuts_long_text_on_a_character() {
        assert_eq!(cut("exactly10!", 10), "exactly10!");
        assert_eq!(cut("eleven char", 10), "eleven ch…");
        let kept = cut(&"é".repeat(1000), MAX_MESSAGE);
        assert_eq!(kept.chars().count(), MAX_MESSAGE);
        assert!(kept.ends_with("é…"));
    }

    #[test]
    fn health_serializes_for_json_output() {
        let failed = Health::failed("UpdateFailed", Some("boom"));
        let want = json!({"state": "failed", "reason": "UpdateFailed", "message": "boom"});
        assert_eq!(serde_json::to_value(&failed).unwrap(), want);
        assert_eq!(serde_json::to_value(State::Missing).unwrap(), json!("missing"));
    }

    #[test]
    fn config_connector_ready_condition() {
        let ready = |status: &str, reason: &str| conditions(json!([cond("Ready", status, reason, "m")]));
        let mut stale = ready("False", "UpdateFailed");
        stale["status"]["observedGeneration"] = json!(1);
        check("iam.cnrm.cloud.google.com", "IAMPolicyMember", &[
            (ready("True", "UpToDate"), "ready"),
            (ready("False", "UpdateFailed"), "failed UpdateFailed: m"),
            (ready("False", "DependencyInvalid"), "failed DependencyInvalid: m"),
            (ready("False", "ManagementConflict"), "failed ManagementConflict: m"),
            (ready("False", "Unmanaged"), "failed Unmanaged: m"),
            (ready("False", "DependencyNotReady"), "progressing DependencyNotReady: m"),
            (ready("False", "DependencyNotFound"), "progressing DependencyNotFound: m"),
            (ready("False", "Updating"), "progressing Updating: m"),
            (stale, "progressing [not reconciled yet]"),
            (seen(json!({}), json!({})), "progressing [not reconciled yet]"),
        ]);
        check("cnrm.cloud.google.com", "Any", &[(ready("False", "CreateFailed"), "failed CreateFailed: m")]);
    }

    fn deployment(updated: i64, available: i64, total: i64, progressing: Value) -> Value {
        seen(json!({"replicas": 3}), json!({"replicas": total, "updatedReplicas": updated,
            "readyReplicas": available, "availableReplicas": available, "conditions": [progressing]}))
    }

    #[test]
    fn deployment_rollout() {
        let fine = cond("Progressing", "True", "NewReplicaSetAvailable", "done");
        let deadline = cond("Progressing", "False", "ProgressDeadlineExceeded", "RS web-5d timed out");
        let quota = cond("ReplicaFailure", "True", "FailedCreate", "exceeded quota");
        let mut stale = deployment(3, 3, 3, fine.clone());
        stale["status"]["observedGeneration"] = json!(1);
        check("apps", "Deployment", &[
            (deployment(3, 3, 3, fine.clone()), "ready [3/3 replicas available]"),
            (deployment(1, 3, 4, fine.clone()), "progressing [3/3 replicas available, 1 updated]"),
            (deployment(3, 2, 4, fine.clone()), "progressing [2/3 replicas available, 1 old replicas terminating]"),
            (deployment(3, 2, 3, fine), "progressing [2/3 replicas available]"),
            (deployment(1, 2, 3, deadline), "failed ProgressDeadlineExceeded: RS web-5d timed out"),
            (deployment(1, 2, 3, quota), "failed FailedCreate: exceeded quota"),
            (stale, "progressing [not reconciled yet]"),
            (json!({"metadata": {"generation": 1}, "spec": {}}), "progressing [not reconciled yet]"),
        ]);
    }

    #[test]
    fn stateful_and_daemon_sets() {
        let sts = |ready: i64, updated: i64, partition: i64| seen(
            json!({"replicas": 2, "updateStrategy": {"rollingUpdate": {"partition": partition}}}),
            json!({"replicas": 2, "readyReplicas": ready, "updatedReplicas": updated}));
        check("apps", "StatefulSet", &[
            (sts(2, 2, 0), "ready [2/2 replicas ready]"),
            (sts(2, 1, 0), "progressing [2/2 replicas ready, 1 updated]"),
            (sts(2, 1, 1), "ready [2/2 replicas ready]"),
            (sts(1, 2, 0), "progressing [1/2 replicas ready]"),
        ]);
        let ds = |available: i64, updated: i64, strategy: &str| seen(
            json!({"updateStrategy": {"type": strategy}}),
            json!({"desiredNumberScheduled": 4, "numberAvailable": available, "updatedNumberScheduled": updated}));
        check("apps", "DaemonSet", &[
            (ds(4, 4, "RollingUpdate"), "ready [4/4 pods available]"),
            (ds(3, 4, "RollingUpdate"), "progressing [3/4 pods available]"),
            (ds(4, 2, "RollingUpdate"), "progressing [4/4 pods available, 2 updated]"),
            (ds(4, 2, "OnDelete"), "ready [4/4 pods available]"),
        ]);
    }

    #[test]
    fn leader_worker_set_conditions() {
        let lws = |ready: i64, list: Value| seen(json!({"replicas": 2}), json!({"readyReplicas": ready, "conditions": list}));
        let available = cond("Available", "True", "AllGroupsReady", "All replicas are ready");
        let updating = cond("UpdateInProgress", "True", "GroupsUpdating", "Rolling Upgrade is in progress");
        let starting = cond("Progressing", "True", "GroupsProgressing", "Replicas are progressing");
        check("leaderworkerset.x-k8s.io", "LeaderWorkerSet", &[
            (lws(2, json!([available.clone()])), "ready [2/2 groups ready]"),
            (lws(1, json!([available, updating])), "progressing GroupsUpdating: Rolling Upgrade is in progress [1/2 groups ready]"),
            (lws(0, json!([starting])), "progressing GroupsProgressing: Replicas are progressing [0/2 groups ready]"),
        ]);
    }

    #[test]
    fn job_set_states() {
        let spec = json!({"replicatedJobs": [{"name": "slice", "replicas": 2}, {"name": "driver", "replicas": 1}]});
        let jobset = |status: Value| json!({"spec": spec, "status": status});
        let restarts = "jobset failed due to reaching max number of restarts";
        let running = json!({"restarts": 1, "replicatedJobsStatus": [
            {"name": "slice", "ready": 2, "active": 2, "succeeded": 0, "failed": 0, "suspended": 0},
            {"name": "driver", "ready": 0, "active": 1, "succeeded": 0, "failed": 0, "suspended": 0}]});
        check("jobset.x-k8s.io", "JobSet", &[
            (jobset(json!({"terminalState": "Failed", "conditions": [cond("Failed", "True", "FailedJobs", restarts)]})),
                "failed FailedJobs: jobset failed due to reaching max number of restarts"),
            (jobset(json!({"conditions": [cond("Completed", "True", "AllJobsCompleted", "")]})), "ready [completed]"),
            (jobset(json!({"conditions": [cond("Suspended", "True", "SuspendedJobs", "")]})),
                "progressing SuspendedJobs [suspended (waiting for admission)]"),
            (jobset(running), "ready [slice 2/2 ready, driver 0/1 ready, 1 restarts]"),
            (jobset(json!({})), "progressing [no jobs started yet]"),
        ]);
    }

    #[test]
    fn batch_job_states() {
        let backoff = "Job has reached the specified backoff limit";
        let running = json!({"startTime": "2026-11-27T10:00:00Z", "active": 3, "succeeded": 1});
        check("batch", "Job", &[
            (json!({"status": {"conditions": [cond("Failed", "True", "BackoffLimitExceeded", backoff)]}}),
                "failed BackoffLimitExceeded: Job has reached the specified backoff limit"),
            (json!({"status": {"conditions": [cond("Complete", "True", "", "")]}}), "ready [completed]"),
            (json!({"spec": {"suspend": true}}), "progressing [suspended (waiting for admission)]"),
            (json!({"spec": {"completions": 4}, "status": running}), "ready [3 active, 1/4 succeeded]"),
            (json!({"spec": {}, "status": {}}), "progressing [not started yet]"),
        ]);
    }

    #[test]
    fn hpa_metrics_and_conditions() {
        let spec = json!({"minReplicas": 1, "maxReplicas": 4, "metrics": [
            {"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 60}}},
            {"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "target": {"type": "AverageValue", "averageValue": "10"}}},
            {"type": "External", "external": {"metric": {"name": "pubsub"}, "target": {"type": "Value", "value": "100"}}}]});
        let hpa = |able: &str, active: &str| json!({"spec": spec, "status": {"currentReplicas": 2, "desiredReplicas": 2,
            "currentMetrics": [
                {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 45, "averageValue": "90m"}}},
                {"type": "Pods", "pods": {"metric": {"name": "queue_depth"}, "current": {"averageValue": "7500m"}}}],
            "conditions": [cond("AbleToScale", able, "ReadyForNewScale", "recommended size matches"),
                cond("ScalingActive", active, "FailedGetResourceMetric", "unable to get metrics")]}});
        let detail = "[cpu 45% / target 60%, queue_depth 7500m / target 10, pubsub <unknown> / target 100, 2 replicas (1–4)]";
        check("autoscaling", "HorizontalPodAutoscaler", &[
            (hpa("True", "True"), &format!("ready {detail}")),
            (hpa("True", "False"), &format!("progressing FailedGetResourceMetric: unable to get metrics {detail}")),
            (hpa("False", "True"), &format!("progressing ReadyForNewScale: recommended size matches {detail}")),
        ]);
    }

    fn workload(status: Value) -> Value {
        json!({"spec": {"queueName": "tpu", "active": true}, "status": status})
    }

    #[test]
    fn kueue_workload_admission() {
        let flavors = "couldn't assign flavors to pod set main: insufficient unused quota for google.com/tpu in flavor v5e";
        let reserved = cond("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue tpu-v4");
        let checks = cond("Admitted", "False", "UnsatisfiedChecks", "The workload has not all checks ready");
        let cases = [
            (workload(json!({"admission": {"clusterQueue": "tpu-v4"}, "conditions": [reserved, cond("Admitted", "True", "Admitted", "")]})),
                "ready [admitted to ClusterQueue tpu-v4]".to_owned()),
            (workload(json!({"conditions": [cond("QuotaReserved", "False", "Pending", flavors)]})),
                format!("progressing Pending: {flavors} [pending]")),
            (workload(json!({"conditions": [cond("QuotaReserved", "False", "Inadmissible", "LocalQueue tpu doesn't exist")]})),
                "failed Inadmissible: LocalQueue tpu doesn't exist [inadmissible]".into()),
            (workload(json!({"admission": {"clusterQueue": "tpu-v4"}, "conditions": [reserved, checks]})),
                "progressing UnsatisfiedChecks: The workload has not all checks ready [quota reserved in ClusterQueue tpu-v4, checks pending]".into()),
            (workload(json!({})), "progressing [not yet considered by Kueue]".into()),
        ];
        for (object, want) in &cases {
            assert_eq!(show(&kueue_workload(object)), *want);
            assert_eq!(assess("kueue.x-k8s.io", "Workload", object), kueue_workload(object));
        }
    }

    #[test]
    fn kueue_workload_ends() {
        let evicted = |reason: &str| workload(json!({"conditions": [cond("Evicted", "True", reason, "evicted"), cond("QuotaReserved", "False", "Pending", "")]}));
        let finished = |reason: &str| workload(json!({"conditions": [cond("Finished", "True", reason, "Job finished")]}));
        let rejected = workload(json!({"admissionChecks": [{"name": "dws-prov", "state": "Rejected", "message": "Provisioning request failed"}]}));
        let mut inactive = workload(json!({}));
        inactive["spec"]["active"] = json!(false);
        check("kueue.x-k8s.io", "Workload", &[
            (evicted("Preempted"), "progressing Preempted: evicted [evicted, waiting to be requeued]"),
            (evicted("RequeuingLimitExceeded"), "failed RequeuingLimitExceeded: evicted [evicted]"),
            (inactive, "failed Deactivated [deactivated (spec.active is false)]"),
            (finished("Succeeded"), "ready [finished]"),
            (finished("Failed"), "failed Failed: Job finished [finished]"),
            (rejected, "failed AdmissionCheckRejected: Provisioning request failed [rejected by admission check dws-prov]"),
        ]);
    }

    #[test]
    fn kueue_queues_are_active_or_say_why() {
        let queue = |status: &str, reason: &str| json!({"status": {"admittedWorkloads": 1, "pendingWorkloads": 3,
            "conditions": [cond("Active", status, reason, "Can't admit new workloads")]}});
        check("kueue.x-k8s.io", "ClusterQueue", &[
            (queue("True", "Ready"), "ready [1 admitted, 3 pending]"),
            (queue("False", "FlavorNotFound"), "progressing FlavorNotFound: Can't admit new workloads [1 admitted, 3 pending]"),
            (json!({"spec": {}}), "progressing [not reconciled yet]"),
        ]);
        check("kueue.x-k8s.io", "LocalQueue", &[
            (queue("False", "Stopped"), "failed Stopped: Can't admit new workloads [1 admitted, 3 pending]"),
        ]);
        check("kueue.x-k8s.io", "ResourceFlavor", &[(json!({"spec": {}}), "ready")]);
    }

    #[test]
    fn pod_monitoring_configuration() {
        let monitoring = |status: &str| seen(json!({}), json!({
            "conditions": [cond("ConfigurationCreateSuccess", status, "ConfigurationCreateFailed", "bad relabel rule")],
            "endpointStatuses": [{"name": "PodMonitoring/ml/x/metrics", "activeTargets": 4, "unhealthyTargets": 1}]}));
        check("monitoring.googleapis.com", "PodMonitoring", &[
            (monitoring("True"), "ready [4 targets, 1 unhealthy]"),
            (monitoring("False"), "failed ConfigurationCreateFailed: bad relabel rule"),
            (json!({}), "progressing [not reconciled yet]"),
        ]);
        check("monitoring.googleapis.com", "ClusterPodMonitoring", &[(monitoring("True"), "ready [4 targets, 1 unhealthy]")]);
    }

    #[test]
    fn core_objects_and_anything_else() {
        let lb = |status: Value| json!({"spec": {"type": "LoadBalancer"}, "status": status});
        check("", "Service", &[
            (lb(json!({"loadBalancer": {}})), "progressing [waiting for an address]"),
            (lb(json!({"loadBalancer": {"ingress": [{"ip": "34.1.2.3"}]}})), "ready [address 34.1.2.3]"),
            (json!({"spec": {"type": "ClusterIP"}}), "ready"),
        ]);
        let phase = |phase: &str| json!({"status": {"phase": phase}});
        check("", "PersistentVolumeClaim", &[
            (phase("Bound"), "ready [bound]"),
            (phase("Pending"), "progressing [pending]"),
            (phase("Lost"), "failed Lost: the bound volume no longer exists"),
        ]);
        check("", "Namespace", &[(phase("Terminating"), "progressing [terminating]"), (phase("Active"), "ready")]);
        check("networking.istio.io", "Gateway", &[
            (conditions(json!([cond("Ready", "False", "NotReconciled", "waiting for istiod")])), "progressing NotReconciled: waiting for istiod"),
            (json!({}), "ready"),
        ]);
    }

    const COMMIT: &str = "1a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d";
    const HEAD: &str = "9f8e7d6c5b4a39281706f5e4d3c2b1a098765432";

    /// A RootSync that synced `COMMIT`, with `errors` per stage and conditions replaced by index.
    fn root_sync(errors: Value, replace: &[(usize, Value)]) -> Value {
        let mut status = json!({"source": {"commit": COMMIT}, "rendering": {"commit": COMMIT}, "sync": {"commit": COMMIT},
            "conditions": [cond("Reconciling", "False", "DeploymentReady", "Reconciler deployment is ready"),
                cond("Stalled", "False", "", ""), cond("Syncing", "False", "Sync", "Sync Completed")]});
        for (stage, list) in errors.as_object().into_iter().flatten() {
            status[stage]["errors"] = list.clone();
        }
        for (at, condition) in replace {
            status["conditions"][at] = condition.clone();
        }
        seen(json!({"sourceType": "git"}), status)
    }

    #[test]
    fn root_sync_against_head() {
        let object = root_sync(json!({}), &[]);
        let (health, synced) = sync_root("RootSync", &object, Some(COMMIT));
        assert_eq!(show(&health), "ready [synced 1a2b3c4 (HEAD)]");
        assert_eq!(synced, Synced { commit: Some(COMMIT.into()), at_head: Some(true), errors: vec![] });
        let (health, synced) = sync_root("RepoSync", &object, Some(HEAD));
        assert_eq!(show(&health), "progressing [synced 1a2b3c4, HEAD is 9f8e7d6]");
        assert_eq!(synced.at_head, Some(false));
        let (health, synced) = sync_root("RootSync", &object, None);
        assert_eq!(show(&health), "ready [synced 1a2b3c4]");
        assert_eq!(synced.at_head, None);
        check("configsync.gke.io", "RootSync", &[(object, "ready [synced 1a2b3c4]")]);
    }

    #[test]
    fn root_sync_errors_and_conditions() {
        let apply = json!({"code": "2009", "errorMessage": "KNV2009: failed to apply Deployment.apps, ml/web: forbidden"});
        let parse = json!({"code": "1021", "errorMessage": "KNV1021: unknown object kind"});
        let (health, synced) = sync_root("RootSync", &root_sync(json!({"rendering": [parse], "sync": [apply]}), &[]), None);
        assert_eq!(show(&health), "failed KNV1021: KNV1021: unknown object kind [2 errors]");
        let codes: Vec<_> = synced.errors.iter().map(|e| e.code.as_deref()).collect();
        assert_eq!(codes, [Some("KNV1021"), Some("KNV2009")]);
        let mut fetched = root_sync(json!({}), &[]);
        fetched["status"]["source"]["commit"] = json!(HEAD);
        check("configsync.gke.io", "RootSync", &[
            (root_sync(json!({}), &[(1, cond("Stalled", "True", "Validation", "spec.git.repo must be specified"))]),
                "failed Validation: spec.git.repo must be specified"),
            (root_sync(json!({}), &[(2, cond("Syncing", "True", "Sync", "Sync"))]), "progressing Sync: Sync [syncing, last 1a2b3c4]"),
            (root_sync(json!({}), &[(0, cond("Reconciling", "True", "Deployment", "Reconciler deployment is starting"))]),
                "progressing Deployment: Reconciler deployment is starting [syncing, last 1a2b3c4]"),
            (fetched, "progressing [synced 1a2b3c4, fetched 9f8e7d6]"),
            (json!({"metadata": {"generation": 1}, "spec": {}}), "progressing [nothing synced yet]"),
        ]);
    }

    #[test]
    fn sync_errors_are_bounded_and_cut() {
        let long = json!({"code": "2009", "errorMessage": "x".repeat(10_000)});
        let (health, synced) = sync_root("RootSync", &root_sync(json!({"sync": vec![long; 5_000]}), &[]), None);
        assert_eq!(synced.errors.len(), MAX_ERRORS);
        assert!(synced.errors.iter().all(|e| e.message.chars().count() == MAX_MESSAGE));
        assert_eq!(health.message.map(|m| m.chars().count()), Some(MAX_MESSAGE));
        assert_eq!(health.detail.as_deref(), Some("20 errors"));
        let summary = json!({"sync": [{"code": "2009", "errorMessage": "KNV2009: a"}]});
        let mut truncated = root_sync(summary, &[]);
        truncated["status"]["sync"]["errorSummary"] = json!({"totalCount": 1234, "truncated": true});
        assert_eq!(show(&sync_root("RootSync", &truncated, None).0), "failed KNV2009: KNV2009: a [1234 errors]");
    }

    #[test]
    fn knv_codes_from_code_or_message() {
        assert_eq!(knv_code(Some("2009"), ""), Some("KNV2009".into()));
        assert_eq!(knv_code(Some("KNV1021"), ""), Some("KNV1021".into()));
        assert_eq!(knv_code(None, "KNV2004: source error"), Some("KNV2004".into()));
        assert_eq!(knv_code(None, "plain error"), None);
        assert_eq!(knv_code(Some(" "), "KNV123é: not a code"), None);
    }

    fn application(sync: &str, health: &str, operation: Value, conditions: Value) -> Value {
        json!({"status": {"sync": {"status": sync, "revision": COMMIT}, "operationState": operation,
            "health": {"status": health, "message": "Deployment web is degraded"}, "conditions": conditions}})
    }

    #[test]
    fn argo_application_states() {
        let done = json!({"phase": "Succeeded", "message": "successfully synced (all tasks run)"});
        let app = |sync: &str, health: &str| application(sync, health, done.clone(), json!([]));
        let (health, synced) = sync_root("Application", &app("Synced", "Healthy"), Some(COMMIT));
        assert_eq!(show(&health), "ready [synced 1a2b3c4 (HEAD)]");
        assert_eq!(synced.commit.as_deref(), Some(COMMIT));
        let behind = sync_root("Application", &app("Synced", "Healthy"), Some(HEAD)).0;
        assert_eq!(show(&behind), "progressing [synced 1a2b3c4, HEAD is 9f8e7d6]");
        let comparison = json!([{"type": "ComparisonError", "message": "repo not found"}]);
        let running = json!({"phase": "Running", "message": "waiting for healthy state"});
        check("argoproj.io", "Application", &[
            (app("OutOfSync", "Healthy"), "progressing OutOfSync"),
            (app("Synced", "Progressing"), "progressing Progressing: Deployment web is degraded"),
            (app("Synced", "Degraded"), "failed Degraded: Deployment web is degraded"),
            (application("Unknown", "Healthy", done.clone(), comparison), "failed ComparisonError: repo not found"),
            (application("OutOfSync", "Progressing", running, json!([])), "progressing Running: waiting for healthy state [sync operation running]"),
        ]);
    }

    #[test]
    fn argo_operation_failure_and_error_conditions() {
        let failed = json!({"phase": "Failed", "message": "one or more objects failed to apply"});
        let conditions = json!([{"type": "SharedResourceWarning", "message": "shared"},
            {"type": "ComparisonError", "message": "Failed to load target state"}]);
        let (health, synced) = sync_root("Application", &application("OutOfSync", "Missing", failed, conditions), None);
        assert_eq!(show(&health), "failed Failed: one or more objects failed to apply");
        assert_eq!(synced.errors, [
            SyncError { code: None, message: "one or more objects failed to apply".into() },
            SyncError { code: Some("ComparisonError".into()), message: "Failed to load target state".into() },
        ]);
    }

    fn node(name: &str, ready: &str, topology: Option<&str>) -> Value {
        let mut labels = json!({"cloud.google.com/gke-tpu-accelerator": "tpu-v5-lite-podslice"});
        if let Some(topology) = topology {
            labels[TPU_TOPOLOGY] = json!(topology);
        }
        json!({"metadata": {"name": name, "labels": labels}, "status": {"conditions": [
            cond("MemoryPressure", "False", "KubeletHasSufficientMemory", ""),
            cond("Ready", ready, "KubeletNotReady", "container runtime is down")]}})
    }

    #[test]
    fn node_pools() {
        let ok = node("n0", "True", Some("4x4"));
        let cases = [
            (vec![], "ready [0 nodes (scaled to zero)]"),
            (vec![ok.clone(), ok.clone()], "ready [2/2 nodes ready, tpu-v5-lite-podslice 4x4]"),
            (vec![ok.clone(), node("n9", "Unknown", Some("4x4"))],
                "progressing KubeletNotReady: container runtime is down [1/2 nodes ready, tpu-v5-lite-podslice 4x4]"),
            (vec![ok, node("n8", "True", Some("2x2")), node("n9", "True", None)],
                "failed TopologyMismatch: node n8 has TPU topology 2x2, expected 4x4 (and 1 more nodes) [3/3 nodes ready, tpu-v5-lite-podslice 4x4]"),
        ];
        for (nodes, want) in &cases {
            assert_eq!(show(&node_pool(&nodes.iter().collect::<Vec<_>>(), Some("4x4"))), *want);
        }
        let gpu = json!({"metadata": {"name": "g", "labels": {"cloud.google.com/gke-accelerator": "nvidia-l4"}},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}});
        assert_eq!(show(&node_pool(&[&gpu], None)), "ready [1/1 nodes ready, nvidia-l4]");
        check("", "Node", &[(gpu, "ready [1/1 nodes ready, nvidia-l4]")]);
    }

    /// Field names and values the functions look for, so generated objects reach deep branches.
    const KEYS: &[&str] = &[
        "metadata", "generation", "name", "labels", "spec", "status", "conditions", "type", "reason", "message",
        "replicas", "observedGeneration", "updatedReplicas", "availableReplicas", "readyReplicas", "errors", "code",
        "errorMessage", "source", "sync", "rendering", "commit", "revision", "health", "operationState", "phase",
        "admission", "clusterQueue", "admissionChecks", "state", "active", "suspend", "metrics", "resource", "target",
        "current", "averageUtilization", "averageValue", "value", "currentMetrics", "replicatedJobsStatus",
        "replicatedJobs", "ready", "loadBalancer", "ingress", "ip", "endpointStatuses", "activeTargets",
        "updateStrategy", "rollingUpdate", "partition", "startTime", "cloud.google.com/gke-tpu-topology", "revisions",
    ];
    const WORDS: &[&str] = &[
        "True", "False", "Unknown", "Ready", "Failed", "Complete", "Completed", "Suspended", "Stalled", "Syncing",
        "Reconciling", "Admitted", "QuotaReserved", "Finished", "Evicted", "Inadmissible", "Active", "Available",
        "UpdateInProgress", "Progressing", "ProgressDeadlineExceeded", "ReplicaFailure", "ScalingActive",
        "AbleToScale", "ConfigurationCreateSuccess", "Resource", "Pods", "External", "Object", "Utilization",
        "LoadBalancer", "Bound", "Lost", "Terminating", "Synced", "Healthy", "Degraded", "Running", "Error",
        "ComparisonError", "Rejected", "UpdateFailed", "2009", "KNV1021: x", "OnDelete", "4x4", "cpu",
    ];
    const KINDS: &[(&str, &str)] = &[
        ("iam.cnrm.cloud.google.com", "IAMPolicyMember"), ("apps", "Deployment"), ("apps", "StatefulSet"),
        ("apps", "DaemonSet"), ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"), ("jobset.x-k8s.io", "JobSet"),
        ("batch", "Job"), ("autoscaling", "HorizontalPodAutoscaler"), ("kueue.x-k8s.io", "Workload"),
        ("kueue.x-k8s.io", "ClusterQueue"), ("monitoring.googleapis.com", "PodMonitoring"),
        ("configsync.gke.io", "RootSync"), ("argoproj.io", "Application"), ("", "Service"),
        ("", "PersistentVolumeClaim"), ("", "Namespace"), ("", "Node"), ("networking.istio.io", "Gateway"),
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
        leaf.prop_recursive(6, 96, 6, |inner| prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6)
                .prop_map(|pairs| Value::Object(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())),
        ])
    }

    fn arbitrary_object() -> impl Strategy<Value = Value> {
        prop_oneof![
            arbitrary_json(),
            (arbitrary_json(), arbitrary_json(), arbitrary_json())
                .prop_map(|(metadata, spec, status)| json!({"metadata": metadata, "spec": spec, "status": status})),
        ]
    }

    /// A field value the functions look for, or anything.
    fn leaf() -> impl Strategy<Value = Value> {
        prop_oneof![2 => prop::sample::select(WORDS).prop_map(Value::from), 1 => arbitrary_json()]
    }

    /// An object holding some of the field names read here, each with any value.
    fn entry() -> impl Strategy<Value = Value> {
        prop::collection::btree_map(prop::sample::select(KEYS), leaf(), 0..8)
            .prop_map(|fields| Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()))
    }

    /// Objects shaped like the statuses read here, each field anything: reaches the deep branches.
    fn shaped_object() -> impl Strategy<Value = Value> {
        let list = || prop::collection::vec(entry(), 0..4).prop_map(Value::Array);
        ((entry(), entry(), entry(), entry()), (list(), list(), list()), (entry(), entry()))
            .prop_map(|((metadata, spec, status, nested), (conditions, errors, items), (target, current))| {
                let with = |mut object: Value, fields: Value| {
                    if let (Some(object), Value::Object(fields)) = (object.as_object_mut(), fields) {
                        object.extend(fields);
                    }
                    object
                };
                let stage = with(nested.clone(), json!({"errors": errors}));
                let source = with(nested.clone(), json!({"metric": nested, "target": target, "current": current}));
                let metric = json!({"type": "Resource", "resource": source, "pods": source, "object": source,
                    "external": source, "containerResource": source});
                json!({
                    "metadata": with(metadata, json!({"labels": stage})),
                    "spec": with(spec, json!({"metrics": [metric], "replicatedJobs": items, "updateStrategy": stage})),
                    "status": with(status, json!({"conditions": conditions, "source": stage, "rendering": stage,
                        "sync": stage, "admission": stage, "health": stage, "operationState": stage,
                        "admissionChecks": items, "replicatedJobsStatus": items, "endpointStatuses": items,
                        "loadBalancer": {"ingress": items}, "currentMetrics": [metric]})),
                })
            })
    }

    fn bounded(health: &Health) -> bool {
        health.state != State::Missing
            && health.message.as_ref().is_none_or(|m| m.chars().count() <= MAX_MESSAGE)
            && health.reason.as_ref().is_none_or(|r| r.chars().count() <= MAX_WORD)
            // Details join a few cut names and numbers: bounded, whatever the object holds.
            && health.detail.as_ref().is_none_or(|d| d.chars().count() <= 3 * MAX_MESSAGE)
    }

    proptest! {
        #[test]
        fn never_panics_and_stays_bounded(
            object in prop_oneof![arbitrary_object(), shaped_object()],
            head in prop::option::of(".{0,50}"),
        ) {
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

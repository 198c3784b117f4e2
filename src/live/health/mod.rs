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

#[cfg(test)]
mod tests;

//! The readiness of each kind, read from realistic statuses.
#![cfg_attr(rustfmt, rustfmt_skip)]
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

//! The server's HorizontalPodAutoscaler: its bounds, its GPU metric, and whether its most
//! replicas fit the GPU pool.

use std::collections::BTreeMap;

use serde::Serialize;

use super::spec::{Autoscaling, Metric};
use crate::accelerator::GpuPlan;
use crate::gcp::spec::ServiceAccountSpec;
use crate::gcp::{ClusterHandle, Gcp};
use crate::plan::Planner;

/// The metrics adapter reads Cloud Monitoring time series.
const METRICS_ADAPTER_ROLE: &str = "roles/monitoring.viewer";

/// Where the Custom Metrics Stackdriver Adapter runs, as its release manifest installs it.
const METRICS_ADAPTER_NAMESPACE: &str = "custom-metrics";
const METRICS_ADAPTER_KSA: &str = "custom-metrics-stackdriver-adapter";

/// Most replicas an autoscaler may be given: far above any GPU pool.
const MAX_REPLICAS: u32 = 1_000;

#[derive(Debug, Serialize)]
pub(super) struct AutoscalingPlan {
    pub(super) min_replicas: u32,
    pub(super) max_replicas: u32,
    /// External metric name as the adapter spells it (`/` as `|`).
    metric: String,
    /// `gpu_utilization` or `duty_cycle`, for the comment above it.
    metric_kind: &'static str,
    /// Labels that keep the metric to this server's pods.
    selector: BTreeMap<String, String>,
    /// Target average per pod, as a Kubernetes quantity.
    pub(super) average_value: String,
}

/// The identity of the Custom Metrics Stackdriver Adapter, which serves the HPA its external
/// metric. The adapter is a cluster add-on: the blueprint that creates the cluster provides
/// its identity; on other clusters it is a prerequisite unless the spec names an account.
pub(super) fn metrics_adapter(
    gcp: &mut Gcp,
    planner: &mut Planner<'_>,
    account: Option<&ServiceAccountSpec>,
    cluster: &ClusterHandle,
) {
    let adapter_spec = match account {
        Some(account) => account.clone(),
        None if cluster.owned => ServiceAccountSpec::default(),
        None => return,
    };
    let adapter = gcp.service_account(
        planner,
        &adapter_spec,
        "spec.serviceAccounts.metricsAdapter",
        "metrics",
        "Custom Metrics Stackdriver Adapter",
    );
    gcp.project_role(&adapter, METRICS_ADAPTER_ROLE);
    gcp.workload_identity(
        &adapter,
        cluster,
        METRICS_ADAPTER_NAMESPACE,
        METRICS_ADAPTER_KSA,
    );
}

/// The autoscaler of `server` (the Deployment, and Triton's metrics job) in `namespace` of
/// `cluster`, between `min_replicas` and `max_replicas` (checked by [`check_autoscaling`]).
pub(super) fn plan(
    spec: &Autoscaling,
    (min_replicas, max_replicas): (u32, u32),
    cluster: &str,
    namespace: &str,
    server: &str,
    gpus_per_pod: u32,
) -> AutoscalingPlan {
    let target = spec.target_utilization.unwrap_or(85);
    // External metrics average the sum of every matching series over the replicas, so the
    // target per pod is the per-GPU target times the pod's GPUs.
    let (metric, metric_kind, labels, average_value) =
        match spec.metric.unwrap_or(Metric::GpuUtilization) {
            Metric::GpuUtilization => (
                "prometheus.googleapis.com|nv_gpu_utilization|gauge",
                "gpu_utilization",
                [
                    ("cluster", cluster),
                    ("namespace", namespace),
                    ("job", server),
                ],
                format!("{}m", target * 10 * gpus_per_pod),
            ),
            Metric::DutyCycle => (
                "kubernetes.io|container|accelerator|duty_cycle",
                "duty_cycle",
                [
                    ("cluster_name", cluster),
                    ("namespace_name", namespace),
                    ("container_name", "triton"),
                ],
                (target * gpus_per_pod).to_string(),
            ),
        };
    AutoscalingPlan {
        min_replicas,
        max_replicas,
        metric: metric.into(),
        metric_kind,
        selector: labels
            .into_iter()
            .map(|(label, value)| (format!("resource.labels.{label}"), value.to_string()))
            .collect(),
        average_value,
    }
}

/// `spec.autoscaling` bounds: at least one replica, the minimum at most the maximum, and a
/// target between 1 and 100 percent. `None` (with findings) when they cannot work.
pub(super) fn check_autoscaling(
    planner: &mut Planner<'_>,
    spec: &Autoscaling,
) -> Option<(u32, u32)> {
    let min = spec.min_replicas.unwrap_or(1);
    let max = spec.max_replicas.unwrap_or(3);
    let fine = check_bounds(planner, "spec.autoscaling", min, max);
    if let Some(target) = spec.target_utilization
        && !(1..=100).contains(&target)
    {
        let d = planner.error(
            crate::plan::rule::AUTOSCALING_BOUNDS,
            "spec.autoscaling.targetUtilization",
            format!("a GPU utilisation target of {target}% cannot be reached"),
        );
        d.found = Some(target.to_string());
        d.expected = Some("a percentage from 1 to 100".into());
        return None;
    }
    fine.then_some((min, max))
}

/// `minReplicas` and `maxReplicas` under `field`: 1 ≤ min ≤ max ≤ [`MAX_REPLICAS`].
pub(super) fn check_bounds(planner: &mut Planner<'_>, field: &str, min: u32, max: u32) -> bool {
    let rule = crate::plan::rule::AUTOSCALING_BOUNDS;
    if min == 0 {
        // Scaling to zero needs the alpha `HPAScaleToZero` feature gate, which GKE does not set.
        let d = planner.error(
            rule,
            &format!("{field}.minReplicas"),
            "an autoscaler keeps at least one replica",
        );
        d.found = Some("0".into());
        d.expected = Some("1 or more".into());
        return false;
    }
    if max > MAX_REPLICAS {
        let d = planner.error(
            rule,
            &format!("{field}.maxReplicas"),
            format!("{max} replicas is beyond any GPU pool"),
        );
        d.expected = Some(format!("at most {MAX_REPLICAS}"));
        return false;
    }
    if min > max {
        let d = planner.error(
            rule,
            &format!("{field}.maxReplicas"),
            format!("the autoscaler's maximum ({max}) is below its minimum ({min})"),
        );
        d.found = Some(format!("minReplicas {min}, maxReplicas {max}"));
        d.expected = Some("`minReplicas` ≤ `maxReplicas`".into());
        d.fix = Some(format!(
            "raise `{field}.maxReplicas` to {min} or more, or lower `minReplicas`"
        ));
        return false;
    }
    true
}

/// `1 GPU`, `2 GPUs`.
fn plural(count: u32, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// GPUs per pod fit one node, and the HPA's most replicas (when its bounds are sound) fit
/// the GPU pool at its largest: `maxNodes × (GPUs per node ÷ GPUs per pod, rounded down)`.
pub(super) fn check_capacity(
    planner: &mut Planner<'_>,
    gpu: &GpuPlan,
    gpus_per_pod: u32,
    max_replicas: Option<u32>,
    max_nodes: u32,
) {
    if gpus_per_pod == 0 || gpus_per_pod > gpu.count {
        let d = planner.error(
            crate::plan::rule::GPUS_PER_POD,
            "spec.triton.gpusPerPod",
            format!(
                "a server pod cannot use {gpus_per_pod} GPUs on nodes with {} `{}`",
                gpu.count, gpu.accelerator
            ),
        );
        d.found = Some(gpus_per_pod.to_string());
        d.expected = Some(if gpu.count == 1 {
            "1 (`spec.gpu.count`)".to_string()
        } else {
            format!("1 to {} (`spec.gpu.count`)", gpu.count)
        });
        d.fix = Some(format!(
            "set `spec.triton.gpusPerPod` to at most {}, or raise `spec.gpu.count`",
            gpu.count
        ));
        return;
    }
    let Some(max_replicas) = max_replicas else {
        return;
    };
    let per_node = gpu.count / gpus_per_pod;
    let capacity = per_node.saturating_mul(max_nodes);
    if max_replicas > capacity {
        let nodes_needed = max_replicas.div_ceil(per_node);
        let d = planner.error(
            crate::plan::rule::AUTOSCALING_CAPACITY,
            "spec.autoscaling.maxReplicas",
            format!(
                "{} of {} do not fit the GPU pool: {} × {} hold {}",
                plural(max_replicas, "server pod"),
                plural(gpus_per_pod, "GPU"),
                plural(max_nodes, "node"),
                plural(gpu.count, "GPU"),
                plural(capacity, "pod"),
            ),
        );
        d.found = Some(format!(
            "maxReplicas {max_replicas} × {} > {} × {}",
            plural(gpus_per_pod, "GPU"),
            plural(max_nodes, "node"),
            plural(gpu.count, "GPU"),
        ));
        d.expected = Some(format!("at most {capacity} replicas"));
        d.fix = Some(format!(
            "raise `spec.gpuPool.autoscaling.maxNodes` to {nodes_needed}, or lower `spec.autoscaling.maxReplicas` to {capacity}"
        ));
    }
}

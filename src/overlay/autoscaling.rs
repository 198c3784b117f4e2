//! HorizontalPodAutoscalers of serving kinds: their bounds, a GPU metric read through the
//! Custom Metrics Stackdriver Adapter (and the adapter's identity), and whether their most
//! replicas fit the GPU pool.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::accelerator::GpuPlan;
use crate::gcp::spec::{GpuPoolSpec, ServiceAccountSpec};
use crate::gcp::{ClusterHandle, Gcp};
use crate::plan::Planner;

/// The metrics adapter reads Cloud Monitoring time series.
const METRICS_ADAPTER_ROLE: &str = "roles/monitoring.viewer";

/// Where the Custom Metrics Stackdriver Adapter runs, as its release manifest installs it.
const METRICS_ADAPTER_NAMESPACE: &str = "custom-metrics";
const METRICS_ADAPTER_KSA: &str = "custom-metrics-stackdriver-adapter";

/// Most replicas an autoscaler may be given: far above any GPU pool.
const MAX_REPLICAS: u32 = 1_000;

/// An autoscaler on an external GPU metric, as a workload template reads it.
#[derive(Debug, Serialize)]
pub struct AutoscalingPlan {
    /// Fewest replicas.
    pub min_replicas: u32,
    /// Most replicas.
    pub max_replicas: u32,
    /// External metric name as the adapter spells it (`/` as `|`).
    metric: String,
    /// `gpu_utilization` or `duty_cycle`, for the comment above it.
    metric_kind: &'static str,
    /// Labels that keep the metric to this server's pods.
    selector: BTreeMap<String, String>,
    /// Target average per pod, as a Kubernetes quantity.
    pub average_value: String,
}

/// The GPU metric an autoscaler follows, and what keeps it to one server's pods.
#[derive(Clone, Copy, Debug)]
pub enum GpuMetric<'a> {
    /// A Managed Prometheus gauge from 0 to 1 per GPU (e.g. Triton's `nv_gpu_utilization`),
    /// scraped by the PodMonitoring job `job`.
    Gauge {
        /// Prometheus metric name.
        name: &'a str,
        /// The `job` label: the PodMonitoring's name.
        job: &'a str,
    },
    /// GKE's accelerator duty cycle (0 to 100 per GPU) of the containers named `container`.
    DutyCycle {
        /// Name of the server containers.
        container: &'a str,
    },
}

impl AutoscalingPlan {
    /// The autoscaler of pods with `gpus_per_pod` GPUs in `namespace` of `cluster`, between
    /// `min_replicas` and `max_replicas` (checked by [`check_replicas`]), keeping `metric` at
    /// `target` percent per GPU.
    #[must_use]
    pub fn on_gpu(
        metric: GpuMetric<'_>,
        (min_replicas, max_replicas): (u32, u32),
        target: u32,
        gpus_per_pod: u32,
        cluster: &str,
        namespace: &str,
    ) -> Self {
        // External metrics average the sum of every matching series over the replicas, so the
        // target per pod is the per-GPU target times the pod's GPUs.
        let (metric, metric_kind, labels, average_value) = match metric {
            GpuMetric::Gauge { name, job } => (
                format!("prometheus.googleapis.com|{name}|gauge"),
                "gpu_utilization",
                [("cluster", cluster), ("namespace", namespace), ("job", job)],
                format!("{}m", target * 10 * gpus_per_pod),
            ),
            GpuMetric::DutyCycle { container } => (
                "kubernetes.io|container|accelerator|duty_cycle".to_string(),
                "duty_cycle",
                [
                    ("cluster_name", cluster),
                    ("namespace_name", namespace),
                    ("container_name", container),
                ],
                (target * gpus_per_pod).to_string(),
            ),
        };
        Self {
            min_replicas,
            max_replicas,
            metric,
            metric_kind,
            selector: labels
                .into_iter()
                .map(|(label, value)| (format!("resource.labels.{label}"), value.to_string()))
                .collect(),
            average_value,
        }
    }
}

/// The identity of the Custom Metrics Stackdriver Adapter, which serves an HPA its external
/// metric, from the spec's `account` at `field`. The adapter is a cluster add-on: the
/// blueprint that creates the cluster provides its identity; on other clusters it is a
/// prerequisite unless the spec names an account.
pub fn metrics_adapter(
    gcp: &mut Gcp,
    planner: &mut Planner<'_>,
    account: Option<&ServiceAccountSpec>,
    field: &str,
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
        field,
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

/// An autoscaler's bounds under `field` (e.g. `spec.autoscaling`), defaults applied, and its
/// GPU utilisation `target` (`<field>.targetUtilization`): at least one replica, the minimum
/// at most the maximum, a target between 1 and 100 percent. `None` (with findings) when they
/// cannot work.
pub fn check_replicas(
    planner: &mut Planner<'_>,
    field: &str,
    (min, max): (u32, u32),
    target: Option<u32>,
) -> Option<(u32, u32)> {
    let fine = check_bounds(planner, field, min, max);
    if let Some(target) = target
        && !(1..=100).contains(&target)
    {
        let d = planner.error(
            crate::plan::rule::AUTOSCALING_BOUNDS,
            &format!("{field}.targetUtilization"),
            format!("a GPU utilisation target of {target}% cannot be reached"),
        );
        d.found = Some(target.to_string());
        d.expected = Some("a percentage from 1 to 100".into());
        return None;
    }
    fine.then_some((min, max))
}

/// `minReplicas` and `maxReplicas` under `field`: 1 ≤ min ≤ max ≤ `MAX_REPLICAS`.
pub fn check_bounds(planner: &mut Planner<'_>, field: &str, min: u32, max: u32) -> bool {
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

/// A kind's autoscaled GPU pods, for [`check_capacity`]: what one is called and the fields
/// that size them (the GPU pool is the shared `spec.gpu` and `spec.gpuPool`).
#[derive(Clone, Copy, Debug)]
pub struct GpuPods<'a> {
    /// What one pod is, e.g. `server pod`.
    pub noun: &'a str,
    /// GPUs of each pod.
    pub gpus_per_pod: u32,
    /// Field of `gpus_per_pod`, e.g. `spec.triton.gpusPerPod`.
    pub gpus_per_pod_field: &'a str,
    /// Field of the most replicas, e.g. `spec.autoscaling.maxReplicas`.
    pub max_replicas_field: &'a str,
}

/// GPUs per pod fit one node, and the HPA's most replicas (when its bounds and the bounds of
/// `pool` are sound) fit the GPU pool at its largest: `maxNodes × (GPUs per node ÷ GPUs per
/// pod, rounded down)`.
pub fn check_capacity(
    planner: &mut Planner<'_>,
    gpu: &GpuPlan,
    pods: &GpuPods<'_>,
    pool: &GpuPoolSpec,
    max_replicas: Option<u32>,
    max_nodes: u32,
) {
    let GpuPods {
        noun,
        gpus_per_pod,
        gpus_per_pod_field,
        max_replicas_field,
    } = *pods;
    if gpus_per_pod == 0 || gpus_per_pod > gpu.count {
        let d = planner.error(
            crate::plan::rule::GPUS_PER_POD,
            gpus_per_pod_field,
            format!(
                "a {noun} cannot use {gpus_per_pod} GPUs on nodes with {} `{}`",
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
            "set `{gpus_per_pod_field}` to at most {}, or raise `spec.gpu.count`",
            gpu.count
        ));
        return;
    }
    // Pool bounds that cannot work are `node-pool-size` or `blueprint-conflict` findings
    // already; a capacity finding on top would only repeat them.
    let pool_sound = match (pool.node_count, pool.autoscaling) {
        (Some(_), Some(_)) => false,
        (None, Some(bounds)) => bounds.min_nodes <= bounds.max_nodes && bounds.max_nodes > 0,
        _ => true,
    };
    let Some(max_replicas) = max_replicas.filter(|_| pool_sound) else {
        return;
    };
    let per_node = gpu.count / gpus_per_pod;
    let capacity = per_node.saturating_mul(max_nodes);
    if max_replicas > capacity {
        let nodes_needed = max_replicas.div_ceil(per_node);
        let d = planner.error(
            crate::plan::rule::AUTOSCALING_CAPACITY,
            max_replicas_field,
            format!(
                "{} of {} do not fit the GPU pool: {} × {} hold {}",
                plural(max_replicas, noun),
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
            "raise `spec.gpuPool.autoscaling.maxNodes` to {nodes_needed}, or lower `{max_replicas_field}` to {capacity}"
        ));
    }
}

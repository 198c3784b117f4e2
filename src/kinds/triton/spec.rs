//! `spec` of a `TritonServing` blueprint, as people write it.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::accelerator::GpuSpec;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, GpuPoolSpec, NetworkSpec, RegistrySpec,
    ServiceAccountSpec,
};
use crate::overlay::exposure::Ingress;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    pub(super) project: String,
    /// Region (default: the referenced cluster's, else `us-central1`).
    pub(super) region: Option<String>,
    /// Zone of the GPU nodes and of a new zonal cluster (default: `<region>-a`).
    pub(super) zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    pub(super) config_connector: ConfigConnectorSpec,
    /// Let a change delete the clusters, node pools, network, node service account and data
    /// this blueprint created: its removal, or an edit GCP makes only by recreating them
    /// (default `false`: removed ones are abandoned, kept in GCP and billed until deleted by
    /// hand, and `diff --fail-on destructive` fails on a recreate). Commit it first.
    #[serde(default)]
    pub(super) allow_teardown: bool,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    pub(super) network: NetworkSpec,
    /// The cluster (new by default: zonal, Workload Identity, Managed Prometheus).
    #[serde(default)]
    pub(super) cluster: ClusterSpec,
    /// Node, Workload Identity and metrics adapter service accounts.
    #[serde(default)]
    pub(super) service_accounts: ServiceAccounts,
    /// Namespace of the serving objects (default: the blueprint name).
    pub(super) namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account (default `triton`).
    pub(super) kubernetes_service_account: Option<String>,
    /// GPUs of each node of the GPU pool (default: one `nvidia-tesla-t4` on `n1-standard-4`).
    pub(super) gpu: Option<GpuSpec>,
    /// Size of the GPU pool (default: autoscaling from 1 to 3 nodes).
    #[serde(default)]
    pub(super) gpu_pool: GpuPoolSpec,
    /// The model repository bucket.
    #[serde(default)]
    pub(super) bucket: BucketSpec,
    /// Artifact Registry repository for custom Triton images.
    #[serde(default)]
    pub(super) registry: RegistrySpec,
    /// What is served.
    #[serde(default)]
    pub(super) model: Model,
    /// The Triton server.
    #[serde(default)]
    pub(super) triton: Triton,
    /// The HorizontalPodAutoscaler of the server.
    #[serde(default)]
    pub(super) autoscaling: Autoscaling,
    /// An ingress for inference and health of `model.name`: Istio (HTTP and gRPC, the default)
    /// or GKE's Gateway API (HTTP); internal unless `public: true`. Without it the server is
    /// reachable inside the cluster only.
    pub(super) ingress: Option<Ingress>,
    /// Run the reference's health check (a Job that waits for Triton's readiness endpoint
    /// through the Service) after each apply of a new server (default `true`).
    pub(super) health_check: Option<bool>,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ServiceAccounts {
    /// Account of the nodes.
    #[serde(default)]
    pub(super) nodes: ServiceAccountSpec,
    /// Workload Identity account of the Triton server (reads the model repository).
    #[serde(default)]
    pub(super) workload: ServiceAccountSpec,
    /// Account of the Custom Metrics Stackdriver Adapter (`roles/monitoring.viewer`); planned
    /// when the blueprint creates its cluster or when set.
    pub(super) metrics_adapter: Option<ServiceAccountSpec>,
}

/// `spec.model`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Model {
    /// Folder of the model repository inside the bucket (default `model_repository`).
    pub(super) path: Option<String>,
    /// Name of the model served, for blueprints that benchmark it.
    pub(super) name: Option<String>,
    /// The API clients use: `triton` (KServe v2 inference, the default) or
    /// `tensorrt_llm_triton` (TensorRT-LLM's generate endpoint).
    pub(super) framework: Option<Framework>,
}

/// The serving API of the model, as load generators name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub(super) enum Framework {
    /// KServe v2 `infer` on any Triton backend.
    Triton,
    /// TensorRT-LLM's `generate` endpoint.
    TensorrtLlmTriton,
}

impl Framework {
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Triton => "triton",
            Self::TensorrtLlmTriton => "tensorrt_llm_triton",
        }
    }
}

/// `spec.triton`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Triton {
    /// Name of the Deployment, Service, PodMonitoring and HPA (default `triton`).
    pub(super) name: Option<String>,
    /// Server image with a tag or digest (default: NGC `tritonserver:26.07-py3`, or
    /// `26.07-trtllm-python-py3` for `tensorrt_llm_triton`).
    pub(super) image: Option<String>,
    /// GPUs of each server pod (default 1).
    pub(super) gpus_per_pod: Option<u32>,
    /// CPU of each server pod, requested and limited (default `"2"`).
    pub(super) cpu: Option<String>,
    /// Memory of each server pod, requested and limited (default `8Gi`).
    pub(super) memory: Option<String>,
    /// Extra `tritonserver` arguments.
    #[serde(default)]
    pub(super) args: Vec<String>,
}

/// `spec.autoscaling`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Autoscaling {
    /// Fewest server pods (default 1).
    pub(super) min_replicas: Option<u32>,
    /// Most server pods (default 3).
    pub(super) max_replicas: Option<u32>,
    /// GPU metric: `gpuUtilization` (Triton's own `nv_gpu_utilization` through Managed
    /// Prometheus, the default) or `dutyCycle` (GKE's accelerator duty cycle, as the reference).
    pub(super) metric: Option<Metric>,
    /// Average GPU utilisation to keep, in percent (default 85).
    pub(super) target_utilization: Option<u32>,
}

/// The GPU metric the HPA follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(super) enum Metric {
    /// `nv_gpu_utilization` from Triton's metrics port, collected by Managed Prometheus.
    GpuUtilization,
    /// `kubernetes.io/container/accelerator/duty_cycle` from GKE system metrics.
    DutyCycle,
}

impl Spec {
    /// Name of the Deployment, Service, PodMonitoring and HPA.
    pub(super) fn triton_name(&self) -> String {
        self.triton.name.clone().unwrap_or_else(|| "triton".into())
    }

    /// Namespace of the serving objects.
    pub(super) fn namespace(&self, blueprint: &str) -> String {
        self.namespace
            .clone()
            .unwrap_or_else(|| blueprint.to_string())
    }

    /// The serving API of the model.
    pub(super) fn framework(&self) -> Framework {
        self.model.framework.unwrap_or(Framework::Triton)
    }
}

//! `TritonServing`: NVIDIA Triton Inference Server on GKE GPUs, autoscaled on GPU utilisation,
//! with Managed Prometheus and an optional Istio or Gateway API ingress.
//!
//! References: the Triton-on-GKE sandbox (Terraform, Istio ingress gateway, Managed Prometheus,
//! model repository bucket, health check) and NVIDIA's GKE Marketplace chart (Deployment,
//! Service, HPA on GPU duty cycle, Istio gateway and virtual service). The kind is a recipe over
//! the shared blocks: a cluster (new, existing, or another blueprint's) with Workload Identity
//! and Managed Prometheus, a CPU pool, a GPU pool sized from `spec.gpu` and `spec.gpuPool`, the
//! model repository bucket, an Artifact Registry repository and the service accounts; in the
//! cluster, a namespace, the Workload Identity service account, the Triton Deployment, Service,
//! PodMonitoring and HPA, a health-check Job and, when asked, an ingress: Istio's (gateway
//! pods of its own or an existing gateway) or GKE's Gateway API (a Gateway, an HTTPRoute, a
//! HealthCheckPolicy and a GCPBackendPolicy; the cluster's Gateway API and proxy-only subnet
//! come from the blocks).
//!
//! What the references got wrong and this kind does not: the HPA's external metric carries a
//! selector (the reference summed every GPU container of the project), the Gateway selects
//! gateway pods that exist (the kind deploys them, or uses the selector it is given), the HPA
//! is `autoscaling/v2`, the server requests CPU and memory and selects its GPU model, and the
//! HPA's maximum fits the GPU pool (checked here and by the manifest rule `hpa-gpu-capacity`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TypedKind;
use crate::accelerator::{self, GpuPlan, GpuSpec};
use crate::blueprint::Blueprint;
use crate::catalog::GPU_ACCELERATOR_LABEL;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, GpuPoolSpec, NetworkSpec, RegistrySpec,
    ServiceAccountSpec,
};
use crate::gcp::{
    self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, GpuPoolDefaults, Infrastructure, Scale,
};
use crate::names::check_dns_label;
use crate::overlay::Plane;
use crate::overlay::{self, Overlay, TemplateError};
use crate::plan::{Exports, Planner, ServiceExport};

/// The `TritonServing` kind.
pub struct TritonServing;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    project: String,
    /// Region (default: the referenced cluster's, else `us-central1`).
    region: Option<String>,
    /// Zone of the GPU nodes and of a new zonal cluster (default: `<region>-a`).
    zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    config_connector: ConfigConnectorSpec,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    network: NetworkSpec,
    /// The cluster (new by default: zonal, Workload Identity, Managed Prometheus).
    #[serde(default)]
    cluster: ClusterSpec,
    /// Node, Workload Identity and metrics adapter service accounts.
    #[serde(default)]
    service_accounts: ServiceAccounts,
    /// Namespace of the serving objects (default: the blueprint name).
    namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account (default `triton`).
    kubernetes_service_account: Option<String>,
    /// GPUs of each node of the GPU pool (default: one `nvidia-tesla-t4` on `n1-standard-4`).
    gpu: Option<GpuSpec>,
    /// Size of the GPU pool (default: autoscaling from 1 to 3 nodes).
    #[serde(default)]
    gpu_pool: GpuPoolSpec,
    /// The model repository bucket.
    #[serde(default)]
    bucket: BucketSpec,
    /// Artifact Registry repository for custom Triton images.
    #[serde(default)]
    registry: RegistrySpec,
    /// What is served.
    #[serde(default)]
    model: Model,
    /// The Triton server.
    #[serde(default)]
    triton: Triton,
    /// The HorizontalPodAutoscaler of the server.
    #[serde(default)]
    autoscaling: Autoscaling,
    /// An ingress: Istio (HTTP and gRPC on port 80, the default) or GKE's Gateway API (HTTP on
    /// port 80); without it the server is reachable inside the cluster only.
    ingress: Option<Ingress>,
    /// Run the reference's health check (a Job that waits for Triton's readiness endpoint
    /// through the Service) after each apply of a new server (default `true`).
    health_check: Option<bool>,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    /// Account of the nodes.
    #[serde(default)]
    nodes: ServiceAccountSpec,
    /// Workload Identity account of the Triton server (reads the model repository).
    #[serde(default)]
    workload: ServiceAccountSpec,
    /// Account of the Custom Metrics Stackdriver Adapter (`roles/monitoring.viewer`); planned
    /// when the blueprint creates its cluster or when set.
    metrics_adapter: Option<ServiceAccountSpec>,
}

/// `spec.model`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Model {
    /// Folder of the model repository inside the bucket (default `model_repository`).
    path: Option<String>,
    /// Name of the model served, for blueprints that benchmark it.
    name: Option<String>,
    /// The API clients use: `triton` (KServe v2 inference, the default) or
    /// `tensorrt_llm_triton` (TensorRT-LLM's generate endpoint).
    framework: Option<Framework>,
}

/// The serving API of the model, as load generators name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Framework {
    /// KServe v2 `infer` on any Triton backend.
    Triton,
    /// TensorRT-LLM's `generate` endpoint.
    TensorrtLlmTriton,
}

impl Framework {
    fn name(self) -> &'static str {
        match self {
            Self::Triton => "triton",
            Self::TensorrtLlmTriton => "tensorrt_llm_triton",
        }
    }
}

/// `spec.triton`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Triton {
    /// Name of the Deployment, Service, PodMonitoring and HPA (default `triton`).
    name: Option<String>,
    /// Server image with a tag or digest (default: NGC `tritonserver:26.07-py3`, or
    /// `26.07-trtllm-python-py3` for `tensorrt_llm_triton`).
    image: Option<String>,
    /// GPUs of each server pod (default 1).
    gpus_per_pod: Option<u32>,
    /// CPU of each server pod, requested and limited (default `"2"`).
    cpu: Option<String>,
    /// Memory of each server pod, requested and limited (default `8Gi`).
    memory: Option<String>,
    /// Extra `tritonserver` arguments.
    #[serde(default)]
    args: Vec<String>,
}

/// `spec.autoscaling`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Autoscaling {
    /// Fewest server pods (default 1).
    min_replicas: Option<u32>,
    /// Most server pods (default 3).
    max_replicas: Option<u32>,
    /// GPU metric: `gpuUtilization` (Triton's own `nv_gpu_utilization` through Managed
    /// Prometheus, the default) or `dutyCycle` (GKE's accelerator duty cycle, as the reference).
    metric: Option<Metric>,
    /// Average GPU utilisation to keep, in percent (default 85).
    target_utilization: Option<u32>,
}

/// The GPU metric the HPA follows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum Metric {
    /// `nv_gpu_utilization` from Triton's metrics port, collected by Managed Prometheus.
    GpuUtilization,
    /// `kubernetes.io/container/accelerator/duty_cycle` from GKE system metrics.
    DutyCycle,
}

/// `spec.ingress`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Ingress {
    /// `istio` (the default: an Istio ingress gateway, HTTP and gRPC) or `gateway` (GKE's
    /// Gateway controller: a Google Cloud Application Load Balancer, HTTP only).
    api: Option<IngressApi>,
    /// Hosts the ingress answers for (default `["*"]`: any).
    #[serde(default)]
    hosts: Vec<String>,
    /// Istio only: pod labels of an Istio ingress gateway that exists already; without it
    /// the blueprint deploys its own gateway in its namespace.
    gateway_selector: Option<BTreeMap<String, String>>,
    /// Istio only: the revision that injects the gateway (`istio.io/rev`); default: the
    /// default revision.
    revision: Option<String>,
    /// A load balancer reachable from the VPC only (default `false`: public). With
    /// `api: gateway`: `gke-l7-rilb` (regional internal) instead of
    /// `gke-l7-global-external-managed`.
    #[serde(default)]
    internal: bool,
    /// Istio only: fewest gateway pods (default 2).
    min_replicas: Option<u32>,
    /// Istio only: most gateway pods (default 5).
    max_replicas: Option<u32>,
}

/// The API an ingress is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
enum IngressApi {
    /// Istio `Gateway` and `VirtualService`, with an ingress gateway of the blueprint's own
    /// or an existing one.
    Istio,
    /// Kubernetes Gateway API (`gateway.networking.k8s.io/v1`) served by GKE's Gateway
    /// controller.
    Gateway,
}

/// Project roles of the node service account: GKE's minimal node role (logging, monitoring
/// and Managed Prometheus agents) and image pulls.
const NODE_PROJECT_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
];

/// Roles of the Workload Identity account on the model repository: list and read objects, and
/// read the bucket's metadata. Nothing project-wide.
const BUCKET_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectViewer",
];

/// The metrics adapter reads Cloud Monitoring time series.
const METRICS_ADAPTER_ROLE: &str = "roles/monitoring.viewer";

/// Where the Custom Metrics Stackdriver Adapter runs, as its release manifest installs it.
const METRICS_ADAPTER_NAMESPACE: &str = "custom-metrics";
const METRICS_ADAPTER_KSA: &str = "custom-metrics-stackdriver-adapter";

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];

const DEFAULT_REGION: &str = "us-central1";
const DEFAULT_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-py3";
const DEFAULT_TRTLLM_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3";
/// A non-root curl (user 100) for the health check.
const HEALTH_CHECK_IMAGE: &str = "curlimages/curl:8.11.1";
/// GKE gateway classes: a regional internal Application Load Balancer (Envoy proxies in the
/// region's proxy-only subnet), and the global external one.
const GATEWAY_CLASS_INTERNAL: &str = "gke-l7-rilb";
const GATEWAY_CLASS_EXTERNAL: &str = "gke-l7-global-external-managed";
/// How long the load balancer waits for a response (its default, 30 s, cuts long generations).
const GATEWAY_TIMEOUT_SECONDS: u32 = 600;
/// Triton's ports, as both references use them.
const HTTP_PORT: u16 = 8000;
const GRPC_PORT: u16 = 8001;
/// Most replicas an autoscaler may be given: far above any GPU pool.
const MAX_REPLICAS: u32 = 1_000;
/// Node label that ties the server to this blueprint's GPU pool, so blueprints sharing a
/// cluster never land on each other's GPUs.
const BLUEPRINT_LABEL: &str = "aiml.dev/blueprint";

/// Everything the workload templates need, derived and checked.
#[derive(Debug, Serialize)]
pub struct Plan {
    infra: Infrastructure,
    workload: Workload,
    gpu: GpuPlan,
}

#[derive(Debug, Serialize)]
struct Workload {
    namespace: String,
    kubernetes_service_account: String,
    workload_service_account: String,
    triton: TritonPlan,
    autoscaling: AutoscalingPlan,
    ingress: Option<IngressPlan>,
    gateway_api: Option<GatewayApiPlan>,
    health_check: Option<HealthCheckPlan>,
}

#[derive(Debug, Serialize)]
struct TritonPlan {
    name: String,
    image: String,
    args: Vec<String>,
    gpus_per_pod: u32,
    cpu: String,
    memory: String,
    node_selector: BTreeMap<String, String>,
    http_port: u16,
    grpc_port: u16,
    /// `<name>.<namespace>.svc.cluster.local`.
    host: String,
}

#[derive(Debug, Serialize)]
struct AutoscalingPlan {
    min_replicas: u32,
    max_replicas: u32,
    /// External metric name as the adapter spells it (`/` as `|`).
    metric: String,
    /// `gpu_utilization` or `duty_cycle`, for the comment above it.
    metric_kind: &'static str,
    /// Labels that keep the metric to this server's pods.
    selector: BTreeMap<String, String>,
    /// Target average per pod, as a Kubernetes quantity.
    average_value: String,
}

#[derive(Debug, Serialize)]
struct IngressPlan {
    gateway: String,
    hosts: Vec<String>,
    selector: BTreeMap<String, String>,
    /// The gateway this blueprint deploys, when it uses none that exists.
    deployment: Option<GatewayDeploymentPlan>,
}

/// A Gateway API ingress on GKE's Gateway controller.
#[derive(Debug, Serialize)]
struct GatewayApiPlan {
    /// Name of the Gateway.
    gateway: String,
    /// `gke-l7-rilb` or `gke-l7-global-external-managed`.
    class: &'static str,
    internal: bool,
    /// `HTTPRoute` host names; none answers any host.
    hostnames: Vec<String>,
    /// Whether this blueprint enables the cluster's Gateway API (and, for an internal
    /// gateway, the proxy-only subnet); else they are prerequisites.
    cluster_ready: bool,
    /// Backend timeout of the load balancer.
    timeout_seconds: u32,
}

#[derive(Debug, Serialize)]
struct GatewayDeploymentPlan {
    name: String,
    /// Labels that make Istio's injector fill in the gateway proxy.
    injection_labels: BTreeMap<String, String>,
    internal: bool,
    min_replicas: u32,
    max_replicas: u32,
}

#[derive(Debug, Serialize)]
struct HealthCheckPlan {
    name: String,
    image: &'static str,
    url: String,
}

impl TypedKind for TritonServing {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "TritonServing";
    const SUMMARY: &'static str = "NVIDIA Triton on GKE GPUs, autoscaled on GPU utilisation, with Managed Prometheus and an optional Istio or Gateway API ingress";

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        let region = spec
            .region
            .clone()
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let zone = spec.zone.clone().unwrap_or_else(|| format!("{region}-a"));
        let mut exports = gcp::cluster_exports(
            blueprint.name,
            &spec.project,
            &spec.config_connector,
            &spec.cluster,
            &region,
            &zone,
        );
        let name = triton_name(spec);
        let namespace = namespace(spec, blueprint.name);
        let framework = spec.model.framework.unwrap_or(Framework::Triton);
        exports.services = [(HTTP_PORT, "http"), (GRPC_PORT, "grpc")]
            .into_iter()
            .map(|(port, protocol)| ServiceExport {
                name: name.clone(),
                namespace: namespace.clone(),
                port,
                protocol: protocol.to_string(),
                framework: Some(framework.name().to_string()),
                model: spec.model.name.clone(),
            })
            .collect();
        exports
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        let mut overlay = Overlay::default();
        overlay.add_infrastructure(blueprint, &plan.infra)?;
        let workload = overlay::render("triton/workload.yaml", &plan.workload)?;
        overlay.add_target(Plane::Workload, blueprint, workload)?;
        Ok(overlay)
    }

    fn describe(plan: &Plan) -> String {
        let autoscaling = &plan.workload.autoscaling;
        format!(
            "{} × {} per node, {}–{} replicas",
            plan.gpu.count,
            plan.gpu.accelerator,
            autoscaling.min_replicas,
            autoscaling.max_replicas
        )
    }
}

fn triton_name(spec: &Spec) -> String {
    spec.triton.name.clone().unwrap_or_else(|| "triton".into())
}

fn namespace(spec: &Spec, blueprint: &str) -> String {
    spec.namespace
        .clone()
        .unwrap_or_else(|| blueprint.to_string())
}

/// Service names are DNS-1035 labels: a DNS-1123 label that starts with a letter.
fn check_service_name(name: &str) -> Result<(), String> {
    check_dns_label(name)?;
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("must start with a lowercase letter (it names a Service)".into());
    }
    Ok(())
}

fn default_gpu() -> GpuSpec {
    GpuSpec {
        type_: "nvidia-tesla-t4".into(),
        count: Some(1),
        machine_type: None,
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "a recipe reads best top to bottom: blocks, checks, then the plan"
)]
fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
    // A blueprint on another blueprint's cluster defaults to that cluster's location.
    let borrowed = spec
        .cluster
        .blueprint
        .as_deref()
        .and_then(|other| planner.peek(other))
        .and_then(|exported| exported.exports.cluster.clone());
    let region = spec
        .region
        .clone()
        .or_else(|| borrowed.as_ref().map(|c| c.region.clone()))
        .unwrap_or_else(|| DEFAULT_REGION.to_string());
    let zone = spec.zone.clone().unwrap_or_else(|| {
        borrowed
            .as_ref()
            .filter(|c| crate::names::zone(&c.location).is_ok())
            .map_or_else(|| format!("{region}-a"), |c| c.location.clone())
    });
    let mut gcp = Gcp::new(
        planner,
        gcp::SiteSpec {
            project: &spec.project,
            region: &region,
            zone: &zone,
            config_connector: &spec.config_connector,
        },
    );
    let gpu = accelerator::resolve_gpu(planner, spec.gpu.as_ref().unwrap_or(&default_gpu()));

    let namespace = namespace(spec, &name);
    let kubernetes_service_account = spec
        .kubernetes_service_account
        .clone()
        .unwrap_or_else(|| "triton".into());
    let triton_name = triton_name(spec);
    for (field, value) in [
        ("spec.namespace", &namespace),
        ("spec.kubernetesServiceAccount", &kubernetes_service_account),
    ] {
        planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
    }
    planner.check_name(
        gcp::rule::KUBERNETES_NAME,
        "spec.triton.name",
        &triton_name,
        check_service_name,
    );
    let framework = spec.model.framework.unwrap_or(Framework::Triton);
    let image = spec.triton.image.clone().unwrap_or_else(|| {
        match framework {
            Framework::Triton => DEFAULT_IMAGE,
            Framework::TensorrtLlmTriton => DEFAULT_TRTLLM_IMAGE,
        }
        .into()
    });
    planner.check_image("spec.triton.image", &image);

    let gpus_per_pod = spec.triton.gpus_per_pod.unwrap_or(1);
    let autoscaling = check_autoscaling(planner, &spec.autoscaling);
    let ingress_replicas = spec
        .ingress
        .as_ref()
        .map(|ingress| check_ingress(planner, ingress));

    for service in SERVICES {
        gcp.api(service);
    }
    let node_account = gcp.service_account(
        planner,
        &spec.service_accounts.nodes,
        "spec.serviceAccounts.nodes",
        "node",
        "GKE Triton nodes",
    );
    let workload_account = gcp.service_account(
        planner,
        &spec.service_accounts.workload,
        "spec.serviceAccounts.workload",
        "wi",
        "Triton Inference Server",
    );
    Gcp::require_distinct_accounts(planner, &node_account, &workload_account);
    let cluster = gcp.cluster(
        planner,
        &spec.cluster,
        &spec.network,
        ClusterOptions {
            // Zonal, like both references: the GPU nodes live in one zone anyway.
            default_location: &zone,
            addons: Addons {
                horizontal_pod_autoscaling: true,
                managed_prometheus: true,
                ..Addons::default()
            },
        },
        &node_account,
    )?;
    if cluster.owned {
        gcp.cpu_pool(
            planner,
            &cluster,
            &spec.cluster.cpu_pool,
            CpuPoolDefaults {
                name: "cpu-pool",
                field: "spec.cluster.cpuPool",
                machine_type: "e2-standard-4",
                scale: Scale::Autoscaling { min: 1, max: 3 },
                disk_size_gb: Some(100),
                labels: &[("default-node-pool", "true")],
                taints: &[],
            },
            &node_account,
        );
    }
    // The adapter is a cluster add-on: the blueprint that creates the cluster provides its
    // identity; on other clusters it is a prerequisite unless the spec names an account.
    let adapter_spec = match &spec.service_accounts.metrics_adapter {
        Some(account) => Some(account.clone()),
        None if cluster.owned => Some(ServiceAccountSpec::default()),
        None => None,
    };
    if let Some(adapter_spec) = adapter_spec {
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
            &cluster,
            METRICS_ADAPTER_NAMESPACE,
            METRICS_ADAPTER_KSA,
        );
    }
    for role in NODE_PROJECT_ROLES {
        gcp.project_role(&node_account, role);
    }
    gcp.workload_identity(
        &workload_account,
        &cluster,
        &namespace,
        &kubernetes_service_account,
    );
    // Bucket names are global, so the project id leads.
    let bucket = gcp.bucket(
        planner,
        &spec.bucket,
        "spec.bucket",
        &crate::names::shortened(&format!("{}-{name}", spec.project), "-models", 63),
    );
    for role in BUCKET_ROLES {
        gcp.bucket_role(&bucket, &workload_account, role);
    }
    gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Triton Inference Server images",
    );
    let gpu = gpu?;
    let pool = gcp.sized_gpu_pool(
        planner,
        &cluster,
        &gpu,
        &spec.gpu_pool,
        &GpuPoolDefaults {
            name: "gpu-pool",
            field: "spec.gpuPool",
            scale: Scale::Autoscaling { min: 1, max: 3 },
            disk_size_gb: Some(100),
            labels: BTreeMap::from([(BLUEPRINT_LABEL.to_string(), name.clone())]),
        },
        &node_account,
    );
    // Pool bounds that cannot work are `node-pool-size` or `blueprint-conflict` findings
    // already; a capacity finding on top would only repeat them.
    let pool_sound = match (spec.gpu_pool.node_count, spec.gpu_pool.autoscaling) {
        (Some(_), Some(_)) => false,
        (None, Some(bounds)) => bounds.min_nodes <= bounds.max_nodes && bounds.max_nodes > 0,
        _ => true,
    };
    check_capacity(
        planner,
        &gpu,
        gpus_per_pod,
        autoscaling.filter(|_| pool_sound).map(|(_, max)| max),
        pool.max_nodes,
    );
    let (min_replicas, max_replicas) = autoscaling?;
    let gateway_api = spec
        .ingress
        .as_ref()
        .filter(|ingress| ingress.api == Some(IngressApi::Gateway))
        .map(|ingress| {
            let cluster_ready = gcp.gateway_api(planner, &cluster, &spec.network, ingress.internal);
            GatewayApiPlan {
                gateway: format!("{triton_name}-ingress"),
                class: if ingress.internal {
                    GATEWAY_CLASS_INTERNAL
                } else {
                    GATEWAY_CLASS_EXTERNAL
                },
                internal: ingress.internal,
                // The Gateway API spells "any host" by leaving the host names out.
                hostnames: ingress
                    .hosts
                    .iter()
                    .filter(|host| host.as_str() != "*")
                    .cloned()
                    .collect(),
                cluster_ready,
                timeout_seconds: GATEWAY_TIMEOUT_SECONDS,
            }
        });
    if planner.has_errors() {
        return None;
    }

    let model_path = spec
        .model
        .path
        .as_deref()
        .unwrap_or("model_repository")
        .trim_matches('/');
    let repository = if model_path.is_empty() {
        bucket.url()
    } else {
        format!("{}/{model_path}", bucket.url())
    };
    let mut args = vec![
        "tritonserver".to_string(),
        format!("--model-repository={repository}"),
        format!("--http-port={HTTP_PORT}"),
        format!("--grpc-port={GRPC_PORT}"),
        "--metrics-port=8002".to_string(),
        // `nv_gpu_utilization`, which the HPA follows by default.
        "--allow-gpu-metrics=true".to_string(),
    ];
    args.extend(spec.triton.args.iter().cloned());
    let node_selector = BTreeMap::from([
        (
            GPU_ACCELERATOR_LABEL.to_string(),
            gpu.accelerator.to_string(),
        ),
        (BLUEPRINT_LABEL.to_string(), name.clone()),
    ]);
    let target = spec.autoscaling.target_utilization.unwrap_or(85);
    let autoscaling = match spec.autoscaling.metric.unwrap_or(Metric::GpuUtilization) {
        // External metrics average the sum of every matching series over the replicas, so the
        // target per pod is the per-GPU target times the pod's GPUs.
        Metric::GpuUtilization => AutoscalingPlan {
            min_replicas,
            max_replicas,
            metric: "prometheus.googleapis.com|nv_gpu_utilization|gauge".into(),
            metric_kind: "gpu_utilization",
            selector: BTreeMap::from([
                ("resource.labels.cluster".into(), cluster.name.clone()),
                ("resource.labels.namespace".into(), namespace.clone()),
                ("resource.labels.job".into(), triton_name.clone()),
            ]),
            average_value: format!("{}m", target * 10 * gpus_per_pod),
        },
        Metric::DutyCycle => AutoscalingPlan {
            min_replicas,
            max_replicas,
            metric: "kubernetes.io|container|accelerator|duty_cycle".into(),
            metric_kind: "duty_cycle",
            selector: BTreeMap::from([
                ("resource.labels.cluster_name".into(), cluster.name.clone()),
                ("resource.labels.namespace_name".into(), namespace.clone()),
                ("resource.labels.container_name".into(), "triton".into()),
            ]),
            average_value: (target * gpus_per_pod).to_string(),
        },
    };
    let host = format!("{triton_name}.{namespace}.svc.cluster.local");
    let istio = spec
        .ingress
        .as_ref()
        .filter(|ingress| ingress.api.unwrap_or(IngressApi::Istio) == IngressApi::Istio);
    let ingress = istio.map(|ingress| {
        let (min_replicas, max_replicas) = ingress_replicas.flatten().unwrap_or((2, 5));
        let gateway = format!("{triton_name}-ingress");
        let (selector, deployment) = match &ingress.gateway_selector {
            Some(selector) => (selector.clone(), None),
            None => {
                let injection_labels = match &ingress.revision {
                    Some(revision) => BTreeMap::from([("istio.io/rev".into(), revision.clone())]),
                    None => BTreeMap::from([("sidecar.istio.io/inject".into(), "true".into())]),
                };
                (
                    BTreeMap::from([("istio".into(), gateway.clone())]),
                    Some(GatewayDeploymentPlan {
                        name: gateway.clone(),
                        injection_labels,
                        internal: ingress.internal,
                        min_replicas,
                        max_replicas,
                    }),
                )
            }
        };
        IngressPlan {
            gateway,
            hosts: if ingress.hosts.is_empty() {
                vec!["*".into()]
            } else {
                ingress.hosts.clone()
            },
            selector,
            deployment,
        }
    });
    let health_check = spec.health_check.unwrap_or(true).then(|| HealthCheckPlan {
        name: format!("{triton_name}-health-check"),
        image: HEALTH_CHECK_IMAGE,
        url: format!("http://{host}:{HTTP_PORT}/v2/health/ready"),
    });
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            triton: TritonPlan {
                name: triton_name,
                image,
                args,
                gpus_per_pod,
                cpu: spec.triton.cpu.clone().unwrap_or_else(|| "2".into()),
                memory: spec.triton.memory.clone().unwrap_or_else(|| "8Gi".into()),
                node_selector,
                http_port: HTTP_PORT,
                grpc_port: GRPC_PORT,
                host,
            },
            autoscaling,
            ingress,
            gateway_api,
            health_check,
            workload_service_account: workload_account.email,
            namespace,
            kubernetes_service_account,
        },
        gpu,
    })
}

/// `spec.autoscaling` bounds: at least one replica, the minimum at most the maximum, and a
/// target between 1 and 100 percent. `None` (with findings) when they cannot work.
fn check_autoscaling(planner: &mut Planner<'_>, spec: &Autoscaling) -> Option<(u32, u32)> {
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

/// The Istio ingress gateway's replica bounds; `None` (with findings) when they cannot work.
/// A Gateway API ingress has no gateway pods: Istio's fields are conflicts there.
fn check_ingress(planner: &mut Planner<'_>, ingress: &Ingress) -> Option<(u32, u32)> {
    if ingress.api == Some(IngressApi::Gateway) {
        for (set, field) in [
            (ingress.gateway_selector.is_some(), "gatewaySelector"),
            (ingress.revision.is_some(), "revision"),
            (ingress.min_replicas.is_some(), "minReplicas"),
            (ingress.max_replicas.is_some(), "maxReplicas"),
        ] {
            if set {
                let d = planner.error(
                    crate::plan::rule::CONFLICT,
                    &format!("spec.ingress.{field}"),
                    format!(
                        "`{field}` configures Istio's ingress gateway, which `api: gateway` does not deploy"
                    ),
                );
                d.fix = Some(format!(
                    "remove `spec.ingress.{field}`, or use `api: istio`"
                ));
            }
        }
        return None;
    }
    let min = ingress.min_replicas.unwrap_or(2);
    let max = ingress.max_replicas.unwrap_or(5);
    check_bounds(planner, "spec.ingress", min, max).then_some((min, max))
}

/// `minReplicas` and `maxReplicas` under `field`: 1 ≤ min ≤ max ≤ [`MAX_REPLICAS`].
fn check_bounds(planner: &mut Planner<'_>, field: &str, min: u32, max: u32) -> bool {
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
fn check_capacity(
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Registry;
    use crate::plan::Repository;

    fn read(spec: &str) -> (Exports, Option<Plan>, Vec<String>) {
        let text = format!(
            "apiVersion: aiml.dev/v1alpha1\nkind: TritonServing\nmetadata: {{name: serving}}\nspec:\n  project: my-project\n{spec}"
        );
        let documents = crate::yaml::parse_documents(&text).unwrap();
        let registry = Registry::builtin();
        let blueprint = Blueprint::from_node("b.yaml", &documents[0], &registry).unwrap();
        let spec: Spec = blueprint.read_spec().unwrap();
        let exports = TritonServing::exports(&spec, &blueprint);
        let repository = Repository::new();
        let mut planner = Planner::new(&blueprint, &repository);
        let plan = TritonServing::plan(&spec, &mut planner);
        let findings = planner
            .finish()
            .iter()
            .map(|d| d.rule.to_string())
            .collect();
        (exports, plan, findings)
    }

    #[test]
    fn exports_the_server_for_benchmark_blueprints() {
        let (exports, _, _) = read(
            "  namespace: llm\n  model: {name: ensemble, framework: tensorrt_llm_triton}\n  triton: {name: llama}\n",
        );
        let service = |port, protocol: &str| ServiceExport {
            name: "llama".into(),
            namespace: "llm".into(),
            port,
            protocol: protocol.into(),
            framework: Some("tensorrt_llm_triton".into()),
            model: Some("ensemble".into()),
        };
        assert_eq!(
            exports.services,
            [service(8000, "http"), service(8001, "grpc")]
        );
        let cluster = exports.cluster.unwrap();
        assert_eq!(
            (
                cluster.name.as_str(),
                cluster.location.as_str(),
                cluster.managed
            ),
            ("serving", "us-central1-a", true)
        );
    }

    #[test]
    fn defaults_are_the_reference_shape() {
        let (exports, plan, findings) = read("");
        assert!(findings.is_empty(), "{findings:?}");
        let plan = plan.unwrap();
        assert_eq!(
            (
                plan.gpu.accelerator,
                plan.gpu.count,
                plan.gpu.machine_type.as_str()
            ),
            ("nvidia-tesla-t4", 1, "n1-standard-4")
        );
        assert_eq!(
            TritonServing::describe(&plan),
            "1 × nvidia-tesla-t4 per node, 1–3 replicas"
        );
        let pool = plan
            .infra
            .node_pools
            .iter()
            .find(|pool| pool.resource_id == "gpu-pool")
            .unwrap();
        assert_eq!(pool.scale, Scale::Autoscaling { min: 1, max: 3 });
        assert_eq!(exports.services[0].framework.as_deref(), Some("triton"));
        assert_eq!(exports.services[0].model, None);
        let autoscaling = &plan.workload.autoscaling;
        assert_eq!(autoscaling.average_value, "850m");
        assert!(plan.workload.ingress.is_none());
        assert!(plan.workload.health_check.is_some());
    }

    #[test]
    fn targets_are_per_pod_sums_over_its_gpus() {
        let (_, plan, findings) = read(
            "  gpu: {type: nvidia-l4, count: 4}\n  triton: {gpusPerPod: 2}\n  autoscaling: {targetUtilization: 60, maxReplicas: 6}\n",
        );
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(plan.unwrap().workload.autoscaling.average_value, "1200m");
        let (_, plan, _) = read(
            "  gpu: {type: nvidia-l4, count: 4}\n  triton: {gpusPerPod: 2}\n  autoscaling: {metric: dutyCycle}\n",
        );
        assert_eq!(plan.unwrap().workload.autoscaling.average_value, "170");
    }

    #[test]
    fn capacity_counts_whole_pods_per_node() {
        // 4 L4 per node, 3 per pod: one pod per node, 3 nodes hold 3.
        let spec = "  gpu: {type: nvidia-l4, count: 4}\n  triton: {gpusPerPod: 3}\n";
        let (_, _, fits) = read(&format!("{spec}  autoscaling: {{maxReplicas: 3}}\n"));
        assert!(fits.is_empty(), "{fits:?}");
        let (_, plan, too_many) = read(&format!("{spec}  autoscaling: {{maxReplicas: 4}}\n"));
        assert!(plan.is_none());
        assert_eq!(too_many, [crate::plan::rule::AUTOSCALING_CAPACITY]);
        // Broken pool bounds are reported once, by the pool's own rule.
        let (_, _, bounds) = read(
            "  gpuPool: {autoscaling: {minNodes: 2, maxNodes: 1}}\n  autoscaling: {maxReplicas: 9}\n",
        );
        assert_eq!(bounds, [crate::plan::rule::NODE_POOL_SIZE]);
    }

    #[test]
    fn the_gateway_api_ingress_is_internal_only_when_asked_and_answers_any_host_by_default() {
        let (_, plan, findings) = read("  ingress: {api: gateway, hosts: [\"*\"]}\n");
        assert!(findings.is_empty(), "{findings:?}");
        let workload = plan.unwrap().workload;
        assert!(workload.ingress.is_none(), "no Istio objects");
        let gateway = workload.gateway_api.unwrap();
        assert_eq!(gateway.class, "gke-l7-global-external-managed");
        assert!(gateway.hostnames.is_empty());
        assert!(gateway.cluster_ready);
        let (_, plan, _) =
            read("  ingress: {api: gateway, internal: true, hosts: [a.example.internal]}\n");
        let plan = plan.unwrap();
        let gateway = plan.workload.gateway_api.unwrap();
        assert_eq!(gateway.class, "gke-l7-rilb");
        assert_eq!(gateway.hostnames, ["a.example.internal"]);
        assert!(plan.infra.clusters[0].gateway_api);
        // The Istio form stays the default.
        let (_, plan, _) = read("  ingress: {}\n");
        let workload = plan.unwrap().workload;
        assert!(workload.ingress.is_some() && workload.gateway_api.is_none());
    }

    #[test]
    fn istio_gateway_fields_conflict_with_the_gateway_api() {
        let (_, plan, findings) =
            read("  ingress: {api: gateway, revision: asm-1, minReplicas: 2}\n");
        assert!(plan.is_none());
        assert_eq!(
            findings,
            [crate::plan::rule::CONFLICT, crate::plan::rule::CONFLICT]
        );
    }

    #[test]
    fn service_names_start_with_a_letter() {
        assert!(check_service_name("triton").is_ok());
        assert!(check_service_name("7b-server").is_err());
        let (_, _, findings) = read("  triton: {name: 7b}\n");
        assert_eq!(findings, [crate::plan::rule::KUBERNETES_NAME]);
    }
}

//! Planning a `TritonServing` blueprint: the GCP blocks of the recipe, the checks, and the
//! typed plan the workload template reads.

use std::collections::BTreeMap;

use serde::Serialize;

use super::autoscaling::{self, AutoscalingPlan};
use super::ingress::{self, GatewayApiPlan, IngressPlan};
use super::spec::{Framework, IngressApi, Spec};
use crate::accelerator::{self, GpuPlan, GpuSpec};
use crate::catalog::GPU_ACCELERATOR_LABEL;
use crate::gcp::spec::ServiceAccountSpec;
use crate::gcp::{
    self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, GpuPoolDefaults, Infrastructure, Scale,
};
use crate::names::check_dns_label;
use crate::plan::Planner;

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

pub(super) const DEFAULT_REGION: &str = "us-central1";
const DEFAULT_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-py3";
const DEFAULT_TRTLLM_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3";
/// A non-root curl (user 100) for the health check.
const HEALTH_CHECK_IMAGE: &str = "curlimages/curl:8.11.1";
/// Triton's ports, as both references use them.
pub(super) const HTTP_PORT: u16 = 8000;
pub(super) const GRPC_PORT: u16 = 8001;
/// Node label that ties the server to this blueprint's GPU pool, so blueprints sharing a
/// cluster never land on each other's GPUs.
const BLUEPRINT_LABEL: &str = "aiml.dev/blueprint";

/// Everything the workload templates need, derived and checked.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub(super) infra: Infrastructure,
    pub(super) workload: Workload,
    pub(super) gpu: GpuPlan,
}

#[derive(Debug, Serialize)]
pub(super) struct Workload {
    namespace: String,
    kubernetes_service_account: String,
    workload_service_account: String,
    triton: TritonPlan,
    pub(super) autoscaling: AutoscalingPlan,
    pub(super) ingress: Option<IngressPlan>,
    pub(super) gateway_api: Option<GatewayApiPlan>,
    pub(super) health_check: Option<HealthCheckPlan>,
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
pub(super) struct HealthCheckPlan {
    name: String,
    image: &'static str,
    url: String,
}

/// Service names are DNS-1035 labels: a DNS-1123 label that starts with a letter.
pub(super) fn check_service_name(name: &str) -> Result<(), String> {
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
pub(super) fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
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

    let namespace = spec.namespace(&name);
    let kubernetes_service_account = spec
        .kubernetes_service_account
        .clone()
        .unwrap_or_else(|| "triton".into());
    let triton_name = spec.triton_name();
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
    let image = spec.triton.image.clone().unwrap_or_else(|| {
        match spec.framework() {
            Framework::Triton => DEFAULT_IMAGE,
            Framework::TensorrtLlmTriton => DEFAULT_TRTLLM_IMAGE,
        }
        .into()
    });
    planner.check_image("spec.triton.image", &image);

    let gpus_per_pod = spec.triton.gpus_per_pod.unwrap_or(1);
    let autoscaling = autoscaling::check_autoscaling(planner, &spec.autoscaling);
    let ingress_replicas = spec
        .ingress
        .as_ref()
        .map(|ingress| ingress::check_ingress(planner, ingress));

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
    autoscaling::check_capacity(
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
            ingress::gateway_api(
                planner,
                &mut gcp,
                &cluster,
                &spec.network,
                ingress,
                &triton_name,
            )
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
    let autoscaling = autoscaling::plan(
        &spec.autoscaling,
        (min_replicas, max_replicas),
        &cluster.name,
        &namespace,
        &triton_name,
        gpus_per_pod,
    );
    let host = format!("{triton_name}.{namespace}.svc.cluster.local");
    let istio = spec
        .ingress
        .as_ref()
        .filter(|ingress| ingress.api.unwrap_or(IngressApi::Istio) == IngressApi::Istio);
    let ingress =
        istio.map(|ingress| ingress::istio(ingress, ingress_replicas.flatten(), &triton_name));
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

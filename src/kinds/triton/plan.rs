//! Planning a `TritonServing` blueprint: the GCP blocks of the recipe and the checks, into
//! the typed plan the workload template reads.

use std::collections::BTreeMap;

use super::spec::{Framework, Metric, Spec};
use super::templates::{HealthCheckPlan, Plan, TritonPlan, Workload};
use crate::accelerator::{self, GpuSpec};
use crate::catalog::GPU_ACCELERATOR_LABEL;
use crate::gcp::{self, Addons};
use crate::names::check_dns_label;
use crate::overlay::autoscaling::{self, AutoscalingPlan, GpuMetric, GpuPods};
use crate::overlay::site::{
    Accounts, BLUEPRINT_LABEL, Location, SYSTEM_POOL, Site, accounts, gpu_pool,
};
use crate::overlay::stanzas;
use crate::plan::Planner;

/// Roles of the Workload Identity account on the model repository: list and read objects, and
/// read the bucket's metadata. Nothing project-wide.
const BUCKET_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectViewer",
];

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];
/// Display names of the node and workload accounts.
const ACCOUNT_NAMES: (&str, &str) = ("GKE Triton nodes", "Triton Inference Server");

/// `us-central1`; a zonal cluster, like both references: the GPU nodes live in one zone
/// anyway.
pub(super) const LOCATION: Location<'static> = Location::zonal("us-central1", "a");
const DEFAULT_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-py3";
const DEFAULT_TRTLLM_IMAGE: &str = "nvcr.io/nvidia/tritonserver:26.07-trtllm-python-py3";
/// A non-root curl (user 100) for the health check.
const HEALTH_CHECK_IMAGE: &str = "curlimages/curl:8.11.1";
/// Triton's ports, as both references use them.
pub(super) const HTTP_PORT: u16 = 8000;
pub(super) const GRPC_PORT: u16 = 8001;

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
    let (site, mut gcp) = Site::open(planner, stanzas!(spec), &LOCATION);
    let gpu = accelerator::resolve_gpu(planner, spec.gpu.as_ref().unwrap_or(&default_gpu()));

    let (namespace, kubernetes_service_account) = site.names(planner, "triton");
    let triton_name = spec.triton_name();
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
    let autoscaling = autoscaling::check_replicas(
        planner,
        "spec.autoscaling",
        (
            spec.autoscaling.min_replicas.unwrap_or(1),
            spec.autoscaling.max_replicas.unwrap_or(3),
        ),
        spec.autoscaling.target_utilization,
    );
    let ingress_replicas = spec
        .ingress
        .as_ref()
        .map(|ingress| ingress.check(planner, "spec.ingress"));

    let accounts = Accounts::plan(&mut gcp, planner, SERVICES, accounts!(spec), ACCOUNT_NAMES)
        .distinct(planner);
    let addons = Addons {
        horizontal_pod_autoscaling: true,
        managed_prometheus: true,
        ..Addons::default()
    };
    let cluster = site.cluster(
        &mut gcp,
        planner,
        addons,
        &accounts.nodes,
        Some(SYSTEM_POOL),
    )?;
    autoscaling::metrics_adapter(
        &mut gcp,
        planner,
        spec.service_accounts.metrics_adapter.as_ref(),
        "spec.serviceAccounts.metricsAdapter",
        &cluster,
    );
    accounts.bind(
        &mut gcp,
        &cluster,
        (&namespace, &kubernetes_service_account),
        &[],
    );
    let bucket = gcp.bucket(
        planner,
        &spec.bucket,
        "spec.bucket",
        &site.bucket_name("-models"),
    );
    for role in BUCKET_ROLES {
        gcp.bucket_role(&bucket, &accounts.workload, role);
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
        &gpu_pool(&site.name),
        &accounts.nodes,
    );
    let pods = GpuPods {
        noun: "server pod",
        gpus_per_pod,
        gpus_per_pod_field: "spec.triton.gpusPerPod",
        max_replicas_field: "spec.autoscaling.maxReplicas",
    };
    let max_replicas = autoscaling.map(|(_, max)| max);
    autoscaling::check_capacity(
        planner,
        &gpu,
        &pods,
        &spec.gpu_pool,
        max_replicas,
        pool.max_nodes,
    );
    let (min_replicas, max_replicas) = autoscaling?;
    let gateway_api = spec.ingress.as_ref().and_then(|ingress| {
        ingress.gateway_api(planner, &mut gcp, &cluster, &spec.network, &triton_name)
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
        (BLUEPRINT_LABEL.to_string(), site.name.clone()),
    ]);
    let metric = match spec.autoscaling.metric.unwrap_or(Metric::GpuUtilization) {
        Metric::GpuUtilization => GpuMetric::Gauge {
            name: "nv_gpu_utilization",
            job: &triton_name,
        },
        Metric::DutyCycle => GpuMetric::DutyCycle {
            container: "triton",
        },
    };
    let autoscaling = AutoscalingPlan::on_gpu(
        metric,
        (min_replicas, max_replicas),
        spec.autoscaling.target_utilization.unwrap_or(85),
        gpus_per_pod,
        &cluster.name,
        &namespace,
    );
    let host = format!("{triton_name}.{namespace}.svc.cluster.local");
    let ingress = spec
        .ingress
        .as_ref()
        .and_then(|ingress| ingress.istio(ingress_replicas.flatten(), &triton_name));
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
            workload_service_account: accounts.workload.email,
            namespace,
            kubernetes_service_account,
        },
        gpu,
    })
}

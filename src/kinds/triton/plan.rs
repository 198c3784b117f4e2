//! Planning a `TritonServing` blueprint: the GCP blocks of the recipe and the checks, into
//! the typed plan the workload template reads.

use std::collections::BTreeMap;

use super::spec::{Framework, Metric, Spec};
use super::templates::{HealthCheckPlan, Plan, Routes, TritonPlan, Workload};
use crate::accelerator::{self, GpuSpec};
use crate::catalog::GPU_ACCELERATOR_LABEL;
use crate::gcp::spec::GpuDriverVersion;
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
/// Control APIs only operators call, fenced behind a header (`--http-restricted-api`,
/// `--grpc-restricted-protocol`; Triton's "Limit Endpoint Access" in
/// `docs/customization_guide/inference_protocols.md`, r24.01 and later, so in the 26.07 default).
/// `--model-control-mode` stays at its default `none`, so load and unload are refused anyway;
/// the repository index, shared-memory registration, tracing and log settings are not.
const RESTRICTED_APIS: &str = "model-repository,shared-memory,trace,logging";
/// The header that opens them (gRPC prefixes it with `triton-grpc-protocol-`).
const RESTRICTED_HEADER: &str = "triton-admin-key";
/// The variable that holds its value: the pod's UID from the downward API, which nothing
/// outside the cluster knows and no file in the repository holds. An operator reads it with
/// `kubectl get pod -o jsonpath='{.metadata.uid}'`.
pub(super) const RESTRICTED_VALUE_ENV: &str = "TRITON_ADMIN_KEY";
/// gRPC methods the ingress routes: inference (unary and streaming), health, and the model's
/// readiness and metadata, which clients read before they build a request. Every other method
/// (repository, shared memory, statistics, trace, logging, configuration) stays in the cluster.
const GRPC_METHODS: &[&str] = &[
    "ModelInfer",
    "ModelStreamInfer",
    "ServerLive",
    "ServerReady",
    "ModelReady",
    "ModelMetadata",
];
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
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Triton Inference Server images",
    );
    gcp.registry_reader(&registry, &accounts.nodes);
    let gpu = gpu?;
    // NGC's newest Triton images need a newer driver than GKE's DEFAULT: pick the one that
    // runs the image natively unless the blueprint chose.
    let mut gpu_pool_spec = spec.gpu_pool.clone();
    gpu_pool_spec
        .driver_version
        .get_or_insert_with(|| GpuDriverVersion::for_image(&image));
    let pool = gcp.sized_gpu_pool(
        planner,
        &cluster,
        &gpu,
        &gpu_pool_spec,
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
    let model_name = spec.model.name.as_deref();
    if let Some(name) = model_name
        && !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
    {
        // The name becomes a route path segment.
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.model.name",
            "a model name is one folder of the model repository",
        );
        d.expected = Some("letters, digits, `_`, `-` and `.`".into());
    }
    if spec.ingress.is_some() && model_name.is_none() {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.model.name",
            "the ingress routes inference and health of one model only, and needs its name",
        );
        d.fix = Some("name the model served (`spec.model.name`), or remove `spec.ingress`".into());
    }
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
    for flag in ["--http-restricted-api", "--grpc-restricted-protocol"] {
        args.push(format!(
            "{flag}={RESTRICTED_APIS}:{RESTRICTED_HEADER}=$({RESTRICTED_VALUE_ENV})"
        ));
    }
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
    let routes = routes(model_name.unwrap_or_default(), spec.framework());
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
                routes,
                restricted_value_env: RESTRICTED_VALUE_ENV,
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

/// What the ingress forwards, and nothing else: the model's inference (and, for TensorRT-LLM,
/// generate) endpoints, its readiness and metadata, the server's health, and the gRPC methods
/// of [`GRPC_METHODS`]. Exact paths: a prefix would let `…/config`, `…/stats` or
/// `…/trace/setting` through. Versioned paths are left out; Triton serves the latest version
/// by default.
fn routes(model: &str, framework: Framework) -> Routes {
    let base = format!("/v2/models/{model}");
    let mut http_paths = vec![
        "/v2/health/live".to_string(),
        "/v2/health/ready".to_string(),
        base.clone(),
        format!("{base}/ready"),
        format!("{base}/infer"),
    ];
    if framework == Framework::TensorrtLlmTriton {
        http_paths.push(format!("{base}/generate"));
        http_paths.push(format!("{base}/generate_stream"));
    }
    Routes {
        http_paths,
        grpc_methods: GRPC_METHODS
            .iter()
            .map(|method| format!("/inference.GRPCInferenceService/{method}"))
            .collect(),
    }
}

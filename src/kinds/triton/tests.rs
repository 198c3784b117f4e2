//! Planning `TritonServing` blueprints: defaults, capacity, ingress.

use super::plan::check_service_name;
use super::{Plan, Spec, TritonServing};
use crate::blueprint::Blueprint;
use crate::gcp::Scale;
use crate::kinds::{Registry, TypedKind};
use crate::plan::{Exports, Planner, Repository, ServiceExport};

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
    let (_, plan, findings) = read("  ingress: {api: gateway, revision: asm-1, minReplicas: 2}\n");
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

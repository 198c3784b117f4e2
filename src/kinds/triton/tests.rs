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
fn ingresses_are_internal_unless_public_and_answer_any_host_by_default() {
    let model = "  model: {name: densenet_onnx}\n";
    let (_, plan, findings) = read(&format!(
        "{model}  ingress: {{api: gateway, hosts: [\"*\"]}}\n"
    ));
    assert!(findings.is_empty(), "{findings:?}");
    let plan = plan.unwrap();
    assert!(plan.workload.ingress.is_none(), "no Istio objects");
    let gateway = plan.workload.gateway_api.unwrap();
    assert_eq!(gateway.class, "gke-l7-rilb");
    assert!(gateway.hostnames.is_empty());
    assert!(gateway.cluster_ready);
    assert!(plan.infra.clusters[0].gateway_api);
    let (_, plan, findings) = read(&format!(
        "{model}  ingress:\n    api: gateway\n    public: true\n    hosts: [a.example.com]\n    tls: {{certificateMap: m}}\n    auth: {{cloudArmorPolicy: p}}\n"
    ));
    assert!(findings.is_empty(), "{findings:?}");
    let gateway = plan.unwrap().workload.gateway_api.unwrap();
    assert_eq!(gateway.class, "gke-l7-global-external-managed");
    assert_eq!(gateway.hostnames, ["a.example.com"]);
    assert_eq!(gateway.certificate_map.as_deref(), Some("m"));
    assert_eq!(gateway.cloud_armor_policy.as_deref(), Some("p"));
    // The Istio form stays the default, internal, on HTTP without TLS.
    let (_, plan, _) = read(&format!("{model}  ingress: {{}}\n"));
    let workload = plan.unwrap().workload;
    assert!(workload.gateway_api.is_none());
    let istio = serde_json::to_value(workload.ingress.unwrap()).unwrap();
    assert_eq!(istio["deployment"]["internal"], true);
    assert_eq!(istio["tls_secret"], serde_json::Value::Null);
}

#[test]
fn a_public_ingress_needs_tls_and_authentication() {
    let unprotected = crate::plan::rule::INGRESS_UNPROTECTED;
    let model = "  model: {name: densenet_onnx}\n";
    for api in ["istio", "gateway"] {
        let (_, plan, findings) =
            read(&format!("{model}  ingress: {{api: {api}, public: true}}\n"));
        assert!(plan.is_none(), "{api}");
        assert_eq!(findings, [unprotected, unprotected], "{api}");
    }
    // Istio: a Secret and a JWT; both policies select the blueprint's gateway.
    let (_, plan, findings) = read(&format!(
        "{model}  ingress:\n    public: true\n    tls: {{secret: cert}}\n    auth: {{jwt: {{issuer: https://issuer.example, jwksUri: https://issuer.example/keys}}}}\n"
    ));
    assert!(findings.is_empty(), "{findings:?}");
    let istio = serde_json::to_value(plan.unwrap().workload.ingress.unwrap()).unwrap();
    assert_eq!(istio["deployment"]["internal"], false);
    assert_eq!(istio["tls_secret"], "cert");
    assert_eq!(istio["jwt"]["principal"], "https://issuer.example/*");
    // The other API's protection does not count, and a JWT's keys come over HTTPS.
    let (_, _, findings) = read(&format!(
        "{model}  ingress:\n    public: true\n    tls: {{secret: cert}}\n    auth: {{iap: {{clientId: c, oauthClientSecret: s}}, jwt: {{issuer: i, jwksUri: http://keys}}}}\n"
    ));
    assert_eq!(
        findings,
        [crate::plan::rule::CONFLICT, crate::plan::rule::CONFLICT]
    );
    // An existing gateway's pods are outside the blueprint's namespace: not public.
    let (_, _, findings) = read(&format!(
        "{model}  ingress:\n    public: true\n    gatewaySelector: {{istio: ingressgateway}}\n    tls: {{secret: cert}}\n    auth: {{jwt: {{issuer: i, jwksUri: https://keys}}}}\n"
    ));
    assert_eq!(findings, [crate::plan::rule::CONFLICT]);
}

#[test]
fn the_server_starts_with_its_control_apis_restricted() {
    let (_, plan, _) = read("  triton: {args: [--log-verbose=1]}\n");
    let triton = plan.unwrap().workload.triton;
    let restricted =
        "model-repository,shared-memory,trace,logging:triton-admin-key=$(TRITON_ADMIN_KEY)";
    assert!(
        triton
            .args
            .contains(&format!("--http-restricted-api={restricted}")),
        "{:?}",
        triton.args
    );
    assert!(
        triton
            .args
            .contains(&format!("--grpc-restricted-protocol={restricted}"))
    );
    // The blueprint's own arguments come last, and no header value is written anywhere.
    assert_eq!(triton.args.last().unwrap(), "--log-verbose=1");
    assert_eq!(triton.restricted_value_env, "TRITON_ADMIN_KEY");
}

#[test]
fn an_ingress_routes_inference_and_health_of_its_model_only() {
    let (_, plan, _) =
        read("  model: {name: ensemble, framework: tensorrt_llm_triton}\n  ingress: {}\n");
    let routes = plan.unwrap().workload.triton.routes;
    assert_eq!(
        routes.http_paths,
        [
            "/v2/health/live",
            "/v2/health/ready",
            "/v2/models/ensemble",
            "/v2/models/ensemble/ready",
            "/v2/models/ensemble/infer",
            "/v2/models/ensemble/generate",
            "/v2/models/ensemble/generate_stream",
        ]
    );
    assert!(
        routes
            .grpc_methods
            .iter()
            .all(|m| m.starts_with("/inference.GRPCInferenceService/"))
    );
    assert!(!routes.grpc_methods.iter().any(|m| m.contains("Repository")));
    // The routes name the model: an ingress without one cannot route it.
    let (_, plan, findings) = read("  ingress: {}\n");
    assert!(plan.is_none());
    assert_eq!(findings, [crate::plan::rule::CONFLICT]);
    let (_, _, findings) = read("  model: {name: \"a/../b\"}\n");
    assert_eq!(findings, [crate::plan::rule::CONFLICT]);
}

#[test]
fn istio_gateway_fields_conflict_with_the_gateway_api() {
    let (_, plan, findings) =
        read("  model: {name: m}\n  ingress: {api: gateway, revision: asm-1, minReplicas: 2}\n");
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

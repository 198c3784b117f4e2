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
//! come from the blocks). The ingress is internal unless the blueprint says `public: true`,
//! and routes inference and health of its model only; the server always starts with its
//! control APIs behind a header whose value is the pod's UID.
//!
//! What the references got wrong and this kind does not: the HPA's external metric carries a
//! selector (the reference summed every GPU container of the project), the Gateway selects
//! gateway pods that exist (the kind deploys them, or uses the selector it is given), the HPA
//! is `autoscaling/v2`, the server requests CPU and memory and selects its GPU model, and the
//! HPA's maximum fits the GPU pool (checked here and by the manifest rule `hpa-gpu-capacity`).

mod plan;
mod spec;
mod templates;
#[cfg(test)]
mod tests;

pub use spec::Spec;
pub use templates::Plan;

use super::TypedKind;
use crate::blueprint::Blueprint;
use crate::overlay::{Overlay, TemplateError, stanzas};
use crate::plan::{Exports, Planner, ServiceExport};
use plan::{GRPC_PORT, HTTP_PORT, LOCATION};

/// The `TritonServing` kind.
pub struct TritonServing;

impl TypedKind for TritonServing {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "TritonServing";
    const SUMMARY: &'static str = "NVIDIA Triton on GKE GPUs, autoscaled on GPU utilisation, with Managed Prometheus and an optional Istio or Gateway API ingress";

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        let mut exports = stanzas!(spec).exports(blueprint.name, &LOCATION);
        let name = spec.triton_name();
        let namespace = spec.namespace(blueprint.name);
        let framework = spec.framework();
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
        plan::plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        plan.overlay(blueprint)
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

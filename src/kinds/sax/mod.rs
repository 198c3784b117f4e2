//! `SaxServing`: Saxml serving a Llama 2 model on a TPU slice, with its GKE cluster.
//!
//! Reference: the "Saxml on Google Kubernetes Engine" guide (admin server, model servers, HTTP
//! proxy, saxutil, checkpoint converter, Pub/Sub → BigQuery performance sink) and GKE's
//! single-host Saxml sample. The guide runs the model server as a one-pod Deployment, which
//! can use one host of a slice only. Here each model-server replica is a LeaderWorkerSet group
//! of one pod per host of its slice: the group is created, scheduled and restarted as a unit
//! (`RecreateGroupOnPodRestart`), kept to one node pool (exclusive topology), and the
//! LeaderWorkerSet controller injects the TPU worker wiring JAX needs on several hosts
//! (`TPU_WORKER_HOSTNAMES`, `TPU_WORKER_ID`). Every number (chips, hosts, topology, Saxml chip
//! name) comes from `spec.tpu` through the catalog.
//!
//! Private by default: the HTTP proxy is a ClusterIP Service (its `/publish`, `/unpublish`
//! and `/update` have no authentication); `spec.proxy.loadBalancer` adds an internal load
//! balancer, limited to its source ranges, in front of Envoy pods that forward `POST /generate`
//! only. Each component (admin server, model servers, proxy, saxutil, converter) has its own
//! Workload Identity account with roles on the buckets it uses and nothing else.
//!
//! Checks of its own: a model that does not fit the slice's memory (`sax-model-too-large`),
//! a model and slice without a serving configuration that loads real weights
//! (`sax-serving-config`), and a model-server image older than its configuration
//! (`sax-image-too-old`).

pub mod models;
mod plan;
mod serving;
mod spec;
mod templates;
#[cfg(test)]
mod tests;

use super::TypedKind;
use crate::blueprint::Blueprint;
use crate::gcp;
use crate::overlay::{Overlay, TemplateError, stanzas};
use crate::plan::{Exports, Planner, ServiceExport};
use plan::{cell_name, location, proxy_service};
pub use spec::Spec;
pub use templates::Plan;

/// The `SaxServing` kind.
pub struct SaxServing;

/// Rule ids of this kind.
pub mod rule {
    /// The model's weights do not fit the slice's memory.
    pub const MODEL_TOO_LARGE: &str = "sax-model-too-large";
    /// No serving configuration loads the model's weights on the slice.
    pub const SERVING_CONFIG: &str = "sax-serving-config";
    /// The model-server image is older than its serving configuration.
    pub const IMAGE_TOO_OLD: &str = "sax-image-too-old";
}

/// Port of the Saxml HTTP server (`sax-http`).
const HTTP_PORT: u16 = 8_888;

impl TypedKind for SaxServing {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "SaxServing";
    const SUMMARY: &'static str = "Saxml serving Llama 2 on a TPU slice (one LeaderWorkerSet group per replica), with its GKE cluster";
    const RULES: &'static [crate::diagnostic::Rule] = &[
        crate::diagnostic::Rule {
            id: rule::MODEL_TOO_LARGE,
            summary: "the model's weights fit the memory of the TPU slice",
        },
        crate::diagnostic::Rule {
            id: rule::SERVING_CONFIG,
            summary: "a Saxml serving configuration loads the model on the TPU slice",
        },
        crate::diagnostic::Rule {
            id: rule::IMAGE_TOO_OLD,
            summary: "the model-server image has the serving configuration it loads",
        },
    ];

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        let namespace = spec
            .namespace
            .clone()
            .unwrap_or_else(|| blueprint.name.to_string());
        let cell = cell_name(spec, blueprint.name);
        let services = vec![ServiceExport {
            name: proxy_service(blueprint.name),
            namespace,
            port: HTTP_PORT,
            protocol: "http".into(),
            framework: Some("sax".into()),
            model: Some(format!("/sax/{cell}/{}", spec.model.name)),
        }];
        Exports {
            services,
            metrics_topic: gcp::metrics_topic_export(
                blueprint.name,
                &spec.project,
                &spec.performance_testing,
                true,
            ),
            ..stanzas!(spec).exports(blueprint.name, &location(spec))
        }
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan::plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        plan.overlay(blueprint, templates::TEMPLATE)
    }

    fn describe(plan: &Plan) -> String {
        let w = &plan.workload;
        format!(
            "{} on {} x {} ({})",
            w.model.id, w.model.replicas, w.tpu.type_name, w.tpu.topology
        )
    }
}

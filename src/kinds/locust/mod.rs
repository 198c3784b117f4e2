//! `LocustBenchmark`: Locust load tests against an LLM inference server.
//!
//! Reference: the AI-on-GKE Locust inference benchmark (master, workers, a runner that starts
//! a timed run and writes the results to a bucket, a metrics sidecar scraped by Managed
//! Prometheus) and the Saxml guide's load generator (one Pub/Sub message per request, into
//! BigQuery). The target is an address or another blueprint of the repository, whose exported
//! service gives the host, port, framework and model; by default the load generator runs on
//! the target's cluster, on a CPU node pool of its own (never on accelerator nodes).
//!
//! What the guides got wrong and this kind does not: the request each framework expects is in
//! one locustfile the blueprint renders (the reference's `sax` requests do not match the Saxml
//! HTTP server and it has no `triton` one); the Hugging Face token is referenced (a Kubernetes
//! Secret or Secret Manager), never written; every environment value is a string; the web UI
//! and the runner stay inside the cluster unless the blueprint opens them; the runner is a
//! Deployment, and its Cloud Monitoring queries name metrics that exist.

mod plan;
mod spec;
mod target;
mod templates;
#[cfg(test)]
mod tests;

pub use spec::Spec;
pub use templates::Plan;

use super::TypedKind;
use crate::blueprint::Blueprint;
use crate::overlay::{Overlay, TemplateError};
use crate::plan::{Exports, Planner};

/// The `LocustBenchmark` kind.
pub struct LocustBenchmark;

/// Ids of this kind's own rules.
pub mod rule {
    /// A target the load generator cannot drive.
    pub const TARGET: &str = "locust-target";
}

impl TypedKind for LocustBenchmark {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "LocustBenchmark";
    const SUMMARY: &'static str = "Locust load tests against an LLM inference server (an address or a serving blueprint), with results in a bucket";
    const RULES: &'static [crate::diagnostic::Rule] = &[crate::diagnostic::Rule {
        id: rule::TARGET,
        summary: "a load test's target is a server the load generator can drive",
    }];

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        // The load generator runs on a cluster it never owns by default: the target's.
        let cluster = spec.effective_cluster();
        spec.stanzas(&cluster)
            .exports(blueprint.name, &plan::LOCATION)
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan::plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        templates::overlay(plan, blueprint)
    }

    fn describe(plan: &Plan) -> String {
        let w = &plan.workload;
        format!(
            "{} users on {} workers against {} ({})",
            w.load.users, w.load.workers, w.target.url, w.target.framework
        )
    }
}

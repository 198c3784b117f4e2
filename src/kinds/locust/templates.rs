//! What the `locust/workload.yaml` template sees, and the overlay made from it; the
//! locustfile and the runner's queries are files of its ConfigMaps.

use serde::Serialize;

use super::target::TargetPlan;
use crate::blueprint::Blueprint;
use crate::kinds::Exposure;
use crate::overlay::secret_ref::SecretRef;
use crate::overlay::{Overlay, Planned, TemplateError, render};

/// The locustfile, rendered into a ConfigMap so that what runs is reviewed with the rest.
pub(super) const LOCUSTFILE: &str = include_str!("templates/locustfile.py");

/// Everything the workload template needs, derived and checked.
pub type Plan = Planned<Workload>;

/// What the workload template sees.
#[derive(Debug, Serialize)]
pub struct Workload {
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) load_service_account: String,
    pub(super) load_account_email: String,
    pub(super) runner_service_account: String,
    pub(super) runner_account_email: String,
    pub(super) pool_key: &'static str,
    pub(super) target: TargetPlan,
    pub(super) load: LoadPlan,
    pub(super) prompts: String,
    pub(super) tokenizer: String,
    pub(super) token: Option<SecretRef>,
    pub(super) pubsub_topic: Option<String>,
    pub(super) output_bucket: String,
    pub(super) project: String,
    pub(super) images: ResolvedImages,
    pub(super) web_ui: Exposure,
    pub(super) runner: Exposure,
}

#[derive(Debug, Serialize)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag, the rest are counts"
)]
pub(super) struct LoadPlan {
    pub(super) users: u32,
    pub(super) spawn_rate: u32,
    pub(super) duration: u32,
    pub(super) workers: u32,
    pub(super) stop_timeout: u32,
    pub(super) request_timeout: u32,
    pub(super) max_prompts: u32,
    pub(super) max_prompt_length: u32,
    pub(super) max_output_length: u32,
    pub(super) best_of: u32,
    pub(super) use_beam_search: bool,
}

#[derive(Debug, Serialize)]
pub(super) struct ResolvedImages {
    pub(super) locust: String,
    pub(super) runner: String,
    pub(super) exporter: String,
}

/// What the workload template sees beyond the plan: the files of the ConfigMap, and their
/// hash, which rolls the pods when either changes.
#[derive(Serialize)]
struct Context<'p> {
    #[serde(flatten)]
    workload: &'p Workload,
    locustfile: &'static str,
    runner_metrics: String,
    config_hash: String,
}

/// The overlay: the GCP objects, and `locust/workload.yaml` with the runner's queries.
pub(super) fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
    let workload = &plan.workload;
    let runner_metrics = runner_metrics(&workload.namespace, workload.target.namespace.as_deref())?;
    let config_hash = format!(
        "{:016x}",
        crate::names::stable_hash(&[LOCUSTFILE, runner_metrics.as_str()].concat())
    );
    let context = Context {
        workload,
        locustfile: LOCUSTFILE,
        runner_metrics,
        config_hash,
    };
    Overlay::with_workload(blueprint, &plan.infra, "locust/workload.yaml", &context)
}

/// The runner's Cloud Monitoring queries (its `metrics.yaml`), from `locust/metrics.yaml`.
pub(super) fn runner_metrics(
    namespace: &str,
    target_namespace: Option<&str>,
) -> Result<String, TemplateError> {
    render(
        "locust/metrics.yaml",
        &minijinja::context! { namespace, target_namespace },
    )
}

//! What the `locust/workload.yaml` template sees, and the overlay made from it; the
//! locustfile and the runner's queries are files of its ConfigMaps.

use std::collections::BTreeMap;

use serde::Serialize;

use super::target::TargetPlan;
use crate::kinds::Exposure;
use crate::overlay::Planned;
use crate::overlay::secret_ref::SecretRef;

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
    pub(super) locustfile: &'static str,
    pub(super) runner_metrics: String,
    pub(super) config_hash: String,
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

/// The runner's Cloud Monitoring queries (its `metrics.yaml`): Locust's statistics from the
/// exporter sidecar, scraped by Managed Prometheus in the load generator's namespace, and the
/// accelerators' duty cycle and memory in the target's namespace (GKE system metrics, for
/// GPUs and TPUs alike).
pub(super) fn runner_metrics(namespace: &str, target_namespace: Option<&str>) -> String {
    let prometheus = |metric: &str| {
        format!(
            "metric.type = \"prometheus.googleapis.com/{metric}/gauge\" AND resource.labels.namespace = \"{namespace}\""
        )
    };
    let mut metrics: BTreeMap<&str, String> = BTreeMap::from([
        (
            "AVG_RESPONSE_TIME",
            prometheus("locust_requests_avg_response_time"),
        ),
        ("CURRENT_RPS", prometheus("locust_requests_current_rps")),
        ("FAIL_RATIO", prometheus("locust_requests_fail_ratio")),
        ("USERS", prometheus("locust_users")),
    ]);
    if let Some(target) = target_namespace {
        for (name, metric) in [
            ("ACCELERATOR_DUTY_CYCLE", "duty_cycle"),
            ("ACCELERATOR_MEMORY_USED", "memory_used"),
        ] {
            metrics.insert(
                name,
                format!(
                    "metric.type = \"kubernetes.io/container/accelerator/{metric}\" AND resource.labels.namespace_name = \"{target}\""
                ),
            );
        }
    }
    let mut text = String::from("metrics:\n");
    for (name, filter) in metrics {
        // Each value is a JSON string, which YAML reads as is.
        text.push_str(&format!(
            "  {name}:\n    filter: {}\n    type: GAUGE\n    aggregation: \"\"\n",
            serde_json::Value::String(filter)
        ));
    }
    text
}

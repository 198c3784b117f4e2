//! The overlay of a `LocustBenchmark` blueprint: the shared Config Connector objects and
//! `templates/workload.yaml` over the plan, with the locustfile and the runner's queries as
//! files of its ConfigMaps.

use std::collections::BTreeMap;

use super::plan::Plan;
use crate::blueprint::Blueprint;
use crate::overlay::{Overlay, TemplateError};

/// The locustfile, rendered into a ConfigMap so that what runs is reviewed with the rest.
pub(super) const LOCUSTFILE: &str = include_str!("templates/locustfile.py");

/// Renders the plan's infrastructure and workload.
pub(super) fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
    Overlay::with_workload(
        blueprint,
        &plan.infra,
        "locust/workload.yaml",
        &plan.workload,
    )
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

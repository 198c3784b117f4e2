//! The load-test metrics sink: Pub/Sub → BigQuery.
//!
//! Load generators publish one message per request (the Saxml guide's `metrics.proto`); a
//! BigQuery subscription writes each message into a table, field for field along the topic's
//! schema, with the message metadata. A serving blueprint can own the sink (`SaxServing`), a
//! load test can own one or publish into its target's ([`crate::plan::Exports::metrics_topic`]).

use super::spec::MetricsSinkSpec;
use super::{Column, Gcp, IamTarget, Ref, TopicHandle, add_dependencies, rule};
use crate::plan::{Planner, TopicExport};

/// The `Metrics` message load generators publish, field for field the table below.
pub const METRICS_PROTO: &str = "syntax = \"proto3\";\n\nmessage Metrics {\n  string test_id = 1;\n  string request_type = 2;\n  string request_name = 3;\n  int32 response_length = 4;\n  float response_time = 5;\n  string start_time = 6;\n  string exception = 7;\n  optional string request = 8;\n  optional string response = 9;\n  optional string model_name = 10;\n  optional string model_method = 11;\n  optional string tokenizer = 12;\n  optional int32 num_output_tokens = 13;\n  optional int32 num_input_tokens = 14;\n  optional int32 model_response_time = 15;\n}\n";

/// The table: the subscription's metadata, then the message's fields.
const METRICS_COLUMNS: &[(&str, &str)] = &[
    ("subscription_name", "STRING"),
    ("message_id", "STRING"),
    ("publish_time", "TIMESTAMP"),
    ("attributes", "JSON"),
    ("test_id", "STRING"),
    ("request_type", "STRING"),
    ("request_name", "STRING"),
    ("response_length", "INT64"),
    ("response_time", "FLOAT64"),
    ("start_time", "DATETIME"),
    ("exception", "STRING"),
    ("request", "JSON"),
    ("response", "JSON"),
    ("model_name", "STRING"),
    ("model_method", "STRING"),
    ("tokenizer", "STRING"),
    ("num_output_tokens", "INT64"),
    ("num_input_tokens", "INT64"),
    ("model_response_time", "INT64"),
];

/// The topic a blueprint with this sink exports (from its spec alone, as [`Gcp::metrics_sink`]
/// names it).
#[must_use]
pub fn metrics_topic_export(
    blueprint: &str,
    project: &str,
    spec: &MetricsSinkSpec,
    default_enabled: bool,
) -> Option<TopicExport> {
    spec.enabled
        .unwrap_or(default_enabled)
        .then(|| TopicExport {
            project: project.to_string(),
            name: spec
                .topic
                .name
                .clone()
                .unwrap_or_else(|| default_topic(blueprint)),
        })
}

fn default_topic(blueprint: &str) -> String {
    format!("{blueprint}-metrics")
}

/// Table the subscription writes.
const TABLE: &str = "performance_metrics";

impl Gcp {
    /// Plans the sink when `spec` enables it (`default_enabled` when it does not say): topic
    /// with the message schema, dataset, table, BigQuery subscription, and the Pub/Sub service
    /// agent's write access to that table alone, which needs the project number
    /// (`spec.projectNumber`). Returns the topic load generators publish to.
    pub fn metrics_sink(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &MetricsSinkSpec,
        field: &str,
        default_enabled: bool,
        project_number: Option<&str>,
    ) -> Option<TopicHandle> {
        if !spec.enabled.unwrap_or(default_enabled) {
            return None;
        }
        let name = self.blueprint.clone();
        let topic = self.topic(
            planner,
            &spec.topic,
            &format!("{field}.topic"),
            &default_topic(&name),
            Some(METRICS_PROTO),
        );
        let dataset = self.dataset(
            planner,
            &spec.dataset,
            &format!("{field}.dataset"),
            &format!("{}_metrics", name.replace('-', "_")),
        );
        self.table(
            &dataset,
            TABLE,
            METRICS_COLUMNS
                .iter()
                .map(|(column, column_type)| Column {
                    name: (*column).to_string(),
                    column_type: (*column_type).to_string(),
                    mode: "NULLABLE".into(),
                })
                .collect(),
        );
        self.bigquery_subscription(
            &format!("{name}-metrics-to-bigquery"),
            &topic,
            &dataset,
            TABLE,
        );
        // The table object planned above (in a dataset made here or elsewhere): the grant
        // waits for it.
        let table = self.infra.tables.last().map(|table| {
            let object = table.meta.name.clone();
            let dependency = self.dependency("bigquery", "BigQueryTable", &object);
            IamTarget::new(
                "bigquery",
                "BigQueryTable",
                Ref::name(object),
                TABLE,
                Some(dependency),
            )
        });
        // The Pub/Sub service agent writes the rows: the subscription is refused until it
        // holds its role, and the agent exists only once the Pub/Sub API is enabled. BigQuery
        // Data Editor on the table is all it needs, table metadata included
        // (https://cloud.google.com/pubsub/docs/create-bigquery-subscription): not on the
        // project, where it could read and change every dataset.
        let mut agent_grants = Vec::new();
        match project_number {
            Some(number) if !number.is_empty() && number.bytes().all(|b| b.is_ascii_digit()) => {
                let agent = format!(
                    "serviceAccount:service-{number}@gcp-sa-pubsub.iam.gserviceaccount.com"
                );
                let pubsub = self.api("pubsub.googleapis.com");
                if let Some(table) = &table {
                    agent_grants.push(self.grant_to_principal(
                        table,
                        &agent,
                        "pubsub-agent",
                        "roles/bigquery.dataEditor",
                        [pubsub],
                    ));
                }
            }
            Some(number) => {
                let d = planner.error(
                    rule::PROJECT_ID,
                    "spec.projectNumber",
                    format!("`{number}` is not a project number"),
                );
                d.expected = Some("the project's number: digits only".into());
            }
            None => {
                let d = planner.error(
                    rule::PROJECT_ID,
                    field,
                    "the BigQuery sink needs `spec.projectNumber` to grant the Pub/Sub service agent",
                );
                d.fix = Some(format!(
                    "set `spec.projectNumber` (`gcloud projects describe <project> --format='value(projectNumber)'`), or `{}.enabled: false`",
                    field.trim_start_matches("spec.")
                ));
            }
        }
        if let Some(subscription) = self.infra.subscriptions.last_mut() {
            add_dependencies(&mut subscription.meta, agent_grants);
        }
        Some(topic)
    }
}

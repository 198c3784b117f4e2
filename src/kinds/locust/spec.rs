//! `spec` of a `LocustBenchmark` blueprint, as people write it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, MetricsSinkSpec, NetworkSpec, NodePoolSpec,
    RegistrySpec, ServiceAccountSpec,
};
use crate::kinds::Exposure;
use crate::overlay::secret_ref::{SecretKeySpec, SecretManagerSpec};
use crate::overlay::site::Stanzas;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    pub(super) project: String,
    /// Project number (digits), for the Pub/Sub service agent's grants when this blueprint
    /// has a metrics sink of its own.
    pub(super) project_number: Option<String>,
    /// Region (default: the target cluster's).
    pub(super) region: Option<String>,
    /// Zone of the load generator's node pool (default: the target cluster's, else `<region>-a`).
    pub(super) zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    pub(super) config_connector: ConfigConnectorSpec,
    /// Let a change delete the clusters, node pools, network, node service account and data
    /// this blueprint created: its removal, or an edit GCP makes only by recreating them
    /// (default `false`: removed ones are abandoned, kept in GCP and billed until deleted by
    /// hand, and `diff --fail-on destructive` fails on a recreate). Commit it first.
    #[serde(default)]
    pub(super) allow_teardown: bool,
    /// The server under load.
    pub(super) target: TargetSpec,
    /// The cluster the load generator runs on (default: the target blueprint's; for a target
    /// given by address, name one: `existing: true` or `blueprint`).
    #[serde(default)]
    pub(super) cluster: ClusterSpec,
    /// VPC and subnet, for a new cluster only.
    #[serde(default)]
    pub(super) network: NetworkSpec,
    /// The load generator's CPU node pool (default: `e2-standard-8`, autoscaling with the
    /// number of workers).
    #[serde(default)]
    pub(super) pool: NodePoolSpec,
    /// Service accounts: of the pool's nodes, of the load generator (reads prompts and the
    /// token, publishes metrics) and of the runner (writes results, reads Cloud Monitoring).
    #[serde(default)]
    pub(super) service_accounts: ServiceAccounts,
    /// Namespace of the load generator (default: the blueprint name).
    pub(super) namespace: Option<String>,
    /// The load.
    #[serde(default)]
    pub(super) load: LoadSpec,
    /// Prompts: a `gs://` object of JSON lines (a `prompt`, `text` or `question` field) or
    /// plain lines.
    pub(super) prompts: String,
    /// Hugging Face tokenizer that counts prompt and output tokens (default: none, words are
    /// counted).
    pub(super) tokenizer: Option<String>,
    /// The Hugging Face token the tokenizer download needs (gated models): a reference, never
    /// the token.
    pub(super) hugging_face_token: Option<TokenSpec>,
    /// Where the runner writes each run's results.
    #[serde(default)]
    pub(super) output: OutputSpec,
    /// A metrics sink of this blueprint's own (default off; a target blueprint's sink is used
    /// when it has one).
    #[serde(default)]
    pub(super) metrics_sink: MetricsSinkSpec,
    /// Images (defaults: built into this blueprint's registry, see `examples/locust/`).
    #[serde(default)]
    pub(super) images: Images,
    /// Artifact Registry repository for the images built for this blueprint.
    #[serde(default)]
    pub(super) registry: RegistrySpec,
    /// Who can reach the Locust web UI and the runner (default: `cluster` for both).
    #[serde(default)]
    pub(super) expose: ExposeSpec,
}

/// The server under load: another blueprint, or an address.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct TargetSpec {
    /// A serving blueprint of this repository (its exported service is the target).
    pub(super) blueprint: Option<String>,
    /// Host: a Service name (`tgi`), `<service>.<namespace>`, a DNS name or an IP address; with
    /// `blueprint`, picks one of its services.
    pub(super) service: Option<String>,
    /// Namespace of a Service given by name (default: the load generator's).
    pub(super) namespace: Option<String>,
    /// Port.
    pub(super) port: Option<u16>,
    /// The server's API.
    pub(super) framework: Option<Framework>,
    /// Model: the Sax model id (`/sax/<cell>/<model>`), the Triton model, or the name servers
    /// report (default: the target blueprint's).
    pub(super) model: Option<String>,
    /// Request path (default: the framework's).
    pub(super) path: Option<String>,
}

/// An inference server API the locustfile speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
pub(super) enum Framework {
    /// The Saxml HTTP server (`sax-http`).
    #[serde(rename = "sax")]
    Sax,
    /// Hugging Face Text Generation Inference.
    #[serde(rename = "tgi")]
    Tgi,
    /// vLLM's API server.
    #[serde(rename = "vllm")]
    Vllm,
    /// Triton with the TensorRT-LLM backend (`ensemble` model).
    #[serde(rename = "tensorrt_llm_triton")]
    TensorrtLlmTriton,
    /// Triton's generate extension.
    #[serde(rename = "triton")]
    Triton,
}

impl Framework {
    pub(super) const ALL: &[(Self, &'static str)] = &[
        (Self::Sax, "sax"),
        (Self::Tgi, "tgi"),
        (Self::Vllm, "vllm"),
        (Self::TensorrtLlmTriton, "tensorrt_llm_triton"),
        (Self::Triton, "triton"),
    ];

    pub(super) fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(framework, _)| *framework == self)
            .map_or("", |(_, name)| name)
    }

    pub(super) fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(framework, _)| *framework)
    }

    /// The request path for `model`; `None` when the framework needs a model and has none.
    pub(super) fn path(self, model: Option<&str>) -> Option<String> {
        match self {
            Self::Sax | Self::Tgi | Self::Vllm => Some("/generate".into()),
            Self::TensorrtLlmTriton => Some(format!(
                "/v2/models/{}/generate",
                model.unwrap_or("ensemble")
            )),
            Self::Triton => model.map(|model| format!("/v2/models/{model}/generate")),
        }
    }
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct LoadSpec {
    /// Simulated users of a run (default 1).
    pub(super) users: Option<u32>,
    /// Users started per second (default 5).
    pub(super) spawn_rate: Option<u32>,
    /// Seconds a run lasts (default 120).
    pub(super) duration: Option<u32>,
    /// Locust worker pods (default 1).
    pub(super) workers: Option<u32>,
    /// Seconds users may finish their request when a run stops (default 0).
    pub(super) stop_timeout: Option<u32>,
    /// Seconds before a request times out (default 600).
    pub(super) request_timeout: Option<u32>,
    /// Prompts kept (default 1000).
    pub(super) max_prompts: Option<u32>,
    /// Longest prompt kept, in tokens (default 1024).
    pub(super) max_prompt_length: Option<u32>,
    /// Output tokens asked for (default 256).
    pub(super) max_output_length: Option<u32>,
    /// `best_of` (default 1).
    pub(super) best_of: Option<u32>,
    /// Beam search instead of sampling (default false).
    pub(super) use_beam_search: Option<bool>,
}

/// A reference to the Hugging Face token: exactly one of `secret` and `secretManager`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct TokenSpec {
    /// A Kubernetes Secret in the load generator's namespace, created out of band.
    pub(super) secret: Option<SecretKeySpec>,
    /// A Secret Manager secret the load generator's account may read.
    pub(super) secret_manager: Option<SecretManagerSpec>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct OutputSpec {
    /// The results bucket (default `<project>-<name>-results`, created).
    #[serde(default)]
    pub(super) bucket: BucketSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ServiceAccounts {
    #[serde(default)]
    pub(super) nodes: ServiceAccountSpec,
    #[serde(default)]
    pub(super) load: ServiceAccountSpec,
    #[serde(default)]
    pub(super) runner: ServiceAccountSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Images {
    /// Locust with the Python libraries the locustfile uses
    /// (`examples/locust/Dockerfile`; default `<registry>/locust:2.32.4`).
    pub(super) locust: Option<String>,
    /// The AI-on-GKE benchmark runner (default `<registry>/locust-runner:8676d66`).
    pub(super) runner: Option<String>,
    /// Prometheus exporter of Locust's statistics (default
    /// `containersol/locust_exporter:v0.5.0`).
    pub(super) exporter: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ExposeSpec {
    /// The Locust web UI (port 8089).
    pub(super) web_ui: Option<Exposure>,
    /// The runner's API (port 8000: `GET /run` starts a run).
    pub(super) runner: Option<Exposure>,
}

impl Spec {
    /// The shared stanzas, with the cluster the load generator runs on.
    pub(super) fn stanzas<'s>(&'s self, cluster: &'s ClusterSpec) -> Stanzas<'s> {
        Stanzas {
            project: &self.project,
            region: self.region.as_deref(),
            zone: self.zone.as_deref(),
            config_connector: &self.config_connector,
            network: &self.network,
            cluster,
            namespace: self.namespace.as_deref(),
            kubernetes_service_account: None,
            allow_teardown: self.allow_teardown,
        }
    }

    /// The cluster as written, or the target blueprint's when none is named.
    pub(super) fn effective_cluster(&self) -> ClusterSpec {
        crate::overlay::client::cluster(&self.cluster, self.target.blueprint.as_deref())
    }
}

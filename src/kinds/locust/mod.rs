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

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Exposure, TypedKind};
use crate::blueprint::Blueprint;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, MetricsSinkSpec, NetworkSpec, NodePoolSpec,
    RegistrySpec, ServiceAccountSpec,
};
use crate::gcp::{
    self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, IamTarget, Infrastructure, Scale, TaintSpec,
};
use crate::names::check_dns_label;
use crate::overlay::{Overlay, TemplateError};
use crate::plan::{Exports, Planner, ServiceExport};

/// The `LocustBenchmark` kind.
pub struct LocustBenchmark;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    project: String,
    /// Project number (digits), for the Pub/Sub service agent's grants when this blueprint
    /// has a metrics sink of its own.
    project_number: Option<String>,
    /// Region (default: the target cluster's).
    region: Option<String>,
    /// Zone of the load generator's node pool (default: the target cluster's, else `<region>-a`).
    zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    config_connector: ConfigConnectorSpec,
    /// The server under load.
    target: TargetSpec,
    /// The cluster the load generator runs on (default: the target blueprint's; for a target
    /// given by address, name one: `existing: true` or `blueprint`).
    #[serde(default)]
    cluster: ClusterSpec,
    /// VPC and subnet, for a new cluster only.
    #[serde(default)]
    network: NetworkSpec,
    /// The load generator's CPU node pool (default: `e2-standard-8`, autoscaling with the
    /// number of workers).
    #[serde(default)]
    pool: NodePoolSpec,
    /// Service accounts: of the pool's nodes, of the load generator (reads prompts and the
    /// token, publishes metrics) and of the runner (writes results, reads Cloud Monitoring).
    #[serde(default)]
    service_accounts: ServiceAccounts,
    /// Namespace of the load generator (default: the blueprint name).
    namespace: Option<String>,
    /// The load.
    #[serde(default)]
    load: LoadSpec,
    /// Prompts: a `gs://` object of JSON lines (a `prompt`, `text` or `question` field) or
    /// plain lines.
    prompts: String,
    /// Hugging Face tokenizer that counts prompt and output tokens (default: none, words are
    /// counted).
    tokenizer: Option<String>,
    /// The Hugging Face token the tokenizer download needs (gated models): a reference, never
    /// the token.
    hugging_face_token: Option<TokenSpec>,
    /// Where the runner writes each run's results.
    #[serde(default)]
    output: OutputSpec,
    /// A metrics sink of this blueprint's own (default off; a target blueprint's sink is used
    /// when it has one).
    #[serde(default)]
    metrics_sink: MetricsSinkSpec,
    /// Images (defaults: built into this blueprint's registry, see `examples/locust/`).
    #[serde(default)]
    images: Images,
    /// Artifact Registry repository for the images built for this blueprint.
    #[serde(default)]
    registry: RegistrySpec,
    /// Who can reach the Locust web UI and the runner (default: `cluster` for both).
    #[serde(default)]
    expose: ExposeSpec,
}

/// The server under load: another blueprint, or an address.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TargetSpec {
    /// A serving blueprint of this repository (its exported service is the target).
    blueprint: Option<String>,
    /// Host: a Service name (`tgi`), `<service>.<namespace>`, a DNS name or an IP address; with
    /// `blueprint`, picks one of its services.
    service: Option<String>,
    /// Namespace of a Service given by name (default: the load generator's).
    namespace: Option<String>,
    /// Port.
    port: Option<u16>,
    /// The server's API.
    framework: Option<Framework>,
    /// Model: the Sax model id (`/sax/<cell>/<model>`), the Triton model, or the name servers
    /// report (default: the target blueprint's).
    model: Option<String>,
    /// Request path (default: the framework's).
    path: Option<String>,
}

/// An inference server API the locustfile speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
enum Framework {
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
    const ALL: &[(Self, &'static str)] = &[
        (Self::Sax, "sax"),
        (Self::Tgi, "tgi"),
        (Self::Vllm, "vllm"),
        (Self::TensorrtLlmTriton, "tensorrt_llm_triton"),
        (Self::Triton, "triton"),
    ];

    fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(framework, _)| *framework == self)
            .map_or("", |(_, name)| name)
    }

    fn parse(name: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .find(|(_, known)| *known == name)
            .map(|(framework, _)| *framework)
    }

    /// The request path for `model`; `None` when the framework needs a model and has none.
    fn path(self, model: Option<&str>) -> Option<String> {
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
struct LoadSpec {
    /// Simulated users of a run (default 1).
    users: Option<u32>,
    /// Users started per second (default 5).
    spawn_rate: Option<u32>,
    /// Seconds a run lasts (default 120).
    duration: Option<u32>,
    /// Locust worker pods (default 1).
    workers: Option<u32>,
    /// Seconds users may finish their request when a run stops (default 0).
    stop_timeout: Option<u32>,
    /// Seconds before a request times out (default 600).
    request_timeout: Option<u32>,
    /// Prompts kept (default 1000).
    max_prompts: Option<u32>,
    /// Longest prompt kept, in tokens (default 1024).
    max_prompt_length: Option<u32>,
    /// Output tokens asked for (default 256).
    max_output_length: Option<u32>,
    /// `best_of` (default 1).
    best_of: Option<u32>,
    /// Beam search instead of sampling (default false).
    use_beam_search: Option<bool>,
}

/// A reference to the Hugging Face token: exactly one of `secret` and `secretManager`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TokenSpec {
    /// A Kubernetes Secret in the load generator's namespace, created out of band.
    secret: Option<SecretKeySpec>,
    /// A Secret Manager secret the load generator's account may read.
    secret_manager: Option<SecretManagerSpec>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SecretKeySpec {
    /// Secret name.
    name: String,
    /// Key in the Secret (default `token`).
    key: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SecretManagerSpec {
    /// Secret id.
    secret: String,
    /// Project of the secret (default: the blueprint's).
    project: Option<String>,
    /// Version (default `latest`).
    version: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutputSpec {
    /// The results bucket (default `<project>-<name>-results`, created).
    #[serde(default)]
    bucket: BucketSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    #[serde(default)]
    nodes: ServiceAccountSpec,
    #[serde(default)]
    load: ServiceAccountSpec,
    #[serde(default)]
    runner: ServiceAccountSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Images {
    /// Locust with the Python libraries the locustfile uses
    /// (`examples/locust/Dockerfile`; default `<registry>/locust:2.32.4`).
    locust: Option<String>,
    /// The AI-on-GKE benchmark runner (default `<registry>/locust-runner:8676d66`).
    runner: Option<String>,
    /// Prometheus exporter of Locust's statistics (default
    /// `containersol/locust_exporter:v0.5.0`).
    exporter: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ExposeSpec {
    /// The Locust web UI (port 8089).
    web_ui: Option<Exposure>,
    /// The runner's API (port 8000: `GET /run` starts a run).
    runner: Option<Exposure>,
}

/// Ids of this kind's own rules.
pub mod rule {
    /// A target the load generator cannot drive.
    pub const TARGET: &str = "locust-target";
}

/// Roles of the node service account: GKE's node role and image pulls.
const NODE_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
];

/// Label and taint of the load generator's pool; the value is the blueprint name, so that
/// load tests sharing a cluster keep to their own pools.
const POOL_KEY: &str = "aiml.dev/load-generator";

/// The locustfile, rendered into a ConfigMap so that what runs is reviewed with the rest.
const LOCUSTFILE: &str = include_str!("templates/locustfile.py");

/// Everything the workload template needs, derived and checked.
#[derive(Debug, Serialize)]
pub struct Plan {
    infra: Infrastructure,
    workload: Workload,
}

#[derive(Debug, Serialize)]
struct Workload {
    name: String,
    namespace: String,
    load_service_account: String,
    load_account_email: String,
    runner_service_account: String,
    runner_account_email: String,
    pool_key: &'static str,
    target: TargetPlan,
    load: LoadPlan,
    prompts: String,
    tokenizer: String,
    token: Option<TokenPlan>,
    pubsub_topic: Option<String>,
    output_bucket: String,
    project: String,
    images: ResolvedImages,
    web_ui: Exposure,
    runner: Exposure,
    locustfile: &'static str,
    runner_metrics: String,
    config_hash: String,
}

#[derive(Debug, Serialize)]
struct TargetPlan {
    /// `http://host:port`.
    url: String,
    framework: &'static str,
    model: String,
    path: String,
    /// Where the target came from, for comments.
    source: String,
}

#[derive(Debug, Serialize)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag, the rest are counts"
)]
struct LoadPlan {
    users: u32,
    spawn_rate: u32,
    duration: u32,
    workers: u32,
    stop_timeout: u32,
    request_timeout: u32,
    max_prompts: u32,
    max_prompt_length: u32,
    max_output_length: u32,
    best_of: u32,
    use_beam_search: bool,
}

#[derive(Debug, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
enum TokenPlan {
    Secret { name: String, key: String },
    SecretManager { path: String },
}

#[derive(Debug, Serialize)]
struct ResolvedImages {
    locust: String,
    runner: String,
    exporter: String,
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
        let cluster = effective_cluster(spec);
        let region = spec.region.as_deref().unwrap_or("us-central1");
        gcp::cluster_exports(
            blueprint.name,
            &spec.project,
            &spec.config_connector,
            &cluster,
            region,
            region,
        )
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        Overlay::with_workload(
            blueprint,
            &plan.infra,
            "locust/workload.yaml",
            &plan.workload,
        )
    }

    fn describe(plan: &Plan) -> String {
        let w = &plan.workload;
        format!(
            "{} users on {} workers against {} ({})",
            w.load.users, w.load.workers, w.target.url, w.target.framework
        )
    }
}

/// The cluster as written, or the target blueprint's when none is named.
fn effective_cluster(spec: &Spec) -> ClusterSpec {
    let mut cluster = spec.cluster.clone();
    if cluster == ClusterSpec::default()
        && let Some(target) = &spec.target.blueprint
    {
        cluster.blueprint = Some(target.clone());
    }
    cluster
}

fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
    let namespace = spec.namespace.clone().unwrap_or_else(|| name.clone());
    planner.check_name(
        gcp::rule::KUBERNETES_NAME,
        "spec.namespace",
        &namespace,
        check_dns_label,
    );
    let target = resolve_target(spec, planner, &namespace);
    let mut cluster_spec = effective_cluster(spec);
    // A target blueprint on another's cluster: the load generator joins that cluster.
    if spec.cluster == ClusterSpec::default()
        && let Some(owner) = cluster_spec
            .blueprint
            .as_deref()
            .and_then(|target| planner.peek(target))
            .and_then(|exported| exported.exports.cluster_of.clone())
    {
        cluster_spec.blueprint = Some(owner);
    }
    if spec.target.blueprint.is_none() && cluster_spec == ClusterSpec::default() {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.cluster",
            "a target given by address needs the cluster the load generator runs on",
        );
        d.fix = Some(
            "set `spec.cluster.blueprint: <blueprint>`, or `spec.cluster: {existing: true, name: …, location: …}`"
                .into(),
        );
    }
    let borrowed = cluster_spec
        .blueprint
        .as_deref()
        .and_then(|other| planner.peek(other))
        .and_then(|exported| exported.exports.cluster.clone());
    let region = spec
        .region
        .clone()
        .or_else(|| borrowed.as_ref().map(|c| c.region.clone()))
        .unwrap_or_else(|| "us-central1".to_string());
    let zone = spec.zone.clone().unwrap_or_else(|| {
        borrowed
            .as_ref()
            .filter(|c| crate::names::zone(&c.location).is_ok())
            .map_or_else(|| format!("{region}-a"), |c| c.location.clone())
    });
    let mut gcp = Gcp::new(
        planner,
        gcp::SiteSpec {
            project: &spec.project,
            region: &region,
            zone: &zone,
            config_connector: &spec.config_connector,
        },
    );
    let load = load_plan(&spec.load, planner);
    let prompts = check_gcs_object(planner, "spec.prompts", &spec.prompts);
    // A target blueprint that is not there has its finding; its cluster would repeat it.
    if spec.cluster == ClusterSpec::default()
        && spec
            .target
            .blueprint
            .as_deref()
            .is_some_and(|target| planner.peek(target).is_none())
    {
        return None;
    }

    for api in [
        "container.googleapis.com",
        "storage.googleapis.com",
        "monitoring.googleapis.com",
        "artifactregistry.googleapis.com",
    ] {
        gcp.api(api);
    }
    let node_account = gcp.service_account(
        planner,
        &spec.service_accounts.nodes,
        "spec.serviceAccounts.nodes",
        "node",
        "GKE load generator nodes",
    );
    let load_account = gcp.service_account(
        planner,
        &spec.service_accounts.load,
        "spec.serviceAccounts.load",
        "load",
        "Locust load generator",
    );
    let runner_account = gcp.service_account(
        planner,
        &spec.service_accounts.runner,
        "spec.serviceAccounts.runner",
        "runner",
        "Locust benchmark runner",
    );
    let cluster = gcp.cluster(
        planner,
        &cluster_spec,
        &spec.network,
        ClusterOptions {
            default_location: &region,
            addons: Addons {
                gcs_fuse: false,
                horizontal_pod_autoscaling: true,
                http_load_balancing: true,
                managed_prometheus: true,
            },
        },
        &node_account,
    )?;
    // Master (2 CPUs), runner and one CPU per worker fit 6 to an 8-CPU node; one node more
    // lets a rollout start new pods before the old ones stop.
    let max_nodes = (load.workers + 3).div_ceil(6) + 1;
    let pool_labels = [(POOL_KEY, name.as_str())];
    let pool_taints = [TaintSpec {
        key: POOL_KEY,
        value: name.as_str(),
    }];
    gcp.cpu_pool(
        planner,
        &cluster,
        &spec.pool,
        CpuPoolDefaults {
            name: "load-generator-pool",
            field: "spec.pool",
            machine_type: "e2-standard-8",
            scale: Scale::Autoscaling {
                min: 1,
                max: max_nodes,
            },
            disk_size_gb: Some(100),
            labels: &pool_labels,
            taints: &pool_taints,
        },
        &node_account,
    );
    for role in NODE_ROLES {
        gcp.project_role(&node_account, role);
    }
    let load_ksa = "locust";
    let runner_ksa = "locust-runner";
    gcp.workload_identity(&load_account, &cluster, &namespace, load_ksa);
    gcp.workload_identity(&runner_account, &cluster, &namespace, runner_ksa);

    // Workers read the prompts; the runner writes results and reads Cloud Monitoring.
    if let Some((bucket, _)) = &prompts {
        let prompt_bucket = gcp.bucket(
            planner,
            &BucketSpec {
                name: Some(bucket.clone()),
                existing: true,
                location: None,
            },
            "spec.prompts",
            bucket,
        );
        gcp.bucket_role(&prompt_bucket, &load_account, "roles/storage.objectViewer");
    }
    let output = gcp.bucket(
        planner,
        &spec.output.bucket,
        "spec.output.bucket",
        &crate::names::shortened(&format!("{}-{name}-results", spec.project), "", 63),
    );
    for role in [
        "roles/storage.objectUser",
        "roles/storage.legacyBucketReader",
    ] {
        gcp.bucket_role(&output, &runner_account, role);
    }
    gcp.project_role(&runner_account, "roles/monitoring.viewer");

    let token = token_plan(spec, planner, &mut gcp, &load_account);
    // Request metrics go to this blueprint's sink, else to the target blueprint's.
    let own_sink = gcp.metrics_sink(
        planner,
        &spec.metrics_sink,
        "spec.metricsSink",
        false,
        spec.project_number.as_deref(),
    );
    let pubsub_topic = if let Some(topic) = own_sink {
        gcp.grant(&topic.iam_target(), &load_account, "roles/pubsub.publisher");
        Some(format!("projects/{}/topics/{}", spec.project, topic.name))
    } else {
        target
            .as_ref()
            .and_then(|t| t.metrics_topic.clone())
            .map(|topic| {
                gcp.api("pubsub.googleapis.com");
                gcp.grant(
                    &IamTarget::external("pubsub", "PubSubTopic", topic.path(), &topic.name),
                    &load_account,
                    "roles/pubsub.publisher",
                );
                topic.path()
            })
    };
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Locust and benchmark-runner images",
    );
    let images = ResolvedImages {
        locust: spec
            .images
            .locust
            .clone()
            .unwrap_or_else(|| format!("{}/locust:2.32.4", registry.url)),
        runner: spec
            .images
            .runner
            .clone()
            .unwrap_or_else(|| format!("{}/locust-runner:8676d66", registry.url)),
        exporter: spec
            .images
            .exporter
            .clone()
            .unwrap_or_else(|| "containersol/locust_exporter:v0.5.0".into()),
    };
    for (field, image) in [
        ("spec.images.locust", &images.locust),
        ("spec.images.runner", &images.runner),
        ("spec.images.exporter", &images.exporter),
    ] {
        planner.check_image(field, image);
    }
    if let Some(tokenizer) = &spec.tokenizer {
        check_tokenizer(planner, tokenizer);
    }
    let target = target?;
    let (bucket, object) = prompts?;
    if planner.has_errors() {
        return None;
    }
    let runner_metrics = runner_metrics(&namespace, target.namespace.as_deref());
    let prompts = format!("gs://{bucket}/{object}");
    let config_hash = format!(
        "{:016x}",
        crate::names::stable_hash(&[LOCUSTFILE, runner_metrics.as_str()].concat())
    );
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            load_service_account: load_ksa.into(),
            load_account_email: load_account.email,
            runner_service_account: runner_ksa.into(),
            runner_account_email: runner_account.email,
            pool_key: POOL_KEY,
            target: target.plan,
            load,
            prompts,
            tokenizer: spec.tokenizer.clone().unwrap_or_default(),
            token,
            pubsub_topic,
            output_bucket: output.name,
            project: spec.project.clone(),
            images,
            web_ui: spec.expose.web_ui.unwrap_or(Exposure::Cluster),
            runner: spec.expose.runner.unwrap_or(Exposure::Cluster),
            locustfile: LOCUSTFILE,
            runner_metrics,
            config_hash,
            namespace,
            name,
        },
    })
}

/// A resolved target, with what planning needs beyond the template's part.
struct Target {
    plan: TargetPlan,
    /// The namespace of the target's Service, when known.
    namespace: Option<String>,
    metrics_topic: Option<crate::plan::TopicExport>,
}

fn resolve_target(spec: &Spec, planner: &mut Planner<'_>, own_namespace: &str) -> Option<Target> {
    let t = &spec.target;
    match (&t.blueprint, &t.service) {
        (Some(blueprint), _) => resolve_blueprint_target(spec, planner, blueprint),
        (None, Some(service)) => {
            let mut complete = true;
            for (missing, field) in [
                (t.port.is_none(), "spec.target.port"),
                (t.framework.is_none(), "spec.target.framework"),
            ] {
                if missing {
                    complete = false;
                    let d = planner.error(
                        rule::TARGET,
                        field,
                        format!("a target given by address needs `{field}`"),
                    );
                    if field.ends_with("framework") {
                        d.expected = Some(framework_list());
                    }
                }
            }
            check_host(planner, service);
            if !complete {
                return None;
            }
            let framework = t.framework?;
            let port = t.port?;
            let host = match &t.namespace {
                Some(namespace) => {
                    planner.check_name(
                        gcp::rule::KUBERNETES_NAME,
                        "spec.target.namespace",
                        namespace,
                        check_dns_label,
                    );
                    format!("{service}.{namespace}.svc.cluster.local")
                }
                None => service.clone(),
            };
            let path = target_path(planner, framework, t.model.as_deref(), t.path.as_deref())?;
            Some(Target {
                plan: TargetPlan {
                    url: format!("http://{host}:{port}"),
                    framework: framework.name(),
                    model: t.model.clone().unwrap_or_default(),
                    path,
                    source: format!("{service}:{port}"),
                },
                namespace: t
                    .namespace
                    .clone()
                    .or_else(|| (!service.contains('.')).then(|| own_namespace.to_string())),
                metrics_topic: None,
            })
        }
        (None, None) => {
            let d = planner.error(
                rule::TARGET,
                "spec.target",
                "the target needs `blueprint` or `service`",
            );
            d.fix = Some(
                "set `target.blueprint: <serving blueprint>`, or `target: {service, port, framework}`"
                    .into(),
            );
            None
        }
    }
}

fn resolve_blueprint_target(
    spec: &Spec,
    planner: &mut Planner<'_>,
    blueprint: &str,
) -> Option<Target> {
    let t = &spec.target;
    for (set, field) in [
        (t.namespace.is_some(), "spec.target.namespace"),
        (t.port.is_some(), "spec.target.port"),
        (t.framework.is_some(), "spec.target.framework"),
    ] {
        if set {
            let d = planner.error(
                gcp::rule::CONFLICT,
                field,
                format!("`{field}` comes from blueprint `{blueprint}`"),
            );
            d.fix = Some(format!("remove `{field}`"));
        }
    }
    let exported = planner.reference("spec.target.blueprint", blueprint)?;
    let drivable: Vec<&ServiceExport> = exported
        .exports
        .services
        .iter()
        .filter(|s| {
            s.protocol == "http"
                && s.framework
                    .as_deref()
                    .is_some_and(|f| Framework::parse(f).is_some())
        })
        .collect();
    let chosen: Vec<&ServiceExport> = match &t.service {
        Some(name) => drivable
            .iter()
            .copied()
            .filter(|s| &s.name == name)
            .collect(),
        None => drivable.clone(),
    };
    let service = match chosen.as_slice() {
        [one] => *one,
        [] => {
            let offered: Vec<String> = exported
                .exports
                .services
                .iter()
                .map(|s| {
                    format!(
                        "`{}` ({} {})",
                        s.name,
                        s.protocol,
                        s.framework.as_deref().unwrap_or("no framework")
                    )
                })
                .collect();
            let d = planner.error(
                rule::TARGET,
                if t.service.is_some() {
                    "spec.target.service"
                } else {
                    "spec.target.blueprint"
                },
                format!(
                    "blueprint `{blueprint}` ({}) serves nothing Locust can drive{}",
                    exported.kind,
                    t.service
                        .as_ref()
                        .map(|s| format!(" as `{s}`"))
                        .unwrap_or_default()
                ),
            );
            d.found = Some(if offered.is_empty() {
                "no service".into()
            } else {
                offered.join(", ")
            });
            d.expected = Some(format!("an HTTP service of framework {}", framework_list()));
            return None;
        }
        several => {
            let names: Vec<String> = several.iter().map(|s| format!("`{}`", s.name)).collect();
            let d = planner.error(
                rule::TARGET,
                "spec.target.blueprint",
                format!(
                    "blueprint `{blueprint}` serves several models: {}",
                    names.join(", ")
                ),
            );
            d.fix = Some("choose one with `spec.target.service`".into());
            return None;
        }
    };
    let framework = service.framework.as_deref().and_then(Framework::parse)?;
    let model = t.model.clone().or_else(|| service.model.clone());
    let path = target_path(planner, framework, model.as_deref(), t.path.as_deref())?;
    Some(Target {
        plan: TargetPlan {
            url: format!(
                "http://{}.{}.svc.cluster.local:{}",
                service.name, service.namespace, service.port
            ),
            framework: framework.name(),
            model: model.unwrap_or_default(),
            path,
            source: format!("blueprint {blueprint}"),
        },
        namespace: Some(service.namespace.clone()),
        metrics_topic: exported.exports.metrics_topic.clone(),
    })
}

fn framework_list() -> String {
    let names: Vec<String> = Framework::ALL
        .iter()
        .map(|(_, name)| format!("`{name}`"))
        .collect();
    names.join(", ")
}

fn target_path(
    planner: &mut Planner<'_>,
    framework: Framework,
    model: Option<&str>,
    path: Option<&str>,
) -> Option<String> {
    if let Some(path) = path {
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            let d = planner.error(
                rule::TARGET,
                "spec.target.path",
                format!("`{path}` is not a request path"),
            );
            d.expected = Some("an absolute path, e.g. `/generate`".into());
            return None;
        }
        return Some(path.to_string());
    }
    if framework == Framework::Sax && model.is_none() {
        let d = planner.error(
            rule::TARGET,
            "spec.target.model",
            "the Saxml HTTP server needs the Sax model id",
        );
        d.expected = Some("`/sax/<cell>/<model>`".into());
        return None;
    }
    let found = framework.path(model);
    if found.is_none() {
        let d = planner.error(
            rule::TARGET,
            "spec.target.model",
            format!(
                "requests to `{}` go to a model: `/v2/models/<model>/generate`",
                framework.name()
            ),
        );
        d.fix = Some("set `spec.target.model`".into());
    }
    found
}

/// A host people write: a Service name, `<service>.<namespace>`, a DNS name or an IPv4
/// address; no scheme, port or path (those have fields of their own).
fn check_host(planner: &mut Planner<'_>, host: &str) {
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if !valid {
        let d = planner.error(
            rule::TARGET,
            "spec.target.service",
            format!("`{host}` is not a host name"),
        );
        d.expected =
            Some("a Service name, `<service>.<namespace>`, a DNS name or an IP address".into());
        if host.contains("://") || host.contains(':') || host.contains('/') {
            d.fix = Some("give the port in `target.port` and the path in `target.path`".into());
        }
    }
}

fn load_plan(spec: &LoadSpec, planner: &mut Planner<'_>) -> LoadPlan {
    let load = LoadPlan {
        users: spec.users.unwrap_or(1),
        spawn_rate: spec.spawn_rate.unwrap_or(5),
        duration: spec.duration.unwrap_or(120),
        workers: spec.workers.unwrap_or(1),
        stop_timeout: spec.stop_timeout.unwrap_or(0),
        request_timeout: spec.request_timeout.unwrap_or(600),
        max_prompts: spec.max_prompts.unwrap_or(1_000),
        max_prompt_length: spec.max_prompt_length.unwrap_or(1_024),
        max_output_length: spec.max_output_length.unwrap_or(256),
        best_of: spec.best_of.unwrap_or(1),
        use_beam_search: spec.use_beam_search.unwrap_or(false),
    };
    for (field, value, min, max) in [
        ("spec.load.users", load.users, 1, 100_000),
        ("spec.load.spawnRate", load.spawn_rate, 1, 10_000),
        ("spec.load.duration", load.duration, 1, 7 * 24 * 3_600),
        ("spec.load.workers", load.workers, 1, 1_000),
        ("spec.load.stopTimeout", load.stop_timeout, 0, 24 * 3_600),
        (
            "spec.load.requestTimeout",
            load.request_timeout,
            1,
            24 * 3_600,
        ),
        ("spec.load.maxPrompts", load.max_prompts, 1, 10_000_000),
        (
            "spec.load.maxPromptLength",
            load.max_prompt_length,
            1,
            1_000_000,
        ),
        (
            "spec.load.maxOutputLength",
            load.max_output_length,
            1,
            1_000_000,
        ),
        ("spec.load.bestOf", load.best_of, 1, 64),
    ] {
        if !(min..=max).contains(&value) {
            let d = planner.error(
                gcp::rule::CONFLICT,
                field,
                format!("`{value}` is out of range"),
            );
            d.expected = Some(format!("{min} to {max}"));
        }
    }
    if load.users < load.workers && spec.users.is_some() {
        let d = planner.warning(
            gcp::rule::CONFLICT,
            "spec.load.workers",
            format!(
                "{} workers for {} users: Locust leaves the extra workers idle",
                load.workers, load.users
            ),
        );
        d.fix = Some("use at most as many workers as users".into());
    }
    load
}

/// `gs://bucket/object` → (bucket, object), with findings when it is not one.
fn check_gcs_object(planner: &mut Planner<'_>, field: &str, uri: &str) -> Option<(String, String)> {
    let parsed = uri
        .strip_prefix("gs://")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(bucket, object)| {
            !bucket.is_empty() && !object.is_empty() && !object.ends_with('/')
        });
    let Some((bucket, object)) = parsed else {
        let d = planner.error(
            gcp::rule::CONFLICT,
            field,
            format!("`{uri}` is not a Cloud Storage object"),
        );
        d.expected = Some("`gs://<bucket>/<object>`".into());
        return None;
    };
    planner.check_name(gcp::rule::BUCKET_NAME, field, bucket, crate::names::bucket);
    Some((bucket.to_string(), object.to_string()))
}

/// Hugging Face repository ids: `name` or `owner/name`.
fn check_tokenizer(planner: &mut Planner<'_>, tokenizer: &str) {
    let part_ok = |part: &str| {
        !part.is_empty()
            && part.len() <= 96
            && part
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    let valid = match tokenizer.split_once('/') {
        Some((owner, model)) => part_ok(owner) && part_ok(model),
        None => part_ok(tokenizer),
    };
    if !valid {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.tokenizer",
            format!("`{tokenizer}` is not a Hugging Face model id"),
        );
        d.expected = Some("`<owner>/<model>`, e.g. `meta-llama/Llama-2-70b-hf`".into());
    }
}

fn token_plan(
    spec: &Spec,
    planner: &mut Planner<'_>,
    gcp: &mut Gcp,
    load_account: &gcp::AccountHandle,
) -> Option<TokenPlan> {
    let token = spec.hugging_face_token.as_ref()?;
    match (&token.secret, &token.secret_manager) {
        (Some(secret), None) => {
            let key = secret.key.clone().unwrap_or_else(|| "token".into());
            planner.check_name(
                gcp::rule::KUBERNETES_NAME,
                "spec.huggingFaceToken.secret.name",
                &secret.name,
                check_dns_label,
            );
            let key_ok = !key.is_empty()
                && key
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b));
            if !key_ok {
                let d = planner.error(
                    gcp::rule::KUBERNETES_NAME,
                    "spec.huggingFaceToken.secret.key",
                    format!("`{key}` is not a Secret key"),
                );
                d.expected = Some("letters, digits, `-`, `_` and `.`".into());
            }
            Some(TokenPlan::Secret {
                name: secret.name.clone(),
                key,
            })
        }
        (None, Some(manager)) => {
            let project = manager
                .project
                .clone()
                .unwrap_or_else(|| spec.project.clone());
            let version = manager.version.clone().unwrap_or_else(|| "latest".into());
            let id_ok = !manager.secret.is_empty()
                && manager.secret.len() <= 255
                && manager
                    .secret
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
            if !id_ok {
                let d = planner.error(
                    gcp::rule::RESOURCE_NAME,
                    "spec.huggingFaceToken.secretManager.secret",
                    format!("`{}` is not a Secret Manager secret id", manager.secret),
                );
                d.expected = Some("letters, digits, `-` and `_`".into());
            }
            if version != "latest" && !version.bytes().all(|b| b.is_ascii_digit()) {
                let d = planner.error(
                    gcp::rule::RESOURCE_NAME,
                    "spec.huggingFaceToken.secretManager.version",
                    format!("`{version}` is not a secret version"),
                );
                d.expected = Some("`latest` or a version number".into());
            }
            if manager.project.is_some() {
                planner.check_name(
                    gcp::rule::PROJECT_ID,
                    "spec.huggingFaceToken.secretManager.project",
                    &project,
                    crate::names::project_id,
                );
            }
            gcp.api("secretmanager.googleapis.com");
            let secret = format!("projects/{project}/secrets/{}", manager.secret);
            gcp.grant(
                &IamTarget::external(
                    "secretmanager",
                    "SecretManagerSecret",
                    secret.clone(),
                    &manager.secret,
                ),
                load_account,
                "roles/secretmanager.secretAccessor",
            );
            Some(TokenPlan::SecretManager {
                path: format!("{secret}/versions/{version}"),
            })
        }
        (Some(_), Some(_)) | (None, None) => {
            let d = planner.error(
                gcp::rule::CONFLICT,
                "spec.huggingFaceToken",
                "the token is referenced by exactly one of `secret` and `secretManager`",
            );
            d.fix = Some(
                "`huggingFaceToken: {secret: {name: hf-token}}` or `huggingFaceToken: {secretManager: {secret: hf-token}}`"
                    .into(),
            );
            None
        }
    }
}

/// The runner's Cloud Monitoring queries (its `metrics.yaml`): Locust's statistics from the
/// exporter sidecar, scraped by Managed Prometheus in the load generator's namespace, and the
/// accelerators' duty cycle and memory in the target's namespace (GKE system metrics, for
/// GPUs and TPUs alike).
fn runner_metrics(namespace: &str, target_namespace: Option<&str>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_framework_has_a_name_and_a_path() {
        for (framework, name) in Framework::ALL {
            assert_eq!(Framework::parse(name), Some(*framework));
            assert!(
                framework
                    .path(Some("m"))
                    .is_some_and(|p| p.starts_with('/'))
            );
        }
        assert_eq!(Framework::Triton.path(None), None);
        assert_eq!(
            Framework::TensorrtLlmTriton.path(None).as_deref(),
            Some("/v2/models/ensemble/generate")
        );
    }

    #[test]
    fn the_runner_queries_are_yaml_with_the_namespaces() {
        let text = runner_metrics("bench", Some("serving"));
        let parsed: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
        let filter = parsed["metrics"]["CURRENT_RPS"]["filter"].as_str().unwrap();
        assert!(filter.contains("prometheus.googleapis.com/locust_requests_current_rps/gauge"));
        assert!(filter.contains("\"bench\""));
        let duty = parsed["metrics"]["ACCELERATOR_DUTY_CYCLE"]["filter"]
            .as_str()
            .unwrap();
        assert!(duty.contains("\"serving\""));
    }

    #[test]
    fn the_locustfile_speaks_every_framework() {
        for (_, name) in Framework::ALL {
            assert!(
                LOCUSTFILE.contains(&format!("\"{name}\"")),
                "the locustfile has no request for {name}"
            );
        }
    }
}

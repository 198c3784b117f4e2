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
//! Checks of its own: a model that does not fit the slice's memory (`sax-model-too-large`),
//! a model and slice without a serving configuration that loads real weights
//! (`sax-serving-config`), and a model-server image older than its configuration
//! (`sax-image-too-old`).

pub mod models;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{Exposure, TypedKind};
use crate::accelerator::{self, TpuPlan, TpuSpec, TpuSupport};
use crate::blueprint::Blueprint;
use crate::catalog::TpuFamily;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, MetricsSinkSpec, NetworkSpec, NodePoolSpec,
    RegistrySpec, ServiceAccountSpec,
};
use crate::gcp::{
    self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, Infrastructure, Scale, TaintSpec,
};
use crate::names::check_dns_label;
use crate::overlay::{Overlay, TemplateError};
use crate::plan::{Exports, Planner, ServiceExport};

/// The `SaxServing` kind.
pub struct SaxServing;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    project: String,
    /// Project number (digits), for the Pub/Sub service agent's grants when performance
    /// testing is on.
    project_number: Option<String>,
    /// Region (default: where the TPU generation is offered, e.g. `us-west4` for v5e).
    region: Option<String>,
    /// Zone of the TPU slices and CPU pools (default: a zone of the region with the TPUs).
    zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    config_connector: ConfigConnectorSpec,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    network: NetworkSpec,
    /// The cluster (new by default: regional); `cpuPool` is its untainted system pool.
    #[serde(default)]
    cluster: ClusterSpec,
    /// The Saxml node pools besides the system pool.
    #[serde(default)]
    pools: Pools,
    /// Node and Workload Identity service accounts.
    #[serde(default)]
    service_accounts: ServiceAccounts,
    /// Namespace of the Saxml objects (default: the blueprint name).
    namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account (default `saxml`).
    kubernetes_service_account: Option<String>,
    /// The TPU slice of each model-server replica (`slices` must stay 1).
    tpu: TpuSpec,
    /// The model to serve.
    model: ModelSpec,
    /// Saxml cell and images.
    #[serde(default)]
    saxml: SaxmlSpec,
    /// The checkpoint conversion.
    #[serde(default)]
    converter: ConverterSpec,
    /// The HTTP proxy in front of the model.
    #[serde(default)]
    proxy: ProxySpec,
    /// Buckets: Sax admin root and model checkpoints.
    #[serde(default)]
    buckets: Buckets,
    /// Artifact Registry repository for the images built for this blueprint.
    #[serde(default)]
    registry: RegistrySpec,
    /// The Pub/Sub → BigQuery sink of load-test metrics.
    #[serde(default)]
    performance_testing: MetricsSinkSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Pools {
    /// The Sax admin server's pool (default: one `n1-standard-8`).
    #[serde(default)]
    admin: NodePoolSpec,
    /// The HTTP proxies' pool (default: `n1-standard-8`, autoscaling 1–3).
    #[serde(default)]
    proxy: NodePoolSpec,
    /// Checkpoint conversion and other batch work (default: sized for the model,
    /// autoscaling 0–1).
    #[serde(default)]
    auxiliary: NodePoolSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    #[serde(default)]
    nodes: ServiceAccountSpec,
    #[serde(default)]
    workload: ServiceAccountSpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ModelSpec {
    /// `llama2-7b`, `llama2-13b` or `llama2-70b`.
    name: String,
    /// Saxml serving configuration class (default: the one `lm_cloud.py` has for the model on
    /// the slice); set it for a class your model-server image registers.
    serving_config: Option<String>,
    /// Model-server replicas, one slice each (default 1).
    replicas: Option<u32>,
    /// Folder of the Meta Llama 2 checkpoint to convert (default:
    /// `gs://<checkpoints bucket>/<model>/meta`).
    meta_checkpoint: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SaxmlSpec {
    /// Sax cell name (default: the blueprint name).
    cell: Option<String>,
    /// Images (default: the Saxml v1.2.0 release images).
    #[serde(default)]
    images: Images,
    /// Date (`YYYY-MM-DD`) of the Saxml source the model-server image was built from, when
    /// it is not a release image.
    source_date: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Images {
    admin_server: Option<String>,
    model_server: Option<String>,
    util: Option<String>,
    http: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConverterSpec {
    /// Converter image (default: `<registry>/checkpoint-converter:<model-server tag>`, built
    /// from `examples/sax/checkpoint-converter/Dockerfile`).
    image: Option<String>,
    /// Render the conversion Job (default `true`).
    enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProxySpec {
    /// Proxy pods, scaled on CPU between these bounds (default 1–3).
    autoscaling: Option<ProxyAutoscaling>,
    /// Who can reach the proxy: `internal` (default: an internal load balancer, reachable
    /// from the VPC), `cluster` (a ClusterIP, reachable in the cluster only) or `public` (a
    /// public load balancer, with no authentication in front of the model).
    expose: Option<Exposure>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ProxyAutoscaling {
    /// Fewest proxy pods.
    min_replicas: u32,
    /// Most proxy pods.
    max_replicas: u32,
    /// Target average CPU utilisation, percent (default 70).
    cpu_utilization: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Buckets {
    /// Sax admin root (`sax-root`, `sax-fs-root`).
    #[serde(default)]
    admin: BucketSpec,
    /// Meta and Pax checkpoints.
    #[serde(default)]
    checkpoints: BucketSpec,
}

/// Roles of the node service account: GKE's node role and image pulls.
const NODE_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
];

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];

/// Rule ids of this kind.
pub mod rule {
    /// The model's weights do not fit the slice's memory.
    pub const MODEL_TOO_LARGE: &str = "sax-model-too-large";
    /// No serving configuration loads the model's weights on the slice.
    pub const SERVING_CONFIG: &str = "sax-serving-config";
    /// The model-server image is older than its serving configuration.
    pub const IMAGE_TOO_OLD: &str = "sax-image-too-old";
}

/// The proxy is reachable from the VPC unless the blueprint says otherwise.
const PROXY_EXPOSURE: Exposure = Exposure::Internal;

/// Port of the Saxml HTTP server (`sax-http`).
const HTTP_PORT: u16 = 8_888;

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
    kubernetes_service_account: String,
    workload_service_account: String,
    parameters: String,
    cell: String,
    sax_root: String,
    admin_bucket: String,
    tpu: TpuPlan,
    platform_chip: &'static str,
    node_selector: BTreeMap<String, String>,
    replicas: u32,
    images: ResolvedImages,
    model: ModelPlan,
    converter: Option<ConverterPlan>,
    proxy: ProxyPlan,
    pools: PoolSelectors,
}

#[derive(Debug, Serialize)]
struct ResolvedImages {
    admin_server: String,
    model_server: String,
    util: String,
    http: String,
}

#[derive(Debug, Serialize)]
struct ModelPlan {
    /// `/sax/<cell>/<model>`.
    id: String,
    serving_config: String,
    checkpoint: String,
    replicas: u32,
}

#[derive(Debug, Serialize)]
struct ConverterPlan {
    image: String,
    size: &'static str,
    memory: &'static str,
    scratch: String,
    meta_checkpoint: String,
    pax_checkpoint: String,
}

#[derive(Debug, Serialize)]
struct ProxyPlan {
    service: String,
    min: u32,
    max: u32,
    cpu_utilization: u32,
    expose: Exposure,
}

/// Labels and taints that keep each Saxml role on its pool.
#[derive(Debug, Serialize)]
struct PoolSelectors {
    admin: &'static str,
    proxy: &'static str,
    auxiliary: &'static str,
}

const ADMIN_POOL_KEY: &str = "saxml-admin-node-pool";
const PROXY_POOL_KEY: &str = "saxml-proxy-node-pool";
const AUXILIARY_POOL_KEY: &str = "saxml-auxiliary-node-pool";
/// Node label that ties the model servers to this blueprint's TPU pools.
const BLUEPRINT_LABEL: &str = "aiml.dev/blueprint";

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
        let (region, _) = default_location(spec);
        Exports {
            services,
            metrics_topic: gcp::metrics_topic_export(
                blueprint.name,
                &spec.project,
                &spec.performance_testing,
                true,
            ),
            // A new cluster is regional.
            ..gcp::cluster_exports(
                blueprint.name,
                &spec.project,
                &spec.config_connector,
                &spec.cluster,
                &region,
                &region,
            )
        }
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        Overlay::with_workload(blueprint, &plan.infra, "sax/workload.yaml", &plan.workload)
    }

    fn describe(plan: &Plan) -> String {
        let w = &plan.workload;
        format!(
            "{} on {} x {} ({})",
            w.model.id, w.replicas, w.tpu.type_name, w.tpu.topology
        )
    }
}

/// Where the TPU generation is offered: the default region and zone.
fn default_location(spec: &Spec) -> (String, String) {
    let family = crate::catalog::tpu_slice(&spec.tpu.type_, None)
        .ok()
        .map(|slice| slice.family);
    let (region, zone) = match family {
        Some(TpuFamily::V4) => ("us-central2", "us-central2-b"),
        Some(TpuFamily::V5p | TpuFamily::V6e) => ("us-east5", "us-east5-a"),
        _ => ("us-west4", "us-west4-a"),
    };
    let region = spec.region.clone().unwrap_or_else(|| region.to_string());
    let zone = spec.zone.clone().unwrap_or_else(|| {
        if spec.region.is_some() {
            format!("{region}-a")
        } else {
            zone.to_string()
        }
    });
    (region, zone)
}

fn cell_name(spec: &Spec, blueprint: &str) -> String {
    spec.saxml.cell.clone().unwrap_or_else(|| {
        // Sax names start with a letter.
        if blueprint.starts_with(|c: char| c.is_ascii_digit()) {
            format!("sax-{blueprint}")
        } else {
            blueprint.to_string()
        }
    })
}

fn proxy_service(blueprint: &str) -> String {
    format!("{blueprint}-http")
}

fn release_image(component: &str) -> String {
    format!("{}/sax-{component}:v1.2.0", models::RELEASE_REGISTRY)
}

/// The tag of an image reference (`None` for a digest or no tag).
fn tag_of(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag)
}

#[allow(clippy::too_many_lines, reason = "one recipe, read top to bottom")]
fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
    let (mut region, mut zone) = default_location(spec);
    // On another blueprint's cluster, its region and zone are the defaults.
    if let Some(borrowed) = spec
        .cluster
        .blueprint
        .as_deref()
        .and_then(|other| planner.peek(other))
        .and_then(|exported| exported.exports.cluster.clone())
        && spec.region.is_none()
    {
        region.clone_from(&borrowed.region);
        if spec.zone.is_none() {
            zone = if crate::names::zone(&borrowed.location).is_ok() {
                borrowed.location.clone()
            } else {
                format!("{region}-a")
            };
        }
    }
    let mut gcp = Gcp::new(
        planner,
        gcp::SiteSpec {
            project: &spec.project,
            region: &region,
            zone: &zone,
            config_connector: &spec.config_connector,
        },
    );
    let tpu = accelerator::resolve_tpu(
        planner,
        &spec.tpu,
        TpuSupport {
            kind: SaxServing::NAME,
            families: &[TpuFamily::V4, TpuFamily::V5e],
            multislice: false,
        },
    );
    let namespace = spec.namespace.clone().unwrap_or_else(|| name.clone());
    let kubernetes_service_account = spec
        .kubernetes_service_account
        .clone()
        .unwrap_or_else(|| "saxml".into());
    for (field, value) in [
        ("spec.namespace", &namespace),
        ("spec.kubernetesServiceAccount", &kubernetes_service_account),
    ] {
        planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
    }
    let cell = cell_name(spec, &name);
    planner.check_name(
        gcp::rule::KUBERNETES_NAME,
        "spec.saxml.cell",
        &cell,
        check_sax_name,
    );

    // The model and how it is served.
    let model = match models::model(&spec.model.name) {
        Some(model) => Some(model),
        None => {
            let names: Vec<&str> = models::MODELS.iter().map(|m| m.name).collect();
            let d = planner.error(
                gcp::rule::CONFLICT,
                "spec.model.name",
                format!("unknown model `{}`", spec.model.name),
            );
            d.expected = Some(format!("one of `{}`", names.join("`, `")));
            d.fix = crate::catalog::closest(&spec.model.name, names.iter().copied())
                .map(|best| format!("did you mean `{best}`?"));
            None
        }
    };
    let replicas = spec.model.replicas.unwrap_or(1);
    if !(1..=accelerator::MAX_SLICES).contains(&replicas) {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.model.replicas",
            format!(
                "`replicas` must be between 1 and {}: each is a TPU slice",
                accelerator::MAX_SLICES
            ),
        );
        d.found = Some(replicas.to_string());
    }
    let images = ResolvedImages {
        admin_server: spec
            .saxml
            .images
            .admin_server
            .clone()
            .unwrap_or_else(|| release_image("admin-server")),
        model_server: spec
            .saxml
            .images
            .model_server
            .clone()
            .unwrap_or_else(|| release_image("model-server")),
        util: spec
            .saxml
            .images
            .util
            .clone()
            .unwrap_or_else(|| release_image("util")),
        http: spec
            .saxml
            .images
            .http
            .clone()
            .unwrap_or_else(|| format!("{}/sax-http:v1.0.0", models::RELEASE_REGISTRY)),
    };
    for (field, image) in [
        ("spec.saxml.images.adminServer", &images.admin_server),
        ("spec.saxml.images.modelServer", &images.model_server),
        ("spec.saxml.images.util", &images.util),
        ("spec.saxml.images.http", &images.http),
    ] {
        planner.check_image(field, image);
    }
    if let Some(date) = &spec.saxml.source_date
        && !models::is_date(date)
    {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.saxml.sourceDate",
            format!("`{date}` is not a date"),
        );
        d.expected =
            Some("`YYYY-MM-DD`, the date of the Saxml commit the images were built from".into());
    }
    // A model too large for the slice has no configuration either: one finding says why.
    let serving_config = match (model, &tpu) {
        (Some(model), Some(tpu)) if fits(planner, model, tpu) => {
            serving_config(spec, planner, model, tpu, &images)
        }
        _ => None,
    };

    // GCP: a regional cluster with a system pool and the Saxml pools.
    for service in SERVICES {
        gcp.api(service);
    }
    let node_account = gcp.service_account(
        planner,
        &spec.service_accounts.nodes,
        "spec.serviceAccounts.nodes",
        "node",
        "GKE Saxml nodes",
    );
    let workload_account = gcp.service_account(
        planner,
        &spec.service_accounts.workload,
        "spec.serviceAccounts.workload",
        "wi",
        "Saxml workloads",
    );
    let cluster = gcp.cluster(
        planner,
        &spec.cluster,
        &spec.network,
        ClusterOptions {
            default_location: &region,
            addons: Addons {
                gcs_fuse: true,
                horizontal_pod_autoscaling: true,
                http_load_balancing: spec.proxy.expose.unwrap_or(PROXY_EXPOSURE)
                    != Exposure::Cluster,
                // Load tests on this cluster (and serving dashboards) scrape with it.
                managed_prometheus: true,
            },
        },
        &node_account,
    )?;
    let converter_machine = model.map_or("n2-highmem-16", |m| m.converter_machine);
    let converter_disk = model.map_or(200, |m| m.converter_scratch_gb + 100);
    let pools: [(&NodePoolSpec, CpuPoolDefaults<'_>); 4] = [
        (
            &spec.cluster.cpu_pool,
            CpuPoolDefaults {
                name: "system-pool",
                field: "spec.cluster.cpuPool",
                machine_type: "n1-standard-8",
                scale: Scale::Autoscaling { min: 1, max: 3 },
                disk_size_gb: Some(200),
                labels: &[],
                taints: &[],
            },
        ),
        (
            &spec.pools.admin,
            CpuPoolDefaults {
                name: "saxml-admin-pool",
                field: "spec.pools.admin",
                machine_type: "n1-standard-8",
                scale: Scale::Fixed { nodes: 1 },
                disk_size_gb: Some(100),
                labels: &[(ADMIN_POOL_KEY, "true")],
                taints: &[TaintSpec {
                    key: ADMIN_POOL_KEY,
                    value: "true",
                }],
            },
        ),
        (
            &spec.pools.proxy,
            CpuPoolDefaults {
                name: "saxml-proxy-pool",
                field: "spec.pools.proxy",
                machine_type: "n1-standard-8",
                scale: Scale::Autoscaling { min: 1, max: 3 },
                disk_size_gb: Some(100),
                labels: &[(PROXY_POOL_KEY, "true")],
                taints: &[TaintSpec {
                    key: PROXY_POOL_KEY,
                    value: "true",
                }],
            },
        ),
        (
            &spec.pools.auxiliary,
            CpuPoolDefaults {
                name: "saxml-auxiliary-pool",
                field: "spec.pools.auxiliary",
                machine_type: converter_machine,
                scale: Scale::Autoscaling { min: 0, max: 1 },
                disk_size_gb: Some(converter_disk),
                labels: &[(AUXILIARY_POOL_KEY, "true")],
                taints: &[TaintSpec {
                    key: AUXILIARY_POOL_KEY,
                    value: "true",
                }],
            },
        ),
    ];
    for (pool_spec, defaults) in pools {
        // A borrowed or existing cluster keeps its system pool; the Saxml pools are this
        // blueprint's wherever it runs.
        if defaults.field == "spec.cluster.cpuPool" && !cluster.owned {
            continue;
        }
        gcp.cpu_pool(planner, &cluster, pool_spec, defaults, &node_account);
    }
    for role in NODE_ROLES {
        gcp.project_role(&node_account, role);
    }
    gcp.workload_identity(
        &workload_account,
        &cluster,
        &namespace,
        &kubernetes_service_account,
    );
    let admin_bucket = gcp.bucket(
        planner,
        &spec.buckets.admin,
        "spec.buckets.admin",
        &crate::names::shortened(&format!("{}-{name}-admin", spec.project), "", 63),
    );
    let checkpoint_bucket = gcp.bucket(
        planner,
        &spec.buckets.checkpoints,
        "spec.buckets.checkpoints",
        &crate::names::shortened(&format!("{}-{name}-models", spec.project), "", 63),
    );
    // The admin server and model servers keep Sax's state in the admin bucket; model
    // servers read checkpoints; the converter writes them.
    for (bucket, role) in [
        (&admin_bucket, "roles/storage.objectUser"),
        (&admin_bucket, "roles/storage.legacyBucketReader"),
        (&checkpoint_bucket, "roles/storage.objectUser"),
        (&checkpoint_bucket, "roles/storage.legacyBucketReader"),
    ] {
        gcp.bucket_role(bucket, &workload_account, role);
    }
    let registry = gcp.registry(
        planner,
        &spec.registry,
        "spec.registry",
        "Saxml and checkpoint-converter images",
    );
    // Load tests of this blueprint publish here ([`Exports::metrics_topic`]); each grants
    // its own publisher.
    gcp.metrics_sink(
        planner,
        &spec.performance_testing,
        "spec.performanceTesting",
        true,
        spec.project_number.as_deref(),
    );

    let tpu = tpu?;
    let model = model?;
    let serving_config = serving_config?;
    if planner.has_errors() {
        return None;
    }
    let pool_labels = BTreeMap::from([(BLUEPRINT_LABEL.to_string(), name.clone())]);
    gcp.slice_pools(&cluster, &tpu, replicas, false, &node_account, &pool_labels);

    let sax_root = format!("{}/sax-root", admin_bucket.url());
    let model_id = format!("/sax/{cell}/{}", models::sax_model_name(model.name));
    let pax_checkpoint = format!("{}/{}/pax", checkpoint_bucket.url(), model.name);
    let converter = spec.converter.enabled.unwrap_or(true).then(|| {
        let image = spec.converter.image.clone().unwrap_or_else(|| {
            let tag = tag_of(&images.model_server).unwrap_or("v1.2.0");
            format!("{}/checkpoint-converter:{tag}", registry.url)
        });
        planner.check_image("spec.converter.image", &image);
        ConverterPlan {
            image,
            size: model.converter_size,
            memory: model.converter_memory,
            scratch: format!("{}Gi", model.converter_scratch_gb),
            meta_checkpoint: spec
                .model
                .meta_checkpoint
                .clone()
                .unwrap_or_else(|| format!("{}/{}/meta", checkpoint_bucket.url(), model.name)),
            pax_checkpoint: pax_checkpoint.clone(),
        }
    });
    if let Some(checkpoint) = &spec.model.meta_checkpoint
        && !checkpoint.starts_with("gs://")
    {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.model.metaCheckpoint",
            "the Meta checkpoint is read from Cloud Storage",
        );
        d.expected = Some("`gs://<bucket>/<folder>`".into());
    }
    let (min, max, cpu_utilization) = spec.proxy.autoscaling.map_or((1, 3, 70), |a| {
        (
            a.min_replicas,
            a.max_replicas,
            a.cpu_utilization.unwrap_or(70),
        )
    });
    if min == 0 || min > max || max > 1_000 {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.proxy.autoscaling",
            format!("proxy autoscaling from {min} to {max} pods cannot work"),
        );
        d.expected = Some("`1 ≤ minReplicas ≤ maxReplicas ≤ 1000`".into());
    }
    if !(1..=100).contains(&cpu_utilization) {
        let d = planner.error(
            gcp::rule::NODE_POOL_SIZE,
            "spec.proxy.autoscaling.cpuUtilization",
            format!("a CPU utilisation target of {cpu_utilization}% cannot work"),
        );
        d.expected = Some("a percentage from 1 to 100".into());
    }
    if planner.has_errors() {
        return None;
    }
    let node_selector = BTreeMap::from([
        (
            crate::catalog::TPU_ACCELERATOR_LABEL.to_string(),
            tpu.accelerator.to_string(),
        ),
        (
            crate::catalog::TPU_TOPOLOGY_LABEL.to_string(),
            tpu.topology.clone(),
        ),
        (BLUEPRINT_LABEL.to_string(), name.clone()),
    ]);
    let platform_chip = tpu
        .family
        .and_then(models::platform_chip)
        .unwrap_or("tpuv5e");
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            parameters: format!("{name}-saxml"),
            sax_root,
            admin_bucket: admin_bucket.name,
            model: ModelPlan {
                id: model_id,
                serving_config,
                checkpoint: format!("{pax_checkpoint}/checkpoint_00000000"),
                replicas,
            },
            converter,
            proxy: ProxyPlan {
                service: proxy_service(&name),
                min,
                max,
                cpu_utilization,
                expose: spec.proxy.expose.unwrap_or(PROXY_EXPOSURE),
            },
            pools: PoolSelectors {
                admin: ADMIN_POOL_KEY,
                proxy: PROXY_POOL_KEY,
                auxiliary: AUXILIARY_POOL_KEY,
            },
            workload_service_account: workload_account.email,
            platform_chip,
            node_selector,
            replicas,
            images,
            tpu,
            cell,
            namespace,
            kubernetes_service_account,
            name,
        },
    })
}

/// The serving configuration: the one the spec names, or the catalog's for the model on the
/// slice; findings when none serves real weights or the image predates it.
fn serving_config(
    spec: &Spec,
    planner: &mut Planner<'_>,
    model: &models::Model,
    tpu: &TpuPlan,
    images: &ResolvedImages,
) -> Option<String> {
    let family = tpu.family?;
    if let Some(class) = &spec.model.serving_config {
        let valid = class.split('.').all(|part| {
            !part.is_empty()
                && part.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
        });
        if !valid {
            let d = planner.error(
                rule::SERVING_CONFIG,
                "spec.model.servingConfig",
                format!("`{class}` is not a Python class path"),
            );
            d.expected = Some(format!(
                "e.g. `{}.LLaMA70BFP16TPUv5e16`",
                models::lm_cloud()
            ));
            return None;
        }
        // A class the tool knows is checked like a default; any other is the user's own.
        if let Some(known) = models::config(class) {
            check_known(
                planner,
                known,
                model,
                tpu,
                images,
                "spec.model.servingConfig",
            );
        }
        return Some(class.clone());
    }
    let found = models::configs_for(model.name, family, tpu.chips_per_slice);
    match found.first() {
        Some(config) if !config.test_mode => {
            check_known(planner, config, model, tpu, images, "spec.model.name");
            Some(config.class.to_string())
        }
        _ => {
            let d = planner.error(
                rule::SERVING_CONFIG,
                "spec.model.name",
                format!(
                    "Saxml has no serving configuration that loads `{}` weights on {} chips of {family}",
                    model.name, tpu.chips_per_slice
                ),
            );
            d.found = found.first().map(|test| {
                format!(
                    "`{}`, which loads random weights (test mode)",
                    test.class.rsplit('.').next().unwrap_or(test.class)
                )
            });
            let offered: Vec<String> = models::SERVING_CONFIGS
                .iter()
                .filter(|c| c.model == model.name && !c.test_mode)
                .map(|c| format!("{} chips of {}", c.chips, c.family))
                .collect();
            d.expected = Some(if offered.is_empty() {
                "a serving configuration of your own".into()
            } else {
                offered.join(" or ")
            });
            d.fix = Some(format!(
                "use a slice Saxml has a configuration for, or set `spec.model.servingConfig` to a class your model-server image registers for {} chips",
                tpu.chips_per_slice
            ));
            None
        }
    }
}

/// Checks a known configuration against the slice and the model-server image.
fn check_known(
    planner: &mut Planner<'_>,
    config: &models::ServingConfig,
    model: &models::Model,
    tpu: &TpuPlan,
    images: &ResolvedImages,
    field: &str,
) {
    let short = config.class.rsplit('.').next().unwrap_or(config.class);
    if config.model != model.name
        || Some(config.family) != tpu.family
        || config.chips != tpu.chips_per_slice
    {
        let d = planner.error(
            rule::SERVING_CONFIG,
            field,
            format!(
                "`{short}` serves `{}` on {} chips of {}, not `{}` on {} chips of {}",
                config.model,
                config.chips,
                config.family,
                model.name,
                tpu.chips_per_slice,
                tpu.family.map_or_else(String::new, |f| f.to_string())
            ),
        );
        d.fix = Some("remove `spec.model.servingConfig` to use the matching one".into());
        return;
    }
    if config.test_mode {
        let d = planner.error(
            rule::SERVING_CONFIG,
            field,
            format!("`{short}` loads random weights (test mode), not the checkpoint"),
        );
        d.fix = Some("use a configuration with `test_mode` false".into());
        return;
    }
    let image = &images.model_server;
    let build = tag_of(image).and_then(models::release_date).or_else(|| {
        planner
            .blueprint()
            .node
            .at(&["spec", "saxml", "sourceDate"])
            .and_then(crate::yaml::Node::as_str)
            .filter(|date| models::is_date(date))
    });
    match build {
        Some(date) if date < config.since => {
            let d = planner.error(
                rule::IMAGE_TOO_OLD,
                "spec.saxml.images.modelServer",
                format!(
                    "the model-server image is built from Saxml of {date}, before `{short}` could serve it ({})",
                    config.since
                ),
            );
            d.found = Some(image.clone());
            d.expected = Some(format!("a Saxml build from {} or later", config.since));
            d.fix = Some(format!(
                "build the Saxml images from a commit of {} or later, push them to the blueprint's registry and set `spec.saxml.images` and `spec.saxml.sourceDate`",
                config.since
            ));
        }
        Some(_) => {}
        None => {
            let d = planner.error(
                rule::IMAGE_TOO_OLD,
                "spec.saxml.images.modelServer",
                format!("cannot tell which Saxml source the image `{image}` was built from"),
            );
            d.expected = Some(format!(
                "a release tag ({}) or `spec.saxml.sourceDate`",
                models::RELEASES
                    .iter()
                    .map(|(tag, _)| format!("`{tag}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
            d.fix = Some("set `spec.saxml.sourceDate: YYYY-MM-DD`".into());
        }
    }
}

/// Weights take ~2 bytes per parameter (bf16); they must fit the slice's memory.
fn fits(planner: &mut Planner<'_>, model: &models::Model, tpu: &TpuPlan) -> bool {
    let Some(family) = tpu.family else {
        return false;
    };
    let weights_gb = u64::from(model.billions) * 2;
    let memory_gb = u64::from(family.hbm_gb()) * u64::from(tpu.chips_per_slice);
    if weights_gb > memory_gb {
        let d = planner.error(
            rule::MODEL_TOO_LARGE,
            "spec.tpu.type",
            format!(
                "`{}` needs ~{weights_gb} GB for its weights but a `{}` slice has {memory_gb} GB of HBM",
                model.name, tpu.type_name
            ),
        );
        d.found = Some(format!(
            "{} chips x {} GB of {family}",
            tpu.chips_per_slice,
            family.hbm_gb()
        ));
        let chips_needed = weights_gb.div_ceil(u64::from(family.hbm_gb()));
        d.expected = Some(format!("at least {chips_needed} chips of {family}"));
        return false;
    }
    true
}

/// Sax names: a lowercase letter, then lowercase letters, digits, `-` and `_`.
fn check_sax_name(name: &str) -> Result<(), String> {
    let valid = name.starts_with(|c: char| c.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if valid {
        Ok(())
    } else {
        Err("Sax names start with a lowercase letter, then letters, digits, `-` or `_`".into())
    }
}

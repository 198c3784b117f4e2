//! `MultisliceTraining`: TPU training with JobSet and Kueue on GKE, across one or more slices.
//!
//! Reference: the "Running TPU training workloads on GKE" guide (v4-32, two slices). The kind
//! is a recipe over the shared blocks: a cluster (new, existing, or another blueprint's) with a
//! CPU pool, one TPU node pool per slice, node and Workload Identity service accounts, a bucket
//! for datasets, checkpoints and logs; in the cluster, a namespace, the Workload Identity
//! service account, Kueue flavor and queues, and a JobSet with one replicated job per slice.
//!
//! Identity: TPU workers use `hostNetwork` (multislice traffic between hosts), and pods on the
//! host network do not get Workload Identity, so they act as the node service account. That
//! account gets what training needs on the blueprint's bucket only; the Workload Identity
//! account (used by the TensorBoard uploader and any pod off the host network) gets the
//! reference's project roles minus project-wide object admin.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::TypedKind;
use crate::accelerator::{self, TpuPlan, TpuSpec, TpuSupport};
use crate::blueprint::Blueprint;
use crate::catalog::TpuFamily;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, NetworkSpec, ServiceAccountSpec,
};
use crate::gcp::{self, Addons, CpuPoolDefaults, Infrastructure, Scale};
use crate::names::check_dns_label;
use crate::overlay::site::{Accounts, Location, SYSTEM_POOL, Site, pool_labels, tpu_node_selector};
use crate::overlay::{Overlay, TemplateError, stanzas};
use crate::plan::{Exports, Planner};

/// The `MultisliceTraining` kind.
pub struct MultisliceTraining;

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    project: String,
    /// Region (default: the referenced cluster's, else `us-central2`, where TPU v4 lives).
    region: Option<String>,
    /// Zone of the TPU slices (default: `<region>-b`).
    zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    config_connector: ConfigConnectorSpec,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    network: NetworkSpec,
    /// The cluster (new by default; zonal in the slices' zone).
    #[serde(default)]
    cluster: ClusterSpec,
    /// Node and Workload Identity service accounts.
    #[serde(default)]
    service_accounts: ServiceAccounts,
    /// Namespace of the training objects (default: the blueprint name).
    namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account (default `training`).
    kubernetes_service_account: Option<String>,
    /// The TPU slices.
    tpu: TpuSpec,
    /// Kueue queue names and the reference's PriorityClasses.
    #[serde(default)]
    kueue: Kueue,
    /// Bucket for datasets, checkpoints and logs.
    #[serde(default)]
    bucket: BucketSpec,
    /// The training job.
    #[serde(default)]
    training: Training,
    /// The TensorBoard log uploader, when set.
    tensorboard: Option<Tensorboard>,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    /// Account of the nodes (and of the TPU workers, which use the host network).
    #[serde(default)]
    nodes: ServiceAccountSpec,
    /// Workload Identity account of pods off the host network.
    #[serde(default)]
    workload: ServiceAccountSpec,
}

/// `spec.kueue`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Kueue {
    /// ClusterQueue name (default: the blueprint name).
    cluster_queue: Option<String>,
    /// LocalQueue name (default `tpu-training-jobs`).
    local_queue: Option<String>,
    /// Render the reference's five PriorityClasses, prefixed with the blueprint name
    /// (default `true`).
    priority_classes: Option<bool>,
}

/// `spec.training`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Training {
    /// JobSet name (default: the blueprint name).
    name: Option<String>,
    /// Container image (default: the reference's `python:3.11` hello-world).
    image: Option<String>,
    /// Container command.
    command: Option<Vec<String>>,
    /// Container arguments.
    args: Option<Vec<String>>,
    /// Extra environment variables. `RUN_NAME`, `BASE_OUTPUT_DIRECTORY` and `DATASET_PATH` may
    /// be overridden; `NUM_SLICES` and `ICI_PARALLELISM` follow from `spec.tpu`.
    #[serde(default)]
    env: BTreeMap<String, String>,
    /// JobSet `failurePolicy.maxRestarts` (default 1).
    max_restarts: Option<u32>,
}

/// `spec.tensorboard`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Tensorboard {
    /// Vertex AI TensorBoard: `projects/<p>/locations/<l>/tensorboards/<id>`.
    resource_name: String,
    /// Uploader image, with a tag or digest.
    image: Option<String>,
}

/// Project roles of the Workload Identity service account: the reference's, without
/// project-wide object admin (bucket roles below cover the blueprint's data).
const WORKLOAD_PROJECT_ROLES: &[&str] = &[
    "roles/aiplatform.user",
    "roles/artifactregistry.reader",
    "roles/logging.logWriter",
];

/// Roles of both accounts on the blueprint's bucket: read and write objects, and read the
/// bucket's metadata (which `gcsfs` and TensorFlow's file system ask for).
const BUCKET_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectUser",
];

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];

/// The reference's PriorityClasses (plain `scheduling.k8s.io`, cluster-wide).
const PRIORITY_CLASSES: &[(&str, i64, &str)] = &[
    ("veryhigh", 1000, "Very high"),
    ("high", 750, "High"),
    ("medium", 500, "Medium"),
    ("low", 250, "Low"),
    ("verylow", 100, "Very low"),
];

/// The reference's hello-world: every host reports the global device count, which proves
/// that all slices joined one JAX runtime.
const DEFAULT_IMAGE: &str = "python:3.11";
const DEFAULT_COMMAND: &[&str] = &[
    "bash",
    "-c",
    "pip install \"jax[tpu]\" -f https://storage.googleapis.com/jax-releases/libtpu_releases.html\npython -c 'import jax; print(\"Global device count:\", jax.device_count())'\n",
];

/// The uploader runs from a pinned Python image with a pinned `google-cloud-aiplatform`,
/// whose `tb-gcp-uploader` is the reference's uploader (its own image has no tags to pin).
const DEFAULT_UPLOADER_IMAGE: &str = "python:3.11-slim";
const UPLOADER_PACKAGE: &str = "google-cloud-aiplatform[tensorboard]==1.165.1";

/// Everything the workload templates need, derived and checked.
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
    tpu: TpuPlan,
    node_selector: BTreeMap<String, String>,
    kueue: KueuePlan,
    training: TrainingPlan,
    tensorboard: Option<TensorboardPlan>,
}

#[derive(Debug, Serialize)]
struct KueuePlan {
    cluster_queue: String,
    local_queue: String,
    flavor: String,
    priority_classes: Vec<PriorityClassPlan>,
}

#[derive(Debug, Serialize)]
struct PriorityClassPlan {
    name: String,
    value: i64,
    description: &'static str,
}

#[derive(Debug, Serialize)]
struct TrainingPlan {
    name: String,
    image: String,
    command: Vec<String>,
    args: Vec<String>,
    env: Vec<EnvVar>,
    max_restarts: u32,
}

#[derive(Debug, Serialize)]
struct EnvVar {
    name: String,
    value: String,
}

#[derive(Debug, Serialize)]
struct TensorboardPlan {
    name: String,
    image: String,
    command: Vec<String>,
}

impl TypedKind for MultisliceTraining {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "MultisliceTraining";
    const SUMMARY: &'static str =
        "TPU training with JobSet and Kueue across one or more slices, with its GKE cluster";

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        stanzas!(spec).exports(blueprint.name, &LOCATION)
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        Overlay::with_workload(
            blueprint,
            &plan.infra,
            "multislice/workload.yaml",
            &plan.workload,
        )
    }

    fn describe(plan: &Plan) -> String {
        let tpu = &plan.workload.tpu;
        format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology)
    }
}

/// `us-central2`, where TPU v4 lives; a zonal cluster in the slices' zone, like the
/// reference: TPU slices live in one zone anyway.
const LOCATION: Location<'static> = Location::zonal("us-central2", "b");
/// Environment variables derived from `spec.tpu`, which `spec.training.env` cannot override.
const DERIVED_ENV: &[&str] = &["NUM_SLICES", "ICI_PARALLELISM"];
/// JobSet restarts that still make sense for one training run.
const MAX_RESTARTS: u32 = 1_000;

fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
    let (site, mut gcp) = Site::open(planner, stanzas!(spec), &LOCATION);
    let tpu = accelerator::resolve_tpu(
        planner,
        &spec.tpu,
        TpuSupport {
            kind: MultisliceTraining::NAME,
            families: &[
                TpuFamily::V4,
                TpuFamily::V5e,
                TpuFamily::V5p,
                TpuFamily::V6e,
            ],
            multislice: true,
        },
    );

    let (namespace, kubernetes_service_account) = site.names(planner, "training");
    let training_name = spec.training.name.clone().unwrap_or_else(|| name.clone());
    let cluster_queue = spec
        .kueue
        .cluster_queue
        .clone()
        .unwrap_or_else(|| name.clone());
    let local_queue = spec
        .kueue
        .local_queue
        .clone()
        .unwrap_or_else(|| "tpu-training-jobs".into());
    for (field, value) in [
        ("spec.training.name", &training_name),
        ("spec.kueue.clusterQueue", &cluster_queue),
        ("spec.kueue.localQueue", &local_queue),
    ] {
        planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
    }
    let image = spec
        .training
        .image
        .clone()
        .unwrap_or_else(|| DEFAULT_IMAGE.into());
    planner.check_image("spec.training.image", &image);
    if let Some(restarts) = spec.training.max_restarts
        && restarts > MAX_RESTARTS
    {
        let d = planner.error(
            gcp::rule::MAX_RESTARTS,
            "spec.training.maxRestarts",
            format!("{restarts} restarts would keep failing slices busy for days"),
        );
        d.expected = Some(format!("at most {MAX_RESTARTS}"));
    }
    for variable in spec.training.env.keys() {
        planner.check_env_name("spec.training.env", variable);
        // These follow from `spec.tpu`; a different value would split the job wrongly.
        if DERIVED_ENV.contains(&variable.as_str()) {
            let diagnostic = planner.blueprint().key_error_at(
                gcp::rule::CONFLICT,
                "spec.training.env",
                variable,
                format!("`{variable}` is set from `spec.tpu`"),
            );
            let d = planner.push(diagnostic);
            d.fix = Some(format!("remove `{variable}`; change `spec.tpu` instead"));
        }
    }

    for service in SERVICES {
        gcp.api(service);
    }
    let accounts = Accounts::plan(
        &mut gcp,
        planner,
        (
            &spec.service_accounts.nodes,
            &spec.service_accounts.workload,
        ),
        ("GKE TPU training nodes", "TPU training workloads"),
    )
    .distinct(planner);
    let system_pool = CpuPoolDefaults {
        machine_type: "n1-standard-4",
        scale: Scale::Fixed { nodes: 3 },
        disk_size_gb: Some(200),
        ..SYSTEM_POOL
    };
    let cluster = site.cluster(
        &mut gcp,
        planner,
        Addons::default(),
        &accounts.nodes,
        Some(system_pool),
    )?;
    accounts.bind(
        &mut gcp,
        &cluster,
        (&namespace, &kubernetes_service_account),
        WORKLOAD_PROJECT_ROLES,
    );
    let bucket = gcp.bucket(planner, &spec.bucket, "spec.bucket", &site.bucket_name(""));
    for account in [&accounts.nodes, &accounts.workload] {
        for role in BUCKET_ROLES {
            gcp.bucket_role(&bucket, account, role);
        }
    }

    let tensorboard = spec.tensorboard.as_ref().map(|tensorboard| {
        let image = tensorboard
            .image
            .clone()
            .unwrap_or_else(|| DEFAULT_UPLOADER_IMAGE.into());
        planner.check_image("spec.tensorboard.image", &image);
        if !is_tensorboard_name(&tensorboard.resource_name) {
            let d = planner.error(
                gcp::rule::TENSORBOARD,
                "spec.tensorboard.resourceName",
                "invalid Vertex AI TensorBoard resource name",
            );
            d.found = Some(tensorboard.resource_name.clone());
            d.expected =
                Some("`projects/<project>/locations/<region>/tensorboards/<numeric id>`".into());
        }
        let log_dir = format!("{}/runs/{training_name}/tensorboard", bucket.url());
        let uploader = format!(
            "tb-gcp-uploader --tensorboard_resource_name={} --logdir={log_dir} --experiment_name={training_name}",
            tensorboard.resource_name
        );
        let command = if tensorboard.image.is_some() {
            vec!["sh".into(), "-c".into(), format!("exec {uploader}")]
        } else {
            vec![
                "sh".into(),
                "-c".into(),
                format!("pip install --no-cache-dir '{UPLOADER_PACKAGE}' && exec {uploader}"),
            ]
        };
        TensorboardPlan {
            name: format!("{training_name}-tensorboard"),
            image,
            command,
        }
    });
    let tpu = tpu?;
    if planner.has_errors() {
        return None;
    }

    gcp.tpu_pools(&cluster, &tpu, &accounts.nodes, &pool_labels(&name));

    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("NUM_SLICES".into(), tpu.slices.to_string());
    env.insert("ICI_PARALLELISM".into(), tpu.chips_per_slice.to_string());
    env.insert("RUN_NAME".into(), training_name.clone());
    env.insert(
        "BASE_OUTPUT_DIRECTORY".into(),
        format!("{}/runs", bucket.url()),
    );
    env.insert("DATASET_PATH".into(), format!("{}/datasets", bucket.url()));
    env.extend(spec.training.env.clone());
    let (command, args) = match (&spec.training.command, &spec.training.args) {
        (None, None) => (
            DEFAULT_COMMAND.iter().map(|s| (*s).to_string()).collect(),
            Vec::new(),
        ),
        (command, args) => (
            command.clone().unwrap_or_default(),
            args.clone().unwrap_or_default(),
        ),
    };
    let node_selector = tpu_node_selector(&tpu, &name);
    let priority_classes = if spec.kueue.priority_classes.unwrap_or(true) {
        PRIORITY_CLASSES
            .iter()
            .map(|&(class, value, description)| PriorityClassPlan {
                // Cluster-wide names: the blueprint name keeps two blueprints apart.
                name: format!("{name}-{class}"),
                value,
                description,
            })
            .collect()
    } else {
        Vec::new()
    };
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            kueue: KueuePlan {
                cluster_queue,
                local_queue,
                flavor: format!("{name}-{}", tpu.type_name),
                priority_classes,
            },
            training: TrainingPlan {
                name: training_name,
                image,
                command,
                args,
                env: env
                    .into_iter()
                    .map(|(name, value)| EnvVar { name, value })
                    .collect(),
                max_restarts: spec.training.max_restarts.unwrap_or(1),
            },
            tensorboard,
            workload_service_account: accounts.workload.email,
            node_selector,
            tpu,
            namespace,
            kubernetes_service_account,
            name,
        },
    })
}

/// `projects/<project>/locations/<region>/tensorboards/<id>`, the id being the number Vertex AI
/// assigned. Checked so the value is safe inside the uploader's shell command.
fn is_tensorboard_name(name: &str) -> bool {
    let parts: Vec<&str> = name.split('/').collect();
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    };
    matches!(
        parts.as_slice(),
        ["projects", project, "locations", location, "tensorboards", id]
            if word(project) && word(location) && !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())
    )
}

//! Planning a `MultisliceTraining` blueprint: the shared site recipe, the TPU slices, Kueue,
//! the JobSet and the TensorBoard uploader, checked.

use std::collections::BTreeMap;

use super::MultisliceTraining;
use super::TypedKind;
use super::spec::Spec;
use super::templates::{
    EnvVar, KueuePlan, Plan, PriorityClassPlan, TensorboardPlan, TrainingPlan, Workload,
};
use crate::accelerator::{self, CapacityType, Idle, TpuSupport};
use crate::catalog::TpuFamily;
use crate::gcp::{self, Addons, CpuPoolDefaults, Scale};
use crate::names::check_dns_label;
use crate::overlay::site::{
    Accounts, BUCKET_USER_ROLES, Location, SYSTEM_POOL, Site, accounts, pool_labels,
    tpu_node_selector,
};
use crate::overlay::stanzas;
use crate::plan::Planner;

/// Project roles of the Workload Identity service account: the reference's, without
/// project-wide object admin (bucket roles below cover the blueprint's data).
const WORKLOAD_PROJECT_ROLES: &[&str] = &["roles/aiplatform.user", "roles/logging.logWriter"];

/// APIs the kind needs beyond those its blocks enable.
const SERVICES: &[&str] = &[
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
];
/// Display names of the node and workload accounts.
const ACCOUNT_NAMES: (&str, &str) = ("GKE TPU training nodes", "TPU training workloads");

/// The reference's PriorityClasses (plain `scheduling.k8s.io`, cluster-wide).
const PRIORITY_CLASSES: &[(&str, i64, &str)] = &[
    ("veryhigh", 1000, "Very high"),
    ("high", 750, "High"),
    ("medium", 500, "Medium"),
    ("low", 250, "Low"),
    ("verylow", 100, "Very low"),
];

/// The reference's hello-world: every host reports the global device count, which proves
/// that all slices joined one JAX runtime. From Google's JAX stable-stack TPU image (JAX and
/// libtpu built in, as MaxText and XPK use it) rather than the reference's `pip install
/// jax[tpu]` into `python:3.11` at every start: nothing unpinned is fetched at run time.
const DEFAULT_IMAGE: &str = "us-docker.pkg.dev/cloud-tpu-images/jax-stable-stack/tpu:jax0.5.2-rev1";
const DEFAULT_COMMAND: &[&str] = &[
    "python",
    "-c",
    "import jax; print(\"Global device count:\", jax.device_count())\n",
];

/// The uploader runs from a pinned Python image with a pinned `google-cloud-aiplatform`,
/// whose `tb-gcp-uploader` is the reference's uploader (its own image has no tags to pin).
const DEFAULT_UPLOADER_IMAGE: &str = "python:3.11-slim";
const UPLOADER_PACKAGE: &str = "google-cloud-aiplatform[tensorboard]==1.165.1";

/// `us-central2`, where TPU v4 lives; a zonal cluster in the slices' zone, like the
/// reference: TPU slices live in one zone anyway.
pub(super) const LOCATION: Location<'static> = Location::zonal("us-central2", "b");
/// [`LOCATION`]'s zone, kept when the zone offers the blueprint's TPU type.
const DEFAULT_ZONE: &str = "us-central2-b";
/// Environment variables derived from `spec.tpu`, which `spec.training.env` cannot override.
const DERIVED_ENV: &[&str] = &["NUM_SLICES", "ICI_PARALLELISM"];
/// JobSet restarts that still make sense for one training run.
const MAX_RESTARTS: u32 = 1_000;
/// Restarts a long run gets per slice by default: any interruption of any slice (a host
/// error, a maintenance event, a node repair recreating the slice) restarts the whole JobSet,
/// so the budget grows with the slices. Enough for a few interruptions per slice over a run
/// of days; each restart resumes from the last checkpoint.
const RESTARTS_PER_SLICE: u32 = 4;
/// The same on Spot VMs, which Compute Engine preempts whenever it needs them back.
const RESTARTS_PER_SPOT_SLICE: u32 = 16;

pub(super) fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
    let name = planner.name().to_string();
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
            idle: Idle::Release,
            queued_provisioning: true,
        },
    );
    // Without a region, the slices go to a zone that offers their TPU type (the catalog's
    // zone table), not to v4's zone whatever the type.
    let zone = tpu.as_ref().map_or(DEFAULT_ZONE, |tpu| {
        crate::catalog::default_zone(tpu.accelerator, DEFAULT_ZONE)
    });
    let location = match zone.rsplit_once('-') {
        Some((region, _)) if zone != DEFAULT_ZONE => Location {
            region,
            zone: Some(zone),
            ..LOCATION
        },
        _ => LOCATION,
    };
    let (site, mut gcp) = Site::open(planner, stanzas!(spec), &location);

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

    let accounts = Accounts::plan(&mut gcp, planner, SERVICES, accounts!(spec), ACCOUNT_NAMES)
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
        for role in BUCKET_USER_ROLES {
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
                // Into the user site under /tmp: the root file system is read-only.
                format!(
                    "pip install --user --no-cache-dir --disable-pip-version-check '{UPLOADER_PACKAGE}' && exec \"$PYTHONUSERBASE\"/bin/{uploader}"
                ),
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

    accelerator::check_obtainable(planner, &tpu);
    // The nodes pull the training image; a private one from its repository only.
    gcp.image_reader(&image, &accounts.nodes);
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
    // Kueue copies the flavor's node labels into the admitted pods' selectors: spot slices
    // are also selected by GKE's spot label, so the flavor never admits onto other VMs.
    let mut flavor_labels = node_selector.clone();
    if tpu.capacity.type_ == CapacityType::Spot {
        flavor_labels.insert(SPOT_LABEL.into(), "true".into());
    }
    // A flavor's node labels cannot change (Kueue's webhook): its name carries the type, the
    // topology and a capacity other than on-demand, so another is another flavor, never a
    // refused update.
    let flavor = match tpu.capacity.type_ {
        CapacityType::OnDemand => format!("{name}-{}-{}", tpu.type_name, tpu.topology),
        other => format!(
            "{name}-{}-{}-{}",
            tpu.type_name,
            tpu.topology,
            capacity_suffix(other)
        ),
    };
    let queued = tpu
        .capacity
        .queued()
        .then(|| format!("{name}-queued-provisioning"));
    Some(Plan {
        infra: gcp.finish(),
        workload: Workload {
            kueue: KueuePlan {
                cluster_queue,
                local_queue,
                flavor,
                flavor_labels,
                queued,
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
                max_restarts: spec
                    .training
                    .max_restarts
                    .unwrap_or_else(|| default_max_restarts(&tpu)),
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

/// The JobSet's `failurePolicy.maxRestarts` when the blueprint sets none: a budget per slice.
fn default_max_restarts(tpu: &accelerator::TpuPlan) -> u32 {
    let per_slice = if tpu.capacity.type_ == CapacityType::Spot {
        RESTARTS_PER_SPOT_SLICE
    } else {
        RESTARTS_PER_SLICE
    };
    per_slice.saturating_mul(tpu.slices).min(MAX_RESTARTS)
}

/// GKE's label on Spot VM nodes.
const SPOT_LABEL: &str = "cloud.google.com/gke-spot";

/// The part of a flavor name that says where its capacity comes from.
fn capacity_suffix(capacity: CapacityType) -> &'static str {
    match capacity {
        CapacityType::OnDemand => "on-demand",
        CapacityType::Spot => "spot",
        CapacityType::FlexStart => "flex-start",
        CapacityType::Reservation => "reserved",
    }
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

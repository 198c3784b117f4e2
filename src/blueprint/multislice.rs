//! `MultisliceTraining`: TPU training with JobSet and Kueue on GKE, and the GCP infrastructure
//! it runs on (network, cluster, one node pool per slice, service accounts, IAM, bucket).
//!
//! Reference: the "Running TPU training workloads on GKE" guide (v4-32, two slices). The spec
//! is read strictly, every derived number (hosts, chips per host, quota) comes from the
//! accelerator catalog, and names that GCP limits (service account ids, bucket names) are
//! checked here so mistakes surface before anything reaches a cluster.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use super::{Blueprint, Compiled, Kind};
use crate::catalog::{self, Placement, Topology, TpuFamily, TpuSlice, TpuTypeError};
use crate::diagnostic::Diagnostic;
use crate::overlay::{self, Overlay};

/// The `MultisliceTraining` kind.
pub struct MultisliceTraining;

/// `spec` as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Spec {
    project: String,
    #[serde(default = "default_region")]
    region: String,
    zone: Option<String>,
    #[serde(default)]
    config_connector: ConfigConnector,
    #[serde(default)]
    network: Network,
    #[serde(default)]
    cluster: Cluster,
    #[serde(default)]
    service_accounts: ServiceAccounts,
    namespace: Option<String>,
    kubernetes_service_account: Option<String>,
    tpu: Tpu,
    #[serde(default)]
    kueue: Kueue,
    #[serde(default)]
    bucket: Bucket,
    #[serde(default)]
    training: Training,
    tensorboard: Option<Tensorboard>,
}

fn default_region() -> String {
    "us-central2".into()
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ConfigConnector {
    namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Network {
    name: Option<String>,
    subnetwork: Option<String>,
    #[serde(default)]
    existing: bool,
    nodes_cidr: Option<String>,
    pods_cidr: Option<String>,
    services_cidr: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Cluster {
    name: Option<String>,
    #[serde(default)]
    existing: bool,
    location: Option<String>,
    release_channel: Option<ReleaseChannel>,
    #[serde(default)]
    cpu_pool: CpuPool,
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(rename_all = "UPPERCASE")]
enum ReleaseChannel {
    Rapid,
    Regular,
    Stable,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CpuPool {
    machine_type: Option<String>,
    node_count: Option<u32>,
    disk_size_gb: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    #[serde(default)]
    nodes: ServiceAccount,
    #[serde(default)]
    workload: ServiceAccount,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccount {
    name: Option<String>,
    #[serde(default)]
    existing: bool,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Tpu {
    #[serde(rename = "type")]
    type_: String,
    topology: Option<String>,
    slices: Option<u32>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Kueue {
    cluster_queue: Option<String>,
    local_queue: Option<String>,
    priority_classes: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Bucket {
    name: Option<String>,
    #[serde(default)]
    existing: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Training {
    name: Option<String>,
    image: Option<String>,
    command: Option<Vec<String>>,
    args: Option<Vec<String>>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    max_restarts: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Tensorboard {
    resource_name: String,
    image: Option<String>,
}

/// Roles of the node service account: the reference's four, plus GKE's minimal node role
/// (logging and monitoring agents) that every custom node service account needs.
const NODE_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/storage.objectAdmin",
    "roles/logging.logWriter",
    "roles/aiplatform.user",
    "roles/artifactregistry.reader",
];

/// Roles of the Workload Identity service account the training pods run as.
const WORKLOAD_ROLES: &[&str] = &[
    "roles/storage.objectAdmin",
    "roles/logging.logWriter",
    "roles/aiplatform.user",
    "roles/artifactregistry.reader",
];

/// APIs the infrastructure needs.
const SERVICES: &[&str] = &[
    "aiplatform.googleapis.com",
    "artifactregistry.googleapis.com",
    "compute.googleapis.com",
    "container.googleapis.com",
    "iam.googleapis.com",
    "logging.googleapis.com",
    "monitoring.googleapis.com",
    "storage.googleapis.com",
    "tpu.googleapis.com",
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
const DEFAULT_TENSORBOARD_IMAGE: &str = "us-docker.pkg.dev/vertex-ai/tensorboard/uploader";

impl Kind for MultisliceTraining {
    fn name(&self) -> &'static str {
        "MultisliceTraining"
    }

    fn summary(&self) -> &'static str {
        "TPU training with JobSet and Kueue across one or more slices, with its GKE cluster"
    }

    fn compile(&self, blueprint: &Blueprint<'_>) -> Result<Compiled, Vec<Diagnostic>> {
        let spec: Spec = blueprint.read_spec().map_err(|d| vec![d])?;
        let context = plan(blueprint, &spec)?;
        let render = |template: &str| {
            overlay::render(template, &context).map_err(|error| {
                vec![
                    Diagnostic::error(
                        "template",
                        format!("template `{template}` failed: {error:#}"),
                    )
                    .at(blueprint.file, blueprint.node.span),
                ]
            })
        };
        let mut files = BTreeMap::new();
        for file in [
            "kustomization.yaml",
            "config-connector.yaml",
            "workload.yaml",
        ] {
            files.insert(file.to_string(), render(&format!("multislice/{file}"))?);
        }
        let tpu = &context.tpu;
        Ok(Compiled {
            overlay: Overlay { files },
            warnings: Vec::new(),
            description: format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology),
        })
    }
}

/// Everything the templates need, derived and checked.
#[derive(Debug, Serialize)]
struct Context {
    file: String,
    name: String,
    project: String,
    region: String,
    zone: String,
    kcc_namespace: String,
    services: Vec<ServiceContext>,
    network: NetworkContext,
    cluster: ClusterContext,
    node_service_account: AccountContext,
    workload_service_account: AccountContext,
    service_accounts_to_create: Vec<AccountContext>,
    project_members: Vec<MemberContext>,
    workload_identity_binding: MemberContext,
    bucket: BucketContext,
    bucket_members: Vec<MemberContext>,
    namespace: String,
    kubernetes_service_account: String,
    tpu: TpuContext,
    kueue: KueueContext,
    training: TrainingContext,
    tensorboard: Option<TensorboardContext>,
}

#[derive(Debug, Serialize)]
struct ServiceContext {
    name: String,
    object_name: String,
}

#[derive(Debug, Serialize)]
struct NetworkContext {
    create: bool,
    name: String,
    subnetwork: String,
    nodes_cidr: String,
    pods_cidr: String,
    services_cidr: String,
    #[serde(rename = "ref")]
    reference: Json,
    subnetwork_ref: Json,
}

#[derive(Debug, Serialize)]
struct ClusterContext {
    create: bool,
    name: String,
    location: String,
    release_channel: ReleaseChannel,
    workload_pool: String,
    #[serde(rename = "ref")]
    reference: Json,
    cpu_pool: CpuPoolContext,
}

#[derive(Debug, Serialize)]
struct CpuPoolContext {
    name: String,
    object_name: String,
    machine_type: String,
    node_count: u32,
    disk_size_gb: u32,
}

#[derive(Debug, Clone, Serialize)]
struct AccountContext {
    id: String,
    email: String,
    display_name: String,
    #[serde(rename = "ref")]
    reference: Json,
}

#[derive(Debug, Serialize)]
struct MemberContext {
    object_name: String,
    member: String,
    role: String,
    resource_ref: Json,
}

#[derive(Debug, Serialize)]
struct BucketContext {
    create: bool,
    name: String,
    location: String,
    #[serde(rename = "ref")]
    reference: Json,
}

#[derive(Debug, Serialize)]
struct TpuContext {
    type_name: String,
    accelerator: &'static str,
    topology: String,
    machine_type: &'static str,
    hosts: u32,
    chips_per_host: u32,
    chips_per_slice: u32,
    slices: u32,
    total_chips: u32,
    compact_placement: bool,
    pools: Vec<PoolContext>,
}

#[derive(Debug, Serialize)]
struct PoolContext {
    name: String,
    object_name: String,
    labels: Json,
}

#[derive(Debug, Serialize)]
struct KueueContext {
    cluster_queue: String,
    local_queue: String,
    tpu_flavor: String,
    cpu_flavor: String,
    cpu_quota: &'static str,
    memory_quota: &'static str,
    priority_classes: Vec<PriorityClassContext>,
}

#[derive(Debug, Serialize)]
struct PriorityClassContext {
    name: &'static str,
    value: i64,
    description: &'static str,
}

#[derive(Debug, Serialize)]
struct TrainingContext {
    name: String,
    image: String,
    command: Vec<String>,
    args: Vec<String>,
    env: Vec<EnvContext>,
    max_restarts: u32,
}

#[derive(Debug, Serialize)]
struct EnvContext {
    name: String,
    value: String,
}

#[derive(Debug, Serialize)]
struct TensorboardContext {
    resource_name: String,
    image: String,
    log_dir: String,
}

/// Collects findings while deriving the plan, so one run reports every problem.
struct Checker<'a> {
    blueprint: &'a Blueprint<'a>,
    diagnostics: Vec<Diagnostic>,
}

impl Checker<'_> {
    fn error(&mut self, rule: &'static str, field: &str, message: String) -> &mut Diagnostic {
        let diagnostic = self.blueprint.error_at(rule, field, message);
        self.diagnostics.push(diagnostic);
        self.diagnostics
            .last_mut()
            .unwrap_or_else(|| unreachable!("just pushed"))
    }

    /// Reports `value` as an invalid name for `field` when `check` rejects it.
    fn name(
        &mut self,
        rule: &'static str,
        field: &str,
        value: &str,
        check: impl Fn(&str) -> Result<(), String>,
    ) {
        if let Err(reason) = check(value) {
            let d = self.error(rule, field, format!("invalid name `{value}`: {reason}"));
            d.found = Some(value.to_string());
            d.fix = Some(format!("set `{field}` to a valid name"));
        }
    }
}

fn plan(blueprint: &Blueprint<'_>, spec: &Spec) -> Result<Context, Vec<Diagnostic>> {
    let mut check = Checker {
        blueprint,
        diagnostics: Vec::new(),
    };
    let name = blueprint.name.to_string();
    let project = spec.project.clone();
    check.name("gcp-project-id", "spec.project", &project, check_project_id);

    let region = spec.region.clone();
    let zone = spec.zone.clone().unwrap_or_else(|| format!("{region}-b"));
    if !zone.starts_with(&format!("{region}-")) {
        let d = check.error(
            "gcp-zone-region",
            "spec.zone",
            format!("zone `{zone}` is not in region `{region}`"),
        );
        d.found = Some(zone.clone());
        d.expected = Some(format!("a zone of `{region}`, e.g. `{region}-b`"));
    }

    let slice = resolve_tpu(&mut check, &spec.tpu);
    let slices = spec.tpu.slices.unwrap_or(1);
    if slices == 0 {
        check.error(
            "tpu-slices",
            "spec.tpu.slices",
            "`slices` must be at least 1".into(),
        );
    }
    if let Some(slice) = &slice
        && slices > 1
        && !slice.is_multi_host()
    {
        let d = check.error(
            "tpu-multislice-single-host",
            "spec.tpu.slices",
            format!(
                "multislice needs multi-host slices, but `{}` is a single host",
                slice.name
            ),
        );
        d.found = Some(format!(
            "{slices} slices of {} ({})",
            slice.name, slice.topology
        ));
        d.expected =
            Some("a multi-host TPU type (more than one VM per slice), or `slices: 1`".into());
        d.fix = Some(
            "use a larger type such as `v4-16`, `v5litepod-16` or `v6e-16`, or set `slices: 1`"
                .into(),
        );
    }

    let kcc_namespace = spec
        .config_connector
        .namespace
        .clone()
        .unwrap_or_else(|| project.clone());
    check.name(
        "kubernetes-name",
        "spec.configConnector.namespace",
        &kcc_namespace,
        super::check_dns_label,
    );
    let namespace = spec.namespace.clone().unwrap_or_else(|| name.clone());
    check.name(
        "kubernetes-name",
        "spec.namespace",
        &namespace,
        super::check_dns_label,
    );
    let kubernetes_service_account = spec
        .kubernetes_service_account
        .clone()
        .unwrap_or_else(|| "training".into());
    check.name(
        "kubernetes-name",
        "spec.kubernetesServiceAccount",
        &kubernetes_service_account,
        super::check_dns_label,
    );

    // Network.
    let network_name = spec
        .network
        .name
        .clone()
        .unwrap_or_else(|| format!("{name}-network"));
    let subnetwork = spec
        .network
        .subnetwork
        .clone()
        .unwrap_or_else(|| format!("{name}-subnet"));
    check.name(
        "gcp-resource-name",
        "spec.network.name",
        &network_name,
        check_gcp_name,
    );
    check.name(
        "gcp-resource-name",
        "spec.network.subnetwork",
        &subnetwork,
        check_gcp_name,
    );
    let mut cidr = |field: &str, value: &Option<String>, default: &str| {
        let value = value.clone().unwrap_or_else(|| default.to_string());
        if let Err(reason) = check_cidr(&value) {
            let d = check.error(
                "network-cidr",
                field,
                format!("invalid CIDR range `{value}`: {reason}"),
            );
            d.expected = Some("an IPv4 range such as `10.129.0.0/20`".into());
        }
        value
    };
    let nodes_cidr = cidr(
        "spec.network.nodesCidr",
        &spec.network.nodes_cidr,
        "10.129.0.0/20",
    );
    let pods_cidr = cidr(
        "spec.network.podsCidr",
        &spec.network.pods_cidr,
        "192.168.64.0/18",
    );
    let services_cidr = cidr(
        "spec.network.servicesCidr",
        &spec.network.services_cidr,
        "192.168.128.0/20",
    );
    let network_create = !spec.network.existing;
    let network = NetworkContext {
        create: network_create,
        reference: reference(
            network_create,
            &network_name,
            &format!("projects/{project}/global/networks/{network_name}"),
        ),
        subnetwork_ref: reference(
            network_create,
            &subnetwork,
            &format!("projects/{project}/regions/{region}/subnetworks/{subnetwork}"),
        ),
        name: network_name,
        subnetwork,
        nodes_cidr,
        pods_cidr,
        services_cidr,
    };

    // Cluster. Zonal by default, like the reference: TPU slices live in one zone anyway.
    let cluster_name = spec.cluster.name.clone().unwrap_or_else(|| name.clone());
    check.name(
        "gke-cluster-name",
        "spec.cluster.name",
        &cluster_name,
        |n| check_limited_name(n, 40),
    );
    let cluster_location = spec
        .cluster
        .location
        .clone()
        .unwrap_or_else(|| zone.clone());
    let cluster_create = !spec.cluster.existing;
    let cpu_pool = CpuPoolContext {
        name: "cpu-pool".into(),
        object_name: format!("{cluster_name}-cpu-pool"),
        machine_type: spec
            .cluster
            .cpu_pool
            .machine_type
            .clone()
            .unwrap_or_else(|| "n1-standard-4".into()),
        node_count: spec.cluster.cpu_pool.node_count.unwrap_or(3),
        disk_size_gb: spec.cluster.cpu_pool.disk_size_gb.unwrap_or(200),
    };
    let cluster = ClusterContext {
        create: cluster_create,
        location: cluster_location.clone(),
        release_channel: spec
            .cluster
            .release_channel
            .unwrap_or(ReleaseChannel::Regular),
        workload_pool: format!("{project}.svc.id.goog"),
        reference: reference(
            cluster_create,
            &cluster_name,
            &format!("projects/{project}/locations/{cluster_location}/clusters/{cluster_name}"),
        ),
        name: cluster_name.clone(),
        cpu_pool,
    };

    // Service accounts: ids are 6–30 characters, so defaults shorten the blueprint name.
    let mut account = |field: &str, spec: &ServiceAccount, suffix: &str, display: &str| {
        let id = spec
            .name
            .clone()
            .unwrap_or_else(|| shortened(&name, suffix, 30));
        let id = id.split('@').next().unwrap_or(&id).to_string();
        check.name(
            "gcp-service-account-id",
            field,
            &id,
            check_service_account_id,
        );
        let email = format!("{id}@{project}.iam.gserviceaccount.com");
        AccountContext {
            reference: if spec.existing {
                json!({ "external": email })
            } else {
                json!({ "name": id })
            },
            display_name: format!("{display} ({name})"),
            id,
            email,
        }
    };
    let node_service_account = account(
        "spec.serviceAccounts.nodes.name",
        &spec.service_accounts.nodes,
        "-node",
        "GKE TPU training nodes",
    );
    let workload_service_account = account(
        "spec.serviceAccounts.workload.name",
        &spec.service_accounts.workload,
        "-wi",
        "TPU training workloads",
    );
    let mut service_accounts_to_create = Vec::new();
    if !spec.service_accounts.nodes.existing {
        service_accounts_to_create.push(node_service_account.clone());
    }
    if !spec.service_accounts.workload.existing {
        service_accounts_to_create.push(workload_service_account.clone());
    }
    if node_service_account.id == workload_service_account.id {
        check.error(
            "gcp-service-account-id",
            "spec.serviceAccounts.workload.name",
            "the node and workload service accounts must differ".into(),
        );
    }
    let mut project_members = Vec::new();
    for (account, roles, who) in [
        (&node_service_account, NODE_ROLES, "node"),
        (&workload_service_account, WORKLOAD_ROLES, "wi"),
    ] {
        for role in roles {
            project_members.push(MemberContext {
                object_name: format!("{name}-{who}-{}", role_slug(role)),
                member: format!("serviceAccount:{}", account.email),
                role: (*role).to_string(),
                resource_ref: Json::Null,
            });
        }
    }
    let workload_identity_binding = MemberContext {
        object_name: format!("{name}-wi-workload-identity-user"),
        member: format!(
            "serviceAccount:{project}.svc.id.goog[{namespace}/{kubernetes_service_account}]"
        ),
        role: "roles/iam.workloadIdentityUser".into(),
        resource_ref: if spec.service_accounts.workload.existing {
            json!({ "kind": "IAMServiceAccount", "external": format!("projects/{project}/serviceAccounts/{}", workload_service_account.email) })
        } else {
            json!({ "kind": "IAMServiceAccount", "name": workload_service_account.id })
        },
    };

    // Bucket for datasets, checkpoints and logs; names are global, so the project id leads.
    let bucket_name = spec
        .bucket
        .name
        .clone()
        .unwrap_or_else(|| format!("{project}-{name}"));
    check.name(
        "gcs-bucket-name",
        "spec.bucket.name",
        &bucket_name,
        check_bucket_name,
    );
    let bucket_create = !spec.bucket.existing;
    let bucket = BucketContext {
        create: bucket_create,
        location: region.to_uppercase(),
        reference: if bucket_create {
            json!({ "apiVersion": "storage.cnrm.cloud.google.com/v1beta1", "kind": "StorageBucket", "name": bucket_name })
        } else {
            json!({ "apiVersion": "storage.cnrm.cloud.google.com/v1beta1", "kind": "StorageBucket", "external": bucket_name })
        },
        name: bucket_name.clone(),
    };
    let bucket_members = [
        (&node_service_account, "node"),
        (&workload_service_account, "wi"),
    ]
    .into_iter()
    .map(|(account, who)| MemberContext {
        object_name: format!("{name}-{who}-bucket-reader"),
        member: format!("serviceAccount:{}", account.email),
        role: "roles/storage.legacyBucketReader".into(),
        resource_ref: Json::Null,
    })
    .collect();

    // Kueue: cluster-scoped names carry the blueprint name so blueprints can share a cluster.
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
    check.name(
        "kubernetes-name",
        "spec.kueue.clusterQueue",
        &cluster_queue,
        super::check_dns_label,
    );
    check.name(
        "kubernetes-name",
        "spec.kueue.localQueue",
        &local_queue,
        super::check_dns_label,
    );

    let training_name = spec.training.name.clone().unwrap_or_else(|| name.clone());
    check.name(
        "kubernetes-name",
        "spec.training.name",
        &training_name,
        super::check_dns_label,
    );
    let bucket_url = format!("gs://{bucket_name}");

    let Some(slice) = slice.filter(|_| check.diagnostics.is_empty()) else {
        return Err(check.diagnostics);
    };

    let mut env: BTreeMap<String, String> = BTreeMap::new();
    env.insert("NUM_SLICES".into(), slices.to_string());
    env.insert("ICI_PARALLELISM".into(), slice.chips().to_string());
    env.insert("RUN_NAME".into(), training_name.clone());
    env.insert("BASE_OUTPUT_DIRECTORY".into(), format!("{bucket_url}/runs"));
    env.insert("DATASET_PATH".into(), format!("{bucket_url}/datasets"));
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

    let pools = (0..slices)
        .map(|index| {
            let pool_name = format!("tpu-slice-{index}");
            PoolContext {
                object_name: format!("{cluster_name}-{pool_name}"),
                // The reference's multislice group labels, so tooling that reads them still works.
                labels: json!({
                    "MultisliceGroup": name,
                    "MultisliceGroupSize": slices.to_string(),
                }),
                name: pool_name,
            }
        })
        .collect();
    let tpu = TpuContext {
        type_name: slice.name.clone(),
        accelerator: slice.accelerator(),
        topology: slice.topology.to_string(),
        machine_type: slice.machine_type(),
        hosts: slice.hosts(),
        chips_per_host: slice.chips_per_host(),
        chips_per_slice: slice.chips(),
        slices,
        total_chips: slice.chips() * slices,
        compact_placement: slice.placement() == Placement::Compact,
        pools,
    };

    Ok(Context {
        file: blueprint.file.to_string(),
        services: SERVICES
            .iter()
            .map(|service| ServiceContext {
                name: (*service).to_string(),
                object_name: format!("{name}-{}", service.split('.').next().unwrap_or(service)),
            })
            .collect(),
        kcc_namespace,
        network,
        cluster,
        node_service_account,
        workload_service_account,
        service_accounts_to_create,
        project_members,
        workload_identity_binding,
        bucket,
        bucket_members,
        kueue: KueueContext {
            tpu_flavor: format!("{name}-{}", slice.name),
            cpu_flavor: format!("{name}-cpu"),
            cluster_queue,
            local_queue,
            // Room for the TensorBoard uploader; TPU pods request only chips.
            cpu_quota: "1",
            memory_quota: "2Gi",
            priority_classes: if spec.kueue.priority_classes.unwrap_or(true) {
                PRIORITY_CLASSES
                    .iter()
                    .map(|&(name, value, description)| PriorityClassContext {
                        name,
                        value,
                        description,
                    })
                    .collect()
            } else {
                Vec::new()
            },
        },
        tensorboard: spec.tensorboard.as_ref().map(|t| TensorboardContext {
            resource_name: t.resource_name.clone(),
            image: t
                .image
                .clone()
                .unwrap_or_else(|| DEFAULT_TENSORBOARD_IMAGE.into()),
            log_dir: format!("{bucket_url}/runs/{training_name}/tensorboard"),
        }),
        training: TrainingContext {
            name: training_name,
            image: spec
                .training
                .image
                .clone()
                .unwrap_or_else(|| DEFAULT_IMAGE.into()),
            command,
            args,
            env: env
                .into_iter()
                .map(|(name, value)| EnvContext { name, value })
                .collect(),
            max_restarts: spec.training.max_restarts.unwrap_or(1),
        },
        tpu,
        namespace,
        kubernetes_service_account,
        name,
        project,
        region,
        zone,
    })
}

/// Resolves `spec.tpu` through the catalog, reporting type and topology problems.
fn resolve_tpu(check: &mut Checker<'_>, tpu: &Tpu) -> Option<TpuSlice> {
    let topology = match tpu.topology.as_deref().map(str::parse::<Topology>) {
        None => None,
        Some(Ok(topology)) => Some(topology),
        Some(Err(error)) => {
            let d = check.error(
                "tpu-topology-syntax",
                "spec.tpu.topology",
                error.to_string(),
            );
            d.found = tpu.topology.clone();
            d.expected = Some("`AxB` (v5e, v6e) or `AxBxC` (v4, v5p)".into());
            return None;
        }
    };
    match catalog::tpu_slice(&tpu.type_, topology.as_ref()) {
        Ok(slice) if slice.family == TpuFamily::Tpu7x => {
            let d = check.error(
                "tpu-family-unsupported",
                "spec.tpu.type",
                format!("`MultisliceTraining` does not support {} yet", slice.family),
            );
            d.expected = Some("a TPU v4, v5e, v5p or v6e type".into());
            None
        }
        Ok(slice) => Some(slice),
        Err(TpuTypeError::Unknown { name, suggestion }) => {
            let d = check.error(
                "tpu-type-unknown",
                "spec.tpu.type",
                format!("unknown TPU type: `{name}`"),
            );
            d.found = Some(name);
            d.expected =
                Some("a catalog name such as `v4-32`, `v5litepod-16`, `v5p-64` or `v6e-16`".into());
            d.fix = suggestion.map(|s| format!("did you mean `{s}`?"));
            None
        }
        Err(TpuTypeError::Topology(error)) => {
            let d = check.error("tpu-topology-shape", "spec.tpu.topology", error.to_string());
            d.found = tpu.topology.clone();
            None
        }
        Err(TpuTypeError::Mismatch {
            name,
            topology,
            expected,
        }) => {
            let d = check.error(
                "tpu-topology-mismatch",
                "spec.tpu.topology",
                format!("topology `{topology}` does not agree with TPU type `{name}`"),
            );
            let expected: Vec<String> = expected.iter().map(|t| format!("`{t}`")).collect();
            d.found = Some(topology);
            d.expected = Some(expected.join(" or "));
            d.fix = Some(format!(
                "set `topology: {}` or remove `topology`",
                expected.first().map_or("", |t| t.trim_matches('`'))
            ));
            None
        }
    }
}

/// A Config Connector reference: by object name when we create it, else by external id.
fn reference(create: bool, name: &str, external: &str) -> Json {
    if create {
        json!({ "name": name })
    } else {
        json!({ "external": external })
    }
}

/// `base` + `suffix`, cutting `base` so the result fits `max` characters.
fn shortened(base: &str, suffix: &str, max: usize) -> String {
    let keep = max.saturating_sub(suffix.len()).min(base.len());
    format!("{}{suffix}", base[..keep].trim_end_matches('-'))
}

/// `roles/storage.objectAdmin` → `storage-objectadmin`.
fn role_slug(role: &str) -> String {
    role.trim_start_matches("roles/")
        .replace('.', "-")
        .to_lowercase()
}

fn check_project_id(id: &str) -> Result<(), String> {
    let valid_chars = id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !(6..=30).contains(&id.len()) || !valid_chars {
        return Err("project ids have 6 to 30 lowercase letters, digits or `-`".into());
    }
    if !id.starts_with(|c: char| c.is_ascii_lowercase()) || id.ends_with('-') {
        return Err("project ids start with a letter and do not end with `-`".into());
    }
    Ok(())
}

fn check_service_account_id(id: &str) -> Result<(), String> {
    if !(6..=30).contains(&id.len()) {
        return Err(format!(
            "service account ids have 6 to 30 characters, this has {}",
            id.len()
        ));
    }
    check_gcp_name(id)
}

/// GCP resource names (RFC 1035): lowercase letter first, then letters, digits or `-`.
fn check_gcp_name(name: &str) -> Result<(), String> {
    check_limited_name(name, 63)
}

fn check_limited_name(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!("must have 1 to {max} characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("must start with a lowercase letter".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        || name.ends_with('-')
    {
        return Err("only lowercase letters, digits and `-`, not ending with `-`".into());
    }
    Ok(())
}

fn check_bucket_name(name: &str) -> Result<(), String> {
    if !(3..=63).contains(&name.len()) {
        return Err("bucket names have 3 to 63 characters".into());
    }
    let valid = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    let edges = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !valid || !name.starts_with(edges) || !name.ends_with(edges) {
        return Err("lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit".into());
    }
    if name.starts_with("goog") {
        return Err("bucket names cannot start with `goog`".into());
    }
    Ok(())
}

fn check_cidr(range: &str) -> Result<(), String> {
    let (address, prefix) = range.split_once('/').ok_or("missing `/prefix`")?;
    address
        .parse::<std::net::Ipv4Addr>()
        .map_err(|_| format!("`{address}` is not an IPv4 address"))?;
    match prefix.parse::<u8>() {
        Ok(p) if p <= 29 => Ok(()),
        _ => Err(format!("`/{prefix}` is not a prefix length up to /29")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortens_ids_to_fit() {
        assert_eq!(
            shortened("multislice-v4-32-training", "-node", 30),
            "multislice-v4-32-training-node"
        );
        assert_eq!(
            shortened("a-very-long-blueprint-name-for-tpus", "-wi", 30),
            "a-very-long-blueprint-name-wi"
        );
        assert!(shortened("a-very-long-blueprint-name-for-tpus", "-wi", 30).len() <= 30);
        assert_eq!(
            shortened("abcdefghijklmnopqrstuvwxyz-abc", "-node", 30),
            "abcdefghijklmnopqrstuvwxy-node"
        );
    }

    #[test]
    fn checks_gcp_names() {
        assert!(check_project_id("my-project").is_ok());
        assert!(check_project_id("My-Project").is_err());
        assert!(check_project_id("proj").is_err());
        assert!(check_bucket_name("my-project-data").is_ok());
        assert!(check_bucket_name("google-data").is_err());
        assert!(check_cidr("10.129.0.0/20").is_ok());
        assert!(check_cidr("10.129.0.0").is_err());
        assert!(check_cidr("10.300.0.0/20").is_err());
        assert_eq!(
            role_slug("roles/storage.objectAdmin"),
            "storage-objectadmin"
        );
    }
}

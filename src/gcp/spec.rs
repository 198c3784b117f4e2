//! The GCP parts of a blueprint `spec`, as people write them.
//!
//! Every kind embeds the parts it needs as named fields (`network:`, `cluster:`, `bucket:` …),
//! so the same YAML means the same thing in every kind. Each part has an `existing: true` form
//! that names a resource made elsewhere instead of creating it. Read strictly through
//! [`crate::blueprint::de`]: unknown fields and wrong types are errors.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `spec.configConnector`: where the Config Connector objects go.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigConnectorSpec {
    /// Namespace of the Config Connector objects on the host cluster (default: the project id).
    pub namespace: Option<String>,
}

/// `spec.network`: the VPC and subnet the cluster uses.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NetworkSpec {
    /// VPC name (default: `<blueprint>-network`).
    pub name: Option<String>,
    /// Subnet name (default: `<blueprint>-subnet`).
    pub subnetwork: Option<String>,
    /// Use a VPC and subnet that already exist (with secondary ranges `pods` and `services`).
    #[serde(default)]
    pub existing: bool,
    /// Primary range of the subnet, for nodes (default `10.129.0.0/20`).
    pub nodes_cidr: Option<String>,
    /// Secondary range `pods` (default `192.168.64.0/18`).
    pub pods_cidr: Option<String>,
    /// Secondary range `services` (default `192.168.128.0/20`).
    pub services_cidr: Option<String>,
    /// Range of the region's proxy-only subnet, created in a new VPC when a workload needs a
    /// regional internal Application Load Balancer (an internal Gateway API ingress; default
    /// `10.129.16.0/23`); unused otherwise.
    pub proxy_only_cidr: Option<String>,
}

/// GKE release channel.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum ReleaseChannel {
    /// Newest versions first.
    Rapid,
    /// The default.
    Regular,
    /// Most tested.
    Stable,
}

/// `spec.cluster`: the GKE cluster the blueprint runs on.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterSpec {
    /// Cluster name (default: the blueprint name).
    pub name: Option<String>,
    /// Use a cluster that already exists (Workload Identity enabled).
    #[serde(default)]
    pub existing: bool,
    /// Run on the cluster of another blueprint of this repository (by `metadata.name`).
    pub blueprint: Option<String>,
    /// Zone (zonal cluster) or region (regional cluster); the kind chooses the default.
    pub location: Option<String>,
    /// Release channel (default `REGULAR`).
    pub release_channel: Option<ReleaseChannel>,
    /// The cluster's CPU node pool for system and auxiliary pods.
    #[serde(default)]
    pub cpu_pool: NodePoolSpec,
    /// Networks allowed to reach the control plane's IP endpoint, besides the VPC (default:
    /// none; people and tools reach it through its DNS endpoint, authorised by IAM). An empty
    /// list is refused: leave the field out instead.
    pub authorized_networks: Option<Vec<AuthorizedNetworkSpec>>,
    /// When GKE may upgrade the cluster and its nodes (default: Saturdays and Sundays, 01:00
    /// to 09:00 UTC), and when it must not.
    #[serde(default)]
    pub maintenance: MaintenanceSpec,
}

/// A network allowed to reach the control plane's IP endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AuthorizedNetworkSpec {
    /// IPv4 range, e.g. `203.0.113.0/24`.
    pub cidr: String,
    /// What the range is (shown in the console).
    pub name: Option<String>,
}

/// `spec.cluster.maintenance`: GKE's maintenance policy. Timestamps are RFC 3339 in UTC,
/// written `YYYY-MM-DDTHH:MM:SSZ`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceSpec {
    /// The recurring window upgrades run in (default: Saturdays and Sundays, 01:00 to 09:00
    /// UTC).
    pub window: Option<MaintenanceWindowSpec>,
    /// Periods without upgrades, e.g. a long training run: an upgrade recreates a whole TPU
    /// slice.
    #[serde(default)]
    pub exclusions: Vec<MaintenanceExclusionSpec>,
}

/// A recurring maintenance window: the first occurrence, and how it repeats.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceWindowSpec {
    /// Start of the first window, e.g. `2025-01-04T01:00:00Z`.
    pub start: String,
    /// End of the first window (after `start`, the same day or the next).
    pub end: String,
    /// RFC 5545 recurrence, e.g. `FREQ=WEEKLY;BYDAY=SA,SU` or `FREQ=DAILY`.
    pub recurrence: String,
}

/// A period in which GKE does not upgrade the cluster.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MaintenanceExclusionSpec {
    /// Name of the exclusion (unique in the cluster).
    pub name: String,
    /// Start, e.g. `2026-12-01T00:00:00Z`.
    pub start: String,
    /// End, after `start`.
    pub end: String,
    /// What is held back (default `NO_MINOR_OR_NODE_UPGRADES`).
    pub scope: Option<ExclusionScope>,
}

/// What a maintenance exclusion holds back.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ExclusionScope {
    /// Every upgrade, patches of the control plane included; at most 30 days.
    NoUpgrades,
    /// Minor upgrades of the control plane and nodes; nodes still get patches.
    NoMinorUpgrades,
    /// Minor upgrades and every node upgrade: nodes (and so TPU slices) are left alone.
    NoMinorOrNodeUpgrades,
}

/// A CPU node pool: fixed size, or autoscaling.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NodePoolSpec {
    /// Compute Engine machine type.
    pub machine_type: Option<String>,
    /// Fixed number of nodes per zone (mutually exclusive with `autoscaling`).
    pub node_count: Option<u32>,
    /// Autoscaling bounds per zone.
    pub autoscaling: Option<AutoscalingSpec>,
    /// Boot disk size in GB.
    pub disk_size_gb: Option<u32>,
    /// Use Spot VMs.
    #[serde(default)]
    pub spot: bool,
}

/// Node pool autoscaling bounds (per zone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AutoscalingSpec {
    /// Fewest nodes.
    pub min_nodes: u32,
    /// Most nodes.
    pub max_nodes: u32,
}

/// A Google service account.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ServiceAccountSpec {
    /// Account id (the part before `@`), 6 to 30 characters; an email is accepted too.
    pub name: Option<String>,
    /// Use an account that already exists.
    #[serde(default)]
    pub existing: bool,
}

/// A Cloud Storage bucket.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BucketSpec {
    /// Bucket name (globally unique; default derived from project and blueprint).
    pub name: Option<String>,
    /// Use a bucket that already exists.
    #[serde(default)]
    pub existing: bool,
    /// Location (default: the blueprint's region).
    pub location: Option<String>,
}

/// An Artifact Registry repository (Docker format).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RegistrySpec {
    /// Repository id (default derived from the blueprint name).
    pub name: Option<String>,
    /// Use a repository that already exists.
    #[serde(default)]
    pub existing: bool,
    /// Location (default: the blueprint's region).
    pub location: Option<String>,
}

/// A Pub/Sub topic.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TopicSpec {
    /// Topic id.
    pub name: Option<String>,
    /// Use a topic that already exists.
    #[serde(default)]
    pub existing: bool,
}

/// A BigQuery dataset.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DatasetSpec {
    /// Dataset id (letters, digits, `_`).
    pub name: Option<String>,
    /// Use a dataset that already exists.
    #[serde(default)]
    pub existing: bool,
    /// Location (default: the blueprint's region).
    pub location: Option<String>,
}

/// The Pub/Sub → BigQuery sink of load-test metrics.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MetricsSinkSpec {
    /// Render the sink (the kind says the default).
    pub enabled: Option<bool>,
    /// The metrics topic.
    #[serde(default)]
    pub topic: TopicSpec,
    /// The metrics dataset.
    #[serde(default)]
    pub dataset: DatasetSpec,
}

/// Labels written by people: keys and values are strings.
pub type Labels = BTreeMap<String, String>;

/// Which NVIDIA driver GKE installs on GPU nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "UPPERCASE")]
pub enum GpuDriverVersion {
    /// The default driver of the node's GKE version.
    Default,
    /// The newest driver the node's GKE version supports.
    Latest,
}

impl GpuDriverVersion {
    /// The driver for pods running `image` when the blueprint does not choose: `DEFAULT`
    /// unless the image is built on a CUDA newer than the `DEFAULT` driver runs and `LATEST`
    /// runs it (`data/gpu-cuda.tsv`; the `gpu-driver-cuda` rule judges the same facts). An image
    /// whose CUDA the tool does not know keeps `DEFAULT`.
    #[must_use]
    pub fn for_image(image: &str) -> Self {
        let runs = |driver: &str| {
            crate::catalog::image_cuda(image)
                .and_then(crate::catalog::min_driver)
                .zip(crate::catalog::driver_branch(driver))
                .is_none_or(|(needed, installed)| installed >= needed)
        };
        if !runs("DEFAULT") && runs("LATEST") {
            Self::Latest
        } else {
            Self::Default
        }
    }
}

/// A GPU node pool: how many nodes and what they boot with. The GPUs themselves, the machine
/// type and the GPU count per node come from the `gpu` stanza.
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuPoolSpec {
    /// GKE node pool name (default: the kind's; on another blueprint's cluster, derived from
    /// the blueprint name).
    pub name: Option<String>,
    /// Fixed number of nodes (mutually exclusive with `autoscaling`).
    pub node_count: Option<u32>,
    /// Autoscaling bounds (the kind chooses the default).
    pub autoscaling: Option<AutoscalingSpec>,
    /// Boot disk size in GB.
    pub disk_size_gb: Option<u32>,
    /// Use Spot VMs.
    #[serde(default)]
    pub spot: bool,
    /// NVIDIA driver GKE installs (default `DEFAULT`, or `LATEST` where the kind's image is
    /// built on a CUDA newer than the `DEFAULT` driver runs).
    pub driver_version: Option<GpuDriverVersion>,
}

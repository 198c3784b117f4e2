//! The planned GCP infrastructure of one blueprint: typed, checked, ready for templates.
//!
//! [`Infrastructure`] lists Config Connector objects by kind; `gcp/templates/` renders each
//! kind with one macro. Nothing here is optional in the way YAML is: references are [`Ref`]s,
//! apply order is a list of [`Dependency`] keys, and every name has been checked.

use std::collections::BTreeMap;

use serde::Serialize;

use super::spec::{ExclusionScope, ReleaseChannel};

/// API group suffix of every Config Connector kind.
pub const CNRM: &str = "cnrm.cloud.google.com";

/// A reference from one Config Connector object to another: by object name (optionally in
/// another namespace) when Config Connector manages it, else by external id.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Ref {
    /// Object name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Object namespace, when not the referring object's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// External id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub external: Option<String>,
}

impl Ref {
    /// By object name in the same namespace.
    #[must_use]
    pub fn name(name: impl Into<String>) -> Self {
        Self {
            name: Some(name.into()),
            namespace: None,
            external: None,
        }
    }

    /// By object name in `namespace`.
    #[must_use]
    pub fn in_namespace(name: impl Into<String>, namespace: impl Into<String>) -> Self {
        Self {
            namespace: Some(namespace.into()),
            ..Self::name(name)
        }
    }

    /// By external id.
    #[must_use]
    pub fn external(external: impl Into<String>) -> Self {
        Self {
            name: None,
            namespace: None,
            external: Some(external.into()),
        }
    }
}

/// A `config.kubernetes.io/depends-on` entry: `<group>/namespaces/<ns>/<Kind>/<name>`. Config
/// Sync applies an object only after the objects it depends on are reconciled, so the first
/// apply converges without rounds of failures. Only objects of the same overlay are listed
/// (Config Sync rejects dependencies outside its sync root).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Dependency(String);

impl Dependency {
    /// The dependency on the Config Connector object `kind`/`name` in `group` (short form,
    /// e.g. `iam`) and `namespace`.
    #[must_use]
    pub fn on(group: &str, kind: &str, namespace: &str, name: &str) -> Self {
        Self(format!(
            "{group}.{CNRM}/namespaces/{namespace}/{kind}/{name}"
        ))
    }

    /// The annotation value text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What every Config Connector object carries besides its spec.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Meta {
    /// Object name.
    pub name: String,
    /// Extra annotations (deletion policy, default node pool removal …), sorted.
    pub annotations: BTreeMap<String, String>,
    /// Objects of the same overlay to reconcile first, sorted and unique.
    pub depends_on: Vec<Dependency>,
}

impl Meta {
    /// Metadata for an object called `name` that depends on `depends_on`.
    #[must_use]
    pub fn new(name: impl Into<String>, depends_on: impl IntoIterator<Item = Dependency>) -> Self {
        let mut depends_on: Vec<Dependency> = depends_on.into_iter().collect();
        depends_on.sort();
        depends_on.dedup();
        Self {
            name: name.into(),
            annotations: BTreeMap::new(),
            depends_on,
        }
    }

    /// Adds an annotation.
    #[must_use]
    pub fn annotate(mut self, key: &str, value: &str) -> Self {
        self.annotations.insert(key.to_string(), value.to_string());
        self
    }

    /// Keeps the GCP resource when the object is deleted.
    #[must_use]
    pub fn abandon_on_delete(self) -> Self {
        self.annotate(super::DELETION_POLICY, "abandon")
    }
}

/// `serviceusage.cnrm.cloud.google.com/Service`: an enabled API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServicePlan {
    /// Metadata.
    pub meta: Meta,
    /// API name, e.g. `container.googleapis.com`.
    pub service: String,
}

/// `ComputeNetwork`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NetworkPlan {
    /// Metadata.
    pub meta: Meta,
}

/// `ComputeSubnetwork`: the cluster's subnet, or the region's proxy-only subnet.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubnetworkPlan {
    /// Metadata.
    pub meta: Meta,
    /// Region.
    pub region: String,
    /// Primary range: the nodes', or the managed proxies'.
    pub cidr: String,
    /// What the subnet is for.
    pub purpose: SubnetPurpose,
    /// Its network.
    pub network: Ref,
}

/// What a subnet is for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SubnetPurpose {
    /// GKE nodes, with the `pods` and `services` secondary ranges.
    Nodes {
        /// Secondary range `pods`.
        pods_cidr: String,
        /// Secondary range `services`.
        services_cidr: String,
    },
    /// The Envoy proxies of regional Application Load Balancers (`REGIONAL_MANAGED_PROXY`,
    /// the active one of its region and VPC).
    ProxyOnly,
}

/// `ComputeRouter`: the Cloud Router of a new VPC in the blueprint's region, which holds its
/// Cloud NAT.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouterPlan {
    /// Metadata.
    pub meta: Meta,
    /// Region.
    pub region: String,
    /// Its network.
    pub network: Ref,
}

/// `ComputeRouterNAT`: Cloud NAT for every subnet of a new VPC in the region, so private nodes
/// (and their pods) reach registries, model hubs and git without public addresses.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RouterNatPlan {
    /// Metadata.
    pub meta: Meta,
    /// Region.
    pub region: String,
    /// Its router.
    pub router: Ref,
}

/// A network allowed to reach the control plane's IP endpoint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AuthorizedNetwork {
    /// IPv4 range.
    pub cidr: String,
    /// Display name, when given.
    pub name: Option<String>,
}

/// A recurring maintenance window (RFC 3339 times, RFC 5545 recurrence).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MaintenanceWindow {
    /// Start of the first window.
    pub start: String,
    /// End of the first window.
    pub end: String,
    /// How it repeats.
    pub recurrence: String,
}

/// A period without upgrades.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MaintenanceExclusion {
    /// Name.
    pub name: String,
    /// Start.
    pub start: String,
    /// End.
    pub end: String,
    /// What is held back.
    pub scope: ExclusionScope,
}

/// Add-ons of a cluster, each on only when a workload of the blueprint uses it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Addons {
    /// Cloud Storage FUSE CSI driver.
    pub gcs_fuse: bool,
    /// HTTP(S) load balancing (GKE Ingress).
    pub http_load_balancing: bool,
    /// Horizontal Pod Autoscaling.
    pub horizontal_pod_autoscaling: bool,
    /// Google Cloud Managed Service for Prometheus.
    pub managed_prometheus: bool,
}

/// `ContainerCluster`: VPC-native, private nodes, Dataplane V2, Workload Identity, a
/// maintenance window, no default node pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterPlan {
    /// Metadata.
    pub meta: Meta,
    /// Zone or region.
    pub location: String,
    /// Release channel.
    pub release_channel: ReleaseChannel,
    /// Its network.
    pub network: Ref,
    /// Its subnet (with `pods` and `services` secondary ranges).
    pub subnetwork: Ref,
    /// `<project>.svc.id.goog`.
    pub workload_pool: String,
    /// Service account of the temporary default node pool.
    pub node_service_account: Ref,
    /// Add-ons.
    pub addons: Addons,
    /// GKE's Gateway API (standard channel), for blueprints with a Gateway API ingress.
    pub gateway_api: bool,
    /// Networks allowed to reach the control plane's IP endpoint (none: only the VPC).
    pub authorized_networks: Vec<AuthorizedNetwork>,
    /// When GKE may upgrade.
    pub maintenance_window: MaintenanceWindow,
    /// When it must not.
    pub maintenance_exclusions: Vec<MaintenanceExclusion>,
}

/// A node taint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct TaintSpec<'s> {
    /// Key.
    pub key: &'s str,
    /// Value.
    pub value: &'s str,
}

/// A node taint.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Taint {
    /// Key.
    pub key: String,
    /// Value.
    pub value: String,
    /// `NO_SCHEDULE`, `PREFER_NO_SCHEDULE` or `NO_EXECUTE`.
    pub effect: String,
}

/// TPU slice placement of a node pool.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PlacementPlan {
    /// `COMPACT`.
    pub kind: String,
    /// Slice topology, e.g. `2x2x4`.
    pub tpu_topology: String,
}

/// A GPU attached to each node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GuestAccelerator {
    /// Accelerator type, e.g. `nvidia-tesla-t4`.
    pub accelerator: String,
    /// GPUs per node.
    pub count: u32,
    /// GKE-managed driver version (`DEFAULT` or `LATEST`), when GKE installs the driver.
    pub driver_version: Option<String>,
}

/// Node count of a pool: fixed, or autoscaling between bounds (per zone).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "mode")]
pub enum Scale {
    /// Exactly this many nodes per zone.
    Fixed {
        /// Nodes.
        nodes: u32,
    },
    /// Between `min` and `max` nodes per zone.
    Autoscaling {
        /// Fewest.
        min: u32,
        /// Most.
        max: u32,
    },
}

/// `ContainerNodePool`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NodePoolPlan {
    /// Metadata.
    pub meta: Meta,
    /// GKE node pool name.
    pub resource_id: String,
    /// Cluster location.
    pub location: String,
    /// Zones of the nodes, when pinned (TPU slices live in one zone).
    pub node_locations: Vec<String>,
    /// Its cluster.
    pub cluster: Ref,
    /// Size.
    pub scale: Scale,
    /// `initialNodeCount` of an autoscaling pool, when written. GCP cannot change it in place,
    /// so TPU slice pools leave it out (GKE then creates them empty): a fixed slice pool
    /// released to autoscaling is updated, not recreated.
    pub initial_node_count: Option<u32>,
    /// Machine type.
    pub machine_type: String,
    /// Boot disk size in GB, when set.
    pub disk_size_gb: Option<u32>,
    /// Spot VMs.
    pub spot: bool,
    /// The specific reservation its VMs consume (`projects/<p>/reservations/<name>` or a name).
    pub reservation: Option<String>,
    /// Nodes only through queued provisioning (Kueue's ProvisioningRequest admission check).
    pub queued: bool,
    /// Node service account.
    pub service_account: Ref,
    /// Node labels.
    pub labels: BTreeMap<String, String>,
    /// Node taints.
    pub taints: Vec<Taint>,
    /// TPU placement.
    pub placement: Option<PlacementPlan>,
    /// Attached GPUs.
    pub guest_accelerators: Vec<GuestAccelerator>,
}

/// `IAMServiceAccount`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceAccountPlan {
    /// Metadata (the name is the account id).
    pub meta: Meta,
    /// Display name.
    pub display_name: String,
}

/// Who an IAM binding grants a role to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum Member {
    /// A principal written out, e.g. `serviceAccount:a@p.iam.gserviceaccount.com` or a
    /// Workload Identity principal.
    Principal {
        /// The principal.
        member: String,
    },
    /// A service account this overlay creates (`memberFrom.serviceAccountRef`).
    ServiceAccount {
        /// Its object.
        reference: Ref,
    },
}

/// What an IAM binding is on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IamResource {
    /// Config Connector `apiVersion` of the resource kind (absent for `Project`).
    pub api_version: Option<String>,
    /// Kind, e.g. `Project`, `StorageBucket`, `IAMServiceAccount`.
    pub kind: String,
    /// The resource.
    pub reference: Ref,
}

/// `IAMPolicyMember`: one role for one member on one resource.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IamMemberPlan {
    /// Metadata.
    pub meta: Meta,
    /// Who.
    pub member: Member,
    /// Role, e.g. `roles/storage.objectUser`.
    pub role: String,
    /// On what.
    pub resource: IamResource,
}

/// `StorageBucket`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BucketPlan {
    /// Metadata (the name is the bucket name).
    pub meta: Meta,
    /// Location, upper case (`US-CENTRAL2`).
    pub location: String,
}

/// `ArtifactRegistryRepository` (Docker).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RegistryPlan {
    /// Metadata.
    pub meta: Meta,
    /// Location.
    pub location: String,
    /// Description.
    pub description: String,
}

/// `PubSubTopic`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TopicPlan {
    /// Metadata.
    pub meta: Meta,
    /// Message schema, with messages encoded as JSON.
    pub schema: Option<Ref>,
}

/// Where a subscription writes: a BigQuery table.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BigQueryDelivery {
    /// The table.
    pub table: Ref,
    /// Write each field of the topic's schema to the column of the same name.
    pub use_topic_schema: bool,
    /// Also write the subscription name, message id, publish time and attributes.
    pub write_metadata: bool,
}

/// `PubSubSchema`: the message schema of a topic.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MessageSchemaPlan {
    /// Metadata.
    pub meta: Meta,
    /// `PROTOCOL_BUFFER` or `AVRO`.
    pub schema_type: String,
    /// The schema text.
    pub definition: String,
}

/// `PubSubSubscription`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SubscriptionPlan {
    /// Metadata.
    pub meta: Meta,
    /// Its topic.
    pub topic: Ref,
    /// Delivery to BigQuery, when set.
    pub bigquery: Option<BigQueryDelivery>,
}

/// `BigQueryDataset`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DatasetPlan {
    /// Metadata (the object name is a DNS name; the dataset id is `resource_id`).
    pub meta: Meta,
    /// Dataset id.
    pub resource_id: String,
    /// Location.
    pub location: String,
}

/// A BigQuery column.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Column {
    /// Name.
    pub name: String,
    /// Type, e.g. `STRING`, `INTEGER`, `FLOAT`, `TIMESTAMP`.
    #[serde(rename = "type")]
    pub column_type: String,
    /// `NULLABLE`, `REQUIRED` or `REPEATED`.
    pub mode: String,
}

/// `BigQueryTable`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TablePlan {
    /// Metadata.
    pub meta: Meta,
    /// Table id.
    pub resource_id: String,
    /// Its dataset.
    pub dataset: Ref,
    /// Columns.
    pub columns: Vec<Column>,
    /// The columns as the JSON text `spec.schema` takes.
    pub schema: String,
}

/// Every Config Connector object of one blueprint, by kind, in a fixed order.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Infrastructure {
    /// GCP project id.
    pub project: String,
    /// Config Connector namespace.
    pub namespace: String,
    /// Enabled APIs.
    pub services: Vec<ServicePlan>,
    /// VPCs.
    pub networks: Vec<NetworkPlan>,
    /// Subnets.
    pub subnetworks: Vec<SubnetworkPlan>,
    /// Cloud Routers.
    pub routers: Vec<RouterPlan>,
    /// Cloud NAT gateways.
    pub router_nats: Vec<RouterNatPlan>,
    /// Clusters.
    pub clusters: Vec<ClusterPlan>,
    /// Node pools.
    pub node_pools: Vec<NodePoolPlan>,
    /// Service accounts.
    pub service_accounts: Vec<ServiceAccountPlan>,
    /// IAM bindings.
    pub iam_members: Vec<IamMemberPlan>,
    /// Buckets.
    pub buckets: Vec<BucketPlan>,
    /// Artifact Registry repositories.
    pub registries: Vec<RegistryPlan>,
    /// Pub/Sub message schemas.
    pub message_schemas: Vec<MessageSchemaPlan>,
    /// Pub/Sub topics.
    pub topics: Vec<TopicPlan>,
    /// Pub/Sub subscriptions.
    pub subscriptions: Vec<SubscriptionPlan>,
    /// BigQuery datasets.
    pub datasets: Vec<DatasetPlan>,
    /// BigQuery tables.
    pub tables: Vec<TablePlan>,
}

impl Infrastructure {
    /// Whether there is no object at all (every resource exists already).
    #[must_use]
    pub fn is_empty(&self) -> bool {
        // Every list empty: what is left is where the objects would go.
        *self
            == Self {
                project: self.project.clone(),
                namespace: self.namespace.clone(),
                ..Self::default()
            }
    }
}

//! Shared GCP building blocks: every kind plans its infrastructure through these.
//!
//! A kind hands its spec parts ([`spec`]) to a [`Gcp`] builder, which checks names, CIDR ranges
//! and locations (findings go to the [`Planner`] at the blueprint's own lines), decides what to
//! create and what to reference (`existing: true`, or another blueprint's cluster), wires
//! references and apply order between objects, and collects everything into an
//! [`Infrastructure`]. `templates/config-connector.yaml` renders that with one macro per Config
//! Connector kind. No kind writes its own network, cluster, node pool or IAM binding: when a
//! kind needs something the blocks cannot express, extend the block.

mod infra;

mod sink;
pub mod spec;

use std::collections::BTreeMap;

use ipnet::Ipv4Net;

pub use infra::*;

use crate::accelerator::{GpuPlan, TpuPlan};
use crate::limits::MAX_NODES_PER_POOL;
use crate::names;
use crate::plan::Planner;
pub use sink::{METRICS_PROTO, metrics_topic_export};
use spec::{
    AutoscalingSpec, BucketSpec, ClusterSpec, ConfigConnectorSpec, DatasetSpec, GpuDriverVersion,
    GpuPoolSpec, NetworkSpec, NodePoolSpec, RegistrySpec, ReleaseChannel, ServiceAccountSpec,
    TopicSpec,
};

/// Where a blueprint's GCP resources live, as written in its spec.
#[derive(Clone, Copy, Debug)]
pub struct SiteSpec<'s> {
    /// `spec.project`.
    pub project: &'s str,
    /// Region, after the kind's defaults.
    pub region: &'s str,
    /// Zone, after the kind's defaults.
    pub zone: &'s str,
    /// `spec.configConnector`.
    pub config_connector: &'s ConfigConnectorSpec,
}

/// A created-or-referenced VPC and subnet.
#[derive(Clone, Debug)]
pub struct NetworkHandle {
    network: Ref,
    subnetwork: Ref,
    depends_on: Vec<Dependency>,
}

/// A created-or-referenced service account.
#[derive(Clone, Debug)]
pub struct AccountHandle {
    /// Account id.
    pub id: String,
    /// Email.
    pub email: String,
    /// Short label for object names (`node`, `wi`, …).
    label: String,
    reference: Ref,
    dependency: Option<Dependency>,
}

impl AccountHandle {
    /// The account as an IAM member: a reference when this overlay creates it, else its email.
    #[must_use]
    pub fn member(&self) -> Member {
        if self.dependency.is_some() {
            Member::ServiceAccount {
                reference: self.reference.clone(),
            }
        } else {
            Member::Principal {
                member: format!("serviceAccount:{}", self.email),
            }
        }
    }
}

/// The cluster a blueprint's pools and workloads land on.
#[derive(Clone, Debug)]
pub struct ClusterHandle {
    /// Cluster name.
    pub name: String,
    /// Project of the cluster.
    pub project: String,
    /// Zone or region.
    pub location: String,
    /// Whether this blueprint creates the cluster (and so its CPU pool).
    pub owned: bool,
    /// Whether the cluster belongs to another blueprint of the repository.
    pub borrowed: bool,
    reference: Ref,
    dependency: Option<Dependency>,
}

impl ClusterHandle {
    /// `<project>.svc.id.goog`, the Workload Identity pool of the cluster's project.
    #[must_use]
    pub fn workload_pool(&self) -> String {
        format!("{}.svc.id.goog", self.project)
    }
}

/// A created-or-referenced bucket.
#[derive(Clone, Debug)]
pub struct BucketHandle {
    /// Bucket name.
    pub name: String,
    reference: Ref,
    dependency: Option<Dependency>,
}

impl BucketHandle {
    /// `gs://<name>`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("gs://{}", self.name)
    }

    /// The bucket as the resource of an IAM binding.
    #[must_use]
    pub fn iam_target(&self) -> IamTarget {
        IamTarget {
            label: self.name.clone(),
            resource: IamResource {
                api_version: Some(format!("storage.{CNRM}/v1beta1")),
                kind: "StorageBucket".into(),
                reference: self.reference.clone(),
            },
            dependency: self.dependency.clone(),
        }
    }
}

/// A resource IAM bindings can be on.
#[derive(Clone, Debug)]
pub struct IamTarget {
    /// Short text for binding object names.
    label: String,
    resource: IamResource,
    dependency: Option<Dependency>,
}

impl IamTarget {
    /// A resource made elsewhere, by its Config Connector group and kind and its external id:
    /// e.g. (`secretmanager`, `SecretManagerSecret`, `projects/p/secrets/s`). `label` names
    /// the binding objects.
    #[must_use]
    pub fn external(group: &str, kind: &str, external: impl Into<String>, label: &str) -> Self {
        Self {
            label: label.to_string(),
            resource: IamResource {
                api_version: Some(format!("{group}.{CNRM}/v1beta1")),
                kind: kind.to_string(),
                reference: Ref::external(external),
            },
            dependency: None,
        }
    }
}

impl TopicHandle {
    /// The topic as the resource of an IAM binding.
    #[must_use]
    pub fn iam_target(&self) -> IamTarget {
        IamTarget {
            label: self.name.clone(),
            resource: IamResource {
                api_version: Some(format!("pubsub.{CNRM}/v1beta1")),
                kind: "PubSubTopic".into(),
                reference: self.reference.clone(),
            },
            dependency: self.dependency.clone(),
        }
    }
}

/// A created-or-referenced Artifact Registry repository.
#[derive(Clone, Debug)]
pub struct RegistryHandle {
    /// `<location>-docker.pkg.dev/<project>/<repository>`.
    pub url: String,
}

/// A created-or-referenced Pub/Sub topic.
#[derive(Clone, Debug)]
pub struct TopicHandle {
    /// Topic id.
    pub name: String,
    reference: Ref,
    dependency: Option<Dependency>,
}

/// A created-or-referenced BigQuery dataset.
#[derive(Clone, Debug)]
pub struct DatasetHandle {
    /// Dataset id.
    pub name: String,
    reference: Ref,
    dependency: Option<Dependency>,
}

/// What a kind asks of a new cluster.
#[derive(Clone, Copy, Debug)]
pub struct ClusterOptions<'s> {
    /// Default location when the spec names none (a zone for TPU kinds, a region otherwise).
    pub default_location: &'s str,
    /// Add-ons the kind's workloads use.
    pub addons: Addons,
}

/// Defaults of a kind's CPU pool.
#[derive(Clone, Copy, Debug)]
pub struct CpuPoolDefaults<'s> {
    /// GKE node pool name.
    pub name: &'s str,
    /// Blueprint field of the pool's spec, for findings (e.g. `spec.cluster.cpuPool`).
    pub field: &'s str,
    /// Machine type.
    pub machine_type: &'s str,
    /// Size when the spec sets none.
    pub scale: Scale,
    /// Boot disk size.
    pub disk_size_gb: Option<u32>,
    /// Node labels (workloads select the pool with them).
    pub labels: &'s [(&'s str, &'s str)],
    /// `NO_SCHEDULE` taints that keep other pods off the pool.
    pub taints: &'s [TaintSpec<'s>],
}

/// Defaults of a kind's GPU pool.
#[derive(Clone, Debug)]
pub struct GpuPoolDefaults<'s> {
    /// GKE node pool name.
    pub name: &'s str,
    /// Blueprint field of the pool's spec, for findings (e.g. `spec.gpuPool`).
    pub field: &'s str,
    /// Size when the spec sets none.
    pub scale: Scale,
    /// Boot disk size.
    pub disk_size_gb: Option<u32>,
    /// Node labels (workloads select the pool with them).
    pub labels: BTreeMap<String, String>,
}

/// A planned GPU pool, as workloads and capacity checks need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuPoolHandle {
    /// GKE node pool name (the `cloud.google.com/gke-nodepool` label of its nodes).
    pub name: String,
    /// Fewest nodes, over all the pool's zones.
    pub min_nodes: u32,
    /// Most nodes, over all the pool's zones.
    pub max_nodes: u32,
    /// GPUs on each node.
    pub gpus_per_node: u32,
}

/// Rule ids of the findings this module reports.
pub use crate::plan::rule;

/// Default ranges of a new VPC: nodes, pods, services, and the region's proxy-only subnet.
const NODES_CIDR: &str = "10.129.0.0/20";
const PODS_CIDR: &str = "192.168.64.0/18";
const SERVICES_CIDR: &str = "192.168.128.0/20";
/// Right after the nodes' default range; /23 is what Google recommends for proxy-only subnets.
const PROXY_ONLY_CIDR: &str = "10.129.16.0/23";

/// GKE cluster names have at most 40 characters.
const CLUSTER_NAME_MAX: usize = 40;

/// The name of the cluster a blueprint creates or names (default: the blueprint's name).
#[must_use]
pub fn cluster_name(spec: &ClusterSpec, blueprint: &str) -> String {
    spec.name
        .clone()
        .unwrap_or_else(|| names::derived(blueprint, "", 1, CLUSTER_NAME_MAX))
}

/// What a blueprint exports about its cluster, from its spec alone: the cluster it creates or
/// names (at `spec.cluster.location`, else `default_location`), or the blueprint whose cluster
/// it runs on. Kinds add their services.
#[must_use]
pub fn cluster_exports(
    blueprint: &str,
    project: &str,
    config_connector: &ConfigConnectorSpec,
    cluster: &ClusterSpec,
    region: &str,
    default_location: &str,
) -> crate::plan::Exports {
    if let Some(owner) = &cluster.blueprint {
        return crate::plan::Exports {
            cluster_of: Some(owner.clone()),
            ..crate::plan::Exports::default()
        };
    }
    crate::plan::Exports {
        cluster: Some(crate::plan::ClusterExport {
            project: project.to_string(),
            name: cluster_name(cluster, blueprint),
            location: cluster
                .location
                .clone()
                .unwrap_or_else(|| default_location.to_string()),
            region: region.to_string(),
            config_connector_namespace: config_connector
                .namespace
                .clone()
                .unwrap_or_else(|| project.to_string()),
            managed: !cluster.existing,
        }),
        ..crate::plan::Exports::default()
    }
}

/// Plans one blueprint's GCP objects.
#[derive(Debug)]
pub struct Gcp {
    /// Project id.
    pub project: String,
    /// Region.
    pub region: String,
    /// Zone.
    pub zone: String,
    blueprint: String,
    project_valid: bool,
    infra: Infrastructure,
    services: BTreeMap<String, Dependency>,
    /// `spec.network.proxyOnlyCidr` of a VPC this blueprint creates, once checked.
    proxy_only_cidr: Option<String>,
}

impl Gcp {
    /// Starts planning in the project and location of `site`, checking them.
    pub fn new(planner: &mut Planner<'_>, site: SiteSpec<'_>) -> Self {
        planner.check_name(
            rule::PROJECT_ID,
            "spec.project",
            site.project,
            names::project_id,
        );
        // Names defaulted from a bad project id would repeat its finding.
        let project_valid = names::project_id(site.project).is_ok();
        if let Err(reason) = names::region(site.region) {
            let d = planner.error(
                rule::LOCATION,
                "spec.region",
                format!("invalid region `{}`: {reason}", site.region),
            );
            d.found = Some(site.region.to_string());
        }
        if let Err(reason) = names::zone(site.zone) {
            let d = planner.error(
                rule::LOCATION,
                "spec.zone",
                format!("invalid zone `{}`: {reason}", site.zone),
            );
            d.found = Some(site.zone.to_string());
        } else if names::region_of(site.zone) != site.region {
            let d = planner.error(
                rule::LOCATION,
                "spec.zone",
                format!("zone `{}` is not in region `{}`", site.zone, site.region),
            );
            d.found = Some(site.zone.to_string());
            d.expected = Some(format!(
                "a zone of `{}`, e.g. `{}-b`",
                site.region, site.region
            ));
        }
        let namespace = site
            .config_connector
            .namespace
            .clone()
            .unwrap_or_else(|| site.project.to_string());
        if project_valid || site.config_connector.namespace.is_some() {
            planner.check_name(
                rule::KUBERNETES_NAME,
                "spec.configConnector.namespace",
                &namespace,
                crate::names::check_dns_label,
            );
        }
        Self {
            project_valid,
            project: site.project.to_string(),
            region: site.region.to_string(),
            zone: site.zone.to_string(),
            blueprint: planner.name().to_string(),
            infra: Infrastructure {
                project: site.project.to_string(),
                namespace,
                ..Infrastructure::default()
            },
            services: BTreeMap::new(),
            proxy_only_cidr: None,
        }
    }

    /// Config Connector namespace.
    #[must_use]
    pub fn namespace(&self) -> &str {
        &self.infra.namespace
    }

    fn dependency(&self, group: &str, kind: &str, name: &str) -> Dependency {
        Dependency::on(group, kind, &self.infra.namespace, name)
    }

    /// Enables `api` (e.g. `container.googleapis.com`) and returns the dependency on it.
    pub fn api(&mut self, api: &str) -> Dependency {
        if let Some(dependency) = self.services.get(api) {
            return dependency.clone();
        }
        let short = api.split('.').next().unwrap_or(api);
        let name = format!("{}-{short}", self.blueprint);
        let dependency = self.dependency("serviceusage", "Service", &name);
        self.services.insert(api.to_string(), dependency.clone());
        // Other blueprints of the project may rely on the API: never disable it on deletion.
        self.infra.services.push(ServicePlan {
            meta: Meta::new(name, []).abandon_on_delete(),
            service: api.to_string(),
        });
        dependency
    }

    /// Plans the network of a new cluster: a VPC and subnet with `pods` and `services`
    /// secondary ranges, or references to existing ones.
    fn network(&mut self, planner: &mut Planner<'_>, spec: &NetworkSpec) -> NetworkHandle {
        let blueprint = self.blueprint.clone();
        let name = spec
            .name
            .clone()
            .unwrap_or_else(|| names::derived(&blueprint, "-network", 1, 63));
        let subnetwork = spec
            .subnetwork
            .clone()
            .unwrap_or_else(|| names::derived(&blueprint, "-subnet", 1, 63));
        planner.check_name(
            rule::RESOURCE_NAME,
            "spec.network.name",
            &name,
            names::resource,
        );
        planner.check_name(
            rule::RESOURCE_NAME,
            "spec.network.subnetwork",
            &subnetwork,
            names::resource,
        );
        if spec.existing {
            for (field, set) in [
                ("spec.network.nodesCidr", spec.nodes_cidr.is_some()),
                ("spec.network.podsCidr", spec.pods_cidr.is_some()),
                ("spec.network.servicesCidr", spec.services_cidr.is_some()),
                ("spec.network.proxyOnlyCidr", spec.proxy_only_cidr.is_some()),
            ] {
                if set {
                    let d = planner.error(
                        rule::CONFLICT,
                        field,
                        "an existing network keeps its own ranges",
                    );
                    d.fix = Some(format!("remove `{field}`, or `existing: true`"));
                }
            }
            return NetworkHandle {
                network: Ref::external(format!("projects/{}/global/networks/{name}", self.project)),
                subnetwork: Ref::external(format!(
                    "projects/{}/regions/{}/subnetworks/{subnetwork}",
                    self.project, self.region
                )),
                depends_on: Vec::new(),
            };
        }
        let ranges = [
            ("spec.network.nodesCidr", &spec.nodes_cidr, NODES_CIDR),
            ("spec.network.podsCidr", &spec.pods_cidr, PODS_CIDR),
            (
                "spec.network.servicesCidr",
                &spec.services_cidr,
                SERVICES_CIDR,
            ),
        ];
        // A proxy range written down is checked with the others; the default one only when a
        // gateway needs it (`gateway_api`), so it never gets in the way of custom ranges.
        let ranges = if spec.proxy_only_cidr.is_some() {
            let [nodes, pods, services, proxies] = check_ranges(
                planner,
                [
                    ranges[0],
                    ranges[1],
                    ranges[2],
                    (
                        "spec.network.proxyOnlyCidr",
                        &spec.proxy_only_cidr,
                        PROXY_ONLY_CIDR,
                    ),
                ],
            );
            self.proxy_only_cidr = Some(proxies);
            [nodes, pods, services]
        } else {
            check_ranges(planner, ranges)
        };
        let compute = self.api("compute.googleapis.com");
        let network_dependency = self.dependency("compute", "ComputeNetwork", &name);
        let subnetwork_dependency = self.dependency("compute", "ComputeSubnetwork", &subnetwork);
        self.infra.networks.push(NetworkPlan {
            meta: Meta::new(name.clone(), [compute]),
        });
        let network_ref = Ref::name(name.clone());
        let [nodes_cidr, pods_cidr, services_cidr] = ranges;
        self.infra.subnetworks.push(SubnetworkPlan {
            meta: Meta::new(subnetwork.clone(), [network_dependency.clone()]),
            region: self.region.clone(),
            cidr: nodes_cidr,
            purpose: SubnetPurpose::Nodes {
                pods_cidr,
                services_cidr,
            },
            network: Ref::name(name),
        });
        NetworkHandle {
            network: network_ref,
            subnetwork: Ref::name(subnetwork),
            depends_on: vec![subnetwork_dependency],
        }
    }

    /// Reports node and workload accounts that are one account: pods would act as the
    /// nodes, and the nodes as the workload.
    pub fn require_distinct_accounts(
        planner: &mut Planner<'_>,
        nodes: &AccountHandle,
        workload: &AccountHandle,
    ) {
        if nodes.id == workload.id {
            planner.error(
                rule::SERVICE_ACCOUNT_ID,
                "spec.serviceAccounts.workload.name",
                "the node and workload service accounts must differ",
            );
        }
    }

    /// Plans a service account: created (with its display name) or existing.
    pub fn service_account(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &ServiceAccountSpec,
        field: &str,
        label: &str,
        display_name: &str,
    ) -> AccountHandle {
        let blueprint = self.blueprint.clone();
        let given = spec
            .name
            .clone()
            .unwrap_or_else(|| names::derived(&blueprint, &format!("-{label}"), 6, 30));
        let own_domain = format!("{}.iam.gserviceaccount.com", self.project);
        // An email names the account exactly (an existing one may live in another project);
        // an id is an account of the blueprint's project.
        let (id, email) = match given.split_once('@') {
            Some((id, domain)) => {
                if !spec.existing && domain != own_domain {
                    let d = planner.error(
                        rule::CONFLICT,
                        &format!("{field}.name"),
                        format!(
                            "a new service account is created in project `{}`, not as `{given}`",
                            self.project
                        ),
                    );
                    d.fix = Some(format!(
                        "write the id `{id}` alone, or add `existing: true` to use `{given}`"
                    ));
                }
                (id.to_string(), given.clone())
            }
            None => (given.clone(), format!("{given}@{own_domain}")),
        };
        planner.check_name(
            rule::SERVICE_ACCOUNT_ID,
            &format!("{field}.name"),
            &id,
            names::service_account_id,
        );
        let (reference, dependency) = if spec.existing {
            (Ref::external(email.clone()), None)
        } else {
            let iam = self.api("iam.googleapis.com");
            let dependency = self.dependency("iam", "IAMServiceAccount", &id);
            self.infra.service_accounts.push(ServiceAccountPlan {
                meta: Meta::new(id.clone(), [iam]),
                display_name: format!("{display_name} ({blueprint})"),
            });
            (Ref::name(id.clone()), Some(dependency))
        };
        AccountHandle {
            id,
            email,
            label: label.to_string(),
            reference,
            dependency,
        }
    }

    /// Plans the cluster: a new one (with its network), an existing one, or the cluster of
    /// another blueprint (`spec.cluster.blueprint`). `None` when the reference is dangling.
    pub fn cluster(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &ClusterSpec,
        network: &NetworkSpec,
        options: ClusterOptions<'_>,
        node_service_account: &AccountHandle,
    ) -> Option<ClusterHandle> {
        let container = self.api("container.googleapis.com");
        if let Some(other) = &spec.blueprint {
            return self.borrowed_cluster(planner, spec, network, other);
        }
        let name = cluster_name(spec, &self.blueprint);
        planner.check_name(rule::GKE_NAME, "spec.cluster.name", &name, |n| {
            names::limited(n, CLUSTER_NAME_MAX)
        });
        let location = spec
            .location
            .clone()
            .unwrap_or_else(|| options.default_location.to_string());
        // A defaulted location comes from fields that were checked already.
        if spec.location.is_some() {
            self.check_cluster_location(planner, &location);
        }
        if spec.existing {
            if *network != NetworkSpec::default() {
                let d = planner.error(
                    rule::CONFLICT,
                    "spec.network",
                    "an existing cluster keeps its own network",
                );
                d.fix = Some("remove `spec.network`".into());
            }
            for (set, field) in [
                (
                    spec.release_channel.is_some(),
                    "spec.cluster.releaseChannel",
                ),
                (
                    spec.cpu_pool != NodePoolSpec::default(),
                    "spec.cluster.cpuPool",
                ),
            ] {
                if set {
                    let d = planner.error(
                        rule::CONFLICT,
                        field,
                        format!("`{field}` has no effect on an existing cluster"),
                    );
                    d.fix = Some(format!("remove `{field}`, or `existing: true`"));
                }
            }
            return Some(ClusterHandle {
                reference: Ref::external(format!(
                    "projects/{}/locations/{location}/clusters/{name}",
                    self.project
                )),
                name,
                project: self.project.clone(),
                location,
                owned: false,
                borrowed: false,
                dependency: None,
            });
        }
        let network = self.network(planner, network);
        let mut depends_on = vec![container];
        depends_on.extend(network.depends_on.iter().cloned());
        depends_on.extend(node_service_account.dependency.clone());
        let dependency = self.dependency("container", "ContainerCluster", &name);
        self.infra.clusters.push(ClusterPlan {
            // Node pools are declared on their own; GKE's default pool would only cost money.
            meta: Meta::new(name.clone(), depends_on)
                .annotate("cnrm.cloud.google.com/remove-default-node-pool", "true"),
            location: location.clone(),
            release_channel: spec.release_channel.unwrap_or(ReleaseChannel::Regular),
            network: network.network,
            subnetwork: network.subnetwork,
            workload_pool: format!("{}.svc.id.goog", self.project),
            node_service_account: node_service_account.reference.clone(),
            addons: options.addons,
            gateway_api: false,
        });
        Some(ClusterHandle {
            reference: Ref::name(name.clone()),
            name,
            project: self.project.clone(),
            location,
            owned: true,
            borrowed: false,
            dependency: Some(dependency),
        })
    }

    /// Prepares the cluster for GKE's Gateway controller, for a Gateway API ingress: on a
    /// cluster this blueprint creates, the Gateway API (standard channel) and the HTTP load
    /// balancing add-on the controller programs load balancers through; for an `internal`
    /// gateway (`gke-l7-rilb`, a regional internal Application Load Balancer), also the
    /// region's proxy-only subnet in the VPC it creates (`spec.network.proxyOnlyCidr`).
    /// Returns whether everything is planned here; on an existing or borrowed cluster, or an
    /// existing VPC, what is missing is a prerequisite (a VPC has one active proxy-only subnet
    /// per region, which may exist already).
    pub fn gateway_api(
        &mut self,
        planner: &mut Planner<'_>,
        cluster: &ClusterHandle,
        network: &NetworkSpec,
        internal: bool,
    ) -> bool {
        let Some(plan) = self
            .infra
            .clusters
            .iter_mut()
            .find(|plan| cluster.owned && plan.meta.name == cluster.name)
        else {
            return false;
        };
        plan.gateway_api = true;
        plan.addons.http_load_balancing = true;
        let network_ref = plan.network.clone();
        if !internal {
            return true;
        }
        if network.existing {
            return false;
        }
        let Some((nodes, pods, services, depends_on)) =
            self.infra
                .subnetworks
                .iter()
                .find_map(|subnet| match &subnet.purpose {
                    SubnetPurpose::Nodes {
                        pods_cidr,
                        services_cidr,
                    } => Some((
                        subnet.cidr.clone(),
                        pods_cidr.clone(),
                        services_cidr.clone(),
                        subnet.meta.depends_on.clone(),
                    )),
                    SubnetPurpose::ProxyOnly => None,
                })
        else {
            return false;
        };
        let field = "spec.network.proxyOnlyCidr";
        let cidr = match self.proxy_only_cidr.clone() {
            Some(cidr) => cidr,
            None => {
                // The default range, checked against the cluster's ranges only now that it
                // is used.
                let overlapping = [nodes, pods, services].into_iter().find(|range| {
                    let (Ok(range), Ok(proxies)) =
                        (range.parse::<Ipv4Net>(), PROXY_ONLY_CIDR.parse::<Ipv4Net>())
                    else {
                        return false;
                    };
                    range.contains(&proxies.network()) || proxies.contains(&range.network())
                });
                if let Some(range) = overlapping {
                    let d = planner.error(
                        rule::NETWORK_CIDR,
                        field,
                        format!(
                            "the default proxy-only range `{PROXY_ONLY_CIDR}` overlaps `{range}`"
                        ),
                    );
                    d.fix = Some(format!("set `{field}` to a free range of /26 or larger"));
                }
                PROXY_ONLY_CIDR.to_string()
            }
        };
        if let Ok(net) = cidr.parse::<Ipv4Net>()
            && net.prefix_len() > 26
        {
            let d = planner.error(
                rule::NETWORK_CIDR,
                field,
                format!("`{cidr}` is too small for a proxy-only subnet"),
            );
            d.expected = Some("a prefix length of /26 or shorter (/23 recommended)".into());
        }
        let name = names::derived(&self.blueprint, "-proxy-subnet", 1, 63);
        self.infra.subnetworks.push(SubnetworkPlan {
            meta: Meta::new(name, depends_on),
            region: self.region.clone(),
            cidr,
            purpose: SubnetPurpose::ProxyOnly,
            network: network_ref,
        });
        true
    }

    fn check_cluster_location(&self, planner: &mut Planner<'_>, location: &str) {
        let valid = names::zone(location).is_ok() || names::region(location).is_ok();
        if !valid {
            let d = planner.error(
                rule::LOCATION,
                "spec.cluster.location",
                format!("invalid cluster location `{location}`: a zone or a region"),
            );
            d.found = Some(location.to_string());
        } else if names::region_of(location) != self.region {
            let d = planner.error(
                rule::LOCATION,
                "spec.cluster.location",
                format!(
                    "cluster location `{location}` is not in region `{}`",
                    self.region
                ),
            );
            d.expected = Some(format!("`{}` or one of its zones", self.region));
        }
    }

    fn borrowed_cluster(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &ClusterSpec,
        network: &NetworkSpec,
        other: &str,
    ) -> Option<ClusterHandle> {
        let field = "spec.cluster.blueprint";
        for (set, conflicting) in [
            (spec.existing, "spec.cluster.existing"),
            (spec.name.is_some(), "spec.cluster.name"),
            (spec.location.is_some(), "spec.cluster.location"),
            (
                spec.release_channel.is_some(),
                "spec.cluster.releaseChannel",
            ),
            (
                spec.cpu_pool != NodePoolSpec::default(),
                "spec.cluster.cpuPool",
            ),
            (*network != NetworkSpec::default(), "spec.network"),
        ] {
            if set {
                let d = planner.error(
                    rule::CONFLICT,
                    conflicting,
                    format!("`{conflicting}` cannot be set with `{field}`: the other blueprint owns the cluster"),
                );
                d.fix = Some(format!("remove `{conflicting}`"));
            }
        }
        let me = planner.name().to_string();
        let exported = planner.reference(field, other)?;
        let Some(cluster) = exported.exports.cluster.clone() else {
            if let Some(owner) = &exported.exports.cluster_of {
                let d = planner.error(
                    rule::REFERENCE,
                    field,
                    format!(
                        "blueprint `{other}` runs on the cluster of blueprint `{owner}`; `{me}` can use that cluster directly"
                    ),
                );
                d.fix = Some(format!("set `{field}: {owner}`"));
                return None;
            }
            let d = planner.error(
                rule::REFERENCE,
                field,
                format!(
                    "blueprint `{me}` wants the cluster of blueprint `{other}`, but `{other}` ({}) has no cluster of its own",
                    exported.kind
                ),
            );
            d.found = Some(format!("{}:{}", exported.file, exported.line));
            d.fix =
                Some("name the blueprint that creates the cluster, or use `existing: true`".into());
            return None;
        };
        if cluster.project != self.project {
            let d = planner.error(
                rule::REFERENCE,
                "spec.project",
                format!(
                    "blueprint `{me}` is in project `{}` but the cluster of blueprint `{other}` is in `{}`",
                    self.project, cluster.project
                ),
            );
            d.fix = Some(format!("set `spec.project: {}`", cluster.project));
        }
        if cluster.region != self.region {
            let d = planner.error(
                rule::REFERENCE,
                "spec.region",
                format!(
                    "the cluster of blueprint `{other}` is in region `{}`, not `{}`",
                    cluster.region, self.region
                ),
            );
            d.fix = Some(format!("set `spec.region: {}`", cluster.region));
        }
        let reference = if !cluster.managed {
            Ref::external(format!(
                "projects/{}/locations/{}/clusters/{}",
                cluster.project, cluster.location, cluster.name
            ))
        } else if cluster.config_connector_namespace == self.infra.namespace {
            Ref::name(cluster.name.clone())
        } else {
            Ref::in_namespace(cluster.name.clone(), cluster.config_connector_namespace)
        };
        // The other blueprint is synced on its own: no depends-on across sync roots.
        Some(ClusterHandle {
            name: cluster.name,
            project: cluster.project,
            location: cluster.location,
            owned: false,
            borrowed: true,
            reference,
            dependency: None,
        })
    }

    /// Plans a CPU node pool (fixed or autoscaling) in a cluster this blueprint creates or
    /// borrows; a kind may plan several (system, proxies, auxiliary work).
    pub fn cpu_pool(
        &mut self,
        planner: &mut Planner<'_>,
        cluster: &ClusterHandle,
        spec: &NodePoolSpec,
        defaults: CpuPoolDefaults<'_>,
        service_account: &AccountHandle,
    ) {
        let scale = scale_of(
            planner,
            spec.node_count,
            spec.autoscaling,
            defaults.field,
            defaults.scale,
        );
        let machine_type = spec
            .machine_type
            .clone()
            .unwrap_or_else(|| defaults.machine_type.to_string());
        // A regional cluster would put a pool's nodes in each of its zones (three times the
        // count asked for): CPU pools stay in the blueprint's zone.
        let node_locations = if names::zone(&cluster.location).is_ok() {
            Vec::new()
        } else {
            vec![self.zone.clone()]
        };
        // Pool names are unique per cluster: on a cluster others use too (another blueprint's,
        // or an existing one) the pool carries the blueprint's name (GKE allows 40 characters).
        let resource_id = if cluster.owned {
            defaults.name.to_string()
        } else {
            names::derived(&self.blueprint, &format!("-{}", defaults.name), 1, 40)
        };
        self.node_pool(NodePoolInput {
            resource_id,
            cluster,
            node_locations,
            scale,
            machine_type,
            disk_size_gb: spec.disk_size_gb.or(defaults.disk_size_gb),
            spot: spec.spot,
            service_account,
            labels: defaults
                .labels
                .iter()
                .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
                .collect(),
            taints: defaults
                .taints
                .iter()
                .map(|taint| Taint {
                    key: taint.key.to_string(),
                    value: taint.value.to_string(),
                    effect: "NO_SCHEDULE".into(),
                })
                .collect(),
            placement: None,
            guest_accelerators: Vec::new(),
        });
    }

    /// Plans one node pool per TPU slice, each exactly one slice of `tpu.hosts` nodes in
    /// `zone`, labelled with `labels` (plus the reference's multislice group labels). Returns
    /// the GKE node pool names.
    pub fn tpu_pools(
        &mut self,
        cluster: &ClusterHandle,
        tpu: &TpuPlan,
        service_account: &AccountHandle,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        self.slice_pools(
            cluster,
            tpu,
            tpu.slices,
            tpu.slices > 1,
            service_account,
            labels,
        )
    }

    /// Plans `count` node pools of one slice each. `multislice` marks them as one multislice
    /// group (the reference's labels); independent serving replicas are not one.
    pub fn slice_pools(
        &mut self,
        cluster: &ClusterHandle,
        tpu: &TpuPlan,
        count: u32,
        multislice: bool,
        service_account: &AccountHandle,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        let _tpu_api = self.api("tpu.googleapis.com");
        let mut pool_names = Vec::new();
        for index in 0..count {
            let suffix = format!("-slice-{index}");
            // Pool names are unique per cluster: on a cluster others use too (another
            // blueprint's, or an existing one) they carry the blueprint.
            let resource_id = if !cluster.owned {
                names::derived(&self.blueprint, &suffix, 1, 40)
            } else {
                format!("tpu{suffix}")
            };
            let mut pool_labels = labels.clone();
            if multislice {
                // The reference's multislice group label, so tooling that reads it works. Not
                // its group-size label: node labels cannot change in place, so adding a slice
                // would recreate every slice already running.
                pool_labels.insert("MultisliceGroup".into(), self.blueprint.clone());
            }
            self.node_pool(NodePoolInput {
                resource_id: resource_id.clone(),
                cluster,
                node_locations: vec![self.zone.clone()],
                // Multi-host TPU slices are atomic: exactly one slice of VMs per pool.
                scale: Scale::Fixed { nodes: tpu.hosts },
                machine_type: tpu.machine_type.to_string(),
                disk_size_gb: None,
                spot: false,
                service_account,
                labels: pool_labels,
                taints: Vec::new(),
                placement: tpu.compact_placement.then(|| PlacementPlan {
                    kind: "COMPACT".into(),
                    tpu_topology: tpu.topology.clone(),
                }),
                guest_accelerators: Vec::new(),
            });
            pool_names.push(resource_id);
        }
        pool_names
    }

    /// Plans a GPU node pool called `name` from the `gpu` stanza, with GKE installing the
    /// default driver.
    pub fn gpu_pool(
        &mut self,
        cluster: &ClusterHandle,
        name: &str,
        gpu: &GpuPlan,
        scale: Scale,
        service_account: &AccountHandle,
    ) {
        self.node_pool(NodePoolInput {
            resource_id: name.to_string(),
            cluster,
            node_locations: Vec::new(),
            scale,
            machine_type: gpu.machine_type.clone(),
            disk_size_gb: None,
            spot: false,
            service_account,
            labels: BTreeMap::new(),
            taints: Vec::new(),
            placement: None,
            guest_accelerators: guest_accelerators(gpu, GpuDriverVersion::Default),
        });
    }

    /// Plans a GPU node pool from the `gpu` stanza and a [`GpuPoolSpec`]: size (fixed or
    /// autoscaling, checked), disk, Spot VMs and the GKE-managed driver, in the blueprint's zone
    /// (GPU models are offered zone by zone). On another blueprint's cluster the pool name
    /// carries the blueprint name, so pools of two blueprints never collide.
    pub fn sized_gpu_pool(
        &mut self,
        planner: &mut Planner<'_>,
        cluster: &ClusterHandle,
        gpu: &GpuPlan,
        spec: &GpuPoolSpec,
        defaults: &GpuPoolDefaults<'_>,
        service_account: &AccountHandle,
    ) -> GpuPoolHandle {
        let scale = scale_of(
            planner,
            spec.node_count,
            spec.autoscaling,
            defaults.field,
            defaults.scale,
        );
        let resource_id = match &spec.name {
            Some(name) => {
                planner.check_name(
                    rule::RESOURCE_NAME,
                    &format!("{}.name", defaults.field),
                    name,
                    |n| names::limited(n, 40),
                );
                name.clone()
            }
            None if cluster.borrowed => {
                names::derived(&self.blueprint, &format!("-{}", defaults.name), 1, 40)
            }
            None => defaults.name.to_string(),
        };
        let node_locations = vec![self.zone.clone()];
        let zones = u32::try_from(node_locations.len()).unwrap_or(1);
        let (min_nodes, max_nodes) = match scale {
            Scale::Fixed { nodes } => (nodes, nodes),
            Scale::Autoscaling { min, max } => (min, max),
        };
        self.node_pool(NodePoolInput {
            resource_id: resource_id.clone(),
            cluster,
            node_locations,
            scale,
            machine_type: gpu.machine_type.clone(),
            disk_size_gb: spec.disk_size_gb.or(defaults.disk_size_gb),
            spot: spec.spot,
            service_account,
            labels: defaults.labels.clone(),
            taints: Vec::new(),
            placement: None,
            guest_accelerators: guest_accelerators(
                gpu,
                spec.driver_version.unwrap_or(GpuDriverVersion::Default),
            ),
        });
        GpuPoolHandle {
            name: resource_id,
            min_nodes: min_nodes.saturating_mul(zones),
            max_nodes: max_nodes.saturating_mul(zones),
            gpus_per_node: gpu.count,
        }
    }

    fn node_pool(&mut self, input: NodePoolInput<'_>) {
        let mut depends_on: Vec<Dependency> = input.cluster.dependency.iter().cloned().collect();
        depends_on.extend(input.service_account.dependency.clone());
        let name = if input.resource_id.starts_with(&self.blueprint) {
            input.resource_id.clone()
        } else {
            format!("{}-{}", self.blueprint, input.resource_id)
        };
        self.infra.node_pools.push(NodePoolPlan {
            meta: Meta::new(name, depends_on),
            resource_id: input.resource_id,
            location: input.cluster.location.clone(),
            node_locations: input.node_locations,
            cluster: input.cluster.reference.clone(),
            scale: input.scale,
            machine_type: input.machine_type,
            disk_size_gb: input.disk_size_gb,
            spot: input.spot,
            service_account: input.service_account.reference.clone(),
            labels: input.labels,
            taints: input.taints,
            placement: input.placement,
            guest_accelerators: input.guest_accelerators,
        });
    }

    /// Grants `role` on the project to `account`.
    pub fn project_role(&mut self, account: &AccountHandle, role: &str) {
        let name = format!(
            "{}-{}-{}",
            self.blueprint,
            account.label,
            names::role_slug(role)
        );
        self.infra.iam_members.push(IamMemberPlan {
            meta: Meta::new(name, account.dependency.clone()),
            member: account.member(),
            role: role.to_string(),
            resource: IamResource {
                api_version: None,
                kind: "Project".into(),
                reference: Ref::external(format!("projects/{}", self.project)),
            },
        });
    }

    /// Grants `role` on `bucket` to `account`.
    pub fn bucket_role(&mut self, bucket: &BucketHandle, account: &AccountHandle, role: &str) {
        self.grant(&bucket.iam_target(), account, role);
    }

    /// Grants `role` on a resource to `account`.
    pub fn grant(&mut self, target: &IamTarget, account: &AccountHandle, role: &str) {
        let name = format!(
            "{}-{}-{}-{}",
            self.blueprint,
            account.label,
            target.label.replace(['_', '.'], "-").to_lowercase(),
            names::role_slug(role)
        );
        let depends_on = account.dependency.iter().chain(&target.dependency).cloned();
        self.infra.iam_members.push(IamMemberPlan {
            meta: Meta::new(name, depends_on),
            member: account.member(),
            role: role.to_string(),
            resource: target.resource.clone(),
        });
    }

    /// Grants `role` on the project to a principal that is no service account of the
    /// blueprint (a Google service agent); `label` names the binding object.
    pub fn project_role_for(&mut self, principal: &str, label: &str, role: &str) {
        let name = format!("{}-{label}-{}", self.blueprint, names::role_slug(role));
        self.infra.iam_members.push(IamMemberPlan {
            meta: Meta::new(name, []),
            member: Member::Principal {
                member: principal.to_string(),
            },
            role: role.to_string(),
            resource: IamResource {
                api_version: None,
                kind: "Project".into(),
                reference: Ref::external(format!("projects/{}", self.project)),
            },
        });
    }

    /// Lets the Kubernetes service account `namespace/ksa` act as `account` (Workload
    /// Identity). The cluster must exist first: it creates the project's identity pool.
    pub fn workload_identity(
        &mut self,
        account: &AccountHandle,
        cluster: &ClusterHandle,
        namespace: &str,
        kubernetes_service_account: &str,
    ) {
        // Pods exchange their Kubernetes token for Google credentials through this API.
        self.api("iamcredentials.googleapis.com");
        let name = format!(
            "{}-{}-workload-identity-user",
            self.blueprint, account.label
        );
        let depends_on = account
            .dependency
            .iter()
            .chain(&cluster.dependency)
            .cloned();
        let reference = match &account.dependency {
            Some(_) => account.reference.clone(),
            // An existing account may live in another project: its email says which.
            None => Ref::external(format!(
                "projects/{}/serviceAccounts/{}",
                account_project(&account.email).unwrap_or(&self.project),
                account.email
            )),
        };
        self.infra.iam_members.push(IamMemberPlan {
            meta: Meta::new(name, depends_on),
            member: Member::Principal {
                member: format!(
                    "serviceAccount:{}[{namespace}/{kubernetes_service_account}]",
                    cluster.workload_pool()
                ),
            },
            role: "roles/iam.workloadIdentityUser".into(),
            resource: IamResource {
                api_version: Some(format!("iam.{CNRM}/v1beta1")),
                kind: "IAMServiceAccount".into(),
                reference,
            },
        });
    }

    /// Plans a bucket: created (kept when the object is deleted: data outlives the
    /// infrastructure) or existing. `default_name` applies when the spec names none.
    pub fn bucket(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &BucketSpec,
        field: &str,
        default_name: &str,
    ) -> BucketHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::BUCKET_NAME,
            names::bucket,
            self.project_valid,
        );
        if spec.existing {
            if spec.location.is_some() {
                let d = planner.error(
                    rule::CONFLICT,
                    &format!("{field}.location"),
                    "an existing bucket keeps its own location",
                );
                d.fix = Some(format!("remove `{field}.location`, or `existing: true`"));
            }
            return BucketHandle {
                reference: Ref::external(name.clone()),
                name,
                dependency: None,
            };
        }
        let storage = self.api("storage.googleapis.com");
        check_location(planner, field, spec.location.as_deref());
        let location = spec
            .location
            .clone()
            .unwrap_or_else(|| self.region.clone())
            .to_uppercase();
        self.infra.buckets.push(BucketPlan {
            meta: Meta::new(name.clone(), [storage]).abandon_on_delete(),
            location,
        });
        BucketHandle {
            reference: Ref::name(name.clone()),
            dependency: Some(self.dependency("storage", "StorageBucket", &name)),
            name,
        }
    }

    /// Plans a Docker repository in Artifact Registry.
    pub fn registry(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &RegistrySpec,
        field: &str,
        description: &str,
    ) -> RegistryHandle {
        let blueprint = self.blueprint.clone();
        let name = named(
            planner,
            spec.name.as_ref(),
            &blueprint,
            field,
            rule::RESOURCE_NAME,
            names::resource,
            true,
        );
        check_location(planner, field, spec.location.as_deref());
        let location = spec.location.clone().unwrap_or_else(|| self.region.clone());
        let url = format!("{location}-docker.pkg.dev/{}/{name}", self.project);
        if !spec.existing {
            let api = self.api("artifactregistry.googleapis.com");
            self.infra.registries.push(RegistryPlan {
                meta: Meta::new(name, [api]).abandon_on_delete(),
                location,
                description: description.to_string(),
            });
        }
        RegistryHandle { url }
    }

    /// Plans a Pub/Sub topic, with a message schema (`PROTOCOL_BUFFER` text) when given.
    pub fn topic(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &TopicSpec,
        field: &str,
        default_name: &str,
        schema: Option<&str>,
    ) -> TopicHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::RESOURCE_NAME,
            names::pubsub,
            true,
        );
        if spec.existing {
            return TopicHandle {
                reference: Ref::external(format!("projects/{}/topics/{name}", self.project)),
                name,
                dependency: None,
            };
        }
        let api = self.api("pubsub.googleapis.com");
        let object = object_name(&name);
        let mut depends_on = vec![api.clone()];
        let schema = schema.map(|definition| {
            let schema_object = format!("{object}-schema");
            depends_on.push(self.dependency("pubsub", "PubSubSchema", &schema_object));
            self.infra.message_schemas.push(MessageSchemaPlan {
                meta: Meta::new(schema_object.clone(), [api]),
                schema_type: "PROTOCOL_BUFFER".into(),
                definition: definition.to_string(),
            });
            Ref::name(schema_object)
        });
        self.infra.topics.push(TopicPlan {
            meta: Meta::new(object.clone(), depends_on),
            schema,
        });
        TopicHandle {
            reference: Ref::name(object.clone()),
            dependency: Some(self.dependency("pubsub", "PubSubTopic", &object)),
            name,
        }
    }

    /// Plans a subscription of `topic` that writes each message into `table` of `dataset`,
    /// field by field along the topic's schema, with the message metadata.
    pub fn bigquery_subscription(
        &mut self,
        name: &str,
        topic: &TopicHandle,
        dataset: &DatasetHandle,
        table: &str,
    ) {
        let table_object = table_object_name(dataset, table);
        let mut depends_on: Vec<Dependency> = topic.dependency.iter().cloned().collect();
        depends_on.extend(dataset.dependency.clone());
        let table_ref = if dataset.dependency.is_some() {
            depends_on.push(self.dependency("bigquery", "BigQueryTable", &table_object));
            Ref::name(table_object)
        } else {
            Ref::external(format!(
                "projects/{}/datasets/{}/tables/{table}",
                self.project, dataset.name
            ))
        };
        self.infra.subscriptions.push(SubscriptionPlan {
            meta: Meta::new(name, depends_on),
            topic: topic.reference.clone(),
            bigquery: Some(BigQueryDelivery {
                table: table_ref,
                use_topic_schema: true,
                write_metadata: true,
            }),
        });
    }

    /// Plans a BigQuery dataset.
    pub fn dataset(
        &mut self,
        planner: &mut Planner<'_>,
        spec: &DatasetSpec,
        field: &str,
        default_name: &str,
    ) -> DatasetHandle {
        let name = named(
            planner,
            spec.name.as_ref(),
            default_name,
            field,
            rule::RESOURCE_NAME,
            names::bigquery,
            true,
        );
        if spec.existing {
            if spec.location.is_some() {
                let d = planner.error(
                    rule::CONFLICT,
                    &format!("{field}.location"),
                    "an existing dataset keeps its own location",
                );
                d.fix = Some(format!("remove `{field}.location`, or `existing: true`"));
            }
            return DatasetHandle {
                reference: Ref::external(format!("projects/{}/datasets/{name}", self.project)),
                name,
                dependency: None,
            };
        }
        let api = self.api("bigquery.googleapis.com");
        check_location(planner, field, spec.location.as_deref());
        let object = object_name(&name);
        let location = spec.location.clone().unwrap_or_else(|| self.region.clone());
        self.infra.datasets.push(DatasetPlan {
            meta: Meta::new(object.clone(), [api]).abandon_on_delete(),
            resource_id: name.clone(),
            location,
        });
        DatasetHandle {
            reference: Ref::name(object.clone()),
            dependency: Some(self.dependency("bigquery", "BigQueryDataset", &object)),
            name,
        }
    }

    /// Plans a BigQuery table with `columns` in `dataset`.
    pub fn table(&mut self, dataset: &DatasetHandle, name: &str, columns: Vec<Column>) {
        self.infra.tables.push(TablePlan {
            meta: Meta::new(table_object_name(dataset, name), dataset.dependency.clone())
                .abandon_on_delete(),
            resource_id: name.to_string(),
            dataset: dataset.reference.clone(),
            schema: serde_json::to_string(&columns).unwrap_or_default(),
            columns,
        });
    }

    /// The planned infrastructure.
    #[must_use]
    pub fn finish(self) -> Infrastructure {
        self.infra
    }
}

/// The project of a user-managed service account, from its email
/// (`<id>@<project>.iam.gserviceaccount.com`); `None` for Google-managed accounts.
fn account_project(email: &str) -> Option<&str> {
    email
        .split_once('@')?
        .1
        .strip_suffix(".iam.gserviceaccount.com")
}

/// The name a spec part gives (or `default`), checked at `<field>.name` with `check`. Names
/// defaulted from a bad project id are not checked again.
fn named(
    planner: &mut Planner<'_>,
    given: Option<&String>,
    default: &str,
    field: &str,
    rule: &'static str,
    check: fn(&str) -> Result<(), String>,
    check_default: bool,
) -> String {
    let name = given.cloned().unwrap_or_else(|| default.to_string());
    if given.is_some() || check_default {
        planner.check_name(rule, &format!("{field}.name"), &name, check);
    }
    name
}

/// Table ids repeat across datasets; their object names carry the dataset.
fn table_object_name(dataset: &DatasetHandle, table: &str) -> String {
    format!("{}-{}", object_name(&dataset.name), object_name(table))
}

/// Everything a node pool needs, gathered by the public pool planners.
struct NodePoolInput<'h> {
    resource_id: String,
    cluster: &'h ClusterHandle,
    node_locations: Vec<String>,
    scale: Scale,
    machine_type: String,
    disk_size_gb: Option<u32>,
    spot: bool,
    service_account: &'h AccountHandle,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    placement: Option<PlacementPlan>,
    guest_accelerators: Vec<GuestAccelerator>,
}

/// The GPUs of every node of a pool, with GKE installing the driver. Accelerator-optimized
/// machine types (A2, A3, G2 …) carry their GPUs anyway, but only a declared accelerator tells
/// GKE which driver to install, so every GPU pool declares it.
fn guest_accelerators(gpu: &GpuPlan, driver: GpuDriverVersion) -> Vec<GuestAccelerator> {
    let version = match driver {
        GpuDriverVersion::Default => "DEFAULT",
        GpuDriverVersion::Latest => "LATEST",
    };
    vec![GuestAccelerator {
        accelerator: gpu.accelerator.to_string(),
        count: gpu.count,
        driver_version: Some(version.to_string()),
    }]
}

/// Kubernetes object names allow no `_`; BigQuery ids allow nothing else between words.
fn object_name(bigquery_id: &str) -> String {
    bigquery_id.to_lowercase().replace('_', "-")
}

/// A node pool's size from `nodeCount` or `autoscaling` (not both), checked.
fn scale_of(
    planner: &mut Planner<'_>,
    node_count: Option<u32>,
    autoscaling: Option<AutoscalingSpec>,
    field: &str,
    default: Scale,
) -> Scale {
    match (node_count, autoscaling) {
        (Some(_), Some(_)) => {
            let d = planner.error(
                rule::CONFLICT,
                &format!("{field}.autoscaling"),
                "a node pool has either a fixed `nodeCount` or `autoscaling`, not both",
            );
            d.fix = Some(format!(
                "remove `{field}.nodeCount` or `{field}.autoscaling`"
            ));
            default
        }
        (Some(nodes), None) => {
            if nodes > MAX_NODES_PER_POOL {
                too_many(planner, &format!("{field}.nodeCount"), nodes);
            }
            Scale::Fixed { nodes }
        }
        (None, Some(bounds)) => {
            if bounds.max_nodes > MAX_NODES_PER_POOL {
                too_many(
                    planner,
                    &format!("{field}.autoscaling.maxNodes"),
                    bounds.max_nodes,
                );
            } else if bounds.min_nodes > bounds.max_nodes || bounds.max_nodes == 0 {
                let d = planner.error(
                    rule::NODE_POOL_SIZE,
                    &format!("{field}.autoscaling"),
                    format!(
                        "autoscaling from {} to {} nodes cannot work",
                        bounds.min_nodes, bounds.max_nodes
                    ),
                );
                d.expected = Some("`minNodes` ≤ `maxNodes` and `maxNodes` ≥ 1".into());
            }
            Scale::Autoscaling {
                min: bounds.min_nodes,
                max: bounds.max_nodes,
            }
        }
        (None, None) => default,
    }
}

/// Checks the `location` a spec part gives, if any.
fn check_location(planner: &mut Planner<'_>, field: &str, location: Option<&str>) {
    if let Some(location) = location
        && let Err(reason) = names::data_location(location)
    {
        let d = planner.error(
            rule::LOCATION,
            &format!("{field}.location"),
            format!("invalid location `{location}`: {reason}"),
        );
        d.found = Some(location.to_string());
    }
}

fn too_many(planner: &mut Planner<'_>, field: &str, nodes: u32) {
    let d = planner.error(
        rule::NODE_POOL_SIZE,
        field,
        format!(
            "{nodes} nodes exceed GKE's limit of {MAX_NODES_PER_POOL} nodes per node pool and zone"
        ),
    );
    d.expected = Some(format!("at most {MAX_NODES_PER_POOL}"));
}

/// Parses the subnet's ranges (each defaulted), reporting malformed ranges, host bits set
/// and overlaps; returns them as written (or defaulted).
fn check_ranges<const N: usize>(
    planner: &mut Planner<'_>,
    ranges: [(&str, &Option<String>, &str); N],
) -> [String; N] {
    let mut parsed: Vec<(&str, Ipv4Net)> = Vec::new();
    let texts = ranges.map(|(field, value, default)| {
        let text = value.clone().unwrap_or_else(|| default.to_string());
        match text.parse::<Ipv4Net>() {
            Ok(net) if net.addr() != net.network() => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("`{text}` has host bits set"),
                );
                d.found = Some(text.clone());
                d.expected = Some(format!("the network address of a /{}", net.prefix_len()));
                d.fix = Some(format!("use `{}`", net.trunc()));
            }
            Ok(net) if net.prefix_len() > 29 => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("`{text}` is too small for a GKE range"),
                );
                d.expected = Some("a prefix length of /29 or shorter".into());
            }
            Ok(net) => parsed.push((field, net)),
            Err(_) => {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    field,
                    format!("invalid CIDR range `{text}`"),
                );
                d.found = Some(text.clone());
                d.expected = Some("an IPv4 range such as `10.129.0.0/20`".into());
            }
        }
        text
    });
    for (index, (field, net)) in parsed.iter().enumerate() {
        for (other_field, other) in &parsed[index + 1..] {
            if net.contains(&other.network()) || other.contains(&net.network()) {
                let d = planner.error(
                    rule::NETWORK_CIDR,
                    other_field,
                    format!("`{other}` overlaps `{net}` of `{field}`"),
                );
                d.expected = Some("node, pod and service ranges that do not overlap".into());
            }
        }
    }
    texts
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blueprint::Blueprint;
    use crate::kinds::Registry;
    use crate::plan::Repository;

    #[test]
    fn an_existing_account_is_found_in_the_project_its_email_names() {
        assert_eq!(
            account_project("trainer@ml-identities.iam.gserviceaccount.com"),
            Some("ml-identities")
        );
        assert_eq!(
            account_project("123-compute@developer.gserviceaccount.com"),
            None
        );
        assert_eq!(account_project("not-an-email"), None);
    }

    const BLUEPRINT: &str = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: blocks}\nspec:\n  project: my-project\n  tpu: {type: v4-8}\n";

    /// Plans one of every building block with `plan` and renders it with the production
    /// template; returns the YAML and the findings.
    fn with_planner(plan: impl FnOnce(&mut Planner<'_>, &mut Gcp)) -> (String, Vec<String>) {
        let documents = crate::yaml::parse_documents(BLUEPRINT).unwrap();
        let registry = Registry::builtin();
        let blueprint =
            Blueprint::from_node("blueprints/b.yaml", &documents[0], &registry).unwrap();
        let repository = Repository::new();
        let mut planner = Planner::new(&blueprint, &repository);
        let config_connector = ConfigConnectorSpec::default();
        let mut gcp = Gcp::new(
            &mut planner,
            SiteSpec {
                project: "my-project",
                region: "us-central1",
                zone: "us-central1-a",
                config_connector: &config_connector,
            },
        );
        plan(&mut planner, &mut gcp);
        let infra = gcp.finish();
        #[derive(serde::Serialize)]
        struct Context {
            infra: Infrastructure,
        }
        let text = crate::overlay::render("gcp/config-connector.yaml", &Context { infra }).unwrap();
        let findings = planner
            .finish()
            .into_iter()
            .map(|d| {
                format!(
                    "{}: {} ({})",
                    d.rule,
                    d.message,
                    d.field.unwrap_or_default()
                )
            })
            .collect();
        (text, findings)
    }

    #[test]
    fn every_block_renders_through_its_macro() {
        let (text, findings) = with_planner(|planner, gcp| {
            let nodes = gcp.service_account(
                planner,
                &ServiceAccountSpec::default(),
                "spec.a",
                "node",
                "Nodes",
            );
            let cluster = gcp
                .cluster(
                    planner,
                    &ClusterSpec::default(),
                    &NetworkSpec::default(),
                    ClusterOptions {
                        default_location: "us-central1",
                        addons: Addons {
                            managed_prometheus: true,
                            horizontal_pod_autoscaling: true,
                            ..Addons::default()
                        },
                    },
                    &nodes,
                )
                .unwrap();
            assert!(gcp.gateway_api(planner, &cluster, &NetworkSpec::default(), true));
            let gpu = GpuPlan {
                accelerator: "nvidia-tesla-t4",
                count: 1,
                machine_type: "n1-standard-4".into(),
                attached: true,
            };
            gcp.gpu_pool(
                &cluster,
                "gpu-pool",
                &gpu,
                Scale::Autoscaling { min: 1, max: 3 },
                &nodes,
            );
            let bucket = gcp.bucket(
                planner,
                &BucketSpec::default(),
                "spec.bucket",
                "my-project-models",
            );
            gcp.bucket_role(&bucket, &nodes, "roles/storage.objectViewer");
            gcp.registry(planner, &RegistrySpec::default(), "spec.registry", "Images");
            let topic = gcp.topic(
                planner,
                &TopicSpec::default(),
                "spec.topic",
                "metrics",
                Some("syntax = \"proto3\";\nmessage Metrics { string test_id = 1; }\n"),
            );
            let publisher = gcp.service_account(
                planner,
                &ServiceAccountSpec::default(),
                "spec.b",
                "wi",
                "Workloads",
            );
            gcp.grant(&topic.iam_target(), &publisher, "roles/pubsub.publisher");
            gcp.project_role_for(
                "serviceAccount:service-123@gcp-sa-pubsub.iam.gserviceaccount.com",
                "pubsub-agent",
                "roles/bigquery.dataEditor",
            );
            let dataset = gcp.dataset(
                planner,
                &DatasetSpec::default(),
                "spec.dataset",
                "load_tests",
            );
            gcp.table(
                &dataset,
                "requests",
                vec![Column {
                    name: "latency".into(),
                    column_type: "FLOAT".into(),
                    mode: "NULLABLE".into(),
                }],
            );
            gcp.bigquery_subscription("metrics-to-bigquery", &topic, &dataset, "requests");
        });
        assert!(findings.is_empty(), "{findings:?}");
        let documents = crate::yaml::parse_documents(&text).unwrap();
        // Every macro's output is what Config Connector accepts.
        let schemas = crate::schema::Schemas::embedded();
        let options = crate::schema::CheckOptions { strict: true };
        for document in &documents {
            let object = crate::validate::Object::from_node("config-connector.yaml", document)
                .expect("an object");
            let problems = schemas.check_with_source(&object, &text, &options);
            assert!(problems.is_empty(), "{}: {problems:#?}", object.id);
        }
        let mut kinds: Vec<&str> = documents
            .iter()
            .filter_map(|d| d.get("kind").and_then(crate::yaml::Node::as_str))
            .collect();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(
            kinds,
            [
                "ArtifactRegistryRepository",
                "BigQueryDataset",
                "BigQueryTable",
                "ComputeNetwork",
                "ComputeSubnetwork",
                "ContainerCluster",
                "ContainerNodePool",
                "IAMPolicyMember",
                "IAMServiceAccount",
                "PubSubSchema",
                "PubSubSubscription",
                "PubSubTopic",
                "Service",
                "StorageBucket",
            ]
        );
        insta::assert_snapshot!(text);
    }

    #[test]
    fn gpu_pools_are_sized_from_their_spec_and_declare_the_driver() {
        let mut handles = Vec::new();
        let (text, findings) = with_planner(|planner, gcp| {
            let nodes = gcp.service_account(
                planner,
                &ServiceAccountSpec::default(),
                "spec.a",
                "node",
                "Nodes",
            );
            let cluster = gcp
                .cluster(
                    planner,
                    &ClusterSpec::default(),
                    &NetworkSpec::default(),
                    ClusterOptions {
                        default_location: "us-central1-a",
                        addons: Addons::default(),
                    },
                    &nodes,
                )
                .unwrap();
            // L4s are built into G2 machine types; the pool still declares them for the driver.
            let l4 = GpuPlan {
                accelerator: "nvidia-l4",
                count: 2,
                machine_type: "g2-standard-24".into(),
                attached: false,
            };
            let defaults = GpuPoolDefaults {
                name: "gpu-pool",
                field: "spec.gpuPool",
                scale: Scale::Autoscaling { min: 1, max: 3 },
                disk_size_gb: Some(100),
                labels: BTreeMap::from([("aiml.dev/blueprint".into(), "blocks".into())]),
            };
            handles.push(gcp.sized_gpu_pool(
                planner,
                &cluster,
                &l4,
                &GpuPoolSpec {
                    autoscaling: Some(AutoscalingSpec {
                        min_nodes: 0,
                        max_nodes: 4,
                    }),
                    driver_version: Some(GpuDriverVersion::Latest),
                    spot: true,
                    ..GpuPoolSpec::default()
                },
                &defaults,
                &nodes,
            ));
            handles.push(gcp.sized_gpu_pool(
                planner,
                &cluster,
                &l4,
                &GpuPoolSpec {
                    name: Some("fixed".into()),
                    node_count: Some(2),
                    ..GpuPoolSpec::default()
                },
                &defaults,
                &nodes,
            ));
            // Bounds that cannot work, and a name GKE refuses, are findings.
            gcp.sized_gpu_pool(
                planner,
                &cluster,
                &l4,
                &GpuPoolSpec {
                    name: Some("GPU".into()),
                    autoscaling: Some(AutoscalingSpec {
                        min_nodes: 3,
                        max_nodes: 1,
                    }),
                    ..GpuPoolSpec::default()
                },
                &defaults,
                &nodes,
            );
        });
        assert_eq!(
            handles,
            [
                GpuPoolHandle {
                    name: "gpu-pool".into(),
                    min_nodes: 0,
                    max_nodes: 4,
                    gpus_per_node: 2,
                },
                GpuPoolHandle {
                    name: "fixed".into(),
                    min_nodes: 2,
                    max_nodes: 2,
                    gpus_per_node: 2,
                },
            ]
        );
        insta::assert_debug_snapshot!(findings, @r#"
        [
            "node-pool-size: autoscaling from 3 to 1 nodes cannot work (spec.gpuPool.autoscaling)",
            "gcp-resource-name: invalid name `GPU`: must start with a lowercase letter (spec.gpuPool.name)",
        ]
        "#);
        let pool = text
            .split("---\n")
            .find(|document| document.contains("resourceID: \"gpu-pool\""))
            .unwrap();
        insta::assert_snapshot!("gpu_pool_l4_spot_latest_driver", pool);
    }

    #[test]
    fn ranges_with_host_bits_or_overlaps_are_findings() {
        let (_, findings) = with_planner(|planner, gcp| {
            let network = NetworkSpec {
                nodes_cidr: Some("10.0.0.1/20".into()),
                pods_cidr: Some("10.0.0.0/14".into()),
                services_cidr: Some("10.0.16.0/20".into()),
                ..NetworkSpec::default()
            };
            gcp.network(planner, &network);
        });
        insta::assert_debug_snapshot!(findings, @r#"
        [
            "network-cidr: `10.0.0.1/20` has host bits set (spec.network.nodesCidr)",
            "network-cidr: `10.0.16.0/20` overlaps `10.0.0.0/14` of `spec.network.podsCidr` (spec.network.servicesCidr)",
        ]
        "#);
    }

    /// Plans a new cluster (with `network`) and a Gateway API ingress on it; returns the
    /// subnets' kinds and ranges, whether the cluster got the Gateway API, and the findings.
    fn gateway_on(network: &NetworkSpec, internal: bool) -> (Vec<String>, bool, Vec<String>) {
        let mut planned = (Vec::new(), false);
        let (_, findings) = with_planner(|planner, gcp| {
            let nodes = gcp.service_account(
                planner,
                &ServiceAccountSpec::default(),
                "spec.a",
                "node",
                "Nodes",
            );
            let cluster = gcp
                .cluster(
                    planner,
                    &ClusterSpec::default(),
                    network,
                    ClusterOptions {
                        default_location: "us-central1-a",
                        addons: Addons::default(),
                    },
                    &nodes,
                )
                .unwrap();
            let ready = gcp.gateway_api(planner, &cluster, network, internal);
            assert_eq!(ready, !network.existing || !internal);
            let subnets = gcp
                .infra
                .subnetworks
                .iter()
                .map(|s| format!("{} {:?}", s.cidr, s.purpose))
                .collect();
            let plan = &gcp.infra.clusters[0];
            assert!(
                plan.addons.http_load_balancing,
                "the Gateway controller needs it"
            );
            planned = (subnets, plan.gateway_api);
        });
        (planned.0, planned.1, findings)
    }

    #[test]
    fn gateway_api_enables_the_cluster_and_an_internal_one_gets_a_proxy_only_subnet() {
        let (subnets, enabled, findings) = gateway_on(&NetworkSpec::default(), true);
        assert!(enabled);
        assert!(findings.is_empty(), "{findings:?}");
        assert_eq!(subnets.len(), 2);
        assert_eq!(subnets[1], "10.129.16.0/23 ProxyOnly");
        // A global external load balancer needs no proxy-only subnet.
        let (subnets, enabled, _) = gateway_on(&NetworkSpec::default(), false);
        assert!(enabled);
        assert_eq!(subnets.len(), 1);
        // An existing VPC may have its region's one active proxy-only subnet already.
        let existing = NetworkSpec {
            existing: true,
            ..NetworkSpec::default()
        };
        let (subnets, enabled, _) = gateway_on(&existing, true);
        assert!(enabled);
        assert!(subnets.is_empty());
    }

    #[test]
    fn proxy_only_ranges_are_checked() {
        // The default range collides with wider node ranges only when it is used.
        let wide = NetworkSpec {
            nodes_cidr: Some("10.129.0.0/16".into()),
            ..NetworkSpec::default()
        };
        let (_, _, external) = gateway_on(&wide, false);
        assert!(external.is_empty(), "{external:?}");
        let (_, _, internal) = gateway_on(&wide, true);
        insta::assert_debug_snapshot!(internal, @r#"
        [
            "network-cidr: the default proxy-only range `10.129.16.0/23` overlaps `10.129.0.0/16` (spec.network.proxyOnlyCidr)",
        ]
        "#);
        // A range written down is checked with the subnet's, and must hold the proxies.
        let given = NetworkSpec {
            proxy_only_cidr: Some("192.168.64.0/27".into()),
            ..NetworkSpec::default()
        };
        let (subnets, _, findings) = gateway_on(&given, true);
        assert_eq!(subnets[1], "192.168.64.0/27 ProxyOnly");
        insta::assert_debug_snapshot!(findings, @r#"
        [
            "network-cidr: `192.168.64.0/27` overlaps `192.168.64.0/18` of `spec.network.podsCidr` (spec.network.proxyOnlyCidr)",
            "network-cidr: `192.168.64.0/27` is too small for a proxy-only subnet (spec.network.proxyOnlyCidr)",
        ]
        "#);
    }

    #[test]
    fn locations_are_checked() {
        let (_, findings) = with_planner(|planner, gcp| {
            let spec = ClusterSpec {
                location: Some("europe-west4".into()),
                ..ClusterSpec::default()
            };
            let nodes = gcp.service_account(
                planner,
                &ServiceAccountSpec::default(),
                "spec.a",
                "node",
                "Nodes",
            );
            gcp.cluster(
                planner,
                &spec,
                &NetworkSpec::default(),
                ClusterOptions {
                    default_location: "us-central1-a",
                    addons: Addons::default(),
                },
                &nodes,
            );
        });
        assert_eq!(
            findings,
            [
                "gcp-location: cluster location `europe-west4` is not in region `us-central1` (spec.cluster.location)"
            ]
        );
    }
}

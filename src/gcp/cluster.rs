//! The GKE cluster a blueprint runs on: one it creates (with its network), one that exists
//! already, or the cluster of another blueprint of the repository; and what a Gateway API
//! ingress needs of it.
//!
//! Its own module because create-or-reference is most involved here: a borrowed cluster is
//! found through the repository's exports and must agree on project, region and namespace,
//! and every conflicting field is a finding.

use ipnet::Ipv4Net;

use super::spec::{
    AuthorizedNetworkSpec, ClusterSpec, ConfigConnectorSpec, MaintenanceSpec, NetworkSpec,
    NodePoolSpec, ReleaseChannel,
};
use super::{
    AccountHandle, Addons, AuthorizedNetwork, ClusterPlan, Dependency, Gcp, Meta, Ref,
    conflicts_with_existing, error_at, location_error, maintenance, rule,
};
use crate::names;
use crate::plan::{ClusterExport, Exports, Planner};

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
    pub(super) reference: Ref,
    pub(super) dependency: Option<Dependency>,
}

impl ClusterHandle {
    /// `<project>.svc.id.goog`, the Workload Identity pool of the cluster's project.
    #[must_use]
    pub fn workload_pool(&self) -> String {
        workload_pool(&self.project)
    }
}

/// What a kind asks of a new cluster.
#[derive(Clone, Copy, Debug)]
pub struct ClusterOptions<'s> {
    /// Default location when the spec names none (a zone for TPU kinds, a region otherwise).
    pub default_location: &'s str,
    /// Add-ons the kind's workloads use.
    pub addons: Addons,
}

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
) -> Exports {
    if let Some(owner) = &cluster.blueprint {
        return Exports {
            cluster_of: Some(owner.clone()),
            ..Exports::default()
        };
    }
    Exports {
        cluster: Some(ClusterExport {
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
        ..Exports::default()
    }
}

impl Gcp {
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
                (
                    spec.authorized_networks.is_some(),
                    "spec.cluster.authorizedNetworks",
                ),
                (
                    spec.maintenance != MaintenanceSpec::default(),
                    "spec.cluster.maintenance",
                ),
            ] {
                if set {
                    conflicts_with_existing(
                        planner,
                        field,
                        format!("`{field}` has no effect on an existing cluster"),
                    );
                }
            }
            return Some(ClusterHandle {
                reference: existing_cluster(&self.project, &location, &name),
                name,
                project: self.project.clone(),
                location,
                owned: false,
                borrowed: false,
                dependency: None,
            });
        }
        let authorized_networks = authorized_networks(planner, spec.authorized_networks.as_deref());
        let (maintenance_window, maintenance_exclusions) =
            maintenance::plan(planner, &spec.maintenance, "spec.cluster.maintenance");
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
            workload_pool: workload_pool(&self.project),
            node_service_account: node_service_account.reference.clone(),
            addons: options.addons,
            gateway_api: false,
            authorized_networks,
            maintenance_window,
            maintenance_exclusions,
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
        self.proxy_only_subnet(planner, network_ref)
    }

    fn check_cluster_location(&self, planner: &mut Planner<'_>, location: &str) {
        let valid = names::zone(location).is_ok() || names::region(location).is_ok();
        if !valid {
            location_error(
                planner,
                "spec.cluster.location",
                format!("invalid cluster location `{location}`: a zone or a region"),
                location,
            );
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
            (
                spec.authorized_networks.is_some(),
                "spec.cluster.authorizedNetworks",
            ),
            (
                spec.maintenance != MaintenanceSpec::default(),
                "spec.cluster.maintenance",
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
        // The borrowed cluster must be in the project and region this blueprint plans in.
        let mismatches = [
            (
                "spec.project",
                &self.project,
                &cluster.project,
                format!(
                    "blueprint `{me}` is in project `{}` but the cluster of blueprint `{other}` is in `{}`",
                    self.project, cluster.project
                ),
            ),
            (
                "spec.region",
                &self.region,
                &cluster.region,
                format!(
                    "the cluster of blueprint `{other}` is in region `{}`, not `{}`",
                    cluster.region, self.region
                ),
            ),
        ];
        for (field, mine, theirs, message) in mismatches {
            if mine != theirs {
                let d = planner.error(rule::REFERENCE, field, message);
                d.fix = Some(format!("set `{field}: {theirs}`"));
            }
        }
        let reference = if !cluster.managed {
            existing_cluster(&cluster.project, &cluster.location, &cluster.name)
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
}

/// The networks allowed to reach a new cluster's control plane through its IP endpoint,
/// checked. None written: none besides the VPC, and people and tools reach the control plane
/// through its DNS endpoint, which IAM guards. An empty list says nothing the absent field
/// does not, and reads like "open": refused.
fn authorized_networks(
    planner: &mut Planner<'_>,
    given: Option<&[AuthorizedNetworkSpec]>,
) -> Vec<AuthorizedNetwork> {
    let field = "spec.cluster.authorizedNetworks";
    let Some(given) = given else {
        return Vec::new();
    };
    if given.is_empty() {
        let d = planner.error(
            rule::AUTHORIZED_NETWORKS,
            field,
            "`authorizedNetworks` is an empty list",
        );
        d.expected = Some("at least one `{cidr, name}`, or no field".into());
        d.fix = Some(format!(
            "remove `{field}` (the control plane is then reached through its DNS endpoint, with IAM), or list the ranges that may reach its IP endpoint"
        ));
    }
    for (index, network) in given.iter().enumerate() {
        let at = format!("{field}[{index}].cidr");
        let cidr = &network.cidr;
        let d = match cidr.parse::<Ipv4Net>() {
            Ok(net) if net.addr() != net.network() => {
                let d = error_at(
                    planner,
                    rule::AUTHORIZED_NETWORKS,
                    &at,
                    format!("`{cidr}` has host bits set"),
                );
                d.fix = Some(format!("use `{}`", net.trunc()));
                d
            }
            Ok(net) if net.prefix_len() == 0 => {
                let d = error_at(
                    planner,
                    rule::AUTHORIZED_NETWORKS,
                    &at,
                    format!("`{cidr}` opens the control plane's IP endpoint to the internet"),
                );
                d.severity = crate::diagnostic::Severity::Warning;
                d.fix = Some(
                    "list the ranges of your offices, VPN or CI, or remove the field and use the DNS endpoint"
                        .into(),
                );
                d
            }
            Ok(_) => continue,
            Err(_) => {
                let d = error_at(
                    planner,
                    rule::AUTHORIZED_NETWORKS,
                    &at,
                    format!("invalid CIDR range `{cidr}`"),
                );
                d.expected = Some("an IPv4 range such as `203.0.113.0/24`".into());
                d
            }
        };
        d.found = Some(cidr.clone());
    }
    given
        .iter()
        .map(|network| AuthorizedNetwork {
            cidr: network.cidr.clone(),
            name: network.name.clone(),
        })
        .collect()
}

/// `<project>.svc.id.goog`: the Workload Identity pool GKE creates for a project.
fn workload_pool(project: &str) -> String {
    format!("{project}.svc.id.goog")
}

/// A cluster Config Connector does not manage, by its external id.
fn existing_cluster(project: &str, location: &str, name: &str) -> Ref {
    Ref::external(format!(
        "projects/{project}/locations/{location}/clusters/{name}"
    ))
}

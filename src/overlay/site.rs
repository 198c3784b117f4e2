//! The recipe every kind follows around its own workload: where the blueprint lives (region
//! and zone from the spec, the kind's defaults or a borrowed cluster), what it exports about
//! its cluster, its node and Workload Identity accounts, the cluster with its system pool,
//! and the grants that tie them together.
//!
//! Kinds declare the shared spec stanzas themselves (each field's description is part of the
//! kind's JSON Schema, which differs from kind to kind) and hand them here as [`Stanzas`],
//! usually through the `stanzas!` macro. It lives in `overlay`, the top of
//! the platform layer, because it drives [`crate::gcp`], which `plan` may not import.

use std::collections::BTreeMap;

use crate::accelerator::TpuPlan;
use crate::gcp::spec::{ClusterSpec, ConfigConnectorSpec, NetworkSpec, ServiceAccountSpec};
use crate::gcp::{
    self, AccountHandle, Addons, ClusterHandle, ClusterOptions, CpuPoolDefaults, Gcp,
    GpuPoolDefaults, Scale,
};
use crate::names::check_dns_label;
use crate::plan::{ClusterExport, Exports, Planner};

/// Node label that ties pods (and Kueue flavors) to this blueprint's accelerator pools, so
/// blueprints sharing a cluster never land on each other's nodes.
pub const BLUEPRINT_LABEL: &str = "aiml.dev/blueprint";

/// Project roles of a node service account: GKE's minimal node role (logging and monitoring
/// agents). Image pulls are granted on the blueprint's own repository
/// (`Gcp::registry_reader`), not on the project.
pub const NODE_PROJECT_ROLES: &[&str] = &["roles/container.defaultNodeServiceAccount"];

/// Roles on a blueprint's bucket for accounts that use its data: read and write objects, and
/// read the bucket's metadata (which `gcsfs` and TensorFlow's file system ask for).
pub const BUCKET_USER_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectUser",
];

/// The system pool of a cluster a blueprint creates; kinds change what they need with
/// `..SYSTEM_POOL`.
pub const SYSTEM_POOL: CpuPoolDefaults<'static> = CpuPoolDefaults {
    name: "cpu-pool",
    field: "spec.cluster.cpuPool",
    machine_type: "e2-standard-4",
    scale: Scale::Autoscaling { min: 1, max: 3 },
    disk_size_gb: Some(100),
    labels: &[("default-node-pool", "true")],
    taints: &[],
};

/// The spec stanzas every kind shares, as a kind's spec holds them.
#[derive(Clone, Copy, Debug)]
pub struct Stanzas<'s> {
    /// `spec.project`.
    pub project: &'s str,
    /// `spec.region`.
    pub region: Option<&'s str>,
    /// `spec.zone`.
    pub zone: Option<&'s str>,
    /// `spec.configConnector`.
    pub config_connector: &'s ConfigConnectorSpec,
    /// `spec.network`.
    pub network: &'s NetworkSpec,
    /// `spec.cluster` (or the cluster a kind derives from its spec).
    pub cluster: &'s ClusterSpec,
    /// `spec.namespace`.
    pub namespace: Option<&'s str>,
    /// `spec.kubernetesServiceAccount`.
    pub kubernetes_service_account: Option<&'s str>,
    /// `spec.allowTeardown`.
    pub allow_teardown: bool,
}

/// The [`Stanzas`] of a spec whose shared fields have the shared names.
macro_rules! stanzas {
    ($spec:expr) => {
        $crate::overlay::site::Stanzas {
            project: &$spec.project,
            region: $spec.region.as_deref(),
            zone: $spec.zone.as_deref(),
            config_connector: &$spec.config_connector,
            network: &$spec.network,
            cluster: &$spec.cluster,
            namespace: $spec.namespace.as_deref(),
            kubernetes_service_account: $spec.kubernetes_service_account.as_deref(),
            allow_teardown: $spec.allow_teardown,
        }
    };
}
pub(crate) use stanzas;

/// The node and workload accounts of a spec whose `serviceAccounts` has the shared names, for
/// [`Accounts::plan`].
macro_rules! accounts {
    ($spec:expr) => {
        (
            &$spec.service_accounts.nodes,
            &$spec.service_accounts.workload,
        )
    };
}
pub(crate) use accounts;

/// Where a kind puts a blueprint whose spec names no region or zone.
#[derive(Clone, Copy, Debug)]
pub struct Location<'a> {
    /// Region when neither the spec nor a borrowed cluster names one.
    pub region: &'a str,
    /// The kind's zone, when the spec names no region and no cluster is borrowed.
    pub zone: Option<&'a str>,
    /// Letter of a region's default zone: `<region>-<zone_letter>`.
    pub zone_letter: &'a str,
    /// Whether a new cluster is regional; else it is zonal, in the zone.
    pub regional: bool,
    /// Whether a borrowed cluster's location is a default only when the spec names no region
    /// (else its zone is the default even then).
    pub borrow_without_region_only: bool,
}

impl<'a> Location<'a> {
    /// A zonal kind: `region`, its `<region>-<zone_letter>` zone, a zonal cluster there.
    #[must_use]
    pub const fn zonal(region: &'a str, zone_letter: &'a str) -> Self {
        Self {
            region,
            zone: None,
            zone_letter,
            regional: false,
            borrow_without_region_only: false,
        }
    }

    /// A regional kind: `region`, its `-a` zone for zonal resources, a regional cluster.
    #[must_use]
    pub const fn regional(region: &'a str) -> Self {
        Self {
            regional: true,
            ..Self::zonal(region, "a")
        }
    }

    /// Region and zone: the spec's, else those of the borrowed cluster, else the kind's.
    #[must_use]
    pub fn resolve(
        &self,
        region: Option<&str>,
        zone: Option<&str>,
        borrowed: Option<&ClusterExport>,
    ) -> (String, String) {
        let borrowed = borrowed.filter(|_| region.is_none() || !self.borrow_without_region_only);
        let resolved = region
            .map(str::to_string)
            .or_else(|| borrowed.map(|c| c.region.clone()))
            .unwrap_or_else(|| self.region.to_string());
        let zone = zone.map_or_else(
            || {
                if let Some(cluster) = borrowed.filter(|c| crate::names::zone(&c.location).is_ok())
                {
                    return cluster.location.clone();
                }
                match self.zone {
                    // The kind's zone goes with the kind's region.
                    Some(zone) if region.is_none() && borrowed.is_none() => zone.to_string(),
                    _ => format!("{resolved}-{}", self.zone_letter),
                }
            },
            str::to_string,
        );
        (resolved, zone)
    }
}

impl Stanzas<'_> {
    /// What the blueprint exports about its cluster (phase 1: no other blueprint is known,
    /// so the kind's defaults stand in for a borrowed cluster's location).
    #[must_use]
    pub fn exports(&self, blueprint: &str, location: &Location<'_>) -> Exports {
        let (region, zone) = location.resolve(self.region, self.zone, None);
        gcp::cluster_exports(
            blueprint,
            self.project,
            self.config_connector,
            self.cluster,
            &region,
            if location.regional { &region } else { &zone },
        )
    }
}

/// A blueprint's site: its stanzas, resolved region and zone.
#[derive(Clone, Debug)]
pub struct Site<'s> {
    /// The stanzas it came from.
    pub stanzas: Stanzas<'s>,
    /// `metadata.name`.
    pub name: String,
    /// Region, after defaults.
    pub region: String,
    /// Zone, after defaults.
    pub zone: String,
    regional: bool,
}

/// The node and Workload Identity service accounts of a blueprint.
#[derive(Clone, Debug)]
pub struct Accounts {
    /// Account of the nodes.
    pub nodes: AccountHandle,
    /// Workload Identity account of the workloads.
    pub workload: AccountHandle,
}

impl<'s> Site<'s> {
    /// Resolves the location (a cluster borrowed from another blueprint lends its own) and
    /// starts planning the blueprint's GCP objects there.
    pub fn open(
        planner: &mut Planner<'_>,
        stanzas: Stanzas<'s>,
        location: &Location<'_>,
    ) -> (Self, Gcp) {
        let borrowed = stanzas
            .cluster
            .blueprint
            .as_deref()
            .and_then(|other| planner.peek(other))
            .and_then(|exported| exported.exports.cluster.clone());
        let (region, zone) = location.resolve(stanzas.region, stanzas.zone, borrowed.as_ref());
        let gcp = Gcp::new(
            planner,
            gcp::SiteSpec {
                project: stanzas.project,
                region: &region,
                zone: &zone,
                config_connector: stanzas.config_connector,
                allow_teardown: stanzas.allow_teardown,
            },
        );
        let site = Self {
            stanzas,
            name: planner.name().to_string(),
            region,
            zone,
            regional: location.regional,
        };
        (site, gcp)
    }

    /// The namespace (default: the blueprint name) and the Kubernetes service account of the
    /// workloads (default `kubernetes_service_account`), both checked.
    pub fn names(
        &self,
        planner: &mut Planner<'_>,
        kubernetes_service_account: &str,
    ) -> (String, String) {
        let namespace = self.stanzas.namespace.unwrap_or(&self.name).to_string();
        let ksa = self
            .stanzas
            .kubernetes_service_account
            .unwrap_or(kubernetes_service_account)
            .to_string();
        for (field, value) in [
            ("spec.namespace", &namespace),
            ("spec.kubernetesServiceAccount", &ksa),
        ] {
            planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
        }
        (namespace, ksa)
    }

    /// A bucket's default name, `<project>-<blueprint><suffix>`: the project id leads, bucket
    /// names being global; `suffix` stays whole when the name must be shortened.
    #[must_use]
    pub fn bucket_name(&self, suffix: &str) -> String {
        crate::names::shortened(
            &format!("{}-{}", self.stanzas.project, self.name),
            suffix,
            63,
        )
    }

    /// Plans the cluster (default location: the region for a regional kind, else the zone)
    /// and, when the blueprint creates it, its `system_pool`.
    pub fn cluster(
        &self,
        gcp: &mut Gcp,
        planner: &mut Planner<'_>,
        addons: Addons,
        nodes: &AccountHandle,
        system_pool: Option<CpuPoolDefaults<'_>>,
    ) -> Option<ClusterHandle> {
        let cluster = gcp.cluster(
            planner,
            self.stanzas.cluster,
            self.stanzas.network,
            ClusterOptions {
                default_location: if self.regional {
                    &self.region
                } else {
                    &self.zone
                },
                addons,
            },
            nodes,
        )?;
        if let Some(defaults) = system_pool
            && cluster.owned
        {
            gcp.cpu_pool(
                planner,
                &cluster,
                &self.stanzas.cluster.cpu_pool,
                defaults,
                nodes,
            );
        }
        Some(cluster)
    }
}

impl Accounts {
    /// Enables the blueprint's `apis`, then plans the node account
    /// (`spec.serviceAccounts.nodes`, "node") and the workload account
    /// (`spec.serviceAccounts.workload`, "wi", usually read with `accounts!`), with
    /// their display names.
    pub fn plan(
        gcp: &mut Gcp,
        planner: &mut Planner<'_>,
        apis: &[&str],
        (nodes, workload): (&ServiceAccountSpec, &ServiceAccountSpec),
        (nodes_display, workload_display): (&str, &str),
    ) -> Self {
        for api in apis {
            gcp.api(api);
        }
        let nodes = gcp.service_account(
            planner,
            nodes,
            "spec.serviceAccounts.nodes",
            "node",
            nodes_display,
        );
        let workload = gcp.service_account(
            planner,
            workload,
            "spec.serviceAccounts.workload",
            "wi",
            workload_display,
        );
        Self { nodes, workload }
    }

    /// Reports the two as one account, which would let pods act as the nodes.
    #[must_use]
    pub fn distinct(self, planner: &mut Planner<'_>) -> Self {
        Gcp::require_distinct_accounts(planner, &self.nodes, &self.workload);
        self
    }

    /// Grants the nodes [`NODE_PROJECT_ROLES`] and the workload account `workload_roles` in
    /// the project, and lets `namespace/kubernetes_service_account` act as the workload
    /// account.
    pub fn bind(
        &self,
        gcp: &mut Gcp,
        cluster: &ClusterHandle,
        (namespace, kubernetes_service_account): (&str, &str),
        workload_roles: &[&str],
    ) {
        for role in NODE_PROJECT_ROLES {
            gcp.project_role(&self.nodes, role);
        }
        for role in workload_roles {
            gcp.project_role(&self.workload, role);
        }
        gcp.workload_identity(
            &self.workload,
            cluster,
            namespace,
            kubernetes_service_account,
        );
    }
}

/// Labels of a blueprint's accelerator pools.
#[must_use]
pub fn pool_labels(blueprint: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(BLUEPRINT_LABEL.to_string(), blueprint.to_string())])
}

/// The GPU pool most GPU kinds plan: `gpu-pool` (`spec.gpuPool`), autoscaling from 1 to 3
/// nodes, labelled for the blueprint.
#[must_use]
pub fn gpu_pool(blueprint: &str) -> GpuPoolDefaults<'static> {
    GpuPoolDefaults {
        name: "gpu-pool",
        field: "spec.gpuPool",
        scale: Scale::Autoscaling { min: 1, max: 3 },
        disk_size_gb: Some(100),
        labels: pool_labels(blueprint),
    }
}

/// Selects a blueprint's TPU slices: accelerator, topology and the blueprint's pools.
#[must_use]
pub fn tpu_node_selector(tpu: &TpuPlan, blueprint: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            crate::catalog::TPU_ACCELERATOR_LABEL.to_string(),
            tpu.accelerator.to_string(),
        ),
        (
            crate::catalog::TPU_TOPOLOGY_LABEL.to_string(),
            tpu.topology.clone(),
        ),
        (BLUEPRINT_LABEL.to_string(), blueprint.to_string()),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn borrowed(location: &str) -> ClusterExport {
        ClusterExport {
            project: "p".into(),
            name: "c".into(),
            location: location.into(),
            region: "europe-west4".into(),
            config_connector_namespace: "p".into(),
            managed: true,
        }
    }

    #[test]
    fn exports_name_the_cluster_at_the_kinds_default_location() {
        let (config_connector, network) = (ConfigConnectorSpec::default(), NetworkSpec::default());
        let cluster = ClusterSpec::default();
        let borrowed = ClusterSpec {
            blueprint: Some("other".into()),
            ..ClusterSpec::default()
        };
        let stanzas = |cluster| Stanzas {
            project: "p",
            region: None,
            zone: None,
            config_connector: &config_connector,
            network: &network,
            cluster,
            namespace: None,
            kubernetes_service_account: None,
            allow_teardown: false,
        };
        let location = |exports: Exports| exports.cluster.map(|c| (c.region, c.location));
        let zonal = Location::zonal("us-central2", "b");
        assert_eq!(
            location(stanzas(&cluster).exports("b", &zonal)),
            Some(("us-central2".into(), "us-central2-b".into()))
        );
        assert_eq!(
            location(stanzas(&cluster).exports("b", &Location::regional("us-west4"))),
            Some(("us-west4".into(), "us-west4".into()))
        );
        let exports = stanzas(&borrowed).exports("b", &zonal);
        assert_eq!(exports.cluster_of.as_deref(), Some("other"));
        assert!(exports.cluster.is_none());
    }

    #[test]
    fn location_defaults_follow_the_spec_then_a_borrowed_cluster_then_the_kind() {
        let zonal = Location::zonal("us-central2", "b");
        let resolve = |l: &Location<'_>, r, z, b: Option<&ClusterExport>| {
            let (region, zone) = l.resolve(r, z, b);
            format!("{region} {zone}")
        };
        let zonal_cluster = borrowed("europe-west4-c");
        let regional_cluster = borrowed("europe-west4");
        assert_eq!(
            resolve(&zonal, None, None, None),
            "us-central2 us-central2-b"
        );
        assert_eq!(
            resolve(&zonal, Some("us-east1"), None, None),
            "us-east1 us-east1-b"
        );
        assert_eq!(
            resolve(&zonal, None, None, Some(&zonal_cluster)),
            "europe-west4 europe-west4-c"
        );
        assert_eq!(
            resolve(&zonal, None, None, Some(&regional_cluster)),
            "europe-west4 europe-west4-b"
        );
        // The borrowed cluster's zone wins over the spec's region, unless the kind says not.
        assert_eq!(
            resolve(&zonal, Some("us-east1"), None, Some(&zonal_cluster)),
            "us-east1 europe-west4-c"
        );
        let strict = Location {
            zone: Some("us-west4-b"),
            borrow_without_region_only: true,
            ..Location::regional("us-west4")
        };
        assert_eq!(resolve(&strict, None, None, None), "us-west4 us-west4-b");
        assert_eq!(
            resolve(&strict, Some("us-east1"), None, Some(&zonal_cluster)),
            "us-east1 us-east1-a"
        );
        assert_eq!(
            resolve(&strict, None, Some("x-y1-z"), Some(&zonal_cluster)),
            "europe-west4 x-y1-z"
        );
    }
}

//! What removing a blueprint keeps: the GCP resources that hold capacity or data, and what a
//! kept cluster needs to keep working, are abandoned by Config Connector when their objects
//! are deleted (`cnrm.cloud.google.com/deletion-policy: abandon`), unless the blueprint says
//! `allowTeardown: true`.
//!
//! Why: a blueprint's objects are deleted whenever it leaves the sync root (removed, renamed,
//! moved to another folder), and Config Connector deletes the GCP resource of a deleted object
//! unless it is told to abandon it. Reserved TPU capacity may never come back, and a bucket's
//! data does not. Abandoned resources stay in GCP (and keep costing) until someone deletes
//! them; a blueprint added back under the same names acquires them again.
//!
//! [`PROTECTED`] is the one table of what is protected. A blueprint that allows teardown
//! renders its protected objects without the abandon policy and with [`TEARDOWN_ANNOTATION`],
//! so `diff --fail-on destructive` reads from the base revision alone (even when the blueprint
//! file is gone) that deleting them was allowed.

use std::collections::BTreeSet;

use super::{Infrastructure, Member, Meta, Ref};

/// Config Connector's annotation: `abandon` keeps the GCP resource when the object is deleted
/// (the default, `none`, deletes it).
pub const DELETION_POLICY: &str = "cnrm.cloud.google.com/deletion-policy";

/// The marker a blueprint with `allowTeardown: true` puts on each protected object: deleting
/// it (and so its GCP resource) was asked for.
pub const TEARDOWN_ANNOTATION: &str = "aiml.dev/allow-teardown";

/// Which objects of a protected kind are protected.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Every object of the kind.
    Always,
    /// Only a node service account (the account of a node pool or of a cluster's temporary
    /// default pool) and the roles granted to it.
    NodeAccount,
}

/// A protected Config Connector kind.
#[derive(Clone, Copy, Debug)]
pub struct Protected {
    /// API group, e.g. `container.cnrm.cloud.google.com`.
    pub group: &'static str,
    /// Kind, e.g. `ContainerCluster`.
    pub kind: &'static str,
    /// Which of its objects.
    pub scope: Scope,
    /// What deleting the resource destroys, in words.
    pub lost: &'static str,
    /// What an abandoned one does while it stays in GCP.
    pub while_kept: WhileKept,
}

/// What an abandoned resource does while it stays in GCP, for `diff` to say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhileKept {
    /// It is billed (VMs, the cluster fee, a NAT gateway, stored bytes).
    Billed,
    /// It costs nothing (networks, routers, service accounts).
    Free,
    /// It costs nothing but keeps granting access (an IAM grant).
    Grants,
}

/// The protected class. Clusters and every node pool (a kept cluster without its pools is
/// useless, and TPU and GPU pools hold capacity that may not come back); the VPC and subnets
/// the cluster runs in (GCP refuses to delete them under a running cluster anyway, which would
/// leave the deletion stuck), and its Cloud Router and NAT (a kept cluster's private nodes
/// pull images through them); the node service account and its roles (without them a kept
/// cluster's nodes cannot pull images, log, or be repaired and scaled); and data: buckets,
/// BigQuery datasets and tables, Artifact Registry repositories (images). Not Pub/Sub: a topic
/// holds no messages and the metrics subscription's rows land in the (protected) table, while
/// a kept subscription would keep writing into it. Not workload accounts and their grants:
/// the workloads are deleted with the blueprint. Enabled APIs are always abandoned
/// ([`super::Gcp::api`]): other blueprints of the project may use them.
pub const PROTECTED: &[Protected] = &[
    Protected {
        group: "container.cnrm.cloud.google.com",
        kind: "ContainerCluster",
        scope: Scope::Always,
        lost: "the cluster and every workload on it are torn down",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "container.cnrm.cloud.google.com",
        kind: "ContainerNodePool",
        scope: Scope::Always,
        lost: "its nodes are deleted",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "compute.cnrm.cloud.google.com",
        kind: "ComputeNetwork",
        scope: Scope::Always,
        lost: "the VPC is deleted",
        while_kept: WhileKept::Free,
    },
    Protected {
        group: "compute.cnrm.cloud.google.com",
        kind: "ComputeSubnetwork",
        scope: Scope::Always,
        lost: "the subnet is deleted",
        while_kept: WhileKept::Free,
    },
    Protected {
        group: "compute.cnrm.cloud.google.com",
        kind: "ComputeRouter",
        scope: Scope::Always,
        lost: "the Cloud Router and its NAT are deleted",
        while_kept: WhileKept::Free,
    },
    Protected {
        group: "compute.cnrm.cloud.google.com",
        kind: "ComputeRouterNAT",
        scope: Scope::Always,
        lost: "the private nodes lose their way to the internet (image pulls, model downloads)",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "iam.cnrm.cloud.google.com",
        kind: "IAMServiceAccount",
        scope: Scope::NodeAccount,
        lost: "the service account is deleted",
        while_kept: WhileKept::Free,
    },
    Protected {
        group: "iam.cnrm.cloud.google.com",
        kind: "IAMPolicyMember",
        scope: Scope::NodeAccount,
        lost: "the role is revoked",
        while_kept: WhileKept::Grants,
    },
    Protected {
        group: "storage.cnrm.cloud.google.com",
        kind: "StorageBucket",
        scope: Scope::Always,
        lost: "the bucket and the objects in it are deleted",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "bigquery.cnrm.cloud.google.com",
        kind: "BigQueryDataset",
        scope: Scope::Always,
        lost: "the dataset and its tables are deleted",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "bigquery.cnrm.cloud.google.com",
        kind: "BigQueryTable",
        scope: Scope::Always,
        lost: "the table and its data are deleted",
        while_kept: WhileKept::Billed,
    },
    Protected {
        group: "artifactregistry.cnrm.cloud.google.com",
        kind: "ArtifactRegistryRepository",
        scope: Scope::Always,
        lost: "the repository and its images are deleted",
        while_kept: WhileKept::Billed,
    },
];

/// The row of [`PROTECTED`] for objects of `kind` in `group` (full group), if any.
#[must_use]
pub fn protected(group: &str, kind: &str) -> Option<&'static Protected> {
    PROTECTED
        .iter()
        .find(|row| row.group == group && row.kind == kind)
}

/// Marks one protected object: kept when deleted, or, when teardown is allowed, marked so.
fn mark(meta: &mut Meta, allow_teardown: bool) {
    if allow_teardown {
        meta.annotations.remove(DELETION_POLICY);
        meta.annotations
            .insert(TEARDOWN_ANNOTATION.to_string(), "true".to_string());
    } else {
        meta.annotations
            .insert(DELETION_POLICY.to_string(), "abandon".to_string());
    }
}

impl Infrastructure {
    /// Applies [`PROTECTED`] to every planned object: abandoned on deletion, or marked as
    /// allowed to be torn down.
    pub(super) fn protect(&mut self, allow_teardown: bool) {
        // Node accounts created here, named by reference from this overlay's pools and
        // clusters.
        let node_accounts: BTreeSet<String> = self
            .node_pools
            .iter()
            .map(|pool| &pool.service_account)
            .chain(self.clusters.iter().map(|c| &c.node_service_account))
            .filter_map(local_name)
            .collect();
        for row in PROTECTED {
            for (meta, account) in self.metas_mut(row.kind) {
                let covered = match row.scope {
                    Scope::Always => true,
                    Scope::NodeAccount => account.is_some_and(|a| node_accounts.contains(&a)),
                };
                if covered {
                    mark(meta, allow_teardown);
                }
            }
        }
    }

    /// The metadata of every planned object of `kind`, each with the service account of this
    /// overlay it is (an account) or grants a role to (a binding).
    fn metas_mut(&mut self, kind: &str) -> Vec<(&mut Meta, Option<String>)> {
        fn all<T>(
            plans: &mut [T],
            meta: fn(&mut T) -> &mut Meta,
        ) -> Vec<(&mut Meta, Option<String>)> {
            plans.iter_mut().map(|plan| (meta(plan), None)).collect()
        }
        match kind {
            "ComputeNetwork" => all(&mut self.networks, |p| &mut p.meta),
            "ComputeSubnetwork" => all(&mut self.subnetworks, |p| &mut p.meta),
            "ComputeRouter" => all(&mut self.routers, |p| &mut p.meta),
            "ComputeRouterNAT" => all(&mut self.router_nats, |p| &mut p.meta),
            "ContainerCluster" => all(&mut self.clusters, |p| &mut p.meta),
            "ContainerNodePool" => all(&mut self.node_pools, |p| &mut p.meta),
            "IAMServiceAccount" => self
                .service_accounts
                .iter_mut()
                .map(|account| {
                    let name = account.meta.name.clone();
                    (&mut account.meta, Some(name))
                })
                .collect(),
            "IAMPolicyMember" => self
                .iam_members
                .iter_mut()
                .map(|grant| {
                    let account = match &grant.member {
                        Member::ServiceAccount { reference } => local_name(reference),
                        Member::Principal { .. } => None,
                    };
                    (&mut grant.meta, account)
                })
                .collect(),
            "StorageBucket" => all(&mut self.buckets, |p| &mut p.meta),
            "ArtifactRegistryRepository" => all(&mut self.registries, |p| &mut p.meta),
            "BigQueryDataset" => all(&mut self.datasets, |p| &mut p.meta),
            "BigQueryTable" => all(&mut self.tables, |p| &mut p.meta),
            _ => Vec::new(),
        }
    }
}

/// The object name of a reference to an object of this overlay's namespace.
fn local_name(reference: &Ref) -> Option<String> {
    match reference {
        Ref {
            name: Some(name),
            namespace: None,
            external: None,
        } => Some(name.clone()),
        _ => None,
    }
}

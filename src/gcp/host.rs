//! What the Config Connector host's Google service account needs: the IAM roles, on the
//! blueprints' project, that let Config Connector create every kind of object the tool
//! renders. The README's table is [`host_roles_table`]; a test derives the kinds from the
//! rendered output of the repository and its examples and holds both to this list.

use std::fmt::Write as _;

/// One role the Config Connector host's account needs on the project.
#[derive(Clone, Copy, Debug)]
pub struct HostRole {
    /// Predefined role, e.g. `roles/container.clusterAdmin`.
    pub role: &'static str,
    /// The rendered objects it is for: Config Connector kinds, and for bindings
    /// `IAMPolicyMember on <kind of the resource>`.
    pub kinds: &'static [&'static str],
    /// Why, in words.
    pub why: &'static str,
}

/// Every role, narrowest predefined one per kind (Google's role reference,
/// <https://cloud.google.com/iam/docs/understanding-roles>).
pub const HOST_ROLES: &[HostRole] = &[
    HostRole {
        role: "roles/serviceusage.serviceUsageAdmin",
        kinds: &["Service"],
        why: "enables the APIs the blueprints use",
    },
    HostRole {
        role: "roles/compute.networkAdmin",
        kinds: &[
            "ComputeNetwork",
            "ComputeSubnetwork",
            "ComputeRouter",
            "ComputeRouterNAT",
        ],
        why: "VPCs, subnets, Cloud Router and Cloud NAT",
    },
    HostRole {
        role: "roles/container.clusterAdmin",
        kinds: &["ContainerCluster", "ContainerNodePool"],
        why: "clusters and node pools",
    },
    HostRole {
        role: "roles/iam.serviceAccountUser",
        kinds: &["ContainerCluster", "ContainerNodePool"],
        why: "nodes run as the blueprint's node account (`iam.serviceAccounts.actAs`)",
    },
    HostRole {
        role: "roles/iam.serviceAccountAdmin",
        kinds: &["IAMServiceAccount", "IAMPolicyMember on IAMServiceAccount"],
        why: "service accounts, and Workload Identity bindings on them",
    },
    HostRole {
        role: "roles/resourcemanager.projectIamAdmin",
        kinds: &["IAMPolicyMember on Project"],
        why: "the project roles of node and workload accounts",
    },
    HostRole {
        role: "roles/storage.admin",
        kinds: &["StorageBucket", "IAMPolicyMember on StorageBucket"],
        why: "buckets and the grants on them",
    },
    HostRole {
        role: "roles/artifactregistry.admin",
        kinds: &[
            "ArtifactRegistryRepository",
            "IAMPolicyMember on ArtifactRegistryRepository",
        ],
        why: "image repositories and the grants on them",
    },
    HostRole {
        role: "roles/pubsub.admin",
        kinds: &[
            "PubSubSchema",
            "PubSubTopic",
            "PubSubSubscription",
            "IAMPolicyMember on PubSubTopic",
        ],
        why: "the metrics topic, its schema and subscription, publisher grants",
    },
    HostRole {
        role: "roles/bigquery.dataOwner",
        kinds: &[
            "BigQueryDataset",
            "BigQueryTable",
            "IAMPolicyMember on BigQueryTable",
        ],
        why: "the metrics dataset and table, and the Pub/Sub agent's grant on the table",
    },
    HostRole {
        role: "roles/secretmanager.admin",
        kinds: &["IAMPolicyMember on SecretManagerSecret"],
        why: "read grants on the secrets blueprints reference (the secrets are not created)",
    },
    HostRole {
        role: "roles/gkehub.admin",
        kinds: &[
            "GKEHubMembership",
            "GKEHubFeature",
            "GKEHubFeatureMembership",
        ],
        why: "fleet registration, Config Sync and managed Cloud Service Mesh",
    },
];

/// The README's table of [`HOST_ROLES`], one row per role.
#[must_use]
pub fn host_roles_table() -> String {
    let mut table = String::from("| role on the project | for | why |\n|---|---|---|\n");
    for row in HOST_ROLES {
        let kinds: Vec<String> = row.kinds.iter().map(|kind| format!("`{kind}`")).collect();
        // Writing to a String cannot fail.
        let _ = writeln!(
            table,
            "| `{}` | {} | {} |",
            row.role,
            kinds.join(", "),
            row.why
        );
    }
    table
}

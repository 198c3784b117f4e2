//! Shared GCP building blocks: every kind plans its infrastructure through these.
//!
//! A kind hands its spec parts ([`spec`]) to a [`Gcp`] builder, which checks names, CIDR ranges
//! and locations (findings go to the [`Planner`] at the blueprint's own lines), decides what to
//! create and what to reference (`existing: true`, or another blueprint's cluster), wires
//! references and apply order between objects, and collects everything into an
//! [`Infrastructure`]. `templates/config-connector.yaml` renders that with one macro per Config
//! Connector kind. No kind writes its own network, cluster, node pool or IAM binding: when a
//! kind needs something the blocks cannot express, extend the block.
//!
//! This file holds the builder's core: the site it plans in, the APIs it enables, the
//! depends-on keys it wires, and the checks every block shares. The blocks themselves are
//! `impl Gcp` sections grouped by what they build: `network` (VPC, subnets, ranges, Cloud
//! NAT), `cluster` (new, existing and borrowed clusters, control plane access, Gateway API
//! needs) with its `maintenance` window and exclusions, `pools` (CPU, GPU and
//! TPU node pools), `iam` (service accounts, role grants, Workload Identity) and `storage`
//! (buckets, registries, Pub/Sub, BigQuery), with the metrics sink built from those in `sink`.
//! `infra` types what they plan; `spec` is what people write; `protect` decides what removing
//! the blueprint keeps; `host` lists the roles Config Connector needs to create it all.

mod cluster;
mod host;
mod iam;
mod infra;
pub(crate) mod maintenance;
mod network;
mod pools;
mod protect;
mod sink;
pub mod spec;
mod storage;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;

use crate::diagnostic::Diagnostic;
use crate::names;
use crate::plan::Planner;
pub use cluster::{ClusterHandle, ClusterOptions, cluster_exports, cluster_name};
pub use host::{HOST_ROLES, HostRole, host_roles_table};
pub use iam::{AccountHandle, IamTarget};
pub use infra::*;
pub use network::NetworkHandle;
pub use pools::{
    CpuPoolDefaults, GpuPoolDefaults, GpuPoolHandle, allocatable_ephemeral_gib,
    boot_disk_for_ephemeral,
};
pub use protect::{
    DELETION_POLICY, PROTECTED, Protected, Scope, TEARDOWN_ANNOTATION, WhileKept, protected,
};
pub use sink::{METRICS_PROTO, metrics_topic_export};
use spec::ConfigConnectorSpec;
pub use storage::{
    Bucket, BucketHandle, Dataset, DatasetHandle, Handle, RegistryHandle, Resource, Topic,
    TopicHandle,
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
    /// `spec.allowTeardown`: removing the blueprint may delete what [`PROTECTED`] keeps.
    pub allow_teardown: bool,
}

/// A check of a name or location from [`names`]: why the text is no valid one.
type NameCheck = fn(&str) -> Result<(), String>;

/// Rule ids of the findings this module reports.
pub use crate::plan::rule;

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
    allow_teardown: bool,
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
        let checks: [(&str, &str, &str, NameCheck); 2] = [
            ("spec.region", "region", site.region, names::region),
            ("spec.zone", "zone", site.zone, names::zone),
        ];
        for (field, what, value, check) in checks {
            if let Err(reason) = check(value) {
                let message = format!("invalid {what} `{value}`: {reason}");
                location_error(planner, field, message, value);
            }
        }
        if names::zone(site.zone).is_ok() && names::region_of(site.zone) != site.region {
            let d = location_error(
                planner,
                "spec.zone",
                format!("zone `{}` is not in region `{}`", site.zone, site.region),
                site.zone,
            );
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
                names::check_dns_label,
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
            allow_teardown: site.allow_teardown,
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

    /// The name a spec part gives, else one derived from the blueprint's: `suffix` appended,
    /// `min` to `max` characters.
    fn given_or_derived(
        &self,
        given: Option<&String>,
        suffix: &str,
        min: usize,
        max: usize,
    ) -> String {
        given
            .cloned()
            .unwrap_or_else(|| names::derived(&self.blueprint, suffix, min, max))
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

    /// The planned infrastructure. Clusters and node pools wait for every role granted to the
    /// account they run as: nodes that start without them fail to pull images or to report,
    /// and grants may be planned after the pool. Protected objects are kept on deletion (or
    /// marked as allowed to be torn down).
    #[must_use]
    pub fn finish(mut self) -> Infrastructure {
        let infra = &mut self.infra;
        let (grants, namespace) = (&infra.iam_members, &infra.namespace);
        for cluster in &mut infra.clusters {
            let wait = iam::grants_to(grants, namespace, &cluster.node_service_account);
            add_dependencies(&mut cluster.meta, wait);
        }
        for pool in &mut infra.node_pools {
            let wait = iam::grants_to(grants, namespace, &pool.service_account);
            add_dependencies(&mut pool.meta, wait);
        }
        self.infra.protect(self.allow_teardown);
        self.infra
    }
}

/// Adds `more` to the objects `meta` depends on, kept sorted and unique.
fn add_dependencies(meta: &mut Meta, more: impl IntoIterator<Item = Dependency>) {
    meta.depends_on.extend(more);
    meta.depends_on.sort();
    meta.depends_on.dedup();
}

/// The name a spec part gives (or `default`), checked at `<field>.name` with `check`. Names
/// defaulted from a bad project id are not checked again.
fn named(
    planner: &mut Planner<'_>,
    given: Option<&String>,
    default: &str,
    field: &str,
    rule: &'static str,
    check: NameCheck,
    check_default: bool,
) -> String {
    let name = given.cloned().unwrap_or_else(|| default.to_string());
    if given.is_some() || check_default {
        planner.check_name(rule, &format!("{field}.name"), &name, check);
    }
    name
}

/// Records a `gcp-location` error at `field` about the location `found`; callers add what
/// was expected where they know it.
fn location_error<'p>(
    planner: &'p mut Planner<'_>,
    field: &str,
    message: String,
    found: &str,
) -> &'p mut Diagnostic {
    let d = planner.error(rule::LOCATION, field, message);
    d.found = Some(found.to_string());
    d
}

/// Records an error of `rule` at `field`, a dotted path whose segments may index a list
/// (`spec.cluster.maintenance.exclusions[1].end`): at that item's node when it exists, so the
/// line is the item's, else where [`Planner::error`] places it.
fn error_at<'p>(
    planner: &'p mut Planner<'_>,
    rule: &'static str,
    field: &str,
    message: impl Into<String>,
) -> &'p mut Diagnostic {
    let blueprint = planner.blueprint();
    let mut node = Some(blueprint.node);
    for segment in field.split('.') {
        let (key, index) = match segment.split_once('[') {
            Some((key, rest)) => (
                key,
                rest.strip_suffix(']').and_then(|i| i.parse::<usize>().ok()),
            ),
            None => (segment, None),
        };
        node = node.and_then(|n| n.get(key));
        if let Some(index) = index {
            node = node
                .and_then(crate::yaml::Node::as_seq)
                .and_then(|items: &[crate::yaml::Node]| items.get(index));
        }
    }
    match node {
        Some(node) if field.contains('[') => {
            let diagnostic = Diagnostic::error(rule, message)
                .at(blueprint.file, node.span)
                .field(field)
                .object(blueprint.object_ref());
            planner.push(diagnostic)
        }
        _ => planner.error(rule, field, message),
    }
}

/// Records a `conflict` error at `field`, which a resource that already exists (`existing:
/// true`) cannot take.
fn conflicts_with_existing(planner: &mut Planner<'_>, field: &str, message: impl Into<String>) {
    let d = planner.error(rule::CONFLICT, field, message);
    d.fix = Some(format!("remove `{field}`, or `existing: true`"));
}

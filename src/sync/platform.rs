//! The platform root of a cluster: the controllers its blueprints need, from the pinned
//! release manifests under `data/platform/` (`scripts/vendor-platform`, embedded by
//! `build.rs`).
//!
//! **What a cluster needs** comes from the rendered objects of every blueprint on it
//! ([`Uses`], kept in [`super::Roots`] and so in the render cache): each API group maps to a
//! [`Provider`] ([`provider`]); groups served by a platform [`Component`] put it on the
//! cluster, as do an HPA with `External` or `Object` metrics (the custom-metrics adapter).
//! A group with no provider is a bug of this table; a test over every example proves there
//! is none.
//!
//! **Where it lands.** Kueue's manifests are megabytes and a fleet has thousands of
//! blueprints on a few dozen clusters, so each component version is written once,
//! `rendered/_sync/platform/<component>-<version>/`, and every cluster that needs it syncs
//! that folder. Only what differs per cluster is written per cluster: the metrics adapter,
//! whose service account carries the cluster's Workload Identity account
//! (`rendered/_sync/platform/clusters/<p>/<l>/<c>/`).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::manifest::{self, Manifest};

include!(concat!(env!("OUT_DIR"), "/platform.rs"));

/// A controller `kubectl aiml` installs on the clusters that need it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Component {
    /// JobSet (`jobset.x-k8s.io`).
    JobSet,
    /// Kueue (`kueue.x-k8s.io`), with the tool's controller configuration.
    Kueue,
    /// LeaderWorkerSet (`leaderworkerset.x-k8s.io`).
    LeaderWorkerSet,
    /// The Custom Metrics Stackdriver Adapter: HPAs on `External` and `Object` metrics.
    MetricsAdapter,
}

impl Component {
    /// Every component, in the order a README lists them.
    pub const ALL: [Self; 4] = [
        Self::JobSet,
        Self::Kueue,
        Self::LeaderWorkerSet,
        Self::MetricsAdapter,
    ];

    /// Its folder under `data/platform/` and the stem of its names.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::JobSet => "jobset",
            Self::Kueue => "kueue",
            Self::LeaderWorkerSet => "lws",
            Self::MetricsAdapter => "custom-metrics-stackdriver-adapter",
        }
    }

    /// Its short name, in the names of its sync objects.
    #[must_use]
    pub fn short(self) -> &'static str {
        match self {
            Self::MetricsAdapter => "metrics-adapter",
            other => other.name(),
        }
    }

    /// The pinned version (the CRD schemas under `schemas/` pin the same).
    #[must_use]
    pub fn version(self) -> &'static str {
        match self {
            Self::JobSet => "v0.12.0",
            Self::Kueue => "v0.19.2",
            Self::LeaderWorkerSet => "v0.10.0",
            Self::MetricsAdapter => "v0.16.9-gke.0",
        }
    }

    /// What people call it.
    #[must_use]
    pub fn title(self) -> &'static str {
        match self {
            Self::JobSet => "JobSet",
            Self::Kueue => "Kueue",
            Self::LeaderWorkerSet => "LeaderWorkerSet",
            Self::MetricsAdapter => "Custom Metrics Stackdriver Adapter",
        }
    }

    /// The vendored file, relative to `data/platform/`.
    #[must_use]
    pub fn file(self) -> String {
        format!("{}/{}/manifests.yaml", self.name(), self.version())
    }

    /// Whether its objects are the same on every cluster (one shared folder).
    #[must_use]
    pub fn shared(self) -> bool {
        self != Self::MetricsAdapter
    }

    /// Its folder name under `rendered/_sync/platform/`.
    fn dir(self) -> String {
        format!("{}-{}", self.name(), self.version())
    }
}

/// Who serves an API group on a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Provider {
    /// A controller of the platform root.
    Platform(Component),
    /// Kubernetes itself.
    Kubernetes,
    /// GKE's Managed Service for Prometheus (on in clusters the blueprints create).
    ManagedPrometheus,
    /// GKE's Gateway controller (the Gateway API add-on).
    GkeGateway,
    /// Config Connector, on the host cluster (never a workload cluster).
    ConfigConnectorHost,
    /// Config Sync itself.
    ConfigSync,
    /// Argo CD itself.
    ArgoCd,
    /// Istio: a named prerequisite (in-cluster istiod or Cloud Service Mesh).
    Istio,
}

impl Provider {
    /// What a README says must be on the cluster for it.
    #[must_use]
    pub fn prerequisite(self) -> Option<&'static str> {
        match self {
            Self::Istio => Some(
                "Istio 1.30 (istiod with its `gateway` injection template), or Cloud Service Mesh",
            ),
            Self::ManagedPrometheus => Some("GKE Managed Service for Prometheus"),
            Self::GkeGateway => Some("the GKE Gateway controller (Gateway API on)"),
            _ => None,
        }
    }
}

/// The provider of objects of `group` (`""`: core). `None`: the tool renders a group nobody
/// installs, which the provider test turns into a failure.
#[must_use]
pub fn provider(group: &str) -> Option<Provider> {
    Some(match group {
        ""
        | "apps"
        | "batch"
        | "policy"
        | "autoscaling"
        | "scheduling.k8s.io"
        | "rbac.authorization.k8s.io"
        | "networking.k8s.io"
        | "storage.k8s.io"
        | "apiextensions.k8s.io"
        | "admissionregistration.k8s.io"
        | "apiregistration.k8s.io"
        | "coordination.k8s.io"
        | "node.k8s.io"
        | "discovery.k8s.io" => Provider::Kubernetes,
        "jobset.x-k8s.io" => Provider::Platform(Component::JobSet),
        "kueue.x-k8s.io" => Provider::Platform(Component::Kueue),
        "leaderworkerset.x-k8s.io" => Provider::Platform(Component::LeaderWorkerSet),
        "monitoring.googleapis.com" => Provider::ManagedPrometheus,
        "gateway.networking.k8s.io" | "networking.gke.io" => Provider::GkeGateway,
        "networking.istio.io" | "security.istio.io" | "telemetry.istio.io" => Provider::Istio,
        "configsync.gke.io" => Provider::ConfigSync,
        "argoproj.io" => Provider::ArgoCd,
        cnrm if cnrm.ends_with(".cnrm.cloud.google.com") => Provider::ConfigConnectorHost,
        _ => return None,
    })
}

/// The `kubectl aiml`-relevant facts of one blueprint's rendered objects: which API groups
/// its workload objects use, and the features no group shows.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Uses {
    /// API groups of its `workload/` objects (`""`: core).
    pub groups: BTreeSet<String>,
    /// An HPA scales on `External` or `Object` metrics: the custom-metrics adapter serves them.
    pub external_metrics: bool,
    /// A pod template asks Istio's `gateway` injection template.
    pub gateway_injection: bool,
    /// The Google service account the blueprint grants to the metrics adapter's Kubernetes
    /// service account (`roles/iam.workloadIdentityUser`), as an email.
    pub metrics_adapter_account: Option<String>,
}

/// The metrics adapter's Kubernetes service account, as Workload Identity members name it.
const ADAPTER_MEMBER: &str = "[custom-metrics/custom-metrics-stackdriver-adapter]";

impl Uses {
    /// Whether the file at `path` (relative to `rendered/<name>/`) must be read for [`Uses`]:
    /// its group alone does not say everything.
    #[must_use]
    pub fn reads(path: &str) -> bool {
        manifest::id_from_path(path).is_some_and(|id| {
            matches!(
                (id.group.as_str(), id.kind.as_str()),
                ("autoscaling", "horizontalpodautoscaler")
                    | ("apps", "deployment" | "statefulset" | "daemonset")
                    | (
                        "iam.cnrm.cloud.google.com",
                        "iampolicymember" | "iamserviceaccount"
                    )
            )
        })
    }

    /// Adds what `path`'s group says (every rendered file).
    pub fn note_path(&mut self, path: &str) {
        if let Some(id) = manifest::id_from_path(path)
            && path.starts_with(crate::overlay::Plane::Workload.dir())
            && !self.groups.contains(&id.group)
        {
            self.groups.insert(id.group);
        }
    }

    /// Adds what the objects say (those [`Uses::reads`] picks, or more).
    pub fn note_objects<'m>(&mut self, objects: impl IntoIterator<Item = &'m Manifest>) {
        let mut accounts: BTreeMap<&str, String> = BTreeMap::new();
        let mut granted: Vec<&str> = Vec::new();
        for object in objects {
            let node = &object.node;
            match (object.id.group.as_str(), object.id.kind.as_str()) {
                ("autoscaling", "HorizontalPodAutoscaler") => {
                    self.external_metrics |= node.at(&["spec", "metrics"]).is_some_and(|m| {
                        m.as_seq().unwrap_or_default().iter().any(|metric| {
                            matches!(
                                metric.get("type").and_then(crate::yaml::Node::as_str),
                                Some("External" | "Object")
                            )
                        })
                    });
                }
                ("iam.cnrm.cloud.google.com", "IAMServiceAccount") => {
                    let id = node
                        .at(&["spec", "resourceID"])
                        .and_then(crate::yaml::Node::as_str)
                        .unwrap_or(&object.id.name);
                    let project = node
                        .at(&[
                            "metadata",
                            "annotations",
                            "cnrm.cloud.google.com/project-id",
                        ])
                        .and_then(crate::yaml::Node::as_str)
                        .or(object.id.namespace.as_deref());
                    if let Some(project) = project {
                        accounts.insert(
                            &object.id.name,
                            format!("{id}@{project}.iam.gserviceaccount.com"),
                        );
                    }
                }
                ("iam.cnrm.cloud.google.com", "IAMPolicyMember") => {
                    let text = |path: &[&str]| node.at(path).and_then(crate::yaml::Node::as_str);
                    if text(&["spec", "role"]) == Some("roles/iam.workloadIdentityUser")
                        && text(&["spec", "member"]).is_some_and(|m| m.ends_with(ADAPTER_MEMBER))
                        && text(&["spec", "resourceRef", "kind"]) == Some("IAMServiceAccount")
                        && let Some(name) = text(&["spec", "resourceRef", "name"])
                    {
                        granted.push(name);
                    }
                }
                _ => {
                    self.gateway_injection |= node
                        .at(&[
                            "spec",
                            "template",
                            "metadata",
                            "annotations",
                            "inject.istio.io/templates",
                        ])
                        .and_then(crate::yaml::Node::as_str)
                        .is_some_and(|t| t.split(',').any(|t| t.trim() == "gateway"));
                }
            }
        }
        if self.metrics_adapter_account.is_none() {
            self.metrics_adapter_account = granted
                .into_iter()
                .find_map(|name| accounts.get(name).cloned());
        }
    }
}

/// What one cluster's blueprints need, gathered.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Needs {
    /// Components of its platform root.
    pub components: BTreeSet<Component>,
    /// Providers it must have that the tool does not install.
    pub prerequisites: BTreeSet<&'static str>,
    /// The metrics adapter's Google service account (the first blueprint's, by name).
    pub metrics_adapter_account: Option<String>,
    /// Groups nobody provides: a bug of [`provider`].
    pub unprovided: BTreeSet<String>,
    /// Its blueprints use Istio (its APIs, or its `gateway` injection template).
    pub istio: bool,
    /// The folder (under `rendered/_sync/`) whose objects turn Google-managed Cloud Service
    /// Mesh on for it, through the fleet, when the repository does ([`Provider::Istio`] is then
    /// no prerequisite).
    pub managed_mesh: Option<String>,
}

impl Needs {
    /// Adds one blueprint's uses.
    pub fn add(&mut self, uses: &Uses) {
        for group in &uses.groups {
            match provider(group) {
                Some(Provider::Platform(component)) => {
                    self.components.insert(component);
                }
                Some(other) => {
                    self.istio |= other == Provider::Istio;
                    if let Some(prerequisite) = other.prerequisite() {
                        self.prerequisites.insert(prerequisite);
                    }
                }
                None => {
                    self.unprovided.insert(group.clone());
                }
            }
        }
        if uses.gateway_injection
            && let Some(istio) = Provider::Istio.prerequisite()
        {
            self.istio = true;
            self.prerequisites.insert(istio);
        }
        if uses.external_metrics {
            self.components.insert(Component::MetricsAdapter);
        }
        if self.metrics_adapter_account.is_none() {
            self.metrics_adapter_account
                .clone_from(&uses.metrics_adapter_account);
        }
    }
}

/// The vendored release manifests of `component`, as built (see `data/platform/SOURCES.md`).
#[must_use]
pub fn vendored(component: Component) -> Vec<u8> {
    let file = component.file();
    let index = ENTRIES
        .binary_search_by(|(entry, ..)| (*entry).cmp(file.as_str()))
        .unwrap_or_else(|_| panic!("build.rs packs data/platform/{file}"));
    let (_, offset, len, raw_len) = ENTRIES[index];
    miniz_oxide::inflate::decompress_to_vec_with_limit(&BLOB[offset..offset + len], raw_len)
        .unwrap_or_else(|e| panic!("embedded data/platform/{file} is corrupt: {e:?}"))
}

/// The name of Kueue's controller configuration.
const KUEUE_CONFIG: &str = "kueue-manager-config";

/// The tool's Kueue configuration, replacing the release's (same name, same keys, plus
/// `waitForPodsReady`).
const KUEUE_CONFIG_MAP: &str = include_str!("templates/kueue-config.yaml");

/// The objects of `component` for one cluster (`account`: the adapter's Google service
/// account), split one per object, as `rendered/` names files.
pub fn objects(
    component: Component,
    account: Option<&str>,
) -> Result<Vec<Manifest>, PlatformError> {
    let vendored = vendored(component);
    let text = std::str::from_utf8(&vendored).map_err(|_| PlatformError::NotUtf8(component))?;
    let mut objects = manifest::split(text)?;
    match component {
        Component::Kueue => {
            let config = objects
                .iter_mut()
                .find(|m| m.id.kind == "ConfigMap" && m.id.name == KUEUE_CONFIG)
                .ok_or(PlatformError::Missing(component, KUEUE_CONFIG))?;
            *config = manifest::split(KUEUE_CONFIG_MAP)?
                .pop()
                .ok_or(PlatformError::Missing(component, KUEUE_CONFIG))?;
        }
        Component::MetricsAdapter => {
            if let Some(account) = account {
                let sa = objects
                    .iter_mut()
                    .find(|m| m.id.kind == "ServiceAccount")
                    .ok_or(PlatformError::Missing(component, "ServiceAccount"))?;
                // The adapter reads Cloud Monitoring as this account (Workload Identity).
                let annotated = sa.text.replacen(
                    "metadata:\n",
                    &format!(
                        "metadata:\n  annotations:\n    iam.gke.io/gcp-service-account: {account}\n"
                    ),
                    1,
                );
                *sa = manifest::split(&annotated)?
                    .pop()
                    .ok_or(PlatformError::Missing(component, "ServiceAccount"))?;
            }
        }
        Component::JobSet | Component::LeaderWorkerSet => {}
    }
    Ok(objects)
}

/// Why platform objects could not be made: a bug in this binary's data or templates.
#[derive(Debug, thiserror::Error)]
pub enum PlatformError {
    /// The vendored file is not text.
    #[error("the vendored manifests of {} are not UTF-8", .0.title())]
    NotUtf8(Component),
    /// An object the tool changes is not in the vendored file.
    #[error("the vendored manifests of {} have no {}", .0.title(), .1)]
    Missing(Component, &'static str),
    /// The vendored file or a template does not split into objects.
    #[error("the platform manifests do not split: {0}")]
    Split(#[from] manifest::SplitError),
}

/// The folder of `component` under `rendered/_sync/`, for a cluster folder `cluster_dir`
/// (`clusters/<p>/<l>/<c>`).
#[must_use]
pub fn folder(component: Component, cluster_dir: &str) -> String {
    if component.shared() {
        format!("platform/{}", component.dir())
    } else {
        format!("platform/{cluster_dir}/{}", component.dir())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn uses(stream: &str) -> Uses {
        let objects = manifest::split(stream).unwrap();
        let mut uses = Uses::default();
        for object in &objects {
            uses.note_path(&object.path);
        }
        uses.note_objects(&objects);
        uses
    }

    #[test]
    fn needs_follow_the_groups_and_features_in_use() {
        let training = uses(
            "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: t, namespace: n}\n---\n\
             apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata: {name: q, namespace: n}\n",
        );
        let serving = uses(
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h, namespace: n}\n\
             spec: {metrics: [{type: External}]}\n---\n\
             apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: g, namespace: n}\n\
             spec: {template: {metadata: {annotations: {inject.istio.io/templates: gateway}}}}\n---\n\
             apiVersion: iam.cnrm.cloud.google.com/v1beta1\nkind: IAMServiceAccount\n\
             metadata: {name: m, namespace: p, annotations: {cnrm.cloud.google.com/project-id: proj}}\n---\n\
             apiVersion: iam.cnrm.cloud.google.com/v1beta1\nkind: IAMPolicyMember\nmetadata: {name: b, namespace: p}\n\
             spec:\n  role: roles/iam.workloadIdentityUser\n  member: 'serviceAccount:proj.svc.id.goog[custom-metrics/custom-metrics-stackdriver-adapter]'\n  resourceRef: {kind: IAMServiceAccount, name: m}\n",
        );
        assert_eq!(
            training.groups,
            BTreeSet::from(["jobset.x-k8s.io".into(), "kueue.x-k8s.io".into()])
        );
        assert!(!training.external_metrics && !training.gateway_injection);
        assert!(serving.external_metrics && serving.gateway_injection);
        assert_eq!(
            serving.metrics_adapter_account.as_deref(),
            Some("m@proj.iam.gserviceaccount.com")
        );
        let mut needs = Needs::default();
        needs.add(&training);
        assert_eq!(
            needs.components,
            BTreeSet::from([Component::JobSet, Component::Kueue])
        );
        needs.add(&serving);
        assert!(needs.components.contains(&Component::MetricsAdapter));
        assert_eq!(needs.prerequisites.len(), 1, "{needs:?}");
        assert!(needs.unprovided.is_empty());
        let cpu_only = uses(
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h, namespace: n}\n\
             spec: {metrics: [{type: Resource}]}\n",
        );
        assert!(!cpu_only.external_metrics);
        let mut unknown = Needs::default();
        unknown.add(&uses(
            "apiVersion: example.com/v1\nkind: Thing\nmetadata: {name: t, namespace: n}\n",
        ));
        assert_eq!(unknown.unprovided, BTreeSet::from(["example.com".into()]));
    }

    #[test]
    fn kueue_waits_for_pods_ready_and_the_adapter_carries_its_account() {
        let kueue = objects(Component::Kueue, None).unwrap();
        let config = kueue.iter().find(|m| m.id.name == KUEUE_CONFIG).unwrap();
        let data = config
            .node
            .at(&["data", "controller_manager_config.yaml"])
            .and_then(crate::yaml::Node::as_str)
            .unwrap();
        let parsed = crate::yaml::parse_documents(data).unwrap();
        let wait = parsed[0].get("waitForPodsReady").unwrap();
        assert_eq!(
            wait.get("blockAdmission").map(|n| n.value.clone()),
            Some(crate::yaml::Value::Bool(true))
        );
        assert!(
            kueue
                .iter()
                .any(|m| m.id.kind == "CustomResourceDefinition")
        );
        let adapter = objects(
            Component::MetricsAdapter,
            Some("m@p.iam.gserviceaccount.com"),
        )
        .unwrap();
        let sa = adapter
            .iter()
            .find(|m| m.id.kind == "ServiceAccount")
            .unwrap();
        assert_eq!(
            sa.node
                .at(&["metadata", "annotations", "iam.gke.io/gcp-service-account"])
                .and_then(crate::yaml::Node::as_str),
            Some("m@p.iam.gserviceaccount.com")
        );
        assert_eq!(sa.id.namespace.as_deref(), Some("custom-metrics"));
    }
}

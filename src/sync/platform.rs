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
//!
//! **Hardened as the blueprints are.** The release manifests stay as vendored; what the tool
//! changes is a patch of its own (`templates/platform/<component>.yaml`, merged over the
//! object it names: maps key by key, lists of named items by name, anything else replaced),
//! so that every pod meets the tool's `container-security-context` rule. Each namespace a
//! component creates is closed ([`network_policies`]): a default deny, then the edges a
//! controller has, all read from its own objects rather than typed per component:
//!
//! - **DNS** and **egress to the API server**: TCP 443 to any address. The control plane's
//!   address is not known when rendering (GKE's endpoint, public or private, differs per
//!   cluster) and Dataplane V2 judges egress after the `kubernetes` Service is translated to
//!   it, so the port is the boundary;
//! - **ingress from the API server** to the target port of every Service an admission webhook,
//!   a CRD conversion webhook or an APIService calls (JobSet, Kueue and LWS's 9443, Kueue's
//!   visibility API on 8082, the adapter's 443), from any source: on GKE the calls come from
//!   the control plane's range or, through Konnectivity, from its agents in `kube-system`,
//!   and a webhook the policy blocks refuses every JobSet create. Metrics and health ports
//!   stay closed (the kubelet's probes come from the node, which policies always admit);
//! - **Google APIs** and the metadata server for the metrics adapter, which reads Cloud
//!   Monitoring as its Workload Identity.
//!
//! The builders are the blueprints' own ([`crate::overlay::network_policy`]).

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::{Value as Json, json};

use crate::manifest::{self, Manifest};
use crate::overlay::network_policy;
use crate::yaml::Node;

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
    if let Some(patches) = patches(component) {
        patch(component, &mut objects, patches)?;
    }
    let policies = network_policies(component, &objects)
        .iter()
        .map(manifest_of)
        .collect::<Result<Vec<_>, _>>()?;
    objects.extend(policies);
    Ok(objects)
}

/// The tool's patch over `component`'s release manifests, if it needs one.
fn patches(component: Component) -> Option<&'static str> {
    match component {
        Component::LeaderWorkerSet => Some(include_str!("templates/platform/lws.yaml")),
        Component::MetricsAdapter => Some(include_str!(
            "templates/platform/custom-metrics-stackdriver-adapter.yaml"
        )),
        Component::JobSet | Component::Kueue => None,
    }
}

/// Merges each object of `patches` into the object of `objects` with the same identity.
fn patch(
    component: Component,
    objects: &mut [Manifest],
    patches: &str,
) -> Result<(), PlatformError> {
    for patch in manifest::split(patches)? {
        let target = objects
            .iter_mut()
            .find(|m| m.id == patch.id)
            .ok_or_else(|| PlatformError::Unpatched(component, patch.id.to_string()))?;
        let mut object = crate::yaml::to_json(&target.node);
        merge(&mut object, &crate::yaml::to_json(&patch.node));
        *target = manifest_of(&object)?;
    }
    Ok(())
}

/// Merges `patch` into `target` as a strategic merge patch does for what the patches use:
/// maps key by key, lists whose items all have a `name` (containers, volumes, mounts,
/// sysctls) item by item, anything else replaced.
fn merge(target: &mut Json, patch: &Json) {
    let named = |items: &[Json]| {
        !items.is_empty()
            && items
                .iter()
                .all(|item| item.get("name").is_some_and(Json::is_string))
    };
    match (target, patch) {
        (Json::Object(target), Json::Object(patch)) => {
            for (key, value) in patch {
                match target.get_mut(key) {
                    Some(existing) => merge(existing, value),
                    None => {
                        target.insert(key.clone(), value.clone());
                    }
                }
            }
        }
        (Json::Array(target), Json::Array(patch)) if named(target) && named(patch) => {
            for item in patch {
                match target
                    .iter_mut()
                    .find(|t| t.get("name") == item.get("name"))
                {
                    Some(existing) => merge(existing, item),
                    None => target.push(item.clone()),
                }
            }
        }
        (target, patch) => *target = patch.clone(),
    }
}

/// `object` as a rendered file.
fn manifest_of(object: &Json) -> Result<Manifest, PlatformError> {
    let text =
        serde_saphyr::to_string(object).map_err(|e| PlatformError::Serialize(e.to_string()))?;
    manifest::split(&text)?
        .pop()
        .ok_or_else(|| PlatformError::Serialize("an object serialized to nothing".into()))
}

/// The NetworkPolicies of the namespaces `component`'s `objects` create (module
/// documentation): deny by default, DNS, the API server both ways, Google APIs for the
/// metrics adapter.
#[must_use]
pub fn network_policies(component: Component, objects: &[Manifest]) -> Vec<Json> {
    let called = called_by_api_server(objects);
    let mut policies = Vec::new();
    for namespace in objects
        .iter()
        .filter(|m| m.id.group.is_empty() && m.id.kind == "Namespace")
        .map(|m| m.id.name.as_str())
    {
        policies.push(network_policy::default_deny(namespace));
        policies.push(network_policy::allow_dns(namespace));
        policies.push(network_policy::policy(
            namespace,
            "allow-api-server-egress",
            json!({
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [{"ports": [{"protocol": "TCP", "port": 443}]}],
            }),
        ));
        if component == Component::MetricsAdapter {
            policies.push(network_policy::allow_google_apis(namespace));
        }
        for service in objects.iter().filter(|m| {
            m.id.group.is_empty()
                && m.id.kind == "Service"
                && m.id.namespace.as_deref() == Some(namespace)
        }) {
            let Some(ports) = called.get(&(namespace, service.id.name.as_str())) else {
                continue;
            };
            let Some(selector) = service.node.at(&["spec", "selector"]) else {
                continue;
            };
            let rule_ports: Vec<Json> = service
                .node
                .get("spec")
                .map_or(&[][..], |spec| spec.items("ports"))
                .iter()
                .filter(|p| {
                    p.get("port")
                        .and_then(Node::as_i64)
                        .is_some_and(|n| ports.contains(&n))
                })
                .filter_map(|p| {
                    let target = p.get("targetPort").or_else(|| p.get("port"))?;
                    let port = match (target.as_i64(), target.as_str()) {
                        (Some(number), _) => json!(number),
                        (None, Some(name)) => json!(name),
                        _ => return None,
                    };
                    let protocol = p.get("protocol").and_then(Node::as_str).unwrap_or("TCP");
                    Some(json!({"protocol": protocol, "port": port}))
                })
                .collect();
            if rule_ports.is_empty() {
                continue;
            }
            policies.push(network_policy::policy(
                namespace,
                &format!("allow-api-server-{}", service.id.name),
                json!({
                    "podSelector": {"matchLabels": crate::yaml::to_json(selector)},
                    "policyTypes": ["Ingress"],
                    "ingress": [{"ports": rule_ports}],
                }),
            ));
        }
    }
    policies
}

/// The Services the API server calls, `(namespace, name)` → Service ports: those of admission
/// webhooks, CRD conversion webhooks and APIServices (a reference without a port means 443).
fn called_by_api_server(objects: &[Manifest]) -> BTreeMap<(&str, &str), BTreeSet<i64>> {
    let mut called: BTreeMap<(&str, &str), BTreeSet<i64>> = BTreeMap::new();
    for object in objects {
        let node = &object.node;
        let references: Vec<&Node> = match (object.id.group.as_str(), object.id.kind.as_str()) {
            (
                "admissionregistration.k8s.io",
                "MutatingWebhookConfiguration" | "ValidatingWebhookConfiguration",
            ) => node
                .items("webhooks")
                .iter()
                .filter_map(|w| w.at(&["clientConfig", "service"]))
                .collect(),
            ("apiextensions.k8s.io", "CustomResourceDefinition") => node
                .at(&["spec", "conversion", "webhook", "clientConfig", "service"])
                .into_iter()
                .collect(),
            ("apiregistration.k8s.io", "APIService") => {
                node.at(&["spec", "service"]).into_iter().collect()
            }
            _ => Vec::new(),
        };
        for service in references {
            let text = |key: &str| service.get(key).and_then(Node::as_str);
            if let (Some(namespace), Some(name)) = (text("namespace"), text("name")) {
                let port = service.get("port").and_then(Node::as_i64).unwrap_or(443);
                called.entry((namespace, name)).or_default().insert(port);
            }
        }
    }
    called
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
    /// A hardening patch names an object the vendored file does not have.
    #[error("the tool's patch of {} names {}, which its release manifests do not have", .0.title(), .1)]
    Unpatched(Component, String),
    /// A patched object or a policy does not serialize.
    #[error("a platform object does not serialize: {0}")]
    Serialize(String),
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

    /// The pod spec of the one Deployment of `objects`.
    fn pod_spec(objects: &[Manifest]) -> &crate::yaml::Node {
        let deployment = objects
            .iter()
            .find(|m| m.id.kind == "Deployment")
            .expect("a Deployment");
        deployment
            .node
            .at(&["spec", "template", "spec"])
            .expect("a pod spec")
    }

    fn text<'n>(node: &'n crate::yaml::Node, path: &[&str]) -> Option<&'n str> {
        node.at(path).and_then(crate::yaml::Node::as_str)
    }

    #[test]
    fn every_platform_pod_runs_restricted() {
        for component in Component::ALL {
            let objects = objects(component, None).unwrap();
            let spec = pod_spec(&objects);
            assert_eq!(
                text(spec, &["securityContext", "seccompProfile", "type"]),
                Some("RuntimeDefault"),
                "{component:?}"
            );
            assert_eq!(
                flag(spec, &["securityContext", "runAsNonRoot"]),
                Some(true),
                "{component:?}"
            );
            for container in spec.items("containers") {
                let drop: Vec<&str> = container
                    .at(&["securityContext", "capabilities", "drop"])
                    .and_then(crate::yaml::Node::as_seq)
                    .unwrap_or_default()
                    .iter()
                    .filter_map(crate::yaml::Node::as_str)
                    .collect();
                assert_eq!(
                    (
                        flag(container, &["securityContext", "allowPrivilegeEscalation"]),
                        drop,
                        flag(container, &["securityContext", "readOnlyRootFilesystem"]),
                    ),
                    (Some(false), vec!["ALL"], Some(true)),
                    "{component:?}"
                );
            }
        }
    }

    fn flag(node: &crate::yaml::Node, path: &[&str]) -> Option<bool> {
        match node.at(path)?.value {
            crate::yaml::Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    #[test]
    fn the_adapter_keeps_its_release_command_and_port_without_root() {
        let release =
            manifest::split(std::str::from_utf8(&vendored(Component::MetricsAdapter)).unwrap())
                .unwrap();
        let patched = objects(Component::MetricsAdapter, None).unwrap();
        let command = |objects: &[Manifest]| -> Vec<String> {
            pod_spec(objects).items("containers")[0]
                .items("command")
                .iter()
                .filter_map(|n| n.as_str().map(str::to_string))
                .collect()
        };
        let (before, after) = (command(&release), command(&patched));
        // An upgrade that changes the release's command must be carried into the patch.
        assert_eq!(after[..before.len()], before[..], "{after:?}");
        assert_eq!(after[before.len()..], ["--cert-dir=/tmp/certificates"]);
        let spec = pod_spec(&patched);
        assert_eq!(
            spec.at(&["securityContext", "runAsUser"])
                .and_then(crate::yaml::Node::as_i64),
            Some(65532)
        );
        // 443 stays bindable without CAP_NET_BIND_SERVICE.
        let sysctl = &spec
            .at(&["securityContext", "sysctls"])
            .unwrap()
            .as_seq()
            .unwrap()[0];
        assert_eq!(
            (text(sysctl, &["name"]), text(sysctl, &["value"])),
            (Some("net.ipv4.ip_unprivileged_port_start"), Some("0"))
        );
        let mount = &spec.items("containers")[0].items("volumeMounts")[0];
        assert_eq!(text(mount, &["mountPath"]), Some("/tmp"));
        assert!(spec.items("volumes")[0].get("emptyDir").is_some());
        // Everything else is the release's.
        assert_eq!(spec.items("tolerations").len(), 2);
        assert_eq!(
            text(&spec.items("containers")[0], &["image"]),
            Some("gcr.io/gke-release/custom-metrics-stackdriver-adapter:v0.16.9-gke.0")
        );
    }

    #[test]
    fn merge_joins_named_items_and_replaces_the_rest() {
        let mut target = json!({
            "containers": [{"name": "a", "image": "x", "args": ["1", "2"]}, {"name": "b"}],
            "keep": 1,
        });
        merge(
            &mut target,
            &json!({
                "containers": [{"name": "a", "args": ["3"], "securityContext": {}}, {"name": "c"}],
                "added": true,
            }),
        );
        assert_eq!(
            target,
            json!({
                "containers": [
                    {"name": "a", "image": "x", "args": ["3"], "securityContext": {}},
                    {"name": "b"},
                    {"name": "c"},
                ],
                "keep": 1,
                "added": true,
            })
        );
    }

    #[test]
    fn a_patch_of_an_object_the_release_lacks_is_refused() {
        let mut jobset = objects(Component::JobSet, None).unwrap();
        let error = patch(
            Component::JobSet,
            &mut jobset,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: gone, namespace: jobset-system}\n",
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "the tool's patch of JobSet names Deployment/jobset-system/gone, which its release manifests do not have"
        );
    }

    /// The API server reaches exactly the ports its webhooks and APIServices name, read from
    /// the release manifests: JobSet's, Kueue's and LWS's webhook server on 9443, Kueue's
    /// visibility API on 8082, the adapter's metrics APIs on 443.
    #[test]
    fn namespaces_are_closed_but_to_what_the_api_server_calls() {
        let mut all = String::new();
        for component in Component::ALL {
            let objects = objects(component, None).unwrap();
            let policies: Vec<&Manifest> = objects
                .iter()
                .filter(|m| m.id.kind == "NetworkPolicy")
                .collect();
            let names: Vec<&str> = policies.iter().map(|m| m.id.name.as_str()).collect();
            assert!(
                names.contains(&"aiml-default-deny"),
                "{component:?}: {names:?}"
            );
            let ingress: BTreeSet<i64> = policies
                .iter()
                .filter(|m| {
                    m.id.name.starts_with("aiml-allow-api-server-")
                        && !m.id.name.ends_with("-egress")
                })
                .flat_map(|m| m.node.at(&["spec", "ingress"]).unwrap().as_seq().unwrap())
                .flat_map(|rule| rule.items("ports"))
                .filter_map(|p| p.get("port").and_then(crate::yaml::Node::as_i64))
                .collect();
            let expected: &[i64] = match component {
                Component::JobSet | Component::LeaderWorkerSet => &[9443],
                Component::Kueue => &[8082, 9443],
                Component::MetricsAdapter => &[443],
            };
            assert_eq!(ingress, expected.iter().copied().collect(), "{component:?}");
            for policy in policies {
                all.push_str("---\n");
                all.push_str(&policy.text);
            }
        }
        insta::assert_snapshot!("platform_network_policies", all);
    }
}

//! The server under load: another blueprint's exported service, or an address, checked
//! against what the locustfile can drive.

use std::collections::BTreeMap;

use serde::Serialize;

use super::rule;
use super::spec::{Framework, Spec};
use crate::overlay::network_policy::CONSUMER_LABEL;
use crate::plan::Planner;
use crate::plan::endpoint::{self, address, check_host, decided_by};

/// Findings about the target: its rule and its stanza.
const STANZA: (&str, &str) = (rule::TARGET, "spec.target");

/// A resolved target: what the template reads, and what planning needs beyond it.
#[derive(Debug, Serialize)]
pub(super) struct TargetPlan {
    /// `http://host:port`.
    pub(super) url: String,
    pub(super) framework: &'static str,
    model: String,
    path: String,
    /// Where the target came from, for comments.
    source: String,
    /// The namespace of the target's Service, when known.
    #[serde(skip)]
    pub(super) namespace: Option<String>,
    #[serde(skip)]
    pub(super) metrics_topic: Option<crate::plan::TopicExport>,
    /// The load's path through the NetworkPolicies.
    network: TargetNetwork,
}

/// Where the load goes, for the NetworkPolicies the template declares: the Locust namespace
/// is closed (`overlay::network_policy`), and so is a target blueprint's.
#[derive(Debug, Default, Serialize)]
struct TargetNetwork {
    /// The target's namespace, when it is known and not Locust's own.
    namespace: Option<String>,
    /// Labels of Locust's namespace: a target blueprint's consumer label, which its closed
    /// namespace lets in.
    namespace_labels: BTreeMap<String, String>,
    /// The target's port, for a target outside the cluster.
    port: u16,
}

pub(super) fn resolve_target(
    spec: &Spec,
    planner: &mut Planner<'_>,
    own_namespace: &str,
) -> Option<TargetPlan> {
    let mut plan = resolve(spec, planner, own_namespace)?;
    plan.network = TargetNetwork {
        namespace: plan.namespace.clone().filter(|n| n != own_namespace),
        namespace_labels: spec
            .target
            .blueprint
            .iter()
            .map(|b| (format!("{CONSUMER_LABEL}{b}"), "true".to_string()))
            .collect(),
        port: plan
            .url
            .rsplit_once(':')
            .and_then(|(_, port)| port.parse().ok())
            .unwrap_or(80),
    };
    Some(plan)
}

fn resolve(spec: &Spec, planner: &mut Planner<'_>, own_namespace: &str) -> Option<TargetPlan> {
    let t = &spec.target;
    match (&t.blueprint, &t.service) {
        (Some(blueprint), _) => resolve_blueprint_target(spec, planner, blueprint),
        (None, Some(service)) => {
            let complete = endpoint::address_needs(
                planner,
                rule::TARGET,
                &[
                    (t.port.is_none(), "spec.target.port", None),
                    (
                        t.framework.is_none(),
                        "spec.target.framework",
                        Some(framework_list()),
                    ),
                ],
            );
            check_host(planner, STANZA, service);
            if !complete {
                return None;
            }
            let framework = t.framework?;
            let port = t.port?;
            let (host, namespace) = address(
                planner,
                STANZA.1,
                (service, t.namespace.as_deref()),
                own_namespace,
            );
            let path = target_path(planner, framework, t.model.as_deref(), t.path.as_deref())?;
            Some(TargetPlan {
                url: format!("http://{host}:{port}"),
                framework: framework.name(),
                model: t.model.clone().unwrap_or_default(),
                path,
                source: format!("{service}:{port}"),
                namespace,
                metrics_topic: None,
                network: TargetNetwork::default(),
            })
        }
        (None, None) => {
            let d = planner.error(
                rule::TARGET,
                "spec.target",
                "the target needs `blueprint` or `service`",
            );
            d.fix = Some(
                "set `target.blueprint: <serving blueprint>`, or `target: {service, port, framework}`"
                    .into(),
            );
            None
        }
    }
}

fn resolve_blueprint_target(
    spec: &Spec,
    planner: &mut Planner<'_>,
    blueprint: &str,
) -> Option<TargetPlan> {
    let t = &spec.target;
    decided_by(
        planner,
        blueprint,
        &[
            (t.namespace.is_some(), "spec.target.namespace"),
            (t.port.is_some(), "spec.target.port"),
            (t.framework.is_some(), "spec.target.framework"),
        ],
    );
    let (exported, service) = endpoint::served(
        planner,
        STANZA,
        (blueprint, t.service.as_deref()),
        (
            "Locust",
            &format!("an HTTP service of framework {}", framework_list()),
        ),
        |s| {
            s.protocol == "http"
                && s.framework
                    .as_deref()
                    .is_some_and(|f| Framework::parse(f).is_some())
        },
    )?;
    let framework = service.framework.as_deref().and_then(Framework::parse)?;
    let model = t.model.clone().or_else(|| service.model.clone());
    let path = target_path(planner, framework, model.as_deref(), t.path.as_deref())?;
    Some(TargetPlan {
        url: format!("http://{}:{}", service.cluster_host(), service.port),
        framework: framework.name(),
        model: model.unwrap_or_default(),
        path,
        source: format!("blueprint {blueprint}"),
        namespace: Some(service.namespace.clone()),
        metrics_topic: exported.exports.metrics_topic.clone(),
        network: TargetNetwork::default(),
    })
}

fn framework_list() -> String {
    let names: Vec<String> = Framework::ALL
        .iter()
        .map(|(_, name)| format!("`{name}`"))
        .collect();
    names.join(", ")
}

fn target_path(
    planner: &mut Planner<'_>,
    framework: Framework,
    model: Option<&str>,
    path: Option<&str>,
) -> Option<String> {
    if let Some(path) = path {
        return endpoint::request_path(planner, STANZA, path);
    }
    if framework == Framework::Sax && model.is_none() {
        let d = planner.error(
            rule::TARGET,
            "spec.target.model",
            "the Saxml HTTP server needs the Sax model id",
        );
        d.expected = Some("`/sax/<cell>/<model>`".into());
        return None;
    }
    let found = framework.path(model);
    if found.is_none() {
        let d = planner.error(
            rule::TARGET,
            "spec.target.model",
            format!(
                "requests to `{}` go to a model: `/v2/models/<model>/generate`",
                framework.name()
            ),
        );
        d.fix = Some("set `spec.target.model`".into());
    }
    found
}

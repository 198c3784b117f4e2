//! The server under load: another blueprint's exported service, or an address, checked
//! against what the locustfile can drive.

use serde::Serialize;

use super::rule;
use super::spec::{Framework, Spec};
use crate::gcp;
use crate::names::check_dns_label;
use crate::plan::{Planner, ServiceExport};

#[derive(Debug, Serialize)]
pub(super) struct TargetPlan {
    /// `http://host:port`.
    pub(super) url: String,
    pub(super) framework: &'static str,
    model: String,
    path: String,
    /// Where the target came from, for comments.
    source: String,
}

/// A resolved target, with what planning needs beyond the template's part.
pub(super) struct Target {
    pub(super) plan: TargetPlan,
    /// The namespace of the target's Service, when known.
    pub(super) namespace: Option<String>,
    pub(super) metrics_topic: Option<crate::plan::TopicExport>,
}

pub(super) fn resolve_target(
    spec: &Spec,
    planner: &mut Planner<'_>,
    own_namespace: &str,
) -> Option<Target> {
    let t = &spec.target;
    match (&t.blueprint, &t.service) {
        (Some(blueprint), _) => resolve_blueprint_target(spec, planner, blueprint),
        (None, Some(service)) => {
            let mut complete = true;
            for (missing, field) in [
                (t.port.is_none(), "spec.target.port"),
                (t.framework.is_none(), "spec.target.framework"),
            ] {
                if missing {
                    complete = false;
                    let d = planner.error(
                        rule::TARGET,
                        field,
                        format!("a target given by address needs `{field}`"),
                    );
                    if field.ends_with("framework") {
                        d.expected = Some(framework_list());
                    }
                }
            }
            check_host(planner, service);
            if !complete {
                return None;
            }
            let framework = t.framework?;
            let port = t.port?;
            let host = match &t.namespace {
                Some(namespace) => {
                    planner.check_name(
                        gcp::rule::KUBERNETES_NAME,
                        "spec.target.namespace",
                        namespace,
                        check_dns_label,
                    );
                    format!("{service}.{namespace}.svc.cluster.local")
                }
                None => service.clone(),
            };
            let path = target_path(planner, framework, t.model.as_deref(), t.path.as_deref())?;
            Some(Target {
                plan: TargetPlan {
                    url: format!("http://{host}:{port}"),
                    framework: framework.name(),
                    model: t.model.clone().unwrap_or_default(),
                    path,
                    source: format!("{service}:{port}"),
                },
                namespace: t
                    .namespace
                    .clone()
                    .or_else(|| (!service.contains('.')).then(|| own_namespace.to_string())),
                metrics_topic: None,
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
) -> Option<Target> {
    let t = &spec.target;
    for (set, field) in [
        (t.namespace.is_some(), "spec.target.namespace"),
        (t.port.is_some(), "spec.target.port"),
        (t.framework.is_some(), "spec.target.framework"),
    ] {
        if set {
            let d = planner.error(
                gcp::rule::CONFLICT,
                field,
                format!("`{field}` comes from blueprint `{blueprint}`"),
            );
            d.fix = Some(format!("remove `{field}`"));
        }
    }
    let exported = planner.reference("spec.target.blueprint", blueprint)?;
    let drivable: Vec<&ServiceExport> = exported
        .exports
        .services
        .iter()
        .filter(|s| {
            s.protocol == "http"
                && s.framework
                    .as_deref()
                    .is_some_and(|f| Framework::parse(f).is_some())
        })
        .collect();
    let chosen: Vec<&ServiceExport> = match &t.service {
        Some(name) => drivable
            .iter()
            .copied()
            .filter(|s| &s.name == name)
            .collect(),
        None => drivable.clone(),
    };
    let service = match chosen.as_slice() {
        [one] => *one,
        [] => {
            let offered: Vec<String> = exported
                .exports
                .services
                .iter()
                .map(|s| {
                    format!(
                        "`{}` ({} {})",
                        s.name,
                        s.protocol,
                        s.framework.as_deref().unwrap_or("no framework")
                    )
                })
                .collect();
            let d = planner.error(
                rule::TARGET,
                if t.service.is_some() {
                    "spec.target.service"
                } else {
                    "spec.target.blueprint"
                },
                format!(
                    "blueprint `{blueprint}` ({}) serves nothing Locust can drive{}",
                    exported.kind,
                    t.service
                        .as_ref()
                        .map(|s| format!(" as `{s}`"))
                        .unwrap_or_default()
                ),
            );
            d.found = Some(if offered.is_empty() {
                "no service".into()
            } else {
                offered.join(", ")
            });
            d.expected = Some(format!("an HTTP service of framework {}", framework_list()));
            return None;
        }
        several => {
            let names: Vec<String> = several.iter().map(|s| format!("`{}`", s.name)).collect();
            let d = planner.error(
                rule::TARGET,
                "spec.target.blueprint",
                format!(
                    "blueprint `{blueprint}` serves several models: {}",
                    names.join(", ")
                ),
            );
            d.fix = Some("choose one with `spec.target.service`".into());
            return None;
        }
    };
    let framework = service.framework.as_deref().and_then(Framework::parse)?;
    let model = t.model.clone().or_else(|| service.model.clone());
    let path = target_path(planner, framework, model.as_deref(), t.path.as_deref())?;
    Some(Target {
        plan: TargetPlan {
            url: format!(
                "http://{}.{}.svc.cluster.local:{}",
                service.name, service.namespace, service.port
            ),
            framework: framework.name(),
            model: model.unwrap_or_default(),
            path,
            source: format!("blueprint {blueprint}"),
        },
        namespace: Some(service.namespace.clone()),
        metrics_topic: exported.exports.metrics_topic.clone(),
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
        if !path.starts_with('/') || path.contains(char::is_whitespace) {
            let d = planner.error(
                rule::TARGET,
                "spec.target.path",
                format!("`{path}` is not a request path"),
            );
            d.expected = Some("an absolute path, e.g. `/generate`".into());
            return None;
        }
        return Some(path.to_string());
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

/// A host people write: a Service name, `<service>.<namespace>`, a DNS name or an IPv4
/// address; no scheme, port or path (those have fields of their own).
fn check_host(planner: &mut Planner<'_>, host: &str) {
    let valid = !host.is_empty()
        && host.len() <= 253
        && host.split('.').all(|label| {
            !label.is_empty()
                && label.len() <= 63
                && label
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !label.starts_with('-')
                && !label.ends_with('-')
        });
    if !valid {
        let d = planner.error(
            rule::TARGET,
            "spec.target.service",
            format!("`{host}` is not a host name"),
        );
        d.expected =
            Some("a Service name, `<service>.<namespace>`, a DNS name or an IP address".into());
        if host.contains("://") || host.contains(':') || host.contains('/') {
            d.fix = Some("give the port in `target.port` and the path in `target.path`".into());
        }
    }
}

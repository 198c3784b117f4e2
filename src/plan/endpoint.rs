//! References from a client kind (a load generator, a proxy) to a network endpoint: one that
//! another blueprint of the repository serves ([`ServiceExport`]), or one given by address.
//! The client writes either under one stanza (e.g. `spec.target`: `blueprint` and `service`,
//! or `service`, `namespace` and `port`); what it can drive is its own business.

use super::{Exported, Planner, ServiceExport, rule};
use crate::names::check_dns_label;

impl ServiceExport {
    /// `<service>.<namespace>.svc.cluster.local`: the Service's name inside the cluster.
    #[must_use]
    pub fn cluster_host(&self) -> String {
        format!("{}.{}.svc.cluster.local", self.name, self.namespace)
    }
}

/// The service of blueprint `blueprint` (`<stanza>.blueprint`) that `client` can drive:
/// the one `drivable` accepts, or the one of them named `service` (`<stanza>.service`).
/// None, several, or a blueprint that is not there are findings of `rule` (with `expected`
/// describing what `client` drives).
pub fn served<'a>(
    planner: &mut Planner<'a>,
    (rule, stanza): (&'static str, &str),
    (blueprint, service): (&str, Option<&str>),
    (client, expected): (&str, &str),
    drivable: impl Fn(&ServiceExport) -> bool,
) -> Option<(&'a Exported, &'a ServiceExport)> {
    let exported = planner.reference(&format!("{stanza}.blueprint"), blueprint)?;
    let services = &exported.exports.services;
    let chosen: Vec<&ServiceExport> = services
        .iter()
        .filter(|s| drivable(s) && service.is_none_or(|name| s.name == name))
        .collect();
    match chosen.as_slice() {
        [one] => Some((exported, *one)),
        [] => {
            let offered: Vec<String> = services
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
                rule,
                &format!(
                    "{stanza}.{}",
                    if service.is_some() {
                        "service"
                    } else {
                        "blueprint"
                    }
                ),
                format!(
                    "blueprint `{blueprint}` ({}) serves nothing {client} can drive{}",
                    exported.kind,
                    service.map(|s| format!(" as `{s}`")).unwrap_or_default()
                ),
            );
            d.found = Some(if offered.is_empty() {
                "no service".into()
            } else {
                offered.join(", ")
            });
            d.expected = Some(expected.to_string());
            None
        }
        several => {
            let names: Vec<String> = several.iter().map(|s| format!("`{}`", s.name)).collect();
            let d = planner.error(
                rule,
                &format!("{stanza}.blueprint"),
                format!(
                    "blueprint `{blueprint}` serves several models: {}",
                    names.join(", ")
                ),
            );
            d.fix = Some(format!("choose one with `{stanza}.service`"));
            None
        }
    }
}

/// Reports each field set beside a blueprint reference that the referenced blueprint
/// decides (`set`, the dotted field).
pub fn decided_by(planner: &mut Planner<'_>, blueprint: &str, fields: &[(bool, &str)]) {
    for (set, field) in fields {
        if *set {
            let d = planner.error(
                rule::CONFLICT,
                field,
                format!("`{field}` comes from blueprint `{blueprint}`"),
            );
            d.fix = Some(format!("remove `{field}`"));
        }
    }
}

/// A host people write at `<stanza>.service`: a Service name, `<service>.<namespace>`, a DNS
/// name or an IPv4 address; no scheme, port or path (those have fields of their own).
pub fn check_host(planner: &mut Planner<'_>, (rule, stanza): (&'static str, &str), host: &str) {
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
            rule,
            &format!("{stanza}.service"),
            format!("`{host}` is not a host name"),
        );
        d.expected =
            Some("a Service name, `<service>.<namespace>`, a DNS name or an IP address".into());
        if host.contains("://") || host.contains(':') || host.contains('/') {
            let short = stanza.strip_prefix("spec.").unwrap_or(stanza);
            d.fix = Some(format!(
                "give the port in `{short}.port` and the path in `{short}.path`"
            ));
        }
    }
}

/// The host to call for a Service given by address (`<stanza>.namespace` checked), and the
/// Service's namespace when known: the one given, else `own_namespace` for a bare name.
pub fn address(
    planner: &mut Planner<'_>,
    stanza: &str,
    (host, namespace): (&str, Option<&str>),
    own_namespace: &str,
) -> (String, Option<String>) {
    match namespace {
        Some(namespace) => {
            planner.check_name(
                rule::KUBERNETES_NAME,
                &format!("{stanza}.namespace"),
                namespace,
                check_dns_label,
            );
            (
                format!("{host}.{namespace}.svc.cluster.local"),
                Some(namespace.to_string()),
            )
        }
        None => (
            host.to_string(),
            (!host.contains('.')).then(|| own_namespace.to_string()),
        ),
    }
}

/// Reports each field an endpoint given by address needs and lacks (`missing`, the dotted
/// field, what it expects); true when none lacks.
pub fn address_needs(
    planner: &mut Planner<'_>,
    rule: &'static str,
    fields: &[(bool, &str, Option<String>)],
) -> bool {
    for (_, field, expected) in fields.iter().filter(|(missing, ..)| *missing) {
        let d = planner.error(
            rule,
            field,
            format!("a target given by address needs `{field}`"),
        );
        d.expected.clone_from(expected);
    }
    fields.iter().all(|(missing, ..)| !missing)
}

/// The request path written at `<stanza>.path`: absolute, without whitespace.
pub fn request_path(
    planner: &mut Planner<'_>,
    (rule, stanza): (&'static str, &str),
    path: &str,
) -> Option<String> {
    if !path.starts_with('/') || path.contains(char::is_whitespace) {
        let d = planner.error(
            rule,
            &format!("{stanza}.path"),
            format!("`{path}` is not a request path"),
        );
        d.expected = Some("an absolute path, e.g. `/generate`".into());
        return None;
    }
    Some(path.to_string())
}

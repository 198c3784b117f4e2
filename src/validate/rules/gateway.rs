//! `gateway-unauthenticated`: a gateway that takes traffic from the internet with no
//! authenticating layer in the set.
//!
//! Two forms. An Istio `Gateway` whose selected gateway pods sit behind an external
//! `LoadBalancer` Service of the set, with no `RequestAuthentication` and `AuthorizationPolicy`
//! in the Gateway's namespace, the Service's, or Istio's root namespace (`istio-system`). A
//! Gateway API `Gateway` of one of GKE's external classes whose HTTPRoutes send traffic to a
//! Service that no `GCPBackendPolicy` protects with IAP (`iap.enabled`) or Cloud Armor
//! (`securityPolicy`). What the set does not show (the gateway's Service, its routes) is not
//! judged: the rule speaks only about edges it can see.

use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::fields::scalar_text;
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, internal_load_balancer};
use crate::yaml::{Node, Value};

/// GKE's GatewayClasses that get a public address.
/// See <https://cloud.google.com/kubernetes-engine/docs/concepts/gateway-api#gatewayclass>.
const EXTERNAL_CLASSES: [&str; 3] = [
    "gke-l7-global-external-managed",
    "gke-l7-regional-external-managed",
    "gke-l7-gxlb",
];

const ISTIO_NETWORKING: &str = "networking.istio.io";
const ISTIO_SECURITY: &str = "security.istio.io";
const GATEWAY_API: &str = "gateway.networking.k8s.io";
const GKE_NETWORKING: &str = "networking.gke.io";

fn is(object: &Object<'_>, group: &str, kind: &str) -> bool {
    object.group() == group && object.id.kind == kind
}

/// Whether this family reads `object`.
pub(crate) fn reads(object: &Object<'_>) -> bool {
    is(object, ISTIO_NETWORKING, "Gateway")
        || is(object, ISTIO_SECURITY, "RequestAuthentication")
        || is(object, ISTIO_SECURITY, "AuthorizationPolicy")
        || is(object, GATEWAY_API, "Gateway")
        || is(object, GATEWAY_API, "HTTPRoute")
        || is(object, GKE_NETWORKING, "GCPBackendPolicy")
}

/// Runs `gateway-unauthenticated` over one scope's objects.
pub(crate) fn check(objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    for object in objects {
        if is(object, ISTIO_NETWORKING, "Gateway") {
            check_istio(object, objects, out);
        } else if is(object, GATEWAY_API, "Gateway") {
            check_gateway_api(object, objects, out);
        }
    }
}

fn text<'a>(node: &'a Node, path: &[&str]) -> Option<&'a str> {
    node.at(path).and_then(Node::as_str)
}

/// An external `LoadBalancer` Service: no internal annotation.
fn external_load_balancer(service: &Object<'_>) -> bool {
    text(service.node, &["spec", "type"]) == Some("LoadBalancer")
        && !internal_load_balancer(service.node)
}

/// Whether a Service's selector picks the pods an Istio Gateway's selector picks: every label
/// the Gateway selects on has the same value in the Service's selector.
fn same_pods(gateway_selector: &Node, service_selector: Option<&Node>) -> bool {
    let Some(entries) = gateway_selector
        .as_map()
        .filter(|entries| !entries.is_empty())
    else {
        return false;
    };
    entries.iter().all(|(key, value)| {
        service_selector
            .and_then(|selector| selector.get(&key.text))
            .and_then(scalar_text)
            .is_some_and(|have| scalar_text(value) == Some(have))
    })
}

fn check_istio(gateway: &Object<'_>, objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    let Some(selector) = gateway.node.at(&["spec", "selector"]) else {
        return;
    };
    let Some(service) = objects.iter().find(|object| {
        object.api_version == "v1"
            && object.id.kind == "Service"
            && external_load_balancer(object)
            && same_pods(selector, object.node.at(&["spec", "selector"]))
    }) else {
        return;
    };
    let namespaces = [
        gateway.id.namespace.as_deref(),
        service.id.namespace.as_deref(),
        Some("istio-system"),
    ];
    let present = |kind: &str| {
        objects.iter().any(|object| {
            is(object, ISTIO_SECURITY, kind) && namespaces.contains(&object.id.namespace.as_deref())
        })
    };
    let missing: Vec<&str> = ["RequestAuthentication", "AuthorizationPolicy"]
        .into_iter()
        .filter(|kind| !present(kind))
        .collect();
    if missing.is_empty() {
        return;
    }
    let diagnostic = Diagnostic::warning(
        rule::GATEWAY_UNAUTHENTICATED,
        format!(
            "the gateway pods are behind the public load balancer `{}`, and no {} checks the callers",
            service.id.name,
            missing.join(" or ")
        ),
    )
    .found(format!("no {} for the gateway", missing.join(", no ")))
    .expected("a RequestAuthentication (who the caller is) and an AuthorizationPolicy (who may call) for the gateway workload")
    .fix("add a RequestAuthentication with your identity provider's JWT issuer and an AuthorizationPolicy that requires `requestPrincipals` on the gateway's pods, or make its Service internal (`networking.gke.io/load-balancer-type: \"Internal\"`)");
    out.push(gateway.finding(diagnostic, selector, "spec.selector"));
}

fn check_gateway_api(gateway: &Object<'_>, objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    let Some(class) = gateway.node.at(&["spec", "gatewayClassName"]) else {
        return;
    };
    if !class
        .as_str()
        .is_some_and(|name| EXTERNAL_CLASSES.contains(&name))
    {
        return;
    }
    let gateway_namespace = gateway.id.namespace.as_deref();
    let mut unprotected: Vec<String> = Vec::new();
    for route in objects
        .iter()
        .filter(|object| is(object, GATEWAY_API, "HTTPRoute"))
    {
        let route_namespace = route.id.namespace.as_deref();
        let spec = route.node.get("spec");
        let attached = spec
            .map(|spec| spec.items("parentRefs"))
            .unwrap_or(&[])
            .iter()
            .any(|parent| {
                text(parent, &["name"]) == Some(gateway.id.name.as_str())
                    && text(parent, &["namespace"]).or(route_namespace) == gateway_namespace
            });
        if !attached {
            continue;
        }
        for rule_node in spec.map(|spec| spec.items("rules")).unwrap_or(&[]) {
            for backend in rule_node.items("backendRefs") {
                if text(backend, &["kind"]).is_some_and(|kind| kind != "Service") {
                    continue;
                }
                let Some(name) = text(backend, &["name"]) else {
                    continue;
                };
                let namespace = text(backend, &["namespace"]).or(route_namespace);
                if !protected(objects, name, namespace) {
                    let shown = format!("`{name}`");
                    if !unprotected.contains(&shown) {
                        unprotected.push(shown);
                    }
                }
            }
        }
    }
    if unprotected.is_empty() {
        return;
    }
    let diagnostic = Diagnostic::warning(
        rule::GATEWAY_UNAUTHENTICATED,
        format!(
            "the public gateway sends traffic to {} with no GCPBackendPolicy enabling IAP or Cloud Armor",
            unprotected.join(", ")
        ),
    )
    .found(format!("backends {} without IAP or a security policy", unprotected.join(", ")))
    .expected("a GCPBackendPolicy per backend Service with `default.iap.enabled: true` or `default.securityPolicy`")
    .fix("add a GCPBackendPolicy (networking.gke.io) targeting each backend Service with `default.iap` (enabled, OAuth client Secret) or a Cloud Armor `default.securityPolicy`, or use an internal class (`gke-l7-rilb`)");
    out.push(gateway.finding(diagnostic, class, "spec.gatewayClassName"));
}

/// Whether a GCPBackendPolicy of `namespace` targets Service `name` with IAP or Cloud Armor.
fn protected(objects: &[Object<'_>], name: &str, namespace: Option<&str>) -> bool {
    objects.iter().any(|object| {
        is(object, GKE_NETWORKING, "GCPBackendPolicy")
            && object.id.namespace.as_deref() == namespace
            && text(object.node, &["spec", "targetRef", "kind"]) == Some("Service")
            && text(object.node, &["spec", "targetRef", "name"]) == Some(name)
            && (object
                .node
                .at(&["spec", "default", "iap", "enabled"])
                .map(|node| &node.value)
                == Some(&Value::Bool(true))
                || text(object.node, &["spec", "default", "securityPolicy"])
                    .is_some_and(|policy| !policy.is_empty()))
    })
}

//! The optional ingress of the server: Istio's (gateway pods of the blueprint's own, or an
//! existing gateway) or GKE's Gateway API.

use std::collections::BTreeMap;

use serde::Serialize;

use super::autoscaling::check_bounds;
use super::spec::{Ingress, IngressApi};
use crate::gcp::spec::NetworkSpec;
use crate::gcp::{ClusterHandle, Gcp};
use crate::plan::Planner;

/// GKE gateway classes: a regional internal Application Load Balancer (Envoy proxies in the
/// region's proxy-only subnet), and the global external one.
const GATEWAY_CLASS_INTERNAL: &str = "gke-l7-rilb";
const GATEWAY_CLASS_EXTERNAL: &str = "gke-l7-global-external-managed";
/// How long the load balancer waits for a response (its default, 30 s, cuts long generations).
const GATEWAY_TIMEOUT_SECONDS: u32 = 600;

#[derive(Debug, Serialize)]
pub(super) struct IngressPlan {
    gateway: String,
    hosts: Vec<String>,
    selector: BTreeMap<String, String>,
    /// The gateway this blueprint deploys, when it uses none that exists.
    deployment: Option<GatewayDeploymentPlan>,
}

/// A Gateway API ingress on GKE's Gateway controller.
#[derive(Debug, Serialize)]
pub(super) struct GatewayApiPlan {
    /// Name of the Gateway.
    gateway: String,
    /// `gke-l7-rilb` or `gke-l7-global-external-managed`.
    pub(super) class: &'static str,
    internal: bool,
    /// `HTTPRoute` host names; none answers any host.
    pub(super) hostnames: Vec<String>,
    /// Whether this blueprint enables the cluster's Gateway API (and, for an internal
    /// gateway, the proxy-only subnet); else they are prerequisites.
    pub(super) cluster_ready: bool,
    /// Backend timeout of the load balancer.
    timeout_seconds: u32,
}

#[derive(Debug, Serialize)]
struct GatewayDeploymentPlan {
    name: String,
    /// Labels that make Istio's injector fill in the gateway proxy.
    injection_labels: BTreeMap<String, String>,
    internal: bool,
    min_replicas: u32,
    max_replicas: u32,
}

/// The Istio ingress gateway's replica bounds; `None` (with findings) when they cannot work.
/// A Gateway API ingress has no gateway pods: Istio's fields are conflicts there.
pub(super) fn check_ingress(planner: &mut Planner<'_>, ingress: &Ingress) -> Option<(u32, u32)> {
    if ingress.api == Some(IngressApi::Gateway) {
        for (set, field) in [
            (ingress.gateway_selector.is_some(), "gatewaySelector"),
            (ingress.revision.is_some(), "revision"),
            (ingress.min_replicas.is_some(), "minReplicas"),
            (ingress.max_replicas.is_some(), "maxReplicas"),
        ] {
            if set {
                let d = planner.error(
                    crate::plan::rule::CONFLICT,
                    &format!("spec.ingress.{field}"),
                    format!(
                        "`{field}` configures Istio's ingress gateway, which `api: gateway` does not deploy"
                    ),
                );
                d.fix = Some(format!(
                    "remove `spec.ingress.{field}`, or use `api: istio`"
                ));
            }
        }
        return None;
    }
    let min = ingress.min_replicas.unwrap_or(2);
    let max = ingress.max_replicas.unwrap_or(5);
    check_bounds(planner, "spec.ingress", min, max).then_some((min, max))
}

/// A Gateway API ingress in front of `server`, with what the cluster needs for it.
pub(super) fn gateway_api(
    planner: &mut Planner<'_>,
    gcp: &mut Gcp,
    cluster: &ClusterHandle,
    network: &NetworkSpec,
    ingress: &Ingress,
    server: &str,
) -> GatewayApiPlan {
    let cluster_ready = gcp.gateway_api(planner, cluster, network, ingress.internal);
    GatewayApiPlan {
        gateway: format!("{server}-ingress"),
        class: if ingress.internal {
            GATEWAY_CLASS_INTERNAL
        } else {
            GATEWAY_CLASS_EXTERNAL
        },
        internal: ingress.internal,
        // The Gateway API spells "any host" by leaving the host names out.
        hostnames: ingress
            .hosts
            .iter()
            .filter(|host| host.as_str() != "*")
            .cloned()
            .collect(),
        cluster_ready,
        timeout_seconds: GATEWAY_TIMEOUT_SECONDS,
    }
}

/// An Istio ingress in front of `server`: the gateway it selects and, unless it names an
/// existing one, the gateway it deploys with `replicas` (checked by [`check_ingress`]).
pub(super) fn istio(ingress: &Ingress, replicas: Option<(u32, u32)>, server: &str) -> IngressPlan {
    let (min_replicas, max_replicas) = replicas.unwrap_or((2, 5));
    let gateway = format!("{server}-ingress");
    let (selector, deployment) = match &ingress.gateway_selector {
        Some(selector) => (selector.clone(), None),
        None => {
            let injection_labels = match &ingress.revision {
                Some(revision) => BTreeMap::from([("istio.io/rev".into(), revision.clone())]),
                None => BTreeMap::from([("sidecar.istio.io/inject".into(), "true".into())]),
            };
            (
                BTreeMap::from([("istio".into(), gateway.clone())]),
                Some(GatewayDeploymentPlan {
                    name: gateway.clone(),
                    injection_labels,
                    internal: ingress.internal,
                    min_replicas,
                    max_replicas,
                }),
            )
        }
    };
    IngressPlan {
        gateway,
        hosts: if ingress.hosts.is_empty() {
            vec!["*".into()]
        } else {
            ingress.hosts.clone()
        },
        selector,
        deployment,
    }
}

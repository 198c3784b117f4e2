//! How a serving kind exposes its server outside the cluster: an ingress in Istio (gateway
//! pods of the blueprint's own, or an existing gateway) or in GKE's Gateway API, with the
//! checks of its fields.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::autoscaling::check_bounds;
use crate::gcp::spec::NetworkSpec;
use crate::gcp::{ClusterHandle, Gcp};
use crate::plan::Planner;

/// GKE gateway classes: a regional internal Application Load Balancer (Envoy proxies in the
/// region's proxy-only subnet), and the global external one.
const GATEWAY_CLASS_INTERNAL: &str = "gke-l7-rilb";
const GATEWAY_CLASS_EXTERNAL: &str = "gke-l7-global-external-managed";
/// How long the load balancer waits for a response (its default, 30 s, cuts long generations).
const GATEWAY_TIMEOUT_SECONDS: u32 = 600;

/// `spec.ingress`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Ingress {
    /// `istio` (the default: an Istio ingress gateway, HTTP and gRPC) or `gateway` (GKE's
    /// Gateway controller: a Google Cloud Application Load Balancer, HTTP only).
    pub api: Option<IngressApi>,
    /// Hosts the ingress answers for (default `["*"]`: any).
    #[serde(default)]
    pub hosts: Vec<String>,
    /// Istio only: pod labels of an Istio ingress gateway that exists already; without it
    /// the blueprint deploys its own gateway in its namespace.
    pub gateway_selector: Option<BTreeMap<String, String>>,
    /// Istio only: the revision that injects the gateway (`istio.io/rev`); default: the
    /// default revision.
    pub revision: Option<String>,
    /// A load balancer reachable from the VPC only (default `false`: public). With
    /// `api: gateway`: `gke-l7-rilb` (regional internal) instead of
    /// `gke-l7-global-external-managed`.
    #[serde(default)]
    pub internal: bool,
    /// Istio only: fewest gateway pods (default 2).
    pub min_replicas: Option<u32>,
    /// Istio only: most gateway pods (default 5).
    pub max_replicas: Option<u32>,
}

/// The API an ingress is written in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum IngressApi {
    /// Istio `Gateway` and `VirtualService`, with an ingress gateway of the blueprint's own
    /// or an existing one.
    Istio,
    /// Kubernetes Gateway API (`gateway.networking.k8s.io/v1`) served by GKE's Gateway
    /// controller.
    Gateway,
}

/// An Istio ingress, as a workload template reads it.
#[derive(Debug, Serialize)]
pub struct IngressPlan {
    gateway: String,
    hosts: Vec<String>,
    selector: BTreeMap<String, String>,
    /// The gateway this blueprint deploys, when it uses none that exists.
    deployment: Option<GatewayDeploymentPlan>,
}

/// A Gateway API ingress on GKE's Gateway controller.
#[derive(Debug, Serialize)]
pub struct GatewayApiPlan {
    /// Name of the Gateway.
    gateway: String,
    /// `gke-l7-rilb` or `gke-l7-global-external-managed`.
    pub class: &'static str,
    internal: bool,
    /// `HTTPRoute` host names; none answers any host.
    pub hostnames: Vec<String>,
    /// Whether this blueprint enables the cluster's Gateway API (and, for an internal
    /// gateway, the proxy-only subnet); else they are prerequisites.
    pub cluster_ready: bool,
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

impl Ingress {
    /// The Istio ingress gateway's replica bounds, the ingress being at `field` (e.g.
    /// `spec.ingress`); `None` (with findings) when they cannot work. A Gateway API ingress
    /// has no gateway pods: Istio's fields are conflicts there.
    pub fn check(&self, planner: &mut Planner<'_>, field: &str) -> Option<(u32, u32)> {
        if self.api == Some(IngressApi::Gateway) {
            for (set, name) in [
                (self.gateway_selector.is_some(), "gatewaySelector"),
                (self.revision.is_some(), "revision"),
                (self.min_replicas.is_some(), "minReplicas"),
                (self.max_replicas.is_some(), "maxReplicas"),
            ] {
                if set {
                    let d = planner.error(
                        crate::plan::rule::CONFLICT,
                        &format!("{field}.{name}"),
                        format!(
                            "`{name}` configures Istio's ingress gateway, which `api: gateway` does not deploy"
                        ),
                    );
                    d.fix = Some(format!("remove `{field}.{name}`, or use `api: istio`"));
                }
            }
            return None;
        }
        let min = self.min_replicas.unwrap_or(2);
        let max = self.max_replicas.unwrap_or(5);
        check_bounds(planner, field, min, max).then_some((min, max))
    }

    /// With `api: gateway`, a Gateway API ingress in front of `server`, with what the cluster
    /// needs for it.
    pub fn gateway_api(
        &self,
        planner: &mut Planner<'_>,
        gcp: &mut Gcp,
        cluster: &ClusterHandle,
        network: &NetworkSpec,
        server: &str,
    ) -> Option<GatewayApiPlan> {
        if self.api != Some(IngressApi::Gateway) {
            return None;
        }
        let cluster_ready = gcp.gateway_api(planner, cluster, network, self.internal);
        Some(GatewayApiPlan {
            gateway: format!("{server}-ingress"),
            class: if self.internal {
                GATEWAY_CLASS_INTERNAL
            } else {
                GATEWAY_CLASS_EXTERNAL
            },
            internal: self.internal,
            // The Gateway API spells "any host" by leaving the host names out.
            hostnames: self
                .hosts
                .iter()
                .filter(|host| host.as_str() != "*")
                .cloned()
                .collect(),
            cluster_ready,
            timeout_seconds: GATEWAY_TIMEOUT_SECONDS,
        })
    }

    /// With `api: istio` (the default), an Istio ingress in front of `server`: the gateway it
    /// selects and, unless it names an existing one, the gateway it deploys with `replicas`
    /// (checked by [`Ingress::check`]).
    #[must_use]
    pub fn istio(&self, replicas: Option<(u32, u32)>, server: &str) -> Option<IngressPlan> {
        if self.api.unwrap_or(IngressApi::Istio) != IngressApi::Istio {
            return None;
        }
        let (min_replicas, max_replicas) = replicas.unwrap_or((2, 5));
        let gateway = format!("{server}-ingress");
        let (selector, deployment) = match &self.gateway_selector {
            Some(selector) => (selector.clone(), None),
            None => {
                let injection_labels = match &self.revision {
                    Some(revision) => BTreeMap::from([("istio.io/rev".into(), revision.clone())]),
                    None => BTreeMap::from([("sidecar.istio.io/inject".into(), "true".into())]),
                };
                (
                    BTreeMap::from([("istio".into(), gateway.clone())]),
                    Some(GatewayDeploymentPlan {
                        name: gateway.clone(),
                        injection_labels,
                        internal: self.internal,
                        min_replicas,
                        max_replicas,
                    }),
                )
            }
        };
        Some(IngressPlan {
            gateway,
            hosts: if self.hosts.is_empty() {
                vec!["*".into()]
            } else {
                self.hosts.clone()
            },
            selector,
            deployment,
        })
    }
}

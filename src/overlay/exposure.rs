//! How a serving kind exposes its server outside the cluster: an ingress in Istio (gateway
//! pods of the blueprint's own, or an existing gateway) or in GKE's Gateway API, with the
//! checks of its fields. Internal (reachable from the VPC) unless `public: true`, which needs a
//! certificate reference and an authenticating layer (`ingress-unprotected`): a JWT checked
//! by Istio, or IAP or Cloud Armor through GKE's `GCPBackendPolicy`.

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
    /// Reachable from the internet (default `false`: an internal load balancer, reachable
    /// from the VPC only: `gke-l7-rilb` with `api: gateway`). Public needs `tls` and `auth`.
    #[serde(default)]
    pub public: bool,
    /// The certificate clients see: HTTPS on port 443 instead of HTTP on port 80. Required
    /// with `public: true`.
    pub tls: Option<IngressTls>,
    /// Who may call: a JWT (`api: istio`), IAP or a Cloud Armor policy (`api: gateway`).
    /// Required with `public: true`.
    pub auth: Option<IngressAuth>,
    /// Istio only: fewest gateway pods (default 2).
    pub min_replicas: Option<u32>,
    /// Istio only: most gateway pods (default 5).
    pub max_replicas: Option<u32>,
}

/// `spec.ingress.tls`: references to certificates kept elsewhere, never key material.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngressTls {
    /// Istio: a `kubernetes.io/tls` Secret in the gateway's namespace (its `credentialName`).
    pub secret: Option<String>,
    /// Gateway API: a Certificate Manager certificate map (`networking.gke.io/certmap`).
    pub certificate_map: Option<String>,
    /// Gateway API: Compute Engine SSL certificates by name
    /// (`networking.gke.io/pre-shared-certs`).
    #[serde(default)]
    pub pre_shared_certificates: Vec<String>,
}

/// `spec.ingress.auth`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IngressAuth {
    /// Istio: requests carry a JWT of this issuer (`RequestAuthentication`), and only
    /// requests with one pass (`AuthorizationPolicy`).
    pub jwt: Option<JwtAuth>,
    /// Gateway API: Identity-Aware Proxy in front of the backend (`GCPBackendPolicy`).
    pub iap: Option<IapAuth>,
    /// Gateway API: name of a Cloud Armor security policy of the project, attached to the
    /// backend (`GCPBackendPolicy` `securityPolicy`).
    pub cloud_armor_policy: Option<String>,
}

/// `spec.ingress.auth.jwt`.
#[derive(Debug, Deserialize, JsonSchema, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct JwtAuth {
    /// The token issuer (`iss`), e.g. `https://accounts.google.com`.
    pub issuer: String,
    /// Where the issuer's public keys are (`https://…`).
    pub jwks_uri: String,
    /// Audiences a token must name (`aud`); default: any.
    #[serde(default)]
    pub audiences: Vec<String>,
}

/// `spec.ingress.auth.iap`.
#[derive(Debug, Deserialize, JsonSchema, Serialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IapAuth {
    /// The OAuth client id.
    pub client_id: String,
    /// Name of the Secret (key `key`) in the blueprint's namespace holding the OAuth client
    /// secret.
    pub oauth_client_secret: String,
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
    /// The `kubernetes.io/tls` Secret of the HTTPS server; HTTP on port 80 without it.
    pub tls_secret: Option<String>,
    /// The JWT every request must carry.
    pub jwt: Option<JwtPlan>,
}

/// A JWT rule of an Istio ingress.
#[derive(Debug, Serialize)]
pub struct JwtPlan {
    issuer: String,
    jwks_uri: String,
    audiences: Vec<String>,
    /// `<issuer>/*`: any subject of the issuer.
    principal: String,
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
    /// A Certificate Manager certificate map (HTTPS on port 443).
    pub certificate_map: Option<String>,
    /// Compute SSL certificates, comma-separated as GKE's listener option takes them.
    pub pre_shared_certificates: Option<String>,
    /// Identity-Aware Proxy on the backend.
    pub iap: Option<IapPlan>,
    /// A Cloud Armor security policy on the backend.
    pub cloud_armor_policy: Option<String>,
}

/// IAP on a Gateway API backend.
#[derive(Debug, Serialize)]
pub struct IapPlan {
    client_id: String,
    oauth_client_secret: String,
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
    /// Checks the ingress at `field` (e.g. `spec.ingress`): a public one has TLS and
    /// authentication, every field belongs to the chosen API. Returns the Istio ingress
    /// gateway's replica bounds; `None` (with findings) when they cannot work, and for a
    /// Gateway API ingress, which has no gateway pods.
    pub fn check(&self, planner: &mut Planner<'_>, field: &str) -> Option<(u32, u32)> {
        let gateway_api = self.api == Some(IngressApi::Gateway);
        let tls = self.tls.as_ref();
        let auth = self.auth.as_ref();
        // Each field with the API it belongs to: a field of the other API is a conflict.
        let istio_only = [
            (self.gateway_selector.is_some(), "gatewaySelector"),
            (self.revision.is_some(), "revision"),
            (self.min_replicas.is_some(), "minReplicas"),
            (self.max_replicas.is_some(), "maxReplicas"),
            (tls.is_some_and(|t| t.secret.is_some()), "tls.secret"),
            (auth.is_some_and(|a| a.jwt.is_some()), "auth.jwt"),
        ];
        let gateway_only = [
            (
                tls.is_some_and(|t| t.certificate_map.is_some()),
                "tls.certificateMap",
            ),
            (
                tls.is_some_and(|t| !t.pre_shared_certificates.is_empty()),
                "tls.preSharedCertificates",
            ),
            (auth.is_some_and(|a| a.iap.is_some()), "auth.iap"),
            (
                auth.is_some_and(|a| a.cloud_armor_policy.is_some()),
                "auth.cloudArmorPolicy",
            ),
        ];
        let (wrong, other, this): (&[(bool, &str)], _, _) = if gateway_api {
            (&istio_only, "istio", "gateway")
        } else {
            (&gateway_only, "gateway", "istio")
        };
        for &(set, name) in wrong {
            if set {
                let d = planner.error(
                    crate::plan::rule::CONFLICT,
                    &format!("{field}.{name}"),
                    format!("`{name}` belongs to the `api: {other}` ingress, not to `api: {this}`"),
                );
                d.fix = Some(format!("remove `{field}.{name}`, or use `api: {other}`"));
            }
        }
        if let Some(tls) = tls {
            check_tls(planner, field, tls, gateway_api);
        }
        if let Some(jwt) = auth.and_then(|a| a.jwt.as_ref())
            && !jwt.jwks_uri.starts_with("https://")
        {
            let d = planner.error(
                crate::plan::rule::CONFLICT,
                &format!("{field}.auth.jwt.jwksUri"),
                "the issuer's keys are fetched over HTTPS only: a key served in clear text can be replaced on the way",
            );
            d.found = Some(jwt.jwks_uri.clone());
            d.expected = Some("`https://…`".into());
        }
        if self.public {
            self.check_public(planner, field, gateway_api);
        }
        if gateway_api {
            return None;
        }
        let min = self.min_replicas.unwrap_or(2);
        let max = self.max_replicas.unwrap_or(5);
        check_bounds(planner, field, min, max).then_some((min, max))
    }

    /// A public ingress: TLS, an authenticating layer, and (Istio) a gateway of its own,
    /// which the authentication policies can select.
    fn check_public(&self, planner: &mut Planner<'_>, field: &str, gateway: bool) {
        let rule = crate::plan::rule::INGRESS_UNPROTECTED;
        if self.tls.is_none() {
            let d = planner.error(
                rule,
                &format!("{field}.tls"),
                "a public ingress serves HTTPS only: requests and tokens would cross the internet in clear text",
            );
            d.expected = Some(if gateway {
                "`tls: {certificateMap: <Certificate Manager map>}` or `tls: {preSharedCertificates: [<SSL certificate>]}`".into()
            } else {
                "`tls: {secret: <kubernetes.io/tls Secret in the namespace>}`".into()
            });
            d.fix = Some(format!(
                "add `{field}.tls` with a certificate reference, or remove `public: true` for an internal endpoint"
            ));
        }
        let auth = self.auth.as_ref();
        let authenticated = if gateway {
            auth.is_some_and(|a| a.iap.is_some() || a.cloud_armor_policy.is_some())
        } else {
            auth.is_some_and(|a| a.jwt.is_some())
        };
        if !authenticated {
            let d = planner.error(
                rule,
                &format!("{field}.auth"),
                "a public ingress authenticates its callers: without it anyone on the internet can run inference",
            );
            d.expected = Some(if gateway {
                "`auth: {iap: {clientId: …, oauthClientSecret: <Secret>}}` or `auth: {cloudArmorPolicy: <policy>}`".into()
            } else {
                "`auth: {jwt: {issuer: …, jwksUri: https://…}}`".into()
            });
            d.fix = Some(format!(
                "add `{field}.auth`, or remove `public: true` for an internal endpoint"
            ));
        }
        if !gateway && self.gateway_selector.is_some() {
            let d = planner.error(
                crate::plan::rule::CONFLICT,
                &format!("{field}.gatewaySelector"),
                "a public Istio ingress needs a gateway of the blueprint's own: the authentication policies select gateway pods in the blueprint's namespace",
            );
            d.fix = Some(format!(
                "remove `{field}.gatewaySelector`, or keep the existing gateway internal and protect it where it is deployed"
            ));
        }
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
        let internal = !self.public;
        let cluster_ready = gcp.gateway_api(planner, cluster, network, internal);
        let tls = self.tls.as_ref();
        let auth = self.auth.as_ref();
        Some(GatewayApiPlan {
            gateway: format!("{server}-ingress"),
            class: if internal {
                GATEWAY_CLASS_INTERNAL
            } else {
                GATEWAY_CLASS_EXTERNAL
            },
            internal,
            // The Gateway API spells "any host" by leaving the host names out.
            hostnames: self
                .hosts
                .iter()
                .filter(|host| host.as_str() != "*")
                .cloned()
                .collect(),
            cluster_ready,
            timeout_seconds: GATEWAY_TIMEOUT_SECONDS,
            certificate_map: tls.and_then(|t| t.certificate_map.clone()),
            pre_shared_certificates: tls
                .filter(|t| !t.pre_shared_certificates.is_empty())
                .map(|t| t.pre_shared_certificates.join(",")),
            iap: auth.and_then(|a| a.iap.as_ref()).map(|iap| IapPlan {
                client_id: iap.client_id.clone(),
                oauth_client_secret: iap.oauth_client_secret.clone(),
            }),
            cloud_armor_policy: auth.and_then(|a| a.cloud_armor_policy.clone()),
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
                        internal: !self.public,
                        min_replicas,
                        max_replicas,
                    }),
                )
            }
        };
        let jwt = self
            .auth
            .as_ref()
            .and_then(|a| a.jwt.as_ref())
            .map(|jwt| JwtPlan {
                issuer: jwt.issuer.clone(),
                jwks_uri: jwt.jwks_uri.clone(),
                audiences: jwt.audiences.clone(),
                principal: format!("{}/*", jwt.issuer),
            });
        Some(IngressPlan {
            gateway,
            hosts: if self.hosts.is_empty() {
                vec!["*".into()]
            } else {
                self.hosts.clone()
            },
            selector,
            deployment,
            tls_secret: self.tls.as_ref().and_then(|t| t.secret.clone()),
            jwt,
        })
    }
}

/// Exactly one certificate reference of the API's kinds.
fn check_tls(planner: &mut Planner<'_>, field: &str, tls: &IngressTls, gateway: bool) {
    let given = [
        tls.secret.is_some(),
        tls.certificate_map.is_some(),
        !tls.pre_shared_certificates.is_empty(),
    ];
    let count = given.iter().filter(|set| **set).count();
    if count == 0 || (gateway && count > 1) {
        let d = planner.error(
            crate::plan::rule::CONFLICT,
            &format!("{field}.tls"),
            "`tls` names one certificate reference",
        );
        d.expected = Some(if gateway {
            "`certificateMap: <map>` or `preSharedCertificates: [<certificate>]`".into()
        } else {
            "`secret: <kubernetes.io/tls Secret>`".into()
        });
    }
}

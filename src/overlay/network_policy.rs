//! Closed namespaces by default: every Namespace a workload target renders gets a NetworkPolicy
//! set that denies all ingress and egress, then allows the edges the rendered objects show.
//!
//! Derived from the output, so built-in and repository kinds get the same set:
//!
//! - **DNS**: to kube-dns in `kube-system` and to the link-local resolvers GKE points pods at
//!   (NodeLocal DNSCache on 169.254.20.10, on by default from GKE 1.33/1.34 Standard; Cloud DNS
//!   for GKE on the metadata server's 169.254.169.254), UDP and TCP 53
//!   (<https://cloud.google.com/kubernetes-engine/docs/how-to/nodelocal-dns-cache>);
//! - **Workload Identity** (a ServiceAccount of the namespace has `iam.gke.io/gcp-service-account`):
//!   the GKE metadata server (169.254.169.254/32 TCP 80, and 169.254.169.252/32 TCP 988, where
//!   Dataplane V2 serves it) and Google APIs over TLS: TCP 443 to addresses outside the private
//!   ranges (Private Google Access and Cloud NAT both reach them there)
//!   (<https://cloud.google.com/kubernetes-engine/docs/how-to/workload-identity#restrict>);
//! - **the blueprint's own pods**: each pod template's declared container ports, from pods of
//!   the same namespace (Sax admin ↔ model servers ↔ proxy, Locust master ↔ workers, gateway →
//!   server), and egress to the namespace's pods;
//! - **load balancers**: a `LoadBalancer` or `NodePort` Service's target ports from anywhere
//!   (GKE's load balancers and health checks reach the pods from addresses outside the cluster);
//! - **Prometheus scrape**: a PodMonitoring's endpoint ports from `gmp-system`, where Google
//!   Cloud Managed Service for Prometheus runs its collectors;
//! - **consumers**: every Service's target ports from namespaces labelled
//!   [`CONSUMER_LABEL`]`<blueprint>` (another blueprint that uses this one's exports, such as
//!   a Locust benchmark of its server, labels its own namespace: nothing is written into a
//!   namespace another blueprint owns).
//!
//! Pods on the host network are outside every NetworkPolicy (the multislice JobSet's TPU hosts
//! talk to each other there). Edges the output cannot show are declared by the template that
//! knows them, as NetworkPolicies of its own in its own namespaces (Locust's egress to its
//! target); a repository kind's author does the same, and the allows add up.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value as Json, json};

use crate::yaml::{Node, Value};

use super::TemplateError;

/// Names of the policies the pass writes start with this.
pub const PREFIX: &str = "aiml-";

/// RFC 1918 ranges: the cluster and the VPC, which the Google-APIs egress leaves out.
const PRIVATE_RANGES: &[&str] = &["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16"];

/// A namespace labelled `<CONSUMER_LABEL><blueprint>: "true"` reaches the Services of that
/// blueprint (a Locust benchmark of a serving blueprint labels its namespace so).
pub const CONSUMER_LABEL: &str = "consumer.aiml.dev/";

/// The namespace of Managed Service for Prometheus's collectors.
const PROMETHEUS_NAMESPACE: &str = "gmp-system";

/// The annotation that binds a ServiceAccount to a Google service account.
const WORKLOAD_IDENTITY: &str = "iam.gke.io/gcp-service-account";

/// `resources` with the NetworkPolicy set of every Namespace it renders appended. Text
/// without a Namespace comes back unchanged.
pub fn add_policies(
    template: &str,
    blueprint: &str,
    resources: String,
) -> Result<String, TemplateError> {
    let documents = crate::yaml::parse_documents(&resources).map_err(|e| TemplateError {
        template: template.to_string(),
        message: format!("the rendered objects do not parse: {e}"),
    })?;
    let mut policies = Vec::new();
    for namespace in namespaces(&documents) {
        policies.extend(namespace_policies(&namespace, blueprint, &documents));
    }
    if policies.is_empty() {
        return Ok(resources);
    }
    let mut text = resources;
    if !text.ends_with('\n') {
        text.push('\n');
    }
    for (index, policy) in policies.iter().enumerate() {
        let yaml = serde_saphyr::to_string(policy).map_err(|e| TemplateError {
            template: template.to_string(),
            message: format!("a NetworkPolicy does not serialize: {e}"),
        })?;
        text.push_str("---\n");
        if index == 0 {
            text.push_str(
                "# The namespaces' NetworkPolicies (overlay::network_policy): deny by default,\n\
                 # then allow the edges the objects above show.\n",
            );
        }
        text.push_str(&yaml);
    }
    Ok(text)
}

/// The names of the Namespaces in `documents`.
fn namespaces(documents: &[Node]) -> BTreeSet<String> {
    documents
        .iter()
        .filter(|d| {
            d.get("kind").and_then(Node::as_str) == Some("Namespace")
                && d.get("apiVersion").and_then(Node::as_str) == Some("v1")
        })
        .filter_map(|d| d.at(&["metadata", "name"]).and_then(Node::as_str))
        .map(str::to_string)
        .collect()
}

fn namespace_of(document: &Node) -> Option<&str> {
    document
        .at(&["metadata", "namespace"])
        .and_then(Node::as_str)
}

fn kind_of(document: &Node) -> Option<&str> {
    document.get("kind").and_then(Node::as_str)
}

/// One NetworkPolicy of the set: `aiml-<name>` in `namespace` (the platform root's
/// policies, `sync::platform`, are built the same way).
#[must_use]
pub fn policy(namespace: &str, name: &str, spec: Json) -> Json {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": format!("{PREFIX}{name}"), "namespace": namespace},
        "spec": spec,
    })
}

/// `{kubernetes.io/metadata.name: <namespace>}`: the label every namespace carries.
fn namespace_selector(namespace: &str) -> Json {
    json!({"matchLabels": {"kubernetes.io/metadata.name": namespace}})
}

/// A port of a NetworkPolicy rule: a number or a container port's name.
fn port(node: &Node, protocol: Option<&str>) -> Option<Json> {
    let value = match (node.as_i64(), node.as_str()) {
        (Some(number), _) => json!(number),
        (None, Some(name)) => json!(name),
        _ => return None,
    };
    Some(json!({"protocol": protocol.unwrap_or("TCP"), "port": value}))
}

/// `aiml-default-deny`: no ingress and no egress for any pod of `namespace` but what another
/// policy allows.
#[must_use]
pub fn default_deny(namespace: &str) -> Json {
    policy(
        namespace,
        "default-deny",
        json!({"podSelector": {}, "policyTypes": ["Ingress", "Egress"]}),
    )
}

/// `aiml-allow-dns`: every pod of `namespace` resolves names (kube-dns, NodeLocal DNSCache,
/// Cloud DNS on the metadata server; see the module documentation).
#[must_use]
pub fn allow_dns(namespace: &str) -> Json {
    policy(
        namespace,
        "allow-dns",
        json!({
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{
                "to": [
                    {
                        "namespaceSelector": namespace_selector("kube-system"),
                        "podSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    },
                    {"ipBlock": {"cidr": "169.254.20.10/32"}},
                    {"ipBlock": {"cidr": "169.254.169.254/32"}},
                ],
                "ports": [{"protocol": "UDP", "port": 53}, {"protocol": "TCP", "port": 53}],
            }],
        }),
    )
}

/// `aiml-allow-google-apis`: every pod of `namespace` reaches the GKE metadata server
/// (Workload Identity tokens) and Google APIs over TLS outside the private ranges.
#[must_use]
pub fn allow_google_apis(namespace: &str) -> Json {
    policy(
        namespace,
        "allow-google-apis",
        json!({
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [
                {
                    "to": [{"ipBlock": {"cidr": "169.254.169.254/32"}}],
                    "ports": [{"protocol": "TCP", "port": 80}],
                },
                {
                    "to": [{"ipBlock": {"cidr": "169.254.169.252/32"}}],
                    "ports": [{"protocol": "TCP", "port": 988}],
                },
                {
                    "to": [{"ipBlock": {"cidr": "0.0.0.0/0", "except": PRIVATE_RANGES}}],
                    "ports": [{"protocol": "TCP", "port": 443}],
                },
            ],
        }),
    )
}

/// The policies of one namespace.
fn namespace_policies(namespace: &str, blueprint: &str, documents: &[Node]) -> Vec<Json> {
    let own: Vec<&Node> = documents
        .iter()
        .filter(|d| namespace_of(d) == Some(namespace))
        .collect();
    let mut policies = vec![
        default_deny(namespace),
        allow_dns(namespace),
        policy(
            namespace,
            "allow-namespace-egress",
            json!({
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [{"to": [{"podSelector": {}}]}],
            }),
        ),
    ];
    let workload_identity = own.iter().any(|d| {
        kind_of(d) == Some("ServiceAccount")
            && d.at(&["metadata", "annotations", WORKLOAD_IDENTITY])
                .is_some()
    });
    if workload_identity {
        policies.push(allow_google_apis(namespace));
    }
    let injected = own.iter().any(|d| {
        super::hardening::pod_templates(d)
            .iter()
            .any(|(pod, _)| super::hardening::istio_injected(pod))
    });
    if injected {
        // An in-cluster istiod (xDS and certificates on 15012); Google-managed Cloud Service
        // Mesh is reached through Google APIs instead.
        policies.push(policy(
            namespace,
            "allow-istiod",
            json!({
                "podSelector": {},
                "policyTypes": ["Egress"],
                "egress": [{
                    "to": [{"namespaceSelector": namespace_selector("istio-system")}],
                    "ports": [{"protocol": "TCP", "port": 15012}],
                }],
            }),
        ));
    }
    for document in &own {
        for (pod, spec) in super::hardening::pod_templates(document) {
            if let Some(policy) = pod_ports_policy(namespace, document, pod, spec) {
                policies.push(policy);
            }
        }
    }
    policies.extend(
        own.iter()
            .filter_map(|d| load_balancer_policy(namespace, d)),
    );
    policies.extend(own.iter().filter_map(|d| scrape_policy(namespace, d)));
    policies.extend(
        own.iter()
            .filter_map(|d| consumers_policy(namespace, blueprint, d)),
    );
    policies
}

/// The labels that select the pods of `pod` (a pod template of `object`): its own labels, or
/// the label its controller puts on them.
fn pod_selector(object: &Node, pod: &Node) -> Option<BTreeMap<String, String>> {
    let labels: BTreeMap<String, String> = pod
        .at(&["metadata", "labels"])
        .and_then(Node::as_map)
        .unwrap_or_default()
        .iter()
        .filter_map(|(k, v)| Some((k.text.clone(), v.as_str()?.to_string())))
        .collect();
    if !labels.is_empty() {
        return Some(labels);
    }
    let name = object.at(&["metadata", "name"]).and_then(Node::as_str)?;
    let key = match kind_of(object)? {
        "Job" => "batch.kubernetes.io/job-name",
        "JobSet" => "jobset.sigs.k8s.io/jobset-name",
        "LeaderWorkerSet" => "leaderworkerset.sigs.k8s.io/name",
        _ => return None,
    };
    Some(BTreeMap::from([(key.to_string(), name.to_string())]))
}

/// Ingress from the namespace's pods to the ports `pod` declares.
fn pod_ports_policy(namespace: &str, object: &Node, pod: &Node, spec: &Node) -> Option<Json> {
    if spec
        .get("hostNetwork")
        .is_some_and(|h| h.value == Value::Bool(true))
    {
        return None;
    }
    let ports: Vec<Json> = spec
        .items("containers")
        .iter()
        .flat_map(|c| c.items("ports"))
        .filter_map(|p| {
            port(
                p.get("containerPort")?,
                p.get("protocol").and_then(Node::as_str),
            )
        })
        .collect();
    if ports.is_empty() {
        return None;
    }
    let selector = pod_selector(object, pod)?;
    let name = object.at(&["metadata", "name"]).and_then(Node::as_str)?;
    let component = pod
        .at(&["metadata", "labels", "app.kubernetes.io/component"])
        .and_then(Node::as_str)
        .map_or(String::new(), |c| format!("-{c}"));
    Some(policy(
        namespace,
        &format!("allow-{name}{component}"),
        json!({
            "podSelector": {"matchLabels": selector},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [{"podSelector": {}}], "ports": ports}],
        }),
    ))
}

/// The rule port of a Service port: its target port on the pods.
fn target_port(service_port: &Node) -> Option<Json> {
    let target = service_port
        .get("targetPort")
        .or_else(|| service_port.get("port"))?;
    port(target, service_port.get("protocol").and_then(Node::as_str))
}

/// The rule ports `each` reads from the items of the sequence at `path` in `object`.
fn ports_of(object: &Node, path: &[&str], each: impl Fn(&Node) -> Option<Json>) -> Vec<Json> {
    object
        .at(path)
        .and_then(Node::as_seq)
        .unwrap_or_default()
        .iter()
        .filter_map(each)
        .collect()
}

/// Ingress from anywhere to the target ports of a `LoadBalancer` or `NodePort` Service.
fn load_balancer_policy(namespace: &str, service: &Node) -> Option<Json> {
    let exposed = matches!(
        service.at(&["spec", "type"]).and_then(Node::as_str),
        Some("LoadBalancer" | "NodePort")
    );
    if !exposed {
        return None;
    }
    service_policy(
        namespace,
        service,
        "load-balancer",
        json!({"ipBlock": {"cidr": "0.0.0.0/0"}}),
    )
}

/// Ingress to a Service's target ports from the namespaces that consume this blueprint (other
/// blueprints of the repository that use what it exports, e.g. a benchmark of its server).
fn consumers_policy(namespace: &str, blueprint: &str, service: &Node) -> Option<Json> {
    let label = format!("{CONSUMER_LABEL}{blueprint}");
    service_policy(
        namespace,
        service,
        "consumers",
        json!({"namespaceSelector": {"matchLabels": {label: "true"}}}),
    )
}

/// `aiml-allow-<what>-<service>`: ingress from `from` to the target ports of `service`'s pods.
fn service_policy(namespace: &str, service: &Node, what: &str, from: Json) -> Option<Json> {
    if kind_of(service) != Some("Service") {
        return None;
    }
    let selector = service.at(&["spec", "selector"])?;
    let ports = ports_of(service, &["spec", "ports"], target_port);
    let name = service.at(&["metadata", "name"]).and_then(Node::as_str)?;
    Some(policy(
        namespace,
        &format!("allow-{what}-{name}"),
        json!({
            "podSelector": {"matchLabels": crate::yaml::to_json(selector)},
            "policyTypes": ["Ingress"],
            "ingress": [{"from": [from], "ports": ports}],
        }),
    ))
}

/// Ingress from Managed Prometheus's collectors to a PodMonitoring's endpoint ports.
fn scrape_policy(namespace: &str, monitoring: &Node) -> Option<Json> {
    if kind_of(monitoring) != Some("PodMonitoring") {
        return None;
    }
    let selector = monitoring.at(&["spec", "selector"])?;
    let ports = ports_of(monitoring, &["spec", "endpoints"], |e| {
        port(e.get("port")?, None)
    });
    let name = monitoring
        .at(&["metadata", "name"])
        .and_then(Node::as_str)?;
    Some(policy(
        namespace,
        &format!("allow-scrape-{name}"),
        json!({
            "podSelector": crate::yaml::to_json(selector),
            "policyTypes": ["Ingress"],
            "ingress": [{
                "from": [{"namespaceSelector": namespace_selector(PROMETHEUS_NAMESPACE)}],
                "ports": ports,
            }],
        }),
    ))
}

#[cfg(test)]
mod tests;

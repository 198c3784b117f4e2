//! `namespace-network-policy`: pods in a namespace that no NetworkPolicy of the set selects.
//!
//! Kubernetes lets every pod reach every other pod until a NetworkPolicy selects it. The rule
//! judges only sets that write NetworkPolicies (at least one, in any namespace): a set without
//! any may well be applied to a cluster whose policies live elsewhere (a platform repository),
//! and telling each single Deployment file "no NetworkPolicy" would be noise. A set that does
//! manage policies shows its author keeps them here, so a pod left out is an omission. Pods
//! without a namespace are not judged either: theirs is chosen when they are applied.

use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::fields::scalar_text;
use crate::validate::model::workload::templates;
use crate::validate::rule;
use crate::validate::rules::shared::Locate;
use crate::yaml::Node;

/// Whether `object` is a NetworkPolicy, which this family reads besides pod templates.
pub(crate) fn reads(object: &Object<'_>) -> bool {
    is_policy(object)
}

fn is_policy(object: &Object<'_>) -> bool {
    object.group() == "networking.k8s.io" && object.id.kind == "NetworkPolicy"
}

/// Runs `namespace-network-policy` over one scope's objects.
pub(crate) fn check(objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    let policies: Vec<&Object<'_>> = objects.iter().filter(|object| is_policy(object)).collect();
    if policies.is_empty() {
        return;
    }
    for template in templates(objects) {
        let Some(namespace) = template.object.id.namespace.as_deref() else {
            continue;
        };
        // GKE's own namespaces are the platform's to police.
        if namespace == "kube-system" || namespace.starts_with("gke-") {
            continue;
        }
        let labels = template
            .metadata
            .and_then(|metadata| metadata.get("labels"));
        let in_namespace: Vec<&&Object<'_>> = policies
            .iter()
            .filter(|policy| policy.id.namespace.as_deref() == Some(namespace))
            .collect();
        let selected = in_namespace.iter().any(|policy| {
            policy
                .node
                .at(&["spec", "podSelector"])
                .is_some_and(|selector| selects(selector, labels))
        });
        if selected {
            continue;
        }
        let message = if in_namespace.is_empty() {
            format!(
                "namespace `{namespace}` has no NetworkPolicy in the set, so its pods take traffic from every pod of the cluster"
            )
        } else {
            format!(
                "no NetworkPolicy of namespace `{namespace}` selects these pods, so they take traffic from every pod of the cluster"
            )
        };
        let found = if in_namespace.is_empty() {
            format!("no NetworkPolicy in `{namespace}`")
        } else {
            let count = match in_namespace.len() {
                1 => "1 NetworkPolicy".to_string(),
                many => format!("{many} NetworkPolicies"),
            };
            format!("{count} in `{namespace}`, none whose podSelector matches the pod labels")
        };
        let diagnostic = Diagnostic::warning(rule::NAMESPACE_NETWORK_POLICY, message)
            .found(found)
            .expected("a NetworkPolicy of the namespace whose podSelector selects the pods")
            .fix(format!(
                "add to `{namespace}` a default-deny NetworkPolicy (`podSelector: {{}}`, `policyTypes: [Ingress, Egress]`) and policies that allow exactly the traffic the pods need"
            ));
        let (anchor, field) = match template.metadata {
            Some(metadata) => (metadata, template.metadata_path.clone()),
            None => (template.spec, template.path.clone()),
        };
        out.push(template.finding(diagnostic, anchor, &field));
    }
}

/// Whether a `podSelector` selects pods with `labels` (an empty selector selects them all).
fn selects(selector: &Node, labels: Option<&Node>) -> bool {
    let label = |key: &str| {
        labels
            .and_then(|labels| labels.get(key))
            .and_then(scalar_text)
    };
    let match_labels = selector
        .get("matchLabels")
        .and_then(Node::as_map)
        .unwrap_or(&[]);
    let labels_match = match_labels
        .iter()
        .all(|(key, value)| label(&key.text).is_some_and(|have| scalar_text(value) == Some(have)));
    labels_match
        && selector.items("matchExpressions").iter().all(|expression| {
            let key = expression.get("key").and_then(Node::as_str).unwrap_or("");
            let values: Vec<String> = expression
                .items("values")
                .iter()
                .filter_map(scalar_text)
                .collect();
            let have = label(key);
            match expression.get("operator").and_then(Node::as_str) {
                Some("In") => have.is_some_and(|have| values.contains(&have)),
                Some("NotIn") => have.is_none_or(|have| !values.contains(&have)),
                Some("Exists") => have.is_some(),
                Some("DoesNotExist") => have.is_none(),
                // An operator Kubernetes rejects selects nothing.
                _ => false,
            }
        })
}

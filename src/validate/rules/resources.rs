//! Container resources as the API server validates them, one object at a time: resources that
//! cannot be overcommitted (extended resources such as `nvidia.com/gpu` and `google.com/tpu`,
//! and huge pages) need a limit, a request equal to it, and extended resources whole numbers.
//!
//! Kubernetes' `ValidateResourceRequirements` (`pkg/apis/core/validation`) refuses the pod
//! otherwise. For built-in kinds that is the apply itself; for custom resources (JobSet,
//! LeaderWorkerSet, RayCluster) it is the controller's create of every pod, later and quieter,
//! so the rule judges every pod template the model reads. Owns `extended-resource-limit`.
//!
//! Resources that can be overcommitted (`cpu`, `memory`, `ephemeral-storage`) may be requested
//! below their limit but not above it (`resource-request-above-limit`): the same function
//! refuses "must be less than or equal to cpu limit". For a built-in kind a `null` limit is a
//! zero quantity (`resource.Quantity`'s `UnmarshalJSON` reads `null` as 0, and the map keeps
//! the key), so any request is above it; a custom resource's is pruned, and no limit.

use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::fields::{join, quantity, scalar_text};
use crate::validate::model::workload::{container_nodes, templates};
use crate::validate::rule;
use crate::validate::rules::shared::Locate;
use crate::yaml::Node;

/// Whether the API server lets a container's request of `name` be below its limit
/// (`helper.IsOvercommitAllowed`): native resources (no domain, or a `kubernetes.io/` one) do,
/// except huge pages.
fn overcommit_allowed(name: &str) -> bool {
    let native = !name.contains('/') || name.contains("kubernetes.io/");
    native && !name.starts_with("hugepages-")
}

/// Whether `name` is an extended resource (`helper.IsExtendedResourceName`): a domain outside
/// `kubernetes.io` and not a quota's `requests.` name. Their quantities are whole numbers.
fn extended(name: &str) -> bool {
    name.contains('/') && !name.contains("kubernetes.io/") && !name.starts_with("requests.")
}

/// Runs the rule on every container of every pod template of `object`.
pub(crate) fn check(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    for template in templates(std::slice::from_ref(object)) {
        for (container, path) in container_nodes(template.spec, &template.path) {
            let resources = join(&path, "resources");
            let map = |kind: &str| {
                container
                    .at(&["resources", kind])
                    .and_then(Node::as_map)
                    .unwrap_or(&[])
            };
            let (requests, limits) = (map("requests"), map("limits"));
            // A null limit is no limit: the API server drops it (a custom resource's null
            // map value is pruned, and a built-in kind reads it as absent).
            let limit_of = |name: &str| {
                limits
                    .iter()
                    .find(|(key, value)| {
                        key.text == name && value.value != crate::yaml::Value::Null
                    })
                    .map(|(_, value)| value)
            };
            let builtin = matches!(object.group(), "" | "apps" | "batch");
            for (key, value) in requests {
                let name = key.text.as_str();
                if overcommit_allowed(name) {
                    above_limit(object, &resources, (name, value), limits, builtin, out);
                    continue;
                }
                let field = join(&join(&resources, "requests"), name);
                let written = scalar_text(value).unwrap_or_default();
                let diagnostic = match limit_of(name) {
                    None => Diagnostic::error(
                        rule::EXTENDED_RESOURCE_LIMIT,
                        format!("`{name}` is requested without a limit: the API server refuses the pod (\"Limit must be set for non overcommitable resources\")"),
                    )
                    .found(format!("requests: {written}, no limit"))
                    .expected(format!("`limits` with `{name}: {written}`"))
                    .fix(format!(
                        "move `{name}: {written}` from `requests` to `limits` (the request defaults to the limit)"
                    )),
                    Some(limit) => {
                        let limit_text = scalar_text(limit).unwrap_or_default();
                        let equal = quantity(&written)
                            .zip(quantity(&limit_text))
                            .is_some_and(|(request, limit)| request == limit);
                        if equal {
                            continue;
                        }
                        Diagnostic::error(
                            rule::EXTENDED_RESOURCE_LIMIT,
                            format!("the request of `{name}` differs from its limit: the API server refuses the pod (\"must be equal to {name} limit\")"),
                        )
                        .found(format!("requests: {written}, limits: {limit_text}"))
                        .expected(format!("a request equal to the limit, {limit_text}"))
                        .fix(format!("write only `limits: {{{name}: …}}`: the request defaults to it"))
                    }
                };
                out.push(object.finding(diagnostic, value, &field));
            }
            for (kind, entries) in [("requests", requests), ("limits", limits)] {
                for (key, value) in entries {
                    let name = key.text.as_str();
                    let text = scalar_text(value).unwrap_or_default();
                    let whole = quantity(&text).is_none_or(|amount| amount.fract() == 0.0);
                    if extended(name) && !whole {
                        let diagnostic = Diagnostic::error(
                            rule::EXTENDED_RESOURCE_LIMIT,
                            format!("`{name}` is counted in whole units: the API server refuses `{text}` (\"must be an integer\")"),
                        )
                        .found(text.clone())
                        .expected("a whole number")
                        .fix(format!("request whole `{name}` units"));
                        let field = join(&join(&resources, kind), name);
                        out.push(object.finding(diagnostic, value, &field));
                    }
                }
            }
        }
    }
}

/// `resource-request-above-limit`: a request of an overcommittable resource above its limit.
fn above_limit(
    object: &Object<'_>,
    resources: &str,
    (name, request): (&str, &Node),
    limits: &[(crate::yaml::Key, Node)],
    builtin: bool,
    out: &mut Vec<Diagnostic>,
) {
    let Some((_, limit)) = limits.iter().find(|(key, _)| key.text == name) else {
        return;
    };
    let limit_text = match &limit.value {
        crate::yaml::Value::Null if builtin => "0".to_owned(),
        _ => match scalar_text(limit) {
            Some(text) => text,
            None => return,
        },
    };
    let written = scalar_text(request).unwrap_or_default();
    let (Some(wanted), Some(most)) = (quantity(&written), quantity(&limit_text)) else {
        return; // not a quantity: the schema's finding
    };
    if wanted <= most {
        return;
    }
    let shown = if limit.value == crate::yaml::Value::Null {
        "null (0)".to_owned()
    } else {
        limit_text.clone()
    };
    let diagnostic = Diagnostic::error(
        rule::RESOURCE_REQUEST_ABOVE_LIMIT,
        format!("the request of `{name}` is above its limit: the API server refuses the pod (\"must be less than or equal to {name} limit\")"),
    )
    .found(format!("requests: {written}, limits: {shown}"))
    .expected(format!("a request of at most {limit_text}"))
    .fix(if limit.value == crate::yaml::Value::Null {
        format!("remove the null `{name}` limit (a null limit is 0), or write the limit")
    } else {
        format!("lower the request of `{name}` or raise its limit")
    });
    let field = join(&join(resources, "requests"), name);
    out.push(object.finding(diagnostic, request, &field));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_the_api_servers_resource_classes() {
        for name in [
            "cpu",
            "memory",
            "ephemeral-storage",
            "kubernetes.io/batch-cpu",
        ] {
            assert!(overcommit_allowed(name), "{name}");
            assert!(!extended(name), "{name}");
        }
        for name in ["nvidia.com/gpu", "google.com/tpu", "example.com/dongle"] {
            assert!(!overcommit_allowed(name), "{name}");
            assert!(extended(name), "{name}");
        }
        // Huge pages cannot be overcommitted either, but are quantities, not counts.
        assert!(!overcommit_allowed("hugepages-2Mi"));
        assert!(!extended("hugepages-2Mi"));
    }

    fn rules(text: &str) -> Vec<String> {
        let node = crate::yaml::parse_documents(text).unwrap().remove(0);
        let object = Object::from_node("f.yaml", &node).unwrap();
        let mut out = Vec::new();
        check(&object, &mut out);
        out.into_iter().map(|finding| finding.message).collect()
    }

    #[test]
    fn requests_need_an_equal_limit() {
        let pod = |resources: &str| {
            format!(
                "apiVersion: v1\nkind: Pod\nmetadata: {{name: p}}\nspec:\n  containers:\n  - name: c\n    resources: {resources}\n"
            )
        };
        assert_eq!(rules(&pod("{limits: {nvidia.com/gpu: 1}}")).len(), 0);
        assert_eq!(
            rules(&pod(
                "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: \"1\"}}"
            ))
            .len(),
            0
        );
        assert_eq!(
            rules(&pod("{requests: {cpu: 1, memory: 1Gi}, limits: {cpu: 2}}")).len(),
            0
        );
        let missing = rules(&pod("{requests: {google.com/tpu: 4}}"));
        assert!(missing[0].contains("without a limit"), "{missing:?}");
        let unequal = rules(&pod(
            "{requests: {nvidia.com/gpu: 1}, limits: {nvidia.com/gpu: 2}}",
        ));
        assert!(unequal[0].contains("differs from its limit"), "{unequal:?}");
        let huge = rules(&pod("{requests: {hugepages-2Mi: 1Gi, memory: 1Gi}}"));
        assert_eq!(huge.len(), 1, "{huge:?}");
        let fraction = rules(&pod("{limits: {nvidia.com/gpu: 500m}}"));
        assert!(fraction[0].contains("whole units"), "{fraction:?}");
    }
}

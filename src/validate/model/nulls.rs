//! The object the API server reads, as far as `null`s go: every rule reads this, never the
//! `null`s as written.
//!
//! - Custom resources: a `null` of a field (or of a map value) whose schema is neither
//!   nullable nor defaulted is dropped before validation (k8s.io/apiextensions-apiserver,
//!   pkg/apiserver/schema/defaulting/prunenulls.go, `PruneNonNullableNullsWithoutDefaults`;
//!   https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/custom-resource-definitions/#defaulting-and-nullable).
//!   Of the vendored CRD schemas (`schemas/crds/`), those of JobSet, LeaderWorkerSet, Kueue,
//!   KubeRay, Config Connector and ComputeClass mark no field nullable, so every `null` in
//!   them is dropped; only Istio's and Config Sync's have nullable fields, whose kept `null`
//!   means unset to their controllers as well, so the rules read it as absent too.
//! - Built-in kinds are decoded into Go structs (sigs.k8s.io/json, a fork of encoding/json):
//!   a `null` field is the zero value, the field left out (decode.go, `literalStore`: "ignore
//!   null for primitives/string", nil for maps, slices and pointers). A `null` *value of a Go
//!   map* is different: the entry is kept with its zero value (`object` stores the decoded
//!   element under its key), so `nodeSelector: {k: null}` selects `k=""` and a `null`
//!   quantity in `limits` is `0` (k8s.io/apimachinery pkg/api/resource/quantity.go,
//!   `UnmarshalJSON` of `null`).
//!
//! Items of lists are left alone: neither path drops them, and the schema layer judges them.

use crate::yaml::{Node, Value};

/// `node` (the whole object, of API group `group`) as the API server reads it, or `None`
/// when it holds no `null` the server would read differently from the text.
pub(crate) fn served(node: &Node, group: &str) -> Option<Node> {
    if !has_map_null(node) {
        return None;
    }
    let builtin = is_builtin_group(group);
    let mut copy = node.clone();
    prune(&mut copy, None, builtin);
    Some(copy)
}

/// Whether Kubernetes itself serves `group`: the core group, the groups without a dot
/// (`apps`, `batch`, `autoscaling`, `policy`) and `*.k8s.io` but for the API groups of
/// projects that ship CRDs (`*.x-k8s.io`, Gateway API, volume snapshots). A CRD's group must
/// hold a dot (apiextensions-apiserver pkg/apis/apiextensions/validation, "should be a domain
/// with at least one dot").
fn is_builtin_group(group: &str) -> bool {
    const CRD_GROUPS: &[&str] = &["gateway.networking.k8s.io", "snapshot.storage.k8s.io"];
    !group.contains('.')
        || (group.ends_with(".k8s.io")
            && !group.ends_with(".x-k8s.io")
            && !CRD_GROUPS.contains(&group))
}

/// Map fields of built-in kinds that the rules read and that are Go maps, with the text of
/// the zero value a `null` entry decodes to: `map[string]string` (k8s.io/api core/v1 and
/// meta/v1 types.go: `ObjectMeta.Labels`, `Annotations`, `PodSpec.NodeSelector`,
/// `LabelSelector.MatchLabels`) and `ResourceList` (`map[ResourceName]resource.Quantity`).
fn zero_entry(map_key: &str) -> Option<&'static str> {
    match map_key {
        "labels" | "annotations" | "nodeSelector" | "matchLabels" => Some(""),
        "limits" | "requests" => Some("0"),
        _ => None,
    }
}

fn has_map_null(node: &Node) -> bool {
    match &node.value {
        Value::Map(entries) => entries
            .iter()
            .any(|(_, value)| matches!(value.value, Value::Null) || has_map_null(value)),
        Value::Seq(items) => items.iter().any(has_map_null),
        _ => false,
    }
}

/// Drops the `null` values of `node`'s mappings, or (in a built-in kind's Go map, named by
/// `key`) replaces them with the zero value.
fn prune(node: &mut Node, key: Option<&str>, builtin: bool) {
    match &mut node.value {
        Value::Map(entries) => {
            let zero = key.filter(|_| builtin).and_then(zero_entry);
            entries.retain_mut(|(entry, value)| {
                if !matches!(value.value, Value::Null) {
                    prune(value, Some(entry.text.as_str()), builtin);
                    return true;
                }
                match zero {
                    Some(text) => {
                        value.value = Value::String(text.to_string());
                        true
                    }
                    None => false,
                }
            });
        }
        Value::Seq(items) => {
            for item in items {
                prune(item, None, builtin);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    fn keys(node: &Node) -> Vec<&str> {
        node.as_map()
            .unwrap_or_default()
            .iter()
            .map(|(key, _)| key.text.as_str())
            .collect()
    }

    fn one(text: &str) -> Node {
        parse_documents(text).unwrap().remove(0)
    }

    #[test]
    fn an_object_without_nulls_is_read_as_written() {
        let node = one("spec: {a: 1, b: [null]}\n");
        assert!(served(&node, "jobset.x-k8s.io").is_none());
    }

    #[test]
    fn a_custom_resource_loses_every_null_field_and_map_value() {
        let node = one(
            "spec:\n  autoscaling: null\n  nodeLabels: {a: x, b: null}\n  items: [null, {c: null, d: 1}]\n",
        );
        let served = served(&node, "kueue.x-k8s.io").unwrap();
        let spec = served.get("spec").unwrap();
        assert_eq!(keys(spec), ["nodeLabels", "items"]);
        assert_eq!(keys(spec.get("nodeLabels").unwrap()), ["a"]);
        let items = spec.get("items").unwrap().as_seq().unwrap();
        // List items stay: the server drops none.
        assert!(matches!(items[0].value, Value::Null));
        assert_eq!(keys(&items[1]), ["d"]);
    }

    #[test]
    fn a_builtin_kind_keeps_null_entries_of_go_maps_as_zero_values() {
        let node = one(
            "metadata: {labels: {a: null}}\nspec:\n  affinity: null\n  nodeSelector: {k: null}\n  containers:\n  - name: c\n    args: null\n    resources: {limits: {nvidia.com/gpu: null}, requests: null}\n",
        );
        let served = served(&node, "").unwrap();
        let label = served.get("metadata").unwrap().get("labels").unwrap();
        assert_eq!(label.get("a").unwrap().as_str(), Some(""));
        let spec = served.get("spec").unwrap();
        assert_eq!(keys(spec), ["nodeSelector", "containers"]);
        assert_eq!(
            spec.get("nodeSelector").unwrap().get("k").unwrap().as_str(),
            Some("")
        );
        let container = &spec.get("containers").unwrap().as_seq().unwrap()[0];
        assert_eq!(keys(container), ["name", "resources"]);
        let resources = container.get("resources").unwrap();
        assert_eq!(keys(resources), ["limits"]);
        let limit = resources
            .get("limits")
            .unwrap()
            .get("nvidia.com/gpu")
            .unwrap();
        assert_eq!(limit.as_str(), Some("0"));
    }

    #[test]
    fn groups_of_kubernetes_and_of_crds() {
        for group in ["", "apps", "batch", "networking.k8s.io", "resource.k8s.io"] {
            assert!(is_builtin_group(group), "{group}");
        }
        for group in [
            "jobset.x-k8s.io",
            "ray.io",
            "cloud.google.com",
            "gateway.networking.k8s.io",
            "container.cnrm.cloud.google.com",
        ] {
            assert!(!is_builtin_group(group), "{group}");
        }
    }
}

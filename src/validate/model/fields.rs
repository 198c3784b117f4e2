//! Field paths and scalar text of YAML nodes, as every model and finding writes them.
//!
//! Owns only these two helpers; it knows no Kubernetes kind and no rule.

use crate::yaml::{Node, Value};

/// Appends a mapping key to a dotted field path, quoting keys that hold dots or slashes the way
/// JSONPath does (`nodeSelector['cloud.google.com/gke-tpu-topology']`).
pub(crate) fn join(base: &str, key: &str) -> String {
    if key.contains(['.', '/']) {
        format!("{base}['{key}']")
    } else if base.is_empty() {
        key.to_string()
    } else {
        format!("{base}.{key}")
    }
}

/// The text of a scalar node, whatever its YAML type (`"true"`, `true` and `4` all have text).
pub(crate) fn scalar_text(node: &Node) -> Option<String> {
    match &node.value {
        Value::String(text) => Some(text.clone()),
        Value::Int(number) => Some(number.to_string()),
        Value::Float(number) => Some(number.to_string()),
        Value::Bool(flag) => Some(flag.to_string()),
        Value::Null | Value::Seq(_) | Value::Map(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_label_keys_in_field_paths() {
        assert_eq!(join("spec", "nodeSelector"), "spec.nodeSelector");
        assert_eq!(join("", "spec"), "spec");
        assert_eq!(
            join("spec.nodeSelector", "cloud.google.com/gke-nodepool"),
            "spec.nodeSelector['cloud.google.com/gke-nodepool']"
        );
    }
}

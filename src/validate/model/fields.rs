//! Field paths and scalar text of YAML nodes, as every model and finding writes them.
//!
//! Owns only these helpers (and the reading of Kubernetes quantities); it knows no Kubernetes
//! kind and no rule.

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

/// A Kubernetes quantity in its base unit (`10Gi`, `500M`, `1.5`, `100m`, `1e3`), where it
/// parses.
pub(crate) fn quantity(text: &str) -> Option<f64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (number, suffix) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let binary = |power: i32| 1024.0_f64.powi(power);
    let factor = match suffix {
        "" => 1.0,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => binary(1),
        "Mi" => binary(2),
        "Gi" => binary(3),
        "Ti" => binary(4),
        "Pi" => binary(5),
        "Ei" => binary(6),
        exponent => {
            let power: i32 = exponent.strip_prefix(['e', 'E'])?.parse().ok()?;
            10.0_f64.powi(power)
        }
    };
    Some(number * factor)
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

    #[test]
    fn reads_quantities_in_base_units() {
        assert_eq!(quantity("600Gi"), Some(600.0 * 1024.0 * 1024.0 * 1024.0));
        assert_eq!(quantity("500m"), Some(0.5));
        assert_eq!(quantity("2"), Some(2.0));
        assert_eq!(quantity("1e3"), Some(1000.0));
        assert_eq!(quantity("1G"), Some(1e9));
        assert_eq!(quantity("lots"), None);
    }
}

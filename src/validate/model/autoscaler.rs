//! HorizontalPodAutoscalers read into [`Autoscaler`]s: the workload each scales, its replica
//! bounds, and the external metrics it follows.
//!
//! This module only reads autoscalers as written, with the API's default `minReplicas: 1`; it
//! reports nothing. Whether the bounds work, whether the scaled pods fit their node pools and
//! whether external metrics are scoped is for the autoscaling rules.

use crate::validate::Object;
use crate::validate::model::fields::join;
use crate::validate::model::workload::Count;
use crate::yaml::Node;

/// A `HorizontalPodAutoscaler` (any served version).
#[derive(Debug)]
pub(crate) struct Autoscaler<'a> {
    /// The object.
    pub object: &'a Object<'a>,
    /// `spec.scaleTargetRef`, when it names a kind and an object.
    pub target: Option<ScaleTarget<'a>>,
    /// `spec.minReplicas` (default 1).
    pub min_replicas: Count<'a>,
    /// `spec.maxReplicas`, when written as a whole number.
    pub max_replicas: Option<Count<'a>>,
    /// The `External` metrics of `spec.metrics` (`autoscaling/v2`).
    pub external_metrics: Vec<ExternalMetric<'a>>,
}

/// What an autoscaler scales: an object in its own namespace.
#[derive(Debug)]
pub(crate) struct ScaleTarget<'a> {
    /// API group of `apiVersion` (`apps` for `apps/v1`).
    pub group: &'a str,
    /// Kind.
    pub kind: &'a str,
    /// Name.
    pub name: &'a str,
}

/// An `External` metric of an autoscaler.
#[derive(Debug)]
pub(crate) struct ExternalMetric<'a> {
    /// `metric.name`, as the metrics adapter spells it.
    pub name: &'a str,
    /// The `metric` mapping, to point at.
    pub node: &'a Node,
    /// Dotted path of `metric`.
    pub field: String,
    /// Whether `metric.selector` has any label requirement.
    pub has_selector: bool,
}

impl Autoscaler<'_> {
    /// Whether `object` is the one this autoscaler scales.
    pub(crate) fn scales(&self, object: &Object<'_>) -> bool {
        self.target.as_ref().is_some_and(|target| {
            object.group() == target.group
                && object.id.kind == target.kind
                && object.id.namespace == self.object.id.namespace
                && super::has_name(object)
                && object.id.name == target.name
        })
    }
}

/// Whether `object` is a `HorizontalPodAutoscaler`.
pub(crate) fn is_autoscaler(object: &Object<'_>) -> bool {
    object.group() == "autoscaling" && object.id.kind == "HorizontalPodAutoscaler"
}

/// Reads every autoscaler in the set.
pub(crate) fn autoscalers<'a>(objects: &'a [Object<'a>]) -> Vec<Autoscaler<'a>> {
    objects
        .iter()
        .filter(|object| is_autoscaler(object))
        .filter_map(read)
        .collect()
}

fn read<'a>(object: &'a Object<'a>) -> Option<Autoscaler<'a>> {
    let spec = object.node.get("spec")?;
    let text = |node: &'a Node, key: &str| node.get(key).and_then(Node::as_str);
    let target = spec.get("scaleTargetRef").and_then(|reference| {
        let api_version = text(reference, "apiVersion").unwrap_or("");
        Some(ScaleTarget {
            group: crate::manifest::group_of(api_version),
            kind: text(reference, "kind")?,
            name: text(reference, "name")?,
        })
    });
    let max_replicas = spec
        .get("maxReplicas")
        .filter(|node| node.as_count().is_some())
        .map(|_| Count::read(spec, "spec", "maxReplicas", 0));
    let external_metrics = spec
        .items("metrics")
        .iter()
        .enumerate()
        .filter(|(_, metric)| metric.get("type").and_then(Node::as_str) == Some("External"))
        .filter_map(|(index, metric)| {
            let node = metric.at(&["external", "metric"])?;
            let selector = node.get("selector");
            let has_selector = ["matchLabels", "matchExpressions"].iter().any(|key| {
                selector
                    .and_then(|selector| selector.get(key))
                    .is_some_and(|requirements| {
                        requirements.as_map().is_some_and(|map| !map.is_empty())
                            || requirements.as_seq().is_some_and(|seq| !seq.is_empty())
                    })
            });
            Some(ExternalMetric {
                name: text(node, "name").unwrap_or(""),
                node,
                field: join(&format!("spec.metrics[{index}].external"), "metric"),
                has_selector,
            })
        })
        .collect();
    Some(Autoscaler {
        object,
        target,
        min_replicas: Count::read(spec, "spec", "minReplicas", 1),
        max_replicas,
        external_metrics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    #[test]
    fn reads_target_bounds_and_external_metrics() {
        let documents = parse_documents(
            "apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: h, namespace: n}\nspec:\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: d}\n  maxReplicas: 3\n  metrics:\n  - type: Resource\n    resource: {name: cpu}\n  - type: External\n    external:\n      metric: {name: a}\n  - type: External\n    external:\n      metric:\n        name: b\n        selector: {matchLabels: {x: y}}\n",
        )
        .unwrap();
        let objects = [Object::from_node("f.yaml", &documents[0]).unwrap()];
        let autoscalers = autoscalers(&objects);
        let [autoscaler] = autoscalers.as_slice() else {
            panic!("{autoscalers:?}");
        };
        let target = autoscaler.target.as_ref().unwrap();
        assert_eq!(
            (target.group, target.kind, target.name),
            ("apps", "Deployment", "d")
        );
        assert_eq!(autoscaler.min_replicas.value, 1);
        assert_eq!(autoscaler.max_replicas.as_ref().map(|c| c.value), Some(3));
        let metrics: Vec<(&str, bool, &str)> = autoscaler
            .external_metrics
            .iter()
            .map(|m| (m.name, m.has_selector, m.field.as_str()))
            .collect();
        assert_eq!(
            metrics,
            [
                ("a", false, "spec.metrics[1].external.metric"),
                ("b", true, "spec.metrics[2].external.metric")
            ]
        );
    }
}

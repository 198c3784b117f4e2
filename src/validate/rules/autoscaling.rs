//! Autoscaling rules on HorizontalPodAutoscalers: bounds the API server refuses
//! (`hpa-replica-bounds`), a maximum whose GPU pods the node pools in the set cannot hold
//! (`hpa-gpu-capacity`), and external metrics without a selector (`hpa-external-metric-selector`,
//! a warning: the adapter then adds up every matching time series of the project).
//!
//! Autoscalers are read by [`crate::validate::model::autoscaler`], the pods they scale by
//! [`crate::validate::model`] and node pools by [`crate::validate::model::nodepool`]. Whether
//! the scaled pods select a GPU, fit one node or match any pool at all is for the GPU and
//! cross-object rules; this family takes both as read and judges the autoscaler only.

use crate::catalog::GPU_RESOURCE;
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::autoscaler::Autoscaler;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::Count;
use crate::validate::rule;
use crate::validate::rules::shared::{gpu_capacity, plural};
use crate::yaml::Node;

/// Runs the autoscaling rules on every autoscaler.
pub(crate) fn check(
    autoscalers: &[Autoscaler<'_>],
    groups: &[PodGroup<'_>],
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) {
    for autoscaler in autoscalers {
        check_external_metrics(autoscaler, out);
        let Some(max) = &autoscaler.max_replicas else {
            continue;
        };
        if !check_bounds(autoscaler, max, out) {
            continue;
        }
        for group in groups
            .iter()
            .filter(|group| autoscaler.scales(group.template.object))
        {
            check_gpu_capacity(autoscaler, max, group, pools, out);
        }
    }
}

/// What a finding on an autoscaler starts with: position, object and field.
fn finding(
    autoscaler: &Autoscaler<'_>,
    diagnostic: Diagnostic,
    node: &Node,
    field: &str,
) -> Diagnostic {
    diagnostic
        .at(autoscaler.object.file, node.span)
        .object(autoscaler.object.id.clone())
        .field(field)
}

/// `1 ≤ minReplicas ≤ maxReplicas`, as the API server validates them. Returns whether they
/// hold.
fn check_bounds(autoscaler: &Autoscaler<'_>, max: &Count<'_>, out: &mut Vec<Diagnostic>) -> bool {
    let min = &autoscaler.min_replicas;
    let problem = if min.value < 1 {
        // Zero needs the alpha `HPAScaleToZero` feature gate.
        Some((
            min,
            format!(
                "`minReplicas` is {}: an autoscaler keeps at least one replica",
                min.value
            ),
            "`minReplicas` of 1 or more".to_string(),
            "set `minReplicas: 1` or more".to_string(),
        ))
    } else if max.value < min.value {
        Some((
            max,
            format!(
                "`maxReplicas` ({}) is below `minReplicas` ({})",
                max.value, min.value
            ),
            format!("`maxReplicas` of {} or more", min.value),
            "raise `maxReplicas`, or lower `minReplicas`".to_string(),
        ))
    } else {
        None
    };
    let Some((count, message, expected, fix)) = problem else {
        return true;
    };
    out.push(
        finding(
            autoscaler,
            Diagnostic::error(rule::HPA_REPLICA_BOUNDS, message),
            count.anchor,
            &count.field,
        )
        .found(format!(
            "minReplicas {}, maxReplicas {}",
            min.value, max.value
        ))
        .expected(expected)
        .fix(fix)
        .blueprint_field("spec.autoscaling"),
    );
    false
}

fn check_external_metrics(autoscaler: &Autoscaler<'_>, out: &mut Vec<Diagnostic>) {
    for metric in autoscaler
        .external_metrics
        .iter()
        .filter(|metric| !metric.has_selector)
    {
        out.push(
            finding(
                autoscaler,
                Diagnostic::warning(
                    rule::HPA_EXTERNAL_METRIC_SELECTOR,
                    format!(
                        "external metric `{}` has no selector: every matching time series of the project counts",
                        metric.name
                    ),
                ),
                metric.node,
                &metric.field,
            )
            .found("no `selector`")
            .expected("`selector.matchLabels` that keep the metric to the scaled pods (cluster, namespace, container or job)")
            .fix("add `selector.matchLabels`, e.g. `resource.labels.namespace_name` and `resource.labels.container_name` for GKE container metrics")
            .blueprint_field("spec.autoscaling.metric"),
        );
    }
}

/// At its maximum, every scaled pod must find its GPUs in the node pools its selectors allow:
/// `maxReplicas ≤ Σ max nodes × ⌊GPUs per node ÷ GPUs per pod⌋`.
fn check_gpu_capacity(
    autoscaler: &Autoscaler<'_>,
    max: &Count<'_>,
    group: &PodGroup<'_>,
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let Some(request) = &group.gpu else { return };
    // Sets without node pools run on pools defined elsewhere: nothing to judge.
    if pools.is_empty() {
        return;
    }
    let matching = group.matching_pools(pools);
    let per_node = |pool: &NodePool<'_>| -> i64 {
        pool.gpus
            .iter()
            .filter(|(gpu, _)| {
                group
                    .gpu_target
                    .is_none_or(|target| target.label == gpu.label)
            })
            .map(|(_, count)| i64::from(*count))
            .sum()
    };
    // No matching pool is `accelerator-no-node-pool`'s finding.
    let Some(capacity) = gpu_capacity(&matching, request.count, per_node) else {
        return;
    };
    if max.value <= capacity {
        return;
    }
    let names: Vec<String> = matching
        .iter()
        .filter(|pool| per_node(pool) >= request.count)
        .map(|pool| {
            format!(
                "`{}` ({} × {})",
                pool.name,
                plural(pool.max_nodes.unwrap_or(0), "node"),
                plural(per_node(pool), "GPU")
            )
        })
        .collect();
    out.push(
        finding(
            autoscaler,
            Diagnostic::error(
                rule::HPA_GPU_CAPACITY,
                format!(
                    "at `maxReplicas` {}, {} `{}` runs {} of {} `{GPU_RESOURCE}`, but the node pools they can use hold {capacity}",
                    max.value,
                    group.template.kind(),
                    group.template.object.id.name,
                    plural(max.value, "pod"),
                    request.count,
                ),
            ),
            max.anchor,
            &max.field,
        )
        .found(format!(
            "{} × {} per pod; room for {} in {}",
            plural(max.value, "pod"),
            plural(request.count, "GPU"),
            plural(capacity, "pod"),
            names.join(", ")
        ))
        .expected(format!("`maxReplicas` of at most {capacity}"))
        .fix("raise the autoscaling maximum of the GPU node pools, or lower `maxReplicas`")
        .blueprint_field("spec.autoscaling.maxReplicas"),
    );
}

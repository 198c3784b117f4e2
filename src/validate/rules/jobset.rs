//! JobSet rules for TPU training: multislice JobSets (`replicas` > 1) run on multi-host slices
//! (`jobset-multislice-single-host`), and TPU JobSets claim a node pool per slice with the
//! exclusive-topology annotation (`jobset-exclusive-topology`).
//!
//! Only JobSets whose pods request `google.com/tpu` and resolve to a [`TpuTarget`] are judged.
//! Chips per pod and pods per slice are the TPU family's, and whether the node pools in the set
//! hold every slice is `accelerator-no-node-pool`'s.

use crate::catalog::{NODE_POOL_LABEL, TpuSlice};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::TpuTarget;
use crate::validate::model::fields::join;
use crate::validate::model::workload::{Controller, Count, EXCLUSIVE_TOPOLOGY_ANNOTATION};
use crate::validate::rule;
use crate::validate::rules::shared::Locate;
use crate::yaml::Node;

/// Runs the JobSet rules on every TPU pod template of a JobSet.
pub(crate) fn check(groups: &[PodGroup<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        let (Some(target), Some(request)) = (&group.tpu_target, &group.tpu) else {
            continue;
        };
        let Controller::JobSet {
            replicas,
            job,
            exclusive_topology,
        } = &group.template.controller
        else {
            continue;
        };
        let layouts = target.layouts_for(request.count);
        // When the chips per pod matched no layout (`tpu-chips-per-host`), the Job's
        // parallelism tells which layout the JobSet means.
        let by_parallelism: Vec<&TpuSlice> = layouts
            .iter()
            .copied()
            .filter(|slice| i64::from(slice.hosts()) == job.parallelism.value)
            .collect();
        let layouts = if by_parallelism.is_empty() {
            layouts
        } else {
            by_parallelism
        };
        let multi_host = layouts.iter().any(|slice| slice.is_multi_host());
        if !multi_host {
            check_multislice(group, target, replicas, out);
        }
        check_exclusive_topology(group, replicas.value, multi_host, *exclusive_topology, out);
    }
}

/// GKE multislice joins slices over the data-center network, which it only sets up for
/// multi-host slice node pools.
fn check_multislice(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    replicas: &Count<'_>,
    out: &mut Vec<Diagnostic>,
) {
    if replicas.value <= 1 {
        return;
    }
    let message = format!(
        "multislice needs multi-host slices, but {} is a single-host slice",
        target.describe()
    );
    out.push(
        group
            .template
            .finding(
                Diagnostic::error(rule::JOBSET_MULTISLICE_SINGLE_HOST, message),
                replicas.anchor,
                &replicas.field,
            )
            .found(format!(
                "`replicas: {}` of a single-host slice",
                replicas.value
            ))
            .expected("`replicas: 1`, or a multi-host topology")
            .fix("use a topology with more than one VM per slice, or run one slice (`replicas: 1`)")
            .blueprint_field("spec.tpu.slices"),
    );
}

fn check_exclusive_topology(
    group: &PodGroup<'_>,
    replicas: i64,
    multi_host: bool,
    annotation: Option<&Node>,
    out: &mut Vec<Diagnostic>,
) {
    let multislice = replicas > 1;
    if !multislice && !multi_host {
        return;
    }
    let value = annotation.and_then(Node::as_str);
    if value == Some(NODE_POOL_LABEL) {
        return;
    }
    let object = group.template.object;
    let anchor = annotation
        .or_else(|| object.node.at(&["metadata", "annotations"]))
        .or_else(|| object.node.get("metadata"))
        .unwrap_or(object.node);
    let (diagnostic, why) = if multislice {
        (
            Diagnostic::error(
                rule::JOBSET_EXCLUSIVE_TOPOLOGY,
                format!(
                    "multislice JobSets need `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}`"
                ),
            ),
            "so that each slice gets a node pool of its own",
        )
    } else {
        (
            Diagnostic::warning(
                rule::JOBSET_EXCLUSIVE_TOPOLOGY,
                format!(
                    "multi-host TPU JobSets should set `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}`"
                ),
            ),
            "so that the pods of a slice cannot spread over two node pools",
        )
    };
    out.push(
        group
            .template
            .finding(
                diagnostic,
                anchor,
                &join("metadata.annotations", EXCLUSIVE_TOPOLOGY_ANNOTATION),
            )
            .found(value.map_or_else(|| "no annotation".to_string(), |value| format!("`{value}`")))
            .expected(format!("`{NODE_POOL_LABEL}`"))
            .fix(format!("annotate the JobSet with `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}` {why}"))
            .blueprint_field("spec.tpu.slices"),
    );
}

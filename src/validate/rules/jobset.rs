//! JobSet rule for TPU training: multislice JobSets (`replicas` > 1) run on multi-host slices
//! (`jobset-multislice-single-host`).
//!
//! Only JobSets whose pods request `google.com/tpu` and resolve to a [`TpuTarget`] are judged.
//! Chips per pod and pods per slice are the TPU family's, how each slice gets a node pool of
//! its own (`jobset-exclusive-topology`) the placement family's, and whether the node pools in
//! the set hold every slice is `accelerator-no-node-pool`'s.

use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::TpuTarget;
use crate::validate::model::workload::{Controller, Count};
use crate::validate::rule;
use crate::validate::rules::shared::Locate;

/// Runs the JobSet rule on every TPU pod template of a JobSet.
pub(crate) fn check(groups: &[PodGroup<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        let Some(target) = &group.tpu_target else {
            continue;
        };
        let Controller::JobSet { replicas, .. } = &group.template.controller else {
            continue;
        };
        let layouts = group.slice_layouts();
        if !layouts.is_empty() && !layouts.iter().any(|slice| slice.is_multi_host()) {
            check_multislice(group, target, replicas, out);
        }
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

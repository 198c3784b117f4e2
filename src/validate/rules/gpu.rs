//! GPU rules on pods: the accelerator a pod selects (`gpu-accelerator-unknown`), whether
//! anything chooses the GPU model of its nodes (`gpu-selector-missing`, a warning: on GKE
//! Standard, pods that request `nvidia.com/gpu` go to GPU nodes anyway), and how many GPUs it
//! asks for (`gpu-count-per-pod`).
//!
//! How the pods choose their GPU, the [`crate::validate::model::accelerator::GpuChoice`], is
//! the model's: a GPU machine type, accelerator values (one or several), a compute class or a
//! node pool. GPUs attached to node pools are the node pool family's, and whether the matching
//! pools can hold the pods is `accelerator-no-node-pool`'s.

use crate::catalog::{
    self, COMPUTE_CLASS_LABEL, GPU_ACCELERATOR_LABEL, GPU_RESOURCE, NODE_POOL_LABEL,
};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::GpuChoice;
use crate::validate::model::fields::join;
use crate::validate::model::nodepool::MACHINE_TYPE_LABEL;
use crate::validate::model::workload::Request;
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, unknown_gpu};

/// Runs the GPU rules on every pod template.
pub(crate) fn check(groups: &[PodGroup<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        check_accelerator(group, out);
        if let (Some(request), Some(choice)) = (&group.gpu, &group.gpu_choice) {
            check_count(group, request, choice, out);
        }
    }
}

fn check_accelerator(group: &PodGroup<'_>, out: &mut Vec<Diagnostic>) {
    let template = &group.template;
    let requirement = group.selection(GPU_ACCELERATOR_LABEL);
    for requirement in requirement.iter() {
        for value in requirement
            .values
            .iter()
            .filter(|value| catalog::gpu(value).is_none())
        {
            out.push(template.finding(
                unknown_gpu(rule::GPU_ACCELERATOR_UNKNOWN, value),
                requirement.node,
                &requirement.field,
            ));
        }
    }
    let Some(request) = &group.gpu else { return };
    if group.gpu_choice.is_some() {
        return;
    }
    out.push(
        template
            .finding(
                Diagnostic::warning(
                    rule::GPU_SELECTOR_MISSING,
                    format!("pods requesting `{GPU_RESOURCE}` do not choose a GPU model"),
                ),
                template.spec.get("nodeSelector").unwrap_or(request.node),
                &join(&join(&template.path, "nodeSelector"), GPU_ACCELERATOR_LABEL),
            )
            .found("no selector")
            .expected(format!(
                "`{GPU_ACCELERATOR_LABEL}`, `{MACHINE_TYPE_LABEL}`, `{COMPUTE_CLASS_LABEL}` or `{NODE_POOL_LABEL}` in `nodeSelector` or required node affinity"
            ))
            .fix(format!(
                "add `{GPU_ACCELERATOR_LABEL}: <gpu>` to `nodeSelector`: GKE Standard places the pods on any GPU node without it, and Autopilot cannot tell which GPU to provision"
            ))
            .blueprint_field("spec.gpu.type"),
    );
}

fn check_count(
    group: &PodGroup<'_>,
    request: &Request<'_>,
    choice: &GpuChoice,
    out: &mut Vec<Diagnostic>,
) {
    // The pods land on whichever allowed node fits, so only the largest one must.
    let Some(largest) = choice.nodes.iter().max_by_key(|node| node.per_node) else {
        return;
    };
    let capacity = largest.per_node;
    if request.count <= i64::from(capacity) {
        return;
    }
    out.push(
        group
            .template
            .finding(
                Diagnostic::error(
                    rule::GPU_COUNT_PER_POD,
                    format!(
                        "pods request {} `{GPU_RESOURCE}` but a node has at most {capacity}",
                        request.count
                    ),
                ),
                request.node,
                &request.field,
            )
            .found(request.count.to_string())
            .expected(format!("at most {capacity} ({})", largest.why))
            .fix(format!(
                "request at most {capacity} per pod, or use a machine type with more GPUs"
            ))
            .blueprint_field("spec.gpu.count"),
    );
}

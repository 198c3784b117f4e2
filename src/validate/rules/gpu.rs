//! GPU rules on pods: the accelerator a pod selects (`gpu-accelerator-unknown`,
//! `gpu-selector-missing`) and how many GPUs it asks for (`gpu-count-per-pod`).
//!
//! The GPU a pod targets is the model's ([`crate::validate::model::PodGroup::gpu_target`]).
//! GPUs attached to node pools are the node pool family's, and whether the matching pools can
//! hold the pods is `accelerator-no-node-pool`'s.

use crate::catalog::{self, GPU_ACCELERATOR_LABEL, GPU_RESOURCE};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::fields::join;
use crate::validate::model::nodepool::{MACHINE_TYPE_LABEL, NodePool};
use crate::validate::model::workload::Request;
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, unknown_gpu};

/// Runs the GPU rules on every pod template.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        check_accelerator(group, out);
        if let Some(request) = &group.gpu {
            check_count(group, request, pools, out);
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
    let (anchor, field, found) = match requirement {
        Some(requirement) if requirement.value().is_some() => return,
        Some(requirement) => (
            requirement.node,
            requirement.field.clone(),
            format!("{} values", requirement.values.len()),
        ),
        None => (
            template.spec.get("nodeSelector").unwrap_or(request.node),
            join(&join(&template.path, "nodeSelector"), GPU_ACCELERATOR_LABEL),
            "no selector".to_string(),
        ),
    };
    out.push(
        template
            .finding(
                Diagnostic::error(
                    rule::GPU_SELECTOR_MISSING,
                    format!("pods requesting `{GPU_RESOURCE}` must select one `{GPU_ACCELERATOR_LABEL}` value"),
                ),
                anchor,
                &field,
            )
            .found(found)
            .expected(format!("one `{GPU_ACCELERATOR_LABEL}` value"))
            .fix(format!(
                "add `{GPU_ACCELERATOR_LABEL}: <gpu>` to `nodeSelector`: without it the pod can land on any GPU model"
            ))
            .blueprint_field("spec.gpu.type"),
    );
}

/// The most GPUs one node the pod can land on has, and where that number comes from.
fn gpus_per_node(group: &PodGroup<'_>, pools: &[NodePool<'_>]) -> Option<(u32, String)> {
    let machine = group
        .selection(MACHINE_TYPE_LABEL)
        .and_then(|requirement| requirement.value());
    if let Some((gpu, count)) = machine.and_then(catalog::gpu_for_machine) {
        return Some((
            count,
            format!(
                "`{}` has {count} `{}`",
                machine.unwrap_or_default(),
                gpu.label
            ),
        ));
    }
    let gpu = group.gpu_target?;
    let from_pools = pools
        .iter()
        .flat_map(|pool| {
            pool.gpus
                .iter()
                .map(move |(own, count)| (pool, *own, *count))
        })
        .filter(|(_, own, _)| own.label == gpu.label)
        .max_by_key(|(_, _, count)| *count);
    if let Some((pool, _, count)) = from_pools {
        return Some((
            count,
            format!(
                "node pool `{}` has {count} `{}` per node",
                pool.name, gpu.label
            ),
        ));
    }
    let most = gpu.machines.iter().map(|machine| machine.gpus).max()?;
    Some((
        most,
        format!("no GKE machine type has more than {most} `{}`", gpu.label),
    ))
}

fn check_count(
    group: &PodGroup<'_>,
    request: &Request<'_>,
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let Some((capacity, why)) = gpus_per_node(group, pools) else {
        return;
    };
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
            .expected(format!("at most {capacity} ({why})"))
            .fix(format!(
                "request at most {capacity} per pod, or use a machine type with more GPUs"
            ))
            .blueprint_field("spec.gpu.count"),
    );
}

//! GPU rules on pods: the accelerator a pod selects and how many GPUs it asks for.

use crate::catalog::{self, GPU_ACCELERATOR_LABEL, GPU_RESOURCE, Gpu};
use crate::diagnostic::Diagnostic;
use crate::validate::code_list;
use crate::validate::model::workload::{PodGroup, Request, join};
use crate::validate::rules::nodepool::NodePool;
use crate::validate::{MACHINE_TYPE_LABEL, rule};

/// The GPU a misspelt label most likely means: the one label that has every `-`-separated part
/// of `value` (`nvidia-t4` means `nvidia-tesla-t4`, not the closer-spelt `nvidia-l4`), else the
/// one that has its last part, the model (`nvidia-tesla-l4` means `nvidia-l4`), else the
/// closest by spelling.
fn suggest_gpu(value: &str) -> Option<&'static str> {
    let labels = || catalog::gpus().iter().map(|gpu| gpu.label);
    let has = |label: &str, part: &str| label.split('-').any(|own| own == part);
    let only = |matches: Vec<&'static str>| match matches.as_slice() {
        [label] => Some(*label),
        _ => None,
    };
    let model = value.rsplit('-').next().unwrap_or(value);
    only(
        labels()
            .filter(|label| value.split('-').all(|part| has(label, part)))
            .collect(),
    )
    .or_else(|| only(labels().filter(|label| has(label, model)).collect()))
    .or_else(|| catalog::closest(value, labels()))
}

/// A finding for an unknown GPU label value, with the likely intended one as the fix.
pub(crate) fn unknown_gpu(rule: &'static str, value: &str) -> Diagnostic {
    let known: Vec<&str> = catalog::gpus().iter().map(|gpu| gpu.label).collect();
    let diagnostic = Diagnostic::error(rule, format!("unknown GPU accelerator: `{value}`"))
        .found(value)
        .expected(format!("one of {}", code_list(&known)))
        .blueprint_field("spec.gpu.type");
    match suggest_gpu(value) {
        Some(suggestion) => diagnostic.fix(format!("did you mean `{suggestion}`?")),
        None => diagnostic,
    }
}

/// The GPU a pod selects, when it selects exactly one known GPU.
pub(crate) fn selected_gpu(group: &PodGroup<'_>) -> Option<&'static Gpu> {
    group
        .selection(GPU_ACCELERATOR_LABEL)?
        .value()
        .and_then(catalog::gpu)
}

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
    let gpu = selected_gpu(group)?;
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
                    rule::GPU_COUNT,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_the_label_that_has_every_part_written() {
        assert_eq!(suggest_gpu("nvidia-t4"), Some("nvidia-tesla-t4"));
        assert_eq!(suggest_gpu("nvidia-tesla-l4"), Some("nvidia-l4"));
        assert_eq!(suggest_gpu("nvidia-h100"), Some("nvidia-h100-80gb"));
    }
}

//! Workloads against node pools: when the set holds `ContainerNodePool`s, every accelerator
//! workload must have pools whose nodes it can land on (labels, taints) and that can hold it.
//!
//! A set without node pools is not checked: manifests validated on their own usually run on
//! pools defined elsewhere.
//!
//! Owns `accelerator-no-node-pool` only. Whether the pods' selectors and the pools are right in
//! themselves is for the TPU, GPU and node pool families; this rule takes both as read.

use crate::catalog::{GPU_ACCELERATOR_LABEL, NODE_POOL_LABEL};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::TpuTarget;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::placement::placement;
use crate::validate::model::workload::{Controller, Count, GroupRole, Request};
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, code_list, gpu_capacity, plural};
use crate::yaml::Node;

/// Runs `accelerator-no-node-pool` over every accelerator pod template.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    if pools.is_empty() {
        return;
    }
    for group in groups {
        if let (Some(target), Some(request)) = (&group.tpu_target, &group.tpu) {
            check_tpu(group, target, request, pools, out);
        }
        if let Some(request) = &group.gpu {
            check_gpu(group, request, pools, out);
        }
    }
}

/// The node pools that `group`'s pods can be scheduled on.
fn matching_pools<'p, 'a>(
    pools: &'p [NodePool<'a>],
    group: &PodGroup<'_>,
) -> Vec<&'p NodePool<'a>> {
    group.matching_pools(pools)
}

/// `found` text listing the pools of the relevant kind and why each was passed over.
fn passed_over(pools: &[&NodePool<'_>], group: &PodGroup<'_>, kind: &str) -> String {
    if pools.is_empty() {
        return format!("no {kind} node pools");
    }
    let reasons: Vec<String> = pools
        .iter()
        .map(|pool| match group.exclusion(pool) {
            Some(reason) => format!("{}: {reason}", pool.describe()),
            None => pool.describe(),
        })
        .collect();
    reasons.join("; ")
}

/// The count that sets how many slices or pods a template needs, to point capacity findings at.
fn scale<'g>(group: &'g PodGroup<'_>) -> Option<&'g Count<'g>> {
    match &group.template.controller {
        Controller::ReplicaSet { replicas }
        | Controller::StatefulSet { replicas }
        | Controller::JobSet { replicas, .. }
        | Controller::RayWorkers { replicas, .. } => Some(replicas),
        Controller::LeaderWorkerSet(lws) if lws.role == GroupRole::Worker => Some(&lws.replicas),
        Controller::Job(job) => Some(&job.parallelism),
        Controller::Pod
        | Controller::DaemonSet
        | Controller::LeaderWorkerSet(_)
        | Controller::RayHead => None,
    }
}

/// No node pool of the set makes the nodes (`what`: a slice, a GPU) that the pods of `group`
/// select at `node` (`field`).
fn no_node_pool(group: &PodGroup<'_>, what: &str, node: &Node, field: &str) -> Diagnostic {
    let message = format!("no node pool in the set makes {what} nodes these pods can use");
    error(group, message, node, field)
}

/// An `accelerator-no-node-pool` finding about the pods of `group`, at `node` (`field`).
fn error(group: &PodGroup<'_>, message: String, node: &Node, field: &str) -> Diagnostic {
    let diagnostic = Diagnostic::error(rule::ACCELERATOR_NO_NODE_POOL, message);
    group.template.finding(diagnostic, node, field)
}

fn check_tpu(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    request: &Request<'_>,
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let template = &group.template;
    let matching = matching_pools(pools, group);
    if matching.is_empty() {
        let tpu_pools: Vec<&NodePool<'_>> =
            pools.iter().filter(|pool| pool.tpu.is_some()).collect();
        let selection = &target.selection;
        out.push(
            no_node_pool(group, &target.describe(), selection.node, &selection.field)
                .found(passed_over(&tpu_pools, group, "TPU"))
                .expected(format!(
                    "a node pool of {} with `tpuTopology: {}`",
                    machines(target),
                    target.node_topology.as_ref().unwrap_or(&target.topology)
                ))
                .fix("add a matching `ContainerNodePool`, or select the slice the node pools make")
                .blueprint_field("spec.tpu.topology"),
        );
        return;
    }

    // Capacity in slices: a multi-host pool holds exactly one slice, and so does any pool a
    // JobSet or LeaderWorkerSet claims per slice with exclusive topology; single-host pools
    // hold one slice per node. Under dynamic slicing, slices are cut from and stitched of the
    // pools' nodes, so capacity is the matching nodes over the nodes of one slice.
    let placement = placement(group);
    let exclusive = placement
        .as_ref()
        .is_some_and(|placement| placement.annotation_value() == Some(NODE_POOL_LABEL));
    let slice_hosts = target
        .layouts_for(request.count)
        .first()
        .map_or(1, |slice| i64::from(slice.hosts()));
    let mut capacity = 0;
    let mut nodes = 0;
    for pool in &matching {
        // A pool of unknown size or slice could hold anything: judge nothing then.
        let (Some(max_nodes), Some(slice)) = (
            pool.max_nodes,
            pool.tpu.as_ref().and_then(|tpu| tpu.slice.as_ref()),
        ) else {
            return;
        };
        nodes += max_nodes;
        let hosts = i64::from(slice.hosts());
        capacity += if exclusive || slice.is_multi_host() {
            i64::from(max_nodes >= hosts)
        } else {
            max_nodes / hosts
        };
    }
    if target.dynamic {
        capacity = nodes / slice_hosts.max(1);
    }
    let multi_host = matching
        .iter()
        .filter_map(|pool| pool.tpu.as_ref().and_then(|tpu| tpu.slice.as_ref()))
        .any(|slice| slice.is_multi_host());
    let needed = match &template.controller {
        Controller::JobSet { replicas, .. } | Controller::RayWorkers { replicas, .. } => {
            replicas.value
        }
        Controller::LeaderWorkerSet(lws) if lws.role == GroupRole::Worker => placement
            .as_ref()
            .map_or(lws.replicas.value, |placement| placement.units),
        Controller::ReplicaSet { replicas } | Controller::StatefulSet { replicas }
            if !multi_host =>
        {
            replicas.value
        }
        Controller::Job(_)
        | Controller::Pod
        | Controller::RayHead
        | Controller::ReplicaSet { .. }
        | Controller::StatefulSet { .. } => 1,
        Controller::DaemonSet | Controller::LeaderWorkerSet(_) => return,
    };
    if needed <= capacity {
        return;
    }
    let names = pool_names(&matching);
    let anchor = scale(group).map_or(target.selection.node, |count| count.anchor);
    let field = scale(group).map_or(target.selection.field.as_str(), |count| {
        count.field.as_str()
    });
    let fix = if target.dynamic {
        format!(
            "add node pools until the matching pools have {} nodes: a {} slice takes {slice_hosts}, and dynamic slicing stitches slices across pools",
            needed * slice_hosts,
            target.describe()
        )
    } else if exclusive || multi_host {
        format!(
            "add node pools until there is one per slice ({needed}), each with a full slice of nodes"
        )
    } else {
        "raise the node count of the matching node pools, or run fewer replicas".to_string()
    };
    let message = format!(
        "{needed} {} slices are needed but the matching node pools hold {capacity}",
        target.describe()
    );
    out.push(
        error(group, message, anchor, field)
            .found(format!(
                "room for {} in {}",
                plural(capacity, "slice"),
                names
            ))
            .expected(format!("room for {}", plural(needed, "slice")))
            .fix(fix)
            .blueprint_field("spec.tpu.slices"),
    );
}

/// `` `ct4p-hightpu-4t` `` (or a list) for the layouts of a target.
fn machines(target: &TpuTarget<'_>) -> String {
    let mut names: Vec<&str> = target
        .layouts
        .iter()
        .map(|slice| slice.machine_type())
        .collect();
    names.dedup();
    code_list(&names)
}

fn check_gpu(
    group: &PodGroup<'_>,
    request: &Request<'_>,
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let Some(gpu) = group.gpu_target else {
        return;
    };
    let Some(requirement) = group.selection(GPU_ACCELERATOR_LABEL) else {
        return;
    };
    let template = &group.template;
    let matching = matching_pools(pools, group);
    if matching.is_empty() {
        let gpu_pools: Vec<&NodePool<'_>> =
            pools.iter().filter(|pool| !pool.gpus.is_empty()).collect();
        let what = format!("`{}`", gpu.label);
        out.push(
            no_node_pool(group, &what, requirement.node, &requirement.field)
                .found(passed_over(&gpu_pools, group, "GPU"))
                .expected(format!("a node pool with `{}` GPUs", gpu.label))
                .fix("add a matching `ContainerNodePool`, or select the GPU the node pools have")
                .blueprint_field("spec.gpu.type"),
        );
        return;
    }
    let (Some(pods), Some(scale)) = (template.pods(), scale(group)) else {
        return;
    };
    let per_node = |pool: &NodePool<'_>| -> i64 {
        let gpus = pool.gpus.iter().filter(|(own, _)| own.label == gpu.label);
        gpus.map(|(_, count)| i64::from(*count)).sum()
    };
    let Some(capacity) = gpu_capacity(&matching, request.count, per_node) else {
        return;
    };
    if pods <= capacity {
        return;
    }
    let names = pool_names(&matching);
    let message = format!(
        "{pods} pods with {} `{}` each do not fit the matching node pools, which hold {capacity}",
        request.count, gpu.label
    );
    out.push(
        error(group, message, scale.anchor, &scale.field)
            .found(format!("room for {} in {}", plural(capacity, "pod"), names))
            .expected(format!("room for {}", plural(pods, "pod")))
            .fix("raise the node count (or autoscaling maximum) of the matching node pools, or run fewer pods")
            .blueprint_field("spec.gpu.count"),
    );
}

/// `` `a`, `b` `` of the pools' names, for a finding's `found`.
fn pool_names(pools: &[&NodePool<'_>]) -> String {
    let names: Vec<String> = pools
        .iter()
        .map(|pool| format!("`{}`", pool.name))
        .collect();
    names.join(", ")
}

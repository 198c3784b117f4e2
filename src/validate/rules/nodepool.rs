//! Node pool rules on Config Connector `ContainerNodePool`s: the TPU machine type and topology
//! form a slice (`nodepool-tpu-machine-topology`), multi-host TPU pools are placed as one slice
//! (`nodepool-tpu-placement`) and sized to one slice (`nodepool-tpu-node-count`), and attached
//! GPUs fit the machine (`nodepool-gpu-machine`).
//!
//! Pools are read by [`crate::validate::model::nodepool`]; whether workloads fit them is for
//! the cross-object rules.

use crate::catalog::{self, Placement, TpuFamily, TpuSlice};
use crate::diagnostic::Diagnostic;
use crate::validate::model::accelerator::read_topology;
use crate::validate::model::fields::{join, scalar_text};
use crate::validate::model::nodepool::{NodePool, PoolTpu};
use crate::validate::rule;
use crate::validate::rules::shared::{bad_topology, code_list, gpu_machine_mismatch, unknown_gpu};
use crate::yaml::Node;

/// Machine types that look like TPU VMs (`ct5lp-hightpu-4t`, `tpu7x-standard-4t`), so that a
/// misspelt one is reported instead of being taken for a CPU machine.
fn looks_like_tpu_machine(name: &str) -> bool {
    let ct = name
        .strip_prefix("ct")
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()));
    ct || name.starts_with("tpu")
}

/// Runs the node pool rules on every pool.
pub(crate) fn check(pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    for pool in pools {
        check_tpu_machine(pool, out);
        if let Some(tpu) = &pool.tpu {
            check_placement(pool, tpu, out);
            check_node_count(pool, tpu, out);
        }
        check_gpu_machine(pool, out);
    }
}

/// What a finding on a pool starts with: position, object and field.
fn finding(pool: &NodePool<'_>, diagnostic: Diagnostic, node: &Node, field: &str) -> Diagnostic {
    diagnostic
        .at(pool.object.file, node.span)
        .object(pool.object.id.clone())
        .field(field)
}

fn spec_at<'a>(pool: &NodePool<'a>, path: &[&str]) -> Option<&'a Node> {
    pool.object.node.get("spec").and_then(|spec| spec.at(path))
}

fn check_tpu_machine(pool: &NodePool<'_>, out: &mut Vec<Diagnostic>) {
    const FIELD: &str = "spec.placementPolicy.tpuTopology";
    let topology_node = spec_at(pool, &["placementPolicy", "tpuTopology"]);
    let Some(machine_type) = pool.machine_type else {
        return;
    };
    let Some(tpu) = &pool.tpu else {
        let machine_node =
            spec_at(pool, &["nodeConfig", "machineType"]).unwrap_or(pool.object.node);
        if looks_like_tpu_machine(machine_type) {
            let known: Vec<&str> = TpuFamily::ALL
                .into_iter()
                .flat_map(TpuFamily::machines)
                .map(|machine| machine.name)
                .collect();
            let mut diagnostic = finding(
                pool,
                Diagnostic::error(
                    rule::NODEPOOL_TPU_MACHINE_TOPOLOGY,
                    format!("unknown TPU machine type: `{machine_type}`"),
                ),
                machine_node,
                "spec.nodeConfig.machineType",
            )
            .found(machine_type)
            .expected(format!("one of {}", code_list(&known)))
            .blueprint_field("spec.tpu.type");
            if let Some(closest) = catalog::closest(machine_type, known.iter().copied()) {
                diagnostic = diagnostic.fix(format!("did you mean `{closest}`?"));
            }
            out.push(diagnostic);
        } else if let Some(topology_node) = topology_node {
            out.push(
                finding(
                    pool,
                    Diagnostic::error(
                        rule::NODEPOOL_TPU_MACHINE_TOPOLOGY,
                        format!(
                            "`tpuTopology` is set but `{machine_type}` is not a TPU machine type"
                        ),
                    ),
                    topology_node,
                    FIELD,
                )
                .found(machine_type)
                .expected("a TPU machine type such as `ct5lp-hightpu-4t`")
                .fix("set a TPU machine type, or remove `spec.placementPolicy.tpuTopology`")
                .blueprint_field("spec.tpu.type"),
            );
        }
        return;
    };
    let Some((topology_node, written)) =
        topology_node.and_then(|node| Some((node, node.as_str()?)))
    else {
        return;
    };
    let family = tpu.machine.family;
    let rule = rule::NODEPOOL_TPU_MACHINE_TOPOLOGY;
    if let Err(problem) = read_topology(Some(family), written) {
        let diagnostic = bad_topology(rule, rule, Some(family), written, &problem);
        out.push(finding(pool, diagnostic, topology_node, FIELD));
    } else if let (None, Some(topology)) = (&tpu.slice, &tpu.topology) {
        let machines: Vec<&str> = catalog::tpu_slices_for_selector(family.accelerator(), topology)
            .iter()
            .map(TpuSlice::machine_type)
            .collect();
        out.push(
            finding(
                pool,
                Diagnostic::error(
                    rule,
                    format!(
                        "`{written}` slices do not run on `{}` machines",
                        tpu.machine.name
                    ),
                ),
                topology_node,
                FIELD,
            )
            .found(written)
            .expected(format!("machine type {}", code_list(&machines)))
            .fix(format!(
                "use machine type {}, or a topology this machine forms",
                code_list(&machines)
            ))
            .blueprint_field("spec.tpu.topology"),
        );
    }
}

fn check_placement(pool: &NodePool<'_>, tpu: &PoolTpu, out: &mut Vec<Diagnostic>) {
    let policy = spec_at(pool, &["placementPolicy"]);
    let policy_type = policy.and_then(|policy| policy.get("type"));
    let tpu_topology = policy.and_then(|policy| policy.get("tpuTopology"));
    // Without a slice, machine type and topology disagree: `nodepool-tpu-machine-topology`.
    let Some(slice) = &tpu.slice else {
        return;
    };
    // A finding of this rule, at `node` (`field`) of the pool.
    let error = |message: String, node: &Node, field: &str| {
        let diagnostic = Diagnostic::error(rule::NODEPOOL_TPU_PLACEMENT, message);
        finding(pool, diagnostic, node, field).blueprint_field("spec.tpu.topology")
    };
    match slice.placement() {
        Placement::None => {
            if let Some(policy) = policy {
                let found = match tpu_topology.and_then(scalar_text) {
                    Some(topology) => format!("`placementPolicy` with `tpuTopology: {topology}`"),
                    None => "`placementPolicy`".to_string(),
                };
                let message = format!(
                    "single-host `{}` node pools take no `placementPolicy`",
                    slice.name
                );
                let node = tpu_topology.unwrap_or(policy);
                out.push(
                    error(message, node, "spec.placementPolicy")
                        .found(found)
                        .expected("no `placementPolicy`: GKE rejects placement and topology on single-host TPU node pools")
                        .fix("remove `spec.placementPolicy`"),
                );
            }
        }
        Placement::Compact => {
            let written = policy_type.and_then(Node::as_str);
            if written != Some("COMPACT") {
                let anchor = policy_type.or(policy).unwrap_or(pool.object.node);
                out.push(
                    error(
                        format!(
                            "multi-host `{}` node pools need `COMPACT` placement",
                            slice.name
                        ),
                        anchor,
                        "spec.placementPolicy.type",
                    )
                    .found(written.map_or_else(|| "no `type`".to_string(), |t| format!("`{t}`")))
                    .expected("`COMPACT`")
                    .fix("set `spec.placementPolicy.type: COMPACT`"),
                );
            }
        }
        Placement::WorkloadPolicy => {
            let policy_ref = policy.and_then(|policy| policy.get("policyNameRef"));
            if policy_ref.is_none() {
                out.push(
                    error(
                        format!(
                            "multi-host `{}` node pools need a workload policy",
                            slice.name
                        ),
                        policy.unwrap_or(pool.object.node),
                        "spec.placementPolicy.policyNameRef",
                    )
                    .found("no `policyNameRef`")
                    .expected(
                        "`policyNameRef` to a high-throughput workload `ComputeResourcePolicy`",
                    )
                    .fix("add `spec.placementPolicy.policyNameRef`"),
                );
            }
            // GKE refuses `COMPACT` placement for Ironwood pools ("use workload policy instead").
            if let Some(policy_type) = policy_type.filter(|t| t.as_str() == Some("COMPACT")) {
                out.push(
                    error(
                        format!(
                            "`{}` node pools use a workload policy, not `COMPACT` placement",
                            slice.name
                        ),
                        policy_type,
                        "spec.placementPolicy.type",
                    )
                    .found("`COMPACT`")
                    .expected("no `COMPACT` placement type")
                    .fix("remove `spec.placementPolicy.type` and keep `policyNameRef`"),
                );
            }
        }
    }
}

fn check_node_count(pool: &NodePool<'_>, tpu: &PoolTpu, out: &mut Vec<Diagnostic>) {
    let Some(slice) = tpu.slice.as_ref().filter(|slice| slice.is_multi_host()) else {
        return;
    };
    let Some(spec) = pool.object.node.get("spec") else {
        return;
    };
    let hosts = i64::from(slice.hosts());
    let topology = &slice.topology;
    // Multi-host pools are created, repaired and scaled as one gang of exactly `hosts` VMs:
    // every count is the whole slice (or, where scaling from zero is allowed, 0).
    let whole = |node: &&Node| node.as_count() == Some(hosts);
    let whole_or_empty = |node: &&Node| matches!(node.as_count(), Some(0)) || whole(node);
    let text = |node: &Node| scalar_text(node).unwrap_or_default();
    // (field, node to point at, found, expected, message)
    let mut problems: Vec<(&str, &Node, String, String, String)> = Vec::new();
    // A count written with the wrong value.
    let wrong = |field, node, expected, message| (field, node, text(node), expected, message);
    // The count that must be the whole slice: the autoscaling maximum, else the node count.
    // (field, the value written, where to point and what stands there when it is missing,
    // the message when it is wrong, when it is missing)
    let autoscaling = spec.get("autoscaling");
    let (field, written, absent, absent_found, wrong_message, missing_message) = match autoscaling {
        // GKE sizes TPU slices per zone: with only `totalMaxNodeCount` the per-zone maximum
        // is 0 and pool creation fails.
        Some(autoscaling) => (
            "spec.autoscaling.maxNodeCount",
            autoscaling.get("maxNodeCount"),
            autoscaling.get("totalMaxNodeCount").unwrap_or(autoscaling),
            "no `maxNodeCount`",
            format!("the autoscaling maximum of a `{topology}` slice pool must be {hosts}"),
            format!("autoscaled `{topology}` slice pools need `maxNodeCount: {hosts}`"),
        ),
        None => {
            let (field, written) = [
                ("spec.nodeCount", "nodeCount"),
                ("spec.initialNodeCount", "initialNodeCount"),
            ]
            .into_iter()
            .find_map(|(field, key)| Some((field, spec.get(key)?)))
            .map_or(("spec.nodeCount", None), |(field, node)| {
                (field, Some(node))
            });
            (
                field,
                written,
                spec,
                "no `nodeCount` or `initialNodeCount`",
                format!("a `{topology}` slice pool needs {hosts} nodes"),
                format!("a `{topology}` slice pool needs an explicit node count of {hosts}"),
            )
        }
    };
    match written {
        Some(node) if !whole(&node) => {
            problems.push(wrong(field, node, hosts.to_string(), wrong_message));
        }
        Some(_) => {}
        None => problems.push((
            field,
            absent,
            absent_found.to_string(),
            hosts.to_string(),
            missing_message,
        )),
    }
    if let Some(autoscaling) = autoscaling {
        let minimums = [
            (
                "spec.autoscaling.minNodeCount",
                autoscaling.get("minNodeCount"),
            ),
            (
                "spec.autoscaling.totalMinNodeCount",
                autoscaling.get("totalMinNodeCount"),
            ),
            ("spec.initialNodeCount", spec.get("initialNodeCount")),
        ];
        for (field, node) in minimums {
            if let Some(node) = node.filter(|node| !whole_or_empty(node)) {
                problems.push(wrong(
                    field,
                    node,
                    format!("0 or {hosts}"),
                    format!("a `{topology}` slice pool has 0 or {hosts} nodes, nothing between"),
                ));
            }
        }
    }
    for (field, node, found, expected, message) in problems {
        out.push(
            finding(
                pool,
                Diagnostic::error(rule::NODEPOOL_TPU_NODE_COUNT, message),
                node,
                field,
            )
            .found(found)
            .expected(expected)
            .fix(format!(
                "a `{topology}` slice is {hosts} `{}` VMs: size the pool to exactly {hosts} nodes",
                slice.machine_type()
            ))
            .blueprint_field("spec.tpu.topology"),
        );
    }
}

fn check_gpu_machine(pool: &NodePool<'_>, out: &mut Vec<Diagnostic>) {
    let accelerators = spec_at(pool, &["nodeConfig", "guestAccelerator"]).and_then(Node::as_seq);
    for (index, accelerator) in accelerators.unwrap_or(&[]).iter().enumerate() {
        let path = format!("spec.nodeConfig.guestAccelerator[{index}]");
        let Some(type_node) = accelerator.get("type") else {
            continue;
        };
        let Some(label) = type_node.as_str() else {
            continue;
        };
        let Some(gpu) = catalog::gpu(label) else {
            let diagnostic = unknown_gpu(rule::NODEPOOL_GPU_MACHINE, label);
            out.push(finding(pool, diagnostic, type_node, &join(&path, "type")));
            continue;
        };
        let Some(machine_type) = pool.machine_type else {
            continue;
        };
        let count_node = accelerator.get("count");
        let count = count_node.and_then(Node::as_count).unwrap_or(1);
        let Some((diagnostic, count_at_fault)) = gpu_machine_mismatch(
            rule::NODEPOOL_GPU_MACHINE,
            gpu,
            machine_type,
            count,
            count_node.is_some(),
        ) else {
            continue;
        };
        let (node, field, blueprint_field) = match count_node {
            Some(node) if count_at_fault => (node, join(&path, "count"), "spec.gpu.count"),
            _ => (type_node, join(&path, "type"), "spec.gpu.type"),
        };
        out.push(finding(pool, diagnostic, node, &field).blueprint_field(blueprint_field));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_tpu_machine_names() {
        assert!(looks_like_tpu_machine("ct5lp-hightpu-2t"));
        assert!(looks_like_tpu_machine("tpu7-standard-4t"));
        assert!(!looks_like_tpu_machine("n1-standard-4"));
        assert!(!looks_like_tpu_machine("c3-standard-8"));
    }
}

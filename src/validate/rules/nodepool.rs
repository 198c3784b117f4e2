//! Config Connector `ContainerNodePool`s: what nodes each pool makes, and the rules on pools
//! themselves (TPU machine and topology, placement, node count; GPU machine and accelerators).
//!
//! The [`NodePool`] model is shared with the cross-object rules, which match workloads against
//! the labels, taints and capacity a pool gives its nodes.

use crate::catalog::{
    self, GPU_ACCELERATOR_LABEL, Gpu, NODE_POOL_LABEL, Placement, TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL, Topology, TopologyError, TpuFamily, TpuMachine, TpuSlice,
};
use crate::diagnostic::Diagnostic;
use crate::validate::model::workload::{join, scalar_text};
use crate::validate::rules::shared::{bad_topology, code_list, strip_period, unknown_gpu};
use crate::validate::{MACHINE_TYPE_LABEL, Object, rule};
use crate::yaml::Node;

/// Node label GKE puts on Spot VMs.
const SPOT_LABEL: &str = "cloud.google.com/gke-spot";

/// A `ContainerNodePool` as the nodes it makes.
#[derive(Debug)]
pub(crate) struct NodePool<'a> {
    /// The object.
    pub object: &'a Object<'a>,
    /// GKE node pool name: `spec.resourceID`, else `metadata.name`.
    pub name: &'a str,
    /// `spec.nodeConfig.machineType`, when written.
    pub machine_type: Option<&'a str>,
    /// TPU facts, when the machine type is a TPU machine.
    pub tpu: Option<PoolTpu>,
    /// GPUs on each node: attached `guestAccelerator`s, or those built into the machine type.
    pub gpus: Vec<(&'static Gpu, u32)>,
    /// Labels every node of the pool carries that a pod may select: the pool's own
    /// `nodeConfig.labels` and the ones GKE sets from the pool's configuration.
    pub labels: Vec<(String, String)>,
    /// Taints from `nodeConfig.taint`: key, value, effect in the Kubernetes spelling.
    pub taints: Vec<(String, String, String)>,
    /// The most nodes the pool can have, when the object bounds it.
    pub max_nodes: Option<i64>,
}

/// A TPU node pool's slice.
#[derive(Debug)]
pub(crate) struct PoolTpu {
    /// The machine type.
    pub machine: &'static TpuMachine,
    /// The topology nodes are labelled with: `placementPolicy.tpuTopology` as written, or the
    /// single-host topology of the machine.
    pub topology: Option<Topology>,
    /// The slice the pool holds, when the machine type and topology agree.
    pub slice: Option<TpuSlice>,
}

impl NodePool<'_> {
    /// The value of a node label on this pool's nodes, when known.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(own, _)| own == key)
            .map(|(_, value)| value.as_str())
    }

    /// Whether this pool's label for `key` is known for certain, so that a pod selecting `key`
    /// is excluded when the label is absent. Other labels (zone, OS, metadata server…) are
    /// set by GKE in ways the object does not show, so only a different value excludes a pod.
    pub(crate) fn label_is_authoritative(&self, key: &str) -> bool {
        match key {
            TPU_ACCELERATOR_LABEL
            | TPU_TOPOLOGY_LABEL
            | GPU_ACCELERATOR_LABEL
            | NODE_POOL_LABEL => true,
            MACHINE_TYPE_LABEL => self.machine_type.is_some(),
            _ => false,
        }
    }

    /// A short description for messages: ``tpu-pool-1` (`tpu-v4-podslice`, `2x2x2`)`.
    pub(crate) fn describe(&self) -> String {
        let mut facts = Vec::new();
        for key in [
            TPU_ACCELERATOR_LABEL,
            TPU_TOPOLOGY_LABEL,
            GPU_ACCELERATOR_LABEL,
        ] {
            if let Some(value) = self.label(key) {
                facts.push(format!("`{value}`"));
            }
        }
        if facts.is_empty() {
            facts.push(format!(
                "`{}`",
                self.machine_type.unwrap_or("default machine type")
            ));
        }
        format!("`{}` ({})", self.name, facts.join(", "))
    }
}

/// Reads every `ContainerNodePool` in the set.
pub(crate) fn pools<'a>(objects: &'a [Object<'a>]) -> Vec<NodePool<'a>> {
    objects
        .iter()
        .filter(|object| is_node_pool(object))
        .map(read)
        .collect()
}

fn is_node_pool(object: &Object<'_>) -> bool {
    object.group() == "container.cnrm.cloud.google.com" && object.id.kind == "ContainerNodePool"
}

fn read<'a>(object: &'a Object<'a>) -> NodePool<'a> {
    let spec = object.node.get("spec");
    let at = |path: &[&str]| spec.and_then(|spec| spec.at(path));
    let name = at(&["resourceID"])
        .and_then(Node::as_str)
        .unwrap_or(&object.id.name);
    let machine_type = at(&["nodeConfig", "machineType"]).and_then(Node::as_str);
    let tpu_topology = at(&["placementPolicy", "tpuTopology"]).and_then(Node::as_str);
    let tpu = machine_type.and_then(catalog::tpu_machine).map(|machine| {
        let topology = match tpu_topology {
            Some(written) => written.parse().ok(),
            None => single_host_slice(machine).map(|slice| slice.topology),
        };
        let slice = topology
            .as_ref()
            .and_then(|topology| slice_on(machine, topology));
        PoolTpu {
            machine,
            topology,
            slice,
        }
    });

    let mut gpus = Vec::new();
    for accelerator in at(&["nodeConfig", "guestAccelerator"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
    {
        let gpu = accelerator
            .get("type")
            .and_then(Node::as_str)
            .and_then(catalog::gpu);
        let count = accelerator
            .get("count")
            .and_then(Node::as_count)
            .unwrap_or(1);
        if let Some(gpu) = gpu {
            gpus.push((gpu, u32::try_from(count).unwrap_or(0)));
        }
    }
    if gpus.is_empty() {
        gpus.extend(machine_type.and_then(catalog::gpu_for_machine));
    }

    let mut labels = vec![(NODE_POOL_LABEL.to_string(), name.to_string())];
    if let Some(machine_type) = machine_type {
        labels.push((MACHINE_TYPE_LABEL.to_string(), machine_type.to_string()));
    }
    if let Some(tpu) = &tpu {
        labels.push((
            TPU_ACCELERATOR_LABEL.to_string(),
            tpu.machine.family.accelerator().into(),
        ));
        // GKE labels nodes with the topology as written in the pool.
        let topology = tpu_topology
            .map(str::to_string)
            .or_else(|| tpu.topology.as_ref().map(ToString::to_string));
        if let Some(topology) = topology {
            labels.push((TPU_TOPOLOGY_LABEL.to_string(), topology));
        }
    }
    if let Some((gpu, _)) = gpus.first() {
        labels.push((GPU_ACCELERATOR_LABEL.to_string(), gpu.label.to_string()));
    }
    if at(&["nodeConfig", "spot"]).is_some_and(|spot| spot.value == crate::yaml::Value::Bool(true))
    {
        labels.push((SPOT_LABEL.to_string(), "true".to_string()));
    }
    for (key, value) in at(&["nodeConfig", "labels"])
        .and_then(Node::as_map)
        .unwrap_or(&[])
    {
        if let Some(value) = scalar_text(value) {
            labels.push((key.text.clone(), value));
        }
    }

    let taints = at(&["nodeConfig", "taint"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .filter_map(|taint| {
            let text = |key| taint.get(key).and_then(scalar_text);
            Some((
                text("key")?,
                text("value").unwrap_or_default(),
                kubernetes_effect(&text("effect")?),
            ))
        })
        .collect();

    NodePool {
        object,
        name,
        machine_type,
        tpu,
        gpus,
        labels,
        taints,
        max_nodes: max_nodes(spec),
    }
}

/// Config Connector spells taint effects as the GKE API does (`NO_SCHEDULE`); pods use the
/// Kubernetes spelling (`NoSchedule`).
fn kubernetes_effect(effect: &str) -> String {
    match effect {
        "NO_SCHEDULE" => "NoSchedule".to_string(),
        "PREFER_NO_SCHEDULE" => "PreferNoSchedule".to_string(),
        "NO_EXECUTE" => "NoExecute".to_string(),
        other => other.to_string(),
    }
}

/// The most nodes a pool can have: the autoscaling maximum when autoscaling is configured,
/// else the fixed count; per-zone counts are multiplied by the zones in `nodeLocations`.
fn max_nodes(spec: Option<&Node>) -> Option<i64> {
    let spec = spec?;
    let zones = spec
        .get("nodeLocations")
        .and_then(Node::as_seq)
        .map_or(1, |zones| zones.len().max(1));
    let zones = i64::try_from(zones).unwrap_or(1);
    let count = |path: &[&str]| spec.at(path).and_then(Node::as_count);
    if spec.get("autoscaling").is_some() {
        return count(&["autoscaling", "totalMaxNodeCount"])
            .or_else(|| count(&["autoscaling", "maxNodeCount"]).map(|count| count * zones));
    }
    count(&["nodeCount"])
        .or_else(|| count(&["initialNodeCount"]))
        .map(|count| count * zones)
}

/// The slice nodes of `machine` labelled with `topology` form, if the catalog has it.
fn slice_on(machine: &TpuMachine, topology: &Topology) -> Option<TpuSlice> {
    catalog::tpu_slices_for_selector(machine.family.accelerator(), topology)
        .into_iter()
        .find(|slice| slice.machine_type() == machine.name)
}

/// The slice a single node of `machine` forms on its own, if the machine is ever single-host.
fn single_host_slice(machine: &TpuMachine) -> Option<TpuSlice> {
    machine
        .family
        .topologies()
        .iter()
        .filter(|topology| topology.chips() == machine.chips)
        .filter_map(|topology| slice_on(machine, topology))
        .find(|slice| !slice.is_multi_host())
}

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
    if let Some((error, parsed)) = topology_problem(family, written) {
        let diagnostic = bad_topology(rule, rule, Some(family), written, &error, parsed.as_ref());
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
    match slice.placement() {
        Placement::None => {
            if let Some(policy) = policy {
                let found = match tpu_topology.and_then(scalar_text) {
                    Some(topology) => format!("`placementPolicy` with `tpuTopology: {topology}`"),
                    None => "`placementPolicy`".to_string(),
                };
                out.push(
                    finding(
                        pool,
                        Diagnostic::error(
                            rule::NODEPOOL_TPU_PLACEMENT,
                            format!(
                                "single-host `{}` node pools take no `placementPolicy`",
                                slice.name
                            ),
                        ),
                        tpu_topology.unwrap_or(policy),
                        "spec.placementPolicy",
                    )
                    .found(found)
                    .expected("no `placementPolicy`: GKE rejects placement and topology on single-host TPU node pools")
                    .fix("remove `spec.placementPolicy`")
                    .blueprint_field("spec.tpu.topology"),
                );
            }
        }
        Placement::Compact => {
            let written = policy_type.and_then(Node::as_str);
            if written != Some("COMPACT") {
                let anchor = policy_type.or(policy).unwrap_or(pool.object.node);
                out.push(
                    finding(
                        pool,
                        Diagnostic::error(
                            rule::NODEPOOL_TPU_PLACEMENT,
                            format!(
                                "multi-host `{}` node pools need `COMPACT` placement",
                                slice.name
                            ),
                        ),
                        anchor,
                        "spec.placementPolicy.type",
                    )
                    .found(written.map_or_else(|| "no `type`".to_string(), |t| format!("`{t}`")))
                    .expected("`COMPACT`")
                    .fix("set `spec.placementPolicy.type: COMPACT`")
                    .blueprint_field("spec.tpu.topology"),
                );
            }
        }
        Placement::WorkloadPolicy => {
            let policy_ref = policy.and_then(|policy| policy.get("policyNameRef"));
            if policy_ref.is_none() {
                out.push(
                    finding(
                        pool,
                        Diagnostic::error(
                            rule::NODEPOOL_TPU_PLACEMENT,
                            format!(
                                "multi-host `{}` node pools need a workload policy",
                                slice.name
                            ),
                        ),
                        policy.unwrap_or(pool.object.node),
                        "spec.placementPolicy.policyNameRef",
                    )
                    .found("no `policyNameRef`")
                    .expected(
                        "`policyNameRef` to a high-throughput workload `ComputeResourcePolicy`",
                    )
                    .fix("add `spec.placementPolicy.policyNameRef`")
                    .blueprint_field("spec.tpu.topology"),
                );
            }
            // GKE refuses `COMPACT` placement for Ironwood pools ("use workload policy instead").
            if let Some(policy_type) = policy_type.filter(|t| t.as_str() == Some("COMPACT")) {
                out.push(
                    finding(
                        pool,
                        Diagnostic::error(
                            rule::NODEPOOL_TPU_PLACEMENT,
                            format!(
                                "`{}` node pools use a workload policy, not `COMPACT` placement",
                                slice.name
                            ),
                        ),
                        policy_type,
                        "spec.placementPolicy.type",
                    )
                    .found("`COMPACT`")
                    .expected("no `COMPACT` placement type")
                    .fix("remove `spec.placementPolicy.type` and keep `policyNameRef`")
                    .blueprint_field("spec.tpu.topology"),
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
    if let Some(autoscaling) = spec.get("autoscaling") {
        match autoscaling.get("maxNodeCount") {
            Some(node) if !whole(&node) => problems.push((
                "spec.autoscaling.maxNodeCount",
                node,
                text(node),
                hosts.to_string(),
                format!("the autoscaling maximum of a `{topology}` slice pool must be {hosts}"),
            )),
            Some(_) => {}
            // GKE sizes TPU slices per zone: with only `totalMaxNodeCount` the per-zone
            // maximum is 0 and pool creation fails.
            None => problems.push((
                "spec.autoscaling.maxNodeCount",
                autoscaling.get("totalMaxNodeCount").unwrap_or(autoscaling),
                "no `maxNodeCount`".to_string(),
                hosts.to_string(),
                format!("autoscaled `{topology}` slice pools need `maxNodeCount: {hosts}`"),
            )),
        }
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
                problems.push((
                    field,
                    node,
                    text(node),
                    format!("0 or {hosts}"),
                    format!("a `{topology}` slice pool has 0 or {hosts} nodes, nothing between"),
                ));
            }
        }
    } else {
        let written = [
            ("spec.nodeCount", "nodeCount"),
            ("spec.initialNodeCount", "initialNodeCount"),
        ]
        .into_iter()
        .find_map(|(field, key)| Some((field, spec.get(key)?)));
        match written {
            Some((field, node)) if !whole(&node) => problems.push((
                field,
                node,
                text(node),
                hosts.to_string(),
                format!("a `{topology}` slice pool needs {hosts} nodes"),
            )),
            Some(_) => {}
            None => problems.push((
                "spec.nodeCount",
                spec,
                "no `nodeCount` or `initialNodeCount`".to_string(),
                hosts.to_string(),
                format!("a `{topology}` slice pool needs an explicit node count of {hosts}"),
            )),
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
        if let Err(reason) =
            gpu.check_machine(machine_type, u32::try_from(count).unwrap_or(u32::MAX))
        {
            // A machine series that takes this GPU at all makes it a count problem; otherwise
            // the type does not fit.
            let series_fits = gpu
                .machines
                .iter()
                .any(|machine| machine_type.starts_with(machine.name));
            let (node, field, message, blueprint_field) = match count_node {
                Some(node) if series_fits => (
                    node,
                    join(&path, "count"),
                    format!("{count} `{label}` GPUs do not fit machine type `{machine_type}`"),
                    "spec.gpu.count",
                ),
                _ => (
                    type_node,
                    join(&path, "type"),
                    format!("`{label}` does not attach to machine type `{machine_type}`"),
                    "spec.gpu.type",
                ),
            };
            out.push(
                finding(
                    pool,
                    Diagnostic::error(rule::NODEPOOL_GPU_MACHINE, message),
                    node,
                    &field,
                )
                .found(format!("{count} × `{label}` on `{machine_type}`"))
                .expected(strip_period(&reason))
                .blueprint_field(blueprint_field),
            );
        }
    }
}

/// Why a parse or family check rejected a topology, for callers that only need the text.
pub(crate) fn topology_problem(
    family: TpuFamily,
    written: &str,
) -> Option<(TopologyError, Option<Topology>)> {
    match written.parse::<Topology>() {
        Err(error) => Some((error, None)),
        Ok(topology) => family
            .check_topology(&topology)
            .err()
            .map(|error| (error, Some(topology))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    #[test]
    fn single_host_machines_form_the_slice_of_their_chips() {
        let topology = |machine| {
            let machine = catalog::tpu_machine(machine).unwrap();
            single_host_slice(machine).map(|slice| slice.topology.to_string())
        };
        assert_eq!(topology("ct4p-hightpu-4t").as_deref(), Some("2x2x1"));
        assert_eq!(topology("ct5lp-hightpu-4t").as_deref(), Some("2x2"));
        assert_eq!(topology("ct5lp-hightpu-8t").as_deref(), Some("2x4"));
        assert_eq!(topology("ct6e-standard-1t").as_deref(), Some("1x1"));
        assert_eq!(topology("tpu7x-standard-4t").as_deref(), Some("2x2x1"));
    }

    #[test]
    fn bounds_nodes_by_autoscaling_then_fixed_counts_per_zone() {
        let max = |text: &str| max_nodes(parse_documents(text).unwrap().first());
        assert_eq!(max("nodeCount: 4\ninitialNodeCount: 1\n"), Some(4));
        assert_eq!(max("initialNodeCount: 2\nnodeLocations: [a, b]\n"), Some(4));
        assert_eq!(
            max("nodeCount: 4\nautoscaling: {maxNodeCount: 3}\n"),
            Some(3)
        );
        assert_eq!(
            max("autoscaling: {totalMaxNodeCount: 5, maxNodeCount: 3}\n"),
            Some(5)
        );
        assert_eq!(max("autoscaling: {minNodeCount: 1}\n"), None);
        assert_eq!(max("location: us-central1\n"), None);
    }

    #[test]
    fn spells_taint_effects_as_pods_do() {
        assert_eq!(kubernetes_effect("NO_SCHEDULE"), "NoSchedule");
        assert_eq!(kubernetes_effect("NO_EXECUTE"), "NoExecute");
        assert_eq!(kubernetes_effect("PREFER_NO_SCHEDULE"), "PreferNoSchedule");
    }

    #[test]
    fn recognises_tpu_machine_names() {
        assert!(looks_like_tpu_machine("ct5lp-hightpu-2t"));
        assert!(looks_like_tpu_machine("tpu7-standard-4t"));
        assert!(!looks_like_tpu_machine("n1-standard-4"));
        assert!(!looks_like_tpu_machine("c3-standard-8"));
    }
}

//! The accelerators a pod group targets: the TPU slice ([`TpuTarget`]) its selectors and slice
//! annotation name, resolved against the catalog (and, for TPU layouts, the node pools in the
//! set), and the GPUs its selectors, node pool or compute class choose ([`GpuChoice`]).
//!
//! This module decides what the selectors mean, not whether they are right: a value that names
//! no accelerator or no legal topology simply resolves to no target, and [`read_topology`]
//! returns a typed [`TopologyProblem`] that the rules turn into findings. It reports nothing.

use crate::catalog::{
    self, COMPUTE_CLASS_LABEL, GPU_ACCELERATOR_LABEL, Gpu, NODE_POOL_LABEL, TPU_ACCELERATOR_LABEL,
    TPU_TOPOLOGY_LABEL, Topology, TopologyError, TpuFamily, TpuSlice,
};
use crate::validate::Object;
use crate::validate::model::fields::scalar_text;
use crate::validate::model::nodepool::{MACHINE_TYPE_LABEL, NodePool};
use crate::validate::model::workload::{Selection, selection};
use crate::yaml::Node;

/// The TPU slice a pod selects.
#[derive(Clone, Debug)]
pub(crate) struct TpuTarget<'a> {
    /// The family of `cloud.google.com/gke-tpu-accelerator`.
    pub family: TpuFamily,
    /// The shape of one slice: the `cloud.google.com/gke-tpu-slice-topology` annotation under
    /// dynamic slicing, else the `cloud.google.com/gke-tpu-topology` selector.
    pub topology: Topology,
    /// The topology the pods' nodes are labelled with, when the pods select one: the slice
    /// itself, or under dynamic slicing the block the slice is cut from or stitched of.
    pub node_topology: Option<Topology>,
    /// The requirement that gives the slice shape (annotation or selector), to point at.
    pub selection: Selection<'a>,
    /// Whether the shape comes from the slice-topology annotation (GKE dynamic slicing).
    pub dynamic: bool,
    /// Physical layouts of the slice: usually one; v5e and v6e `2x4` can be one 8-chip VM or
    /// two 4-chip VMs, unless the node topology or a node pool in the set settles it.
    pub layouts: Vec<TpuSlice>,
}

impl<'a> TpuTarget<'a> {
    /// Resolves a pod's node label requirements and its slice-topology annotation into the
    /// slice they select: exactly one known accelerator, and a legal topology for it from the
    /// annotation or, without one, from exactly one `cloud.google.com/gke-tpu-topology` value.
    /// `None` otherwise, and when the catalog has no layout for them.
    pub(crate) fn resolve(
        selections: &[Selection<'a>],
        annotation: Option<&Selection<'a>>,
        pools: &[NodePool<'_>],
    ) -> Option<Self> {
        let family = selected_tpu_family(selections)?;
        let node_requirement = selection(selections, TPU_TOPOLOGY_LABEL);
        // Several values (`In [2x2, 2x4]`) name no one topology.
        let node_topology = node_requirement
            .and_then(Selection::value)
            .and_then(|written| read_topology(Some(family), written).ok());
        let (requirement, topology) = match annotation {
            Some(annotation) => (
                annotation,
                read_topology(Some(family), annotation.value()?).ok()?,
            ),
            None => (node_requirement?, node_topology.clone()?),
        };
        let mut layouts = catalog::tpu_slices_for_selector(family.accelerator(), &topology);
        // The machines nodes with the pods' labels can be: the layouts of the topology they
        // carry, narrowed by node pools in the set that carry it.
        let machines = |carried: &Topology| -> Vec<&'static str> {
            let all: Vec<&'static str> =
                catalog::tpu_slices_for_selector(family.accelerator(), carried)
                    .iter()
                    .map(TpuSlice::machine_type)
                    .collect();
            let pinned: Vec<&'static str> = pools
                .iter()
                .filter_map(|pool| pool.tpu.as_ref())
                .filter(|tpu| {
                    tpu.machine.family == family && tpu.topology.as_ref() == Some(carried)
                })
                .map(|tpu| tpu.machine.name)
                .filter(|name| all.contains(name))
                .collect();
            if pinned.is_empty() { all } else { pinned }
        };
        let carried = node_topology.as_ref().unwrap_or(&topology);
        let allowed = machines(carried);
        let narrowed: Vec<TpuSlice> = layouts
            .iter()
            .filter(|slice| allowed.contains(&slice.machine_type()))
            .cloned()
            .collect();
        if !narrowed.is_empty() {
            layouts = narrowed;
        }
        if layouts.is_empty() {
            return None;
        }
        Some(Self {
            family,
            topology,
            node_topology,
            selection: requirement.clone(),
            dynamic: annotation.is_some(),
            layouts,
        })
    }
}

impl TpuTarget<'_> {
    /// The layouts whose VMs have `chips` chips; every layout when none has (the chip count is
    /// then reported by `tpu-chips-per-host`, and the other rules go on without it).
    pub(crate) fn layouts_for(&self, chips: i64) -> Vec<&TpuSlice> {
        let matching: Vec<&TpuSlice> = self
            .layouts
            .iter()
            .filter(|slice| i64::from(slice.chips_per_host()) == chips)
            .collect();
        if matching.is_empty() {
            self.layouts.iter().collect()
        } else {
            matching
        }
    }

    /// `` `tpu-v4-podslice` `2x2x4` `` for messages.
    pub(crate) fn describe(&self) -> String {
        format!("`{}` `{}`", self.family.accelerator(), self.topology)
    }
}

/// The TPU family a pod selects: its first `cloud.google.com/gke-tpu-accelerator` requirement
/// holds exactly one value, and that value is an accelerator GKE has.
pub(crate) fn selected_tpu_family(selections: &[Selection<'_>]) -> Option<TpuFamily> {
    selection(selections, TPU_ACCELERATOR_LABEL)?
        .value()
        .and_then(TpuFamily::from_accelerator)
}

/// The GPU a pod selects, when it selects exactly one known GPU.
pub(crate) fn selected_gpu(selections: &[Selection<'_>]) -> Option<&'static Gpu> {
    selection(selections, GPU_ACCELERATOR_LABEL)?
        .value()
        .and_then(catalog::gpu)
}

/// One kind of node a GPU pod can land on, and the most GPUs such a node has.
#[derive(Clone, Debug)]
pub(crate) struct GpuNode {
    /// The most GPUs one such node has.
    pub per_node: u32,
    /// Where that number comes from, for messages.
    pub why: String,
}

/// How a pod chooses the GPU of its nodes (a `cloud.google.com/gce-machine-type`,
/// `cloud.google.com/gke-accelerator`, `cloud.google.com/compute-class` or
/// `cloud.google.com/gke-nodepool` requirement), and the nodes that choice allows.
#[derive(Clone, Debug)]
pub(crate) struct GpuChoice {
    /// The nodes it allows, when the catalog, the node pools or the compute classes in the set
    /// tell; empty when they cannot (a compute class or node pool defined elsewhere).
    pub nodes: Vec<GpuNode>,
}

/// Whether `object` is a GKE `ComputeClass`.
pub(crate) fn is_compute_class(object: &Object<'_>) -> bool {
    object.group() == "cloud.google.com" && object.id.kind == "ComputeClass"
}

/// How a pod's requirements choose its GPU, in order of precision: a GPU machine type fixes
/// model and count; an accelerator value fixes the model (counts come from the node pools in
/// the set, else the largest machine); a compute class or a node pool chooses what its rules or
/// nodes have. `None` when nothing does: GKE Standard then places the pod on any GPU node.
pub(crate) fn gpu_choice<'a>(
    selections: &[Selection<'a>],
    pools: &[NodePool<'_>],
    compute_classes: &[&Object<'_>],
) -> Option<GpuChoice> {
    if let Some(machine) = selection(selections, MACHINE_TYPE_LABEL) {
        let nodes: Vec<GpuNode> = machine
            .values
            .iter()
            .filter_map(|name| {
                let (gpu, count) = catalog::gpu_for_machine(name)?;
                Some(GpuNode {
                    per_node: count,
                    why: format!("`{name}` has {count} `{}`", gpu.label),
                })
            })
            .collect();
        // Machine types with attached GPUs (N1) leave the count to the accelerator selector.
        if !nodes.is_empty() && nodes.len() == machine.values.len() {
            return Some(GpuChoice { nodes });
        }
    }
    if let Some(accelerator) = selection(selections, GPU_ACCELERATOR_LABEL) {
        let nodes = accelerator
            .values
            .iter()
            .filter_map(|label| catalog::gpu(label))
            .filter_map(|gpu| gpu_nodes(gpu, pools))
            .collect();
        return Some(GpuChoice { nodes });
    }
    if let Some(class) = selection(selections, COMPUTE_CLASS_LABEL) {
        let nodes = class
            .values
            .iter()
            .flat_map(|name| {
                compute_classes
                    .iter()
                    .filter(move |object| object.id.name == *name)
                    .flat_map(|object| compute_class_nodes(object, pools))
            })
            .collect();
        return Some(GpuChoice { nodes });
    }
    let pool = selection(selections, NODE_POOL_LABEL)?;
    let nodes = pools
        .iter()
        .filter(|own| own.name_known && pool.accepts(own.name))
        .flat_map(pool_nodes)
        .collect();
    Some(GpuChoice { nodes })
}

/// Nodes of a GPU model: the node pools in the set that have it, else the largest machine.
fn gpu_nodes(gpu: &'static Gpu, pools: &[NodePool<'_>]) -> Option<GpuNode> {
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
        return Some(GpuNode {
            per_node: count,
            why: format!(
                "node pool `{}` has {count} `{}` per node",
                pool.name, gpu.label
            ),
        });
    }
    let most = gpu.most_per_vm();
    (most > 0).then(|| GpuNode {
        per_node: most,
        why: format!("no GKE machine type has more than {most} `{}`", gpu.label),
    })
}

/// The GPU nodes of a node pool.
fn pool_nodes(pool: &NodePool<'_>) -> Vec<GpuNode> {
    pool.gpus
        .iter()
        .map(|(gpu, count)| GpuNode {
            per_node: *count,
            why: format!(
                "node pool `{}` has {count} `{}` per node",
                pool.name, gpu.label
            ),
        })
        .collect()
}

/// The GPU nodes a `ComputeClass` can make: each priority rule's `gpu` (type and count), GPU
/// machine type, or node pools.
fn compute_class_nodes(class: &Object<'_>, pools: &[NodePool<'_>]) -> Vec<GpuNode> {
    let name = &class.id.name;
    let priorities = class
        .node
        .at(&["spec", "priorities"])
        .and_then(Node::as_seq)
        .unwrap_or(&[]);
    let mut nodes = Vec::new();
    for priority in priorities {
        let gpu_type = priority
            .at(&["gpu", "type"])
            .and_then(scalar_text)
            .and_then(|label| catalog::gpu(&label));
        let machine = priority
            .get("machineType")
            .and_then(Node::as_str)
            .and_then(catalog::gpu_for_machine);
        if let Some((gpu, count)) = machine {
            nodes.push(GpuNode {
                per_node: count,
                why: format!(
                    "compute class `{name}` makes nodes with {count} `{}`",
                    gpu.label
                ),
            });
        } else if let Some(gpu) = gpu_type {
            let count = priority.at(&["gpu", "count"]).and_then(Node::as_count);
            let per_node = count
                .and_then(|count| u32::try_from(count).ok())
                .unwrap_or_else(|| gpu.most_per_vm());
            nodes.push(GpuNode {
                per_node,
                why: format!(
                    "compute class `{name}` makes nodes with {per_node} `{}`",
                    gpu.label
                ),
            });
        }
        for pool_name in priority.items("nodepools").iter().filter_map(Node::as_str) {
            nodes.extend(
                pools
                    .iter()
                    .filter(|pool| pool.name_known && pool.name == pool_name)
                    .flat_map(pool_nodes),
            );
        }
    }
    nodes
}

/// Why a written TPU topology is rejected.
#[derive(Debug)]
pub(crate) struct TopologyProblem {
    /// The parse error, or why the parsed topology is not a slice of the family.
    pub error: TopologyError,
    /// The topology, when it parsed.
    pub parsed: Option<Topology>,
}

/// Reads a written TPU topology: it must parse as `AxB` or `AxBxC` and, when the family is
/// known, be a slice shape of that family.
pub(crate) fn read_topology(
    family: Option<TpuFamily>,
    written: &str,
) -> Result<Topology, TopologyProblem> {
    let topology = written
        .parse::<Topology>()
        .map_err(|error| TopologyProblem {
            error,
            parsed: None,
        })?;
    match family.map(|family| family.check_topology(&topology)) {
        Some(Err(error)) => Err(TopologyProblem {
            error,
            parsed: Some(topology),
        }),
        _ => Ok(topology),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::model::spec;
    use crate::validate::model::workload::selections;

    #[test]
    fn resolves_one_accelerator_and_one_legal_topology() {
        let pod = spec(
            "nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice, \
             cloud.google.com/gke-tpu-topology: 2x2x4}\n",
        );
        let selections = selections(&pod, "spec");
        let target = TpuTarget::resolve(&selections, None, &[]).unwrap();
        assert_eq!(target.describe(), "`tpu-v4-podslice` `2x2x4`");
        assert_eq!(
            target.selection.field,
            "spec.nodeSelector['cloud.google.com/gke-tpu-topology']"
        );
    }

    #[test]
    fn resolves_nothing_from_several_or_illegal_values() {
        let resolve = |text: &str| {
            let pod = spec(text);
            TpuTarget::resolve(&selections(&pod, "spec"), None, &[]).is_some()
        };
        assert!(!resolve(
            "nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v9, \
             cloud.google.com/gke-tpu-topology: 2x2x4}\n"
        ));
        assert!(!resolve(
            "nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice, \
             cloud.google.com/gke-tpu-topology: 2x2}\n"
        ));
    }

    #[test]
    fn reads_topologies_with_and_without_a_family() {
        assert!(read_topology(None, "2x2").is_ok());
        let syntax = read_topology(None, "2by2").unwrap_err();
        assert!(matches!(syntax.error, TopologyError::Syntax(_)));
        assert!(syntax.parsed.is_none());
        let shape = read_topology(Some(TpuFamily::V4), "2x2").unwrap_err();
        assert_eq!(shape.parsed.unwrap().to_string(), "2x2");
    }
}

//! GKE `ComputeClass`es (`cloud.google.com/v1`) read into their priority rules: for each, the
//! machine type, the TPU (`tpu.type`, `tpu.topology`, `tpu.count`: chips per node) and the GPU
//! (`gpu.type`, `gpu.count`) it asks GKE for, as written.
//!
//! A compute class is to autoscaled nodes what a node pool is to fixed ones: pods select it
//! with the `cloud.google.com/compute-class` node label, and GKE makes nodes from the first
//! priority it can. This module reads; it reports nothing. See
//! <https://cloud.google.com/kubernetes-engine/docs/reference/crds/computeclass>.

use crate::catalog::{self, Topology, TpuFamily};
use crate::validate::Object;
use crate::validate::model::accelerator::is_compute_class;
use crate::yaml::Node;

/// A `ComputeClass` and its priority rules.
#[derive(Debug)]
pub(crate) struct ComputeClass<'a> {
    /// The object.
    pub object: &'a Object<'a>,
    /// `spec.priorities`, in order.
    pub priorities: Vec<Priority<'a>>,
}

/// One entry of `spec.priorities`.
#[derive(Debug)]
pub(crate) struct Priority<'a> {
    /// Dotted path of the entry (`spec.priorities[0]`).
    pub path: String,
    /// The entry.
    pub node: &'a Node,
    /// `machineType`, when written.
    pub machine_type: Option<&'a Node>,
    /// The `tpu` mapping, when written.
    pub tpu: Option<&'a Node>,
    /// The `gpu` mapping, when written.
    pub gpu: Option<&'a Node>,
}

/// The TPU nodes a compute class makes: one per TPU priority whose type names a TPU family,
/// whose topology is a slice of that family and which writes a count.
#[derive(Clone, Debug)]
pub(crate) struct ClassTpu {
    /// The class's name.
    pub class: String,
    /// The TPU family.
    pub family: TpuFamily,
    /// The slice shape.
    pub topology: Topology,
    /// Chips per node (`tpu.count`).
    pub chips: i64,
}

/// The TPU nodes of every priority of `class` that resolves.
pub(crate) fn class_tpus(class: &Object<'_>) -> Vec<ClassTpu> {
    class
        .node
        .at(&["spec", "priorities"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .filter_map(|priority| tpu_node(priority.get("tpu")?))
        .map(|(family, topology, chips)| ClassTpu {
            class: class.id.name.clone(),
            family,
            topology,
            chips,
        })
        .collect()
}

fn tpu_node(tpu: &Node) -> Option<(TpuFamily, Topology, i64)> {
    let family = TpuFamily::from_accelerator(tpu.get("type")?.as_str()?)?;
    let topology: Topology = tpu.get("topology")?.as_str()?.parse().ok()?;
    family.check_topology(&topology).ok()?;
    let count = tpu.get("count")?.as_count()?;
    Some((family, topology, count))
}

/// The chips per VM of the slices of `family` with `topology` (more than one number when the
/// shape can be one large VM or several small ones, as v5e and v6e `2x4`).
pub(crate) fn chips_per_host(family: TpuFamily, topology: &Topology) -> Vec<i64> {
    let mut chips: Vec<i64> = catalog::tpu_slices_for_selector(family.accelerator(), topology)
        .iter()
        .map(|slice| i64::from(slice.chips_per_host()))
        .collect();
    chips.sort_unstable();
    chips.dedup();
    chips
}

/// Every named `ComputeClass` in the set.
pub(crate) fn compute_classes<'a>(objects: &'a [Object<'a>]) -> Vec<ComputeClass<'a>> {
    objects
        .iter()
        .filter(|object| is_compute_class(object) && super::has_name(object))
        .map(read)
        .collect()
}

fn read<'a>(object: &'a Object<'a>) -> ComputeClass<'a> {
    let priorities = object
        .node
        .at(&["spec", "priorities"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .map(|(index, priority)| Priority {
            path: format!("spec.priorities[{index}]"),
            node: priority,
            machine_type: priority.get("machineType"),
            tpu: priority.get("tpu"),
            gpu: priority.get("gpu"),
        })
        .collect();
    ComputeClass { object, priorities }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_tpu_nodes_of_priorities() {
        let documents = crate::yaml::parse_documents(
            "apiVersion: cloud.google.com/v1\nkind: ComputeClass\nmetadata: {name: c}\nspec:\n  priorities:\n  - tpu: {type: tpu-v5-lite-podslice, topology: 2x4, count: 4}\n  - tpu: {type: tpu-v4-podslice, topology: 2x2}\n  - machineType: g2-standard-24\n",
        )
        .unwrap();
        let objects = [Object::from_node("f.yaml", &documents[0]).unwrap()];
        let classes = compute_classes(&objects);
        assert_eq!(classes[0].priorities[2].path, "spec.priorities[2]");
        // v4 has no `2x2` slices and the machine type has no TPU: only the first resolves.
        let tpus = class_tpus(&objects[0]);
        assert_eq!(tpus.len(), 1);
        assert_eq!((tpus[0].class.as_str(), tpus[0].chips), ("c", 4));
        assert_eq!(chips_per_host(tpus[0].family, &tpus[0].topology), [4, 8]);
    }
}

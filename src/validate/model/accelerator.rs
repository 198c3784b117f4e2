//! The accelerators a pod group targets: the TPU slice ([`TpuTarget`]) and the GPU its node
//! selectors name, resolved against the catalog (and, for TPU layouts, the node pools in the
//! set).
//!
//! This module decides what the selectors mean, not whether they are right: a value that names
//! no accelerator or no legal topology simply resolves to no target, and [`read_topology`]
//! returns a typed [`TopologyProblem`] that the rules turn into findings. It reports nothing.

use crate::catalog::{
    self, GPU_ACCELERATOR_LABEL, Gpu, TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL, Topology,
    TopologyError, TpuFamily, TpuSlice,
};
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::{Selection, selection};

/// The TPU slice a pod selects.
#[derive(Clone, Debug)]
pub(crate) struct TpuTarget<'a> {
    /// The family of `cloud.google.com/gke-tpu-accelerator`.
    pub family: TpuFamily,
    /// The topology of `cloud.google.com/gke-tpu-topology`.
    pub topology: Topology,
    /// The topology requirement, to point at.
    pub selection: Selection<'a>,
    /// Physical layouts nodes with these labels can have: usually one; v5e and v6e `2x4` can
    /// be one 8-chip VM or two 4-chip VMs, unless a node pool in the set settles it.
    pub layouts: Vec<TpuSlice>,
}

impl<'a> TpuTarget<'a> {
    /// Resolves a pod's node label requirements into the slice they select: exactly one known
    /// accelerator and exactly one topology that is legal for it. `None` otherwise, and when
    /// the catalog has no layout for the pair.
    pub(crate) fn resolve(selections: &[Selection<'a>], pools: &[NodePool<'_>]) -> Option<Self> {
        let family = selected_tpu_family(selections)?;
        // Several values (`In [2x2, 2x4]`) name no one slice.
        let topology = selection(selections, TPU_TOPOLOGY_LABEL)?;
        let topology_value = read_topology(Some(family), topology.value()?).ok()?;
        let mut layouts = catalog::tpu_slices_for_selector(family.accelerator(), &topology_value);
        let pool_machines: Vec<&str> = pools
            .iter()
            .filter_map(|pool| pool.tpu.as_ref())
            .filter(|tpu| {
                tpu.machine.family == family && tpu.topology.as_ref() == Some(&topology_value)
            })
            .map(|tpu| tpu.machine.name)
            .collect();
        let pinned: Vec<TpuSlice> = layouts
            .iter()
            .filter(|slice| pool_machines.contains(&slice.machine_type()))
            .cloned()
            .collect();
        if !pinned.is_empty() {
            layouts = pinned;
        }
        if layouts.is_empty() {
            return None;
        }
        Some(Self {
            family,
            topology: topology_value,
            selection: topology.clone(),
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
    use crate::validate::model::workload::selections;
    use crate::yaml::{Node, parse_documents};

    fn spec(text: &str) -> Node {
        parse_documents(text).unwrap().remove(0)
    }

    #[test]
    fn resolves_one_accelerator_and_one_legal_topology() {
        let pod = spec(
            "nodeSelector: {cloud.google.com/gke-tpu-accelerator: tpu-v4-podslice, \
             cloud.google.com/gke-tpu-topology: 2x2x4}\n",
        );
        let selections = selections(&pod, "spec");
        let target = TpuTarget::resolve(&selections, &[]).unwrap();
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
            TpuTarget::resolve(&selections(&pod, "spec"), &[]).is_some()
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

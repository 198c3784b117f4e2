//! The accelerator catalog: TPU and GPU facts, in one place, as data, and what GKE nodes of a
//! machine type give pods (`machine`), and which zones offer which TPU types (`zones`, from
//! `data/accelerator-zones.tsv`), and the CUDA of images against GKE's GPU drivers (`cuda`,
//! from `data/gpu-cuda.tsv`).
//!
//! Nothing else in the crate knows a machine type, a node label value or a topology rule;
//! blueprints resolve their `tpu`/`gpu` stanza here, and validation rules ask it what a
//! selector, a node pool or a resource request should be. Per-slice numbers (hosts, chips per
//! host) are derived from the topology and the machine type, never typed twice.
//!
//! Facts come from XPK's system catalog, Cluster Toolkit and the GKE documentation.

mod cuda;
mod gpu;
mod kubernetes;
mod machine;
mod topology;
mod tpu;
mod zones;

pub use cuda::{CudaVersion, driver_branch, image_cuda, min_driver};
pub use gpu::{Gpu, GpuMachine, RetiredGpu, gpu, gpu_for_machine, gpus, retired_gpu, suggest_gpu};
pub use kubernetes::{DEFAULT_KUBERNETES_MINOR, KUBERNETES_MINORS, kubernetes_minor_index};
pub use machine::{
    Allocatable, MachineCapacity, allocatable, allocatable_ephemeral_gib, machine_capacity,
    reserved_cpu, reserved_memory_gib,
};
pub use topology::{Topology, TopologyError};
pub use tpu::{
    Placement, TpuFamily, TpuHost, TpuMachine, TpuSlice, TpuTypeError, tpu_machine, tpu_slice,
    tpu_slice_names, tpu_slices_for_selector,
};
pub use zones::{default_zone, offered_in, zones_offering};

/// Node label GKE puts on TPU nodes with the slice's accelerator type.
pub const TPU_ACCELERATOR_LABEL: &str = "cloud.google.com/gke-tpu-accelerator";
/// Node label GKE puts on TPU nodes with the slice topology.
pub const TPU_TOPOLOGY_LABEL: &str = "cloud.google.com/gke-tpu-topology";
/// Node label GKE puts on GPU nodes with the accelerator type.
pub const GPU_ACCELERATOR_LABEL: &str = "cloud.google.com/gke-accelerator";
/// Node label with the node pool name (JobSet exclusive-topology key).
pub const NODE_POOL_LABEL: &str = "cloud.google.com/gke-nodepool";
/// Node label with the name of the dynamic slice (GKE dynamic slicing) a TPU node belongs to.
pub const TPU_SLICE_LABEL: &str = "cloud.google.com/gke-tpu-slice";
/// Pod annotation with the shape of the slice the pods need under GKE dynamic slicing (sub- and
/// super-slicing), where nodes carry the topology of the block they are provisioned in.
pub const TPU_SLICE_TOPOLOGY_ANNOTATION: &str = "cloud.google.com/gke-tpu-slice-topology";
/// Node label with the compute class whose rules created the node.
pub const COMPUTE_CLASS_LABEL: &str = "cloud.google.com/compute-class";
/// Extended resource for TPU chips.
pub const TPU_RESOURCE: &str = "google.com/tpu";
/// Extended resource for NVIDIA GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// The closest name in `candidates` to `name`, for "did you mean" hints.
#[must_use]
pub fn closest<'a>(name: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    candidates
        .into_iter()
        .map(|c| (strsim::jaro_winkler(name, c), c))
        .filter(|(score, _)| *score > 0.7)
        .max_by(|a, b| a.0.total_cmp(&b.0).then_with(|| b.1.cmp(a.1)))
        .map(|(_, c)| c)
}

/// The ids of the `source` rows of a data table (`source<TAB>id<TAB>…`), for the tests that
/// require every row to name one.
#[cfg(test)]
fn source_ids(table: &str) -> Vec<&str> {
    table
        .lines()
        .filter_map(|line| line.strip_prefix("source\t"))
        .filter_map(|rest| rest.split('\t').next())
        .collect()
}

//! NVIDIA GPUs on GKE: node label values, machine types and GPUs per machine.

/// A GPU model as GKE labels it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Gpu {
    /// `cloud.google.com/gke-accelerator` value, e.g. `nvidia-tesla-t4`.
    pub label: &'static str,
    /// Display name, e.g. `NVIDIA T4`.
    pub display_name: &'static str,
    /// Machine types that carry this GPU and how many per VM.
    pub machines: &'static [GpuMachine],
    /// `true` when GPUs are attached to general-purpose VMs as `guestAccelerator`
    /// (T4 on N1) rather than built into an accelerator-optimized machine type.
    pub attached: bool,
}

/// A machine type offering a GPU.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct GpuMachine {
    /// Machine type, or for attached GPUs a machine family prefix such as `n1-`.
    pub name: &'static str,
    /// GPUs per VM; for attached GPUs, the largest count one VM can take.
    pub gpus: u32,
}

impl Gpu {
    /// Whether `count` GPUs of this model fit on `machine_type`; `Err` says what would.
    pub fn check_machine(&self, machine_type: &str, count: u32) -> Result<(), String> {
        todo!("catalog helper {machine_type} {count}")
    }

    /// GPUs per node on `machine_type` (built-in GPUs), or `None` for attached GPUs, whose
    /// count is set on the node pool.
    #[must_use]
    pub fn gpus_on(&self, machine_type: &str) -> Option<u32> {
        todo!("catalog helper {machine_type}")
    }
}

/// Every GPU in the catalog.
#[must_use]
pub fn gpus() -> &'static [Gpu] {
    todo!("catalog helper")
}

/// The GPU with this `cloud.google.com/gke-accelerator` value.
#[must_use]
pub fn gpu(label: &str) -> Option<&'static Gpu> {
    gpus().iter().find(|g| g.label == label)
}

/// The GPU built into an accelerator-optimized machine type, and how many.
#[must_use]
pub fn gpu_for_machine(machine_type: &str) -> Option<(&'static Gpu, u32)> {
    todo!("catalog helper {machine_type}")
}

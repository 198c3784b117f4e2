//! Compute Engine machine types as GKE nodes: the vCPUs and memory of a machine type, and what
//! GKE leaves of a node for pods (its allocatable CPU, memory and local ephemeral storage).
//!
//! Capacity is derived from the machine type's name wherever its series has a rule (GB per
//! vCPU for general-purpose and G2 shapes, vCPUs and GB per GPU for A2 and A3); TPU VMs have
//! fixed shapes and are listed. Reservations follow GKE's documented formulas, never a
//! per-machine figure.
//!
//! Sources:
//! - [GP] Compute Engine, general-purpose machine family:
//!   <https://cloud.google.com/compute/docs/general-purpose-machines> (E2, N1, N2, N2D: GB per
//!   vCPU of the standard, highmem and highcpu shapes), compute-optimized
//!   <https://cloud.google.com/compute/docs/compute-optimized-machines> (C2, C3) and
//!   accelerator-optimized <https://cloud.google.com/compute/docs/accelerator-optimized-machines>
//!   (G2: 4 GB per vCPU; A2 highgpu: 12 vCPU and 85 GB per GPU, ultragpu: 12 vCPU and 170 GB;
//!   A3 high/edge/mega: 26 vCPU and 234 GB per GPU). Compute Engine's "GB" of memory is GiB.
//! - [TPU] Cloud TPU and GKE TPU planning pages: <https://cloud.google.com/tpu/docs/v5e> (v5e
//!   VMs: 24/112/224 vCPU, 48/192/384 GB), <https://cloud.google.com/tpu/docs/v4>,
//!   <https://cloud.google.com/tpu/docs/v5p>, <https://cloud.google.com/tpu/docs/v6e> and
//!   <https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus>.
//! - [ALLOC] GKE, "Plan GKE node sizes", node allocatable resources:
//!   <https://cloud.google.com/kubernetes-engine/docs/concepts/plan-node-sizes#memory_and_cpu_reservations>
//!   and `#local_ephemeral_storage_reservation`.

/// Bytes in one GiB.
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The vCPUs and memory of one VM of a machine type.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct MachineCapacity {
    /// vCPUs.
    pub vcpus: f64,
    /// Memory in GiB.
    pub memory_gib: f64,
}

/// What pods can request on a GKE node: capacity less GKE's reservations and eviction
/// thresholds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Allocatable {
    /// CPU in cores.
    pub cpu: f64,
    /// Memory in bytes.
    pub memory_bytes: f64,
    /// Local ephemeral storage in bytes, from a boot disk of the given size.
    pub ephemeral_bytes: f64,
}

/// TPU VMs: machine type, vCPUs, GiB of memory [TPU].
const TPU_VMS: &[(&str, f64, f64)] = &[
    ("ct4p-hightpu-4t", 240.0, 407.0),
    ("ct5lp-hightpu-1t", 24.0, 48.0),
    ("ct5lp-hightpu-4t", 112.0, 192.0),
    ("ct5lp-hightpu-8t", 224.0, 384.0),
    ("ct5p-hightpu-4t", 208.0, 448.0),
    ("ct6e-standard-1t", 44.0, 176.0),
    ("ct6e-standard-4t", 180.0, 720.0),
    ("ct6e-standard-8t", 180.0, 1440.0),
];

/// The vCPUs and memory of `machine_type`, when its series has a rule here [GP], [TPU].
/// Custom machine types, shapes with suffixes (`-lssd`) and series not listed are unknown.
#[must_use]
pub fn machine_capacity(machine_type: &str) -> Option<MachineCapacity> {
    if let Some((_, vcpus, memory_gib)) = TPU_VMS.iter().find(|(name, ..)| *name == machine_type) {
        return Some(MachineCapacity {
            vcpus: *vcpus,
            memory_gib: *memory_gib,
        });
    }
    let shape = |vcpus: f64, memory_gib: f64| Some(MachineCapacity { vcpus, memory_gib });
    // E2 shared-core machines: 2 vCPUs that share a core, with 1, 2 or 4 GB.
    match machine_type {
        "e2-micro" => return shape(2.0, 1.0),
        "e2-small" => return shape(2.0, 2.0),
        "e2-medium" => return shape(2.0, 4.0),
        _ => {}
    }
    let mut parts = machine_type.split('-');
    let (series, class, size) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    // A2 and A3 sizes count GPUs (`a2-highgpu-4g`); each GPU brings a fixed share of the VM.
    if let Some(gpus) = size.strip_suffix('g') {
        let gpus: f64 = gpus.parse::<u32>().ok().filter(|n| *n > 0)?.into();
        let (vcpus_per_gpu, gib_per_gpu) = match (series, class) {
            ("a2", "highgpu" | "megagpu") => (12.0, 85.0),
            ("a2", "ultragpu") => (12.0, 170.0),
            ("a3", "highgpu" | "edgegpu" | "megagpu") => (26.0, 234.0),
            _ => return None,
        };
        return shape(gpus * vcpus_per_gpu, gpus * gib_per_gpu);
    }
    let vcpus: f64 = size.parse::<u32>().ok().filter(|n| *n > 0)?.into();
    let gib_per_vcpu = match (series, class) {
        ("n1", "standard") => 3.75,
        ("n1", "highmem") => 6.5,
        ("n1", "highcpu") => 0.9,
        ("e2" | "n2" | "n2d" | "c3" | "c3d", "standard") | ("c2" | "g2", "standard") => 4.0,
        ("e2" | "n2" | "n2d" | "c3" | "c3d", "highmem") => 8.0,
        ("e2" | "n2" | "n2d", "highcpu") => 1.0,
        ("c3" | "c3d", "highcpu") => 2.0,
        _ => return None,
    };
    shape(vcpus, vcpus * gib_per_vcpu)
}

/// CPU GKE reserves on a node of `vcpus` cores [ALLOC]: 6% of the first core, 1% of the next,
/// 0.5% of the next 2 and 0.25% of every core above 4.
#[must_use]
pub fn reserved_cpu(vcpus: f64) -> f64 {
    tiered(vcpus, &[(1.0, 0.06), (1.0, 0.01), (2.0, 0.005)], 0.0025)
}

/// Memory (GiB) GKE reserves on a node of `memory_gib` [ALLOC]: 255 MiB below 1 GiB; else 25%
/// of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112 and 2% above
/// 128 GiB. The eviction threshold (100 MiB) comes on top, in [`allocatable`].
#[must_use]
pub fn reserved_memory_gib(memory_gib: f64) -> f64 {
    if memory_gib < 1.0 {
        return 255.0 / 1024.0;
    }
    tiered(
        memory_gib,
        &[(4.0, 0.25), (4.0, 0.20), (8.0, 0.10), (112.0, 0.06)],
        0.02,
    )
}

/// `amount` charged tier by tier: each `(width, rate)` applies to the next `width` units, and
/// `rest` to whatever is left.
fn tiered(amount: f64, tiers: &[(f64, f64)], rest: f64) -> f64 {
    let (mut left, mut total) = (amount.max(0.0), 0.0);
    for (width, rate) in tiers {
        let part = left.min(*width);
        total += part * rate;
        left -= part;
    }
    total + left * rest
}

/// Local ephemeral storage (GiB) a GKE node can give pods from a boot disk of `disk_gib`
/// [ALLOC]: GKE keeps 10% of the disk as the eviction threshold and reserves
/// min(50%, 6 GiB + 35%, 100 GiB) of it for the system.
#[must_use]
pub fn allocatable_ephemeral_gib(disk_gib: u32) -> f64 {
    let disk = f64::from(disk_gib);
    let system = (0.5 * disk).min(6.0 + 0.35 * disk).min(100.0);
    disk - 0.1 * disk - system
}

/// What pods can request on a node of `capacity` with a boot disk of `disk_gib` [ALLOC]: CPU
/// and memory less the reservations, memory less the 100 MiB eviction threshold, and the
/// ephemeral storage of [`allocatable_ephemeral_gib`].
#[must_use]
pub fn allocatable(capacity: MachineCapacity, disk_gib: u32) -> Allocatable {
    let eviction_gib = 100.0 / 1024.0;
    let memory_gib = capacity.memory_gib - reserved_memory_gib(capacity.memory_gib) - eviction_gib;
    Allocatable {
        cpu: capacity.vcpus - reserved_cpu(capacity.vcpus),
        memory_bytes: memory_gib.max(0.0) * GIB,
        ephemeral_bytes: allocatable_ephemeral_gib(disk_gib).max(0.0) * GIB,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn derives_shapes_from_names() {
        let shape = |name| machine_capacity(name).map(|c| (c.vcpus, c.memory_gib));
        assert_eq!(shape("n1-standard-4"), Some((4.0, 15.0)));
        assert_eq!(shape("n2-highmem-16"), Some((16.0, 128.0)));
        assert_eq!(shape("e2-standard-8"), Some((8.0, 32.0)));
        assert_eq!(shape("g2-standard-12"), Some((12.0, 48.0)));
        assert_eq!(shape("c3-highcpu-22"), Some((22.0, 44.0)));
        assert_eq!(shape("a2-highgpu-8g"), Some((96.0, 680.0)));
        assert_eq!(shape("a2-ultragpu-1g"), Some((12.0, 170.0)));
        assert_eq!(shape("a3-highgpu-8g"), Some((208.0, 1872.0)));
        assert_eq!(shape("ct5lp-hightpu-4t"), Some((112.0, 192.0)));
        assert_eq!(shape("e2-medium"), Some((2.0, 4.0)));
        assert_eq!(shape("n2-custom-8-32768"), None);
        assert_eq!(shape("c3-standard-4-lssd"), None);
        assert_eq!(shape("m3-ultramem-32"), None);
    }

    #[test]
    fn every_tpu_machine_has_a_shape_or_is_left_unknown_on_purpose() {
        for machine in crate::catalog::TpuFamily::ALL
            .into_iter()
            .flat_map(crate::catalog::TpuFamily::machines)
        {
            // Ironwood's VM shapes are not listed: unknown, so never judged.
            assert_eq!(
                machine_capacity(machine.name).is_some(),
                !machine.name.starts_with("tpu7x"),
                "{}",
                machine.name
            );
        }
    }

    #[test]
    fn reservations_follow_the_gke_tiers() {
        // GKE's own examples: 1 core reserves 60m, 4 cores 80m, 64 cores 230m.
        assert!(close(reserved_cpu(1.0), 0.06));
        assert!(close(reserved_cpu(4.0), 0.08));
        assert!(close(reserved_cpu(64.0), 0.23));
        // 150 GiB: 9.76 GiB reserved, 9.8577 GiB with the eviction threshold (a calculator
        // built on the same page prints the latter).
        assert!(close(reserved_memory_gib(150.0), 9.76));
        assert!((reserved_memory_gib(150.0) + 100.0 / 1024.0 - 9.8577).abs() < 1e-3);
        assert!(close(reserved_memory_gib(4.0), 1.0));
        assert!(close(reserved_memory_gib(0.5), 255.0 / 1024.0));
    }

    #[test]
    fn ephemeral_storage_keeps_eviction_and_system_shares() {
        assert!(close(allocatable_ephemeral_gib(700), 530.0));
        assert!(close(allocatable_ephemeral_gib(100), 49.0));
        let node = allocatable(machine_capacity("n2-highmem-16").unwrap(), 700);
        assert!(close(node.ephemeral_bytes / GIB, 530.0));
        assert!(close(node.cpu, 16.0 - 0.06 - 0.01 - 0.01 - 0.03));
    }
}

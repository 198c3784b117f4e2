//! TPU families, machine types and slices.

use std::fmt;

use super::topology::{Topology, TopologyError};

/// A TPU generation as GKE schedules it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TpuFamily {
    /// TPU v4 (`tpu-v4-podslice`, 3D, names count TensorCores).
    V4,
    /// TPU v5e (`tpu-v5-lite-podslice`, 2D, names count chips).
    V5e,
    /// TPU v5p (`tpu-v5p-slice`, 3D, names count TensorCores).
    V5p,
    /// TPU v6e Trillium (`tpu-v6e-slice`, 2D, names count chips).
    V6e,
    /// Ironwood TPU7x (`tpu7x`, 3D, names count TensorCores).
    Tpu7x,
}

impl TpuFamily {
    /// Every family, in catalog order.
    pub const ALL: [TpuFamily; 5] =
        [TpuFamily::V4, TpuFamily::V5e, TpuFamily::V5p, TpuFamily::V6e, TpuFamily::Tpu7x];

    /// Catalog name prefix: `v4`, `v5litepod`, `v5p`, `v6e`, `tpu7x`.
    #[must_use]
    pub fn prefix(self) -> &'static str {
        todo!("catalog helper {self:?}")
    }

    /// Display name for messages: `TPU v4`, `TPU v5e`, …
    #[must_use]
    pub fn display_name(self) -> &'static str {
        todo!("catalog helper {self:?}")
    }

    /// Value of `cloud.google.com/gke-tpu-accelerator` on this family's nodes.
    #[must_use]
    pub fn accelerator(self) -> &'static str {
        todo!("catalog helper {self:?}")
    }

    /// The family whose nodes carry this accelerator label value.
    #[must_use]
    pub fn from_accelerator(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.accelerator() == label)
    }

    /// TensorCores per chip; the catalog name suffix is chips × this.
    #[must_use]
    pub fn cores_per_chip(self) -> u32 {
        todo!("catalog helper {self:?}")
    }

    /// Topology rank: 2 (v5e, v6e) or 3 (v4, v5p, tpu7x).
    #[must_use]
    pub fn rank(self) -> usize {
        todo!("catalog helper {self:?}")
    }

    /// Machine types of this family.
    #[must_use]
    pub fn machines(self) -> Vec<&'static TpuMachine> {
        todo!("catalog helper {self:?}")
    }

    /// Whether `topology` is a slice shape this family offers (rank, allowed shapes, caps).
    pub fn check_topology(self, topology: &Topology) -> Result<(), TopologyError> {
        todo!("catalog helper {self:?} {topology}")
    }

    /// Every legal topology of this family, in catalog order (for listings and tests).
    #[must_use]
    pub fn topologies(self) -> Vec<Topology> {
        todo!("catalog helper {self:?}")
    }
}

impl fmt::Display for TpuFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.display_name())
    }
}

/// A TPU VM machine type.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct TpuMachine {
    /// GCE machine type, e.g. `ct4p-hightpu-4t`.
    pub name: &'static str,
    /// Family.
    pub family: TpuFamily,
    /// Chips on one VM (the `google.com/tpu` a pod on it requests).
    pub chips: u32,
}

/// The machine type with this name.
#[must_use]
pub fn tpu_machine(name: &str) -> Option<&'static TpuMachine> {
    todo!("catalog helper {name}")
}

/// How a node pool for a slice must be placed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Placement {
    /// Single-host slice: no placement policy and no `tpuTopology` (GKE rejects them).
    None,
    /// Multi-host slice on v4/v5e/v5p/v6e: `placementPolicy {type: COMPACT, tpuTopology}`.
    Compact,
    /// Multi-host Ironwood: a workload policy (`policyName` + `tpuTopology`, no `type`).
    WorkloadPolicy,
}

/// One physical layout of a slice: a machine type and how many of them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TpuHost {
    /// The machine type.
    pub machine: &'static TpuMachine,
    /// VMs (= nodes = pods) in one slice.
    pub hosts: u32,
}

/// A resolved slice: everything a node pool, a selector, a JobSet and a quota need.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TpuSlice {
    /// Canonical catalog name, e.g. `v4-32`, `v5litepod-16`, `v6e-8`.
    pub name: String,
    /// Family.
    pub family: TpuFamily,
    /// Topology (always explicit).
    pub topology: Topology,
    /// Machine type and host count.
    pub host: TpuHost,
}

impl TpuSlice {
    /// Chips in the slice.
    #[must_use]
    pub fn chips(&self) -> u32 {
        self.topology.chips()
    }

    /// Chips per VM (`google.com/tpu` per pod).
    #[must_use]
    pub fn chips_per_host(&self) -> u32 {
        self.host.machine.chips
    }

    /// VMs (nodes, pods) per slice.
    #[must_use]
    pub fn hosts(&self) -> u32 {
        self.host.hosts
    }

    /// Whether the slice spans more than one VM.
    #[must_use]
    pub fn is_multi_host(&self) -> bool {
        self.host.hosts > 1
    }

    /// Node pool placement.
    #[must_use]
    pub fn placement(&self) -> Placement {
        todo!("catalog helper {self:?}")
    }

    /// Machine type name.
    #[must_use]
    pub fn machine_type(&self) -> &'static str {
        self.host.machine.name
    }

    /// `cloud.google.com/gke-tpu-accelerator` value.
    #[must_use]
    pub fn accelerator(&self) -> &'static str {
        self.family.accelerator()
    }
}

/// Why a TPU type could not be resolved.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TpuTypeError {
    /// Not a catalog name.
    #[error("unknown TPU type: `{name}`")]
    Unknown {
        /// As written.
        name: String,
        /// Closest catalog name, if any is close.
        suggestion: Option<String>,
    },
    /// The topology is malformed or illegal for the family.
    #[error(transparent)]
    Topology(#[from] TopologyError),
    /// A legal topology, but not one of this type.
    #[error("topology `{topology}` does not agree with TPU type `{name}`")]
    Mismatch {
        /// The type as written.
        name: String,
        /// The topology as written.
        topology: String,
        /// The topologies this type accepts (canonical first).
        expected: Vec<Topology>,
    },
}

/// Resolves a catalog name (`v4-32`, `v5litepod-16`, `v6e-8`, `v4-2x2x4`) and an optional
/// explicit topology to a slice. Without a topology the canonical one is used; with one, it
/// must be legal for the family and have the chip count the name implies.
pub fn tpu_slice(name: &str, topology: Option<&Topology>) -> Result<TpuSlice, TpuTypeError> {
    todo!("catalog helper {name} {topology:?}")
}

/// Canonical catalog names, in catalog order (family, then size).
#[must_use]
pub fn tpu_slice_names() -> Vec<String> {
    todo!("catalog helper")
}

/// Every physical layout that nodes labelled with this accelerator and topology can have.
/// Usually one; v5e and v6e `2x4` can be one 8-chip VM or two 4-chip VMs. Empty when the
/// accelerator is unknown or the topology is not legal for it.
#[must_use]
pub fn tpu_slices_for_selector(accelerator: &str, topology: &Topology) -> Vec<TpuSlice> {
    todo!("catalog helper {accelerator} {topology}")
}

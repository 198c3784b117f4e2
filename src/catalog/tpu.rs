//! TPU families, machine types and slices.
//!
//! Each family stores a handful of facts (name prefix, node label, TensorCores per chip, the
//! rule for its slice shapes, its machine types); names, host counts and canonical topologies
//! are derived from them, the way XPK generates its catalog.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;

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

/// Side of the 4x4x4 cube that 3D slices above 64 chips are built from.
const CUBE_SIDE: u32 = 4;
/// Largest dimension a 3D slice may have.
const MAX_DIMENSION: u32 = 256;
/// A `Mismatch` error lists at most this many accepted topologies.
const MAX_EXPECTED: usize = 8;

/// The facts stored for one family; everything else is derived from these.
struct Facts {
    prefix: &'static str,
    display_name: &'static str,
    accelerator: &'static str,
    cores_per_chip: u32,
    shapes: Shapes,
    /// The 4-chip VM every multi-host slice is built from (XPK's `chips_per_vm = 4`).
    pod_machine: TpuMachine,
    /// VMs with other chip counts, each hosting a single-host slice of exactly that size.
    single_host_machines: &'static [TpuMachine],
    /// Node pool placement of multi-host slices.
    multi_host_placement: Placement,
    /// High-bandwidth memory per chip, in GB (the Cloud TPU system architecture pages:
    /// cloud.google.com/tpu/docs/v4, v5e, v5p, v6e and tpu7x).
    hbm_gb: u32,
}

/// Which topologies a family offers.
enum Shapes {
    /// 2D families: exactly these shapes, in catalog order (no transposes).
    Planar(&'static [[u32; 2]]),
    /// 3D families: the `small` shapes exactly as written, then every shape whose dimensions
    /// are multiples of 4 up to 256 and that spans at most `max_cubes` 4x4x4 cubes. Only v4
    /// accepts any order (`any_order`); the others need non-decreasing dimensions.
    Torus {
        small: &'static [[u32; 3]],
        max_cubes: u32,
        any_order: bool,
    },
}

const PLANAR_SHAPES: &[[u32; 2]] = &[
    [1, 1],
    [2, 2],
    [2, 4],
    [4, 4],
    [4, 8],
    [8, 8],
    [8, 16],
    [16, 16],
];
const SMALL_TORUS_SHAPES: &[[u32; 3]] = &[[2, 2, 1], [2, 2, 2], [2, 2, 4], [2, 4, 4]];
/// Ironwood also has a single-chip VM, hence `1x1x1`.
const SMALL_IRONWOOD_SHAPES: &[[u32; 3]] = &[[1, 1, 1], [2, 2, 1], [2, 2, 2], [2, 2, 4], [2, 4, 4]];

static V4_FACTS: Facts = Facts {
    prefix: "v4",
    display_name: "TPU v4",
    accelerator: "tpu-v4-podslice",
    cores_per_chip: 2,
    shapes: Shapes::Torus {
        small: SMALL_TORUS_SHAPES,
        max_cubes: 64,
        any_order: true,
    },
    pod_machine: TpuMachine {
        name: "ct4p-hightpu-4t",
        family: TpuFamily::V4,
        chips: 4,
    },
    single_host_machines: &[],
    multi_host_placement: Placement::Compact,
    hbm_gb: 32,
};

static V5E_FACTS: Facts = Facts {
    prefix: "v5litepod",
    display_name: "TPU v5e",
    accelerator: "tpu-v5-lite-podslice",
    cores_per_chip: 1,
    shapes: Shapes::Planar(PLANAR_SHAPES),
    pod_machine: TpuMachine {
        name: "ct5lp-hightpu-4t",
        family: TpuFamily::V5e,
        chips: 4,
    },
    single_host_machines: &[
        TpuMachine {
            name: "ct5lp-hightpu-1t",
            family: TpuFamily::V5e,
            chips: 1,
        },
        TpuMachine {
            name: "ct5lp-hightpu-8t",
            family: TpuFamily::V5e,
            chips: 8,
        },
    ],
    multi_host_placement: Placement::Compact,
    hbm_gb: 16,
};

static V5P_FACTS: Facts = Facts {
    prefix: "v5p",
    display_name: "TPU v5p",
    accelerator: "tpu-v5p-slice",
    cores_per_chip: 2,
    shapes: Shapes::Torus {
        small: SMALL_TORUS_SHAPES,
        max_cubes: 140,
        any_order: false,
    },
    pod_machine: TpuMachine {
        name: "ct5p-hightpu-4t",
        family: TpuFamily::V5p,
        chips: 4,
    },
    single_host_machines: &[],
    multi_host_placement: Placement::Compact,
    hbm_gb: 95,
};

static V6E_FACTS: Facts = Facts {
    prefix: "v6e",
    display_name: "TPU v6e",
    accelerator: "tpu-v6e-slice",
    cores_per_chip: 1,
    shapes: Shapes::Planar(PLANAR_SHAPES),
    pod_machine: TpuMachine {
        name: "ct6e-standard-4t",
        family: TpuFamily::V6e,
        chips: 4,
    },
    single_host_machines: &[
        TpuMachine {
            name: "ct6e-standard-1t",
            family: TpuFamily::V6e,
            chips: 1,
        },
        TpuMachine {
            name: "ct6e-standard-8t",
            family: TpuFamily::V6e,
            chips: 8,
        },
    ],
    multi_host_placement: Placement::Compact,
    hbm_gb: 32,
};

static TPU7X_FACTS: Facts = Facts {
    prefix: "tpu7x",
    display_name: "TPU7x (Ironwood)",
    accelerator: "tpu7x",
    cores_per_chip: 2,
    shapes: Shapes::Torus {
        small: SMALL_IRONWOOD_SHAPES,
        max_cubes: 144,
        any_order: false,
    },
    pod_machine: TpuMachine {
        name: "tpu7x-standard-4t",
        family: TpuFamily::Tpu7x,
        chips: 4,
    },
    single_host_machines: &[TpuMachine {
        name: "tpu7x-standard-1t",
        family: TpuFamily::Tpu7x,
        chips: 1,
    }],
    // GKE refuses COMPACT placement for tpu7x-standard-4t managed instance groups.
    multi_host_placement: Placement::WorkloadPolicy,
    hbm_gb: 192,
};

/// A family's legal topologies, computed once: v4, v5p and tpu7x have hundreds.
struct Table {
    /// Every legal topology, in catalog (generation) order.
    topologies: Vec<Topology>,
    /// Legal topologies by chip count, canonical (most cube-like) first.
    by_chips: BTreeMap<u32, Vec<Topology>>,
}

/// One table per family, indexed like [`TpuFamily::ALL`].
static TABLES: LazyLock<[Table; 5]> = LazyLock::new(|| TpuFamily::ALL.map(Table::build));

/// Canonical `<prefix>-<suffix>` names of every family, in catalog order.
static CANONICAL_NAMES: LazyLock<Vec<String>> = LazyLock::new(|| {
    TpuFamily::ALL
        .into_iter()
        .flat_map(|family| {
            family
                .table()
                .by_chips
                .keys()
                .map(move |&chips| family.canonical_name(chips))
        })
        .collect()
});

/// Why a shape is illegal ([`TpuFamily::shape_problem`] words it).
#[derive(Clone, Copy)]
enum ShapeFlaw {
    NotListed,
    BelowCube,
    NotMultiple,
    TooLong,
    Decreasing,
    TooManyCubes { cubes: u32, max_cubes: u32 },
}

impl Table {
    fn build(family: TpuFamily) -> Self {
        // Dimensions are at most 256 and there are at most three, so the chip count (≤ 2^24)
        // always fits and `Topology::new` cannot fail here; `ok()` just avoids a panic path.
        let topology = |dims: &[u32]| Topology::new(dims).ok();
        let topologies: Vec<Topology> = match family.facts().shapes {
            Shapes::Planar(shapes) => shapes.iter().filter_map(|dims| topology(dims)).collect(),
            Shapes::Torus { small, .. } => {
                // Same loop order as XPK's generator, filtered by the same rule that
                // `check_topology` applies, so the listing and the check cannot disagree.
                let sides = || (CUBE_SIDE..=MAX_DIMENSION).step_by(CUBE_SIDE as usize);
                let large = sides()
                    .flat_map(|x| sides().flat_map(move |y| sides().map(move |z| [x, y, z])));
                small
                    .iter()
                    .copied()
                    .chain(large.filter(|dims| family.shape_flaw(dims).is_none()))
                    .filter_map(|dims| topology(&dims))
                    .collect()
            }
        };
        let mut by_chips: BTreeMap<u32, Vec<Topology>> = BTreeMap::new();
        for topology in &topologies {
            by_chips
                .entry(topology.chips())
                .or_default()
                .push(topology.clone());
        }
        for same_size in by_chips.values_mut() {
            same_size.sort_by_key(cube_likeness);
        }
        Self {
            topologies,
            by_chips,
        }
    }
}

/// Sort key choosing the canonical topology among those with the same chip count: the most
/// cube-like shape, i.e. the smallest largest dimension, then the smallest sum of dimensions,
/// then the dimensions in written order (so `4x4x8` beats `4x8x4` and `8x4x4` on v4).
///
/// This reproduces XPK's "default topology" for every size that has one (v4's eleven defaults
/// such as `8x16x16`; every v5p and tpu7x default, e.g. `v5p-768` = `4x8x12`,
/// `tpu7x-16384` = `16x16x32`). Where XPK has no default it takes the first generated shape,
/// a catalog artefact such as `v5p-16384` = `4x8x256` or `v4-1152` = `4x4x36`; we prefer the
/// cube-like shape there (`16x16x32`, `4x12x12`). Blueprints carry explicit topologies anyway.
fn cube_likeness(topology: &Topology) -> (u32, u32, Vec<u32>) {
    let dims = topology.dims();
    (
        dims.iter().copied().max().unwrap_or(0),
        dims.iter().sum(),
        dims.to_vec(),
    )
}

/// `[2, 2, 1]` → `2x2x1`, for messages.
fn shape_text(dims: &[u32]) -> String {
    dims.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
}

/// `a, b and c`.
fn list_shapes<const N: usize>(shapes: &[[u32; N]]) -> String {
    let texts: Vec<String> = shapes.iter().map(|dims| shape_text(dims)).collect();
    match texts.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} and {last}", rest.join(", ")),
        _ => texts.concat(),
    }
}

impl TpuFamily {
    /// Every family, in catalog order.
    pub const ALL: [TpuFamily; 5] = [
        TpuFamily::V4,
        TpuFamily::V5e,
        TpuFamily::V5p,
        TpuFamily::V6e,
        TpuFamily::Tpu7x,
    ];

    fn facts(self) -> &'static Facts {
        match self {
            TpuFamily::V4 => &V4_FACTS,
            TpuFamily::V5e => &V5E_FACTS,
            TpuFamily::V5p => &V5P_FACTS,
            TpuFamily::V6e => &V6E_FACTS,
            TpuFamily::Tpu7x => &TPU7X_FACTS,
        }
    }

    fn table(self) -> &'static Table {
        // Fieldless enum declared in `ALL` order, so the discriminant is the index.
        &TABLES[self as usize]
    }

    /// Catalog name prefix: `v4`, `v5litepod`, `v5p`, `v6e`, `tpu7x`.
    #[must_use]
    pub fn prefix(self) -> &'static str {
        self.facts().prefix
    }

    /// Display name for messages: `TPU v4`, `TPU v5e`, …
    #[must_use]
    pub fn display_name(self) -> &'static str {
        self.facts().display_name
    }

    /// Value of `cloud.google.com/gke-tpu-accelerator` on this family's nodes.
    #[must_use]
    pub fn accelerator(self) -> &'static str {
        self.facts().accelerator
    }

    /// The family whose nodes carry this accelerator label value.
    #[must_use]
    pub fn from_accelerator(label: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|f| f.accelerator() == label)
    }

    /// TensorCores per chip; the catalog name suffix is chips × this.
    #[must_use]
    pub fn cores_per_chip(self) -> u32 {
        self.facts().cores_per_chip
    }

    /// Topology rank: 2 (v5e, v6e) or 3 (v4, v5p, tpu7x).
    #[must_use]
    pub fn rank(self) -> usize {
        match self.facts().shapes {
            Shapes::Planar(_) => 2,
            Shapes::Torus { .. } => 3,
        }
    }

    /// Machine types of this family.
    #[must_use]
    pub fn machines(self) -> Vec<&'static TpuMachine> {
        let facts = self.facts();
        let mut machines: Vec<&'static TpuMachine> = std::iter::once(&facts.pod_machine)
            .chain(facts.single_host_machines)
            .collect();
        machines.sort_by_key(|machine| machine.chips);
        machines
    }

    /// Whether `topology` is a slice shape this family offers (rank, allowed shapes, caps).
    pub fn check_topology(self, topology: &Topology) -> Result<(), TopologyError> {
        if topology.rank() != self.rank() {
            return Err(TopologyError::Rank {
                family: self.display_name(),
                topology: topology.to_string(),
                expected: self.rank(),
                found: topology.rank(),
            });
        }
        match self.shape_problem(topology.dims()) {
            None => Ok(()),
            Some(reason) => Err(TopologyError::Shape {
                family: self.display_name(),
                topology: topology.to_string(),
                reason,
            }),
        }
    }

    /// Every legal topology of this family, in catalog order (for listings and tests).
    #[must_use]
    pub fn topologies(self) -> Vec<Topology> {
        self.table().topologies.clone()
    }

    /// The canonical `<prefix>-<suffix>` name of this family's slices with `chips` chips.
    fn canonical_name(self, chips: u32) -> String {
        format!("{}-{}", self.prefix(), chips * self.cores_per_chip())
    }

    /// Why `dims` (of the family's rank) is not a legal shape, or `None` when it is.
    fn shape_problem(self, dims: &[u32]) -> Option<String> {
        let problem = self.shape_flaw(dims)?;
        Some(match (problem, &self.facts().shapes) {
            (ShapeFlaw::NotListed, Shapes::Planar(shapes)) => {
                format!("the shapes are {}", list_shapes(shapes))
            }
            (ShapeFlaw::BelowCube, Shapes::Torus { small, .. }) => format!(
                "dimensions below {CUBE_SIDE} only occur in {}",
                list_shapes(small)
            ),
            (ShapeFlaw::NotMultiple, _) => {
                format!("dimensions above {CUBE_SIDE} must be multiples of {CUBE_SIDE}")
            }
            (ShapeFlaw::TooLong, _) => format!("dimensions are at most {MAX_DIMENSION}"),
            (ShapeFlaw::Decreasing, _) => {
                let mut sorted = dims.to_vec();
                sorted.sort_unstable();
                format!(
                    "dimensions must not decrease (did you mean `{}`?)",
                    shape_text(&sorted)
                )
            }
            (ShapeFlaw::TooManyCubes { cubes, max_cubes }, _) => {
                format!("it spans {cubes} 4x4x4 cubes, more than the {max_cubes} a slice can have")
            }
            // A flaw found for one kind of family is only ever reported with that kind.
            (ShapeFlaw::NotListed | ShapeFlaw::BelowCube, _) => {
                format!("`{}` is not a shape of this family", shape_text(dims))
            }
        })
    }

    /// What makes `dims` illegal, without words: the table of legal shapes tests every
    /// candidate of the torus families (hundreds of thousands), so it must not format.
    fn shape_flaw(self, dims: &[u32]) -> Option<ShapeFlaw> {
        match self.facts().shapes {
            Shapes::Planar(shapes) => {
                (!shapes.iter().any(|shape| shape == dims)).then_some(ShapeFlaw::NotListed)
            }
            Shapes::Torus {
                small,
                max_cubes,
                any_order,
            } => {
                if small.iter().any(|shape| shape == dims) {
                    return None;
                }
                if dims.iter().any(|&dimension| dimension < CUBE_SIDE) {
                    return Some(ShapeFlaw::BelowCube);
                }
                if dims.iter().any(|&dimension| dimension % CUBE_SIDE != 0) {
                    return Some(ShapeFlaw::NotMultiple);
                }
                if dims.iter().any(|&dimension| dimension > MAX_DIMENSION) {
                    return Some(ShapeFlaw::TooLong);
                }
                if !any_order && !dims.is_sorted() {
                    return Some(ShapeFlaw::Decreasing);
                }
                let cubes: u32 = dims
                    .iter()
                    .map(|&dimension| dimension / CUBE_SIDE)
                    .product();
                (cubes > max_cubes).then_some(ShapeFlaw::TooManyCubes { cubes, max_cubes })
            }
        }
    }

    /// The layout GKE uses by default: one VM with exactly the slice's chips if the family has
    /// one, otherwise as many 4-chip VMs as it takes.
    fn canonical_host(self, topology: &Topology) -> TpuHost {
        let chips = topology.chips();
        let facts = self.facts();
        match self
            .machines()
            .into_iter()
            .find(|machine| machine.chips == chips)
        {
            Some(machine) => TpuHost { machine, hosts: 1 },
            // Legal multi-host topologies have a multiple of 4 chips, so this is exact.
            None => TpuHost {
                machine: &facts.pod_machine,
                hosts: chips.div_ceil(facts.pod_machine.chips),
            },
        }
    }

    /// Every layout of a legal topology: the canonical one, then (for an 8-chip single-host
    /// slice such as v5e/v6e `2x4`) the multi-host alternative on 4-chip VMs that XPK and GKE
    /// node pools also use.
    fn layouts(self, topology: &Topology) -> Vec<TpuHost> {
        let canonical = self.canonical_host(topology);
        let pod_machine = &self.facts().pod_machine;
        let chips = topology.chips();
        let mut layouts = vec![canonical];
        if canonical.hosts == 1
            && chips > pod_machine.chips
            && chips.is_multiple_of(pod_machine.chips)
        {
            layouts.push(TpuHost {
                machine: pod_machine,
                hosts: chips / pod_machine.chips,
            });
        }
        layouts
    }

    /// A slice of this family with a legal `topology` on `host`.
    fn slice(self, topology: Topology, host: TpuHost) -> TpuSlice {
        TpuSlice {
            name: self.canonical_name(topology.chips()),
            family: self,
            topology,
            host,
        }
    }
}

impl TpuFamily {
    /// High-bandwidth memory per chip, in GB.
    #[must_use]
    pub fn hbm_gb(self) -> u32 {
        self.facts().hbm_gb
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
    TpuFamily::ALL
        .into_iter()
        .flat_map(TpuFamily::machines)
        .find(|machine| machine.name == name)
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
        if self.is_multi_host() {
            self.family.facts().multi_host_placement
        } else {
            Placement::None
        }
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

/// What a catalog name fixes besides the family.
enum Named {
    /// `<prefix>-<suffix>`: the legal topologies with suffix ÷ TensorCores-per-chip chips.
    Chips {
        /// The one used when no topology is given.
        canonical: &'static Topology,
        /// The other accepted topologies, most cube-like first.
        others: &'static [Topology],
    },
    /// `<prefix>-<topology>`: exactly this legal topology.
    Topology(Topology),
}

/// For `<prefix>-<number>` with a known prefix, the catalog name of that family whose size is
/// nearest (`v4-33` → `v4-32`); spelling similarity would suggest `v4-3328`.
fn nearest_size(name: &str) -> Option<String> {
    // Spellings people use for a family (`tpu-v4-32`, `v5e-16`, `v5-lite-16`, `TPU7X-8`).
    let lower = name.to_ascii_lowercase();
    let name = lower.strip_prefix("tpu-").unwrap_or(&lower);
    let (prefix, number) = name.rsplit_once('-')?;
    let prefix = match prefix {
        "v5e" | "v5lite" | "v5-lite" | "v5litepod" | "v5-litepod" => "v5litepod",
        "v6" | "v6e" | "trillium" => "v6e",
        "v7" | "v7x" | "tpu7x" | "ironwood" => "tpu7x",
        other => other,
    };
    let wanted: u64 = number.parse().ok()?;
    CANONICAL_NAMES
        .iter()
        .filter_map(|candidate| {
            let (p, n) = candidate.split_once('-')?;
            let size = n.parse::<u64>().ok().filter(|_| p == prefix)?;
            Some((size.abs_diff(wanted), candidate))
        })
        .min()
        .map(|(_, candidate)| candidate.clone())
}

/// Splits a catalog name into its family and what the rest of the name fixes. Only exact,
/// lowercase catalog keys are accepted (XPK's rule): anything else is `Unknown`, including a
/// `<prefix>-<topology>` name whose topology the family does not offer, because the fault is
/// in the name, not in a separate topology field.
fn parse_name(name: &str) -> Result<(TpuFamily, Named), TpuTypeError> {
    let unknown = || TpuTypeError::Unknown {
        name: name.to_string(),
        suggestion: nearest_size(name).or_else(|| {
            super::closest(name, CANONICAL_NAMES.iter().map(String::as_str)).map(str::to_string)
        }),
    };
    let (prefix, rest) = name.split_once('-').ok_or_else(unknown)?;
    let family = TpuFamily::ALL
        .into_iter()
        .find(|family| family.prefix() == prefix)
        .ok_or_else(unknown)?;
    if rest.contains('x') {
        let topology: Topology = rest.parse().map_err(|_| unknown())?;
        family.check_topology(&topology).map_err(|_| unknown())?;
        return Ok((family, Named::Topology(topology)));
    }
    // Canonical spelling only: digits, no sign, no leading zero.
    let canonical_digits = rest.bytes().all(|byte| byte.is_ascii_digit()) && !rest.starts_with('0');
    let suffix: u32 = rest
        .parse()
        .ok()
        .filter(|_| canonical_digits)
        .ok_or_else(unknown)?;
    let cores = family.cores_per_chip();
    let accepted = suffix
        .is_multiple_of(cores)
        .then(|| family.table().by_chips.get(&(suffix / cores)))
        .flatten()
        .and_then(|same_size| same_size.split_first())
        .ok_or_else(unknown)?;
    let (canonical, others) = accepted;
    Ok((family, Named::Chips { canonical, others }))
}

/// Resolves a catalog name (`v4-32`, `v5litepod-16`, `v6e-8`, `v4-2x2x4`) and an optional
/// explicit topology to a slice. Without a topology the canonical one is used; with one, it
/// must be legal for the family and have the chip count the name implies.
pub fn tpu_slice(name: &str, topology: Option<&Topology>) -> Result<TpuSlice, TpuTypeError> {
    let (family, named) = parse_name(name)?;
    let mismatch = |explicit: &Topology, expected: Vec<Topology>| TpuTypeError::Mismatch {
        name: name.to_string(),
        topology: explicit.to_string(),
        expected,
    };
    let resolved = match (named, topology) {
        (Named::Chips { canonical, .. }, None) => canonical.clone(),
        (Named::Chips { canonical, others }, Some(explicit)) => {
            family.check_topology(explicit)?;
            if explicit.chips() != canonical.chips() {
                let accepted = std::iter::once(canonical).chain(others);
                return Err(mismatch(
                    explicit,
                    accepted.take(MAX_EXPECTED).cloned().collect(),
                ));
            }
            explicit.clone()
        }
        (Named::Topology(named), None) => named,
        (Named::Topology(named), Some(explicit)) => {
            family.check_topology(explicit)?;
            // A permutation is a different torus (v4 allows them), so require equality.
            if *explicit != named {
                return Err(mismatch(explicit, vec![named]));
            }
            named
        }
    };
    let host = family.canonical_host(&resolved);
    Ok(family.slice(resolved, host))
}

/// Canonical catalog names, in catalog order (family, then size).
#[must_use]
pub fn tpu_slice_names() -> Vec<String> {
    CANONICAL_NAMES.clone()
}

/// Every physical layout that nodes labelled with this accelerator and topology can have.
/// Usually one; v5e and v6e `2x4` can be one 8-chip VM or two 4-chip VMs. Empty when the
/// accelerator is unknown or the topology is not legal for it.
#[must_use]
pub fn tpu_slices_for_selector(accelerator: &str, topology: &Topology) -> Vec<TpuSlice> {
    let Some(family) = TpuFamily::from_accelerator(accelerator) else {
        return Vec::new();
    };
    if family.check_topology(topology).is_err() {
        return Vec::new();
    }
    family
        .layouts(topology)
        .into_iter()
        .map(|host| family.slice(topology.clone(), host))
        .collect()
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use proptest::prelude::*;

    use super::*;

    fn topology(text: &str) -> Topology {
        text.parse().unwrap()
    }

    fn slice(name: &str) -> TpuSlice {
        tpu_slice(name, None).unwrap_or_else(|error| panic!("{name}: {error:?}"))
    }

    fn slice_with(name: &str, text: &str) -> Result<TpuSlice, TpuTypeError> {
        tpu_slice(name, Some(&topology(text)))
    }

    /// (name, topology, chips, hosts, machine, placement)
    fn assert_slice(
        name: &str,
        shape: &str,
        chips: u32,
        hosts: u32,
        machine: &str,
        placement: Placement,
    ) {
        let resolved = slice(name);
        assert_eq!(resolved.topology, topology(shape), "{name}");
        assert_eq!(resolved.chips(), chips, "{name}");
        assert_eq!(resolved.hosts(), hosts, "{name}");
        assert_eq!(resolved.machine_type(), machine, "{name}");
        assert_eq!(resolved.placement(), placement, "{name}");
        assert_eq!(
            resolved.hosts() * resolved.chips_per_host(),
            resolved.chips(),
            "{name}"
        );
    }

    #[test]
    fn suggests_the_family_people_mean() {
        let suggestion = |name: &str| match parse_name(name) {
            Err(TpuTypeError::Unknown { suggestion, .. }) => suggestion,
            Err(other) => panic!("{name}: {other}"),
            Ok(_) => panic!("{name} is a catalog name"),
        };
        assert_eq!(suggestion("v5e-16").as_deref(), Some("v5litepod-16"));
        assert_eq!(suggestion("tpu-v4-32").as_deref(), Some("v4-32"));
        assert_eq!(suggestion("v4-33").as_deref(), Some("v4-32"));
        assert_eq!(suggestion("V6E-8").as_deref(), Some("v6e-8"));
    }

    #[test]
    fn family_facts() {
        let expected = [
            (TpuFamily::V4, "v4", "TPU v4", "tpu-v4-podslice", 2, 3),
            (
                TpuFamily::V5e,
                "v5litepod",
                "TPU v5e",
                "tpu-v5-lite-podslice",
                1,
                2,
            ),
            (TpuFamily::V5p, "v5p", "TPU v5p", "tpu-v5p-slice", 2, 3),
            (TpuFamily::V6e, "v6e", "TPU v6e", "tpu-v6e-slice", 1, 2),
            (TpuFamily::Tpu7x, "tpu7x", "TPU7x (Ironwood)", "tpu7x", 2, 3),
        ];
        for (index, (family, prefix, display, label, cores, rank)) in
            expected.into_iter().enumerate()
        {
            assert_eq!(TpuFamily::ALL[index], family);
            assert_eq!(family.prefix(), prefix);
            assert_eq!(family.display_name(), display);
            assert_eq!(family.to_string(), display);
            assert_eq!(family.accelerator(), label);
            assert_eq!(TpuFamily::from_accelerator(label), Some(family));
            assert_eq!(family.cores_per_chip(), cores);
            assert_eq!(family.rank(), rank);
        }
        assert_eq!(TpuFamily::from_accelerator("tpu-v4"), None);
    }

    #[test]
    fn machines_per_family() {
        let names = |family: TpuFamily| -> Vec<&str> {
            family
                .machines()
                .into_iter()
                .map(|machine| machine.name)
                .collect()
        };
        assert_eq!(names(TpuFamily::V4), ["ct4p-hightpu-4t"]);
        assert_eq!(
            names(TpuFamily::V5e),
            ["ct5lp-hightpu-1t", "ct5lp-hightpu-4t", "ct5lp-hightpu-8t"]
        );
        assert_eq!(names(TpuFamily::V5p), ["ct5p-hightpu-4t"]);
        assert_eq!(
            names(TpuFamily::V6e),
            ["ct6e-standard-1t", "ct6e-standard-4t", "ct6e-standard-8t"]
        );
        assert_eq!(
            names(TpuFamily::Tpu7x),
            ["tpu7x-standard-1t", "tpu7x-standard-4t"]
        );
        for family in TpuFamily::ALL {
            for machine in family.machines() {
                assert_eq!(machine.family, family);
                assert_eq!(tpu_machine(machine.name), Some(machine));
                // GCE machine type names end in `-<chips>t`.
                let suffix = machine
                    .name
                    .rsplit('-')
                    .next()
                    .and_then(|last| last.strip_suffix('t'));
                assert_eq!(
                    suffix.and_then(|chips| chips.parse().ok()),
                    Some(machine.chips),
                    "{}",
                    machine.name
                );
            }
            assert!(
                family.machines().iter().any(|machine| machine.chips == 4),
                "{family}"
            );
        }
        assert_eq!(tpu_machine("ct5lp-hightpu-2t"), None);
        assert_eq!(tpu_machine("CT4P-HIGHTPU-4T"), None);
    }

    #[test]
    fn topology_counts_match_the_xpk_generator() {
        let count = |family: TpuFamily| family.topologies().len();
        assert_eq!(count(TpuFamily::V4), 800);
        assert_eq!(count(TpuFamily::V5e), 8);
        assert_eq!(count(TpuFamily::V5p), 414);
        assert_eq!(count(TpuFamily::V6e), 8);
        assert_eq!(count(TpuFamily::Tpu7x), 433);
        for family in TpuFamily::ALL {
            let topologies = family.topologies();
            let distinct: HashSet<&Topology> = topologies.iter().collect();
            assert_eq!(
                distinct.len(),
                topologies.len(),
                "{family} lists a topology twice"
            );
        }
        assert_eq!(
            TpuFamily::V4.topologies()[..5],
            ["2x2x1", "2x2x2", "2x2x4", "2x4x4", "4x4x4"].map(topology)
        );
        assert_eq!(TpuFamily::Tpu7x.topologies()[0], topology("1x1x1"));
    }

    #[test]
    fn check_topology_agrees_with_the_listing() {
        // Every shape with small dimensions, both ranks: legal exactly when listed.
        for family in TpuFamily::ALL {
            let listed: HashSet<Topology> = family.topologies().into_iter().collect();
            let sides = 1..=24_u32;
            let mut shapes: Vec<Vec<u32>> = Vec::new();
            for a in sides.clone() {
                for b in sides.clone() {
                    shapes.push(vec![a, b]);
                    for c in sides.clone() {
                        shapes.push(vec![a, b, c]);
                    }
                }
            }
            for dims in shapes {
                let candidate = Topology::new(&dims).unwrap();
                let result = family.check_topology(&candidate);
                assert_eq!(
                    result.is_ok(),
                    listed.contains(&candidate),
                    "{family} {candidate}: {result:?}"
                );
                if dims.len() != family.rank() {
                    assert!(
                        matches!(result, Err(TopologyError::Rank { .. })),
                        "{family} {candidate}"
                    );
                }
            }
            for legal in &family.topologies() {
                assert_eq!(family.check_topology(legal), Ok(()), "{family} {legal}");
            }
        }
    }

    #[test]
    fn every_layout_of_every_topology_adds_up() {
        for family in TpuFamily::ALL {
            for legal in family.topologies() {
                let host = family.canonical_host(&legal);
                assert_eq!(
                    host.hosts * host.machine.chips,
                    legal.chips(),
                    "{family} {legal}"
                );
                assert_eq!(host.machine.family, family);

                let layouts = tpu_slices_for_selector(family.accelerator(), &legal);
                assert!(!layouts.is_empty(), "{family} {legal}");
                assert_eq!(
                    layouts[0].host, host,
                    "canonical layout first: {family} {legal}"
                );
                for layout in &layouts {
                    assert_eq!(
                        layout.hosts() * layout.chips_per_host(),
                        layout.chips(),
                        "{family} {legal}"
                    );
                    assert_eq!(layout.topology, legal);
                    // Multi-host slices always run on 4-chip VMs.
                    if layout.is_multi_host() {
                        assert_eq!(layout.chips_per_host(), 4, "{family} {legal}");
                    }
                    // The name of a layout resolves back to a slice of the same size.
                    assert_eq!(
                        slice(&layout.name).chips(),
                        legal.chips(),
                        "{}",
                        layout.name
                    );
                }
            }
        }
    }

    #[test]
    fn names_count_tensorcores_or_chips() {
        assert_slice("v4-8", "2x2x1", 4, 1, "ct4p-hightpu-4t", Placement::None);
        assert_slice(
            "v4-16",
            "2x2x2",
            8,
            2,
            "ct4p-hightpu-4t",
            Placement::Compact,
        );
        assert_slice(
            "v4-32",
            "2x2x4",
            16,
            4,
            "ct4p-hightpu-4t",
            Placement::Compact,
        );
        assert_slice(
            "v5litepod-1",
            "1x1",
            1,
            1,
            "ct5lp-hightpu-1t",
            Placement::None,
        );
        assert_slice(
            "v5litepod-4",
            "2x2",
            4,
            1,
            "ct5lp-hightpu-4t",
            Placement::None,
        );
        // Regression for XPK PR #292 → #513 (8 chips per VM on 2 VMs = 16 chips).
        assert_slice(
            "v5litepod-8",
            "2x4",
            8,
            1,
            "ct5lp-hightpu-8t",
            Placement::None,
        );
        assert_slice(
            "v5litepod-16",
            "4x4",
            16,
            4,
            "ct5lp-hightpu-4t",
            Placement::Compact,
        );
        assert_slice(
            "v5litepod-256",
            "16x16",
            256,
            64,
            "ct5lp-hightpu-4t",
            Placement::Compact,
        );
        assert_slice("v5p-8", "2x2x1", 4, 1, "ct5p-hightpu-4t", Placement::None);
        assert_slice(
            "v5p-128",
            "4x4x4",
            64,
            16,
            "ct5p-hightpu-4t",
            Placement::Compact,
        );
        assert_slice("v6e-1", "1x1", 1, 1, "ct6e-standard-1t", Placement::None);
        assert_slice("v6e-4", "2x2", 4, 1, "ct6e-standard-4t", Placement::None);
        assert_slice("v6e-8", "2x4", 8, 1, "ct6e-standard-8t", Placement::None);
        assert_slice(
            "v6e-16",
            "4x4",
            16,
            4,
            "ct6e-standard-4t",
            Placement::Compact,
        );
        assert_slice(
            "tpu7x-2",
            "1x1x1",
            1,
            1,
            "tpu7x-standard-1t",
            Placement::None,
        );
        assert_slice(
            "tpu7x-8",
            "2x2x1",
            4,
            1,
            "tpu7x-standard-4t",
            Placement::None,
        );
        assert_slice(
            "tpu7x-16",
            "2x2x2",
            8,
            2,
            "tpu7x-standard-4t",
            Placement::WorkloadPolicy,
        );
        assert_slice(
            "tpu7x-128",
            "4x4x4",
            64,
            16,
            "tpu7x-standard-4t",
            Placement::WorkloadPolicy,
        );

        let v4 = slice("v4-32");
        assert_eq!(
            (v4.name.as_str(), v4.family, v4.accelerator()),
            ("v4-32", TpuFamily::V4, "tpu-v4-podslice")
        );
    }

    #[test]
    fn topology_names_resolve_to_canonical_names() {
        let named = slice("v4-2x2x4");
        assert_eq!(named, slice("v4-32"));
        assert_eq!(slice("v5litepod-4x4"), slice("v5litepod-16"));
        // A non-canonical permutation keeps its topology but shares the size name.
        let permuted = slice("v4-8x4x4");
        assert_eq!(
            (permuted.name.as_str(), permuted.topology.clone()),
            ("v4-256", topology("8x4x4"))
        );
        assert_eq!(slice("v5p-4x8x12").name, "v5p-768");

        assert_eq!(slice_with("v4-2x2x4", "2x2x4"), Ok(named));
        match slice_with("v4-4x4x8", "4x8x4") {
            Err(TpuTypeError::Mismatch {
                expected,
                topology: written,
                ..
            }) => {
                assert_eq!(expected, [topology("4x4x8")]);
                assert_eq!(written, "4x8x4");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            slice_with("v4-2x2x4", "4x4"),
            Err(TpuTypeError::Topology(TopologyError::Rank { .. }))
        ));
    }

    #[test]
    fn explicit_topology_must_be_legal_and_the_right_size() {
        assert_eq!(slice_with("v4-32", "2x2x4"), Ok(slice("v4-32")));
        assert!(matches!(
            slice_with("v4-32", "4x4"),
            Err(TpuTypeError::Topology(TopologyError::Rank {
                expected: 3,
                found: 2,
                ..
            }))
        ));
        match slice_with("v4-32", "2x2x2") {
            Err(TpuTypeError::Mismatch {
                name,
                topology: written,
                expected,
            }) => {
                assert_eq!((name.as_str(), written.as_str()), ("v4-32", "2x2x2"));
                assert_eq!(expected, [topology("2x2x4")]);
            }
            other => panic!("{other:?}"),
        }
        // Illegal shapes are reported as such, before the size comparison.
        assert!(matches!(
            slice_with("v4-32", "4x2x2"),
            Err(TpuTypeError::Topology(TopologyError::Shape { .. }))
        ));
        assert!(matches!(
            slice_with("v5litepod-8", "4x2"),
            Err(TpuTypeError::Topology(TopologyError::Shape { .. }))
        ));
    }

    #[test]
    fn v4_accepts_permutations_and_the_others_do_not() {
        for shape in ["4x4x8", "4x8x4", "8x4x4"] {
            let resolved = slice_with("v4-256", shape).unwrap();
            assert_eq!(resolved.topology, topology(shape));
            assert_eq!((resolved.name.as_str(), resolved.hosts()), ("v4-256", 32));
        }
        assert_eq!(slice("v4-256").topology, topology("4x4x8"));
        assert_eq!(
            slice_with("v5p-256", "4x4x8").map(|resolved| resolved.hosts()),
            Ok(32)
        );
        match slice_with("v5p-256", "4x8x4") {
            Err(TpuTypeError::Topology(TopologyError::Shape { reason, .. })) => {
                assert!(reason.contains("4x4x8"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
        assert!(TpuFamily::Tpu7x.check_topology(&topology("8x4x4")).is_err());

        match slice_with("v4-256", "4x4x4") {
            Err(TpuTypeError::Mismatch { expected, .. }) => {
                assert_eq!(expected, ["4x4x8", "4x8x4", "8x4x4"].map(topology));
            }
            other => panic!("{other:?}"),
        }
        // Many permutations share 1536 chips; the list is capped and starts with the canonical one.
        match slice_with("v4-3072", "4x4x4") {
            Err(TpuTypeError::Mismatch { expected, .. }) => {
                assert_eq!(expected.len(), MAX_EXPECTED);
                assert_eq!(expected[0], topology("8x12x16"));
                assert!(expected.iter().all(|listed| listed.chips() == 1536));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn size_caps() {
        let legal =
            |family: TpuFamily, shape: &str| family.check_topology(&topology(shape)).is_ok();
        assert!(legal(TpuFamily::V4, "8x8x16")); // 32 cubes
        assert!(legal(TpuFamily::V4, "16x16x16")); // 64 cubes
        assert!(legal(TpuFamily::V4, "4x4x256")); // 64 cubes, longest dimension
        assert!(!legal(TpuFamily::V4, "20x52x4")); // 65 cubes
        assert!(!legal(TpuFamily::V4, "4x4x260")); // beyond 256
        assert!(legal(TpuFamily::V5p, "16x20x28")); // 140 cubes
        assert!(legal(TpuFamily::V5p, "16x16x24")); // largest documented single slice
        assert!(!legal(TpuFamily::V5p, "4x12x188")); // 141 cubes
        assert!(!legal(TpuFamily::V5p, "12x12x64")); // 144 cubes
        assert!(legal(TpuFamily::Tpu7x, "12x12x64")); // 144 cubes
        assert!(legal(TpuFamily::Tpu7x, "16x24x24")); // 144 cubes
        assert!(!legal(TpuFamily::Tpu7x, "4x20x116")); // 145 cubes
        assert!(!legal(TpuFamily::V4, "4x4x6")); // not a multiple of 4
        assert!(!legal(TpuFamily::V4, "2x2x8")); // small dimension outside the small shapes
        assert!(!legal(TpuFamily::V4, "1x1x1")); // no single-chip v4 VM
        assert!(!legal(TpuFamily::V5e, "4x2"));
        assert!(!legal(TpuFamily::V6e, "16x32"));

        match TpuFamily::V4.check_topology(&topology("20x52x4")) {
            Err(TopologyError::Shape {
                family,
                topology: written,
                reason,
            }) => {
                assert_eq!((family, written.as_str()), ("TPU v4", "20x52x4"));
                assert!(reason.contains("65"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn v5e_and_v6e_small_slices_are_single_host() {
        for family in [TpuFamily::V5e, TpuFamily::V6e] {
            for (shape, multi_host) in [
                ("1x1", false),
                ("2x2", false),
                ("2x4", false),
                ("4x4", true),
                ("16x16", true),
            ] {
                let resolved = slice(&format!("{}-{shape}", family.prefix()));
                assert_eq!(resolved.is_multi_host(), multi_host, "{family} {shape}");
                let placement = if multi_host {
                    Placement::Compact
                } else {
                    Placement::None
                };
                assert_eq!(resolved.placement(), placement, "{family} {shape}");
            }
        }
    }

    #[test]
    fn selector_layouts() {
        let two_by_four = topology("2x4");
        for (label, single, multi) in [
            (
                "tpu-v5-lite-podslice",
                "ct5lp-hightpu-8t",
                "ct5lp-hightpu-4t",
            ),
            ("tpu-v6e-slice", "ct6e-standard-8t", "ct6e-standard-4t"),
        ] {
            let layouts = tpu_slices_for_selector(label, &two_by_four);
            let summary: Vec<(&str, u32)> = layouts
                .iter()
                .map(|layout| (layout.machine_type(), layout.hosts()))
                .collect();
            assert_eq!(summary, [(single, 1), (multi, 2)], "{label}");
            assert_eq!(layouts[1].placement(), Placement::Compact);
            assert!(layouts.iter().all(|layout| layout.chips() == 8));
        }
        for (label, shape) in [
            ("tpu-v5-lite-podslice", "4x4"),
            ("tpu-v6e-slice", "2x2"),
            ("tpu-v4-podslice", "2x2x2"),
        ] {
            assert_eq!(
                tpu_slices_for_selector(label, &topology(shape)).len(),
                1,
                "{label} {shape}"
            );
        }
        let ironwood = tpu_slices_for_selector("tpu7x", &topology("4x4x4"));
        assert_eq!(ironwood.len(), 1);
        assert_eq!(
            (ironwood[0].name.as_str(), ironwood[0].placement()),
            ("tpu7x-128", Placement::WorkloadPolicy)
        );

        assert!(tpu_slices_for_selector("tpu-v5-lite-device", &two_by_four).is_empty());
        assert!(tpu_slices_for_selector("tpu-v4-podslice", &two_by_four).is_empty());
        assert!(tpu_slices_for_selector("tpu-v5p-slice", &topology("4x8x4")).is_empty());
    }

    #[test]
    fn unknown_names() {
        match tpu_slice("v4-33", None) {
            Err(TpuTypeError::Unknown { name, suggestion }) => {
                assert_eq!(name, "v4-33");
                let suggestion = suggestion.expect("a close name");
                assert_eq!(suggestion, "v4-32", "nearest size, not nearest spelling");
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            tpu_slice("V4-32", None),
            Err(TpuTypeError::Unknown {
                name: "V4-32".to_string(),
                suggestion: Some("v4-32".to_string())
            })
        );
        for name in [
            "v9-8",
            "",
            "v4",
            "v4-",
            "v4-032",
            "v4-+32",
            "v4-31",
            "v4-4x4",
            "v4-2x2x1x1",
            "v5p-4x8x4",
            "v5litepod-2x2x1",
            "v5litepod-3",
            "tpu7x-4",
            "v6e-8 ",
            "v6e_8",
            "tpu-v4-podslice",
            "v4-99999999999",
        ] {
            assert!(
                matches!(tpu_slice(name, None), Err(TpuTypeError::Unknown { .. })),
                "{name:?}"
            );
        }
        // An unknown name stays unknown even with a legal topology.
        assert!(matches!(
            slice_with("v9-8", "2x2x1"),
            Err(TpuTypeError::Unknown { .. })
        ));
    }

    #[test]
    fn canonical_names_in_catalog_order() {
        let names = tpu_slice_names();
        let distinct: HashSet<&String> = names.iter().collect();
        assert_eq!(distinct.len(), names.len());
        // One name per distinct chip count: 68 v4, 8 v5e, 127 v5p, 8 v6e, 131 tpu7x.
        assert_eq!(names.len(), 68 + 8 + 127 + 8 + 131);
        assert_eq!(names[..4], ["v4-8", "v4-16", "v4-32", "v4-64"]);
        assert_eq!(names.last().map(String::as_str), Some("tpu7x-18432"));

        let mut previous: Option<(TpuFamily, u32)> = None;
        for name in &names {
            let resolved = slice(name);
            assert_eq!(&resolved.name, name);
            let key = (resolved.family, resolved.chips());
            assert!(previous < Some(key), "{name} out of order");
            previous = Some(key);
        }
    }

    #[test]
    fn canonical_topologies_follow_xpk_defaults() {
        let cases = [
            // v4 default set.
            ("v4-128", "4x4x4"),
            ("v4-256", "4x4x8"),
            ("v4-512", "4x8x8"),
            ("v4-1024", "8x8x8"),
            ("v4-1536", "8x8x12"),
            ("v4-2048", "8x8x16"),
            ("v4-4096", "8x16x16"),
            // No v4 default: the most cube-like shape (XPK takes 4x4x36, its first generated).
            ("v4-1152", "4x12x12"),
            // v5p and tpu7x defaults.
            ("v5p-768", "4x8x12"),
            ("v5p-1152", "4x12x12"),
            ("v5p-2048", "8x8x16"),
            ("v5p-9216", "12x16x24"),
            ("v5p-12288", "16x16x24"),
            ("v5p-17920", "16x20x28"),
            ("tpu7x-384", "4x4x12"),
            ("tpu7x-3456", "12x12x12"),
            ("tpu7x-16384", "16x16x32"),
            ("tpu7x-18432", "16x24x24"),
            // Beyond XPK's v5p defaults, cube-like instead of XPK's 4x8x256.
            ("v5p-16384", "16x16x32"),
            ("v5litepod-128", "8x16"),
            ("v6e-256", "16x16"),
        ];
        for (name, shape) in cases {
            assert_eq!(slice(name).topology, topology(shape), "{name}");
        }
    }

    fn legal_topology() -> impl Strategy<Value = (TpuFamily, Topology)> {
        prop::sample::select(TpuFamily::ALL.to_vec()).prop_flat_map(|family| {
            prop::sample::select(family.topologies()).prop_map(move |legal| (family, legal))
        })
    }

    proptest! {
        #[test]
        fn canonical_names_round_trip(name in prop::sample::select(tpu_slice_names())) {
            let resolved = tpu_slice(&name, None).unwrap();
            prop_assert_eq!(&resolved.name, &name);
            prop_assert_eq!(tpu_slice(&name, Some(&resolved.topology)), Ok(resolved.clone()));
            let by_topology = format!("{}-{}", resolved.family.prefix(), resolved.topology);
            prop_assert_eq!(tpu_slice(&by_topology, None), Ok(resolved.clone()));
            let suffix: u32 = name.rsplit('-').next().unwrap().parse().unwrap();
            prop_assert_eq!(resolved.chips() * resolved.family.cores_per_chip(), suffix);
        }

        #[test]
        fn every_legal_topology_is_accepted_by_its_size_name((family, legal) in legal_topology()) {
            let name = format!("{}-{}", family.prefix(), legal.chips() * family.cores_per_chip());
            let resolved = tpu_slice(&name, Some(&legal)).unwrap();
            prop_assert_eq!(&resolved.topology, &legal);
            prop_assert_eq!(&resolved.name, &name);
            let by_topology = tpu_slice(&format!("{}-{legal}", family.prefix()), Some(&legal)).unwrap();
            prop_assert_eq!(by_topology, resolved);
        }
    }
}

//! Slice topology: `AxB` (2D families) or `AxBxC` (3D families), parsed once at the edge.

use std::fmt;
use std::str::FromStr;

/// A TPU slice topology such as `2x2x4` or `4x4`. Every dimension is at least 1.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Topology {
    dims: Vec<u32>,
}

impl Topology {
    /// Builds a topology from dimensions (each ≥ 1, two or three of them).
    pub fn new(dims: &[u32]) -> Result<Self, TopologyError> {
        todo!("catalog helper: {dims:?}")
    }

    /// The dimensions, in the order written.
    #[must_use]
    pub fn dims(&self) -> &[u32] {
        &self.dims
    }

    /// Number of dimensions (2 or 3).
    #[must_use]
    pub fn rank(&self) -> usize {
        self.dims.len()
    }

    /// Chips in the slice: the product of the dimensions.
    #[must_use]
    pub fn chips(&self) -> u32 {
        self.dims.iter().product()
    }
}

impl FromStr for Topology {
    type Err = TopologyError;
    /// Accepts `^[1-9][0-9]*x[1-9][0-9]*(x[1-9][0-9]*)?$`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        todo!("catalog helper: {s}")
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let _ = f; todo!("catalog helper")
    }
}

/// Why a topology is not acceptable.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TopologyError {
    /// Not of the form `AxB` or `AxBxC` with positive integers.
    #[error("`{0}` is not a topology: expected `AxB` or `AxBxC` with positive whole numbers")]
    Syntax(String),
    /// Wrong number of dimensions for the family.
    #[error("{family} slices have {expected}-dimensional topologies, `{topology}` has {found}")]
    Rank {
        /// Family display name, e.g. `TPU v4`.
        family: &'static str,
        /// The topology as written.
        topology: String,
        /// Dimensions the family uses.
        expected: usize,
        /// Dimensions written.
        found: usize,
    },
    /// Right rank, but not a shape the family offers (with the reason and legal examples).
    #[error("`{topology}` is not a {family} slice shape: {reason}")]
    Shape {
        /// Family display name.
        family: &'static str,
        /// The topology as written.
        topology: String,
        /// Why, e.g. "dimensions above 4 must be multiples of 4".
        reason: String,
    },
}

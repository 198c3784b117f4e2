//! Slice topology: `AxB` (2D families) or `AxBxC` (3D families), parsed once at the edge.

use std::fmt;
use std::str::FromStr;

/// A TPU slice topology such as `2x2x4` or `4x4`. Every dimension is at least 1.
///
/// The chip count (the product of the dimensions) always fits in a `u32`: constructors reject
/// anything larger, so [`Topology::chips`] cannot overflow.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Topology {
    dims: Vec<u32>,
}

impl Topology {
    /// Builds a topology from dimensions (each ≥ 1, two or three of them).
    pub fn new(dims: &[u32]) -> Result<Self, TopologyError> {
        let well_formed = matches!(dims.len(), 2 | 3)
            && dims.iter().all(|&dimension| dimension >= 1)
            // No real slice comes near u32::MAX chips; refusing overflow keeps `chips` total.
            && dims.iter().try_fold(1_u32, |product, &dimension| product.checked_mul(dimension)).is_some();
        if well_formed {
            Ok(Self {
                dims: dims.to_vec(),
            })
        } else {
            Err(TopologyError::Syntax(join_dims(dims)))
        }
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
        let syntax = || TopologyError::Syntax(s.to_string());
        let mut dims = Vec::with_capacity(3);
        for part in s.split('x') {
            // Digits only, no sign, no spaces, no leading zero (so `04x4` is not `4x4`).
            let digits_only = !part.is_empty() && part.bytes().all(|byte| byte.is_ascii_digit());
            if !digits_only || part.starts_with('0') {
                return Err(syntax());
            }
            dims.push(part.parse::<u32>().map_err(|_| syntax())?);
        }
        // Rank and overflow are checked by `new`; report them against the text as written.
        Self::new(&dims).map_err(|_| syntax())
    }
}

impl fmt::Display for Topology {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&join_dims(&self.dims))
    }
}

/// `[2, 2, 4]` → `2x2x4`.
fn join_dims(dims: &[u32]) -> String {
    dims.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join("x")
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

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn parse(text: &str) -> Result<Topology, TopologyError> {
        text.parse()
    }

    #[test]
    fn parses_two_and_three_dimensions() {
        let planar = parse("4x8").unwrap();
        assert_eq!(planar.dims(), &[4, 8]);
        assert_eq!(planar.rank(), 2);
        assert_eq!(planar.chips(), 32);

        let cube = parse("2x2x4").unwrap();
        assert_eq!(cube.dims(), &[2, 2, 4]);
        assert_eq!(cube.rank(), 3);
        assert_eq!(cube.chips(), 16);

        assert_eq!(parse("1x1").unwrap().chips(), 1);
        assert_eq!(parse("16x20x28").unwrap().chips(), 8960);
    }

    #[test]
    fn rejects_everything_outside_the_grammar() {
        for text in [
            "",
            "x",
            "4",
            "0x4",
            "4x0",
            "4x",
            "x4",
            "4 x4",
            " 4x4",
            "4x4 ",
            "04x4",
            "4x04",
            "4x4x4x4",
            "4X4",
            "4*4",
            "+4x4",
            "-4x4",
            "4.0x4",
            "4x4x",
            "4xx4",
            "٤x4",
            // Each dimension fits in u32 but the chip count would not.
            "65536x65536",
            "4294967296x1",
        ] {
            assert_eq!(
                parse(text),
                Err(TopologyError::Syntax(text.to_string())),
                "{text:?}"
            );
        }
    }

    #[test]
    fn new_rejects_zero_and_wrong_counts() {
        assert!(Topology::new(&[]).is_err());
        assert!(Topology::new(&[4]).is_err());
        assert!(Topology::new(&[4, 4, 4, 4]).is_err());
        assert!(Topology::new(&[0, 4]).is_err());
        assert!(Topology::new(&[4, 4, 0]).is_err());
        assert!(Topology::new(&[u32::MAX, 2]).is_err());
        assert_eq!(Topology::new(&[2, 2, 1]).unwrap(), parse("2x2x1").unwrap());
    }

    #[test]
    fn display_matches_the_written_form() {
        assert_eq!(Topology::new(&[2, 4]).unwrap().to_string(), "2x4");
        assert_eq!(Topology::new(&[8, 4, 4]).unwrap().to_string(), "8x4x4");
    }

    #[test]
    fn errors_read_well() {
        assert_eq!(
            parse("4 x4").unwrap_err().to_string(),
            "`4 x4` is not a topology: expected `AxB` or `AxBxC` with positive whole numbers"
        );
    }

    proptest! {
        #[test]
        fn display_and_parse_round_trip(dims in prop::collection::vec(1_u32..=1024, 2..=3)) {
            let topology = Topology::new(&dims).unwrap();
            let text = topology.to_string();
            prop_assert_eq!(parse(&text), Ok(topology.clone()));
            prop_assert_eq!(topology.chips(), dims.iter().product::<u32>());
        }

        #[test]
        fn parse_accepts_exactly_the_regex(text in "[0-9x ]{0,12}") {
            // The documented grammar, checked by hand so the test does not share the parser.
            let parts: Vec<&str> = text.split('x').collect();
            let grammatical = matches!(parts.len(), 2 | 3)
                && parts.iter().all(|part| {
                    !part.is_empty()
                        && part.bytes().all(|byte| byte.is_ascii_digit())
                        && part.bytes().next().is_some_and(|byte| byte != b'0')
                });
            let parsed = parse(&text);
            if grammatical {
                let fits = parts
                    .iter()
                    .try_fold(1_u64, |product, part| {
                        let product = product.checked_mul(part.parse::<u64>().ok()?)?;
                        (product <= u64::from(u32::MAX)).then_some(product)
                    })
                    .is_some();
                prop_assert_eq!(parsed.is_ok(), fits);
            } else {
                prop_assert!(parsed.is_err());
            }
        }
    }
}

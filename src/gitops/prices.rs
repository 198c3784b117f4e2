//! List prices (on-demand; spot for TPU chips) for the cost estimate of `diff`:
//! `data/prices.tsv`, embedded.
//!
//! The file is data with its provenance (source and as-of date per row, the sources listed at
//! its top), from Google Cloud's public price pages. This module only looks prices up and
//! derives what the file does not list: a node of a TPU machine costs its chips at the
//! family's chip price (on Spot VMs, its spot chip price in that very region, or no price);
//! an N1 node with attached GPUs costs the machine plus the GPUs; a
//! machine type without a row of its own costs its vCPUs and memory at its family's rates
//! (shapes below). A region without a row falls back to `us-central1`, said so; no row at
//! all leaves the node unpriced, said so, never counted as zero.

use std::collections::BTreeSet;
use std::sync::LazyLock;

/// The price table, as shipped.
pub const TABLE: &str = include_str!("../../data/prices.tsv");

/// The region prices fall back to when a region has no row.
pub const FALLBACK_REGION: &str = "us-central1";

/// Hours in a month, as Google's price pages count them.
pub const HOURS_PER_MONTH: f64 = 730.0;

/// One row of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    /// `tpu-chip`, `tpu-chip-spot`, `gpu`, `machine`, `vcpu`, `memory-gb`, `cluster-fee`.
    pub kind: &'static str,
    /// What is priced: a TPU family, a GPU label, a machine type or family.
    pub item: &'static str,
    /// Region, or `*` for every region.
    pub region: &'static str,
    /// USD per hour.
    pub usd_per_hour: f64,
    /// Source id (`S1` …).
    pub source: &'static str,
    /// As-of date of the figure.
    pub as_of: &'static str,
}

/// A source of the table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Source {
    /// `S1` …
    pub id: &'static str,
    /// What it is.
    pub what: &'static str,
    /// Where.
    pub url: &'static str,
    /// As of when.
    pub as_of: &'static str,
}

/// The parsed table.
#[derive(Debug)]
pub struct Prices {
    rows: Vec<Row>,
    /// Every source, in file order.
    pub sources: Vec<Source>,
}

/// The embedded table (a malformed line is a bug in this binary, caught by a unit test).
pub static PRICES: LazyLock<Prices> = LazyLock::new(|| match Prices::parse(TABLE) {
    Ok(prices) => prices,
    Err(error) => panic!("data/prices.tsv is malformed: {error}"),
});

impl Prices {
    /// Parses the table format of `data/prices.tsv`.
    pub fn parse(text: &'static str) -> Result<Self, String> {
        let mut rows = Vec::new();
        let mut sources = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let fields: Vec<&'static str> = line.split('\t').collect();
            match fields.as_slice() {
                ["source", id, what, url, as_of] => sources.push(Source {
                    id,
                    what,
                    url,
                    as_of,
                }),
                [kind, item, region, usd, source, as_of, _note] => {
                    let usd_per_hour = usd
                        .parse::<f64>()
                        .map_err(|e| format!("line {}: `{usd}`: {e}", number + 1))?;
                    rows.push(Row {
                        kind,
                        item,
                        region,
                        usd_per_hour,
                        source,
                        as_of,
                    });
                }
                _ => {
                    return Err(format!(
                        "line {}: expected 7 tab-separated fields",
                        number + 1
                    ));
                }
            }
        }
        for row in &rows {
            if !sources.iter().any(|s| s.id == row.source) {
                return Err(format!(
                    "`{}` cites the unknown source `{}`",
                    row.item, row.source
                ));
            }
        }
        Ok(Self { rows, sources })
    }

    /// The row for `kind`/`item` in `region` (or for every region).
    fn exact(&self, kind: &str, item: &str, region: &str) -> Option<&Row> {
        self.rows.iter().find(|row| {
            row.kind == kind && row.item == item && (row.region == region || row.region == "*")
        })
    }

    /// The row in `region`, else in [`FALLBACK_REGION`] (`true`: fell back).
    fn find(&self, kind: &str, item: &str, region: &str) -> Option<(&Row, bool)> {
        self.exact(kind, item, region)
            .map(|row| (row, false))
            .or_else(|| {
                self.exact(kind, item, FALLBACK_REGION)
                    .map(|row| (row, true))
            })
    }

    /// The GKE management fee per cluster-hour.
    #[must_use]
    pub fn cluster_fee(&self) -> Option<&Row> {
        self.exact("cluster-fee", "standard", "*")
    }

    /// The hourly price of one node of `node` in `region`, or why there is none.
    pub fn node(&self, node: &Node<'_>, region: &str) -> Result<NodePrice, String> {
        let mut price = NodePrice::default();
        let add = |row: &Row, fell_back: bool, times: f64, price: &mut NodePrice| {
            price.usd_per_hour += row.usd_per_hour * times;
            price.sources.insert(row.source);
            price.fell_back |= fell_back;
        };
        if let Some((family, chips)) = node.tpu
            && node.spot
        {
            // Spot prices differ by region and change often: another region's figure would
            // be a guess, so none is used.
            let Some(row) = self.exact("tpu-chip-spot", family, region) else {
                return Err(format!(
                    "no spot price for `{family}` TPU chips in `{region}`"
                ));
            };
            add(row, false, f64::from(chips), &mut price);
            price.detail = format!("{chips} TPU {family} chips x ${:.2} spot", row.usd_per_hour);
            return Ok(price);
        }
        if let Some((family, chips)) = node.tpu {
            let Some((row, fell_back)) = self.find("tpu-chip", family, region) else {
                return Err(format!("no price for `{family}` TPU chips in `{region}`"));
            };
            add(row, fell_back, f64::from(chips), &mut price);
            price.detail = format!("{chips} TPU {family} chips x ${:.2}", row.usd_per_hour);
            return Ok(price);
        }
        if let Some((row, fell_back)) = self.find("machine", node.machine_type, region) {
            add(row, fell_back, 1.0, &mut price);
            price.detail = format!("`{}` ${:.2}", node.machine_type, row.usd_per_hour);
        } else {
            let Some((family, vcpus, gb)) = machine_shape(node.machine_type) else {
                return Err(format!("no price for machine type `{}`", node.machine_type));
            };
            let (Some((vcpu, a)), Some((memory, b))) = (
                self.find("vcpu", family, region),
                self.find("memory-gb", family, region),
            ) else {
                return Err(format!("no price for machine type `{}`", node.machine_type));
            };
            add(vcpu, a, vcpus, &mut price);
            add(memory, b, gb, &mut price);
            price.detail = format!(
                "`{}` ({vcpus} vCPU, {gb} GB) ${:.2}",
                node.machine_type, price.usd_per_hour
            );
        }
        for (label, count) in &node.attached_gpus {
            let Some((row, fell_back)) = self.find("gpu", label, region) else {
                return Err(format!("no price for `{label}` GPUs in `{region}`"));
            };
            add(row, fell_back, f64::from(*count), &mut price);
            price
                .detail
                .push_str(&format!(" + {count} x `{label}` ${:.2}", row.usd_per_hour));
        }
        Ok(price)
    }
}

/// What a node is, for its price.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node<'a> {
    /// Machine type.
    pub machine_type: &'a str,
    /// TPU family (`v4`, `v5e` …) and chips per node, for TPU machines.
    pub tpu: Option<(&'a str, u32)>,
    /// Spot VMs (priced as such for TPU machines only; other machines at on-demand rates).
    pub spot: bool,
    /// GPUs attached with `guestAccelerator` (label, count per node); GPUs built into the
    /// machine type are in the machine's price.
    pub attached_gpus: Vec<(&'a str, u32)>,
}

/// The hourly price of one node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct NodePrice {
    /// USD per hour.
    pub usd_per_hour: f64,
    /// How it is made up, for people.
    pub detail: String,
    /// Sources used.
    pub sources: BTreeSet<&'static str>,
    /// Whether a figure came from [`FALLBACK_REGION`] because the region has no row.
    pub fell_back: bool,
}

/// vCPUs and memory (GB) of predefined N1, N2 and E2 machine types, from their names: GB per
/// vCPU is 3.75 / 6.5 / 0.9 for N1 standard / highmem / highcpu and 4 / 8 / 1 for N2 and E2
/// (<https://cloud.google.com/compute/docs/general-purpose-machines>).
#[must_use]
pub fn machine_shape(machine_type: &str) -> Option<(&'static str, f64, f64)> {
    let mut parts = machine_type.split('-');
    let (family, class, vcpus) = (parts.next()?, parts.next()?, parts.next()?);
    if parts.next().is_some() {
        return None;
    }
    let vcpus: u32 = vcpus.parse().ok().filter(|n| *n > 0)?;
    let (family, per_vcpu) = match (family, class) {
        ("n1", "standard") => ("n1", 3.75),
        ("n1", "highmem") => ("n1", 6.5),
        ("n1", "highcpu") => ("n1", 0.9),
        ("n2", "standard") => ("n2", 4.0),
        ("n2", "highmem") => ("n2", 8.0),
        ("n2", "highcpu") => ("n2", 1.0),
        ("e2", "standard") => ("e2", 4.0),
        ("e2", "highmem") => ("e2", 8.0),
        ("e2", "highcpu") => ("e2", 1.0),
        _ => return None,
    };
    let vcpus = f64::from(vcpus);
    Some((family, vcpus, vcpus * per_vcpu))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_table_parses_and_cites_its_sources() {
        let prices = Prices::parse(TABLE).unwrap();
        assert!(prices.rows.len() > 100);
        assert_eq!(prices.sources.len(), 4);
        assert!(prices.sources.iter().all(|s| s.url.starts_with("https://")));
        assert_eq!(prices.cluster_fee().map(|r| r.usd_per_hour), Some(0.10));
    }

    #[test]
    fn nodes_are_priced_from_their_parts() {
        let prices = &*PRICES;
        let tpu = Node {
            machine_type: "ct4p-hightpu-4t",
            tpu: Some(("v4", 4)),
            attached_gpus: Vec::new(),
            spot: false,
        };
        let price = prices.node(&tpu, "us-central2").unwrap();
        assert!((price.usd_per_hour - 12.88).abs() < 1e-9);
        assert!(!price.fell_back);
        assert!(
            prices.node(&tpu, "europe-west4").is_err(),
            "v4 is only priced in us-central2"
        );

        let t4 = Node {
            machine_type: "n1-standard-4",
            tpu: None,
            attached_gpus: vec![("nvidia-tesla-t4", 2)],
            spot: false,
        };
        let price = prices.node(&t4, "us-central1").unwrap();
        assert!((price.usd_per_hour - (0.189999 + 0.70)).abs() < 1e-9);

        // No row for the machine: vCPU and memory rates; no row for the region: us-central1.
        let derived = Node {
            machine_type: "n1-standard-32",
            tpu: None,
            attached_gpus: Vec::new(),
            spot: false,
        };
        let price = prices.node(&derived, "us-central2").unwrap();
        assert!(
            (price.usd_per_hour - 8.0 * 0.189999).abs() < 1e-6,
            "{price:?}"
        );
        assert!(price.fell_back);
        let unknown = Node {
            machine_type: "m3-megamem-64",
            tpu: None,
            attached_gpus: Vec::new(),
            spot: false,
        };
        assert!(prices.node(&unknown, "us-central1").is_err());
    }

    #[test]
    fn spot_tpu_chips_have_their_own_price_or_none() {
        let spot = Node {
            machine_type: "ct4p-hightpu-4t",
            tpu: Some(("v4", 4)),
            attached_gpus: Vec::new(),
            spot: true,
        };
        let price = PRICES.node(&spot, "us-central2").unwrap();
        assert!(
            (price.usd_per_hour - 4.0 * 0.9215).abs() < 1e-9,
            "{price:?}"
        );
        // No spot row for the region: unpriced, not priced at another region's rate.
        let v6e = Node {
            machine_type: "ct6e-standard-4t",
            tpu: Some(("v6e", 4)),
            attached_gpus: Vec::new(),
            spot: true,
        };
        assert!(PRICES.node(&v6e, "asia-northeast1").is_err());
        assert!(PRICES.node(&v6e, "us-east5").is_ok());
    }

    #[test]
    fn machine_shapes_agree_with_priced_machines() {
        // The derivation must give the listed price where both exist (within rounding).
        let prices = &*PRICES;
        for machine in [
            "n1-standard-4",
            "n1-standard-16",
            "e2-standard-8",
            "n2-highmem-32",
        ] {
            let (family, vcpus, gb) = machine_shape(machine).unwrap();
            let rate = |kind| {
                prices
                    .exact(kind, family, "us-central1")
                    .unwrap()
                    .usd_per_hour
            };
            let derived = vcpus * rate("vcpu") + gb * rate("memory-gb");
            let listed = prices
                .exact("machine", machine, "us-central1")
                .unwrap()
                .usd_per_hour;
            assert!(
                (derived - listed).abs() / listed < 0.001,
                "{machine}: {derived} vs {listed}"
            );
        }
    }
}

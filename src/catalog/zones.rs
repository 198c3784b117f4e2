//! Which zones offer which TPU and GPU types, as data: `data/accelerator-zones.tsv`, embedded at
//! build time, each row with its source and date (the file's header says how to read it).
//!
//! The table answers in three ways: a zone offers a type, does not, or is unknown. Only zones
//! the sources list completely (`covers` rows: a prefix ending in `-`, or one zone) can be known
//! not to offer a type, and only a type the table has rows for; anything else is unknown, and
//! nothing is judged on an unknown zone.

use std::sync::LazyLock;

/// The embedded table.
const TABLE: &str = include_str!("../../data/accelerator-zones.tsv");

/// The rows, read once.
struct Zones {
    /// `(kind, zone or prefix)`: what the sources list completely for a kind (`tpu`, `gpu`).
    covers: Vec<(&'static str, &'static str)>,
    /// `(accelerator label, zone)`, in file order.
    offers: Vec<(&'static str, &'static str)>,
}

static ZONES: LazyLock<Zones> = LazyLock::new(|| parse(TABLE));

/// Reads the table; lines that are not `covers` or `tpu`/`gpu` rows (comments, sources) are
/// skipped, and the unit tests require every line to be one of the known forms.
fn parse(text: &'static str) -> Zones {
    let mut zones = Zones {
        covers: Vec::new(),
        offers: Vec::new(),
    };
    for line in text.lines() {
        let fields: Vec<&str> = line.split('\t').collect();
        match fields.as_slice() {
            ["covers", kind, prefix, _source, _as_of] => zones.covers.push((kind, prefix)),
            ["tpu" | "gpu", label, zone, _source, _as_of] => zones.offers.push((label, zone)),
            _ => {}
        }
    }
    zones
}

/// `tpu` for a TPU accelerator label, `gpu` for a GPU one.
fn kind_of(accelerator: &str) -> Option<&'static str> {
    if super::TpuFamily::from_accelerator(accelerator).is_some() {
        Some("tpu")
    } else if super::gpu(accelerator).is_some() {
        Some("gpu")
    } else {
        None
    }
}

/// The zones that offer `accelerator` (a `cloud.google.com/gke-tpu-accelerator` or
/// `cloud.google.com/gke-accelerator` value), in the order defaults prefer them.
#[must_use]
pub fn zones_offering(accelerator: &str) -> Vec<&'static str> {
    ZONES
        .offers
        .iter()
        .filter(|(label, _)| *label == accelerator)
        .map(|(_, zone)| *zone)
        .collect()
}

/// Whether a `covers` value takes in `zone`: a prefix ending in `-` takes every zone that starts
/// with it, anything else one zone exactly (so `us-central1-a` does not take the AI zone
/// `us-central1-ai1a`).
fn covers(zone_or_prefix: &str, zone: &str) -> bool {
    if zone_or_prefix.ends_with('-') {
        zone.starts_with(zone_or_prefix)
    } else {
        zone == zone_or_prefix
    }
}

/// Whether `zone` offers `accelerator`: `Some(true)` or `Some(false)` when the table knows,
/// `None` when the zone is outside what its sources list completely or the table has no row
/// for the type at all (a type it has not been told about is not known to be missing).
#[must_use]
pub fn offered_in(accelerator: &str, zone: &str) -> Option<bool> {
    let mut rows = ZONES
        .offers
        .iter()
        .filter(|(label, _)| *label == accelerator)
        .peekable();
    rows.peek()?;
    if rows.any(|(_, offering)| *offering == zone) {
        return Some(true);
    }
    let kind = kind_of(accelerator)?;
    ZONES
        .covers
        .iter()
        .any(|(covered, zone_or_prefix)| *covered == kind && covers(zone_or_prefix, zone))
        .then_some(false)
}

/// The zone a kind should put `accelerator` in when the blueprint names none: `preferred` when
/// it offers the type or the table cannot tell, else the first zone that offers it.
#[must_use]
pub fn default_zone<'a>(accelerator: &str, preferred: &'a str) -> &'a str {
    let offering = zones_offering(accelerator);
    match offering.first() {
        Some(zone) if offered_in(accelerator, preferred) == Some(false) => zone,
        _ => preferred,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::TpuFamily;

    #[test]
    fn every_line_is_a_comment_a_source_or_a_row_with_its_source() {
        let sources = crate::catalog::source_ids(TABLE);
        assert!(!sources.is_empty());
        for line in TABLE.lines().filter(|line| !line.starts_with('#')) {
            let fields: Vec<&str> = line.split('\t').collect();
            match fields.as_slice() {
                ["source", _id, _what, url, as_of] => {
                    assert!(url.starts_with("https://"), "{line}");
                    assert_eq!(as_of.len(), 10, "{line}");
                }
                ["covers", "tpu" | "gpu", _, source, _] | ["tpu" | "gpu", _, _, source, _] => {
                    assert!(sources.contains(source), "unknown source: {line}");
                }
                _ => panic!("not a row: {line:?}"),
            }
        }
        for (label, zone) in &ZONES.offers {
            assert!(kind_of(label).is_some(), "unknown accelerator {label}");
            // `<region>-<zone>`, the region ending in its number (`us-central1`).
            let region = zone.rsplit_once('-').map(|(region, _)| region);
            assert!(
                region.is_some_and(|region| region.ends_with(|c: char| c.is_ascii_digit())),
                "not a zone: {zone}"
            );
        }
    }

    #[test]
    fn answers_for_gpus_too_and_only_in_the_zones_it_covers() {
        assert_eq!(offered_in("nvidia-tesla-t4", "us-central1-a"), Some(true));
        assert_eq!(offered_in("nvidia-tesla-t4", "us-east5-a"), Some(false));
        assert_eq!(offered_in("nvidia-l4", "europe-west4-a"), Some(true));
        assert_eq!(
            offered_in("nvidia-h100-80gb", "asia-northeast1-a"),
            Some(false)
        );
        // A region the table does not cover, and an AI zone next to a covered zone.
        assert_eq!(offered_in("nvidia-tesla-t4", "europe-west2-a"), None);
        assert_eq!(offered_in("nvidia-h100-80gb", "us-central1-ai1a"), None);
        // A type without rows is unknown everywhere, even in covered zones.
        assert_eq!(offered_in("nvidia-gb200", "us-central1-a"), None);
        assert_eq!(offered_in("nvidia-unknown", "us-central1-a"), None);
    }

    #[test]
    fn every_covered_gpu_zone_is_a_zone_and_every_gpu_row_is_covered() {
        let covered: Vec<&str> = ZONES
            .covers
            .iter()
            .filter(|(kind, _)| *kind == "gpu")
            .map(|(_, zone)| *zone)
            .collect();
        assert!(!covered.is_empty());
        for (label, zone) in ZONES
            .offers
            .iter()
            .filter(|(l, _)| kind_of(l) == Some("gpu"))
        {
            assert!(
                covered.contains(zone),
                "{label} in {zone}, a zone no covers row names"
            );
        }
        for zone in covered {
            assert!(!zone.ends_with('-'), "GPU covers rows name zones: {zone}");
        }
    }

    #[test]
    fn every_tpu_family_is_offered_somewhere() {
        for family in TpuFamily::ALL {
            assert!(!zones_offering(family.accelerator()).is_empty(), "{family}");
        }
    }

    #[test]
    fn answers_offered_not_offered_or_unknown() {
        assert_eq!(offered_in("tpu-v4-podslice", "us-central2-b"), Some(true));
        assert_eq!(offered_in("tpu-v5p-slice", "us-central2-b"), Some(false));
        assert_eq!(offered_in("tpu-v5p-slice", "europe-west4-b"), None);
        // Europe: a zone the page lists offers the type; the others stay unknown, as the
        // table covers only the `us-` zones for TPUs.
        assert_eq!(offered_in("tpu-v6e-slice", "europe-west4-a"), Some(true));
        assert_eq!(offered_in("tpu-v6e-slice", "europe-west4-b"), None);
        assert_eq!(default_zone("tpu-v5p-slice", "us-central2-b"), "us-east5-a");
        assert_eq!(
            default_zone("tpu-v4-podslice", "us-central2-b"),
            "us-central2-b"
        );
        assert_eq!(
            default_zone("tpu-v5p-slice", "asia-east1-a"),
            "asia-east1-a"
        );
    }
}

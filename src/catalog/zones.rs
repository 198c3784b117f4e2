//! Which zones offer which TPU types, as data: `data/accelerator-zones.tsv`, embedded at build
//! time, each row with its source and date (the file's header says how to read it).
//!
//! The table answers in three ways: a zone offers a type, does not, or is unknown. Only zones
//! under a prefix the sources list completely (`covers` rows) can be known not to offer a
//! type; anything else is unknown, and nothing is judged on an unknown zone.

use std::sync::LazyLock;

/// The embedded table.
const TABLE: &str = include_str!("../../data/accelerator-zones.tsv");

/// The rows, read once.
struct Zones {
    /// `(kind, prefix)`: zone prefixes the sources list completely for a kind (`tpu`, `gpu`).
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

/// Whether `zone` offers `accelerator`: `Some(true)` or `Some(false)` when the table knows,
/// `None` when the zone is outside what its sources list completely.
#[must_use]
pub fn offered_in(accelerator: &str, zone: &str) -> Option<bool> {
    let listed = ZONES
        .offers
        .iter()
        .any(|(label, offering)| *label == accelerator && *offering == zone);
    if listed {
        return Some(true);
    }
    let kind = kind_of(accelerator)?;
    ZONES
        .covers
        .iter()
        .any(|(covered, prefix)| *covered == kind && zone.starts_with(prefix))
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
        assert_eq!(offered_in("nvidia-tesla-t4", "us-central1-a"), None);
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

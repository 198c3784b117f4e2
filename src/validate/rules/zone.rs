//! Accelerators where they are offered: a TPU or GPU node pool in a zone that does not offer its
//! accelerator type never gets a node, and pods that select such a zone never schedule. Which
//! zone offers what is the catalog's table (`data/accelerator-zones.tsv`, with its sources and
//! date); a zone the table does not know is never a finding.
//!
//! Owns `accelerator-zone`.

use crate::catalog::{self, GPU_ACCELERATOR_LABEL, TPU_ACCELERATOR_LABEL};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::nodepool::NodePool;
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, code_list};

/// Node label with the zone of a node (and its pre-1.17 name).
const ZONE_LABELS: [&str; 2] = [
    "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/zone",
];

/// Runs `accelerator-zone` over node pools and over pods that select a zone.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    for pool in pools {
        let Some(accelerator) = pool
            .label(TPU_ACCELERATOR_LABEL)
            .or_else(|| pool.label(GPU_ACCELERATOR_LABEL))
        else {
            continue;
        };
        for (zone, node, field) in &pool.zones {
            if catalog::offered_in(accelerator, zone) == Some(false) {
                let diagnostic = not_offered(accelerator, zone, "where the node pool puts its nodes")
                    .fix("put the node pool (and a zonal cluster) in a zone that offers the type, or choose a type this zone offers");
                out.push(
                    diagnostic
                        .at(pool.object.file, node.span)
                        .object(pool.object.id.clone())
                        .field(field.as_str())
                        .blueprint_field("spec.zone"),
                );
            }
        }
    }
    for group in groups {
        // The TPU or the GPU the pods select (`cloud.google.com/gke-tpu-accelerator` or
        // `cloud.google.com/gke-accelerator`).
        let accelerator = match (&group.tpu_target, group.gpu_target) {
            (Some(target), _) => target.family.accelerator(),
            (None, Some(gpu)) => gpu.label,
            (None, None) => continue,
        };
        for key in ZONE_LABELS {
            let Some(selection) = group.selection(key) else {
                continue;
            };
            // Pods that may land in any of several zones need only one that offers the type.
            let none_offer = !selection.values.is_empty()
                && selection
                    .values
                    .iter()
                    .all(|zone| catalog::offered_in(accelerator, zone) == Some(false));
            if none_offer {
                let zones: Vec<&str> = selection.values.iter().map(String::as_str).collect();
                let diagnostic = not_offered(
                    accelerator,
                    &zones.join(", "),
                    "the only zones the pods may run in",
                )
                .fix("select a zone that offers the type, or drop the zone selector");
                out.push(
                    group
                        .template
                        .finding(diagnostic, selection.node, &selection.field),
                );
            }
        }
    }
}

/// The most zones a message names as offering a type.
const ZONES_NAMED: usize = 5;

/// `accelerator` is not offered in `zone` (`context` says whose zone it is; `zone` may list
/// several, comma-separated).
fn not_offered(accelerator: &str, zone: &str, context: &str) -> Diagnostic {
    Diagnostic::error(
        rule::ACCELERATOR_ZONE,
        format!("`{accelerator}` is not offered in `{zone}`, {context}"),
    )
    .found(zone)
    .expected(format!(
        "a zone that offers `{accelerator}`, such as {}",
        code_list(&nearest_offering(accelerator, zone))
    ))
}

/// A few zones that offer `accelerator`: those of the same region as `zone` first (a move
/// within the region keeps the cluster), then the table's order. GPU types are offered in
/// dozens of zones; naming them all buries the useful ones.
fn nearest_offering(accelerator: &str, zone: &str) -> Vec<&'static str> {
    let region = zone.rsplit_once('-').map_or(zone, |(region, _)| region);
    let mut offering = catalog::zones_offering(accelerator);
    // A stable sort keeps the table's order within each group.
    offering.sort_by_key(|offered| !offered.starts_with(&format!("{region}-")));
    offering.truncate(ZONES_NAMED);
    offering
}

//! Accelerators where they are offered: a TPU node pool in a zone that does not offer its TPU
//! type never gets a node, and pods that select such a zone never schedule. Which zone offers
//! what is the catalog's table (`data/accelerator-zones.tsv`, with its sources and date); a zone
//! the table does not know is never a finding.
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
        let Some(target) = &group.tpu_target else {
            continue;
        };
        let accelerator = target.family.accelerator();
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

/// `accelerator` is not offered in `zone` (`context` says whose zone it is).
fn not_offered(accelerator: &str, zone: &str, context: &str) -> Diagnostic {
    let offering = catalog::zones_offering(accelerator);
    Diagnostic::error(
        rule::ACCELERATOR_ZONE,
        format!("`{accelerator}` is not offered in `{zone}`, {context}"),
    )
    .found(zone)
    .expected(format!(
        "a zone that offers `{accelerator}`, such as {}",
        code_list(&offering)
    ))
}

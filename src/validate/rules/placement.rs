//! Placement of multi-host TPU slices: the pods of one slice must land on the nodes of one
//! slice, and the pods of two slices must not share one. JobSets own
//! `jobset-exclusive-topology`; LeaderWorkerSet groups and sub-groups and Jobs own
//! `tpu-exclusive-placement`.
//!
//! A unit (a Job of a JobSet, a LeaderWorkerSet group or sub-group, a Job) is kept to a slice
//! of its own by any of: the exclusive-topology annotation of its level on a slice key
//! (`cloud.google.com/gke-nodepool`, or `cloud.google.com/gke-tpu-slice` and the slice ids of
//! dynamic slicing), a Kueue topology request on a slice key, GKE dynamic slicing through Kueue
//! (the slice-topology annotation on pods queued to Kueue), or, for an object with a single
//! unit, a node selector on one node pool or dynamic slice, or being the only unit a node pool
//! in the set can take. Without any, several units are an error (their pods can mix) and a
//! single one a warning (it can straddle two slices of the same shape).
//!
//! How units are formed is the model's ([`crate::validate::model::placement`]); pods per unit
//! are the TPU family's, and whether the node pools hold every unit `accelerator-no-node-pool`'s.

use crate::catalog::{NODE_POOL_LABEL, TPU_SLICE_LABEL};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::TpuTarget;
use crate::validate::model::fields::join;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::placement::{Level, Placement, placement};
use crate::validate::model::workload::Selection;
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, plural};
use crate::yaml::Node;

/// Runs the placement rules on every TPU pod template whose object groups pods into slices.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        let Some(target) = &group.tpu_target else {
            continue;
        };
        let Some(placement) = placement(group) else {
            continue;
        };
        let layouts = group.slice_layouts();
        let multi_host = layouts.iter().any(|slice| slice.is_multi_host());
        // Several single-host slices of a JobSet are multislice all the same.
        let multislice = placement.level == Level::JobSetJob && placement.units > 1;
        if layouts.is_empty() || !(multi_host || multislice) {
            continue;
        }
        if let Some(finding) = judge(group, target, &placement, pools) {
            out.push(finding);
        }
    }
}

/// The rule id for a placement finding at `level`.
fn rule_of(level: Level) -> &'static str {
    match level {
        Level::JobSetJob => rule::JOBSET_EXCLUSIVE_TOPOLOGY,
        Level::Group | Level::SubGroup | Level::Job => rule::TPU_EXCLUSIVE_PLACEMENT,
    }
}

/// The key a unit's pods should be kept to: the dynamic slice under dynamic slicing (a
/// super-slice spans several node pools), else the node pool (one multi-host slice each).
fn slice_key(target: &TpuTarget<'_>) -> &'static str {
    if target.dynamic {
        TPU_SLICE_LABEL
    } else {
        NODE_POOL_LABEL
    }
}

/// Whether a slice is larger than the topology its nodes carry, so that it spans several node
/// pools (GKE dynamic super-slicing).
fn spans_pools(target: &TpuTarget<'_>) -> bool {
    target.dynamic
        && target
            .node_topology
            .as_ref()
            .is_some_and(|nodes| nodes.chips() < target.topology.chips())
}

/// The finding for a pod group's placement, or `None` when its slices are kept apart.
fn judge(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    placement: &Placement<'_>,
    pools: &[NodePool<'_>],
) -> Option<Diagnostic> {
    let several = placement.units > 1;
    if placement.annotation_is_exclusive() {
        if placement.annotation_value() == Some(NODE_POOL_LABEL) && spans_pools(target) {
            return Some(super_slice_on_pool(group, target, placement));
        }
        return None;
    }
    let kueue_keeps_apart = placement
        .kueue
        .as_ref()
        .is_some_and(|kueue| kueue.per_slice || placement.units_per_pod_set <= 1);
    // Kueue's slice admission check forms a slice per pod set and pins the pods to it.
    if kueue_keeps_apart || (target.dynamic && placement.queued) {
        return None;
    }
    if let Some(pin) = &placement.pin {
        if pin.key == NODE_POOL_LABEL && spans_pools(target) {
            return Some(super_slice_on_pool(group, target, placement));
        }
        if !several {
            return None;
        }
        return Some(pinned_together(group, placement, pin));
    }
    if !several && !pools.is_empty() && group.matching_pools(pools).len() == 1 {
        return None;
    }
    Some(missing(group, target, placement))
}

/// What the annotation is called and where it goes, for messages.
struct Wanted {
    /// The annotation to set.
    key: &'static str,
    /// The objects or units that set it, for messages: "JobSets", "LeaderWorkerSets".
    what: &'static str,
    /// The unit that is one slice, plural: "groups", "sub-groups".
    units: &'static str,
}

fn wanted(level: Level) -> Option<Wanted> {
    use crate::validate::model::workload::{
        EXCLUSIVE_TOPOLOGY_ANNOTATION, LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION,
        LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION,
    };
    match level {
        Level::JobSetJob => Some(Wanted {
            key: EXCLUSIVE_TOPOLOGY_ANNOTATION,
            what: "JobSets",
            units: "Jobs",
        }),
        Level::Group => Some(Wanted {
            key: LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION,
            what: "LeaderWorkerSets",
            units: "groups",
        }),
        Level::SubGroup => Some(Wanted {
            key: LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION,
            what: "LeaderWorkerSet sub-groups",
            units: "sub-groups",
        }),
        Level::Job => None,
    }
}

/// No exclusive placement at all.
fn missing(group: &PodGroup<'_>, target: &TpuTarget<'_>, placement: &Placement<'_>) -> Diagnostic {
    let template = &group.template;
    let several = placement.units > 1;
    let key = slice_key(target);
    let rule = rule_of(placement.level);
    let Some(wanted) = wanted(placement.level) else {
        // A Job has no annotation of its own: pin it, or let a JobSet place it.
        let path = join(&template.path, "nodeSelector");
        let anchor = template.spec.get("nodeSelector").unwrap_or(template.spec);
        return template
            .finding(
                Diagnostic::warning(
                    rule,
                    "multi-host TPU Jobs should keep their pods to one slice",
                ),
                anchor,
                &join(&path, key),
            )
            .found("no node pool or slice selector")
            .expected(format!("one `{key}` value, or a JobSet with exclusive topology"))
            .fix(format!(
                "select one `{key}` in `nodeSelector` so that the pods cannot spread over two slices, or run the Job as a JobSet with `alpha.jobset.sigs.k8s.io/exclusive-topology: {key}`"
            ))
            .blueprint_field("spec.tpu.slices");
    };
    let object = template.object;
    let anchor = placement
        .annotation
        .or_else(|| object.node.at(&["metadata", "annotations"]))
        .or_else(|| object.node.get("metadata"))
        .unwrap_or(object.node);
    let (diagnostic, why) = if several {
        let message = match placement.level {
            Level::JobSetJob => format!("multislice JobSets need `{}: {key}`", wanted.key),
            _ => format!(
                "{} LeaderWorkerSet {}, each a multi-host TPU slice, need `{}: {key}`",
                placement.units, wanted.units, wanted.key
            ),
        };
        (
            Diagnostic::error(rule, message),
            "so that each slice gets a node pool of its own",
        )
    } else {
        (
            Diagnostic::warning(
                rule,
                format!(
                    "multi-host TPU {} should set `{}: {key}`",
                    wanted.what, wanted.key
                ),
            ),
            "so that the pods of a slice cannot spread over two node pools",
        )
    };
    let kind = if placement.level == Level::JobSetJob {
        "the JobSet"
    } else {
        "the LeaderWorkerSet"
    };
    template
        .finding(
            diagnostic,
            anchor,
            &join("metadata.annotations", wanted.key),
        )
        .found(
            placement
                .annotation_value()
                .map_or_else(|| "no annotation".to_string(), |value| format!("`{value}`")),
        )
        .expected(format!("`{key}`"))
        .fix(format!(
            "annotate {kind} with `{}: {key}` {why}",
            wanted.key
        ))
        .blueprint_field("spec.tpu.slices")
}

/// An error of the placement's rule about the pods of `group`, at `node` (`field`).
fn error(
    group: &PodGroup<'_>,
    placement: &Placement<'_>,
    message: String,
    node: &Node,
    field: &str,
) -> Diagnostic {
    let diagnostic = Diagnostic::error(rule_of(placement.level), message);
    group.template.finding(diagnostic, node, field)
}

/// Several slices pinned to one node pool or dynamic slice, which holds one of them.
fn pinned_together(
    group: &PodGroup<'_>,
    placement: &Placement<'_>,
    pin: &Selection<'_>,
) -> Diagnostic {
    let value = pin.value().unwrap_or_default();
    let fix = match wanted(placement.level) {
        Some(wanted) => format!(
            "drop the `{}` selector and set `{}: {}` so that each slice gets one of its own",
            pin.key, wanted.key, pin.key
        ),
        None => format!("give each slice its own `{}`", pin.key),
    };
    let message = format!(
        "all {} are pinned to `{}: {value}`, which holds one",
        plural(placement.units, "slice"),
        pin.key
    );
    error(group, placement, message, pin.node, &pin.field)
        .found(format!(
            "`{}: {value}` for {}",
            pin.key,
            plural(placement.units, "slice")
        ))
        .expected(format!("one `{}` per slice", pin.key))
        .fix(fix)
        .blueprint_field("spec.tpu.slices")
}

/// A super-slice kept to one node pool, though it is stitched from several.
fn super_slice_on_pool(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    placement: &Placement<'_>,
) -> Diagnostic {
    let nodes = target
        .node_topology
        .as_ref()
        .map_or_else(String::new, ToString::to_string);
    let (node, field) = match (&placement.pin, placement.annotation) {
        (Some(pin), None) => (pin.node, pin.field.clone()),
        (_, Some(annotation)) => (
            annotation,
            join(
                "metadata.annotations",
                wanted(placement.level).map_or(NODE_POOL_LABEL, |wanted| wanted.key),
            ),
        ),
        (None, None) => (target.selection.node, target.selection.field.clone()),
    };
    let message = format!(
        "a `{}` slice is stitched from several `{nodes}` node pools, but its pods are kept to one",
        target.topology
    );
    error(group, placement, message, node, &field)
        .found(format!("`{NODE_POOL_LABEL}`"))
        .expected(format!("`{TPU_SLICE_LABEL}`"))
        .fix(format!(
            "keep each slice's pods together on `{TPU_SLICE_LABEL}`, the dynamic slice GKE forms across node pools"
        ))
        .blueprint_field("spec.tpu.topology")
}

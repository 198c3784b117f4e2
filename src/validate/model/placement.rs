//! What keeps the pods of one multi-host TPU slice together, and the pods of different slices
//! apart: the unit of pods that is one slice (a Job of a JobSet, a LeaderWorkerSet group or
//! sub-group, a Job), how many units an object makes, and every way the object pins a unit to
//! one slice (an exclusive-topology annotation, a node selector on one node pool or dynamic
//! slice, a Kueue topology request).
//!
//! This module only reads; whether the placement is enough is for the placement rules. Ray
//! worker groups are not read here: KubeRay creates each replica's pods as one group and has no
//! exclusive-topology setting.

use crate::catalog::{NODE_POOL_LABEL, TPU_SLICE_LABEL};
use crate::validate::model::PodGroup;
use crate::validate::model::workload::{Controller, GroupRole, Selection, queue_label};
use crate::yaml::Node;

/// Kueue Topology Aware Scheduling: all pods of a pod set in one domain of this level.
pub(crate) const KUEUE_REQUIRED_TOPOLOGY: &str = "kueue.x-k8s.io/podset-required-topology";
/// Kueue Topology Aware Scheduling: each slice of `podset-slice-size` pods of a pod set in one
/// domain of this level.
pub(crate) const KUEUE_SLICE_REQUIRED_TOPOLOGY: &str =
    "kueue.x-k8s.io/podset-slice-required-topology";

/// Whether nodes with the same value of this label form at most one TPU slice: the node pool
/// (a multi-host pool is one slice), the dynamic slice (`cloud.google.com/gke-tpu-slice`), and
/// the slice and partition ids GKE puts on nodes for sub- and super-slicing
/// (`cloud.google.com/gke-tpu-slice-2x4-id`, `cloud.google.com/gke-tpu-partition-4x4x4-id`).
pub(crate) fn is_slice_key(key: &str) -> bool {
    let id_of = |prefix: &str| {
        key.strip_prefix(prefix)
            .and_then(|rest| rest.strip_suffix("-id"))
            .is_some_and(|shape| !shape.is_empty())
    };
    key == NODE_POOL_LABEL
        || key == TPU_SLICE_LABEL
        || id_of("cloud.google.com/gke-tpu-slice-")
        || id_of("cloud.google.com/gke-tpu-partition-")
}

/// The unit of pods that is one slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Level {
    /// One Job of a JobSet's replicated job.
    JobSetJob,
    /// One LeaderWorkerSet group.
    Group,
    /// One LeaderWorkerSet sub-group.
    SubGroup,
    /// A Job (or each Job a CronJob starts).
    Job,
}

/// A Kueue topology request on the pods, on a slice key.
#[derive(Clone, Copy, Debug)]
pub(crate) struct KueueTopology {
    /// `podset-slice-required-topology`: per slice of the pod set, not the whole pod set.
    pub per_slice: bool,
}

/// How a pod group's slices are formed and kept apart.
#[derive(Clone, Debug)]
pub(crate) struct Placement<'a> {
    /// The unit that is one slice.
    pub level: Level,
    /// Units the object makes at full size.
    pub units: i64,
    /// Units in one Kueue pod set (a JobSet's replicated job is one pod set; each
    /// LeaderWorkerSet group is a workload of its own).
    pub units_per_pod_set: i64,
    /// The annotation that gives each unit a topology domain of its own at this level
    /// (`alpha.jobset.sigs.k8s.io/exclusive-topology`, LeaderWorkerSet's `exclusive-topology` or
    /// `subgroup-exclusive-topology`), when written.
    pub annotation: Option<&'a Node>,
    /// A node selector that holds the pods to exactly one value of a slice key.
    pub pin: Option<Selection<'a>>,
    /// A Kueue topology request on a slice key.
    pub kueue: Option<KueueTopology>,
    /// Whether the object is queued to Kueue (`kueue.x-k8s.io/queue-name`).
    pub queued: bool,
}

impl Placement<'_> {
    /// The annotation's value, when it is text.
    pub(crate) fn annotation_value(&self) -> Option<&str> {
        self.annotation.and_then(Node::as_str)
    }

    /// Whether the annotation gives each unit a slice of its own.
    pub(crate) fn annotation_is_exclusive(&self) -> bool {
        self.annotation_value().is_some_and(is_slice_key)
    }
}

/// How the slices of a TPU pod group are placed; `None` for pods that are not grouped into
/// slices by their object (Pods, Deployments, StatefulSets, DaemonSets, Ray groups, the leader
/// template of a LeaderWorkerSet).
pub(crate) fn placement<'a>(group: &PodGroup<'a>) -> Option<Placement<'a>> {
    let template = &group.template;
    let (level, units, units_per_pod_set, annotation) = match &template.controller {
        Controller::JobSet {
            replicas,
            exclusive_topology,
            ..
        } => (
            Level::JobSetJob,
            replicas.value,
            replicas.value,
            *exclusive_topology,
        ),
        Controller::LeaderWorkerSet(lws) if lws.role == GroupRole::Worker => {
            let sub_groups = lws
                .tpu_pods_per_sub_group()
                .filter(|_| lws.slices_are_sub_groups());
            match sub_groups {
                Some(sub_groups) => {
                    let per_group = i64::try_from(sub_groups.len()).unwrap_or(1);
                    (
                        Level::SubGroup,
                        lws.replicas.value * per_group,
                        per_group,
                        lws.subgroup_exclusive_topology,
                    )
                }
                None => (Level::Group, lws.replicas.value, 1, lws.exclusive_topology),
            }
        }
        Controller::Job(_) => (Level::Job, 1, 1, None),
        _ => return None,
    };
    let pin = group
        .selections
        .iter()
        .find(|selection| is_slice_key(selection.key) && selection.value().is_some())
        .cloned();
    let kueue = [
        (KUEUE_SLICE_REQUIRED_TOPOLOGY, true),
        (KUEUE_REQUIRED_TOPOLOGY, false),
    ]
    .into_iter()
    .find_map(|(key, per_slice)| {
        let requirement = template.annotation(key)?;
        requirement
            .value()
            .is_some_and(is_slice_key)
            .then_some(KueueTopology { per_slice })
    });
    Some(Placement {
        level,
        units,
        units_per_pod_set,
        annotation,
        pin,
        kueue,
        queued: queue_label(template.object).is_some(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slice_keys_are_pools_slices_and_their_ids() {
        for key in [
            "cloud.google.com/gke-nodepool",
            "cloud.google.com/gke-tpu-slice",
            "cloud.google.com/gke-tpu-slice-2x4-id",
            "cloud.google.com/gke-tpu-partition-4x4x4-id",
        ] {
            assert!(is_slice_key(key), "{key}");
        }
        for key in [
            "cloud.google.com/gke-tpu-topology",
            "cloud.google.com/gke-tpu-slice-topology",
            "cloud.google.com/gke-tpu-partition--id",
            "kubernetes.io/hostname",
            "rack",
        ] {
            assert!(!is_slice_key(key), "{key}");
        }
    }
}

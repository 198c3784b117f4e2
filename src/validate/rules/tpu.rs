//! TPU rules on pods: the accelerator and topology a pod selects, the chips it requests, and
//! how many pods make up a slice. The JobSet settings multislice training depends on are the
//! `jobset` family's, and how slices are kept apart the `placement` family's.
//!
//! The selector findings (`tpu-accelerator-unknown`, `tpu-topology-syntax`,
//! `tpu-topology-shape`, `tpu-selector-missing`) are made here from the pod's selections and
//! its `cloud.google.com/gke-tpu-slice-topology` annotation (GKE dynamic slicing, where that
//! annotation gives the slice shape and the topology selector is optional); the slice they
//! resolve to, the [`TpuTarget`], is the model's, and the other rules work from it. Pods per
//! slice are counted per unit the object makes: a Job, a LeaderWorkerSet group (or sub-group,
//! with `subgroup-exclusive-topology`), a Ray worker group replica (`numOfHosts`).
//! The same defects in node pools and ResourceFlavors belong to those families, and matching
//! pods to node pools to `accelerator-no-node-pool`.

use std::collections::BTreeSet;

use crate::catalog::{
    COMPUTE_CLASS_LABEL, NODE_POOL_LABEL, TPU_ACCELERATOR_LABEL, TPU_RESOURCE, TPU_TOPOLOGY_LABEL,
    TpuFamily, TpuSlice,
};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::accelerator::{TpuTarget, read_topology, selected_tpu_family};
use crate::validate::model::fields::join;
use crate::validate::model::workload::{
    Controller, Count, GroupRole, LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION, LeaderWorkers,
    PodTemplate, Request, Selection,
};
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, bad_topology, plural, unknown_accelerator};
use crate::yaml::Node;

/// The selector rules: every `cloud.google.com/gke-tpu-accelerator` value names a TPU GKE has
/// (`tpu-accelerator-unknown`), every `cloud.google.com/gke-tpu-topology` value and the
/// `cloud.google.com/gke-tpu-slice-topology` annotation are topologies (`tpu-topology-syntax`)
/// of the selected family (`tpu-topology-shape`), and pods that request `google.com/tpu` select
/// one accelerator and one topology, unless the annotation gives the slice shape
/// (`tpu-selector-missing`).
fn check_selectors(group: &PodGroup<'_>, out: &mut Vec<Diagnostic>) {
    let template = &group.template;
    let accelerator = group.selection(TPU_ACCELERATOR_LABEL);
    let topology = group.selection(TPU_TOPOLOGY_LABEL);

    for requirement in accelerator.iter() {
        for value in &requirement.values {
            if TpuFamily::from_accelerator(value).is_none() {
                out.push(template.finding(
                    unknown_accelerator(rule::TPU_ACCELERATOR_UNKNOWN, value),
                    requirement.node,
                    &requirement.field,
                ));
            }
        }
    }

    // Shapes are judged against the family only when the pod selects exactly one known one.
    let family = selected_tpu_family(&group.selections);
    for requirement in topology.into_iter().chain(group.slice_topology.as_ref()) {
        for value in &requirement.values {
            if let Err(problem) = read_topology(family, value) {
                out.push(template.finding(
                    bad_topology(
                        rule::TPU_TOPOLOGY_SYNTAX,
                        rule::TPU_TOPOLOGY_SHAPE,
                        family,
                        value,
                        &problem,
                    ),
                    requirement.node,
                    &requirement.field,
                ));
            }
        }
    }

    if let Some(request) = &group.tpu {
        // A compute class chooses the TPU of the nodes it makes: GKE adds both selectors to
        // the pods from the class's priority (checked against the class when it is in the set).
        let through_class = group.selection(COMPUTE_CLASS_LABEL).is_some();
        if !(through_class && accelerator.is_none()) {
            report_missing(
                template,
                request,
                accelerator,
                TPU_ACCELERATOR_LABEL,
                "spec.tpu.type",
                out,
            );
        }
        // Under dynamic slicing the annotation gives the shape; nodes carry their block's.
        if group.slice_topology.is_none() && !(through_class && topology.is_none()) {
            report_missing(
                template,
                request,
                topology,
                TPU_TOPOLOGY_LABEL,
                "spec.tpu.topology",
                out,
            );
        }
    }
}

/// Pods that get their TPU nodes from a compute class in the set request the chips of one node
/// of a TPU priority of that class (`tpu-chips-per-host`): GKE makes no node for any other
/// count.
fn check_class_chips(group: &PodGroup<'_>, request: &Request<'_>, out: &mut Vec<Diagnostic>) {
    let counts: BTreeSet<i64> = group.class_tpus.iter().map(|node| node.chips).collect();
    let Some(first) = group.class_tpus.first() else {
        return;
    };
    if counts.contains(&request.count) {
        return;
    }
    let nodes: Vec<String> = group
        .class_tpus
        .iter()
        .map(|node| {
            let accelerator = node.family.accelerator();
            format!("{} chips (`{accelerator}` `{}`)", node.chips, node.topology)
        })
        .collect();
    let message = format!(
        "pods request {} `{TPU_RESOURCE}` but compute class `{}` makes nodes of {}",
        request.count,
        first.class,
        nodes.join(", ")
    );
    let fix = format!(
        "request the chips of one node of the class: `{TPU_RESOURCE}: {}` in the container's limits",
        counts.first().copied().unwrap_or_default()
    );
    out.push(chips_finding(
        group,
        request,
        message,
        or_list(&counts),
        fix,
    ));
}

fn report_missing(
    template: &PodTemplate<'_>,
    request: &Request<'_>,
    requirement: Option<&Selection<'_>>,
    key: &str,
    blueprint_field: &str,
    out: &mut Vec<Diagnostic>,
) {
    let selector_field = join(&join(&template.path, "nodeSelector"), key);
    let diagnostic = match requirement {
        Some(requirement) if requirement.value().is_some() => return,
        Some(requirement) => template
            .finding(
                Diagnostic::error(
                    rule::TPU_SELECTOR_MISSING,
                    format!("TPU pods must select exactly one `{key}` value"),
                ),
                requirement.node,
                &requirement.field,
            )
            .found(format!("{} values", requirement.values.len()))
            .fix(format!(
                "keep one value: the pods of a slice must all land on nodes of one `{key}`"
            )),
        None => {
            // Point at the `nodeSelector` to extend when there is one, else at the request.
            let anchor = template.spec.get("nodeSelector").unwrap_or(request.node);
            template
                .finding(
                    Diagnostic::error(
                        rule::TPU_SELECTOR_MISSING,
                        format!("pods requesting `{TPU_RESOURCE}` do not select `{key}`"),
                    ),
                    anchor,
                    &selector_field,
                )
                .found("no selector")
                .fix(format!(
                    "add `{key}` to `nodeSelector`: without it the pod can land on TPU nodes of any slice"
                ))
        }
    };
    out.push(
        diagnostic
            .expected(format!("one `{key}` value"))
            .blueprint_field(blueprint_field),
    );
}

/// Runs the TPU rules on every pod template.
pub(crate) fn check(groups: &[PodGroup<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        check_selectors(group, out);
        if let (None, Some(request)) = (&group.tpu_target, &group.tpu) {
            check_class_chips(group, request, out);
        }
        let (Some(target), Some(request)) = (&group.tpu_target, &group.tpu) else {
            continue;
        };
        check_chips_per_host(group, target, request, out);
        let layouts = target.layouts_for(request.count);
        check_hosts_per_slice(group, target, &layouts, out);
    }
}

fn check_chips_per_host(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    request: &Request<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let chips: BTreeSet<i64> = target
        .layouts
        .iter()
        .map(|slice| i64::from(slice.chips_per_host()))
        .collect();
    if chips.contains(&request.count) {
        return;
    }
    let expected = or_list(&chips);
    let message = format!(
        "pods request {} `{TPU_RESOURCE}` but a {} VM has {expected} chips",
        request.count,
        target.describe()
    );
    let fix = format!(
        "request every chip of the VM: set `{TPU_RESOURCE}: {}` in the container's limits",
        chips.last().copied().unwrap_or_default()
    );
    out.push(chips_finding(group, request, message, expected, fix));
}

/// `4 or 8`.
fn or_list(counts: &BTreeSet<i64>) -> String {
    let texts: Vec<String> = counts.iter().map(ToString::to_string).collect();
    texts.join(" or ")
}

/// A `tpu-chips-per-host` finding at the pods' request.
fn chips_finding(
    group: &PodGroup<'_>,
    request: &Request<'_>,
    message: String,
    expected: String,
    fix: String,
) -> Diagnostic {
    group
        .template
        .finding(
            Diagnostic::error(rule::TPU_CHIPS_PER_HOST, message),
            request.node,
            &request.field,
        )
        .found(request.count.to_string())
        .expected(expected)
        .fix(fix)
        .blueprint_field("spec.tpu.type")
}

fn hosts_text(hosts: &BTreeSet<i64>) -> String {
    let texts: Vec<String> = hosts.iter().map(ToString::to_string).collect();
    texts.join(" or ")
}

fn check_hosts_per_slice(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    layouts: &[&TpuSlice],
    out: &mut Vec<Diagnostic>,
) {
    let template = &group.template;
    let hosts: BTreeSet<i64> = layouts
        .iter()
        .map(|slice| i64::from(slice.hosts()))
        .collect();
    let all_multi_host = layouts.iter().all(|slice| slice.is_multi_host());
    let expected = hosts_text(&hosts);
    let slice = target.describe();
    let finding = |message: String, node: &Node, field: &str| {
        template
            .finding(
                Diagnostic::error(rule::TPU_HOSTS_PER_SLICE, message),
                node,
                field,
            )
            .blueprint_field("spec.tpu.topology")
    };
    // A count the slice fixes (`name`, e.g. `replicas`) that is not what it should be.
    let wrong_count = |name: &str, count: &Count<'_>, should_be: String, fix: String| {
        let message = format!(
            "`{name}` is {} but a {slice} slice has {expected} hosts",
            count.value
        );
        finding(message, count.anchor, &count.field)
            .found(count.value.to_string())
            .expected(should_be)
            .fix(fix)
    };
    match &template.controller {
        // Pods of single-host slices are independent: a Job may run any number of them.
        Controller::Job(job) | Controller::JobSet { job, .. } if all_multi_host => {
            let (parallelism, completions) = (&job.parallelism, &job.completions);
            let fix = format!(
                "set `parallelism: {expected}` and `completions: {expected}`: one pod per VM of the slice"
            );
            if !hosts.contains(&parallelism.value) {
                out.push(wrong_count(
                    "parallelism",
                    parallelism,
                    expected.clone(),
                    fix,
                ));
            } else if completions.value != parallelism.value {
                let should_be = parallelism.value.to_string();
                out.push(wrong_count("completions", completions, should_be, fix));
            }
        }
        Controller::RayHead if all_multi_host => {
            let message = format!(
                "the Ray head is one pod and cannot run a multi-host {slice} slice of {expected} VMs"
            );
            out.push(
                finding(message, request_anchor(group), &request_field(group))
                    .found("TPU chips requested by the head group")
                    .expected(format!(
                        "a worker group with `numOfHosts: {expected}` for the slice"
                    ))
                    .fix(format!(
                        "request the chips in a worker group with `numOfHosts: {expected}`, and none in the head group"
                    )),
            );
        }
        Controller::RayWorkers { hosts: pods, .. } if !hosts.contains(&pods.value) => {
            out.push(wrong_count(
                "numOfHosts",
                pods,
                expected.clone(),
                format!(
                    "set `numOfHosts: {expected}`: each replica of the worker group is one slice, one Ray pod per VM"
                ),
            ));
        }
        Controller::Pod | Controller::ReplicaSet { .. } if all_multi_host => {
            let kind = template
                .object
                .node
                .get("kind")
                .unwrap_or(template.object.node);
            let message = format!(
                "a {} cannot run a multi-host {slice} slice: its {expected} pods must start as a group",
                template.kind()
            );
            out.push(
                finding(message, kind, "kind")
                    .found(format!("{} with independent pods", template.kind()))
                    .expected(format!(
                        "a LeaderWorkerSet or JobSet with {expected} pods per slice"
                    ))
                    .fix(format!(
                        "run the slice as a LeaderWorkerSet with `size: {expected}`, or as a JobSet"
                    )),
            );
        }
        Controller::StatefulSet { replicas }
            if all_multi_host && !hosts.contains(&replicas.value) =>
        {
            out.push(wrong_count(
                "replicas",
                replicas,
                expected.clone(),
                format!("set `replicas: {expected}`: one pod per VM of the slice"),
            ));
        }
        Controller::LeaderWorkerSet(lws) if lws.role == GroupRole::Worker => {
            if lws.slices_are_sub_groups()
                && let Some(counts) = lws.tpu_pods_per_sub_group()
            {
                check_sub_groups(lws, &counts, &hosts, &slice, &finding, out);
                return;
            }
            let tpu_pods = lws.tpu_pods_per_group();
            if !hosts.contains(&tpu_pods) {
                let leader_extra = i64::from(!lws.leader_on_slice);
                let sizes: BTreeSet<i64> = hosts.iter().map(|hosts| hosts + leader_extra).collect();
                let sizes = hosts_text(&sizes);
                let message = format!(
                    "a group runs {tpu_pods} TPU pods but a {slice} slice has {expected} hosts"
                );
                let mut fix = format!("set `size: {sizes}`: one TPU pod per VM of the slice");
                // A group of several slices' worth of pods: sub-groups make each one a slice.
                if let Some(&per) = hosts.iter().next_back()
                    && per > 1
                    && tpu_pods > per
                    && tpu_pods % per == 0
                {
                    fix.push_str(&format!(
                        ", or make each slice a sub-group: `subGroupPolicy: {{subGroupSize: {per}}}` with the annotation `{LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}`"
                    ));
                }
                out.push(
                    finding(message, lws.size.anchor, &lws.size.field)
                        .found(lws.size.value.to_string())
                        .expected(sizes.clone())
                        .fix(fix),
                );
            }
        }
        _ => {}
    }
}

/// The `google.com/tpu` request to point at, or the pod spec.
fn request_anchor<'a>(group: &PodGroup<'a>) -> &'a Node {
    group
        .tpu
        .as_ref()
        .map_or(group.template.spec, |request| request.node)
}

fn request_field(group: &PodGroup<'_>) -> String {
    group.tpu.as_ref().map_or_else(
        || group.template.path.clone(),
        |request| request.field.clone(),
    )
}

/// Pods per slice when each LeaderWorkerSet sub-group is a slice: every sub-group's TPU pods
/// must be one slice's hosts. Sub-group 0 differs from the others only through the leader: an
/// extra pod of it when `size - 1` is a multiple of `subGroupSize`, one of its pods otherwise.
fn check_sub_groups(
    lws: &LeaderWorkers<'_>,
    counts: &[i64],
    hosts: &BTreeSet<i64>,
    slice: &str,
    finding: &dyn Fn(String, &Node, &str) -> Diagnostic,
    out: &mut Vec<Diagnostic>,
) {
    let Some(sub_group) = &lws.sub_group else {
        return;
    };
    let per = sub_group.size.value;
    let expected = hosts_text(hosts);
    if !hosts.contains(&per) {
        let message = format!(
            "each sub-group is a slice, but `subGroupSize` is {per} and a {slice} slice has {expected} hosts"
        );
        out.push(
            finding(message, sub_group.size.anchor, &sub_group.size.field)
                .found(per.to_string())
                .expected(expected.clone())
                .fix(format!(
                    "set `subGroupSize: {expected}` and `size` to a multiple of it (one more when the leader requests no chips): one TPU pod per VM of each slice"
                )),
        );
        return;
    }
    let Some(&first) = counts.first().filter(|first| !hosts.contains(first)) else {
        return;
    };
    let size = lws.size.value;
    let (why, fix) = if lws.leader_on_slice {
        (
            "the leader requests chips and is an extra pod of it",
            format!(
                "set `size: {}` so that the leader is one of sub-group 0's pods",
                size - 1
            ),
        )
    } else {
        (
            "the leader requests no chips but takes one of its places",
            format!(
                "set `size: {}` so that the leader is an extra pod of sub-group 0",
                size + 1
            ),
        )
    };
    let message = format!(
        "sub-group 0 runs {} ({why}) but a {slice} slice has {expected} hosts",
        plural(first, "TPU pod")
    );
    out.push(
        finding(message, lws.size.anchor, &lws.size.field)
            .found(size.to_string())
            .expected(format!("{per} TPU pods in every sub-group"))
            .fix(fix),
    );
}

//! TPU rules on pods: the accelerator and topology a pod selects, the chips it requests, how
//! many pods make up a slice, and the JobSet settings multislice training depends on.
//!
//! A pod's selectors are resolved once ([`resolve`]) into a [`TpuTarget`]: the family, the
//! topology and the physical layouts (machine type × hosts) nodes with those labels can have.
//! The other TPU rules, the node pool match and Kueue quota all work from that target.

use std::collections::BTreeSet;

use crate::catalog::{
    self, NODE_POOL_LABEL, TPU_ACCELERATOR_LABEL, TPU_RESOURCE, TPU_TOPOLOGY_LABEL, Topology,
    TpuFamily, TpuSlice,
};
use crate::diagnostic::Diagnostic;
use crate::validate::model::workload::{
    self, Controller, Count, EXCLUSIVE_TOPOLOGY_ANNOTATION, GroupRole, PodGroup, PodTemplate,
    Request, Selection, join, selection,
};
use crate::validate::rule;
use crate::validate::rules::nodepool::NodePool;
use crate::validate::rules::shared::{bad_topology, unknown_accelerator};
use crate::yaml::Node;

/// The TPU slice a pod selects.
#[derive(Clone, Debug)]
pub(crate) struct TpuTarget<'a> {
    /// The family of `cloud.google.com/gke-tpu-accelerator`.
    pub family: TpuFamily,
    /// The topology of `cloud.google.com/gke-tpu-topology`.
    pub topology: Topology,
    /// The topology requirement, to point at.
    pub selection: Selection<'a>,
    /// Physical layouts nodes with these labels can have: usually one; v5e and v6e `2x4` can
    /// be one 8-chip VM or two 4-chip VMs, unless a node pool in the set settles it.
    pub layouts: Vec<TpuSlice>,
}

impl TpuTarget<'_> {
    /// The layouts whose VMs have `chips` chips; every layout when none has (the chip count is
    /// then reported by `tpu-chips-per-host`, and the other rules go on without it).
    fn layouts_for(&self, chips: i64) -> Vec<&TpuSlice> {
        let matching: Vec<&TpuSlice> = self
            .layouts
            .iter()
            .filter(|slice| i64::from(slice.chips_per_host()) == chips)
            .collect();
        if matching.is_empty() {
            self.layouts.iter().collect()
        } else {
            matching
        }
    }

    /// `` `tpu-v4-podslice` `2x2x4` `` for messages.
    pub(crate) fn describe(&self) -> String {
        format!("`{}` `{}`", self.family.accelerator(), self.topology)
    }
}

/// Checks a pod's TPU selectors and resolves them into a target. Reports unknown accelerators,
/// malformed or illegal topologies, and, for pods that request `google.com/tpu`, missing
/// selectors. `None` when the selectors do not name exactly one legal slice.
pub(crate) fn resolve<'a>(
    template: &PodTemplate<'a>,
    selections: &[Selection<'a>],
    request: Option<&Request<'a>>,
    pools: &[NodePool<'_>],
    out: &mut Vec<Diagnostic>,
) -> Option<TpuTarget<'a>> {
    let accelerator = selection(selections, TPU_ACCELERATOR_LABEL);
    let topology = selection(selections, TPU_TOPOLOGY_LABEL);

    let mut families = Vec::new();
    for requirement in accelerator.iter() {
        for value in &requirement.values {
            match TpuFamily::from_accelerator(value) {
                Some(family) => families.push(family),
                None => out.push(template.finding(
                    unknown_accelerator(rule::TPU_ACCELERATOR_UNKNOWN, value),
                    requirement.node,
                    &requirement.field,
                )),
            }
        }
    }
    let family = match families.as_slice() {
        [family] if accelerator.and_then(Selection::value).is_some() => Some(*family),
        _ => None,
    };

    let mut parsed = None;
    for requirement in topology.iter() {
        for value in &requirement.values {
            let problem = match value.parse::<Topology>() {
                Err(error) => Some((error, None)),
                Ok(topology) => match family.map(|family| family.check_topology(&topology)) {
                    Some(Err(error)) => Some((error, Some(topology))),
                    _ => {
                        parsed = Some(topology);
                        None
                    }
                },
            };
            if let Some((error, topology)) = problem {
                out.push(template.finding(
                    bad_topology(
                        rule::TPU_TOPOLOGY_SYNTAX,
                        rule::TPU_TOPOLOGY_SHAPE,
                        family,
                        value,
                        &error,
                        topology.as_ref(),
                    ),
                    requirement.node,
                    &requirement.field,
                ));
            }
        }
    }

    if let Some(request) = request {
        report_missing(
            template,
            request,
            accelerator,
            TPU_ACCELERATOR_LABEL,
            "spec.tpu.type",
            out,
        );
        report_missing(
            template,
            request,
            topology,
            TPU_TOPOLOGY_LABEL,
            "spec.tpu.topology",
            out,
        );
    }

    let (family, topology_value, topology) = (family?, parsed?, topology?);
    // Several legal values (`In [2x2, 2x4]`) name no one slice; that was reported above.
    topology.value()?;
    let mut layouts = catalog::tpu_slices_for_selector(family.accelerator(), &topology_value);
    let pool_machines: Vec<&str> = pools
        .iter()
        .filter_map(|pool| pool.tpu.as_ref())
        .filter(|tpu| {
            tpu.machine.family == family && tpu.topology.as_ref() == Some(&topology_value)
        })
        .map(|tpu| tpu.machine.name)
        .collect();
    let pinned: Vec<TpuSlice> = layouts
        .iter()
        .filter(|slice| pool_machines.contains(&slice.machine_type()))
        .cloned()
        .collect();
    if !pinned.is_empty() {
        layouts = pinned;
    }
    if layouts.is_empty() {
        return None;
    }
    Some(TpuTarget {
        family,
        topology: topology_value,
        selection: topology.clone(),
        layouts,
    })
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

/// Runs the per-pod TPU rules and the JobSet rules.
pub(crate) fn check(groups: &[PodGroup<'_>], out: &mut Vec<Diagnostic>) {
    for group in groups {
        let (Some(target), Some(request)) = (&group.tpu_target, &group.tpu) else {
            continue;
        };
        check_chips_per_host(group, target, request, out);
        let layouts = target.layouts_for(request.count);
        check_hosts_per_slice(group, target, &layouts, out);
        if let Controller::JobSet {
            replicas,
            job,
            exclusive_topology,
        } = &group.template.controller
        {
            // When the chips per pod matched no layout (reported above), the Job's
            // parallelism tells which layout the JobSet means.
            let by_parallelism: Vec<&TpuSlice> = layouts
                .iter()
                .copied()
                .filter(|slice| i64::from(slice.hosts()) == job.parallelism.value)
                .collect();
            let layouts = if by_parallelism.is_empty() {
                layouts
            } else {
                by_parallelism
            };
            let multi_host = layouts.iter().any(|slice| slice.is_multi_host());
            if !multi_host {
                check_multislice(group, target, replicas, out);
            }
            check_exclusive_topology(group, replicas.value, multi_host, *exclusive_topology, out);
        }
    }
}

/// GKE multislice joins slices over the data-center network, which it only sets up for
/// multi-host slice node pools.
fn check_multislice(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    replicas: &Count<'_>,
    out: &mut Vec<Diagnostic>,
) {
    if replicas.value <= 1 {
        return;
    }
    let message = format!(
        "multislice needs multi-host slices, but {} is a single-host slice",
        target.describe()
    );
    out.push(
        group
            .template
            .finding(
                Diagnostic::error(rule::JOBSET_MULTISLICE_SINGLE_HOST, message),
                replicas.anchor,
                &replicas.field,
            )
            .found(format!(
                "`replicas: {}` of a single-host slice",
                replicas.value
            ))
            .expected("`replicas: 1`, or a multi-host topology")
            .fix("use a topology with more than one VM per slice, or run one slice (`replicas: 1`)")
            .blueprint_field("spec.tpu.slices"),
    );
}

fn check_chips_per_host(
    group: &PodGroup<'_>,
    target: &TpuTarget<'_>,
    request: &Request<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let chips: BTreeSet<u32> = target
        .layouts
        .iter()
        .map(TpuSlice::chips_per_host)
        .collect();
    if chips.iter().any(|&chips| i64::from(chips) == request.count) {
        return;
    }
    let expected: Vec<String> = chips.iter().map(ToString::to_string).collect();
    let expected = expected.join(" or ");
    out.push(
        group
            .template
            .finding(
                Diagnostic::error(
                    rule::TPU_CHIPS_PER_HOST,
                    format!(
                        "pods request {} `{TPU_RESOURCE}` but a {} VM has {expected} chips",
                        request.count,
                        target.describe()
                    ),
                ),
                request.node,
                &request.field,
            )
            .found(request.count.to_string())
            .expected(expected.clone())
            .fix(format!(
                "request every chip of the VM: set `{TPU_RESOURCE}: {}` in the container's limits",
                chips.iter().next_back().copied().unwrap_or_default()
            ))
            .blueprint_field("spec.tpu.type"),
    );
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
    match &template.controller {
        Controller::Job(job) | Controller::JobSet { job, .. } => {
            let (parallelism, completions) = (&job.parallelism, &job.completions);
            let fix = format!(
                "set `parallelism: {expected}` and `completions: {expected}`: one pod per VM of the slice"
            );
            if !hosts.contains(&parallelism.value) {
                let message = format!(
                    "`parallelism` is {} but a {slice} slice has {expected} hosts",
                    parallelism.value
                );
                out.push(
                    finding(message, parallelism.anchor, &parallelism.field)
                        .found(parallelism.value.to_string())
                        .expected(expected.clone())
                        .fix(fix),
                );
            } else if completions.value != parallelism.value {
                let message = format!(
                    "`completions` is {} but a {slice} slice has {expected} hosts",
                    completions.value
                );
                out.push(
                    finding(message, completions.anchor, &completions.field)
                        .found(completions.value.to_string())
                        .expected(parallelism.value.to_string())
                        .fix(fix),
                );
            }
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
            let message = format!(
                "`replicas` is {} but a {slice} slice has {expected} hosts",
                replicas.value
            );
            out.push(
                finding(message, replicas.anchor, &replicas.field)
                    .found(replicas.value.to_string())
                    .expected(expected.clone())
                    .fix(format!(
                        "set `replicas: {expected}`: one pod per VM of the slice"
                    )),
            );
        }
        Controller::LeaderWorkerSet {
            size,
            role: GroupRole::Worker,
            leader,
            ..
        } => {
            // With a separate leader template, the leader is on the slice only when it
            // requests TPU chips itself; without one, every pod of the group is a worker.
            let leader_on_slice = leader.is_none_or(|leader| {
                let path = template.path.replace("workerTemplate", "leaderTemplate");
                workload::request(leader, &path, TPU_RESOURCE)
                    .is_some_and(|request| request.count > 0)
            });
            let tpu_pods = if leader_on_slice {
                size.value
            } else {
                size.value - 1
            };
            if !hosts.contains(&tpu_pods) {
                let sizes: BTreeSet<i64> = hosts
                    .iter()
                    .map(|hosts| hosts + i64::from(!leader_on_slice))
                    .collect();
                let sizes = hosts_text(&sizes);
                let message = format!(
                    "a group runs {tpu_pods} TPU pods but a {slice} slice has {expected} hosts"
                );
                out.push(
                    finding(message, size.anchor, &size.field)
                        .found(size.value.to_string())
                        .expected(sizes.clone())
                        .fix(format!(
                            "set `size: {sizes}`: one TPU pod per VM of the slice"
                        )),
                );
            }
        }
        _ => {}
    }
}

fn check_exclusive_topology(
    group: &PodGroup<'_>,
    replicas: i64,
    multi_host: bool,
    annotation: Option<&Node>,
    out: &mut Vec<Diagnostic>,
) {
    let multislice = replicas > 1;
    if !multislice && !multi_host {
        return;
    }
    let value = annotation.and_then(Node::as_str);
    if value == Some(NODE_POOL_LABEL) {
        return;
    }
    let object = group.template.object;
    let anchor = annotation
        .or_else(|| object.node.at(&["metadata", "annotations"]))
        .or_else(|| object.node.get("metadata"))
        .unwrap_or(object.node);
    let (diagnostic, why) = if multislice {
        (
            Diagnostic::error(
                rule::JOBSET_EXCLUSIVE_TOPOLOGY,
                format!(
                    "multislice JobSets need `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}`"
                ),
            ),
            "so that each slice gets a node pool of its own",
        )
    } else {
        (
            Diagnostic::warning(
                rule::JOBSET_EXCLUSIVE_TOPOLOGY,
                format!(
                    "multi-host TPU JobSets should set `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}`"
                ),
            ),
            "so that the pods of a slice cannot spread over two node pools",
        )
    };
    out.push(
        group
            .template
            .finding(
                diagnostic,
                anchor,
                &join("metadata.annotations", EXCLUSIVE_TOPOLOGY_ANNOTATION),
            )
            .found(value.map_or_else(|| "no annotation".to_string(), |value| format!("`{value}`")))
            .expected(format!("`{NODE_POOL_LABEL}`"))
            .fix(format!("annotate the JobSet with `{EXCLUSIVE_TOPOLOGY_ANNOTATION}: {NODE_POOL_LABEL}` {why}"))
            .blueprint_field("spec.tpu.slices"),
    );
}

//! Kueue: queue references, ResourceFlavor node labels, and whether a ClusterQueue can ever
//! admit the workloads queued to it (covered resources, accelerator quota).
//!
//! Reference checks only run when the set holds objects of the referenced kind, so that
//! validating a lone JobSet does not demand its LocalQueue.
//!
//! Owns the `kueue-*` rules, including bad TPU and GPU labels in a ResourceFlavor
//! (`kueue-flavor-labels`, with the shared builders). The same values in pods' selectors belong
//! to the TPU and GPU families.

use std::collections::BTreeSet;

use crate::catalog::{
    self, GPU_ACCELERATOR_LABEL, GPU_RESOURCE, TPU_ACCELERATOR_LABEL, TPU_RESOURCE,
    TPU_TOPOLOGY_LABEL, TpuFamily,
};
use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::accelerator::read_topology;
use crate::validate::model::fields::{join, scalar_text};
use crate::validate::model::workload::{QUEUE_NAME_LABEL, queue_label, requested_resources};
use crate::validate::model::{PodGroup, has_name};
use crate::validate::rule;
use crate::validate::rules::shared::{bad_topology, code_list, unknown_accelerator, unknown_gpu};
use crate::yaml::Node;

/// The Kueue kinds these rules read.
const KUEUE_KINDS: [&str; 3] = ["LocalQueue", "ClusterQueue", "ResourceFlavor"];

/// Whether `object` is the Kueue kind `kind`.
fn is_kueue(object: &Object<'_>, kind: &str) -> bool {
    object.group() == "kueue.x-k8s.io" && object.id.kind == kind
}

/// Whether these rules read `object`: a Kueue kind they know, or an object queued to Kueue.
pub(crate) fn reads(object: &Object<'_>) -> bool {
    KUEUE_KINDS.iter().any(|kind| is_kueue(object, kind)) || queue_label(object).is_some()
}

/// Namespaces match when equal, or when either is unset: a manifest without a namespace is
/// applied to whatever namespace the user's context selects.
fn same_namespace(a: Option<&str>, b: Option<&str>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// `` JobSet `tpu-training/train` `` for messages about a workload seen from its queue; for
/// an object with only `generateName`, `` Job with generateName `tpu-training/eval-` ``.
fn describe(workload: &Object<'_>) -> String {
    let id = &workload.id;
    let generated = if has_name(workload) {
        ""
    } else {
        " with generateName"
    };
    match &id.namespace {
        Some(namespace) => format!("{}{generated} `{namespace}/{}`", id.kind, id.name),
        None => format!("{}{generated} `{}`", id.kind, id.name),
    }
}

/// One `resourceGroups` entry of a ClusterQueue.
struct ResourceGroup<'a> {
    /// `coveredResources`.
    covered: Vec<&'a str>,
    /// The flavors and their quotas.
    flavors: Vec<FlavorQuota<'a>>,
}

/// One flavor of a resource group.
struct FlavorQuota<'a> {
    /// Flavor name.
    name: &'a str,
    /// The `name` node.
    name_node: &'a Node,
    /// Dotted path of the flavor entry.
    path: String,
    /// `resources`: name, `nominalQuota` node, and its path.
    quotas: Vec<(&'a str, &'a Node, String)>,
}

fn resource_groups<'a>(cluster_queue: &'a Object<'a>) -> Vec<ResourceGroup<'a>> {
    let groups = cluster_queue
        .node
        .at(&["spec", "resourceGroups"])
        .and_then(Node::as_seq);
    let mut result = Vec::new();
    for (group_index, group) in groups.unwrap_or(&[]).iter().enumerate() {
        let covered = group.items("coveredResources");
        let flavors = group.items("flavors");
        let flavors = flavors
            .iter()
            .enumerate()
            .filter_map(|(flavor_index, flavor)| {
                let name_node = flavor.get("name")?;
                let path = format!("spec.resourceGroups[{group_index}].flavors[{flavor_index}]");
                let resources = flavor.items("resources");
                let quotas = resources
                    .iter()
                    .enumerate()
                    .filter_map(|(index, resource)| {
                        let name = resource.get("name")?.as_str()?;
                        let quota = resource.get("nominalQuota")?;
                        Some((
                            name,
                            quota,
                            format!("{path}.resources[{index}].nominalQuota"),
                        ))
                    })
                    .collect();
                Some(FlavorQuota {
                    name: name_node.as_str()?,
                    name_node,
                    path,
                    quotas,
                })
            })
            .collect();
        result.push(ResourceGroup {
            covered: covered.iter().filter_map(Node::as_str).collect(),
            flavors,
        });
    }
    result
}

/// Runs the Kueue rules.
pub(crate) fn check<'a>(
    objects: &'a [Object<'a>],
    groups: &[PodGroup<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let of_kind = |kind: &str| -> Vec<&'a Object<'a>> {
        objects
            .iter()
            .filter(|object| is_kueue(object, kind))
            .collect()
    };
    let all_local_queues = of_kind("LocalQueue");
    let all_cluster_queues = of_kind("ClusterQueue");
    let all_flavors = of_kind("ResourceFlavor");
    for flavor in &all_flavors {
        check_flavor_labels(flavor, out);
    }
    // Only named objects can be referred to: one with just `generateName` gets its name from
    // the API server, and a reference that matches no named object may mean it.
    let named = |all: &[&'a Object<'a>]| -> Vec<&'a Object<'a>> {
        all.iter()
            .copied()
            .filter(|object| has_name(object))
            .collect()
    };
    let (local_queues, cluster_queues, flavors) = (
        named(&all_local_queues),
        named(&all_cluster_queues),
        named(&all_flavors),
    );

    if !flavors.is_empty() && flavors.len() == all_flavors.len() {
        for cluster_queue in &all_cluster_queues {
            check_flavor_references(cluster_queue, &flavors, out);
        }
    }
    if !cluster_queues.is_empty() && cluster_queues.len() == all_cluster_queues.len() {
        for local_queue in &all_local_queues {
            check_cluster_queue_reference(local_queue, &cluster_queues, out);
        }
    }
    if local_queues.is_empty() {
        return;
    }
    for object in objects {
        let Some(label) = queue_label(object) else {
            continue;
        };
        let Some(queue_name) = label.as_str() else {
            continue;
        };
        let namespace = object.id.namespace.as_deref();
        let local_queue = local_queues.iter().find(|queue| {
            queue.id.name == queue_name && same_namespace(queue.id.namespace.as_deref(), namespace)
        });
        let Some(local_queue) = local_queue else {
            let unnamed_here = all_local_queues.iter().any(|queue| {
                !has_name(queue) && same_namespace(queue.id.namespace.as_deref(), namespace)
            });
            if !unnamed_here {
                report_missing_queue(object, label, queue_name, &local_queues, out);
            }
            continue;
        };
        let cluster_queue_name = local_queue
            .node
            .at(&["spec", "clusterQueue"])
            .and_then(Node::as_str);
        let cluster_queue = cluster_queues
            .iter()
            .find(|queue| Some(queue.id.name.as_str()) == cluster_queue_name);
        if let Some(cluster_queue) = cluster_queue {
            let workload: Vec<&PodGroup<'_>> = groups
                .iter()
                .filter(|group| std::ptr::eq(group.template.object, object))
                .collect();
            check_admission(object, &workload, cluster_queue, &flavors, out);
        }
    }
}

fn report_missing_queue(
    object: &Object<'_>,
    label: &Node,
    queue_name: &str,
    local_queues: &[&Object<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let namespace = object.id.namespace.as_deref();
    let candidates: Vec<&str> = local_queues
        .iter()
        .filter(|queue| same_namespace(queue.id.namespace.as_deref(), namespace))
        .map(|queue| queue.id.name.as_str())
        .collect();
    let in_namespace = namespace.map_or_else(String::new, |namespace| {
        format!(" in namespace `{namespace}`")
    });
    let mut diagnostic = Diagnostic::error(
        rule::KUEUE_QUEUE_MISSING,
        format!("no LocalQueue `{queue_name}`{in_namespace} for this workload"),
    )
    .at(object.file, label.span)
    .object(object.id.clone())
    .field(join("metadata.labels", QUEUE_NAME_LABEL))
    .found(queue_name)
    .expected(if candidates.is_empty() {
        format!("a LocalQueue{in_namespace}")
    } else {
        format!("one of {}", code_list(&candidates))
    });
    // With one candidate, the label is the likelier mistake even when the names differ.
    let suggestion =
        catalog::closest(queue_name, candidates.iter().copied()).or(match candidates.as_slice() {
            [only] => Some(*only),
            _ => None,
        });
    diagnostic = match suggestion {
        Some(suggestion) => diagnostic.fix(format!(
            "set `{QUEUE_NAME_LABEL}: {suggestion}`, or add a LocalQueue `{queue_name}`{in_namespace}"
        )),
        None => diagnostic.fix(format!("add a LocalQueue `{queue_name}`{in_namespace}")),
    };
    out.push(diagnostic);
}

fn check_cluster_queue_reference(
    local_queue: &Object<'_>,
    cluster_queues: &[&Object<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let Some(reference) = local_queue.node.at(&["spec", "clusterQueue"]) else {
        return;
    };
    let Some(name) = reference.as_str() else {
        return;
    };
    if cluster_queues.iter().any(|queue| queue.id.name == name) {
        return;
    }
    let names: Vec<&str> = cluster_queues
        .iter()
        .map(|queue| queue.id.name.as_str())
        .collect();
    let diagnostic = Diagnostic::error(
        rule::KUEUE_CLUSTERQUEUE_MISSING,
        format!("LocalQueue points at ClusterQueue `{name}`, which is not in the set"),
    )
    .at(local_queue.file, reference.span)
    .object(local_queue.id.clone())
    .field("spec.clusterQueue")
    .found(name)
    .expected(format!("one of {}", code_list(&names)));
    out.push(match catalog::closest(name, names.iter().copied()) {
        Some(closest) => diagnostic.fix(format!("did you mean `{closest}`?")),
        None => diagnostic.fix(format!(
            "add ClusterQueue `{name}`, or point at an existing one"
        )),
    });
}

fn check_flavor_references(
    cluster_queue: &Object<'_>,
    flavors: &[&Object<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let names: Vec<&str> = flavors
        .iter()
        .map(|flavor| flavor.id.name.as_str())
        .collect();
    for group in resource_groups(cluster_queue) {
        for flavor in group
            .flavors
            .iter()
            .filter(|flavor| !names.contains(&flavor.name))
        {
            let diagnostic = Diagnostic::error(
                rule::KUEUE_FLAVOR_MISSING,
                format!(
                    "ClusterQueue uses flavor `{}`, which is not a ResourceFlavor in the set",
                    flavor.name
                ),
            )
            .at(cluster_queue.file, flavor.name_node.span)
            .object(cluster_queue.id.clone())
            .field(format!("{}.name", flavor.path))
            .found(flavor.name)
            .expected(format!("one of {}", code_list(&names)));
            out.push(match catalog::closest(flavor.name, names.iter().copied()) {
                Some(closest) => diagnostic.fix(format!("did you mean `{closest}`?")),
                None => diagnostic.fix(format!("add ResourceFlavor `{}`", flavor.name)),
            });
        }
    }
}

fn check_flavor_labels(flavor: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let Some(labels) = flavor.node.at(&["spec", "nodeLabels"]) else {
        return;
    };
    let mut push = |diagnostic: Diagnostic, node: &Node, key: &str| {
        let field = join("spec.nodeLabels", key);
        out.push(
            diagnostic
                .at(flavor.file, node.span)
                .object(flavor.id.clone())
                .field(field),
        );
    };
    let accelerator = labels.get(TPU_ACCELERATOR_LABEL);
    let family = accelerator
        .and_then(Node::as_str)
        .and_then(TpuFamily::from_accelerator);
    if let (Some(node), None) = (accelerator, family) {
        let value = scalar_text(node).unwrap_or_default();
        push(
            unknown_accelerator(rule::KUEUE_FLAVOR_LABELS, &value),
            node,
            TPU_ACCELERATOR_LABEL,
        );
    }
    if let Some(node) = labels.get(TPU_TOPOLOGY_LABEL) {
        let value = scalar_text(node).unwrap_or_default();
        if let Err(problem) = read_topology(family, &value) {
            let rule = rule::KUEUE_FLAVOR_LABELS;
            let diagnostic = bad_topology(rule, rule, family, &value, &problem);
            push(diagnostic, node, TPU_TOPOLOGY_LABEL);
        }
    }
    if let Some(node) = labels.get(GPU_ACCELERATOR_LABEL) {
        let value = scalar_text(node).unwrap_or_default();
        if catalog::gpu(&value).is_none() {
            push(
                unknown_gpu(rule::KUEUE_FLAVOR_LABELS, &value),
                node,
                GPU_ACCELERATOR_LABEL,
            );
        }
    }
}

/// Whether Kueue can assign `flavor` to pods of `group`: its node labels must not contradict
/// what the pods select. A flavor missing from the set is assumed compatible.
fn flavor_fits(flavor: Option<&&Object<'_>>, group: &PodGroup<'_>) -> bool {
    let Some(labels) = flavor.and_then(|flavor| flavor.node.at(&["spec", "nodeLabels"])) else {
        return true;
    };
    labels.as_map().unwrap_or(&[]).iter().all(|(key, value)| {
        let value = scalar_text(value).unwrap_or_default();
        group
            .selection(&key.text)
            .is_none_or(|requirement| requirement.accepts(&value))
    })
}

fn check_admission(
    workload: &Object<'_>,
    groups: &[&PodGroup<'_>],
    cluster_queue: &Object<'_>,
    flavors: &[&Object<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let resource_groups = resource_groups(cluster_queue);
    let covered: BTreeSet<&str> = resource_groups
        .iter()
        .flat_map(|group| group.covered.iter().copied())
        .collect();
    let covered_node = cluster_queue
        .node
        .at(&["spec", "resourceGroups"])
        .and_then(Node::as_seq)
        .and_then(|groups| groups.first())
        .and_then(|group| group.get("coveredResources"))
        .or_else(|| cluster_queue.node.get("spec"))
        .unwrap_or(cluster_queue.node);
    let mut reported = BTreeSet::new();
    for group in groups {
        let requested = requested_resources(group.template.spec, &group.template.path);
        for (resource, _) in requested {
            if covered.contains(resource) || !reported.insert(resource) {
                continue;
            }
            let covered_list: Vec<&str> = covered.iter().copied().collect();
            out.push(
                Diagnostic::error(
                    rule::KUEUE_COVERED_RESOURCES,
                    format!(
                        "ClusterQueue does not cover `{resource}`, so Kueue never admits {}, whose pods request it",
                        describe(workload)
                    ),
                )
                .at(cluster_queue.file, covered_node.span)
                .object(cluster_queue.id.clone())
                .field("spec.resourceGroups[0].coveredResources")
                .found(code_list(&covered_list))
                .expected(format!("`{resource}` among the covered resources"))
                // Kueue's own Configuration (cluster-wide, not among the manifests) can drop or
                // transform a requested resource before quota is checked: `resources.
                // excludeResourcePrefixes` and `resources.transformations` (kueue
                // site/content/en/docs/tasks/manage/administer_cluster_quotas.md); the fix says
                // so, as the HAMi example of Kueue's site relies on a transformation.
                .fix(format!(
                    "add `{resource}` to `coveredResources`, with a `nominalQuota` in every flavor of that group; if Kueue's Configuration transforms or excludes `{resource}` (`resources.transformations`, `resources.excludeResourcePrefixes`), turn this rule off on the ClusterQueue with the annotation `aiml.dev/ignore: kueue-covered-resources`"
                )),
            );
        }
    }

    for resource in [TPU_RESOURCE, GPU_RESOURCE] {
        let Some(resource_group) = resource_groups
            .iter()
            .find(|group| group.covered.contains(&resource))
        else {
            continue;
        };
        for group in groups {
            let request = if resource == TPU_RESOURCE {
                &group.tpu
            } else {
                &group.gpu
            };
            let (Some(request), Some(pods)) = (request, group.template.pods()) else {
                continue;
            };
            let needed = pods * request.count;
            // Kueue gives all pods of one pod set the same flavor, so one flavor must hold them.
            let quotas: Vec<(&FlavorQuota<'_>, Option<i64>, &Node, &String)> = resource_group
                .flavors
                .iter()
                .filter(|flavor| {
                    let object = flavors.iter().find(|object| object.id.name == flavor.name);
                    flavor_fits(object, group)
                })
                .filter_map(|flavor| {
                    let (_, node, field) = flavor
                        .quotas
                        .iter()
                        .find(|(name, _, _)| *name == resource)?;
                    Some((flavor, node.as_count(), *node, field))
                })
                .collect();
            // A quota written as a quantity with a unit is not judged.
            if quotas.iter().any(|(_, quota, _, _)| quota.is_none()) {
                continue;
            }
            let best = quotas
                .into_iter()
                .filter_map(|(flavor, quota, node, field)| Some((flavor, quota?, node, field)))
                .max_by_key(|(_, quota, _, _)| *quota);
            let blueprint_field = if resource == TPU_RESOURCE {
                "spec.tpu.slices"
            } else {
                "spec.gpu.count"
            };
            let who = describe(workload);
            match best {
                Some((_, quota, _, _)) if quota >= needed => {}
                Some((flavor, quota, node, field)) => out.push(
                    Diagnostic::error(
                        rule::KUEUE_QUOTA,
                        format!(
                            "flavor `{}` has a `{resource}` quota of {quota} but {who} needs {needed}",
                            flavor.name
                        ),
                    )
                    .at(cluster_queue.file, node.span)
                    .object(cluster_queue.id.clone())
                    .field(field.clone())
                    .found(quota.to_string())
                    .expected(format!("at least {needed} ({pods} pods × {} each)", request.count))
                    .fix(format!("set `nominalQuota: {needed}`, or run fewer or smaller pods"))
                    .blueprint_field(blueprint_field),
                ),
                None => out.push(
                    Diagnostic::error(
                        rule::KUEUE_QUOTA,
                        format!("no flavor of the ClusterQueue has `{resource}` quota for the node selectors of {who}"),
                    )
                    .at(cluster_queue.file, covered_node.span)
                    .object(cluster_queue.id.clone())
                    .field("spec.resourceGroups")
                    .found("no matching flavor")
                    .expected(format!("a flavor whose node labels match the pods, with `{resource}` quota of at least {needed}"))
                    .fix("add a ResourceFlavor with the pods' accelerator and topology labels to the ClusterQueue")
                    .blueprint_field(blueprint_field),
                ),
            }
        }
    }
}

//! The accelerators of GKE `ComputeClass` priorities, judged as node pools' are: a TPU
//! priority names a TPU family, a topology of that family and the chips one VM of that slice
//! has (`tpu.count`: a v4 VM has 4, so `count: 8` makes no node); a GPU priority names a GPU
//! GKE has, and with a machine type, a count that machine carries (a `g2-standard-24` has 2 L4).
//! Owns `compute-class-accelerator`.
//!
//! Spot, flex-start and reservations are judged by the rules GKE's CRD states as CEL
//! (`x-kubernetes-validations` of `spec.priorities[]` and of `reservations`), which the schema
//! check does not evaluate: Spot and flex-start exclude each other, and specific reservations
//! go with `affinity: Specific` and only with it. Pods against the classes they select are the
//! `tpu` and `gpu` families'.

use crate::catalog::{self, TpuFamily};
use crate::diagnostic::Diagnostic;
use crate::validate::model::accelerator::read_topology;
use crate::validate::model::computeclass::{ComputeClass, Priority, chips_per_host};
use crate::validate::model::fields::join;
use crate::validate::rule;
use crate::validate::rules::shared::{
    Locate, bad_topology, gpu_machine_mismatch, unknown_accelerator, unknown_gpu,
};
use crate::yaml::{Node, Value};

const RULE: &str = rule::COMPUTE_CLASS_ACCELERATOR;

/// Runs the rule on every priority of every class.
pub(crate) fn check(classes: &[ComputeClass<'_>], out: &mut Vec<Diagnostic>) {
    for class in classes {
        for priority in &class.priorities {
            check_tpu(class, priority, out);
            check_gpu(class, priority, out);
            check_provisioning(class, priority, out);
        }
    }
}

fn check_tpu(class: &ComputeClass<'_>, priority: &Priority<'_>, out: &mut Vec<Diagnostic>) {
    let Some(tpu) = priority.tpu else { return };
    let path = join(&priority.path, "tpu");
    let Some(family) = known_type(
        class,
        tpu,
        &path,
        TpuFamily::from_accelerator,
        out,
        |value| unknown_accelerator(RULE, value),
    ) else {
        return;
    };
    let accelerator = family.accelerator();
    let Some((topology_node, written)) = text_at(tpu, "topology") else {
        return;
    };
    let topology = match read_topology(Some(family), written) {
        Ok(topology) => topology,
        Err(problem) => {
            let diagnostic = bad_topology(RULE, RULE, Some(family), written, &problem);
            out.push(
                class
                    .object
                    .finding(diagnostic, topology_node, &join(&path, "topology")),
            );
            return;
        }
    };
    let Some(count_node) = tpu.get("count") else {
        return;
    };
    let Some(count) = count_node.as_count() else {
        return;
    };
    let chips = chips_per_host(family, &topology);
    if chips.is_empty() || chips.contains(&count) {
        return;
    }
    let expected: Vec<String> = chips.iter().map(ToString::to_string).collect();
    let expected = expected.join(" or ");
    out.push(
        error(class, format!(
                        "`tpu.count` is the chips of one node, and a `{accelerator}` `{topology}` VM has {expected}, not {count}"
                    ), count_node, &join(&path, "count"))
            .found(count.to_string())
            .expected(expected.clone())
            .fix(format!(
                "set `count: {}`; a slice of more chips is more nodes, written as a larger `topology`",
                chips.last().copied().unwrap_or_default()
            )),
    );
}

/// A scalar string field of `parent` with its node.
fn text_at<'a>(parent: &'a Node, key: &str) -> Option<(&'a Node, &'a str)> {
    let node = parent.get(key)?;
    Some((node, node.as_str()?))
}

/// What the `type` of the `tpu` or `gpu` mapping at `path` names, looked up by `lookup`; when
/// it names nothing, the finding `unknown` makes goes to `out`.
fn known_type<T>(
    class: &ComputeClass<'_>,
    accelerator: &Node,
    path: &str,
    lookup: impl Fn(&str) -> Option<T>,
    out: &mut Vec<Diagnostic>,
    unknown: impl Fn(&str) -> Diagnostic,
) -> Option<T> {
    let (node, value) = text_at(accelerator, "type")?;
    let found = lookup(value);
    if found.is_none() {
        out.push(
            class
                .object
                .finding(unknown(value), node, &join(path, "type")),
        );
    }
    found
}

fn check_gpu(class: &ComputeClass<'_>, priority: &Priority<'_>, out: &mut Vec<Diagnostic>) {
    let Some(gpu_node) = priority.gpu else { return };
    let path = join(&priority.path, "gpu");
    let Some(gpu) = known_type(class, gpu_node, &path, catalog::gpu, out, |value| {
        unknown_gpu(RULE, value)
    }) else {
        return;
    };
    let Some(type_node) = gpu_node.get("type") else {
        return;
    };
    let Some(machine_type) = priority.machine_type.and_then(Node::as_str) else {
        return;
    };
    // Without a count the priority takes what the machine type carries: nothing to judge.
    let Some(count_node) = gpu_node.get("count") else {
        return;
    };
    let Some(count) = count_node.as_count() else {
        return;
    };
    let Some((diagnostic, count_at_fault)) =
        gpu_machine_mismatch(RULE, gpu, machine_type, count, true)
    else {
        return;
    };
    let (node, field) = if count_at_fault {
        (count_node, join(&path, "count"))
    } else {
        (type_node, join(&path, "type"))
    };
    out.push(class.object.finding(diagnostic, node, &field));
}

/// A finding of this rule at `node` (`field`) of `class`.
fn error(
    class: &ComputeClass<'_>,
    message: impl Into<String>,
    node: &Node,
    field: &str,
) -> Diagnostic {
    class
        .object
        .finding(Diagnostic::error(RULE, message), node, field)
}

fn is_true(node: Option<&Node>) -> bool {
    node.is_some_and(|node| node.value == Value::Bool(true))
}

/// The CRD's rules on how a priority's nodes are provisioned.
fn check_provisioning(
    class: &ComputeClass<'_>,
    priority: &Priority<'_>,
    out: &mut Vec<Diagnostic>,
) {
    let node = priority.node;
    let spot = node.get("spot");
    let flex_start = node.at(&["flexStart", "enabled"]);
    if let (true, true, Some(spot)) = (is_true(spot), is_true(flex_start), spot) {
        out.push(
            error(class, "a priority cannot ask for Spot VMs and flex-start together: GKE refuses the class (\"Flex Start provisioning model is incompatible with Spot\")", spot, &join(&priority.path, "spot"))
                .found("spot: true, flexStart.enabled: true")
                .expected("one provisioning model per priority")
                .fix("split them into two priorities, or drop one"),
        );
    }
    let Some(reservations) = node.get("reservations") else {
        return;
    };
    let affinity = reservations.get("affinity").and_then(Node::as_str);
    let specific = reservations
        .get("specific")
        .and_then(Node::as_seq)
        .unwrap_or(&[]);
    let field = join(&priority.path, "reservations");
    let problem = match (affinity, specific.is_empty()) {
        (Some("Specific"), true) => Some((
            "`affinity: Specific` names no reservation: GKE refuses the class (\"At least 1 specific reservation required for specific affinity\")",
            "reservations under `specific`",
            "list the reservations under `specific`, or use `affinity: AnyBestEffort`",
        )),
        (Some(other), false) if other != "Specific" => Some((
            "specific reservations need `affinity: Specific`: GKE refuses the class (\"Unable to set specific reservations for non specific affinity\")",
            "`affinity: Specific`",
            "set `affinity: Specific`, or remove `specific`",
        )),
        _ => None,
    };
    if let Some((message, expected, fix)) = problem {
        let anchor = reservations.get("affinity").unwrap_or(reservations);
        out.push(
            error(class, message, anchor, &join(&field, "affinity"))
                .found(format!(
                    "affinity: {}, {} specific reservations",
                    affinity.unwrap_or("none"),
                    specific.len()
                ))
                .expected(expected)
                .fix(fix),
        );
    }
}

//! Finding builders that several rule families share: the findings for an unknown TPU
//! accelerator, an unknown GPU and a rejected TPU topology (each with the likely intended value
//! as the fix), [`Locate`] to place a finding on a pod template's object, and the small text
//! helpers messages are written with, and whether a Service's load balancer is internal.
//!
//! Each builder returns a [`Diagnostic`] under the rule id it is given and without a position:
//! the family that calls it owns the finding and says where it is. This module holds no rule of
//! its own and imports no rule family; the families import it.

use crate::catalog::{self, Gpu, Topology, TopologyError, TpuFamily};
use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::accelerator::TopologyProblem;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::PodTemplate;
use crate::yaml::Node;

/// Places findings on the object a model was read from.
pub(crate) trait Locate {
    /// Fills in position (`node` in the object's file), object and field of a finding.
    fn finding(&self, diagnostic: Diagnostic, node: &Node, field: &str) -> Diagnostic;
}

impl Locate for PodTemplate<'_> {
    fn finding(&self, diagnostic: Diagnostic, node: &Node, field: &str) -> Diagnostic {
        diagnostic
            .at(self.object.file, node.span)
            .object(self.object.id.clone())
            .field(field)
    }
}

impl Locate for Object<'_> {
    fn finding(&self, diagnostic: Diagnostic, node: &Node, field: &str) -> Diagnostic {
        diagnostic
            .at(self.file, node.span)
            .object(self.id.clone())
            .field(field)
    }
}

/// Annotations that make GKE's load balancer internal (current and legacy spellings).
const INTERNAL_ANNOTATIONS: [&str; 2] = [
    "networking.gke.io/load-balancer-type",
    "cloud.google.com/load-balancer-type",
];

/// Whether a Service's annotations make GKE give its load balancer an internal address.
pub(crate) fn internal_load_balancer(service: &Node) -> bool {
    INTERNAL_ANNOTATIONS.iter().any(|key| {
        service
            .at(&["metadata", "annotations", key])
            .and_then(Node::as_str)
            .is_some_and(|value| value.eq_ignore_ascii_case("internal"))
    })
}

/// `` `a`, `b` or `c` `` for messages.
pub(crate) fn code_list(items: &[&str]) -> String {
    let quoted: Vec<String> = items.iter().map(|item| format!("`{item}`")).collect();
    match quoted.as_slice() {
        [] => "nothing".to_string(),
        [only] => only.clone(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// `1 slice`, `2 slices`.
pub(crate) fn plural(count: i64, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// Catalog errors may end like sentences; messages here do not.
pub(crate) fn strip_period(message: &str) -> String {
    message.trim_end_matches('.').to_string()
}

/// Legal topologies to suggest instead of `topology`: its own dimensions reordered when that
/// is legal (`1x2x2` → `2x2x1`), else shapes with the same number of chips.
fn suggestions(family: TpuFamily, topology: &Topology) -> Vec<Topology> {
    let legal = family.topologies();
    let mut sorted = topology.dims().to_vec();
    sorted.sort_unstable();
    let reordered: Vec<Topology> = legal
        .iter()
        .filter(|candidate| {
            let mut dims = candidate.dims().to_vec();
            dims.sort_unstable();
            dims == sorted
        })
        .cloned()
        .collect();
    if !reordered.is_empty() {
        return reordered;
    }
    legal
        .into_iter()
        .filter(|candidate| candidate.chips() == topology.chips())
        .collect()
}

/// `expected` text for a rejected topology.
fn expected_topology(family: TpuFamily, topology: Option<&Topology>) -> String {
    let suggested = topology
        .map(|topology| suggestions(family, topology))
        .unwrap_or_default();
    let names: Vec<String> = if suggested.is_empty() {
        family
            .topologies()
            .iter()
            .take(6)
            .map(ToString::to_string)
            .collect()
    } else {
        suggested.iter().map(ToString::to_string).collect()
    };
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    format!("a {family} topology such as {}", code_list(&names))
}

/// Every `cloud.google.com/gke-tpu-accelerator` value GKE uses.
fn accelerator_labels() -> Vec<&'static str> {
    TpuFamily::ALL
        .into_iter()
        .map(TpuFamily::accelerator)
        .collect()
}

/// The accelerator a misspelt value most likely means. The generation written in it wins
/// (`tpu-v5e-podslice` means v5e even though `tpu-v4-podslice` is closer as a string); without
/// one, the closest value by spelling.
fn suggest_accelerator(value: &str) -> Option<&'static str> {
    let mentioned: Vec<TpuFamily> = TpuFamily::ALL
        .into_iter()
        .filter(|family| {
            // `TPU v5e` → `v5e`, `TPU7x (Ironwood)` → `7x`.
            let generation = family
                .display_name()
                .trim_start_matches("TPU")
                .split_whitespace()
                .next();
            generation.is_some_and(|generation| value.contains(generation))
        })
        .collect();
    match mentioned.as_slice() {
        [family] => Some(family.accelerator()),
        _ => catalog::closest(value, accelerator_labels()),
    }
}

/// A finding for an unknown TPU accelerator value, with the likely intended one as the fix.
pub(crate) fn unknown_accelerator(rule: &'static str, value: &str) -> Diagnostic {
    let diagnostic = Diagnostic::error(rule, format!("unknown TPU accelerator: `{value}`"))
        .found(value)
        .expected(format!("one of {}", code_list(&accelerator_labels())))
        .blueprint_field("spec.tpu.type");
    match suggest_accelerator(value) {
        Some(suggestion) => diagnostic.fix(format!("did you mean `{suggestion}`?")),
        None => diagnostic,
    }
}

/// A finding for a topology that does not parse or is not legal for `family`.
pub(crate) fn bad_topology(
    syntax_rule: &'static str,
    shape_rule: &'static str,
    family: Option<TpuFamily>,
    value: &str,
    problem: &TopologyProblem,
) -> Diagnostic {
    let (error, parsed) = (&problem.error, problem.parsed.as_ref());
    let rule = if matches!(error, TopologyError::Syntax(_)) {
        syntax_rule
    } else {
        shape_rule
    };
    let diagnostic = Diagnostic::error(rule, strip_period(&error.to_string()))
        .found(value)
        .blueprint_field("spec.tpu.topology");
    match family {
        Some(family) => {
            let suggested = parsed
                .map(|parsed| suggestions(family, parsed))
                .unwrap_or_default();
            let diagnostic = diagnostic.expected(expected_topology(family, parsed));
            match suggested.first() {
                Some(first) => diagnostic.fix(format!("use `{first}`")),
                None => diagnostic,
            }
        }
        None => diagnostic.expected("`AxB` (TPU v5e, v6e) or `AxBxC` (TPU v4, v5p, Ironwood)"),
    }
}

/// A finding for a GPU label value the catalog does not offer: a retired GPU, with the current
/// ones that replace it, or an unknown value, with the likely intended one as the fix.
pub(crate) fn unknown_gpu(rule: &'static str, value: &str) -> Diagnostic {
    if let Some(retired) = catalog::retired_gpu(value) {
        let successors = code_list(retired.successors);
        return Diagnostic::error(
            rule,
            format!(
                "`{value}` ({}) is retired: GKE no longer creates nodes with it",
                retired.display_name
            ),
        )
        .found(value)
        .expected(format!("a GPU GKE offers, such as {successors}"))
        .fix(format!(
            "use {successors} instead ({} has not been offered since {})",
            retired.display_name, retired.since
        ))
        .blueprint_field("spec.gpu.type");
    }
    let known: Vec<&str> = catalog::gpus().iter().map(|gpu| gpu.label).collect();
    let diagnostic = Diagnostic::error(rule, format!("unknown GPU accelerator: `{value}`"))
        .found(value)
        .expected(format!("one of {}", code_list(&known)))
        .blueprint_field("spec.gpu.type");
    match catalog::suggest_gpu(value) {
        Some(suggestion) => diagnostic.fix(format!("did you mean `{suggestion}`?")),
        None => diagnostic,
    }
}

/// When `count` `gpu`s do not fit `machine_type`: the finding under `rule` (without a position)
/// and whether the count is at fault rather than the type, which is when the count is written
/// and the machine series takes this GPU at all. Node pools and compute class priorities share
/// it.
pub(crate) fn gpu_machine_mismatch(
    rule: &'static str,
    gpu: &Gpu,
    machine_type: &str,
    count: i64,
    count_written: bool,
) -> Option<(Diagnostic, bool)> {
    let reason = gpu
        .check_machine(machine_type, u32::try_from(count).unwrap_or(u32::MAX))
        .err()?;
    let label = gpu.label;
    let series_fits = gpu
        .machines
        .iter()
        .any(|machine| machine_type.starts_with(machine.name));
    let count_at_fault = count_written && series_fits;
    let message = if count_at_fault {
        format!("{count} `{label}` GPUs do not fit machine type `{machine_type}`")
    } else {
        format!("`{label}` does not attach to machine type `{machine_type}`")
    };
    let diagnostic = Diagnostic::error(rule, message)
        .found(format!("{count} × `{label}` on `{machine_type}`"))
        .expected(strip_period(&reason));
    Some((diagnostic, count_at_fault))
}

/// How many pods of `per_pod` GPUs the node pools hold at their largest: Σ max nodes ×
/// ⌊GPUs per node ÷ GPUs per pod⌋, `per_node` counting the GPUs a pool's node has for them.
/// `None` when there is nothing to judge: pods larger than every node are
/// `gpu-count-per-pod`'s finding, and a pool of unknown size could hold anything.
pub(crate) fn gpu_capacity(
    pools: &[&NodePool<'_>],
    per_pod: i64,
    per_node: impl Fn(&NodePool<'_>) -> i64,
) -> Option<i64> {
    if pools.iter().all(|pool| per_node(pool) < per_pod) {
        return None;
    }
    let mut capacity = 0;
    for pool in pools {
        capacity += pool.max_nodes? * (per_node(pool) / per_pod.max(1));
    }
    Some(capacity)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn topology(text: &str) -> Topology {
        text.parse().unwrap()
    }

    #[test]
    fn lists_and_counts_read_as_english() {
        assert_eq!(code_list(&[]), "nothing");
        assert_eq!(code_list(&["a"]), "`a`");
        assert_eq!(code_list(&["a", "b", "c"]), "`a`, `b` or `c`");
        assert_eq!(plural(1, "slice"), "1 slice");
        assert_eq!(plural(0, "slice"), "0 slices");
    }

    #[test]
    fn suggests_a_reordering_before_other_shapes_of_the_same_size() {
        let v4 = suggestions(TpuFamily::V4, &topology("1x2x2"));
        assert_eq!(v4, vec![topology("2x2x1")]);
        let v4_planar = suggestions(TpuFamily::V4, &topology("4x4"));
        assert_eq!(v4_planar, vec![topology("2x2x4")]);
    }

    #[test]
    fn suggests_the_accelerator_of_the_generation_written() {
        assert_eq!(
            suggest_accelerator("tpu-v5e-podslice"),
            Some("tpu-v5-lite-podslice")
        );
        assert_eq!(
            suggest_accelerator("tpu-v5-lite-slice"),
            Some("tpu-v5-lite-podslice")
        );
        assert_eq!(
            suggest_accelerator("tpu-v6e-podslice"),
            Some("tpu-v6e-slice")
        );
        assert_eq!(suggest_accelerator("tpu7x-slice"), Some("tpu7x"));
    }

    #[test]
    fn retired_gpus_point_at_current_ones_not_the_nearest_string() {
        let finding = unknown_gpu("gpu-accelerator-unknown", "nvidia-tesla-k80");
        assert!(finding.message.contains("retired"), "{}", finding.message);
        let fix = finding.fix.unwrap();
        assert!(
            fix.contains("`nvidia-tesla-t4`") && fix.contains("`nvidia-l4`"),
            "{fix}"
        );
        assert!(!fix.contains("did you mean"), "{fix}");
    }
}

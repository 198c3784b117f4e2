//! The `tpu` and `gpu` stanzas of every blueprint kind, resolved in one place.
//!
//! The contract fixes how a blueprint names its accelerators:
//!
//! ```yaml
//! spec:
//!   tpu: {type: v5litepod-16, topology: 4x4, slices: 1}
//!   gpu: {type: nvidia-tesla-t4, count: 1}
//! ```
//!
//! This module reads those stanzas and resolves them through [`crate::catalog`] into plans
//! ([`TpuPlan`], [`GpuPlan`]) whose numbers (hosts, chips per host, machine type) are derived,
//! never typed twice. Problems are findings at the stanza's own fields.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::catalog::{self, Placement, Topology, TpuFamily, TpuSlice, TpuTypeError};
use crate::plan::{Planner, rule};

/// `spec.tpu` as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TpuSpec {
    /// Catalog name: `v4-32`, `v5litepod-16`, `v5p-64`, `v6e-8`, … (also
    /// `<family>-<topology>`, e.g. `v4-2x2x4`).
    #[serde(rename = "type")]
    #[schemars(transform = tpu_type_values)]
    pub type_: String,
    /// Slice topology (`4x4`, `2x2x4`); optional, must agree with `type` when given.
    pub topology: Option<String>,
    /// Number of slices (default 1; more than 1 is multislice).
    #[schemars(extend("default" = 1))]
    pub slices: Option<u32>,
    /// Where the slices' TPU VMs come from (default: on-demand).
    pub capacity: Option<CapacitySpec>,
    /// What the slice node pools do while nothing runs on them: `release` (scale to zero,
    /// the default for training) or `keep` (a fixed pool, billed around the clock; the
    /// default for serving).
    pub idle: Option<Idle>,
}

/// `spec.tpu.capacity` as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CapacitySpec {
    /// `onDemand`, `spot`, `flexStart` (queued provisioning through Kueue) or `reservation`.
    #[serde(rename = "type")]
    pub type_: CapacityType,
    /// Name of the specific reservation the slices consume (with `type: reservation`).
    pub reservation: Option<String>,
    /// Project that owns a shared reservation (default: the blueprint's project).
    pub reservation_project: Option<String>,
}

/// How TPU capacity is obtained.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum CapacityType {
    /// On-demand VMs: billed while they exist, and only if the zone has them free.
    #[default]
    OnDemand,
    /// Spot VMs: cheaper, and preempted whenever Compute Engine needs them back.
    Spot,
    /// Flex-start through queued provisioning: Kueue asks GKE for the whole slice and
    /// admits the job once it is there.
    FlexStart,
    /// A specific reservation, billed whether it is used or not.
    Reservation,
}

/// What a slice node pool does while nothing runs on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum Idle {
    /// Scale to zero nodes; the cluster autoscaler adds the whole slice when pods need it.
    Release,
    /// Keep every node of the slice (a fixed pool).
    Keep,
}

/// The resolved capacity of a blueprint's slices.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct CapacityPlan {
    /// How the capacity is obtained.
    #[serde(rename = "type")]
    pub type_: CapacityType,
    /// `projects/<project>/reservations/<name>` for a shared reservation, else its name.
    pub reservation: Option<String>,
    /// Whether the blueprint wrote `spec.tpu.capacity` (a choice made, not a default).
    #[serde(skip)]
    pub written: bool,
    /// Whether the kind could take flex-start (it queues in Kueue), for advice.
    #[serde(skip)]
    pub queueable: bool,
}

impl CapacityPlan {
    /// Whether the slices come through queued provisioning (flex-start).
    #[must_use]
    pub fn queued(&self) -> bool {
        self.type_ == CapacityType::FlexStart
    }
}

/// `spec.gpu` as written.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GpuSpec {
    /// GKE accelerator label value, e.g. `nvidia-tesla-t4`, `nvidia-l4`.
    #[serde(rename = "type")]
    #[schemars(transform = gpu_type_values)]
    pub type_: String,
    /// GPUs per node (default 1).
    #[schemars(extend("default" = 1))]
    pub count: Option<u32>,
    /// Machine type (default: the smallest that carries `count` GPUs).
    pub machine_type: Option<String>,
}

/// The catalog's TPU names as schema `examples`, so editors complete them. Not an `enum`:
/// `<family>-<topology>` names are accepted too, and the schema must never refuse a type the
/// tool takes.
fn tpu_type_values(schema: &mut schemars::Schema) {
    schema.insert("examples".into(), catalog::tpu_slice_names().into());
}

/// The catalog's GPU labels as the schema's `enum`: [`catalog::gpu`] accepts exactly these.
fn gpu_type_values(schema: &mut schemars::Schema) {
    let labels: Vec<&str> = catalog::gpus().iter().map(|gpu| gpu.label).collect();
    schema.insert("enum".into(), labels.into());
}

/// Upper bound on slices of one blueprint: each slice is a node pool, and GKE caps node pools
/// per cluster well below this; larger numbers are typing mistakes.
pub const MAX_SLICES: u32 = 256;

/// A resolved `tpu` stanza: everything node pools, selectors, JobSets and quotas need.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TpuPlan {
    /// Catalog name, e.g. `v4-32`.
    pub type_name: String,
    /// Family.
    #[serde(skip)]
    pub family: Option<TpuFamily>,
    /// `cloud.google.com/gke-tpu-accelerator` value.
    pub accelerator: &'static str,
    /// Topology, always explicit.
    pub topology: String,
    /// TPU VM machine type.
    pub machine_type: &'static str,
    /// VMs (nodes, pods) per slice.
    pub hosts: u32,
    /// Chips per VM (`google.com/tpu` per pod).
    pub chips_per_host: u32,
    /// Chips per slice.
    pub chips_per_slice: u32,
    /// Slices.
    pub slices: u32,
    /// Chips over all slices.
    pub total_chips: u32,
    /// Multi-host slices need COMPACT placement with the topology.
    pub compact_placement: bool,
    /// More than one VM per slice.
    pub multi_host: bool,
    /// Where the VMs come from.
    pub capacity: CapacityPlan,
    /// Whether the slice pools scale to zero while idle (else they are fixed).
    pub scale_to_zero: bool,
}

impl TpuPlan {
    fn new(slice: &TpuSlice, slices: u32) -> Self {
        Self {
            type_name: slice.name.clone(),
            family: Some(slice.family),
            accelerator: slice.accelerator(),
            topology: slice.topology.to_string(),
            machine_type: slice.machine_type(),
            hosts: slice.hosts(),
            chips_per_host: slice.chips_per_host(),
            chips_per_slice: slice.chips(),
            slices,
            total_chips: slice.chips() * slices,
            compact_placement: slice.placement() == Placement::Compact,
            multi_host: slice.is_multi_host(),
            capacity: CapacityPlan::default(),
            scale_to_zero: false,
        }
    }
}

/// A resolved `gpu` stanza.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuPlan {
    /// `cloud.google.com/gke-accelerator` value.
    pub accelerator: &'static str,
    /// GPUs per node (and per pod, for one pod per node).
    pub count: u32,
    /// Machine type of the GPU nodes.
    pub machine_type: String,
    /// Whether the GPUs are attached to a general-purpose VM (`guestAccelerator`).
    pub attached: bool,
}

/// Families a kind accepts.
#[derive(Clone, Copy, Debug)]
pub struct TpuSupport<'k> {
    /// The kind, for messages.
    pub kind: &'k str,
    /// Families it supports.
    pub families: &'k [TpuFamily],
    /// Whether it runs several slices as one job.
    pub multislice: bool,
    /// What its slice pools do while idle when `spec.tpu.idle` is not written: training
    /// releases them, serving keeps them (serving must answer).
    pub idle: Idle,
    /// Whether its jobs queue in Kueue, which flex-start capacity needs.
    pub queued_provisioning: bool,
}

/// Resolves `spec.tpu` through the catalog; `None` (with findings) when it cannot.
pub fn resolve_tpu(
    planner: &mut Planner<'_>,
    spec: &TpuSpec,
    support: TpuSupport<'_>,
) -> Option<TpuPlan> {
    let slices = spec.slices.unwrap_or(1);
    if slices == 0 || slices > MAX_SLICES {
        let d = planner.error(
            rule::TPU_SLICES,
            "spec.tpu.slices",
            format!("`slices` must be between 1 and {MAX_SLICES}"),
        );
        d.found = Some(slices.to_string());
        return None;
    }
    if slices > 1 && !support.multislice {
        let d = planner.error(
            rule::TPU_SLICES,
            "spec.tpu.slices",
            format!("`{}` runs on one slice", support.kind),
        );
        d.found = Some(slices.to_string());
        d.fix = Some("remove `slices` or set `slices: 1`".into());
        return None;
    }
    let topology = match spec.topology.as_deref().map(str::parse::<Topology>) {
        None => None,
        Some(Ok(topology)) => Some(topology),
        Some(Err(error)) => {
            let d = planner.error(
                rule::TPU_TOPOLOGY_SYNTAX,
                "spec.tpu.topology",
                error.to_string(),
            );
            d.found.clone_from(&spec.topology);
            d.expected = Some("`AxB` (v5e, v6e) or `AxBxC` (v4, v5p)".into());
            return None;
        }
    };
    let slice = match catalog::tpu_slice(&spec.type_, topology.as_ref()) {
        Ok(slice) if !support.families.contains(&slice.family) => {
            let families: Vec<String> = support.families.iter().map(ToString::to_string).collect();
            let d = planner.error(
                rule::TPU_FAMILY_UNSUPPORTED,
                "spec.tpu.type",
                format!("`{}` does not support {} yet", support.kind, slice.family),
            );
            d.expected = Some(format!("a TPU type of {}", families.join(", ")));
            return None;
        }
        Ok(slice) => slice,
        Err(TpuTypeError::Unknown { name, suggestion }) => {
            let d = planner.error(
                rule::TPU_TYPE_UNKNOWN,
                "spec.tpu.type",
                format!("unknown TPU type: `{name}`"),
            );
            d.found = Some(name);
            d.expected =
                Some("a catalog name such as `v4-32`, `v5litepod-16`, `v5p-64` or `v6e-16`".into());
            d.fix = suggestion.map(|s| format!("did you mean `{s}`?"));
            return None;
        }
        Err(TpuTypeError::Topology(error)) => {
            let d = planner.error(
                rule::TPU_TOPOLOGY_SHAPE,
                "spec.tpu.topology",
                error.to_string(),
            );
            d.found.clone_from(&spec.topology);
            return None;
        }
        Err(TpuTypeError::Mismatch {
            name,
            topology,
            expected,
        }) => {
            let d = planner.error(
                rule::TPU_TOPOLOGY_MISMATCH,
                "spec.tpu.topology",
                format!("topology `{topology}` does not agree with TPU type `{name}`"),
            );
            let expected: Vec<String> = expected.iter().map(|t| format!("`{t}`")).collect();
            d.found = Some(topology);
            d.fix = Some(format!(
                "set `topology: {}` or remove `topology`",
                expected.first().map_or("", |t| t.trim_matches('`'))
            ));
            d.expected = Some(expected.join(" or "));
            return None;
        }
    };
    if slices > 1 && !slice.is_multi_host() {
        let d = planner.error(
            rule::TPU_MULTISLICE_SINGLE_HOST,
            "spec.tpu.slices",
            format!(
                "multislice needs multi-host slices, but `{}` is a single host",
                slice.name
            ),
        );
        d.found = Some(format!(
            "{slices} slices of {} ({})",
            slice.name, slice.topology
        ));
        d.expected =
            Some("a multi-host TPU type (more than one VM per slice), or `slices: 1`".into());
        d.fix = Some(
            "use a larger type such as `v4-16`, `v5litepod-16` or `v6e-16`, or set `slices: 1`"
                .into(),
        );
        return None;
    }
    let mut plan = TpuPlan::new(&slice, slices);
    plan.capacity = resolve_capacity(planner, spec.capacity.as_ref())?;
    plan.capacity.queueable = support.queued_provisioning;
    if plan.capacity.queued() && !support.queued_provisioning {
        let d = planner.error(
            rule::TPU_CAPACITY,
            "spec.tpu.capacity.type",
            format!(
                "`{}` does not queue its work in Kueue, which flex-start capacity needs",
                support.kind
            ),
        );
        d.expected = Some("`onDemand`, `spot` or `reservation`".into());
        return None;
    }
    // Queued provisioning creates nodes only for an admitted job, from zero: never fixed.
    plan.scale_to_zero =
        plan.capacity.queued() || spec.idle.unwrap_or(support.idle) == Idle::Release;
    if plan.capacity.queued() && spec.idle == Some(Idle::Keep) {
        let d = planner.error(
            rule::CONFLICT,
            "spec.tpu.idle",
            "flex-start slices exist only while an admitted job runs; they cannot be kept",
        );
        d.fix = Some("remove `idle: keep`, or choose another `capacity.type`".into());
        return None;
    }
    Some(plan)
}

/// Checks `spec.tpu.capacity` and warns about capacity a multi-host slice may not get.
fn resolve_capacity(
    planner: &mut Planner<'_>,
    spec: Option<&CapacitySpec>,
) -> Option<CapacityPlan> {
    let type_ = spec.map_or(CapacityType::OnDemand, |spec| spec.type_);
    let reservation = match (type_, spec.and_then(|s| s.reservation.as_deref())) {
        (CapacityType::Reservation, None) => {
            let d = planner.error(
                rule::TPU_CAPACITY,
                "spec.tpu.capacity",
                "`type: reservation` needs the reservation's name",
            );
            d.expected = Some("`reservation: <name>`".into());
            d.fix = Some("add `reservation: <name of the specific reservation>`".into());
            return None;
        }
        (CapacityType::Reservation, Some(name)) => {
            if crate::names::resource(name).is_err() {
                let d = planner.error(
                    rule::TPU_CAPACITY,
                    "spec.tpu.capacity.reservation",
                    "not a Compute Engine reservation name",
                );
                d.found = Some(name.to_string());
                d.expected = Some("a lowercase name of letters, digits and `-`".into());
                return None;
            }
            let project = spec.and_then(|s| s.reservation_project.as_deref());
            if let Some(project) = project
                && crate::names::project_id(project).is_err()
            {
                let d = planner.error(
                    rule::TPU_CAPACITY,
                    "spec.tpu.capacity.reservationProject",
                    "not a GCP project id",
                );
                d.found = Some(project.to_string());
                return None;
            }
            // A shared reservation is named with its project (GKE's form for
            // `reservationAffinity.values`).
            Some(project.map_or_else(
                || name.to_string(),
                |project| format!("projects/{project}/reservations/{name}"),
            ))
        }
        (_, reservation) => {
            // A reservation named for capacity that would never consume it is a mistake.
            let stray = if reservation.is_some() {
                Some("reservation")
            } else if spec.is_some_and(|s| s.reservation_project.is_some()) {
                Some("reservationProject")
            } else {
                None
            };
            if let Some(field) = stray {
                let d = planner.error(
                    rule::CONFLICT,
                    &format!("spec.tpu.capacity.{field}"),
                    format!("`{field}` is read only with `type: reservation`"),
                );
                d.fix = Some(format!("remove `{field}`, or set `type: reservation`"));
                return None;
            }
            None
        }
    };
    Some(CapacityPlan {
        type_,
        reservation,
        written: spec.is_some(),
        queueable: false,
    })
}

/// Warns when a multi-host slice relies on on-demand capacity by default. Kinds call it once
/// their plan has no error, so the warning never crowds out what must be fixed first.
pub fn check_obtainable(planner: &mut Planner<'_>, tpu: &TpuPlan) {
    // A multi-host slice is created whole or not at all: on demand, every VM of it must be
    // free in the zone at once, and for large slices often is not. Written out explicitly,
    // `onDemand` is the blueprint's choice.
    if tpu.capacity.type_ == CapacityType::OnDemand && tpu.multi_host && !tpu.capacity.written {
        let d = planner.warning(
            rule::TPU_CAPACITY_ON_DEMAND,
            "spec.tpu",
            format!(
                "`{}` is a multi-host slice of {} VMs on on-demand capacity, which the zone may not have free all at once: its node pool may never be created or scaled up",
                tpu.type_name, tpu.hosts
            ),
        );
        let flex_start = if tpu.capacity.queueable {
            ", `{type: flexStart}`"
        } else {
            ""
        };
        d.expected = Some("reserved, flex-start or spot capacity for a multi-host slice".into());
        d.fix = Some(format!(
            "set `spec.tpu.capacity` to `{{type: reservation, reservation: <name>}}`{flex_start} or `{{type: spot}}`; or write `{{type: onDemand}}` to accept the risk"
        ));
    }
}

/// Resolves `spec.gpu` through the catalog; `None` (with findings) when it cannot.
pub fn resolve_gpu(planner: &mut Planner<'_>, spec: &GpuSpec) -> Option<GpuPlan> {
    let Some(gpu) = catalog::gpu(&spec.type_) else {
        let suggestion = catalog::suggest_gpu(&spec.type_);
        let d = planner.error(
            rule::GPU_TYPE_UNKNOWN,
            "spec.gpu.type",
            format!("unknown GPU type: `{}`", spec.type_),
        );
        d.found = Some(spec.type_.clone());
        d.expected =
            Some("a GKE accelerator label such as `nvidia-tesla-t4` or `nvidia-l4`".into());
        d.fix = suggestion.map(|s| format!("did you mean `{s}`?"));
        return None;
    };
    let count = spec.count.unwrap_or(1);
    let machine_type = match &spec.machine_type {
        Some(machine_type) => machine_type.clone(),
        None if gpu.attached => {
            // Four vCPUs per GPU, as the T4 references use (`n1-standard-4` for one T4).
            let family = gpu.machines.first().map_or("n1-", |m| m.name);
            format!("{family}standard-{}", 4 * count.max(1))
        }
        None => match gpu.machines.iter().find(|m| m.gpus == count) {
            Some(machine) => machine.name.to_string(),
            None => gpu
                .machines
                .first()
                .map_or_else(String::new, |m| m.name.to_string()),
        },
    };
    if let Err(reason) = gpu.check_machine(&machine_type, count) {
        // A machine family that never carries the GPU is the machine type's fault, whatever
        // the count; within the family, the count's.
        let (rule, field) = if !gpu.carried_by(&machine_type) {
            (rule::GPU_MACHINE_TYPE, "spec.gpu.machineType")
        } else if spec.machine_type.is_some() {
            (rule::GPU_COUNT, "spec.gpu.machineType")
        } else {
            (rule::GPU_COUNT, "spec.gpu.count")
        };
        let d = planner.error(rule, field, reason);
        d.found = Some(format!("{count} × `{}` on `{machine_type}`", gpu.label));
        return None;
    }
    Some(GpuPlan {
        accelerator: gpu.label,
        count,
        machine_type,
        attached: gpu.attached,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::blueprint::Blueprint;
    use crate::kinds::Registry;
    use crate::plan::Repository;

    /// Resolves `spec` with a planner on a throwaway blueprint; the plan or the rule ids found.
    fn gpu(spec: GpuSpec) -> Result<GpuPlan, Vec<String>> {
        let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: g}\nspec: {project: p}\n";
        let documents = crate::yaml::parse_documents(text).unwrap();
        let registry = Registry::builtin();
        let blueprint = Blueprint::from_node("b.yaml", &documents[0], &registry).unwrap();
        let repository = Repository::new();
        let mut planner = Planner::new(&blueprint, &repository);
        let plan = resolve_gpu(&mut planner, &spec);
        let found: Vec<String> = planner
            .finish()
            .iter()
            .map(|d| d.rule.to_string())
            .collect();
        plan.ok_or(found)
    }

    /// Resolves a `tpu` stanza read from YAML for a kind that releases (training) or keeps
    /// (serving) idle slices; the plan or the rule ids found.
    fn tpu(stanza: &str, idle: Idle) -> Result<TpuPlan, Vec<String>> {
        let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: t}\nspec: {project: p}\n";
        let documents = crate::yaml::parse_documents(text).unwrap();
        let registry = Registry::builtin();
        let blueprint = Blueprint::from_node("b.yaml", &documents[0], &registry).unwrap();
        let repository = Repository::new();
        let mut planner = Planner::new(&blueprint, &repository);
        let spec: TpuSpec = serde_json::from_str(stanza).unwrap();
        let support = TpuSupport {
            kind: "K",
            families: &[TpuFamily::V4, TpuFamily::V5e, TpuFamily::V6e],
            multislice: true,
            idle,
            queued_provisioning: idle == Idle::Release,
        };
        let plan = resolve_tpu(&mut planner, &spec, support);
        if let Some(plan) = &plan {
            check_obtainable(&mut planner, plan);
        }
        let found: Vec<String> = planner
            .finish()
            .iter()
            .map(|d| d.rule.to_string())
            .collect();
        match plan {
            Some(plan) if found.is_empty() => Ok(plan),
            _ => Err(found),
        }
    }

    #[test]
    fn training_slices_scale_to_zero_and_serving_slices_stay_unless_told() {
        let explicit = r#"{"type": "v4-32", "capacity": {"type": "onDemand"}}"#;
        assert!(tpu(explicit, Idle::Release).unwrap().scale_to_zero);
        assert!(!tpu(explicit, Idle::Keep).unwrap().scale_to_zero);
        let kept = r#"{"type": "v4-32", "capacity": {"type": "spot"}, "idle": "keep"}"#;
        assert!(!tpu(kept, Idle::Release).unwrap().scale_to_zero);
        // Queued provisioning has nodes only for admitted jobs.
        let queued = r#"{"type": "v6e-16", "capacity": {"type": "flexStart"}}"#;
        let plan = tpu(queued, Idle::Release).unwrap();
        assert!(plan.scale_to_zero && plan.capacity.queued());
    }

    #[test]
    fn capacity_choices_are_checked() {
        let shared = r#"{"type": "v4-32", "capacity": {"type": "reservation", "reservation": "r1", "reservationProject": "host-project"}}"#;
        assert_eq!(
            tpu(shared, Idle::Release)
                .unwrap()
                .capacity
                .reservation
                .as_deref(),
            Some("projects/host-project/reservations/r1")
        );
        for (stanza, idle, rule) in [
            (
                r#"{"type": "v4-32"}"#,
                Idle::Release,
                rule::TPU_CAPACITY_ON_DEMAND,
            ),
            (
                r#"{"type": "v4-32", "capacity": {"type": "reservation"}}"#,
                Idle::Release,
                rule::TPU_CAPACITY,
            ),
            (
                r#"{"type": "v4-32", "capacity": {"type": "reservation", "reservation": "R_1"}}"#,
                Idle::Release,
                rule::TPU_CAPACITY,
            ),
            (
                r#"{"type": "v4-32", "capacity": {"type": "spot", "reservation": "r1"}}"#,
                Idle::Release,
                rule::CONFLICT,
            ),
            (
                r#"{"type": "v6e-16", "capacity": {"type": "flexStart"}, "idle": "keep"}"#,
                Idle::Release,
                rule::CONFLICT,
            ),
            (
                r#"{"type": "v6e-16", "capacity": {"type": "flexStart"}}"#,
                Idle::Keep,
                rule::TPU_CAPACITY,
            ),
        ] {
            assert_eq!(tpu(stanza, idle).unwrap_err(), [rule], "{stanza}");
        }
        // One host is as obtainable as any VM.
        assert!(tpu(r#"{"type": "v5litepod-4"}"#, Idle::Release).is_ok());
    }

    fn spec(type_: &str, count: Option<u32>, machine_type: Option<&str>) -> GpuSpec {
        GpuSpec {
            type_: type_.into(),
            count,
            machine_type: machine_type.map(Into::into),
        }
    }

    #[test]
    fn gpu_defaults_follow_the_catalog() {
        let t4 = gpu(spec("nvidia-tesla-t4", None, None)).unwrap();
        assert_eq!(
            (t4.machine_type.as_str(), t4.count, t4.attached),
            ("n1-standard-4", 1, true)
        );
        let two_t4 = gpu(spec("nvidia-tesla-t4", Some(2), None)).unwrap();
        assert_eq!(two_t4.machine_type, "n1-standard-8");
        let l4 = gpu(spec("nvidia-l4", Some(2), None)).unwrap();
        assert_eq!(
            (l4.machine_type.as_str(), l4.attached),
            ("g2-standard-24", false)
        );
    }

    #[test]
    fn gpu_mistakes_are_findings() {
        assert_eq!(
            gpu(spec("nvidia-tesla-t5", None, None)).unwrap_err(),
            [rule::GPU_TYPE_UNKNOWN]
        );
        assert_eq!(
            gpu(spec("nvidia-tesla-t4", Some(3), None)).unwrap_err(),
            [rule::GPU_COUNT]
        );
        assert_eq!(
            gpu(spec("nvidia-l4", Some(1), Some("n1-standard-4"))).unwrap_err(),
            [rule::GPU_MACHINE_TYPE]
        );
        assert_eq!(
            gpu(spec("nvidia-tesla-t4", Some(1), Some("n2-standard-4"))).unwrap_err(),
            [rule::GPU_MACHINE_TYPE]
        );
        assert_eq!(
            gpu(spec("nvidia-tesla-a100", Some(2), Some("a2-highgpu-1g"))).unwrap_err(),
            [rule::GPU_COUNT]
        );
    }
}

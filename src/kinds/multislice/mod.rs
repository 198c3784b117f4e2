//! `MultisliceTraining`: TPU training with JobSet and Kueue on GKE, across one or more slices.
//!
//! Reference: the "Running TPU training workloads on GKE" guide (v4-32, two slices). The kind
//! is a recipe over the shared blocks: a cluster (new, existing, or another blueprint's) with a
//! CPU pool, one TPU node pool per slice, node and Workload Identity service accounts, a bucket
//! for datasets, checkpoints and logs; in the cluster, a namespace, the Workload Identity
//! service account, Kueue flavor and queues, and a JobSet with one replicated job per slice.
//!
//! Identity: TPU workers use `hostNetwork` (multislice traffic between hosts), and pods on the
//! host network do not get Workload Identity, so they act as the node service account. That
//! account gets what training needs on the blueprint's bucket only; the Workload Identity
//! account (used by the TensorBoard uploader and any pod off the host network) gets the
//! reference's project roles minus project-wide object admin.

mod plan;
mod spec;
mod templates;

use super::TypedKind;
use crate::blueprint::Blueprint;
use crate::overlay::{Overlay, TemplateError, stanzas};
use crate::plan::{Exports, Planner};
pub use spec::Spec;
pub use templates::Plan;

/// The `MultisliceTraining` kind.
pub struct MultisliceTraining;

impl TypedKind for MultisliceTraining {
    type Spec = Spec;
    type Plan = Plan;
    const NAME: &'static str = "MultisliceTraining";
    const SUMMARY: &'static str =
        "TPU training with JobSet and Kueue across one or more slices, with its GKE cluster";

    fn exports(spec: &Spec, blueprint: &Blueprint<'_>) -> Exports {
        stanzas!(spec).exports(blueprint.name, &plan::LOCATION)
    }

    fn plan(spec: &Spec, planner: &mut Planner<'_>) -> Option<Plan> {
        plan::plan(spec, planner)
    }

    fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        plan.overlay(blueprint)
    }

    fn describe(plan: &Plan) -> String {
        let tpu = &plan.workload.tpu;
        format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology)
    }
}

//! The overlay of a `TritonServing` blueprint: the shared Config Connector objects and
//! `templates/workload.yaml` over the plan.

use super::plan::Plan;
use crate::blueprint::Blueprint;
use crate::overlay::{Overlay, TemplateError};

/// Renders the plan's infrastructure and workload.
pub(super) fn overlay(plan: &Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
    Overlay::with_workload(
        blueprint,
        &plan.infra,
        "triton/workload.yaml",
        &plan.workload,
    )
}

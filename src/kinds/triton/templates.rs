//! What the `triton/workload.yaml` template sees, and the overlay made from it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::accelerator::GpuPlan;
use crate::blueprint::Blueprint;
use crate::gcp::Infrastructure;
use crate::overlay::autoscaling::AutoscalingPlan;
use crate::overlay::exposure::{GatewayApiPlan, IngressPlan};
use crate::overlay::{Overlay, TemplateError};

/// Everything the workload templates need, derived and checked.
#[derive(Debug, Serialize)]
pub struct Plan {
    pub(super) infra: Infrastructure,
    pub(super) workload: Workload,
    pub(super) gpu: GpuPlan,
}

#[derive(Debug, Serialize)]
pub(super) struct Workload {
    pub(super) namespace: String,
    pub(super) kubernetes_service_account: String,
    pub(super) workload_service_account: String,
    pub(super) triton: TritonPlan,
    pub(super) autoscaling: AutoscalingPlan,
    pub(super) ingress: Option<IngressPlan>,
    pub(super) gateway_api: Option<GatewayApiPlan>,
    pub(super) health_check: Option<HealthCheckPlan>,
}

#[derive(Debug, Serialize)]
pub(super) struct TritonPlan {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) args: Vec<String>,
    pub(super) gpus_per_pod: u32,
    pub(super) cpu: String,
    pub(super) memory: String,
    pub(super) node_selector: BTreeMap<String, String>,
    pub(super) http_port: u16,
    pub(super) grpc_port: u16,
    /// `<name>.<namespace>.svc.cluster.local`.
    pub(super) host: String,
    /// What an ingress forwards.
    pub(super) routes: Routes,
    /// The variable that holds the restricted APIs' header value.
    pub(super) restricted_value_env: &'static str,
}

/// The requests an ingress forwards to the server; every other path answers 404 there.
#[derive(Debug, Serialize)]
pub(super) struct Routes {
    /// Exact HTTP paths.
    pub(super) http_paths: Vec<String>,
    /// Exact gRPC paths (`/<service>/<method>`).
    pub(super) grpc_methods: Vec<String>,
}

#[derive(Debug, Serialize)]
pub(super) struct HealthCheckPlan {
    pub(super) name: String,
    pub(super) image: &'static str,
    pub(super) url: String,
}

impl Plan {
    /// The GCP objects and the workload cluster's objects.
    pub(super) fn overlay(&self, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError> {
        Overlay::with_workload(
            blueprint,
            &self.infra,
            "triton/workload.yaml",
            &self.workload,
        )
    }
}

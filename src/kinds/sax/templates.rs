//! What the `sax/workload.yaml` template sees, and the overlay made from it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::accelerator::TpuPlan;
use crate::overlay::Planned;

/// Everything the workload template needs, derived and checked.
pub type Plan = Planned<Workload>;

/// The workload template, `templates/workload.yaml`.
pub(super) const TEMPLATE: &str = "sax/workload.yaml";

/// What the workload template sees.
#[derive(Debug, Serialize)]
pub struct Workload {
    pub(super) name: String,
    pub(super) namespace: String,
    /// Each component's identity, by component (`admin`, `model_server`, `proxy`, `util`,
    /// `converter`).
    pub(super) identities: BTreeMap<&'static str, Identity>,
    pub(super) cell: String,
    pub(super) admin_bucket: String,
    pub(super) tpu: TpuPlan,
    pub(super) platform_chip: &'static str,
    pub(super) node_selector: BTreeMap<String, String>,
    pub(super) images: ResolvedImages,
    pub(super) model: ModelPlan,
    pub(super) converter: Option<ConverterPlan>,
    pub(super) proxy: ProxyPlan,
    /// Labels and taints that keep each Saxml role on its pool, by role.
    pub(super) pools: BTreeMap<&'static str, String>,
}

#[derive(Debug, Serialize)]
pub(super) struct ResolvedImages {
    pub(super) admin_server: String,
    pub(super) model_server: String,
    pub(super) util: String,
    pub(super) http: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ModelPlan {
    /// `/sax/<cell>/<model>`.
    pub(super) id: String,
    pub(super) serving_config: String,
    pub(super) checkpoint: String,
    pub(super) replicas: u32,
}

#[derive(Debug, Serialize)]
pub(super) struct ConverterPlan {
    pub(super) image: String,
    pub(super) size: &'static str,
    pub(super) memory: &'static str,
    pub(super) scratch: String,
    pub(super) meta_checkpoint: String,
    pub(super) pax_checkpoint: String,
}

#[derive(Debug, Serialize)]
pub(super) struct ProxyPlan {
    pub(super) service: String,
    pub(super) min: u32,
    pub(super) max: u32,
    pub(super) cpu_utilization: u32,
    pub(super) load_balancer: Option<LoadBalancerPlan>,
}

/// A Kubernetes service account acting as a Google service account.
#[derive(Debug, Serialize)]
pub(super) struct Identity {
    pub(super) kubernetes_service_account: String,
    pub(super) email: String,
}

/// The internal load balancer that forwards generation only.
#[derive(Debug, Serialize)]
pub(super) struct LoadBalancerPlan {
    /// Name of its Deployment, ConfigMap and Service.
    pub(super) service: String,
    pub(super) image: &'static str,
    pub(super) source_ranges: Vec<String>,
}

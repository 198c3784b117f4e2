//! What the `multislice/workload.yaml` template sees, and the overlay made from it.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::accelerator::TpuPlan;
use crate::overlay::Planned;

/// Everything the workload template needs, derived and checked.
pub type Plan = Planned<Workload>;

/// The workload template, `templates/workload.yaml`.
pub(super) const TEMPLATE: &str = "multislice/workload.yaml";

/// What the workload template sees.
#[derive(Debug, Serialize)]
pub struct Workload {
    pub(super) name: String,
    pub(super) namespace: String,
    pub(super) kubernetes_service_account: String,
    pub(super) workload_service_account: String,
    pub(super) tpu: TpuPlan,
    pub(super) node_selector: BTreeMap<String, String>,
    pub(super) kueue: KueuePlan,
    pub(super) training: TrainingPlan,
    pub(super) tensorboard: Option<TensorboardPlan>,
}

#[derive(Debug, Serialize)]
pub(super) struct KueuePlan {
    pub(super) cluster_queue: String,
    pub(super) local_queue: String,
    pub(super) flavor: String,
    /// The flavor's node labels: the pods' TPU selector, plus the capacity's.
    pub(super) flavor_labels: BTreeMap<String, String>,
    /// Name of the AdmissionCheck and ProvisioningRequestConfig of queued provisioning.
    pub(super) queued: Option<String>,
    pub(super) priority_classes: Vec<PriorityClassPlan>,
}

#[derive(Debug, Serialize)]
pub(super) struct PriorityClassPlan {
    pub(super) name: String,
    pub(super) value: i64,
    pub(super) description: &'static str,
}

#[derive(Debug, Serialize)]
pub(super) struct TrainingPlan {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) command: Vec<String>,
    pub(super) args: Vec<String>,
    pub(super) env: Vec<EnvVar>,
    pub(super) max_restarts: u32,
}

#[derive(Debug, Serialize)]
pub(super) struct EnvVar {
    pub(super) name: String,
    pub(super) value: String,
}

#[derive(Debug, Serialize)]
pub(super) struct TensorboardPlan {
    pub(super) name: String,
    pub(super) image: String,
    pub(super) command: Vec<String>,
    /// The locked packages an init container installs; none for an image of the user's.
    pub(super) requirements: Option<UploaderRequirements>,
}

/// The uploader's lock, as the ConfigMap the init container reads it from.
#[derive(Debug, Serialize)]
pub(super) struct UploaderRequirements {
    /// The ConfigMap's name.
    pub(super) name: String,
    /// `requirements.txt`: every package pinned, with its wheel's hash.
    pub(super) text: String,
    /// The lock's git blob id: in the pod template, so that a new lock rolls the uploader.
    pub(super) digest: String,
    /// Where the packages are installed (`pip install --target`).
    pub(super) site: String,
}

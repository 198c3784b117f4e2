//! `spec` of a `MultisliceTraining` blueprint, as written.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::accelerator::TpuSpec;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, NetworkSpec, ServiceAccountSpec,
};

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    pub(super) project: String,
    /// Region (default: the referenced cluster's, else `us-central2`, where TPU v4 lives).
    pub(super) region: Option<String>,
    /// Zone of the TPU slices (default: `<region>-b`).
    pub(super) zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    pub(super) config_connector: ConfigConnectorSpec,
    /// Let a change delete the clusters, node pools, network, node service account and data
    /// this blueprint created: its removal, or an edit GCP makes only by recreating them
    /// (default `false`: removed ones are abandoned, kept in GCP and billed until deleted by
    /// hand, and `diff --fail-on destructive` fails on a recreate). Commit it first.
    #[serde(default)]
    pub(super) allow_teardown: bool,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    pub(super) network: NetworkSpec,
    /// The cluster (new by default; zonal in the slices' zone).
    #[serde(default)]
    pub(super) cluster: ClusterSpec,
    /// Node and Workload Identity service accounts.
    #[serde(default)]
    pub(super) service_accounts: ServiceAccounts,
    /// Namespace of the training objects (default: the blueprint name).
    pub(super) namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account (default `training`).
    pub(super) kubernetes_service_account: Option<String>,
    /// The TPU slices.
    pub(super) tpu: TpuSpec,
    /// Kueue queue names and the reference's PriorityClasses.
    #[serde(default)]
    pub(super) kueue: Kueue,
    /// Bucket for datasets, checkpoints and logs.
    #[serde(default)]
    pub(super) bucket: BucketSpec,
    /// The training job.
    #[serde(default)]
    pub(super) training: Training,
    /// The TensorBoard log uploader, when set.
    pub(super) tensorboard: Option<Tensorboard>,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ServiceAccounts {
    /// Account of the nodes (and of the TPU workers, which use the host network).
    #[serde(default)]
    pub(super) nodes: ServiceAccountSpec,
    /// Workload Identity account of pods off the host network.
    #[serde(default)]
    pub(super) workload: ServiceAccountSpec,
}

/// `spec.kueue`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Kueue {
    /// ClusterQueue name (default: the blueprint name).
    pub(super) cluster_queue: Option<String>,
    /// LocalQueue name (default `tpu-training-jobs`).
    pub(super) local_queue: Option<String>,
    /// Render the reference's five PriorityClasses, prefixed with the blueprint name
    /// (default `true`).
    pub(super) priority_classes: Option<bool>,
}

/// `spec.training`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Training {
    /// JobSet name (default: the blueprint name).
    pub(super) name: Option<String>,
    /// Container image (default: Google's JAX stable-stack TPU image, for the hello-world).
    pub(super) image: Option<String>,
    /// Container command.
    pub(super) command: Option<Vec<String>>,
    /// Container arguments.
    pub(super) args: Option<Vec<String>>,
    /// Extra environment variables. `RUN_NAME`, `BASE_OUTPUT_DIRECTORY` and `DATASET_PATH` may
    /// be overridden; `NUM_SLICES` and `ICI_PARALLELISM` follow from `spec.tpu`.
    #[serde(default)]
    pub(super) env: BTreeMap<String, String>,
    /// JobSet `failurePolicy.maxRestarts`: how often an interrupted run restarts, every slice
    /// at once (default 4 per slice, 16 per slice on Spot VMs; at most 1,000).
    pub(super) max_restarts: Option<u32>,
}

/// `spec.tensorboard`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Tensorboard {
    /// Vertex AI TensorBoard: `projects/<p>/locations/<l>/tensorboards/<id>`.
    pub(super) resource_name: String,
    /// Uploader image, with a tag or digest.
    pub(super) image: Option<String>,
}

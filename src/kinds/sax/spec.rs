//! `spec` of a `SaxServing` blueprint, as written.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::accelerator::TpuSpec;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, MetricsSinkSpec, NetworkSpec, NodePoolSpec,
    RegistrySpec, ServiceAccountSpec,
};

/// `spec` as written.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Spec {
    /// GCP project id.
    pub(super) project: String,
    /// Project number (digits), for the Pub/Sub service agent's grants when performance
    /// testing is on.
    pub(super) project_number: Option<String>,
    /// Region (default: where the TPU generation is offered, e.g. `us-west4` for v5e).
    pub(super) region: Option<String>,
    /// Zone of the TPU slices and CPU pools (default: a zone of the region with the TPUs).
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
    /// The cluster (new by default: regional); `cpuPool` is its untainted system pool.
    #[serde(default)]
    pub(super) cluster: ClusterSpec,
    /// The Saxml node pools besides the system pool.
    #[serde(default)]
    pub(super) pools: Pools,
    /// The nodes' service account, and one Workload Identity account per Saxml component.
    #[serde(default)]
    pub(super) service_accounts: ServiceAccounts,
    /// Namespace of the Saxml objects (default: the blueprint name).
    pub(super) namespace: Option<String>,
    /// Prefix of the components' Kubernetes service accounts, `<prefix>-<component>`
    /// (default `saxml`).
    pub(super) kubernetes_service_account: Option<String>,
    /// The TPU slice of each model-server replica (`slices` must stay 1).
    pub(super) tpu: TpuSpec,
    /// The model to serve.
    pub(super) model: ModelSpec,
    /// Saxml cell and images.
    #[serde(default)]
    pub(super) saxml: SaxmlSpec,
    /// The checkpoint conversion.
    #[serde(default)]
    pub(super) converter: ConverterSpec,
    /// The HTTP proxy in front of the model.
    #[serde(default)]
    pub(super) proxy: ProxySpec,
    /// Buckets: Sax admin root and model checkpoints.
    #[serde(default)]
    pub(super) buckets: Buckets,
    /// Artifact Registry repository for the images built for this blueprint.
    #[serde(default)]
    pub(super) registry: RegistrySpec,
    /// The Pub/Sub → BigQuery sink of load-test metrics.
    #[serde(default)]
    pub(super) performance_testing: MetricsSinkSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Pools {
    /// The Sax admin server's pool (default: one `n1-standard-8`).
    #[serde(default)]
    pub(super) admin: NodePoolSpec,
    /// The HTTP proxies' pool (default: `n1-standard-8`, autoscaling 1–3).
    #[serde(default)]
    pub(super) proxy: NodePoolSpec,
    /// Checkpoint conversion and other batch work (default: sized for the model,
    /// autoscaling 0–1).
    #[serde(default)]
    pub(super) auxiliary: NodePoolSpec,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ServiceAccounts {
    /// Account of the nodes.
    #[serde(default)]
    pub(super) nodes: ServiceAccountSpec,
    /// The admin server's: reads and writes the admin bucket (Sax's cell state).
    #[serde(default)]
    pub(super) admin: ServiceAccountSpec,
    /// The model servers': read the admin bucket (where the admin server is) and the
    /// checkpoints.
    #[serde(default)]
    pub(super) model_server: ServiceAccountSpec,
    /// The HTTP proxy's: reads the admin bucket.
    #[serde(default)]
    pub(super) proxy: ServiceAccountSpec,
    /// saxutil's and the publishing Job's: read the admin bucket.
    #[serde(default)]
    pub(super) util: ServiceAccountSpec,
    /// The checkpoint converter's: reads and writes the checkpoints bucket.
    #[serde(default)]
    pub(super) converter: ServiceAccountSpec,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ModelSpec {
    /// `llama2-7b`, `llama2-13b` or `llama2-70b`.
    pub(super) name: String,
    /// Saxml serving configuration class (default: the one `lm_cloud.py` has for the model on
    /// the slice); set it for a class your model-server image registers.
    pub(super) serving_config: Option<String>,
    /// Model-server replicas, one slice each (default 1).
    pub(super) replicas: Option<u32>,
    /// Folder of the Meta Llama 2 checkpoint to convert (default:
    /// `gs://<checkpoints bucket>/<model>/meta`).
    pub(super) meta_checkpoint: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SaxmlSpec {
    /// Sax cell name (default: the blueprint name).
    pub(super) cell: Option<String>,
    /// Images (default: the Saxml v1.2.0 release images).
    #[serde(default)]
    pub(super) images: Images,
    /// Date (`YYYY-MM-DD`) of the Saxml source the model-server image was built from, when
    /// it is not a release image.
    pub(super) source_date: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Images {
    pub(super) admin_server: Option<String>,
    pub(super) model_server: Option<String>,
    pub(super) util: Option<String>,
    pub(super) http: Option<String>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ConverterSpec {
    /// Converter image (default: `<registry>/checkpoint-converter:<model-server tag>`, built
    /// from `examples/sax/checkpoint-converter/Dockerfile`).
    pub(super) image: Option<String>,
    /// Render the conversion Job (default `true`).
    pub(super) enabled: Option<bool>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ProxySpec {
    /// Proxy pods, scaled on CPU between these bounds (default 1–3).
    pub(super) autoscaling: Option<ProxyAutoscaling>,
    /// An internal load balancer for clients outside the cluster, forwarding generation
    /// (`POST /generate`) only. Without it the proxy is a ClusterIP Service, reachable in
    /// the cluster only: its `/publish`, `/unpublish` and `/update` have no authentication.
    pub(super) load_balancer: Option<ProxyLoadBalancer>,
}

/// `spec.proxy.loadBalancer`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ProxyLoadBalancer {
    /// Client networks allowed to reach it (CIDR ranges, at least one).
    pub(super) source_ranges: Vec<String>,
}

#[derive(Clone, Copy, Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ProxyAutoscaling {
    /// Fewest proxy pods.
    pub(super) min_replicas: u32,
    /// Most proxy pods.
    pub(super) max_replicas: u32,
    /// Target average CPU utilisation, percent (default 70).
    pub(super) cpu_utilization: Option<u32>,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Buckets {
    /// Sax admin root (`sax-root`, `sax-fs-root`).
    #[serde(default)]
    pub(super) admin: BucketSpec,
    /// Meta and Pax checkpoints.
    #[serde(default)]
    pub(super) checkpoints: BucketSpec,
}

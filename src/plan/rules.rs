//! The ids of the findings planning reports about blueprints, with what each checks.

/// Ids of the findings planning reports about blueprints, one constant each so that a
/// misspelt id does not compile. [`RULES`] lists them with what each checks.
pub mod rule {
    /// A TPU type the catalog does not have.
    pub const TPU_TYPE_UNKNOWN: &str = "tpu-type-unknown";
    /// A topology that is not `AxB` or `AxBxC`.
    pub const TPU_TOPOLOGY_SYNTAX: &str = "tpu-topology-syntax";
    /// A topology that is no slice shape of the family.
    pub const TPU_TOPOLOGY_SHAPE: &str = "tpu-topology-shape";
    /// A topology that disagrees with the TPU type.
    pub const TPU_TOPOLOGY_MISMATCH: &str = "tpu-topology-mismatch";
    /// A slice count out of range, or several slices for a one-slice kind.
    pub const TPU_SLICES: &str = "tpu-slices";
    /// Several slices of a single-host type.
    pub const TPU_MULTISLICE_SINGLE_HOST: &str = "tpu-multislice-single-host";
    /// A TPU family the kind does not support.
    pub const TPU_FAMILY_UNSUPPORTED: &str = "tpu-family-unsupported";
    /// A TPU capacity choice that cannot work (a reservation without its name).
    pub const TPU_CAPACITY: &str = "tpu-capacity";
    /// A multi-host slice on on-demand capacity the zone may not have free (a warning).
    pub const TPU_CAPACITY_ON_DEMAND: &str = "tpu-capacity-on-demand";
    /// A GPU type the catalog does not have.
    pub const GPU_TYPE_UNKNOWN: &str = "gpu-type-unknown";
    /// GPUs per node that the machine type cannot carry.
    pub const GPU_COUNT: &str = "gpu-count";
    /// A machine type of a family that does not carry the GPU at all.
    pub const GPU_MACHINE_TYPE: &str = "gpu-machine-type";
    /// A project id GCP would reject.
    pub const PROJECT_ID: &str = "gcp-project-id";
    /// A malformed region or zone, or a location outside the blueprint's region.
    pub const LOCATION: &str = "gcp-location";
    /// A GCP resource name GCP would reject.
    pub const RESOURCE_NAME: &str = "gcp-resource-name";
    /// A service account id IAM would reject, or one account for two roles.
    pub const SERVICE_ACCOUNT_ID: &str = "gcp-service-account-id";
    /// A bucket name Cloud Storage would reject.
    pub const BUCKET_NAME: &str = "gcs-bucket-name";
    /// A cluster name GKE would reject.
    pub const GKE_NAME: &str = "gke-cluster-name";
    /// A malformed CIDR range, one with host bits set, or overlapping ranges.
    pub const NETWORK_CIDR: &str = "network-cidr";
    /// An empty or malformed list of networks allowed to reach a cluster's control plane.
    pub const AUTHORIZED_NETWORKS: &str = "authorized-networks";
    /// A maintenance window or exclusion GKE would refuse.
    pub const MAINTENANCE: &str = "maintenance-policy";
    /// Fields that contradict each other.
    pub const CONFLICT: &str = "blueprint-conflict";
    /// A node pool size that cannot work.
    pub const NODE_POOL_SIZE: &str = "node-pool-size";
    /// A Kubernetes name the API server would reject.
    pub const KUBERNETES_NAME: &str = "kubernetes-name";
    /// A reference to a blueprint that is missing or cannot serve it.
    pub const REFERENCE: &str = "blueprint-reference";
    /// A malformed or unpinned container image.
    pub const IMAGE: &str = "image-reference";
    /// An environment variable name Kubernetes would reject.
    pub const ENV_NAME: &str = "env-name";
    /// A malformed Vertex AI TensorBoard resource name.
    pub const TENSORBOARD: &str = "tensorboard-resource-name";
    /// A JobSet restart budget beyond any use.
    pub const MAX_RESTARTS: &str = "max-restarts";
    /// More GPUs per serving pod than a node has.
    pub const GPUS_PER_POD: &str = "gpus-per-pod";
    /// Autoscaler bounds that cannot work (no replica, minimum above maximum, target out of
    /// range).
    pub const AUTOSCALING_BOUNDS: &str = "autoscaling-bounds";
    /// An autoscaler maximum the GPU pool cannot hold.
    pub const AUTOSCALING_CAPACITY: &str = "autoscaling-capacity";
    /// An endpoint reachable from outside the cluster without what protects it: a public
    /// ingress without TLS or authentication, a load balancer open to every source.
    pub const INGRESS_UNPROTECTED: &str = "ingress-unprotected";
}

/// Every blueprint-level rule, with what it checks.
pub const RULES: &[crate::diagnostic::Rule] = &[
    crate::diagnostic::Rule {
        id: rule::TPU_TYPE_UNKNOWN,
        summary: "`spec.tpu.type` is a TPU type of the catalog",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_SYNTAX,
        summary: "`spec.tpu.topology` is `AxB` or `AxBxC`",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_SHAPE,
        summary: "`spec.tpu.topology` is a slice shape of the family",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_MISMATCH,
        summary: "`spec.tpu.topology` agrees with `spec.tpu.type`",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_SLICES,
        summary: "`spec.tpu.slices` is within bounds and allowed by the kind",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_MULTISLICE_SINGLE_HOST,
        summary: "multislice runs on multi-host slices only",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_FAMILY_UNSUPPORTED,
        summary: "the kind supports the TPU family",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_CAPACITY,
        summary: "`spec.tpu.capacity` names what its type needs (a reservation by name)",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_CAPACITY_ON_DEMAND,
        summary: "multi-host slices say where their capacity comes from rather than hope for on-demand VMs",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_TYPE_UNKNOWN,
        summary: "`spec.gpu.type` is a GKE accelerator of the catalog",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_COUNT,
        summary: "the GPU count fits the machine type",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_MACHINE_TYPE,
        summary: "`spec.gpu.machineType` is of a machine family that carries the GPU",
    },
    crate::diagnostic::Rule {
        id: rule::PROJECT_ID,
        summary: "`spec.project` is a valid project id",
    },
    crate::diagnostic::Rule {
        id: rule::LOCATION,
        summary: "regions, zones and cluster locations are valid and agree",
    },
    crate::diagnostic::Rule {
        id: rule::RESOURCE_NAME,
        summary: "GCP resource names have the form GCP accepts",
    },
    crate::diagnostic::Rule {
        id: rule::SERVICE_ACCOUNT_ID,
        summary: "service account ids are valid and distinct",
    },
    crate::diagnostic::Rule {
        id: rule::BUCKET_NAME,
        summary: "bucket names have the form Cloud Storage accepts",
    },
    crate::diagnostic::Rule {
        id: rule::GKE_NAME,
        summary: "cluster names have the form GKE accepts",
    },
    crate::diagnostic::Rule {
        id: rule::NETWORK_CIDR,
        summary: "node, pod and service ranges are valid networks that do not overlap",
    },
    crate::diagnostic::Rule {
        id: rule::AUTHORIZED_NETWORKS,
        summary: "networks allowed to reach a control plane are valid ranges, and not an empty list",
    },
    crate::diagnostic::Rule {
        id: rule::MAINTENANCE,
        summary: "maintenance windows and exclusions have UTC times in order and scopes GKE takes",
    },
    crate::diagnostic::Rule {
        id: rule::CONFLICT,
        summary: "no two fields contradict each other",
    },
    crate::diagnostic::Rule {
        id: rule::NODE_POOL_SIZE,
        summary: "node pool sizes can work",
    },
    crate::diagnostic::Rule {
        id: rule::KUBERNETES_NAME,
        summary: "Kubernetes names are DNS-1123 labels",
    },
    crate::diagnostic::Rule {
        id: rule::REFERENCE,
        summary: "referenced blueprints exist and export what is asked of them",
    },
    crate::diagnostic::Rule {
        id: rule::IMAGE,
        summary: "container images are valid references with a tag or digest",
    },
    crate::diagnostic::Rule {
        id: rule::ENV_NAME,
        summary: "environment variable names are valid",
    },
    crate::diagnostic::Rule {
        id: rule::MAX_RESTARTS,
        summary: "`spec.training.maxRestarts` stays within a useful bound",
    },
    crate::diagnostic::Rule {
        id: rule::TENSORBOARD,
        summary: "TensorBoard resource names have Vertex AI's form",
    },
    crate::diagnostic::Rule {
        id: rule::GPUS_PER_POD,
        summary: "GPUs per serving pod fit one node of the GPU pool",
    },
    crate::diagnostic::Rule {
        id: rule::AUTOSCALING_BOUNDS,
        summary: "autoscaler bounds can work: 1 ≤ `minReplicas` ≤ `maxReplicas`, a target from 1 to 100%",
    },
    crate::diagnostic::Rule {
        id: rule::AUTOSCALING_CAPACITY,
        summary: "the autoscaler's most replicas fit the GPU pool at its largest",
    },
    crate::diagnostic::Rule {
        id: rule::INGRESS_UNPROTECTED,
        summary: "a public ingress has TLS and authentication; a load balancer names its sources",
    },
];

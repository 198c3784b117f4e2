//! Validation rules over Kubernetes objects.
//!
//! Rules run on the rendered objects of every render and on any manifests given to
//! `kubectl aiml validate`. They read [`Object`]s (a parsed [`Node`] plus identity and file)
//! and return [`Diagnostic`]s; they never stop at the first finding. Objects of kinds no rule
//! knows are skipped, not errors, and [`applies_to`] says which objects any rule reads, so that
//! callers can count the others as not applicable. Cross-object rules (node pools vs
//! workloads, Kueue references and quota) look at the whole set at once.
//!
//! Layout, in two layers. `model` reads objects once: pod templates with what their pods
//! select and request (`model::workload`), node pools (`model::nodepool`), the TPU slice or
//! GPU a pod group targets (`model::accelerator`), what keeps a slice's pods together
//! (`model::placement`) and what HorizontalPodAutoscalers scale (`model::autoscaler`); it
//! makes no findings. `rules` holds one
//! module per rule family, each reading only the model, `rules::shared` (finding builders
//! several families use), the catalog and diagnostics, never another family; `tests/layers.rs`
//! keeps it so. This module owns the public surface ([`Object`], [`validate`], [`RULES`]
//! and the rule ids) and no rule logic: it reads the model, then runs each family. Facts about
//! accelerators come from [`crate::catalog`] only.
//!
//! Each defect is reported once, under the rule that names the object to fix: a bad topology
//! in a pod's `nodeSelector` is `tpu-topology-shape`, the same value in a `ResourceFlavor` is
//! `kueue-flavor-labels`, and in a node pool `nodepool-tpu-machine-topology`.

// Also read by `gitops::impact`, to count the accelerators of node pools and workloads.
pub(crate) mod model;
mod rules;
mod scope;

use crate::diagnostic::{self, Diagnostic, ObjectRef};
use crate::yaml::Node;

/// One Kubernetes object to validate.
#[derive(Clone, Debug)]
pub struct Object<'a> {
    /// Repository-relative path of the file the object came from (for diagnostics).
    pub file: &'a str,
    /// `apiVersion`, e.g. `jobset.x-k8s.io/v1alpha2`.
    pub api_version: &'a str,
    /// Identity: kind, namespace, name.
    pub id: ObjectRef,
    /// The whole object.
    pub node: &'a Node,
}

impl<'a> Object<'a> {
    /// Reads identity from a parsed document as [`crate::manifest::identity`] does; `None` when
    /// it has none (not a Kubernetes object). Rules take `id.name` for messages only: an object
    /// created with `metadata.generateName` may carry that prefix there, and rules that resolve
    /// references by name check `metadata.name` itself.
    #[must_use]
    pub fn from_node(file: &'a str, node: &'a Node) -> Option<Self> {
        let (api_version, id) = crate::manifest::identity(node)?;
        Some(Self {
            file,
            api_version,
            id,
            node,
        })
    }

    /// API group (`""` for the core group).
    #[must_use]
    pub fn group(&self) -> &'a str {
        crate::manifest::group_of(self.api_version)
    }

    /// The object as the API server reads it (`model::nulls`), when that differs from the text.
    fn served(&self) -> Option<Node> {
        model::nulls::served(self.node, self.group())
    }

    /// This object with `node` (its served form) in place of its text, when there is one.
    fn with_node<'b>(&self, node: Option<&'b Node>) -> Object<'b>
    where
        'a: 'b,
    {
        Object {
            node: node.unwrap_or(self.node),
            ..self.clone()
        }
    }
}

/// `objects` as the rules read them: each with its served form (from [`Object::served`]),
/// where it has one. Rules never see a `null` the server would drop.
fn as_served<'b>(objects: &[Object<'b>], served: &'b [Option<Node>]) -> Vec<Object<'b>> {
    objects
        .iter()
        .zip(served)
        .map(|(object, node)| object.with_node(node.as_ref()))
        .collect()
}

pub use crate::diagnostic::Rule;

/// Rule ids, one constant each, so that a misspelt id does not compile.
pub(crate) mod rule {
    pub const TPU_TOPOLOGY_SYNTAX: &str = "tpu-topology-syntax";
    pub const TPU_TOPOLOGY_SHAPE: &str = "tpu-topology-shape";
    pub const TPU_ACCELERATOR_UNKNOWN: &str = "tpu-accelerator-unknown";
    pub const TPU_SELECTOR_MISSING: &str = "tpu-selector-missing";
    pub const TPU_CHIPS_PER_HOST: &str = "tpu-chips-per-host";
    pub const TPU_HOSTS_PER_SLICE: &str = "tpu-hosts-per-slice";
    pub const JOBSET_MULTISLICE_SINGLE_HOST: &str = "jobset-multislice-single-host";
    pub const JOBSET_EXCLUSIVE_TOPOLOGY: &str = "jobset-exclusive-topology";
    pub const TPU_EXCLUSIVE_PLACEMENT: &str = "tpu-exclusive-placement";
    pub const GPU_SELECTOR_MISSING: &str = "gpu-selector-missing";
    pub const GPU_ACCELERATOR_UNKNOWN: &str = "gpu-accelerator-unknown";
    pub const GPU_COUNT_PER_POD: &str = "gpu-count-per-pod";
    pub const EXTENDED_RESOURCE_LIMIT: &str = "extended-resource-limit";
    pub const RESOURCE_REQUEST_ABOVE_LIMIT: &str = "resource-request-above-limit";
    pub const WORKLOAD_SPEC: &str = "workload-spec";
    pub const POD_SPEC_NAMES: &str = "pod-spec-names";
    pub const SERVICE_PORTS: &str = "service-ports";
    pub const HPA_SPEC: &str = "hpa-spec";
    pub const NETWORK_POLICY_PEER: &str = "network-policy-peer";
    pub const RBAC_RULE: &str = "rbac-rule";
    pub const PDB_SPEC: &str = "pdb-spec";
    pub const PRIORITY_CLASS_VALUE: &str = "priority-class-value";
    pub const CONFIG_DATA_KEYS: &str = "config-data-keys";
    pub const PVC_SPEC: &str = "pvc-spec";
    pub const CONTAINER_PROBES: &str = "container-probes";
    pub const NODEPOOL_TPU_MACHINE_TOPOLOGY: &str = "nodepool-tpu-machine-topology";
    pub const NODEPOOL_TPU_PLACEMENT: &str = "nodepool-tpu-placement";
    pub const NODEPOOL_TPU_NODE_COUNT: &str = "nodepool-tpu-node-count";
    pub const NODEPOOL_GPU_MACHINE: &str = "nodepool-gpu-machine";
    pub const COMPUTE_CLASS_ACCELERATOR: &str = "compute-class-accelerator";
    pub const ACCELERATOR_NO_NODE_POOL: &str = "accelerator-no-node-pool";
    pub const KUEUE_QUEUE_MISSING: &str = "kueue-queue-missing";
    pub const KUEUE_CLUSTERQUEUE_MISSING: &str = "kueue-clusterqueue-missing";
    pub const KUEUE_FLAVOR_MISSING: &str = "kueue-flavor-missing";
    pub const KUEUE_FLAVOR_LABELS: &str = "kueue-flavor-labels";
    pub const KUEUE_QUOTA: &str = "kueue-quota";
    pub const KUEUE_COVERED_RESOURCES: &str = "kueue-covered-resources";
    pub const HPA_REPLICA_BOUNDS: &str = "hpa-replica-bounds";
    pub const HPA_GPU_CAPACITY: &str = "hpa-gpu-capacity";
    pub const HPA_EXTERNAL_METRIC_SELECTOR: &str = "hpa-external-metric-selector";
    pub const POD_ALLOCATABLE: &str = "pod-allocatable";
    pub const ACCELERATOR_ZONE: &str = "accelerator-zone";
    pub const GPU_DRIVER_CUDA: &str = "gpu-driver-cuda";
    pub const POD_HOST_ACCESS: &str = "pod-host-access";
    pub const CONTAINER_SECURITY_CONTEXT: &str = "container-security-context";
    pub const NAMESPACE_NETWORK_POLICY: &str = "namespace-network-policy";
    pub const GATEWAY_UNAUTHENTICATED: &str = "gateway-unauthenticated";
    pub const IMAGE_UNPINNED: &str = "image-unpinned";
    pub const IMAGE_DIGEST: &str = "image-digest";
    pub const SERVICE_PUBLIC: &str = "service-public";
    pub const IAM_PROJECT_SCOPE: &str = "iam-project-scope";
}

/// Every rule, in the order the docs list them.
pub const RULES: &[Rule] = &[
    Rule {
        id: rule::TPU_TOPOLOGY_SYNTAX,
        summary: "a pod's `cloud.google.com/gke-tpu-topology` selector is of the form `AxB` or `AxBxC`",
    },
    Rule {
        id: rule::TPU_TOPOLOGY_SHAPE,
        summary: "a pod's TPU topology selector is a slice shape of the selected accelerator family",
    },
    Rule {
        id: rule::TPU_ACCELERATOR_UNKNOWN,
        summary: "a pod's `cloud.google.com/gke-tpu-accelerator` selector names a TPU family GKE has",
    },
    Rule {
        id: rule::TPU_SELECTOR_MISSING,
        summary: "a pod requesting `google.com/tpu` selects one TPU accelerator and one topology",
    },
    Rule {
        id: rule::TPU_CHIPS_PER_HOST,
        summary: "`google.com/tpu` per pod equals the chips on one VM of the selected slice",
    },
    Rule {
        id: rule::TPU_HOSTS_PER_SLICE,
        summary: "a slice gets one pod per VM, started as a group (Job parallelism, LeaderWorkerSet size…)",
    },
    Rule {
        id: rule::JOBSET_MULTISLICE_SINGLE_HOST,
        summary: "multislice JobSets (`replicas` > 1) run on multi-host slices only",
    },
    Rule {
        id: rule::JOBSET_EXCLUSIVE_TOPOLOGY,
        summary: "TPU JobSets give each slice its own node pool with the exclusive-topology annotation",
    },
    Rule {
        id: rule::TPU_EXCLUSIVE_PLACEMENT,
        summary: "multi-host TPU LeaderWorkerSet groups, sub-groups and Jobs each keep to a slice of their own",
    },
    Rule {
        id: rule::GPU_SELECTOR_MISSING,
        summary: "a pod requesting `nvidia.com/gpu` chooses its GPU model (accelerator, machine type, compute class or node pool)",
    },
    Rule {
        id: rule::GPU_ACCELERATOR_UNKNOWN,
        summary: "a pod's `cloud.google.com/gke-accelerator` selector names a GPU GKE has",
    },
    Rule {
        id: rule::GPU_COUNT_PER_POD,
        summary: "`nvidia.com/gpu` per pod does not exceed the GPUs on one node",
    },
    Rule {
        id: rule::EXTENDED_RESOURCE_LIMIT,
        summary: "extended resources (`nvidia.com/gpu`, `google.com/tpu`) and huge pages are limited, with any request equal to the limit, as the API server requires",
    },
    Rule {
        id: rule::RESOURCE_REQUEST_ABOVE_LIMIT,
        summary: "a container's `cpu`, `memory` or `ephemeral-storage` request is not above its limit, as the API server requires",
    },
    Rule {
        id: rule::WORKLOAD_SPEC,
        summary: "a workload's selector is set, not empty and matches its pod template, its pods restart as its kind allows, and a CronJob has a schedule and a job template",
    },
    Rule {
        id: rule::POD_SPEC_NAMES,
        summary: "container, port and volume names in a pod are well formed and unique, every volume mount names a volume, environment variable names are legal",
    },
    Rule {
        id: rule::CONTAINER_PROBES,
        summary: "a container's probe has exactly one handler, and a liveness or startup probe a `successThreshold` of 1",
    },
    Rule {
        id: rule::SERVICE_PORTS,
        summary: "a Service has ports (unless headless or `ExternalName`), named when several, unique, in range, with `targetPort` a number or a port name",
    },
    Rule {
        id: rule::HPA_SPEC,
        summary: "a HorizontalPodAutoscaler names its target and maximum, and each metric has a type, that type's source only, and its target's value",
    },
    Rule {
        id: rule::NETWORK_POLICY_PEER,
        summary: "a NetworkPolicy peer selects pods or namespaces, or is an `ipBlock` alone",
    },
    Rule {
        id: rule::RBAC_RULE,
        summary: "a Role or ClusterRole rule has verbs, and API groups with resources or (a ClusterRole's only) non-resource URLs",
    },
    Rule {
        id: rule::PDB_SPEC,
        summary: "a PodDisruptionBudget sets one of `minAvailable` and `maxUnavailable`, a count or a percentage up to 100%",
    },
    Rule {
        id: rule::PRIORITY_CLASS_VALUE,
        summary: "a PriorityClass has a value of at most 1000000000, and a `system-` name only for the cluster's own classes",
    },
    Rule {
        id: rule::CONFIG_DATA_KEYS,
        summary: "a ConfigMap's or Secret's keys are legal, its data at most 1 MiB, and a typed Secret has its type's keys",
    },
    Rule {
        id: rule::PVC_SPEC,
        summary: "a PersistentVolumeClaim has an access mode and a positive storage request",
    },
    Rule {
        id: rule::NODEPOOL_TPU_MACHINE_TOPOLOGY,
        summary: "a TPU node pool's machine type and `tpuTopology` form a slice GKE offers",
    },
    Rule {
        id: rule::NODEPOOL_TPU_PLACEMENT,
        summary: "multi-host TPU node pools use COMPACT placement (Ironwood: a workload policy); single-host ones none",
    },
    Rule {
        id: rule::NODEPOOL_TPU_NODE_COUNT,
        summary: "a multi-host TPU node pool has, and scales to, exactly one slice of nodes",
    },
    Rule {
        id: rule::NODEPOOL_GPU_MACHINE,
        summary: "a node pool's `guestAccelerator` type and count fit its machine type",
    },
    Rule {
        id: rule::COMPUTE_CLASS_ACCELERATOR,
        summary: "a ComputeClass priority's TPU type, topology and chips per node, and GPU type and count, form a node GKE can make",
    },
    Rule {
        id: rule::ACCELERATOR_NO_NODE_POOL,
        summary: "every accelerator workload has node pools in the set that match it and can hold it",
    },
    Rule {
        id: rule::POD_ALLOCATABLE,
        summary: "a pod's CPU, memory, ephemeral storage and huge pages fit the allocatable capacity of a node pool it can land on",
    },
    Rule {
        id: rule::ACCELERATOR_ZONE,
        summary: "TPU and GPU node pools, and the pods that pin a zone, are in a zone that offers the accelerator type",
    },
    Rule {
        id: rule::GPU_DRIVER_CUDA,
        summary: "a GPU image's CUDA version runs on the driver its node pools install (`gpuDriverVersion`)",
    },
    Rule {
        id: rule::KUEUE_QUEUE_MISSING,
        summary: "a `kueue.x-k8s.io/queue-name` label names a LocalQueue in the workload's namespace",
    },
    Rule {
        id: rule::KUEUE_CLUSTERQUEUE_MISSING,
        summary: "a LocalQueue's `clusterQueue` names a ClusterQueue in the set",
    },
    Rule {
        id: rule::KUEUE_FLAVOR_MISSING,
        summary: "every flavor a ClusterQueue lists is a ResourceFlavor in the set",
    },
    Rule {
        id: rule::KUEUE_FLAVOR_LABELS,
        summary: "a ResourceFlavor's TPU node labels are a known accelerator and a legal topology for it",
    },
    Rule {
        id: rule::KUEUE_QUOTA,
        summary: "a ClusterQueue's accelerator quota admits the workloads queued to it",
    },
    Rule {
        id: rule::KUEUE_COVERED_RESOURCES,
        summary: "a ClusterQueue covers every resource the pods queued to it request",
    },
    Rule {
        id: rule::HPA_REPLICA_BOUNDS,
        summary: "a HorizontalPodAutoscaler keeps 1 ≤ `minReplicas` ≤ `maxReplicas`",
    },
    Rule {
        id: rule::HPA_GPU_CAPACITY,
        summary: "at `maxReplicas`, the GPU pods a HorizontalPodAutoscaler scales fit the node pools in the set",
    },
    Rule {
        id: rule::HPA_EXTERNAL_METRIC_SELECTOR,
        summary: "a HorizontalPodAutoscaler's external metrics carry a selector",
    },
    Rule {
        id: rule::POD_HOST_ACCESS,
        summary: "pods outside GKE's namespaces do not use the node's network, processes or IPC, nor privileged containers",
    },
    Rule {
        id: rule::CONTAINER_SECURITY_CONTEXT,
        summary: "every container runs with a RuntimeDefault seccomp profile, no privilege escalation and all capabilities dropped",
    },
    Rule {
        id: rule::NAMESPACE_NETWORK_POLICY,
        summary: "in a set that writes NetworkPolicies, every namespaced pod is selected by a NetworkPolicy of its namespace",
    },
    Rule {
        id: rule::IMAGE_UNPINNED,
        summary: "container images name a release tag or a digest, not `latest` or nothing",
    },
    Rule {
        id: rule::IMAGE_DIGEST,
        summary: "where the repository requires digests, every image names one (`@sha256:…`)",
    },
    Rule {
        id: rule::SERVICE_PUBLIC,
        summary: "a `LoadBalancer` Service is internal or limited to source ranges",
    },
    Rule {
        id: rule::GATEWAY_UNAUTHENTICATED,
        summary: "a public Istio or GKE Gateway has an authenticating layer (Istio JWT policies, IAP or Cloud Armor)",
    },
    Rule {
        id: rule::IAM_PROJECT_SCOPE,
        summary: "roles that one resource can take are granted on that resource, not the project",
    },
    Rule {
        id: crate::secrets::RULE,
        summary: "no credential is written in a blueprint or manifest (Secrets and tokens are referenced)",
    },
];

/// Whether any manifest rule reads `object`: workloads with pod templates (Pods, Deployments,
/// ReplicaSets, StatefulSets, DaemonSets, Jobs, CronJobs, JobSets, LeaderWorkerSets, KubeRay
/// RayClusters, RayServices and RayJobs), Config Connector `ContainerNodePool`s, GKE
/// `ComputeClass`es, `HorizontalPodAutoscaler`s, Kueue `LocalQueue`s, `ClusterQueue`s and
/// `ResourceFlavor`s, any object queued to Kueue with `kueue.x-k8s.io/queue-name`,
/// `Secret`s, `Service`s, `NetworkPolicy`s, Istio and Gateway API `Gateway`s, `HTTPRoute`s,
/// GKE `GCPBackendPolicy`s, Istio `RequestAuthentication`s and `AuthorizationPolicy`s, Config Connector IAM grants on a `Project`,
/// and the built-in kinds whose Go validation a rule models (`ConfigMap`s,
/// `PersistentVolumeClaim`s, `Role`s, `ClusterRole`s, `PodDisruptionBudget`s, `PriorityClass`es). (Every object is also scanned for pasted credentials, which no summary needs to
/// count.) Every other object passes the rules unread, so a summary can count it as not
/// applicable instead of checked.
#[must_use]
pub fn applies_to(object: &Object<'_>) -> bool {
    model::workload::is_workload(object)
        || model::nodepool::is_node_pool(object)
        || model::accelerator::is_compute_class(object)
        || model::autoscaler::is_autoscaler(object)
        || rules::kueue::reads(object)
        || rules::secrets::reads(object)
        || rules::security::reads(object)
        || rules::network::reads(object)
        || rules::gateway::reads(object)
        || rules::apiserver::reads(object)
}

/// What the repository (`aiml.yaml`) or the command line asks beyond the rules' defaults.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Every image names its digest: a tag alone is an `image-digest` error
    /// (`images.requireDigests`, `--require-digests`).
    pub require_digests: bool,
}

/// Runs every rule over `objects` and returns the findings, sorted: [`check_each`] on every
/// object and [`check_together`] on the set.
#[must_use]
pub fn validate(objects: &[Object<'_>]) -> Vec<Diagnostic> {
    validate_with(objects, Policy::default())
}

/// [`validate`] under `policy`.
#[must_use]
pub fn validate_with(objects: &[Object<'_>], policy: Policy) -> Vec<Diagnostic> {
    // Each of the two reads the objects as the API server does (`Object::served`).
    let mut out = check_together(objects);
    for object in objects {
        out.extend(check_each_with(object, policy));
    }
    diagnostic::sort(&mut out);
    out
}

/// The rules that judge one object alone (pasted credentials, on any object; host access,
/// container security contexts, unpinned images, public Services, project-wide IAM grants;
/// container resources and the built-in kinds as the API server validates them). A caller that
/// streams many files runs this per object and keeps for [`check_together`] only the objects
/// that [`applies_to`] names.
#[must_use]
pub fn check_each(object: &Object<'_>) -> Vec<Diagnostic> {
    check_each_with(object, Policy::default())
}

/// [`check_each`] under `policy`.
#[must_use]
pub fn check_each_with(object: &Object<'_>, policy: Policy) -> Vec<Diagnostic> {
    let served = object.served();
    let object = &object.with_node(served.as_ref());
    let mut out = Vec::new();
    rules::secrets::check(std::slice::from_ref(object), &mut out);
    rules::security::check(object, policy, &mut out);
    rules::resources::check(object, &mut out);
    rules::apiserver::check(object, &mut out);
    out
}

/// The rules that judge objects together (pods against node pools, Kueue references and
/// quota, autoscalers, pods against NetworkPolicies, gateways against their authentication). They read only objects that [`applies_to`] names, and compare only
/// objects that can be on one cluster: a set that holds the same object twice is split by
/// folder, then file, until it does not (the `scope` module says how).
#[must_use]
pub fn check_together(objects: &[Object<'_>]) -> Vec<Diagnostic> {
    let served: Vec<Option<Node>> = objects.iter().map(Object::served).collect();
    let objects = &as_served(objects, &served)[..];
    let mut out = Vec::new();
    for members in scope::scopes(objects) {
        let set: Vec<Object<'_>> = members.into_iter().map(|i| objects[i].clone()).collect();
        check_scope(&set, &mut out);
    }
    diagnostic::sort(&mut out);
    out
}

/// Every cross-object rule over one scope's objects.
fn check_scope(objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    let pools = model::nodepool::pools(objects);
    let groups = model::pod_groups(objects, &pools);
    rules::tpu::check(&groups, out);
    rules::jobset::check(&groups, out);
    rules::placement::check(&groups, &pools, out);
    rules::gpu::check(&groups, out);
    rules::nodepool::check(&pools, out);
    rules::computeclass::check(&model::computeclass::compute_classes(objects), out);
    rules::cross::check(&groups, &pools, out);
    rules::fit::check(&groups, &pools, out);
    rules::zone::check(&groups, &pools, out);
    rules::driver::check(&groups, &pools, out);
    rules::kueue::check(objects, &groups, out);
    rules::network::check(objects, out);
    rules::gateway::check(objects, out);
    let autoscalers = model::autoscaler::autoscalers(objects);
    rules::autoscaling::check(&autoscalers, &groups, &pools, out);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    fn applies(text: &str) -> bool {
        let documents = parse_documents(text).unwrap();
        let object = Object::from_node("f.yaml", &documents[0]).unwrap();
        applies_to(&object)
    }

    #[test]
    fn applies_to_every_kind_a_rule_reads_and_nothing_else() {
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "StatefulSet"),
            ("batch/v1", "Job"),
            ("batch/v1", "CronJob"),
            ("jobset.x-k8s.io/v1alpha2", "JobSet"),
            ("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"),
            ("ray.io/v1", "RayCluster"),
            ("ray.io/v1", "RayService"),
            ("ray.io/v1", "RayJob"),
            (
                "container.cnrm.cloud.google.com/v1beta1",
                "ContainerNodePool",
            ),
            ("cloud.google.com/v1", "ComputeClass"),
            ("autoscaling/v2", "HorizontalPodAutoscaler"),
            ("autoscaling/v1", "HorizontalPodAutoscaler"),
            ("v1", "Service"),
            ("kueue.x-k8s.io/v1beta1", "LocalQueue"),
            ("kueue.x-k8s.io/v1beta1", "ClusterQueue"),
            ("kueue.x-k8s.io/v1beta1", "ResourceFlavor"),
            // The API server's Go validation (`rules::apiserver`).
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "PersistentVolumeClaim"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("policy/v1", "PodDisruptionBudget"),
            ("scheduling.k8s.io/v1", "PriorityClass"),
        ] {
            let text = format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n");
            assert!(applies(&text), "{kind}");
        }
        for (api_version, kind) in [
            ("v1", "Endpoints"),
            ("v1", "ServiceAccount"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("extensions/v1beta1", "Deployment"),
            ("example.com/v1", "Pod"),
            ("kueue.x-k8s.io/v1beta1", "Workload"),
        ] {
            let text = format!("apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n");
            assert!(!applies(&text), "{api_version} {kind}");
        }
        // Kueue reads the queue label of any object it admits.
        assert!(applies(
            "apiVersion: workload.codeflare.dev/v1beta2\nkind: AppWrapper\nmetadata:\n  name: x\n  labels: {kueue.x-k8s.io/queue-name: q}\n"
        ));
    }

    #[test]
    fn every_workload_kind_yields_its_pod_templates() {
        let documents = parse_documents(
            "apiVersion: ray.io/v1\nkind: RayJob\nmetadata: {name: j}\nspec:\n  rayClusterSpec:\n    headGroupSpec: {template: {spec: {containers: []}}}\n    workerGroupSpecs:\n    - {replicas: 2, numOfHosts: 4, template: {spec: {containers: []}}}\n",
        )
        .unwrap();
        let objects = [Object::from_node("f.yaml", &documents[0]).unwrap()];
        let templates = model::workload::templates(&objects);
        let paths: Vec<&str> = templates.iter().map(|t| t.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.rayClusterSpec.headGroupSpec.template.spec",
                "spec.rayClusterSpec.workerGroupSpecs[0].template.spec"
            ]
        );
        assert_eq!(templates[1].pods(), Some(8));
    }

    #[test]
    fn rule_ids_are_unique_kebab_case() {
        let mut ids: Vec<&str> = RULES.iter().map(|rule| rule.id).collect();
        for id in &ids {
            assert!(
                id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
                "{id}"
            );
        }
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), RULES.len());
    }
}

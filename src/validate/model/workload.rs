//! Where pods come from: the pod templates inside workload objects, what each pod selects and
//! requests, and how many pods a template makes.
//!
//! This module only reads objects as written and reports nothing: the rules decide what is
//! wrong, and [`crate::validate::model::accelerator`] what the selections mean.
//!
//! Counts follow the Kubernetes API defaults (`replicas: 1`, `parallelism: 1`, …), and resource
//! counts follow the scheduler: a pod needs the larger of what its app containers (plus sidecars)
//! need together and what its biggest one-off init container needs.

use std::collections::BTreeMap;

use crate::catalog::TPU_RESOURCE;
use crate::validate::Object;
use crate::validate::model::fields::{join, quantity, scalar_text};
use crate::yaml::Node;

/// Annotation that makes JobSet give each replicated job a topology domain of its own.
pub(crate) const EXCLUSIVE_TOPOLOGY_ANNOTATION: &str =
    "alpha.jobset.sigs.k8s.io/exclusive-topology";

/// Annotation that makes LeaderWorkerSet give each group a topology domain of its own.
pub(crate) const LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION: &str =
    "leaderworkerset.sigs.k8s.io/exclusive-topology";

/// Annotation that makes LeaderWorkerSet give each sub-group a topology domain of its own.
pub(crate) const LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION: &str =
    "leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology";

/// Label that queues a workload to a Kueue LocalQueue of its namespace.
pub(crate) const QUEUE_NAME_LABEL: &str = "kueue.x-k8s.io/queue-name";

/// The workload kinds this module reads pod templates from, as API group and kind.
pub(crate) const WORKLOAD_KINDS: &[(&str, &str)] = &[
    ("", "Pod"),
    ("apps", "Deployment"),
    ("apps", "ReplicaSet"),
    ("apps", "StatefulSet"),
    ("apps", "DaemonSet"),
    ("batch", "Job"),
    ("batch", "CronJob"),
    ("jobset.x-k8s.io", "JobSet"),
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"),
    (RAY_GROUP, "RayCluster"),
    (RAY_GROUP, "RayService"),
    (RAY_GROUP, "RayJob"),
];

/// API group of KubeRay's kinds.
const RAY_GROUP: &str = "ray.io";

/// Whether `object` is of a kind this module reads pod templates from.
pub(crate) fn is_workload(object: &Object<'_>) -> bool {
    WORKLOAD_KINDS
        .iter()
        .any(|(group, kind)| object.group() == *group && object.id.kind == *kind)
}

/// The `kueue.x-k8s.io/queue-name` label of an object, when it has one.
pub(crate) fn queue_label<'a>(object: &Object<'a>) -> Option<&'a Node> {
    object.node.at(&["metadata", "labels", QUEUE_NAME_LABEL])
}

/// A whole-number field with its API default applied, and where it is (or would be) written.
#[derive(Clone, Debug)]
pub(crate) struct Count<'a> {
    /// The value written, or the API default when the field is absent or not a whole number.
    pub value: i64,
    /// The node to point at: the value, or the mapping that should hold it.
    pub anchor: &'a Node,
    /// Dotted path of the field.
    pub field: String,
}

impl<'a> Count<'a> {
    /// Reads `key` of the mapping `parent` (at `parent_path`), defaulting to `default`.
    pub(crate) fn read(parent: &'a Node, parent_path: &str, key: &str, default: i64) -> Self {
        let node = parent.get(key);
        Self {
            value: node.and_then(Node::as_count).unwrap_or(default),
            anchor: node.unwrap_or(parent),
            field: join(parent_path, key),
        }
    }
}

/// The role of a pod template inside a LeaderWorkerSet group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GroupRole {
    /// `leaderTemplate`: one pod per group.
    Leader,
    /// `workerTemplate`: the other `size - 1` pods (all `size` when there is no leader template).
    Worker,
}

/// How a workload object turns one pod template into pods.
#[derive(Clone, Debug)]
pub(crate) enum Controller<'a> {
    /// A bare Pod.
    Pod,
    /// Deployment or ReplicaSet: interchangeable pods, started independently.
    ReplicaSet {
        /// `spec.replicas`.
        replicas: Count<'a>,
    },
    /// StatefulSet: numbered pods, started one by one (or in parallel) but not as a gang.
    StatefulSet {
        /// `spec.replicas`.
        replicas: Count<'a>,
    },
    /// DaemonSet: one pod per matching node.
    DaemonSet,
    /// Job, or the job template of a CronJob.
    Job(JobCounts<'a>),
    /// One entry of a JobSet's `replicatedJobs`.
    JobSet {
        /// `replicatedJobs[*].replicas`: how many copies of the Job (slices, for TPUs).
        replicas: Count<'a>,
        /// The Job's own counts.
        job: JobCounts<'a>,
        /// `alpha.jobset.sigs.k8s.io/exclusive-topology` on the JobSet or on the job template.
        exclusive_topology: Option<&'a Node>,
    },
    /// One of the two pod templates of a LeaderWorkerSet.
    LeaderWorkerSet(Box<LeaderWorkers<'a>>),
    /// One worker group of a KubeRay RayCluster (or of the cluster a RayService or RayJob
    /// makes): `replicas` copies of `numOfHosts` pods each.
    RayWorkers {
        /// `replicas`, kept between `minReplicas` and `maxReplicas` as KubeRay does.
        replicas: Count<'a>,
        /// `numOfHosts`: pods per replica, one per TPU VM of a multi-host slice (default 1).
        hosts: Count<'a>,
    },
    /// The head group of a Ray cluster: one pod.
    RayHead,
}

/// What a LeaderWorkerSet says about one of its pod templates.
#[derive(Clone, Debug)]
pub(crate) struct LeaderWorkers<'a> {
    /// `spec.replicas`: number of groups.
    pub replicas: Count<'a>,
    /// `spec.leaderWorkerTemplate.size`: pods per group, leader included.
    pub size: Count<'a>,
    /// Which template this is.
    pub role: GroupRole,
    /// The leader's pod spec when a separate `leaderTemplate` is written.
    pub leader: Option<&'a Node>,
    /// Whether the leader requests `google.com/tpu` itself (without a `leaderTemplate` the
    /// leader is made from the worker template and requests what the workers request).
    pub leader_on_slice: bool,
    /// `spec.leaderWorkerTemplate.subGroupPolicy`, when it sets `subGroupSize`.
    pub sub_group: Option<SubGroup<'a>>,
    /// `leaderworkerset.sigs.k8s.io/exclusive-topology` on the LeaderWorkerSet.
    pub exclusive_topology: Option<&'a Node>,
    /// `leaderworkerset.sigs.k8s.io/subgroup-exclusive-topology` on the LeaderWorkerSet.
    pub subgroup_exclusive_topology: Option<&'a Node>,
}

/// A LeaderWorkerSet's sub-group policy.
#[derive(Clone, Debug)]
pub(crate) struct SubGroup<'a> {
    /// `subGroupSize`: pods per sub-group.
    pub size: Count<'a>,
    /// `subGroupPolicyType: LeaderExcluded`: the leader is in no sub-group.
    pub leader_excluded: bool,
}

impl LeaderWorkers<'_> {
    /// TPU pods in one group: every pod, less the leader when it requests no chips.
    pub(crate) fn tpu_pods_per_group(&self) -> i64 {
        self.size.value - i64::from(!self.leader_on_slice)
    }

    /// Whether the sub-groups, not the groups, are the slices: `subGroupSize` is set and each
    /// sub-group gets a topology domain of its own (`subgroup-exclusive-topology`).
    pub(crate) fn slices_are_sub_groups(&self) -> bool {
        self.sub_group.is_some() && self.subgroup_exclusive_topology.is_some()
    }

    /// How the pods of one group fall into sub-groups, as LeaderWorkerSet's pod webhook assigns
    /// them: with `size - 1` (but not `size`) divisible by `subGroupSize` the leader is an extra
    /// pod of sub-group 0 (or of none, `LeaderExcluded`); otherwise it is one of sub-group 0's
    /// pods. Returns the TPU pods of each sub-group, in order; `None` without sub-groups or with
    /// a size the webhook rejects.
    pub(crate) fn tpu_pods_per_sub_group(&self) -> Option<Vec<i64>> {
        let sub_group = self.sub_group.as_ref()?;
        let (size, per) = (self.size.value, sub_group.size.value);
        if per < 1 || size < per {
            return None;
        }
        let leader_extra = (size - 1) % per == 0 && size % per != 0;
        if !leader_extra && size % per != 0 {
            return None;
        }
        let groups = if leader_extra {
            (size - 1) / per
        } else {
            size / per
        };
        let leader_tpu = i64::from(self.leader_on_slice);
        let first = if leader_extra {
            per + if sub_group.leader_excluded {
                0
            } else {
                leader_tpu
            }
        } else {
            per - 1 + leader_tpu
        };
        let mut counts = vec![first];
        counts.extend(std::iter::repeat_n(
            per,
            usize::try_from(groups - 1).unwrap_or(0),
        ));
        Some(counts)
    }
}

/// `parallelism` and `completions` of a Job template.
#[derive(Clone, Debug)]
pub(crate) struct JobCounts<'a> {
    /// `parallelism` (default 1).
    pub parallelism: Count<'a>,
    /// `completions` (defaults to `parallelism`, which is how many pods run at once without it).
    pub completions: Count<'a>,
}

impl<'a> JobCounts<'a> {
    fn read(job_spec: &'a Node, path: &str) -> Self {
        let parallelism = Count::read(job_spec, path, "parallelism", 1);
        let completions = Count::read(job_spec, path, "completions", parallelism.value);
        Self {
            parallelism,
            completions,
        }
    }
}

/// One pod template of a workload object.
#[derive(Clone, Debug)]
pub(crate) struct PodTemplate<'a> {
    /// The workload object.
    pub object: &'a Object<'a>,
    /// Dotted path of the pod spec inside the object.
    pub path: String,
    /// The pod spec (`containers`, `nodeSelector`, …).
    pub spec: &'a Node,
    /// The pod template's `metadata`, when written (for a bare Pod, the Pod's own).
    pub metadata: Option<&'a Node>,
    /// Dotted path of the pod template's `metadata`.
    pub metadata_path: String,
    /// How the object makes pods from it.
    pub controller: Controller<'a>,
}

impl<'a> PodTemplate<'a> {
    /// The kind, in backticks, for messages.
    pub(crate) fn kind(&self) -> String {
        format!("`{}`", self.object.id.kind)
    }

    /// An annotation of the pods, as a requirement with one value to point at.
    pub(crate) fn annotation(&self, key: &'a str) -> Option<Selection<'a>> {
        let node = self.metadata?.at(&["annotations", key])?;
        Some(Selection {
            key,
            values: scalar_text(node).into_iter().collect(),
            node,
            field: join(&join(&self.metadata_path, "annotations"), key),
        })
    }

    /// Pods this template makes at full size, when the object fixes that number.
    pub(crate) fn pods(&self) -> Option<i64> {
        match &self.controller {
            Controller::Pod => Some(1),
            Controller::ReplicaSet { replicas } | Controller::StatefulSet { replicas } => {
                Some(replicas.value)
            }
            Controller::DaemonSet => None,
            Controller::Job(job) => Some(job.parallelism.value.min(job.completions.value)),
            Controller::JobSet { replicas, job, .. } => {
                Some(replicas.value * job.parallelism.value.min(job.completions.value))
            }
            Controller::LeaderWorkerSet(lws) => {
                let per_group = match (lws.role, lws.leader) {
                    (GroupRole::Leader, _) => 1,
                    (GroupRole::Worker, Some(_)) => lws.size.value - 1,
                    (GroupRole::Worker, None) => lws.size.value,
                };
                Some(lws.replicas.value * per_group)
            }
            Controller::RayWorkers { replicas, hosts } => Some(replicas.value * hosts.value),
            Controller::RayHead => Some(1),
        }
    }
}

/// Every pod template of every workload object, in object order.
pub(crate) fn templates<'a>(objects: &'a [Object<'a>]) -> Vec<PodTemplate<'a>> {
    let mut templates = Vec::new();
    for object in objects {
        collect(object, &mut templates);
    }
    templates
}

fn collect<'a>(object: &'a Object<'a>, out: &mut Vec<PodTemplate<'a>>) {
    let node = object.node;
    // `path` is the pod template's (`spec.template`); a bare Pod is its own template.
    let mut push = |path: &str, template: Option<&'a Node>, controller: Controller<'a>| {
        let Some(spec) = template.and_then(|template| template.get("spec")) else {
            return;
        };
        out.push(PodTemplate {
            object,
            path: join(path, "spec"),
            spec,
            metadata: template.and_then(|template| template.get("metadata")),
            metadata_path: join(path, "metadata"),
            controller,
        });
    };
    let Some(spec) = node.get("spec") else { return };
    match (object.group(), object.id.kind.as_str()) {
        ("", "Pod") => push("", Some(node), Controller::Pod),
        ("apps", kind @ ("Deployment" | "ReplicaSet" | "StatefulSet")) => {
            let replicas = Count::read(spec, "spec", "replicas", 1);
            let controller = if kind == "StatefulSet" {
                Controller::StatefulSet { replicas }
            } else {
                Controller::ReplicaSet { replicas }
            };
            push("spec.template", spec.get("template"), controller);
        }
        ("apps", "DaemonSet") => {
            push("spec.template", spec.get("template"), Controller::DaemonSet);
        }
        ("batch", "Job") => {
            let job = JobCounts::read(spec, "spec");
            push("spec.template", spec.get("template"), Controller::Job(job));
        }
        ("batch", "CronJob") => {
            if let Some(job_spec) = spec.at(&["jobTemplate", "spec"]) {
                let job = JobCounts::read(job_spec, "spec.jobTemplate.spec");
                push(
                    "spec.jobTemplate.spec.template",
                    job_spec.get("template"),
                    Controller::Job(job),
                );
            }
        }
        ("jobset.x-k8s.io", "JobSet") => {
            let set_annotation =
                node.at(&["metadata", "annotations", EXCLUSIVE_TOPOLOGY_ANNOTATION]);
            let replicated = spec.items("replicatedJobs");
            for (index, replicated_job) in replicated.iter().enumerate() {
                let path = format!("spec.replicatedJobs[{index}]");
                let replicas = Count::read(replicated_job, &path, "replicas", 1);
                let Some(job_spec) = replicated_job.at(&["template", "spec"]) else {
                    continue;
                };
                let job = JobCounts::read(job_spec, &format!("{path}.template.spec"));
                // JobSet honours the annotation on the Job template as well as on the JobSet.
                let exclusive_topology = replicated_job
                    .at(&[
                        "template",
                        "metadata",
                        "annotations",
                        EXCLUSIVE_TOPOLOGY_ANNOTATION,
                    ])
                    .or(set_annotation);
                push(
                    &format!("{path}.template.spec.template"),
                    job_spec.get("template"),
                    Controller::JobSet {
                        replicas,
                        job,
                        exclusive_topology,
                    },
                );
            }
        }
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") => {
            let replicas = Count::read(spec, "spec", "replicas", 1);
            let Some(group) = spec.get("leaderWorkerTemplate") else {
                return;
            };
            let group_path = "spec.leaderWorkerTemplate";
            let size = Count::read(group, group_path, "size", 1);
            let leader = group.at(&["leaderTemplate", "spec"]);
            let leader_on_slice = match leader {
                Some(leader) => {
                    let path = format!("{group_path}.leaderTemplate.spec");
                    request(leader, &path, TPU_RESOURCE).is_some_and(|request| request.count > 0)
                }
                None => group
                    .at(&["workerTemplate", "spec"])
                    .and_then(|worker| request(worker, "", TPU_RESOURCE))
                    .is_some_and(|request| request.count > 0),
            };
            let policy_path = join(group_path, "subGroupPolicy");
            let sub_group = group.get("subGroupPolicy").and_then(|policy| {
                policy.get("subGroupSize")?;
                Some(SubGroup {
                    size: Count::read(policy, &policy_path, "subGroupSize", 1),
                    leader_excluded: policy.get("subGroupPolicyType").and_then(Node::as_str)
                        == Some("LeaderExcluded"),
                })
            });
            let annotation = |key| node.at(&["metadata", "annotations", key]);
            for (role, key) in [
                (GroupRole::Leader, "leaderTemplate"),
                (GroupRole::Worker, "workerTemplate"),
            ] {
                push(
                    &format!("{group_path}.{key}"),
                    group.get(key),
                    Controller::LeaderWorkerSet(Box::new(LeaderWorkers {
                        replicas: replicas.clone(),
                        size: size.clone(),
                        role,
                        leader,
                        leader_on_slice,
                        sub_group: sub_group.clone(),
                        exclusive_topology: annotation(LWS_EXCLUSIVE_TOPOLOGY_ANNOTATION),
                        subgroup_exclusive_topology: annotation(
                            LWS_SUBGROUP_EXCLUSIVE_TOPOLOGY_ANNOTATION,
                        ),
                    })),
                );
            }
        }
        (RAY_GROUP, kind @ ("RayCluster" | "RayService" | "RayJob")) => {
            // A RayService and a RayJob embed the spec of the RayCluster they create.
            let (cluster, cluster_path) = match kind {
                "RayService" => (spec.get("rayClusterConfig"), "spec.rayClusterConfig"),
                "RayJob" => (spec.get("rayClusterSpec"), "spec.rayClusterSpec"),
                _ => (Some(spec), "spec"),
            };
            let Some(cluster) = cluster else { return };
            push(
                &format!("{cluster_path}.headGroupSpec.template"),
                cluster.at(&["headGroupSpec", "template"]),
                Controller::RayHead,
            );
            let groups = cluster.items("workerGroupSpecs");
            for (index, worker_group) in groups.iter().enumerate() {
                let path = format!("{cluster_path}.workerGroupSpecs[{index}]");
                push(
                    &format!("{path}.template"),
                    worker_group.get("template"),
                    Controller::RayWorkers {
                        replicas: ray_replicas(worker_group, &path),
                        hosts: Count::read(worker_group, &path, "numOfHosts", 1),
                    },
                );
            }
        }
        _ => {}
    }
}

/// A Ray worker group's replicas as KubeRay runs them: `replicas` (default 0) raised to
/// `minReplicas` and capped at `maxReplicas`.
fn ray_replicas<'a>(worker_group: &'a Node, path: &str) -> Count<'a> {
    let mut replicas = Count::read(worker_group, path, "replicas", 0);
    let bound = |key| worker_group.get(key).and_then(Node::as_count);
    if let Some(min) = bound("minReplicas") {
        replicas.value = replicas.value.max(min);
    }
    if let Some(max) = bound("maxReplicas") {
        replicas.value = replicas.value.min(max);
    }
    replicas
}

/// A node label requirement of a pod: a key and the values it accepts.
#[derive(Clone, Debug)]
pub(crate) struct Selection<'a> {
    /// The label key.
    pub key: &'a str,
    /// Values accepted: one for `nodeSelector`, any number for an `In` expression.
    pub values: Vec<String>,
    /// The node to point at: the value, or the expression's `values` list.
    pub node: &'a Node,
    /// Dotted path of that node.
    pub field: String,
}

impl Selection<'_> {
    /// The single value the pod pins, if it pins exactly one.
    pub(crate) fn value(&self) -> Option<&str> {
        match self.values.as_slice() {
            [value] => Some(value),
            _ => None,
        }
    }

    /// Whether a node with `key` set to `value` satisfies this requirement.
    pub(crate) fn accepts(&self, value: &str) -> bool {
        self.values.iter().any(|accepted| accepted == value)
    }
}

/// The node label requirements of a pod spec: every `nodeSelector` entry, then every `In`
/// expression of required node affinity. Affinity terms are alternatives, so only a single
/// term is read; with several, no one term is guaranteed to apply.
pub(crate) fn selections<'a>(spec: &'a Node, path: &str) -> Vec<Selection<'a>> {
    let mut selections = Vec::new();
    let selector_path = join(path, "nodeSelector");
    for (key, value) in spec
        .get("nodeSelector")
        .and_then(Node::as_map)
        .unwrap_or(&[])
    {
        selections.push(Selection {
            key: &key.text,
            values: scalar_text(value).into_iter().collect(),
            node: value,
            field: join(&selector_path, &key.text),
        });
    }
    let terms_path = [
        "affinity",
        "nodeAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
        "nodeSelectorTerms",
    ];
    let terms = spec.at(&terms_path).and_then(Node::as_seq).unwrap_or(&[]);
    if let [term] = terms {
        let term_path = format!("{path}.{}[0].matchExpressions", terms_path.join("."));
        let expressions = term.items("matchExpressions");
        for (index, expression) in expressions.iter().enumerate() {
            let key = expression.get("key").and_then(Node::as_str);
            let operator = expression.get("operator").and_then(Node::as_str);
            let (Some(key), Some("In"), Some(values)) = (key, operator, expression.get("values"))
            else {
                continue;
            };
            selections.push(Selection {
                key,
                values: values
                    .as_seq()
                    .unwrap_or(&[])
                    .iter()
                    .filter_map(scalar_text)
                    .collect(),
                node: values,
                field: format!("{term_path}[{index}].values"),
            });
        }
    }
    selections
}

/// The first requirement on `key`; `nodeSelector` entries come first.
pub(crate) fn selection<'s, 'a>(
    selections: &'s [Selection<'a>],
    key: &str,
) -> Option<&'s Selection<'a>> {
    selections.iter().find(|selection| selection.key == key)
}

/// How much of one resource a pod asks for, and the container value to point at.
#[derive(Clone, Debug)]
pub(crate) struct Request<'a> {
    /// The effective per-pod count.
    pub count: i64,
    /// The first container value that contributes to it.
    pub node: &'a Node,
    /// Dotted path of that value.
    pub field: String,
}

/// One container and the path it is found at.
struct Container<'a> {
    node: &'a Node,
    path: String,
    /// An init container that runs to completion before the app containers start.
    one_off_init: bool,
}

fn containers<'a>(spec: &'a Node, path: &str) -> Vec<Container<'a>> {
    let mut all = Vec::new();
    for key in ["initContainers", "containers"] {
        for (index, node) in spec.items(key).iter().enumerate() {
            // An init container with `restartPolicy: Always` is a sidecar: it keeps running
            // beside the app containers, so its requests add up with theirs.
            let sidecar = node.get("restartPolicy").and_then(Node::as_str) == Some("Always");
            all.push(Container {
                node,
                path: format!("{}[{index}]", join(path, key)),
                one_off_init: key == "initContainers" && !sidecar,
            });
        }
    }
    all
}

/// Every container of a pod spec (init containers first) with its dotted path.
pub(crate) fn container_nodes<'a>(spec: &'a Node, path: &str) -> Vec<(&'a Node, String)> {
    containers(spec, path)
        .into_iter()
        .map(|container| (container.node, container.path))
        .collect()
}

/// The value a container asks for of `resource`, read by `read`: the first of `kinds`
/// (`limits`, `requests`) that holds it.
fn container_value<'a, T>(
    container: &Container<'a>,
    resource: &str,
    kinds: [&str; 2],
    read: fn(&Node) -> Option<T>,
) -> Option<(T, &'a Node, String)> {
    kinds.into_iter().find_map(|kind| {
        let value = container.node.at(&["resources", kind, resource])?;
        let amount = read(value)?;
        let field = join(&format!("{}.resources.{kind}", container.path), resource);
        Some((amount, value, field))
    })
}

/// The per-pod amount of `resource` as the scheduler sees it: app containers and sidecars
/// together, or the largest one-off init container when that is more; each container's value
/// from the first of `kinds` that holds it. With the first container value that contributes.
fn pod_total<'a, T>(
    spec: &'a Node,
    path: &str,
    resource: &str,
    kinds: [&str; 2],
    read: fn(&Node) -> Option<T>,
) -> Option<(T, &'a Node, String)>
where
    T: Copy + PartialOrd + std::ops::AddAssign,
{
    let mut running: Option<(T, &'a Node, String)> = None;
    let mut largest_init: Option<(T, &'a Node, String)> = None;
    for container in containers(spec, path) {
        let Some((amount, node, field)) = container_value(&container, resource, kinds, read) else {
            continue;
        };
        if container.one_off_init {
            if largest_init.as_ref().is_none_or(|init| amount > init.0) {
                largest_init = Some((amount, node, field));
            }
        } else if let Some(total) = running.as_mut() {
            total.0 += amount;
        } else {
            running = Some((amount, node, field));
        }
    }
    match (running, largest_init) {
        (Some(running), Some(init)) if init.0 > running.0 => Some(init),
        (Some(running), _) => Some(running),
        (None, init) => init,
    }
}

/// The per-pod count of an integer resource such as `google.com/tpu`, as the scheduler sees it
/// (each container's limit, or its request when no limit is written); `None` when no container
/// asks for it.
pub(crate) fn request<'a>(spec: &'a Node, path: &str, resource: &str) -> Option<Request<'a>> {
    let (count, node, field) =
        pod_total(spec, path, resource, ["limits", "requests"], Node::as_count)?;
    Some(Request { count, node, field })
}

/// How much of a resource measured in quantities (`cpu`, `memory`, `ephemeral-storage`,
/// `hugepages-2Mi`) a pod asks for, in the resource's base unit (cores, bytes).
#[derive(Clone, Debug)]
pub(crate) struct Amount<'a> {
    /// The effective per-pod amount.
    pub amount: f64,
    /// The first container value that contributes to it.
    pub node: &'a Node,
    /// Dotted path of that value.
    pub field: String,
}

/// Reads a quantity node (`500m`, `8Gi`, `2`) into its base unit.
fn quantity_of(node: &Node) -> Option<f64> {
    scalar_text(node).and_then(|text| quantity(&text))
}

/// The per-pod request of a quantity resource as the scheduler counts it: each container's
/// request, or its limit when only a limit is written (Kubernetes then sets the request to
/// it); `None` when no container asks for it.
pub(crate) fn amount<'a>(spec: &'a Node, path: &str, resource: &str) -> Option<Amount<'a>> {
    let (amount, node, field) =
        pod_total(spec, path, resource, ["requests", "limits"], quantity_of)?;
    Some(Amount {
        amount,
        node,
        field,
    })
}

/// Every resource name any container of the pod requests or limits, with the first place it is
/// written, in name order.
pub(crate) fn requested_resources<'a>(
    spec: &'a Node,
    path: &str,
) -> BTreeMap<&'a str, (&'a Node, String)> {
    let mut resources = BTreeMap::new();
    for container in containers(spec, path) {
        for kind in ["requests", "limits"] {
            let entries = container
                .node
                .at(&["resources", kind])
                .and_then(Node::as_map);
            for (key, value) in entries.unwrap_or(&[]) {
                resources.entry(key.text.as_str()).or_insert_with(|| {
                    (
                        value,
                        join(&format!("{}.resources.{kind}", container.path), &key.text),
                    )
                });
            }
        }
    }
    resources
}

/// A toleration of a pod.
#[derive(Clone, Debug)]
pub(crate) struct Toleration {
    key: Option<String>,
    exists: bool,
    value: Option<String>,
    effect: Option<String>,
}

impl Toleration {
    /// A toleration for every taint with `key`, as GKE adds to pods that request `key`.
    pub(crate) fn for_key(key: &str) -> Self {
        Self {
            key: Some(key.to_string()),
            exists: true,
            value: None,
            effect: None,
        }
    }

    /// Whether this toleration tolerates a taint (`effect` in the Kubernetes spelling).
    pub(crate) fn tolerates(&self, key: &str, value: &str, effect: &str) -> bool {
        let key_matches = match &self.key {
            None => self.exists,
            Some(own) => own == key,
        };
        let value_matches = self.exists || self.value.as_deref().unwrap_or("") == value;
        let effect_matches = self.effect.as_deref().is_none_or(|own| own == effect);
        key_matches && value_matches && effect_matches
    }
}

/// The tolerations written in a pod spec.
pub(crate) fn tolerations(spec: &Node) -> Vec<Toleration> {
    let text = |node: &Node, key: &str| {
        node.get(key)
            .and_then(scalar_text)
            .filter(|text| !text.is_empty())
    };
    spec.items("tolerations")
        .iter()
        .map(|toleration| Toleration {
            key: text(toleration, "key"),
            exists: text(toleration, "operator").as_deref() == Some("Exists"),
            value: text(toleration, "value"),
            effect: text(toleration, "effect"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::model::spec;

    #[test]
    fn sums_app_containers_and_sidecars_but_not_one_off_init_containers() {
        let pod = spec(
            "initContainers:\n- name: fetch\n  resources: {limits: {google.com/tpu: 2}}\n\
             - name: proxy\n  restartPolicy: Always\n  resources: {requests: {google.com/tpu: \"1\"}}\n\
             containers:\n- name: a\n  resources: {limits: {google.com/tpu: 4}}\n",
        );
        let request = request(&pod, "spec", "google.com/tpu").unwrap();
        assert_eq!(request.count, 5);
        assert_eq!(
            request.field,
            "spec.initContainers[1].resources.requests['google.com/tpu']"
        );
    }

    #[test]
    fn a_large_init_container_sets_the_pod_request() {
        let pod = spec(
            "initContainers:\n- resources: {limits: {nvidia.com/gpu: 4}}\n\
             containers:\n- resources: {limits: {nvidia.com/gpu: 1}}\n",
        );
        assert_eq!(request(&pod, "spec", "nvidia.com/gpu").unwrap().count, 4);
        assert!(request(&pod, "spec", "google.com/tpu").is_none());
    }

    #[test]
    fn reads_single_term_affinity_and_node_selector() {
        let pod = spec(
            "nodeSelector: {cloud.google.com/gke-tpu-topology: 2x2x4}\n\
             affinity:\n  nodeAffinity:\n    requiredDuringSchedulingIgnoredDuringExecution:\n      \
             nodeSelectorTerms:\n      - matchExpressions:\n        \
             - {key: cloud.google.com/gke-tpu-accelerator, operator: In, values: [tpu-v4-podslice]}\n",
        );
        let all = selections(&pod, "spec");
        let accelerator = selection(&all, "cloud.google.com/gke-tpu-accelerator").unwrap();
        assert_eq!(accelerator.value(), Some("tpu-v4-podslice"));
        assert_eq!(
            accelerator.field,
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values"
        );
        assert_eq!(
            selection(&all, "cloud.google.com/gke-tpu-topology")
                .unwrap()
                .value(),
            Some("2x2x4")
        );
    }

    /// The worker template's LeaderWorkerSet controller of a LeaderWorkerSet document.
    fn lws_counts(text: &str) -> Option<Vec<i64>> {
        let documents = crate::yaml::parse_documents(text).unwrap();
        let objects = [Object::from_node("f.yaml", &documents[0]).unwrap()];
        let templates = templates(&objects);
        let worker = templates
            .iter()
            .find_map(|template| match &template.controller {
                Controller::LeaderWorkerSet(lws) if lws.role == GroupRole::Worker => {
                    Some(lws.clone())
                }
                _ => None,
            });
        worker.unwrap().tpu_pods_per_sub_group()
    }

    fn lws(size: i64, sub_group: &str, leader: &str) -> String {
        let worker = "    workerTemplate:\n      spec:\n        containers:\n        - resources: {limits: {google.com/tpu: 4}}\n";
        format!(
            "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: l}}\nspec:\n  leaderWorkerTemplate:\n    size: {size}\n    subGroupPolicy: {{{sub_group}}}\n{leader}{worker}"
        )
    }

    #[test]
    fn sub_groups_follow_the_lws_webhook() {
        let chipless_leader =
            "    leaderTemplate:\n      spec:\n        containers: [{name: proxy}]\n";
        // `size - 1` divisible: the chipless leader is an extra pod of sub-group 0.
        assert_eq!(
            lws_counts(&lws(5, "subGroupSize: 2", chipless_leader)),
            Some(vec![2, 2])
        );
        // `size` divisible: the leader takes one of sub-group 0's places.
        assert_eq!(
            lws_counts(&lws(4, "subGroupSize: 2", chipless_leader)),
            Some(vec![1, 2])
        );
        // Without a leader template the leader is a TPU pod like the workers.
        assert_eq!(lws_counts(&lws(4, "subGroupSize: 2", "")), Some(vec![2, 2]));
        assert_eq!(lws_counts(&lws(5, "subGroupSize: 2", "")), Some(vec![3, 2]));
        assert_eq!(
            lws_counts(&lws(
                5,
                "subGroupSize: 2, subGroupPolicyType: LeaderExcluded",
                ""
            )),
            Some(vec![2, 2])
        );
        // Sizes the webhook rejects, and no sub-groups at all.
        assert_eq!(lws_counts(&lws(5, "subGroupSize: 3", "")), None);
        assert_eq!(lws_counts(&lws(4, "subGroupSize: 8", "")), None);
        assert_eq!(lws_counts(&lws(4, "", "")), None);
    }

    #[test]
    fn ray_replicas_stay_between_min_and_max() {
        let replicas = |text: &str| {
            let node = spec(text);
            ray_replicas(&node, "spec.workerGroupSpecs[0]").value
        };
        assert_eq!(replicas("minReplicas: 2\n"), 2);
        assert_eq!(replicas("replicas: 5\nmaxReplicas: 3\n"), 3);
        assert_eq!(replicas("replicas: 1\n"), 1);
        assert_eq!(replicas("groupName: g\n"), 0);
    }

    #[test]
    fn tolerations_follow_kubernetes_matching() {
        let pod = spec(
            "tolerations:\n- {key: dedicated, operator: Equal, value: tpu, effect: NoSchedule}\n- {operator: Exists, effect: NoExecute}\n",
        );
        let all = tolerations(&pod);
        let tolerated = |key, value, effect| all.iter().any(|t| t.tolerates(key, value, effect));
        assert!(tolerated("dedicated", "tpu", "NoSchedule"));
        assert!(!tolerated("dedicated", "gpu", "NoSchedule"));
        assert!(tolerated("anything", "x", "NoExecute"));
        assert!(Toleration::for_key("google.com/tpu").tolerates(
            "google.com/tpu",
            "present",
            "NoSchedule"
        ));
    }
}

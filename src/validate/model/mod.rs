//! What validation reads out of objects before any rule runs: the pods of workload objects
//! ([`PodGroup`]s), the nodes of node pools ([`nodepool::NodePool`]s), and what keeps the pods
//! of one TPU slice together ([`placement`]).
//!
//! Models are read once and shared by every rule family. They record what objects say (with
//! Kubernetes and GKE defaults applied) and where they say it, and they resolve selectors
//! against the catalog; they make no findings and import nothing from the rules. A value the
//! catalog does not know leaves the model incomplete (no target), and the rule that owns the
//! defect reports it.
//!
//! Rules read objects as the API server reads them: [`nulls`] gives the object without the
//! `null`s the server drops (or reads as zero values), before any model or rule sees it.
//!
//! Inside the model, `fields` and `nulls` are leaves; `workload`, `nodepool`, `computeclass` and
//! `autoscaler` read objects; `accelerator`
//! resolves selections against the catalog, the node pools and the compute classes; this module
//! puts a pod template and what its pods select together, and says which node pools can take
//! them; `placement` reads how a pod group's slices are kept apart.

pub(crate) mod accelerator;
pub(crate) mod autoscaler;
pub(crate) mod computeclass;
pub(crate) mod fields;
pub(crate) mod nodepool;
pub(crate) mod nulls;
pub(crate) mod placement;
pub(crate) mod workload;

use crate::catalog::{
    COMPUTE_CLASS_LABEL, GPU_RESOURCE, Gpu, TPU_RESOURCE, TPU_SLICE_TOPOLOGY_ANNOTATION, TpuSlice,
};
use crate::validate::Object;
use crate::validate::model::accelerator::{
    GpuChoice, TpuTarget, gpu_choice, is_compute_class, selected_gpu,
};
use crate::validate::model::computeclass::{ClassTpu, class_tpus};
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::{
    Controller, PodTemplate, Request, Selection, Toleration, request, selections, tolerations,
};
use crate::yaml::Node;

/// A pod template with what its pods select and request, read once for every rule.
#[derive(Debug)]
pub(crate) struct PodGroup<'a> {
    /// The template.
    pub template: PodTemplate<'a>,
    /// Node label requirements.
    pub selections: Vec<Selection<'a>>,
    /// The `cloud.google.com/gke-tpu-slice-topology` annotation of the pods (GKE dynamic
    /// slicing), when written.
    pub slice_topology: Option<Selection<'a>>,
    /// `google.com/tpu` per pod, when above zero.
    pub tpu: Option<Request<'a>>,
    /// `nvidia.com/gpu` per pod, when above zero.
    pub gpu: Option<Request<'a>>,
    /// The TPU slice the pods select, when their selectors resolve against the catalog.
    pub tpu_target: Option<TpuTarget<'a>>,
    /// The GPU the pods select, when they select exactly one known GPU.
    pub gpu_target: Option<&'static Gpu>,
    /// How the pods choose the GPU of their nodes, when anything does.
    pub gpu_choice: Option<GpuChoice>,
    /// The TPU nodes of the compute classes in the set that the pods select (GKE then sets
    /// the accelerator and topology of the nodes from the class's priorities).
    pub class_tpus: Vec<ClassTpu>,
}

impl<'a> PodGroup<'a> {
    /// Reads a template: its selections, its accelerator requests and the accelerators it
    /// targets. Node pools settle TPU layouts the selectors leave open; node pools and compute
    /// classes tell which GPUs a pool or class selector chooses.
    pub(crate) fn new(
        template: PodTemplate<'a>,
        pools: &[NodePool<'_>],
        compute_classes: &[&Object<'_>],
    ) -> Self {
        let selections = selections(template.spec, &template.path);
        let slice_topology = template.annotation(TPU_SLICE_TOPOLOGY_ANNOTATION);
        let positive = |request: Option<Request<'a>>| request.filter(|request| request.count > 0);
        let tpu = positive(request(template.spec, &template.path, TPU_RESOURCE));
        let gpu = positive(request(template.spec, &template.path, GPU_RESOURCE));
        let tpu_target = TpuTarget::resolve(&selections, slice_topology.as_ref(), pools);
        let gpu_target = selected_gpu(&selections);
        let gpu_choice = gpu_choice(&selections, pools, compute_classes);
        let class_tpus = workload::selection(&selections, COMPUTE_CLASS_LABEL)
            .map(|class| {
                compute_classes
                    .iter()
                    .filter(|object| class.accepts(&object.id.name))
                    .flat_map(|object| class_tpus(object))
                    .collect()
            })
            .unwrap_or_default();
        Self {
            template,
            selections,
            slice_topology,
            tpu,
            gpu,
            tpu_target,
            gpu_target,
            gpu_choice,
            class_tpus,
        }
    }

    /// The layouts of the TPU slice these pods can be on: those whose VMs have the chips each
    /// pod requests and, for Jobs, whose hosts match `parallelism` (when the chips match none,
    /// `tpu-chips-per-host` reports it and the parallelism tells which layout is meant).
    pub(crate) fn slice_layouts(&self) -> Vec<&TpuSlice> {
        let (Some(target), Some(request)) = (&self.tpu_target, &self.tpu) else {
            return Vec::new();
        };
        let layouts = target.layouts_for(request.count);
        let parallelism = match &self.template.controller {
            Controller::Job(job) | Controller::JobSet { job, .. } => job.parallelism.value,
            _ => return layouts,
        };
        let by_parallelism: Vec<&TpuSlice> = layouts
            .iter()
            .copied()
            .filter(|slice| i64::from(slice.hosts()) == parallelism)
            .collect();
        if by_parallelism.is_empty() {
            layouts
        } else {
            by_parallelism
        }
    }

    /// The first requirement on `key`.
    pub(crate) fn selection(&self, key: &str) -> Option<&Selection<'a>> {
        workload::selection(&self.selections, key)
    }

    /// Why nodes of `pool` cannot take these pods (a label they select differently, a taint
    /// they do not tolerate), or `None` when they can.
    pub(crate) fn exclusion(&self, pool: &NodePool<'_>) -> Option<String> {
        for requirement in &self.selections {
            match pool.label(requirement.key) {
                Some(value) if !requirement.accepts(value) => {
                    return Some(format!("its nodes have `{}: {value}`", requirement.key));
                }
                None if pool.label_is_authoritative(requirement.key) => {
                    return Some(format!("its nodes have no `{}` label", requirement.key));
                }
                _ => {}
            }
        }
        let mut tolerations: Vec<Toleration> = tolerations(self.template.spec);
        // GKE adds these tolerations to pods that request the accelerator.
        if self.tpu.is_some() {
            tolerations.push(Toleration::for_key(TPU_RESOURCE));
        }
        if self.gpu.is_some() {
            tolerations.push(Toleration::for_key(GPU_RESOURCE));
        }
        pool.taints
            .iter()
            .filter(|(_, _, effect)| effect != "PreferNoSchedule")
            .find(|(key, value, effect)| {
                !tolerations.iter().any(|t| t.tolerates(key, value, effect))
            })
            .map(|(key, value, effect)| {
                format!("the pods do not tolerate its taint `{key}={value}:{effect}`")
            })
    }

    /// The node pools of `pools` whose nodes can take these pods.
    pub(crate) fn matching_pools<'p, 'n>(
        &self,
        pools: &'p [NodePool<'n>],
    ) -> Vec<&'p NodePool<'n>> {
        pools
            .iter()
            .filter(|pool| self.exclusion(pool).is_none())
            .collect()
    }
}

/// Whether an object has a `metadata.name`: objects created with only `generateName` get a
/// name from the API server, so nothing can refer to them by name beforehand.
pub(crate) fn has_name(object: &Object<'_>) -> bool {
    object
        .node
        .at(&["metadata", "name"])
        .and_then(Node::as_str)
        .is_some_and(|name| !name.is_empty())
}

/// Every pod template of every workload object, in object order, read against `pools` and the
/// compute classes in `objects`.
pub(crate) fn pod_groups<'a>(
    objects: &'a [Object<'a>],
    pools: &[NodePool<'_>],
) -> Vec<PodGroup<'a>> {
    let compute_classes: Vec<&Object<'_>> = objects
        .iter()
        .filter(|object| is_compute_class(object) && has_name(object))
        .collect();
    workload::templates(objects)
        .into_iter()
        .map(|template| PodGroup::new(template, pools, &compute_classes))
        .collect()
}

/// The first document of `text`, for the tests of the model's readers.
#[cfg(test)]
pub(crate) fn spec(text: &str) -> Node {
    crate::yaml::parse_documents(text).unwrap().remove(0)
}

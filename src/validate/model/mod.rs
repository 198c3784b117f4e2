//! What validation reads out of objects before any rule runs: the pods of workload objects
//! ([`PodGroup`]s) and the nodes of node pools ([`nodepool::NodePool`]s).
//!
//! Models are read once and shared by every rule family. They record what objects say (with
//! Kubernetes and GKE defaults applied) and where they say it, and they resolve selectors
//! against the catalog; they make no findings and import nothing from the rules. A value the
//! catalog does not know leaves the model incomplete (no target), and the rule that owns the
//! defect reports it.
//!
//! Inside the model, `fields` is the leaf; `workload` and `nodepool` read objects; `accelerator`
//! resolves selections against the catalog and the node pools; this module puts a pod template
//! and what its pods select together.

pub(crate) mod accelerator;
pub(crate) mod fields;
pub(crate) mod nodepool;
pub(crate) mod workload;

use crate::catalog::{GPU_RESOURCE, Gpu, TPU_RESOURCE};
use crate::validate::Object;
use crate::validate::model::accelerator::{TpuTarget, selected_gpu};
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::{PodTemplate, Request, Selection, request, selections};

/// A pod template with what its pods select and request, read once for every rule.
#[derive(Debug)]
pub(crate) struct PodGroup<'a> {
    /// The template.
    pub template: PodTemplate<'a>,
    /// Node label requirements.
    pub selections: Vec<Selection<'a>>,
    /// `google.com/tpu` per pod, when above zero.
    pub tpu: Option<Request<'a>>,
    /// `nvidia.com/gpu` per pod, when above zero.
    pub gpu: Option<Request<'a>>,
    /// The TPU slice the pods select, when their selectors resolve against the catalog.
    pub tpu_target: Option<TpuTarget<'a>>,
    /// The GPU the pods select, when they select exactly one known GPU.
    pub gpu_target: Option<&'static Gpu>,
}

impl<'a> PodGroup<'a> {
    /// Reads a template: its selections, its accelerator requests and the accelerators it
    /// targets. Node pools settle TPU layouts the selectors leave open.
    pub(crate) fn new(template: PodTemplate<'a>, pools: &[NodePool<'_>]) -> Self {
        let selections = selections(template.spec, &template.path);
        let positive = |request: Option<Request<'a>>| request.filter(|request| request.count > 0);
        let tpu = positive(request(template.spec, &template.path, TPU_RESOURCE));
        let gpu = positive(request(template.spec, &template.path, GPU_RESOURCE));
        let tpu_target = TpuTarget::resolve(&selections, pools);
        let gpu_target = selected_gpu(&selections);
        Self {
            template,
            selections,
            tpu,
            gpu,
            tpu_target,
            gpu_target,
        }
    }

    /// The first requirement on `key`.
    pub(crate) fn selection(&self, key: &str) -> Option<&Selection<'a>> {
        workload::selection(&self.selections, key)
    }
}

/// Every pod template of every workload object, in object order, read against `pools`.
pub(crate) fn pod_groups<'a>(
    objects: &'a [Object<'a>],
    pools: &[NodePool<'_>],
) -> Vec<PodGroup<'a>> {
    workload::templates(objects)
        .into_iter()
        .map(|template| PodGroup::new(template, pools))
        .collect()
}

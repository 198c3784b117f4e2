//! Planning a blueprint of a repository kind through the shared blocks, into the context
//! its templates see.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value as Json;

use super::definition::Accelerator;
use super::spec::SharedSpec;
use super::{DEFAULT_REGION, Inner};
use crate::accelerator::{self, GpuPlan, TpuPlan, TpuSupport};
use crate::blueprint::Blueprint;
use crate::catalog::GPU_ACCELERATOR_LABEL;
use crate::gcp::{self, Addons};
use crate::kinds::{Compiled, Spec};
use crate::overlay::site::{
    Accounts, BLUEPRINT_LABEL, BUCKET_USER_ROLES, Location, SYSTEM_POOL, Site, accounts, gpu_pool,
    pool_labels, tpu_node_selector,
};
use crate::overlay::{Overlay, Plane, TemplateError, stanzas};
use crate::plan::{Exports, Planner};

/// A blueprint of a repository kind, read.
pub(super) struct RepositorySpec {
    pub(super) kind: Arc<Inner>,
    pub(super) shared: SharedSpec,
    pub(super) parameters: Json,
}

/// What a kind's templates see.
#[derive(Debug, Serialize)]
pub(super) struct TemplateContext<'a> {
    /// The blueprint's `metadata.name`.
    pub(super) name: String,
    /// Namespace of the workload objects.
    pub(super) namespace: String,
    pub(super) project: String,
    pub(super) region: String,
    pub(super) zone: String,
    /// The Kubernetes service account bound to the Workload Identity account.
    pub(super) kubernetes_service_account: String,
    /// Email of the Workload Identity account.
    pub(super) workload_service_account: String,
    /// Email of the nodes' account.
    pub(super) node_service_account: String,
    pub(super) cluster: ClusterContext,
    /// Selects this blueprint's accelerator nodes (TPU or GPU), else empty.
    pub(super) node_selector: BTreeMap<String, String>,
    /// The TPU plan: `type_name`, `topology`, `hosts`, `chips_per_host`, `slices`, …
    pub(super) tpu: Option<TpuPlan>,
    pub(super) gpu: Option<GpuContext>,
    pub(super) bucket: Option<BucketContext>,
    /// The kind's own spec fields, checked, with their defaults.
    pub(super) parameters: &'a Json,
}

#[derive(Debug, Serialize)]
pub(super) struct ClusterContext {
    pub(super) name: String,
    pub(super) location: String,
    pub(super) project: String,
}

#[derive(Debug, Serialize)]
pub(super) struct GpuContext {
    pub(super) accelerator: &'static str,
    pub(super) count: u32,
    pub(super) machine_type: String,
    pub(super) pool: String,
    pub(super) min_nodes: u32,
    pub(super) max_nodes: u32,
}

#[derive(Debug, Serialize)]
pub(super) struct BucketContext {
    pub(super) name: String,
    pub(super) url: String,
}

impl RepositorySpec {
    /// The kind's region and zone (its zone goes with its region); a zonal cluster.
    fn location(&self) -> Location<'_> {
        let definition = &self.kind.definition;
        Location {
            zone: definition.zone.as_deref(),
            ..Location::zonal(definition.region.as_deref().unwrap_or(DEFAULT_REGION), "a")
        }
    }

    #[expect(
        clippy::too_many_lines,
        reason = "a recipe reads best top to bottom: blocks, checks, then the context"
    )]
    fn plan(
        &self,
        planner: &mut Planner<'_>,
    ) -> Option<(gcp::Infrastructure, TemplateContext<'_>, String)> {
        let spec = &self.shared;
        let kind = &self.kind;
        let definition = &kind.definition;
        let name = planner.name().to_string();
        let (site, mut gcp) = Site::open(planner, stanzas!(spec), &self.location());
        let tpu = match (&definition.accelerator, &spec.tpu) {
            (Accelerator::Tpu, Some(tpu)) => Some(accelerator::resolve_tpu(
                planner,
                tpu,
                TpuSupport {
                    kind: &kind.name,
                    families: &kind.tpu_families,
                    multislice: definition.tpu.multislice,
                    // The autoscaler keeps a slice while any pod needs it, and only then.
                    idle: accelerator::Idle::Release,
                    queued_provisioning: false,
                },
            )?),
            _ => None,
        };
        let gpu: Option<GpuPlan> = match (&definition.accelerator, &spec.gpu) {
            (Accelerator::Gpu, Some(gpu)) => Some(accelerator::resolve_gpu(planner, gpu)?),
            _ => None,
        };
        let (namespace, kubernetes_service_account) = site.names(
            planner,
            definition
                .kubernetes_service_account
                .as_deref()
                .unwrap_or("workload"),
        );
        let accounts = Accounts::plan(
            &mut gcp,
            planner,
            &[],
            accounts!(spec),
            (
                &format!("GKE {} nodes", kind.name),
                &format!("{} workloads", kind.name),
            ),
        )
        .distinct(planner);
        let cluster = site.cluster(
            &mut gcp,
            planner,
            Addons::default(),
            &accounts.nodes,
            Some(SYSTEM_POOL),
        )?;
        accounts.bind(
            &mut gcp,
            &cluster,
            (&namespace, &kubernetes_service_account),
            &[],
        );
        let bucket = definition.bucket.then(|| {
            let bucket = gcp.bucket(planner, &spec.bucket, "spec.bucket", &site.bucket_name(""));
            for role in BUCKET_USER_ROLES {
                gcp.bucket_role(&bucket, &accounts.workload, role);
            }
            BucketContext {
                url: bucket.url(),
                name: bucket.name,
            }
        });
        if planner.has_errors() {
            return None;
        }
        let pool_labels = pool_labels(&name);
        let mut node_selector = BTreeMap::new();
        let mut description = "no accelerator".to_string();
        if let Some(tpu) = &tpu {
            accelerator::check_obtainable(planner, tpu);
            gcp.tpu_pools(&cluster, tpu, &accounts.nodes, &pool_labels);
            node_selector = tpu_node_selector(tpu, &name);
            description = format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology);
        }
        let gpu = gpu.map(|gpu| {
            let pool = gcp.sized_gpu_pool(
                planner,
                &cluster,
                &gpu,
                &spec.gpu_pool,
                &gpu_pool(&name),
                &accounts.nodes,
            );
            node_selector.insert(
                GPU_ACCELERATOR_LABEL.to_string(),
                gpu.accelerator.to_string(),
            );
            node_selector.insert(BLUEPRINT_LABEL.to_string(), name.clone());
            description = format!("{} × {} per node", gpu.count, gpu.accelerator);
            GpuContext {
                accelerator: gpu.accelerator,
                count: gpu.count,
                machine_type: gpu.machine_type,
                pool: pool.name,
                min_nodes: pool.min_nodes,
                max_nodes: pool.max_nodes,
            }
        });
        if planner.has_errors() {
            return None;
        }
        let context = TemplateContext {
            name,
            namespace,
            project: spec.project.clone(),
            region: site.region,
            zone: site.zone,
            kubernetes_service_account,
            workload_service_account: accounts.workload.email,
            node_service_account: accounts.nodes.email,
            cluster: ClusterContext {
                name: cluster.name,
                location: cluster.location,
                project: cluster.project,
            },
            node_selector,
            tpu,
            gpu,
            bucket,
            parameters: &self.parameters,
        };
        Some((gcp.finish(), context, description))
    }
}

impl Spec for RepositorySpec {
    fn exports(&self, blueprint: &Blueprint<'_>) -> Exports {
        stanzas!(self.shared).exports(blueprint.name, &self.location())
    }

    fn compile(&self, planner: &mut Planner<'_>) -> Result<Option<Compiled>, TemplateError> {
        let Some((infra, context, description)) = self.plan(planner) else {
            return Ok(None);
        };
        let blueprint = planner.blueprint();
        let mut overlay = Overlay::default();
        overlay.add_infrastructure(blueprint, &infra)?;
        let workload = self.kind.render(blueprint.name, &context)?;
        if !workload.trim().is_empty() {
            overlay.add_target(Plane::Workload, blueprint, workload)?;
        }
        Ok(Some(Compiled {
            overlay,
            description,
        }))
    }
}

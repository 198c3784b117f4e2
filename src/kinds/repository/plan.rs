//! Planning a blueprint of a repository kind through the shared blocks, into the context
//! its templates see.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value as Json;

use super::definition::Accelerator;
use super::spec::SharedSpec;
use super::{BLUEPRINT_LABEL, DEFAULT_REGION, Inner};
use crate::accelerator::{self, GpuPlan, TpuPlan, TpuSupport};
use crate::blueprint::Blueprint;
use crate::catalog::{GPU_ACCELERATOR_LABEL, TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL};
use crate::gcp::{self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, GpuPoolDefaults, Scale};
use crate::kinds::{Compiled, Spec};
use crate::names::check_dns_label;
use crate::overlay::Plane;
use crate::overlay::{Overlay, TemplateError};
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

/// Project roles of the node service account: GKE's minimal node role and image pulls.
pub(super) const NODE_PROJECT_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
];
/// Roles of the workload account on the blueprint's bucket.
pub(super) const BUCKET_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectUser",
];

impl RepositorySpec {
    fn region_and_zone(&self, borrowed: Option<&crate::plan::ClusterExport>) -> (String, String) {
        let spec = &self.shared;
        let definition = &self.kind.definition;
        let region = spec
            .region
            .clone()
            .or_else(|| borrowed.map(|c| c.region.clone()))
            .or_else(|| definition.region.clone())
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let zone = spec.zone.clone().unwrap_or_else(|| {
            if let Some(cluster) = borrowed.filter(|c| crate::names::zone(&c.location).is_ok()) {
                return cluster.location.clone();
            }
            match &definition.zone {
                // The kind's zone goes with the kind's region.
                Some(zone) if spec.region.is_none() && borrowed.is_none() => zone.clone(),
                _ => format!("{region}-a"),
            }
        });
        (region, zone)
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
        let borrowed = spec
            .cluster
            .blueprint
            .as_deref()
            .and_then(|other| planner.peek(other))
            .and_then(|exported| exported.exports.cluster.clone());
        let (region, zone) = self.region_and_zone(borrowed.as_ref());
        let mut gcp = Gcp::new(
            planner,
            gcp::SiteSpec {
                project: &spec.project,
                region: &region,
                zone: &zone,
                config_connector: &spec.config_connector,
            },
        );
        let tpu = match (&definition.accelerator, &spec.tpu) {
            (Accelerator::Tpu, Some(tpu)) => Some(accelerator::resolve_tpu(
                planner,
                tpu,
                TpuSupport {
                    kind: &kind.name,
                    families: &kind.tpu_families,
                    multislice: definition.tpu.multislice,
                },
            )?),
            _ => None,
        };
        let gpu: Option<GpuPlan> = match (&definition.accelerator, &spec.gpu) {
            (Accelerator::Gpu, Some(gpu)) => Some(accelerator::resolve_gpu(planner, gpu)?),
            _ => None,
        };
        let namespace = spec.namespace.clone().unwrap_or_else(|| name.clone());
        let kubernetes_service_account = spec
            .kubernetes_service_account
            .clone()
            .or_else(|| definition.kubernetes_service_account.clone())
            .unwrap_or_else(|| "workload".into());
        for (field, value) in [
            ("spec.namespace", &namespace),
            ("spec.kubernetesServiceAccount", &kubernetes_service_account),
        ] {
            planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
        }
        let node_account = gcp.service_account(
            planner,
            &spec.service_accounts.nodes,
            "spec.serviceAccounts.nodes",
            "node",
            &format!("GKE {} nodes", kind.name),
        );
        let workload_account = gcp.service_account(
            planner,
            &spec.service_accounts.workload,
            "spec.serviceAccounts.workload",
            "wi",
            &format!("{} workloads", kind.name),
        );
        Gcp::require_distinct_accounts(planner, &node_account, &workload_account);
        let cluster = gcp.cluster(
            planner,
            &spec.cluster,
            &spec.network,
            ClusterOptions {
                default_location: &zone,
                addons: Addons::default(),
            },
            &node_account,
        )?;
        if cluster.owned {
            gcp.cpu_pool(
                planner,
                &cluster,
                &spec.cluster.cpu_pool,
                CpuPoolDefaults {
                    name: "cpu-pool",
                    field: "spec.cluster.cpuPool",
                    machine_type: "e2-standard-4",
                    scale: Scale::Autoscaling { min: 1, max: 3 },
                    disk_size_gb: Some(100),
                    labels: &[("default-node-pool", "true")],
                    taints: &[],
                },
                &node_account,
            );
        }
        for role in NODE_PROJECT_ROLES {
            gcp.project_role(&node_account, role);
        }
        gcp.workload_identity(
            &workload_account,
            &cluster,
            &namespace,
            &kubernetes_service_account,
        );
        let bucket = definition.bucket.then(|| {
            let bucket = gcp.bucket(
                planner,
                &spec.bucket,
                "spec.bucket",
                &crate::names::shortened(&format!("{}-{name}", spec.project), "", 63),
            );
            for role in BUCKET_ROLES {
                gcp.bucket_role(&bucket, &workload_account, role);
            }
            BucketContext {
                url: bucket.url(),
                name: bucket.name,
            }
        });
        if planner.has_errors() {
            return None;
        }
        let pool_labels = BTreeMap::from([(BLUEPRINT_LABEL.to_string(), name.clone())]);
        let mut node_selector = BTreeMap::new();
        let mut description = "no accelerator".to_string();
        if let Some(tpu) = &tpu {
            gcp.tpu_pools(&cluster, tpu, &node_account, &pool_labels);
            node_selector.insert(
                TPU_ACCELERATOR_LABEL.to_string(),
                tpu.accelerator.to_string(),
            );
            node_selector.insert(TPU_TOPOLOGY_LABEL.to_string(), tpu.topology.clone());
            node_selector.insert(BLUEPRINT_LABEL.to_string(), name.clone());
            description = format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology);
        }
        let gpu = gpu.map(|gpu| {
            let pool = gcp.sized_gpu_pool(
                planner,
                &cluster,
                &gpu,
                &spec.gpu_pool,
                &GpuPoolDefaults {
                    name: "gpu-pool",
                    field: "spec.gpuPool",
                    scale: Scale::Autoscaling { min: 1, max: 3 },
                    disk_size_gb: Some(100),
                    labels: pool_labels.clone(),
                },
                &node_account,
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
            region,
            zone,
            kubernetes_service_account,
            workload_service_account: workload_account.email,
            node_service_account: node_account.email,
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
        let (region, zone) = self.region_and_zone(None);
        gcp::cluster_exports(
            blueprint.name,
            &self.shared.project,
            &self.shared.config_connector,
            &self.shared.cluster,
            &region,
            &zone,
        )
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

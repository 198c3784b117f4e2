//! Node pools: a kind's CPU pools, GPU pools sized from their spec, and TPU pools of one
//! slice each; all go through one node pool planner.
//!
//! Its own module because pools share rules the cluster does not: sizes (fixed or
//! autoscaling, within GKE's limit), names unique per cluster on a cluster others use too,
//! zones, and the accelerators GKE installs drivers for.

use std::collections::BTreeMap;

use super::spec::{AutoscalingSpec, GpuDriverVersion, GpuPoolSpec, NodePoolSpec};
use super::{
    AccountHandle, ClusterHandle, Dependency, Gcp, GuestAccelerator, Meta, NodePoolPlan,
    PlacementPlan, Scale, Taint, TaintSpec, rule,
};
use crate::accelerator::{CapacityType, GpuPlan, TpuPlan};
use crate::limits::MAX_NODES_PER_POOL;
use crate::names;
use crate::plan::Planner;

/// GKE node pool names have at most 40 characters.
const POOL_NAME_MAX: usize = 40;

/// Defaults of a kind's CPU pool.
#[derive(Clone, Copy, Debug)]
pub struct CpuPoolDefaults<'s> {
    /// GKE node pool name.
    pub name: &'s str,
    /// Blueprint field of the pool's spec, for findings (e.g. `spec.cluster.cpuPool`).
    pub field: &'s str,
    /// Machine type.
    pub machine_type: &'s str,
    /// Size when the spec sets none.
    pub scale: Scale,
    /// Boot disk size.
    pub disk_size_gb: Option<u32>,
    /// Node labels (workloads select the pool with them).
    pub labels: &'s [(&'s str, &'s str)],
    /// `NO_SCHEDULE` taints that keep other pods off the pool.
    pub taints: &'s [TaintSpec<'s>],
}

/// Defaults of a kind's GPU pool.
#[derive(Clone, Debug)]
pub struct GpuPoolDefaults<'s> {
    /// GKE node pool name.
    pub name: &'s str,
    /// Blueprint field of the pool's spec, for findings (e.g. `spec.gpuPool`).
    pub field: &'s str,
    /// Size when the spec sets none.
    pub scale: Scale,
    /// Boot disk size.
    pub disk_size_gb: Option<u32>,
    /// Node labels (workloads select the pool with them).
    pub labels: BTreeMap<String, String>,
}

/// A planned GPU pool, as workloads and capacity checks need it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpuPoolHandle {
    /// GKE node pool name (the `cloud.google.com/gke-nodepool` label of its nodes).
    pub name: String,
    /// Fewest nodes, over all the pool's zones.
    pub min_nodes: u32,
    /// Most nodes, over all the pool's zones.
    pub max_nodes: u32,
    /// GPUs on each node.
    pub gpus_per_node: u32,
}

impl Gcp {
    /// Plans a CPU node pool (fixed or autoscaling) in a cluster this blueprint creates or
    /// borrows; a kind may plan several (system, proxies, auxiliary work).
    pub fn cpu_pool(
        &mut self,
        planner: &mut Planner<'_>,
        cluster: &ClusterHandle,
        spec: &NodePoolSpec,
        defaults: CpuPoolDefaults<'_>,
        service_account: &AccountHandle,
    ) {
        let scale = scale_of(
            planner,
            spec.node_count,
            spec.autoscaling,
            defaults.field,
            defaults.scale,
        );
        let machine_type = spec
            .machine_type
            .clone()
            .unwrap_or_else(|| defaults.machine_type.to_string());
        // A regional cluster would put a pool's nodes in each of its zones (three times the
        // count asked for): CPU pools stay in the blueprint's zone.
        let node_locations = if names::zone(&cluster.location).is_ok() {
            Vec::new()
        } else {
            vec![self.zone.clone()]
        };
        // Pool names are unique per cluster: on a cluster others use too (another blueprint's,
        // or an existing one) the pool carries the blueprint's name.
        let resource_id = if cluster.owned {
            defaults.name.to_string()
        } else {
            self.shared_pool_name(&format!("-{}", defaults.name))
        };
        self.node_pool(NodePoolInput {
            resource_id,
            cluster,
            node_locations,
            scale,
            slice: false,
            machine_type,
            disk_size_gb: spec.disk_size_gb.or(defaults.disk_size_gb),
            spot: spec.spot,
            reservation: None,
            queued: false,
            service_account,
            labels: defaults
                .labels
                .iter()
                .map(|(key, value)| ((*key).to_string(), (*value).to_string()))
                .collect(),
            taints: defaults
                .taints
                .iter()
                .map(|taint| Taint {
                    key: taint.key.to_string(),
                    value: taint.value.to_string(),
                    effect: "NO_SCHEDULE".into(),
                })
                .collect(),
            placement: None,
            guest_accelerators: Vec::new(),
        });
    }

    /// Plans one node pool per TPU slice, each one slice of `tpu.hosts` nodes in `zone`
    /// (fixed, or scaling between none and the whole slice), on the slices' capacity, labelled with `labels` (plus the reference's multislice group labels). Returns
    /// the GKE node pool names.
    pub fn tpu_pools(
        &mut self,
        cluster: &ClusterHandle,
        tpu: &TpuPlan,
        service_account: &AccountHandle,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        self.slice_pools(
            cluster,
            tpu,
            tpu.slices,
            tpu.slices > 1,
            service_account,
            labels,
        )
    }

    /// Plans `count` node pools of one slice each. `multislice` marks them as one multislice
    /// group (the reference's labels); independent serving replicas are not one.
    pub fn slice_pools(
        &mut self,
        cluster: &ClusterHandle,
        tpu: &TpuPlan,
        count: u32,
        multislice: bool,
        service_account: &AccountHandle,
        labels: &BTreeMap<String, String>,
    ) -> Vec<String> {
        let _tpu_api = self.api("tpu.googleapis.com");
        let mut pool_names = Vec::new();
        for index in 0..count {
            let suffix = format!("-slice-{index}");
            // Pool names are unique per cluster: on a cluster others use too (another
            // blueprint's, or an existing one) they carry the blueprint.
            let resource_id = if !cluster.owned {
                self.shared_pool_name(&suffix)
            } else {
                format!("tpu{suffix}")
            };
            let mut pool_labels = labels.clone();
            if multislice {
                // The reference's multislice group label, so tooling that reads it works. Not
                // its group-size label: node labels cannot change in place, so adding a slice
                // would recreate every slice already running.
                pool_labels.insert("MultisliceGroup".into(), self.blueprint.clone());
            }
            self.node_pool(NodePoolInput {
                resource_id: resource_id.clone(),
                cluster,
                node_locations: vec![self.zone.clone()],
                scale: slice_scale(tpu),
                slice: true,
                machine_type: tpu.machine_type.to_string(),
                disk_size_gb: None,
                spot: tpu.capacity.type_ == CapacityType::Spot,
                reservation: tpu.capacity.reservation.clone(),
                queued: tpu.capacity.queued(),
                service_account,
                labels: pool_labels,
                taints: Vec::new(),
                placement: tpu.compact_placement.then(|| PlacementPlan {
                    kind: "COMPACT".into(),
                    tpu_topology: tpu.topology.clone(),
                }),
                guest_accelerators: Vec::new(),
            });
            pool_names.push(resource_id);
        }
        pool_names
    }

    /// Plans a GPU node pool called `name` from the `gpu` stanza, with GKE installing the
    /// default driver.
    pub fn gpu_pool(
        &mut self,
        cluster: &ClusterHandle,
        name: &str,
        gpu: &GpuPlan,
        scale: Scale,
        service_account: &AccountHandle,
    ) {
        self.node_pool(NodePoolInput {
            resource_id: name.to_string(),
            cluster,
            node_locations: Vec::new(),
            scale,
            slice: false,
            machine_type: gpu.machine_type.clone(),
            disk_size_gb: None,
            spot: false,
            reservation: None,
            queued: false,
            service_account,
            labels: BTreeMap::new(),
            taints: Vec::new(),
            placement: None,
            guest_accelerators: guest_accelerators(gpu, GpuDriverVersion::Default),
        });
    }

    /// Plans a GPU node pool from the `gpu` stanza and a [`GpuPoolSpec`]: size (fixed or
    /// autoscaling, checked), disk, Spot VMs and the GKE-managed driver, in the blueprint's zone
    /// (GPU models are offered zone by zone). On another blueprint's cluster the pool name
    /// carries the blueprint name, so pools of two blueprints never collide.
    pub fn sized_gpu_pool(
        &mut self,
        planner: &mut Planner<'_>,
        cluster: &ClusterHandle,
        gpu: &GpuPlan,
        spec: &GpuPoolSpec,
        defaults: &GpuPoolDefaults<'_>,
        service_account: &AccountHandle,
    ) -> GpuPoolHandle {
        let scale = scale_of(
            planner,
            spec.node_count,
            spec.autoscaling,
            defaults.field,
            defaults.scale,
        );
        let resource_id = match &spec.name {
            Some(name) => {
                planner.check_name(
                    rule::RESOURCE_NAME,
                    &format!("{}.name", defaults.field),
                    name,
                    |n| names::limited(n, POOL_NAME_MAX),
                );
                name.clone()
            }
            None if cluster.borrowed => self.shared_pool_name(&format!("-{}", defaults.name)),
            None => defaults.name.to_string(),
        };
        let node_locations = vec![self.zone.clone()];
        let zones = u32::try_from(node_locations.len()).unwrap_or(1);
        let (min_nodes, max_nodes) = match scale {
            Scale::Fixed { nodes } => (nodes, nodes),
            Scale::Autoscaling { min, max } => (min, max),
        };
        self.node_pool(NodePoolInput {
            resource_id: resource_id.clone(),
            cluster,
            node_locations,
            scale,
            slice: false,
            machine_type: gpu.machine_type.clone(),
            disk_size_gb: spec.disk_size_gb.or(defaults.disk_size_gb),
            spot: spec.spot,
            reservation: None,
            queued: false,
            service_account,
            labels: defaults.labels.clone(),
            taints: Vec::new(),
            placement: None,
            guest_accelerators: guest_accelerators(
                gpu,
                spec.driver_version.unwrap_or(GpuDriverVersion::Default),
            ),
        });
        GpuPoolHandle {
            name: resource_id,
            min_nodes: min_nodes.saturating_mul(zones),
            max_nodes: max_nodes.saturating_mul(zones),
            gpus_per_node: gpu.count,
        }
    }

    /// The name of a pool on a cluster other blueprints use too: the blueprint's name and
    /// `suffix`, so pools of two blueprints never collide.
    fn shared_pool_name(&self, suffix: &str) -> String {
        names::derived(&self.blueprint, suffix, 1, POOL_NAME_MAX)
    }

    fn node_pool(&mut self, input: NodePoolInput<'_>) {
        let mut depends_on: Vec<Dependency> = input.cluster.dependency.iter().cloned().collect();
        depends_on.extend(input.service_account.dependency.clone());
        // On a cluster made elsewhere, nothing else makes the pool wait for GKE's API.
        if input.cluster.dependency.is_none() {
            depends_on.push(self.api("container.googleapis.com"));
        }
        let name = if input.resource_id.starts_with(&self.blueprint) {
            input.resource_id.clone()
        } else {
            format!("{}-{}", self.blueprint, input.resource_id)
        };
        self.infra.node_pools.push(NodePoolPlan {
            meta: Meta::new(name, depends_on),
            resource_id: input.resource_id,
            location: input.cluster.location.clone(),
            node_locations: input.node_locations,
            cluster: input.cluster.reference.clone(),
            scale: input.scale,
            initial_node_count: match input.scale {
                Scale::Autoscaling { min, .. } if !input.slice => Some(min),
                _ => None,
            },
            machine_type: input.machine_type,
            disk_size_gb: input.disk_size_gb,
            spot: input.spot,
            reservation: input.reservation,
            queued: input.queued,
            service_account: input.service_account.reference.clone(),
            labels: input.labels,
            taints: input.taints,
            placement: input.placement,
            guest_accelerators: input.guest_accelerators,
        });
    }
}

/// Everything a node pool needs, gathered by the public pool planners.
struct NodePoolInput<'h> {
    resource_id: String,
    cluster: &'h ClusterHandle,
    node_locations: Vec<String>,
    scale: Scale,
    /// A TPU slice's pool.
    slice: bool,
    machine_type: String,
    disk_size_gb: Option<u32>,
    spot: bool,
    reservation: Option<String>,
    queued: bool,
    service_account: &'h AccountHandle,
    labels: BTreeMap<String, String>,
    taints: Vec<Taint>,
    placement: Option<PlacementPlan>,
    guest_accelerators: Vec<GuestAccelerator>,
}

// The formula lives in the catalog, below `validate`'s layer, so that the `pod-allocatable`
// rule judges pods with the same numbers the pools are sized with.
pub use crate::catalog::allocatable_ephemeral_gib;

/// The smallest boot disk (GiB, a multiple of 10) from which GKE gives pods `request_gib` of
/// local ephemeral storage ([`allocatable_ephemeral_gib`]): a disk the size of the request
/// leaves the pod unschedulable, and the autoscaler never adds the node it waits for.
#[must_use]
pub fn boot_disk_for_ephemeral(request_gib: u32) -> u32 {
    // Past 269 GiB the reservation is 100 GiB, so this bound always suffices.
    let bound = (request_gib.saturating_add(100)).saturating_mul(10) / 9 + 10;
    (request_gib.max(10)..=bound.max(request_gib))
        .step_by(10)
        .map(|disk| disk.div_ceil(10) * 10)
        .find(|&disk| allocatable_ephemeral_gib(disk) >= f64::from(request_gib))
        .unwrap_or(bound.div_ceil(10) * 10)
}

/// The size of one slice's pool. Multi-host TPU slices are atomic: a pool holds exactly one
/// slice of VMs, or none while idle. GKE's cluster autoscaler adds a multi-host slice whole,
/// from zero to the slice's VMs, and removes it whole when no pod needs it; the bounds are per
/// zone (a slice lives in one), since GKE checks a slice against the per-zone maximum.
/// See <https://cloud.google.com/kubernetes-engine/docs/how-to/tpus#autoscaling>.
fn slice_scale(tpu: &TpuPlan) -> Scale {
    if tpu.scale_to_zero {
        Scale::Autoscaling {
            min: 0,
            max: tpu.hosts,
        }
    } else {
        Scale::Fixed { nodes: tpu.hosts }
    }
}

/// The GPUs of every node of a pool, with GKE installing the driver. Accelerator-optimized
/// machine types (A2, A3, G2 …) carry their GPUs anyway, but only a declared accelerator tells
/// GKE which driver to install, so every GPU pool declares it.
fn guest_accelerators(gpu: &GpuPlan, driver: GpuDriverVersion) -> Vec<GuestAccelerator> {
    let version = match driver {
        GpuDriverVersion::Default => "DEFAULT",
        GpuDriverVersion::Latest => "LATEST",
    };
    vec![GuestAccelerator {
        accelerator: gpu.accelerator.to_string(),
        count: gpu.count,
        driver_version: Some(version.to_string()),
    }]
}

/// A node pool's size from `nodeCount` or `autoscaling` (not both), checked.
fn scale_of(
    planner: &mut Planner<'_>,
    node_count: Option<u32>,
    autoscaling: Option<AutoscalingSpec>,
    field: &str,
    default: Scale,
) -> Scale {
    match (node_count, autoscaling) {
        (Some(_), Some(_)) => {
            let d = planner.error(
                rule::CONFLICT,
                &format!("{field}.autoscaling"),
                "a node pool has either a fixed `nodeCount` or `autoscaling`, not both",
            );
            d.fix = Some(format!(
                "remove `{field}.nodeCount` or `{field}.autoscaling`"
            ));
            default
        }
        (Some(nodes), None) => {
            if nodes > MAX_NODES_PER_POOL {
                too_many(planner, &format!("{field}.nodeCount"), nodes);
            }
            Scale::Fixed { nodes }
        }
        (None, Some(bounds)) => {
            if bounds.max_nodes > MAX_NODES_PER_POOL {
                too_many(
                    planner,
                    &format!("{field}.autoscaling.maxNodes"),
                    bounds.max_nodes,
                );
            } else if bounds.min_nodes > bounds.max_nodes || bounds.max_nodes == 0 {
                let d = planner.error(
                    rule::NODE_POOL_SIZE,
                    &format!("{field}.autoscaling"),
                    format!(
                        "autoscaling from {} to {} nodes cannot work",
                        bounds.min_nodes, bounds.max_nodes
                    ),
                );
                d.expected = Some("`minNodes` ≤ `maxNodes` and `maxNodes` ≥ 1".into());
            }
            Scale::Autoscaling {
                min: bounds.min_nodes,
                max: bounds.max_nodes,
            }
        }
        (None, None) => default,
    }
}

fn too_many(planner: &mut Planner<'_>, field: &str, nodes: u32) {
    let d = planner.error(
        rule::NODE_POOL_SIZE,
        field,
        format!(
            "{nodes} nodes exceed GKE's limit of {MAX_NODES_PER_POOL} nodes per node pool and zone"
        ),
    );
    d.expected = Some(format!("at most {MAX_NODES_PER_POOL}"));
}

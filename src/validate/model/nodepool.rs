//! Config Connector `ContainerNodePool`s read into [`NodePool`]s: the machine type, the TPU
//! slice or GPUs of each node, the labels and taints GKE gives the nodes, and how many nodes the
//! pool can have.
//!
//! This module only reads pools as written, taking GKE's defaults where the object is silent; it
//! reports nothing. Whether a pool is well formed is for the node pool rules, and whether a
//! workload fits a pool for the cross-object rules.

use crate::catalog::{
    self, GPU_ACCELERATOR_LABEL, Gpu, NODE_POOL_LABEL, TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL,
    Topology, TpuMachine, TpuSlice,
};
use crate::validate::Object;
use crate::validate::model::fields::scalar_text;
use crate::yaml::Node;

/// Node label GKE puts on every node with its Compute Engine machine type.
pub(crate) const MACHINE_TYPE_LABEL: &str = "cloud.google.com/gce-machine-type";

/// Node label GKE puts on Spot VMs.
const SPOT_LABEL: &str = "cloud.google.com/gke-spot";

/// A `ContainerNodePool` as the nodes it makes.
#[derive(Debug)]
pub(crate) struct NodePool<'a> {
    /// The object.
    pub object: &'a Object<'a>,
    /// GKE node pool name: `spec.resourceID`, else `metadata.name` (for messages, the
    /// `generateName` prefix when the object has no name yet).
    pub name: &'a str,
    /// Whether `name` is the pool's name: false for an object with only `generateName`, whose
    /// name the API server makes up.
    pub name_known: bool,
    /// `spec.nodeConfig.machineType`, when written.
    pub machine_type: Option<&'a str>,
    /// TPU facts, when the machine type is a TPU machine.
    pub tpu: Option<PoolTpu>,
    /// GPUs on each node: attached `guestAccelerator`s, or those built into the machine type.
    pub gpus: Vec<(&'static Gpu, u32)>,
    /// Labels every node of the pool carries that a pod may select: the pool's own
    /// `nodeConfig.labels` and the ones GKE sets from the pool's configuration.
    pub labels: Vec<(String, String)>,
    /// Taints from `nodeConfig.taint`: key, value, effect in the Kubernetes spelling.
    pub taints: Vec<(String, String, String)>,
    /// The most nodes the pool can have, when the object bounds it.
    pub max_nodes: Option<i64>,
    /// Boot disk of each node in GiB: `nodeConfig.diskSizeGb`, else GKE's default of 100.
    pub disk_gb: u32,
    /// Whether pods' ephemeral storage is on local SSDs (`ephemeralStorageLocalSsdConfig` or
    /// `ephemeralStorageConfig`) rather than the boot disk.
    pub ephemeral_on_local_ssd: bool,
    /// Whether `nodeConfig.linuxNodeConfig` configures huge pages (nodes have none otherwise).
    pub hugepages_configured: bool,
    /// The zones the nodes are in, each with the node and field that name it: every
    /// `nodeLocations` entry, else `location` when it is a zone (a regional pool without
    /// `nodeLocations` takes its cluster's zones, which the object does not show).
    pub zones: Vec<(&'a str, &'a Node, String)>,
    /// `gpuDriverInstallationConfig.gpuDriverVersion` of the first `guestAccelerator`, with its
    /// node and field, when written.
    pub gpu_driver: Option<(&'a str, &'a Node, String)>,
}

/// GKE's boot disk size when a node pool does not set one (GiB).
/// See <https://cloud.google.com/kubernetes-engine/docs/how-to/custom-boot-disks>.
const DEFAULT_DISK_GB: u32 = 100;

/// A TPU node pool's slice.
#[derive(Debug)]
pub(crate) struct PoolTpu {
    /// The machine type.
    pub machine: &'static TpuMachine,
    /// The topology nodes are labelled with: `placementPolicy.tpuTopology` as written, or the
    /// single-host topology of the machine.
    pub topology: Option<Topology>,
    /// The slice the pool holds, when the machine type and topology agree.
    pub slice: Option<TpuSlice>,
}

impl NodePool<'_> {
    /// The value of a node label on this pool's nodes, when known.
    pub(crate) fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(own, _)| own == key)
            .map(|(_, value)| value.as_str())
    }

    /// Whether this pool's label for `key` is known for certain, so that a pod selecting `key`
    /// is excluded when the label is absent. Other labels (zone, OS, metadata server…) are
    /// set by GKE in ways the object does not show, so only a different value excludes a pod.
    pub(crate) fn label_is_authoritative(&self, key: &str) -> bool {
        match key {
            TPU_ACCELERATOR_LABEL | TPU_TOPOLOGY_LABEL | GPU_ACCELERATOR_LABEL => true,
            NODE_POOL_LABEL => self.name_known,
            MACHINE_TYPE_LABEL => self.machine_type.is_some(),
            _ => false,
        }
    }

    /// A short description for messages: ``tpu-pool-1` (`tpu-v4-podslice`, `2x2x2`)`.
    pub(crate) fn describe(&self) -> String {
        let mut facts = Vec::new();
        for key in [
            TPU_ACCELERATOR_LABEL,
            TPU_TOPOLOGY_LABEL,
            GPU_ACCELERATOR_LABEL,
        ] {
            if let Some(value) = self.label(key) {
                facts.push(format!("`{value}`"));
            }
        }
        if facts.is_empty() {
            facts.push(format!(
                "`{}`",
                self.machine_type.unwrap_or("default machine type")
            ));
        }
        format!("`{}` ({})", self.name, facts.join(", "))
    }
}

/// Reads every `ContainerNodePool` in the set.
pub(crate) fn pools<'a>(objects: &'a [Object<'a>]) -> Vec<NodePool<'a>> {
    objects
        .iter()
        .filter(|object| is_node_pool(object))
        .map(read)
        .collect()
}

/// Whether `object` is a Config Connector `ContainerNodePool`.
pub(crate) fn is_node_pool(object: &Object<'_>) -> bool {
    object.group() == "container.cnrm.cloud.google.com" && object.id.kind == "ContainerNodePool"
}

fn read<'a>(object: &'a Object<'a>) -> NodePool<'a> {
    let spec = object.node.get("spec");
    let at = |path: &[&str]| spec.and_then(|spec| spec.at(path));
    let resource_id = at(&["resourceID"]).and_then(Node::as_str);
    let name = resource_id.unwrap_or(&object.id.name);
    let name_known = resource_id.is_some() || super::has_name(object);
    let machine_type = at(&["nodeConfig", "machineType"]).and_then(Node::as_str);
    let tpu_topology = at(&["placementPolicy", "tpuTopology"]).and_then(Node::as_str);
    let tpu = machine_type.and_then(catalog::tpu_machine).map(|machine| {
        let topology = match tpu_topology {
            Some(written) => written.parse().ok(),
            None => single_host_slice(machine).map(|slice| slice.topology),
        };
        let slice = topology
            .as_ref()
            .and_then(|topology| slice_on(machine, topology));
        PoolTpu {
            machine,
            topology,
            slice,
        }
    });

    let mut gpus = Vec::new();
    for accelerator in at(&["nodeConfig", "guestAccelerator"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
    {
        let gpu = accelerator
            .get("type")
            .and_then(Node::as_str)
            .and_then(catalog::gpu);
        let count = accelerator
            .get("count")
            .and_then(Node::as_count)
            .unwrap_or(1);
        if let Some(gpu) = gpu {
            gpus.push((gpu, u32::try_from(count).unwrap_or(0)));
        }
    }
    if gpus.is_empty() {
        gpus.extend(machine_type.and_then(catalog::gpu_for_machine));
    }

    let mut labels = Vec::new();
    if name_known {
        labels.push((NODE_POOL_LABEL.to_string(), name.to_string()));
    }
    if let Some(machine_type) = machine_type {
        labels.push((MACHINE_TYPE_LABEL.to_string(), machine_type.to_string()));
    }
    if let Some(tpu) = &tpu {
        labels.push((
            TPU_ACCELERATOR_LABEL.to_string(),
            tpu.machine.family.accelerator().into(),
        ));
        // GKE labels nodes with the topology as written in the pool.
        let topology = tpu_topology
            .map(str::to_string)
            .or_else(|| tpu.topology.as_ref().map(ToString::to_string));
        if let Some(topology) = topology {
            labels.push((TPU_TOPOLOGY_LABEL.to_string(), topology));
        }
    }
    if let Some((gpu, _)) = gpus.first() {
        labels.push((GPU_ACCELERATOR_LABEL.to_string(), gpu.label.to_string()));
    }
    if at(&["nodeConfig", "spot"]).is_some_and(|spot| spot.value == crate::yaml::Value::Bool(true))
    {
        labels.push((SPOT_LABEL.to_string(), "true".to_string()));
    }
    for (key, value) in at(&["nodeConfig", "labels"])
        .and_then(Node::as_map)
        .unwrap_or(&[])
    {
        if let Some(value) = scalar_text(value) {
            labels.push((key.text.clone(), value));
        }
    }

    let taints = at(&["nodeConfig", "taint"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .filter_map(|taint| {
            let text = |key| taint.get(key).and_then(scalar_text);
            Some((
                text("key")?,
                text("value").unwrap_or_default(),
                kubernetes_effect(&text("effect")?),
            ))
        })
        .collect();

    let disk_gb = at(&["nodeConfig", "diskSizeGb"])
        .and_then(Node::as_count)
        .and_then(|size| u32::try_from(size).ok())
        .unwrap_or(DEFAULT_DISK_GB);
    let ephemeral_on_local_ssd = ["ephemeralStorageLocalSsdConfig", "ephemeralStorageConfig"]
        .iter()
        .any(|key| at(&["nodeConfig", key]).is_some());
    let hugepages_configured =
        at(&["nodeConfig", "linuxNodeConfig"]).is_some_and(|config| mentions(config, "hugepage"));
    let mut zones: Vec<(&str, &Node, String)> = at(&["nodeLocations"])
        .and_then(Node::as_seq)
        .unwrap_or(&[])
        .iter()
        .enumerate()
        .filter_map(|(index, node)| {
            Some((node.as_str()?, node, format!("spec.nodeLocations[{index}]")))
        })
        .collect();
    if zones.is_empty()
        && let Some(location) = at(&["location"])
    {
        let zone = location
            .as_str()
            .filter(|text| crate::names::zone(text).is_ok());
        zones.extend(zone.map(|zone| (zone, location, "spec.location".to_string())));
    }
    let gpu_driver = at(&["nodeConfig", "guestAccelerator"])
        .and_then(Node::as_seq)
        .and_then(<[Node]>::first)
        .and_then(|accelerator| {
            let node = accelerator.at(&["gpuDriverInstallationConfig", "gpuDriverVersion"])?;
            let field =
                "spec.nodeConfig.guestAccelerator[0].gpuDriverInstallationConfig.gpuDriverVersion";
            Some((node.as_str()?, node, field.to_string()))
        });
    NodePool {
        object,
        name,
        name_known,
        machine_type,
        tpu,
        gpus,
        labels,
        taints,
        max_nodes: max_nodes(spec),
        disk_gb,
        ephemeral_on_local_ssd,
        hugepages_configured,
        zones,
        gpu_driver,
    }
}

/// Whether any key or string value under `node` contains `word` (any case).
fn mentions(node: &Node, word: &str) -> bool {
    match &node.value {
        crate::yaml::Value::Map(entries) => entries.iter().any(|(key, value)| {
            key.text.to_ascii_lowercase().contains(word) || mentions(value, word)
        }),
        crate::yaml::Value::Seq(items) => items.iter().any(|item| mentions(item, word)),
        crate::yaml::Value::String(text) => text.to_ascii_lowercase().contains(word),
        _ => false,
    }
}

/// Config Connector spells taint effects as the GKE API does (`NO_SCHEDULE`); pods use the
/// Kubernetes spelling (`NoSchedule`).
fn kubernetes_effect(effect: &str) -> String {
    match effect {
        "NO_SCHEDULE" => "NoSchedule".to_string(),
        "PREFER_NO_SCHEDULE" => "PreferNoSchedule".to_string(),
        "NO_EXECUTE" => "NoExecute".to_string(),
        other => other.to_string(),
    }
}

/// The most nodes a pool can have: the autoscaling maximum when autoscaling is configured,
/// else the fixed count; per-zone counts are multiplied by the zones in `nodeLocations`.
fn max_nodes(spec: Option<&Node>) -> Option<i64> {
    let spec = spec?;
    let zones = spec
        .get("nodeLocations")
        .and_then(Node::as_seq)
        .map_or(1, |zones| zones.len().max(1));
    let zones = i64::try_from(zones).unwrap_or(1);
    let count = |path: &[&str]| spec.at(path).and_then(Node::as_count);
    if spec.get("autoscaling").is_some() {
        return count(&["autoscaling", "totalMaxNodeCount"])
            .or_else(|| count(&["autoscaling", "maxNodeCount"]).map(|count| count * zones));
    }
    count(&["nodeCount"])
        .or_else(|| count(&["initialNodeCount"]))
        .map(|count| count * zones)
}

/// The slice nodes of `machine` labelled with `topology` form, if the catalog has it.
fn slice_on(machine: &TpuMachine, topology: &Topology) -> Option<TpuSlice> {
    catalog::tpu_slices_for_selector(machine.family.accelerator(), topology)
        .into_iter()
        .find(|slice| slice.machine_type() == machine.name)
}

/// The slice a single node of `machine` forms on its own, if the machine is ever single-host.
fn single_host_slice(machine: &TpuMachine) -> Option<TpuSlice> {
    machine
        .family
        .topologies()
        .iter()
        .filter(|topology| topology.chips() == machine.chips)
        .filter_map(|topology| slice_on(machine, topology))
        .find(|slice| !slice.is_multi_host())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    #[test]
    fn single_host_machines_form_the_slice_of_their_chips() {
        let topology = |machine| {
            let machine = catalog::tpu_machine(machine).unwrap();
            single_host_slice(machine).map(|slice| slice.topology.to_string())
        };
        assert_eq!(topology("ct4p-hightpu-4t").as_deref(), Some("2x2x1"));
        assert_eq!(topology("ct5lp-hightpu-4t").as_deref(), Some("2x2"));
        assert_eq!(topology("ct5lp-hightpu-8t").as_deref(), Some("2x4"));
        assert_eq!(topology("ct6e-standard-1t").as_deref(), Some("1x1"));
        assert_eq!(topology("tpu7x-standard-4t").as_deref(), Some("2x2x1"));
    }

    #[test]
    fn bounds_nodes_by_autoscaling_then_fixed_counts_per_zone() {
        let max = |text: &str| max_nodes(parse_documents(text).unwrap().first());
        assert_eq!(max("nodeCount: 4\ninitialNodeCount: 1\n"), Some(4));
        assert_eq!(max("initialNodeCount: 2\nnodeLocations: [a, b]\n"), Some(4));
        assert_eq!(
            max("nodeCount: 4\nautoscaling: {maxNodeCount: 3}\n"),
            Some(3)
        );
        assert_eq!(
            max("autoscaling: {totalMaxNodeCount: 5, maxNodeCount: 3}\n"),
            Some(5)
        );
        assert_eq!(max("autoscaling: {minNodeCount: 1}\n"), None);
        assert_eq!(max("location: us-central1\n"), None);
    }

    #[test]
    fn spells_taint_effects_as_pods_do() {
        assert_eq!(kubernetes_effect("NO_SCHEDULE"), "NoSchedule");
        assert_eq!(kubernetes_effect("NO_EXECUTE"), "NoExecute");
        assert_eq!(kubernetes_effect("PREFER_NO_SCHEDULE"), "PreferNoSchedule");
    }
}

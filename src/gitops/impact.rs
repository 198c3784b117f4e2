//! What a change of rendered objects does, before anyone reads the details:
//!
//! - **Refused updates** ([`refused`]). A changed Kubernetes field that the API server, a
//!   webhook (JobSet, LeaderWorkerSet, Kueue) or a CRD transition rule refuses to change on an
//!   existing object (`data/refused-updates.tsv`): the apply fails until the object is deleted
//!   and created again. Nothing is destroyed by the refusal; the line says what replacing costs.
//! - **Replaced runs.** A Job or JobSet whose content changed has a new name
//!   ([`crate::overlay::runs`]): the sync engine creates the new run and prunes the old one,
//!   stopping whatever of it still runs.
//! - **Destructive changes.** A changed Config Connector field that GCP cannot update in place
//!   (`data/immutable-fields.tsv`: the CRDs' "Immutable" fields, plus the few GKE fields the
//!   CRDs do not mark, such as a node pool's placement policy and a cluster's network): Config
//!   Connector rejects the update, and the change only lands by deleting and recreating the
//!   resource, which tears down a cluster or a TPU slice. And removals of stateful resources
//!   (the protected class of [`gcp::PROTECTED`]: clusters, node pools, networks, buckets,
//!   BigQuery datasets and tables, Artifact Registry repositories; and secrets, namespaces,
//!   volume claims), said to stay in GCP when Config Connector abandons them. A recreate of a
//!   protected resource, or its removal without the abandon policy, whose base object lacks
//!   the teardown marker is `blocking`: `diff --fail-on destructive` exits 1 on it.
//! - **Accelerators.** TPU chips and GPUs per type, in node pools (nodes x chips or GPUs per
//!   node) and in workloads (pods at full size x `google.com/tpu` or `nvidia.com/gpu`), before
//!   and after, where they differ.
//! - **Cost.** The hourly list price of the node pools (and the GKE fee per cluster) before
//!   and after, from [`super::prices`], twice: at the peak (every pool at its largest) and
//!   idle (what bills while nothing trains or serves: pools at their minimum, reserved
//!   capacity, cluster fees). An estimate, with its sources, and every node that could not be
//!   priced named.
//!
//! Both sides are read whole (totals, not only changed objects), with the validation models
//! ([`crate::validate`]) reading node pools and pod templates as every rule reads them.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use serde::Serialize;

use super::diff::{Change, ObjectDiff, Side, schema_path};
use super::prices::{self, PRICES};
use crate::diagnostic::ObjectRef;
use crate::gcp::{self, Scope, WhileKept};
use crate::validate::model::{self, nodepool::NodePool};

pub mod refused;
pub use refused::Refused;

/// The immutable-field table, as shipped.
pub const IMMUTABLE_FIELDS: &str = include_str!("../../data/immutable-fields.tsv");

/// `(group, kind, path)` of every field GCP cannot update in place.
static IMMUTABLE: LazyLock<Vec<(&'static str, &'static str, &'static str)>> = LazyLock::new(|| {
    IMMUTABLE_FIELDS
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| {
            let mut fields = line.split('\t');
            Some((fields.next()?, fields.next()?, fields.next()?))
        })
        .collect()
});

/// Whether `path` (a field path of a `kind` object of `group`) is, or is under, an immutable
/// field.
#[must_use]
pub fn is_immutable(group: &str, kind: &str, path: &str) -> bool {
    let path = schema_path(path);
    IMMUTABLE.iter().any(|(g, k, immutable)| {
        *g == group
            && *k == kind
            && (path == *immutable
                || path
                    .strip_prefix(immutable)
                    .is_some_and(|rest| rest.starts_with('.') || rest.starts_with('[')))
    })
}

/// What the change means.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Impact {
    /// Changes the API server or a webhook refuses: the apply fails until the object is
    /// replaced.
    pub refused: Vec<Refused>,
    /// Objects a live API server refused in a server-side dry run (`diff --live`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub server_refused: Vec<ServerRefusal>,
    /// Runs (Jobs, JobSets) replaced by a new run because their content changed.
    pub replaced_runs: Vec<ReplacedRun>,
    /// Changes that delete something, or need it deleted.
    pub destructive: Vec<Destructive>,
    /// Accelerators gained or lost, per type and where they are counted.
    pub accelerators: Vec<AcceleratorDelta>,
    /// The hourly cost estimate.
    pub cost: Cost,
}

impl Impact {
    /// The destructive changes `diff --fail-on destructive` stops on.
    pub fn blocking(&self) -> impl Iterator<Item = &Destructive> {
        self.destructive.iter().filter(|item| item.blocking)
    }

    /// Whether there is anything to say.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.destructive.is_empty()
            && self.refused.is_empty()
            && self.server_refused.is_empty()
            && self.replaced_runs.is_empty()
            && self.accelerators.is_empty()
            && self.cost.lines.is_empty()
            && self.cost.unpriced.is_empty()
    }
}

/// A run replaced by a new one: the same Job or JobSet with other content, so another name.
#[derive(Clone, Debug, Serialize)]
pub struct ReplacedRun {
    /// The blueprint (folder under `rendered/`).
    pub blueprint: String,
    /// The new run.
    pub object: ObjectRef,
    /// The old run's name.
    pub from: String,
    /// What happens to the old run, in words.
    pub consequence: &'static str,
}

/// Whether objects of `kind` (of `group`) are runs, named after their content.
#[must_use]
pub fn is_run(group: &str, kind: &str) -> bool {
    run_replacement(group, kind).is_some()
}

/// What replacing a run of `kind` does, when `kind` (of `group`) is a run object.
fn run_replacement(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("jobset.x-k8s.io", "JobSet") => Some(
            "the old JobSet is pruned with its Jobs and pods (a running training stops and the new one starts from its last checkpoint, if it writes one)",
        ),
        ("batch", "Job") => {
            Some("the old Job is pruned with its pods, and the new one runs from the start")
        }
        _ => None,
    }
}

/// An object a live API server refused in a server-side dry run.
#[derive(Clone, Debug, Serialize)]
pub struct ServerRefusal {
    /// The blueprint (folder under `rendered/`).
    pub blueprint: String,
    /// The object.
    pub object: ObjectRef,
    /// The kubeconfig context of the cluster.
    pub context: String,
    /// The server's reason (`Invalid`, `Forbidden`, `BadRequest`, `NotFound`…).
    pub reason: String,
    /// The server's message.
    pub message: String,
}

/// A destructive change.
#[derive(Clone, Debug, Serialize)]
pub struct Destructive {
    /// The blueprint (folder under `rendered/`).
    pub blueprint: String,
    /// The object.
    pub object: ObjectRef,
    /// `recreate` (immutable fields changed) or `remove`.
    pub action: &'static str,
    /// The immutable fields that changed (for `recreate`).
    pub fields: Vec<String>,
    /// What is torn down, in words.
    pub consequence: String,
    /// Whether `diff --fail-on destructive` stops on it: a protected object ([`gcp::PROTECTED`])
    /// deleted or recreated although the base revision does not mark it as allowed to be torn
    /// down ([`gcp::TEARDOWN_ANNOTATION`]).
    pub blocking: bool,
}

/// Accelerators of one type, counted in node pools or in workloads.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct AcceleratorDelta {
    /// `TPU v4`, `nvidia-tesla-t4`, …
    pub accelerator: String,
    /// `chips` or `GPUs`.
    pub unit: &'static str,
    /// `node pools` or `workloads`.
    pub counted_in: &'static str,
    /// Before.
    pub before: i64,
    /// After.
    pub after: i64,
}

/// The hourly cost estimate.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Cost {
    /// USD per hour before at the peak (every pool at its largest), over what could be priced.
    pub before_usd_per_hour: f64,
    /// USD per hour after at the peak.
    pub after_usd_per_hour: f64,
    /// USD per hour before while idle: pools at their minimum, reservations, cluster fees.
    pub before_idle_usd_per_hour: f64,
    /// USD per hour after while idle.
    pub after_idle_usd_per_hour: f64,
    /// Node pools and clusters whose cost changes.
    pub lines: Vec<CostLine>,
    /// What could not be priced (never counted as zero).
    pub unpriced: Vec<String>,
    /// Caveats (fallback regions, autoscaling).
    pub notes: Vec<String>,
    /// Sources of the prices used: id, what, url, as-of.
    pub sources: Vec<(String, String, String, String)>,
}

impl Cost {
    /// After minus before, at the peak.
    #[must_use]
    pub fn delta(&self) -> f64 {
        self.after_usd_per_hour - self.before_usd_per_hour
    }

    /// After minus before, while idle.
    #[must_use]
    pub fn idle_delta(&self) -> f64 {
        self.after_idle_usd_per_hour - self.before_idle_usd_per_hour
    }
}

/// One priced object whose cost changes.
#[derive(Clone, Debug, Serialize)]
pub struct CostLine {
    /// The blueprint.
    pub blueprint: String,
    /// `ContainerNodePool my-project/pool`, …
    pub object: String,
    /// USD per hour before at the peak (`None`: absent or unpriced).
    pub before_usd_per_hour: Option<f64>,
    /// USD per hour after at the peak.
    pub after_usd_per_hour: Option<f64>,
    /// USD per hour before while idle.
    pub before_idle_usd_per_hour: Option<f64>,
    /// USD per hour after while idle.
    pub after_idle_usd_per_hour: Option<f64>,
    /// How the new (or old) figure is made up.
    pub detail: String,
}

/// Kinds whose removal destroys state, and what goes with them, besides the protected Config
/// Connector kinds ([`gcp::PROTECTED`], which say their own).
const STATEFUL: &[(&str, &str, &str)] = &[
    (
        "secretmanager.cnrm.cloud.google.com",
        "SecretManagerSecret",
        "the secret and its versions are deleted",
    ),
    (
        "pubsub.cnrm.cloud.google.com",
        "PubSubSubscription",
        "unacknowledged messages are lost",
    ),
    ("", "Namespace", "every object in the namespace is deleted"),
    (
        "",
        "PersistentVolumeClaim",
        "its volume is released (and deleted under the `Delete` reclaim policy)",
    ),
];

/// What an object costs per hour at its peak and while idle, and how that is made up.
#[derive(Clone, Debug, PartialEq)]
struct Priced {
    peak: f64,
    idle: f64,
    detail: String,
}

/// What each side holds, counted.
#[derive(Default)]
struct Inventory {
    /// (blueprint, object description) → price or why not.
    priced: BTreeMap<(String, String), Result<Priced, String>>,
    /// (accelerator, unit, counted in) → count.
    accelerators: BTreeMap<(String, &'static str, &'static str), i64>,
    /// Per node pool: what its nodes carry, for consequences.
    pools: BTreeMap<(String, ObjectRef), PoolFacts>,
    fell_back: Vec<String>,
    autoscaling: Vec<String>,
    sources: std::collections::BTreeSet<&'static str>,
}

#[derive(Clone, Debug)]
struct PoolFacts {
    nodes: i64,
    /// `(accelerator, per node, unit)`.
    accelerator: Option<(String, i64, &'static str)>,
}

fn describe(id: &ObjectRef) -> String {
    match &id.namespace {
        Some(namespace) => format!("{} {namespace}/{}", id.kind, id.name),
        None => format!("{} {}", id.kind, id.name),
    }
}

/// Nodes of a pool: at its peak and while idle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Nodes {
    /// At its largest: `nodeCount`, else the autoscaling maximum.
    peak: i64,
    /// While no pod needs it: `nodeCount`, else the autoscaling minimum.
    idle: i64,
    autoscaling: bool,
}

/// Nodes of a pool: a fixed `nodeCount`, or the autoscaling bounds, per zone times the zones
/// of `nodeLocations` (or the total bounds); `initialNodeCount` where nothing else says.
fn nodes(spec: Option<&crate::yaml::Node>) -> Nodes {
    let Some(spec) = spec else {
        return Nodes {
            peak: 0,
            idle: 0,
            autoscaling: false,
        };
    };
    let count = |path: &[&str]| spec.at(path).and_then(crate::yaml::Node::as_count);
    let zones = spec
        .get("nodeLocations")
        .and_then(crate::yaml::Node::as_seq)
        .map_or(1, |zones| i64::try_from(zones.len().max(1)).unwrap_or(1));
    let initial = count(&["initialNodeCount"]).map_or(1, |n| n * zones);
    if let Some(fixed) = count(&["nodeCount"]) {
        let nodes = fixed * zones;
        return Nodes {
            peak: nodes,
            idle: nodes,
            autoscaling: false,
        };
    }
    if spec.get("autoscaling").is_none() {
        return Nodes {
            peak: initial,
            idle: initial,
            autoscaling: false,
        };
    }
    let bound = |per_zone: &str, total: &str| {
        count(&["autoscaling", per_zone])
            .map(|n| n * zones)
            .or_else(|| count(&["autoscaling", total]))
    };
    let idle = bound("minNodeCount", "totalMinNodeCount").unwrap_or(0);
    let peak = bound("maxNodeCount", "totalMaxNodeCount").unwrap_or(initial.max(idle));
    Nodes {
        peak,
        idle,
        autoscaling: true,
    }
}

/// Where a pool's VMs come from, as its `nodeConfig` and queued provisioning say.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Capacity {
    OnDemand,
    Spot,
    Reserved,
    Queued,
}

fn capacity(spec: Option<&crate::yaml::Node>) -> Capacity {
    let at = |path: &[&str]| spec.and_then(|spec| spec.at(path));
    let is_true =
        |path: &[&str]| at(path).is_some_and(|node| node.value == crate::yaml::Value::Bool(true));
    let reservation = at(&[
        "nodeConfig",
        "reservationAffinity",
        "consumeReservationType",
    ])
    .and_then(crate::yaml::Node::as_str);
    if matches!(
        reservation,
        Some("SPECIFIC_RESERVATION" | "ANY_RESERVATION")
    ) && !is_true(&["nodeConfig", "spot"])
    {
        Capacity::Reserved
    } else if is_true(&["queuedProvisioning", "enabled"]) {
        Capacity::Queued
    } else if is_true(&["nodeConfig", "spot"]) || is_true(&["nodeConfig", "preemptible"]) {
        Capacity::Spot
    } else {
        Capacity::OnDemand
    }
}

fn inventory(side: &Side) -> Inventory {
    let objects = side.validate_objects();
    let pools = model::nodepool::pools(&objects);
    let mut inventory = Inventory::default();
    let folder_of = |pool: &NodePool<'_>| {
        side.objects
            .values()
            .find(|o| o.path == pool.object.file && o.id == pool.object.id)
            .map_or_else(String::new, |o| o.folder.clone())
    };
    for pool in &pools {
        let folder = folder_of(pool);
        let spec = pool.object.node.get("spec");
        let nodes = nodes(spec);
        let location = spec
            .and_then(|s| s.get("location"))
            .and_then(crate::yaml::Node::as_str)
            .unwrap_or("");
        let region = crate::names::region_of(location);
        let description = describe(&pool.object.id);
        if nodes.autoscaling {
            inventory.autoscaling.push(description.clone());
        }
        let capacity = capacity(spec);
        // What the pool can hold: its accelerators and what a removal tears down.
        let mut facts = PoolFacts {
            nodes: nodes.peak,
            accelerator: None,
        };
        let counted = nodes.peak;
        let family = pool.tpu.as_ref().map(|tpu| price_item(tpu.machine.family));
        if let Some(tpu) = &pool.tpu {
            let name = tpu.machine.family.display_name().to_string();
            *inventory
                .accelerators
                .entry((name.clone(), "chips", "node pools"))
                .or_default() += counted * i64::from(tpu.machine.chips);
            facts.accelerator = Some((name, i64::from(tpu.machine.chips), "chips"));
        }
        for (gpu, per_node) in &pool.gpus {
            *inventory
                .accelerators
                .entry((gpu.label.to_string(), "GPUs", "node pools"))
                .or_default() += counted * i64::from(*per_node);
            facts.accelerator = Some((gpu.label.to_string(), i64::from(*per_node), "GPUs"));
        }
        inventory
            .pools
            .insert((folder.clone(), pool.object.id.clone()), facts);
        let price = pool.machine_type.map_or_else(
            || Err(format!("{description}: no machine type")),
            |machine_type| {
                let attached: Vec<(&str, u32)> = pool
                    .gpus
                    .iter()
                    .filter(|(gpu, _)| gpu.attached)
                    .map(|(gpu, count)| (gpu.label, *count))
                    .collect();
                let node = prices::Node {
                    machine_type,
                    tpu: pool
                        .tpu
                        .as_ref()
                        .zip(family)
                        .map(|(tpu, family)| (family, tpu.machine.chips)),
                    attached_gpus: attached,
                    spot: capacity == Capacity::Spot,
                };
                PRICES
                    .node(&node, region)
                    .map_err(|why| format!("{description}: {why}"))
            },
        );
        let priced = price.map(|price| {
            inventory.sources.extend(price.sources.iter().copied());
            if price.fell_back {
                inventory.fell_back.push(format!(
                    "{description}: no price row for `{region}`, priced at {} rates",
                    prices::FALLBACK_REGION
                ));
            }
            // `as f64`: node counts are at most a few thousand.
            #[expect(clippy::cast_precision_loss, reason = "node counts are small")]
            let per_node = |count: i64| price.usd_per_hour * count as f64;
            // A reservation bills for its VMs whether anything runs on them or not.
            let idle = if capacity == Capacity::Reserved {
                nodes.peak
            } else {
                nodes.idle
            };
            let count = if nodes.idle == nodes.peak {
                nodes.peak.to_string()
            } else {
                format!("{}-{}", nodes.idle, nodes.peak)
            };
            let how = match capacity {
                Capacity::OnDemand | Capacity::Spot => "",
                Capacity::Reserved => ", reserved: billed whether used or not",
                Capacity::Queued => ", flex-start priced at on-demand rates",
            };
            Priced {
                peak: per_node(nodes.peak),
                idle: per_node(idle),
                detail: format!("{count} x {} ({region}){how}", price.detail),
            }
        });
        inventory.priced.insert((folder, description), priced);
    }
    for object in side.objects.values() {
        if object.id.group == "container.cnrm.cloud.google.com"
            && object.id.kind == "ContainerCluster"
            && let Some(fee) = PRICES.cluster_fee()
        {
            inventory.sources.insert(fee.source);
            inventory.priced.insert(
                (object.folder.clone(), describe(&object.id)),
                Ok(Priced {
                    peak: fee.usd_per_hour,
                    idle: fee.usd_per_hour,
                    detail: "GKE cluster management fee".to_string(),
                }),
            );
        }
    }
    for group in model::pod_groups(&objects, &pools) {
        let Some(pods) = group.template.pods() else {
            continue;
        };
        if let Some(request) = &group.tpu {
            let name = group.tpu_target.as_ref().map_or_else(
                || "TPU (type not selected)".to_string(),
                |target| target.family.display_name().to_string(),
            );
            *inventory
                .accelerators
                .entry((name, "chips", "workloads"))
                .or_default() += pods * request.count;
        }
        if let Some(request) = &group.gpu {
            let name = group
                .gpu_target
                .map_or("GPU (type not selected)", |gpu| gpu.label)
                .to_string();
            *inventory
                .accelerators
                .entry((name, "GPUs", "workloads"))
                .or_default() += pods * request.count;
        }
    }
    inventory
}

/// Assesses a diff whose objects are `objects`, between `base` and `head`.
#[must_use]
pub fn assess(base: &Side, head: &Side, objects: &[ObjectDiff]) -> Impact {
    let before = inventory(base);
    let after = inventory(head);
    let mut impact = Impact::default();
    // Abandoned priced objects: gone from the after side, yet still billed.
    let mut still_billed: Vec<String> = Vec::new();
    for object in objects {
        let id = &object.object;
        let pool_consequence = |inventory: &Inventory| {
            let facts = inventory
                .pools
                .get(&(object.blueprint.clone(), id.clone()))?;
            Some(match &facts.accelerator {
                Some((accelerator, per_node, unit)) if unit == &"chips" => format!(
                    "its TPU slice ({} {accelerator} chips on {} nodes) is torn down",
                    per_node * facts.nodes,
                    facts.nodes
                ),
                Some((accelerator, per_node, _)) => format!(
                    "its {} `{accelerator}` GPUs on {} nodes are torn down",
                    per_node * facts.nodes,
                    facts.nodes
                ),
                None => format!("its {} nodes are deleted", facts.nodes),
            })
        };
        // The object as the base revision has it: what the cluster holds and deletes.
        let annotation = |key: &str| {
            base.get(&object.blueprint, id)
                .and_then(|o| o.node.at(&["metadata", "annotations", key]))
                .and_then(crate::yaml::Node::as_str)
                .map(str::to_string)
        };
        let abandoned = annotation(gcp::DELETION_POLICY).is_some_and(|p| p == "abandon");
        let teardown_allowed = annotation(gcp::TEARDOWN_ANNOTATION).is_some_and(|m| m == "true");
        // Node accounts and their grants are protected only where the render marked them.
        let protected = gcp::protected(&id.group, &id.kind)
            .filter(|row| row.scope == Scope::Always || abandoned || teardown_allowed);
        let stateful = protected.map(|row| row.lost).or_else(|| {
            STATEFUL
                .iter()
                .find(|(group, kind, _)| *group == id.group && *kind == id.kind)
                .map(|(_, _, consequence)| *consequence)
        });
        let blocks = |deletes: bool| {
            deletes && !teardown_allowed && protected.is_some_and(|row| row.scope == Scope::Always)
        };
        if let Change::Renamed { from } = &object.change
            && let Some(consequence) = run_replacement(&id.group, &id.kind)
        {
            impact.replaced_runs.push(ReplacedRun {
                blueprint: object.blueprint.clone(),
                object: id.clone(),
                from: from.clone(),
                consequence,
            });
        }
        if object.change == Change::Changed {
            // Same folder and identity on both sides: an update of an existing object.
            impact.refused.extend(refused::assess(
                &object.blueprint,
                id,
                &object.fields,
                base.get(&object.blueprint, id).map(|o| &o.node),
                head.get(&object.blueprint, id).map(|o| &o.node),
            ));
        }
        let (action, fields, consequence) = match &object.change {
            Change::Changed | Change::Renamed { .. } => {
                let fields: Vec<String> = object
                    .fields
                    .iter()
                    .filter(|field| is_immutable(&id.group, &id.kind, &field.path))
                    .map(|field| field.path.clone())
                    .collect();
                if fields.is_empty() {
                    continue;
                }
                let gone = pool_consequence(&before)
                    .or_else(|| stateful.map(str::to_string))
                    .unwrap_or_else(|| "it is deleted and created again".to_string());
                let consequence = format!(
                    "GCP cannot update {} in place: Config Connector rejects the change until the {} is deleted and recreated, and then {gone}",
                    fields
                        .iter()
                        .map(|f| format!("`{f}`"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    kind_noun(&id.kind),
                );
                ("recreate", fields, consequence)
            }
            Change::Removed => {
                let Some(stateful) = stateful else { continue };
                let consequence = if abandoned {
                    let while_kept = protected.map_or(WhileKept::Billed, |row| row.while_kept);
                    let priced = before.priced.get(&(object.blueprint.clone(), describe(id)));
                    let costing = match (while_kept, priced) {
                        (WhileKept::Billed, Some(Ok(priced))) => {
                            let usd = billed(priced);
                            still_billed.push(format!("{} {usd}", describe(id)));
                            format!("keeps costing about {usd}")
                        }
                        (WhileKept::Billed, _) => "keeps costing".to_string(),
                        (WhileKept::Free, _) => "costs nothing".to_string(),
                        (WhileKept::Grants, _) => "keeps granting its role".to_string(),
                    };
                    format!(
                        "removed from Config Connector but abandoned: it stays in GCP (and {costing}) until deleted by hand"
                    )
                } else {
                    pool_consequence(&before).unwrap_or_else(|| stateful.to_string())
                };
                ("remove", Vec::new(), consequence)
            }
            Change::Added => continue,
        };
        let blocking = blocks(action == "recreate" || !abandoned);
        let consequence = if blocking {
            format!(
                "{consequence}; its blueprint did not allow teardown (`spec.allowTeardown: true`, committed before this change)"
            )
        } else {
            consequence
        };
        impact.destructive.push(Destructive {
            blueprint: object.blueprint.clone(),
            object: id.clone(),
            action,
            fields,
            consequence,
            blocking,
        });
    }
    let mut keys: Vec<&(String, &'static str, &'static str)> = before
        .accelerators
        .keys()
        .chain(after.accelerators.keys())
        .collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let was = before.accelerators.get(key).copied().unwrap_or(0);
        let now = after.accelerators.get(key).copied().unwrap_or(0);
        if was != now {
            impact.accelerators.push(AcceleratorDelta {
                accelerator: key.0.clone(),
                unit: key.1,
                counted_in: key.2,
                before: was,
                after: now,
            });
        }
    }
    impact.cost = cost(&before, &after);
    if !still_billed.is_empty() {
        impact.cost.notes.push(format!(
            "abandoned, so still billed although no longer counted: {}",
            still_billed.join(", ")
        ));
    }
    impact
}

/// What an object bills per hour: one figure when idle and peak agree, else both.
fn billed(priced: &Priced) -> String {
    if (priced.peak - priced.idle).abs() < 0.005 {
        format!("${:.2}/h", priced.peak)
    } else {
        format!("${:.2}/h idle, up to ${:.2}/h", priced.idle, priced.peak)
    }
}

/// A TPU family as the price table names it: `v4`, `v5e`, `v5p`, `v6e` (the display name
/// without `TPU `).
fn price_item(family: crate::catalog::TpuFamily) -> &'static str {
    let name = family.display_name();
    name.strip_prefix("TPU ").unwrap_or(name)
}

fn kind_noun(kind: &str) -> &'static str {
    match kind {
        "ContainerCluster" => "cluster",
        "ContainerNodePool" => "node pool",
        "StorageBucket" => "bucket",
        _ => "resource",
    }
}

fn cost(before: &Inventory, after: &Inventory) -> Cost {
    let mut cost = Cost::default();
    let mut keys: Vec<&(String, String)> =
        before.priced.keys().chain(after.priced.keys()).collect();
    keys.sort();
    keys.dedup();
    for key in keys {
        let was = before.priced.get(key);
        let now = after.priced.get(key);
        for priced in [was, now].into_iter().flatten() {
            if let Err(why) = priced
                && !cost.unpriced.contains(why)
            {
                cost.unpriced.push(why.clone());
            }
        }
        let (was_priced, now_priced) = (
            was.and_then(|p| p.as_ref().ok()),
            now.and_then(|p| p.as_ref().ok()),
        );
        cost.before_usd_per_hour += was_priced.map_or(0.0, |p| p.peak);
        cost.after_usd_per_hour += now_priced.map_or(0.0, |p| p.peak);
        cost.before_idle_usd_per_hour += was_priced.map_or(0.0, |p| p.idle);
        cost.after_idle_usd_per_hour += now_priced.map_or(0.0, |p| p.idle);
        if was_priced == now_priced {
            continue;
        }
        let detail = now_priced
            .or(was_priced)
            .map(|p| p.detail.clone())
            .unwrap_or_default();
        cost.lines.push(CostLine {
            blueprint: key.0.clone(),
            object: key.1.clone(),
            before_usd_per_hour: was_priced.map(|p| p.peak),
            after_usd_per_hour: now_priced.map(|p| p.peak),
            before_idle_usd_per_hour: was_priced.map(|p| p.idle),
            after_idle_usd_per_hour: now_priced.map(|p| p.idle),
            detail,
        });
    }
    for note in before.fell_back.iter().chain(&after.fell_back) {
        if !cost.notes.contains(note) {
            cost.notes.push(note.clone());
        }
    }
    let mut autoscaling: Vec<&String> = before
        .autoscaling
        .iter()
        .chain(&after.autoscaling)
        .collect();
    autoscaling.sort();
    autoscaling.dedup();
    if !autoscaling.is_empty() {
        cost.notes.push(format!(
            "autoscaling pools count at their maximum at the peak and at their minimum while idle: {}",
            autoscaling
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let used: std::collections::BTreeSet<&str> = before
        .sources
        .iter()
        .chain(&after.sources)
        .copied()
        .collect();
    cost.sources = PRICES
        .sources
        .iter()
        .filter(|source| used.contains(source.id))
        .map(|source| {
            (
                source.id.to_string(),
                source.what.to_string(),
                source.url.to_string(),
                source.as_of.to_string(),
            )
        })
        .collect();
    cost
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A Config Connector object of `kind` (group `group`) called `name`, with `annotations`
    /// and the spec line `spec`.
    fn cnrm(group: &str, kind: &str, name: &str, annotations: &str, spec: &str) -> String {
        format!(
            "apiVersion: {group}.cnrm.cloud.google.com/v1beta1\nkind: {kind}\nmetadata:\n  name: {name}\n  namespace: p\n  annotations: {{{annotations}}}\nspec: {{{spec}}}\n"
        )
    }

    /// The destructive changes from `base` to `head` (one blueprint folder `b`), as
    /// `(action, kind/name, blocking)`.
    fn assessed(base: &[String], head: &[String]) -> Vec<(&'static str, String, bool)> {
        let side = |texts: &[String]| {
            let mut side = Side::default();
            for (index, text) in texts.iter().enumerate() {
                side.insert_text("b", format!("rendered/b/{index}.yaml"), text);
            }
            side
        };
        let compared = super::super::diff::diff(&side(base), &side(head), "HEAD", "working tree");
        compared
            .impact
            .destructive
            .iter()
            .map(|d| {
                (
                    d.action,
                    format!("{}/{}", d.object.kind, d.object.name),
                    d.blocking,
                )
            })
            .collect()
    }

    /// Peak and idle cost of one v5e-16 slice pool (`ct5lp-hightpu-4t`, 4 hosts of 4 chips,
    /// us-west4) written with `sizing` and `node_config`, added by a change.
    fn slice_cost(sizing: &str, node_config: &str) -> (Option<f64>, Option<f64>, String) {
        let pool = cnrm(
            "container",
            "ContainerNodePool",
            "slice",
            "",
            &format!(
                "location: us-west4-a, {sizing}, placementPolicy: {{type: COMPACT, tpuTopology: 4x4}}, nodeConfig: {{machineType: ct5lp-hightpu-4t{node_config}}}"
            ),
        );
        let mut head = Side::default();
        head.insert_text("b", "rendered/b/0.yaml".into(), &pool);
        let compared = super::super::diff::diff(&Side::default(), &head, "HEAD", "working tree");
        let line = &compared.impact.cost.lines[0];
        let round = |usd: Option<f64>| usd.map(|usd| (usd * 100.0).round() / 100.0);
        (
            round(line.after_usd_per_hour),
            round(line.after_idle_usd_per_hour),
            line.detail.clone(),
        )
    }

    #[test]
    fn idle_cost_counts_pools_at_their_minimum_and_reservations_whole() {
        // 16 chips at the v5e on-demand price ($1.20 in us-west4) at the peak.
        let fixed = slice_cost("nodeCount: 4", "");
        assert_eq!((fixed.0, fixed.1), (Some(19.2), Some(19.2)));
        let released = slice_cost("autoscaling: {minNodeCount: 0, maxNodeCount: 4}", "");
        assert_eq!((released.0, released.1), (Some(19.2), Some(0.0)));
        assert!(
            released.2.starts_with("0-4 x 4 TPU v5e chips"),
            "{}",
            released.2
        );
        // A reservation bills whether used or not.
        let reserved = slice_cost(
            "autoscaling: {minNodeCount: 0, maxNodeCount: 4}",
            ", reservationAffinity: {consumeReservationType: SPECIFIC_RESERVATION, key: compute.googleapis.com/reservation-name, values: [r]}",
        );
        assert_eq!((reserved.0, reserved.1), (Some(19.2), Some(19.2)));
        // Spot chips at the spot price of the region ($0.4692 in us-west4).
        let spot = slice_cost("nodeCount: 4", ", spot: true");
        assert_eq!(spot.0, Some(7.51), "{}", spot.2);
    }

    #[test]
    fn only_protected_resources_deleted_without_the_blueprints_leave_block() {
        const ABANDON: &str = "cnrm.cloud.google.com/deletion-policy: abandon";
        const ALLOWED: &str = "aiml.dev/allow-teardown: \"true\"";
        let pool = |name: &str, annotations: &str, topology: &str| {
            cnrm(
                "container",
                "ContainerNodePool",
                name,
                annotations,
                &format!("placementPolicy: {{type: COMPACT, tpuTopology: {topology}}}"),
            )
        };
        let base = [
            cnrm("compute", "ComputeNetwork", "kept", ABANDON, ""),
            cnrm("compute", "ComputeNetwork", "allowed", ALLOWED, ""),
            cnrm("compute", "ComputeNetwork", "old", "", ""),
            cnrm("iam", "IAMServiceAccount", "workload", "", ""),
            cnrm("iam", "IAMServiceAccount", "nodes", ABANDON, ""),
            cnrm("pubsub", "PubSubTopic", "metrics", "", ""),
            pool("abandoned", ABANDON, "2x4"),
            pool("allowed-pool", ALLOWED, "2x4"),
            pool("resized", ABANDON, "2x4"),
        ];
        let head = [
            pool("abandoned", ABANDON, "4x4"),
            pool("allowed-pool", ALLOWED, "4x4"),
            // Not immutable: an update in place.
            pool("resized", "", "2x4").replace("spec: {", "spec: {nodeCount: 3, "),
        ];
        let mut found = assessed(&base, &head);
        found.sort();
        assert_eq!(
            found,
            [
                // Abandoned or not, a recreate deletes the slice first.
                ("recreate", "ContainerNodePool/abandoned".into(), true),
                ("recreate", "ContainerNodePool/allowed-pool".into(), false),
                ("remove", "ComputeNetwork/allowed".into(), false),
                ("remove", "ComputeNetwork/kept".into(), false),
                // Rendered before protection (or by hand): deleted, and never allowed.
                ("remove", "ComputeNetwork/old".into(), true),
                // A node account is protected where the render marked it; a workload account,
                // a topic, never.
                ("remove", "IAMServiceAccount/nodes".into(), false),
            ]
        );
    }

    #[test]
    fn immutable_fields_come_from_the_crds_and_the_supplement() {
        let pool = ("container.cnrm.cloud.google.com", "ContainerNodePool");
        assert!(is_immutable(pool.0, pool.1, "spec.nodeConfig.machineType"));
        assert!(is_immutable(
            pool.0,
            pool.1,
            "spec.placementPolicy.tpuTopology"
        ));
        assert!(is_immutable(
            pool.0,
            pool.1,
            "spec.nodeConfig.guestAccelerator[0].count"
        ));
        assert!(!is_immutable(pool.0, pool.1, "spec.nodeCount"));
        assert!(!is_immutable(pool.0, pool.1, "spec.nodeConfigX"));
        let cluster = ("container.cnrm.cloud.google.com", "ContainerCluster");
        assert!(is_immutable(cluster.0, cluster.1, "spec.location"));
        assert!(is_immutable(cluster.0, cluster.1, "spec.networkRef.name"));
        assert!(!is_immutable(
            cluster.0,
            cluster.1,
            "spec.releaseChannel.channel"
        ));
        assert!(!is_immutable("", "ConfigMap", "spec.location"));
    }
}

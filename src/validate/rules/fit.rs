//! Pods against the allocatable capacity of the nodes they can land on: when the set holds
//! `ContainerNodePool`s, a pod whose CPU, memory, local ephemeral storage or huge pages request
//! exceeds what every matching pool's node gives pods never schedules, and the cluster
//! autoscaler never adds a node for it.
//!
//! Allocatable is the machine type's capacity less GKE's reservations (the catalog derives
//! both), less the requests of the DaemonSets in the set that run on the pool. GKE's own system
//! DaemonSets (kube-proxy, logging, the metadata server…) are not in anyone's manifests and
//! vary with cluster features, so they are not modelled: the rule reports only what cannot fit
//! even without them. A pool whose figure is unknown (machine type the catalog cannot size,
//! ephemeral storage on local SSDs) could hold anything, so a pod that can land on it is not
//! judged. GPUs and TPUs per pod are `gpu-count-per-pod`'s and `tpu-chips-per-host`'s.
//!
//! Owns `pod-allocatable`.

use crate::catalog::{self, Allocatable};
use crate::diagnostic::Diagnostic;
use crate::validate::model::PodGroup;
use crate::validate::model::nodepool::NodePool;
use crate::validate::model::workload::{Amount, Controller, amount, requested_resources};
use crate::validate::rule;
use crate::validate::rules::shared::Locate;

/// Bytes in one GiB.
const GIB: f64 = 1024.0 * 1024.0 * 1024.0;

/// The resources judged, besides every `hugepages-<size>` the pods request.
const RESOURCES: [&str; 3] = ["cpu", "memory", "ephemeral-storage"];

/// Runs `pod-allocatable` over every pod template that can land on a pool of the set.
pub(crate) fn check(groups: &[PodGroup<'_>], pools: &[NodePool<'_>], out: &mut Vec<Diagnostic>) {
    if pools.is_empty() {
        return;
    }
    let daemons: Vec<&PodGroup<'_>> = groups
        .iter()
        .filter(|group| matches!(group.template.controller, Controller::DaemonSet))
        .collect();
    for group in groups {
        // A DaemonSet's pods are the overhead others are judged with.
        if matches!(group.template.controller, Controller::DaemonSet) {
            continue;
        }
        let matching = group.matching_pools(pools);
        if matching.is_empty() {
            continue;
        }
        let template = &group.template;
        let hugepages = requested_resources(template.spec, &template.path)
            .into_keys()
            .filter(|resource| resource.starts_with("hugepages-"));
        for resource in RESOURCES.into_iter().chain(hugepages) {
            let Some(request) = amount(template.spec, &template.path, resource) else {
                continue;
            };
            if request.amount > 0.0 {
                check_resource(group, resource, &request, &matching, &daemons, out);
            }
        }
    }
}

/// What one pool's node gives these pods of `resource`.
struct Room<'p, 'n> {
    pool: &'p NodePool<'n>,
    /// Allocatable less the DaemonSets' requests.
    free: f64,
    /// The DaemonSets' requests.
    overhead: f64,
}

fn check_resource(
    group: &PodGroup<'_>,
    resource: &str,
    request: &Amount<'_>,
    matching: &[&NodePool<'_>],
    daemons: &[&PodGroup<'_>],
    out: &mut Vec<Diagnostic>,
) {
    let mut rooms = Vec::new();
    for pool in matching {
        // A pool of unknown size could hold the pods: nothing to judge.
        let Some(allocatable) = allocatable_of(pool, resource) else {
            return;
        };
        let overhead: f64 = daemons
            .iter()
            .filter(|daemon| daemon.exclusion(pool).is_none())
            .filter_map(|daemon| {
                let spec = daemon.template.spec;
                amount(spec, &daemon.template.path, resource)
            })
            .map(|daemon| daemon.amount)
            .sum();
        rooms.push(Room {
            pool,
            free: allocatable - overhead,
            overhead,
        });
    }
    if rooms.iter().any(|room| room.free >= request.amount) {
        return;
    }
    let Some(largest) = rooms.iter().max_by(|a, b| a.free.total_cmp(&b.free)) else {
        return;
    };
    let described: Vec<String> = rooms.iter().map(|room| describe(room, resource)).collect();
    let message = format!(
        "the pods request {} (`{resource}`), more than a node of any pool they can land on gives them",
        show(resource, request.amount)
    );
    let diagnostic = Diagnostic::error(rule::POD_ALLOCATABLE, message)
        .found(format!(
            "{} requested; allocatable: {}",
            show(resource, request.amount),
            described.join("; ")
        ))
        .expected(format!(
            "at most {} (the most a matching node gives)",
            show(resource, largest.free.max(0.0))
        ))
        .fix(fix(resource, request.amount, largest));
    out.push(
        group
            .template
            .finding(diagnostic, request.node, &request.field),
    );
}

/// What a node of `pool` gives pods of `resource`, before DaemonSets; `None` when unknown.
fn allocatable_of(pool: &NodePool<'_>, resource: &str) -> Option<f64> {
    if resource.starts_with("hugepages-") {
        // GKE nodes have no huge pages unless the pool configures them.
        return if pool.hugepages_configured {
            None
        } else {
            Some(0.0)
        };
    }
    let capacity = catalog::machine_capacity(pool.machine_type?)?;
    let Allocatable {
        cpu,
        memory_bytes,
        ephemeral_bytes,
    } = catalog::allocatable(capacity, pool.disk_gb);
    match resource {
        "cpu" => Some(cpu),
        "memory" => Some(memory_bytes),
        "ephemeral-storage" if !pool.ephemeral_on_local_ssd => Some(ephemeral_bytes),
        _ => None,
    }
}

/// One pool's room, for `found`.
fn describe(room: &Room<'_, '_>, resource: &str) -> String {
    let machine = room.pool.machine_type.unwrap_or("default machine type");
    let disk = if resource == "ephemeral-storage" {
        format!(", {} GiB boot disk", room.pool.disk_gb)
    } else {
        String::new()
    };
    let daemons = if room.overhead > 0.0 {
        format!(
            " after {} for the DaemonSets in the set",
            show(resource, room.overhead)
        )
    } else {
        String::new()
    };
    format!(
        "`{}` (`{machine}`{disk}) {}{daemons}",
        room.pool.name,
        show(resource, room.free.max(0.0))
    )
}

/// How to make the pods fit the pool that comes closest.
fn fix(resource: &str, request: f64, closest: &Room<'_, '_>) -> String {
    match resource {
        "ephemeral-storage" => {
            let needed = request + closest.overhead;
            let disk = (1..=6400_u32)
                .map(|tens| tens * 10)
                .find(|&disk| catalog::allocatable_ephemeral_gib(disk) * GIB >= needed);
            match disk {
                Some(disk) => format!(
                    "request what the pods need, or give `{}` a boot disk of at least {disk} GiB (`nodeConfig.diskSizeGb`): GKE keeps 10% of the disk for eviction and reserves up to 100 GiB for the system",
                    closest.pool.name
                ),
                None => "request what the pods need, or put ephemeral storage on local SSDs (`ephemeralStorageLocalSsdConfig`)".to_string(),
            }
        }
        resource if resource.starts_with("hugepages-") => format!(
            "configure huge pages on `{}` (`nodeConfig.linuxNodeConfig`), or drop the request",
            closest.pool.name
        ),
        _ => format!(
            "request at most what a node gives pods, or give `{}` a larger machine type (`nodeConfig.machineType`): GKE reserves part of every node for the system",
            closest.pool.name
        ),
    }
}

/// An amount of `resource` for people: cores, or GiB.
fn show(resource: &str, amount: f64) -> String {
    if resource == "cpu" {
        let text = format!("{amount:.2}");
        let text = text.trim_end_matches('0').trim_end_matches('.');
        format!("{text} CPU")
    } else {
        format!("{:.1} GiB", amount / GIB)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_cores_and_gib() {
        assert_eq!(show("cpu", 3.5), "3.5 CPU");
        assert_eq!(show("cpu", 16.0), "16 CPU");
        assert_eq!(show("memory", 8.0 * GIB), "8.0 GiB");
    }
}

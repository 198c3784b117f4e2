//! The repository-wide check after phase 2: two blueprints that render the same object on the
//! same cluster, including blueprints not rendered in this run (read from `rendered/`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::diagnostic::{Diagnostic, ObjectRef};
use crate::manifest;
use crate::plan::Repository;
use crate::repo::{self, RENDERED_DIR};

use super::{BlueprintResult, Read};

/// Identities of the objects that blueprints not rendered in this run hold under
/// `rendered/`, read from their file names (`<plane>/<namespace>/<kind>[.<group>]_<name>.yaml`).
pub(super) fn rendered_elsewhere(
    root: &Path,
    rendered: &[BlueprintResult],
    repository: &Repository,
) -> std::io::Result<BTreeMap<String, Vec<ObjectRef>>> {
    let mut others = BTreeMap::new();
    let dir = root.join(RENDERED_DIR);
    if !dir.is_dir() {
        return Ok(others);
    }
    let this_run: BTreeSet<&str> = rendered.iter().map(|b| b.name.as_str()).collect();
    for entry in fs_err::read_dir(&dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        // Only blueprints of the repository: a folder left by a deleted blueprint goes at the
        // next full render.
        if this_run.contains(name.as_str())
            || !repository.contains_key(&name)
            || !entry.file_type()?.is_dir()
        {
            continue;
        }
        let ids = repo::files_under(&entry.path())?
            .iter()
            .filter_map(|path| manifest::id_from_path(&repo::display_path(&entry.path(), path)))
            .collect();
        others.insert(name, ids);
    }
    Ok(others)
}

/// The cluster a blueprint's workload objects go to (`project/location/name`), when known.
pub(super) fn target_cluster(repository: &Repository, blueprint: &str) -> Option<String> {
    let exported = repository.get(blueprint)?;
    if let Some(cluster) = &exported.exports.cluster {
        return Some(format!(
            "{}/{}/{}",
            cluster.project, cluster.location, cluster.name
        ));
    }
    let owner = repository.get(exported.exports.cluster_of.as_deref()?)?;
    owner
        .exports
        .cluster
        .as_ref()
        .map(|cluster| format!("{}/{}/{}", cluster.project, cluster.location, cluster.name))
}

/// Two blueprints that render the same object (group, kind, namespace, name) on the same
/// cluster would fight over it: an error on each, naming the other. Config Connector objects
/// share the host cluster; workload objects collide only on the same target cluster.
pub(super) fn collisions(
    rendered: &[BlueprintResult],
    others: &BTreeMap<String, Vec<ObjectRef>>,
    read: &[Read<'_>],
    repository: &Repository,
) -> Vec<Diagnostic> {
    // Kinds compare case-insensitively: identities read back from file names are lower case.
    let key = |blueprint: &str, id: &ObjectRef| {
        let cluster = match crate::overlay::Plane::of_group(&id.group) {
            crate::overlay::Plane::ConfigConnector => None,
            crate::overlay::Plane::Workload => target_cluster(repository, blueprint),
        };
        (
            cluster,
            id.group.clone(),
            id.kind.to_lowercase(),
            id.namespace.clone(),
            id.name.clone(),
        )
    };
    let mut owners: BTreeMap<_, Vec<(&str, &ObjectRef)>> = BTreeMap::new();
    let sources = rendered
        .iter()
        .map(|b| (b.name.as_str(), &b.objects))
        .chain(others.iter().map(|(name, ids)| (name.as_str(), ids)));
    for (blueprint, ids) in sources {
        for id in ids {
            owners
                .entry(key(blueprint, id))
                .or_default()
                .push((blueprint, id));
        }
    }
    // By name, for as many collisions as objects.
    let read: BTreeMap<&str, &Read<'_>> = read.iter().map(|r| (r.blueprint.name, r)).collect();
    let rendered: BTreeSet<&str> = rendered.iter().map(|b| b.name.as_str()).collect();
    let mut diagnostics = Vec::new();
    for owners in owners.values().filter(|owners| owners.len() > 1) {
        for (blueprint, id) in owners {
            // Report on blueprints rendered now; the others are reported when they render.
            let Some(read) = read.get(blueprint) else {
                continue;
            };
            if !rendered.contains(blueprint) {
                continue;
            }
            let others: Vec<String> = owners
                .iter()
                .filter(|(other, _)| other != blueprint)
                .map(|(other, _)| format!("`{other}`"))
                .collect();
            diagnostics.push(
                read.blueprint
                    .error_at(
                        "blueprint-object-collision",
                        "metadata.name",
                        format!(
                            "blueprints `{blueprint}` and {} both render {}",
                            others.join(", "),
                            describe(id)
                        ),
                    )
                    .object((*id).clone())
                    .expected("each object rendered by one blueprint only")
                    .fix("give the object another name in one of the blueprints (e.g. `spec.namespace`, or a different cluster or bucket name)"),
            );
        }
    }
    diagnostics
}

pub(super) fn describe(id: &ObjectRef) -> String {
    let kind = if id.group.is_empty() {
        id.kind.clone()
    } else {
        format!("{}.{}", id.kind, id.group)
    };
    match &id.namespace {
        Some(namespace) => format!("`{kind}` `{namespace}/{}`", id.name),
        None => format!("`{kind}` `{}`", id.name),
    }
}

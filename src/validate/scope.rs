//! Which objects the cross-object rules compare: those that can be on one cluster.
//!
//! `validate` cannot see clusters, so it reads it from the one thing that cannot happen on
//! a cluster: the same object twice. A set of objects in which no named object repeats
//! (same API group, kind, namespace and name) is one scope. When one repeats, the set holds
//! several clusters' objects, and it is split by the next folder of the objects' paths (each
//! sub-folder, and each file directly in the folder, is a set of its own), again until no set
//! repeats an object. Inside one file, a repeated object starts a new scope (a stream of
//! several environments' `kustomize build` outputs, one after the other).
//!
//! So `validate envs/` with `envs/dev/` and `envs/prod/` holding the same objects compares
//! dev's objects with dev's only, and a tree without repeats is compared as a whole, as
//! before. Each split costs one pass over the objects, and there are at most as many as path
//! components: the rules then work on sets that are each one cluster's.

use std::collections::{BTreeMap, HashSet};

use crate::diagnostic::ObjectRef;
use crate::validate::Object;
use crate::validate::model::has_name;

/// The scopes of `objects`, as indices into it, each in input order.
pub(crate) fn scopes(objects: &[Object<'_>]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    split((0..objects.len()).collect(), 0, objects, &mut out);
    out
}

/// Whether a named object occurs twice among `members`.
fn repeats(members: &[usize], objects: &[Object<'_>]) -> bool {
    let mut seen: HashSet<&ObjectRef> = HashSet::with_capacity(members.len());
    members
        .iter()
        .map(|&index| &objects[index])
        .filter(|object| has_name(object))
        .any(|object| !seen.insert(&object.id))
}

/// Splits `members`, whose paths share their first `depth` components.
fn split(members: Vec<usize>, depth: usize, objects: &[Object<'_>], out: &mut Vec<Vec<usize>>) {
    if members.is_empty() {
        return;
    }
    if !repeats(&members, objects) {
        out.push(members);
        return;
    }
    // `None`: the path ends here, so these objects are all from one file.
    let mut groups: BTreeMap<Option<&str>, Vec<usize>> = BTreeMap::new();
    for index in members {
        let component = objects[index].file.split('/').nth(depth);
        groups.entry(component).or_default().push(index);
    }
    for (component, group) in groups {
        match component {
            Some(_) => split(group, depth + 1, objects, out),
            None => runs(group, objects, out),
        }
    }
}

/// Splits the objects of one file where a named object repeats.
fn runs(members: Vec<usize>, objects: &[Object<'_>], out: &mut Vec<Vec<usize>>) {
    let mut seen: HashSet<&ObjectRef> = HashSet::new();
    let mut current = Vec::new();
    for index in members {
        let object = &objects[index];
        if has_name(object) && !seen.insert(&object.id) {
            out.push(std::mem::take(&mut current));
            seen.clear();
            seen.insert(&object.id);
        }
        current.push(index);
    }
    out.push(current);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::{Node, parse_documents};

    fn scoped(files: &[(&'static str, &str)]) -> Vec<Vec<String>> {
        let parsed: Vec<(&str, Vec<Node>)> = files
            .iter()
            .map(|(file, text)| (*file, parse_documents(text).unwrap()))
            .collect();
        let objects: Vec<Object<'_>> = parsed
            .iter()
            .flat_map(|(file, documents)| {
                documents
                    .iter()
                    .map(|node| Object::from_node(file, node).unwrap())
            })
            .collect();
        scopes(&objects)
            .into_iter()
            .map(|scope| {
                scope
                    .into_iter()
                    .map(|i| format!("{}:{}", objects[i].file, objects[i].id.name))
                    .collect()
            })
            .collect()
    }

    const POOL: &str = "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerNodePool\nmetadata: {name: pool}\n";
    const JOB: &str = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: job}\n";

    #[test]
    fn a_set_without_repeats_is_one_scope() {
        let scopes = scoped(&[("a/pools.yaml", POOL), ("b/jobs.yaml", JOB)]);
        assert_eq!(scopes, [["a/pools.yaml:pool", "b/jobs.yaml:job"]]);
    }

    #[test]
    fn folders_repeating_objects_are_scopes_of_their_own() {
        let scopes = scoped(&[
            ("envs/dev/cc/pools.yaml", POOL),
            ("envs/dev/wl/jobs.yaml", JOB),
            ("envs/prod/cc/pools.yaml", POOL),
            ("envs/prod/wl/jobs.yaml", JOB),
        ]);
        assert_eq!(
            scopes,
            [
                ["envs/dev/cc/pools.yaml:pool", "envs/dev/wl/jobs.yaml:job"],
                ["envs/prod/cc/pools.yaml:pool", "envs/prod/wl/jobs.yaml:job"],
            ]
        );
    }

    #[test]
    fn one_file_repeating_objects_splits_where_they_repeat() {
        let stream = format!("{POOL}---\n{JOB}---\n{POOL}---\n{JOB}");
        let scopes = scoped(&[("all.yaml", &stream)]);
        assert_eq!(
            scopes,
            [
                ["all.yaml:pool", "all.yaml:job"],
                ["all.yaml:pool", "all.yaml:job"]
            ]
        );
    }

    #[test]
    fn splitting_costs_a_pass_per_path_component() {
        // Many copies of one tree: as many scopes as copies, each the copy's own objects.
        let files: Vec<(&'static str, &str)> = (0..200)
            .flat_map(|i| {
                let folder: &'static str = Box::leak(format!("envs/e{i}").into_boxed_str());
                let pools: &'static str = Box::leak(format!("{folder}/p.yaml").into_boxed_str());
                let jobs: &'static str = Box::leak(format!("{folder}/j.yaml").into_boxed_str());
                [(pools, POOL), (jobs, JOB)]
            })
            .collect();
        let scopes = scoped(&files);
        assert_eq!(scopes.len(), 200);
        assert!(scopes.iter().all(|scope| scope.len() == 2));
    }
}

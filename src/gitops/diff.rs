//! `kubectl aiml diff`: the rendered objects of a git revision against the working tree (or a
//! fresh render), as objects rather than lines.
//!
//! Both sides are read from their `rendered/` folders: every `*.yaml` file of every folder
//! (a blueprint's, or `_sync`), split into objects. An object is matched by its folder (the
//! blueprint that owns it: moving an object to another blueprint moves it to another sync
//! root, which deletes and recreates it) and its identity: API group, kind, namespace, name.
//! Kustomize generator names (`settings-5h9mt7f2kg`) whose hash suffix changed are matched
//! as renames. A changed object lists its changed fields by path
//! (`spec.template.spec.containers[name=trainer].image`), lists of named items matched by
//! name, found with `similar` on the flattened fields; a unified diff of the file comes with
//! it for the Markdown and JSON output.
//!
//! What the change means comes first in every output: [`super::impact`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use serde::Serialize;

use super::{GitError, Repo};
use crate::diagnostic::ObjectRef;
use crate::manifest;
use crate::repo::RENDERED_DIR;
use crate::yaml::{Node, Value};

/// A rendered object read back from one side.
#[derive(Clone, Debug)]
pub struct Object {
    /// Its folder under `rendered/`: the blueprint (or `_sync`).
    pub folder: String,
    /// Repository-relative path of its file.
    pub path: String,
    /// `apiVersion`.
    pub api_version: String,
    /// Identity.
    pub id: ObjectRef,
    /// The file's text.
    pub text: String,
    /// The parsed object.
    pub node: Node,
}

/// Folder, group, kind, namespace, name.
type Key = (String, String, String, Option<String>, String);

fn key(folder: &str, id: &ObjectRef) -> Key {
    (
        folder.to_string(),
        id.group.clone(),
        id.kind.clone(),
        id.namespace.clone(),
        id.name.clone(),
    )
}

/// The rendered objects of one side.
#[derive(Clone, Debug, Default)]
pub struct Side {
    /// Objects by folder and identity.
    pub objects: BTreeMap<Key, Object>,
    /// Files that are not Kubernetes objects (repository-relative), left out.
    pub unreadable: Vec<String>,
    /// Every folder of `rendered/` seen, read or not (see [`Selection`]).
    pub folders: BTreeSet<String>,
}

/// Which folders of `rendered/` to read: all, or the named ones (with `rendered/_sync/`,
/// which says where they go); the others are only listed in [`Side::folders`].
#[derive(Clone, Copy, Debug, Default)]
pub enum Selection<'a> {
    /// Every folder.
    #[default]
    All,
    /// These folders and the sync folder.
    Only(&'a [String]),
}

impl Selection<'_> {
    fn reads(self, folder: &str) -> bool {
        match self {
            Selection::All => true,
            Selection::Only(names) => {
                names.is_empty()
                    || folder == crate::sync::SYNC_DIR
                    || names.iter().any(|n| n == folder)
            }
        }
    }
}

impl Side {
    fn add(&mut self, folder: &str, path: String, text: &str) {
        let parsed = manifest::split(text);
        self.insert_parsed(folder, path, parsed);
    }

    fn insert_parsed(
        &mut self,
        folder: &str,
        path: String,
        parsed: Result<Vec<manifest::Manifest>, manifest::SplitError>,
    ) {
        match parsed {
            Ok(objects) if !objects.is_empty() => {
                for object in objects {
                    self.objects.insert(
                        key(folder, &object.id),
                        Object {
                            folder: folder.to_string(),
                            path: path.clone(),
                            api_version: object.api_version,
                            id: object.id,
                            text: object.text,
                            node: object.node,
                        },
                    );
                }
            }
            _ => self.unreadable.push(path),
        }
    }

    /// Adds files read as `(folder, path, text)` (`None`: unreadable), parsed in parallel and
    /// inserted in the order given, so the result is the one a sequential read gives.
    fn add_files(&mut self, files: Vec<(String, String, Option<String>)>) {
        use rayon::prelude::*;
        let parsed: Vec<_> = files
            .into_par_iter()
            .map(|(folder, path, text)| {
                let parsed = text.map(|text| manifest::split(&text));
                (folder, path, parsed)
            })
            .collect();
        for (folder, path, parsed) in parsed {
            match parsed {
                Some(parsed) => self.insert_parsed(&folder, path, parsed),
                None => self.unreadable.push(path),
            }
        }
    }

    /// Adds the objects of `text` (a YAML or JSON stream) read from `path`, in `folder`: what
    /// a live cluster answered, compared like a file.
    pub fn insert_text(&mut self, folder: &str, path: String, text: &str) {
        self.add(folder, path, text);
    }

    /// The object of `folder` with identity `id`.
    #[must_use]
    pub fn get(&self, folder: &str, id: &ObjectRef) -> Option<&Object> {
        self.objects.get(&key(folder, id))
    }

    /// Objects as the validation models read them.
    #[must_use]
    pub fn validate_objects(&self) -> Vec<crate::validate::Object<'_>> {
        self.objects
            .values()
            .map(|object| crate::validate::Object {
                file: &object.path,
                api_version: &object.api_version,
                id: object.id.clone(),
                node: &object.node,
            })
            .collect()
    }
}

/// Whether a file under `rendered/<folder>/` is a rendered object file.
fn is_object_file(relative: &str) -> bool {
    let extension = Path::new(relative).extension();
    extension.is_some_and(|e| e == "yaml" || e == "yml")
}

/// The rendered objects under `rendered` (a folder on disk: the working tree's `rendered/`
/// or a staging folder's); paths are shown as `rendered/…`. Only regular files of at most
/// `limit` bytes are read (others are named and refused, as every input is).
pub fn read_dir(rendered: &Path, limit: u64) -> Result<Side, crate::repo::ReadError> {
    read_dir_selected(rendered, limit, Selection::All)
}

/// [`read_dir`] of the folders `selection` names only.
pub fn read_dir_selected(
    rendered: &Path,
    limit: u64,
    selection: Selection<'_>,
) -> Result<Side, crate::repo::ReadError> {
    let mut side = Side::default();
    add_dir(&mut side, rendered, rendered, limit, selection)?;
    Ok(side)
}

/// Adds the rendered objects of the folders `folders` of `rendered` to `side`: a fresh
/// render's blueprints whose folders already held their output are read where they are.
pub fn add_folders<'a>(
    side: &mut Side,
    rendered: &Path,
    folders: impl IntoIterator<Item = &'a str>,
    limit: u64,
) -> Result<(), crate::repo::ReadError> {
    for folder in folders {
        add_dir(
            side,
            rendered,
            &rendered.join(folder),
            limit,
            Selection::All,
        )?;
    }
    Ok(())
}

/// Adds the objects of the files under `dir`, a folder inside `rendered`.
fn add_dir(
    side: &mut Side,
    rendered: &Path,
    dir: &Path,
    limit: u64,
    selection: Selection<'_>,
) -> Result<(), crate::repo::ReadError> {
    if !dir.is_dir() {
        return Ok(());
    }
    let mut files = Vec::new();
    for path in crate::repo::files_under(dir)? {
        let relative = crate::repo::display_path(rendered, &path);
        let Some((folder, rest)) = relative.split_once('/') else {
            continue;
        };
        if !is_object_file(rest) {
            continue;
        }
        side.folders.insert(folder.to_string());
        if !selection.reads(folder) {
            continue;
        }
        let display = format!("{RENDERED_DIR}/{relative}");
        let text = crate::repo::read_text(&path, &display, limit)?;
        files.push((folder.to_string(), display, Some(text)));
    }
    side.add_files(files);
    Ok(())
}

/// The rendered objects of `tree` (a commit's tree; `None`: nothing); files above `limit`
/// bytes are left out as unreadable.
pub fn read_tree(repo: &Repo, tree: Option<&git2::Tree<'_>>, limit: u64) -> Result<Side, GitError> {
    read_tree_selected(repo, tree, limit, Selection::All)
}

/// [`read_tree`] of the folders `selection` names only.
pub fn read_tree_selected(
    repo: &Repo,
    tree: Option<&git2::Tree<'_>>,
    limit: u64,
    selection: Selection<'_>,
) -> Result<Side, GitError> {
    let mut side = Side::default();
    let Some(tree) = tree else {
        return Ok(side);
    };
    let Ok(entry) = tree.get_path(Path::new(&format!("{}{RENDERED_DIR}", repo.prefix))) else {
        return Ok(side);
    };
    let Ok(rendered) = repo.repo.find_tree(entry.id()) else {
        return Ok(side);
    };
    let mut blobs = Vec::new();
    rendered.walk(git2::TreeWalkMode::PreOrder, |dir, item| {
        if item.kind() == Some(git2::ObjectType::Blob) {
            blobs.push((
                format!("{dir}{}", item.name().unwrap_or_default()),
                item.id(),
            ));
        }
        git2::TreeWalkResult::Ok
    })?;
    let mut files = Vec::new();
    for (relative, id) in blobs {
        let Some((folder, rest)) = relative.split_once('/') else {
            continue;
        };
        if !is_object_file(rest) {
            continue;
        }
        side.folders.insert(folder.to_string());
        if !selection.reads(folder) {
            continue;
        }
        let blob = repo.repo.find_blob(id)?;
        let path = format!("{RENDERED_DIR}/{relative}");
        let text = (u64::try_from(blob.size()).unwrap_or(u64::MAX) <= limit)
            .then(|| std::str::from_utf8(blob.content()).ok().map(str::to_string))
            .flatten();
        files.push((folder.to_string(), path, text));
    }
    side.add_files(files);
    Ok(side)
}

/// How an object changed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase", tag = "change")]
pub enum Change {
    /// Only in the new side.
    Added,
    /// Only in the base side.
    Removed,
    /// In both, different.
    Changed,
    /// A generator's hash suffix changed: the old name went, the new came.
    Renamed {
        /// The old name.
        from: String,
    },
}

/// One field that differs.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FieldChange {
    /// Path, e.g. `spec.nodeCount` or `metadata.labels["app.kubernetes.io/name"]`.
    pub path: String,
    /// The old value (`None`: the field is new).
    pub before: Option<String>,
    /// The new value (`None`: the field is gone).
    pub after: Option<String>,
}

/// One object that differs.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectDiff {
    /// Its folder under `rendered/` (the blueprint, or `_sync`).
    pub blueprint: String,
    /// Identity (the new one, or the old one for a removed object).
    pub object: ObjectRef,
    /// Its file (the new one, or the old one for a removed object).
    pub file: String,
    /// How it changed.
    #[serde(flatten)]
    pub change: Change,
    /// Changed fields (for changed and renamed objects).
    pub fields: Vec<FieldChange>,
    /// Unified diff of the file.
    pub patch: String,
}

/// Counts of one folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Objects added.
    pub added: usize,
    /// Objects removed.
    pub removed: usize,
    /// Objects changed (renames included).
    pub changed: usize,
}

/// The whole comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Diff {
    /// What the base side is (`HEAD`, a revision).
    pub base: String,
    /// What the new side is (`working tree`, `fresh render`).
    pub head: String,
    /// What the change means.
    pub impact: super::impact::Impact,
    /// Counts per folder (blueprint), sorted.
    pub blueprints: BTreeMap<String, Counts>,
    /// Every object that differs, by folder then identity.
    pub objects: Vec<ObjectDiff>,
    /// Files on either side that are not Kubernetes objects.
    pub unreadable: Vec<String>,
}

impl Diff {
    /// Whether anything differs.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Totals over every folder.
    #[must_use]
    pub fn totals(&self) -> Counts {
        self.blueprints
            .values()
            .fold(Counts::default(), |total, counts| Counts {
                added: total.added + counts.added,
                removed: total.removed + counts.removed,
                changed: total.changed + counts.changed,
            })
    }
}

/// Compares two sides.
#[must_use]
pub fn diff(base: &Side, head: &Side, base_label: &str, head_label: &str) -> Diff {
    let mut removed: Vec<&Key> = base
        .objects
        .keys()
        .filter(|key| !head.objects.contains_key(*key))
        .collect();
    let mut added: Vec<&Key> = head
        .objects
        .keys()
        .filter(|key| !base.objects.contains_key(*key))
        .collect();
    let mut objects = Vec::new();
    // Generator renames: same folder, group, kind, namespace and name without the hash.
    let mut renamed: Vec<(&Key, &Key)> = Vec::new();
    added.retain(|new| {
        let Some(stem) = generator_stem(&new.4) else {
            return true;
        };
        let found = removed.iter().position(|old| {
            (&old.0, &old.1, &old.2, &old.3) == (&new.0, &new.1, &new.2, &new.3)
                && generator_stem(&old.4) == Some(stem)
        });
        match found {
            Some(index) => {
                renamed.push((removed.remove(index), *new));
                false
            }
            None => true,
        }
    });
    for (key, old) in &base.objects {
        if let Some(new) = head.objects.get(key)
            && old.text != new.text
        {
            objects.push(object_diff(Some(old), Some(new), Change::Changed));
        }
    }
    for (old, new) in renamed {
        let (old, new) = (&base.objects[old], &head.objects[new]);
        objects.push(object_diff(
            Some(old),
            Some(new),
            Change::Renamed {
                from: old.id.name.clone(),
            },
        ));
    }
    for key in removed {
        objects.push(object_diff(Some(&base.objects[key]), None, Change::Removed));
    }
    for key in added {
        objects.push(object_diff(None, Some(&head.objects[key]), Change::Added));
    }
    objects.sort_by(|a, b| {
        (
            &a.blueprint,
            &a.object.group,
            &a.object.kind,
            &a.object.namespace,
            &a.object.name,
        )
            .cmp(&(
                &b.blueprint,
                &b.object.group,
                &b.object.kind,
                &b.object.namespace,
                &b.object.name,
            ))
    });
    let mut blueprints: BTreeMap<String, Counts> = BTreeMap::new();
    for object in &objects {
        let counts = blueprints.entry(object.blueprint.clone()).or_default();
        match object.change {
            Change::Added => counts.added += 1,
            Change::Removed => counts.removed += 1,
            Change::Changed | Change::Renamed { .. } => counts.changed += 1,
        }
    }
    let mut unreadable: Vec<String> = base
        .unreadable
        .iter()
        .chain(&head.unreadable)
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    unreadable.sort();
    Diff {
        base: base_label.to_string(),
        head: head_label.to_string(),
        impact: super::impact::assess(base, head, &objects),
        blueprints,
        objects,
        unreadable,
    }
}

fn object_diff(old: Option<&Object>, new: Option<&Object>, change: Change) -> ObjectDiff {
    let shown = new
        .or(old)
        .unwrap_or_else(|| unreachable!("one side is set"));
    let fields = match (old, new) {
        (Some(old), Some(new)) => field_changes(&old.node, &new.node),
        _ => Vec::new(),
    };
    let old_text = old.map_or("", |o| o.text.as_str());
    let new_text = new.map_or("", |o| o.text.as_str());
    let old_name = old.map_or("/dev/null".to_string(), |o| format!("a/{}", o.path));
    let new_name = new.map_or("/dev/null".to_string(), |o| format!("b/{}", o.path));
    let patch = similar::TextDiff::from_lines(old_text, new_text)
        .unified_diff()
        .context_radius(3)
        .header(&old_name, &new_name)
        .to_string();
    ObjectDiff {
        blueprint: shown.folder.clone(),
        object: shown.id.clone(),
        file: shown.path.clone(),
        change,
        fields,
        patch,
    }
}

/// The name without a kustomize generator hash (`-` and 10 characters of kustomize's
/// alphabet: consonants and digits that cannot spell words), when it has one.
#[must_use]
pub fn generator_stem(name: &str) -> Option<&str> {
    let (stem, hash) = name.rsplit_once('-')?;
    let alphabet = |c: char| "bcdfghkmt2456789".contains(c);
    (hash.len() == 10 && hash.chars().all(alphabet) && !stem.is_empty()).then_some(stem)
}

/// The fields of two versions of an object that differ, in the order they appear.
#[must_use]
pub fn field_changes(old: &Node, new: &Node) -> Vec<FieldChange> {
    let (mut before, mut after) = (Vec::new(), Vec::new());
    flatten(old, "", &mut before);
    flatten(new, "", &mut after);
    // One line per field, so that `similar` aligns fields rather than text.
    let line = |(path, value): &(String, String)| format!("{path}\u{0}{value}");
    let old_lines: Vec<String> = before.iter().map(line).collect();
    let new_lines: Vec<String> = after.iter().map(line).collect();
    let mut changes = Vec::new();
    for op in similar::capture_diff_slices(similar::Algorithm::Myers, &old_lines, &new_lines) {
        let (old_range, new_range) = (op.old_range(), op.new_range());
        if matches!(op, similar::DiffOp::Equal { .. }) {
            continue;
        }
        let gone = &before[old_range];
        let came = &after[new_range];
        for (path, value) in gone {
            let now = came.iter().find(|(p, _)| p == path).map(|(_, v)| v.clone());
            changes.push(FieldChange {
                path: path.clone(),
                before: Some(value.clone()),
                after: now,
            });
        }
        for (path, value) in came {
            if !gone.iter().any(|(p, _)| p == path) {
                changes.push(FieldChange {
                    path: path.clone(),
                    before: None,
                    after: Some(value.clone()),
                });
            }
        }
    }
    // A field that moved (reordered lists) shows as gone and new with one value: not a change.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut merged: Vec<FieldChange> = Vec::new();
    for change in changes {
        match seen.get(&change.path) {
            Some(&index) => {
                let earlier = &mut merged[index];
                if earlier.before.is_none() {
                    earlier.before = change.before;
                }
                if earlier.after.is_none() {
                    earlier.after = change.after;
                }
            }
            None => {
                seen.insert(change.path.clone(), merged.len());
                merged.push(change);
            }
        }
    }
    merged.retain(|change| change.before != change.after);
    merged
}

/// Every scalar (and empty collection) of `node` as `(path, value)`, in document order.
fn flatten(node: &Node, path: &str, out: &mut Vec<(String, String)>) {
    match &node.value {
        Value::Map(entries) if !entries.is_empty() => {
            for (key, value) in entries {
                flatten(value, &child(path, &key.text), out);
            }
        }
        Value::Seq(items) if !items.is_empty() => {
            let names: Vec<Option<&str>> = items
                .iter()
                .map(|item| item.get("name").and_then(Node::as_str))
                .collect();
            let unique: BTreeSet<&str> = names.iter().flatten().copied().collect();
            let by_name = names.iter().all(Option::is_some) && unique.len() == items.len();
            for (index, item) in items.iter().enumerate() {
                let segment = match names[index] {
                    Some(name) if by_name => format!("[name={name}]"),
                    _ => format!("[{index}]"),
                };
                flatten(item, &format!("{path}{segment}"), out);
            }
        }
        Value::Map(_) => out.push((path.to_string(), "{}".into())),
        Value::Seq(_) => out.push((path.to_string(), "[]".into())),
        Value::Null => out.push((path.to_string(), "null".into())),
        Value::Bool(b) => out.push((path.to_string(), b.to_string())),
        Value::Int(i) => out.push((path.to_string(), i.to_string())),
        Value::Float(f) => out.push((path.to_string(), f.to_string())),
        Value::String(s) => out.push((path.to_string(), s.clone())),
    }
}

fn child(path: &str, key: &str) -> String {
    let plain = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    match (path.is_empty(), plain) {
        (true, true) => key.to_string(),
        (false, true) => format!("{path}.{key}"),
        (_, false) => format!("{path}[{key:?}]"),
    }
}

/// A field path without list positions and names (`spec.containers[name=a].image` →
/// `spec.containers[].image`), to compare with schema paths.
#[must_use]
pub fn schema_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut depth = 0;
    for c in path.chars() {
        match c {
            '[' => {
                depth += 1;
                if depth == 1 {
                    out.push_str("[]");
                }
            }
            ']' => depth -= 1,
            _ if depth > 0 => {}
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(text: &str) -> Node {
        crate::yaml::parse_documents(text).unwrap().remove(0)
    }

    #[test]
    fn fields_are_matched_by_path_and_list_items_by_name() {
        let old = node(
            "spec:\n  nodeCount: 4\n  containers:\n  - name: a\n    image: x:1\n  - name: b\n    image: y:1\n  labels: {k: v}\n",
        );
        let new = node(
            "spec:\n  nodeCount: 8\n  containers:\n  - name: z\n    image: z:1\n  - name: a\n    image: x:2\n  - name: b\n    image: y:1\n",
        );
        let changes = field_changes(&old, &new);
        let shown: Vec<(String, Option<String>, Option<String>)> = changes
            .into_iter()
            .map(|c| (c.path, c.before, c.after))
            .collect();
        assert_eq!(
            shown,
            [
                ("spec.nodeCount".into(), Some("4".into()), Some("8".into())),
                (
                    "spec.containers[name=z].name".into(),
                    None,
                    Some("z".into())
                ),
                (
                    "spec.containers[name=z].image".into(),
                    None,
                    Some("z:1".into())
                ),
                (
                    "spec.containers[name=a].image".into(),
                    Some("x:1".into()),
                    Some("x:2".into())
                ),
                ("spec.labels.k".into(), Some("v".into()), None),
            ]
        );
        let annotated =
            node("metadata:\n  annotations:\n    cnrm.cloud.google.com/project-id: p\n");
        let mut flat = Vec::new();
        flatten(&annotated, "", &mut flat);
        assert_eq!(
            flat[0].0,
            "metadata.annotations[\"cnrm.cloud.google.com/project-id\"]"
        );
        assert_eq!(
            schema_path("spec.containers[name=a].env[0].value"),
            "spec.containers[].env[].value"
        );
    }

    #[test]
    fn generator_hashes_are_recognised() {
        assert_eq!(generator_stem("settings-5h9mt7f2kg"), Some("settings"));
        assert_eq!(
            generator_stem("my-app-config-8b7c6d5f4g"),
            Some("my-app-config")
        );
        assert_eq!(generator_stem("tpu-slice-0"), None);
        assert_eq!(
            generator_stem("training-aaaaaaaaaa"),
            None,
            "vowels never appear"
        );
    }
}

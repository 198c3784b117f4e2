//! Argo CD sync waves from the `config.kubernetes.io/depends-on` graph, so that Argo CD
//! applies in Config Sync's order.
//!
//! Argo CD ignores `depends-on`; it applies wave by wave and starts a wave only once every
//! object of the waves before is healthy (Config Connector objects are healthy when `Ready`).
//! An object's wave is the longest depends-on path below it in its overlay target (0, Argo
//! CD's default, is left unwritten), so it syncs after everything it depends on, as Config
//! Sync applies it. The annotation is written into the overlay's own resource files, before
//! kustomize, so the overlays still build to exactly the rendered objects. Only with
//! `sync.engine: argocd`; the render cache keys on the settings, so switching engines re-renders.

use std::collections::BTreeMap;

use crate::diagnostic::ObjectRef;
use crate::graph::{DEPENDS_ON_ANNOTATION, parse_depends_on};
use crate::overlay::{Overlay, Plane};
use crate::yaml::{self, Node};

/// The annotation Argo CD orders a sync by.
pub const SYNC_WAVE_ANNOTATION: &str = "argocd.argoproj.io/sync-wave";

/// Why the waves of an overlay could not be written.
#[derive(Debug, thiserror::Error)]
pub enum WaveError {
    /// A resource file of the overlay does not parse (a bug in a template).
    #[error("`{file}` does not parse: {message}")]
    Parse {
        /// The overlay file.
        file: String,
        /// Why.
        message: String,
    },
    /// The objects' depends-on annotations form a cycle: no order can apply them.
    #[error("config.kubernetes.io/depends-on forms a cycle: {}", .objects.join(" → "))]
    Cycle {
        /// The objects on the cycle, each depending on the next.
        objects: Vec<String>,
    },
    /// The depends-on annotation is not written in block style, where a sibling line can go.
    #[error(
        "`{file}`: {object}: write `metadata.annotations` in block style (one key per line) so that its sync wave can be added"
    )]
    Placement {
        /// The overlay file.
        file: String,
        /// The object.
        object: String,
    },
}

/// One object of an overlay target.
struct Item {
    file: String,
    id: ObjectRef,
    depends_on: Vec<ObjectRef>,
    /// Byte offset of the depends-on annotation's key in its file.
    key_offset: Option<usize>,
    /// Whether the object sets its own wave already.
    has_wave: bool,
}

/// Writes `argocd.argoproj.io/sync-wave` into every object of `overlay` whose longest
/// depends-on path within its target folder is at least 1.
pub fn add_sync_waves(overlay: &mut Overlay) -> Result<(), WaveError> {
    for plane in [Plane::ConfigConnector, Plane::Workload] {
        let items = read_target(overlay, plane)?;
        let waves = waves(&items)?;
        let mut inserts: BTreeMap<&str, Vec<(usize, String)>> = BTreeMap::new();
        for (item, wave) in items.iter().zip(waves) {
            let Some(offset) = item.key_offset.filter(|_| wave > 0 && !item.has_wave) else {
                continue;
            };
            let text = &overlay.files[&item.file];
            let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
            let indent = &text[line_start..offset];
            if !indent.chars().all(|c| c == ' ') {
                return Err(WaveError::Placement {
                    file: item.file.clone(),
                    object: item.id.to_string(),
                });
            }
            inserts.entry(&item.file).or_default().push((
                line_start,
                format!("{indent}{SYNC_WAVE_ANNOTATION}: \"{wave}\"\n"),
            ));
        }
        let edited: Vec<(String, String)> = inserts
            .into_iter()
            .map(|(file, mut lines)| {
                let mut text = overlay.files[file].clone();
                // From the end, so earlier offsets stay valid.
                lines.sort_by_key(|line| std::cmp::Reverse(line.0));
                for (at, line) in lines {
                    text.insert_str(at, &line);
                }
                (file.to_string(), text)
            })
            .collect();
        overlay.files.extend(edited);
    }
    Ok(())
}

/// The objects of the resource files of `plane`'s target folder.
fn read_target(overlay: &Overlay, plane: Plane) -> Result<Vec<Item>, WaveError> {
    let prefix = format!("{}/", plane.dir());
    let mut items = Vec::new();
    for (file, text) in &overlay.files {
        if !file.starts_with(&prefix) || file.ends_with("/kustomization.yaml") {
            continue;
        }
        let documents = yaml::parse_documents(text).map_err(|error| WaveError::Parse {
            file: file.clone(),
            message: error.to_string(),
        })?;
        for document in &documents {
            let Some(id) = identity(document) else {
                continue;
            };
            let annotations = document.at(&["metadata", "annotations"]);
            let value = annotations
                .and_then(|a| a.get(DEPENDS_ON_ANNOTATION))
                .and_then(Node::as_str);
            items.push(Item {
                file: file.clone(),
                id,
                depends_on: value
                    .unwrap_or_default()
                    .split(',')
                    .filter_map(|entry| parse_depends_on(entry.trim()))
                    .collect(),
                key_offset: annotations
                    .and_then(|a| a.key(DEPENDS_ON_ANNOTATION))
                    .map(|key| key.span.offset),
                has_wave: annotations.is_some_and(|a| a.get(SYNC_WAVE_ANNOTATION).is_some()),
            });
        }
    }
    Ok(items)
}

/// An object's identity as a depends-on entry names it.
fn identity(document: &Node) -> Option<ObjectRef> {
    let api_version = document.get("apiVersion")?.as_str()?;
    let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
    Some(ObjectRef {
        group: group.to_string(),
        kind: document.get("kind")?.as_str()?.to_string(),
        namespace: document
            .at(&["metadata", "namespace"])
            .and_then(Node::as_str)
            .map(str::to_string),
        name: document.at(&["metadata", "name"])?.as_str()?.to_string(),
    })
}

/// The longest depends-on path below each item, through items of the same list (an entry
/// naming something else orders nothing here).
fn waves(items: &[Item]) -> Result<Vec<usize>, WaveError> {
    let index: BTreeMap<&ObjectRef, usize> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (&item.id, i))
        .collect();
    let edges: Vec<Vec<usize>> = items
        .iter()
        .map(|item| {
            (item.depends_on.iter())
                .filter_map(|id| index.get(id).copied())
                .collect()
        })
        .collect();
    // Depth-first, without recursion: blueprint-made overlays can be long chains.
    let mut wave: Vec<Option<usize>> = vec![None; items.len()];
    let mut on_path = vec![false; items.len()];
    for start in 0..items.len() {
        let mut stack = vec![(start, 0usize)];
        while let Some(&mut (at, ref mut next)) = stack.last_mut() {
            if wave[at].is_some() {
                stack.pop();
                continue;
            }
            on_path[at] = true;
            if let Some(&to) = edges[at].get(*next) {
                *next += 1;
                if on_path[to] {
                    let from = stack.iter().position(|&(i, _)| i == to).unwrap_or(0);
                    return Err(WaveError::Cycle {
                        objects: stack[from..]
                            .iter()
                            .map(|&(i, _)| items[i].id.to_string())
                            .collect(),
                    });
                }
                if wave[to].is_none() {
                    stack.push((to, 0));
                }
                continue;
            }
            let below = edges[at].iter().filter_map(|&to| wave[to]).max();
            wave[at] = Some(below.map_or(0, |w| w + 1));
            on_path[at] = false;
            stack.pop();
        }
    }
    Ok(wave.into_iter().map(Option::unwrap_or_default).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn overlay(resources: &str) -> Overlay {
        let mut overlay = Overlay::default();
        overlay.files.insert(
            "config-connector/kustomization.yaml".into(),
            "resources:\n- resources.yaml\n".into(),
        );
        overlay
            .files
            .insert("config-connector/resources.yaml".into(), resources.into());
        overlay
    }

    const CHAIN: &str = "---
apiVersion: serviceusage.cnrm.cloud.google.com/v1beta1
kind: Service
metadata:
  name: api
  namespace: p
---
apiVersion: iam.cnrm.cloud.google.com/v1beta1
kind: IAMServiceAccount
metadata:
  name: sa
  namespace: p
  annotations:
    config.kubernetes.io/depends-on: serviceusage.cnrm.cloud.google.com/namespaces/p/Service/api
---
apiVersion: container.cnrm.cloud.google.com/v1beta1
kind: ContainerNodePool
metadata:
  name: pool
  namespace: p
  annotations:
    a: b
    config.kubernetes.io/depends-on: \"iam.cnrm.cloud.google.com/namespaces/p/IAMServiceAccount/sa,serviceusage.cnrm.cloud.google.com/namespaces/p/Service/api,x/namespaces/p/Gone/g\"
";

    #[test]
    fn each_object_waits_for_its_longest_depends_on_path() {
        let mut overlay = overlay(CHAIN);
        add_sync_waves(&mut overlay).unwrap();
        let text = &overlay.files["config-connector/resources.yaml"];
        let documents = yaml::parse_documents(text).unwrap();
        let waves: Vec<Option<&str>> = documents
            .iter()
            .map(|d| {
                d.at(&["metadata", "annotations", SYNC_WAVE_ANNOTATION])
                    .and_then(Node::as_str)
            })
            .collect();
        assert_eq!(waves, [None, Some("1"), Some("2")], "{text}");
        assert!(text.contains("    a: b\n    argocd.argoproj.io/sync-wave: \"2\"\n"));
    }

    #[test]
    fn a_cycle_and_flow_style_annotations_are_errors() {
        let cycle = CHAIN.replace(
            "  name: api\n  namespace: p\n",
            "  name: api\n  namespace: p\n  annotations:\n    config.kubernetes.io/depends-on: container.cnrm.cloud.google.com/namespaces/p/ContainerNodePool/pool\n",
        );
        let error = add_sync_waves(&mut overlay(&cycle)).unwrap_err();
        assert!(matches!(error, WaveError::Cycle { .. }), "{error}");
        assert!(
            error.to_string().contains("ContainerNodePool/p/pool"),
            "{error}"
        );

        let flow = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns, annotations: {config.kubernetes.io/depends-on: /namespaces/ns/ConfigMap/b}}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b, namespace: ns}\n";
        let mut flow_overlay = overlay("");
        flow_overlay
            .files
            .insert("workload/resources.yaml".into(), flow.into());
        let error = add_sync_waves(&mut flow_overlay).unwrap_err();
        assert!(matches!(error, WaveError::Placement { .. }), "{error}");
    }
}

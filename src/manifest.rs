//! Rendered objects: kustomize output split into one object per file, with stable paths.
//!
//! Layout under `rendered/<blueprint>/`:
//!
//! ```text
//! config-connector/<namespace>/<kind>[.<group>]_<name>.yaml   Config Connector (host cluster)
//! workload/<namespace | _cluster>/<kind>[.<group>]_<name>.yaml everything else (workload cluster)
//! ```
//!
//! The two planes never share a folder, so a sync root (RootSync, Argo CD Application) can
//! point at one of them. Each file holds the bytes kustomize printed for that object, so the
//! overlay builds to exactly what `rendered/` holds.

use crate::diagnostic::ObjectRef;
use crate::overlay::Plane;
use crate::yaml::{self, Node};

/// One object of a render: its text as kustomize printed it, and its parsed tree.
#[derive(Clone, Debug)]
pub struct Manifest {
    /// Path relative to `rendered/<blueprint>/`.
    pub path: String,
    /// The object's YAML, ending with a newline.
    pub text: String,
    /// The parsed object (line numbers are relative to `text`).
    pub node: Node,
    /// Identity.
    pub id: ObjectRef,
    /// `apiVersion`.
    pub api_version: String,
}

impl Manifest {
    /// The target cluster the object is applied on.
    #[must_use]
    pub fn plane(&self) -> Plane {
        Plane::of_group(&self.id.group)
    }
}

/// Why kustomize output could not be split into objects.
#[derive(Debug, thiserror::Error)]
pub enum SplitError {
    /// A document did not parse (a kustomize bug or a non-YAML resource).
    #[error("kustomize printed YAML that does not parse: {0}")]
    Parse(yaml::ParseError),
    /// A document is not a Kubernetes object.
    #[error("kustomize printed a document without apiVersion, kind and metadata.name:\n{0}")]
    NotAnObject(String),
    /// More documents than one file may hold ([`crate::limits::MAX_DOCUMENTS`]), the limit
    /// every YAML stream the tool reads has.
    #[error(
        "kustomize printed more than {} documents (a limit that protects against hostile input); nothing was written",
        crate::limits::MAX_DOCUMENTS
    )]
    TooManyDocuments,
    /// Two objects would land in the same file.
    #[error("two objects map to the same rendered file `{0}`")]
    Duplicate(String),
    /// An object whose identity cannot be a file name (and is no valid Kubernetes name).
    #[error(
        "kustomize printed {object}, whose {part} is not a valid Kubernetes {expected}; nothing was written"
    )]
    UnsafeName {
        /// The object, with the offending part escaped.
        object: String,
        /// `kind`, `namespace`, `name` or `apiVersion`.
        part: &'static str,
        /// What it must be.
        expected: &'static str,
    },
}

/// Checks that an object's identity is made of valid Kubernetes names, so that the file name
/// built from it stays inside its folder: no `/`, no `..`, no control characters.
fn check_identity(id: &ObjectRef) -> Result<(), SplitError> {
    let unsafe_name = |part, expected| SplitError::UnsafeName {
        object: format!(
            "`{}/{}/{}`",
            escape(&id.kind),
            id.namespace.as_deref().map_or_else(String::new, escape),
            escape(&id.name)
        ),
        part,
        expected,
    };
    let kind_ok = id.kind.len() <= 63
        && id.kind.starts_with(|c: char| c.is_ascii_alphabetic())
        && id.kind.bytes().all(|b| b.is_ascii_alphanumeric());
    if !kind_ok {
        return Err(unsafe_name("kind", "kind (letters and digits)"));
    }
    if !id.group.is_empty() && !is_dns_subdomain(&id.group, false) {
        return Err(unsafe_name("apiVersion", "API group (a DNS subdomain)"));
    }
    if let Some(namespace) = &id.namespace
        && (crate::names::check_dns_label(namespace).is_err())
    {
        return Err(unsafe_name("namespace", "namespace (a DNS-1123 label)"));
    }
    // `:` for RBAC names such as `system:aggregate-to-view`.
    if !is_dns_subdomain(&id.name, true) {
        return Err(unsafe_name("name", "object name (a DNS-1123 subdomain)"));
    }
    Ok(())
}

/// A DNS-1123 subdomain: 1 to 253 lowercase letters, digits, `-` and `.`, starting and ending
/// with a letter or digit, without empty labels; `colon` also allows `:`.
fn is_dns_subdomain(text: &str, colon: bool) -> bool {
    let edge = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    (1..=253).contains(&text.len())
        && text.starts_with(edge)
        && text.ends_with(edge)
        && !text.contains("..")
        && text.bytes().all(|b| {
            b.is_ascii_lowercase()
                || b.is_ascii_digit()
                || b == b'-'
                || b == b'.'
                || (colon && b == b':')
        })
}

/// Control characters and backslashes as escapes, and long text cut, for messages.
fn escape(text: &str) -> String {
    crate::diagnostic::sanitize(text, 80)
}

/// Splits kustomize output into manifests, sorted by path. Kustomize separates documents
/// with a `---` line; every document is a mapping, so the separator never occurs inside one.
pub fn split(output: &str) -> Result<Vec<Manifest>, SplitError> {
    let chunks = documents(output);
    if chunks.len() > crate::limits::MAX_DOCUMENTS {
        return Err(SplitError::TooManyDocuments);
    }
    let mut manifests = Vec::new();
    for chunk in chunks {
        let mut nodes = yaml::parse_documents(&chunk).map_err(SplitError::Parse)?;
        let Some(node) = nodes.pop().filter(|_| nodes.is_empty()) else {
            return Err(SplitError::NotAnObject(crate::diagnostic::sanitize(
                &chunk, 400,
            )));
        };
        let Some((api_version, id)) = identity(&node).map(|(v, id)| (v.to_string(), id)) else {
            return Err(SplitError::NotAnObject(crate::diagnostic::sanitize(
                &chunk, 400,
            )));
        };
        check_identity(&id)?;
        manifests.push(Manifest {
            path: path_for(&api_version, &id),
            text: chunk,
            node,
            id,
            api_version,
        });
    }
    manifests.sort_by(|a, b| a.path.cmp(&b.path));
    if let Some(pair) = manifests
        .windows(2)
        .find(|pair| pair[0].path == pair[1].path)
    {
        return Err(SplitError::Duplicate(pair[0].path.clone()));
    }
    Ok(manifests)
}

/// The documents of a YAML stream written by kustomize, each ending with a newline.
fn documents(output: &str) -> Vec<String> {
    let mut documents = Vec::new();
    let mut current = String::new();
    for line in output.lines() {
        if line == "---" {
            if !current.trim().is_empty() {
                documents.push(std::mem::take(&mut current));
            }
            current.clear();
        } else {
            current.push_str(line);
            current.push('\n');
        }
    }
    if !current.trim().is_empty() {
        documents.push(current);
    }
    documents
}

/// An object's `apiVersion` and identity; `None` when it lacks `apiVersion`, `kind` or
/// `metadata.name` (or `metadata.generateName`, which then stands for the name): not a
/// Kubernetes object.
#[must_use]
pub fn identity(node: &Node) -> Option<(&str, ObjectRef)> {
    let api_version = node.get("apiVersion")?.as_str()?;
    let kind = node.get("kind")?.as_str()?.to_string();
    let metadata = node.get("metadata")?;
    // An object created with `generateName` has no name yet: the prefix stands for it.
    let name = metadata
        .get("name")
        .or_else(|| metadata.get("generateName"))?
        .as_str()?
        .to_string();
    let namespace = metadata
        .get("namespace")
        .and_then(Node::as_str)
        .map(str::to_string);
    Some((
        api_version,
        ObjectRef {
            group: group_of(api_version).to_string(),
            kind,
            namespace,
            name,
        },
    ))
}

/// The API group of an `apiVersion` (`""` for the core group).
#[must_use]
pub fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(group, _)| group)
}

/// `config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_pool.yaml`.
#[must_use]
pub fn path_for(api_version: &str, id: &ObjectRef) -> String {
    let group = group_of(api_version);
    let plane = Plane::of_group(group);
    // `_cluster` cannot be a namespace name (no `_` in DNS labels), so it never collides.
    let namespace = id.namespace.as_deref().unwrap_or("_cluster");
    let kind = id.kind.to_lowercase();
    let qualified = if group.is_empty() {
        kind
    } else {
        format!("{kind}.{group}")
    };
    format!("{}/{namespace}/{qualified}_{}.yaml", plane.dir(), id.name)
}

/// The identity encoded in a rendered file's path (the inverse of [`path_for`]); the kind
/// comes back in lower case. `None` for paths that are not rendered object files.
#[must_use]
pub fn id_from_path(path: &str) -> Option<ObjectRef> {
    let mut parts = path.split('/');
    let (Some(plane), Some(namespace), Some(file), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    if plane != Plane::ConfigConnector.dir() && plane != Plane::Workload.dir() {
        return None;
    }
    let (qualified, name) = file.strip_suffix(".yaml")?.split_once('_')?;
    let (kind, group) = qualified.split_once('.').unwrap_or((qualified, ""));
    Some(ObjectRef {
        group: group.to_string(),
        kind: kind.to_string(),
        namespace: (namespace != "_cluster").then(|| namespace.to_string()),
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kustomize_output_keeps_the_document_limit() {
        let over = crate::limits::MAX_DOCUMENTS + 1;
        let output: String = (0..over)
            .map(|i| format!("---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c{i}\n"))
            .collect();
        assert!(matches!(split(&output), Err(SplitError::TooManyDocuments)));
    }

    #[test]
    fn splits_and_places_objects() {
        let output = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: train\n---\napiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerNodePool\nmetadata:\n  name: pool\n  namespace: proj\nspec:\n  script: |\n    a\n    b\n";
        let manifests = split(output).unwrap();
        let paths: Vec<&str> = manifests.iter().map(|m| m.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "config-connector/proj/containernodepool.container.cnrm.cloud.google.com_pool.yaml",
                "workload/_cluster/namespace_train.yaml",
            ]
        );
        assert!(manifests[0].text.ends_with("    b\n"));
        assert!(!manifests[1].text.contains("---"));
    }

    #[test]
    fn rejects_duplicates_and_non_objects() {
        let twice = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";
        assert!(matches!(split(twice), Err(SplitError::Duplicate(_))));
        assert!(matches!(split("a: 1\n"), Err(SplitError::NotAnObject(_))));
    }

    #[test]
    fn paths_give_identities_back() {
        let output = "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: train\n---\napiVersion: serviceusage.cnrm.cloud.google.com/v1beta1\nkind: Service\nmetadata:\n  name: a.b\n  namespace: proj\n";
        for m in split(output).unwrap() {
            let mut id = m.id.clone();
            id.kind = id.kind.to_lowercase();
            assert_eq!(id_from_path(&m.path), Some(id), "{}", m.path);
        }
        assert_eq!(id_from_path("README.md"), None);
    }

    #[test]
    fn names_that_would_escape_their_folder_are_refused() {
        for name in [
            "../../etc",
            "a/b",
            "..",
            ".hidden",
            "UPPER",
            "tab\there",
            "x\u{1b}[31m",
            "",
        ] {
            let output = format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {}\n  namespace: ns\n",
                serde_json::to_string(name).unwrap()
            );
            let error = split(&output).unwrap_err();
            assert!(
                matches!(error, SplitError::UnsafeName { part: "name", .. }),
                "{name:?}: {error}"
            );
            assert!(!error.to_string().contains('\u{1b}'), "{error}");
        }
        let bad_namespace =
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ../x}\n";
        assert!(matches!(
            split(bad_namespace),
            Err(SplitError::UnsafeName {
                part: "namespace",
                ..
            })
        ));
        let bad_kind = "apiVersion: v1\nkind: Config/Map\nmetadata: {name: a}\n";
        assert!(matches!(
            split(bad_kind),
            Err(SplitError::UnsafeName { part: "kind", .. })
        ));
        let rbac = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: 'system:aggregate-to-view'}\n";
        assert!(split(rbac).is_ok());
    }

    #[test]
    fn planes_follow_api_groups() {
        assert_eq!(
            Plane::of_group("iam.cnrm.cloud.google.com"),
            Plane::ConfigConnector
        );
        assert_eq!(Plane::of_group("jobset.x-k8s.io"), Plane::Workload);
        assert_eq!(Plane::of_group(""), Plane::Workload);
    }
}

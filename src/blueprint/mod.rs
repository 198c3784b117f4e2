//! Blueprints: the short YAML documents people write.
//!
//! A blueprint is a Kubernetes-style document (`apiVersion: aiml.dev/v1alpha1`, `kind`,
//! `metadata.name`, `spec`). This module checks the envelope against the kind names it is
//! given ([`KnownKinds`]) and holds the strict reader of specs ([`de`]). It sits in the input
//! layer, below the kinds: which kind compiles a blueprint, and how, is the business of
//! `crate::kinds`, which implements [`KnownKinds`].

pub mod de;

use crate::diagnostic::{Diagnostic, RuleId};
use crate::yaml::{Node, Span};

/// The `apiVersion` of every blueprint.
pub const API_VERSION: &str = "aiml.dev/v1alpha1";

/// The API group of blueprints (the group of [`API_VERSION`]).
pub const API_GROUP: &str = "aiml.dev";

/// Rules about input files and blueprint envelopes.
pub const RULES: &[crate::diagnostic::Rule] = &[
    crate::diagnostic::Rule {
        id: "yaml-syntax",
        summary: "every input file is well-formed YAML",
    },
    crate::diagnostic::Rule {
        id: crate::repo::YAML_AMBIGUOUS,
        summary: "a plain value reads alike in kubectl, YAML 1.1 and YAML 1.2 readers (warning)",
    },
    crate::diagnostic::Rule {
        id: "blueprint-schema",
        summary: "a blueprint has exactly the fields of its kind, each of the right type",
    },
    crate::diagnostic::Rule {
        id: "blueprint-kind",
        summary: "a blueprint's `kind` is a blueprint kind this tool knows",
    },
    crate::diagnostic::Rule {
        id: "blueprint-api-version",
        summary: "a blueprint's `apiVersion` is `aiml.dev/v1alpha1`",
    },
    crate::diagnostic::Rule {
        id: "blueprint-name",
        summary: "a blueprint's `metadata.name` is a DNS-1123 label",
    },
    crate::diagnostic::Rule {
        id: "blueprint-name-duplicate",
        summary: "blueprint names are unique in a repository",
    },
    crate::diagnostic::Rule {
        id: "blueprint-object-collision",
        summary: "no two blueprints render the same object",
    },
    crate::diagnostic::Rule {
        id: "object-labels",
        summary: "every rendered object carries the `managed-by` and `instance` labels",
    },
    crate::diagnostic::Rule {
        id: "not-an-object",
        summary: "every document given to `validate` is a Kubernetes object (warning)",
    },
];

/// The blueprint kinds the envelope check accepts. The kinds themselves sit in a higher layer
/// (`crate::kinds::Registry` implements this), so the envelope knows them by name only.
pub trait KnownKinds {
    /// Whether `name` is a blueprint kind.
    fn is_kind(&self, name: &str) -> bool;
    /// Every kind's name, sorted.
    fn kind_names(&self) -> Vec<&str>;
}

/// A blueprint document whose envelope has been checked.
#[derive(Clone, Copy)]
pub struct Blueprint<'a> {
    /// Repository-relative path of its file.
    pub file: &'a str,
    /// The whole document.
    pub node: &'a Node,
    /// `metadata.name`.
    pub name: &'a str,
    /// The name of its kind, one the [`KnownKinds`] of the envelope check had.
    pub kind: &'a str,
    /// The text of its file (spans index into it), when known: messages then quote values
    /// exactly as written.
    pub source: &'a str,
}

impl std::fmt::Debug for Blueprint<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Blueprint")
            .field("file", &self.file)
            .field("name", &self.name)
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

impl<'a> Blueprint<'a> {
    /// Checks the envelope of a document that declares the blueprint `apiVersion`.
    pub fn from_node(
        file: &'a str,
        node: &'a Node,
        kinds: &dyn KnownKinds,
    ) -> Result<Self, Diagnostic> {
        let at = |span: Span| (file, span);
        let schema_error = |message: String, span: Span, field: &str| {
            let (file, span) = at(span);
            Diagnostic::error("blueprint-schema", message)
                .at(file, span)
                .field(field)
        };
        if node.as_map().is_none() {
            return Err(schema_error(
                "a blueprint must be a mapping".into(),
                node.span,
                "",
            ));
        }
        let api_version = node.get("apiVersion").and_then(Node::as_str);
        if api_version != Some(API_VERSION) {
            let span = node.get("apiVersion").map_or(node.span, |n| n.span);
            return Err(Diagnostic::error(
                "blueprint-api-version",
                "unsupported blueprint apiVersion",
            )
            .at(file, span)
            .field("apiVersion")
            .found(api_version.unwrap_or("nothing"))
            .expected(format!("`{API_VERSION}`"))
            .fix(format!("set `apiVersion: {API_VERSION}`")));
        }
        for (key, _) in node.as_map().unwrap_or_default() {
            if !["apiVersion", "kind", "metadata", "spec"].contains(&key.text.as_str()) {
                return Err(schema_error(
                    format!("unknown field `{}`", key.text),
                    key.span,
                    &key.text,
                )
                .expected("`apiVersion`, `kind`, `metadata` and `spec`"));
            }
        }
        let kind_node = node.get("kind");
        let Some(kind_name) = kind_node.and_then(Node::as_str) else {
            return Err(schema_error("missing `kind`".into(), node.span, "kind")
                .expected(known_kinds(kinds))
                .fix("add `kind:` with a blueprint kind"));
        };
        if !kinds.is_kind(kind_name) {
            let names = kinds.kind_names();
            let mut d = Diagnostic::error(
                "blueprint-kind",
                format!("unknown blueprint kind: `{kind_name}`"),
            )
            .at(file, kind_node.map_or(node.span, |n| n.span))
            .field("kind")
            .found(kind_name)
            .expected(known_kinds(kinds));
            if let Some(best) = crate::catalog::closest(kind_name, names) {
                d = d.fix(format!("did you mean `{best}`?"));
            }
            return Err(d);
        }
        let metadata = node.get("metadata");
        if let Some((key, _)) = metadata.and_then(Node::as_map).and_then(|m| {
            m.iter()
                .find(|(k, _)| k.text != "name" && k.text != "annotations")
        }) {
            return Err(schema_error(
                format!("unknown field `{}`", key.text),
                key.span,
                "metadata",
            )
            .expected("`name` and `annotations`"));
        }
        if let Some(annotations) = metadata.and_then(|m| m.get("annotations")) {
            let all_strings = annotations
                .as_map()
                .is_some_and(|entries| entries.iter().all(|(_, v)| v.as_str().is_some()));
            if !all_strings {
                return Err(schema_error(
                    "`metadata.annotations` must map names to strings".into(),
                    annotations.span,
                    "metadata.annotations",
                )
                .expected("e.g. `aiml.dev/ignore: image-reference`"));
            }
        }
        let name_node = metadata.and_then(|m| m.get("name"));
        let Some(name) = name_node.and_then(Node::as_str) else {
            return Err(schema_error(
                "missing `metadata.name`".into(),
                metadata.map_or(node.span, |m| m.span),
                "metadata.name",
            )
            .fix("add `metadata: {name: <dns-label>}`"));
        };
        if let Err(reason) = crate::names::check_dns_label(name) {
            return Err(Diagnostic::error("blueprint-name", format!("invalid blueprint name: {reason}"))
                .at(file, name_node.map_or(node.span, |n| n.span))
                .field("metadata.name")
                .found(name)
                .expected("a DNS-1123 label: lowercase letters, digits and `-`, at most 63 characters, starting and ending with a letter or digit"));
        }
        if node.get("spec").and_then(Node::as_map).is_none() {
            let span = node.get("spec").map_or(node.span, |n| n.span);
            return Err(schema_error(
                "`spec` must be a mapping".into(),
                span,
                "spec",
            ));
        }
        Ok(Self {
            file,
            node,
            name,
            kind: kind_name,
            source: "",
        })
    }

    /// The same blueprint, knowing the text of its file.
    #[must_use]
    pub fn with_source(mut self, source: &'a str) -> Self {
        self.source = source;
        self
    }

    /// The text of a scalar as written in the file (`1.10`, not the parsed `1.1`).
    fn written(&self, span: Span) -> Option<&'a str> {
        let text = self
            .source
            .get(span.offset..span.offset.checked_add(span.len)?)?;
        (!text.is_empty()).then_some(text)
    }

    /// The `spec` node.
    #[must_use]
    pub fn spec(&self) -> &'a Node {
        // `from_node` checked that `spec` is a mapping.
        self.node.get("spec").unwrap_or(self.node)
    }

    /// The blueprint as an object, for findings about it (`MultisliceTraining/<name>`).
    #[must_use]
    pub fn object_ref(&self) -> crate::diagnostic::ObjectRef {
        crate::diagnostic::ObjectRef {
            group: API_GROUP.into(),
            kind: self.kind.to_string(),
            namespace: None,
            name: self.name.to_string(),
        }
    }

    /// Rules this blueprint turns off with the annotation `aiml.dev/ignore`.
    #[must_use]
    pub fn ignored_rules(&self) -> Vec<String> {
        self.node
            .at(&[
                "metadata",
                "annotations",
                crate::diagnostic::IGNORE_ANNOTATION,
            ])
            .and_then(Node::as_str)
            .map(|list| {
                list.split(',')
                    .map(str::trim)
                    .filter(|id| !id.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Credentials written anywhere in the blueprint ([`crate::secrets`]): blueprints are
    /// committed, so each is a leak; they belong in a Secret or Secret Manager, referenced.
    #[must_use]
    pub fn credential_findings(&self) -> Vec<Diagnostic> {
        crate::secrets::find(self.node, "")
            .into_iter()
            .map(|leak| {
                Diagnostic::error(
                    crate::secrets::RULE,
                    format!(
                        "`{}` holds {}: blueprints are committed, so the credential is leaked",
                        leak.field, leak.what
                    ),
                )
                .at(self.file, leak.node.span)
                .field(leak.field)
                .object(self.object_ref())
                .fix("revoke it, store it in a Kubernetes Secret or Secret Manager, and reference that")
            })
            .collect()
    }

    /// A diagnostic pointing at the closest existing node to a dotted blueprint path.
    #[must_use]
    pub fn error_at(
        &self,
        rule: impl Into<RuleId>,
        field: &str,
        message: impl Into<String>,
    ) -> Diagnostic {
        let (span, _) = self.node.closest(field);
        Diagnostic::error(rule, message)
            .at(self.file, span)
            .field(field)
            .object(self.object_ref())
    }

    /// A diagnostic pointing at the key `key` of the mapping at the dotted path `map_field`
    /// (for mistakes in names people choose, such as environment variable names).
    #[must_use]
    pub fn key_error_at(
        &self,
        rule: impl Into<RuleId>,
        map_field: &str,
        key: &str,
        message: impl Into<String>,
    ) -> Diagnostic {
        let path: Vec<&str> = map_field.split('.').filter(|k| !k.is_empty()).collect();
        let span = self
            .node
            .at(&path)
            .and_then(|map| map.key(key))
            .map_or_else(|| self.node.closest(map_field).0, |k| k.span);
        Diagnostic::error(rule, message)
            .at(self.file, span)
            .field(format!("{map_field}.{key}"))
            .object(self.object_ref())
    }

    /// Reads `spec` strictly as `T`; structural problems become `blueprint-schema` errors.
    pub fn read_spec<T: serde::de::DeserializeOwned>(&self) -> Result<T, Diagnostic> {
        de::from_node(self.spec(), "spec").map_err(|e| {
            let mut d = Diagnostic::error("blueprint-schema", e.message)
                .at(self.file, e.span.unwrap_or(self.spec().span))
                .field(e.path)
                .object(self.object_ref());
            d.expected = e.expected;
            // A number read back loses how it was written (`1.10` parses as 1.1): quote the
            // user's own characters.
            let written = e.span.and_then(|span| self.written(span));
            match written {
                Some(raw)
                    if e.fix
                        .as_deref()
                        .is_some_and(|f| f.starts_with("quote the value")) =>
                {
                    d.found = Some(raw.to_string());
                    d.fix = Some(format!("quote the value: `\"{raw}\"`"));
                }
                _ => {
                    d.found = e.found;
                    d.fix = e.fix;
                }
            }
            d
        })
    }
}

fn known_kinds(kinds: &dyn KnownKinds) -> String {
    let names: Vec<String> = kinds
        .kind_names()
        .iter()
        .map(|k| format!("`{k}`"))
        .collect();
    format!("one of {}", names.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kinds::Registry;
    use crate::yaml::parse_documents;

    fn envelope(text: &str) -> Result<String, Diagnostic> {
        let docs = parse_documents(text).unwrap();
        let registry = Registry::builtin();
        Blueprint::from_node("b.yaml", &docs[0], &registry).map(|b| b.kind.to_string())
    }

    #[test]
    fn accepts_known_kind() {
        let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: a}\nspec: {}\n";
        assert_eq!(envelope(text).unwrap(), "MultisliceTraining");
    }

    #[test]
    fn suggests_closest_kind() {
        let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultiSliceTraining\nmetadata: {name: a}\nspec: {}\n";
        let d = envelope(text).unwrap_err();
        assert_eq!(d.rule, "blueprint-kind");
        assert_eq!(d.line, 2);
        assert_eq!(d.fix.as_deref(), Some("did you mean `MultisliceTraining`?"));
    }

    #[test]
    fn the_fix_for_an_unquoted_version_quotes_it_as_written() {
        let text = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: a}\nspec:\n  project: my-project\n  tpu: {type: v4-8}\n  training:\n    image: 1.10\n";
        let docs = parse_documents(text).unwrap();
        let registry = Registry::builtin();
        let blueprint = Blueprint::from_node("b.yaml", &docs[0], &registry)
            .unwrap()
            .with_source(text);
        let kind = registry.get(blueprint.kind).unwrap();
        let error = kind.read(&blueprint).err().unwrap();
        assert_eq!(error.fix.as_deref(), Some("quote the value: `\"1.10\"`"));
        assert_eq!(error.found.as_deref(), Some("1.10"));
    }

    #[test]
    fn rejects_bad_names_and_versions() {
        let bad_name = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: Big_Name}\nspec: {}\n";
        assert_eq!(envelope(bad_name).unwrap_err().rule, "blueprint-name");
        let bad_version =
            "apiVersion: aiml.dev/v1\nkind: MultisliceTraining\nmetadata: {name: a}\nspec: {}\n";
        assert_eq!(
            envelope(bad_version).unwrap_err().rule,
            "blueprint-api-version"
        );
        let extra = "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata: {name: a, labels: {}}\nspec: {}\n";
        assert_eq!(envelope(extra).unwrap_err().rule, "blueprint-schema");
    }
}

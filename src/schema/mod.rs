//! Schema checking: every object against the JSON Schema of its kind, offline, as the API
//! server would (what kubeconform does, built in).
//!
//! Schemas come from the vendored `schemas/` folder, compressed into the binary by `build.rs`
//! ([`Schemas::embedded`], [`Schemas::embedded_for`] a target minor of [`versions::MINORS`]):
//! the Kubernetes built-in kinds of the target ([`KUBERNETES_VERSION`], GKE's Regular channel
//! default, unless `--kubernetes-version`; strict:
//! unknown fields are errors, as with `kubectl apply`'s default server-side field
//! validation) and the CRDs the
//! project renders (Config Connector, JobSet, Kueue, LeaderWorkerSet, Managed Prometheus,
//! Istio, Gateway API, GKE's Gateway policies, Config Sync, Argo CD). [`Schemas::with_dirs`]
//! adds folders in kubeconform layout, which win over the embedded set.
//!
//! Each `(apiVersion, kind)` schema is inflated, parsed and compiled once, on first use, and
//! shared: [`Schemas`] is `Sync`, so callers check objects in parallel. Objects are validated
//! in place (see `instance`), and errors are explained only for objects that fail.
//!
//! Findings ([`RULES`]):
//! - `schema-violation`: the object does not match its schema. One finding per defect, at the
//!   offending value (a missing field: at its parent; an unknown field: at the key), with the
//!   dotted field path, what was found and expected, and a fix where one is clear.
//! - `api-version-removed`: a built-in API version the target no longer serves (the release
//!   that removed it and the replacement come from `versions`, or from the vendored minors).
//! - `api-version-deprecated`: served but deprecated (a CRD version marked deprecated, e.g.
//!   Kueue `v1beta1`, or a deprecated built-in); a warning.
//! - `kind-not-served`: a built-in API group that does not serve this version or kind at the
//!   target (saying from which newer minor it is served, if one is).
//! - `schema-unknown-kind`: no schema for the kind at all; a warning, an error with
//!   [`CheckOptions::strict`].
//! - `schema-invalid`: a schema from a `--schemas` folder that does not parse or compile.
//!
//! Where plain JSON Schema would judge otherwise than the API server (`null`, `int32`
//! ranges, defaults, defaulting webhooks), `server` adjusts the schemas as they load, and a
//! custom resource is validated without the `null`s the server drops (each a warning); `meta`
//! checks every object's name, labels and annotations as the server does.
//!
//! A custom resource's CEL rules (`x-kubernetes-validations`) are evaluated as the server
//! evaluates them on a create (`validations`): a rule that fails is a `schema-violation` at its
//! field with the rule's message; one the tool cannot evaluate is a warning.
//!
//! Not checked: the API server's Go validation beyond the schema and `metadata` (immutable
//! fields, cross-field rules such as a selector matching the template's labels), and list-map
//! key uniqueness (`x-kubernetes-list-map-keys`).
//!
//! YAML: the tree holds what kubectl reads (YAML 1.1 resolution, see [`crate::yaml`]), so an
//! unquoted `on` where a string is expected (a label value) is a boolean, and a finding that
//! says so.

mod embedded;
mod explain;
mod formats;
mod instance;
mod meta;
mod server;
mod store;
mod validations;
pub mod versions;

use std::path::PathBuf;
use std::sync::OnceLock;

use crate::diagnostic::Diagnostic;
use crate::validate::{Object, Rule};
use crate::yaml::Node;

pub use store::KindSummary;

/// Rule ids, one constant each.
pub mod rule {
    /// The object does not match the schema of its kind.
    pub const SCHEMA_VIOLATION: &str = "schema-violation";
    /// No schema for the object's `apiVersion` and `kind`.
    pub const SCHEMA_UNKNOWN_KIND: &str = "schema-unknown-kind";
    /// A schema given with `--schemas` does not parse or compile.
    pub const SCHEMA_INVALID: &str = "schema-invalid";
    /// A built-in API version the target Kubernetes minor no longer serves.
    pub const API_VERSION_REMOVED: &str = "api-version-removed";
    /// A served but deprecated API version.
    pub const API_VERSION_DEPRECATED: &str = "api-version-deprecated";
    /// A built-in API group that does not serve this version or kind.
    pub const KIND_NOT_SERVED: &str = "kind-not-served";
}

/// Every schema rule, for listings and docs.
pub const RULES: &[Rule] = &[
    Rule {
        id: rule::SCHEMA_VIOLATION,
        summary: "every object matches the schema of its kind (the target minor's built-ins, vendored CRDs, `--schemas`)",
    },
    Rule {
        id: rule::API_VERSION_REMOVED,
        summary: "no object uses a built-in API version that the target Kubernetes minor no longer serves",
    },
    Rule {
        id: rule::API_VERSION_DEPRECATED,
        summary: "objects avoid deprecated API versions (warning)",
    },
    Rule {
        id: rule::KIND_NOT_SERVED,
        summary: "a built-in API group serves the object's version and kind",
    },
    Rule {
        id: rule::SCHEMA_UNKNOWN_KIND,
        summary: "every object's kind has a schema (warning; error with --strict)",
    },
    Rule {
        id: rule::SCHEMA_INVALID,
        summary: "schemas given with --schemas parse and compile",
    },
];

/// The Kubernetes release whose built-in kinds objects are checked against unless another
/// target is given (`--kubernetes-version`; [`versions::MINORS`] lists those vendored).
pub const KUBERNETES_VERSION: &str = crate::catalog::DEFAULT_KUBERNETES_MINOR;

/// How to check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckOptions {
    /// A kind without a schema is an error instead of a warning.
    pub strict: bool,
}

/// Why a schema folder could not be used.
#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    /// The folder (or a folder in it) cannot be read.
    #[error("cannot read schema folder {}: {source}", path.display())]
    Read {
        /// The folder.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A target Kubernetes version without vendored schemas.
    #[error(
        "no schemas for Kubernetes `{given}`: expected one of {}",
        versions::MINORS.join(", ")
    )]
    Version {
        /// The version asked for.
        given: String,
    },
    /// The folder holds no `.json` schema in a layout we know.
    #[error(
        "{} holds no JSON schema: expected <group>/<kind>_<version>.json, <kind>_<version>.json \
         or <kind>-<group>-<version>.json files",
        path.display()
    )]
    Empty {
        /// The folder.
        path: PathBuf,
    },
}

/// A set of schemas: the embedded ones, plus any folders given.
pub struct Schemas {
    store: store::Store,
}

impl Schemas {
    /// The schemas built into the binary. Cheap after the first call (which reads two small
    /// indexes); schemas themselves are inflated and compiled per kind, on first use.
    #[must_use]
    pub fn embedded() -> &'static Schemas {
        let minor = versions::minor_index(KUBERNETES_VERSION).unwrap_or_default();
        Self::embedded_minor(minor)
    }

    /// The schemas built into the binary, with the built-in kinds of Kubernetes `version`
    /// (`1.34`, `v1.34` or `1.34.2`).
    ///
    /// # Errors
    ///
    /// When no schemas of that minor are vendored.
    pub fn embedded_for(version: &str) -> Result<&'static Schemas, SchemaError> {
        let minor = versions::minor_index(version).ok_or_else(|| SchemaError::Version {
            given: version.to_owned(),
        })?;
        Ok(Self::embedded_minor(minor))
    }

    fn embedded_minor(minor: usize) -> &'static Schemas {
        static EMBEDDED: [OnceLock<Schemas>; versions::MINORS.len()] =
            [const { OnceLock::new() }; versions::MINORS.len()];
        EMBEDDED[minor].get_or_init(|| Schemas {
            store: store::Store::embedded(minor).clone(),
        })
    }

    /// The Kubernetes minor whose built-in kinds are checked, e.g. `1.32`.
    #[must_use]
    pub fn kubernetes_version(&self) -> &'static str {
        self.store.kubernetes_version()
    }

    /// The embedded schemas plus those in `dirs` (kubeconform layouts:
    /// `<group>/<kind>_<version>.json`, `<kind>_<version>.json`,
    /// `<kind>-<group>-<version>.json`; kind in lower case). A schema found in a folder wins
    /// over the embedded one; earlier folders win over later ones. Compiled embedded schemas
    /// are shared with [`Schemas::embedded`].
    ///
    /// # Errors
    ///
    /// When a folder cannot be read or holds no schema.
    pub fn with_dirs(dirs: &[PathBuf]) -> Result<Schemas, SchemaError> {
        Self::with_dirs_for(dirs, KUBERNETES_VERSION)
    }

    /// Like [`Schemas::with_dirs`], with the built-in kinds of Kubernetes `version`.
    ///
    /// # Errors
    ///
    /// When no schemas of that minor are vendored, or a folder cannot be read or holds no
    /// schema.
    pub fn with_dirs_for(dirs: &[PathBuf], version: &str) -> Result<Schemas, SchemaError> {
        let mut store = Self::embedded_for(version)?.store.clone();
        for dir in dirs {
            store.add_dir(dir)?;
        }
        Ok(Schemas { store })
    }

    /// Checks one object; findings are in document order.
    #[must_use]
    pub fn check(&self, object: &Object<'_>, options: &CheckOptions) -> Vec<Diagnostic> {
        self.check_impl(object, None, options)
    }

    /// Like [`Schemas::check`], with the text the object was parsed from (its spans index
    /// into it), so that fixes quote values exactly as written (`1.10`, not `1.1`).
    #[must_use]
    pub fn check_with_source(
        &self,
        object: &Object<'_>,
        source: &str,
        options: &CheckOptions,
    ) -> Vec<Diagnostic> {
        self.check_impl(object, Some(source), options)
    }

    /// Whether a schema is known for `api_version` `kind`.
    #[must_use]
    pub fn has_schema(&self, api_version: &str, kind: &str) -> bool {
        self.store.lookup(api_version, kind).is_some()
    }

    /// Every kind of the embedded index and of the folders' files, sorted.
    #[must_use]
    pub fn kinds(&self) -> Vec<KindSummary> {
        self.store.summaries()
    }

    /// Compiles the schema of `api_version` `kind` now (it is otherwise compiled on first
    /// use); `Err` says why it cannot be, `Ok(false)` that there is no such schema.
    ///
    /// # Errors
    ///
    /// When the schema does not parse or compile.
    pub fn compile(&self, api_version: &str, kind: &str) -> Result<bool, String> {
        match self.store.lookup(api_version, kind) {
            Some(entry) => entry.compiled().map(|_| true),
            None => Ok(false),
        }
    }

    fn check_impl(
        &self,
        object: &Object<'_>,
        source: Option<&str>,
        options: &CheckOptions,
    ) -> Vec<Diagnostic> {
        let group = object.group();
        if group == crate::manifest::group_of(crate::blueprint::API_VERSION) {
            return Vec::new(); // blueprints are checked by the blueprint reader
        }
        let kind = object.id.kind.as_str();
        if object.api_version == "v1" && kind == "List" {
            return self.check_list(object, source, options);
        }
        let report = explain::Report::new(object, source, self.kubernetes_version());
        if let Some(removed) = versions::removal(object.api_version, kind) {
            return vec![report.removed(removed)];
        }
        let Some(entry) = self.store.lookup(object.api_version, kind) else {
            return vec![self.unknown(&report, options)];
        };
        let mut out = Vec::new();
        if let Some(deprecation) = entry.deprecation() {
            out.push(report.deprecated(deprecation));
        }
        let compiled = match entry.compiled() {
            Ok(compiled) => compiled,
            Err(why) => {
                out.push(report.invalid_schema(&why));
                return out;
            }
        };
        let custom = entry.is_custom_resource(&self.store, group);
        // A custom resource is validated as the API server validates it: without the nulls it
        // drops (each a warning: a server-side apply refuses them).
        let mut nulls = Vec::new();
        if custom && let Some(schema) = compiled.root_schema() {
            server::dropped_nulls(schema, object.node, &mut String::new(), &mut nulls);
        }
        let pruned = (!nulls.is_empty()).then(|| {
            let pointers: Vec<String> = nulls.iter().map(|(at, _)| at.clone()).collect();
            server::without(object.node, &pointers)
        });
        let node = pruned.as_ref().unwrap_or(object.node);
        let root = instance::At(node);
        let mut blocked = false;
        if !compiled.validator.is_valid(root) {
            let errors: Vec<_> = compiled.validator.iter_errors(root).collect();
            blocked = errors.iter().any(blocks_cel);
            explain_all(&report, &errors, compiled, "", node, &mut out);
        }
        // CEL rules run on a custom resource whose shape is right, as on the server.
        if custom
            && !blocked
            && let Some(schema) = compiled.root_schema()
        {
            let mut outcomes = Vec::new();
            validations::check(schema, node, &mut outcomes);
            out.extend(outcomes.into_iter().map(|o| report.cel(o)));
        }
        out.extend(nulls.iter().map(|(at, null)| report.dropped_null(at, null)));
        if custom && let Some(metadata) = object.node.get("metadata") {
            check_metadata(&report, metadata, &mut out);
        }
        meta::check(object, !custom, &mut out);
        out
    }

    /// `kind: List` is no API kind: kubectl applies its `items` one by one, so each item is
    /// checked as an object.
    fn check_list(
        &self,
        list: &Object<'_>,
        source: Option<&str>,
        options: &CheckOptions,
    ) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        let items = list.node.items("items");
        for (index, item) in items.iter().enumerate() {
            match Object::from_node(list.file, item) {
                Some(object) => out.extend(self.check_impl(&object, source, options)),
                None => out.push(
                    Diagnostic::error(
                        rule::SCHEMA_VIOLATION,
                        format!("`items[{index}]` is not a Kubernetes object"),
                    )
                    .at(list.file, item.span)
                    .object(list.id.clone())
                    .field(format!("items[{index}]"))
                    .expected("a mapping with `apiVersion`, `kind` and `metadata.name`"),
                ),
            }
        }
        out
    }

    /// The finding for an object whose kind has no schema.
    fn unknown(&self, report: &explain::Report<'_>, options: &CheckOptions) -> Diagnostic {
        let object = report.object;
        let group = object.group();
        let served = self.store.served_as(&object.id.kind, group);
        if self.store.is_builtin_group(group) {
            let elsewhere = self
                .store
                .served_elsewhere(object.api_version, &object.id.kind);
            report.not_served(&served, elsewhere)
        } else {
            report.unknown_kind(&served, self.store.is_known_group(group), options.strict)
        }
    }
}

/// Custom resources' `metadata` is checked by the API server like every object's: against
/// `ObjectMeta`, which CRD schemas leave out (`metadata: {type: object}`).
fn check_metadata(report: &explain::Report<'_>, metadata: &Node, out: &mut Vec<Diagnostic>) {
    let Ok(meta) = store::object_meta() else {
        return; // the embedded definitions are tested to load
    };
    let at = instance::At(metadata);
    if !meta.validator.is_valid(at) {
        let errors: Vec<_> = meta.validator.iter_errors(at).collect();
        explain_all(report, &errors, meta, "/metadata", metadata, out);
    }
}

/// Whether a schema error keeps the API server from evaluating CEL rules: a wrong type, a
/// value outside an enum, a missing required field, a string, list or map over its maximum
/// (k8s.io/apiextensions-apiserver, pkg/registry/customresource/strategy.go,
/// `hasBlockingErr`: NotSupported, Required, TooLong, TooMany, TypeInvalid). The object is
/// refused for that error; its rules are not run.
fn blocks_cel(error: &jsonschema::ValidationError<'_>) -> bool {
    use jsonschema::error::ValidationErrorKind as Kind;
    matches!(
        error.kind(),
        Kind::Type { .. }
            | Kind::Enum { .. }
            | Kind::Constant { .. }
            | Kind::Required { .. }
            | Kind::MaxLength { .. }
            | Kind::MaxItems { .. }
            | Kind::MaxProperties { .. }
    )
}

/// One finding per defect: errors that repeat a type error on the same value are dropped.
fn explain_all(
    report: &explain::Report<'_>,
    errors: &[jsonschema::ValidationError<'_>],
    compiled: &store::Compiled,
    prefix: &str,
    root: &Node,
    out: &mut Vec<Diagnostic>,
) {
    let typed = explain::typed_paths(errors);
    for error in errors {
        if !explain::is_redundant(error, &typed) {
            report.violation(error, compiled, prefix, root, out);
        }
    }
}

#[cfg(test)]
mod tests;

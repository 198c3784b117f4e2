//! Blueprint kinds: spec → plan → overlay, and the registry that knows them.
//!
//! A kind is three things:
//! 1. a **spec** type, read strictly from the blueprint (`#[derive(Deserialize, JsonSchema)]`),
//!    which also says what the blueprint [`Exports`] to others (phase 1);
//! 2. a pure **plan** step: spec + [`Planner`] (findings, other blueprints' exports) → a typed
//!    plan, with the GCP part planned through [`crate::gcp`] (phase 2);
//! 3. **templates** that turn the plan into the overlay's objects, one file per target
//!    cluster ([`crate::overlay`]).
//!
//! Built-in kinds implement [`TypedKind`]; the [`Registry`] holds them as [`Kind`] trait
//! objects, registered at run time, so kinds a repository defines under `kinds/<Kind>/`
//! ([`mod@repository`]) join through the same interface ([`Registry::for_repository`]). To add a
//! built-in kind: a folder here with `mod.rs` (the kind, its [`TypedKind`] implementation and
//! rules), `spec.rs`, `plan.rs`, `templates.rs` and `templates/`, and one `register` line in
//! [`Registry::builtin`]. What every kind repeats around its workload (location defaults,
//! cluster exports, accounts, the cluster and its system pool, Workload Identity) is
//! [`crate::overlay::site`]; a kind writes only what is its own.

pub mod locust;
pub mod multislice;
pub mod repository;
pub mod sax;
pub mod triton;

use schemars::JsonSchema;
use serde::de::DeserializeOwned;

use crate::blueprint::Blueprint;
use crate::diagnostic::Diagnostic;
use crate::overlay::{Overlay, TemplateError};
use crate::plan::{Exports, Planner, Repository};

/// A blueprint kind, as the pipeline sees it.
pub trait Kind: Send + Sync {
    /// The `kind` value, e.g. `MultisliceTraining`.
    fn name(&self) -> &str;
    /// One line for `kubectl aiml blueprints`.
    fn summary(&self) -> &str;
    /// JSON Schema of `spec`, for editors and docs.
    fn spec_schema(&self) -> serde_json::Value;
    /// Rules only this kind checks, beyond the shared blueprint rules of [`crate::plan`].
    fn rules(&self) -> &'static [crate::diagnostic::Rule];
    /// Phase 1: reads `spec` strictly. Errors are malformed input.
    fn read(&self, blueprint: &Blueprint<'_>) -> Result<Box<dyn Spec>, Diagnostic>;
    /// Where the kind is defined: `None` when built in, else its repository folder
    /// (`kinds/<Kind>/`).
    fn origin(&self) -> Option<&str> {
        None
    }
    /// A hash of what defines the kind outside this binary (a repository kind's files), for
    /// the render cache; built-in kinds are covered by the binary's own fingerprint.
    fn fingerprint(&self) -> Option<&str> {
        None
    }
}

/// A blueprint's spec, read and ready to plan.
pub trait Spec: Send + Sync {
    /// What the blueprint offers other blueprints (computed from the spec alone).
    fn exports(&self, blueprint: &Blueprint<'_>) -> Exports;
    /// Phase 2: plans the blueprint in its repository and renders the overlay. Findings are
    /// in `planner`; `None` when errors stop planning.
    fn compile(&self, planner: &mut Planner<'_>) -> Result<Option<Compiled>, TemplateError>;
}

/// What planning and templates produced for one blueprint.
#[derive(Debug)]
pub struct Compiled {
    /// The overlay's files.
    pub overlay: Overlay,
    /// One line for listings (accelerator, slices, …).
    pub description: String,
}

/// A kind written in Rust: typed spec, typed plan, embedded templates.
pub trait TypedKind: Send + Sync + 'static {
    /// `spec` as written.
    type Spec: DeserializeOwned + JsonSchema + Send + Sync + 'static;
    /// The checked, derived plan the templates read.
    type Plan;
    /// The `kind` value.
    const NAME: &'static str;
    /// One line for listings.
    const SUMMARY: &'static str;
    /// Rules only this kind checks; each needs `docs/rules/<id>.md`.
    const RULES: &'static [crate::diagnostic::Rule] = &[];
    /// What a blueprint of this kind exports.
    fn exports(spec: &Self::Spec, blueprint: &Blueprint<'_>) -> Exports;
    /// Plans the blueprint; `None` when findings in `planner` stop it.
    fn plan(spec: &Self::Spec, planner: &mut Planner<'_>) -> Option<Self::Plan>;
    /// Renders the plan into the overlay.
    fn overlay(plan: &Self::Plan, blueprint: &Blueprint<'_>) -> Result<Overlay, TemplateError>;
    /// One line for listings.
    fn describe(plan: &Self::Plan) -> String;
}

/// Adapts a [`TypedKind`] to the [`Kind`] trait object.
struct Typed<K: TypedKind>(std::marker::PhantomData<K>);

struct TypedSpec<K: TypedKind>(K::Spec);

impl<K: TypedKind> Kind for Typed<K> {
    fn name(&self) -> &str {
        K::NAME
    }

    fn summary(&self) -> &str {
        K::SUMMARY
    }

    fn spec_schema(&self) -> serde_json::Value {
        schemars::schema_for!(K::Spec).to_value()
    }

    fn rules(&self) -> &'static [crate::diagnostic::Rule] {
        K::RULES
    }

    fn read(&self, blueprint: &Blueprint<'_>) -> Result<Box<dyn Spec>, Diagnostic> {
        let spec: K::Spec = blueprint.read_spec()?;
        Ok(Box::new(TypedSpec::<K>(spec)))
    }
}

impl<K: TypedKind> Spec for TypedSpec<K> {
    fn exports(&self, blueprint: &Blueprint<'_>) -> Exports {
        K::exports(&self.0, blueprint)
    }

    fn compile(&self, planner: &mut Planner<'_>) -> Result<Option<Compiled>, TemplateError> {
        let Some(plan) = K::plan(&self.0, planner) else {
            return Ok(None);
        };
        if planner.has_errors() {
            return Ok(None);
        }
        let overlay = K::overlay(&plan, planner.blueprint())?;
        Ok(Some(Compiled {
            overlay,
            description: K::describe(&plan),
        }))
    }
}

/// Who can reach a Service a kind renders; each kind chooses its default.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Exposure {
    /// A ClusterIP: reachable in the cluster only.
    Cluster,
    /// An internal passthrough load balancer: reachable from the VPC.
    Internal,
    /// A public load balancer: reachable from the internet.
    Public,
}

/// The blueprint kinds known to this run, by name.
pub struct Registry {
    kinds: Vec<Box<dyn Kind>>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

/// A kind was registered twice.
#[derive(Debug, thiserror::Error)]
#[error("blueprint kind `{0}` is registered twice")]
pub struct DuplicateKind(pub String);

impl Registry {
    /// A registry without kinds.
    #[must_use]
    pub fn empty() -> Self {
        Self { kinds: Vec::new() }
    }

    /// The kinds built into this binary.
    #[must_use]
    pub fn builtin() -> Self {
        let mut registry = Self::empty();
        registry.register_typed::<multislice::MultisliceTraining>();
        registry.register_typed::<sax::SaxServing>();
        registry.register_typed::<locust::LocustBenchmark>();
        registry.register_typed::<triton::TritonServing>();
        registry
    }

    /// The built-in kinds and those the repository at `root` defines under `kinds/<Kind>/`.
    /// A broken kind definition, or one that shadows a built-in kind, is an error naming its
    /// file: nothing may render with it.
    pub fn for_repository(
        root: &std::path::Path,
        limits: &crate::limits::Limits,
    ) -> Result<Self, repository::KindError> {
        let mut registry = Self::builtin();
        for kind in repository::load(root, limits.max_file_size)? {
            // Kind names differ in case only by mistake: refuse those too.
            if let Some(builtin) = registry
                .names()
                .find(|name| name.eq_ignore_ascii_case(kind.name()))
            {
                return Err(repository::KindError {
                    location: kind.folder().to_string(),
                    message: format!(
                        "shadows the built-in kind `{builtin}`: a repository cannot redefine a built-in kind; rename the folder"
                    ),
                });
            }
            // Folder names are distinct, and the shadow check covers built-ins.
            let _ = registry.register(Box::new(kind));
        }
        Ok(registry)
    }

    fn register_typed<K: TypedKind>(&mut self) {
        // Built-in names are distinct by construction (checked by a unit test).
        let _ = self.register(Box::new(Typed::<K>(std::marker::PhantomData)));
    }

    /// Adds a kind; a second kind of the same name is refused.
    pub fn register(&mut self, kind: Box<dyn Kind>) -> Result<(), DuplicateKind> {
        if self.get(kind.name()).is_some() {
            return Err(DuplicateKind(kind.name().to_string()));
        }
        self.kinds.push(kind);
        self.kinds.sort_by(|a, b| a.name().cmp(b.name()));
        Ok(())
    }

    /// The kind called `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&dyn Kind> {
        self.kinds
            .iter()
            .find(|kind| kind.name() == name)
            .map(AsRef::as_ref)
    }

    /// Every kind, sorted by name.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Kind> {
        self.kinds.iter().map(AsRef::as_ref)
    }

    /// Every kind name, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.kinds.iter().map(|kind| kind.name())
    }
}

/// Phase 1 for a whole repository: what each blueprint exports, by name.
#[must_use]
pub fn repository<'a>(
    blueprints: impl IntoIterator<Item = (&'a Blueprint<'a>, &'a dyn Spec)>,
) -> Repository {
    blueprints
        .into_iter()
        .map(|(blueprint, spec)| {
            (
                blueprint.name.to_string(),
                crate::plan::Exported {
                    kind: blueprint.kind.name().to_string(),
                    file: blueprint.file.to_string(),
                    line: blueprint.node.span.line,
                    exports: spec.exports(blueprint),
                    readable: true,
                },
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_kinds_have_distinct_names_and_schemas() {
        let registry = Registry::builtin();
        let names: Vec<&str> = registry.names().collect();
        assert!(names.contains(&"MultisliceTraining"));
        assert!(names.contains(&"TritonServing"));
        for kind in registry.iter() {
            let schema = kind.spec_schema();
            assert_eq!(schema["type"], "object", "{}", kind.name());
            assert_eq!(schema["additionalProperties"], false, "{}", kind.name());
        }
    }

    #[test]
    fn refuses_a_kind_registered_twice() {
        let mut registry = Registry::builtin();
        let again = Box::new(Typed::<multislice::MultisliceTraining>(
            std::marker::PhantomData,
        ));
        assert!(registry.register(again).is_err());
    }
}

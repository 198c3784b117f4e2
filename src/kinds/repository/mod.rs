//! Blueprint kinds a repository defines under `kinds/<Kind>/`, beside `blueprints/`.
//!
//! A kind folder holds a definition (`kind.yaml` or `kind.json`: a one-line `summary`, which
//! accelerator stanza its blueprints take, a few defaults, and the JSON Schema of its own spec
//! fields) and minijinja templates (`templates/*.yaml`) that turn a planned blueprint into the
//! workload cluster's objects. Everything else is shared with the built-in kinds: the spec's
//! common parts (project, location, network, cluster, service accounts, the `tpu` or `gpu`
//! stanza, a bucket) are read strictly by the same types, planned through [`crate::gcp::Gcp`]
//! and [`crate::accelerator`] (so node pools, selectors and quotas are derived and checked like
//! the built-in kinds'), and the Config Connector side comes from the shared GCP templates.
//! The objects then go through kustomize, schemas and every rule like any other kind's.
//!
//! A kind is repository content, so it is sandboxed:
//! - templates see only the files of their own `templates/` folder (loaded up front; there is
//!   no loader, so an include of anything else, `../` included, is "not found") plus the shared
//!   workload blocks as `aiml/workload.yaml`; they return text, which becomes the blueprint's
//!   own `overlays/<name>/workload/resources.yaml`, and nothing else;
//! - their output must be Kubernetes objects, and may not carry `aiml.dev/ignore`: only a
//!   blueprint turns rules off, never the kind it uses;
//! - rendering is bounded (minijinja fuel and recursion limit, output size);
//! - a kind cannot shadow a built-in kind, and a broken definition stops the command (exit 2)
//!   with the kind file and line, before anything is written.
//!
//! Templates are rendered with the settings of [`crate::overlay`]: strict undefined, every
//! `{{ value }}` written as JSON (so values cannot inject YAML structure), block tags that
//! leave no blank lines.

mod definition;
mod plan;
mod spec;
mod templates;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use minijinja::Environment;
use serde_json::Value as Json;

use super::{Kind, Spec};
use crate::blueprint::Blueprint;
use crate::catalog::TpuFamily;
use crate::diagnostic::Diagnostic;
use crate::yaml::pointer::steps;
use crate::yaml::{Key, Node, Span, Value};
use definition::{
    Accelerator, Definition, environment, fingerprint, parameters_schema, read_definition,
    read_folder, spec_schema, text, tpu_families,
};
use plan::RepositorySpec;
use spec::{COMMON_FIELDS, SharedSpec, dotted, locate, read_shared};

/// The folder of repository kinds, at the repository root.
pub const KINDS_DIR: &str = "kinds";
/// The definition of a kind, in its folder (YAML or JSON; one of them).
const DEFINITION_FILES: [&str; 2] = ["kind.yaml", "kind.json"];
/// The templates of a kind, in its folder.
const TEMPLATES_DIR: &str = "templates";
/// The shared workload blocks, as kind templates import them.
const SHARED_BLOCKS: &str = "aiml/workload.yaml";
/// Files of one kind folder, at most: a kind is a handful of templates.
const MAX_FILES: usize = 500;
/// minijinja fuel of one template render: far above any real kind, low enough that a runaway
/// loop stops in well under a second.
const FUEL: u64 = 5_000_000;
/// Region of a blueprint whose kind and spec name none.
const DEFAULT_REGION: &str = "us-central1";

/// A kind folder that cannot be used: a broken definition, template or file. Names the file
/// (repository-relative) and, when known, the line.
#[derive(Debug, thiserror::Error)]
#[error("`{location}`: {message}")]
pub struct KindError {
    /// `kinds/<Kind>/kind.yaml:12`, or the folder.
    pub location: String,
    /// What is wrong, what was expected, and the fix.
    pub message: String,
}

impl KindError {
    fn new(location: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            location: location.into(),
            message: message.into(),
        }
    }

    fn at(file: &str, span: Option<Span>, message: impl Into<String>) -> Self {
        let location = match span {
            Some(span) if span.line > 0 => format!("{file}:{}", span.line),
            _ => file.to_string(),
        };
        Self::new(location, message)
    }
}

/// A kind defined by a repository, loaded and checked.
pub struct RepositoryKind {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    /// `kinds/<Kind>/`.
    folder: String,
    definition: Definition,
    tpu_families: Vec<TpuFamily>,
    /// Shared spec fields this kind takes.
    shared_fields: Vec<&'static str>,
    /// The parameters' schema, compiled.
    validator: jsonschema::Validator,
    /// Top-level `default`s of the parameters.
    defaults: BTreeMap<String, Json>,
    /// The whole spec's schema: shared parts + parameters.
    spec_schema: Json,
    /// Templates, by name relative to `templates/`.
    environment: Environment<'static>,
    /// Templates that render objects: `*.yaml` / `*.yml` not starting with `_`, sorted.
    object_templates: Vec<String>,
    /// Over every file of the folder: the render cache's key.
    fingerprint: String,
    /// Largest output of one template.
    max_output: u64,
}

/// Loads every kind under `<root>/kinds/`, sorted by name. No folder: none. Only a
/// kubectl-aiml repository (one with `blueprints/`) has kinds: a `kinds/` folder of some
/// other project, met when `validate` runs in its git work tree, is not ours to read.
pub fn load(root: &Path, max_file_size: u64) -> Result<Vec<RepositoryKind>, KindError> {
    if !root.join(crate::repo::BLUEPRINTS_DIR).is_dir() {
        return Ok(Vec::new());
    }
    let dir = root.join(KINDS_DIR);
    let Ok(metadata) = fs_err::symlink_metadata(&dir) else {
        return Ok(Vec::new());
    };
    if !metadata.is_dir() {
        return Err(KindError::new(
            format!("{KINDS_DIR}/"),
            format!(
                "`{KINDS_DIR}` is {}, not a folder: repository kinds live in `{KINDS_DIR}/<Kind>/`",
                crate::repo::describe_file_type(metadata.file_type())
            ),
        ));
    }
    let mut entries: Vec<_> = fs_err::read_dir(&dir)
        .map_err(|e| KindError::new(format!("{KINDS_DIR}/"), e.to_string()))?
        .collect::<Result<_, _>>()
        .map_err(|e| KindError::new(format!("{KINDS_DIR}/"), e.to_string()))?;
    entries.sort_by_key(fs_err::DirEntry::file_name);
    // `kinds/Model/` and `kinds/model/` are one folder on macOS.
    let names: Vec<String> = entries
        .iter()
        .map(|entry| format!("{KINDS_DIR}/{}", entry.file_name().to_string_lossy()))
        .collect();
    if let Some((first, second)) = crate::repo::case_collision(names.iter().map(String::as_str)) {
        return Err(KindError::new(
            format!("{KINDS_DIR}/"),
            crate::repo::case_collision_message(&first, &second),
        ));
    }
    let mut kinds = Vec::new();
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let folder = format!("{KINDS_DIR}/{name}/");
        let file_type = entry
            .file_type()
            .map_err(|e| KindError::new(&folder, e.to_string()))?;
        if file_type.is_symlink() {
            return Err(KindError::new(
                folder,
                "a kind folder that is a symbolic link is refused: a kind's files live in the repository",
            ));
        }
        // A README beside the kinds is fine.
        if !file_type.is_dir() || name.starts_with('.') {
            continue;
        }
        kinds.push(RepositoryKind::load(&entry.path(), &name, max_file_size)?);
    }
    Ok(kinds)
}

/// Kind names are UpperCamelCase identifiers, like Kubernetes kinds.
fn check_kind_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let starts_upper = chars.next().is_some_and(|c| c.is_ascii_uppercase());
    if !starts_upper || !name.chars().all(|c| c.is_ascii_alphanumeric()) || name.len() > 63 {
        return Err(format!(
            "`{name}` is no kind name: an UpperCamelCase word of letters and digits (e.g. `JetStreamServing`), at most 63 characters"
        ));
    }
    Ok(())
}

impl RepositoryKind {
    /// Reads and checks the kind folder `dir` called `name`.
    fn load(dir: &Path, name: &str, max_file_size: u64) -> Result<Self, KindError> {
        let folder = format!("{KINDS_DIR}/{name}/");
        check_kind_name(name).map_err(|why| KindError::new(&folder, why))?;
        let files = read_folder(dir, &folder, max_file_size)?;
        let fingerprint = fingerprint(&files);

        let definitions: Vec<&str> = DEFINITION_FILES
            .iter()
            .copied()
            .filter(|f| files.contains_key(*f))
            .collect();
        let definition_name = match definitions.as_slice() {
            [one] => *one,
            [] => {
                return Err(KindError::new(
                    &folder,
                    "no `kind.yaml`: a kind folder holds `kind.yaml` (its `summary` and the `schema` of its parameters) and `templates/`",
                ));
            }
            _ => {
                return Err(KindError::new(
                    &folder,
                    "both `kind.yaml` and `kind.json`: keep one definition",
                ));
            }
        };
        let definition_file = format!("{folder}{definition_name}");
        let (definition, document) = read_definition(
            &definition_file,
            text(&files[definition_name], &definition_file)?,
        )?;
        let schema_node = document.get("schema").unwrap_or(&document);
        let tpu_families = tpu_families(&definition, &definition_file, &document)?;
        let mut shared_fields: Vec<&'static str> = COMMON_FIELDS.to_vec();
        match definition.accelerator {
            Accelerator::Tpu => shared_fields.push("tpu"),
            Accelerator::Gpu => shared_fields.extend(["gpu", "gpuPool"]),
            Accelerator::None => {}
        }
        if definition.bucket {
            shared_fields.push("bucket");
        }
        let (parameters_schema, defaults) = parameters_schema(
            &definition.schema,
            &shared_fields,
            &definition_file,
            schema_node,
        )?;
        let validator = jsonschema::options()
            .build(&parameters_schema)
            .map_err(|error| {
                let steps = steps(error.instance_path().as_str());
                let span = locate(schema_node, &steps).map(|(node, _)| node.span);
                KindError::at(
                    &definition_file,
                    span,
                    format!(
                        "`schema{}` is no valid JSON Schema: {error}",
                        dotted(&steps)
                    ),
                )
            })?;
        let spec_schema = spec_schema(&definition, &shared_fields, &parameters_schema);

        let (environment, object_templates) = environment(&folder, &files)?;
        Ok(Self {
            inner: Arc::new(Inner {
                name: name.to_string(),
                folder,
                definition,
                tpu_families,
                shared_fields,
                validator,
                defaults,
                spec_schema,
                environment,
                object_templates,
                fingerprint,
                max_output: max_file_size,
            }),
        })
    }

    /// The folder the kind comes from: `kinds/<Kind>/`.
    #[must_use]
    pub fn folder(&self) -> &str {
        &self.inner.folder
    }
}

impl Kind for RepositoryKind {
    fn name(&self) -> &str {
        &self.inner.name
    }

    fn summary(&self) -> &str {
        &self.inner.definition.summary
    }

    fn spec_schema(&self) -> Json {
        self.inner.spec_schema.clone()
    }

    fn rules(&self) -> &'static [crate::diagnostic::Rule] {
        &[]
    }

    fn origin(&self) -> Option<&str> {
        Some(&self.inner.folder)
    }

    fn fingerprint(&self) -> Option<&str> {
        Some(&self.inner.fingerprint)
    }

    fn read(&self, blueprint: &Blueprint<'_>) -> Result<Box<dyn Spec>, Diagnostic> {
        let inner = &self.inner;
        let spec = blueprint.spec();
        let entries = spec.as_map().unwrap_or_default();
        type Entries<'e> = Vec<&'e (Key, Node)>;
        let (shared, own): (Entries<'_>, Entries<'_>) = entries
            .iter()
            .partition(|(key, _)| inner.shared_fields.contains(&key.text.as_str()));
        let shared_node = Node {
            value: Value::Map(shared.into_iter().cloned().collect()),
            span: spec.span,
        };
        let shared: SharedSpec = read_shared(blueprint, &shared_node)?;
        let stanza = match inner.definition.accelerator {
            Accelerator::Tpu if shared.tpu.is_none() => Some("tpu"),
            Accelerator::Gpu if shared.gpu.is_none() => Some("gpu"),
            _ => None,
        };
        if let Some(stanza) = stanza {
            return Err(blueprint
                .error_at(
                    "blueprint-schema",
                    "spec",
                    format!("missing required field `{stanza}`"),
                )
                .fix(format!(
                    "add `spec.{stanza}`: `{}` runs on {}",
                    inner.name,
                    stanza.to_uppercase()
                )));
        }
        let own_node = Node {
            value: Value::Map(own.into_iter().cloned().collect()),
            span: spec.span,
        };
        let parameters = inner.parameters(blueprint, &own_node)?;
        Ok(Box::new(RepositorySpec {
            kind: Arc::clone(inner),
            shared,
            parameters,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pointers_become_fields() {
        assert_eq!(dotted(&steps("/models/0/name")), ".models[0].name");
        assert_eq!(dotted(&steps("")), "");
        assert_eq!(dotted(&steps("/a~1b")), ".a/b");
    }

    #[test]
    fn kind_names_are_upper_camel_case() {
        assert!(check_kind_name("JetStreamServing").is_ok());
        for bad in ["jetstream", "Jet-Stream", "", "Jet_Stream"] {
            assert!(check_kind_name(bad).is_err(), "{bad}");
        }
    }
}

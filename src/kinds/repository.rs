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

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use minijinja::{AutoEscape, Environment, ErrorKind, UndefinedBehavior};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{Compiled, Kind, Spec};
use crate::accelerator::{self, GpuPlan, GpuSpec, TpuPlan, TpuSpec, TpuSupport};
use crate::blueprint::{Blueprint, check_dns_label, de};
use crate::catalog::{GPU_ACCELERATOR_LABEL, TPU_ACCELERATOR_LABEL, TPU_TOPOLOGY_LABEL, TpuFamily};
use crate::diagnostic::Diagnostic;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, GpuPoolSpec, NetworkSpec, ServiceAccountSpec,
};
use crate::gcp::{self, Addons, ClusterOptions, CpuPoolDefaults, Gcp, GpuPoolDefaults, Scale};
use crate::manifest::Plane;
use crate::overlay::{Overlay, TemplateError};
use crate::plan::{Exports, Planner};
use crate::yaml::{Key, Node, Span, Value};

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
/// Node label that ties pods to this blueprint's node pools (as the built-in kinds do).
const BLUEPRINT_LABEL: &str = "aiml.dev/blueprint";
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

/// `kind.yaml` as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Definition {
    /// One line for `kubectl aiml blueprints`.
    summary: String,
    /// The accelerator stanza the kind's blueprints take (default `none`).
    #[serde(default)]
    accelerator: Accelerator,
    /// With `accelerator: tpu`: which TPU families and whether several slices form one job.
    #[serde(default)]
    tpu: TpuOptions,
    /// Default region of its blueprints.
    region: Option<String>,
    /// Default zone of its blueprints (when they name no region either).
    zone: Option<String>,
    /// Default Kubernetes service account of the workloads (default `workload`).
    kubernetes_service_account: Option<String>,
    /// Whether its blueprints get a bucket (`spec.bucket`), readable and writable by the
    /// workloads.
    #[serde(default)]
    bucket: bool,
    /// JSON Schema of the kind's own spec fields: an object schema with `properties`
    /// (default: none).
    #[serde(default = "no_parameters")]
    schema: Json,
}

/// A kind without fields of its own.
fn no_parameters() -> Json {
    serde_json::json!({"type": "object", "properties": {}})
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Accelerator {
    #[default]
    None,
    Tpu,
    Gpu,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct TpuOptions {
    /// Family prefixes (`v4`, `v5e`, `v5p`, `v6e`, `tpu7x`; default: all).
    families: Option<Vec<String>>,
    /// Whether `slices` above 1 are one multislice job.
    #[serde(default)]
    multislice: bool,
}

/// The spec fields every repository kind shares with the built-in kinds, read by the same
/// types. Which of the optional parts a kind takes follows from its definition.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct SharedSpec {
    /// GCP project id.
    project: String,
    /// Region (default: the referenced cluster's, else the kind's).
    region: Option<String>,
    /// Zone of the accelerator nodes and of a new zonal cluster (default: `<region>-a`).
    zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    config_connector: ConfigConnectorSpec,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    network: NetworkSpec,
    /// The cluster (new by default; zonal in the blueprint's zone).
    #[serde(default)]
    cluster: ClusterSpec,
    /// Node and Workload Identity service accounts.
    #[serde(default)]
    service_accounts: ServiceAccounts,
    /// Namespace of the workload objects (default: the blueprint name).
    namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account.
    kubernetes_service_account: Option<String>,
    /// The TPU slices.
    tpu: Option<TpuSpec>,
    /// The GPUs of each node of the GPU pool.
    gpu: Option<GpuSpec>,
    /// Size of the GPU pool (default: autoscaling from 1 to 3 nodes).
    #[serde(default)]
    gpu_pool: GpuPoolSpec,
    /// The blueprint's bucket.
    #[serde(default)]
    bucket: BucketSpec,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ServiceAccounts {
    /// Account of the nodes.
    #[serde(default)]
    nodes: ServiceAccountSpec,
    /// Workload Identity account of the workloads.
    #[serde(default)]
    workload: ServiceAccountSpec,
}

/// Shared fields every repository kind takes.
const COMMON_FIELDS: &[&str] = &[
    "project",
    "region",
    "zone",
    "configConnector",
    "network",
    "cluster",
    "serviceAccounts",
    "namespace",
    "kubernetesServiceAccount",
];

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

/// Every file of a kind folder, by path relative to it. Symbolic links are refused: a kind
/// reads nothing outside its folder.
fn read_folder(
    dir: &Path,
    folder: &str,
    max_file_size: u64,
) -> Result<BTreeMap<String, Vec<u8>>, KindError> {
    let mut files = BTreeMap::new();
    for entry in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let entry = entry.map_err(|e| KindError::new(folder, e.to_string()))?;
        let relative = crate::repo::display_path(dir, entry.path());
        let display = format!("{folder}{relative}");
        if entry.path_is_symlink() {
            return Err(KindError::new(
                display,
                "symbolic links are refused in a kind folder: a kind reads only its own files",
            ));
        }
        if entry.file_type().is_dir() {
            continue;
        }
        if files.len() >= MAX_FILES {
            return Err(KindError::new(
                folder,
                format!("more than {MAX_FILES} files in one kind folder"),
            ));
        }
        files.insert(relative, read_bytes(entry.path(), &display, max_file_size)?);
    }
    Ok(files)
}

/// A regular file of at most `limit` bytes (a FIFO or device is named, never read). Any
/// content: a kind folder may hold images for its README; templates must be text.
fn read_bytes(path: &Path, display: &str, limit: u64) -> Result<Vec<u8>, KindError> {
    use std::io::Read as _;
    let error = |e: std::io::Error| KindError::new(display, e.to_string());
    let metadata = fs_err::metadata(path).map_err(error)?;
    if !metadata.is_file() {
        return Err(KindError::new(
            display,
            format!(
                "{}, not a regular file: refused",
                crate::repo::describe_file_type(metadata.file_type())
            ),
        ));
    }
    let mut bytes = Vec::new();
    // The file may grow between the check and the read.
    fs_err::File::open(path)
        .map_err(error)?
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(error)?;
    if metadata.len() > limit || bytes.len() as u64 > limit {
        return Err(KindError::new(
            display,
            format!(
                "larger than {}, the file size limit (`{}`)",
                crate::limits::human_size(limit),
                crate::limits::MAX_FILE_SIZE_VAR
            ),
        ));
    }
    Ok(bytes)
}

/// A file of the kind that must be text (its definition, its templates).
fn text<'f>(bytes: &'f [u8], display: &str) -> Result<&'f str, KindError> {
    std::str::from_utf8(bytes).map_err(|_| {
        KindError::new(
            display,
            "not UTF-8 text: a kind's definition and templates are text files",
        )
    })
}

/// A hash over every file's path and content.
fn fingerprint(files: &BTreeMap<String, Vec<u8>>) -> String {
    let mut material = Vec::new();
    for (path, content) in files {
        for part in [path.as_bytes(), content.as_slice()] {
            material.extend_from_slice(&(part.len() as u64).to_le_bytes());
            material.extend_from_slice(part);
        }
    }
    git2::Oid::hash_object(git2::ObjectType::Blob, &material)
        .map(|oid| oid.to_string())
        .unwrap_or_default()
}

/// Parses and reads `kind.yaml` strictly; returns it with its document (for lines).
fn read_definition(file: &str, text: &str) -> Result<(Definition, Node), KindError> {
    let documents = crate::yaml::parse_documents(text).map_err(|error| {
        KindError::at(
            file,
            error.span,
            format!("malformed YAML: {}", error.message),
        )
    })?;
    let [document] = documents.as_slice() else {
        return Err(KindError::new(
            file,
            format!(
                "{} documents: a kind definition is one mapping",
                documents.len()
            ),
        ));
    };
    let definition: Definition = de::from_node(document, "").map_err(|error| {
        let mut message = error.message.clone();
        if !error.path.is_empty() && !message.contains(&format!("`{}`", error.path)) {
            message.push_str(&format!(" (field `{}`)", error.path));
        }
        if let Some(expected) = &error.expected {
            message.push_str(&format!("; expected {expected}"));
        }
        if let Some(fix) = &error.fix {
            message.push_str(&format!("; {fix}"));
        }
        KindError::at(file, error.span.or(Some(document.span)), message)
    })?;
    Ok((definition, document.clone()))
}

fn tpu_families(
    definition: &Definition,
    file: &str,
    document: &Node,
) -> Result<Vec<TpuFamily>, KindError> {
    let options = &definition.tpu;
    if definition.accelerator != Accelerator::Tpu
        && (options.families.is_some() || options.multislice)
    {
        return Err(KindError::at(
            file,
            document.get("tpu").map(|n| n.span),
            "`tpu` options are set but `accelerator` is not `tpu`; set `accelerator: tpu` or remove `tpu`",
        ));
    }
    let Some(names) = &options.families else {
        return Ok(TpuFamily::ALL.to_vec());
    };
    names
        .iter()
        .map(|name| {
            TpuFamily::ALL
                .into_iter()
                .find(|f| f.prefix() == name || (name == "v5e" && *f == TpuFamily::V5e))
                .ok_or_else(|| {
                    let known: Vec<String> = TpuFamily::ALL
                        .iter()
                        .map(|f| format!("`{}`", f.prefix()))
                        .collect();
                    KindError::at(
                        file,
                        document.at(&["tpu", "families"]).map(|n| n.span),
                        format!(
                            "unknown TPU family `{name}` in `tpu.families`; expected one of {}",
                            known.join(", ")
                        ),
                    )
                })
        })
        .collect()
}

/// Checks the parameters' schema (an object schema whose properties are not shared fields)
/// and closes it: unknown fields are errors unless the kind says otherwise. Returns it with
/// its properties' top-level defaults.
fn parameters_schema(
    schema: &Json,
    shared_fields: &[&str],
    file: &str,
    node: &Node,
) -> Result<(Json, BTreeMap<String, Json>), KindError> {
    let Json::Object(map) = schema else {
        return Err(KindError::at(
            file,
            Some(node.span),
            "`schema` must be a JSON Schema object (`type: object` with `properties`)",
        ));
    };
    if map.get("type").is_some_and(|t| t != "object") {
        return Err(KindError::at(
            file,
            node.get("type").map(|n| n.span),
            "`schema.type` must be `object`: it describes the kind's spec fields",
        ));
    }
    let mut closed = map.clone();
    closed.insert("type".into(), Json::from("object"));
    closed
        .entry("additionalProperties")
        .or_insert(Json::Bool(false));
    let mut defaults = BTreeMap::new();
    if let Some(Json::Object(properties)) = map.get("properties") {
        for (property, schema) in properties {
            if shared_fields.contains(&property.as_str()) {
                let span = node
                    .get("properties")
                    .and_then(|p| p.key(property))
                    .map(|k| k.span);
                return Err(KindError::at(
                    file,
                    span,
                    format!(
                        "parameter `{property}` is a shared spec field of every kind; rename it"
                    ),
                ));
            }
            if let Some(default) = schema.get("default") {
                defaults.insert(property.clone(), default.clone());
            }
        }
    } else if map.contains_key("properties") {
        return Err(KindError::at(
            file,
            node.get("properties").map(|n| n.span),
            "`schema.properties` must be a mapping of field names to schemas",
        ));
    }
    Ok((Json::Object(closed), defaults))
}

/// The JSON Schema of the whole spec: the shared parts this kind takes, then its parameters.
fn spec_schema(definition: &Definition, shared_fields: &[&str], parameters: &Json) -> Json {
    let mut schema = schemars::schema_for!(SharedSpec).to_value();
    if let Some(properties) = schema.get_mut("properties").and_then(Json::as_object_mut) {
        properties.retain(|name, _| shared_fields.contains(&name.as_str()));
    }
    let mut required: Vec<Json> = vec![Json::from("project")];
    let stanza = match definition.accelerator {
        Accelerator::Tpu => Some("tpu"),
        Accelerator::Gpu => Some("gpu"),
        Accelerator::None => None,
    };
    if let Some(stanza) = stanza {
        required.push(Json::from(stanza));
        // Required here, so not nullable: keep the stanza's own schema of `anyOf [it, null]`.
        if let Some(property) = schema.pointer_mut(&format!("/properties/{stanza}"))
            && let Some(branch) = property
                .get("anyOf")
                .and_then(Json::as_array)
                .and_then(|branches| branches.iter().find(|b| b.get("$ref").is_some()))
                .cloned()
            && let Some(object) = property.as_object_mut()
        {
            object.remove("anyOf");
            if let Json::Object(branch) = branch {
                object.extend(branch);
            }
        }
    }
    if let Some(Json::Array(more)) = parameters.get("required") {
        required.extend(more.iter().cloned());
    }
    if let Some(Json::Object(own)) = parameters.get("properties")
        && let Some(properties) = schema.get_mut("properties").and_then(Json::as_object_mut)
    {
        for (name, property) in own {
            properties.insert(name.clone(), property.clone());
        }
    }
    if let Some(object) = schema.as_object_mut() {
        object.insert("required".into(), Json::Array(required));
        object.insert("title".into(), Json::from("spec"));
        object.insert("description".into(), Json::from(definition.summary.clone()));
        if let Some(extra) = parameters.get("additionalProperties") {
            object.insert("additionalProperties".into(), extra.clone());
        }
        // The parameters' own definitions, for their `$ref`s.
        for key in ["$defs", "definitions"] {
            if let Some(Json::Object(defs)) = parameters.get(key) {
                let target = object
                    .entry(key)
                    .or_insert_with(|| Json::Object(serde_json::Map::new()));
                if let Some(target) = target.as_object_mut() {
                    for (name, def) in defs {
                        target.insert(name.clone(), def.clone());
                    }
                }
            }
        }
    }
    schema
}

/// The kind's template environment: its own templates, loaded up front, and the shared
/// workload blocks; no loader, so nothing else can be included. Every template is parsed
/// here, so syntax errors stop the command before anything renders.
fn environment(
    folder: &str,
    files: &BTreeMap<String, Vec<u8>>,
) -> Result<(Environment<'static>, Vec<String>), KindError> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    env.set_fuel(Some(FUEL));
    let syntax = minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
        .map_err(|e| KindError::new(folder, e.to_string()))?;
    env.set_syntax(syntax);
    env.add_template(
        SHARED_BLOCKS,
        include_str!("../overlay/templates/workload.yaml"),
    )
    .map_err(|e| KindError::new(folder, e.to_string()))?;
    let prefix = format!("{TEMPLATES_DIR}/");
    let mut objects = Vec::new();
    for (path, content) in files {
        let Some(name) = path.strip_prefix(&prefix) else {
            continue;
        };
        let display = format!("{folder}{path}");
        if name == SHARED_BLOCKS {
            return Err(KindError::new(
                display,
                format!("`{SHARED_BLOCKS}` is the name of the shared blocks; rename the file"),
            ));
        }
        env.add_template_owned(name.to_string(), text(content, &display)?.to_string())
            .map_err(|error| template_syntax_error(&display, &error))?;
        let file_name = name.rsplit('/').next().unwrap_or(name);
        let is_yaml = file_name.ends_with(".yaml") || file_name.ends_with(".yml");
        if is_yaml && !file_name.starts_with('_') {
            objects.push(name.to_string());
        }
    }
    Ok((env, objects))
}

fn template_syntax_error(display: &str, error: &minijinja::Error) -> KindError {
    let location = match error.line() {
        Some(line) => format!("{display}:{line}"),
        None => display.to_string(),
    };
    KindError::new(
        location,
        format!(
            "template syntax error: {}",
            error.detail().unwrap_or("invalid template")
        ),
    )
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

    fn rules(&self) -> &'static [crate::rules::Rule] {
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

/// Reads the shared fields strictly, as built-in kinds read theirs.
fn read_shared(blueprint: &Blueprint<'_>, node: &Node) -> Result<SharedSpec, Diagnostic> {
    de::from_node(node, "spec").map_err(|e| {
        let mut d = Diagnostic::error("blueprint-schema", e.message)
            .at(blueprint.file, e.span.unwrap_or(blueprint.spec().span))
            .field(e.path)
            .object(blueprint.object_ref());
        d.expected = e.expected;
        d.found = e.found;
        d.fix = e.fix;
        d
    })
}

impl Inner {
    /// Checks the kind's own fields against its schema; the first violation (in source
    /// order) is a `blueprint-schema` error at its line. Returns them with their defaults.
    fn parameters(&self, blueprint: &Blueprint<'_>, node: &Node) -> Result<Json, Diagnostic> {
        let mut instance: Json = de::from_node(node, "spec").map_err(|e| {
            Diagnostic::error("blueprint-schema", e.message)
                .at(blueprint.file, e.span.unwrap_or(node.span))
                .field(e.path)
                .object(blueprint.object_ref())
        })?;
        let mut found: Vec<Diagnostic> = self
            .validator
            .iter_errors(&instance)
            .map(|error| self.explain(blueprint, node, &error))
            .collect();
        found.sort_by_key(|d| (d.line, d.column));
        if let Some(first) = found.into_iter().next() {
            return Err(first);
        }
        if let Json::Object(map) = &mut instance {
            for (name, default) in &self.defaults {
                map.entry(name.clone()).or_insert_with(|| default.clone());
            }
        }
        Ok(instance)
    }

    fn explain(
        &self,
        blueprint: &Blueprint<'_>,
        root: &Node,
        error: &jsonschema::ValidationError<'_>,
    ) -> Diagnostic {
        use jsonschema::error::ValidationErrorKind;
        let steps = steps(error.instance_path().as_str());
        let (node, key) = locate(root, &steps).unwrap_or((root, None));
        let field = format!("spec{}", dotted(&steps));
        let at = |message: String, span: Span, field: String| {
            Diagnostic::error("blueprint-schema", message)
                .at(blueprint.file, span)
                .field(field)
                .object(blueprint.object_ref())
        };
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let name = unexpected.first().cloned().unwrap_or_default();
                let span = node.key(&name).map_or(node.span, |k| k.span);
                let mut valid: Vec<String> =
                    self.shared_fields.iter().map(ToString::to_string).collect();
                if let Some(Json::Object(properties)) = self.spec_schema.get("properties") {
                    valid.extend(properties.keys().cloned());
                }
                if steps.is_empty() {
                    valid.sort();
                    valid.dedup();
                } else {
                    valid.clear();
                }
                let mut d = at(
                    format!("unknown field `{name}`"),
                    span,
                    format!("{field}.{name}"),
                )
                .found(name.as_str());
                if let Some(best) = crate::catalog::closest(&name, valid.iter().map(String::as_str))
                {
                    d = d.fix(format!("did you mean `{best}`?"));
                } else {
                    d = d.fix(format!("remove `{name}`"));
                }
                if !valid.is_empty() {
                    let listed: Vec<String> = valid.iter().map(|v| format!("`{v}`")).collect();
                    d = d.expected(format!("one of {}", listed.join(", ")));
                }
                d
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_string);
                // At the mapping that lacks it: its key, or `spec:` itself.
                let span = key.unwrap_or(blueprint.spec().span);
                let span = if steps.is_empty() {
                    blueprint.node.key("spec").map_or(span, |k| k.span)
                } else {
                    span
                };
                at(
                    format!("missing required field `{name}`"),
                    span,
                    format!("{field}.{name}"),
                )
                .fix(format!("add `{name}`"))
            }
            _ => {
                let span = match (&node.value, key) {
                    (Value::Map(_) | Value::Seq(_), Some(key)) => key,
                    _ => node.span,
                };
                let mut d = at(error.masked().to_string(), span, field);
                if !matches!(node.value, Value::Map(_) | Value::Seq(_)) {
                    d = d.found(scalar(&node.value));
                }
                // The field's own description says what it wants, when the kind wrote one.
                if let Some(description) = self.description(&steps) {
                    d = d.expected(description);
                }
                d.fix(format!(
                    "see the `{}` kind's schema: `kubectl aiml blueprints --schema {}`",
                    self.name, self.name
                ))
            }
        }
    }

    /// The `description` of the parameter schema at `steps` (through `properties` and
    /// `items`), when it has one.
    fn description(&self, steps: &[Step]) -> Option<String> {
        let mut schema = &self.spec_schema;
        for step in steps {
            schema = match step {
                Step::Key(key) => schema.get("properties")?.get(key)?,
                Step::Index(_) => schema.get("items")?,
            };
        }
        schema
            .get("description")
            .and_then(Json::as_str)
            .map(str::to_string)
    }

    /// Renders the object templates with `context` into one YAML stream, checking that each
    /// produced Kubernetes objects and nothing that turns rules off.
    fn render(
        &self,
        blueprint: &str,
        context: &TemplateContext<'_>,
    ) -> Result<String, TemplateError> {
        let mut stream = String::new();
        for name in &self.object_templates {
            let path = format!("{}{TEMPLATES_DIR}/{name}", self.folder);
            let text = self
                .environment
                .get_template(name)
                .and_then(|template| template.render(minijinja::value::Serde(context)))
                .map_err(|error| self.render_error(&path, &error))?;
            if text.len() as u64 > self.max_output {
                return Err(TemplateError {
                    template: path,
                    message: format!(
                        "rendered {} for blueprint `{blueprint}`, more than the file size limit",
                        crate::limits::human_size(text.len() as u64)
                    ),
                });
            }
            check_output(&path, blueprint, &text)?;
            if text.trim().is_empty() {
                continue;
            }
            if !stream.is_empty() {
                stream.push_str("---\n");
            }
            stream.push_str(&text);
            if !stream.ends_with('\n') {
                stream.push('\n');
            }
        }
        Ok(stream)
    }

    fn render_error(&self, path: &str, error: &minijinja::Error) -> TemplateError {
        // The error may come from an included template: name that one.
        let template = match error.name() {
            Some(SHARED_BLOCKS) => SHARED_BLOCKS.to_string(),
            Some(name) if self.environment.get_template(name).is_ok() => {
                format!("{}{TEMPLATES_DIR}/{name}", self.folder)
            }
            _ => path.to_string(),
        };
        let line = error
            .line()
            .map(|l| format!("line {l}: "))
            .unwrap_or_default();
        let message = match error.kind() {
            ErrorKind::TemplateNotFound => format!(
                "{line}{}: a kind's templates include only files of `{}{TEMPLATES_DIR}/` (and `{SHARED_BLOCKS}`)",
                error.detail().unwrap_or("template not found"),
                self.folder
            ),
            ErrorKind::OutOfFuel => {
                format!("{line}the template ran too long (a runaway loop?); rendering stopped")
            }
            kind => format!(
                "{line}{kind}{}",
                error.detail().map(|d| format!(": {d}")).unwrap_or_default()
            ),
        };
        TemplateError { template, message }
    }
}

/// Every document a kind's template renders is a Kubernetes object that does not turn
/// rules off.
fn check_output(path: &str, blueprint: &str, text: &str) -> Result<(), TemplateError> {
    let error = |message: String| TemplateError {
        template: path.to_string(),
        message,
    };
    let documents = crate::yaml::parse_documents(text).map_err(|e| {
        let line = e
            .span
            .map(|s| format!(" at line {} of the output", s.line))
            .unwrap_or_default();
        error(format!(
            "rendered malformed YAML for blueprint `{blueprint}`{line}: {}",
            e.message
        ))
    })?;
    for document in documents {
        if matches!(document.value, Value::Null) {
            continue;
        }
        let line = document.span.line;
        let is_object = document.get("apiVersion").and_then(Node::as_str).is_some()
            && document.get("kind").and_then(Node::as_str).is_some()
            && document
                .at(&["metadata", "name"])
                .and_then(Node::as_str)
                .is_some();
        if !is_object {
            return Err(error(format!(
                "rendered a document that is not a Kubernetes object for blueprint `{blueprint}` (line {line} of the output); expected a mapping with `apiVersion`, `kind` and `metadata.name`"
            )));
        }
        // Anywhere, not only on the object's own metadata: items of a `List` are objects too.
        if let Some(key) = find_key(&document, crate::rules::IGNORE_ANNOTATION) {
            return Err(error(format!(
                "sets `{}` for blueprint `{blueprint}` (line {} of the output): a kind cannot turn rules off; only a blueprint can, in its own `metadata.annotations`",
                crate::rules::IGNORE_ANNOTATION,
                key.span.line
            )));
        }
    }
    Ok(())
}

/// The first mapping key called `name` in the tree under `node`.
fn find_key<'n>(node: &'n Node, name: &str) -> Option<&'n Key> {
    match &node.value {
        Value::Map(entries) => entries.iter().find_map(|(key, value)| {
            if key.text == name {
                Some(key)
            } else {
                find_key(value, name)
            }
        }),
        Value::Seq(items) => items.iter().find_map(|item| find_key(item, name)),
        _ => None,
    }
}

/// A blueprint of a repository kind, read.
struct RepositorySpec {
    kind: Arc<Inner>,
    shared: SharedSpec,
    parameters: Json,
}

/// What a kind's templates see.
#[derive(Debug, Serialize)]
struct TemplateContext<'a> {
    /// The blueprint's `metadata.name`.
    name: String,
    /// Namespace of the workload objects.
    namespace: String,
    project: String,
    region: String,
    zone: String,
    /// The Kubernetes service account bound to the Workload Identity account.
    kubernetes_service_account: String,
    /// Email of the Workload Identity account.
    workload_service_account: String,
    /// Email of the nodes' account.
    node_service_account: String,
    cluster: ClusterContext,
    /// Selects this blueprint's accelerator nodes (TPU or GPU), else empty.
    node_selector: BTreeMap<String, String>,
    /// The TPU plan: `type_name`, `topology`, `hosts`, `chips_per_host`, `slices`, …
    tpu: Option<TpuPlan>,
    gpu: Option<GpuContext>,
    bucket: Option<BucketContext>,
    /// The kind's own spec fields, checked, with their defaults.
    parameters: &'a Json,
}

#[derive(Debug, Serialize)]
struct ClusterContext {
    name: String,
    location: String,
    project: String,
}

#[derive(Debug, Serialize)]
struct GpuContext {
    accelerator: &'static str,
    count: u32,
    machine_type: String,
    pool: String,
    min_nodes: u32,
    max_nodes: u32,
}

#[derive(Debug, Serialize)]
struct BucketContext {
    name: String,
    url: String,
}

/// Project roles of the node service account: GKE's minimal node role and image pulls.
const NODE_PROJECT_ROLES: &[&str] = &[
    "roles/container.defaultNodeServiceAccount",
    "roles/artifactregistry.reader",
];
/// Roles of the workload account on the blueprint's bucket.
const BUCKET_ROLES: &[&str] = &[
    "roles/storage.legacyBucketReader",
    "roles/storage.objectUser",
];

impl RepositorySpec {
    fn region_and_zone(&self, borrowed: Option<&crate::plan::ClusterExport>) -> (String, String) {
        let spec = &self.shared;
        let definition = &self.kind.definition;
        let region = spec
            .region
            .clone()
            .or_else(|| borrowed.map(|c| c.region.clone()))
            .or_else(|| definition.region.clone())
            .unwrap_or_else(|| DEFAULT_REGION.to_string());
        let zone = spec.zone.clone().unwrap_or_else(|| {
            if let Some(cluster) = borrowed.filter(|c| gcp::names::zone(&c.location).is_ok()) {
                return cluster.location.clone();
            }
            match &definition.zone {
                // The kind's zone goes with the kind's region.
                Some(zone) if spec.region.is_none() && borrowed.is_none() => zone.clone(),
                _ => format!("{region}-a"),
            }
        });
        (region, zone)
    }

    #[expect(
        clippy::too_many_lines,
        reason = "a recipe reads best top to bottom: blocks, checks, then the context"
    )]
    fn plan(
        &self,
        planner: &mut Planner<'_>,
    ) -> Option<(gcp::Infrastructure, TemplateContext<'_>, String)> {
        let spec = &self.shared;
        let kind = &self.kind;
        let definition = &kind.definition;
        let name = planner.name().to_string();
        let borrowed = spec
            .cluster
            .blueprint
            .as_deref()
            .and_then(|other| planner.peek(other))
            .and_then(|exported| exported.exports.cluster.clone());
        let (region, zone) = self.region_and_zone(borrowed.as_ref());
        let mut gcp = Gcp::new(
            planner,
            gcp::SiteSpec {
                project: &spec.project,
                region: &region,
                zone: &zone,
                config_connector: &spec.config_connector,
            },
        );
        let tpu = match (&definition.accelerator, &spec.tpu) {
            (Accelerator::Tpu, Some(tpu)) => Some(accelerator::resolve_tpu(
                planner,
                tpu,
                TpuSupport {
                    kind: &kind.name,
                    families: &kind.tpu_families,
                    multislice: definition.tpu.multislice,
                },
            )?),
            _ => None,
        };
        let gpu: Option<GpuPlan> = match (&definition.accelerator, &spec.gpu) {
            (Accelerator::Gpu, Some(gpu)) => Some(accelerator::resolve_gpu(planner, gpu)?),
            _ => None,
        };
        let namespace = spec.namespace.clone().unwrap_or_else(|| name.clone());
        let kubernetes_service_account = spec
            .kubernetes_service_account
            .clone()
            .or_else(|| definition.kubernetes_service_account.clone())
            .unwrap_or_else(|| "workload".into());
        for (field, value) in [
            ("spec.namespace", &namespace),
            ("spec.kubernetesServiceAccount", &kubernetes_service_account),
        ] {
            planner.check_name(gcp::rule::KUBERNETES_NAME, field, value, check_dns_label);
        }
        let node_account = gcp.service_account(
            planner,
            &spec.service_accounts.nodes,
            "spec.serviceAccounts.nodes",
            "node",
            &format!("GKE {} nodes", kind.name),
        );
        let workload_account = gcp.service_account(
            planner,
            &spec.service_accounts.workload,
            "spec.serviceAccounts.workload",
            "wi",
            &format!("{} workloads", kind.name),
        );
        if node_account.id == workload_account.id {
            planner.error(
                gcp::rule::SERVICE_ACCOUNT_ID,
                "spec.serviceAccounts.workload.name",
                "the node and workload service accounts must differ",
            );
        }
        let cluster = gcp.cluster(
            planner,
            &spec.cluster,
            &spec.network,
            ClusterOptions {
                default_location: &zone,
                addons: Addons::default(),
            },
            &node_account,
        )?;
        if cluster.owned {
            gcp.cpu_pool(
                planner,
                &cluster,
                &spec.cluster.cpu_pool,
                CpuPoolDefaults {
                    name: "cpu-pool",
                    field: "spec.cluster.cpuPool",
                    machine_type: "e2-standard-4",
                    scale: Scale::Autoscaling { min: 1, max: 3 },
                    disk_size_gb: Some(100),
                    labels: &[("default-node-pool", "true")],
                    taints: &[],
                },
                &node_account,
            );
        }
        for role in NODE_PROJECT_ROLES {
            gcp.project_role(&node_account, role);
        }
        gcp.workload_identity(
            &workload_account,
            &cluster,
            &namespace,
            &kubernetes_service_account,
        );
        let bucket = definition.bucket.then(|| {
            let bucket = gcp.bucket(
                planner,
                &spec.bucket,
                "spec.bucket",
                &gcp::names::shortened(&format!("{}-{name}", spec.project), "", 63),
            );
            for role in BUCKET_ROLES {
                gcp.bucket_role(&bucket, &workload_account, role);
            }
            BucketContext {
                url: bucket.url(),
                name: bucket.name,
            }
        });
        if planner.has_errors() {
            return None;
        }
        let pool_labels = BTreeMap::from([(BLUEPRINT_LABEL.to_string(), name.clone())]);
        let mut node_selector = BTreeMap::new();
        let mut description = "no accelerator".to_string();
        if let Some(tpu) = &tpu {
            gcp.tpu_pools(&cluster, tpu, &node_account, &pool_labels);
            node_selector.insert(
                TPU_ACCELERATOR_LABEL.to_string(),
                tpu.accelerator.to_string(),
            );
            node_selector.insert(TPU_TOPOLOGY_LABEL.to_string(), tpu.topology.clone());
            node_selector.insert(BLUEPRINT_LABEL.to_string(), name.clone());
            description = format!("{} x {} ({})", tpu.slices, tpu.type_name, tpu.topology);
        }
        let gpu = gpu.map(|gpu| {
            let pool = gcp.sized_gpu_pool(
                planner,
                &cluster,
                &gpu,
                &spec.gpu_pool,
                &GpuPoolDefaults {
                    name: "gpu-pool",
                    field: "spec.gpuPool",
                    scale: Scale::Autoscaling { min: 1, max: 3 },
                    disk_size_gb: Some(100),
                    labels: pool_labels.clone(),
                },
                &node_account,
            );
            node_selector.insert(
                GPU_ACCELERATOR_LABEL.to_string(),
                gpu.accelerator.to_string(),
            );
            node_selector.insert(BLUEPRINT_LABEL.to_string(), name.clone());
            description = format!("{} × {} per node", gpu.count, gpu.accelerator);
            GpuContext {
                accelerator: gpu.accelerator,
                count: gpu.count,
                machine_type: gpu.machine_type,
                pool: pool.name,
                min_nodes: pool.min_nodes,
                max_nodes: pool.max_nodes,
            }
        });
        if planner.has_errors() {
            return None;
        }
        let context = TemplateContext {
            name,
            namespace,
            project: spec.project.clone(),
            region,
            zone,
            kubernetes_service_account,
            workload_service_account: workload_account.email,
            node_service_account: node_account.email,
            cluster: ClusterContext {
                name: cluster.name,
                location: cluster.location,
                project: cluster.project,
            },
            node_selector,
            tpu,
            gpu,
            bucket,
            parameters: &self.parameters,
        };
        Some((gcp.finish(), context, description))
    }
}

impl Spec for RepositorySpec {
    fn exports(&self, blueprint: &Blueprint<'_>) -> Exports {
        let (region, zone) = self.region_and_zone(None);
        gcp::cluster_exports(
            blueprint.name,
            &self.shared.project,
            &self.shared.config_connector,
            &self.shared.cluster,
            &region,
            &zone,
        )
    }

    fn compile(&self, planner: &mut Planner<'_>) -> Result<Option<Compiled>, TemplateError> {
        let Some((infra, context, description)) = self.plan(planner) else {
            return Ok(None);
        };
        let blueprint = planner.blueprint();
        let mut overlay = Overlay::default();
        overlay.add_infrastructure(blueprint, &infra)?;
        let workload = self.kind.render(blueprint.name, &context)?;
        if !workload.trim().is_empty() {
            overlay.add_target(Plane::Workload, blueprint, workload)?;
        }
        Ok(Some(Compiled {
            overlay,
            description,
        }))
    }
}

/// One step of a JSON pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// The steps of a JSON pointer (`/models/0/name`).
fn steps(pointer: &str) -> Vec<Step> {
    pointer
        .split('/')
        .skip(1)
        .map(|raw| {
            let text = raw.replace("~1", "/").replace("~0", "~");
            match text.parse::<usize>() {
                Ok(index) => Step::Index(index),
                Err(_) => Step::Key(text),
            }
        })
        .collect()
}

/// `.models[0].name`.
fn dotted(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|step| match step {
            Step::Key(key) => format!(".{key}"),
            Step::Index(index) => format!("[{index}]"),
        })
        .collect()
}

/// The node a pointer leads to, with the key that led to it (mapping values only). `None`
/// when the pointer leaves the tree.
fn locate<'n>(root: &'n Node, steps: &[Step]) -> Option<(&'n Node, Option<Span>)> {
    let mut node = root;
    let mut key = None;
    for step in steps {
        match (step, &node.value) {
            (Step::Index(index), Value::Seq(items)) => {
                key = None;
                node = items.get(*index)?;
            }
            (step, Value::Map(_)) => {
                // A key that reads as a number is still a key of a mapping.
                let text = match step {
                    Step::Key(text) => text.clone(),
                    Step::Index(index) => index.to_string(),
                };
                key = Some(node.key(&text)?.span);
                node = node.get(&text)?;
            }
            _ => return None,
        }
    }
    Some((node, key))
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::String(s) => s.clone(),
        Value::Seq(_) => "a list".into(),
        Value::Map(_) => "a mapping".into(),
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

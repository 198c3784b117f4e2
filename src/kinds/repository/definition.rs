//! A kind folder read and checked: its files, `kind.yaml`, the parameters' schema, the
//! spec's whole schema and the template environment.

use std::collections::BTreeMap;
use std::path::Path;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Deserialize;
use serde_json::Value as Json;

use super::spec::SharedSpec;
use super::{FUEL, KindError, MAX_FILES, SHARED_BLOCKS, TEMPLATES_DIR};
use crate::blueprint::de;
use crate::catalog::TpuFamily;
use crate::yaml::Node;

/// `kind.yaml` as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct Definition {
    /// One line for `kubectl aiml blueprints`.
    pub(super) summary: String,
    /// The accelerator stanza the kind's blueprints take (default `none`).
    #[serde(default)]
    pub(super) accelerator: Accelerator,
    /// With `accelerator: tpu`: which TPU families and whether several slices form one job.
    #[serde(default)]
    pub(super) tpu: TpuOptions,
    /// Default region of its blueprints.
    pub(super) region: Option<String>,
    /// Default zone of its blueprints (when they name no region either).
    pub(super) zone: Option<String>,
    /// Default Kubernetes service account of the workloads (default `workload`).
    pub(super) kubernetes_service_account: Option<String>,
    /// Whether its blueprints get a bucket (`spec.bucket`), readable and writable by the
    /// workloads.
    #[serde(default)]
    pub(super) bucket: bool,
    /// JSON Schema of the kind's own spec fields: an object schema with `properties`
    /// (default: none).
    #[serde(default = "no_parameters")]
    pub(super) schema: Json,
}

/// A kind without fields of its own.
pub(super) fn no_parameters() -> Json {
    serde_json::json!({"type": "object", "properties": {}})
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(super) enum Accelerator {
    #[default]
    None,
    Tpu,
    Gpu,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct TpuOptions {
    /// Family prefixes (`v4`, `v5e`, `v5p`, `v6e`, `tpu7x`; default: all).
    pub(super) families: Option<Vec<String>>,
    /// Whether `slices` above 1 are one multislice job.
    #[serde(default)]
    pub(super) multislice: bool,
}

/// Every file of a kind folder, by path relative to it. Symbolic links are refused: a kind
/// reads nothing outside its folder.
pub(super) fn read_folder(
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
    if let Some((first, second)) = crate::repo::case_collision(files.keys().map(String::as_str)) {
        return Err(KindError::new(
            folder,
            crate::repo::case_collision_message(
                &format!("{folder}{first}"),
                &format!("{folder}{second}"),
            ),
        ));
    }
    Ok(files)
}

/// A regular file of at most `limit` bytes (a FIFO or device is named, never read). Any
/// content: a kind folder may hold images for its README; templates must be text.
pub(super) fn read_bytes(path: &Path, display: &str, limit: u64) -> Result<Vec<u8>, KindError> {
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
pub(super) fn text<'f>(bytes: &'f [u8], display: &str) -> Result<&'f str, KindError> {
    std::str::from_utf8(bytes).map_err(|_| {
        KindError::new(
            display,
            "not UTF-8 text: a kind's definition and templates are text files",
        )
    })
}

/// A hash over every file's path and content.
pub(super) fn fingerprint(files: &BTreeMap<String, Vec<u8>>) -> String {
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
pub(super) fn read_definition(file: &str, text: &str) -> Result<(Definition, Node), KindError> {
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

pub(super) fn tpu_families(
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
pub(super) fn parameters_schema(
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
pub(super) fn spec_schema(
    definition: &Definition,
    shared_fields: &[&str],
    parameters: &Json,
) -> Json {
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
pub(super) fn environment(
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
        include_str!("../../overlay/templates/workload.yaml"),
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

pub(super) fn template_syntax_error(display: &str, error: &minijinja::Error) -> KindError {
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

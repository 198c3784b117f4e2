//! Where schemas come from, and their compiled forms, each built once.
//!
//! - Built-in kinds: `kubernetes/v1.32/index.json` maps `group/version/Kind` to a definition
//!   of `kubernetes/v1.32/_definitions.json`, which is inflated and parsed once (on the first
//!   built-in kind) into a `referencing` registry; each kind compiles to `{"$ref": …}`.
//! - CRDs: `crds/index.json` (facts) and one file per kind and version, inflated per kind.
//! - Folders from `--schemas`: scanned for file names once, read per kind.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jsonschema::{Draft, PatternCache, Registry, ValidationOptions, Validator};
use serde::Deserialize;
use serde_json::{Value, json};

use super::instance::Yaml;
use super::{SchemaError, embedded, formats, server, versions};
use crate::manifest::group_of;

/// `$id` of the built-in definitions; every built-in reference points into it.
pub(crate) const DEFINITIONS_URI: &str = "https://kubernetes.io/api/_definitions.json";
/// The built-in definitions of a minor (`v<minor>`).
fn definitions_file(minor: usize) -> String {
    format!("kubernetes/v{}/_definitions.json", versions::MINORS[minor])
}
fn builtin_index_file(minor: usize) -> String {
    format!("kubernetes/v{}/index.json", versions::MINORS[minor])
}
const MINOR_COUNT: usize = versions::MINORS.len();
const CRD_INDEX: &str = "crds/index.json";
/// Base URI given to each embedded CRD schema, so errors carry where in it they arose.
const CRD_BASE: &str = "https://schemas.aiml.dev/crds/";
/// Base URI of the schemas of `--schemas` folder number N: `{DIR_BASE}{N}/{relative path}`.
const DIR_BASE: &str = "https://schemas.aiml.dev/dir/";
const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// One kind's schema, as listed by [`super::Schemas::kinds`].
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct KindSummary {
    /// `apiVersion`, e.g. `apps/v1`.
    pub api_version: String,
    /// `kind`, e.g. `Deployment`.
    pub kind: String,
    /// Where the schema comes from: `kubernetes 1.32` or the embedded CRD file.
    pub source: String,
    /// Whether the version is deprecated.
    pub deprecated: bool,
}

/// A compiled schema, and the documents its keyword locations point into.
pub(crate) struct Compiled {
    pub(crate) validator: Validator<Yaml>,
    /// `(base URI, document)`: an error's absolute keyword location is `base#pointer`.
    docs: Vec<(String, Arc<Value>)>,
}

impl Compiled {
    /// The (sub)schema at an absolute location `base#/json/pointer`.
    pub(crate) fn schema_at(&self, location: &str) -> Option<&Value> {
        let (base, pointer) = location.split_once('#').unwrap_or((location, ""));
        let (_, doc) = self.docs.iter().find(|(b, _)| b == base)?;
        doc.pointer(pointer)
    }

    /// The schema compiled (its first document).
    pub(crate) fn root_schema(&self) -> Option<&Value> {
        self.docs.first().map(|(_, doc)| doc.as_ref())
    }
}

enum Source {
    /// A definition of the built-in `_definitions.json` of a minor (index in
    /// [`versions::MINORS`]).
    Builtin(usize, String),
    /// An embedded CRD file, relative to `crds/`.
    Crd(String),
    /// A file of a `--schemas` folder.
    File {
        path: PathBuf,
        /// Its path relative to the folder, `/`-separated.
        relative: String,
        dir: Arc<DirShared>,
    },
}

/// One schema of the store, compiled on first use.
pub(crate) struct Entry {
    api_version: String,
    kind: String,
    source: Source,
    deprecation: Option<Deprecation>,
    compiled: OnceLock<Result<Compiled, String>>,
}

/// Why and to what a deprecated version should move.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Deprecation {
    /// `apiVersion` of the deprecated schema.
    pub(crate) api_version: String,
    /// The warning the API server sends, when the CRD has one.
    pub(crate) warning: Option<String>,
    /// The version to use instead (the CRD's storage version), when known.
    pub(crate) replacement: Option<String>,
    /// Built-ins: the release that deprecated it.
    pub(crate) since: Option<&'static str>,
}

impl Entry {
    /// The compiled schema (compiled now if this is the first use).
    pub(crate) fn compiled(&self) -> Result<&Compiled, String> {
        self.compiled
            .get_or_init(|| self.compile())
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The deprecation, when the version is deprecated.
    pub(crate) fn deprecation(&self) -> Option<&Deprecation> {
        self.deprecation.as_ref()
    }

    /// Whether objects of `group` checked against this schema are custom resources (whose
    /// `metadata` the schema leaves open).
    pub(crate) fn is_custom_resource(&self, store: &Store, group: &str) -> bool {
        match self.source {
            Source::Builtin(..) => false,
            Source::Crd(_) => true,
            Source::File { .. } => !store.is_builtin_group(group),
        }
    }

    fn compile(&self) -> Result<Compiled, String> {
        match &self.source {
            Source::Builtin(minor, definition) => compile_builtin(
                *minor,
                definition,
                &format!("{} {}", self.api_version, self.kind),
            ),
            Source::Crd(file) => {
                let mut schema = embedded::json(&format!("crds/{file}"))?;
                ecma_patterns(&mut schema);
                server::crd_file_schema(file, &mut schema);
                let doc = Arc::new(schema);
                let base = format!("{CRD_BASE}{file}");
                // CRD schemas are OpenAPI v3 structural schemas converted to draft-07 (their
                // `$schema`), without `$ref`s.
                let validator = options()
                    .with_draft(Draft::Draft7)
                    .with_base_uri(base.clone())
                    .build(&doc)
                    .map_err(|e| format!("crds/{file}: {e}"))?;
                Ok(Compiled {
                    validator,
                    docs: vec![(base, doc)],
                })
            }
            Source::File {
                path,
                relative,
                dir,
            } => {
                let shown = path.display();
                let text = fs::read(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
                let mut schema: Value = serde_json::from_slice(&text)
                    .map_err(|e| format!("{shown} is not JSON: {e}"))?;
                let draft = draft_of(&mut schema);
                ecma_patterns(&mut schema);
                let doc = Arc::new(schema);
                let base = format!("{DIR_BASE}{}/{relative}", dir.id);
                let mut docs = vec![(base.clone(), Arc::clone(&doc))];
                let options = options().with_draft(draft).with_base_uri(base);
                let validator = match dir.definitions()? {
                    Some((registry, uri, definitions)) => {
                        docs.push((uri.clone(), Arc::clone(definitions)));
                        options.with_registry(registry).build(&doc)
                    }
                    None => options.build(&doc),
                }
                .map_err(|e| format!("{shown} does not compile: {e}"))?;
                Ok(Compiled { validator, docs })
            }
        }
    }
}

/// Rewrites Go-only regular expressions in `pattern`s so the schema compiles.
///
/// The API server evaluates `pattern` with Go's `regexp` (RE2 syntax); JSON Schema means
/// ECMA-262, and `jsonschema` rejects a schema whose patterns are not ECMA-262. The one Go
/// construct the vendored CRDs use is a leading `(?i)` (Kueue's AdmissionCheck), which ECMA-262
/// has no inline form of: it is rewritten to explicit upper- and lower-case alternatives.
fn ecma_patterns(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, child) in map.iter_mut() {
                if key == "pattern"
                    && let Value::String(pattern) = child
                {
                    if let Some(folded) = fold_case(pattern) {
                        *pattern = folded;
                    }
                } else {
                    ecma_patterns(child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(ecma_patterns),
        _ => {}
    }
}

/// `^(?i)[a-z]x` → `^[a-zA-Z][xX]`; `None` when the pattern has no leading `(?i)`.
fn fold_case(pattern: &str) -> Option<String> {
    let (anchor, rest) = match pattern.strip_prefix('^') {
        Some(rest) => ("^", rest),
        None => ("", pattern),
    };
    let body: Vec<char> = rest.strip_prefix("(?i)")?.chars().collect();
    let mut out = String::from(anchor);
    let mut in_class = false;
    let mut i = 0;
    while i < body.len() {
        let c = body[i];
        match c {
            '\\' => {
                out.push(c);
                if let Some(next) = body.get(i + 1) {
                    out.push(*next);
                }
                i += 2;
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push(c);
            }
            ']' if in_class => {
                in_class = false;
                out.push(c);
            }
            _ if in_class && c.is_ascii_alphabetic() => {
                let range_end = (body.get(i + 1) == Some(&'-'))
                    .then(|| body.get(i + 2).copied())
                    .flatten()
                    .filter(char::is_ascii_alphabetic);
                match range_end {
                    Some(end) => {
                        out.extend([c, '-', end, swap_case(c), '-', swap_case(end)]);
                        i += 3;
                        continue;
                    }
                    None => out.extend([c, swap_case(c)]),
                }
            }
            _ if c.is_ascii_alphabetic() => out.extend(['[', c, swap_case(c), ']']),
            _ => out.push(c),
        }
        i += 1;
    }
    Some(out)
}

fn swap_case(c: char) -> char {
    if c.is_ascii_lowercase() {
        c.to_ascii_uppercase()
    } else {
        c.to_ascii_lowercase()
    }
}

/// The draft a folder's schema declares; an unknown `$schema` (openapi2jsonschema writes
/// `http://json-schema.org/schema#`) is dropped and read as draft 4, which those tools meant.
fn draft_of(schema: &mut Value) -> Draft {
    let declared = schema.get("$schema").and_then(Value::as_str).unwrap_or("");
    let known = [
        ("draft-04", Draft::Draft4),
        ("draft-06", Draft::Draft6),
        ("draft-07", Draft::Draft7),
        ("2019-09", Draft::Draft201909),
        ("2020-12", Draft::Draft202012),
    ];
    match known.iter().find(|(marker, _)| declared.contains(marker)) {
        Some((_, draft)) => *draft,
        None => {
            if let Some(map) = schema.as_object_mut() {
                map.remove("$schema");
            }
            Draft::Draft4
        }
    }
}

/// Options every schema is compiled with: no retrieval (every `$ref` must be known), and
/// `format` checked as the API server checks it.
fn options<'r>() -> ValidationOptions<'r, Arc<dyn jsonschema::Retrieve>, Yaml> {
    static PATTERNS: OnceLock<PatternCache> = OnceLock::new();
    jsonschema::options_for::<Yaml>()
        .offline()
        // 2020-12 treats `format` as an annotation by default; Kubernetes does check formats.
        .should_validate_formats(true)
        .with_format("duration", formats::is_kubernetes_duration)
        .with_format("byte", formats::is_base64)
        // The quantity pattern alone occurs hundreds of times across the CRDs.
        .with_pattern_cache(PATTERNS.get_or_init(PatternCache::new).clone())
}

/// The built-in definitions, loaded once per process.
struct Builtin {
    defs: Arc<Value>,
    registry: Registry<'static>,
}

fn builtin(minor: usize) -> Result<&'static Builtin, String> {
    static BUILTIN: [OnceLock<Result<Builtin, String>>; MINOR_COUNT] =
        [const { OnceLock::new() }; MINOR_COUNT];
    BUILTIN[minor]
        .get_or_init(|| {
            let file = definitions_file(minor);
            let mut defs = embedded::json(&file)?;
            server::builtin_definitions(&mut defs);
            let defs = Arc::new(defs);
            let registry = Registry::new()
                .add(DEFINITIONS_URI, Arc::clone(&defs))
                .and_then(|builder| builder.prepare())
                .map_err(|e| format!("{file}: {e}"))?;
            Ok(Builtin { defs, registry })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The validator of the embedded definition `definition` (`#/$defs/<definition>`); errors
/// name `what`.
fn compile_builtin(minor: usize, definition: &str, what: &str) -> Result<Compiled, String> {
    let builtin = builtin(minor)?;
    let schema = json!({ "$ref": format!("{DEFINITIONS_URI}#/$defs/{definition}") });
    let validator = options()
        .with_draft(Draft::Draft202012)
        .with_registry(&builtin.registry)
        .build(&schema)
        .map_err(|e| format!("{what}: {e}"))?;
    Ok(Compiled {
        validator,
        docs: vec![(DEFINITIONS_URI.to_owned(), Arc::clone(&builtin.defs))],
    })
}

/// `ObjectMeta`, for custom resources' `metadata`.
pub(crate) fn object_meta() -> Result<&'static Compiled, String> {
    static META: OnceLock<Result<Compiled, String>> = OnceLock::new();
    // `ObjectMeta` is the same in every vendored minor.
    META.get_or_init(|| compile_builtin(0, OBJECT_META, "ObjectMeta"))
        .as_ref()
        .map_err(Clone::clone)
}

/// A `crds/index.json` entry (only the fields the checker reads).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CrdFacts {
    file: String,
    group: String,
    version: String,
    kind: String,
    storage: bool,
    deprecated: bool,
    deprecation_warning: Option<String>,
}

/// Every schema known, by `apiVersion` then `kind`.
#[derive(Clone)]
pub(crate) struct Store {
    kinds: HashMap<String, HashMap<String, Arc<Entry>>>,
    /// API groups Kubernetes serves built in (the minor's, plus groups of removed versions).
    builtin_groups: Arc<HashSet<String>>,
    dirs: Vec<Dir>,
    /// The minor of the built-in kinds (index in [`versions::MINORS`]).
    minor: usize,
}

/// What another vendored minor says of a built-in kind the target does not serve.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Elsewhere {
    /// A newer minor serves it, from this one on.
    From(&'static str),
    /// An older minor served it; this one was the first not to.
    RemovedIn(&'static str),
}

/// `group/version` as the built-in index writes it (`/v1` for the core group).
fn builtin_key(api_version: &str) -> String {
    if api_version.contains('/') {
        api_version.to_owned()
    } else {
        format!("/{api_version}")
    }
}

/// The built-in index of a minor: `group/version/Kind` -> definition, read once.
fn builtin_index(minor: usize) -> Result<&'static BTreeMap<String, String>, String> {
    static INDEX: [OnceLock<Result<BTreeMap<String, String>, String>>; MINOR_COUNT] =
        [const { OnceLock::new() }; MINOR_COUNT];
    INDEX[minor]
        .get_or_init(|| {
            let file = builtin_index_file(minor);
            serde_json::from_value(embedded::json(&file)?).map_err(|e| format!("{file}: {e}"))
        })
        .as_ref()
        .map_err(Clone::clone)
}

impl Store {
    /// The embedded schemas' index for the minor `minor` (index in [`versions::MINORS`]),
    /// read once per process.
    pub(crate) fn embedded(minor: usize) -> &'static Store {
        static STORE: [OnceLock<Store>; MINOR_COUNT] = [const { OnceLock::new() }; MINOR_COUNT];
        STORE[minor].get_or_init(|| {
            // Embedded data is checked by the tests; failing here is a build defect.
            Store::load_embedded(minor).unwrap_or_else(|e| panic!("embedded schemas: {e}"))
        })
    }

    fn load_embedded(minor: usize) -> Result<Store, String> {
        let builtin = builtin_index(minor)?.clone();
        let crds: BTreeMap<String, CrdFacts> = serde_json::from_value(embedded::json(CRD_INDEX)?)
            .map_err(|e| format!("{CRD_INDEX}: {e}"))?;

        let mut kinds: HashMap<String, HashMap<String, Arc<Entry>>> = HashMap::new();
        let mut builtin_groups: HashSet<String> = HashSet::from([String::new()]);
        for (key, definition) in builtin {
            let mut parts = key.splitn(3, '/');
            let (Some(group), Some(version), Some(kind)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(format!("{}: bad key {key}", builtin_index_file(minor)));
            };
            builtin_groups.insert(group.to_owned());
            let api_version = api_version(group, version);
            let deprecation = versions::DEPRECATED
                .iter()
                .find(|(v, k, ..)| *v == api_version && *k == kind)
                .map(|(_, _, since, advice)| Deprecation {
                    api_version: api_version.clone(),
                    warning: Some((*advice).to_owned()),
                    replacement: None,
                    since: Some(since),
                });
            insert(
                &mut kinds,
                api_version,
                kind,
                Source::Builtin(minor, definition),
                deprecation,
            );
        }
        // The storage version of each CRD kind: where deprecated versions should move.
        let storage: HashMap<(&str, &str), String> = crds
            .values()
            .filter(|c| c.storage)
            .map(|c| {
                (
                    (c.group.as_str(), c.kind.as_str()),
                    api_version(&c.group, &c.version),
                )
            })
            .collect();
        for facts in crds.values() {
            let api_version = api_version(&facts.group, &facts.version);
            let deprecation = facts.deprecated.then(|| Deprecation {
                api_version: api_version.clone(),
                warning: facts.deprecation_warning.clone(),
                replacement: storage
                    .get(&(facts.group.as_str(), facts.kind.as_str()))
                    .filter(|storage| **storage != api_version)
                    .cloned(),
                since: None,
            });
            insert(
                &mut kinds,
                api_version,
                &facts.kind,
                Source::Crd(facts.file.clone()),
                deprecation,
            );
        }
        for removed in versions::REMOVED {
            builtin_groups.insert(group_of(removed.api_version).to_owned());
        }
        Ok(Store {
            kinds,
            builtin_groups: Arc::new(builtin_groups),
            dirs: Vec::new(),
            minor,
        })
    }

    /// The Kubernetes minor whose built-in kinds the store holds, e.g. `1.32`.
    pub(crate) fn kubernetes_version(&self) -> &'static str {
        versions::MINORS[self.minor]
    }

    /// Where the other vendored minors stand on the built-in `api_version` `kind` that this
    /// one does not serve: the first newer minor that serves it, else the first minor after
    /// the last older one that did (where it was removed).
    pub(crate) fn served_elsewhere(&self, api_version: &str, kind: &str) -> Option<Elsewhere> {
        let key = format!("{}/{kind}", builtin_key(api_version));
        let serves =
            |minor: usize| builtin_index(minor).is_ok_and(|index| index.contains_key(&key));
        if let Some(newer) = (self.minor + 1..MINOR_COUNT).find(|&m| serves(m)) {
            return Some(Elsewhere::From(versions::MINORS[newer]));
        }
        (0..self.minor)
            .rev()
            .find(|&m| serves(m))
            .map(|last| Elsewhere::RemovedIn(versions::MINORS[last + 1]))
    }

    /// Adds a `--schemas` folder, after those already added.
    pub(crate) fn add_dir(&mut self, root: &Path) -> Result<(), SchemaError> {
        let dir = Dir::scan(root, self.dirs.len())?;
        self.dirs.push(dir);
        Ok(())
    }

    /// The schema for `api_version` `kind`: folders first, then the embedded set.
    pub(crate) fn lookup(&self, api_version: &str, kind: &str) -> Option<&Arc<Entry>> {
        if !self.dirs.is_empty() {
            let group = group_of(api_version);
            let version = api_version.rsplit('/').next().unwrap_or(api_version);
            if let Some(entry) = self
                .dirs
                .iter()
                .find_map(|d| d.lookup(group, version, kind))
            {
                return Some(entry);
            }
        }
        self.kinds.get(api_version)?.get(kind)
    }

    /// Whether `group` is served by Kubernetes itself (no CRD can add kinds to it).
    pub(crate) fn is_builtin_group(&self, group: &str) -> bool {
        self.builtin_groups.contains(group)
    }

    /// Whether some embedded schema has API group `group`.
    pub(crate) fn is_known_group(&self, group: &str) -> bool {
        self.kinds.keys().any(|v| group_of(v) == group)
    }

    /// The `apiVersion`s with a schema for `kind`: those of `group` first, then the others.
    pub(crate) fn served_as(&self, kind: &str, group: &str) -> Vec<String> {
        let mut found: Vec<(bool, &String)> = self
            .kinds
            .iter()
            .filter(|(_, kinds)| kinds.contains_key(kind))
            .map(|(api_version, _)| (group_of(api_version) != group, api_version))
            .collect();
        found.sort();
        found.into_iter().map(|(_, v)| v.clone()).collect()
    }

    /// Every embedded kind, sorted.
    pub(crate) fn summaries(&self) -> Vec<KindSummary> {
        let mut out: Vec<KindSummary> = self
            .kinds
            .values()
            .flat_map(HashMap::values)
            .filter_map(|entry| {
                let source = match &entry.source {
                    Source::Builtin(minor, _) => {
                        format!("kubernetes {}", versions::MINORS[*minor])
                    }
                    Source::Crd(file) => format!("crds/{file}"),
                    Source::File { .. } => return None,
                };
                Some(KindSummary {
                    api_version: entry.api_version.clone(),
                    kind: entry.kind.clone(),
                    source,
                    deprecated: entry.deprecation.is_some(),
                })
            })
            .collect();
        out.sort();
        out
    }
}

fn api_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_owned()
    } else {
        format!("{group}/{version}")
    }
}

fn insert(
    kinds: &mut HashMap<String, HashMap<String, Arc<Entry>>>,
    api_version: String,
    kind: &str,
    source: Source,
    deprecation: Option<Deprecation>,
) {
    let entry = Arc::new(Entry {
        api_version: api_version.clone(),
        kind: kind.to_owned(),
        source,
        deprecation,
        compiled: OnceLock::new(),
    });
    kinds
        .entry(api_version)
        .or_default()
        .insert(kind.to_owned(), entry);
}

/// A `--schemas` folder: its JSON files by lower-case relative path, and its optional
/// `_definitions.json` (kubernetes-json-schema's non-standalone layout refers to it).
#[derive(Clone)]
struct Dir {
    files: Arc<HashMap<String, Arc<Entry>>>,
}

/// What the entries of one folder share.
struct DirShared {
    id: usize,
    root: PathBuf,
    #[allow(clippy::type_complexity)]
    definitions: OnceLock<Result<Option<(Registry<'static>, String, Arc<Value>)>, String>>,
}

impl DirShared {
    /// The folder's `_definitions.json` as a registry, when it has one.
    #[allow(clippy::type_complexity)]
    fn definitions(&self) -> Result<Option<&(Registry<'static>, String, Arc<Value>)>, String> {
        self.definitions
            .get_or_init(|| {
                let path = self.root.join("_definitions.json");
                if !path.is_file() {
                    return Ok(None);
                }
                let text = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let defs: Value = serde_json::from_slice(&text)
                    .map_err(|e| format!("{} is not JSON: {e}", path.display()))?;
                let defs = Arc::new(defs);
                let uri = format!("{DIR_BASE}{}/_definitions.json", self.id);
                let registry = Registry::new()
                    .add(&uri, Arc::clone(&defs))
                    .and_then(|builder| builder.prepare())
                    .map_err(|e| format!("{}: {e}", path.display()))?;
                Ok(Some((registry, uri, defs)))
            })
            .as_ref()
            .map(Option::as_ref)
            .map_err(Clone::clone)
    }
}

impl Dir {
    fn scan(root: &Path, id: usize) -> Result<Dir, SchemaError> {
        let shared = Arc::new(DirShared {
            id,
            root: root.to_path_buf(),
            definitions: OnceLock::new(),
        });
        let mut files = HashMap::new();
        let read = |path: &Path| {
            fs::read_dir(path).map_err(|source| SchemaError::Read {
                path: path.to_path_buf(),
                source,
            })
        };
        for entry in read(root)? {
            let entry = entry.map_err(|source| SchemaError::Read {
                path: root.to_path_buf(),
                source,
            })?;
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            if path.is_dir() {
                for inner in read(&path)? {
                    let inner = inner.map_err(|source| SchemaError::Read {
                        path: path.clone(),
                        source,
                    })?;
                    let file = inner.file_name().to_string_lossy().into_owned();
                    if file.ends_with(".json") {
                        add_file(&mut files, &shared, inner.path(), format!("{name}/{file}"));
                    }
                }
            } else if name.ends_with(".json") && name != "_definitions.json" && name != "index.json"
            {
                add_file(&mut files, &shared, path, name);
            }
        }
        if files.is_empty() {
            return Err(SchemaError::Empty {
                path: root.to_path_buf(),
            });
        }
        Ok(Dir {
            files: Arc::new(files),
        })
    }

    /// The file for `group`/`version`/`kind`, in the first layout that has one:
    /// `<group>/<kind>_<version>.json` (CRDs-catalog), `<kind>-<group>-<version>.json` and
    /// `<kind>-<first label of group>-<version>.json` (kubernetes-json-schema; `<kind>-<version>`
    /// for the core group), then `<kind>_<version>.json` (openapi2jsonschema, group-less).
    fn lookup(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<Entry>> {
        let kind = kind.to_lowercase();
        let prefix = group.split('.').next().unwrap_or("");
        let candidates = [
            (!group.is_empty()).then(|| format!("{group}/{kind}_{version}.json")),
            (!group.is_empty()).then(|| format!("{kind}-{group}-{version}.json")),
            Some(if prefix.is_empty() {
                format!("{kind}-{version}.json")
            } else {
                format!("{kind}-{prefix}-{version}.json")
            }),
            Some(format!("{kind}_{version}.json")),
        ];
        candidates
            .into_iter()
            .flatten()
            .find_map(|name| self.files.get(&name))
    }
}

fn add_file(
    files: &mut HashMap<String, Arc<Entry>>,
    shared: &Arc<DirShared>,
    path: PathBuf,
    relative: String,
) {
    let entry = Arc::new(Entry {
        api_version: String::new(),
        kind: relative.clone(),
        source: Source::File {
            path,
            relative: relative.clone(),
            dir: Arc::clone(shared),
        },
        deprecation: None,
        compiled: OnceLock::new(),
    });
    files.insert(relative.to_lowercase(), entry);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_case_insensitive_patterns_become_ecma() {
        assert_eq!(
            fold_case("^(?i)[a-z]([-a-z0-9]*[a-z0-9])?$").as_deref(),
            Some("^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$")
        );
        assert_eq!(
            fold_case("(?i)ab\\d[x]").as_deref(),
            Some("[aA][bB]\\d[xX]")
        );
        assert_eq!(fold_case("^[a-z]+$"), None);
    }
}

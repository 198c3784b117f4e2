//! `kustomize build` without a process, for the overlays this tool writes.
//!
//! A generated overlay is a `kustomization.yaml` that lists local resource files and adds the
//! tool's labels, nothing else. Building one is: read every document, add the labels to
//! `metadata.labels`, drop an empty `metadata.annotations`, order the objects as kustomize's
//! legacy order does and print each as kustomize prints it (`super::goyaml`). A fork and
//! exec of kustomize costs more than all of that together, and a fleet has thousands of
//! overlays.
//!
//! The subset is recognised strictly: [`build`] answers [`Unsupported`] for anything it is not sure
//! to print exactly as kustomize v5 does (another kustomization field, YAML anchors or tags,
//! scalars that YAML 1.1 and 1.2 read differently, floats outside a plain range, keys go-yaml
//! would not write as simple keys, `List` objects, duplicate objects…), and the caller then
//! runs the real binary. Differential tests against the pinned standalone kustomize keep the
//! two equal (`tests/inproc.rs`).

use std::collections::BTreeSet;
use std::path::Path;

use super::goyaml::{self, Json};
use crate::yaml::{self, Key, Node, Value};

/// Why an overlay is left to the kustomize binary.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unsupported(pub &'static str);

impl Unsupported {
    fn new(why: &'static str) -> Self {
        Self(why)
    }
}

impl std::fmt::Display for Unsupported {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0)
    }
}

trait OrUnsupported<T> {
    fn or_no(self, why: &'static str) -> Result<T, Unsupported>;
}

impl<T> OrUnsupported<T> for Option<T> {
    fn or_no(self, why: &'static str) -> Result<T, Unsupported> {
        self.ok_or(Unsupported(why))
    }
}

impl<T, E> OrUnsupported<T> for Result<T, E> {
    fn or_no(self, why: &'static str) -> Result<T, Unsupported> {
        self.map_err(|_| Unsupported(why))
    }
}

/// What the tool's own overlays may say, and nothing more.
#[derive(Debug, Default)]
struct Kustomization {
    /// `labels[].pairs`, in order (later pairs win, as in kustomize).
    labels: Vec<(String, String)>,
    /// `resources`: file names in the overlay folder.
    resources: Vec<String>,
}

/// Builds the overlay in `dir` as `kustomize build` would print it, or why the overlay
/// is outside the subset this module reproduces exactly.
pub fn build(dir: &Path, max_file_size: u64) -> Result<String, Unsupported> {
    let text = read(&dir.join("kustomization.yaml"), max_file_size)?;
    let kustomization = kustomization(&text)?;
    let mut objects = Vec::new();
    for resource in &kustomization.resources {
        let text = read(&dir.join(resource), max_file_size)?;
        if has_yaml_features_outside_json(&text) {
            return Err(Unsupported::new(
                "YAML anchors, aliases, tags, merge keys, tabs or complex keys",
            ));
        }
        for document in yaml::parse_documents(&text).or_no("YAML this reader rejects")? {
            let mut object = to_json(&text, &document)?;
            apply_metadata(&mut object, &kustomization.labels)?;
            objects.push((sort_key(&object)?, object));
        }
    }
    objects.sort_by(|a, b| a.0.cmp(&b.0));
    if objects.windows(2).any(|pair| pair[0].0 == pair[1].0) {
        // kustomize refuses duplicate objects with its own message: let it say so.
        return Err(Unsupported::new("two objects with the same identity"));
    }
    let mut out = String::new();
    for (i, (_, object)) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&goyaml::emit(object));
    }
    if out.is_empty() {
        return Err(Unsupported::new("no objects"));
    }
    Ok(out)
}

/// A regular file of the overlay, not larger than the limit.
fn read(path: &Path, max_file_size: u64) -> Result<String, Unsupported> {
    let meta = std::fs::symlink_metadata(path).or_no("a resource that cannot be read")?;
    if !meta.is_file() || meta.len() > max_file_size {
        return Err(Unsupported::new("not a regular file within the size limit"));
    }
    std::fs::read_to_string(path).or_no("a resource that is not UTF-8 text")
}

/// The kustomization, when it is exactly the shape the tool writes.
fn kustomization(text: &str) -> Result<Kustomization, Unsupported> {
    let mut documents = yaml::parse_documents(text).or_no("a kustomization this reader rejects")?;
    if documents.len() != 1 {
        return Err(Unsupported::new("not exactly one document"));
    }
    let root = documents.pop().or_no("an empty kustomization")?;
    let Value::Map(entries) = &root.value else {
        return Err(Unsupported::new("not a mapping"));
    };
    let mut out = Kustomization::default();
    for (key, value) in entries {
        match key.text.as_str() {
            "apiVersion" if value.as_str() == Some("kustomize.config.k8s.io/v1beta1") => {}
            "kind" if value.as_str() == Some("Kustomization") => {}
            "resources" => {
                let Value::Seq(items) = &value.value else {
                    return Err(Unsupported::new("`resources` is not a list"));
                };
                for item in items {
                    let file = item.as_str().or_no("a resource that is not a string")?;
                    // A plain file beside the kustomization: no folders, no remote bases.
                    if file.is_empty()
                        || file.contains(['/', '\\'])
                        || file.starts_with('.')
                        || !(file.ends_with(".yaml") || file.ends_with(".yml"))
                    {
                        return Err(Unsupported::new(
                            "a resource that is not a YAML file beside the kustomization",
                        ));
                    }
                    out.resources.push(file.to_string());
                }
            }
            "labels" => {
                let Value::Seq(items) = &value.value else {
                    return Err(Unsupported::new("`labels` is not a list"));
                };
                for item in items {
                    let Value::Map(fields) = &item.value else {
                        return Err(Unsupported::new("a `labels` entry that is not a mapping"));
                    };
                    for (field, setting) in fields {
                        match (field.text.as_str(), &setting.value) {
                            ("includeSelectors" | "includeTemplates", Value::Bool(false)) => {}
                            ("pairs", Value::Map(pairs)) => {
                                for (label, value) in pairs {
                                    let value = value
                                        .as_str()
                                        .or_no("a label value that is not a string")?;
                                    out.labels.push((label.text.clone(), value.to_string()));
                                }
                            }
                            _ => {
                                return Err(Unsupported::new(
                                    "a `labels` setting other than `pairs` and `include…: false`",
                                ));
                            }
                        }
                    }
                }
            }
            _ => {
                return Err(Unsupported::new(
                    "a field other than `resources` and `labels`",
                ));
            }
        }
    }
    if out.resources.is_empty() {
        return Err(Unsupported::new("no resources"));
    }
    Ok(out)
}

/// YAML that has no JSON meaning (anchors, aliases, tags, merge keys, directives, complex
/// keys, tabs) is left to kustomize. A small scanner finds their indicators outside quoted
/// strings, block scalars and comments; it errs on the side of the binary.
fn has_yaml_features_outside_json(text: &str) -> bool {
    let mut quote: Option<char> = None;
    // Lines indented deeper than this belong to a block scalar.
    let mut block_indent: Option<usize> = None;
    for line in text.lines() {
        let indent = line.len() - line.trim_start_matches(' ').len();
        let content = &line[indent..];
        if let Some(block) = block_indent {
            if content.is_empty() || indent > block {
                continue;
            }
            block_indent = None;
        }
        if quote.is_none() && (content.starts_with('%') || content.starts_with("? ")) {
            return true;
        }
        let mut previous = ' ';
        let mut token_start = true;
        let mut chars = content.chars().peekable();
        let mut rest_is_plain = false;
        while let Some(c) = chars.next() {
            match quote {
                Some('"') => match c {
                    '\\' => {
                        chars.next();
                    }
                    '"' => quote = None,
                    _ => {}
                },
                Some(_) => {
                    if c == '\'' {
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                        } else {
                            quote = None;
                        }
                    }
                }
                None => {
                    if c == '\t' {
                        return true;
                    }
                    if c == '#' && previous == ' ' {
                        break;
                    }
                    if token_start && !rest_is_plain {
                        match c {
                            '"' | '\'' => quote = Some(c),
                            '&' | '*' | '!' | '?' | '@' | '`' => return true,
                            '<' if chars.peek() == Some(&'<') => return true,
                            '|' | '>' => {
                                block_indent = Some(indent);
                                break;
                            }
                            ' ' | '-' | '[' | '{' => {}
                            _ => rest_is_plain = true,
                        }
                    }
                    // A new token starts after `: `, `- `, `, ` and flow brackets.
                    token_start = matches!(c, ' ' | '[' | '{' | ',')
                        && (c != ' ' || matches!(previous, ':' | '-' | ' ' | ',' | '[' | '{'));
                    if matches!(c, '[' | '{' | ',') || (c == ' ' && previous == ':') {
                        rest_is_plain = false;
                    }
                }
            }
            previous = c;
        }
    }
    quote.is_some()
}

/// The source text of a scalar node.
fn raw(text: &str, offset: usize, len: usize) -> Result<&str, Unsupported> {
    offset
        .checked_add(len)
        .and_then(|end| text.get(offset..end))
        .or_no("a node without its source text")
}

/// Whether the scalar at `offset` is plain: not quoted, and not the content of a block scalar
/// (whose span starts after its `|` or `>` header).
fn is_plain(text: &str, offset: usize) -> bool {
    if text[offset..].starts_with(['"', '\'', '|', '>']) {
        return false;
    }
    let before = text[..offset].trim_end_matches([' ', '\n']);
    let header = before
        .rsplit([' ', '\n'])
        .next()
        .unwrap_or("")
        .trim_end_matches(|c: char| c.is_ascii_digit() || c == '-' || c == '+');
    !(header.ends_with('|') || header.ends_with('>'))
}

/// The node as JSON, when go-yaml v3 (kustomize's reader) reads it as this parser did.
fn to_json(text: &str, node: &Node) -> Result<Json, Unsupported> {
    let span = node.span;
    Ok(match &node.value {
        Value::Map(entries) => {
            let mut seen = BTreeSet::new();
            let mut out = Vec::with_capacity(entries.len());
            for (key, value) in entries {
                let key = key_text(text, key)?;
                if !seen.insert(key.clone()) {
                    return Err(Unsupported::new("a duplicate key"));
                }
                out.push((key, to_json(text, value)?));
            }
            Json::Map(out)
        }
        Value::Seq(items) => Json::Seq(
            items
                .iter()
                .map(|item| to_json(text, item))
                .collect::<Result<_, _>>()?,
        ),
        Value::String(s) => {
            let source = raw(text, span.offset, span.len)?;
            if is_plain(text, span.offset) && (source != s || !v3_reads_as_string(source)) {
                return Err(Unsupported::new(
                    "a plain scalar that YAML 1.1 and 1.2 readers may take differently",
                ));
            }
            string(s)?
        }
        Value::Int(i) => {
            let source = raw(text, span.offset, span.len)?;
            let digits = source.strip_prefix('-').unwrap_or(source);
            let canonical = !digits.is_empty()
                && digits.bytes().all(|b| b.is_ascii_digit())
                && (digits == "0" || !digits.starts_with('0'));
            // The reader gives a whole float (`2.0`) as the integer the API server receives.
            #[allow(clippy::cast_precision_loss)]
            let whole_float = plain_decimals(source).is_ok()
                && i.unsigned_abs() < 9_000_000_000_000_000
                && source.parse::<f64>().ok() == Some(*i as f64);
            if !whole_float && (!canonical || source.parse::<i64>().ok() != Some(*i)) {
                return Err(Unsupported::new("an integer not written in plain decimal"));
            }
            Json::Int(*i)
        }
        Value::Float(f) => {
            plain_decimals(raw(text, span.offset, span.len)?)?;
            // Go's JSON encoder prints integral floats as integers, which go-yaml reads back
            // as integers.
            if f.fract() == 0.0 && f.abs() < 9.0e15 {
                #[allow(clippy::cast_possible_truncation)]
                Json::Int(*f as i64)
            } else if goyaml::representable_float(*f) {
                Json::Float(*f)
            } else {
                return Err(Unsupported::new("a float go-yaml prints in exponent form"));
            }
        }
        Value::Bool(b) => {
            let source = raw(text, span.offset, span.len)?;
            if !matches!(
                source,
                "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
            ) {
                return Err(Unsupported::new("a boolean not written `true` or `false`"));
            }
            Json::Bool(*b)
        }
        Value::Null => {
            let source = raw(text, span.offset, span.len).unwrap_or("");
            if !matches!(source, "" | "~" | "null" | "Null" | "NULL") {
                return Err(Unsupported::new("a null not written `null` or `~`"));
            }
            Json::Null
        }
    })
}

/// `source` is a float written as plain decimals (`-1.5`), which kustomize reads alike.
fn plain_decimals(source: &str) -> Result<(), Unsupported> {
    let body = source.strip_prefix('-').unwrap_or(source);
    let (whole, fraction) = body
        .split_once('.')
        .or_no("a float without a decimal point")?;
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if !digits(whole) || !digits(fraction) {
        return Err(Unsupported::new("a float not written as plain decimals"));
    }
    Ok(())
}

/// A string the emitter prints exactly as go-yaml v2 does.
fn string(s: &str) -> Result<Json, Unsupported> {
    let uncertain = s.contains(['\r', '\u{85}', '\u{2028}', '\u{2029}'])
        || goyaml::needs_keep_chomping(s)
        || goyaml::uncertain_timestamp(s)
        || long_radix_number(s);
    if uncertain {
        return Err(Unsupported::new(
            "a string go-yaml may print in a way not reproduced here",
        ));
    }
    Ok(Json::Str(s.to_string()))
}

/// `0x…`, `0o…`, `0b…` text too long for 64 bits: go-yaml's reading of it depends on
/// overflow rules not reproduced here.
fn long_radix_number(s: &str) -> bool {
    let unsigned = s.trim_start_matches(['+', '-']);
    unsigned.len() > 17
        && ["0x", "0X", "0o", "0O", "0b", "0B"]
            .iter()
            .any(|p| unsigned.starts_with(p))
}

/// A mapping key as a JSON key.
fn key_text(text: &str, key: &Key) -> Result<String, Unsupported> {
    raw(text, key.span.offset, 1)?;
    if is_plain(text, key.span.offset) {
        let whole = raw(text, key.span.offset, key.text.len())?;
        if whole != key.text || !v3_reads_as_string(&key.text) {
            return Err(Unsupported::new(
                "a plain key that is not a string to go-yaml",
            ));
        }
    }
    if key.text.len() > goyaml::MAX_SIMPLE_KEY || key.text.contains(['\n', '\r']) {
        return Err(Unsupported::new(
            "a key go-yaml would not write as a simple key",
        ));
    }
    Ok(key.text.clone())
}

/// go-yaml v3's `resolve` would leave this plain scalar a string.
fn v3_reads_as_string(plain: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "true", "True", "TRUE", "false", "False", "FALSE", ".nan",
        ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf",
        "-.INF", "<<",
    ];
    if SPECIAL.contains(&plain) {
        return false;
    }
    match plain.as_bytes()[0] {
        b'0'..=b'9' | b'+' | b'-' | b'.' => {
            let digits: String = plain.chars().filter(|&c| c != '_').collect();
            // Date-like text is a timestamp to go-yaml in some layouts: not guessed here.
            !(goyaml::maybe_timestamp(plain)
                || goyaml::is_go_int(&digits)
                || goyaml::is_yaml_style_float(&digits))
        }
        _ => true,
    }
}

/// kustomize's labels transformer (metadata only: the overlays never select on labels) and
/// its removal of an empty `metadata.annotations`.
fn apply_metadata(object: &mut Json, labels: &[(String, String)]) -> Result<(), Unsupported> {
    let Json::Map(fields) = object else {
        return Err(Unsupported::new("a document that is not a mapping"));
    };
    let metadata = fields
        .iter_mut()
        .find(|(k, _)| k == "metadata")
        .or_no("no `metadata`")?;
    let Json::Map(metadata) = &mut metadata.1 else {
        return Err(Unsupported::new("`metadata` is not a mapping"));
    };
    for field in ["labels", "annotations"] {
        if let Some((_, value)) = metadata.iter().find(|(k, _)| k == field) {
            let Json::Map(entries) = value else {
                return Err(Unsupported::new(
                    "labels or annotations that are not a mapping",
                ));
            };
            if entries.iter().any(|(_, v)| !matches!(v, Json::Str(_))) {
                return Err(Unsupported::new(
                    "a label or annotation value that is not a string",
                ));
            }
        }
    }
    if !labels.is_empty() {
        if !metadata.iter().any(|(k, _)| k == "labels") {
            metadata.push(("labels".into(), Json::Map(Vec::new())));
        }
        let Some((_, Json::Map(existing))) = metadata.iter_mut().find(|(k, _)| k == "labels")
        else {
            return Err(Unsupported::new("`metadata.labels` is not a mapping"));
        };
        for (label, value) in labels {
            match existing.iter_mut().find(|(k, _)| k == label) {
                Some(entry) => entry.1 = Json::Str(value.clone()),
                None => existing.push((label.clone(), Json::Str(value.clone()))),
            }
        }
    }
    metadata.retain(|(k, v)| !(k == "annotations" && matches!(v, Json::Map(m) if m.is_empty())));
    Ok(())
}

/// kustomize's legacy order (`SortOrderTransformer`): kinds in its fixed list first, then by
/// group, version and kind, then by namespace and name.
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    kind_order: i32,
    /// `legacyGVKSortString`, inverted for the Namespace special case.
    gvk: GvkKey,
    /// `namespace|name` with kustomize's placeholders.
    id: String,
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum GvkKey {
    /// Core Namespaces sort by descending GVK string against other Namespaces.
    Reversed(std::cmp::Reverse<String>),
    Normal(String),
}

const ORDER_FIRST: &[&str] = &[
    "Namespace",
    "ResourceQuota",
    "StorageClass",
    "CustomResourceDefinition",
    "ServiceAccount",
    "PodSecurityPolicy",
    "Role",
    "ClusterRole",
    "RoleBinding",
    "ClusterRoleBinding",
    "ConfigMap",
    "Secret",
    "Endpoints",
    "Service",
    "LimitRange",
    "PriorityClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Deployment",
    "StatefulSet",
    "CronJob",
    "PodDisruptionBudget",
];
const ORDER_LAST: &[&str] = &[
    "MutatingWebhookConfiguration",
    "ValidatingWebhookConfiguration",
];

fn sort_key(object: &Json) -> Result<SortKey, Unsupported> {
    let Json::Map(fields) = object else {
        return Err(Unsupported::new("a document that is not a mapping"));
    };
    let get = |map: &[(String, Json)], key: &str| -> Option<String> {
        map.iter()
            .find(|(k, _)| k == key)
            .and_then(|(_, v)| match v {
                Json::Str(s) if !s.is_empty() => Some(s.clone()),
                _ => None,
            })
    };
    let api_version = get(fields, "apiVersion").or_no("no `apiVersion` string")?;
    let kind = get(fields, "kind").or_no("no `kind` string")?;
    if kind.ends_with("List") {
        // kustomize flattens lists into their items.
        return Err(Unsupported::new("a List object (kustomize flattens lists)"));
    }
    let Some((_, Json::Map(metadata))) = fields.iter().find(|(k, _)| k == "metadata") else {
        return Err(Unsupported::new("no `metadata` mapping"));
    };
    let name = get(metadata, "name").or_no("no `metadata.name` string")?;
    let namespace = match metadata.iter().find(|(k, _)| k == "namespace") {
        None => None,
        Some(_) => Some(get(metadata, "namespace").or_no("an empty or non-string namespace")?),
    };
    let (group, version) = match api_version.rsplit_once('/') {
        Some((group, version)) => (group.to_string(), version.to_string()),
        None => (String::new(), api_version.clone()),
    };
    let position = |list: &[&str]| list.iter().position(|k| *k == kind);
    let kind_order = if let Some(i) = position(ORDER_FIRST) {
        i32::try_from(i).unwrap_or(0) - i32::try_from(ORDER_FIRST.len()).unwrap_or(0)
    } else if let Some(i) = position(ORDER_LAST) {
        1 + i32::try_from(i).unwrap_or(0)
    } else {
        0
    };
    let gvk_string = format!(
        "{}_{}_{}",
        if group.is_empty() { "~G" } else { &group },
        version,
        kind
    );
    // Among Namespaces, kustomize compares descending when either is in the core group; all
    // Namespaces the tool writes are core ones, and a non-core Namespace is left to it.
    let gvk = if kind == "Namespace" {
        if !group.is_empty() {
            return Err(Unsupported::new("a Namespace outside the core group"));
        }
        GvkKey::Reversed(std::cmp::Reverse(gvk_string))
    } else {
        GvkKey::Normal(gvk_string)
    };
    let id = format!("{}|{}", namespace.as_deref().unwrap_or("~X"), name);
    Ok(SortKey {
        kind_order,
        gvk,
        id,
    })
}

//! The one YAML reader: text in, a tree of [`Node`]s that remember where they stood.
//!
//! Every input — blueprints, user manifests, kustomize output — is parsed here exactly once.
//! Typed views (blueprint specs) are read from the tree by [`crate::blueprint::de`], and
//! validation rules walk the tree directly, so both can point at a file, line and column.
//!
//! Parsing uses `serde-saphyr`; plain scalars are then resolved as Kubernetes reads them
//! (`sigs.k8s.io/yaml`, go-yaml v2: `010` is 8, `yes` is `true`, `1e3` is 1000; see
//! `resolve`), for manifests, kustomize output, blueprints and `aiml.yaml` alike, so that a
//! value means the same wherever it is written. [`ambiguous_scalars`] names the plain values
//! other YAML readers take differently.

use std::fmt;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

pub mod pointer;
mod resolve;

pub use resolve::Ambiguity;
pub(crate) use resolve::yaml_style_float;

/// A position in a source text: 1-based line and column, plus the byte range of the node.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Span {
    /// 1-based line.
    pub line: u32,
    /// 1-based column (in characters).
    pub column: u32,
    /// Byte offset of the node's first character in the source text.
    pub offset: usize,
    /// Length in bytes of the node's scalar text (0 for collections).
    pub len: usize,
}

impl Span {
    fn from_location(location: &serde_saphyr::Location) -> Self {
        let span = location.span();
        Self {
            line: u32::try_from(location.line()).unwrap_or(u32::MAX),
            column: u32::try_from(location.column()).unwrap_or(u32::MAX),
            offset: usize::try_from(span.byte_offset().unwrap_or(0)).unwrap_or(usize::MAX),
            len: usize::try_from(span.byte_len().unwrap_or(0)).unwrap_or(0),
        }
    }
}

/// A YAML value with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    /// The value.
    pub value: Value,
    /// Where the value starts.
    pub span: Span,
}

/// A mapping key with its position.
#[derive(Clone, Debug, PartialEq)]
pub struct Key {
    /// The key text (non-string keys are kept as their text).
    pub text: String,
    /// Where the key starts.
    pub span: Span,
}

/// The value of a [`Node`]. Mappings keep their keys in source order.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// `null`, `~` or an empty value.
    Null,
    /// `true` / `false`.
    Bool(bool),
    /// A plain integer.
    Int(i64),
    /// A plain float.
    Float(f64),
    /// A string: quoted, block, or plain text that is not a number, boolean or null.
    String(String),
    /// A sequence.
    Seq(Vec<Node>),
    /// A mapping, in source order.
    Map(Vec<(Key, Node)>),
}

impl Value {
    /// A short noun for messages: "a string", "a mapping", …
    #[must_use]
    pub fn describe(&self) -> &'static str {
        match self {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Int(_) => "an integer",
            Value::Float(_) => "a number",
            Value::String(_) => "a string",
            Value::Seq(_) => "a sequence",
            Value::Map(_) => "a mapping",
        }
    }
}

impl Node {
    /// The value under `key` when this node is a mapping.
    #[must_use]
    pub fn get(&self, key: &str) -> Option<&Node> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.text == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// The key node for `key` when this node is a mapping (for pointing at a field name).
    #[must_use]
    pub fn key(&self, key: &str) -> Option<&Key> {
        match &self.value {
            Value::Map(entries) => entries.iter().find(|(k, _)| k.text == key).map(|(k, _)| k),
            _ => None,
        }
    }

    /// Follows a path of mapping keys.
    #[must_use]
    pub fn at(&self, path: &[&str]) -> Option<&Node> {
        path.iter().try_fold(self, |node, key| node.get(key))
    }

    /// The items of the sequence under `key` when this node is a mapping; none when the key
    /// is absent or holds something else.
    #[must_use]
    pub fn items(&self, key: &str) -> &[Node] {
        self.get(key).and_then(Node::as_seq).unwrap_or(&[])
    }

    /// The deepest node along a dotted path (`spec.tpu.topology`) that exists, and whether the
    /// whole path was found. Used to point diagnostics at the closest thing the user wrote.
    #[must_use]
    pub fn closest(&self, dotted: &str) -> (Span, bool) {
        let mut node = self;
        let mut span = self.span;
        for key in dotted.split('.').filter(|k| !k.is_empty()) {
            match node.get(key) {
                Some(next) => {
                    // Point at a scalar's value (what is wrong), or at a collection's key.
                    let is_collection = matches!(next.value, Value::Map(_) | Value::Seq(_));
                    span = match node.key(key) {
                        Some(k) if is_collection => k.span,
                        _ => next.span,
                    };
                    node = next;
                }
                None => return (span, false),
            }
        }
        (span, true)
    }

    /// The string, when this is a string.
    #[must_use]
    pub fn as_str(&self) -> Option<&str> {
        match &self.value {
            Value::String(s) => Some(s),
            _ => None,
        }
    }

    /// The integer, when this is an integer.
    #[must_use]
    pub fn as_i64(&self) -> Option<i64> {
        match self.value {
            Value::Int(i) => Some(i),
            _ => None,
        }
    }

    /// The items, when this is a sequence.
    #[must_use]
    pub fn as_seq(&self) -> Option<&[Node]> {
        match &self.value {
            Value::Seq(items) => Some(items),
            _ => None,
        }
    }

    /// The entries, when this is a mapping.
    #[must_use]
    pub fn as_map(&self) -> Option<&[(Key, Node)]> {
        match &self.value {
            Value::Map(entries) => Some(entries),
            _ => None,
        }
    }

    /// A whole number written either as an integer or as a string of digits, as Kubernetes
    /// accepts for resource quantities (`google.com/tpu: 4` or `"4"`). Quantities with units
    /// or fractions are not whole counts and give `None`.
    #[must_use]
    pub fn as_count(&self) -> Option<i64> {
        match &self.value {
            Value::Int(i) => Some(*i),
            Value::String(s) if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) => {
                s.parse().ok()
            }
            _ => None,
        }
    }
}

/// A document that could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ParseError {
    /// What the parser said, first line only.
    pub message: String,
    /// Where, when the parser knew.
    pub span: Option<Span>,
}

impl ParseError {
    /// Whether the stream broke a limit ([`crate::limits::MAX_DOCUMENTS`], nodes, nesting,
    /// aliases) rather than YAML's grammar: such a stream is refused whole, never read in parts.
    #[must_use]
    pub fn is_limit(&self) -> bool {
        self.message.ends_with(LIMIT_NOTE)
    }
}

/// Ends every message about a broken limit (see [`ParseError::is_limit`]).
const LIMIT_NOTE: &str = "(a limit that protects against hostile input)";

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

fn options() -> serde_saphyr::Options {
    // Files are bounded by size (`limits`), so documents and nodes may be many: real manifest
    // files hold thousands of documents. Alias expansion keeps the parser's default bounds.
    serde_saphyr::options! {
        // Plain scalars are resolved here afterwards, as Kubernetes reads them (`resolve`):
        // the parser's own inference only matters for tagged scalars.
        strict_booleans: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::PassThrough,
        with_snippet: false,
        budget: serde_saphyr::budget! {
            max_documents: crate::limits::MAX_DOCUMENTS,
            max_nodes: crate::limits::MAX_NODES,
            max_events: crate::limits::MAX_NODES.saturating_mul(2),
        },
    }
}

/// The node as JSON, as kubectl would send it (a float that JSON cannot hold is `null`).
#[must_use]
pub fn to_json(node: &Node) -> serde_json::Value {
    use serde_json::Value as Json;
    match &node.value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Int(i) => Json::from(*i),
        Value::Float(f) => serde_json::Number::from_f64(*f).map_or(Json::Null, Json::Number),
        Value::String(text) => Json::String(text.clone()),
        Value::Seq(items) => Json::Array(items.iter().map(to_json).collect()),
        Value::Map(entries) => Json::Object(
            entries
                .iter()
                .map(|(k, v)| (k.text.clone(), to_json(v)))
                .collect(),
        ),
    }
}

/// Parses every document of a YAML stream. Empty documents (`---` alone) are dropped.
pub fn parse_documents(text: &str) -> Result<Vec<Node>, ParseError> {
    let documents: Vec<Option<Spanned<Raw>>> =
        serde_saphyr::from_multiple_with_options(text, options()).map_err(|error| ParseError {
            message: clean_message(&error.to_string()),
            span: error.location().map(|l| Span::from_location(&l)),
        })?;
    documents
        .into_iter()
        .flatten()
        .map(|document| Node::read(text, document))
        .filter(|node| node.as_ref().map_or(true, |node| node.value != Value::Null))
        .collect()
}

/// Parses every document of a YAML stream, recovering from malformed documents: when the
/// stream does not parse as a whole, each document (split at `---` and `...` lines, which YAML
/// forbids inside content) is parsed on its own, so one broken document is reported and the
/// others are still read. Spans stay relative to the whole text.
#[must_use]
pub fn parse_documents_lenient(text: &str) -> (Vec<Node>, Vec<ParseError>) {
    let error = match parse_documents(text) {
        Ok(documents) => return (documents, Vec::new()),
        Err(error) => error,
    };
    // A stream over a limit is refused whole: reading its documents one by one would lift
    // the limit (and the cost) it exists for.
    if error.is_limit() {
        return (Vec::new(), vec![error]);
    }
    let chunks = document_chunks(text);
    if chunks.len() < 2 {
        return (Vec::new(), vec![error]);
    }
    if let Some(first_over) = chunks.get(crate::limits::MAX_DOCUMENTS) {
        return (Vec::new(), vec![too_many_documents(first_over)]);
    }
    let mut documents = Vec::new();
    let mut errors = Vec::new();
    for chunk in chunks {
        let part = &text[chunk.offset..chunk.end];
        match parse_documents(part) {
            Ok(parsed) => documents.extend(parsed.into_iter().map(|mut node| {
                node.shift(chunk.line, chunk.offset);
                node
            })),
            Err(mut error) => {
                if let Some(span) = &mut error.span {
                    span.shift(chunk.line, chunk.offset);
                }
                errors.push(error);
            }
        }
    }
    (documents, errors)
}

/// The error for a stream of more than [`crate::limits::MAX_DOCUMENTS`] documents, at the
/// first one over.
fn too_many_documents(first_over: &Chunk) -> ParseError {
    ParseError {
        message: format!(
            "more than {} documents in one file {LIMIT_NOTE}",
            crate::limits::MAX_DOCUMENTS
        ),
        span: Some(Span {
            line: first_over.line.saturating_add(1),
            column: 1,
            offset: first_over.offset,
            len: 0,
        }),
    }
}

/// Where one document of a stream starts (its `---` line, if any) and ends.
struct Chunk {
    /// Lines before it.
    line: u32,
    /// Byte offset of its first line.
    offset: usize,
    /// Byte offset just past its last line.
    end: usize,
}

/// Splits a stream at lines that start with `---` or `...` followed by nothing, a space or a
/// tab.
fn document_chunks(text: &str) -> Vec<Chunk> {
    let is_marker = |line: &str| {
        ["---", "..."].iter().any(|marker| {
            line.strip_prefix(marker)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t', '\r']))
        })
    };
    let mut chunks = Vec::new();
    let mut start = Chunk {
        line: 0,
        offset: 0,
        end: 0,
    };
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        let number = u32::try_from(index).unwrap_or(u32::MAX);
        if is_marker(line.trim_end_matches('\n')) && offset > start.offset {
            chunks.push(Chunk {
                end: offset,
                ..start
            });
            start = Chunk {
                line: number,
                offset,
                end: 0,
            };
        }
        offset += line.len();
    }
    chunks.push(Chunk {
        end: text.len(),
        ..start
    });
    chunks
}

impl Span {
    fn shift(&mut self, lines: u32, bytes: usize) {
        self.line = self.line.saturating_add(lines);
        self.offset = self.offset.saturating_add(bytes);
    }
}

impl Node {
    /// Moves every span of the tree by `lines` and `bytes` (a document parsed apart from
    /// the rest of its file).
    fn shift(&mut self, lines: u32, bytes: usize) {
        self.span.shift(lines, bytes);
        match &mut self.value {
            Value::Seq(items) => items.iter_mut().for_each(|item| item.shift(lines, bytes)),
            Value::Map(entries) => {
                for (key, value) in entries {
                    key.span.shift(lines, bytes);
                    value.shift(lines, bytes);
                }
            }
            _ => {}
        }
    }
}

/// serde-saphyr prefixes "error: line L column C: ", may append " at line L, column C" and a
/// snippet, and names its own types in some messages; we print our own location and say what
/// is wrong in YAML's words.
fn clean_message(message: &str) -> String {
    let first = message.lines().next().unwrap_or(message);
    let first = first.strip_prefix("error: ").unwrap_or(first);
    let first = match first.split_once(": ") {
        Some((head, rest)) if head.starts_with("line ") && head.contains(" column ") => rest,
        _ => first,
    };
    let first = match first.rfind(" at line ") {
        Some(index) if first[index..].contains(", column ") => &first[..index],
        _ => first,
    };
    if let Some(rest) = first.strip_prefix("duplicate mapping key: ") {
        let key = rest.split(", set ").next().unwrap_or(rest);
        return format!("duplicate key `{key}` in a mapping");
    }
    if first.contains("budget breached") {
        let what = if first.contains("Documents") {
            format!(
                "more than {} documents in one file",
                crate::limits::MAX_DOCUMENTS
            )
        } else if first.contains("Nodes") || first.contains("Events") {
            format!("more than {} values in one file", crate::limits::MAX_NODES)
        } else if first.contains("Depth") {
            "nesting deeper than 64 levels".to_string()
        } else if first.contains("Alias") || first.contains("Anchor") || first.contains("Recorded")
        {
            "aliases that expand to too much data".to_string()
        } else {
            "the file is too large or too complex to read".to_string()
        };
        return format!("{what} {LIMIT_NOTE}");
    }
    if first.contains("recursive references") {
        return "an alias refers to the value that contains it (a recursive alias)".to_string();
    }
    first.to_string()
}

/// The tree as serde-saphyr hands it over; converted to [`Node`] right away.
enum Raw {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    String(String),
    Seq(Vec<Spanned<Raw>>),
    Map(Vec<(Spanned<String>, Spanned<Raw>)>),
}

impl Node {
    /// Converts the parser's tree, resolving every plain scalar as Kubernetes does
    /// ([`resolve`]). `text` is what was parsed: a plain scalar is recognised by its source.
    fn read(text: &str, spanned: Spanned<Raw>) -> Result<Node, ParseError> {
        let span = Span::from_location(&spanned.referenced);
        // An alias resolves as the value it names, where that was written.
        let source = plain_source(text, &Span::from_location(&spanned.defined));
        let value = match spanned.value {
            Raw::Seq(items) => Value::Seq(
                items
                    .into_iter()
                    .map(|item| Node::read(text, item))
                    .collect::<Result<_, _>>()?,
            ),
            Raw::Map(entries) => {
                let mut out = Vec::with_capacity(entries.len());
                for (k, v) in entries {
                    let key_span = Span::from_location(&k.referenced);
                    let text_of_key = plain_source(text, &Span::from_location(&k.defined))
                        .and_then(|plain| resolve::json_key(resolve::resolve(plain)))
                        .unwrap_or(k.value);
                    out.push((
                        Key {
                            span: key_span,
                            text: text_of_key,
                        },
                        Node::read(text, v)?,
                    ));
                }
                Value::Map(out)
            }
            scalar => match source {
                Some(plain) => resolved(plain, span)?,
                None => match scalar {
                    Raw::Null => Value::Null,
                    Raw::Bool(b) => Value::Bool(b),
                    Raw::Int(i) => Value::Int(i),
                    Raw::Float(f) if f.is_finite() => number(f),
                    Raw::Float(_) => return Err(non_finite(spanned_text(text, span), span)),
                    Raw::String(s) => Value::String(s),
                    Raw::Seq(_) | Raw::Map(_) => unreachable!("collections are handled above"),
                },
            },
        };
        Ok(Node { value, span })
    }
}

/// The value of the plain scalar `plain` (see [`resolve`]).
fn resolved(plain: &str, span: Span) -> Result<Value, ParseError> {
    Ok(match resolve::resolve(plain) {
        resolve::Scalar::Null => Value::Null,
        resolve::Scalar::Bool(b) => Value::Bool(b),
        resolve::Scalar::Int(i) => Value::Int(i),
        #[allow(clippy::cast_precision_loss)]
        resolve::Scalar::Uint(u) => Value::Float(u as f64),
        resolve::Scalar::Float(f) => number(f),
        resolve::Scalar::NonFinite => return Err(non_finite(plain, span)),
        resolve::Scalar::Str => Value::String(plain.to_string()),
    })
}

/// A float as the API server receives it: Go's JSON encoder writes a whole float as an
/// integer (`1e3` arrives as `1000`), so whole values within 64 bits are integers.
fn number(f: f64) -> Value {
    // 2^63: the first float outside `i64`.
    const LIMIT: f64 = 9_223_372_036_854_775_808.0;
    #[allow(clippy::cast_possible_truncation)]
    if f.fract() == 0.0 && (-LIMIT..LIMIT).contains(&f) {
        Value::Int(f as i64)
    } else {
        Value::Float(f)
    }
}

/// `.inf` and `.nan` have no JSON form: `kubectl` refuses the whole file.
fn non_finite(written: &str, span: Span) -> ParseError {
    ParseError {
        message: format!(
            "`{written}` is not a finite number, which JSON cannot carry: kubectl refuses the whole file; quote it (`\"{written}\"`) if you meant text"
        ),
        span: Some(span),
    }
}

fn spanned_text(text: &str, span: Span) -> &str {
    span.offset
        .checked_add(span.len)
        .and_then(|end| text.get(span.offset..end))
        .unwrap_or("")
}

/// The source of the scalar at `span` when it is plain: not quoted, not a block scalar's
/// content, not tagged (`!!str 010` is the string it says), on one line.
fn plain_source<'t>(text: &'t str, span: &Span) -> Option<&'t str> {
    let source = text.get(span.offset..span.offset.checked_add(span.len)?)?;
    if source.starts_with(['"', '\'', '*', '&', '!', '|', '>']) || source.contains(['\n', '\r']) {
        return None;
    }
    // The properties and indicators before it: anchors (skipped), a tag or a block header.
    let mut before = &text[..span.offset];
    loop {
        before = before.trim_end_matches([' ', '\t', '\n', '\r']);
        let start = before
            .rfind([' ', '\t', '\n', '\r', '[', ']', '{', '}', ','])
            .map_or(0, |at| at + 1);
        match before.as_bytes().get(start) {
            Some(b'&') => before = &before[..start],
            Some(b'!' | b'|' | b'>') => return None,
            _ => return Some(source),
        }
    }
}

/// Plain scalars that YAML readers take differently (see `resolve::ambiguity`), in the
/// documents parsed from `text`, with the path of each (`spec.replicas`, `data.[key]`).
#[must_use]
pub fn ambiguous_scalars(text: &str, documents: &[Node]) -> Vec<(Span, String, Ambiguity)> {
    fn walk(text: &str, node: &Node, path: &mut String, out: &mut Vec<(Span, String, Ambiguity)>) {
        match &node.value {
            Value::Seq(items) => {
                for (index, item) in items.iter().enumerate() {
                    let length = path.len();
                    path.push_str(&format!("[{index}]"));
                    walk(text, item, path, out);
                    path.truncate(length);
                }
            }
            Value::Map(entries) => {
                for (key, value) in entries {
                    let length = path.len();
                    if !path.is_empty() {
                        path.push('.');
                    }
                    path.push_str(&key.text);
                    if let Some(found) = ambiguous_at(text, key.span) {
                        out.push((key.span, path.clone(), found));
                    }
                    walk(text, value, path, out);
                    path.truncate(length);
                }
            }
            _ => {
                if let Some(found) = ambiguous_at(text, node.span) {
                    out.push((node.span, path.clone(), found));
                }
            }
        }
    }
    let mut out = Vec::new();
    for document in documents {
        walk(text, document, &mut String::new(), &mut out);
    }
    out
}

fn ambiguous_at(text: &str, span: Span) -> Option<Ambiguity> {
    let source = spanned_text(text, span);
    // Cheap first: most scalars are words no reader takes for anything else.
    let found = resolve::ambiguity(source)?;
    plain_source(text, &span).map(|_| found)
}

impl<'de> Deserialize<'de> for Raw {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct RawVisitor;
        impl<'de> Visitor<'de> for RawVisitor {
            type Value = Raw;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("any YAML value")
            }
            fn visit_unit<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_none<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Raw, D::Error> {
                Raw::deserialize(d)
            }
            fn visit_bool<E>(self, v: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(v))
            }
            fn visit_i64<E>(self, v: i64) -> Result<Raw, E> {
                Ok(Raw::Int(v))
            }
            fn visit_u64<E>(self, v: u64) -> Result<Raw, E> {
                // Above `i64`: a number all the same (plain ones are resolved again later).
                #[allow(clippy::cast_precision_loss)]
                Ok(i64::try_from(v).map_or(Raw::Float(v as f64), Raw::Int))
            }
            fn visit_f64<E>(self, v: f64) -> Result<Raw, E> {
                Ok(Raw::Float(v))
            }
            fn visit_str<E>(self, v: &str) -> Result<Raw, E> {
                Ok(Raw::String(v.to_string()))
            }
            fn visit_string<E>(self, v: String) -> Result<Raw, E> {
                Ok(Raw::String(v))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Raw::Seq(items))
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
                let mut entries = Vec::new();
                while let Some(key) = map.next_key::<Spanned<String>>()? {
                    entries.push((key, map.next_value()?));
                }
                Ok(Raw::Map(entries))
            }
        }
        deserializer.deserialize_any(RawVisitor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_documents_with_positions() {
        let docs = parse_documents("a: 1\nb:\n  c: \"2\"\n---\n---\nkind: X\n").unwrap();
        assert_eq!(docs.len(), 2);
        let c = docs[0].at(&["b", "c"]).unwrap();
        assert_eq!(c.value, Value::String("2".into()));
        assert_eq!((c.span.line, c.span.column), (3, 6));
        assert_eq!(docs[1].get("kind").unwrap().span.line, 6);
    }

    #[test]
    fn reads_plain_scalars_as_kubernetes_does() {
        let text = "a: yes\nb: true\nc: \"yes\"\nd: 010\ne: '010'\nf: !!str 010\ng: &x 0x1F\nh: *x\ni: |-\n  010\nj: [1e3, 0b101, 1_000, 09]\nk: 99999999999999999999\nl: 1e400\n010: key\non: key\n";
        let docs = parse_documents(text).unwrap();
        let value = |k: &str| docs[0].get(k).unwrap().value.clone();
        assert_eq!(value("a"), Value::Bool(true));
        assert_eq!(value("b"), Value::Bool(true));
        assert_eq!(value("c"), Value::String("yes".into()));
        assert_eq!(value("d"), Value::Int(8));
        assert_eq!(value("e"), Value::String("010".into()));
        assert_eq!(value("f"), Value::String("010".into()));
        assert_eq!(value("g"), Value::Int(31));
        assert_eq!(
            value("h"),
            Value::Int(31),
            "an alias reads as what it names"
        );
        assert_eq!(value("i"), Value::String("010".into()));
        let list: Vec<Value> = docs[0]
            .get("j")
            .unwrap()
            .as_seq()
            .unwrap()
            .iter()
            .map(|n| n.value.clone())
            .collect();
        assert_eq!(
            list,
            [
                Value::Int(1000),
                Value::Int(5),
                Value::Int(1000),
                Value::Int(9)
            ]
        );
        assert_eq!(value("k"), Value::Float(1e20));
        assert_eq!(value("l"), Value::String("1e400".into()));
        assert_eq!(value("8"), Value::String("key".into()), "keys as JSON keys");
        assert_eq!(value("true"), Value::String("key".into()));
        for infinite in ["a: .inf\n", "a: -.Inf\n", "a: .nan\n", "a: !!float .inf\n"] {
            let error = parse_documents(infinite).unwrap_err();
            assert!(
                error.message.contains("kubectl refuses"),
                "{infinite}: {error:?}"
            );
            assert_eq!(error.span.map(|s| s.line), Some(1));
        }
    }

    #[test]
    fn finds_values_readers_take_differently() {
        let text = "spec:\n  replicas: 010\n  on: \"x\"\n  quoted: \"010\"\n  tagged: !!str yes\n  list: [8, yes]\n";
        let docs = parse_documents(text).unwrap();
        let found: Vec<(u32, String)> = ambiguous_scalars(text, &docs)
            .into_iter()
            .map(|(span, path, _)| (span.line, path))
            .collect();
        assert_eq!(
            found,
            [
                (2, "spec.replicas".to_string()),
                (3, "spec.true".to_string()),
                (6, "spec.list[1]".to_string())
            ]
        );
    }

    #[test]
    fn reports_where_malformed_yaml_breaks() {
        let error = parse_documents("a: 1\nb: [1, 2\n").unwrap_err();
        assert!(error.span.is_some(), "{error:?}");
        assert!(!error.message.starts_with("error:"), "{}", error.message);
    }

    #[test]
    fn a_broken_document_does_not_hide_the_others() {
        let text = "a: 1\n---\nb: [1, 2\n---\nc:\n  d: 3\n...\n";
        let (documents, errors) = parse_documents_lenient(text);
        assert_eq!(documents.len(), 2);
        assert_eq!(errors.len(), 1);
        let d = documents[1].at(&["c", "d"]).unwrap();
        assert_eq!((d.span.line, d.span.column), (6, 6));
        assert_eq!(&text[d.span.offset..d.span.offset + d.span.len], "3");
        assert!(errors[0].span.unwrap().line >= 3, "{:?}", errors[0]);
        // A file that parses is read in one go, markers inside block scalars included.
        let block = "a: |\n  ---\n  x\n";
        assert_eq!(parse_documents_lenient(block).0.len(), 1);
    }

    #[test]
    fn messages_speak_yaml_not_parser_internals() {
        let duplicate = parse_documents("a: 1\na: 2\n").unwrap_err();
        assert_eq!(duplicate.message, "duplicate key `a` in a mapping");
        let recursive = parse_documents("a: &a [*a]\n").unwrap_err();
        assert!(
            recursive.message.contains("recursive alias"),
            "{}",
            recursive.message
        );
        let documents: String = (0..1_100)
            .map(|i| format!("---\nkind: ConfigMap\nmetadata: {{name: c{i}}}\n"))
            .collect();
        assert_eq!(parse_documents(&documents).unwrap().len(), 1_100);
        for message in [duplicate.message, recursive.message] {
            assert!(
                !message.contains("Policy") && !message.contains('{'),
                "{message}"
            );
        }
    }

    #[test]
    fn a_stream_over_the_document_limit_is_never_read_in_parts() {
        let over = crate::limits::MAX_DOCUMENTS + 1;
        // Over the limit: refused whole, not recovered document by document.
        let (documents, errors) = parse_documents_lenient(&"---\n{}\n".repeat(over));
        assert!(documents.is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].is_limit(), "{}", errors[0].message);
        // A malformed document among them does not open the way around the limit.
        let text = format!("a: [\n{}", "---\nb: 1\n".repeat(over));
        let (documents, errors) = parse_documents_lenient(&text);
        assert!(documents.is_empty());
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].is_limit(), "{}", errors[0].message);
        // At the limit, a broken document is still reported alone.
        let text = format!("a: [\n{}", "---\nb: 1\n".repeat(1_000));
        let (documents, errors) = parse_documents_lenient(&text);
        assert_eq!((documents.len(), errors.len()), (1_000, 1));
        assert!(!errors[0].is_limit());
    }

    #[test]
    fn alias_expansion_stays_bounded() {
        // A billion laughs: ten levels of ten aliases each.
        let mut text = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n");
        for level in 1..10 {
            let previous = format!("*a{}", level - 1);
            let items = [previous.as_str(); 10].join(", ");
            text.push_str(&format!("a{level}: &a{level} [{items}]\n"));
        }
        let error = parse_documents(&text).unwrap_err();
        assert!(error.message.contains("limit"), "{}", error.message);
    }

    #[test]
    fn counts_accept_integers_and_digit_strings_only() {
        let docs = parse_documents("a: 4\nb: \"4\"\nc: 500m\nd: 1.5\n").unwrap();
        let count = |k| docs[0].get(k).unwrap().as_count();
        assert_eq!(
            (count("a"), count("b"), count("c"), count("d")),
            (Some(4), Some(4), None, None)
        );
    }

    #[test]
    fn closest_points_at_deepest_existing_key() {
        let docs = parse_documents("spec:\n  tpu:\n    type: v4-32\n").unwrap();
        let (span, found) = docs[0].closest("spec.tpu.topology");
        assert!(!found);
        assert_eq!(span.line, 2);
        let (span, found) = docs[0].closest("spec.tpu.type");
        assert!(found);
        assert_eq!((span.line, span.column), (3, 11), "points at the value");
    }
}

//! Placing output values: jrsonnet's values carry no positions, so each field is placed by a
//! conservative search of the evaluated texts — a line only when exactly one definition or
//! literal can have produced it, else the file (line 0) and the field path. Lines in
//! libraries are numbered past the blueprint file and turned back by [`relocate`].

use std::collections::BTreeMap;
use std::ops::Not as _;

use super::raw::Raw;
use crate::diagnostic::Diagnostic;
use crate::yaml::{Key, Node, Span, Value};

/// Where fields are defined in the evaluated files, for placing output values.
///
/// A value placed in a library gets a line past the end of the blueprint file: the libraries
/// follow it, in path order, as if appended ([`relocate`] turns such a line back into the
/// library's path and line).
pub(super) struct Sources<'a> {
    /// Every evaluated text, the blueprint file's first: (is it the blueprint file, the line
    /// its first line is numbered after, text).
    texts: Vec<(bool, u32, &'a str)>,
    /// Field definitions by key.
    definitions: BTreeMap<String, Vec<Definition<'a>>>,
}

#[derive(Clone, Copy, Debug)]
struct Definition<'a> {
    main: bool,
    /// Line, numbered as in [`Sources`] (past the blueprint file's end in a library).
    line: u32,
    /// Byte offset of the line in its file.
    line_offset: usize,
    /// Byte offset of the key in the line.
    byte: usize,
    /// The line.
    text: &'a str,
}

impl<'a> Sources<'a> {
    pub(super) fn new(main: &'a str, imports: &'a BTreeMap<String, String>) -> Self {
        let mut definitions: BTreeMap<String, Vec<Definition<'a>>> = BTreeMap::new();
        let mut texts = vec![(true, 0, main)];
        let mut base = line_count(main);
        for text in imports.values() {
            texts.push((false, base, text.as_str()));
            base = base.saturating_add(line_count(text));
        }
        for &(is_main, base, text) in &texts {
            let mut offset = 0;
            for (index, line) in text.split_inclusive('\n').enumerate() {
                for (key, byte) in field_definitions(line) {
                    definitions.entry(key).or_default().push(Definition {
                        main: is_main,
                        line: base.saturating_add(u32::try_from(index + 1).unwrap_or(u32::MAX)),
                        line_offset: offset,
                        byte,
                        text: line,
                    });
                }
                offset += line.len();
            }
        }
        Self { texts, definitions }
    }

    /// The node of `raw`, produced under `key` (`None`: a list item or a document), whose
    /// parent was placed at `parent`. `library`: whether it may be placed in a library; not
    /// under the envelope (`apiVersion`, `kind`, `metadata`), where a blueprint is named by
    /// the line of its own file.
    pub(super) fn node(
        &self,
        raw: Raw,
        key: Option<&str>,
        parent: Span,
        library: Option<bool>,
    ) -> Node {
        let placed = key.and_then(|key| locate(self, key, &raw, library.unwrap_or(false)));
        let span = match (key, placed) {
            (_, Some(span)) => span,
            // A list item is where its list was written.
            (None, None) => parent,
            (Some(_), None) => Span::default(),
        };
        let value = match raw {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Number(n) => number(n),
            Raw::String(s) => Value::String(s),
            Raw::Array(items) => Value::Seq(
                items
                    .into_iter()
                    .map(|item| self.node(item, None, span, library.or(Some(true))))
                    .collect(),
            ),
            Raw::Object(entries) => Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| {
                        // A document's fields decide for what is under them.
                        let library = library.or(Some(!matches!(
                            k.as_str(),
                            "apiVersion" | "kind" | "metadata"
                        )));
                        let node = self.node(v, Some(&k), span, library);
                        let key_span = key_span(self, &k, node.span);
                        (
                            Key {
                                text: k,
                                span: key_span,
                            },
                            node,
                        )
                    })
                    .collect(),
            ),
        };
        Node { value, span }
    }
}

/// A key's span: the definition's key when the value was placed on its line.
fn key_span(sources: &Sources<'_>, key: &str, value: Span) -> Span {
    if value.line == 0 {
        return value;
    }
    sources
        .definitions
        .get(key)
        .and_then(|defs| defs.iter().find(|d| d.line == value.line))
        .map_or(value, |d| Span {
            line: d.line,
            column: u32::try_from(d.text[..d.byte].chars().count() + 1).unwrap_or(0),
            // Offsets index the blueprint file's text only.
            offset: if d.main { d.line_offset + d.byte } else { 0 },
            len: 0,
        })
}

/// Lines of `text` as [`Sources`] numbers them (a last line without a newline counts).
fn line_count(text: &str) -> u32 {
    u32::try_from(text.split_inclusive('\n').count()).unwrap_or(u32::MAX)
}

/// A library as [`Sources`] numbered its lines: (path, the line its first line is numbered
/// after, its lines).
type LibraryLines = (String, u32, u32);

/// For each evaluated Jsonnet file (as shown), its libraries. Read by [`relocate`].
static LIBRARY_LINES: std::sync::Mutex<BTreeMap<String, Vec<LibraryLines>>> =
    std::sync::Mutex::new(BTreeMap::new());

pub(super) fn remember_library_lines(
    display: &str,
    text: &str,
    imports: &BTreeMap<String, String>,
) {
    let mut base = line_count(text);
    let mut lines = Vec::new();
    for (path, import) in imports {
        lines.push((path.clone(), base, line_count(import)));
        base = base.saturating_add(line_count(import));
    }
    LIBRARY_LINES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(display.to_string(), lines);
}

/// Findings about values a Jsonnet library wrote, moved from the blueprint file (where their
/// nodes carry lines past its end) to the library's path and line. Every finding passes
/// through here before it is shown.
#[must_use]
pub fn relocate(diagnostics: &[Diagnostic]) -> std::borrow::Cow<'_, [Diagnostic]> {
    let libraries = LIBRARY_LINES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let place = |d: &Diagnostic| {
        libraries.get(&d.file).and_then(|lines| {
            lines
                .iter()
                .find(|(_, base, count)| d.line > *base && d.line - base <= *count)
                .map(|(path, base, _)| (path.clone(), d.line - base))
        })
    };
    if !diagnostics.iter().any(|d| place(d).is_some()) {
        return std::borrow::Cow::Borrowed(diagnostics);
    }
    let mut moved = diagnostics.to_vec();
    for d in &mut moved {
        if let Some((path, line)) = place(d) {
            d.file = path;
            d.line = line;
        }
    }
    std::borrow::Cow::Owned(moved)
}

/// Jsonnet numbers are doubles; whole ones are integers in YAML terms.
fn number(n: f64) -> Value {
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::Int(n as i64)
    } else {
        Value::Float(n)
    }
}

/// The literal text a scalar is most likely written as, to tell definitions apart.
fn literals(raw: &Raw) -> Vec<String> {
    match raw {
        Raw::String(s) if !s.contains(['\n', '\'', '"', '\\']) => {
            vec![format!("'{s}'"), format!("\"{s}\"")]
        }
        Raw::Number(n) => vec![format!("{n}")],
        Raw::Bool(b) => vec![b.to_string()],
        _ => Vec::new(),
    }
}

/// Where the field `key` holding `raw` was written, when exactly one definition in the
/// evaluated files can have produced it: in the blueprint file, or (when `library`) in a
/// library whose line holds the value's literal (a library's field that takes its value from
/// an argument was not written there). A definition is `key:` (`::`, `:::`, `+:`), `'key':`,
/// `"key":` or `key =` (a local or a named argument of the same name). With several, a scalar
/// keeps those whose line holds its literal value. Anything else is not placed: a wrong line
/// would mislead more than none.
pub(super) fn locate(sources: &Sources<'_>, key: &str, raw: &Raw, library: bool) -> Option<Span> {
    if let Some(span) = unique_string(sources, raw, library) {
        return Some(span);
    }
    let definitions = sources.definitions.get(key)?;
    let literals = literals(raw);
    let candidates: Vec<&Definition<'_>> = if definitions.len() == 1 {
        definitions.iter().collect()
    } else if literals.is_empty() {
        return None;
    } else {
        definitions
            .iter()
            .filter(|d| literals.iter().any(|l| find_token(d.text, l, 0).is_some()))
            .collect()
    };
    let [only] = candidates.as_slice() else {
        return None;
    };
    // Point at the literal when it is on the line (what is wrong), else at the key.
    let literal = literals.iter().find_map(|l| {
        only.text[only.byte..]
            .find(l.as_str())
            .map(|b| b + only.byte)
    });
    if !(only.main || library && literal.is_some()) {
        return None;
    }
    let byte = literal.unwrap_or(only.byte);
    Some(Span {
        line: only.line,
        column: u32::try_from(only.text[..byte].chars().count() + 1).unwrap_or(0),
        offset: if only.main {
            only.line_offset + byte
        } else {
            0
        },
        len: 0,
    })
}

/// `literal` in `text` from byte `from` on, standing alone (not inside a longer word or
/// number).
fn find_token(text: &str, literal: &str, from: usize) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    text.get(from..)?
        .match_indices(literal)
        .map(|(i, _)| i + from)
        .find(|&i| {
            word(text[..i].chars().next_back()).not()
                && word(text[i + literal.len()..].chars().next()).not()
        })
}

/// A string value whose quoted literal is written exactly once in all evaluated files, in the
/// blueprint file or (when `library`) a library: it was written there (a call's argument, a
/// table of the fleet, a library's constant).
fn unique_string(sources: &Sources<'_>, raw: &Raw, library: bool) -> Option<Span> {
    let Raw::String(s) = raw else {
        return None;
    };
    if s.chars().count() < 2 {
        return None;
    }
    let mut found = None;
    let mut count = 0;
    for literal in literals(raw) {
        for &(main, base, text) in &sources.texts {
            for (offset, _) in text.match_indices(literal.as_str()) {
                count += 1;
                found = (main || library).then_some((main, base, text, offset));
            }
        }
    }
    let (main, base, text, offset) = found.filter(|_| count == 1)?;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(0);
    Some(Span {
        line: base.saturating_add(line),
        column: u32::try_from(text[line_start..offset].chars().count() + 1).unwrap_or(0),
        offset: if main { offset } else { 0 },
        len: 0,
    })
}

/// Field definitions on one line of Jsonnet: (key, byte offset of the key).
pub(super) fn field_definitions(line: &str) -> Vec<(String, usize)> {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//")
        || trimmed.starts_with('#')
        || trimmed.starts_with('*')
        || trimmed.starts_with("/*")
    {
        return Vec::new();
    }
    let bytes = line.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (key, start, end) = if b == b'\'' || b == b'"' {
            // A quoted key: the text up to the same quote.
            let Some(close) = line[i + 1..].find(b as char) else {
                break;
            };
            let end = i + 1 + close;
            (line[i + 1..end].to_string(), i, end + 1)
        } else if is_ident(b) && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b'.')) {
            let mut end = i;
            while end < bytes.len() && is_ident(bytes[end]) {
                end += 1;
            }
            (line[i..end].to_string(), i, end)
        } else {
            i += 1;
            continue;
        };
        let rest = line[end..].trim_start();
        let defines = rest.starts_with("+:")
            || (rest.starts_with(':') && !rest.starts_with(":="))
            || (rest.starts_with('=') && !rest.starts_with("=="));
        if defines && !key.is_empty() {
            found.push((key, start));
        }
        i = end.max(i + 1);
    }
    found
}

//! The words of findings: nouns for JSON types and YAML values, lists cut short, values
//! quoted as written.

use std::fmt::Write as _;

use jsonschema::types::JsonType;
use serde_json::Value as JsonValue;

use super::MAX_LISTED;
use crate::yaml::{Node, Value};

pub(super) fn type_noun(t: JsonType) -> &'static str {
    match t {
        JsonType::Array => "a list",
        JsonType::Boolean => "a boolean",
        JsonType::Integer => "an integer",
        JsonType::Null => "null",
        JsonType::Number => "a number",
        JsonType::Object => "a mapping",
        JsonType::String => "a string",
    }
}

/// The boolean of a YAML 1.1 word (`on`, `no`) kubectl reads where it was written plain.
pub(super) fn yaml_1_1_word(node: &Node, written: &str) -> Option<bool> {
    match node.value {
        Value::Bool(b)
            if !matches!(
                written,
                "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
            ) =>
        {
            Some(b)
        }
        _ => None,
    }
}

pub(super) fn found_noun(node: &Node) -> &'static str {
    match &node.value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Int(_) => "an integer",
        Value::Float(_) => "a number",
        Value::String(_) => "a string",
        Value::Seq(_) => "a list",
        Value::Map(_) => "a mapping",
    }
}

/// A JSON scalar as plain text (`"a"` → `a`).
pub(super) fn scalar_text(value: &JsonValue) -> String {
    match value {
        JsonValue::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `` `a`, `b` or `c` `` (with `last` before the final item; at most [`MAX_LISTED`] items).
pub(super) fn code_list(items: &[&str], last: &str) -> String {
    let shown: Vec<String> = items
        .iter()
        .take(MAX_LISTED)
        .map(|i| format!("`{i}`"))
        .collect();
    let mut text = match shown.as_slice() {
        [] => String::new(),
        [only] => only.clone(),
        [init @ .., tail] if items.len() <= MAX_LISTED => {
            format!("{}{last}{tail}", init.join(", "))
        }
        all => all.join(", "),
    };
    if items.len() > MAX_LISTED {
        let _ = write!(text, ", … ({} in all)", items.len());
    }
    text
}

/// `` `a`, `b` `` of strings.
pub(super) fn list(items: &[String], last: &str) -> String {
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    code_list(&refs, last)
}

pub(super) fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `text` cut to `max` characters, with `…`.
pub(super) fn cut(text: &str, max: usize) -> String {
    let first_line = text.lines().next().unwrap_or("");
    if text.chars().count() <= max && first_line.len() == text.trim_end().len() {
        return text.trim_end().to_owned();
    }
    let mut out: String = first_line.chars().take(max).collect();
    out.push('…');
    out
}

//! What crosses from the evaluator to the rest of the tool, as plain data: the value of a file
//! ([`Raw`], without positions) and a failed evaluation ([`Failure`]), both serializable so
//! that a worker process can send them to its parent; and the reading of a value as one
//! blueprint, a list of them or an object of them.

use std::path::Path;

use super::JSONNET_EVALUATION;
use crate::diagnostic::Diagnostic;

/// The value of an evaluated file, without positions: sent across threads.
#[derive(Debug)]
pub(super) enum Raw {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Raw>),
    Object(Vec<(String, Raw)>),
}

// JSON between a worker and its parent; an object keeps its keys' order.
impl serde::Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Bool(b) => serializer.serialize_bool(*b),
            Self::Number(n) => serializer.serialize_f64(*n),
            Self::String(s) => serializer.serialize_str(s),
            Self::Array(items) => serializer.collect_seq(items),
            Self::Object(entries) => serializer.collect_map(entries.iter().map(|(k, v)| (k, v))),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Raw;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(b))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Raw, E> {
                Ok(Raw::Number(n))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_i64<E>(self, n: i64) -> Result<Raw, E> {
                Ok(Raw::Number(n as f64))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_u64<E>(self, n: u64) -> Result<Raw, E> {
                Ok(Raw::Number(n as f64))
            }
            fn visit_str<E>(self, s: &str) -> Result<Raw, E> {
                Ok(Raw::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Raw, E> {
                Ok(Raw::String(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Raw::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Raw::Object(entries))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Splits an output into blueprint documents and their labels.
/// How many documents [`split`] makes of `raw`.
pub(super) fn documents_in(raw: &Raw) -> usize {
    match raw {
        Raw::Object(entries) if !is_blueprint(entries) => entries.len(),
        Raw::Array(items) => items.len(),
        _ => 1,
    }
}

/// Whether an object's keys make it one blueprint rather than an object of blueprints.
fn is_blueprint(entries: &[(String, Raw)]) -> bool {
    entries
        .iter()
        .any(|(k, _)| k == "apiVersion" || k == "kind" || k == "spec")
}

pub(super) fn split(raw: Raw) -> Result<(Vec<Raw>, Vec<String>), (String, String)> {
    match raw {
        Raw::Object(entries) if is_blueprint(&entries) => {
            Ok((vec![Raw::Object(entries)], vec![String::new()]))
        }
        Raw::Object(entries) => Ok(entries.into_iter().map(|(k, v)| (v, k)).unzip()),
        Raw::Array(items) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (v, format!("[{i}]")))
            .unzip()),
        other => Err((
            format!(
                "a Jsonnet blueprint file must evaluate to a blueprint, not {}",
                describe(&other)
            ),
            String::new(),
        )),
    }
}

fn describe(raw: &Raw) -> &'static str {
    match raw {
        Raw::Null => "null",
        Raw::Bool(_) => "a boolean",
        Raw::Number(_) => "a number",
        Raw::String(_) => "a string",
        Raw::Array(_) => "an array",
        Raw::Object(_) => "an object",
    }
}

/// A failed evaluation, as plain data.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
pub(super) struct Failure {
    pub(super) message: String,
    /// Innermost first: (file, line, column, description).
    pub(super) frames: Vec<(String, u32, u32, String)>,
    /// Output path of a value that could not be converted.
    pub(super) field: Option<String>,
    pub(super) fix: Option<String>,
}

impl Failure {
    pub(super) fn plain(message: String, field: &str, fix: Option<&str>) -> Self {
        Self {
            message,
            frames: Vec::new(),
            field: (!field.is_empty()).then(|| field.to_string()),
            fix: fix.map(str::to_string),
        }
    }

    /// The same failure, for the output value at `field`.
    pub(super) fn at(mut self, field: &str) -> Self {
        if self.field.is_none() && !field.is_empty() {
            self.field = Some(field.to_string());
        }
        self
    }

    pub(super) fn diagnostic(self, display: &str) -> Diagnostic {
        // The first frame in a repository file is where the error arose; the rest is the stack.
        let located = self.frames.iter().find(|(file, line, ..)| {
            *line > 0 && !file.starts_with('<') && Path::new(file).is_relative()
        });
        // The resolver's refusals are ours, not the program's runtime errors.
        let text = self.message.trim_end();
        let text = text
            .strip_prefix("runtime error: ")
            .filter(|rest| rest.starts_with("import of "))
            .unwrap_or(text);
        let mut message = format!("jsonnet: {text}");
        // The stack, innermost first; a frame repeated (recursion) is shown once with a count.
        let mut shown = 0;
        let mut frames = self.frames.iter().peekable();
        while let Some(frame) = frames.next() {
            let mut repeated = 1;
            while frames.peek() == Some(&frame) {
                frames.next();
                repeated += 1;
            }
            if shown == 4 {
                let rest = repeated + frames.count();
                message.push_str(&format!("\n  … {rest} more frames"));
                break;
            }
            shown += 1;
            let (file, line, column, description) = frame;
            let mut text = if *line > 0 {
                format!("\n  at {file}:{line}:{column}")
            } else {
                "\n  in".to_string()
            };
            if !description.is_empty() {
                text.push_str(&format!(" {description}"));
            }
            if repeated > 1 {
                text.push_str(&format!(" (×{repeated})"));
            }
            message.push_str(&text);
        }
        // Which part of the output was being produced: a line of the stack when the failure
        // has a place of its own, else the place itself.
        let mut field = self.field;
        if let (Some(_), Some(output)) = (located, &field) {
            message.push_str(&format!("\n  producing `{output}` of the output"));
            field = None;
        }
        let mut d = Diagnostic::error(JSONNET_EVALUATION, message);
        match located {
            Some((file, line, column, _)) => {
                d.file.clone_from(file);
                d.line = *line;
                d.column = *column;
            }
            None => d.file = display.to_string(),
        }
        d.field = field;
        d.fix = self.fix;
        d
    }
}

//! Strict typed reading of a [`Node`] tree through serde.
//!
//! Blueprint specs are plain `#[derive(Deserialize)]` structs; this deserializer reads them
//! from the already-parsed tree so that every error knows its exact span and dotted path, and
//! so that types are never coerced: `"2"` is not a number, `2` is not a string, `yes` is not a
//! boolean. Unknown fields are errors that name the closest valid field.

use std::fmt;

use serde::de::{self, DeserializeOwned, IntoDeserializer, Visitor};

use crate::yaml::{Key, Node, Span, Value};

/// Why a node could not be read as the expected type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeError {
    /// One sentence: what is wrong.
    pub message: String,
    /// Where, once known (filled in by the innermost node that saw the error).
    pub span: Option<Span>,
    /// Dotted path of the offending field, e.g. `spec.tpu.topolgy`.
    pub path: String,
    /// What was found, for the diagnostic's `found` line.
    pub found: Option<String>,
    /// What was expected.
    pub expected: Option<String>,
    /// A suggested fix.
    pub fix: Option<String>,
}

impl DeError {
    fn new(message: String) -> Self {
        Self {
            message,
            span: None,
            path: String::new(),
            found: None,
            expected: None,
            fix: None,
        }
    }

    fn locate(mut self, span: Span, path: &str) -> Self {
        if self.span.is_none() {
            self.span = Some(span);
            self.path = path.to_string();
        }
        self
    }
}

impl fmt::Display for DeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for DeError {}

impl de::Error for DeError {
    fn custom<T: fmt::Display>(msg: T) -> Self {
        Self::new(msg.to_string())
    }

    fn invalid_type(unexpected: de::Unexpected<'_>, expected: &dyn de::Expected) -> Self {
        let mut error = Self::new(format!("expected {expected}, found {unexpected}"));
        error.expected = Some(expected.to_string());
        error
    }

    fn missing_field(field: &'static str) -> Self {
        let mut error = Self::new(format!("missing required field `{field}`"));
        error.fix = Some(format!("add `{field}`"));
        error.path = field.to_string();
        error
    }

    fn unknown_variant(variant: &str, expected: &'static [&'static str]) -> Self {
        let mut error = Self::new(format!("unknown value `{variant}`"));
        error.found = Some(variant.to_string());
        error.expected = Some(one_of(expected));
        if let Some(best) = crate::catalog::closest(variant, expected.iter().copied()) {
            error.fix = Some(format!("did you mean `{best}`?"));
        }
        error
    }
}

fn one_of(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("`{n}`")).collect();
    match quoted.len() {
        0 => "nothing".into(),
        1 => quoted[0].clone(),
        _ => format!("one of {}", quoted.join(", ")),
    }
}

/// Reads `node` as a `T`, strictly. `path` is the dotted path of `node` in its document, used
/// in messages (`""` for the document root).
pub fn from_node<T: DeserializeOwned>(node: &Node, path: &str) -> Result<T, DeError> {
    T::deserialize(NodeDeserializer {
        node,
        path: path.to_string(),
    })
}

struct NodeDeserializer<'a> {
    node: &'a Node,
    path: String,
}

impl NodeDeserializer<'_> {
    fn type_error(&self, expected: &'static str) -> DeError {
        let mut error = DeError::new(format!(
            "expected {expected}, found {}",
            self.node.value.describe()
        ));
        error.expected = Some(expected.to_string());
        error.found = Some(scalar_text(self.node));
        error.fix = match (&self.node.value, expected) {
            (Value::String(s), e) if e.contains("integer") && s.parse::<i64>().is_ok() => {
                Some(format!("write the number without quotes: `{s}`"))
            }
            (Value::Int(_) | Value::Float(_) | Value::Bool(_), "a string") => {
                Some(format!("quote the value: `\"{}\"`", scalar_text(self.node)))
            }
            _ => None,
        };
        error.locate(self.node.span, &self.path)
    }

    fn child(&self, segment: &str) -> String {
        if self.path.is_empty() {
            segment.to_string()
        } else {
            format!("{}.{segment}", self.path)
        }
    }

    fn wrap<T>(&self, result: Result<T, DeError>) -> Result<T, DeError> {
        result.map_err(|e| e.locate(self.node.span, &self.path))
    }
}

fn scalar_text(node: &Node) -> String {
    match &node.value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::String(s) => format!("\"{s}\""),
        Value::Seq(_) => "a sequence".into(),
        Value::Map(_) => "a mapping".into(),
    }
}

macro_rules! integer {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
            match self.node.value {
                Value::Int(i) => match <$ty>::try_from(i) {
                    Ok(v) => self.wrap(visitor.$visit(v)),
                    Err(_) => Err(DeError::new(format!(
                        "{i} is out of range for this field ({}..={})",
                        <$ty>::MIN,
                        <$ty>::MAX
                    ))
                    .locate(self.node.span, &self.path)),
                },
                _ => Err(self.type_error("an integer")),
            }
        }
    };
}

impl<'de> de::Deserializer<'de> for NodeDeserializer<'_> {
    type Error = DeError;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        let result = match &self.node.value {
            Value::Null => visitor.visit_unit(),
            Value::Bool(b) => visitor.visit_bool(*b),
            Value::Int(i) => visitor.visit_i64(*i),
            Value::Float(f) => visitor.visit_f64(*f),
            Value::String(s) => visitor.visit_str(s),
            Value::Seq(_) => return self.deserialize_seq(visitor),
            Value::Map(_) => return self.deserialize_map(visitor),
        };
        self.wrap(result)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            Value::Bool(b) => self.wrap(visitor.visit_bool(b)),
            _ => Err(self.type_error("`true` or `false`")),
        }
    }

    integer!(deserialize_i8, visit_i8, i8);
    integer!(deserialize_i16, visit_i16, i16);
    integer!(deserialize_i32, visit_i32, i32);
    integer!(deserialize_i64, visit_i64, i64);
    integer!(deserialize_u8, visit_u8, u8);
    integer!(deserialize_u16, visit_u16, u16);
    integer!(deserialize_u32, visit_u32, u32);
    integer!(deserialize_u64, visit_u64, u64);

    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_f64(visitor)
    }

    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            #[expect(clippy::cast_precision_loss, reason = "YAML integers used as floats")]
            Value::Int(i) => self.wrap(visitor.visit_f64(i as f64)),
            Value::Float(f) => self.wrap(visitor.visit_f64(f)),
            _ => Err(self.type_error("a number")),
        }
    }

    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::String(s) => self.wrap(visitor.visit_str(s)),
            _ => Err(self.type_error("a string")),
        }
    }

    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            Value::Null => self.wrap(visitor.visit_none()),
            _ => visitor.visit_some(self),
        }
    }

    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match self.node.value {
            Value::Null => self.wrap(visitor.visit_unit()),
            _ => Err(self.type_error("null")),
        }
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Seq(items) => {
                let access = SeqAccess {
                    items: items.iter().enumerate(),
                    path: &self.path,
                };
                self.wrap(visitor.visit_seq(access))
            }
            _ => Err(self.type_error("a sequence")),
        }
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, DeError> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::Map(entries) => {
                let access = MapAccess {
                    entries: entries.iter(),
                    value: None,
                    parent: &self,
                };
                self.wrap(visitor.visit_map(access))
            }
            _ => Err(self.type_error("a mapping")),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        let Value::Map(entries) = &self.node.value else {
            return Err(self.type_error("a mapping"));
        };
        // Checked here rather than through serde's `deny_unknown_fields` so the error can point
        // at the key itself and suggest the closest field.
        for (key, _) in entries {
            if !fields.contains(&key.text.as_str()) {
                return Err(unknown_field(key, fields, &self.child(&key.text)));
            }
        }
        let path = self.path.clone();
        let result = self.deserialize_map(visitor);
        result.map_err(|mut e| {
            // serde reports a missing field with only its name; give it the full path.
            if e.message.starts_with("missing required field")
                && e.path == path
                && let Some(field) = e.message.split('`').nth(1)
            {
                e.path = if path.is_empty() {
                    field.to_string()
                } else {
                    format!("{path}.{field}")
                };
            }
            e
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, DeError> {
        match &self.node.value {
            Value::String(s) => {
                let result = visitor.visit_enum(s.as_str().into_deserializer());
                self.wrap(result)
            }
            _ => Err(self.type_error("a string")),
        }
    }

    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        self.deserialize_str(visitor)
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, DeError> {
        visitor.visit_unit()
    }
}

fn unknown_field(key: &Key, fields: &[&str], path: &str) -> DeError {
    let mut error = DeError::new(format!("unknown field `{}`", key.text));
    error.found = Some(key.text.clone());
    error.expected = Some(one_of(fields));
    error.fix = crate::catalog::closest(&key.text, fields.iter().copied())
        .map(|best| format!("did you mean `{best}`?"));
    error.locate(key.span, path)
}

struct SeqAccess<'a, I> {
    items: I,
    path: &'a str,
}

impl<'de, 'a, I: Iterator<Item = (usize, &'a Node)>> de::SeqAccess<'de> for SeqAccess<'a, I> {
    type Error = DeError;

    fn next_element_seed<T: de::DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, DeError> {
        match self.items.next() {
            Some((index, node)) => {
                let path = format!("{}[{index}]", self.path);
                let result = seed.deserialize(NodeDeserializer {
                    node,
                    path: path.clone(),
                });
                result.map(Some).map_err(|e| e.locate(node.span, &path))
            }
            None => Ok(None),
        }
    }
}

struct MapAccess<'a, 'p, I> {
    entries: I,
    value: Option<(&'a Key, &'a Node)>,
    parent: &'p NodeDeserializer<'a>,
}

impl<'de, 'a, I: Iterator<Item = &'a (Key, Node)>> de::MapAccess<'de> for MapAccess<'a, '_, I> {
    type Error = DeError;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, DeError> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some((key, value));
                let path = self.parent.child(&key.text);
                seed.deserialize(key.text.as_str().into_deserializer())
                    .map(Some)
                    .map_err(|e: DeError| e.locate(key.span, &path))
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, DeError> {
        let Some((key, node)) = self.value.take() else {
            return Err(DeError::new("value requested before key".into()));
        };
        let path = self.parent.child(&key.text);
        seed.deserialize(NodeDeserializer {
            node,
            path: path.clone(),
        })
        .map_err(|e| e.locate(node.span, &path))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;

    use super::*;
    use crate::yaml::parse_documents;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Spec {
        tpu: Tpu,
        #[serde(default)]
        args: Vec<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        enabled: Option<bool>,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(rename_all = "camelCase", deny_unknown_fields)]
    struct Tpu {
        #[serde(rename = "type")]
        type_: String,
        topology: Option<String>,
        slices: Option<u32>,
    }

    fn read(text: &str) -> Result<Spec, DeError> {
        let docs = parse_documents(text).unwrap();
        from_node(docs[0].get("spec").unwrap(), "spec")
    }

    #[test]
    fn reads_valid_spec() {
        let spec =
            read("spec:\n  tpu:\n    type: v4-32\n    slices: 2\n  args: [a, b]\n  env: {A: x}\n")
                .unwrap();
        assert_eq!(spec.tpu.slices, Some(2));
        assert_eq!(spec.args, ["a", "b"]);
        assert_eq!(spec.env["A"], "x");
    }

    #[test]
    fn rejects_unknown_field_with_suggestion_and_position() {
        let error = read("spec:\n  tpu:\n    type: v4-32\n    topolgy: 2x2x4\n").unwrap_err();
        assert_eq!(error.message, "unknown field `topolgy`");
        assert_eq!(error.path, "spec.tpu.topolgy");
        assert_eq!(error.span.map(|s| (s.line, s.column)), Some((4, 5)));
        assert_eq!(error.fix.as_deref(), Some("did you mean `topology`?"));
    }

    #[test]
    fn rejects_quoted_number() {
        let error = read("spec:\n  tpu:\n    type: v4-32\n    slices: \"2\"\n").unwrap_err();
        assert_eq!(error.message, "expected an integer, found a string");
        assert_eq!(error.path, "spec.tpu.slices");
        assert_eq!(error.span.map(|s| s.line), Some(4));
        assert_eq!(
            error.fix.as_deref(),
            Some("write the number without quotes: `2`")
        );
    }

    #[test]
    fn rejects_number_where_string_belongs() {
        let error = read("spec:\n  tpu:\n    type: 4\n").unwrap_err();
        assert_eq!(error.path, "spec.tpu.type");
        assert_eq!(error.fix.as_deref(), Some("quote the value: `\"4\"`"));
        let error = read("spec:\n  tpu: {type: x}\n  args: [a, 1.10]\n").unwrap_err();
        assert_eq!(error.path, "spec.args[1]");
    }

    #[test]
    fn reads_yaml_1_1_words_as_kubectl_does_and_rejects_negative_count() {
        // One reader for blueprints and manifests: a plain `yes` is `true` everywhere.
        let spec = read("spec:\n  tpu: {type: x}\n  enabled: yes\n").unwrap();
        assert_eq!(spec.enabled, Some(true));
        let error = read("spec:\n  tpu: {type: no}\n").unwrap_err();
        assert_eq!(error.path, "spec.tpu.type");
        assert_eq!(error.message, "expected a string, found a boolean");
        let error = read("spec:\n  tpu: {type: x, slices: -1}\n").unwrap_err();
        assert_eq!(error.path, "spec.tpu.slices");
        assert!(error.message.contains("out of range"), "{}", error.message);
    }

    #[test]
    fn names_missing_field_with_path() {
        let error = read("spec:\n  tpu:\n    topology: 2x2x4\n").unwrap_err();
        assert_eq!(error.message, "missing required field `type`");
        assert_eq!(error.path, "spec.tpu.type");
        assert_eq!(error.span.map(|s| s.line), Some(3));
    }
}

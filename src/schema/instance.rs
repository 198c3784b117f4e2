//! The spanned YAML tree as a JSON instance for `jsonschema`, without converting it.
//!
//! `jsonschema` validates any representation that implements its [`Json`] trait; this one
//! reads [`crate::yaml::Node`]s in place, so checking an object allocates nothing for the
//! instance (a conversion to `serde_json::Value` would copy every key and string of every
//! object). Only error reporting, a cold path, builds `serde_json::Value`s.
//!
//! The tree already holds what `kubectl` reads (the YAML reader resolves plain scalars as
//! go-yaml v2 does: a plain `on` is a boolean), so the checker agrees with what
//! `kubectl apply` would send.

use std::borrow::Cow;

use jsonschema::json::{Array, Json, JsonNumber, Node as JsonNode, NodeIdentity, Object};
use jsonschema::types::JsonType;
use serde_json::Value as JsonValue;

use crate::yaml::{Key, Node, Span, Value};

/// The representation: `jsonschema` validators built for it take [`At`]s.
pub(crate) struct Yaml;

/// One node of the tree, as `jsonschema` sees it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct At<'a>(pub(crate) &'a Node);

impl Json for Yaml {
    type Node<'a> = At<'a>;
    type PreparedKey = Box<str>;
    type StringBuffer = Option<Node>;

    // Mappings are vectors in source order: a lookup is a linear scan, so a pass over the
    // members pays off early.
    const KEYS_PER_LOOKUP: usize = 8;
    // A tree: no node is its own descendant.
    const ACYCLIC: bool = true;

    fn prepare_key(key: &str) -> Box<str> {
        key.into()
    }

    fn with_string_node<T>(
        buffer: &mut Option<Node>,
        string: &str,
        f: impl FnOnce(At<'_>) -> T,
    ) -> T {
        let node = buffer.insert(Node {
            value: Value::String(string.to_owned()),
            span: Span::default(),
        });
        f(At(node))
    }
}

/// A number as the parser read it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Number {
    /// A plain integer.
    Int(i64),
    /// A plain float (always finite: the parser rejects `.inf` and `.nan`).
    Float(f64),
}

impl JsonNumber for Number {
    fn as_u64(&self) -> Option<u64> {
        match *self {
            Number::Int(i) => u64::try_from(i).ok(),
            Number::Float(_) => None,
        }
    }

    fn as_i64(&self) -> Option<i64> {
        match *self {
            Number::Int(i) => Some(i),
            Number::Float(_) => None,
        }
    }

    fn as_f64(&self) -> Option<f64> {
        match *self {
            #[allow(clippy::cast_precision_loss)]
            Number::Int(i) => Some(i as f64),
            Number::Float(f) => Some(f),
        }
    }

    fn as_str(&self) -> Cow<'_, str> {
        match *self {
            Number::Int(i) => Cow::Owned(i.to_string()),
            Number::Float(f) => Cow::Owned(f.to_string()),
        }
    }

    fn to_number(&self) -> Cow<'_, serde_json::Number> {
        Cow::Owned(match *self {
            Number::Int(i) => serde_json::Number::from(i),
            Number::Float(f) => {
                serde_json::Number::from_f64(f).unwrap_or_else(|| serde_json::Number::from(0))
            }
        })
    }

    // `1.0` is an integer to JSON Schema (draft 6 on) and to the API server: kubectl sends it
    // as `1`.
    fn is_integer(&self) -> bool {
        match *self {
            Number::Int(_) => true,
            Number::Float(f) => f.fract() == 0.0,
        }
    }

    fn is_written_as_integer(&self) -> bool {
        matches!(self, Number::Int(_))
    }
}

impl<'a> JsonNode<'a, Yaml> for At<'a> {
    type Object = Members<'a>;
    type Array = Items<'a>;
    type Number = Number;

    fn as_object(&self) -> Option<Members<'a>> {
        match &self.0.value {
            Value::Map(entries) => Some(Members(entries)),
            _ => None,
        }
    }

    fn as_array(&self) -> Option<Items<'a>> {
        match &self.0.value {
            Value::Seq(items) => Some(Items(items)),
            _ => None,
        }
    }

    fn as_string(&self) -> Option<Cow<'a, str>> {
        match &self.0.value {
            Value::String(text) => Some(Cow::Borrowed(text)),
            _ => None,
        }
    }

    fn as_number(&self) -> Option<Number> {
        match self.0.value {
            Value::Int(i) => Some(Number::Int(i)),
            Value::Float(f) => Some(Number::Float(f)),
            _ => None,
        }
    }

    fn as_boolean(&self) -> Option<bool> {
        match self.0.value {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }

    fn is_null(&self) -> bool {
        matches!(self.0.value, Value::Null)
    }

    fn is_number(&self) -> bool {
        matches!(self.0.value, Value::Int(_) | Value::Float(_))
    }

    fn json_type(&self) -> JsonType {
        match &self.0.value {
            Value::Null => JsonType::Null,
            Value::Bool(_) => JsonType::Boolean,
            Value::Int(_) | Value::Float(_) => JsonType::Number,
            Value::String(_) => JsonType::String,
            Value::Seq(_) => JsonType::Array,
            Value::Map(_) => JsonType::Object,
        }
    }

    fn to_value(&self) -> Cow<'a, JsonValue> {
        Cow::Owned(to_json(self.0))
    }

    fn identity(&self) -> Option<NodeIdentity> {
        Some(NodeIdentity::new(
            std::ptr::from_ref::<Node>(self.0) as usize
        ))
    }
}

/// The members of a mapping, in source order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Members<'a>(&'a [(Key, Node)]);

impl<'a> Object<'a, Yaml> for Members<'a> {
    type Node = At<'a>;
    type MemberName = &'a str;
    type MembersIter = MembersIter<'a>;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn get(&self, key: &Box<str>) -> Option<At<'a>> {
        self.0
            .iter()
            .find(|(k, _)| k.text == **key)
            .map(|(_, value)| At(value))
    }

    fn members(&self) -> MembersIter<'a> {
        MembersIter(self.0.iter())
    }
}

/// Iterator over [`Members`].
pub(crate) struct MembersIter<'a>(std::slice::Iter<'a, (Key, Node)>);

impl<'a> Iterator for MembersIter<'a> {
    type Item = (&'a str, At<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        self.0.next().map(|(k, v)| (k.text.as_str(), At(v)))
    }
}

/// The items of a sequence.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Items<'a>(&'a [Node]);

impl<'a> Array<'a, Yaml> for Items<'a> {
    type Node = At<'a>;
    type ElementsIter = std::iter::Map<std::slice::Iter<'a, Node>, fn(&'a Node) -> At<'a>>;

    fn len(&self) -> usize {
        self.0.len()
    }

    fn elements(&self) -> Self::ElementsIter {
        self.0.iter().map(At)
    }
}

/// The node as JSON, as kubectl would send it. Cold path only.
pub(crate) use crate::yaml::to_json;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::yaml::parse_documents;

    #[test]
    fn plain_yaml_1_1_booleans_are_booleans_quoted_ones_strings() {
        let docs = parse_documents("a: on\nb: \"on\"\nc: 'no'\nd: onward\ne: true\n").unwrap();
        let kind = |key: &str| At(docs[0].get(key).unwrap()).json_type();
        assert_eq!(kind("a"), JsonType::Boolean);
        assert_eq!(kind("b"), JsonType::String);
        assert_eq!(kind("c"), JsonType::String);
        assert_eq!(kind("d"), JsonType::String);
        assert_eq!(kind("e"), JsonType::Boolean);
        assert_eq!(to_json(&docs[0])["a"], JsonValue::Bool(true));
    }

    #[test]
    fn validates_the_tree_in_place() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {"num": {"type": "integer"}, "s": {"type": "string"}},
            "additionalProperties": false
        });
        let validator = jsonschema::options_for::<Yaml>().build(&schema).unwrap();
        let good = parse_documents("num: 2.0\ns: \"yes\"\n").unwrap();
        assert!(validator.is_valid(At(&good[0])));
        let bad = parse_documents("num: 2.5\ns: yes\nx: 1\n").unwrap();
        let errors: Vec<String> = validator
            .iter_errors(At(&bad[0]))
            .map(|e| format!("{}: {e}", e.instance_path()))
            .collect();
        assert_eq!(errors.len(), 3, "{errors:?}");
    }
}

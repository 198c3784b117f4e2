//! JSON pointers of validation errors followed in the spanned YAML tree: the file position
//! of a failing value and the dotted field path findings name.

use std::fmt::Write as _;

use crate::yaml::pointer::Step;
use crate::yaml::{Node, Span, Value};

/// Where a JSON pointer leads in the tree.
pub(super) struct Located<'n> {
    /// The deepest node reached.
    pub(super) node: &'n Node,
    /// The key that led to it, when it is a mapping value.
    pub(super) key: Option<Span>,
    /// Whether the whole pointer was followed.
    pub(super) found: bool,
}

impl Located<'_> {
    /// A scalar's value (what is wrong), or a collection's key (where it starts).
    pub(super) fn span(&self) -> Span {
        match (&self.node.value, self.key) {
            (Value::Map(_) | Value::Seq(_), Some(key)) => key,
            _ => self.node.span,
        }
    }
}

/// Follows `steps` from `root`.
pub(super) fn locate<'n>(root: &'n Node, steps: &[Step]) -> Located<'n> {
    let mut located = Located {
        node: root,
        key: None,
        found: true,
    };
    for step in steps {
        let next = match (&located.node.value, step) {
            (Value::Map(entries), Step::Key(key)) => entries.iter().find(|(k, _)| k.text == *key),
            (Value::Map(entries), Step::Index(index)) => {
                let key = index.to_string();
                entries.iter().find(|(k, _)| k.text == key)
            }
            (Value::Seq(items), Step::Index(index)) => match items.get(*index) {
                Some(item) => {
                    located = Located {
                        node: item,
                        key: None,
                        found: true,
                    };
                    continue;
                }
                None => None,
            },
            _ => None,
        };
        match next {
            Some((key, value)) => {
                located = Located {
                    node: value,
                    key: Some(key.span),
                    found: true,
                };
            }
            None => {
                located.found = false;
                return located;
            }
        }
    }
    located
}

/// `spec.template.spec.containers[0].env[1].value`; keys that are not plain words are
/// bracketed: `metadata.labels["app.kubernetes.io/name"]`.
pub(in crate::schema) fn dotted(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Index(index) => {
                let _ = write!(out, "[{index}]");
            }
            Step::Key(key) => {
                let plain = !key.is_empty()
                    && key
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'$');
                if !plain {
                    let _ = write!(out, "[{key:?}]");
                } else {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(key);
                }
            }
        }
    }
    out
}

//! One validation error, located in the tree, explained by its failing keyword: the
//! dispatch over keywords and the findings for fields, types and values.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::types::JsonType;
use serde_json::Value as JsonValue;

use super::pointer::{Located, dotted, locate};
use super::words::{code_list, cut, found_noun, plural, scalar_text, type_noun, yaml_1_1_word};
use super::{MAX_VALUE_CHARS, QUANTITY_EXAMPLE, QUANTITY_PATTERN, Report};
use crate::diagnostic::Diagnostic;
use crate::schema::rule;
use crate::schema::store::Compiled;
use crate::yaml::pointer::{Step, steps};
use crate::yaml::{Node, Span, Value};

/// One error, located.
pub(super) struct Violation<'r, 'a> {
    pub(super) report: &'r Report<'a>,
    pub(super) compiled: &'r Compiled,
    /// The pointer of `root` in the object.
    pub(super) prefix: &'r str,
    /// The node the validator validated (the object, or its `metadata`).
    pub(super) root: &'r Node,
    /// Path of the error's instance in the object.
    pub(super) path: Vec<Step>,
    pub(super) located: Located<'r>,
}

impl<'r, 'a> Violation<'r, 'a> {
    pub(super) fn new(
        report: &'r Report<'a>,
        compiled: &'r Compiled,
        prefix: &'r str,
        root: &'r Node,
        error: &ValidationError<'_>,
    ) -> Self {
        let relative = steps(error.instance_path().as_str());
        let located = locate(root, &relative);
        let mut path = steps(prefix);
        path.extend(relative);
        Self {
            report,
            compiled,
            prefix,
            root,
            path,
            located,
        }
    }

    pub(super) fn field(&self) -> String {
        dotted(&self.path)
    }

    pub(super) fn finding(&self, message: String, span: Span) -> Diagnostic {
        self.report.diagnostic(
            Diagnostic::error(rule::SCHEMA_VIOLATION, message).field(self.field()),
            span,
        )
    }

    /// The schema object holding the failing keyword.
    pub(super) fn keyword_parent(&self, error: &ValidationError<'_>) -> Option<&JsonValue> {
        let location = error.absolute_keyword_location()?.as_str();
        let (base, pointer) = location.split_once('#')?;
        let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
        self.compiled.schema_at(&format!("{base}#{parent}"))
    }

    pub(super) fn explain(&self, error: &ValidationError<'_>, out: &mut Vec<Diagnostic>) {
        if !self.located.found {
            // The pointer leads past what the tree has: say it about the deepest node.
            out.push(self.generic(error));
            return;
        }
        if let Some((predicate, expected)) = bound(error.kind()) {
            out.push(self.bounded(predicate, &expected));
            return;
        }
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                self.unknown_fields(error, unexpected, out);
            }
            ValidationErrorKind::Required { property } => out.push(self.required(property)),
            ValidationErrorKind::Type { kind } => {
                let expected = match kind {
                    TypeKind::Single(t) => vec![*t],
                    TypeKind::Multiple(set) => set.iter().collect(),
                };
                out.push(self.wrong_type(&expected, self.type_hint(error)));
            }
            ValidationErrorKind::AnyOf { context }
            | ValidationErrorKind::OneOfNotValid { context } => {
                self.alternatives(error, context, false, out);
            }
            ValidationErrorKind::OneOfMultipleValid { context } => {
                self.alternatives(error, context, true, out);
            }
            ValidationErrorKind::Enum { options } => out.push(self.enumeration(options)),
            ValidationErrorKind::Constant { expected_value } => {
                let expected = format!("`{}`", scalar_text(expected_value));
                out.push(self.bounded(format!("must be {expected}"), &expected));
            }
            ValidationErrorKind::Pattern { pattern } => out.push(self.pattern(pattern)),
            ValidationErrorKind::Format { format } => out.push(self.format(format)),
            ValidationErrorKind::UniqueItems => {
                out.push(self.bounded("must not repeat an item".to_owned(), "distinct items"));
            }
            ValidationErrorKind::Not { schema } => out.push(self.not(schema)),
            _ => out.push(self.generic(error)),
        }
    }

    /// A message built from the error's own text, cut short.
    pub(super) fn generic(&self, error: &ValidationError<'_>) -> Diagnostic {
        let text = error.masked_with("the value").to_string();
        self.finding(
            format!("`{}`: {}", self.field(), cut(&text, 200)),
            self.located.span(),
        )
    }

    pub(super) fn unknown_fields(
        &self,
        error: &ValidationError<'_>,
        unexpected: &[String],
        out: &mut Vec<Diagnostic>,
    ) {
        let allowed: Vec<&str> = self
            .keyword_parent(error)
            .and_then(|schema| schema.get("properties"))
            .and_then(JsonValue::as_object)
            .map(|properties| properties.keys().map(String::as_str).collect())
            .unwrap_or_default();
        for name in unexpected {
            let key_span = match &self.located.node.value {
                Value::Map(entries) => entries
                    .iter()
                    .find(|(k, _)| k.text == *name)
                    .map_or(self.located.span(), |(k, _)| k.span),
                _ => self.located.span(),
            };
            let mut path = self.path.clone();
            path.push(Step::Key(name.clone()));
            let field = dotted(&path);
            let mut d =
                Diagnostic::error(rule::SCHEMA_VIOLATION, format!("unknown field `{field}`"))
                    .field(field)
                    .found(name.clone());
            if !allowed.is_empty() {
                let within = if self.path.is_empty() {
                    "the object".to_owned()
                } else {
                    format!("`{}`", self.field())
                };
                d = d.expected(format!(
                    "a field of {within}: {}",
                    code_list(&allowed, ", ")
                ));
            }
            d = match crate::catalog::closest(name, allowed.iter().copied()) {
                Some(close) => d.fix(format!("did you mean `{close}`?")),
                None => d.fix(format!("remove `{name}`")),
            };
            out.push(self.report.diagnostic(d, key_span));
        }
    }

    pub(super) fn required(&self, property: &JsonValue) -> Diagnostic {
        let name = scalar_text(property);
        let mut path = self.path.clone();
        path.push(Step::Key(name.clone()));
        let field = dotted(&path);
        let fix = if self.path.is_empty() {
            format!("add `{name}` at the top level")
        } else {
            format!("add `{name}` to `{}`", self.field())
        };
        self.report.diagnostic(
            Diagnostic::error(
                rule::SCHEMA_VIOLATION,
                format!("missing required field `{field}`"),
            )
            .field(field)
            .expected(format!("`{name}` to be set"))
            .fix(fix),
            self.located.span(),
        )
    }

    /// What a `type` keyword's schema says beyond the type (a quantity, int-or-string).
    pub(super) fn type_hint(&self, error: &ValidationError<'_>) -> Option<String> {
        let schema = self.keyword_parent(error)?;
        if schema.get("pattern").and_then(JsonValue::as_str) == Some(QUANTITY_PATTERN) {
            return Some(format!("a quantity string {QUANTITY_EXAMPLE}"));
        }
        None
    }

    /// `expected` the JSON types allowed; `hint` replaces the description of `string`.
    pub(super) fn wrong_type(&self, expected: &[JsonType], hint: Option<String>) -> Diagnostic {
        let node = self.located.node;
        let wants: Vec<JsonType> = {
            let without_null: Vec<JsonType> = expected
                .iter()
                .copied()
                .filter(|t| *t != JsonType::Null)
                .collect();
            if without_null.is_empty() {
                expected.to_vec()
            } else {
                without_null
            }
        };
        let mut nouns: Vec<String> = wants
            .iter()
            .map(|t| match (t, &hint) {
                (JsonType::String, Some(hint)) => hint.clone(),
                _ => type_noun(*t).to_owned(),
            })
            .collect();
        nouns.dedup();
        // "an integer or a number": the number covers it.
        if wants.contains(&JsonType::Number) && wants.contains(&JsonType::Integer) {
            nouns.retain(|n| n != "an integer");
        }
        let expected_text = nouns.join(" or ");
        let written = self.report.written(node);
        let field = self.field();
        let message = match yaml_1_1_word(node, &written) {
            Some(b) => format!(
                "`{field}` must be {expected_text}, but kubectl reads the unquoted `{written}` as the boolean `{b}` (YAML 1.1)"
            ),
            None => format!(
                "`{field}` must be {expected_text}, not {}",
                found_noun(node)
            ),
        };
        let mut d = Diagnostic::error(rule::SCHEMA_VIOLATION, message)
            .field(field)
            .found(cut(&written, MAX_VALUE_CHARS))
            .expected(expected_text);
        let wants_string = wants.contains(&JsonType::String);
        // Quoting helps where any string is welcome, or a number where a quantity is.
        let quoting_helps = matches!(
            (&node.value, &hint),
            (Value::Int(_) | Value::Float(_), _) | (Value::Bool(_), None)
        );
        if wants_string && quoting_helps {
            d = d.fix(format!("quote the value: `{}\"{written}\"`", self.lead()));
        } else if !wants_string
            && (wants.contains(&JsonType::Integer) || wants.contains(&JsonType::Number))
            && let Value::String(text) = &node.value
            && text.trim().parse::<f64>().is_ok()
        {
            d = d.fix(format!(
                "remove the quotes: `{}{}`",
                self.lead(),
                text.trim()
            ));
        }
        self.report.diagnostic(d, self.located.span())
    }

    /// `key: ` or `- ` before a value, for fixes.
    pub(super) fn lead(&self) -> String {
        match self.path.last() {
            Some(Step::Key(key)) => format!("{key}: "),
            Some(Step::Index(_)) => "- ".to_owned(),
            None => String::new(),
        }
    }

    pub(super) fn enumeration(&self, options: &JsonValue) -> Diagnostic {
        let allowed: Vec<String> = options
            .as_array()
            .map(|values| {
                values
                    .iter()
                    .filter(|v| !v.is_null())
                    .map(scalar_text)
                    .collect()
            })
            .unwrap_or_default();
        let names: Vec<&str> = allowed.iter().map(String::as_str).collect();
        let expected = format!("one of {}", code_list(&names, ", "));
        let written = self.report.written(self.located.node);
        let field = self.field();
        let mut d = Diagnostic::error(
            rule::SCHEMA_VIOLATION,
            format!("`{field}` must be {expected}"),
        )
        .field(field)
        .found(cut(&written, MAX_VALUE_CHARS))
        .expected(expected);
        let lower = written.to_lowercase();
        if let Some(close) = names
            .iter()
            .find(|n| n.to_lowercase() == lower)
            .copied()
            .or_else(|| crate::catalog::closest(&written, names.iter().copied()))
        {
            d = d.fix(format!("did you mean `{close}`?"));
        }
        self.report.diagnostic(d, self.located.span())
    }

    pub(super) fn pattern(&self, pattern: &str) -> Diagnostic {
        let (what, expected) = if pattern == QUANTITY_PATTERN {
            (
                "a quantity".to_owned(),
                format!("a quantity {QUANTITY_EXAMPLE}"),
            )
        } else {
            (
                "in the expected form".to_owned(),
                format!("a string matching `{}`", cut(pattern, 120)),
            )
        };
        self.bounded(format!("is not {what}"), &expected)
    }

    pub(super) fn format(&self, format: &str) -> Diagnostic {
        let (what, expected) = match format {
            "duration" => (
                "a duration",
                "a Go duration such as `30s`, `1m30s` or `1h`".to_owned(),
            ),
            "byte" => (
                "base64",
                "base64-encoded data (a Secret's `stringData` takes plain text)".to_owned(),
            ),
            "date-time" => (
                "a time",
                "an RFC 3339 time such as `2025-01-31T12:00:00Z`".to_owned(),
            ),
            other => ("well-formed", format!("a `{other}` string")),
        };
        self.bounded(format!("is not {what}"), &expected)
    }

    /// A finding "`field` {predicate}", showing the value found.
    pub(super) fn bounded(&self, predicate: String, expected: &str) -> Diagnostic {
        let written = self.report.written(self.located.node);
        let field = self.field();
        self.report.diagnostic(
            Diagnostic::error(rule::SCHEMA_VIOLATION, format!("`{field}` {predicate}"))
                .field(field)
                .found(cut(&written, MAX_VALUE_CHARS))
                .expected(expected),
            self.located.span(),
        )
    }
}

/// What a failed bound says: the predicate of the message and the value expected ("must be at
/// least 2", "2 or more"). `None` for a keyword that is not a bound.
fn bound(kind: &ValidationErrorKind) -> Option<(String, String)> {
    use ValidationErrorKind as K;
    // Numbers: the words before the limit in the message, and around it in the expectation.
    let number = |limit: &JsonValue, words: &str, before: &str, after: &str| {
        Some((
            format!("must be {words} {limit}"),
            format!("{before}{limit}{after}"),
        ))
    };
    // Lengths and counts: whether the limit is a minimum, and what is counted.
    let (least, limit, noun) = match kind {
        K::Minimum { limit } => return number(limit, "at least", "", " or more"),
        K::Maximum { limit } => return number(limit, "at most", "", " or less"),
        K::ExclusiveMinimum { limit } => return number(limit, "more than", "more than ", ""),
        K::ExclusiveMaximum { limit } => return number(limit, "less than", "less than ", ""),
        K::MinLength { limit } => (true, *limit, "character"),
        K::MaxLength { limit } => (false, *limit, "character"),
        K::MinItems { limit } => (true, *limit, "item"),
        K::MaxItems { limit } => (false, *limit, "item"),
        K::MinProperties { limit } => (true, *limit, "field"),
        K::MaxProperties { limit } => (false, *limit, "field"),
        _ => return None,
    };
    let count = plural(limit, noun);
    let (side, more) = if least {
        ("at least", "or more")
    } else {
        ("at most", "or fewer")
    };
    let predicate = if noun == "character" {
        format!("must be {side} {count} long")
    } else {
        format!("must have {side} {count}")
    };
    Some((predicate, format!("{count} {more}")))
}

//! Turns validation errors into findings people can act on.
//!
//! A `jsonschema` error says where in the instance (a JSON pointer) and which keyword failed.
//! Here the pointer is followed in the spanned YAML tree to a file position and a dotted field
//! path, the failing keyword's schema is looked up (through the error's absolute keyword
//! location) for what was expected, and `oneOf`/`anyOf` failures are reduced to one finding:
//! "an integer or a quantity string" rather than one error per branch.

use std::collections::HashSet;
use std::fmt::Write as _;

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::types::JsonType;
use serde_json::Value as JsonValue;

use super::rule;
use super::store::{Compiled, Deprecation};
use super::versions::Removed;
use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::yaml::{Node, Span, Value};

/// Longest value shown in a finding.
const MAX_VALUE_CHARS: usize = 60;
/// Most alternatives listed (fields, enum values).
const MAX_LISTED: usize = 8;
/// The regular expression CRDs give `resource.Quantity` (x-kubernetes-int-or-string).
const QUANTITY_PATTERN: &str = "^(\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))(([KMGTPE]i)|[numkMGTPE]|([eE](\\+|-)?(([0-9]+(\\.[0-9]*)?)|(\\.[0-9]+))))?$";
const QUANTITY_EXAMPLE: &str = "such as `500m`, `2` or `4Gi`";

/// Builds the findings about one object.
pub(crate) struct Report<'a> {
    pub(crate) object: &'a Object<'a>,
    source: Option<&'a str>,
}

/// One step of a path into the object.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Step {
    Key(String),
    Index(usize),
}

/// Where a JSON pointer leads in the tree.
struct Located<'n> {
    /// The deepest node reached.
    node: &'n Node,
    /// The key that led to it, when it is a mapping value.
    key: Option<Span>,
    /// Whether the whole pointer was followed.
    found: bool,
}

impl Located<'_> {
    /// A scalar's value (what is wrong), or a collection's key (where it starts).
    fn span(&self) -> Span {
        match (&self.node.value, self.key) {
            (Value::Map(_) | Value::Seq(_), Some(key)) => key,
            _ => self.node.span,
        }
    }
}

impl<'a> Report<'a> {
    pub(crate) fn new(object: &'a Object<'a>, source: Option<&'a str>) -> Self {
        Self { object, source }
    }

    fn diagnostic(&self, d: Diagnostic, span: Span) -> Diagnostic {
        d.at(self.object.file, span).object(self.object.id.clone())
    }

    /// Position of the `apiVersion` value.
    fn api_version_span(&self) -> Span {
        self.object
            .node
            .get("apiVersion")
            .map_or(self.object.node.span, |n| n.span)
    }

    /// `autoscaling/v2beta1` `HorizontalPodAutoscaler` and the like.
    pub(crate) fn removed(&self, removed: &Removed) -> Diagnostic {
        let kind = &self.object.id.kind;
        let mut d = Diagnostic::error(
            rule::API_VERSION_REMOVED,
            format!(
                "{kind} `{}` was removed in Kubernetes {}; {} does not serve it",
                removed.api_version,
                removed.removed_in,
                super::KUBERNETES_VERSION
            ),
        )
        .field("apiVersion")
        .found(removed.api_version);
        let note = if removed.note.is_empty() {
            String::new()
        } else {
            format!("; {}", removed.note)
        };
        d = match removed.replacement {
            Some(replacement) => d
                .expected(replacement)
                .fix(format!("use `apiVersion: {replacement}`{note}")),
            None => d.fix(format!("remove the {kind}{note}")),
        };
        self.diagnostic(d, self.api_version_span())
    }

    /// A served but deprecated version.
    pub(crate) fn deprecated(&self, deprecation: &Deprecation) -> Diagnostic {
        let kind = &self.object.id.kind;
        let since = deprecation
            .since
            .map(|since| format!(" since Kubernetes {since}"))
            .unwrap_or_default();
        let mut message = format!("{kind} `{}` is deprecated{since}", deprecation.api_version);
        if let Some(warning) = &deprecation.warning {
            let _ = write!(message, ": {}", warning.trim_end_matches('.'));
        }
        let mut d = Diagnostic::warning(rule::API_VERSION_DEPRECATED, message)
            .field("apiVersion")
            .found(deprecation.api_version.clone());
        if let Some(replacement) = &deprecation.replacement {
            d = d
                .expected(replacement.clone())
                .fix(format!("use `apiVersion: {replacement}`"));
        }
        self.diagnostic(d, self.api_version_span())
    }

    /// A `--schemas` schema that cannot be used.
    pub(crate) fn invalid_schema(&self, why: &str) -> Diagnostic {
        let d = Diagnostic::error(
            rule::SCHEMA_INVALID,
            format!(
                "the schema for {} `{}` cannot be used: {}",
                self.object.id.kind,
                self.object.api_version,
                cut(why, 300)
            ),
        )
        .field("apiVersion");
        self.diagnostic(d, self.api_version_span())
    }

    /// A built-in group without this version or kind.
    pub(crate) fn not_served(&self, served: &[String]) -> Diagnostic {
        let kind = &self.object.id.kind;
        let api_version = self.object.api_version;
        let mut d = Diagnostic::error(
            rule::KIND_NOT_SERVED,
            format!(
                "Kubernetes {} does not serve {kind} in `{api_version}`",
                super::KUBERNETES_VERSION
            ),
        )
        .field("apiVersion")
        .found(api_version);
        d = match served {
            [] => d,
            [only] => d
                .expected(only.clone())
                .fix(format!("use `apiVersion: {only}`")),
            _ => d
                .expected(list(served, " or "))
                .fix(format!("{kind} is served as {}", list(served, ", "))),
        };
        self.diagnostic(d, self.api_version_span())
    }

    /// No schema at all.
    pub(crate) fn unknown_kind(
        &self,
        served: &[String],
        known_group: bool,
        strict: bool,
    ) -> Diagnostic {
        let kind = &self.object.id.kind;
        let api_version = self.object.api_version;
        let message = format!("no schema for {kind} `{api_version}`; it is not checked");
        let mut d = if strict {
            Diagnostic::error(rule::SCHEMA_UNKNOWN_KIND, message)
        } else {
            Diagnostic::warning(rule::SCHEMA_UNKNOWN_KIND, message)
        }
        .field("apiVersion")
        .found(api_version);
        d = if served.is_empty() {
            d.fix("pass the CRD's JSON schema with `--schemas DIR` (kubeconform layout)")
        } else {
            let shown = list(served, ", ");
            let hint = if known_group {
                format!("the vendored CRDs serve {kind} as {shown}")
            } else {
                format!("{kind} has a schema as {shown}")
            };
            d.expected(list(served, " or "))
                .fix(format!("{hint}; or pass a schema with `--schemas DIR`"))
        };
        self.diagnostic(d, self.api_version_span())
    }

    /// The findings for one validation error. `prefix` is the pointer of `root` in the object
    /// (`""` or `/metadata`); the error's instance path is relative to `root`.
    pub(crate) fn violation(
        &self,
        error: &ValidationError<'_>,
        compiled: &Compiled,
        prefix: &str,
        root: &Node,
        out: &mut Vec<Diagnostic>,
    ) {
        Violation::new(self, compiled, prefix, root, error).explain(error, out);
    }

    /// The value as written: the source text when known, else the parsed value.
    fn written(&self, node: &Node) -> String {
        if let Some(source) = self.source
            && node.span.len > 0
            && let Some(text) = source.get(node.span.offset..node.span.offset + node.span.len)
            && !matches!(node.value, Value::Map(_) | Value::Seq(_))
        {
            return text.trim_end().to_owned();
        }
        match &node.value {
            Value::Null => "null".to_owned(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::String(s) => s.clone(),
            Value::Seq(_) => "a list".to_owned(),
            Value::Map(_) => "a mapping".to_owned(),
        }
    }
}

/// One error, located.
struct Violation<'r, 'a> {
    report: &'r Report<'a>,
    compiled: &'r Compiled,
    /// The pointer of `root` in the object.
    prefix: &'r str,
    /// The node the validator validated (the object, or its `metadata`).
    root: &'r Node,
    /// Path of the error's instance in the object.
    path: Vec<Step>,
    located: Located<'r>,
}

impl<'r, 'a> Violation<'r, 'a> {
    fn new(
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

    fn field(&self) -> String {
        dotted(&self.path)
    }

    fn finding(&self, message: String, span: Span) -> Diagnostic {
        self.report.diagnostic(
            Diagnostic::error(rule::SCHEMA_VIOLATION, message).field(self.field()),
            span,
        )
    }

    /// The schema object holding the failing keyword.
    fn keyword_parent(&self, error: &ValidationError<'_>) -> Option<&JsonValue> {
        let location = error.absolute_keyword_location()?.as_str();
        let (base, pointer) = location.split_once('#')?;
        let parent = pointer.rsplit_once('/').map_or("", |(parent, _)| parent);
        self.compiled.schema_at(&format!("{base}#{parent}"))
    }

    fn explain(&self, error: &ValidationError<'_>, out: &mut Vec<Diagnostic>) {
        if !self.located.found {
            // The pointer leads past what the tree has: say it about the deepest node.
            out.push(self.generic(error));
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
            ValidationErrorKind::Minimum { limit } => {
                out.push(self.bounded(
                    format!("must be at least {limit}"),
                    &format!("{limit} or more"),
                ));
            }
            ValidationErrorKind::Maximum { limit } => {
                out.push(self.bounded(
                    format!("must be at most {limit}"),
                    &format!("{limit} or less"),
                ));
            }
            ValidationErrorKind::ExclusiveMinimum { limit } => {
                out.push(self.bounded(
                    format!("must be more than {limit}"),
                    &format!("more than {limit}"),
                ));
            }
            ValidationErrorKind::ExclusiveMaximum { limit } => {
                out.push(self.bounded(
                    format!("must be less than {limit}"),
                    &format!("less than {limit}"),
                ));
            }
            ValidationErrorKind::MinLength { limit } => out.push(self.bounded(
                format!("must be at least {} long", plural(*limit, "character")),
                &format!("{} or more", plural(*limit, "character")),
            )),
            ValidationErrorKind::MaxLength { limit } => out.push(self.bounded(
                format!("must be at most {} long", plural(*limit, "character")),
                &format!("{} or fewer", plural(*limit, "character")),
            )),
            ValidationErrorKind::MinItems { limit } => out.push(self.bounded(
                format!("must have at least {}", plural(*limit, "item")),
                &format!("{} or more", plural(*limit, "item")),
            )),
            ValidationErrorKind::MaxItems { limit } => out.push(self.bounded(
                format!("must have at most {}", plural(*limit, "item")),
                &format!("{} or fewer", plural(*limit, "item")),
            )),
            ValidationErrorKind::MinProperties { limit } => out.push(self.bounded(
                format!("must have at least {}", plural(*limit, "field")),
                &format!("{} or more", plural(*limit, "field")),
            )),
            ValidationErrorKind::MaxProperties { limit } => out.push(self.bounded(
                format!("must have at most {}", plural(*limit, "field")),
                &format!("{} or fewer", plural(*limit, "field")),
            )),
            ValidationErrorKind::UniqueItems => {
                out.push(self.bounded("must not repeat an item".to_owned(), "distinct items"));
            }
            ValidationErrorKind::Not { schema } => out.push(self.not(schema)),
            _ => out.push(self.generic(error)),
        }
    }

    /// A message built from the error's own text, cut short.
    fn generic(&self, error: &ValidationError<'_>) -> Diagnostic {
        let text = error.masked_with("the value").to_string();
        self.finding(
            format!("`{}`: {}", self.field(), cut(&text, 200)),
            self.located.span(),
        )
    }

    fn unknown_fields(
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

    fn required(&self, property: &JsonValue) -> Diagnostic {
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
    fn type_hint(&self, error: &ValidationError<'_>) -> Option<String> {
        let schema = self.keyword_parent(error)?;
        if schema.get("pattern").and_then(JsonValue::as_str) == Some(QUANTITY_PATTERN) {
            return Some(format!("a quantity string {QUANTITY_EXAMPLE}"));
        }
        None
    }

    /// `expected` the JSON types allowed; `hint` replaces the description of `string`.
    fn wrong_type(&self, expected: &[JsonType], hint: Option<String>) -> Diagnostic {
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
    fn lead(&self) -> String {
        match self.path.last() {
            Some(Step::Key(key)) => format!("{key}: "),
            Some(Step::Index(_)) => "- ".to_owned(),
            None => String::new(),
        }
    }

    /// `oneOf`/`anyOf` that failed (or, `multiple`, a `oneOf` that matched several branches).
    fn alternatives(
        &self,
        error: &ValidationError<'_>,
        context: &[Vec<ValidationError<'static>>],
        multiple: bool,
        out: &mut Vec<Diagnostic>,
    ) {
        let keyword = error.kind().keyword().to_owned();
        let branches: Vec<&JsonValue> = self
            .keyword_parent(error)
            .and_then(|schema| schema.get(&keyword))
            .and_then(JsonValue::as_array)
            .map(|branches| branches.iter().collect())
            .unwrap_or_default();

        // Branches that differ only by which fields are present (Config Connector references
        // `name` vs `external`, IAM `member` vs `memberFrom`).
        if let Some(names) = presence_alternatives(&branches) {
            out.push(self.exclusive(&names, keyword == "oneOf"));
            return;
        }
        if multiple {
            out.push(self.generic(error));
            return;
        }
        // Branches that are types (IntOrString, Quantity, int-or-string): one type finding.
        let own = error.instance_path().as_str();
        let mut types = Vec::new();
        let all_types = !context.is_empty()
            && context.iter().all(|branch| {
                !branch.is_empty()
                    && branch.iter().all(|e| {
                        e.instance_path().as_str() == own
                            && match e.kind() {
                                ValidationErrorKind::Type { kind } => {
                                    match kind {
                                        TypeKind::Single(t) => types.push(*t),
                                        TypeKind::Multiple(set) => types.extend(set.iter()),
                                    }
                                    true
                                }
                                _ => false,
                            }
                    })
            });
        if all_types {
            let location = error
                .absolute_keyword_location()
                .map(|l| l.as_str().to_owned())
                .unwrap_or_default();
            let parent = self.keyword_parent(error);
            let quantity = location.contains("resource.Quantity")
                || parent
                    .and_then(|s| s.get("pattern"))
                    .and_then(JsonValue::as_str)
                    == Some(QUANTITY_PATTERN);
            let hint = quantity.then(|| format!("a quantity string {QUANTITY_EXAMPLE}"));
            let mut unique = Vec::new();
            for t in types {
                if !unique.contains(&t) {
                    unique.push(t);
                }
            }
            // Integers first: "an integer or a string" reads better.
            unique.sort_by_key(|t| match t {
                JsonType::Integer => 0,
                JsonType::Number => 1,
                _ => 2,
            });
            out.push(self.wrong_type(&unique, hint));
            return;
        }
        // Otherwise explain the branch that got furthest: the one whose type matched (no type
        // error at this very node), with the fewest errors.
        let best = context
            .iter()
            .filter(|branch| {
                !branch.iter().any(|e| {
                    e.instance_path().as_str() == own
                        && matches!(e.kind(), ValidationErrorKind::Type { .. })
                })
            })
            .min_by_key(|branch| branch.len());
        match best {
            Some(branch) if !branch.is_empty() => {
                for e in branch {
                    Violation::new(self.report, self.compiled, self.prefix, self.root, e)
                        .explain(e, out);
                }
            }
            _ => out.push(self.generic(error)),
        }
    }

    fn exclusive(&self, names: &[String], exactly_one: bool) -> Diagnostic {
        let present: Vec<&String> = names
            .iter()
            .filter(|name| self.located.node.get(name).is_some())
            .collect();
        let quoted: Vec<&str> = names.iter().map(String::as_str).collect();
        let options = code_list(&quoted, " or ");
        let field = self.field();
        let within = if field.is_empty() {
            "the object".to_owned()
        } else {
            format!("`{field}`")
        };
        let (message, fix) = if exactly_one {
            (
                format!("{within} must set exactly one of {options}"),
                if present.len() > 1 {
                    format!(
                        "keep one of {}",
                        code_list(
                            &present.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                            " or "
                        )
                    )
                } else {
                    format!("set one of {options}")
                },
            )
        } else {
            (
                format!("{within} must set at least one of {options}"),
                format!("set one of {options}"),
            )
        };
        let found = if present.is_empty() {
            "none of them".to_owned()
        } else {
            code_list(
                &present.iter().map(|s| s.as_str()).collect::<Vec<_>>(),
                " and ",
            )
        };
        self.report.diagnostic(
            Diagnostic::error(rule::SCHEMA_VIOLATION, message)
                .field(field)
                .found(found)
                .expected(if exactly_one {
                    format!("exactly one of {options}")
                } else {
                    format!("one or more of {options}")
                })
                .fix(fix),
            self.located.span(),
        )
    }

    fn not(&self, schema: &JsonValue) -> Diagnostic {
        let names = required_names(schema);
        if !names.is_empty() {
            let present: Vec<&str> = names
                .iter()
                .map(String::as_str)
                .filter(|name| self.located.node.get(name).is_some())
                .collect();
            let field = self.field();
            return self.report.diagnostic(
                Diagnostic::error(
                    rule::SCHEMA_VIOLATION,
                    format!("`{field}` must not set {}", code_list(&present, " or ")),
                )
                .field(field)
                .fix(format!("remove {}", code_list(&present, " and "))),
                self.located.span(),
            );
        }
        let field = self.field();
        self.finding(
            format!("`{field}` has a value its schema forbids"),
            self.located.span(),
        )
    }

    fn enumeration(&self, options: &JsonValue) -> Diagnostic {
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

    fn pattern(&self, pattern: &str) -> Diagnostic {
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

    fn format(&self, format: &str) -> Diagnostic {
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
    fn bounded(&self, predicate: String, expected: &str) -> Diagnostic {
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

/// The field names of branches that only require fields (and forbid others), one per
/// branch; `None` when a branch does more than that.
fn presence_alternatives(branches: &[&JsonValue]) -> Option<Vec<String>> {
    if branches.len() < 2 {
        return None;
    }
    let mut names = Vec::new();
    for branch in branches {
        let map = branch.as_object()?;
        if !map.keys().all(|k| k == "required" || k == "not") {
            return None;
        }
        let required = map.get("required")?.as_array()?;
        for name in required.iter().filter_map(JsonValue::as_str) {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_owned());
            }
        }
    }
    (!names.is_empty()).then_some(names)
}

/// Names in `{required: [...]}` or `{anyOf: [{required: [...]}, ...]}`.
fn required_names(schema: &JsonValue) -> Vec<String> {
    let mut names = Vec::new();
    let mut add = |s: &JsonValue| {
        for name in s
            .get("required")
            .and_then(JsonValue::as_array)
            .into_iter()
            .flatten()
            .filter_map(JsonValue::as_str)
        {
            names.push(name.to_owned());
        }
    };
    add(schema);
    for branch in schema
        .get("anyOf")
        .and_then(JsonValue::as_array)
        .into_iter()
        .flatten()
    {
        add(branch);
    }
    names
}

/// The steps of a JSON pointer (`/spec/containers/0/env` → `spec`, `containers`, 0, `env`).
/// A step of digits is an index (or, on a mapping, a key of digits: see [`locate`]).
fn steps(pointer: &str) -> Vec<Step> {
    pointer
        .split('/')
        .skip(1)
        .map(|raw| {
            let text = raw.replace("~1", "/").replace("~0", "~");
            match text.parse::<usize>() {
                Ok(index) if !text.starts_with('+') => Step::Index(index),
                _ => Step::Key(text),
            }
        })
        .collect()
}

/// Follows `steps` from `root`.
fn locate<'n>(root: &'n Node, steps: &[Step]) -> Located<'n> {
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
fn dotted(path: &[Step]) -> String {
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

fn type_noun(t: JsonType) -> &'static str {
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
fn yaml_1_1_word(node: &Node, written: &str) -> Option<bool> {
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

fn found_noun(node: &Node) -> &'static str {
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
fn scalar_text(value: &JsonValue) -> String {
    match value {
        JsonValue::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `` `a`, `b` or `c` `` (with `last` before the final item; at most [`MAX_LISTED`] items).
fn code_list(items: &[&str], last: &str) -> String {
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
fn list(items: &[String], last: &str) -> String {
    let refs: Vec<&str> = items.iter().map(String::as_str).collect();
    code_list(&refs, last)
}

fn plural(count: u64, word: &str) -> String {
    if count == 1 {
        format!("{count} {word}")
    } else {
        format!("{count} {word}s")
    }
}

/// `text` cut to `max` characters, with `…`.
fn cut(text: &str, max: usize) -> String {
    let first_line = text.lines().next().unwrap_or("");
    if text.chars().count() <= max && first_line.len() == text.trim_end().len() {
        return text.trim_end().to_owned();
    }
    let mut out: String = first_line.chars().take(max).collect();
    out.push('…');
    out
}

/// Paths of instance errors that already have a type finding: other keywords failing on the
/// same value (an `enum` or `pattern` next to a wrong `type`) say nothing new.
pub(crate) fn typed_paths<'e>(errors: &'e [ValidationError<'_>]) -> HashSet<&'e str> {
    errors
        .iter()
        .filter(|e| matches!(e.kind(), ValidationErrorKind::Type { .. }))
        .map(|e| e.instance_path().as_str())
        .collect()
}

/// Whether `error` repeats a type finding at its path.
pub(crate) fn is_redundant(error: &ValidationError<'_>, typed: &HashSet<&str>) -> bool {
    !matches!(error.kind(), ValidationErrorKind::Type { .. })
        && typed.contains(error.instance_path().as_str())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_read_like_kubectl_explain() {
        let path = steps("/spec/template/spec/containers/0/env/1/value");
        assert_eq!(
            dotted(&path),
            "spec.template.spec.containers[0].env[1].value"
        );
        let labels = steps("/metadata/labels/app.kubernetes.io~1name");
        assert_eq!(
            dotted(&labels),
            "metadata.labels[\"app.kubernetes.io/name\"]"
        );
    }

    #[test]
    fn lists_are_cut() {
        assert_eq!(code_list(&["a", "b", "c"], " or "), "`a`, `b` or `c`");
        let many: Vec<String> = (0..10).map(|i| i.to_string()).collect();
        let text = list(&many, " or ");
        assert!(text.ends_with("… (10 in all)"), "{text}");
        assert_eq!(cut("abcdef", 3), "abc…");
        assert_eq!(cut("a\nb", 10), "a…");
    }
}

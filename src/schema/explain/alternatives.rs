//! `oneOf`, `anyOf` and `not` failures reduced to one finding: "an integer or a quantity
//! string", "exactly one of `a` or `b`", rather than one error per branch.

use jsonschema::ValidationError;
use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::types::JsonType;
use serde_json::Value as JsonValue;

use super::violation::Violation;
use super::words::code_list;
use super::{QUANTITY_EXAMPLE, QUANTITY_PATTERN};
use crate::diagnostic::Diagnostic;
use crate::schema::rule;

impl Violation<'_, '_> {
    /// `oneOf`/`anyOf` that failed (or, `multiple`, a `oneOf` that matched several branches).
    pub(super) fn alternatives(
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

    pub(super) fn exclusive(&self, names: &[String], exactly_one: bool) -> Diagnostic {
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

    pub(super) fn not(&self, schema: &JsonValue) -> Diagnostic {
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

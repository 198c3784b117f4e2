//! Turns validation errors into findings people can act on.
//!
//! A `jsonschema` error says where in the instance (a JSON pointer) and which keyword failed.
//! Here the pointer is followed in the spanned YAML tree to a file position and a dotted field
//! path, the failing keyword's schema is looked up (through the error's absolute keyword
//! location) for what was expected, and `oneOf`/`anyOf` failures are reduced to one finding:
//! "an integer or a quantity string" rather than one error per branch.

mod alternatives;
mod pointer;
mod violation;
mod words;

use std::collections::HashSet;
use std::fmt::Write as _;

use jsonschema::ValidationError;
use jsonschema::error::ValidationErrorKind;

use super::rule;
use super::store::{Compiled, Deprecation, Elsewhere};
use super::versions::Removed;
use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::yaml::{Node, Span, Value};
pub(super) use pointer::dotted;
use violation::Violation;
use words::{cut, list};

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
    /// The target Kubernetes minor, e.g. `1.32`.
    kubernetes: &'static str,
}

impl<'a> Report<'a> {
    pub(crate) fn new(
        object: &'a Object<'a>,
        source: Option<&'a str>,
        kubernetes: &'static str,
    ) -> Self {
        Self {
            object,
            source,
            kubernetes,
        }
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
                removed.api_version, removed.removed_in, self.kubernetes
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

    /// A built-in group without this version or kind at the target; `elsewhere` is what
    /// another vendored minor says of it.
    pub(crate) fn not_served(&self, served: &[String], elsewhere: Option<Elsewhere>) -> Diagnostic {
        let kind = &self.object.id.kind;
        let api_version = self.object.api_version;
        let target = self.kubernetes;
        if let Some(Elsewhere::RemovedIn(minor)) = elsewhere {
            let mut d = Diagnostic::error(
                rule::API_VERSION_REMOVED,
                format!(
                    "{kind} `{api_version}` was removed in Kubernetes {minor}; {target} does not \
                     serve it"
                ),
            )
            .field("apiVersion")
            .found(api_version);
            d = match served.first() {
                Some(first) => d
                    .expected(list(served, " or "))
                    .fix(format!("use `apiVersion: {first}`")),
                None => d.fix(format!("remove the {kind}, or target an older Kubernetes")),
            };
            return self.diagnostic(d, self.api_version_span());
        }
        let served_from = match elsewhere {
            Some(Elsewhere::From(minor)) => format!(": it is served from Kubernetes {minor}"),
            _ => String::new(),
        };
        let mut d = Diagnostic::error(
            rule::KIND_NOT_SERVED,
            format!("Kubernetes {target} does not serve {kind} in `{api_version}`{served_from}"),
        )
        .field("apiVersion")
        .found(api_version);
        if let Some(Elsewhere::From(minor)) = elsewhere {
            let fix = format!(
                "if the cluster runs Kubernetes {minor} or later, say so: \
                 `--kubernetes-version {minor}`"
            );
            let fix = match served.first() {
                Some(first) => format!("{fix}; else use `apiVersion: {first}`"),
                None => fix,
            };
            return self.diagnostic(d.fix(fix), self.api_version_span());
        }
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

    /// A custom resource field's `null` that the API server drops (at `pointer`): accepted by
    /// `kubectl apply` and `kubectl create`, refused by a server-side apply (Config Sync),
    /// which skips that pruning (found with a real API server, `tests/server_object.rs`).
    pub(crate) fn dropped_null(&self, pointer: &str, node: &Node) -> Diagnostic {
        let path = dotted(&crate::yaml::pointer::steps(pointer));
        let d = Diagnostic::warning(
            rule::SCHEMA_VIOLATION,
            format!(
                "`{path}` is null: `kubectl apply` and `kubectl create` drop it, but a \
                 server-side apply (Config Sync, `kubectl apply --server-side`) refuses it"
            ),
        )
        .field(path)
        .found("null")
        .expected("a value, or no field")
        .fix("remove the field (or give it a value)");
        self.diagnostic(d, node.span)
    }

    /// A CEL rule's verdict: a failed rule is an error at its field with the rule's message
    /// (the server refuses the object); a rule the tool cannot evaluate is a warning that
    /// names the rule and the kind, so a skip is never silent.
    pub(crate) fn cel(&self, outcome: super::validations::Outcome<'_>) -> Diagnostic {
        use super::validations::Outcome;
        let kind = &self.object.id.kind;
        // A collection is shown at its key, as other findings show it.
        let span = |node: &Node, pointer: &str| {
            let located = pointer::locate(self.object.node, &crate::yaml::pointer::steps(pointer));
            if located.found {
                located.span()
            } else {
                node.span
            }
        };
        match outcome {
            Outcome::Failed {
                node,
                pointer,
                rule,
                message,
                reason,
            } => {
                let path = dotted(&crate::yaml::pointer::steps(&pointer));
                let shown = if path.is_empty() {
                    "the object".to_owned()
                } else {
                    format!("`{path}`")
                };
                let reason = reason.map_or_else(String::new, |r| format!(" ({r})"));
                let d = Diagnostic::error(
                    rule::SCHEMA_VIOLATION,
                    format!("{shown}: {message}{reason}"),
                )
                .field(path)
                .expected(format!(
                    "the {kind} CRD's rule `{}` to hold",
                    cut(&rule, 160)
                ))
                .fix("change the value so that the rule holds");
                self.diagnostic(d, span(node, &pointer))
            }
            Outcome::NotEvaluated {
                node,
                pointer,
                rule,
                why,
            } => {
                let path = dotted(&crate::yaml::pointer::steps(&pointer));
                let d = Diagnostic::warning(
                    rule::SCHEMA_VIOLATION,
                    format!(
                        "the {kind} CRD's rule `{}` was not evaluated: {why}; the API server \
                         evaluates it",
                        cut(&rule, 160)
                    ),
                )
                .field(path)
                .expected("the rule to hold (not checked by the tool)");
                self.diagnostic(d, span(node, &pointer))
            }
        }
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
    use super::pointer::dotted;
    use super::words::{code_list, cut, list};
    use crate::yaml::pointer::steps;

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

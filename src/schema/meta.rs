//! `metadata` as the API server validates it for every object, built-in or custom, beyond
//! what `ObjectMeta`'s schema says: the name's form (which depends on the kind), label keys
//! and values, annotation keys and their total size (Kubernetes'
//! `apimachinery/pkg/api/validation.ValidateObjectMeta`), and the labels and annotations of a
//! built-in kind's pod template. Findings are `schema-violation`s.

use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::yaml::pointer::Step;
use crate::yaml::{Node, Span, Value};

use super::{explain, rule};

/// Where pod templates keep their `metadata` in built-in kinds; the server validates their
/// labels and annotations as it does the object's. (It does not in custom resources: a
/// JobSet's templates are checked against its schema only.)
const TEMPLATES: &[&[&str]] = &[
    &["spec", "template", "metadata"],
    &["template", "metadata"],
    &["spec", "jobTemplate", "metadata"],
    &["spec", "jobTemplate", "spec", "template", "metadata"],
];

/// `<metadata path>.<map>["key"]`, as schema findings name fields.
fn field(at: &[&str], map: &str, key: Option<&str>) -> String {
    let steps: Vec<Step> = at
        .iter()
        .chain([&map])
        .chain(key.as_ref())
        .map(|s| Step::Key((*s).to_owned()))
        .collect();
    explain::dotted(&steps)
}

/// Longest label value and name part of a qualified name.
const MAX_LABEL: usize = 63;
/// Longest DNS-1123 subdomain (names, prefixes of qualified names).
const MAX_SUBDOMAIN: usize = 253;
/// Most bytes all annotations of an object may hold, keys and values together.
const MAX_ANNOTATIONS: usize = 256 * 1024;

/// The forms an object name takes, by kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum NameForm {
    /// Most kinds, custom resources included.
    Subdomain,
    /// Namespaces and StatefulSets: a DNS-1123 label.
    Label,
    /// Services: a DNS-1035 label (starts with a letter).
    Dns1035,
    /// RBAC, API priority and fairness objects, PodDisruptionBudgets: anything but `/`, `%`,
    /// `.` and `..`.
    PathSegment,
}

fn name_form(group: &str, kind: &str) -> NameForm {
    match (group, kind) {
        // A StatefulSet's name is in its pods' host names.
        ("", "Namespace") | ("apps", "StatefulSet") => NameForm::Label,
        ("", "Service") => NameForm::Dns1035,
        // PodDisruptionBudget's own validation leaves the name out: only the check every
        // object gets (a path segment) applies.
        ("rbac.authorization.k8s.io" | "flowcontrol.apiserver.k8s.io", _)
        | ("policy", "PodDisruptionBudget") => NameForm::PathSegment,
        _ => NameForm::Subdomain,
    }
}

/// Why `name` is not a DNS-1123 subdomain, if it is not: dot-separated parts of lowercase
/// letters, digits and `-`, each starting and ending with a letter or digit (no limit per
/// part, unlike DNS itself).
fn subdomain(name: &str) -> Result<(), String> {
    if name.len() > MAX_SUBDOMAIN {
        return Err(format!(
            "{} characters, at most {MAX_SUBDOMAIN} allowed",
            name.len()
        ));
    }
    let allowed = |b: u8| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.';
    if !name.bytes().all(allowed) {
        return Err("only lowercase letters, digits, `-` and `.` are allowed".into());
    }
    let parts_ok = name.split('.').all(|part| {
        part.starts_with(|c: char| c.is_ascii_alphanumeric())
            && part.ends_with(|c: char| c.is_ascii_alphanumeric())
    });
    if parts_ok {
        Ok(())
    } else {
        Err("must start and end with a letter or digit, as must each part between dots".into())
    }
}

fn dns_1035(name: &str) -> Result<(), String> {
    crate::names::check_dns_label(name)?;
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        return Err("must start with a letter".into());
    }
    Ok(())
}

/// The name part of a qualified name, or a label value when `empty_ok`.
fn label_text(text: &str, empty_ok: bool) -> Result<(), String> {
    if text.is_empty() {
        return if empty_ok {
            Ok(())
        } else {
            Err("empty".into())
        };
    }
    if text.len() > MAX_LABEL {
        return Err(format!(
            "{} characters, at most {MAX_LABEL} allowed",
            text.len()
        ));
    }
    if !text
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err("only letters, digits, `-`, `_` and `.` are allowed".into());
    }
    if !text.starts_with(|c: char| c.is_ascii_alphanumeric())
        || !text.ends_with(|c: char| c.is_ascii_alphanumeric())
    {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// A label or annotation key: `[prefix/]name`, the prefix a DNS-1123 subdomain.
fn qualified_name(key: &str) -> Result<(), String> {
    let name = match key.split_once('/') {
        Some((prefix, name)) => {
            if prefix.is_empty() {
                return Err("the prefix before `/` is empty".into());
            }
            subdomain(prefix).map_err(|why| format!("prefix `{prefix}`: {why}"))?;
            name
        }
        None => key,
    };
    label_text(name, false)
}

/// A finding about `object`.
fn finding(
    object: &Object<'_>,
    field: String,
    span: Span,
    message: String,
    found: &str,
    expected: &str,
) -> Diagnostic {
    Diagnostic::error(rule::SCHEMA_VIOLATION, message)
        .at(object.file, span)
        .object(object.id.clone())
        .field(field)
        .found(found)
        .expected(expected)
}

/// Checks `object`'s `metadata`, and its pod templates' when it is a built-in kind; findings
/// go to `out`.
pub(crate) fn check(object: &Object<'_>, builtin: bool, out: &mut Vec<Diagnostic>) {
    let Some(metadata) = object.node.get("metadata") else {
        return;
    };
    check_name(object, metadata, out);
    labels_and_annotations(object, &["metadata"], metadata, out);
    if builtin {
        for path in TEMPLATES {
            let node = path.iter().try_fold(object.node, |node, key| node.get(key));
            if let Some(node) = node {
                labels_and_annotations(object, path, node, out);
            }
        }
    }
}

fn check_name(object: &Object<'_>, metadata: &Node, out: &mut Vec<Diagnostic>) {
    let form = name_form(object.group(), &object.id.kind);
    let kind = &object.id.kind;
    if let Some(node) = metadata.get("name")
        && let Some(name) = node.as_str()
    {
        let (checked, expected) = check_form(form, name);
        if let Err(why) = checked {
            out.push(finding(
                object,
                "metadata.name".into(),
                node.span,
                format!("`{name}` is not a valid {kind} name: {why}"),
                name,
                expected,
            ));
        } else if let Some((most, why)) = kind_length(object)
            && name.len() > most
        {
            out.push(finding(
                object,
                "metadata.name".into(),
                node.span,
                format!(
                    "`{name}` is too long for a {kind} name: {} characters, at most {most} ({why})",
                    name.len()
                ),
                name,
                &format!("at most {most} characters"),
            ));
        }
    }
    // The server checks a `generateName` as the start of a name of the kind's form
    // (`ValidateObjectMeta` with the kind's name function and `prefix`: a trailing `-` is
    // allowed, as the random suffix follows it).
    if let Some(node) = metadata.get("generateName")
        && let Some(prefix) = node.as_str()
        && !prefix.is_empty()
    {
        let masked = match prefix.strip_suffix('-') {
            Some(rest) if !rest.is_empty() => format!("{rest}a"),
            _ => prefix.to_string(),
        };
        let (checked, expected) = check_form(form, &masked);
        if let Err(why) = checked {
            out.push(finding(
                object,
                "metadata.generateName".into(),
                node.span,
                format!("`{prefix}` is not a valid {kind} name prefix: {why}"),
                prefix,
                expected,
            ));
        }
    }
}

/// Whether `name` has `form`, and the form in words.
fn check_form(form: NameForm, name: &str) -> (Result<(), String>, &'static str) {
    match form {
        NameForm::Subdomain => (
            subdomain(name),
            "a DNS-1123 subdomain: lowercase letters, digits, `-` and `.`, at most 253, starting and ending with a letter or digit",
        ),
        NameForm::Label => (
            crate::names::check_dns_label(name),
            "a DNS-1123 label: lowercase letters, digits and `-`, at most 63, starting and ending with a letter or digit",
        ),
        NameForm::Dns1035 => (
            dns_1035(name),
            "a DNS-1035 label: lowercase letters, digits and `-`, at most 63, starting with a letter and ending with a letter or digit",
        ),
        NameForm::PathSegment => (
            crate::names::path_segment(name),
            "a name without `/` or `%`, not `.` or `..`",
        ),
    }
}

/// Kinds whose names the server caps below their form's length, and why.
fn kind_length(object: &Object<'_>) -> Option<(usize, &'static str)> {
    match (object.group(), object.id.kind.as_str()) {
        // pkg/apis/batch/validation, `ValidateCronJobCreate`: its Jobs are named
        // `<name>-<11 characters>`.
        ("batch", "CronJob") => Some((52, "its Jobs add an 11-character suffix to it")),
        // The Job's strategy labels its pods `batch.kubernetes.io/job-name: <name>`, a label
        // value, unless the Job chooses its own selector (`manualSelector: true`).
        ("batch", "Job") => {
            let manual = object.node.at(&["spec", "manualSelector"]);
            let manual = manual.is_some_and(|node| node.value == Value::Bool(true));
            (!manual).then_some((
                MAX_LABEL,
                "its pods carry it in the `batch.kubernetes.io/job-name` label",
            ))
        }
        _ => None,
    }
}

/// The labels and annotations of the `metadata` at `at`.
fn labels_and_annotations(
    object: &Object<'_>,
    at: &[&str],
    metadata: &Node,
    out: &mut Vec<Diagnostic>,
) {
    if let Some(Value::Map(labels)) = metadata.get("labels").map(|n| &n.value) {
        for (key, value) in labels {
            let field = field(at, "labels", Some(&key.text));
            if let Err(why) = qualified_name(&key.text) {
                out.push(finding(
                    object,
                    field.clone(),
                    key.span,
                    format!("label key `{}` is not valid: {why}", key.text),
                    &key.text,
                    "`[prefix/]name`: a name of at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit; the prefix a DNS-1123 subdomain",
                ));
            }
            if let Some(text) = value.as_str()
                && let Err(why) = label_text(text, true)
            {
                out.push(finding(
                    object,
                    field,
                    value.span,
                    format!("label value `{text}` is not valid: {why}"),
                    text,
                    "empty, or at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit",
                ));
            }
        }
    }
    if let Some(
        annotations @ Node {
            value: Value::Map(entries),
            ..
        },
    ) = metadata.get("annotations")
    {
        let mut size = 0;
        for (key, value) in entries {
            size += key.text.len() + value.as_str().map_or(0, str::len);
            if let Err(why) = qualified_name(&key.text.to_ascii_lowercase()) {
                out.push(finding(
                    object,
                    field(at, "annotations", Some(&key.text)),
                    key.span,
                    format!("annotation key `{}` is not valid: {why}", key.text),
                    &key.text,
                    "`[prefix/]name`: a name of at most 63 letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit; the prefix a DNS-1123 subdomain",
                ));
            }
        }
        if size > MAX_ANNOTATIONS {
            out.push(finding(
                object,
                field(at, "annotations", None),
                annotations.span,
                format!("annotations hold {size} bytes, more than the {MAX_ANNOTATIONS} the API server accepts"),
                &format!("{size} bytes"),
                "at most 262144 bytes of keys and values",
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_take_the_form_of_their_kind() {
        assert!(subdomain("a.b-c.d").is_ok());
        assert!(subdomain("Aiml_Bad.Name").is_err());
        assert!(subdomain("a..b").is_err());
        assert!(
            subdomain(&"a".repeat(92)).is_ok(),
            "no 63-character limit per part"
        );
        assert!(subdomain("a.-b").is_err());
        assert!(subdomain(&"a".repeat(254)).is_err());
        assert!(dns_1035("web-1").is_ok());
        assert!(dns_1035("1web").is_err());
        assert!(dns_1035("a.b").is_err());
        assert!(crate::names::path_segment("system:aggregate-to-view").is_ok());
        assert!(crate::names::path_segment("a/b").is_err());
        assert_eq!(name_form("", "Service"), NameForm::Dns1035);
        assert_eq!(name_form("", "Namespace"), NameForm::Label);
        assert_eq!(name_form("apps", "StatefulSet"), NameForm::Label);
        assert_eq!(
            name_form("rbac.authorization.k8s.io", "ClusterRole"),
            NameForm::PathSegment
        );
        assert_eq!(
            name_form("kueue.x-k8s.io", "ClusterQueue"),
            NameForm::Subdomain
        );
    }

    fn findings(text: &str) -> Vec<String> {
        let node = crate::yaml::parse_documents(text).unwrap().remove(0);
        let object = Object::from_node("f.yaml", &node).unwrap();
        let mut out = Vec::new();
        check(&object, true, &mut out);
        out.into_iter()
            .map(|d| format!("{}: {}", d.field.unwrap_or_default(), d.message))
            .collect()
    }

    #[test]
    fn generate_name_is_a_prefix_of_the_kinds_form() {
        let config_map = |prefix: &str| {
            findings(&format!(
                "apiVersion: v1\nkind: ConfigMap\nmetadata: {{generateName: {prefix}}}\n"
            ))
        };
        assert!(config_map("run-").is_empty());
        assert!(config_map("a.b-").is_empty());
        let bad = config_map("Run_");
        assert!(
            bad[0]
                .starts_with("metadata.generateName: `Run_` is not a valid ConfigMap name prefix"),
            "{bad:?}"
        );
        let service = findings("apiVersion: v1\nkind: Service\nmetadata: {generateName: 1web-}\n");
        assert_eq!(service.len(), 1, "{service:?}");
    }

    #[test]
    fn jobs_and_cron_jobs_have_shorter_names() {
        let long = "a".repeat(64);
        let job = |extra: &str| {
            findings(&format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: {long}}}\nspec: {{{extra}}}\n"
            ))
        };
        assert!(job("")[0].contains("at most 63"), "{:?}", job(""));
        assert!(job("manualSelector: true").is_empty());
        let cron = |name: &str| {
            findings(&format!(
                "apiVersion: batch/v1\nkind: CronJob\nmetadata: {{name: {name}}}\n"
            ))
        };
        assert!(cron(&"a".repeat(52)).is_empty());
        assert!(cron(&"a".repeat(53))[0].contains("at most 52"));
        // A Deployment's name is a subdomain: 64 characters are fine.
        let deployment = findings(&format!(
            "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: {long}}}\n"
        ));
        assert!(deployment.is_empty(), "{deployment:?}");
    }

    #[test]
    fn label_keys_and_values() {
        for good in [
            "app",
            "app.kubernetes.io/name",
            "a_b.C-1",
            "cloud.google.com/gke-tpu-topology",
        ] {
            assert!(qualified_name(good).is_ok(), "{good}");
        }
        for bad in [
            "",
            "/a",
            "a b",
            "-a",
            "Bad_Prefix/a",
            &"a".repeat(64),
            "a/b/c",
        ] {
            assert!(qualified_name(bad).is_err(), "{bad}");
        }
        assert!(label_text("", true).is_ok());
        assert!(label_text("not a label value!", true).is_err());
        assert!(label_text("v1.2_3-x", true).is_ok());
    }
}

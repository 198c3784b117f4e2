//! Credentials in manifests: a token pasted into any field of any object, and Secrets that
//! carry their values in the manifest. Manifests are committed and reviewed; credentials in
//! them are leaked. Recognising a credential is [`crate::secrets`]' business.

use crate::diagnostic::Diagnostic;
use crate::secrets::{self, RULE};
use crate::validate::Object;
use crate::validate::model::workload::{container_nodes, templates};
use crate::yaml::{Node, Value};

pub(crate) fn check(objects: &[Object<'_>], out: &mut Vec<Diagnostic>) {
    for object in objects {
        let secret = is_secret(object);
        for leak in secrets::find(object.node, "") {
            // A Secret's own values are judged below, once.
            if secret && (leak.field.starts_with("data.") || leak.field.starts_with("stringData."))
            {
                continue;
            }
            out.push(
                Diagnostic::error(
                    RULE,
                    format!("`{}` holds {}: credentials never belong in a manifest", leak.field, leak.what),
                )
                .at(object.file, leak.node.span)
                .object(object.id.clone())
                .field(leak.field)
                .fix("revoke the credential, then reference it: a Secret created out of band, or Secret Manager"),
            );
        }
        if secret {
            check_secret_values(object, out);
        }
        check_env_literals(object, out);
    }
}

/// Whether an environment variable's name says its value is a credential: one of its
/// `_`-separated words is `TOKEN`, `PASSWORD`, `PASSWD`, `SECRET` or `APIKEY`, or two are
/// `API KEY` or `PRIVATE KEY` (`TOKENIZER` is not a token).
fn names_a_credential(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    let words: Vec<&str> = upper.split('_').collect();
    words
        .iter()
        .any(|word| matches!(*word, "TOKEN" | "PASSWORD" | "PASSWD" | "SECRET" | "APIKEY"))
        || words
            .windows(2)
            .any(|pair| matches!(pair, ["API" | "PRIVATE", "KEY"]))
}

/// A container environment variable named like a credential whose value is written in the
/// manifest, whatever its shape: the shapes above catch known issuers only. Empty values and
/// `$(VAR)` references to other variables are not credentials.
fn check_env_literals(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    for template in templates(std::slice::from_ref(object)) {
        for (container, path) in container_nodes(template.spec, &template.path) {
            for (index, variable) in container.items("env").iter().enumerate() {
                let Some(name) = variable.get("name").and_then(Node::as_str) else {
                    continue;
                };
                let upper = name.to_ascii_uppercase();
                // `TOKEN_PATH`, `SECRET_NAME`… name where a credential is, not the credential.
                let reference = [
                    "_PATH",
                    "_FILE",
                    "_DIR",
                    "_NAME",
                    "_URL",
                    "_URI",
                    "_ENDPOINT",
                ]
                .iter()
                .any(|suffix| upper.ends_with(suffix));
                if reference || !names_a_credential(name) {
                    continue;
                }
                let Some(value) = variable.get("value") else {
                    continue;
                };
                let text = value.as_str().unwrap_or("value");
                // Tokens of known shapes are errors above, once.
                // A Secret Manager resource name is where the value is, not the value.
                let secret_manager = text.starts_with("projects/") && text.contains("/secrets/");
                if text.is_empty()
                    || text.starts_with("$(")
                    || secret_manager
                    || is_switch(text)
                    || secrets::credential(text).is_some()
                {
                    continue;
                }
                out.push(
                    Diagnostic::warning(
                        RULE,
                        format!("environment variable `{name}` holds its value in the manifest"),
                    )
                    .at(object.file, value.span)
                    .object(object.id.clone())
                    .field(format!("{path}.env[{index}].value"))
                    .fix("put the value in a Secret (or Secret Manager) and reference it with `valueFrom.secretKeyRef`"),
                );
            }
        }
    }
}

/// Whether `text` turns a feature on or off: the variable names a credential *feature*
/// (KubeRay's `RAY_ENABLE_K8S_TOKEN_AUTH: "true"`), and no credential is a boolean word.
fn is_switch(text: &str) -> bool {
    [
        "true", "false", "yes", "no", "on", "off", "enabled", "disabled",
    ]
    .iter()
    .any(|word| text.eq_ignore_ascii_case(word))
}

/// Whether the Secret rule reads `object` beyond the credential scan every object gets.
pub(crate) fn reads(object: &Object<'_>) -> bool {
    is_secret(object)
}

fn is_secret(object: &Object<'_>) -> bool {
    object.api_version == "v1" && object.id.kind == "Secret"
}

/// A Secret with values in the manifest puts them in git (base64 is not encryption). Values
/// encrypted by SOPS (`ENC[…]`) are what the manifest should hold, and empty values are
/// placeholders.
fn check_secret_values(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    for field in ["data", "stringData"] {
        let Some(node) = object.node.get(field) else {
            continue;
        };
        let Value::Map(entries) = &node.value else {
            continue;
        };
        for (key, value) in entries {
            let text = match &value.value {
                Value::String(text) => text.as_str(),
                Value::Null => "",
                _ => "value",
            };
            if text.is_empty() || text.starts_with("ENC[") {
                continue;
            }
            let diagnostic = match secrets::credential(text) {
                Some(what) => Diagnostic::error(
                    RULE,
                    format!("Secret carries {what} in `{}` in the manifest", key.text),
                ),
                None => Diagnostic::warning(
                    RULE,
                    format!("Secret carries the value of `{}` in the manifest", key.text),
                ),
            };
            out.push(
                diagnostic
                .at(object.file, value.span)
                .object(object.id.clone())
                .field(format!("{field}.{}", key.text))
                .fix("create the Secret out of band (or from Secret Manager) and keep only references in git"),
            );
        }
    }
}

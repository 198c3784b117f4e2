//! Credentials in manifests: a token pasted into any field of any object, and Secrets that
//! carry their values in the manifest. Manifests are committed and reviewed; credentials in
//! them are leaked. Recognising a credential is [`crate::secrets`]' business.

use crate::diagnostic::Diagnostic;
use crate::secrets::{self, RULE};
use crate::validate::Object;
use crate::yaml::Value;

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
    }
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

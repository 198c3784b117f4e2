//! Hugging Face: the tokenizer that counts tokens, and the token its download needs, which
//! the blueprint references (a Kubernetes Secret or Secret Manager) and never holds.

use serde::Serialize;

use super::spec::Spec;
use crate::gcp::{self, Gcp, IamTarget};
use crate::names::check_dns_label;
use crate::plan::Planner;

#[derive(Debug, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub(super) enum TokenPlan {
    Secret { name: String, key: String },
    SecretManager { path: String },
}

/// Hugging Face repository ids: `name` or `owner/name`.
pub(super) fn check_tokenizer(planner: &mut Planner<'_>, tokenizer: &str) {
    let part_ok = |part: &str| spelled(part, 96, b"-_.");
    let valid = match tokenizer.split_once('/') {
        Some((owner, model)) => part_ok(owner) && part_ok(model),
        None => part_ok(tokenizer),
    };
    if !valid {
        let d = planner.error(
            gcp::rule::CONFLICT,
            "spec.tokenizer",
            format!("`{tokenizer}` is not a Hugging Face model id"),
        );
        d.expected = Some("`<owner>/<model>`, e.g. `meta-llama/Llama-2-70b-hf`".into());
    }
}

/// 1 to `max` bytes, each an ASCII letter or digit or one of `extra`.
pub(super) fn spelled(text: &str, max: usize, extra: &[u8]) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

/// The Hugging Face token as the load generator reads it, with the grant a Secret Manager
/// secret needs; `None` (with findings) when it is not referenced exactly once.
pub(super) fn token_plan(
    spec: &Spec,
    planner: &mut Planner<'_>,
    gcp: &mut Gcp,
    load_account: &gcp::AccountHandle,
) -> Option<TokenPlan> {
    let token = spec.hugging_face_token.as_ref()?;
    match (&token.secret, &token.secret_manager) {
        (Some(secret), None) => {
            let key = secret.key.clone().unwrap_or_else(|| "token".into());
            planner.check_name(
                gcp::rule::KUBERNETES_NAME,
                "spec.huggingFaceToken.secret.name",
                &secret.name,
                check_dns_label,
            );
            if !spelled(&key, usize::MAX, b"-_.") {
                let d = planner.error(
                    gcp::rule::KUBERNETES_NAME,
                    "spec.huggingFaceToken.secret.key",
                    format!("`{key}` is not a Secret key"),
                );
                d.expected = Some("letters, digits, `-`, `_` and `.`".into());
            }
            Some(TokenPlan::Secret {
                name: secret.name.clone(),
                key,
            })
        }
        (None, Some(manager)) => {
            let project = manager
                .project
                .clone()
                .unwrap_or_else(|| spec.project.clone());
            let version = manager.version.clone().unwrap_or_else(|| "latest".into());
            if !spelled(&manager.secret, 255, b"-_") {
                let d = planner.error(
                    gcp::rule::RESOURCE_NAME,
                    "spec.huggingFaceToken.secretManager.secret",
                    format!("`{}` is not a Secret Manager secret id", manager.secret),
                );
                d.expected = Some("letters, digits, `-` and `_`".into());
            }
            if version != "latest" && !version.bytes().all(|b| b.is_ascii_digit()) {
                let d = planner.error(
                    gcp::rule::RESOURCE_NAME,
                    "spec.huggingFaceToken.secretManager.version",
                    format!("`{version}` is not a secret version"),
                );
                d.expected = Some("`latest` or a version number".into());
            }
            if manager.project.is_some() {
                planner.check_name(
                    gcp::rule::PROJECT_ID,
                    "spec.huggingFaceToken.secretManager.project",
                    &project,
                    crate::names::project_id,
                );
            }
            gcp.api("secretmanager.googleapis.com");
            let secret = format!("projects/{project}/secrets/{}", manager.secret);
            gcp.grant(
                &IamTarget::external(
                    "secretmanager",
                    "SecretManagerSecret",
                    secret.clone(),
                    &manager.secret,
                ),
                load_account,
                "roles/secretmanager.secretAccessor",
            );
            Some(TokenPlan::SecretManager {
                path: format!("{secret}/versions/{version}"),
            })
        }
        (Some(_), Some(_)) | (None, None) => {
            let d = planner.error(
                gcp::rule::CONFLICT,
                "spec.huggingFaceToken",
                "the token is referenced by exactly one of `secret` and `secretManager`",
            );
            d.fix = Some(
                "`huggingFaceToken: {secret: {name: hf-token}}` or `huggingFaceToken: {secretManager: {secret: hf-token}}`"
                    .into(),
            );
            None
        }
    }
}

//! Hugging Face: the tokenizer that counts tokens, and the token its download needs, which
//! the blueprint references (a Kubernetes Secret or Secret Manager) and never holds.

use super::spec::Spec;
use crate::gcp::{self, AccountHandle, Gcp};
use crate::overlay::secret_ref::{SecretRef, SecretStanza};
use crate::plan::Planner;
use crate::plan::checks::spelled;

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

/// The Hugging Face token as the load generator reads it, with the grant a Secret Manager
/// secret needs; `None` (with findings) when it is not referenced exactly once.
pub(super) fn token_plan(
    spec: &Spec,
    planner: &mut Planner<'_>,
    gcp: &mut Gcp,
    load_account: &AccountHandle,
) -> Option<SecretRef> {
    let token = spec.hugging_face_token.as_ref()?;
    let stanza = SecretStanza {
        field: "spec.huggingFaceToken",
        what: "the token",
        example: "hf-token",
        secret: token.secret.as_ref(),
        secret_manager: token.secret_manager.as_ref(),
    };
    stanza.plan(planner, gcp, &spec.project, load_account)
}

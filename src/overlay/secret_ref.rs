//! A credential a blueprint references and never holds: a key of a Kubernetes Secret created
//! out of band, or a Secret Manager secret that a workload's account is granted to read.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::gcp::{self, AccountHandle, Gcp, IamTarget};
use crate::names::check_dns_label;
use crate::plan::Planner;
use crate::plan::checks::spelled;

/// Where a workload reads the credential, as its template sees it.
#[derive(Debug, Serialize)]
#[serde(tag = "from", rename_all = "snake_case")]
pub enum SecretRef {
    /// A key of a Kubernetes Secret in the workload's namespace.
    Secret {
        /// Secret name.
        name: String,
        /// Key in the Secret.
        key: String,
    },
    /// A Secret Manager secret version.
    SecretManager {
        /// `projects/<project>/secrets/<secret>/versions/<version>`.
        path: String,
    },
}

// The two stanzas as a spec writes them. They have no doc comment of their own, which would
// become their description in each kind's JSON Schema; the fields' are part of it.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SecretKeySpec {
    /// Secret name.
    pub(crate) name: String,
    /// Key in the Secret (default `token`).
    pub(crate) key: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct SecretManagerSpec {
    /// Secret id.
    pub(crate) secret: String,
    /// Project of the secret (default: the blueprint's).
    pub(crate) project: Option<String>,
    /// Version (default `latest`).
    pub(crate) version: Option<String>,
}

/// A credential's stanza: where it is and how findings name it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SecretStanza<'a> {
    /// Dotted field of the stanza, e.g. `spec.huggingFaceToken`.
    pub(crate) field: &'a str,
    /// What it is, for messages, e.g. `the token`.
    pub(crate) what: &'a str,
    /// A secret name for examples in fixes, e.g. `hf-token`.
    pub(crate) example: &'a str,
    /// `<field>.secret`.
    pub(crate) secret: Option<&'a SecretKeySpec>,
    /// `<field>.secretManager`.
    pub(crate) secret_manager: Option<&'a SecretManagerSpec>,
}

impl SecretStanza<'_> {
    /// The reference, checked, with the grant a Secret Manager secret needs for `reader`
    /// (in `project` unless the stanza names another); `None` (with findings) when it is not
    /// referenced exactly once.
    pub(crate) fn plan(
        &self,
        planner: &mut Planner<'_>,
        gcp: &mut Gcp,
        project: &str,
        reader: &AccountHandle,
    ) -> Option<SecretRef> {
        let field = self.field;
        match (self.secret, self.secret_manager) {
            (Some(secret), None) => {
                let name = &secret.name;
                let key = secret.key.clone().unwrap_or_else(|| "token".into());
                planner.check_name(
                    gcp::rule::KUBERNETES_NAME,
                    &format!("{field}.secret.name"),
                    name,
                    check_dns_label,
                );
                if !spelled(&key, usize::MAX, b"-_.") {
                    let d = planner.error(
                        gcp::rule::KUBERNETES_NAME,
                        &format!("{field}.secret.key"),
                        format!("`{key}` is not a Secret key"),
                    );
                    d.expected = Some("letters, digits, `-`, `_` and `.`".into());
                }
                Some(SecretRef::Secret {
                    name: name.clone(),
                    key,
                })
            }
            (None, Some(manager)) => {
                Some(self.secret_manager(planner, gcp, manager, project, reader))
            }
            (Some(_), Some(_)) | (None, None) => {
                let key = field.rsplit('.').next().unwrap_or(field);
                let example = self.example;
                let d = planner.error(
                    gcp::rule::CONFLICT,
                    field,
                    format!(
                        "{} is referenced by exactly one of `secret` and `secretManager`",
                        self.what
                    ),
                );
                d.fix = Some(format!(
                    "`{key}: {{secret: {{name: {example}}}}}` or `{key}: {{secretManager: {{secret: {example}}}}}`"
                ));
                None
            }
        }
    }

    fn secret_manager(
        &self,
        planner: &mut Planner<'_>,
        gcp: &mut Gcp,
        manager: &SecretManagerSpec,
        project: &str,
        reader: &AccountHandle,
    ) -> SecretRef {
        let field = self.field;
        let project = manager.project.as_deref().unwrap_or(project);
        let version = manager.version.as_deref().unwrap_or("latest");
        if !spelled(&manager.secret, 255, b"-_") {
            let d = planner.error(
                gcp::rule::RESOURCE_NAME,
                &format!("{field}.secretManager.secret"),
                format!("`{}` is not a Secret Manager secret id", manager.secret),
            );
            d.expected = Some("letters, digits, `-` and `_`".into());
        }
        if version != "latest" && !version.bytes().all(|b| b.is_ascii_digit()) {
            let d = planner.error(
                gcp::rule::RESOURCE_NAME,
                &format!("{field}.secretManager.version"),
                format!("`{version}` is not a secret version"),
            );
            d.expected = Some("`latest` or a version number".into());
        }
        if manager.project.is_some() {
            planner.check_name(
                gcp::rule::PROJECT_ID,
                &format!("{field}.secretManager.project"),
                project,
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
            reader,
            "roles/secretmanager.secretAccessor",
        );
        SecretRef::SecretManager {
            path: format!("{secret}/versions/{version}"),
        }
    }
}

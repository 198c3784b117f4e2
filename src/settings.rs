//! `aiml.yaml`: the repository's settings, which drive the GitOps wiring ([`crate::sync`]).
//!
//! The file is optional; without it nothing is wired (there is no git URL to point a sync at)
//! and every render is what it was before. With it, only `git.repo` is required (a file that
//! only holds `jsonnet:` wires nothing either):
//!
//! ```yaml
//! git:
//!   repo: https://github.com/acme/ml-platform.git   # what Config Sync / Argo CD pull (no credentials)
//!   branch: main                                   # default: main
//!   dir: platform                                  # this repository inside the git repo (default: its root)
//!   auth: none                                     # none | gcenode | gcpserviceaccount | token | ssh
//! sync:
//!   engine: config-sync                            # config-sync (default) | argocd | none
//! fleet:                                           # Config Sync: where clusters are registered
//!   project: my-fleet-host                         # default: each cluster's own project
//!   namespace: my-fleet-host                       # its Config Connector namespace on the host
//! argocd:                                          # Argo CD: where Applications live
//!   namespace: argocd
//!   project: default
//!   configConnectorCluster: in-cluster             # Argo CD's name for the Config Connector host
//! contexts:                                        # kubeconfig contexts `status` and `diff --live` use
//!   configConnectorHost: admin@host                # default: the current context
//!   argocd: admin@argo                             # where Applications live; default: the host's
//!   clusters:                                      # default: GKE's `gke_<project>_<location>_<cluster>`
//!     my-project/us-west4/sax-cluster: sax-admin
//! platform:                                        # the controllers each cluster's blueprints need
//!   managedElsewhere:                              # clusters that get no platform root (installed by other means)
//!   - my-project/us-west4/sax-cluster
//! jsonnet:                                         # what Jsonnet blueprints receive (crate::jsonnet)
//!   extVars: {env: prod}                           # std.extVar('env') == 'prod'
//!   extCode: {regions: "['us-east5', 'europe-west4']"}  # std.extVar('regions'), a Jsonnet value
//!   tlaVars: {team: ml}                            # top-level arguments, when a file is a function
//!   tlaCode: {replicas: '2'}
//! images:
//!   requireDigests: true                           # a tag alone is an error (`image-digest`); default: false
//! kubernetes:
//!   version: "1.34"                                # the clusters' minor: built-in kinds are checked as it serves them
//! ```
//!
//! It is read as strictly as blueprints ([`crate::blueprint::de`]): unknown fields and wrong
//! types are `settings-schema` findings with the file, line and a did-you-mean, and they stop
//! the command (exit 2), like a malformed blueprint. No secret is ever read or written here:
//! `token` and `ssh` name the Secret `git-creds` that Config Sync expects in
//! `config-management-system`, created on each cluster by hand.

use serde::Deserialize;

use crate::diagnostic::Diagnostic;
use crate::repo::{self, ReadError, SourceFile};
use crate::yaml::{Node, Span};

/// The settings file at the repository root.
pub const SETTINGS_FILE: &str = "aiml.yaml";

/// Rule id of a malformed settings file.
pub const SETTINGS_SCHEMA: &str = "settings-schema";

/// Rules about the settings file.
pub const RULES: &[crate::diagnostic::Rule] = &[crate::diagnostic::Rule {
    id: SETTINGS_SCHEMA,
    summary: "`aiml.yaml` has exactly the settings kubectl-aiml knows, each valid",
}];

/// The Secret Config Sync reads git credentials from (`token`, `ssh`), by its convention.
pub const GIT_CREDENTIALS_SECRET: &str = "git-creds";

/// The repository's settings, checked. [`Settings::default`] is a repository without
/// `aiml.yaml`: nothing is wired.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Settings {
    /// The git repository sync engines pull from; `None` without `aiml.yaml`.
    pub git: Option<Git>,
    /// Which engine applies the rendered output.
    pub engine: Engine,
    /// Where Config Sync registers clusters.
    pub fleet: Fleet,
    /// Where Argo CD keeps Applications.
    pub argocd: ArgoCd,
    /// External variables and top-level arguments of Jsonnet blueprints.
    pub jsonnet: crate::jsonnet::Inputs,
    /// Kubeconfig contexts of the clusters, where GKE's names are not the ones to use.
    pub contexts: Contexts,
    /// Which clusters get the platform controllers their blueprints need.
    pub platform: Platform,
    /// What the repository asks of container images.
    pub images: Images,
    /// The Kubernetes minor of the repository's clusters (`kubernetes.version`), one of
    /// [`crate::catalog::KUBERNETES_MINORS`]; `None`: the tool's default.
    /// `--kubernetes-version` wins over it.
    pub kubernetes_version: Option<String>,
}

/// `images`: what the repository asks of every container image it renders or validates.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Images {
    /// Every image must name its digest (`@sha256:…`); a tag alone is an `image-digest` error.
    pub require_digests: bool,
}

/// `platform`: the controllers `rendered/_sync/` installs per cluster ([`crate::sync::platform`]).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Platform {
    /// Clusters (`project/location/cluster`) whose controllers are installed and upgraded by
    /// other means: they get no platform root, and the sync README lists what they must have.
    pub managed_elsewhere: std::collections::BTreeSet<String>,
}

/// `contexts`: which kubeconfig context reaches which cluster (`status`, `diff --live`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Contexts {
    /// The Config Connector host; `None`: the current context.
    pub config_connector_host: Option<String>,
    /// The cluster Argo CD's Applications live on; `None`: the host's context.
    pub argocd: Option<String>,
    /// Workload clusters by `project/location/cluster`; others use GKE's context name.
    pub clusters: std::collections::BTreeMap<String, String>,
}

impl Settings {
    /// The git repository to wire, when there is one and an engine to wire it with.
    #[must_use]
    pub fn wiring(&self) -> Option<&Git> {
        match self.engine {
            Engine::None => None,
            Engine::ConfigSync | Engine::ArgoCd => self.git.as_ref(),
        }
    }
}

/// `git`: what sync engines pull.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Git {
    /// URL of the repository.
    pub repo: String,
    /// Branch to sync.
    pub branch: String,
    /// This kubectl-aiml repository's folder inside the git repository, without a trailing
    /// `/` (`""`: its root). Sync directories are `<dir>/rendered/...`.
    pub dir: String,
    /// How the engines authenticate to the repository.
    pub auth: GitAuth,
    /// The Google service account to authenticate as, with [`GitAuth::Gcpserviceaccount`].
    pub gcp_service_account_email: Option<String>,
}

impl Git {
    /// A path of this repository (`rendered/x/workload`) as a path of the git repository.
    #[must_use]
    pub fn path(&self, relative: &str) -> String {
        if self.dir.is_empty() {
            relative.to_string()
        } else {
            format!("{}/{relative}", self.dir)
        }
    }
}

/// How a sync engine authenticates to git (Config Sync's `auth` / `secretType` values).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum GitAuth {
    /// A public repository.
    #[default]
    None,
    /// The node's service account (Cloud Source Repositories, Secure Source Manager).
    Gcenode,
    /// A Google service account through Workload Identity (`gcpServiceAccountEmail`).
    Gcpserviceaccount,
    /// A token in the Secret `git-creds`.
    Token,
    /// An SSH key in the Secret `git-creds`.
    Ssh,
}

impl GitAuth {
    /// The value Config Sync and the fleet API take.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            GitAuth::None => "none",
            GitAuth::Gcenode => "gcenode",
            GitAuth::Gcpserviceaccount => "gcpserviceaccount",
            GitAuth::Token => "token",
            GitAuth::Ssh => "ssh",
        }
    }

    /// Whether credentials come from the Secret [`GIT_CREDENTIALS_SECRET`].
    #[must_use]
    pub fn uses_secret(self) -> bool {
        matches!(self, GitAuth::Token | GitAuth::Ssh)
    }
}

/// The engine that applies rendered output.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
pub enum Engine {
    /// Config Sync, through fleet registration and RootSyncs.
    #[default]
    #[serde(rename = "config-sync")]
    ConfigSync,
    /// Argo CD Applications.
    #[serde(rename = "argocd")]
    ArgoCd,
    /// Nothing is wired.
    #[serde(rename = "none")]
    None,
}

/// `fleet`: where clusters are registered (Config Sync).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Fleet {
    /// Fleet host project; `None`: each cluster's own project.
    pub project: Option<String>,
    /// Config Connector namespace of the fleet objects; `None`: the cluster's namespace (or,
    /// with another fleet project, that project's id).
    pub namespace: Option<String>,
}

/// `argocd`: where Applications live (Argo CD).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ArgoCd {
    /// Namespace of the Applications.
    pub namespace: String,
    /// Argo CD project of the Applications.
    pub project: String,
    /// Argo CD's name for the Config Connector host cluster.
    pub config_connector_cluster: String,
}

impl Default for ArgoCd {
    fn default() -> Self {
        Self {
            namespace: "argocd".into(),
            project: "default".into(),
            config_connector_cluster: "in-cluster".into(),
        }
    }
}

// The file as written; `Settings` is what the rest of the crate reads.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    git: Option<GitSpec>,
    #[serde(default)]
    sync: SyncSpec,
    #[serde(default)]
    fleet: FleetSpec,
    #[serde(default)]
    argocd: ArgoCdSpec,
    #[serde(default)]
    jsonnet: JsonnetSpec,
    #[serde(default)]
    contexts: ContextsSpec,
    #[serde(default)]
    platform: PlatformSpec,
    #[serde(default)]
    images: ImagesSpec,
    #[serde(default)]
    kubernetes: KubernetesSpec,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct KubernetesSpec {
    #[serde(default)]
    version: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ImagesSpec {
    #[serde(default)]
    require_digests: bool,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct PlatformSpec {
    #[serde(default)]
    managed_elsewhere: Vec<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ContextsSpec {
    #[serde(default)]
    config_connector_host: Option<String>,
    #[serde(default)]
    argocd: Option<String>,
    #[serde(default)]
    clusters: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct JsonnetSpec {
    #[serde(default)]
    ext_vars: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    ext_code: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    tla_vars: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    tla_code: std::collections::BTreeMap<String, String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct GitSpec {
    repo: String,
    #[serde(default)]
    branch: Option<String>,
    #[serde(default)]
    dir: Option<String>,
    #[serde(default)]
    auth: GitAuth,
    #[serde(default)]
    gcp_service_account_email: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SyncSpec {
    #[serde(default)]
    engine: Engine,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct FleetSpec {
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    namespace: Option<String>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ArgoCdSpec {
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    project: Option<String>,
    #[serde(default)]
    config_connector_cluster: Option<String>,
}

/// What reading `aiml.yaml` gave: the settings (defaults where the file is silent or broken),
/// the file for diagnostic snippets, and its findings.
#[derive(Debug, Default)]
pub struct Loaded {
    /// The settings.
    pub settings: Settings,
    /// The file, when there is one.
    pub file: Option<SourceFile>,
    /// `settings-schema` findings.
    pub diagnostics: Vec<Diagnostic>,
}

/// Reads `aiml.yaml` at `root`, if there is one. I/O trouble (a folder or FIFO in its place, a
/// huge file) is an error; what is written in it gives findings.
pub fn load(root: &std::path::Path, limit: u64) -> Result<Loaded, ReadError> {
    let path = root.join(SETTINGS_FILE);
    if fs_err::symlink_metadata(&path).is_err() {
        return Ok(Loaded::default());
    }
    let (file, mut diagnostics) = repo::read_source(&path, SETTINGS_FILE.to_string(), limit)?;
    let mut settings = Settings::default();
    if diagnostics.is_empty() {
        match file.documents.as_slice() {
            [] => {}
            [document] => match read(document) {
                Ok(read) => settings = read,
                Err(found) => diagnostics.extend(found),
            },
            [_, second, ..] => diagnostics.push(
                error(
                    second.span,
                    "",
                    "`aiml.yaml` holds more than one YAML document",
                )
                .fix("keep one document: the settings"),
            ),
        }
    }
    Ok(Loaded {
        settings,
        file: Some(file),
        diagnostics,
    })
}

fn error(span: Span, field: &str, message: impl Into<String>) -> Diagnostic {
    let mut d = Diagnostic::error(SETTINGS_SCHEMA, message).at(SETTINGS_FILE, span);
    if !field.is_empty() {
        d = d.field(field);
    }
    d
}

/// Whether git takes `name` as a branch name (`git check-ref-format --branch`): no `..`,
/// `@{`, `~^:?*[\\`, spaces or control characters, no leading `-`, no component starting with
/// `.` or ending in `.lock`, and not `HEAD`.
fn branch_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        return Err("it is empty");
    }
    if name.starts_with('-') {
        return Err("it starts with `-`");
    }
    if name == "HEAD" || name == "@" {
        return Err("it names no branch");
    }
    if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err("it holds spaces or control characters");
    }
    match git2::Reference::is_valid_name(&format!("refs/heads/{name}")) {
        true => Ok(()),
        false => Err(
            "git refuses it (`..`, `@{`, `~^:?*[\\`, a leading `.` or a trailing `.lock` or `/`)",
        ),
    }
}

/// `contexts`: each a context name (kubeconfig allows almost anything but nothing empty or
/// with control characters), each cluster key `project/location/cluster`.
fn check_contexts(
    contexts: &ContextsSpec,
    at: &dyn Fn(&[&str]) -> Span,
    found: &mut Vec<Diagnostic>,
) {
    let context = |name: &str| !name.is_empty() && !name.chars().any(char::is_control);
    for (field, value) in [
        ("configConnectorHost", &contexts.config_connector_host),
        ("argocd", &contexts.argocd),
    ] {
        if let Some(value) = value
            && !context(value)
        {
            found.push(
                error(
                    at(&["contexts", field]),
                    &format!("contexts.{field}"),
                    format!("`contexts.{field}` is not a kubeconfig context name"),
                )
                .expected("a context of your kubeconfig (`kubectl config get-contexts -o name`)"),
            );
        }
    }
    for (cluster, value) in &contexts.clusters {
        if !cluster_key(cluster) {
            found.push(
                error(
                    at(&["contexts", "clusters"]),
                    "contexts.clusters",
                    "a key of `contexts.clusters` is not `project/location/cluster`",
                )
                .found(crate::diagnostic::sanitize(cluster, 120))
                .expected(
                    "e.g. `my-project/us-west4/sax-cluster`, as the blueprint names the cluster",
                ),
            );
        } else if !context(value) {
            found.push(
                error(
                    at(&["contexts", "clusters", cluster]),
                    &format!("contexts.clusters.{cluster}"),
                    "not a kubeconfig context name",
                )
                .expected("a context of your kubeconfig (`kubectl config get-contexts -o name`)"),
            );
        }
    }
}

/// Whether `key` is `project/location/cluster`.
fn cluster_key(key: &str) -> bool {
    let parts: Vec<&str> = key.split('/').collect();
    parts.len() == 3
        && crate::names::project_id(parts[0]).is_ok()
        && parts[1..]
            .iter()
            .all(|part| crate::names::check_dns_label(part).is_ok())
}

/// `platform.managedElsewhere`: clusters named as `contexts.clusters` names them, each once.
fn check_platform(platform: &PlatformSpec, document: &Node, found: &mut Vec<Diagnostic>) {
    let mut seen = std::collections::BTreeSet::new();
    for (index, cluster) in platform.managed_elsewhere.iter().enumerate() {
        let field = format!("platform.managedElsewhere[{index}]");
        let span = document
            .get("platform")
            .and_then(|p| p.items("managedElsewhere").get(index))
            .map_or(document.span, |item| item.span);
        if !cluster_key(cluster) {
            found.push(
                error(span, &field, "not a cluster as `project/location/cluster`")
                    .found(crate::diagnostic::sanitize(cluster, 120))
                    .expected("e.g. `my-project/us-west4/sax-cluster`, as the blueprint names the cluster")
                    .fix("write the cluster's project, location and name, separated by `/`"),
            );
        } else if !seen.insert(cluster.as_str()) {
            found.push(
                error(span, &field, format!("`{cluster}` is listed twice"))
                    .fix("list each cluster once"),
            );
        }
    }
}

/// Reads and checks one document; every problem is a finding.
fn read(document: &Node) -> Result<Settings, Vec<Diagnostic>> {
    if matches!(document.value, crate::yaml::Value::Null) {
        return Ok(Settings::default());
    }
    let spec: Spec = crate::blueprint::de::from_node(document, "").map_err(|e| {
        let mut d = error(e.span.unwrap_or(document.span), &e.path, e.message);
        d.found = e.found;
        d.expected = e.expected;
        d.fix = e.fix;
        vec![d]
    })?;
    let mut found = Vec::new();
    let at = |path: &[&str]| document.at(path).map_or(document.span, |n| n.span);
    let git = spec.git.map(|git| {
        let span = |key: &str| at(&["git", key]);
        // The URL is written into every RootSync, Application and fleet membership: a
        // credential in it would be committed. Never echoed: the message says what, not which.
        if let Some(what) = crate::secrets::git_url_credentials(&git.repo) {
            found.push(
                error(span("repo"), "git.repo", format!("`git.repo` holds a credential ({what}): it would be written into every rendered sync object and committed"))
                    .expected("the URL without credentials, e.g. `https://github.com/acme/ml-platform.git`")
                    .fix(format!("remove the credential from the URL (and revoke it if it was committed); for a private repository set `git.auth: token` or `ssh`, with the Secret `{GIT_CREDENTIALS_SECRET}` in `config-management-system`")),
            );
        } else if git.repo.trim().is_empty() || git.repo.starts_with('-') || git.repo.chars().any(|c| c.is_whitespace() || c.is_control()) {
            found.push(
                error(span("repo"), "git.repo", "`git.repo` is not a git URL")
                    .found(crate::diagnostic::sanitize(&crate::secrets::mask(&git.repo), 80))
                    .expected("the URL sync engines clone, e.g. `https://github.com/acme/ml-platform.git`"),
            );
        }
        let branch = git.branch.unwrap_or_else(|| "main".into());
        if let Err(why) = branch_name(&branch) {
            found.push(
                error(span("branch"), "git.branch", format!("`git.branch` is not a branch name git accepts: {why}"))
                    .found(crate::diagnostic::sanitize(&branch, 80))
                    .expected("a branch name, e.g. `main` or `release/2026-11`"),
            );
        }
        let dir = git.dir.unwrap_or_default();
        let dir = dir.trim_end_matches('/').to_string();
        let dir = if dir == "." { String::new() } else { dir };
        if dir.starts_with('/')
            || dir.contains('\\')
            || dir.split('/').any(|part| {
                part == ".."
                    || part == "."
                    || part.eq_ignore_ascii_case(".git")
                    || part.starts_with('-')
                    || (part.is_empty() && !dir.is_empty())
            })
            || dir.chars().any(char::is_control)
        {
            found.push(
                error(span("dir"), "git.dir", "`git.dir` must be a relative folder inside the git repository")
                    .found(crate::diagnostic::sanitize(&dir, 80))
                    .expected("e.g. `platform`, or nothing when this repository is the git repository's root"),
            );
        }
        match (git.auth, &git.gcp_service_account_email) {
            (GitAuth::Gcpserviceaccount, None) => found.push(
                error(span("auth"), "git.auth", "`auth: gcpserviceaccount` needs `git.gcpServiceAccountEmail`")
                    .fix("add `gcpServiceAccountEmail: NAME@PROJECT.iam.gserviceaccount.com`"),
            ),
            (GitAuth::Gcpserviceaccount, Some(email)) if !email.contains('@') || email.chars().any(char::is_whitespace) => found.push(
                error(span("gcpServiceAccountEmail"), "git.gcpServiceAccountEmail", "`git.gcpServiceAccountEmail` is not a service account email")
                    .found(crate::diagnostic::sanitize(email, 80)),
            ),
            (auth, Some(_)) if auth != GitAuth::Gcpserviceaccount => found.push(
                error(span("gcpServiceAccountEmail"), "git.gcpServiceAccountEmail", "`git.gcpServiceAccountEmail` is only used with `auth: gcpserviceaccount`")
                    .fix("remove it, or set `auth: gcpserviceaccount`"),
            ),
            _ => {}
        }
        Git {
            repo: git.repo,
            branch,
            dir,
            auth: git.auth,
            gcp_service_account_email: git.gcp_service_account_email,
        }
    });
    // A file that only feeds Jsonnet (`jsonnet:`) wires nothing, like an empty one.
    let about_wiring = ["sync", "fleet", "argocd"]
        .iter()
        .any(|key| document.get(key).is_some());
    if git.is_none() && spec.sync.engine != Engine::None && about_wiring {
        found.push(
            error(
                document.span,
                "git",
                "sync wiring needs `git.repo`: the repository Config Sync or Argo CD pulls",
            )
            .fix("add `git: {repo: URL}`, or `sync: {engine: none}` to wire nothing"),
        );
    }
    if let Some(project) = &spec.fleet.project
        && let Err(why) = crate::names::project_id(project)
    {
        found.push(error(
            at(&["fleet", "project"]),
            "fleet.project",
            format!("`fleet.project` is not a project id: {why}"),
        ));
    }
    let label =
        |value: &Option<String>, path: &[&str], field: &str, found: &mut Vec<Diagnostic>| {
            if let Some(value) = value
                && let Err(why) = crate::names::check_dns_label(value)
            {
                found.push(error(
                    at(path),
                    field,
                    format!("`{field}` is not a namespace name: {why}"),
                ));
            }
        };
    label(
        &spec.fleet.namespace,
        &["fleet", "namespace"],
        "fleet.namespace",
        &mut found,
    );
    label(
        &spec.argocd.namespace,
        &["argocd", "namespace"],
        "argocd.namespace",
        &mut found,
    );
    label(
        &spec.argocd.project,
        &["argocd", "project"],
        "argocd.project",
        &mut found,
    );
    if let Some(cluster) = &spec.argocd.config_connector_cluster
        && (cluster.is_empty() || cluster.chars().any(|c| c.is_whitespace() || c.is_control()))
    {
        found.push(error(
            at(&["argocd", "configConnectorCluster"]),
            "argocd.configConnectorCluster",
            "`argocd.configConnectorCluster` is not an Argo CD cluster name",
        ));
    }
    for (field, names) in [
        ("extVars", &spec.jsonnet.ext_vars),
        ("extCode", &spec.jsonnet.ext_code),
        ("tlaVars", &spec.jsonnet.tla_vars),
        ("tlaCode", &spec.jsonnet.tla_code),
    ] {
        for name in names.keys() {
            let is_identifier = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !is_identifier {
                found.push(
                    error(
                        at(&["jsonnet", field]),
                        &format!("jsonnet.{field}"),
                        format!("`{name}` is not a Jsonnet identifier"),
                    )
                    .expected("letters, digits and `_`, not starting with a digit"),
                );
            }
        }
    }
    let both = |a: &std::collections::BTreeMap<String, String>,
                b: &std::collections::BTreeMap<String, String>| {
        a.keys().find(|k| b.contains_key(*k)).cloned()
    };
    for (first, second, which) in [
        (
            &spec.jsonnet.ext_vars,
            &spec.jsonnet.ext_code,
            "extVars` and `extCode",
        ),
        (
            &spec.jsonnet.tla_vars,
            &spec.jsonnet.tla_code,
            "tlaVars` and `tlaCode",
        ),
    ] {
        if let Some(name) = both(first, second) {
            found.push(
                error(
                    at(&["jsonnet"]),
                    "jsonnet",
                    format!("`{name}` is defined in both `{which}`"),
                )
                .fix("keep one of them"),
            );
        }
    }
    check_contexts(&spec.contexts, &at, &mut found);
    check_platform(&spec.platform, document, &mut found);
    if let Some(version) = &spec.kubernetes.version
        && crate::catalog::kubernetes_minor_index(version).is_none()
    {
        found.push(
            error(
                at(&["kubernetes", "version"]),
                "kubernetes.version",
                "`kubernetes.version` is not a Kubernetes minor whose built-in kinds this build knows",
            )
            .found(crate::diagnostic::sanitize(version, 40))
            .expected(format!(
                "one of {} (quoted: `\"1.34\"`; a patch release such as `1.34.2` is read as its minor)",
                crate::catalog::KUBERNETES_MINORS.join(", ")
            )),
        );
    }
    if !found.is_empty() {
        return Err(found);
    }
    let defaults = ArgoCd::default();
    Ok(Settings {
        git,
        engine: spec.sync.engine,
        fleet: Fleet {
            project: spec.fleet.project,
            namespace: spec.fleet.namespace,
        },
        argocd: ArgoCd {
            namespace: spec.argocd.namespace.unwrap_or(defaults.namespace),
            project: spec.argocd.project.unwrap_or(defaults.project),
            config_connector_cluster: spec
                .argocd
                .config_connector_cluster
                .unwrap_or(defaults.config_connector_cluster),
        },
        jsonnet: crate::jsonnet::Inputs {
            ext_vars: spec.jsonnet.ext_vars,
            ext_code: spec.jsonnet.ext_code,
            tla_vars: spec.jsonnet.tla_vars,
            tla_code: spec.jsonnet.tla_code,
        },
        contexts: Contexts {
            config_connector_host: spec.contexts.config_connector_host,
            argocd: spec.contexts.argocd,
            clusters: spec.contexts.clusters,
        },
        platform: Platform {
            managed_elsewhere: spec.platform.managed_elsewhere.into_iter().collect(),
        },
        images: Images {
            require_digests: spec.images.require_digests,
        },
        kubernetes_version: spec.kubernetes.version,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(text: &str) -> Result<Settings, Vec<Diagnostic>> {
        let documents = crate::yaml::parse_documents(text).unwrap();
        read(&documents[0])
    }

    #[test]
    fn the_kubernetes_version_is_a_vendored_minor() {
        let read = settings("kubernetes: {version: '1.34'}\n").unwrap();
        assert_eq!(read.kubernetes_version.as_deref(), Some("1.34"));
        assert_eq!(
            settings("git: {repo: https://e.com/a.git}\n")
                .unwrap()
                .kubernetes_version,
            None
        );
        for wrong in ["'1.20'", "'2.0'", "latest", "'1.34.x'"] {
            let found = settings(&format!("kubernetes: {{version: {wrong}}}\n")).unwrap_err();
            assert_eq!(
                found[0].field.as_deref(),
                Some("kubernetes.version"),
                "{wrong}: {found:?}"
            );
        }
    }

    #[test]
    fn images_require_digests_only_when_asked() {
        assert!(
            !settings("git: {repo: https://example.com/a.git}\n")
                .unwrap()
                .images
                .require_digests
        );
        assert!(
            settings("images: {requireDigests: true}\n")
                .unwrap()
                .images
                .require_digests
        );
        let wrong = settings("images: {requireDigest: true}\n").unwrap_err();
        assert_eq!(
            wrong[0].field.as_deref(),
            Some("images.requireDigest"),
            "{wrong:?}"
        );
    }

    #[test]
    fn defaults_fill_everything_but_the_repository() {
        let read = settings("git:\n  repo: https://example.com/acme/platform.git\n").unwrap();
        let git = read.wiring().unwrap();
        assert_eq!(git.branch, "main");
        assert_eq!(git.path("rendered/a/workload"), "rendered/a/workload");
        assert_eq!(git.auth, GitAuth::None);
        assert_eq!(read.engine, Engine::ConfigSync);
        assert_eq!(read.argocd, ArgoCd::default());
        let nested = settings(
            "git: {repo: 'git@example.com:acme/p.git', dir: platform/, branch: release}\nsync: {engine: argocd}\n",
        )
        .unwrap();
        assert_eq!(
            nested.wiring().unwrap().path("rendered"),
            "platform/rendered"
        );
        assert_eq!(nested.engine, Engine::ArgoCd);
        assert!(
            settings("sync: {engine: none}\n")
                .unwrap()
                .wiring()
                .is_none()
        );
    }

    /// A credential in `git.repo` is refused at its line, and no message holds it.
    #[test]
    fn credentials_in_the_git_url_are_refused_without_being_echoed() {
        for url in [
            "https://user:s3cr3t-t0ken@example.com/p.git",
            "https://s3cr3t-t0ken@example.com/p.git",
            "ssh://git:s3cr3t-t0ken@example.com/p.git",
            "https://example.com/p.git?private_token=s3cr3t-t0ken",
        ] {
            let errors = settings(&format!(
                "sync: {{engine: argocd}}\ngit:\n  repo: '{url}'\n"
            ))
            .unwrap_err();
            assert_eq!(errors.len(), 1, "{url}: {errors:?}");
            let d = &errors[0];
            assert_eq!((d.rule.as_str(), d.line), (SETTINGS_SCHEMA, 3), "{url}");
            assert!(d.message.contains("holds a credential"), "{url}: {d:?}");
            let shown =
                format!("{d:?}") + &crate::diagnostic::render_human(&errors, &|_| None, false);
            assert!(!shown.contains("s3cr3t"), "{url}: {shown}");
        }
        assert!(settings("git: {repo: 'git@github.com:acme/p.git'}\n").is_ok());
        assert!(settings("git: {repo: 'ssh://git@example.com:2222/p.git'}\n").is_ok());
    }

    #[test]
    fn clusters_managed_elsewhere_are_named_once_each() {
        let read = settings(
            "git: {repo: https://example.com/p.git}\nplatform:\n  managedElsewhere:\n  - my-project/us-west4/prod\n",
        )
        .unwrap();
        assert!(
            read.platform
                .managed_elsewhere
                .contains("my-project/us-west4/prod")
        );
        let errors = settings(
            "git: {repo: https://example.com/p.git}\nplatform:\n  managedElsewhere:\n  - my-project/us-west4/prod\n  - prod\n  - my-project/us-west4/prod\n",
        )
        .unwrap_err();
        let found: Vec<_> = errors
            .iter()
            .map(|d| (d.line, d.field.clone().unwrap_or_default()))
            .collect();
        assert_eq!(
            found,
            [
                (5, "platform.managedElsewhere[1]".to_string()),
                (6, "platform.managedElsewhere[2]".to_string())
            ]
        );
        assert!(errors[0].fix.is_some() && errors[1].message.contains("listed twice"));
        let errors = settings("platform:\n  managedElswhere: []\n").unwrap_err();
        assert_eq!(
            errors[0].fix.as_deref(),
            Some("did you mean `managedElsewhere`?")
        );
    }

    #[test]
    fn jsonnet_variables_are_read_by_name() {
        let read = settings(
            "sync: {engine: none}\njsonnet:\n  extVars: {env: prod}\n  tlaCode: {replicas: '2'}\n",
        )
        .unwrap();
        assert_eq!(read.jsonnet.ext_vars["env"], "prod");
        let only = settings("jsonnet:\n  extVars: {env: prod}\n").unwrap();
        assert!(only.wiring().is_none());
        assert_eq!(read.jsonnet.tla_code["replicas"], "2");
        assert!(read.jsonnet.ext_code.is_empty() && read.jsonnet.tla_vars.is_empty());
    }

    #[test]
    fn unknown_fields_and_bad_values_are_findings_at_their_line() {
        let errors =
            settings("git:\n  repo: https://example.com/p.git\n  brnach: main\n").unwrap_err();
        assert_eq!(errors[0].rule, SETTINGS_SCHEMA);
        assert_eq!(
            (errors[0].file.as_str(), errors[0].line),
            (SETTINGS_FILE, 3)
        );
        assert_eq!(errors[0].fix.as_deref(), Some("did you mean `branch`?"));

        let errors = settings("sync:\n  engine: config_sync\n").unwrap_err();
        assert_eq!(errors[0].line, 2);
        assert_eq!(
            errors[0].fix.as_deref(),
            Some("did you mean `config-sync`?")
        );

        let errors = settings(
            "git:\n  repo: https://example.com/p.git\n  dir: ../elsewhere\n  auth: gcpserviceaccount\nfleet:\n  project: Not_A_Project\n",
        )
        .unwrap_err();
        let fields: Vec<_> = errors
            .iter()
            .map(|d| d.field.clone().unwrap_or_default())
            .collect();
        assert_eq!(fields, ["git.dir", "git.auth", "fleet.project"]);

        let errors = settings(
            "sync: {engine: none}\njsonnet:\n  extVars: {env: prod, 2bad: x}\n  extCode: {env: '1'}\n",
        )
        .unwrap_err();
        let messages: Vec<_> = errors.iter().map(|d| d.message.as_str()).collect();
        assert_eq!(
            messages,
            [
                "`2bad` is not a Jsonnet identifier",
                "`env` is defined in both `extVars` and `extCode`"
            ]
        );
        assert_eq!(errors[0].line, 3);

        // Git refuses these branch names and folders; sync engines would too.
        for (field, value) in [
            ("branch", "../x..y"),
            ("branch", "a..b"),
            ("branch", "rel@{1}"),
            ("branch", "-main"),
            ("branch", "a\\u0007b"),
            ("branch", "x.lock"),
            ("dir", "/abs"),
            ("dir", "a/../../b"),
            ("dir", "a/.git/b"),
            ("dir", "a\\u0001"),
        ] {
            let text = format!("git:\n  repo: https://example.com/p.git\n  {field}: \"{value}\"\n");
            let errors = settings(&text).unwrap_err();
            assert_eq!(errors.len(), 1, "{value}: {errors:?}");
            assert_eq!(
                errors[0].field.as_deref(),
                Some(format!("git.{field}").as_str())
            );
            assert_eq!(errors[0].line, 3, "{value}");
        }

        let errors = settings("fleet: {project: my-project}\n").unwrap_err();
        assert!(errors[0].message.contains("needs `git.repo`"), "{errors:?}");
    }
}

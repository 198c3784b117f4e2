//! Reaching clusters: which kubeconfig context stands for which cluster, one client per
//! distinct server and user, and why a cluster could not be asked.
//!
//! Contexts: `--context` for every cluster when given; else `aiml.yaml`'s `contexts`; else the
//! current context for the Config Connector host (and Argo CD) and GKE's own name,
//! `gke_<project>_<location>_<cluster>` (what `gcloud container clusters get-credentials`
//! writes), for a workload cluster. `KUBECONFIG` (several files) and `~/.kube/config` are read
//! as kubectl reads them; with neither, inside a pod, the pod's service account reaches the
//! cluster it runs on, which then stands for the Config Connector host.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};
use serde::Serialize;

use super::targets::ClusterId;
use crate::settings::Settings;

/// The context name standing for the pod's own cluster when there is no kubeconfig.
pub const IN_CLUSTER: &str = "in-cluster";

/// How to reach clusters.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--context`: one context for every cluster.
    pub context: Option<String>,
    /// How long one cluster may take to answer everything asked of it.
    pub timeout: Duration,
}

/// Why a cluster could not be asked: the command's job could not be done there (exit 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "snake_case", tag = "reason")]
pub enum AskError {
    /// No kubeconfig could be read and there is no in-cluster configuration.
    #[error(
        "no kubeconfig: {why}; set KUBECONFIG or run `gcloud container clusters get-credentials CLUSTER --location LOCATION --project PROJECT`"
    )]
    NoKubeconfig {
        /// What went wrong reading it.
        why: String,
    },
    /// The context for a cluster is not in the kubeconfig.
    #[error("no kubeconfig context `{context}` for the {cluster}: {fix}")]
    NoContext {
        /// The cluster.
        cluster: String,
        /// The context looked for.
        context: String,
        /// How to get one.
        fix: String,
    },
    /// The context's configuration is unusable (missing server, unreadable certificate...).
    #[error("context `{context}` cannot be used: {why}")]
    BadContext {
        /// The context.
        context: String,
        /// Why.
        why: String,
    },
    /// The server did not answer.
    #[error(
        "context `{context}`: could not reach {server}: {why}; check the cluster's endpoint, your network (private clusters need an authorized network or a bastion) and `kubectl --context {context} get --raw /readyz`"
    )]
    Unreachable {
        /// The context.
        context: String,
        /// The server URL.
        server: String,
        /// The transport's words.
        why: String,
    },
    /// The server did not answer in time.
    #[error(
        "context `{context}`: {server} did not answer within {seconds} s; raise `--request-timeout` or check the cluster"
    )]
    Timeout {
        /// The context.
        context: String,
        /// The server URL.
        server: String,
        /// The limit.
        seconds: u64,
    },
    /// The credentials were refused.
    #[error(
        "context `{context}`: the server refused the credentials (401); refresh them (`gcloud auth login`, or `gcloud container clusters get-credentials` again)"
    )]
    Unauthorized {
        /// The context.
        context: String,
    },
    /// RBAC forbids what had to be asked.
    #[error("context `{context}`: forbidden to {verb} {resource}{}: {message}; grant `get`, `list` on it (e.g. a ClusterRole bound to you), or ask for a narrower status (`kubectl aiml status NAME`)", .namespace.as_ref().map(|n| format!(" in namespace `{n}`")).unwrap_or_default())]
    Forbidden {
        /// The context.
        context: String,
        /// `list`, `get`, `patch`.
        verb: String,
        /// `jobsets.jobset.x-k8s.io`.
        resource: String,
        /// The namespace asked about, when one.
        namespace: Option<String>,
        /// The server's message.
        message: String,
    },
    /// Anything else the server or the transport said.
    #[error("context `{context}`: {message}")]
    Failed {
        /// The context.
        context: String,
        /// What happened.
        message: String,
    },
}

/// A client for one context.
#[derive(Clone)]
pub struct Connection {
    /// The context.
    pub context: String,
    /// Its server URL.
    pub server: String,
    /// The client.
    pub client: kube::Client,
    /// The per-cluster time limit.
    pub timeout: Duration,
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("context", &self.context)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

/// The user's kubeconfig, read once.
#[derive(Clone, Debug)]
pub enum Source {
    /// `KUBECONFIG` or `~/.kube/config`.
    Kubeconfig(Box<Kubeconfig>),
    /// No kubeconfig, inside a pod.
    InCluster,
    /// Neither: why not.
    None(String),
}

impl Source {
    /// Reads the kubeconfig as kubectl does, else the in-cluster configuration.
    #[must_use]
    pub fn discover() -> Self {
        match Kubeconfig::read() {
            Ok(config) => Source::Kubeconfig(Box::new(config)),
            Err(error) => {
                if kube::Config::incluster().is_ok() {
                    Source::InCluster
                } else {
                    Source::None(match error {
                        kube::config::KubeconfigError::ReadConfig(io, path) => {
                            format!("cannot read `{}`: {io}", path.display())
                        }
                        other => other.to_string(),
                    })
                }
            }
        }
    }

    /// The current context's name.
    #[must_use]
    pub fn current_context(&self) -> Option<String> {
        match self {
            Source::Kubeconfig(config) => config.current_context.clone(),
            Source::InCluster => Some(IN_CLUSTER.to_string()),
            Source::None(_) => None,
        }
    }

    fn has_context(&self, name: &str) -> bool {
        match self {
            Source::Kubeconfig(config) => config.contexts.iter().any(|c| c.name == name),
            Source::InCluster => name == IN_CLUSTER,
            Source::None(_) => false,
        }
    }

    /// The server and user a context names: two contexts with the same are one connection.
    fn identity(&self, name: &str) -> Option<(String, String)> {
        let Source::Kubeconfig(config) = self else {
            return Some((IN_CLUSTER.to_string(), String::new()));
        };
        let context = config
            .contexts
            .iter()
            .find(|c| c.name == name)?
            .context
            .as_ref()?;
        let server = config
            .clusters
            .iter()
            .find(|c| c.name == context.cluster)
            .and_then(|c| c.cluster.as_ref())
            .and_then(|c| c.server.clone())
            .unwrap_or_default();
        Some((server, context.user.clone().unwrap_or_default()))
    }
}

/// The context that reaches `cluster`.
pub fn context_for(
    cluster: &ClusterId,
    settings: &Settings,
    options: &Options,
    source: &Source,
) -> Result<String, AskError> {
    if let Source::None(why) = source {
        return Err(AskError::NoKubeconfig { why: why.clone() });
    }
    let (context, fix) = if let Some(context) = &options.context {
        (
            context.clone(),
            "pass a context of your kubeconfig (`kubectl config get-contexts -o name`)".to_string(),
        )
    } else {
        match cluster {
            ClusterId::ConfigConnectorHost => match &settings.contexts.config_connector_host {
                Some(context) => (
                    context.clone(),
                    "fix `contexts.configConnectorHost` in `aiml.yaml`".to_string(),
                ),
                None => match source.current_context() {
                    Some(context) => (context, String::new()),
                    None => {
                        return Err(AskError::NoContext {
                            cluster: cluster.to_string(),
                            context: String::new(),
                            fix: "the kubeconfig has no current context: `kubectl config use-context HOST`, or set `contexts.configConnectorHost` in `aiml.yaml`".to_string(),
                        });
                    }
                },
            },
            ClusterId::Gke {
                project,
                location,
                name,
            } => match settings.contexts.clusters.get(&cluster.key()) {
                Some(context) => (
                    context.clone(),
                    format!("fix `contexts.clusters.{}` in `aiml.yaml`", cluster.key()),
                ),
                None => (
                    format!("gke_{project}_{location}_{name}"),
                    format!(
                        "run `gcloud container clusters get-credentials {name} --location {location} --project {project}`, or map the cluster to a context in `aiml.yaml` (`contexts.clusters.{}`)",
                        cluster.key()
                    ),
                ),
            },
            ClusterId::Named { name } => (
                name.clone(),
                "add that context to your kubeconfig, or set `contexts.argocd` in `aiml.yaml`"
                    .to_string(),
            ),
        }
    };
    if source.has_context(&context) {
        Ok(context)
    } else {
        Err(AskError::NoContext {
            cluster: cluster.to_string(),
            context,
            fix,
        })
    }
}

/// One connection per context of `contexts`; contexts naming the same server and user share
/// it (the same cluster is asked once). Clients are made concurrently: a kubeconfig's exec
/// plugin (`gke-gcloud-auth-plugin`) may take a moment per cluster.
pub async fn connect(
    contexts: &BTreeSet<String>,
    source: &Source,
    options: &Options,
) -> BTreeMap<String, Result<Arc<Connection>, AskError>> {
    use futures::StreamExt;
    // The first context (in name order) of each identity makes its client.
    let mut first_of: BTreeMap<(String, String), &String> = BTreeMap::new();
    let identity = |context: &String| {
        source
            .identity(context)
            .unwrap_or_else(|| (context.clone(), String::new()))
    };
    for context in contexts {
        first_of.entry(identity(context)).or_insert(context);
    }
    let made: BTreeMap<(String, String), Result<Arc<Connection>, AskError>> =
        futures::stream::iter(first_of.into_iter().map(|(identity, context)| async move {
            (identity, client(context, source, options).await)
        }))
        .buffer_unordered(CONCURRENT_CONNECTS)
        .collect()
        .await;
    contexts
        .iter()
        .map(|context| (context.clone(), made[&identity(context)].clone()))
        .collect()
}

/// Clients made at once.
const CONCURRENT_CONNECTS: usize = 16;

async fn client(
    context: &str,
    source: &Source,
    options: &Options,
) -> Result<Arc<Connection>, AskError> {
    let bad = |why: String| AskError::BadContext {
        context: context.to_string(),
        why,
    };
    let mut config = match source {
        Source::Kubeconfig(kubeconfig) => kube::Config::from_custom_kubeconfig(
            (**kubeconfig).clone(),
            &KubeConfigOptions {
                context: Some(context.to_string()),
                cluster: None,
                user: None,
            },
        )
        .await
        .map_err(|e| bad(e.to_string()))?,
        Source::InCluster => kube::Config::incluster().map_err(|e| bad(e.to_string()))?,
        Source::None(why) => return Err(AskError::NoKubeconfig { why: why.clone() }),
    };
    config.connect_timeout = Some(options.timeout.min(Duration::from_secs(10)));
    config.read_timeout = Some(options.timeout);
    config.reset_reader_on_write = true;
    let server = config.cluster_url.to_string();
    let client = kube::Client::try_from(config).map_err(|e| bad(e.to_string()))?;
    Ok(Arc::new(Connection {
        context: context.to_string(),
        server: server.trim_end_matches('/').to_string(),
        client,
        timeout: options.timeout,
    }))
}

/// A request's failure, as the reason a cluster could not be asked.
#[must_use]
pub fn ask_error(
    connection: &Connection,
    error: &kube::Error,
    verb: &str,
    resource: &str,
    namespace: Option<&str>,
) -> AskError {
    let context = connection.context.clone();
    match error {
        kube::Error::Api(status) if status.code == 401 => AskError::Unauthorized { context },
        kube::Error::Api(status) if status.code == 403 => AskError::Forbidden {
            context,
            verb: verb.to_string(),
            resource: resource.to_string(),
            namespace: namespace.map(str::to_string),
            message: crate::diagnostic::sanitize(&status.message, 300),
        },
        kube::Error::Api(status) => AskError::Failed {
            context,
            message: format!(
                "{verb} {resource}: {} ({})",
                crate::diagnostic::sanitize(&status.message, 300),
                status.code
            ),
        },
        kube::Error::HyperError(_) | kube::Error::Service(_) => AskError::Unreachable {
            context,
            server: connection.server.clone(),
            why: crate::diagnostic::sanitize(&transport_cause(error), 300),
        },
        other => AskError::Failed {
            context,
            message: crate::diagnostic::sanitize(&format!("{verb} {resource}: {other}"), 400),
        },
    }
}

/// The innermost cause of a transport error (`Connection refused (os error 111)`), which is
/// what a person can act on.
fn transport_cause(error: &dyn std::error::Error) -> String {
    let mut cause: &dyn std::error::Error = error;
    while let Some(next) = cause.source() {
        cause = next;
    }
    cause.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source() -> Source {
        let text = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: 'https://127.0.0.1:6443'}\nusers:\n- name: u\n  user: {}\ncontexts:\n- name: host\n  context: {cluster: c, user: u}\n- name: gke_p_us-west4_c1\n  context: {cluster: c, user: u}\n- name: mine\n  context: {cluster: c, user: u}\ncurrent-context: host\n";
        Source::Kubeconfig(Box::new(Kubeconfig::from_yaml(text).expect("kubeconfig")))
    }

    fn options(context: Option<&str>) -> Options {
        Options {
            context: context.map(str::to_string),
            timeout: Duration::from_secs(1),
        }
    }

    fn gke(name: &str) -> ClusterId {
        ClusterId::Gke {
            project: "p".into(),
            location: "us-west4".into(),
            name: name.into(),
        }
    }

    #[test]
    fn contexts_come_from_the_flag_the_settings_or_gke_names() {
        let settings = Settings::default();
        let source = source();
        let host = ClusterId::ConfigConnectorHost;
        assert_eq!(
            context_for(&host, &settings, &options(None), &source),
            Ok("host".into())
        );
        assert_eq!(
            context_for(&gke("c1"), &settings, &options(None), &source),
            Ok("gke_p_us-west4_c1".into())
        );
        assert_eq!(
            context_for(&gke("c1"), &settings, &options(Some("mine")), &source),
            Ok("mine".into())
        );
        let mut mapped = Settings::default();
        mapped
            .contexts
            .clusters
            .insert("p/us-west4/c2".into(), "mine".into());
        mapped.contexts.config_connector_host = Some("mine".into());
        assert_eq!(
            context_for(&gke("c2"), &mapped, &options(None), &source),
            Ok("mine".into())
        );
        assert_eq!(
            context_for(&host, &mapped, &options(None), &source),
            Ok("mine".into())
        );
        let Err(AskError::NoContext { context, fix, .. }) =
            context_for(&gke("c2"), &settings, &options(None), &source)
        else {
            panic!("a missing context is an error");
        };
        assert_eq!(context, "gke_p_us-west4_c2");
        assert!(
            fix.contains(
                "gcloud container clusters get-credentials c2 --location us-west4 --project p"
            ),
            "{fix}"
        );
        let none = Source::None("no file".into());
        assert!(matches!(
            context_for(&host, &settings, &options(None), &none),
            Err(AskError::NoKubeconfig { .. })
        ));
    }

    #[test]
    fn contexts_of_one_server_and_user_share_an_identity() {
        let source = source();
        assert_eq!(source.identity("host"), source.identity("mine"));
        assert_eq!(source.identity("absent"), None);
    }
}

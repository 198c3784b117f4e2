//! The clusters, through the Kubernetes API (`kube`): what Config Sync or Argo CD applied from
//! `rendered/`, whether Config Connector and the workloads are ready and why not
//! (`kubectl aiml status`), what a server-side apply would change or refuse
//! (`kubectl aiml diff --live`), and the live colours of `kubectl aiml graph --live`.

pub mod apply;
pub mod clusters;
pub mod colour;
pub mod fetch;
pub mod health;
pub mod status;
pub mod targets;

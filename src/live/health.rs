//! How ready one live object is, read from its `status` alone (no request is made here).
//! (Placeholder API; the full reading of each kind's status lands with its tests.)

use serde_json::Value;

/// Where an object stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Nothing to wait for.
    Ready,
    /// Not ready yet; may become ready without anyone acting.
    Progressing,
    /// Needs a person.
    Failed,
    /// Not on the server.
    Missing,
}

/// One object's readiness.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Health {
    /// Where it stands.
    pub state: State,
    /// Machine-readable cause.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The server's message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// A short summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

/// What a sync object synced.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Synced {
    /// Commit applied.
    pub commit: Option<String>,
    /// Whether `commit` equals HEAD.
    pub at_head: Option<bool>,
    /// Errors reported.
    pub errors: Vec<SyncError>,
}

/// One error of a sync object.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SyncError {
    /// Its code.
    pub code: Option<String>,
    /// Its message.
    pub message: String,
}

fn ready() -> Health {
    Health {
        state: State::Ready,
        reason: None,
        message: None,
        detail: None,
    }
}

/// Any object.
#[must_use]
pub fn assess(_group: &str, _kind: &str, _object: &Value) -> Health {
    ready()
}

/// A sync object.
#[must_use]
pub fn sync_root(_kind: &str, _object: &Value, _head: Option<&str>) -> (Health, Synced) {
    (ready(), Synced::default())
}

/// A Kueue Workload.
#[must_use]
pub fn kueue_workload(_object: &Value) -> Health {
    ready()
}

/// Nodes of one pool.
#[must_use]
pub fn node_pool(_nodes: &[&Value], _expected_topology: Option<&str>) -> Health {
    ready()
}

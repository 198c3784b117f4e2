//! The Kubernetes minor releases whose built-in kinds are vendored (`schemas/kubernetes/`): a
//! fact the settings check (`kubernetes.version` in `aiml.yaml`) and the schema store share.

/// The vendored minors, oldest first: a target version (`--kubernetes-version`, or
/// `kubernetes.version` in `aiml.yaml`) is one of them.
pub const KUBERNETES_MINORS: &[&str] = &["1.32", "1.33", "1.34", "1.35", "1.36"];

/// The index in [`KUBERNETES_MINORS`] of a version written `1.34`, `v1.34` or `1.34.2`.
#[must_use]
pub fn kubernetes_minor_index(version: &str) -> Option<usize> {
    let version = version.strip_prefix('v').unwrap_or(version);
    let mut parts = version.split('.');
    let minor = format!("{}.{}", parts.next()?, parts.next()?);
    if parts.any(|patch| patch.parse::<u32>().is_err()) {
        return None;
    }
    KUBERNETES_MINORS.iter().position(|m| *m == minor)
}

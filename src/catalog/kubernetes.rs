//! The Kubernetes minor releases whose built-in kinds are vendored (`schemas/kubernetes/`): a
//! fact the settings check (`kubernetes.version` in `aiml.yaml`) and the schema store share.

/// The vendored minors, oldest first: a target version (`--kubernetes-version`, or
/// `kubernetes.version` in `aiml.yaml`) is one of them.
pub const KUBERNETES_MINORS: &[&str] = &["1.32", "1.33", "1.34", "1.35", "1.36"];

/// The minor checked against when no target is given: the default minor of GKE's Regular
/// release channel, the channel new clusters are enrolled in unless told otherwise.
// GKE Regular channel release notes, 2026-09-17 (2026-R39): "Version 1.35.8-gke.1036000 is
// now the default version for cluster creation in the Regular channel"
// (https://docs.cloud.google.com/feeds/gke-regular-channel-release-notes.xml, the latest
// dated entry found on 2026-11-29). Regular is the default channel:
// https://cloud.google.com/kubernetes-engine/docs/concepts/release-channels. Move it when
// that channel's default minor moves (and vendor the minor first if it is new).
pub const DEFAULT_KUBERNETES_MINOR: &str = "1.35";

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_minor_is_vendored() {
        assert!(kubernetes_minor_index(DEFAULT_KUBERNETES_MINOR).is_some());
        assert_eq!(kubernetes_minor_index("v1.35.8"), Some(3));
        assert_eq!(kubernetes_minor_index("1.31"), None);
        assert_eq!(kubernetes_minor_index("1.35.x"), None);
    }
}

//! Built-in API versions that Kubernetes 1.32 no longer serves, or serves but deprecates.
//!
//! Data from the Kubernetes "Deprecated API Migration Guide"
//! (kubernetes.io/docs/reference/using-api/deprecation-guide/): every removal up to and
//! including 1.32, with the release that stopped serving the version and the version to move
//! to. Custom resource deprecations are not here: they come from the vendored CRD index.

pub use crate::catalog::{KUBERNETES_MINORS as MINORS, kubernetes_minor_index as minor_index};

/// One group/version (and the kinds of it) a Kubernetes release stopped serving.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Removed {
    /// `apiVersion`, e.g. `autoscaling/v2beta1`.
    pub api_version: &'static str,
    /// The kinds it served that are gone (other kinds of the same version may still be
    /// served, e.g. `networking.k8s.io/v1beta1` `IPAddress`).
    pub kinds: &'static [&'static str],
    /// The Kubernetes minor release that no longer serves it, e.g. `1.25`.
    pub removed_in: &'static str,
    /// The `apiVersion` to use instead; `None` when the API is gone without a replacement.
    pub replacement: Option<&'static str>,
    /// What else changes when moving, for the fix.
    pub note: &'static str,
}

const fn removed(
    api_version: &'static str,
    kinds: &'static [&'static str],
    removed_in: &'static str,
    replacement: Option<&'static str>,
    note: &'static str,
) -> Removed {
    Removed {
        api_version,
        kinds,
        removed_in,
        replacement,
        note,
    }
}

const APPS_KINDS: &[&str] = &[
    "Deployment",
    "StatefulSet",
    "DaemonSet",
    "ReplicaSet",
    "ControllerRevision",
];
const SELECTOR_NOTE: &str = "`spec.selector` is required and can no longer change after creation";

/// Every removal of a built-in API version up to Kubernetes 1.32.
#[rustfmt::skip]
pub const REMOVED: &[Removed] = &[
    // 1.16
    removed("extensions/v1beta1", &["Deployment", "DaemonSet", "ReplicaSet"], "1.16", Some("apps/v1"), SELECTOR_NOTE),
    removed("extensions/v1beta1", &["NetworkPolicy"], "1.16", Some("networking.k8s.io/v1"), ""),
    removed("extensions/v1beta1", &["PodSecurityPolicy"], "1.16", Some("policy/v1beta1"), "PodSecurityPolicy itself was removed in 1.25; use Pod Security Admission"),
    removed("apps/v1beta1", APPS_KINDS, "1.16", Some("apps/v1"), SELECTOR_NOTE),
    removed("apps/v1beta2", APPS_KINDS, "1.16", Some("apps/v1"), SELECTOR_NOTE),
    // 1.22
    removed("extensions/v1beta1", &["Ingress"], "1.22", Some("networking.k8s.io/v1"), "`serviceName`/`servicePort` became `service.name`/`service.port`, and `pathType` is required"),
    removed("networking.k8s.io/v1beta1", &["Ingress"], "1.22", Some("networking.k8s.io/v1"), "`serviceName`/`servicePort` became `service.name`/`service.port`, and `pathType` is required"),
    removed("networking.k8s.io/v1beta1", &["IngressClass"], "1.22", Some("networking.k8s.io/v1"), ""),
    removed("admissionregistration.k8s.io/v1beta1", &["MutatingWebhookConfiguration", "ValidatingWebhookConfiguration"], "1.22", Some("admissionregistration.k8s.io/v1"), "`sideEffects` and `admissionReviewVersions` are required"),
    removed("apiextensions.k8s.io/v1beta1", &["CustomResourceDefinition"], "1.22", Some("apiextensions.k8s.io/v1"), "every version needs a structural `schema.openAPIV3Schema`"),
    removed("apiregistration.k8s.io/v1beta1", &["APIService"], "1.22", Some("apiregistration.k8s.io/v1"), ""),
    removed("authentication.k8s.io/v1beta1", &["TokenReview"], "1.22", Some("authentication.k8s.io/v1"), ""),
    removed("authorization.k8s.io/v1beta1", &["SubjectAccessReview", "LocalSubjectAccessReview", "SelfSubjectAccessReview", "SelfSubjectRulesReview"], "1.22", Some("authorization.k8s.io/v1"), "`spec.group` became `spec.groups`"),
    removed("certificates.k8s.io/v1beta1", &["CertificateSigningRequest"], "1.22", Some("certificates.k8s.io/v1"), "`spec.signerName` is required"),
    removed("coordination.k8s.io/v1beta1", &["Lease"], "1.22", Some("coordination.k8s.io/v1"), ""),
    removed("rbac.authorization.k8s.io/v1beta1", &["ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding"], "1.22", Some("rbac.authorization.k8s.io/v1"), ""),
    removed("scheduling.k8s.io/v1beta1", &["PriorityClass"], "1.22", Some("scheduling.k8s.io/v1"), ""),
    removed("storage.k8s.io/v1beta1", &["CSIDriver", "CSINode", "StorageClass", "VolumeAttachment"], "1.22", Some("storage.k8s.io/v1"), ""),
    // 1.25
    removed("batch/v1beta1", &["CronJob"], "1.25", Some("batch/v1"), ""),
    removed("discovery.k8s.io/v1beta1", &["EndpointSlice"], "1.25", Some("discovery.k8s.io/v1"), "`topology` became `zone` and `nodeName` per endpoint"),
    removed("events.k8s.io/v1beta1", &["Event"], "1.25", Some("events.k8s.io/v1"), ""),
    removed("autoscaling/v2beta1", &["HorizontalPodAutoscaler"], "1.25", Some("autoscaling/v2"), "metric `targetAverageUtilization` became `target.averageUtilization` with `target.type: Utilization`"),
    removed("policy/v1beta1", &["PodDisruptionBudget"], "1.25", Some("policy/v1"), "an empty `spec.selector` now selects every pod of the namespace"),
    removed("policy/v1beta1", &["PodSecurityPolicy"], "1.25", None, "PodSecurityPolicy is gone; use Pod Security Admission or a policy engine"),
    removed("node.k8s.io/v1beta1", &["RuntimeClass"], "1.25", Some("node.k8s.io/v1"), ""),
    // 1.26
    removed("flowcontrol.apiserver.k8s.io/v1beta1", &["FlowSchema", "PriorityLevelConfiguration"], "1.26", Some("flowcontrol.apiserver.k8s.io/v1"), ""),
    removed("autoscaling/v2beta2", &["HorizontalPodAutoscaler"], "1.26", Some("autoscaling/v2"), ""),
    // 1.27
    removed("storage.k8s.io/v1beta1", &["CSIStorageCapacity"], "1.27", Some("storage.k8s.io/v1"), ""),
    // 1.29
    removed("flowcontrol.apiserver.k8s.io/v1beta2", &["FlowSchema", "PriorityLevelConfiguration"], "1.29", Some("flowcontrol.apiserver.k8s.io/v1"), ""),
    // 1.32
    removed("flowcontrol.apiserver.k8s.io/v1beta3", &["FlowSchema", "PriorityLevelConfiguration"], "1.32", Some("flowcontrol.apiserver.k8s.io/v1"), "`spec.limited.nominalConcurrencyShares` may now be 0"),
];

/// The removal that covers `api_version` `kind`, if any.
#[must_use]
pub fn removal(api_version: &str, kind: &str) -> Option<&'static Removed> {
    REMOVED
        .iter()
        .find(|r| r.api_version == api_version && r.kinds.contains(&kind))
}

/// Whether a group/version appears in [`REMOVED`] at all (so its group is a built-in one).
#[must_use]
pub fn is_removed_group(group: &str) -> bool {
    REMOVED
        .iter()
        .any(|r| crate::manifest::group_of(r.api_version) == group)
}

/// Built-in kinds Kubernetes 1.32 serves but deprecates: `(apiVersion, kind, since, advice)`.
pub const DEPRECATED: &[(&str, &str, &str, &str)] = &[(
    "v1",
    "ComponentStatus",
    "1.19",
    "read component health from the components' own health endpoints",
)];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn removals_are_well_formed() {
        for r in REMOVED {
            assert!(!r.kinds.is_empty(), "{r:?}");
            assert!(r.removed_in.starts_with("1."), "{r:?}");
            assert_ne!(Some(r.api_version), r.replacement, "{r:?}");
        }
        assert_eq!(
            removal("autoscaling/v2beta1", "HorizontalPodAutoscaler").map(|r| r.removed_in),
            Some("1.25")
        );
        assert!(removal("networking.k8s.io/v1beta1", "IPAddress").is_none());
        assert!(is_removed_group("extensions"));
    }

    #[test]
    fn target_versions_are_read_in_every_usual_form() {
        assert_eq!(minor_index("1.32"), Some(0));
        assert_eq!(minor_index("v1.34"), Some(2));
        assert_eq!(minor_index("1.34.2"), Some(2));
        for wrong in ["1.31", "1", "1.34.x", "latest", ""] {
            assert_eq!(minor_index(wrong), None, "{wrong}");
        }
    }
}

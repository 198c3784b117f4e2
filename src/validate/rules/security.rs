//! Security posture of anyone's manifests, one object at a time: pods with host access,
//! containers without the restricted security context, images that are not pinned, Services that open a public load balancer to everyone, and IAM
//! grants on a whole project of roles that a single resource can take.
//!
//! All are warnings: each can be right for one object, and the documented way to say so is
//! the suppression every rule has (`aiml.dev/ignore: <rule>` on the object, with the reason in
//! the review). GKE's own namespaces (`kube-system`, `gke-*`, …) run host agents by design and
//! are not judged.
//!
//! Owns `pod-host-access`, `container-security-context`, `image-unpinned`, `image-digest`
//! (an error, only where [`Policy::require_digests`] asks), `service-public` and
//! `iam-project-scope`.

use crate::catalog::TPU_RESOURCE;
use crate::diagnostic::Diagnostic;
use crate::validate::model::workload::{PodTemplate, container_nodes, request, templates};
use crate::validate::rule;
use crate::validate::rules::shared::{Locate, internal_load_balancer};
use crate::validate::{Object, Policy};
use crate::yaml::{Node, Value};

/// Namespaces whose pods are the platform's own.
fn system_namespace(namespace: Option<&str>) -> bool {
    namespace.is_some_and(|namespace| {
        matches!(namespace, "kube-system" | "kube-node-lease" | "kube-public")
            || namespace.starts_with("gke-")
            || namespace.starts_with("gmp-")
    })
}

/// Whether a security rule reads `object` (beyond the workloads every family reads).
pub(crate) fn reads(object: &Object<'_>) -> bool {
    is_service(object) || is_iam_grant(object)
}

/// Runs every security rule on one object.
pub(crate) fn check(object: &Object<'_>, policy: Policy, out: &mut Vec<Diagnostic>) {
    if is_service(object) {
        check_service(object, out);
    }
    if is_project_grant(object) {
        check_grant(object, out);
    }
    if system_namespace(object.id.namespace.as_deref()) {
        return;
    }
    let objects = std::slice::from_ref(object);
    for template in templates(objects) {
        let spec = template.spec;
        // Multi-host TPU training uses the node's network for its data-center network
        // traffic, as GKE's multislice guides and XPK do: a documented need.
        let tpu = request(spec, &template.path, TPU_RESOURCE).is_some_and(|tpu| tpu.count > 0);
        for key in ["hostNetwork", "hostPID", "hostIPC"] {
            if tpu && key == "hostNetwork" {
                continue;
            }
            if let Some(node) = spec.get(key).filter(|node| is_true(node)) {
                let diagnostic = Diagnostic::warning(
                    rule::POD_HOST_ACCESS,
                    format!("the pods share the node's {} (`{key}: true`)", host_what(key)),
                )
                .found(format!("{key}: true"))
                .expected(format!("no `{key}`"))
                .fix("drop it; if the workload is a node agent that needs it, say why in the review and suppress the finding on the object (`aiml.dev/ignore: pod-host-access`)");
                out.push(template.finding(diagnostic, node, &format!("{}.{key}", template.path)));
            }
        }
        check_security_context(&template, out);
        for (container, path) in container_nodes(spec, &template.path) {
            let privileged = container.at(&["securityContext", "privileged"]);
            if let Some(node) = privileged.filter(|node| is_true(node)) {
                let diagnostic = Diagnostic::warning(
                    rule::POD_HOST_ACCESS,
                    "a privileged container has every capability and every device of the node",
                )
                .found("privileged: true")
                .expected("no `privileged`; the capabilities it needs, added one by one")
                .fix("drop `privileged` and add only the capabilities needed; for a node agent that needs it, suppress the finding on the object (`aiml.dev/ignore: pod-host-access`) and say why");
                out.push(template.finding(
                    diagnostic,
                    node,
                    &format!("{path}.securityContext.privileged"),
                ));
            }
            if let Some(image) = container.get("image") {
                check_image(&template, image, &format!("{path}.image"), policy, out);
            }
        }
    }
}

/// The securityContext YAML the `container-security-context` fix asks for.
const RESTRICTED_CONTEXT: &str =
    "securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}";

/// Whether a `securityContext` confines system calls (`RuntimeDefault` or a `Localhost`
/// profile; `Unconfined` and no profile do not).
fn seccomp_confined(context: Option<&Node>) -> bool {
    context
        .and_then(|context| context.at(&["seccompProfile", "type"]))
        .and_then(Node::as_str)
        .is_some_and(|kind| matches!(kind, "RuntimeDefault" | "Localhost"))
}

/// `container-security-context`: the settings of the Pod Security Standards' Restricted level
/// that never depend on the image (a confined seccomp profile, no privilege escalation, every
/// capability dropped). One finding per pod template, naming each container and what it lacks.
/// `runAsNonRoot` and `readOnlyRootFilesystem` are left out on purpose: whether they work is
/// the image's to say.
fn check_security_context(template: &PodTemplate<'_>, out: &mut Vec<Diagnostic>) {
    let pod_seccomp = seccomp_confined(template.spec.get("securityContext"));
    let mut lacking: Vec<String> = Vec::new();
    let mut seccomp_missing = false;
    for (container, _) in container_nodes(template.spec, &template.path) {
        let context = container.get("securityContext");
        let mut missing: Vec<&str> = Vec::new();
        if !pod_seccomp && !seccomp_confined(context) {
            seccomp_missing = true;
            missing.push("seccompProfile: RuntimeDefault");
        }
        let escalation = context.and_then(|context| context.get("allowPrivilegeEscalation"));
        if escalation.is_none_or(|node| node.value != Value::Bool(false)) {
            missing.push("allowPrivilegeEscalation: false");
        }
        let drops_all = context
            .and_then(|context| context.at(&["capabilities", "drop"]))
            .and_then(Node::as_seq)
            .is_some_and(|drop| drop.iter().any(|item| item.as_str() == Some("ALL")));
        if !drops_all {
            missing.push("capabilities.drop: [ALL]");
        }
        if !missing.is_empty() {
            let name = container.get("name").and_then(Node::as_str).unwrap_or("?");
            lacking.push(format!("`{name}` lacks {}", missing.join(", ")));
        }
    }
    if lacking.is_empty() {
        return;
    }
    let mut fix = format!("add to each container `{RESTRICTED_CONTEXT}`");
    if seccomp_missing {
        fix.push_str(
            " and to the pod spec `securityContext: {seccompProfile: {type: RuntimeDefault}}`",
        );
    }
    let diagnostic = Diagnostic::warning(
        rule::CONTAINER_SECURITY_CONTEXT,
        format!(
            "containers run with more privilege than they need: {}",
            lacking.join("; ")
        ),
    )
    .found(lacking.join("; "))
    .expected("seccompProfile RuntimeDefault (pod or container), and on every container allowPrivilegeEscalation: false and capabilities.drop [ALL]")
    .fix(fix);
    out.push(template.finding(diagnostic, template.spec, &template.path));
}

fn is_true(node: &Node) -> bool {
    node.value == Value::Bool(true)
}

fn host_what(key: &str) -> &'static str {
    match key {
        "hostNetwork" => "network namespace: its interfaces, its ports and the metadata server",
        "hostPID" => "process namespace: every process of the node",
        _ => "IPC namespace",
    }
}

/// `image-unpinned`: an image without a tag, or `:latest`, without a digest. A tag with no
/// digest is accepted (tags of the registries people use are kept), unless `policy` requires
/// digests: then every image without one is an `image-digest` error instead.
fn check_image(
    template: &impl Locate,
    image: &Node,
    field: &str,
    policy: Policy,
    out: &mut Vec<Diagnostic>,
) {
    let Some(reference) = image.as_str() else {
        return;
    };
    // `auto` is Istio's placeholder that its injector replaces with the proxy image.
    if reference.contains('@') || reference == "auto" {
        return;
    }
    // The tag is after the last `:` that follows the last `/` (a registry port is not a tag).
    let name = reference.rsplit('/').next().unwrap_or(reference);
    let tag = name.rsplit_once(':').map(|(_, tag)| tag);
    if policy.require_digests {
        let what = match tag {
            Some(tag) => format!("names tag `{tag}` and no digest"),
            None => "names neither a tag nor a digest".to_string(),
        };
        let diagnostic = Diagnostic::error(
            rule::IMAGE_DIGEST,
            format!("image `{reference}` {what}, and this repository requires digests: a tag can be moved to another image"),
        )
        .found(reference)
        .expected("`IMAGE:TAG@sha256:<digest>`")
        .fix("append the digest the registry gives for the tag (`crane digest IMAGE`, or `gcloud artifacts docker images describe IMAGE`), in the blueprint field or manifest that sets the image");
        out.push(template.finding(diagnostic, image, field));
        return;
    }
    let problem = match tag {
        None => "has no tag, so it means `latest`",
        Some("latest") => "is `latest`",
        Some(_) => return,
    };
    let diagnostic = Diagnostic::warning(
        rule::IMAGE_UNPINNED,
        format!("image `{reference}` {problem}: each node may pull a different image"),
    )
    .found(reference)
    .expected("a release tag (`:1.2.3`) or a digest (`@sha256:…`)")
    .fix("pin the image to a release tag, or better to its digest");
    out.push(template.finding(diagnostic, image, field));
}

fn is_service(object: &Object<'_>) -> bool {
    object.api_version == "v1" && object.id.kind == "Service"
}

/// `service-public`: a `LoadBalancer` Service that GKE exposes on a public address, open to
/// every source. Authentication cannot be seen from a Service, so the source ranges are what
/// the manifest can show.
fn check_service(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let Some(spec) = object.node.get("spec") else {
        return;
    };
    let Some(kind) = spec
        .get("type")
        .filter(|node| node.as_str() == Some("LoadBalancer"))
    else {
        return;
    };
    let internal = internal_load_balancer(object.node);
    let ranges = spec
        .get("loadBalancerSourceRanges")
        .and_then(Node::as_seq)
        .is_some_and(|ranges| {
            !ranges.is_empty()
                && ranges
                    .iter()
                    .all(|range| !matches!(range.as_str(), Some("0.0.0.0/0" | "::/0")))
        });
    if internal || ranges {
        return;
    }
    let diagnostic = Diagnostic::warning(
        rule::SERVICE_PUBLIC,
        "a public load balancer with no source ranges: every address on the internet reaches the Service, unauthenticated unless the server checks",
    )
    .found("type: LoadBalancer, external, no loadBalancerSourceRanges")
    .expected("an internal load balancer, source ranges, or a Gateway with IAP or Cloud Armor")
    .fix("annotate `networking.gke.io/load-balancer-type: \"Internal\"`, or list the clients in `loadBalancerSourceRanges`, or expose it through a Gateway with authentication (IAP, Cloud Armor)");
    out.push(object.finding(diagnostic, kind, "spec.type"));
}

/// Whether `object` is a Config Connector IAM grant the rule reads.
fn is_iam_grant(object: &Object<'_>) -> bool {
    object.group() == "iam.cnrm.cloud.google.com"
        && matches!(
            object.id.kind.as_str(),
            "IAMPolicyMember" | "IAMPartialPolicy"
        )
}

/// Whether `object` grants a role on a whole project through Config Connector.
fn is_project_grant(object: &Object<'_>) -> bool {
    is_iam_grant(object)
        && object
            .node
            .at(&["spec", "resourceRef", "kind"])
            .and_then(Node::as_str)
            == Some("Project")
}

/// Roles that a single resource can be granted, and the resource that takes them.
/// See <https://cloud.google.com/iam/docs/roles-permissions> (each role's lowest resource).
const RESOURCE_ROLES: &[(&str, &str)] = &[
    (
        "roles/storage.objectViewer",
        "the bucket (`IAMPolicyMember` on a `StorageBucket`)",
    ),
    (
        "roles/storage.objectCreator",
        "the bucket (`IAMPolicyMember` on a `StorageBucket`)",
    ),
    (
        "roles/storage.objectUser",
        "the bucket (`IAMPolicyMember` on a `StorageBucket`)",
    ),
    (
        "roles/storage.objectAdmin",
        "the bucket (`IAMPolicyMember` on a `StorageBucket`)",
    ),
    (
        "roles/bigquery.dataViewer",
        "the dataset or table (`IAMPolicyMember` on a `BigQueryTable` or `BigQueryDataset`)",
    ),
    (
        "roles/bigquery.dataEditor",
        "the dataset or table (`IAMPolicyMember` on a `BigQueryTable` or `BigQueryDataset`)",
    ),
    (
        "roles/bigquery.dataOwner",
        "the dataset or table (`IAMPolicyMember` on a `BigQueryTable` or `BigQueryDataset`)",
    ),
    (
        "roles/pubsub.publisher",
        "the topic (`IAMPolicyMember` on a `PubSubTopic`)",
    ),
    (
        "roles/pubsub.subscriber",
        "the subscription (`IAMPolicyMember` on a `PubSubSubscription`)",
    ),
    ("roles/pubsub.viewer", "the topic or subscription"),
    (
        "roles/artifactregistry.reader",
        "the repository (`IAMPolicyMember` on an `ArtifactRegistryRepository`)",
    ),
    (
        "roles/artifactregistry.writer",
        "the repository (`IAMPolicyMember` on an `ArtifactRegistryRepository`)",
    ),
    (
        "roles/secretmanager.secretAccessor",
        "the secret (`IAMPolicyMember` on a `SecretManagerSecret`)",
    ),
    (
        "roles/iam.serviceAccountUser",
        "the service account (`IAMPolicyMember` on an `IAMServiceAccount`)",
    ),
    (
        "roles/iam.serviceAccountTokenCreator",
        "the service account (`IAMPolicyMember` on an `IAMServiceAccount`)",
    ),
    (
        "roles/iam.workloadIdentityUser",
        "the service account (`IAMPolicyMember` on an `IAMServiceAccount`)",
    ),
];

/// `iam-project-scope`: a project-wide grant of a role a single resource can hold.
fn check_grant(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let spec = object.node.get("spec");
    let mut roles: Vec<(&Node, String)> = Vec::new();
    if let Some(role) = spec.and_then(|spec| spec.get("role")) {
        roles.push((role, "spec.role".to_string()));
    }
    for (index, binding) in spec
        .map(|spec| spec.items("bindings"))
        .unwrap_or(&[])
        .iter()
        .enumerate()
    {
        if let Some(role) = binding.get("role") {
            roles.push((role, format!("spec.bindings[{index}].role")));
        }
    }
    for (node, field) in roles {
        let Some(role) = node.as_str() else { continue };
        let Some((_, resource)) = RESOURCE_ROLES.iter().find(|(known, _)| *known == role) else {
            continue;
        };
        let diagnostic = Diagnostic::warning(
            rule::IAM_PROJECT_SCOPE,
            format!("`{role}` is granted on the whole project, where one resource would do"),
        )
        .found(format!("{role} on a Project"))
        .expected(format!("the grant on {resource}"))
        .fix("grant the role on the one resource the member uses (its `resourceRef`), not the project");
        out.push(object.finding(diagnostic, node, &field));
    }
}

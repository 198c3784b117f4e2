//! What the API server's Go validation refuses in the built-in kinds of AI/ML manifests, beyond
//! their OpenAPI schema: the checks of `k8s.io/kubernetes` `pkg/apis/<group>/validation/
//! validation.go` (v1.32.0, the default target) that people hit, one rule per class.
//!
//! - `workload-spec`: a Deployment, ReplicaSet, StatefulSet or DaemonSet has a non-empty
//!   selector that matches its pod template's labels, and a template; a Job's pods restart
//!   `OnFailure` or `Never`, the others' `Always`; a Job with `manualSelector` has a matching
//!   selector; a CronJob has a schedule and a job template; every pod template has containers.
//! - `pod-spec-names`: container, port and volume names are well formed and unique, every
//!   volume mount names a volume of the pod, environment variable names are legal.
//! - `container-probes`: a probe has exactly one handler, and a liveness or startup probe a
//!   `successThreshold` of 1.
//! - `service-ports`: a Service that is not headless or `ExternalName` has ports; each port is
//!   named when there are several, names and port/protocol pairs are unique, numbers in range,
//!   `targetPort` a port number or an IANA service name, `nodePort` only where the type has one.
//! - `hpa-spec`: a HorizontalPodAutoscaler (`autoscaling/v2`) names its target and its maximum;
//!   each metric has a type, the source that type names (and no other), and a target with the
//!   value its type needs.
//! - `network-policy-peer`: a NetworkPolicy peer selects something, and an `ipBlock` alone.
//! - `rbac-rule`: a Role or ClusterRole rule has verbs, and resources with API groups or (a
//!   ClusterRole's only) non-resource URLs, not both.
//! - `pdb-spec`: a PodDisruptionBudget sets at most one of `minAvailable` and `maxUnavailable`,
//!   each a non-negative count or a percentage up to 100%.
//! - `config-data-keys`: a ConfigMap's or Secret's keys are legal file names (`[-._a-zA-Z0-9]+`,
//!   not `.`, `..` or `..…`), at most 1 MiB of data in all, and a typed Secret has the keys
//!   its type needs.
//! - `pvc-spec`: a PersistentVolumeClaim has an access mode and a positive storage request.
//! - `priority-class-value`: a PriorityClass stays at or below 1000000000, and `system-` names
//!   are the cluster's own classes.
//!
//! Every field is read as the server reads it: for a built-in kind a `null` is an absent field.
//! Fields the schema requires stay the schema's findings (`schema-violation`), so that a defect
//! is reported once. Names in pods are also checked in the pod templates of custom resources
//! (JobSet, LeaderWorkerSet, RayCluster) and StatefulSets, which the server does not validate
//! as pod specs when the object is created (`ValidatePodTemplateSpecForStatefulSet`): their
//! controllers create the pods, which the same validation refuses, later and quieter. Keys a
//! server-side apply refuses to repeat in a list map (`env` by name, `ports` by port and
//! protocol) are checked with them. Requests above limits are `resources`'.

use std::collections::BTreeSet;

use crate::diagnostic::Diagnostic;
use crate::validate::Object;
use crate::validate::model::fields::{join, scalar_text};
use crate::validate::model::workload::templates;
use crate::validate::rule;
use crate::validate::rules::shared::Locate;
use crate::yaml::{Node, Value};

/// Kinds this module reads beyond the workloads (which `model::workload` names).
pub(crate) fn reads(object: &Object<'_>) -> bool {
    matches!(
        (object.group(), object.id.kind.as_str()),
        ("rbac.authorization.k8s.io", "Role" | "ClusterRole")
            | ("policy", "PodDisruptionBudget")
            | ("scheduling.k8s.io", "PriorityClass")
            | ("", "Service")
            | ("networking.k8s.io", "NetworkPolicy")
            | ("autoscaling", "HorizontalPodAutoscaler")
            | ("", "ConfigMap" | "Secret" | "PersistentVolumeClaim")
    )
}

/// Runs every rule of this module on one object.
pub(crate) fn check(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    match (object.group(), object.id.kind.as_str()) {
        ("apps", kind @ ("Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet")) => {
            replicated(object, kind, out);
        }
        ("batch", "Job") => {
            if let Some(spec) = present(node, "spec") {
                job(object, spec, "spec", out);
            } else {
                out.push(missing(
                    object,
                    node,
                    "spec.template",
                    "a Job needs a pod template",
                ));
            }
        }
        ("batch", "CronJob") => cron_job(object, out),
        ("", "Service") => service(object, out),
        ("autoscaling", "HorizontalPodAutoscaler") if object.api_version == "autoscaling/v2" => {
            autoscaler(object, out);
        }
        ("networking.k8s.io", "NetworkPolicy") => network_policy(object, out),
        ("rbac.authorization.k8s.io", kind @ ("Role" | "ClusterRole")) => {
            rbac(object, kind == "Role", out);
        }
        ("policy", "PodDisruptionBudget") => disruption_budget(object, out),
        ("scheduling.k8s.io", "PriorityClass") => priority_class(object, out),
        ("", "ConfigMap" | "Secret") => config_data(object, out),
        ("", "PersistentVolumeClaim") => claim(object, out),
        _ => {}
    }
    pod_names(object, out);
}

/// The value under `key`, unless absent or `null` (a null is an absent field to the server).
fn present<'a>(node: &'a Node, key: &str) -> Option<&'a Node> {
    node.get(key).filter(|value| value.value != Value::Null)
}

/// The entries of a mapping under `key` (none when absent, null or not a mapping).
fn entries<'a>(node: &'a Node, key: &str) -> &'a [(crate::yaml::Key, Node)] {
    present(node, key).and_then(Node::as_map).unwrap_or(&[])
}

/// The items of a list under `key`, nulls left out as the server leaves them out.
fn items<'a>(node: &'a Node, key: &str) -> Vec<&'a Node> {
    node.items(key)
        .iter()
        .filter(|item| item.value != Value::Null)
        .collect()
}

/// A required field that is absent, pointed at its parent. Used where the schema does not
/// say so: under a `spec` that the schema leaves optional (absent or `null`), or for fields the
/// Go validation alone requires. Fields the schema requires are the schema's findings.
fn missing(object: &Object<'_>, parent: &Node, field: &str, why: &str) -> Diagnostic {
    let leaf = field.rsplit(['.', ']']).next().unwrap_or(field);
    object.finding(
        Diagnostic::error(
            rule_of_field(object),
            format!(
                "`{field}` is missing: the API server refuses the {} (\"Required value\")",
                object.id.kind
            ),
        )
        .found(format!("no `{leaf}`"))
        .expected(why.to_owned())
        .fix(format!("add `{leaf}`")),
        parent,
        field,
    )
}

/// The rule a missing field of `object` belongs to.
fn rule_of_field(object: &Object<'_>) -> &'static str {
    match object.id.kind.as_str() {
        "Service" => rule::SERVICE_PORTS,
        "HorizontalPodAutoscaler" => rule::HPA_SPEC,
        "NetworkPolicy" => rule::NETWORK_POLICY_PEER,
        "Role" | "ClusterRole" => rule::RBAC_RULE,
        "PodDisruptionBudget" => rule::PDB_SPEC,
        "ConfigMap" | "Secret" => rule::CONFIG_DATA_KEYS,
        "PersistentVolumeClaim" => rule::PVC_SPEC,
        _ => rule::WORKLOAD_SPEC,
    }
}

// ---- workloads ---------------------------------------------------------------------------

/// Deployments, ReplicaSets, StatefulSets and DaemonSets: `ValidateDeploymentSpec`,
/// `ValidateReplicaSetSpec`, `ValidateStatefulSetSpec` and `ValidateDaemonSetSpec` in
/// `pkg/apis/apps/validation/validation.go`: a selector (required, not empty, matching the
/// template's labels) and a template whose pods restart `Always`
/// (`ValidatePodTemplateSpecForReplicaSet` and its StatefulSet and DaemonSet twins).
fn replicated(object: &Object<'_>, kind: &str, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let Some(spec) = present(node, "spec") else {
        out.push(missing(
            object,
            node,
            "spec.selector",
            &format!("a {kind} needs a selector and a pod template"),
        ));
        return;
    };
    let template = present(spec, "template");
    let labels = template.map_or(&[][..], |template| {
        present(template, "metadata").map_or(&[][..], |metadata| entries(metadata, "labels"))
    });
    if present(spec, "selector").is_some() {
        // Absent, it is the schema's finding (`selector` is required there).
        selector(object, spec, "spec", labels, kind, out);
    }
    let Some(template) = template else {
        // The schema requires a template of all but a ReplicaSet; the Go validation of all.
        if kind == "ReplicaSet" && spec.get("template").is_none() {
            out.push(missing(
                object,
                spec,
                "spec.template",
                "a ReplicaSet needs a pod template with containers",
            ));
        }
        return;
    };
    pod_template(object, template, "spec.template", &["Always"], out);
}

/// A Job's spec (`ValidateJobSpec`, `pkg/apis/batch/validation/validation.go`): a template,
/// pods that restart `OnFailure` or `Never`, and with `manualSelector: true` a selector that
/// matches the template (without it the server writes the selector itself).
fn job(object: &Object<'_>, spec: &Node, path: &str, out: &mut Vec<Diagnostic>) {
    let Some(template) = present(spec, "template") else {
        return; // required by the schema
    };
    if present(spec, "manualSelector").is_some_and(|flag| flag.value == Value::Bool(true)) {
        let labels =
            present(template, "metadata").map_or(&[][..], |metadata| entries(metadata, "labels"));
        selector(object, spec, path, labels, "Job", out);
    }
    pod_template(
        object,
        template,
        &join(path, "template"),
        &["OnFailure", "Never"],
        out,
    );
}

/// A CronJob (`ValidateCronJobSpec`): a schedule and a job template, whose Job is a Job.
fn cron_job(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let Some(spec) = present(node, "spec") else {
        out.push(missing(
            object,
            node,
            "spec.schedule",
            "a CronJob needs a schedule and a job template",
        ));
        return;
    };
    // Absent it is the schema's finding; empty, the Go validation's (`len(schedule) == 0`).
    if present(spec, "schedule").and_then(Node::as_str) == Some("") {
        out.push(missing(
            object,
            spec,
            "spec.schedule",
            "a cron schedule such as `0 * * * *`",
        ));
    }
    match present(spec, "jobTemplate").map(|template| present(template, "spec")) {
        Some(Some(job_spec)) => job(object, job_spec, "spec.jobTemplate.spec", out),
        None => {} // required by the schema
        Some(None) => out.push(missing(
            object,
            spec,
            "spec.jobTemplate.spec.template",
            "a CronJob needs a job template with a pod template",
        )),
    }
}

/// A label selector of a workload (`spec.selector`) against its template's labels.
fn selector(
    object: &Object<'_>,
    spec: &Node,
    path: &str,
    labels: &[(crate::yaml::Key, Node)],
    kind: &str,
    out: &mut Vec<Diagnostic>,
) {
    let field = join(path, "selector");
    let Some(selector) = present(spec, "selector") else {
        out.push(missing(
            object,
            spec,
            &field,
            "a selector that matches the pod template's labels",
        ));
        return;
    };
    let match_labels = entries(selector, "matchLabels");
    let expressions = items(selector, "matchExpressions");
    if match_labels.is_empty() && expressions.is_empty() {
        let lower = kind.to_lowercase();
        out.push(object.finding(
            Diagnostic::error(
                rule::WORKLOAD_SPEC,
                format!("the selector of the {kind} is empty: the API server refuses it (\"empty selector is invalid for {lower}\")"),
            )
            .found("no `matchLabels` or `matchExpressions`")
            .expected("a selector that matches the pod template's labels")
            .fix("select the pods by a label of the template, e.g. `matchLabels: {app: <name>}`"),
            selector,
            &field,
        ));
        return;
    }
    let label = |key: &str| {
        labels
            .iter()
            .find(|(k, _)| k.text == key)
            .and_then(|(_, value)| scalar_text(value))
    };
    let mut unmatched = Vec::new();
    for (key, value) in match_labels {
        let wanted = scalar_text(value).unwrap_or_default();
        if label(&key.text).as_deref() != Some(wanted.as_str()) {
            unmatched.push(format!("{}: {wanted}", key.text));
        }
    }
    // `metav1.LabelSelectorAsSelector`: In, NotIn, Exists, DoesNotExist.
    for expression in expressions {
        let key = present(expression, "key")
            .and_then(Node::as_str)
            .unwrap_or("");
        let operator = present(expression, "operator")
            .and_then(Node::as_str)
            .unwrap_or("");
        let values: Vec<String> = items(expression, "values")
            .into_iter()
            .filter_map(scalar_text)
            .collect();
        let have = label(key);
        let holds = match operator {
            "In" => have.is_some_and(|have| values.contains(&have)),
            "NotIn" => have.is_none_or(|have| !values.contains(&have)),
            "Exists" => have.is_some(),
            "DoesNotExist" => have.is_none(),
            _ => true,
        };
        if !holds {
            unmatched.push(format!("{key} {operator} {values:?}"));
        }
    }
    if !unmatched.is_empty() {
        out.push(object.finding(
            Diagnostic::error(
                rule::WORKLOAD_SPEC,
                format!("the selector of the {kind} does not match its pod template's labels: the API server refuses it (\"`selector` does not match template `labels`\")"),
            )
            .found(format!("not in the template's labels: {}", unmatched.join(", ")))
            .expected("every `matchLabels` entry and `matchExpressions` requirement holds for `template.metadata.labels`")
            .fix("give the pod template the labels the selector names (the selector cannot change after creation)"),
            selector,
            &field,
        ));
    }
}

/// A pod template of a built-in workload: containers, and a restart policy its controller
/// allows (`ValidatePodTemplateSpecForReplicaSet` and its twins: `Always`, the default;
/// `ValidateJobSpec`: `OnFailure` or `Never`, written, as a Job's template gets no default).
fn pod_template(
    object: &Object<'_>,
    template: &Node,
    path: &str,
    allowed: &[&str],
    out: &mut Vec<Diagnostic>,
) {
    let Some(spec) = present(template, "spec") else {
        out.push(missing(
            object,
            template,
            &join(path, "spec.containers"),
            "a pod template with at least one container",
        ));
        return;
    };
    let spec_path = join(path, "spec");
    // An empty list; absent or null, it is the schema's finding (`containers` is required).
    if spec
        .get("containers")
        .and_then(Node::as_seq)
        .is_some_and(<[Node]>::is_empty)
    {
        out.push(missing(
            object,
            spec,
            &join(&spec_path, "containers"),
            "at least one container",
        ));
    }
    let written = present(spec, "restartPolicy");
    let wanted: Vec<String> = allowed.iter().map(|p| format!("`{p}`")).collect();
    let kind = &object.id.kind;
    let field = join(&spec_path, "restartPolicy");
    let fix = format!("set `{field}: {}`", allowed[0]);
    match written {
        // Absent, a pod template of a Deployment, ReplicaSet, StatefulSet or DaemonSet is
        // defaulted to `Always`; a Job's is not, and the server asks for one.
        None if !allowed.contains(&"Always") => out.push(object.finding(
            Diagnostic::error(
                rule::WORKLOAD_SPEC,
                format!("a {kind}'s pods need a `restartPolicy`: the API server refuses it (\"Required value: valid values: \"OnFailure\", \"Never\"\")"),
            )
            .found("no `restartPolicy`")
            .expected(format!("`restartPolicy` {}", wanted.join(" or ")))
            .fix(fix),
            spec,
            &field,
        )),
        Some(node) => {
            let policy = node.as_str().unwrap_or_default();
            if !allowed.contains(&policy) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::WORKLOAD_SPEC,
                        format!("a {kind}'s pods cannot restart `{policy}`: the API server refuses it (\"Unsupported value\")"),
                    )
                    .found(format!("`restartPolicy: {policy}`"))
                    .expected(format!("`restartPolicy` {}", wanted.join(" or ")))
                    .fix(fix),
                    node,
                    &field,
                ));
            }
        }
        None => {}
    }
}

// ---- names in pod specs ------------------------------------------------------------------

/// Names in every pod spec of `object` (`ValidatePodSpec` in
/// `pkg/apis/core/validation/validation.go`): `validateContainers` and
/// `validateInitContainers` (names DNS labels, unique across both lists),
/// `validateContainerPorts` (port names IANA service names, unique within a container),
/// `ValidateVolumes` (names DNS labels, unique), `ValidateVolumeMounts` (a mount names a
/// volume; mount paths unique within a container) and `validateEnv` (names).
fn pod_names(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    for template in templates(std::slice::from_ref(object)) {
        let spec = template.spec;
        let path = &template.path;
        let mut volumes = BTreeSet::new();
        // Every volume name, well formed or not, for the mounts: a bad name is reported once.
        // Controllers that add a volume per claim template, named after it, to the pods:
        // StatefulSet (`StatefulSetSpec.volumeClaimTemplates`,
        // `staging/src/k8s.io/api/apps/v1/types.go`), LeaderWorkerSet
        // (`LeaderWorkerTemplate.volumeClaimTemplates`, kubernetes-sigs/lws
        // `api/leaderworkerset/v1/leaderworkerset_types.go`) and JobSet
        // (`JobSetSpec.volumeClaimPolicies[].templates`, kubernetes-sigs/jobset
        // `api/jobset/v1alpha2/jobset_types.go` at 08dfbdfd, after v0.12.0).
        let mut declared: BTreeSet<String> = claim_templates(object)
            .into_iter()
            .filter_map(|claim| claim.at(&["metadata", "name"]).and_then(scalar_text))
            .collect();
        for (index, volume) in items(spec, "volumes").into_iter().enumerate() {
            let field = format!("{}[{index}].name", join(path, "volumes"));
            let Some(name) = present(volume, "name") else {
                continue; // required by the schema
            };
            let text = scalar_text(name).unwrap_or_default();
            declared.insert(text.clone());
            name_check(object, name, &field, &text, "volume", &mut volumes, out);
        }
        let mut containers = BTreeSet::new();
        for key in ["initContainers", "containers"] {
            for (index, container) in items(spec, key).into_iter().enumerate() {
                let base = format!("{}[{index}]", join(path, key));
                if let Some(name) = present(container, "name") {
                    let text = scalar_text(name).unwrap_or_default();
                    let field = join(&base, "name");
                    name_check(
                        object,
                        name,
                        &field,
                        &text,
                        "container",
                        &mut containers,
                        out,
                    );
                }
                container_names(object, container, &base, &declared, out);
                probes(object, container, &base, out);
            }
        }
    }
}

/// The claim templates whose volumes `object`'s controller adds to its pods.
fn claim_templates<'a>(object: &Object<'a>) -> Vec<&'a Node> {
    let spec = object.node.get("spec");
    match (object.group(), object.id.kind.as_str()) {
        ("apps", "StatefulSet") => {
            spec.map(|spec| spec.items("volumeClaimTemplates").iter().collect())
        }
        ("leaderworkerset.x-k8s.io", "LeaderWorkerSet") => spec
            .and_then(|spec| spec.get("leaderWorkerTemplate"))
            .map(|group| group.items("volumeClaimTemplates").iter().collect()),
        ("jobset.x-k8s.io", "JobSet") => spec.map(|spec| {
            spec.items("volumeClaimPolicies")
                .iter()
                .flat_map(|policy| policy.items("templates"))
                .collect()
        }),
        _ => None,
    }
    .unwrap_or_default()
}

/// A DNS-label name that must be unique among `seen`.
fn name_check(
    object: &Object<'_>,
    node: &Node,
    field: &str,
    name: &str,
    what: &str,
    seen: &mut BTreeSet<String>,
    out: &mut Vec<Diagnostic>,
) {
    if let Err(reason) = crate::names::check_dns_label(name) {
        out.push(object.finding(
            Diagnostic::error(
                rule::POD_SPEC_NAMES,
                format!("the {what} name `{name}` is not a DNS label: the API server refuses the pod ({reason})"),
            )
            .found(name.to_owned())
            .expected("at most 63 lowercase letters, digits and `-`, starting and ending with a letter or digit")
            .fix(format!("rename the {what}, e.g. `{}`", suggest_label(name))),
            node,
            field,
        ));
    } else if !seen.insert(name.to_owned()) {
        out.push(object.finding(
            Diagnostic::error(
                rule::POD_SPEC_NAMES,
                format!("the {what} name `{name}` is used twice in one pod: the API server refuses the pod (\"Duplicate value\")"),
            )
            .found(name.to_owned())
            .expected(format!("a {what} name used once per pod"))
            .fix(format!("rename one of the {what}s named `{name}`")),
            node,
            field,
        ));
    }
}

/// A close DNS label for a fix: lowercase, other characters as `-`, trimmed to 63.
fn suggest_label(name: &str) -> String {
    let mut label: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .collect();
    label.truncate(63);
    let label = label.trim_matches('-');
    if label.is_empty() {
        "main".to_owned()
    } else {
        label.to_owned()
    }
}

/// One container's port names, volume mounts and environment variable names.
fn container_names(
    object: &Object<'_>,
    container: &Node,
    base: &str,
    volumes: &BTreeSet<String>,
    out: &mut Vec<Diagnostic>,
) {
    let mut ports = BTreeSet::new();
    let mut numbers = BTreeSet::new();
    for (index, port) in items(container, "ports").into_iter().enumerate() {
        let port_path = format!("{}[{index}]", join(base, "ports"));
        // `ports` is a list map keyed by `containerPort` and `protocol` (`core/v1/types.go`):
        // the Go validation lets a pair repeat, a server-side apply refuses it.
        let protocol = present(port, "protocol")
            .and_then(Node::as_str)
            .unwrap_or("TCP");
        if let Some(number) = present(port, "containerPort")
            && let Some(value) = number.as_i64()
            && !numbers.insert((value, protocol.to_owned()))
        {
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("container port {value}/{protocol} is listed twice in one container: a server-side apply refuses it (\"duplicate entries for key\")"),
                )
                .found(format!("{value}/{protocol}"))
                .expected("each port and protocol once per container")
                .fix("remove the second entry"),
                number,
                &join(&port_path, "containerPort"),
            ));
        }
        if let Some(name) = present(port, "name") {
            let text = scalar_text(name).unwrap_or_default();
            let field = join(&port_path, "name");
            if let Err(reason) = iana_service_name(&text) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::POD_SPEC_NAMES,
                        format!("the port name `{text}` is not an IANA service name: the API server refuses the pod ({reason})"),
                    )
                    .found(text.clone())
                    .expected("at most 15 lowercase letters, digits and `-`, with a letter, no `--`, not starting or ending with `-`")
                    .fix("name the port like `http`, `grpc` or `metrics`"),
                    name,
                    &field,
                ));
            } else if !ports.insert(text.clone()) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::POD_SPEC_NAMES,
                        format!("the port name `{text}` is used twice in one container: the API server refuses the pod (\"Duplicate value\")"),
                    )
                    .found(text.clone())
                    .expected("a port name used once per container")
                    .fix(format!("rename one of the ports named `{text}`")),
                    name,
                    &field,
                ));
            }
        }
        if let Some(number) = present(port, "containerPort").and_then(Node::as_i64)
            && !(1..=65535).contains(&number)
        {
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("the container port {number} is not a port number: the API server refuses the pod (\"must be between 1 and 65535, inclusive\")"),
                )
                .found(number.to_string())
                .expected("a port between 1 and 65535")
                .fix("write the port the container listens on"),
                present(port, "containerPort").unwrap_or(port),
                &join(&port_path, "containerPort"),
            ));
        }
    }
    let mut paths = BTreeSet::new();
    for (index, mount) in items(container, "volumeMounts").into_iter().enumerate() {
        let mount_path = format!("{}[{index}]", join(base, "volumeMounts"));
        if let Some(name) = present(mount, "name").and_then(scalar_text)
            && !volumes.contains(&name)
        {
            let known: Vec<String> = volumes.iter().map(|v| format!("`{v}`")).collect();
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("the volume mount names `{name}`, which is not a volume of the pod: the API server refuses the pod (\"Not found\")"),
                )
                .found(name.clone())
                .expected(if known.is_empty() {
                    "a volume under the pod's `volumes` (it has none)".to_owned()
                } else {
                    format!("one of the pod's volumes: {}", known.join(", "))
                })
                .fix(format!("add a volume named `{name}` to the pod's `volumes`, or mount one it has")),
                present(mount, "name").unwrap_or(mount),
                &join(&mount_path, "name"),
            ));
        }
        if let Some(at) = present(mount, "mountPath").and_then(Node::as_str)
            && !paths.insert(at.to_owned())
        {
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("two volumes are mounted at `{at}` in one container: the API server refuses the pod (\"must be unique\")"),
                )
                .found(at.to_owned())
                .expected("one mount per path")
                .fix("mount the second volume at another path, or use `subPath`s of one volume"),
                present(mount, "mountPath").unwrap_or(mount),
                &join(&mount_path, "mountPath"),
            ));
        }
    }
    let mut variables = BTreeSet::new();
    for (index, variable) in items(container, "env").into_iter().enumerate() {
        let Some(name) = present(variable, "name") else {
            continue; // required by the schema
        };
        let text = scalar_text(name).unwrap_or_default();
        // `env` is a list map keyed by `name` (`+listMapKey=name` in `core/v1/types.go`): the
        // Go validation only warns of a repeat, but a server-side apply (Config Sync, Argo CD
        // with server-side apply, `kubectl apply --server-side`) refuses it, and elsewhere only
        // the last value counts.
        if !variables.insert(text.clone()) {
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("the environment variable `{}` is set twice in one container: a server-side apply refuses it (\"duplicate entries for key [name=...]\")", text.escape_default()),
                )
                .found(text.escape_default().to_string())
                .expected("each variable once per container")
                .fix("keep the value you mean and remove the other entry"),
                name,
                &format!("{}[{index}].name", join(base, "env")),
            ));
        }
        // `validateEnvVarName` with RelaxedEnvironmentVariableValidation (beta and on by
        // default from 1.32, GA in 1.34: kubernetes/enhancements KEP-4369): any printable
        // ASCII but `=`.
        let legal = !text.is_empty()
            && text
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'=');
        if !legal {
            out.push(object.finding(
                Diagnostic::error(
                    rule::POD_SPEC_NAMES,
                    format!("the environment variable name `{}` is not legal: the API server refuses the pod (\"a valid environment variable name must consist only of printable ASCII characters other than '='\")", text.escape_default()),
                )
                .found(text.escape_default().to_string())
                .expected("a non-empty name of printable ASCII characters other than `=`")
                .fix("rename the variable, e.g. `MODEL_ID`"),
                name,
                &format!("{}[{index}].name", join(base, "env")),
            ));
        }
    }
}

/// A container's probes (`validateProbe`, `validateHandler`, `validateLivenessProbe` and
/// `validateStartupProbe` in `pkg/apis/core/validation/validation.go`): one handler of
/// `exec`, `httpGet`, `tcpSocket` and `grpc`; a liveness or startup probe succeeds once
/// (`successThreshold` 1, or 0, which `SetDefaults_Probe` makes 1).
fn probes(object: &Object<'_>, container: &Node, base: &str, out: &mut Vec<Diagnostic>) {
    const HANDLERS: [&str; 4] = ["exec", "httpGet", "tcpSocket", "grpc"];
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        let Some(probe) = present(container, key) else {
            continue;
        };
        let path = join(base, key);
        let set: Vec<&str> = HANDLERS
            .into_iter()
            .filter(|handler| present(probe, handler).is_some())
            .collect();
        let problem = match set.len() {
            0 => Some((
                "has no handler",
                "\"must specify a handler type\"",
                "nothing".to_owned(),
            )),
            1 => None,
            _ => Some((
                "has more than one handler",
                "\"may not specify more than 1 handler type\"",
                set.join(" and "),
            )),
        };
        if let Some((what, quote, found)) = problem {
            out.push(
                object.finding(
                    Diagnostic::error(
                        rule::CONTAINER_PROBES,
                        format!("the `{key}` {what}: the API server refuses the pod ({quote})"),
                    )
                    .found(found)
                    .expected("exactly one of `exec`, `httpGet`, `tcpSocket`, `grpc`")
                    .fix("keep the one check the probe should run"),
                    probe,
                    &path,
                ),
            );
        }
        if key != "readinessProbe"
            && let Some(threshold) = present(probe, "successThreshold")
            && let Some(value) = threshold.as_i64()
            && value > 1
        {
            out.push(object.finding(
                Diagnostic::error(
                    rule::CONTAINER_PROBES,
                    format!("a `{key}` with `successThreshold: {value}`: the API server refuses the pod (\"must be 1\")"),
                )
                .found(value.to_string())
                .expected("`successThreshold: 1` (or none)")
                .fix("remove `successThreshold`; use `failureThreshold` or `periodSeconds` to tune the probe"),
                threshold,
                &join(&path, "successThreshold"),
            ));
        }
    }
}

/// `validation.IsValidPortName` (`k8s.io/apimachinery/pkg/util/validation`): an IANA service
/// name.
fn iana_service_name(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 15 {
        return Err(format!("{} characters, 1 to 15 allowed", name.len()));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("only lowercase letters, digits and `-` are allowed".into());
    }
    if !name.bytes().any(|b| b.is_ascii_lowercase()) {
        return Err("must contain at least one letter".into());
    }
    if name.contains("--") {
        return Err("must not contain `--`".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must not begin or end with `-`".into());
    }
    Ok(())
}

// ---- Services ----------------------------------------------------------------------------

/// A Service (`ValidateService`, `validateServicePort`, `pkg/apis/core/validation`).
fn service(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let empty = Node {
        value: Value::Map(Vec::new()),
        span: node.span,
    };
    let spec = present(node, "spec").unwrap_or(&empty);
    let kind = present(spec, "type")
        .and_then(Node::as_str)
        .unwrap_or("ClusterIP");
    let headless = present(spec, "clusterIP").and_then(Node::as_str) == Some("None");
    if kind == "ExternalName" {
        if present(spec, "externalName")
            .and_then(Node::as_str)
            .is_none_or(str::is_empty)
        {
            out.push(missing(
                object,
                spec,
                "spec.externalName",
                "the DNS name the Service points to",
            ));
        }
        return;
    }
    let ports = items(spec, "ports");
    if ports.is_empty() {
        if !headless {
            let at = if present(node, "spec").is_some() {
                spec
            } else {
                node
            };
            out.push(object.finding(
                Diagnostic::error(
                    rule::SERVICE_PORTS,
                    format!("a `{kind}` Service without ports: the API server refuses it (\"spec.ports: Required value\")"),
                )
                .found("no `spec.ports`")
                .expected("at least one port, unless `clusterIP: None` (headless) or `type: ExternalName`")
                .fix("add `ports: [{name: http, port: 80, targetPort: <container port>}]`"),
                at,
                "spec.ports",
            ));
        }
        return;
    }
    let mut names = BTreeSet::new();
    let mut pairs = BTreeSet::new();
    let with_node_port = matches!(kind, "NodePort" | "LoadBalancer");
    for (index, port) in ports.iter().enumerate() {
        let path = format!("spec.ports[{index}]");
        let mut push = |node: &Node, field: &str, message: String, expected: &str, fix: String| {
            out.push(
                object.finding(
                    Diagnostic::error(rule::SERVICE_PORTS, message)
                        .found(
                            scalar_text(node).unwrap_or_else(|| node.value.describe().to_owned()),
                        )
                        .expected(expected.to_owned())
                        .fix(fix),
                    node,
                    &join(&path, field),
                ),
            );
        };
        match present(port, "name").and_then(scalar_text) {
            None if ports.len() > 1 => push(
                port,
                "name",
                "a port of a Service with several ports has no name: the API server refuses it (\"Required value\")".to_owned(),
                "a name on every port when there are several",
                "name each port, e.g. `name: http`".to_owned(),
            ),
            None => {}
            Some(name) => {
                let node = present(port, "name").unwrap_or(port);
                if let Err(reason) = crate::names::check_dns_label(&name) {
                    push(
                        node,
                        "name",
                        format!("the port name `{name}` is not a DNS label: the API server refuses the Service ({reason})"),
                        "a DNS label",
                        format!("rename the port, e.g. `{}`", suggest_label(&name)),
                    );
                } else if !names.insert(name.clone()) {
                    push(
                        node,
                        "name",
                        format!("the port name `{name}` is used twice: the API server refuses the Service (\"Duplicate value\")"),
                        "each port name once",
                        format!("rename one of the ports named `{name}`"),
                    );
                }
            }
        }
        let number = present(port, "port").and_then(Node::as_i64);
        if let Some(number) = number
            && !(1..=65535).contains(&number)
        {
            push(
                present(port, "port").unwrap_or(port),
                "port",
                format!(
                    "the Service port {number} is not a port number: the API server refuses it (\"must be between 1 and 65535, inclusive\")"
                ),
                "a port between 1 and 65535",
                "write the port clients connect to".to_owned(),
            );
        }
        let protocol = present(port, "protocol")
            .and_then(Node::as_str)
            .unwrap_or("TCP");
        if let Some(number) = number
            && !pairs.insert((number, protocol.to_owned()))
        {
            push(
                present(port, "port").unwrap_or(port),
                "port",
                format!(
                    "port {number}/{protocol} is listed twice: the API server refuses the Service (\"Duplicate value\")"
                ),
                "each port and protocol once",
                "remove the second entry, or give it another port".to_owned(),
            );
        }
        if let Some(target) = present(port, "targetPort") {
            let bad = match &target.value {
                Value::Int(n) => (!(1..=65535).contains(n))
                    .then(|| "must be between 1 and 65535, inclusive".to_owned()),
                Value::String(text) => iana_service_name(text).err(),
                _ => None,
            };
            if let Some(reason) = bad {
                push(
                    target,
                    "targetPort",
                    format!(
                        "`targetPort` is neither a port number nor a container port's name: the API server refuses the Service ({reason})"
                    ),
                    "a port between 1 and 65535, or the name of a container port (an IANA service name)",
                    "write the container's port number or its port's name".to_owned(),
                );
            }
        }
        if !with_node_port
            && let Some(node_port) = present(port, "nodePort")
            && node_port.as_i64() != Some(0)
        {
            push(
                node_port,
                "nodePort",
                format!(
                    "`nodePort` on a `{kind}` Service: the API server refuses it (\"may not be used when `type` is '{kind}'\")"
                ),
                "`nodePort` only with `type: NodePort` or `LoadBalancer`",
                "remove `nodePort`, or change the Service's type".to_owned(),
            );
        }
    }
}

// ---- HorizontalPodAutoscalers ------------------------------------------------------------

/// An `autoscaling/v2` HorizontalPodAutoscaler (`ValidateHorizontalPodAutoscalerSpec`,
/// `validateMetrics`, `validateMetricTarget` in `pkg/apis/autoscaling/validation`). Replica
/// bounds are `hpa-replica-bounds`'.
fn autoscaler(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let Some(spec) = present(node, "spec") else {
        out.push(missing(
            object,
            node,
            "spec.scaleTargetRef",
            "a HorizontalPodAutoscaler needs `scaleTargetRef` and `maxReplicas`",
        ));
        return;
    };
    // With a `spec`, `scaleTargetRef` (with its `kind` and `name`) and `maxReplicas` are
    // required by the schema.
    // The source field each metric type names.
    let sources = [
        ("Object", "object"),
        ("Pods", "pods"),
        ("Resource", "resource"),
        ("ContainerResource", "containerResource"),
        ("External", "external"),
    ];
    for (index, metric) in spec.items("metrics").iter().enumerate() {
        let path = format!("spec.metrics[{index}]");
        if metric.value == Value::Null {
            out.push(object.finding(
                Diagnostic::error(
                    rule::HPA_SPEC,
                    "a metric is `null`: the API server reads it as a metric without a type and refuses the HorizontalPodAutoscaler (\"must specify a metric source type\")",
                )
                .found("null")
                .expected("`type` one of `Object`, `Pods`, `Resource`, `ContainerResource`, `External`, with its source")
                .fix("remove the entry, or write the metric"),
                metric,
                &path,
            ));
            continue;
        }
        let Some(kind) = present(metric, "type").and_then(Node::as_str) else {
            continue; // required by the schema
        };
        let Some((_, field)) = sources.iter().find(|(name, _)| *name == kind) else {
            continue; // an enum the schema checks
        };
        let field_path = join(&path, field);
        let Some(source) = present(metric, field) else {
            out.push(object.finding(
                Diagnostic::error(
                    rule::HPA_SPEC,
                    format!("a `{kind}` metric without `{field}`: the API server refuses the HorizontalPodAutoscaler (\"must populate information for the given metric source\")"),
                )
                .found(format!("`type: {kind}` and no `{field}`"))
                .expected(format!("`{field}` with the metric and its target"))
                .fix(format!("add `{field}`, or change `type` to the source written")),
                metric,
                &field_path,
            ));
            continue;
        };
        for (other_kind, other) in sources {
            if other != *field && present(metric, other).is_some() {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::HPA_SPEC,
                        format!("a `{kind}` metric also sets `{other}`: the API server refuses the HorizontalPodAutoscaler (\"must populate the given metric source only\")"),
                    )
                    .found(format!("`type: {kind}` with `{other}`"))
                    .expected(format!("only `{field}`"))
                    .fix(format!("remove `{other}`, or write it as a metric of `type: {other_kind}`")),
                    present(metric, other).unwrap_or(metric),
                    &join(&path, other),
                ));
            }
        }
        if let Some(target) = present(source, "target") {
            metric_target(object, target, &join(&field_path, "target"), out);
        }
    }
}

/// A metric's target (`validateMetricTarget`): its type's value is set and positive.
fn metric_target(object: &Object<'_>, target: &Node, path: &str, out: &mut Vec<Diagnostic>) {
    let Some(kind) = present(target, "type").and_then(Node::as_str) else {
        return; // required by the schema
    };
    let key = match kind {
        "Utilization" => "averageUtilization",
        "Value" => "value",
        "AverageValue" => "averageValue",
        _ => return,
    };
    match present(target, key) {
        None => out.push(object.finding(
            Diagnostic::error(
                rule::HPA_SPEC,
                format!("a target of type `{kind}` without `{key}`: the API server refuses the HorizontalPodAutoscaler (\"must set either a target value for metric or a per-pod target\")"),
            )
            .found(format!("`type: {kind}` and no `{key}`"))
            .expected(format!("`{key}` set"))
            .fix(format!("write `{key}`, the value to scale at")),
            target,
            &join(path, key),
        )),
        Some(value) => {
            let amount = scalar_text(value).and_then(|text| crate::validate::model::fields::quantity(&text));
            if amount.is_some_and(|amount| amount <= 0.0) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::HPA_SPEC,
                        format!("the target `{key}` is not positive: the API server refuses the HorizontalPodAutoscaler (\"must be positive\")"),
                    )
                    .found(scalar_text(value).unwrap_or_default())
                    .expected("a value above 0")
                    .fix("write the metric value to scale at"),
                    value,
                    &join(path, key),
                ));
            }
        }
    }
}

// ---- NetworkPolicies ---------------------------------------------------------------------

/// Peers of a NetworkPolicy (`ValidateNetworkPolicyPeer`, `pkg/apis/networking/validation`):
/// at least one selector or an `ipBlock`, and an `ipBlock` alone.
fn network_policy(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let Some(spec) = present(object.node, "spec") else {
        return;
    };
    for (direction, peers) in [("ingress", "from"), ("egress", "to")] {
        for (rule_index, rule_node) in spec.items(direction).iter().enumerate() {
            for (index, peer) in rule_node.items(peers).iter().enumerate() {
                let path = format!("spec.{direction}[{rule_index}].{peers}[{index}]");
                let set: Vec<&str> = ["podSelector", "namespaceSelector", "ipBlock"]
                    .into_iter()
                    .filter(|key| present(peer, key).is_some())
                    .collect();
                let problem = if set.is_empty() {
                    Some((
                        "a NetworkPolicy peer selects nothing: the API server refuses it (\"must specify a peer\")",
                        "nothing".to_owned(),
                        "remove the empty peer, or write `podSelector: {}` for every pod of the namespace",
                    ))
                } else if set.contains(&"ipBlock") && set.len() > 1 {
                    Some((
                        "a NetworkPolicy peer has an `ipBlock` and a selector: the API server refuses it (\"may not specify both ipBlock and another peer\")",
                        set.join(" and "),
                        "split it into two peers: one `ipBlock`, one with the selectors",
                    ))
                } else {
                    None
                };
                if let Some((message, found, fix)) = problem {
                    out.push(object.finding(
                        Diagnostic::error(rule::NETWORK_POLICY_PEER, message)
                            .found(found)
                            .expected("exactly one of: `podSelector` and/or `namespaceSelector`, or `ipBlock`")
                            .fix(fix),
                        peer,
                        &path,
                    ));
                }
            }
        }
    }
}

// ---- RBAC --------------------------------------------------------------------------------

/// Rules of a Role or ClusterRole (`ValidatePolicyRule`, `pkg/apis/rbac/validation`).
fn rbac(object: &Object<'_>, namespaced: bool, out: &mut Vec<Diagnostic>) {
    let kind = &object.id.kind;
    for (index, rule_node) in object.node.items("rules").iter().enumerate() {
        let path = format!("rules[{index}]");
        let list = |key: &str| items(rule_node, key).len();
        let mut push = |message: String, found: &str, expected: &str, fix: &str| {
            out.push(
                object.finding(
                    Diagnostic::error(rule::RBAC_RULE, message)
                        .found(found.to_owned())
                        .expected(expected.to_owned())
                        .fix(fix.to_owned()),
                    rule_node,
                    &path,
                ),
            );
        };
        if list("verbs") == 0 {
            push(
                format!(
                    "a {kind} rule without verbs: the API server refuses it (\"verbs must contain at least one value\")"
                ),
                if rule_node.value == Value::Null {
                    "null"
                } else {
                    "no `verbs`"
                },
                "`verbs` such as `[get, list, watch]`",
                "list the verbs the rule grants, or remove the rule",
            );
            continue;
        }
        if list("nonResourceURLs") > 0 {
            if namespaced {
                push(
                    "a Role rule names non-resource URLs: the API server refuses it (\"namespaced rules cannot apply to non-resource URLs\")".to_owned(),
                    "`nonResourceURLs` in a Role",
                    "`nonResourceURLs` only in a ClusterRole",
                    "move the rule to a ClusterRole",
                );
            } else if list("apiGroups") + list("resources") + list("resourceNames") > 0 {
                push(
                    "a ClusterRole rule names resources and non-resource URLs: the API server refuses it (\"rules cannot apply to both regular resources and non-resource URLs\")".to_owned(),
                    "`nonResourceURLs` with `apiGroups`, `resources` or `resourceNames`",
                    "one rule for resources, another for non-resource URLs",
                    "split the rule in two",
                );
            }
            continue;
        }
        for (key, example) in [
            ("apiGroups", "[\"\"]` for the core group"),
            ("resources", "[pods]`"),
        ] {
            if list(key) == 0 {
                push(
                    format!(
                        "a {kind} rule without `{key}`: the API server refuses it (\"resource rules must supply at least one {}\")",
                        if key == "apiGroups" {
                            "api group"
                        } else {
                            "resource"
                        }
                    ),
                    &format!("no `{key}`"),
                    &format!("`{key}: {example}"),
                    &format!("add `{key}`"),
                );
            }
        }
    }
}

// ---- PodDisruptionBudgets and PriorityClasses --------------------------------------------

/// A PodDisruptionBudget (`ValidatePodDisruptionBudgetSpec`, `pkg/apis/policy/validation`).
fn disruption_budget(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let Some(spec) = present(object.node, "spec") else {
        return;
    };
    let min = present(spec, "minAvailable");
    let max = present(spec, "maxUnavailable");
    if let (Some(_), Some(max)) = (min, max) {
        out.push(object.finding(
            Diagnostic::error(
                rule::PDB_SPEC,
                "a PodDisruptionBudget sets both `minAvailable` and `maxUnavailable`: the API server refuses it (\"minAvailable and maxUnavailable cannot be both set\")",
            )
            .found("both")
            .expected("one of `minAvailable` and `maxUnavailable`")
            .fix("keep the one you mean and remove the other"),
            max,
            "spec.maxUnavailable",
        ));
    }
    // `ValidatePositiveIntOrPercent` and `IsNotMoreThan100Percent`.
    for (key, value) in [("minAvailable", min), ("maxUnavailable", max)] {
        let Some(value) = value else { continue };
        let bad = match &value.value {
            Value::Int(n) => *n < 0,
            Value::String(text) => text
                .strip_suffix('%')
                .and_then(|digits| digits.parse::<i64>().ok())
                .is_none_or(|percent| !(0..=100).contains(&percent)),
            _ => false,
        };
        if bad {
            out.push(object.finding(
                Diagnostic::error(
                    rule::PDB_SPEC,
                    format!("`{key}` is neither a count nor a percentage up to 100%: the API server refuses the PodDisruptionBudget"),
                )
                .found(scalar_text(value).unwrap_or_default())
                .expected("a whole number of pods (0 or more) or a percentage such as `50%`")
                .fix(format!("write `{key}` as a count or a percentage")),
                value,
                &join("spec", key),
            ));
        }
    }
}

/// The highest priority a PriorityClass may have unless it is one of the system classes
/// (`scheduling.HighestUserDefinablePriority`, `pkg/apis/scheduling/types.go`).
const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// The classes the cluster itself creates, with their values: the only ones a `system-` name
/// may have (`scheduling.SystemPriorityClasses` and `IsKnownSystemPriorityClass`,
/// `pkg/apis/scheduling/v1/helpers.go`;
/// neither may be the global default).
const SYSTEM_CLASSES: [(&str, i64); 2] = [
    ("system-cluster-critical", 2 * HIGHEST_USER_PRIORITY),
    ("system-node-critical", 2 * HIGHEST_USER_PRIORITY + 1000),
];

/// A PriorityClass (`ValidatePriorityClass`, `pkg/apis/scheduling/validation/validation.go`):
/// a `system-` name is reserved for the system classes at their values, and other classes stay
/// at or below [`HIGHEST_USER_PRIORITY`].
fn priority_class(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let name = object
        .node
        .at(&["metadata", "name"])
        .and_then(Node::as_str)
        .unwrap_or("");
    let value = present(object.node, "value");
    let number = value.and_then(Node::as_i64).unwrap_or(0);
    let at = value.unwrap_or(object.node);
    let global_default =
        present(object.node, "globalDefault").is_some_and(|flag| flag.value == Value::Bool(true));
    if name.starts_with("system-") {
        if global_default || !SYSTEM_CLASSES.contains(&(name, number)) {
            let known: Vec<String> = SYSTEM_CLASSES
                .iter()
                .map(|(name, value)| format!("`{name}` ({value})"))
                .collect();
            out.push(object.finding(
                Diagnostic::error(
                    rule::PRIORITY_CLASS_VALUE,
                    format!("`{name}` is not a system PriorityClass at its value: the API server refuses it (\"priority class names with 'system-' prefix are reserved for system use only\")"),
                )
                .found(format!(
                    "`{name}` with value {number}{}",
                    if global_default { ", the global default" } else { "" }
                ))
                .expected(format!("a name without the `system-` prefix, or one of {}", known.join(", ")))
                .fix("rename the class; pods may use the system classes without declaring them"),
                object.node.at(&["metadata", "name"]).unwrap_or(at),
                "metadata.name",
            ));
        }
    } else if number > HIGHEST_USER_PRIORITY {
        out.push(object.finding(
            Diagnostic::error(
                rule::PRIORITY_CLASS_VALUE,
                format!("the priority {number} is above what a user's PriorityClass may have: the API server refuses it (\"maximum allowed value of a user defined priority is 1000000000\")"),
            )
            .found(number.to_string())
            .expected(format!("at most {HIGHEST_USER_PRIORITY}"))
            .fix("lower `value`: priorities compare only with each other, so the order is what counts"),
            at,
            "value",
        ));
    }
}

// ---- ConfigMaps, Secrets and PersistentVolumeClaims --------------------------------------

/// The most data a ConfigMap or Secret may hold (`core.MaxSecretSize`, `pkg/apis/core/types.go`),
/// counted over the decoded values of `data` and `binaryData` (a Secret's `stringData` joins
/// its `data` before validation).
const MAX_DATA_BYTES: usize = 1024 * 1024;

/// The keys a typed Secret needs (`ValidateSecret`, `pkg/apis/core/validation/validation.go`:
/// `SecretTypeTLS`, `SecretTypeDockerConfigJson`, `SecretTypeSSHAuth`).
const SECRET_TYPE_KEYS: [(&str, &[&str]); 3] = [
    ("kubernetes.io/tls", &["tls.crt", "tls.key"]),
    ("kubernetes.io/dockerconfigjson", &[".dockerconfigjson"]),
    ("kubernetes.io/ssh-auth", &["ssh-privatekey"]),
];

/// `ValidateConfigMap` and `ValidateSecret`: every key passes `validation.IsConfigMapKey`
/// (`k8s.io/apimachinery/pkg/util/validation`), the values fit in [`MAX_DATA_BYTES`], and a
/// typed Secret has its keys.
fn config_data(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let kind = object.id.kind.as_str();
    let bags: &[(&str, bool)] = if kind == "Secret" {
        &[("data", true), ("stringData", false)]
    } else {
        &[("data", false), ("binaryData", true)]
    };
    let mut total = 0;
    let mut keys = BTreeSet::new();
    for (bag, base64) in bags {
        for (key, value) in entries(node, bag) {
            keys.insert(key.text.clone());
            if let Err(reason) = config_map_key(&key.text) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::CONFIG_DATA_KEYS,
                        format!("the {kind} key `{}` is not a legal key: the API server refuses the {kind} ({reason})", key.text.escape_default()),
                    )
                    .found(key.text.escape_default().to_string())
                    .expected("letters, digits, `-`, `_` and `.` (a file name, not a path), at most 253 characters")
                    .fix("rename the key, e.g. `/` to `_`; a volume's `items[].path` can mount it under another name"),
                    // At the key itself: a block value starts on the next line.
                    &Node { value: Value::Null, span: key.span },
                    &join(bag, &key.text),
                ));
            }
            let text = scalar_text(value).unwrap_or_default();
            total += if *base64 {
                text.len() / 4 * 3
            } else {
                text.len()
            };
        }
    }
    if total > MAX_DATA_BYTES {
        out.push(object.finding(
            Diagnostic::error(
                rule::CONFIG_DATA_KEYS,
                format!("the {kind} holds about {} KiB of data: the API server refuses more than 1 MiB (\"Too long: must have at most 1048576 bytes\")", total / 1024),
            )
            .found(format!("about {total} bytes"))
            .expected(format!("at most {MAX_DATA_BYTES} bytes in all values"))
            .fix("keep large files (tokenizers, weights) in a bucket or an image and mount them; split the rest"),
            node,
            "data",
        ));
    }
    if kind == "Secret"
        && let Some(kind_of) = present(node, "type").and_then(Node::as_str)
        && let Some((_, needed)) = SECRET_TYPE_KEYS.iter().find(|(name, _)| *name == kind_of)
    {
        for key in needed.iter().filter(|key| !keys.contains(**key)) {
            out.push(object.finding(
                Diagnostic::error(
                    rule::CONFIG_DATA_KEYS,
                    format!("a `{kind_of}` Secret without `{key}`: the API server refuses it (\"Required value\")"),
                )
                .found(format!("no `{key}` in `data` or `stringData`"))
                .expected(format!("`{}`", needed.join("` and `")))
                .fix(format!("add `{key}`, or use `type: Opaque` for other keys")),
                present(node, "type").unwrap_or(node),
                &join("data", key),
            ));
        }
    }
}

/// `validation.IsConfigMapKey`: `[-._a-zA-Z0-9]+`, at most 253 characters, not `.`, `..` or
/// starting with `..`.
fn config_map_key(key: &str) -> Result<(), String> {
    if key.is_empty() || key.len() > 253 {
        return Err(format!("{} characters, 1 to 253 allowed", key.len()));
    }
    if let Some(bad) = key
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!("`{}` is not allowed", bad.escape_default()));
    }
    if key == "." || key.starts_with("..") {
        return Err("must not be `.` or start with `..`".into());
    }
    Ok(())
}

/// `ValidatePersistentVolumeClaimSpec`: at least one access mode, and a positive `storage`
/// request.
fn claim(object: &Object<'_>, out: &mut Vec<Diagnostic>) {
    let node = object.node;
    let Some(spec) = present(node, "spec") else {
        out.push(missing(
            object,
            node,
            "spec.accessModes",
            "an access mode and a storage request",
        ));
        return;
    };
    if items(spec, "accessModes").is_empty() {
        out.push(object.finding(
            Diagnostic::error(
                rule::PVC_SPEC,
                "a PersistentVolumeClaim without an access mode: the API server refuses it (\"at least 1 access mode is required\")",
            )
            .found("no `accessModes`")
            .expected("`accessModes` such as `[ReadWriteOnce]`")
            .fix("add `accessModes: [ReadWriteOnce]` (or `ReadOnlyMany` for shared weights)"),
            spec,
            "spec.accessModes",
        ));
    }
    let storage = present(spec, "resources")
        .and_then(|resources| present(resources, "requests"))
        .and_then(|requests| present(requests, "storage"));
    match storage {
        None => out.push(object.finding(
            Diagnostic::error(
                rule::PVC_SPEC,
                "a PersistentVolumeClaim without a storage request: the API server refuses it (\"spec.resources[storage]: Required value\")",
            )
            .found("no `resources.requests.storage`")
            .expected("`resources: {requests: {storage: 100Gi}}`")
            .fix("request the size of the volume"),
            spec,
            "spec.resources.requests.storage",
        )),
        Some(value) => {
            let amount = scalar_text(value).and_then(|text| crate::validate::model::fields::quantity(&text));
            if amount.is_some_and(|amount| amount <= 0.0) {
                out.push(object.finding(
                    Diagnostic::error(
                        rule::PVC_SPEC,
                        "the storage request is not positive: the API server refuses the PersistentVolumeClaim (\"must be greater than zero\")",
                    )
                    .found(scalar_text(value).unwrap_or_default())
                    .expected("a size above 0, such as `100Gi`")
                    .fix("request the size of the volume"),
                    value,
                    "spec.resources.requests.storage",
                ));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn findings(text: &str) -> Vec<(String, String)> {
        let node = crate::yaml::parse_documents(text).unwrap().remove(0);
        let object = Object::from_node("f.yaml", &node).unwrap();
        let mut out = Vec::new();
        check(&object, &mut out);
        out.into_iter()
            .map(|finding| {
                (
                    finding.rule.as_str().to_owned(),
                    finding.field.unwrap_or_default(),
                )
            })
            .collect()
    }

    #[test]
    fn port_names_are_iana_service_names() {
        for good in ["http", "grpc-2", "a", "metrics15chars1"] {
            assert_eq!(iana_service_name(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "8080",
            "Http",
            "http_port",
            "-http",
            "http-",
            "ht--tp",
            "sixteen-chars-xx",
        ] {
            assert!(iana_service_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn selectors_match_as_label_selectors_do() {
        let deployment = |selector: &str, labels: &str| {
            format!(
                "apiVersion: apps/v1\nkind: Deployment\nmetadata: {{name: d}}\nspec:\n  selector: {selector}\n  template:\n    metadata: {{labels: {labels}}}\n    spec: {{containers: [{{name: c, image: i}}]}}\n"
            )
        };
        let matching = [
            ("{matchLabels: {app: a}}", "{app: a, extra: x}"),
            (
                "{matchExpressions: [{key: app, operator: In, values: [a, b]}]}",
                "{app: b}",
            ),
            (
                "{matchExpressions: [{key: app, operator: NotIn, values: [a]}]}",
                "{app: c}",
            ),
            (
                "{matchExpressions: [{key: app, operator: Exists}]}",
                "{app: c}",
            ),
            (
                "{matchExpressions: [{key: x, operator: DoesNotExist}]}",
                "{app: c}",
            ),
            // Numbers are label values as text.
            ("{matchLabels: {v: 1}}", "{v: \"1\"}"),
        ];
        for (selector, labels) in matching {
            assert_eq!(
                findings(&deployment(selector, labels)),
                vec![],
                "{selector} {labels}"
            );
        }
        let refused = [
            ("{matchLabels: {app: a}}", "{app: b}"),
            (
                "{matchExpressions: [{key: app, operator: In, values: [a]}]}",
                "{}",
            ),
            (
                "{matchExpressions: [{key: app, operator: DoesNotExist}]}",
                "{app: a}",
            ),
            ("{}", "{app: a}"),
            ("{matchLabels: null}", "{app: a}"),
        ];
        for (selector, labels) in refused {
            assert_eq!(
                findings(&deployment(selector, labels)),
                vec![(rule::WORKLOAD_SPEC.to_owned(), "spec.selector".to_owned())],
                "{selector} {labels}"
            );
        }
    }

    #[test]
    fn restart_policies_follow_the_kind() {
        let job = |policy: &str| {
            format!(
                "apiVersion: batch/v1\nkind: Job\nmetadata: {{name: j}}\nspec:\n  template:\n    spec:\n      {policy}\n      containers: [{{name: c, image: i}}]\n"
            )
        };
        assert_eq!(findings(&job("restartPolicy: Never")), vec![]);
        assert_eq!(findings(&job("restartPolicy: OnFailure")), vec![]);
        for refused in ["restartPolicy: Always", "restartPolicy: null", "{}"] {
            let text = job(refused).replace("      {}\n", "");
            assert_eq!(
                findings(&text),
                vec![(
                    rule::WORKLOAD_SPEC.to_owned(),
                    "spec.template.spec.restartPolicy".to_owned()
                )],
                "{refused}"
            );
        }
        let pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  restartPolicy: Never\n  containers: [{name: c, image: i}]\n";
        assert_eq!(findings(pod), vec![]);
    }

    #[test]
    fn claim_templates_are_volumes_of_their_controllers_pods() {
        let mount =
            "containers: [{name: c, image: i, volumeMounts: [{name: data, mountPath: /d}]}]";
        let cases = [
            format!(
                "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {{name: s, namespace: ns}}\nspec:\n  selector: {{matchLabels: {{a: b}}}}\n  template:\n    metadata: {{labels: {{a: b}}}}\n    spec: {{{mount}}}\n  volumeClaimTemplates: [{{metadata: {{name: data}}}}]\n"
            ),
            format!(
                "apiVersion: leaderworkerset.x-k8s.io/v1\nkind: LeaderWorkerSet\nmetadata: {{name: l, namespace: ns}}\nspec:\n  leaderWorkerTemplate:\n    volumeClaimTemplates: [{{metadata: {{name: data}}}}]\n    workerTemplate:\n      spec: {{{mount}}}\n"
            ),
            format!(
                "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {{name: j, namespace: ns}}\nspec:\n  volumeClaimPolicies: [{{templates: [{{metadata: {{name: data}}}}]}}]\n  replicatedJobs:\n  - name: w\n    template:\n      spec:\n        template:\n          spec: {{restartPolicy: Never, {mount}}}\n"
            ),
        ];
        for text in &cases {
            assert_eq!(findings(text), vec![], "{text}");
            // Without the claim template the mount names no volume.
            let bare = text.replace("name: data}", "name: other}");
            assert_eq!(findings(&bare).len(), 1, "{bare}");
        }
    }

    #[test]
    fn a_null_is_an_absent_field() {
        // A null `nodePort` is no node port; a null port name on a single port is no name.
        let service = "apiVersion: v1\nkind: Service\nmetadata: {name: svc, namespace: ns}\nspec:\n  ports: [{name: null, port: 80, nodePort: null}]\n";
        assert_eq!(findings(service), vec![]);
        // A null peer selector leaves the peer empty.
        let policy = "apiVersion: networking.k8s.io/v1\nkind: NetworkPolicy\nmetadata: {name: policy, namespace: ns}\nspec:\n  podSelector: {}\n  ingress: [{from: [{podSelector: null}]}]\n";
        assert_eq!(
            findings(policy),
            vec![(
                rule::NETWORK_POLICY_PEER.to_owned(),
                "spec.ingress[0].from[0]".to_owned()
            )]
        );
    }
}

//! Planning: what every blueprint kind shares between reading a spec and rendering templates.
//!
//! A kind's `plan` step is a pure function of its spec and the repository around it. It gets a
//! [`Planner`], which collects findings pointed at the blueprint's own lines (so one run reports
//! every problem, not the first) and answers questions about other blueprints of the same
//! repository through what they [`Exports`]. Planning never renders: it produces typed plans
//! ([`crate::gcp::Infrastructure`] and the kind's own plan) that templates turn into objects.
//!
//! Neighbours: [`crate::blueprint`] (the envelope and strict spec reading) comes before;
//! [`crate::kinds`] (the kinds themselves) and [`crate::overlay`] (templates) come after.

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::blueprint::Blueprint;
use crate::diagnostic::{Diagnostic, RuleId};

/// What a blueprint offers others in the same repository, computed from its spec alone
/// (phase 1, before any blueprint is planned).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Exports {
    /// The GKE cluster the blueprint creates or runs on, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster: Option<ClusterExport>,
    /// When the blueprint runs on another blueprint's cluster: that blueprint's name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_of: Option<String>,
    /// Network endpoints it serves (serving blueprints).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub services: Vec<ServiceExport>,
    /// The Pub/Sub topic its load tests publish request metrics to, when it has a sink.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub metrics_topic: Option<TopicExport>,
}

/// A Pub/Sub topic another blueprint may publish to.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TopicExport {
    /// GCP project id.
    pub project: String,
    /// Topic id.
    pub name: String,
}

impl TopicExport {
    /// `projects/<project>/topics/<name>`.
    #[must_use]
    pub fn path(&self) -> String {
        format!("projects/{}/topics/{}", self.project, self.name)
    }
}

/// A cluster another blueprint may run on.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ClusterExport {
    /// GCP project id.
    pub project: String,
    /// Cluster name.
    pub name: String,
    /// Zone or region of the cluster.
    pub location: String,
    /// Region the cluster is in.
    pub region: String,
    /// Config Connector namespace holding the cluster object.
    pub config_connector_namespace: String,
    /// Whether the exporting blueprint creates the cluster (a `ContainerCluster` object exists
    /// to reference by name), rather than naming an existing one.
    pub managed: bool,
}

/// A network endpoint a blueprint serves.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ServiceExport {
    /// Kubernetes Service name.
    pub name: String,
    /// Its namespace.
    pub namespace: String,
    /// Port.
    pub port: u16,
    /// Protocol spoken on the port, e.g. `http` or `grpc`.
    pub protocol: String,
    /// Serving framework, e.g. `sax`, `triton`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub framework: Option<String>,
    /// Model served, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// A blueprint as others see it while planning.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Exported {
    /// Its kind.
    pub kind: String,
    /// Repository-relative path of its file.
    pub file: String,
    /// Its line in that file.
    pub line: u32,
    /// What it exports.
    pub exports: Exports,
    /// Whether its spec could be read; when not, its own findings say why, and references to
    /// it report nothing more.
    pub readable: bool,
}

/// Every blueprint of the repository by name, with what it exports.
pub type Repository = BTreeMap<String, Exported>;

/// Ids of the findings planning reports about blueprints, one constant each so that a
/// misspelt id does not compile. [`RULES`] lists them with what each checks.
pub mod rule {
    /// A TPU type the catalog does not have.
    pub const TPU_TYPE_UNKNOWN: &str = "tpu-type-unknown";
    /// A topology that is not `AxB` or `AxBxC`.
    pub const TPU_TOPOLOGY_SYNTAX: &str = "tpu-topology-syntax";
    /// A topology that is no slice shape of the family.
    pub const TPU_TOPOLOGY_SHAPE: &str = "tpu-topology-shape";
    /// A topology that disagrees with the TPU type.
    pub const TPU_TOPOLOGY_MISMATCH: &str = "tpu-topology-mismatch";
    /// A slice count out of range, or several slices for a one-slice kind.
    pub const TPU_SLICES: &str = "tpu-slices";
    /// Several slices of a single-host type.
    pub const TPU_MULTISLICE_SINGLE_HOST: &str = "tpu-multislice-single-host";
    /// A TPU family the kind does not support.
    pub const TPU_FAMILY_UNSUPPORTED: &str = "tpu-family-unsupported";
    /// A GPU type the catalog does not have.
    pub const GPU_TYPE_UNKNOWN: &str = "gpu-type-unknown";
    /// GPUs per node that the machine type cannot carry.
    pub const GPU_COUNT: &str = "gpu-count";
    /// A machine type of a family that does not carry the GPU at all.
    pub const GPU_MACHINE_TYPE: &str = "gpu-machine-type";
    /// A project id GCP would reject.
    pub const PROJECT_ID: &str = "gcp-project-id";
    /// A malformed region or zone, or a location outside the blueprint's region.
    pub const LOCATION: &str = "gcp-location";
    /// A GCP resource name GCP would reject.
    pub const RESOURCE_NAME: &str = "gcp-resource-name";
    /// A service account id IAM would reject, or one account for two roles.
    pub const SERVICE_ACCOUNT_ID: &str = "gcp-service-account-id";
    /// A bucket name Cloud Storage would reject.
    pub const BUCKET_NAME: &str = "gcs-bucket-name";
    /// A cluster name GKE would reject.
    pub const GKE_NAME: &str = "gke-cluster-name";
    /// A malformed CIDR range, one with host bits set, or overlapping ranges.
    pub const NETWORK_CIDR: &str = "network-cidr";
    /// Fields that contradict each other.
    pub const CONFLICT: &str = "blueprint-conflict";
    /// A node pool size that cannot work.
    pub const NODE_POOL_SIZE: &str = "node-pool-size";
    /// A Kubernetes name the API server would reject.
    pub const KUBERNETES_NAME: &str = "kubernetes-name";
    /// A reference to a blueprint that is missing or cannot serve it.
    pub const REFERENCE: &str = "blueprint-reference";
    /// A malformed or unpinned container image.
    pub const IMAGE: &str = "image-reference";
    /// An environment variable name Kubernetes would reject.
    pub const ENV_NAME: &str = "env-name";
    /// A malformed Vertex AI TensorBoard resource name.
    pub const TENSORBOARD: &str = "tensorboard-resource-name";
    /// A JobSet restart budget beyond any use.
    pub const MAX_RESTARTS: &str = "max-restarts";
    /// More GPUs per serving pod than a node has.
    pub const GPUS_PER_POD: &str = "gpus-per-pod";
    /// Autoscaler bounds that cannot work (no replica, minimum above maximum, target out of
    /// range).
    pub const AUTOSCALING_BOUNDS: &str = "autoscaling-bounds";
    /// An autoscaler maximum the GPU pool cannot hold.
    pub const AUTOSCALING_CAPACITY: &str = "autoscaling-capacity";
}

/// Every blueprint-level rule, with what it checks.
pub const RULES: &[crate::diagnostic::Rule] = &[
    crate::diagnostic::Rule {
        id: rule::TPU_TYPE_UNKNOWN,
        summary: "`spec.tpu.type` is a TPU type of the catalog",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_SYNTAX,
        summary: "`spec.tpu.topology` is `AxB` or `AxBxC`",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_SHAPE,
        summary: "`spec.tpu.topology` is a slice shape of the family",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_TOPOLOGY_MISMATCH,
        summary: "`spec.tpu.topology` agrees with `spec.tpu.type`",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_SLICES,
        summary: "`spec.tpu.slices` is within bounds and allowed by the kind",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_MULTISLICE_SINGLE_HOST,
        summary: "multislice runs on multi-host slices only",
    },
    crate::diagnostic::Rule {
        id: rule::TPU_FAMILY_UNSUPPORTED,
        summary: "the kind supports the TPU family",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_TYPE_UNKNOWN,
        summary: "`spec.gpu.type` is a GKE accelerator of the catalog",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_COUNT,
        summary: "the GPU count fits the machine type",
    },
    crate::diagnostic::Rule {
        id: rule::GPU_MACHINE_TYPE,
        summary: "`spec.gpu.machineType` is of a machine family that carries the GPU",
    },
    crate::diagnostic::Rule {
        id: rule::PROJECT_ID,
        summary: "`spec.project` is a valid project id",
    },
    crate::diagnostic::Rule {
        id: rule::LOCATION,
        summary: "regions, zones and cluster locations are valid and agree",
    },
    crate::diagnostic::Rule {
        id: rule::RESOURCE_NAME,
        summary: "GCP resource names have the form GCP accepts",
    },
    crate::diagnostic::Rule {
        id: rule::SERVICE_ACCOUNT_ID,
        summary: "service account ids are valid and distinct",
    },
    crate::diagnostic::Rule {
        id: rule::BUCKET_NAME,
        summary: "bucket names have the form Cloud Storage accepts",
    },
    crate::diagnostic::Rule {
        id: rule::GKE_NAME,
        summary: "cluster names have the form GKE accepts",
    },
    crate::diagnostic::Rule {
        id: rule::NETWORK_CIDR,
        summary: "node, pod and service ranges are valid networks that do not overlap",
    },
    crate::diagnostic::Rule {
        id: rule::CONFLICT,
        summary: "no two fields contradict each other",
    },
    crate::diagnostic::Rule {
        id: rule::NODE_POOL_SIZE,
        summary: "node pool sizes can work",
    },
    crate::diagnostic::Rule {
        id: rule::KUBERNETES_NAME,
        summary: "Kubernetes names are DNS-1123 labels",
    },
    crate::diagnostic::Rule {
        id: rule::REFERENCE,
        summary: "referenced blueprints exist and export what is asked of them",
    },
    crate::diagnostic::Rule {
        id: rule::IMAGE,
        summary: "container images are valid references with a tag or digest",
    },
    crate::diagnostic::Rule {
        id: rule::ENV_NAME,
        summary: "environment variable names are valid",
    },
    crate::diagnostic::Rule {
        id: rule::MAX_RESTARTS,
        summary: "`spec.training.maxRestarts` stays within a useful bound",
    },
    crate::diagnostic::Rule {
        id: rule::TENSORBOARD,
        summary: "TensorBoard resource names have Vertex AI's form",
    },
    crate::diagnostic::Rule {
        id: rule::GPUS_PER_POD,
        summary: "GPUs per serving pod fit one node of the GPU pool",
    },
    crate::diagnostic::Rule {
        id: rule::AUTOSCALING_BOUNDS,
        summary: "autoscaler bounds can work: 1 ≤ `minReplicas` ≤ `maxReplicas`, a target from 1 to 100%",
    },
    crate::diagnostic::Rule {
        id: rule::AUTOSCALING_CAPACITY,
        summary: "the autoscaler's most replicas fit the GPU pool at its largest",
    },
];

/// Collects the findings of one blueprint's planning and answers questions about the others.
pub struct Planner<'a> {
    blueprint: &'a Blueprint<'a>,
    repository: &'a Repository,
    diagnostics: Vec<Diagnostic>,
    /// What planning read of other blueprints: a plan is a function of the spec and of these.
    lookups: std::cell::RefCell<Lookups>,
}

/// The parts of the repository one blueprint's planning read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lookups {
    /// Blueprints looked up by name (present or not).
    pub names: BTreeSet<String>,
    /// Whether the list of every blueprint name was read (a reference that matches none
    /// suggests the closest).
    pub all_names: bool,
}

impl<'a> Planner<'a> {
    /// A planner for `blueprint` in `repository`.
    #[must_use]
    pub fn new(blueprint: &'a Blueprint<'a>, repository: &'a Repository) -> Self {
        Self {
            blueprint,
            repository,
            diagnostics: Vec::new(),
            lookups: std::cell::RefCell::new(Lookups::default()),
        }
    }

    /// What planning read of other blueprints so far.
    #[must_use]
    pub fn lookups(&self) -> Lookups {
        self.lookups.borrow().clone()
    }

    fn record(&self, name: &str) {
        self.lookups.borrow_mut().names.insert(name.to_string());
    }

    /// The blueprint being planned.
    #[must_use]
    pub fn blueprint(&self) -> &'a Blueprint<'a> {
        self.blueprint
    }

    /// `metadata.name`.
    #[must_use]
    pub fn name(&self) -> &'a str {
        self.blueprint.name
    }

    /// Repository-relative path of the blueprint's file.
    #[must_use]
    pub fn file(&self) -> &'a str {
        self.blueprint.file
    }

    /// Records an error at the closest node to the dotted blueprint `field`; fill in the
    /// details through the returned reference.
    pub fn error(
        &mut self,
        rule: impl Into<RuleId>,
        field: &str,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let diagnostic = self.blueprint.error_at(rule, field, message);
        self.push(diagnostic)
    }

    /// Records a warning at the closest node to `field`.
    pub fn warning(
        &mut self,
        rule: impl Into<RuleId>,
        field: &str,
        message: impl Into<String>,
    ) -> &mut Diagnostic {
        let mut diagnostic = self.blueprint.error_at(rule, field, message);
        diagnostic.severity = crate::diagnostic::Severity::Warning;
        self.push(diagnostic)
    }

    /// Records a finding made elsewhere (e.g. [`Blueprint::key_error_at`]).
    pub fn push(&mut self, diagnostic: Diagnostic) -> &mut Diagnostic {
        self.diagnostics.push(diagnostic);
        self.diagnostics
            .last_mut()
            .unwrap_or_else(|| unreachable!("just pushed"))
    }

    /// Reports `value` as an invalid name for `field` when `check` rejects it.
    pub fn check_name(
        &mut self,
        rule: impl Into<RuleId>,
        field: &str,
        value: &str,
        check: impl Fn(&str) -> Result<(), String>,
    ) {
        if let Err(reason) = check(value) {
            let d = self.error(rule, field, format!("invalid name `{value}`: {reason}"));
            d.found = Some(value.to_string());
            d.fix = Some(format!("set `{field}` to a valid name"));
        }
    }

    /// Whether an error has been recorded so far.
    #[must_use]
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(Diagnostic::is_error)
    }

    /// The blueprint called `name` in this repository, as referenced from `field`. A missing
    /// blueprint, or a reference to itself, is a finding naming both blueprints.
    pub fn reference(&mut self, field: &str, name: &str) -> Option<&'a Exported> {
        if name == self.blueprint.name {
            let d = self.error(
                rule::REFERENCE,
                field,
                format!("blueprint `{name}` references itself"),
            );
            d.fix = Some(format!("remove `{field}` or name another blueprint"));
            return None;
        }
        let repository = self.repository;
        self.record(name);
        match repository.get(name) {
            // Its own findings explain it; a second finding here would repeat the cause.
            Some(exported) if !exported.readable => None,
            Some(exported) => Some(exported),
            None => {
                self.lookups.borrow_mut().all_names = true;
                let me = self.blueprint.name;
                let closest = crate::catalog::closest(name, repository.keys().map(String::as_str));
                let d = self.error(
                    rule::REFERENCE,
                    field,
                    format!(
                        "blueprint `{me}` references blueprint `{name}`, which is not in this repository"
                    ),
                );
                d.found = Some(name.to_string());
                let others: Vec<String> = repository
                    .keys()
                    .filter(|n| *n != me)
                    .map(|n| format!("`{n}`"))
                    .collect();
                d.expected = Some(if others.is_empty() {
                    "the name of another blueprint under `blueprints/`".to_string()
                } else {
                    format!("one of {}", others.join(", "))
                });
                d.fix = closest.map(|c| format!("did you mean `{c}`?"));
                None
            }
        }
    }

    /// The blueprint called `name`, if the repository has it; reports nothing (for defaults
    /// that [`Planner::reference`] checks later).
    #[must_use]
    pub fn peek(&self, name: &str) -> Option<&'a Exported> {
        self.record(name);
        self.repository.get(name)
    }

    /// Checks a container image reference and that it is pinned (a tag other than `latest`,
    /// or a digest), so that what runs does not change under a render.
    pub fn check_image(&mut self, field: &str, image: &str) {
        if let Err(reason) = check_image(image) {
            let d = self.error(
                rule::IMAGE,
                field,
                format!("invalid image reference `{image}`: {reason}"),
            );
            d.found = Some(image.to_string());
            d.expected = Some("`[registry/]path:tag` or `[registry/]path@sha256:<digest>`".into());
        } else if !is_pinned(image) {
            let d = self.error(rule::IMAGE, field, format!("image `{image}` is not pinned"));
            d.found = Some(image.to_string());
            d.expected = Some("a tag other than `latest`, or a digest".into());
            d.fix = Some(format!(
                "write `{}:<version>` or `{}@sha256:<digest>`",
                image_name(image),
                image_name(image)
            ));
        }
    }

    /// Checks an environment variable name, a key of the mapping at `map_field`, as
    /// Kubernetes 1.32 validates it: printable ASCII other than `=`.
    pub fn check_env_name(&mut self, map_field: &str, name: &str) {
        // Kubernetes 1.32 (RelaxedEnvironmentVariableValidation, on by default) accepts any
        // printable ASCII except `=`.
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| (b' '..=b'~').contains(&b) && b != b'=');
        if !valid {
            let diagnostic = self.blueprint.key_error_at(
                rule::ENV_NAME,
                map_field,
                name,
                format!("invalid environment variable name `{name}`"),
            );
            let d = self.push(diagnostic);
            d.expected = Some("printable ASCII characters other than `=`".into());
        }
    }

    /// The findings, consuming the planner.
    #[must_use]
    pub fn finish(self) -> Vec<Diagnostic> {
        self.diagnostics
    }
}

/// `registry/path:tag@digest` without tag and digest.
fn image_name(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    match without_digest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => without_digest,
    }
}

fn is_pinned(image: &str) -> bool {
    if image.contains('@') {
        return true;
    }
    let name = image_name(image);
    match image
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(':'))
    {
        Some(tag) => tag != "latest",
        None => false,
    }
}

/// Checks the grammar of an image reference (the distribution reference grammar, without
/// its rarely used corners).
fn check_image(image: &str) -> Result<(), String> {
    if image.is_empty() || image.len() > 512 {
        return Err("must have 1 to 512 characters".into());
    }
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            let length = match algorithm {
                "sha256" => 64,
                "sha512" => 128,
                _ => return false,
            };
            hex.len() == length && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if !valid {
            return Err(
                "a digest is `sha256:` and 64 lowercase hex digits (or `sha512:` and 128)".into(),
            );
        }
    }
    let name = image_name(rest);
    if let Some(tag) = rest.strip_prefix(name).and_then(|t| t.strip_prefix(':')) {
        let valid = !tag.is_empty()
            && tag.len() <= 128
            && !tag.starts_with(['.', '-'])
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !valid {
            return Err(format!("invalid tag `{tag}`"));
        }
    }
    let mut components = name.split('/').peekable();
    let first = components.peek().copied().unwrap_or_default();
    // A first component with `.` or `:` (or `localhost`) is a registry host, which may hold
    // upper case letters and a port.
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_registry {
        components.next();
        if !first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b))
        {
            return Err(format!("invalid registry `{first}`"));
        }
    }
    for component in components {
        let valid = !component.is_empty()
            && component
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
            && component.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !valid {
            return Err(format!(
                "path component `{component}` must be lowercase letters, digits and `._-`"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_image_references() {
        for ok in [
            "python:3.11",
            "us-docker.pkg.dev/vertex-ai/tensorboard/uploader:1.0",
            "localhost:5000/a/b:v1",
            "nvcr.io/nvidia/tritonserver:24.01-py3",
            "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(check_image(ok), Ok(()), "{ok}");
            assert!(is_pinned(ok), "{ok}");
        }
        for unpinned in ["python", "python:latest", "gcr.io/a/b", "localhost:5000/a"] {
            assert_eq!(check_image(unpinned), Ok(()), "{unpinned}");
            assert!(!is_pinned(unpinned), "{unpinned}");
        }
        for bad in ["", "Python:3", "a b", "a:", "a:-x", "a@sha256:zz", "a//b:1"] {
            assert!(check_image(bad).is_err(), "{bad}");
        }
        assert_eq!(image_name("localhost:5000/a/b:v1"), "localhost:5000/a/b");
    }
}

//! Planning: what every blueprint kind shares between reading a spec and rendering templates.
//!
//! A kind's `plan` step is a pure function of its spec and the repository around it. It gets a
//! [`Planner`], which collects findings pointed at the blueprint's own lines (so one run reports
//! every problem, not the first) and answers questions about other blueprints of the same
//! repository through what they [`Exports`]. Planning never renders: it produces typed plans
//! ([`crate::gcp::Infrastructure`] and the kind's own plan) that templates turn into objects.
//!
//! Neighbours: [`crate::blueprint`] (the envelope and strict spec reading) comes before;
//! [`crate::kinds`] (the kinds themselves) and [`crate::overlay`] (templates, and the site
//! recipe every kind follows, which drives [`crate::gcp`]) come after.

pub mod checks;
pub mod endpoint;
pub mod image;
mod rules;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::blueprint::Blueprint;
use crate::diagnostic::{Diagnostic, RuleId};
use image::{check_image, image_name, is_pinned};

pub use rules::{RULES, rule};

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

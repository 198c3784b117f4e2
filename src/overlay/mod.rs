//! Overlays: the plain Kustomize folders compiled from blueprints, built in memory.
//!
//! A blueprint's overlay has one folder per target cluster: `config-connector/` (GCP objects,
//! applied on the Config Connector host cluster) and `workload/` (everything else). Each is a
//! plain overlay that builds alone, so no cluster is ever asked to apply the other's objects.
//!
//! Files come from minijinja templates embedded in the binary: the GCP building blocks
//! (`gcp/templates/`), shared workload blocks and the kustomization (`overlay/templates/`),
//! and each kind's own (`kinds/<kind>/templates/`). Every `{{ value }}` is written as JSON
//! (minijinja's JSON auto-escaping), which is also valid YAML, so a value can never inject
//! structure: a newline, `: `, `#`, `{{ }}` or a leading `*` stays a literal string.
//! Undefined variables are errors, not empty strings.

pub mod autoscaling;
pub mod client;
pub mod exposure;
pub mod hardening;
pub mod network_policy;
pub mod role_pool;
pub mod runs;
pub mod secret_ref;
pub mod site;
pub mod tpu_memory;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

use crate::blueprint::Blueprint;
use crate::gcp::Infrastructure;
pub(crate) use site::stanzas;

/// Config Connector API groups end with this suffix.
pub const CONFIG_CONNECTOR_GROUP_SUFFIX: &str = "cnrm.cloud.google.com";

/// Where an object is applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Plane {
    /// The Config Connector host cluster (GCP infrastructure).
    ConfigConnector,
    /// The workload cluster.
    Workload,
}

impl Plane {
    /// Folder name under `rendered/<blueprint>/`.
    #[must_use]
    pub fn dir(self) -> &'static str {
        match self {
            Plane::ConfigConnector => "config-connector",
            Plane::Workload => "workload",
        }
    }

    /// The plane of an API group.
    #[must_use]
    pub fn of_group(group: &str) -> Self {
        if group == CONFIG_CONNECTOR_GROUP_SUFFIX
            || group.ends_with(&format!(".{CONFIG_CONNECTOR_GROUP_SUFFIX}"))
        {
            Plane::ConfigConnector
        } else {
            Plane::Workload
        }
    }
}
/// The file each target's objects are rendered into, beside its `kustomization.yaml`.
pub const RESOURCES_FILE: &str = "resources.yaml";

/// The files of one overlay, by path relative to `overlays/<name>/` (e.g.
/// `workload/kustomization.yaml`). Sorted, so iteration order (and everything written from
/// it) is deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    /// Relative path → content.
    pub files: BTreeMap<String, String>,
}

impl Overlay {
    /// The overlay most kinds render: the GCP objects of `infra`, and the workload cluster's
    /// objects from the kind's template `template` (e.g. `sax/workload.yaml`) with `workload`.
    pub fn with_workload(
        blueprint: &Blueprint<'_>,
        infra: &Infrastructure,
        template: &str,
        workload: &impl Serialize,
    ) -> Result<Self, TemplateError> {
        let mut overlay = Self::default();
        overlay.add_infrastructure(blueprint, infra)?;
        overlay.add_target(Plane::Workload, blueprint, render(template, workload)?)?;
        Ok(overlay)
    }

    /// Adds the target folder for `plane`: its `kustomization.yaml` and the objects in
    /// `resources` (a YAML stream rendered by templates). The pods of a workload target are
    /// hardened ([`hardening`]), its namespaces closed ([`network_policy`]), then its run
    /// objects are named after their content ([`runs`]).
    pub fn add_target(
        &mut self,
        plane: Plane,
        blueprint: &Blueprint<'_>,
        resources: String,
    ) -> Result<(), TemplateError> {
        let resources = match plane {
            Plane::Workload => {
                let file = format!("{}/{RESOURCES_FILE}", plane.dir());
                // Hardened first: a run's name hashes the content it is applied with.
                let resources = hardening::harden_pods(&file, resources)?;
                // Before naming runs: policies select run pods by the run's name.
                let resources = network_policy::add_policies(&file, blueprint.name, resources)?;
                runs::name_runs(&file, resources)?
            }
            Plane::ConfigConnector => resources,
        };
        let kustomization = render(
            "overlay/kustomization.yaml",
            &minijinja::context! {
                file => blueprint.file,
                name => blueprint.name,
                resources => [RESOURCES_FILE],
            },
        )?;
        let dir = plane.dir();
        self.files
            .insert(format!("{dir}/kustomization.yaml"), kustomization);
        self.files
            .insert(format!("{dir}/{RESOURCES_FILE}"), resources);
        Ok(())
    }

    /// Adds `file` (a YAML stream of objects) to the target folder for `plane`, creating the
    /// folder if needed, and lists it in the folder's `kustomization.yaml` after
    /// [`RESOURCES_FILE`].
    pub fn add_resources(
        &mut self,
        plane: Plane,
        blueprint: &Blueprint<'_>,
        file: &str,
        text: String,
    ) -> Result<(), TemplateError> {
        let dir = plane.dir();
        let mut resources = Vec::new();
        if self.files.contains_key(&format!("{dir}/{RESOURCES_FILE}")) {
            resources.push(RESOURCES_FILE.to_string());
        }
        let prefix = format!("{dir}/");
        resources.extend(
            self.files
                .keys()
                .filter_map(|path| path.strip_prefix(&prefix))
                .filter(|name| {
                    *name != RESOURCES_FILE && *name != "kustomization.yaml" && *name != file
                })
                .map(str::to_string),
        );
        resources.push(file.to_string());
        let kustomization = render(
            "overlay/kustomization.yaml",
            &minijinja::context! {
                file => blueprint.file,
                name => blueprint.name,
                resources => resources,
            },
        )?;
        self.files
            .insert(format!("{dir}/kustomization.yaml"), kustomization);
        self.files.insert(format!("{dir}/{file}"), text);
        Ok(())
    }

    /// Adds the `config-connector/` target for `infra`, unless it holds no object.
    pub fn add_infrastructure(
        &mut self,
        blueprint: &Blueprint<'_>,
        infra: &Infrastructure,
    ) -> Result<(), TemplateError> {
        if infra.is_empty() {
            return Ok(());
        }
        #[derive(Serialize)]
        struct Context<'i> {
            infra: &'i Infrastructure,
        }
        let resources = render("gcp/config-connector.yaml", &Context { infra })?;
        self.add_target(Plane::ConfigConnector, blueprint, resources)
    }

    /// The target folders, in order.
    #[must_use]
    pub fn targets(&self) -> Vec<Plane> {
        [Plane::ConfigConnector, Plane::Workload]
            .into_iter()
            .filter(|plane| {
                self.files
                    .contains_key(&format!("{}/kustomization.yaml", plane.dir()))
            })
            .collect()
    }
}

/// The plan most kinds make: their GCP objects and the context of their one workload
/// template.
#[derive(Debug, Serialize)]
pub struct Planned<W> {
    /// The blueprint's GCP objects.
    pub infra: Infrastructure,
    /// What the kind's workload template sees.
    pub workload: W,
}

impl<W: Serialize> Planned<W> {
    /// The overlay: the GCP objects, and the workload cluster's objects from `template`.
    pub fn overlay(
        &self,
        blueprint: &Blueprint<'_>,
        template: &str,
    ) -> Result<Overlay, TemplateError> {
        Overlay::with_workload(blueprint, &self.infra, template, &self.workload)
    }
}

/// A template failed to render: a bug in this binary or in a kind's templates.
#[derive(Debug, thiserror::Error)]
#[error("template `{template}` failed: {message}")]
pub struct TemplateError {
    /// Template name, e.g. `gcp/config-connector.yaml`.
    pub template: String,
    /// minijinja's account, with the template line.
    pub message: String,
}

/// Templates embedded in the binary, by name (`<owner>/<file>`).
const TEMPLATES: &[(&str, &str)] = &[
    (
        "overlay/kustomization.yaml",
        include_str!("templates/kustomization.yaml"),
    ),
    (
        "overlay/workload.yaml",
        include_str!("templates/workload.yaml"),
    ),
    (
        "gcp/config-connector.yaml",
        include_str!("../gcp/templates/config-connector.yaml"),
    ),
    (
        "multislice/workload.yaml",
        include_str!("../kinds/multislice/templates/workload.yaml"),
    ),
    (
        "sax/workload.yaml",
        include_str!("../kinds/sax/templates/workload.yaml"),
    ),
    (
        "locust/workload.yaml",
        include_str!("../kinds/locust/templates/workload.yaml"),
    ),
    (
        "locust/metrics.yaml",
        include_str!("../kinds/locust/templates/metrics.yaml"),
    ),
    (
        "triton/workload.yaml",
        include_str!("../kinds/triton/templates/workload.yaml"),
    ),
    (
        "sync/fleet.yaml",
        include_str!("../sync/templates/fleet.yaml"),
    ),
    (
        "sync/roots.yaml",
        include_str!("../sync/templates/roots.yaml"),
    ),
    (
        "sync/mesh.yaml",
        include_str!("../sync/templates/mesh.yaml"),
    ),
];

/// The production template environment: strict undefined, JSON auto-escaping, block tags
/// that leave no blank lines.
fn environment() -> Environment<'static> {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    match minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        Ok(syntax) => env.set_syntax(syntax),
        Err(error) => panic!("template syntax configuration is invalid: {error:#}"),
    }
    env
}

static ENVIRONMENT: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = environment();
    for (name, source) in TEMPLATES {
        // A template that does not parse is a bug in this binary, caught by the unit test below.
        if let Err(error) = env.add_template(name, source) {
            panic!("embedded template {name} does not parse: {error:#}");
        }
    }
    env
});

/// Renders the embedded template `name` with `context`.
pub fn render(name: &str, context: &impl Serialize) -> Result<String, TemplateError> {
    ENVIRONMENT
        .get_template(name)
        .and_then(|template| template.render(minijinja::value::Serde(context)))
        .map_err(|error| TemplateError {
            template: name.to_string(),
            message: format!("{error:#}"),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_templates_parse() {
        for (name, _) in TEMPLATES {
            assert!(ENVIRONMENT.get_template(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn values_cannot_inject_yaml_structure() {
        let mut env = environment();
        env.add_template("t", "value: {{ v }}\n").unwrap();
        let hostile = [
            "a\nb: injected",
            "key: value",
            "x # comment",
            "{{ 7 * 7 }}",
            "*alias",
            "&anchor x",
            "- item",
            "'single' \"double\"",
            "yes",
            "010",
        ];
        for value in hostile {
            let text = env
                .get_template("t")
                .unwrap()
                .render(minijinja::context! { v => value })
                .unwrap();
            let docs = crate::yaml::parse_documents(&text).unwrap();
            let map = docs[0].as_map().unwrap();
            assert_eq!(map.len(), 1, "{text}");
            assert_eq!(
                docs[0].get("value").unwrap().as_str(),
                Some(value),
                "{text}"
            );
        }
    }

    #[test]
    fn undefined_variables_fail() {
        let mut env = environment();
        env.add_template("t", "value: {{ pool.lables }}\n").unwrap();
        let result = env
            .get_template("t")
            .unwrap()
            .render(minijinja::context! { pool => BTreeMap::<String, String>::new() });
        assert!(result.is_err());
    }
}

//! A blueprint of a repository kind read: the shared spec parts by the built-in kinds'
//! types, the kind's own fields against its JSON Schema, each error at its line.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value as Json;

use super::Inner;
use crate::accelerator::{GpuSpec, TpuSpec};
use crate::blueprint::{Blueprint, de};
use crate::diagnostic::Diagnostic;
use crate::gcp::spec::{
    BucketSpec, ClusterSpec, ConfigConnectorSpec, GpuPoolSpec, NetworkSpec, ServiceAccountSpec,
};
use crate::yaml::pointer::{Step, steps};
use crate::yaml::{Node, Span, Value};

/// The spec fields every repository kind shares with the built-in kinds, read by the same
/// types. Which of the optional parts a kind takes follows from its definition.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct SharedSpec {
    /// GCP project id.
    pub(super) project: String,
    /// Region (default: the referenced cluster's, else the kind's).
    pub(super) region: Option<String>,
    /// Zone of the accelerator nodes and of a new zonal cluster (default: `<region>-a`).
    pub(super) zone: Option<String>,
    /// Where the Config Connector objects go.
    #[serde(default)]
    pub(super) config_connector: ConfigConnectorSpec,
    /// Let a change delete the clusters, node pools, network, node service account and data
    /// this blueprint created: its removal, or an edit GCP makes only by recreating them
    /// (default `false`: removed ones are abandoned, kept in GCP and billed until deleted by
    /// hand, and `diff --fail-on destructive` fails on a recreate). Commit it first.
    #[serde(default)]
    pub(super) allow_teardown: bool,
    /// VPC and subnet of a new cluster.
    #[serde(default)]
    pub(super) network: NetworkSpec,
    /// The cluster (new by default; zonal in the blueprint's zone).
    #[serde(default)]
    pub(super) cluster: ClusterSpec,
    /// Node and Workload Identity service accounts.
    #[serde(default)]
    pub(super) service_accounts: ServiceAccounts,
    /// Namespace of the workload objects (default: the blueprint name).
    pub(super) namespace: Option<String>,
    /// Kubernetes service account bound to the Workload Identity account.
    pub(super) kubernetes_service_account: Option<String>,
    /// The TPU slices.
    pub(super) tpu: Option<TpuSpec>,
    /// The GPUs of each node of the GPU pool.
    pub(super) gpu: Option<GpuSpec>,
    /// Size of the GPU pool (default: autoscaling from 1 to 3 nodes).
    #[serde(default)]
    pub(super) gpu_pool: GpuPoolSpec,
    /// The blueprint's bucket.
    #[serde(default)]
    pub(super) bucket: BucketSpec,
}

/// `spec.serviceAccounts`.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ServiceAccounts {
    /// Account of the nodes.
    #[serde(default)]
    pub(super) nodes: ServiceAccountSpec,
    /// Workload Identity account of the workloads.
    #[serde(default)]
    pub(super) workload: ServiceAccountSpec,
}

/// Shared fields every repository kind takes.
pub(super) const COMMON_FIELDS: &[&str] = &[
    "project",
    "region",
    "zone",
    "configConnector",
    "allowTeardown",
    "network",
    "cluster",
    "serviceAccounts",
    "namespace",
    "kubernetesServiceAccount",
];

/// Reads the shared fields strictly, as built-in kinds read theirs.
pub(super) fn read_shared(
    blueprint: &Blueprint<'_>,
    node: &Node,
) -> Result<SharedSpec, Diagnostic> {
    de::from_node(node, "spec").map_err(|e| {
        let mut d = Diagnostic::error("blueprint-schema", e.message)
            .at(blueprint.file, e.span.unwrap_or(blueprint.spec().span))
            .field(e.path)
            .object(blueprint.object_ref());
        d.expected = e.expected;
        d.found = e.found;
        d.fix = e.fix;
        d
    })
}

impl Inner {
    /// Checks the kind's own fields against its schema; the first violation (in source
    /// order) is a `blueprint-schema` error at its line. Returns them with their defaults.
    pub(super) fn parameters(
        &self,
        blueprint: &Blueprint<'_>,
        node: &Node,
    ) -> Result<Json, Diagnostic> {
        let mut instance: Json = de::from_node(node, "spec").map_err(|e| {
            Diagnostic::error("blueprint-schema", e.message)
                .at(blueprint.file, e.span.unwrap_or(node.span))
                .field(e.path)
                .object(blueprint.object_ref())
        })?;
        let mut found: Vec<Diagnostic> = self
            .validator
            .iter_errors(&instance)
            .map(|error| self.explain(blueprint, node, &error))
            .collect();
        found.sort_by_key(|d| (d.line, d.column));
        if let Some(first) = found.into_iter().next() {
            return Err(first);
        }
        if let Json::Object(map) = &mut instance {
            for (name, default) in &self.defaults {
                map.entry(name.clone()).or_insert_with(|| default.clone());
            }
        }
        Ok(instance)
    }

    pub(super) fn explain(
        &self,
        blueprint: &Blueprint<'_>,
        root: &Node,
        error: &jsonschema::ValidationError<'_>,
    ) -> Diagnostic {
        use jsonschema::error::ValidationErrorKind;
        let steps = steps(error.instance_path().as_str());
        let (node, key) = locate(root, &steps).unwrap_or((root, None));
        let field = format!("spec{}", dotted(&steps));
        let at = |message: String, span: Span, field: String| {
            Diagnostic::error("blueprint-schema", message)
                .at(blueprint.file, span)
                .field(field)
                .object(blueprint.object_ref())
        };
        match error.kind() {
            ValidationErrorKind::AdditionalProperties { unexpected } => {
                let name = unexpected.first().cloned().unwrap_or_default();
                let span = node.key(&name).map_or(node.span, |k| k.span);
                let mut valid: Vec<String> =
                    self.shared_fields.iter().map(ToString::to_string).collect();
                if let Some(Json::Object(properties)) = self.spec_schema.get("properties") {
                    valid.extend(properties.keys().cloned());
                }
                if steps.is_empty() {
                    valid.sort();
                    valid.dedup();
                } else {
                    valid.clear();
                }
                let mut d = at(
                    format!("unknown field `{name}`"),
                    span,
                    format!("{field}.{name}"),
                )
                .found(name.as_str());
                if let Some(best) = crate::catalog::closest(&name, valid.iter().map(String::as_str))
                {
                    d = d.fix(format!("did you mean `{best}`?"));
                } else {
                    d = d.fix(format!("remove `{name}`"));
                }
                if !valid.is_empty() {
                    let listed: Vec<String> = valid.iter().map(|v| format!("`{v}`")).collect();
                    d = d.expected(format!("one of {}", listed.join(", ")));
                }
                d
            }
            ValidationErrorKind::Required { property } => {
                let name = property
                    .as_str()
                    .map_or_else(|| property.to_string(), str::to_string);
                // At the mapping that lacks it: its key, or `spec:` itself.
                let span = key.unwrap_or(blueprint.spec().span);
                let span = if steps.is_empty() {
                    blueprint.node.key("spec").map_or(span, |k| k.span)
                } else {
                    span
                };
                at(
                    format!("missing required field `{name}`"),
                    span,
                    format!("{field}.{name}"),
                )
                .fix(format!("add `{name}`"))
            }
            _ => {
                let span = match (&node.value, key) {
                    (Value::Map(_) | Value::Seq(_), Some(key)) => key,
                    _ => node.span,
                };
                let mut d = at(error.masked().to_string(), span, field);
                if !matches!(node.value, Value::Map(_) | Value::Seq(_)) {
                    d = d.found(scalar(&node.value));
                }
                // The field's own description says what it wants, when the kind wrote one.
                if let Some(description) = self.description(&steps) {
                    d = d.expected(description);
                }
                d.fix(format!(
                    "see the `{}` kind's schema: `kubectl aiml blueprints --schema {}`",
                    self.name, self.name
                ))
            }
        }
    }

    /// The `description` of the parameter schema at `steps` (through `properties` and
    /// `items`), when it has one.
    pub(super) fn description(&self, steps: &[Step]) -> Option<String> {
        let mut schema = &self.spec_schema;
        for step in steps {
            schema = match step {
                Step::Key(key) => schema.get("properties")?.get(key)?,
                Step::Index(_) => schema.get("items")?,
            };
        }
        schema
            .get("description")
            .and_then(Json::as_str)
            .map(str::to_string)
    }
}

/// `.models[0].name`.
pub(super) fn dotted(steps: &[Step]) -> String {
    steps
        .iter()
        .map(|step| match step {
            Step::Key(key) => format!(".{key}"),
            Step::Index(index) => format!("[{index}]"),
        })
        .collect()
}

/// The node a pointer leads to, with the key that led to it (mapping values only). `None`
/// when the pointer leaves the tree.
pub(super) fn locate<'n>(root: &'n Node, steps: &[Step]) -> Option<(&'n Node, Option<Span>)> {
    let mut node = root;
    let mut key = None;
    for step in steps {
        match (step, &node.value) {
            (Step::Index(index), Value::Seq(items)) => {
                key = None;
                node = items.get(*index)?;
            }
            (step, Value::Map(_)) => {
                // A key that reads as a number is still a key of a mapping.
                let text = match step {
                    Step::Key(text) => text.clone(),
                    Step::Index(index) => index.to_string(),
                };
                key = Some(node.key(&text)?.span);
                node = node.get(&text)?;
            }
            _ => return None,
        }
    }
    Some((node, key))
}

pub(super) fn scalar(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Int(i) => i.to_string(),
        Value::Float(f) => f.to_string(),
        Value::String(s) => s.clone(),
        Value::Seq(_) => "a list".into(),
        Value::Map(_) => "a mapping".into(),
    }
}

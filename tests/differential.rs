//! Differential test: `kubectl aiml validate` and a real API server give the same verdict
//! (accepted or refused) on a corpus of objects.
//!
//! The corpus is generated here, deterministically (no randomness: the same cases every run),
//! from this repository's rendered objects (`rendered/`, `examples/*/rendered/`, and a few
//! kinds it does not render, in `tests/fixtures/differential/`): for each
//! `apiVersion` and kind, its largest object, unmutated and mutated along its own schema (read
//! from the vendored `schemas/`): a value of the wrong type, an unknown field, an enum,
//! pattern, format, bound or length violation, a CEL rule broken by hand, `null` in the
//! places where its treatment differs, a required field removed, a bad `metadata.name`, and
//! in pod templates what the API server's Go validation checks beyond the schema (labels the
//! selector no longer matches, a restart policy, a repeated container name, a mount of no
//! volume, an environment variable name). A second test sends the fixtures of the rules that
//! model that Go validation to the server object by object.
//!
//! The server's verdict is a server-side dry-run apply (`kubectl apply --server-side
//! --dry-run=server`, what Config Sync does), batched and mapped back per file; the tool's is
//! one `kubectl aiml validate -o json` over the folder of all cases. Every disagreement must
//! be listed in [`KNOWN_DIFFERENCES`], and every entry there must still disagree.
//!
//! What the server does with `null` was found out here, not assumed (the `null` cases are
//! also sent with `kubectl create --dry-run=server`, and the stderr report counts where apply
//! and create differ). A custom resource's `null` that a server-side apply refuses and a
//! create accepts (it drops nulls of non-nullable fields without a default, as `kubectl
//! apply` does) must be accepted by the tool with a warning; and the tool warns of no `null`
//! that a server-side apply accepts.
//!
//! Needs `kube-apiserver` and `etcd` from `scripts/install-test-deps` (see `tests/apiserver.rs`).

#![allow(clippy::print_stderr, reason = "measurements are reported on stderr")]

#[path = "support/apiserver.rs"]
mod apiserver_support;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use apiserver_support::ApiServer;
use serde_json::{Value, json};

/// Which side refuses a case the other accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Refuses {
    /// The API server refuses, the tool accepts.
    Server,
    /// The tool refuses, the API server accepts.
    Tool,
}

/// Cases where the verdicts differ on purpose or for a reason outside the schema: (case id,
/// the side that refuses, why). Each must still differ, so a fix shows up here as a failure
/// asking to remove the entry.
const KNOWN_DIFFERENCES: &[(&str, Refuses, &str)] = &[
    // The server cuts an int32 to 32 bits before validating (4294967296 is 0) and accepts
    // what is left; the tool refuses the number the author wrote, which is not what runs.
    (
        "Deployment/int32-overflow@spec.replicas",
        Refuses::Tool,
        INT32,
    ),
    ("Job/int32-overflow@spec.backoffLimit", Refuses::Tool, INT32),
    ("PriorityClass/int32-overflow@value", Refuses::Tool, INT32),
    (
        "StatefulSet/int32-overflow@spec.replicas",
        Refuses::Tool,
        INT32,
    ),
    (
        "CronJob/int32-overflow@spec.jobTemplate.spec.backoffLimit",
        Refuses::Tool,
        INT32,
    ),
    // The largest node pool is a TPU slice's: its autoscaling maximum is the slice's host
    // count (`nodepool-tpu-node-count`), a rule of the tool the CRD's schema does not express.
    (
        "ContainerNodePool/int32-overflow@spec.autoscaling.maxNodeCount",
        Refuses::Tool,
        "a TPU slice pool has at most its slice's hosts: a rule of the tool, not of the schema",
    ),
    // The server prunes a custom resource's null limit and accepts the LeaderWorkerSet; the
    // pods its controller then creates request a TPU without a limit, which the pod
    // validation refuses. `extended-resource-limit` judges those pods now.
    (
        "LeaderWorkerSet/null-int-or-string@spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.limits.google.com/tpu",
        Refuses::Tool,
        "the controller's pods would request a TPU without a limit: a rule of the tool judges the pods a custom resource creates",
    ),
    // The published schema requires `value`; the server's Go type reads a missing or null one
    // as 0. The tool keeps to the schema.
    (
        "PriorityClass/null-required@value",
        Refuses::Tool,
        "`value` is required by the published schema; the server takes 0",
    ),
    (
        "PriorityClass/required-removed@value",
        Refuses::Tool,
        "`value` is required by the published schema; the server takes 0",
    ),
    (
        "NetworkPolicy/required-removed@spec.podSelector",
        Refuses::Tool,
        "`podSelector` is required by the published schema; the server takes an empty one (every pod)",
    ),
    (
        "NetworkPolicy/null-required@spec.podSelector",
        Refuses::Tool,
        "`podSelector` is required by the published schema; the server takes an empty one (every pod)",
    ),
    (
        "StatefulSet/required-removed@spec.template.spec.containers[0].ports[0].containerPort",
        Refuses::Tool,
        "`containerPort` is required by the published schema; a server-side apply accepts a port without it",
    ),
    (
        "StatefulSet/null-required@spec.template.spec.containers[0].ports[0].containerPort",
        Refuses::Tool,
        "`containerPort` is required by the published schema; a server-side apply accepts a port without it",
    ),
    // A custom resource's null that the server drops (a create; a server-side apply refuses
    // it, and the tool warns so), after which a rule of the tool, not the schema, finds the
    // field missing.
    (
        "ContainerNodePool/null-optional-scalar@spec.autoscaling.maxNodeCount",
        Refuses::Tool,
        DROPPED_RULE,
    ),
    (
        "ContainerNodePool/null-optional-object@spec.autoscaling",
        Refuses::Tool,
        DROPPED_RULE,
    ),
    (
        "JobSet/null-map-value@spec.replicatedJobs[0].template.metadata.annotations.alpha.jobset.sigs.k8s.io/exclusive-topology",
        Refuses::Tool,
        DROPPED_RULE,
    ),
    // Pod templates the API server does not validate as pod specs when the object is
    // created: a StatefulSet's (`ValidatePodTemplateSpecForStatefulSet`,
    // `pkg/apis/apps/validation/validation.go`, leaves the pod spec out) and a custom
    // resource's. Their controllers' pods are refused; the tool's pod rules judge them now.
    (
        "StatefulSet/int-for-int-or-string@spec.template.spec.containers[0].resources.limits.memory",
        Refuses::Tool,
        LATER_PODS,
    ),
    (
        "StatefulSet/null-int-or-string@spec.template.spec.containers[0].resources.limits.memory",
        Refuses::Tool,
        LATER_PODS,
    ),
    (
        "StatefulSet/volume-mount-unknown@template.spec.containers[0].volumeMounts",
        Refuses::Tool,
        LATER_PODS,
    ),
    (
        "StatefulSet/env-name-with-equals@template.spec.containers[0].env",
        Refuses::Tool,
        LATER_PODS,
    ),
    (
        "LeaderWorkerSet/int-for-int-or-string@spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].resources.limits.memory",
        Refuses::Tool,
        LATER_PODS,
    ),
    (
        "LeaderWorkerSet/int32-overflow@spec.leaderWorkerTemplate.leaderTemplate.spec.containers[0].ports[0].containerPort",
        Refuses::Tool,
        LATER_PODS,
    ),
];

const LATER_PODS: &str = "the object's pod template is validated only in the pods its controller creates, which the API server would refuse";
const DROPPED_RULE: &str =
    "a dropped null leaves a field missing that a rule of the tool (not the schema) requires";
const INT32: &str = "an int32 out of range: the server cuts it to 32 bits and accepts the result";

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// One step into a JSON value.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Seg {
    Key(String),
    Index(usize),
}

/// A value of an object and the (resolved) schema it is checked against.
#[derive(Clone, Debug)]
struct Site {
    path: Vec<Seg>,
    schema: Value,
    /// The parent's schema lists this key as required.
    required: bool,
    /// A value of a map (`additionalProperties`), not a declared field.
    in_map: bool,
    value: Value,
}

fn dotted(path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

fn at_mut<'a>(value: &'a mut Value, path: &[Seg]) -> &'a mut Value {
    path.iter().fold(value, |v, seg| match seg {
        Seg::Key(k) => &mut v[k.as_str()],
        Seg::Index(i) => &mut v[*i],
    })
}

/// The schemas of one kind: the root schema and the documents its `$ref`s point into.
struct KindSchema {
    root: Value,
    defs: Option<&'static Value>,
}

impl KindSchema {
    fn resolve<'a>(&'a self, mut schema: &'a Value) -> &'a Value {
        while let Some(r) = schema.get("$ref").and_then(Value::as_str) {
            let name = r.rsplit('/').next().unwrap_or_default();
            schema = &self.defs.expect("a $ref outside the built-in definitions")[name];
        }
        schema
    }
}

fn builtin_defs() -> &'static Value {
    static DEFS: std::sync::OnceLock<Value> = std::sync::OnceLock::new();
    DEFS.get_or_init(|| {
        let path = repo().join("schemas/kubernetes/v1.32/_definitions.json");
        let doc: Value = serde_json::from_slice(&std::fs::read(path).expect("definitions"))
            .expect("definitions json");
        doc["$defs"].clone()
    })
}

fn schema_of(api_version: &str, kind: &str) -> KindSchema {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let key = format!("{group}/{version}/{kind}");
    let read = |p: &str| -> Value {
        serde_json::from_slice(&std::fs::read(repo().join(p)).expect(p)).expect(p)
    };
    let builtin = read("schemas/kubernetes/v1.32/index.json");
    if let Some(def) = builtin[&key].as_str() {
        return KindSchema {
            root: builtin_defs()[def].clone(),
            defs: Some(builtin_defs()),
        };
    }
    let crds = read("schemas/crds/index.json");
    let file = crds[&key]["file"]
        .as_str()
        .unwrap_or_else(|| panic!("no schema for {key}"));
    KindSchema {
        root: read(&format!("schemas/crds/{file}")),
        defs: None,
    }
}

fn types(schema: &Value) -> Vec<&str> {
    match &schema["type"] {
        Value::String(t) => vec![t.as_str()],
        Value::Array(ts) => ts.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn has_type(schema: &Value, t: &str) -> bool {
    types(schema).contains(&t) && schema.get("oneOf").is_none() && schema.get("anyOf").is_none()
}

fn is_alternative(schema: &Value) -> bool {
    schema.get("oneOf").is_some() || schema.get("anyOf").is_some()
}

/// Every value of `value` (but `apiVersion`, `kind`, `metadata`, `status`) with its schema,
/// in document order; lists: their first two items.
fn sites(schema: &KindSchema, value: &Value) -> Vec<Site> {
    fn walk(
        ks: &KindSchema,
        value: &Value,
        schema: &Value,
        path: Vec<Seg>,
        (required, in_map): (bool, bool),
        out: &mut Vec<Site>,
    ) {
        let schema = ks.resolve(schema);
        out.push(Site {
            path: path.clone(),
            schema: schema.clone(),
            required,
            in_map,
            value: value.clone(),
        });
        match value {
            Value::Object(map) => {
                let req: BTreeSet<&str> = schema["required"]
                    .as_array()
                    .map(|r| r.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                for (k, v) in map {
                    if path.is_empty()
                        && ["apiVersion", "kind", "metadata", "status"].contains(&k.as_str())
                    {
                        continue;
                    }
                    let (sub, in_map) = match schema["properties"].get(k) {
                        Some(sub) => (sub, false),
                        None => match &schema["additionalProperties"] {
                            sub @ Value::Object(_) => (sub, true),
                            _ => continue,
                        },
                    };
                    let mut p = path.clone();
                    p.push(Seg::Key(k.clone()));
                    walk(ks, v, sub, p, (req.contains(k.as_str()), in_map), out);
                }
            }
            Value::Array(items) => {
                if let Some(sub) = schema.get("items") {
                    for (i, item) in items.iter().enumerate().take(2) {
                        let mut p = path.clone();
                        p.push(Seg::Index(i));
                        walk(ks, item, sub, p, (false, false), out);
                    }
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(
        schema,
        value,
        &schema.root,
        Vec::new(),
        (false, false),
        &mut out,
    );
    out
}

/// One case of the corpus.
struct Case {
    /// `Kind/mutation@field`, stable across runs.
    id: String,
    object: Value,
    /// The mutation's name (`original` for none).
    mutation: &'static str,
}

/// What to do to a site.
type Edit = fn(&Site, &mut Value);

fn set(site: &Site, object: &mut Value, to: Value) {
    *at_mut(object, &site.path) = to;
}

fn remove(site: &Site, object: &mut Value) {
    let (last, parent) = site.path.split_last().expect("not the root");
    let parent = at_mut(object, parent);
    match (parent, last) {
        (Value::Object(map), Seg::Key(k)) => {
            map.remove(k);
        }
        (Value::Array(items), Seg::Index(i)) => {
            items.remove(*i);
        }
        _ => unreachable!("a path into the value"),
    }
}

fn not_root(site: &Site) -> bool {
    !site.path.is_empty()
}

fn preserves_unknown(schema: &Value) -> bool {
    schema["x-kubernetes-preserve-unknown-fields"] == true
}

fn number(schema: &Value, key: &str) -> Option<i64> {
    schema.get(key).and_then(Value::as_i64)
}

/// The schema-guided mutations: (name, which sites, what to do). Each applies to the first
/// site that qualifies (and to the last, when `both`).
#[allow(clippy::type_complexity)]
fn mutations() -> Vec<(&'static str, fn(&Site) -> bool, Edit, bool)> {
    vec![
        (
            "string-for-int",
            |s| not_root(s) && has_type(&s.schema, "integer") && s.value.is_i64(),
            |s, o| set(s, o, json!("aiml-not-a-number")),
            true,
        ),
        (
            "int-for-string",
            |s| not_root(s) && has_type(&s.schema, "string") && s.value.is_string(),
            |s, o| set(s, o, json!(12345)),
            true,
        ),
        (
            "object-for-array",
            |s| not_root(s) && has_type(&s.schema, "array") && s.value.is_array(),
            |s, o| set(s, o, json!({"aiml": 1})),
            true,
        ),
        (
            "string-for-object",
            |s| not_root(s) && s.schema["properties"].is_object() && s.value.is_object(),
            |s, o| set(s, o, json!("aiml-not-an-object")),
            false,
        ),
        (
            "int-for-int-or-string",
            |s| is_alternative(&s.schema) && s.value.is_string(),
            |s, o| set(s, o, json!(8080)),
            false,
        ),
        (
            "bool-for-int-or-string",
            |s| is_alternative(&s.schema),
            |s, o| set(s, o, json!(true)),
            false,
        ),
        (
            "unknown-nested",
            |s| {
                s.path.len() > 1
                    && s.value.is_object()
                    && s.schema["properties"].is_object()
                    && !preserves_unknown(&s.schema)
            },
            |s, o| {
                at_mut(o, &s.path)["aimlUnknownField"] = json!("x");
            },
            true,
        ),
        (
            "enum",
            |s| s.schema["enum"].is_array() && s.value.is_string(),
            |s, o| set(s, o, json!("AimlNotInTheEnum")),
            true,
        ),
        (
            "pattern",
            |s| s.schema["pattern"].is_string() && s.value.is_string(),
            |s, o| set(s, o, json!("!aiml does not match!")),
            true,
        ),
        (
            "format",
            |s| {
                s.value.is_string()
                    && s.schema["format"]
                        .as_str()
                        .is_some_and(|f| !["int32", "int64", "double", "float"].contains(&f))
            },
            |s, o| set(s, o, json!("aiml-not-in-format")),
            true,
        ),
        (
            "int32-overflow",
            |s| s.value.is_i64() && s.schema["format"] == "int32",
            |s, o| set(s, o, json!(4_294_967_296_i64)),
            false,
        ),
        (
            "below-minimum",
            |s| s.value.is_number() && number(&s.schema, "minimum").is_some(),
            |s, o| set(s, o, json!(number(&s.schema, "minimum").unwrap() - 1)),
            true,
        ),
        (
            "above-maximum",
            |s| s.value.is_number() && number(&s.schema, "maximum").is_some(),
            |s, o| set(s, o, json!(number(&s.schema, "maximum").unwrap() + 1)),
            true,
        ),
        (
            "too-long",
            |s| s.value.is_string() && number(&s.schema, "maxLength").is_some(),
            |s, o| {
                let n = usize::try_from(number(&s.schema, "maxLength").unwrap()).unwrap();
                set(s, o, json!("a".repeat(n + 1)));
            },
            true,
        ),
        (
            "too-short",
            |s| s.value.is_string() && number(&s.schema, "minLength").is_some_and(|n| n > 0),
            |s, o| set(s, o, json!("")),
            false,
        ),
        (
            "too-many-items",
            |s| {
                s.value.as_array().is_some_and(|a| !a.is_empty())
                    && number(&s.schema, "maxItems").is_some()
            },
            |s, o| {
                let n = usize::try_from(number(&s.schema, "maxItems").unwrap()).unwrap();
                let first = s.value[0].clone();
                set(s, o, Value::Array(vec![first; n + 1]));
            },
            false,
        ),
        (
            "too-few-items",
            |s| s.value.is_array() && number(&s.schema, "minItems").is_some_and(|n| n > 0),
            |s, o| set(s, o, json!([])),
            false,
        ),
        ("required-removed", |s| s.required, remove, true),
        (
            "null-required",
            |s| s.required,
            |s, o| set(s, o, Value::Null),
            true,
        ),
        (
            "null-optional-scalar",
            |s| {
                not_root(s)
                    && !s.required
                    && matches!(s.path.last(), Some(Seg::Key(_)))
                    && !s.value.is_object()
                    && !s.value.is_array()
                    && !is_alternative(&s.schema)
            },
            |s, o| set(s, o, Value::Null),
            true,
        ),
        (
            "null-optional-object",
            |s| {
                s.path.len() > 1
                    && !s.required
                    && matches!(s.path.last(), Some(Seg::Key(_)))
                    && s.value.is_object()
            },
            |s, o| set(s, o, Value::Null),
            false,
        ),
        (
            "null-optional-array",
            |s| {
                not_root(s)
                    && !s.required
                    && matches!(s.path.last(), Some(Seg::Key(_)))
                    && s.value.is_array()
            },
            |s, o| set(s, o, Value::Null),
            false,
        ),
        (
            "null-int-or-string",
            |s| is_alternative(&s.schema),
            |s, o| set(s, o, Value::Null),
            false,
        ),
        (
            "null-list-item",
            |s| matches!(s.path.last(), Some(Seg::Index(_))),
            |s, o| set(s, o, Value::Null),
            false,
        ),
        (
            "null-map-value",
            |s| s.in_map && s.value.is_string(),
            |s, o| set(s, o, Value::Null),
            false,
        ),
    ]
}

/// Mutations of `metadata` (which CRD schemas leave open and the server checks as
/// `ObjectMeta`), and the unknown field at the top of `spec`.
#[allow(clippy::type_complexity)]
fn fixed_mutations() -> Vec<(&'static str, &'static str, fn(&mut Value))> {
    vec![
        ("unknown-top", "spec.aimlUnknownField", |o| {
            if o["spec"].is_object() {
                o["spec"]["aimlUnknownField"] = json!(1);
            } else {
                o["aimlUnknownField"] = json!(1);
            }
        }),
        ("name-bad-characters", "metadata.name", |o| {
            o["metadata"]["name"] = json!("Aiml_Bad.Name");
        }),
        ("name-too-long", "metadata.name", |o| {
            o["metadata"]["name"] = json!("a".repeat(254));
        }),
        ("name-with-dot", "metadata.name", |o| {
            o["metadata"]["name"] = json!("aiml.dotted.name");
        }),
        ("label-int-value", "metadata.labels", |o| {
            o["metadata"]["labels"]["aiml"] = json!(5);
        }),
        ("label-null-value", "metadata.labels", |o| {
            o["metadata"]["labels"]["aiml"] = Value::Null;
        }),
        ("label-bad-key", "metadata.labels", |o| {
            o["metadata"]["labels"]["aiml bad key"] = json!("x");
        }),
        ("label-bad-value", "metadata.labels", |o| {
            o["metadata"]["labels"]["aiml"] = json!("not a label value!");
        }),
        // Pod templates carry metadata of their own.
        (
            "template-label-bad-value",
            "template.metadata.labels",
            |o| {
                if let Some(t) = pod_template(o) {
                    t["metadata"]["labels"]["aiml"] = json!("not a label value!");
                }
            },
        ),
        (
            "template-annotation-bad-key",
            "template.metadata.annotations",
            |o| {
                if let Some(t) = pod_template(o) {
                    t["metadata"]["annotations"]["aiml bad key"] = json!("x");
                }
            },
        ),
        // What the API server's Go validation checks in a pod template beyond the schema
        // (`workload-spec`, `pod-spec-names`): each breaks one check, or (a Job's `Never`, a
        // Job's labels) must be accepted.
        (
            "template-labels-replaced",
            "template.metadata.labels",
            |o| {
                if let Some(t) = pod_template(o) {
                    t["metadata"]["labels"] = json!({"aiml": "replaced"});
                }
            },
        ),
        (
            "template-restart-never",
            "template.spec.restartPolicy",
            |o| {
                if let Some(t) = pod_template(o) {
                    t["spec"]["restartPolicy"] = json!("Never");
                }
            },
        ),
        ("container-name-repeated", "template.spec.containers", |o| {
            if let Some(containers) = pod_template(o)
                .and_then(|t| t.pointer_mut("/spec/containers"))
                .and_then(Value::as_array_mut)
            {
                let mut second = containers[0].clone();
                // Another port, so that only the name repeats.
                second.as_object_mut().expect("container").remove("ports");
                containers.push(second);
            }
        }),
        (
            "volume-mount-unknown",
            "template.spec.containers[0].volumeMounts",
            |o| {
                if let Some(c) = pod_template(o).and_then(|t| t.pointer_mut("/spec/containers/0")) {
                    let mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
                    let mut mounts = mounts;
                    mounts.push(json!({"name": "aiml-no-such-volume", "mountPath": "/aiml"}));
                    c["volumeMounts"] = Value::Array(mounts);
                }
            },
        ),
        (
            "env-name-with-equals",
            "template.spec.containers[0].env",
            |o| {
                if let Some(c) = pod_template(o).and_then(|t| t.pointer_mut("/spec/containers/0")) {
                    let mut env = c["env"].as_array().cloned().unwrap_or_default();
                    env.push(json!({"name": "AIML=X", "value": "x"}));
                    c["env"] = Value::Array(env);
                }
            },
        ),
        ("metadata-unknown", "metadata.aimlUnknownField", |o| {
            o["metadata"]["aimlUnknownField"] = json!("x");
        }),
        ("annotation-int-value", "metadata.annotations", |o| {
            o["metadata"]["annotations"]["aiml"] = json!(5);
        }),
        ("spec-null", "spec", |o| {
            if o.get("spec").is_some() {
                o["spec"] = Value::Null;
            }
        }),
    ]
}

/// The pod template of a workload (a CronJob's under `jobTemplate`), if it has one.
/// (Looked up by pointer: indexing would add the fields it looks for.)
fn pod_template(o: &mut Value) -> Option<&mut Value> {
    let at = ["/spec/template", "/spec/jobTemplate/spec/template"]
        .into_iter()
        .find(|p| o.pointer(p).is_some_and(Value::is_object))?;
    o.pointer_mut(at)
}

/// CEL rules (`x-kubernetes-validations`) broken by hand: (kind, name, field, what to do).
#[allow(clippy::type_complexity)]
fn cel_mutations() -> Vec<(&'static str, &'static str, &'static str, fn(&mut Value))> {
    vec![
        (
            "ClusterQueue",
            "cel-covered-resources",
            "spec.resourceGroups[0].coveredResources",
            |o| {
                o["spec"]["resourceGroups"][0]["coveredResources"]
                    .as_array_mut()
                    .expect("coveredResources")
                    .push(json!("nvidia.com/gpu"));
            },
        ),
        (
            "ClusterQueue",
            "cel-borrowing-without-cohort",
            "spec.resourceGroups[0].flavors[0].resources[0].borrowingLimit",
            |o| {
                o["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["borrowingLimit"] =
                    json!(4);
            },
        ),
        (
            "JobSet",
            "cel-startup-policy-and-depends-on",
            "spec.startupPolicy",
            |o| {
                o["spec"]["startupPolicy"] = json!({"startupPolicyOrder": "InOrder"});
                let first = o["spec"]["replicatedJobs"][0]["name"].clone();
                o["spec"]["replicatedJobs"][0]["dependsOn"] =
                    json!([{"name": first, "status": "Ready"}]);
            },
        ),
        (
            "ResourceFlavor",
            "cel-topology-without-node-labels",
            "spec.topologyName",
            |o| {
                o["spec"]["topologyName"] = json!("default");
                o["spec"]["nodeLabels"] = json!({});
            },
        ),
        (
            "PodMonitoring",
            "cel-timeout-above-interval",
            "spec.endpoints[0].timeout",
            |o| {
                o["spec"]["endpoints"][0]["interval"] = json!("10s");
                o["spec"]["endpoints"][0]["timeout"] = json!("20s");
            },
        ),
        (
            "PodMonitoring",
            "cel-port-zero",
            "spec.endpoints[0].port",
            |o| {
                o["spec"]["endpoints"][0]["port"] = json!(0);
            },
        ),
        (
            "PodMonitoring",
            "cel-secret-namespace",
            "spec.endpoints[0].authorization",
            |o| {
                o["spec"]["endpoints"][0]["authorization"] = json!({"credentials": {"secret": {"name": "token", "key": "t", "namespace": "other"}}});
            },
        ),
        // `isURL` and `matches` (Kubernetes' URL library): refused with user information…
        (
            "PodMonitoring",
            "cel-proxy-url-with-user",
            "spec.endpoints[0].proxyUrl",
            |o| {
                o["spec"]["endpoints"][0]["proxyUrl"] = json!("http://user@proxy.internal:3128");
            },
        ),
        // … and accepted without: a CEL rule that holds must not be a finding.
        (
            "PodMonitoring",
            "cel-proxy-url",
            "spec.endpoints[0].proxyUrl",
            |o| {
                o["spec"]["endpoints"][0]["proxyUrl"] = json!("http://proxy.internal:3128");
            },
        ),
        (
            "PodMonitoring",
            "cel-proxy-url-not-a-url",
            "spec.endpoints[0].proxyUrl",
            |o| {
                o["spec"]["endpoints"][0]["proxyUrl"] = json!("proxy.internal");
            },
        ),
        // A rule that reads a field without `has()`: absent, the server's evaluation errs
        // ("no such key") and the object is refused.
        (
            "HealthCheckPolicy",
            "cel-no-port-specification",
            "spec.default.config.httpHealthCheck",
            |o| {
                let check = o["spec"]["default"]["config"]["httpHealthCheck"]
                    .as_object_mut()
                    .expect("httpHealthCheck");
                check.remove("portSpecification");
            },
        ),
        (
            "HealthCheckPolicy",
            "cel-port-name-with-fixed-port",
            "spec.default.config.httpHealthCheck.portName",
            |o| {
                o["spec"]["default"]["config"]["httpHealthCheck"]["portName"] = json!("http");
            },
        ),
        // A rule over defaulted fields: `borrowWithinCohort` needs `reclaimWithinCohort`
        // other than `Never`, its default.
        (
            "ClusterQueue",
            "cel-borrow-within-cohort-reclaim-never",
            "spec.preemption",
            |o| {
                o["spec"]["preemption"] =
                    json!({"borrowWithinCohort": {"policy": "LowerPriority"}});
            },
        ),
        (
            "ClusterQueue",
            "cel-fungibility-preference",
            "spec.flavorFungibility",
            |o| {
                // `whenCanBorrow` defaults to `MayStopSearch`: the rule needs `TryNextFlavor`.
                o["spec"]["flavorFungibility"] = json!({"preference": "PreemptionOverBorrowing"});
            },
        ),
    ]
}

/// One rendered object.
struct Object {
    value: Value,
}

/// Every object under `rendered/` and `examples/*/rendered/`, in path order, then those of
/// `tests/fixtures/differential/`. The platform controllers' release manifests
/// (`rendered/_sync/platform/`) are upstream's bytes, not objects the tool composes: left
/// out (`tests/platform.rs` applies them to a real server as they are).
fn rendered_objects() -> Vec<Object> {
    let root = repo();
    let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_entry(|e| {
            // Only the repository's and the examples' own rendered/ folders.
            let rel = e.path().strip_prefix(&root).unwrap_or(e.path());
            let parts: Vec<_> = rel.iter().filter_map(|p| p.to_str()).collect();
            let platform = parts.windows(2).any(|w| w == ["_sync", "platform"]);
            !platform
                && matches!(
                    parts.as_slice(),
                    [] | ["examples"]
                        | ["examples", _]
                        | ["rendered", ..]
                        | ["examples", _, "rendered", ..]
                )
        })
        .map(|e| e.expect("walk").into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "yaml") && p.is_file())
        .collect();
    files.sort();
    // Kinds the repository does not render (RBAC, StatefulSet, CronJob; NetworkPolicy's
    // fixture adds the cases its rendered policies do not show).
    let extra = root.join("tests/fixtures/differential");
    let mut extras: Vec<PathBuf> = std::fs::read_dir(&extra)
        .expect("tests/fixtures/differential")
        .map(|e| e.expect("entry").path())
        .collect();
    extras.sort();
    files.extend(extras);
    files
        .iter()
        .map(|path| Object {
            value: serde_saphyr::from_str(&std::fs::read_to_string(path).expect("read"))
                .unwrap_or_else(|e| panic!("{}: not one YAML object: {e}", path.display())),
        })
        .collect()
}

/// For each `apiVersion` and kind, its largest rendered object (ties: the first in path
/// order): the one with the most fields to mutate.
fn representatives(objects: &[Object]) -> Vec<&Object> {
    let mut best: BTreeMap<(String, String), &Object> = BTreeMap::new();
    for o in objects {
        let key = (
            o.value["apiVersion"]
                .as_str()
                .expect("apiVersion")
                .to_owned(),
            o.value["kind"].as_str().expect("kind").to_owned(),
        );
        let size = |o: &Object| o.value.to_string().len();
        match best.get(&key) {
            Some(b) if size(b) >= size(o) => {}
            _ => {
                best.insert(key, o);
            }
        }
    }
    best.into_values().collect()
}

/// The corpus: every representative, unmutated and mutated.
fn corpus(objects: &[Object]) -> Vec<Case> {
    let mut cases = Vec::new();
    let chosen = representatives(objects);
    let mut kinds: BTreeMap<&str, usize> = BTreeMap::new();
    for o in &chosen {
        *kinds
            .entry(o.value["kind"].as_str().expect("kind"))
            .or_default() += 1;
    }
    for o in chosen {
        let kind = o.value["kind"].as_str().expect("kind").to_owned();
        let api_version = o.value["apiVersion"].as_str().expect("apiVersion");
        // Ids name the kind, and its group too when two groups share the kind's name.
        let label = match api_version.rsplit_once('/') {
            Some((group, _)) if kinds[kind.as_str()] > 1 => format!("{kind}.{group}"),
            _ => kind.clone(),
        };
        let mut original = o.value.clone();
        if kind == "Namespace" {
            // Other cases need their namespaces to exist; this one must be a creation.
            original["metadata"]["name"] = json!("aiml-differential");
        }
        cases.push(Case {
            id: format!("{label}/original"),
            object: original.clone(),
            mutation: "original",
        });
        let schema = schema_of(api_version, &kind);
        let sites = sites(&schema, &original);
        for (name, applies, edit, both) in mutations() {
            let matching: Vec<&Site> = sites.iter().filter(|s| applies(s)).collect();
            let mut picked: Vec<&Site> = matching.first().copied().into_iter().collect();
            if both && matching.len() > 1 {
                picked.push(matching[matching.len() - 1]);
            }
            for site in picked {
                let mut object = original.clone();
                edit(site, &mut object);
                cases.push(Case {
                    id: format!("{label}/{name}@{}", dotted(&site.path)),
                    object,
                    mutation: name,
                });
            }
        }
        for (name, field, edit) in fixed_mutations() {
            let mut object = original.clone();
            edit(&mut object);
            if object != original {
                cases.push(Case {
                    id: format!("{label}/{name}@{field}"),
                    object,
                    mutation: name,
                });
            }
        }
        for (k, name, field, edit) in cel_mutations() {
            if k == kind {
                let mut object = original.clone();
                edit(&mut object);
                cases.push(Case {
                    id: format!("{label}/{name}@{field}"),
                    object,
                    mutation: name,
                });
            }
        }
    }
    cases
}

#[test]
fn the_corpus_is_deterministic_and_covers_every_mutation() {
    let objects = rendered_objects();
    let a = corpus(&objects);
    let b = corpus(&objects);
    assert_eq!(
        a.iter().map(|c| (&c.id, &c.object)).collect::<Vec<_>>(),
        b.iter().map(|c| (&c.id, &c.object)).collect::<Vec<_>>()
    );
    let ids: BTreeSet<&str> = a.iter().map(|c| c.id.as_str()).collect();
    assert_eq!(ids.len(), a.len(), "case ids repeat");
    let used: BTreeSet<&str> = a.iter().map(|c| c.mutation).collect();
    for (name, ..) in mutations() {
        assert!(used.contains(name), "no case for mutation {name}");
    }
}

/// The server's verdict on each case: `Some(message)` when refused.
///
/// kubectl's errors of a server-side apply name the object (`The Deployment "x" is
/// invalid`), not the file; so each batch holds at most one case per kind and name, and a
/// case is accepted when kubectl printed `<kind>[.<group>]/<name> serverside-applied`.
fn server_verdicts(
    server: &ApiServer,
    cases: &[(PathBuf, &Case)],
    verb: &[&str],
) -> Vec<Option<String>> {
    let identity = |case: &Case| {
        let o = &case.object;
        let group = o["apiVersion"]
            .as_str()
            .unwrap_or("")
            .rsplit_once('/')
            .map_or("", |(g, _)| g);
        let kind = o["kind"].as_str().unwrap_or("").to_lowercase();
        let kind = if group.is_empty() {
            kind
        } else {
            format!("{kind}.{group}")
        };
        (
            kind,
            o["metadata"]["name"].as_str().unwrap_or("").to_owned(),
        )
    };
    // Batch n holds the n-th case of each identity.
    let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
    let mut batches: Vec<Vec<usize>> = Vec::new();
    for (i, (_, case)) in cases.iter().enumerate() {
        let n = seen.entry(identity(case)).or_default();
        if batches.len() <= *n {
            batches.push(Vec::new());
        }
        batches[*n].push(i);
        *n += 1;
    }
    let run_batch = |batch: &[usize]| {
        let mut cmd = server.kubectl();
        cmd.args(verb).arg("--dry-run=server");
        for &i in batch {
            cmd.arg("-f").arg(&cases[i].0);
        }
        let out = cmd.output().expect("run kubectl");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        let done: BTreeSet<&str> = stdout
            .lines()
            .filter_map(|l| l.strip_suffix(" (server dry run)"))
            .filter_map(|l| l.rsplit_once(' ').map(|(id, _)| id))
            .collect();
        batch
            .iter()
            .map(|&i| {
                let (kind, name) = identity(cases[i].1);
                if done.contains(format!("{kind}/{name}").as_str()) {
                    return (i, None);
                }
                let kind_name = cases[i].1.object["kind"].as_str().unwrap_or("");
                let named = [
                    format!("{kind_name} \"{name}\""),
                    format!(
                        "{kind_name}.{}",
                        kind.split_once('.').map_or("", |(_, g)| g)
                    ),
                ];
                let about: Vec<&str> = stderr
                    .split("\nError")
                    .filter(|b| {
                        (b.contains(&named[0])
                            || b.contains(&named[1]) && b.contains(&format!("\"{name}\"")))
                            || b.contains(&format!("/{name}; "))
                                && b.contains(&format!("Kind={kind_name})"))
                    })
                    .collect();
                let message = if about.is_empty() {
                    stderr.to_string()
                } else {
                    about.join("\n")
                };
                (i, Some(message.trim().to_owned()))
            })
            .collect::<Vec<_>>()
    };
    // A batch kubectl refused whole, before any request reached the server (a file it cannot
    // read), says nothing about each case: then each on its own.
    let run = |batch: &[usize]| {
        let verdicts = run_batch(batch);
        let whole = verdicts
            .iter()
            .all(|(_, v)| v.as_ref().is_some_and(|m| !m.contains("from server")));
        if batch.len() > 1 && whole {
            batch.iter().flat_map(|&i| run_batch(&[i])).collect()
        } else {
            verdicts
        }
    };
    let mut verdicts = vec![None; cases.len()];
    let results: Vec<Vec<(usize, Option<String>)>> = std::thread::scope(|scope| {
        // Two kubectl runs at a time: the machines are small and shared.
        let halves: Vec<Vec<&Vec<usize>>> = (0..2)
            .map(|k| batches.iter().skip(k).step_by(2).collect())
            .collect();
        let handles: Vec<_> = halves
            .into_iter()
            .map(|mine| scope.spawn(move || mine.into_iter().flat_map(|b| run(b)).collect()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("batch"))
            .collect()
    });
    for (i, v) in results.into_iter().flatten() {
        verdicts[i] = v;
    }
    verdicts
}

#[test]
fn the_validator_agrees_with_a_real_api_server_on_the_differential_corpus() {
    let name = "the_validator_agrees_with_a_real_api_server_on_the_differential_corpus";
    let began = Instant::now();
    let objects = rendered_objects();
    let cases = corpus(&objects);
    let Some(server) = ApiServer::start_or_skip(name) else {
        return;
    };
    let scratch = server.scratch();
    let installed = server.install_crds();

    // Namespaces the cases live in, for real.
    let namespaces: BTreeSet<&str> = cases
        .iter()
        .filter_map(|c| c.object["metadata"]["namespace"].as_str())
        .collect();
    for ns in &namespaces {
        let out = server.run_kubectl(&["create", "namespace", ns]);
        assert!(
            out.status.success(),
            "namespace {ns}: {}",
            apiserver_support::output_text(&out)
        );
    }

    let dir = scratch.join("cases");
    std::fs::create_dir_all(&dir).expect("mkdir cases");
    let mut files: Vec<(PathBuf, &Case)> = Vec::new();
    for (i, case) in cases.iter().enumerate() {
        let path = dir.join(format!("c{i:04}.yaml"));
        std::fs::write(
            &path,
            serde_json::to_string_pretty(&case.object).expect("json"),
        )
        .expect("write case");
        files.push((path, case));
    }

    // The tool: one run over the folder.
    let tool_began = Instant::now();
    let out = Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
        .current_dir(&scratch)
        .env("NO_COLOR", "1")
        // Judged against the server's own minor: the tool's default follows GKE's Regular
        // channel, which may be newer than the server these tests build.
        .args(["validate", "cases", "-o", "json", "--kubernetes-version"])
        .arg(apiserver_support::KUBERNETES_VERSION)
        .output()
        .expect("run kubectl-aiml");
    let tool_time = tool_began.elapsed();
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "validate could not run: {}",
        apiserver_support::output_text(&out)
    );
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).expect("validate -o json");
    let mut tool: BTreeMap<String, Vec<String>> = BTreeMap::new();
    // Files where the tool warns of a custom resource's `null` that only a server-side apply
    // refuses (`kubectl apply` and `create` drop it).
    let mut tool_warns_null: BTreeSet<String> = BTreeSet::new();
    for f in &findings {
        let file = f["file"].as_str().expect("file");
        let base = file.rsplit('/').next().unwrap_or(file).to_owned();
        let message = f["message"].as_str().unwrap_or("?");
        if f["severity"] == "error" {
            tool.entry(base)
                .or_default()
                .push(format!("{}: {message}", f["rule"].as_str().unwrap_or("?"),));
        } else if f["rule"] == "schema-violation" && message.contains("a server-side apply") {
            tool_warns_null.insert(base);
        }
    }

    // The server: dry-run applies, batched.
    let server_began = Instant::now();
    let applied = server_verdicts(&server, &files, &["apply", "--server-side"]);
    let nulls: Vec<(PathBuf, &Case)> = files
        .iter()
        .filter(|(_, case)| case.mutation.contains("null"))
        .cloned()
        .collect();
    let created = server_verdicts(&server, &nulls, &["create"]);
    let server_time = server_began.elapsed();
    let created_of: BTreeMap<&str, bool> = nulls
        .iter()
        .zip(&created)
        .map(|((_, case), v)| (case.id.as_str(), v.is_some()))
        .collect();
    let crd_groups: BTreeSet<String> = apiserver_support::crds()
        .iter()
        .filter_map(|crd| crd["spec"]["group"].as_str().map(str::to_owned))
        .collect();
    let is_custom = |case: &Case| {
        let api_version = case.object["apiVersion"].as_str().unwrap_or("");
        api_version
            .rsplit_once('/')
            .is_some_and(|(group, _)| crd_groups.contains(group))
    };

    let known: BTreeMap<&str, (Refuses, &str)> = KNOWN_DIFFERENCES
        .iter()
        .map(|(id, side, why)| (*id, (*side, *why)))
        .collect();
    let mut report = Vec::new();
    let mut agree = 0;
    let mut known_seen = 0;
    let mut refused_by_both = 0;
    let mut seen_ids = BTreeSet::new();
    for (i, (path, case)) in files.iter().enumerate() {
        let file = path
            .file_name()
            .expect("file")
            .to_string_lossy()
            .into_owned();
        let mut server_says = applied[i].clone();
        let tool_says = tool.get(&file);
        seen_ids.insert(case.id.as_str());
        // A custom resource's `null` that a server-side apply refuses and a create accepts
        // (the create drops it, as `kubectl apply` does): the tool accepts it with a warning.
        let apply_only = is_custom(case)
            && server_says.is_some()
            && created_of.get(case.id.as_str()) == Some(&false);
        let warns = tool_warns_null.contains(&file);
        if apply_only && !warns {
            report.push(format!(
                "{} ({file}): a null only a server-side apply refuses, and no warning of the tool",
                case.id
            ));
        } else if warns && server_says.is_none() {
            report.push(format!(
                "{} ({file}): the tool warns that a server-side apply refuses a null; it accepts it",
                case.id
            ));
        }
        if apply_only {
            server_says = None;
        }
        let server_says = &server_says;
        let differs = match (server_says.is_some(), tool_says.is_some()) {
            (true, false) => Some(Refuses::Server),
            (false, true) => Some(Refuses::Tool),
            (both, _) => {
                if both {
                    refused_by_both += 1;
                }
                None
            }
        };
        if case.mutation == "original" && (server_says.is_some() || tool_says.is_some()) {
            // A rendered object, unchanged: both must accept it, whatever the table says.
            report.push(format!(
                "{}: an unmutated rendered object is refused\n  server: {}\n  tool: {}",
                case.id,
                server_says.as_deref().unwrap_or("accepted"),
                tool_says.map_or("accepted".to_owned(), |t| t.join("; ")),
            ));
            continue;
        }
        match (differs, known.get(case.id.as_str())) {
            (None, None) => agree += 1,
            (Some(side), Some((listed, _))) if side == *listed => known_seen += 1,
            (Some(side), _) => report.push(format!(
                "{} ({file}): refused by the {} only\n  server: {}\n  tool: {}",
                case.id,
                if side == Refuses::Server { "server" } else { "tool" },
                server_says.as_deref().unwrap_or("accepted").replace('\n', "\n    "),
                tool_says.map_or("accepted".to_owned(), |t| t.join("\n    ")),
            )),
            (None, Some((side, why))) => report.push(format!(
                "{}: now agrees (known difference, refused by {side:?} only: {why}); remove it from KNOWN_DIFFERENCES",
                case.id
            )),
        }
    }
    for id in known.keys() {
        if !seen_ids.contains(id) {
            report.push(format!(
                "{id}: no such case; remove it from KNOWN_DIFFERENCES"
            ));
        }
    }
    let applied_of: BTreeMap<&str, bool> = files
        .iter()
        .zip(&applied)
        .map(|((_, case), v)| (case.id.as_str(), v.is_some()))
        .collect();
    let apply_vs_create: Vec<String> = nulls
        .iter()
        .zip(&created)
        .filter(|((_, case), v)| applied_of[case.id.as_str()] != v.is_some())
        .map(|((_, case), v)| {
            format!(
                "{} ({})",
                case.id,
                if v.is_some() {
                    "create refuses, apply accepts"
                } else {
                    "apply refuses, create accepts"
                }
            )
        })
        .collect();
    eprintln!(
        "{} cases ({} CRDs installed): {} agree ({} refused by both), {} known differences, {} disagreements; \
         null cases where apply and create differ: {} (e.g. {:?}); validate {:.1?}, server {:.1?}, {:.1?} in all",
        cases.len(),
        installed,
        agree,
        refused_by_both,
        known_seen,
        report.len(),
        apply_vs_create.len(),
        &apply_vs_create[..apply_vs_create.len().min(3)],
        tool_time,
        server_time,
        began.elapsed()
    );
    // For a look at every case and both verdicts: AIML_DIFFERENTIAL_KEEP=<folder>.
    if let Some(keep) = std::env::var_os("AIML_DIFFERENTIAL_KEEP") {
        let keep = PathBuf::from(keep);
        std::fs::create_dir_all(&keep).expect("mkdir keep");
        let all: Vec<Value> = files
            .iter()
            .zip(&applied)
            .map(|((path, case), server_says)| {
                let file = path.file_name().expect("file").to_string_lossy().into_owned();
                json!({"id": case.id, "file": file, "server": server_says, "tool": tool.get(&file), "object": case.object})
            })
            .collect();
        std::fs::write(
            keep.join("verdicts.json"),
            serde_json::to_string_pretty(&all).expect("json"),
        )
        .expect("write verdicts");
    }
    assert!(report.is_empty(), "{}", report.join("\n"));
}

/// The fixtures of the rules that model the API server's Go validation (`workload-spec`,
/// `pod-spec-names`, `resource-request-above-limit`, `service-ports`, `hpa-spec`,
/// `network-policy-peer`, `rbac-rule`, `pdb-spec`, `priority-class-value`, `config-data-keys`,
/// `pvc-spec`, `container-probes`) and of what it
/// accepts (`ok_apiserver_accepts.yaml`).
const GO_VALIDATION_FIXTURES: &[&str] = &[
    "err_workload-spec.yaml",
    "err_pod-spec-names.yaml",
    "err_resource-request-above-limit.yaml",
    "err_service-ports.yaml",
    "err_hpa-spec.yaml",
    "err_network-policy-peer.yaml",
    "err_rbac-rule.yaml",
    "err_pdb-spec.yaml",
    "err_priority-class-value.yaml",
    "err_config-data-keys.yaml",
    "err_pvc-spec.yaml",
    "err_container-probes.yaml",
    "ok_apiserver_accepts.yaml",
];

/// Object by object, the API server refuses exactly the built-in objects of those fixtures
/// that the tool refuses, so each rule is shown to match the server on the cases it was
/// written for, failing and passing. A custom resource's pod template (a JobSet's) is judged
/// by the tool for the pods its controller will create: there the server accepts the object
/// itself, and the test requires that too.
#[test]
fn the_go_validation_rules_agree_with_a_real_api_server_on_their_fixtures() {
    let name = "the_go_validation_rules_agree_with_a_real_api_server_on_their_fixtures";
    let mut cases = Vec::new();
    for fixture in GO_VALIDATION_FIXTURES {
        let path = repo().join("tests/fixtures/validate").join(fixture);
        let text = std::fs::read_to_string(&path).expect("fixture");
        for (index, document) in text.split("\n---\n").enumerate() {
            let object: Value = serde_saphyr::from_str(document)
                .unwrap_or_else(|e| panic!("{fixture}: document {index}: {e}"));
            let id = format!(
                "{fixture}#{index} {}/{}",
                object["kind"].as_str().expect("kind"),
                object["metadata"]["name"].as_str().expect("name")
            );
            cases.push(Case {
                id,
                object,
                mutation: "fixture",
            });
        }
    }
    let Some(server) = ApiServer::start_or_skip(name) else {
        return;
    };
    let scratch = server.scratch();
    server.install_crds();
    let namespaces: BTreeSet<&str> = cases
        .iter()
        .filter_map(|c| c.object["metadata"]["namespace"].as_str())
        .collect();
    for ns in namespaces {
        let out = server.run_kubectl(&["create", "namespace", ns]);
        assert!(
            out.status.success(),
            "namespace {ns}: {}",
            apiserver_support::output_text(&out)
        );
    }
    let dir = scratch.join("fixtures");
    std::fs::create_dir_all(&dir).expect("mkdir fixtures");
    let files: Vec<(PathBuf, &Case)> = cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let path = dir.join(format!("f{i:03}.yaml"));
            std::fs::write(
                &path,
                serde_json::to_string_pretty(&case.object).expect("json"),
            )
            .expect("write case");
            (path, case)
        })
        .collect();
    let out = Command::new(assert_cmd::cargo::cargo_bin("kubectl-aiml"))
        .current_dir(&scratch)
        .env("NO_COLOR", "1")
        .args(["validate", "fixtures", "-o", "json"])
        .output()
        .expect("run kubectl-aiml");
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{}",
        apiserver_support::output_text(&out)
    );
    let findings: Vec<Value> = serde_json::from_slice(&out.stdout).expect("validate -o json");
    let mut tool: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for f in findings.iter().filter(|f| f["severity"] == "error") {
        let file = f["file"].as_str().expect("file");
        tool.entry(file.rsplit('/').next().unwrap_or(file).to_owned())
            .or_default()
            .push(format!(
                "{}: {}",
                f["rule"].as_str().unwrap_or("?"),
                f["message"].as_str().unwrap_or("?")
            ));
    }
    let server_says = server_verdicts(&server, &files, &["apply", "--server-side"]);
    let crd_groups: BTreeSet<String> = apiserver_support::crds()
        .iter()
        .filter_map(|crd| crd["spec"]["group"].as_str().map(str::to_owned))
        .collect();
    let mut report = Vec::new();
    let (mut refused, mut accepted) = (0, 0);
    for ((path, case), server) in files.iter().zip(&server_says) {
        let file = path
            .file_name()
            .expect("file")
            .to_string_lossy()
            .into_owned();
        let tool_says = tool.get(&file);
        let custom = case.object["apiVersion"]
            .as_str()
            .and_then(|v| v.rsplit_once('/'))
            .is_some_and(|(group, _)| crd_groups.contains(group));
        let agrees = if custom {
            server.is_none()
        } else {
            server.is_some() == tool_says.is_some()
        };
        if agrees {
            if server.is_some() {
                refused += 1
            } else {
                accepted += 1
            }
        } else {
            report.push(format!(
                "{}{}\n  server: {}\n  tool: {}",
                case.id,
                if custom {
                    " (a custom resource: the server must accept it)"
                } else {
                    ""
                },
                server
                    .as_deref()
                    .unwrap_or("accepted")
                    .replace('\n', "\n    "),
                tool_says.map_or("accepted".to_owned(), |t| t.join("\n    ")),
            ));
        }
    }
    eprintln!(
        "{} fixture objects: {refused} refused by both, {accepted} accepted by the server, {} disagreements",
        cases.len(),
        report.len()
    );
    assert!(
        refused > 0 && accepted > 0,
        "the fixtures show both verdicts"
    );
    assert!(report.is_empty(), "{}", report.join("\n"));
}

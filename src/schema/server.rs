//! Where the vendored schemas, read as plain JSON Schema, judge differently from the API
//! server, and the changes (made once, when a schema is loaded) that make them agree.
//!
//! Each was found by `tests/differential.rs`, which compares verdicts with a real
//! kube-apiserver on mutated objects (a server-side apply, as Config Sync does):
//!
//! - Built-in kinds (the kubernetes-json-schema "strict" conversion makes every field
//!   nullable, `[T, "null"]`):
//!   - `int-or-string` and `Quantity` are a `oneOf` of two nullable types, so `null` matched
//!     both and was refused; the server reads `null` as unset. They become an `anyOf`.
//!   - `null` for a required field is the field left out (the server decodes it to the zero
//!     value and its validation says `Required value`), so required fields lose their `null`.
//!   - A `null` item of a list with keys (`x-kubernetes-list-type: map`, such as `containers`)
//!     is refused by server-side apply ("associative list with keys may not have a null
//!     element"); such items must be objects.
//!   - `format: int32` is a range: the server cuts a larger number to 32 bits (4294967296
//!     becomes 0) before its validation sees it, so it becomes bounds.
//! - Custom resources (k8s.io/apiextensions-apiserver, pkg/apiserver/schema/defaulting):
//!   `null` becomes the field's `default` when it has one, on every path. Without a default,
//!   a create and `kubectl apply` (which sends creates and merge patches) drop the `null` of a
//!   non-nullable field before validation (`PruneNonNullableNullsWithoutDefaults`); a
//!   server-side apply does not, and refuses it. The tool accepts such a `null` (it is how
//!   published manifests are applied) and warns that a server-side apply (Config Sync)
//!   refuses it. A required field's `null`, dropped, is missing: refused either way.
//! - Defaults before validation: a CRD schema's `default` fills a missing required field,
//!   and so do the API server's defaulting of built-in kinds and the mutating webhooks of
//!   the controllers the tool knows ([`BUILTIN_DEFAULTS`], [`WEBHOOK_DEFAULTS`], each with
//!   its source): such fields are not required.

use serde_json::{Map, Value};

use crate::yaml::pointer::{Step, steps};
use crate::yaml::{Node, Value as YamlValue};

/// Adjusts the built-in definitions (`$defs` of `_definitions.json`).
pub(crate) fn builtin_definitions(doc: &mut Value) {
    let Some(defs) = doc.get_mut("$defs").and_then(Value::as_object_mut) else {
        return;
    };
    // The non-null types of each definition, for required fields that are `$ref`s.
    let types: Map<String, Value> = defs
        .iter()
        .filter_map(|(name, def)| Some((name.clone(), non_null(def.get("type")?)?)))
        .collect();
    for def in defs.values_mut() {
        builtin_schema(def, &types);
    }
    for (name, field) in BUILTIN_DEFAULTS {
        if let Some(Value::Object(def)) = defs.get_mut(*name) {
            drop_required(def, |f| f == *field);
        }
    }
}

/// Required fields (in the published schemas) of built-in kinds that the API server does not
/// require: its defaulting fills them before it validates, or its Go validation never asked
/// for them: (definition, field).
const BUILTIN_DEFAULTS: &[(&str, &str)] = &[
    // kubernetes pkg/apis/batch/v1/defaults.go, `SetDefaults_Job`: a pod failure policy's
    // `onPodConditions` pattern without `status` gets `True` (the published schema requires
    // it up to 1.34; `tests/server_object.rs` checks a real server defaults it).
    (
        "io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern",
        "status",
    ),
    // kubernetes pkg/apis/rbac/v1/defaults.go, `SetDefaults_RoleBinding` and
    // `SetDefaults_ClusterRoleBinding`: an empty `roleRef.apiGroup` becomes
    // `rbac.authorization.k8s.io`.
    ("io.k8s.api.rbac.v1.RoleRef", "apiGroup"),
    // kubernetes pkg/apis/apps/validation/validation.go, `ValidateStatefulSetSpec`: the
    // service name is checked only when set. The API types mark it optional from 1.33
    // (k8s.io/api apps/v1 types.go); the 1.32 schema still requires it.
    ("io.k8s.api.apps.v1.StatefulSetSpec", "serviceName"),
];

/// The type list without `null`, `None` when nothing would be left.
fn non_null(types: &Value) -> Option<Value> {
    match types {
        Value::Array(list) => {
            let kept: Vec<Value> = list.iter().filter(|t| *t != "null").cloned().collect();
            match kept.len() {
                0 => None,
                1 => kept.into_iter().next(),
                _ => Some(Value::Array(kept)),
            }
        }
        Value::String(t) if t != "null" => Some(types.clone()),
        _ => None,
    }
}

/// The definition a local `$ref` (`#/$defs/NAME`) names.
fn ref_name(schema: &Map<String, Value>) -> Option<&str> {
    schema.get("$ref")?.as_str()?.strip_prefix("#/$defs/")
}

fn builtin_schema(schema: &mut Value, types: &Map<String, Value>) {
    let Value::Object(map) = schema else {
        return;
    };
    // `oneOf: [[string, null], [integer, null]]`: `null` matches both branches.
    if let Some(Value::Array(branches)) = map.get("oneOf")
        && branches.iter().all(|b| {
            b["type"]
                .as_array()
                .is_some_and(|t| t.iter().any(|t| t == "null"))
        })
        && let Some(branches) = map.remove("oneOf")
    {
        map.insert("anyOf".to_owned(), branches);
    }
    if map.get("format").and_then(Value::as_str) == Some("int32") {
        map.entry("minimum").or_insert(i32::MIN.into());
        map.entry("maximum").or_insert(i32::MAX.into());
    }
    if map.get("x-kubernetes-list-type").and_then(Value::as_str) == Some("map")
        && let Some(items) = map.get_mut("items")
        && let Some(item) = items.as_object_mut()
        && !item.contains_key("type")
    {
        item.insert("type".to_owned(), "object".into());
    }
    let required = required_names(map);
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for name in &required {
            let Some(Value::Object(prop)) = props.get_mut(name) else {
                continue;
            };
            let kept = match prop.get("type") {
                Some(t) => non_null(t),
                None => ref_name(prop).and_then(|r| types.get(r).cloned()),
            };
            if let Some(kept) = kept {
                prop.insert("type".to_owned(), kept);
            }
        }
    }
    for (key, child) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "$defs" => {
                if let Value::Object(children) = child {
                    for c in children.values_mut() {
                        builtin_schema(c, types);
                    }
                }
            }
            "items" | "additionalProperties" | "not" => builtin_schema(child, types),
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(list) = child {
                    for c in list {
                        builtin_schema(c, types);
                    }
                }
            }
            _ => {}
        }
    }
}

/// Marks the schema of a custom resource field whose `null` the API server drops: optional,
/// not nullable and without a default. The validator accepts `null` there;
/// [`dropped_nulls`] finds such nulls for a warning.
pub(crate) const DROPPED_NULL: &str = "x-aiml-null-dropped";

/// Custom resource fields the kind's mutating webhook fills when they are missing, before the
/// API server validates the object, so the schema's `required` does not hold for them:
/// (embedded CRD file, JSON pointer of the object schema, field).
const WEBHOOK_DEFAULTS: &[(&str, &str, &str)] = &[
    // JobSet v0.12.0, pkg/webhooks/jobset_webhook.go, `Default`: a failure policy rule without
    // a name is named `failurePolicyRule<index>` (`defaultRuleNameFmt`).
    (
        "jobset.x-k8s.io/jobset_v1alpha2.json",
        "/properties/spec/properties/failurePolicy/properties/rules/items",
        "name",
    ),
];

/// Adjusts the schema of the embedded CRD file `file` (draft-07, converted from the CRD).
pub(crate) fn crd_file_schema(file: &str, schema: &mut Value) {
    crd_schema(schema);
    for (_, pointer, field) in WEBHOOK_DEFAULTS.iter().filter(|(f, ..)| *f == file) {
        if let Some(Value::Object(map)) = schema.pointer_mut(pointer) {
            drop_required(map, |name| name == *field);
        }
    }
}

/// Adjusts a custom resource's schema (draft-07, converted from the CRD), as the API server
/// treats the object before validating it (k8s.io/apiextensions-apiserver,
/// pkg/apiserver/schema/defaulting: `PruneNonNullableNullsWithoutDefaults`, then `Default`):
///
/// - `null` of a field with a `default` becomes the default, so it is accepted;
/// - `null` of an optional field or a map value that is neither nullable nor defaulted is
///   dropped: marked [`DROPPED_NULL`] (the checker validates the object [`without`] them). A
///   required field's `null` is dropped too, and then missing: it stays refused. List items
///   are never dropped;
/// - a missing required field with a `default` is defaulted, so it is no longer required.
pub(crate) fn crd_schema(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if map.contains_key("default") {
        accept_null(map);
    }
    let defaulted: Vec<String> = map
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| p.get("default").is_some())
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    drop_required(map, |name| defaulted.iter().any(|d| d == name));
    let required = required_names(map);
    let mark = |field: &mut Map<String, Value>| {
        if !field.contains_key("default") && accept_null(field) {
            field.insert(DROPPED_NULL.to_owned(), Value::Bool(true));
        }
    };
    if let Some(Value::Object(props)) = map.get_mut("properties") {
        for (name, prop) in props.iter_mut() {
            if let Value::Object(prop) = prop
                && !required.contains(name)
            {
                mark(prop);
            }
        }
    }
    if let Some(Value::Object(values)) = map.get_mut("additionalProperties") {
        mark(values);
    }
    for (key, child) in map.iter_mut() {
        match key.as_str() {
            "properties" | "patternProperties" | "definitions" => {
                if let Value::Object(children) = child {
                    children.values_mut().for_each(crd_schema);
                }
            }
            "items" | "additionalProperties" | "not" => crd_schema(child),
            "anyOf" | "oneOf" | "allOf" => {
                if let Value::Array(list) = child {
                    list.iter_mut().for_each(crd_schema);
                }
            }
            _ => {}
        }
    }
}

fn required_names(map: &Map<String, Value>) -> Vec<String> {
    map.get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// Removes the names `gone` accepts from `required` (and `required` itself when empty).
fn drop_required(map: &mut Map<String, Value>, gone: impl Fn(&str) -> bool) {
    if let Some(Value::Array(required)) = map.get_mut("required") {
        required.retain(|name| !name.as_str().is_some_and(&gone));
        if required.is_empty() {
            map.remove("required");
        }
    }
}

/// Makes a field's schema accept `null`; `false` when it already did (nullable, or no type).
fn accept_null(map: &mut Map<String, Value>) -> bool {
    let changed = match map.get_mut("type") {
        Some(t @ Value::String(_)) if t != "null" => {
            *t = Value::Array(vec![t.take(), "null".into()]);
            true
        }
        Some(Value::Array(list)) if !list.iter().any(|x| x == "null") => {
            list.push("null".into());
            true
        }
        Some(_) => false,
        // int-or-string: `anyOf` integer or string.
        None => match map.get_mut("anyOf") {
            Some(Value::Array(branches)) if map_has_int_or_string(branches) => {
                branches.push(serde_json::json!({"type": "null"}));
                true
            }
            _ => false,
        },
    };
    if changed
        && let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    changed
}

/// Whether `anyOf` branches are typed ones without `null` (int-or-string), not structural
/// constraints (`required` alternatives), which a `null` passes anyway.
fn map_has_int_or_string(branches: &[Value]) -> bool {
    !branches.is_empty()
        && branches
            .iter()
            .all(|b| b.get("type").is_some_and(|t| t != "null"))
}

/// The `null`s of `node` (a custom resource, checked against `schema` as [`crd_schema`] left
/// it) that the API server drops: `(JSON pointer, node)` in document order.
pub(crate) fn dropped_nulls<'n>(
    schema: &Value,
    node: &'n Node,
    pointer: &mut String,
    out: &mut Vec<(String, &'n Node)>,
) {
    match &node.value {
        YamlValue::Map(entries) => {
            for (key, child) in entries {
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.text.replace('~', "~0").replace('/', "~1"));
                let field = schema
                    .get("properties")
                    .and_then(|p| p.get(&key.text))
                    .or_else(|| schema.get("additionalProperties").filter(|v| v.is_object()));
                if let Some(field) = field {
                    if matches!(child.value, YamlValue::Null) {
                        if field.get(DROPPED_NULL) == Some(&Value::Bool(true)) {
                            out.push((pointer.clone(), child));
                        }
                    } else {
                        dropped_nulls(field, child, pointer, out);
                    }
                }
                pointer.truncate(len);
            }
        }
        YamlValue::Seq(items) => {
            if let Some(item) = schema.get("items") {
                for (i, child) in items.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push('/');
                    pointer.push_str(&i.to_string());
                    dropped_nulls(item, child, pointer, out);
                    pointer.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// A copy of `node` without the entries at `pointers` (from [`dropped_nulls`]): the object
/// the API server validates. Spans are kept, so findings still point into the file.
pub(crate) fn without(node: &Node, pointers: &[String]) -> Node {
    let mut copy = node.clone();
    for pointer in pointers {
        remove_null(&mut copy, &steps(pointer));
    }
    copy
}

fn remove_null(node: &mut Node, path: &[Step]) {
    let key = |step: &Step| match step {
        Step::Key(key) => key.clone(),
        Step::Index(i) => i.to_string(), // a key of digits
    };
    match (&mut node.value, path) {
        (YamlValue::Map(entries), [last]) => {
            let last = key(last);
            entries.retain(|(k, v)| k.text != last || !matches!(v.value, YamlValue::Null));
        }
        (YamlValue::Map(entries), [step, rest @ ..]) => {
            let step = key(step);
            if let Some((_, child)) = entries.iter_mut().find(|(k, _)| k.text == step) {
                remove_null(child, rest);
            }
        }
        (YamlValue::Seq(items), [Step::Index(i), rest @ ..]) => {
            if let Some(child) = items.get_mut(*i) {
                remove_null(child, rest);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_nulls_bounds_and_keyed_lists_read_as_the_server_does() {
        let mut doc = json!({"$defs": {
            "IntOrString": {"oneOf": [{"type": ["string", "null"]}, {"type": ["integer", "null"]}]},
            "Selector": {"type": ["object", "null"], "properties": {}},
            "Spec": {
                "type": ["object", "null"],
                "required": ["selector", "replicas"],
                "properties": {
                    "selector": {"$ref": "#/$defs/Selector"},
                    "replicas": {"type": ["integer", "null"], "format": "int32"},
                    "ports": {"type": ["array", "null"], "x-kubernetes-list-type": "map",
                              "items": {"$ref": "#/$defs/Selector"}},
                    "port": {"$ref": "#/$defs/IntOrString"}
                }
            }
        }});
        builtin_definitions(&mut doc);
        let defs = &doc["$defs"];
        assert!(defs["IntOrString"].get("oneOf").is_none());
        assert_eq!(
            defs["IntOrString"]["anyOf"][1]["type"],
            json!(["integer", "null"])
        );
        let props = &defs["Spec"]["properties"];
        assert_eq!(props["selector"]["type"], "object");
        assert_eq!(props["replicas"]["type"], "integer");
        assert_eq!(props["replicas"]["maximum"], i32::MAX);
        assert_eq!(props["ports"]["items"]["type"], "object");
        assert!(
            props["port"].get("type").is_none(),
            "optional fields keep their null"
        );
        assert_eq!(defs["Selector"]["type"], json!(["object", "null"]));
    }

    #[test]
    fn crd_fields_with_a_default_accept_null() {
        let mut schema = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "mode": {"type": "string", "default": "git", "enum": ["git", "oci"]},
            "name": {"type": "string"},
            "list": {"type": "array", "items": {"type": "object", "properties": {
                "n": {"type": "integer", "default": 1}}}}
        }}}});
        crd_schema(&mut schema);
        let spec = &schema["properties"]["spec"]["properties"];
        assert_eq!(spec["mode"]["type"], json!(["string", "null"]));
        assert_eq!(spec["mode"]["enum"], json!(["git", "oci", null]));
        assert!(
            spec["mode"].get(DROPPED_NULL).is_none(),
            "defaulted, not dropped"
        );
        assert_eq!(
            spec["list"]["items"]["properties"]["n"]["type"],
            json!(["integer", "null"])
        );
    }

    #[test]
    fn crd_nulls_without_a_default_are_dropped_unless_required() {
        let mut schema = json!({"type": "object", "required": ["spec"], "properties": {
            "spec": {"type": "object", "required": ["name", "size", "mode"], "properties": {
                "name": {"type": "string"},
                "size": {"type": "integer", "default": 1},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "note": {"type": "string", "enum": ["x"]},
                "port": {"anyOf": [{"type": "integer"}, {"type": "string"}],
                         "x-kubernetes-int-or-string": true},
                "maybe": {"type": ["string", "null"]},
                "any": {"x-kubernetes-preserve-unknown-fields": true},
                "map": {"type": "object", "additionalProperties": {"type": "string"}},
                "list": {"type": "array", "items": {"type": "string"}}
            }}
        }});
        crd_schema(&mut schema);
        assert!(
            schema["properties"]["spec"].get(DROPPED_NULL).is_none(),
            "required"
        );
        let spec = &schema["properties"]["spec"];
        assert_eq!(
            spec["required"],
            json!(["name", "mode"]),
            "`size` is defaulted"
        );
        let props = &spec["properties"];
        assert_eq!(props["name"]["type"], "string");
        assert_eq!(props["note"]["type"], json!(["string", "null"]));
        assert_eq!(props["note"]["enum"], json!(["x", null]));
        assert_eq!(props["note"][DROPPED_NULL], true);
        assert_eq!(props["port"]["anyOf"][2], json!({"type": "null"}));
        assert_eq!(props["port"][DROPPED_NULL], true);
        for kept in ["maybe", "any"] {
            assert!(
                props[kept].get(DROPPED_NULL).is_none(),
                "{kept} takes null as it is"
            );
        }
        assert_eq!(props["map"]["additionalProperties"][DROPPED_NULL], true);
        assert_eq!(
            props["list"]["items"]["type"], "string",
            "list items are not dropped"
        );

        let docs = crate::yaml::parse_documents(
            "spec:\n  name: x\n  note: null\n  maybe: null\n  map: {a: null}\n  port: ~\n  list: [null]\n",
        )
        .unwrap();
        let mut found = Vec::new();
        dropped_nulls(&schema, &docs[0], &mut String::new(), &mut found);
        let pointers: Vec<&str> = found.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(pointers, ["/spec/note", "/spec/map/a", "/spec/port"]);
        let pointers: Vec<String> = found.into_iter().map(|(p, _)| p).collect();
        let pruned = without(&docs[0], &pointers);
        let spec = pruned.get("spec").unwrap();
        assert!(spec.get("note").is_none() && spec.get("port").is_none());
        assert_eq!(spec.get("map").and_then(|m| m.get("a")), None);
        assert!(spec.get("maybe").is_some() && spec.get("name").is_some());
    }

    #[test]
    fn webhook_and_builtin_defaults_lift_required() {
        let mut schema = json!({"type": "object", "properties": {"spec": {"type": "object",
            "properties": {"failurePolicy": {"type": "object", "properties": {"rules": {
                "type": "array", "items": {"type": "object", "required": ["action", "name"],
                "properties": {"action": {"type": "string"}, "name": {"type": "string"}}}}}}}}}});
        crd_file_schema("jobset.x-k8s.io/jobset_v1alpha2.json", &mut schema);
        let rule = &schema["properties"]["spec"]["properties"]["failurePolicy"]["properties"]["rules"]
            ["items"];
        assert_eq!(rule["required"], json!(["action"]));

        let pattern = "io.k8s.api.batch.v1.PodFailurePolicyOnPodConditionsPattern";
        let mut doc = json!({"$defs": {pattern: {"type": ["object", "null"],
            "required": ["type", "status"],
            "properties": {"type": {"type": "string"}, "status": {"type": "string"}}}}});
        builtin_definitions(&mut doc);
        assert_eq!(doc["$defs"][pattern]["required"], json!(["type"]));
    }
}

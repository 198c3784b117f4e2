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
//! - Custom resources: a server-side apply replaces `null` by the field's `default` when it
//!   has one (and refuses it otherwise, as the schema says), so a field with a default
//!   accepts `null`. (A create, `kubectl create`, prunes every `null` instead; the tool judges
//!   as apply does.)

use serde_json::{Map, Value};

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
}

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
    let required: Vec<String> = map
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
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

/// Adjusts a custom resource's schema (draft-07, converted from the CRD).
pub(crate) fn crd_schema(schema: &mut Value) {
    let Value::Object(map) = schema else {
        return;
    };
    if map.contains_key("default") {
        match map.get_mut("type") {
            Some(t @ Value::String(_)) if t != "null" => {
                *t = Value::Array(vec![t.take(), "null".into()]);
            }
            Some(Value::Array(list)) if !list.iter().any(|x| x == "null") => {
                list.push("null".into());
            }
            _ => {}
        }
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
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
        assert_eq!(spec["name"]["type"], "string");
        assert_eq!(
            spec["list"]["items"]["properties"]["n"]["type"],
            json!(["integer", "null"])
        );
    }
}

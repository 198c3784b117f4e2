use serde_json::json;

use super::library::parse_request_uri;
use super::*;
use crate::yaml;

fn node(text: &str) -> Node {
    yaml::parse_documents(text).expect("yaml").remove(0)
}

fn outcomes(schema: &Json, text: &str) -> Vec<String> {
    let node = node(text);
    let mut out = Vec::new();
    check(schema, &node, &mut out);
    out.into_iter()
        .map(|o| match o {
            Outcome::Failed {
                pointer, message, ..
            } => format!("failed {pointer}: {message}"),
            Outcome::NotEvaluated { pointer, why, .. } => format!("skipped {pointer}: {why}"),
        })
        .collect()
}

fn rule(rule: &str, message: &str) -> Json {
    json!({"rule": rule, "message": message})
}

#[test]
fn rules_bind_self_at_their_node_with_defaults_and_escaped_names() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            rule("self.mode == 'Never' || has(self.__namespace__)", "namespace needed"),
            rule("self.items.all(i, i.count <= self.max)", "too many"),
        ],
        "properties": {
            "mode": {"type": "string", "default": "Never"},
            "namespace": {"type": "string"},
            "max": {"type": "number"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"count": {"type": "integer"}}}}
        }
    }}});
    assert!(outcomes(&schema, "spec: {max: 2, items: [{count: 1}]}").is_empty());
    assert_eq!(
        outcomes(&schema, "spec: {mode: Always, max: 2, items: [{count: 3}]}"),
        ["failed /spec: namespace needed", "failed /spec: too many"]
    );
}

#[test]
fn a_missing_key_is_refused_and_an_unknown_function_is_reported_not_judged() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [
            {"rule": "self.limit > 0"},
            rule("quantity(self.size).isGreaterThan(quantity('1Gi'))", "too small"),
            rule("self == oldSelf", "immutable"),
        ],
        "properties": {"limit": {"type": "integer"}, "size": {"type": "string"}}
    }}});
    assert_eq!(
        outcomes(&schema, "spec: {size: 2Gi}"),
        [
            "failed /spec: no such key: limit evaluating rule: self.limit > 0",
            "skipped /spec: it calls `quantity`, which the tool does not evaluate",
        ]
    );
    assert_eq!(
        outcomes(&schema, "spec: {limit: 0, size: 2Gi}")[0],
        "failed /spec: failed rule: self.limit > 0"
    );
}

#[test]
fn message_expressions_and_field_paths_are_the_servers() {
    let schema = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-validations": [{
            "rule": "self.min <= self.max",
            "messageExpression": "'min ' + string(self.min) + ' is above max'",
            "fieldPath": ".min",
            "reason": "FieldValueInvalid"
        }],
        "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}}
    }}});
    assert_eq!(
        outcomes(&schema, "spec: {min: 3, max: 2}"),
        ["failed /spec/min: min 3 is above max"]
    );
}

#[test]
fn a_costly_rule_is_reported_and_not_run() {
    let schema = json!({"type": "object", "properties": {"list": {
        "type": "array", "items": {"type": "integer"},
        "x-kubernetes-validations": [rule(
            "self.all(a, self.all(b, self.all(c, self.all(d, a >= 0 && b >= 0 && c >= 0 && d >= 0))))", "negative")]
    }}});
    let list: Vec<String> = (0..200).map(|i| i.to_string()).collect();
    let text = format!("list: [{}]", list.join(", "));
    let found = outcomes(&schema, &text);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].starts_with("skipped /list: its cost on this value may reach"),
        "{found:?}"
    );
    // Small enough, it runs.
    assert!(outcomes(&schema, "list: [3, 2, 1]").is_empty());
    assert_eq!(
        outcomes(&schema, "list: [1, -1]"),
        ["failed /list: negative"]
    );
}

#[test]
fn names_escape_as_kubernetes_escapes_them() {
    assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
    assert_eq!(
        escape("a.b-c/d").as_deref(),
        Some("a__dot__b__dash__c__slash__d")
    );
    assert_eq!(escape("x__y").as_deref(), Some("x__underscores__y"));
    assert_eq!(escape("plain_name").as_deref(), Some("plain_name"));
    assert_eq!(escape("1st"), None);
    assert_eq!(escape("a b"), None);
}

#[test]
fn urls_parse_as_gos_parse_request_uri() {
    let url = parse_request_uri("https://example.com:8443/a%20b?q=1").expect("valid");
    assert_eq!(
        (url.scheme, url.host, url.hostname, url.port, url.path),
        ("https", "example.com:8443", "example.com", "8443", "/a%20b")
    );
    assert_eq!(
        parse_request_uri("[::1]:80").map(|u| u.scheme),
        Err("invalid URI for request".to_owned())
    );
    assert!(parse_request_uri("/just/a/path").is_ok());
    assert!(parse_request_uri("mailto:x@example.com").is_ok());
    assert!(parse_request_uri("relative/path").is_err());
    assert!(parse_request_uri("http://host:port/").is_err());
    assert!(parse_request_uri("http://ho st/").is_err());
    assert!(parse_request_uri("http://h/%zz").is_err());
    assert!(parse_request_uri("://x").is_err());
}

/// Every rule of the vendored CRDs parses, and calls only functions the tool evaluates: the
/// "not evaluated" warning is for CRDs from `--schemas` only.
#[test]
fn every_vendored_rule_is_evaluable() {
    // The standard library, the strings extension and `library`'s Kubernetes functions,
    // as far as the vendored rules use them.
    const EVALUATED: &[&str] = &[
        "has",
        "size",
        "all",
        "exists",
        "exists_one",
        "filter",
        "map",
        "matches",
        "contains",
        "startsWith",
        "endsWith",
        "split",
        "duration",
        "dyn",
        "isURL",
        "url",
        "getScheme",
        "int",
        "string",
        "lowerAscii",
        "upperAscii",
        "trim",
        "join",
        "substring",
        "indexOf",
    ];
    let mut rules = Vec::new();
    for name in crate::schema::embedded::names() {
        if !name.starts_with("crds/") || name.ends_with("index.json") {
            continue;
        }
        let doc = crate::schema::embedded::json(name).expect("file");
        collect(&doc, &mut rules);
    }
    assert!(rules.len() > 400, "found {} rules", rules.len());
    for text in &rules {
        let program = library::env()
            .compile(text)
            .unwrap_or_else(|e| panic!("{text}: {e}"));
        let references = program.references();
        for function in references.functions() {
            let operator =
                function.starts_with('_') || function.starts_with('@') || function == "!_";
            assert!(
                operator || EVALUATED.contains(&function),
                "`{function}` of rule `{text}` is not evaluated"
            );
        }
    }
}

fn collect(value: &Json, out: &mut Vec<String>) {
    match value {
        Json::Object(map) => {
            if let Some(Json::Array(rules)) = map.get("x-kubernetes-validations") {
                out.extend(
                    rules
                        .iter()
                        .filter_map(|r| r.get("rule")?.as_str().map(str::to_owned)),
                );
            }
            map.values().for_each(|v| collect(v, out));
        }
        Json::Array(items) => items.iter().for_each(|v| collect(v, out)),
        _ => {}
    }
}

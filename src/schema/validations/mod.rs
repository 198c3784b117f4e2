//! CEL validation rules of custom resources (`x-kubernetes-validations`), evaluated as the
//! apiextensions-apiserver evaluates them on a create.
//!
//! Each rule of a schema node is evaluated for every value at that node with `self` bound to
//! it (k8s.io/apiextensions-apiserver, pkg/apiserver/schema/cel/validation.go): objects with
//! `properties` are CEL objects whose field names are escaped (`namespace` is
//! `__namespace__`, [`escape`]), maps (`additionalProperties`) keep their keys, a `number` is
//! a double, and a missing field with a schema `default` is there (the server defaults
//! before it validates). At the root, `metadata` holds only `name` and `generateName`, as on
//! the server. A rule that reads `oldSelf` is a transition rule: it runs only on an update,
//! so it is skipped here (the tool sees what a create sends).
//!
//! A rule that is false fails with its `message`, its `messageExpression` (when that
//! evaluates to a non-empty string), or "failed rule: RULE", at `fieldPath` when it names
//! one, else at the node. A rule whose evaluation errs on the data (a missing key, an index
//! out of range) is refused by the server too, and fails the same way.
//!
//! What the tool cannot judge is never a false alarm and never silent: a rule the parser
//! does not take, or one that calls a function this evaluator lacks (see [`library`]), or
//! whose types this binding cannot match, is a warning naming the rule and the kind, and the
//! object is not refused for it. Cost is bounded before evaluation ([`cost`]): a rule whose
//! bound on this object exceeds the API server's per-expression limit is a warning too,
//! never a hang.

mod cost;
pub(crate) mod library;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cel::{Context, ExecutionError, Program, Value as Cel};
use serde_json::Value as Json;

use crate::yaml::{Node, Value as Yaml};

/// One rule's verdict on one value that the tool reports.
pub(crate) enum Outcome<'n> {
    /// The rule does not hold (or its evaluation erred on the data): the API server refuses.
    Failed {
        /// Where: the node of `fieldPath`, else of the rule's schema.
        node: &'n Node,
        /// JSON pointer of `node` in the object.
        pointer: String,
        /// The rule's text.
        rule: String,
        /// What the API server says.
        message: String,
        /// `reason`, when the rule gives one (`FieldValueForbidden`, …).
        reason: Option<String>,
    },
    /// The tool cannot evaluate the rule here; the object is not refused for it.
    NotEvaluated {
        /// The node of the rule's schema.
        node: &'n Node,
        /// JSON pointer of `node` in the object.
        pointer: String,
        /// The rule's text.
        rule: String,
        /// Why, in a phrase.
        why: String,
    },
}

/// Evaluates every rule of `schema` (a custom resource's root schema, as `server` adjusted
/// it) on `node`, the object as the API server validates it (its dropped nulls removed).
pub(crate) fn check<'n>(schema: &Json, node: &'n Node, out: &mut Vec<Outcome<'n>>) {
    walk(schema, node, &mut String::new(), true, out);
}

fn walk<'n>(
    schema: &Json,
    node: &'n Node,
    pointer: &mut String,
    root: bool,
    out: &mut Vec<Outcome<'n>>,
) {
    if matches!(node.value, Yaml::Null) {
        return; // a null is absent: the server validates no rule of an absent value
    }
    if let Some(Json::Array(rules)) = schema.get("x-kubernetes-validations") {
        let value = bind(schema, node, root);
        for rule in rules {
            evaluate(rule, &value, node, pointer, out);
        }
    }
    match &node.value {
        Yaml::Map(entries) => {
            let properties = schema.get("properties");
            let values = schema.get("additionalProperties").filter(|v| v.is_object());
            for (key, child) in entries {
                if root && key.text == "metadata" {
                    continue; // ObjectMeta: no rules of the CRD apply inside it
                }
                let Some(child_schema) = properties.and_then(|p| p.get(&key.text)).or(values)
                else {
                    continue;
                };
                let len = pointer.len();
                pointer.push('/');
                pointer.push_str(&key.text.replace('~', "~0").replace('/', "~1"));
                walk(child_schema, child, pointer, false, out);
                pointer.truncate(len);
            }
        }
        Yaml::Seq(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, child) in items.iter().enumerate() {
                    let len = pointer.len();
                    pointer.push_str(&format!("/{i}"));
                    walk(item_schema, child, pointer, false, out);
                    pointer.truncate(len);
                }
            }
        }
        _ => {}
    }
}

/// A compiled rule, or why it cannot be.
type Compiled = Arc<Result<Program, String>>;

/// Rules are compiled once per run: the same CRD's rules apply to every object of its kind.
fn compiled(rule: &str) -> Compiled {
    static CACHE: OnceLock<Mutex<HashMap<String, Compiled>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(found) = cache.lock().ok().and_then(|c| c.get(rule).cloned()) {
        return found;
    }
    let program = Arc::new(library::env().compile(rule).map_err(|e| {
        // The parser's message spans lines with a caret; its first line says what.
        e.to_string().lines().next().unwrap_or_default().to_owned()
    }));
    if let Ok(mut cache) = cache.lock() {
        cache.insert(rule.to_owned(), Arc::clone(&program));
    }
    program
}

fn evaluate<'n>(
    rule: &Json,
    value: &Cel,
    node: &'n Node,
    pointer: &str,
    out: &mut Vec<Outcome<'n>>,
) {
    let Some(text) = rule.get("rule").and_then(Json::as_str) else {
        return;
    };
    let not_evaluated = |why: String| Outcome::NotEvaluated {
        node,
        pointer: pointer.to_owned(),
        rule: text.to_owned(),
        why,
    };
    let program = compiled(text);
    let program = match program.as_ref() {
        Ok(program) => program,
        Err(why) => return out.push(not_evaluated(format!("its syntax is not read: {why}"))),
    };
    let references = program.references();
    if references.has_variable("oldSelf") {
        return; // a transition rule: checked on updates only, never on a create
    }
    if let Err(why) = cost::within_budget(program, value) {
        return out.push(not_evaluated(why));
    }
    let context = library::context();
    let mut scope = context.new_inner_scope();
    scope.add_variable_from_value("self", value.clone());
    let failure = match program.execute(&scope) {
        Ok(Cel::Bool(true)) => return,
        Ok(Cel::Bool(false)) => None,
        Ok(other) => {
            return out.push(not_evaluated(format!(
                "it gives {} where a bool is expected",
                other.type_of()
            )));
        }
        Err(error) => match classify(&error, program) {
            Verdict::DataError(why) => Some(why),
            Verdict::Unsupported(why) => return out.push(not_evaluated(why)),
        },
    };
    let message = match failure {
        // The server's words for a rule that errs on the data.
        Some(why) => format!("{why} evaluating rule: {text}"),
        None => message(rule, &scope, text),
    };
    let (node, pointer) = match rule.get("fieldPath").and_then(Json::as_str) {
        Some(path) => field_path(node, pointer, path),
        None => (node, pointer.to_owned()),
    };
    out.push(Outcome::Failed {
        node,
        pointer,
        rule: text.to_owned(),
        message,
        reason: rule.get("reason").and_then(Json::as_str).map(str::to_owned),
    });
}

enum Verdict {
    /// The server errs too, and refuses the object.
    DataError(String),
    /// The tool cannot tell.
    Unsupported(String),
}

/// An evaluation error: one the data causes (the server errs the same way) or one of the
/// tool's evaluator (a function it lacks, types it binds otherwise than the server).
fn classify(error: &ExecutionError, program: &Program) -> Verdict {
    match error {
        ExecutionError::NoSuchKey(key) => Verdict::DataError(format!("no such key: {key}")),
        ExecutionError::IndexOutOfBounds(_) | ExecutionError::DivisionByZero(_) => {
            Verdict::DataError(error.to_string())
        }
        ExecutionError::FunctionError { function, message }
            if library::K8S_FUNCTIONS.contains(&function.as_str()) =>
        {
            Verdict::DataError(format!("{function}: {message}"))
        }
        ExecutionError::UndeclaredReference(name)
            if program.references().has_function(name.as_str()) =>
        {
            Verdict::Unsupported(format!(
                "it calls `{name}`, which the tool does not evaluate"
            ))
        }
        other => Verdict::Unsupported(format!("the tool's evaluator says: {other}")),
    }
}

/// The message of a failed rule, as the server words it: `messageExpression` when it
/// evaluates to a non-empty string, else `message`, else "failed rule: RULE".
fn message(rule: &Json, scope: &Context<'_, '_>, text: &str) -> String {
    if let Some(expression) = rule.get("messageExpression").and_then(Json::as_str)
        && let Ok(program) = compiled(expression).as_ref()
        && let Ok(Cel::String(s)) = program.execute(scope)
        && !s.trim().is_empty()
    {
        return s.as_str().to_owned();
    }
    match rule.get("message").and_then(Json::as_str) {
        Some(message) if !message.is_empty() => message.to_owned(),
        _ => format!("failed rule: {text}"),
    }
}

/// The node a rule's `fieldPath` (`.spec.x`, `.list[0]`, `.map['key']`, relative to `self`)
/// names, when it is there; else the rule's own node.
fn field_path<'n>(node: &'n Node, pointer: &str, path: &str) -> (&'n Node, String) {
    let mut at = node;
    let mut out = pointer.to_owned();
    let mut rest = path;
    while !rest.is_empty() {
        let (step, tail) = if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            (r[..end].to_owned(), &r[end..])
        } else if let Some(r) = rest.strip_prefix("['") {
            let Some(end) = r.find("']") else { break };
            (r[..end].to_owned(), &r[end + 2..])
        } else if let Some(r) = rest.strip_prefix('[') {
            let Some(end) = r.find(']') else { break };
            (r[..end].to_owned(), &r[end + 1..])
        } else {
            break;
        };
        let next = match &at.value {
            Yaml::Map(_) => at.get(&step),
            Yaml::Seq(items) => step.parse::<usize>().ok().and_then(|i| items.get(i)),
            _ => None,
        };
        let Some(next) = next else { break };
        at = next;
        out.push('/');
        out.push_str(&step.replace('~', "~0").replace('/', "~1"));
        rest = tail;
    }
    (at, out)
}

/// `node` as the API server gives it to CEL, typed by its `schema`.
fn bind(schema: &Json, node: &Node, root: bool) -> Cel {
    match &node.value {
        Yaml::Null => Cel::Null,
        Yaml::Bool(b) => Cel::Bool(*b),
        // An integer written where the schema says `number` is a double to CEL.
        #[allow(clippy::cast_precision_loss, reason = "as the server converts it")]
        Yaml::Int(i) if is_type(schema, "number") => Cel::Float(*i as f64),
        Yaml::Int(i) => Cel::Int(*i),
        Yaml::Float(f) => Cel::Float(*f),
        Yaml::String(s) => Cel::String(Arc::new(s.clone())),
        Yaml::Seq(items) => {
            let item = schema.get("items").unwrap_or(&Json::Null);
            Cel::List(Arc::new(
                items.iter().map(|n| bind(item, n, false)).collect(),
            ))
        }
        Yaml::Map(entries) => {
            let properties = schema.get("properties").and_then(Json::as_object);
            let values = schema.get("additionalProperties").filter(|v| v.is_object());
            let mut map: HashMap<String, Cel> = HashMap::new();
            for (key, child) in entries {
                if matches!(child.value, Yaml::Null) && properties.is_some() {
                    continue; // a null field is absent (`has()` is false)
                }
                if let Some(field) = properties.and_then(|p| p.get(&key.text)) {
                    let Some(name) = escape(&key.text) else {
                        continue;
                    };
                    let value = if root && key.text == "metadata" {
                        root_metadata(child)
                    } else {
                        bind(field, child, false)
                    };
                    map.insert(name, value);
                } else if let Some(values) = values {
                    map.insert(key.text.clone(), bind(values, child, false));
                }
            }
            // Defaults the server fills in before it validates.
            for (name, field) in properties.into_iter().flatten() {
                if let Some(default) = field.get("default")
                    && !default.is_null()
                    && node.get(name).is_none_or(|n| matches!(n.value, Yaml::Null))
                    && let Some(escaped) = escape(name)
                {
                    map.insert(escaped, from_json(field, default));
                }
            }
            Cel::from(map)
        }
    }
}

/// The root `metadata` a rule sees: `name` and `generateName` only
/// (k8s.io/apiextensions-apiserver, pkg/apiserver/schema/cel/model: the root object's
/// metadata is limited to them).
fn root_metadata(node: &Node) -> Cel {
    let mut map: HashMap<String, Cel> = HashMap::new();
    for field in ["name", "generateName"] {
        if let Some(Yaml::String(s)) = node.get(field).map(|n| &n.value) {
            map.insert(field.to_owned(), Cel::String(Arc::new(s.clone())));
        }
    }
    Cel::from(map)
}

/// A schema `default` as CEL sees it.
fn from_json(schema: &Json, value: &Json) -> Cel {
    match value {
        Json::Null => Cel::Null,
        Json::Bool(b) => Cel::Bool(*b),
        Json::Number(n) => match n.as_i64() {
            #[allow(clippy::cast_precision_loss, reason = "as the server converts it")]
            Some(i) if is_type(schema, "number") => Cel::Float(i as f64),
            Some(i) => Cel::Int(i),
            None => Cel::Float(n.as_f64().unwrap_or_default()),
        },
        Json::String(s) => Cel::String(Arc::new(s.clone())),
        Json::Array(items) => {
            let item = schema.get("items").unwrap_or(&Json::Null);
            Cel::List(Arc::new(items.iter().map(|v| from_json(item, v)).collect()))
        }
        Json::Object(entries) => {
            let properties = schema.get("properties").and_then(Json::as_object);
            let values = schema.get("additionalProperties").unwrap_or(&Json::Null);
            let mut map: HashMap<String, Cel> = HashMap::new();
            for (key, v) in entries {
                match properties.and_then(|p| p.get(key)) {
                    Some(field) => {
                        if let Some(name) = escape(key) {
                            map.insert(name, from_json(field, v));
                        }
                    }
                    None => {
                        map.insert(key.clone(), from_json(values, v));
                    }
                }
            }
            Cel::from(map)
        }
    }
}

/// Whether the schema's `type` is (or, made nullable by `server`, includes) `name`.
fn is_type(schema: &Json, name: &str) -> bool {
    match schema.get("type") {
        Some(Json::String(t)) => t == name,
        Some(Json::Array(types)) => types.iter().any(|t| t == name),
        _ => false,
    }
}

/// CEL's name of a property (k8s.io/apiserver, pkg/cel/escaping.go, `Escape`): keywords
/// become `__keyword__`; `__`, `.`, `-` and `/` become `__underscores__`, `__dot__`,
/// `__dash__` and `__slash__`; a name with other characters, or a leading digit, has none.
pub(crate) fn escape(name: &str) -> Option<String> {
    const RESERVED: &[&str] = &[
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    if name.is_empty() || name.starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    if RESERVED.contains(&name) {
        return Some(format!("__{name}__"));
    }
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests;

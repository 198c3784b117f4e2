//! `kubectl aiml explain KIND[.field.path]`: a blueprint field's type, default, allowed
//! values, documentation and sub-fields, like `kubectl explain`.
//!
//! Everything comes from the kind's document schema ([`super::schema::document`]), so what
//! `explain` says and what editors complete cannot disagree: descriptions are the spec
//! structs' doc comments (schemars), allowed values the schema's `enum`/`const`/`examples`
//! (for `tpu.type` and `gpu.type` the catalog's names). [`View`] folds the indirections
//! schemars writes (`$ref`, `allOf`, and the `anyOf`/`oneOf` with `null` of an `Option`) into
//! one description of a field.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use aiml::blueprint::API_VERSION;

use super::{Context, Outcome, schema};

/// `kubectl aiml explain TARGET [VALUE]`.
pub(super) fn run(
    context: &Context<'_>,
    target: &str,
    value: Option<&str>,
) -> anyhow::Result<Outcome> {
    let (kind_name, path) = split(target);
    let kind = schema::kind(&context.registry, kind_name)?;
    let document = schema::document(kind);
    let explained = match resolve(&document, &path) {
        Ok(view) => view,
        Err(missing) => anyhow::bail!("{}", missing.message(kind.name())),
    };
    let printer = &context.printer;
    if let Some(value) = value {
        let text = explain_value(&explained, &path, value)?;
        if printer.json {
            let json =
                json!({ "path": path.join("."), "value": value, "meaning": text.trim_end() });
            printer.out(&format!("{}\n", serde_json::to_string_pretty(&json)?));
        } else {
            printer.out(&text);
        }
        return Ok(Outcome::Success);
    }
    if printer.json {
        let json = explained.to_json(kind.name(), &path);
        printer.out(&format!("{}\n", serde_json::to_string_pretty(&json)?));
    } else {
        printer.out(&explained.to_text(kind.name(), &path));
    }
    Ok(Outcome::Success)
}

/// What `value` means for the field: a TPU type's slice, a GPU's machines, or whether an
/// enumerated value is allowed. A value the field does not take is an error with the closest.
fn explain_value(view: &View<'_>, path: &[&str], value: &str) -> anyhow::Result<String> {
    let field = path.join(".");
    let stanza = path.iter().rev().nth(1).copied();
    if stanza == Some("tpu") && path.last() == Some(&"type") {
        return match aiml::catalog::tpu_slice(value, None) {
            Ok(slice) => Ok(format!(
                "{value}: {} slice, topology {}, {} hosts x {} chips ({} chips), machine type {}, node label {}={}\n",
                slice.family,
                slice.topology,
                slice.hosts(),
                slice.chips_per_host(),
                slice.chips(),
                slice.machine_type(),
                aiml::catalog::TPU_ACCELERATOR_LABEL,
                slice.accelerator(),
            )),
            Err(aiml::catalog::TpuTypeError::Unknown {
                suggestion: Some(best),
                ..
            }) => anyhow::bail!("unknown TPU type: `{value}`; did you mean `{best}`?"),
            Err(error) => anyhow::bail!("{error}"),
        };
    }
    if stanza == Some("gpu")
        && path.last() == Some(&"type")
        && let Some(gpu) = aiml::catalog::gpu(value)
    {
        {
            let machines: Vec<String> = gpu
                .machines
                .iter()
                .map(|machine| format!("{} ({} per VM)", machine.name, machine.gpus))
                .collect();
            return Ok(format!(
                "{value}: {}, on {}\n",
                gpu.display_name,
                machines.join(", ")
            ));
        }
    }
    let (values, exhaustive) = view.allowed();
    let names: Vec<String> = values.iter().map(|(v, _)| scalar(v)).collect();
    if let Some(at) = names.iter().position(|name| name == value) {
        let doc = values[at].1.map(|d| format!(": {}", first_line(d)));
        return Ok(format!("{value}{}\n", doc.unwrap_or_default()));
    }
    if names.is_empty() || !exhaustive {
        anyhow::bail!("`{field}` has no list of values to explain `{value}` against");
    }
    let hint = aiml::catalog::closest(value, names.iter().map(String::as_str))
        .map(|best| format!("did you mean `{best}`? "))
        .unwrap_or_default();
    anyhow::bail!(
        "`{value}` is not a value of `{field}`; {hint}allowed: {}",
        names.join(", ")
    )
}

/// `KIND.a.b` → (`KIND`, [`a`, `b`]); empty segments (`KIND.`, `a..b`) are dropped.
pub(super) fn split(target: &str) -> (&str, Vec<&str>) {
    let mut parts = target.split('.');
    let kind = parts.next().unwrap_or_default();
    (kind, parts.filter(|part| !part.is_empty()).collect())
}

/// A path segment that names no field.
pub(super) struct Missing {
    /// The path up to and including the unknown segment.
    path: String,
    /// The unknown segment.
    segment: String,
    /// The fields that exist there.
    fields: Vec<String>,
}

impl Missing {
    fn message(&self, kind: &str) -> String {
        let mut text = format!("field `{}` does not exist in {kind}", self.path);
        let names = self.fields.iter().map(String::as_str);
        if let Some(best) = aiml::catalog::closest(&self.segment, names) {
            text.push_str(&format!("; did you mean `{best}`?"));
        }
        let parent = self
            .path
            .rsplit_once('.')
            .map_or(kind, |(parent, _)| parent);
        if self.fields.is_empty() {
            text.push_str(&format!(" (`{parent}` has no fields)"));
        } else {
            text.push_str(&format!(
                " (fields of `{parent}`: {})",
                self.fields.join(", ")
            ));
        }
        text
    }
}

/// Walks `path` from the document root. Arrays are walked through, as `kubectl explain`
/// does (`spec.containers.name`).
pub(super) fn resolve<'s>(document: &'s Value, path: &[&str]) -> Result<View<'s>, Missing> {
    let mut view = View::of(document, document);
    let mut required = true;
    for (depth, segment) in path.iter().enumerate() {
        let view_fields = view.fields();
        let Some(field) = view_fields.iter().find(|field| field.name == *segment) else {
            return Err(Missing {
                path: path[..=depth].join("."),
                segment: (*segment).to_string(),
                fields: view_fields.iter().map(|f| f.name.to_string()).collect(),
            });
        };
        required = field.required;
        view = View::of(document, field.schema);
    }
    view.required = required && !path.is_empty();
    Ok(view)
}

/// One field's schema, with `$ref`, `allOf` and nullable unions folded in.
pub(super) struct View<'s> {
    document: &'s Value,
    /// The schema objects that describe the field, outermost first.
    parts: Vec<&'s Value>,
    /// `null` is allowed (an optional field).
    nullable: bool,
    /// Whether the parent requires it (set by [`resolve`]).
    required: bool,
}

/// A sub-field as listed under FIELDS.
pub(super) struct Field<'s> {
    /// Its key.
    pub(super) name: &'s str,
    /// Its schema.
    pub(super) schema: &'s Value,
    /// Whether the parent requires it.
    pub(super) required: bool,
}

impl<'s> View<'s> {
    pub(super) fn of(document: &'s Value, schema: &'s Value) -> Self {
        let mut view = Self {
            document,
            parts: Vec::new(),
            nullable: false,
            required: false,
        };
        view.add(schema, 0);
        view
    }

    fn add(&mut self, schema: &'s Value, depth: usize) {
        // Schemas here are generated and finite, but a recursive type would loop forever.
        if depth > 32 || self.parts.iter().any(|part| std::ptr::eq(*part, schema)) {
            return;
        }
        self.parts.push(schema);
        if let Some(target) = schema
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|reference| reference.strip_prefix('#'))
            .and_then(|pointer| self.document.pointer(pointer))
        {
            self.add(target, depth + 1);
        }
        for part in schema
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.add(part, depth + 1);
        }
        for key in ["anyOf", "oneOf"] {
            let Some(branches) = schema.get(key).and_then(Value::as_array) else {
                continue;
            };
            let (null, other): (Vec<&Value>, Vec<&Value>) =
                branches.iter().partition(|branch| is_null(branch));
            self.nullable |= !null.is_empty();
            // A union of constants is a list of allowed values, read by `allowed`; any
            // other union shows all its branches' fields.
            if !other.iter().all(|branch| branch.get("const").is_some()) {
                for branch in other {
                    self.add(branch, depth + 1);
                }
            }
        }
    }

    /// The first value of `key` in any part, outermost first (the field's own doc wins over
    /// its type's).
    fn first(&self, key: &str) -> Option<&'s Value> {
        self.parts.iter().find_map(|part| part.get(key))
    }

    /// The documentation: the field's own, else its type's.
    pub(super) fn description(&self) -> Option<String> {
        self.parts.iter().find_map(|part| {
            let title = part.get("title").and_then(Value::as_str);
            let description = part.get("description").and_then(Value::as_str);
            match (title, description) {
                // A one-word title is a type name (`TpuSpec`), not documentation.
                (Some(title), Some(description)) if title.contains(' ') => {
                    Some(format!("{title}\n\n{description}"))
                }
                (_, Some(text)) => Some(text.to_string()),
                (Some(title), None) if title.contains(' ') => Some(title.to_string()),
                _ => None,
            }
        })
    }

    /// `string`, `integer`, `Object`, `[]string`, `map[string]string`, `string | Object`.
    pub(super) fn type_name(&self) -> String {
        let mut names: Vec<String> = Vec::new();
        let mut push = |name: String| {
            if !names.contains(&name) {
                names.push(name);
            }
        };
        for part in &self.parts {
            for name in types_of(part) {
                match name {
                    "null" => {}
                    "array" => {
                        let item = part.get("items").map_or_else(
                            || "Object".into(),
                            |items| View::of(self.document, items).type_name(),
                        );
                        push(format!("[]{item}"));
                    }
                    "object" => {
                        let values = part.get("additionalProperties").filter(|v| v.is_object());
                        match values {
                            Some(values) if part.get("properties").is_none() => push(format!(
                                "map[string]{}",
                                View::of(self.document, values).type_name()
                            )),
                            _ => push("Object".into()),
                        }
                    }
                    other => push(other.to_string()),
                }
            }
        }
        if names.is_empty() {
            // Constants only (`oneOf` of `const`): their JSON type.
            if let Some((value, _)) = self.allowed().0.first() {
                names.push(json_type(value).to_string());
            }
        }
        if names.is_empty() {
            "any".into()
        } else {
            names.join(" | ")
        }
    }

    /// The default value, if the schema states one.
    pub(super) fn default(&self) -> Option<&'s Value> {
        self.first("default")
    }

    /// Allowed values with their descriptions, and whether the list is exhaustive (`enum`,
    /// `const`) or examples (`tpu.type`, whose `<family>-<topology>` spellings are not listed).
    pub(super) fn allowed(&self) -> (Vec<(&'s Value, Option<&'s str>)>, bool) {
        let mut values: Vec<(&'s Value, Option<&'s str>)> = Vec::new();
        for part in &self.parts {
            if let Some(value) = part.get("const") {
                values.push((value, None));
            }
            for value in part
                .get("enum")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                values.push((value, None));
            }
            for key in ["anyOf", "oneOf"] {
                for branch in part
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    if let Some(value) = branch.get("const") {
                        let doc = branch.get("description").and_then(Value::as_str);
                        values.push((value, doc));
                    }
                }
            }
        }
        if !values.is_empty() {
            return (values, true);
        }
        let examples = self
            .first("examples")
            .and_then(Value::as_array)
            .map(|examples| examples.iter().map(|value| (value, None)).collect())
            .unwrap_or_default();
        (examples, false)
    }

    /// The sub-fields, in schema order (arrays: their items' fields).
    pub(super) fn fields(&self) -> Vec<Field<'s>> {
        let mut fields: Vec<Field<'s>> = Vec::new();
        for part in &self.parts {
            if let Some(items) = part.get("items").filter(|items| items.is_object()) {
                for field in View::of(self.document, items).fields() {
                    if !fields.iter().any(|known| known.name == field.name) {
                        fields.push(field);
                    }
                }
            }
            let required: BTreeSet<&str> = part
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            let properties = part.get("properties").and_then(Value::as_object);
            for (name, schema) in properties.into_iter().flatten() {
                if !fields.iter().any(|known| known.name == name) {
                    fields.push(Field {
                        name,
                        schema,
                        required: required.contains(name.as_str()),
                    });
                }
            }
        }
        fields
    }

    fn to_text(&self, kind: &str, path: &[&str]) -> String {
        let mut text = format!("KIND:     {kind}\nVERSION:  {API_VERSION}\n\n");
        if let Some(name) = path.last() {
            text.push_str(&format!(
                "FIELD:    {name} <{}>{}\n\n",
                self.type_name(),
                if self.required { " -required-" } else { "" }
            ));
        }
        text.push_str("DESCRIPTION:\n");
        match self.description() {
            Some(description) => text.push_str(&indent(&description, 4)),
            None => text.push_str("    <empty>\n"),
        }
        if let Some(default) = self.default() {
            text.push_str(&format!("\nDEFAULT:  {}\n", scalar(default)));
        }
        let (values, exhaustive) = self.allowed();
        if !values.is_empty() {
            text.push_str(if exhaustive {
                "\nALLOWED VALUES:\n"
            } else {
                "\nALLOWED VALUES (the catalog's names; other spellings in the description):\n"
            });
            if values.iter().any(|(_, doc)| doc.is_some()) {
                for (value, doc) in &values {
                    let line = match doc {
                        Some(doc) => format!("{:<12} {}", scalar(value), first_line(doc)),
                        None => scalar(value),
                    };
                    text.push_str(&format!("    {line}\n"));
                }
            } else {
                let list: Vec<String> = values.iter().map(|(value, _)| scalar(value)).collect();
                text.push_str(&indent(&list.join(", "), 4));
            }
        }
        let fields = self.fields();
        if !fields.is_empty() {
            text.push_str("\nFIELDS:\n");
            for field in &fields {
                let view = View::of(self.document, field.schema);
                text.push_str(&format!(
                    "  {}\t<{}>{}\n",
                    field.name,
                    view.type_name(),
                    if field.required { " -required-" } else { "" }
                ));
                if let Some(description) = view.description() {
                    text.push_str(&format!("    {}\n", first_line(&description)));
                }
                text.push('\n');
            }
        }
        text
    }

    fn to_json(&self, kind: &str, path: &[&str]) -> Value {
        let (values, exhaustive) = self.allowed();
        let fields: Vec<Value> = self
            .fields()
            .iter()
            .map(|field| {
                let view = View::of(self.document, field.schema);
                json!({
                    "name": field.name,
                    "type": view.type_name(),
                    "required": field.required,
                    "description": view.description().as_deref().map(first_line),
                })
            })
            .collect();
        json!({
            "kind": kind,
            "apiVersion": API_VERSION,
            "path": path.join("."),
            "type": self.type_name(),
            "required": self.required,
            "description": self.description(),
            "default": self.default(),
            "values": values.iter().map(|(value, _)| *value).collect::<Vec<_>>(),
            "valuesExhaustive": exhaustive && !values.is_empty(),
            "fields": fields,
        })
    }
}

fn is_null(schema: &Value) -> bool {
    schema.get("type").and_then(Value::as_str) == Some("null")
}

fn types_of(schema: &Value) -> Vec<&str> {
    match schema.get("type") {
        Some(Value::String(name)) => vec![name.as_str()],
        Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_f64() => "number",
        Value::Number(_) => "integer",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "Object",
    }
}

/// A value as YAML would show it: strings bare, everything else as JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// The first paragraph of a description on one line, for listings (doc comments keep their
/// line breaks in the schema).
pub(super) fn first_line(text: &str) -> String {
    let paragraph = text.split("\n\n").next().unwrap_or_default();
    paragraph.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Wraps paragraphs at 96 columns, indented.
fn indent(text: &str, by: usize) -> String {
    const WIDTH: usize = 96;
    let pad = " ".repeat(by);
    let mut out = String::new();
    for (at, paragraph) in text.split("\n\n").enumerate() {
        if at > 0 {
            out.push('\n');
        }
        let mut line = String::new();
        for word in paragraph.split_whitespace() {
            if !line.is_empty() && by + line.len() + 1 + word.len() > WIDTH {
                out.push_str(&format!("{pad}{line}\n"));
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
        if !line.is_empty() {
            out.push_str(&format!("{pad}{line}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use aiml::kinds::Registry;

    fn document(kind: &str) -> Value {
        let registry = Registry::builtin();
        schema::document(registry.get(kind).unwrap())
    }

    #[test]
    fn optional_structs_are_walked_through_their_reference() {
        let document = document("MultisliceTraining");
        let tpu = resolve(&document, &["spec", "tpu"]).ok().unwrap();
        let names: Vec<&str> = tpu.fields().iter().map(|f| f.name).collect();
        assert_eq!(names, ["capacity", "idle", "slices", "topology", "type"]);
        let slices = resolve(&document, &["spec", "tpu", "slices"]).ok().unwrap();
        assert_eq!(slices.type_name(), "integer");
        assert_eq!(slices.default(), Some(&json!(1)));
    }

    #[test]
    fn tpu_types_are_the_catalogs_and_not_exhaustive() {
        let document = document("MultisliceTraining");
        let view = resolve(&document, &["spec", "tpu", "type"]).ok().unwrap();
        let (values, exhaustive) = view.allowed();
        assert!(!exhaustive);
        let names: Vec<String> = values.iter().map(|(v, _)| scalar(v)).collect();
        assert_eq!(names, aiml::catalog::tpu_slice_names());
        assert!(view.required);
    }

    #[test]
    fn an_unknown_segment_suggests_the_closest_field() {
        let document = document("MultisliceTraining");
        let Err(missing) = resolve(&document, &["spec", "tpu", "tipe"]) else {
            panic!("resolved");
        };
        let message = missing.message("MultisliceTraining");
        assert!(
            message.starts_with("field `spec.tpu.tipe` does not exist"),
            "{message}"
        );
        assert!(message.contains("did you mean `type`?"), "{message}");
    }
}

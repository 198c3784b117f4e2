//! `kubectl aiml schema KIND`: the JSON Schema of a whole blueprint document, for editors.
//!
//! A kind knows the schema of its `spec` ([`Kind::spec_schema`], schemars output, draft
//! 2020-12). Editors validate whole files, so this module wraps it in the envelope every
//! blueprint shares (`apiVersion`, `kind`, `metadata`) exactly as [`aiml::blueprint`] checks
//! it, and writes it as draft-07: yaml-language-server (VS Code, Neovim, Helix…) validates
//! with draft-07 and warns on newer drafts. `explain` walks the same document.
//!
//! Kinds are looked up only through [`kind`], so kinds a repository defines appear here as
//! soon as the registry holds them.

use serde_json::{Map, Value, json};

use aiml::blueprint::API_VERSION;
use aiml::kinds::{Kind, Registry};

use super::{Context, Outcome};

/// The draft the document schema declares.
const DRAFT_07: &str = "http://json-schema.org/draft-07/schema#";

/// `kubectl aiml schema KIND`.
pub(super) fn run(context: &Context<'_>, name: &str) -> anyhow::Result<Outcome> {
    let found = kind(&context.registry, name)?;
    let schema = document(found);
    context
        .printer
        .out_json(&format!("{}\n", serde_json::to_string_pretty(&schema)?));
    Ok(Outcome::Success)
}

/// The kind called `name` (exactly, else case-insensitively, as `kubectl explain` is); an
/// unknown name is an error listing the kinds and the closest one.
pub(super) fn kind<'r>(registry: &'r Registry, name: &str) -> anyhow::Result<&'r dyn Kind> {
    if let Some(found) = registry.get(name).or_else(|| {
        registry
            .iter()
            .find(|kind| kind.name().eq_ignore_ascii_case(name))
    }) {
        return Ok(found);
    }
    let names: Vec<String> = registry.names().map(|n| format!("`{n}`")).collect();
    let hint = aiml::catalog::closest(name, registry.names())
        .map(|best| format!("did you mean `{best}`? "))
        .unwrap_or_default();
    anyhow::bail!(
        "unknown blueprint kind `{name}`; {hint}known kinds: {}",
        names.join(", ")
    )
}

/// The schema of a whole blueprint of `kind`, draft-07, self-contained.
pub(super) fn document(kind: &dyn Kind) -> Value {
    let mut spec = kind.spec_schema();
    let mut definitions = Map::new();
    if let Some(object) = spec.as_object_mut() {
        object.remove("$schema");
        // The spec's own title is its Rust type name; the document's is the kind.
        object.remove("title");
        for key in ["$defs", "definitions"] {
            if let Some(Value::Object(defs)) = object.remove(key) {
                definitions.extend(defs);
            }
        }
    }
    let mut schema = json!({
        "$schema": DRAFT_07,
        "title": kind.name(),
        "description": format!("{}: {}", kind.name(), kind.summary()),
        "type": "object",
        "additionalProperties": false,
        "required": ["apiVersion", "kind", "metadata", "spec"],
        "properties": {
            "apiVersion": {
                "description": "The blueprint API version.",
                "type": "string",
                "const": API_VERSION,
            },
            "kind": {
                "description": "The blueprint kind.",
                "type": "string",
                "const": kind.name(),
            },
            "metadata": {
                "description": "The blueprint's name and annotations.",
                "type": "object",
                "additionalProperties": false,
                "required": ["name"],
                "properties": {
                    "name": {
                        "description": "Blueprint name, unique in the repository: a DNS-1123 label (lowercase letters, digits and `-`, at most 63 characters). Names the overlays/ and rendered/ folders and labels every object.",
                        "type": "string",
                        "maxLength": 63,
                        "pattern": "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$",
                    },
                    "annotations": {
                        "description": "String annotations, e.g. `aiml.dev/ignore: RULE[,RULE]` to turn rules off for this blueprint.",
                        "type": "object",
                        "additionalProperties": {"type": "string"},
                    },
                },
            },
            "spec": spec,
        },
    });
    if !definitions.is_empty() {
        schema["definitions"] = Value::Object(definitions);
    }
    to_draft_07(&mut schema);
    schema
}

/// Rewrites the 2020-12 constructs schemars emits into their draft-07 forms: `$defs`
/// references point at `definitions`, and a `$ref` with sibling keywords (ignored by
/// draft-07) moves into `allOf` so its description and default still show in editors.
fn to_draft_07(value: &mut Value) {
    match value {
        Value::Object(object) => {
            if let Some(Value::String(reference)) = object.get_mut("$ref") {
                if let Some(name) = reference.strip_prefix("#/$defs/") {
                    *reference = format!("#/definitions/{name}");
                }
                if object.len() > 1 {
                    let reference = object.remove("$ref").unwrap_or(Value::Null);
                    object.insert("allOf".into(), json!([{ "$ref": reference }]));
                }
            }
            if let Some(Value::Array(prefix)) = object.remove("prefixItems") {
                let rest = object.remove("items");
                object.insert("items".into(), Value::Array(prefix));
                if let Some(rest) = rest {
                    object.insert("additionalItems".into(), rest);
                }
            }
            for child in object.values_mut() {
                to_draft_07(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(to_draft_07),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_draft_07_with_local_references_only() {
        let registry = Registry::builtin();
        for kind in registry.iter() {
            let schema = document(kind);
            let text = schema.to_string();
            assert!(!text.contains("$defs"), "{}", kind.name());
            assert_eq!(schema["properties"]["kind"]["const"], kind.name());
            // Every reference resolves inside the document.
            for (at, _) in text.match_indices("#/definitions/") {
                let name: String = text[at + 14..].chars().take_while(|c| *c != '"').collect();
                assert!(
                    schema["definitions"].get(&name).is_some(),
                    "{}: {name}",
                    kind.name()
                );
            }
        }
    }

    #[test]
    fn kinds_are_found_case_insensitively_and_misspellings_get_a_hint() {
        let registry = Registry::builtin();
        assert_eq!(
            kind(&registry, "multislicetraining").unwrap().name(),
            "MultisliceTraining"
        );
        let Err(error) = kind(&registry, "MultisliceTrainig") else {
            panic!("found");
        };
        let error = error.to_string();
        assert!(
            error.contains("did you mean `MultisliceTraining`?"),
            "{error}"
        );
    }
}

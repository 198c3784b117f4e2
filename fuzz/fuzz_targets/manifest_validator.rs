//! Any bytes as a manifest file: parsing, every validation rule, every schema and both
//! diagnostic renderers must never panic.
#![no_main]

use aiml::schema::{CheckOptions, Schemas};
use aiml::validate::{Object, validate};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(documents) = aiml::yaml::parse_documents(text) else {
        return;
    };
    let objects: Vec<Object<'_>> = documents
        .iter()
        .filter_map(|node| Object::from_node("fuzz.yaml", node))
        .collect();
    let mut diagnostics = validate(&objects);
    let schemas = Schemas::embedded();
    for object in &objects {
        diagnostics.extend(schemas.check_with_source(object, text, &CheckOptions::default()));
    }
    let lookup = |_: &str| Some(text.to_string());
    let _ = aiml::diagnostic::render_human(&diagnostics, &lookup, false);
    let _ = aiml::diagnostic::render_json(&diagnostics);
});

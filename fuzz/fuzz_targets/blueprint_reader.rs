//! Any bytes as a blueprints file: reading, envelope checks, strict spec reading, planning,
//! templates and both diagnostic renderers must never panic (kustomize is not run).
#![no_main]

use aiml::kinds::Registry;
use aiml::input::Loaded;
use aiml::repo::SourceFile;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let registry = Registry::builtin();
    let mut loaded = Loaded::default();
    match aiml::yaml::parse_documents(text) {
        Ok(documents) => loaded.files.push(SourceFile {
            path: "blueprints/fuzz.yaml".into(),
            text: text.to_string(),
            documents,
        }),
        Err(_) => return,
    }
    loaded.check_envelopes(&registry);
    if let Ok((_, diagnostics)) = aiml::render::compile(&loaded, &registry, &[]) {
        let lookup = |_: &str| Some(text.to_string());
        let _ = aiml::diagnostic::render_human(&diagnostics, &lookup, false);
        let _ = aiml::diagnostic::render_json(&diagnostics);
    }
});

//! Any small repository with kinds under `kinds/<Kind>/` (definition, JSON schema, templates)
//! and blueprints that use them: loading the kinds, reading the blueprints with them, planning,
//! rendering their templates and both diagnostic renderers must never panic (kustomize is not
//! run).
#![no_main]

#[path = "common/mod.rs"]
mod common;

use aiml::kinds::Registry;
use aiml::limits::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some(files) = common::unpack(data, "kinds/Fuzz/kind.yaml") else {
        return;
    };
    let root = common::repository(&files);
    let limits = Limits {
        max_file_size: 1 << 20,
        ..Limits::default()
    };
    let Ok(registry) = Registry::for_repository(root, &limits) else {
        return;
    };
    let Ok(loaded) = aiml::input::load(root, &registry, limits.max_file_size) else {
        return;
    };
    let Ok((_, diagnostics)) = aiml::render::compile(&loaded, &registry, &[]) else {
        return;
    };
    common::show(&diagnostics, &files);
});

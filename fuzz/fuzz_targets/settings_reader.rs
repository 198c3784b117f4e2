//! Any bytes as `aiml.yaml`: reading, every settings check and both diagnostic renderers must
//! never panic.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let files = [("aiml.yaml".to_string(), text.to_string())];
    let root = common::repository(&files);
    let Ok(loaded) = aiml::settings::load(root, 1 << 20) else {
        return;
    };
    let _ = loaded.settings.wiring();
    common::show(&loaded.diagnostics, &files);
});

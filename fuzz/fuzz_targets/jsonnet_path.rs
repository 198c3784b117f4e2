//! Any small repository of Jsonnet files: evaluation (imports, limits), conversion of the output
//! into blueprint nodes, placement of values on source lines, the blueprint checks and both
//! diagnostic renderers must never panic. Evaluation is in-process here (no worker process):
//! the size and depth checks made before values are built are what is fuzzed; a memory or time
//! bomb that only the worker's cap stops is an OOM or a time-out, not a crash.
#![no_main]

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use aiml::kinds::Registry;
use aiml::input::Loaded;
use libfuzzer_sys::fuzz_target;

/// Output limit of a fuzzed file: small, so that big outputs are refused quickly.
const LIMIT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let Some(files) = common::unpack(data, "blueprints/fuzz.jsonnet") else {
        return;
    };
    let root = common::repository(&files);
    let registry = Registry::builtin();
    let mut loaded = Loaded::default();
    for (path, _) in files
        .iter()
        .filter(|(p, _)| p.starts_with("blueprints/") && p.ends_with(".jsonnet"))
    {
        let Ok(read) = aiml::input::read_jsonnet(
            root,
            &root.join(path),
            path.clone(),
            &aiml::jsonnet::Inputs::default(),
            LIMIT,
            Duration::from_secs(2),
        ) else {
            continue;
        };
        if let Some(jsonnet) = read.jsonnet {
            loaded.jsonnet.insert(read.file.path.clone(), jsonnet);
        }
        loaded.diagnostics.extend(read.diagnostic);
        loaded.files.push(read.file);
    }
    loaded.check_envelopes(&registry);
    let diagnostics = match aiml::render::compile(&loaded, &registry, &[]) {
        Ok((_, diagnostics)) => diagnostics,
        Err(_) => loaded.diagnostics.clone(),
    };
    common::show(&diagnostics, &files);
});

//! `kubectl aiml blueprints [--schema KIND]`: the kinds (built in, or defined by the
//! repository under `kinds/<Kind>/`) and the repository's blueprints.

use aiml::blueprint;
use aiml::diagnostic::Diagnostic;

use super::{Context, Outcome};

pub(super) fn list(context: &Context<'_>) -> anyhow::Result<Outcome> {
    let root = context.root()?;
    let loaded = aiml::input::load(&root, &context.registry, context.limits.max_file_size)?;
    let registry = &context.registry;
    let printer = &context.printer;
    let listed: Vec<(String, String, String)> = loaded
        .blueprints(registry)
        .iter()
        .map(|b| (b.name.to_string(), b.kind.to_string(), b.file.to_string()))
        .collect();
    if printer.json {
        let kinds: Vec<_> = registry
            .iter()
            .map(|k| {
                serde_json::json!({
                    "kind": k.name(),
                    "summary": k.summary(),
                    "source": source(k),
                })
            })
            .collect();
        let items: Vec<_> = listed
            .iter()
            .map(|(name, kind, file)| serde_json::json!({ "name": name, "kind": kind, "file": file }))
            .collect();
        let printable: Vec<Diagnostic> = loaded
            .diagnostics
            .iter()
            .map(Diagnostic::printable)
            .collect();
        let json = serde_json::json!({
            "apiVersion": blueprint::API_VERSION,
            "kinds": kinds,
            "blueprints": items,
            "diagnostics": printable,
        });
        printer.out(&format!("{}\n", serde_json::to_string_pretty(&json)?));
    } else {
        let mut text = format!("KINDS ({})\n", blueprint::API_VERSION);
        for k in registry.iter() {
            text.push_str(&format!(
                "  {:<22} {:<24} {}\n",
                k.name(),
                source(k),
                k.summary()
            ));
        }
        text.push_str("\nBLUEPRINTS\n");
        if listed.is_empty() {
            text.push_str("  (none under blueprints/)\n");
        }
        for (name, kind, file) in &listed {
            text.push_str(&format!("  {name:<32} {kind:<22} {file}\n"));
        }
        printer.out(&text);
        printer.diagnostics(&loaded.diagnostics, 0, &|f| loaded.text(f));
    }
    Ok(
        if loaded.diagnostics.iter().any(aiml::rules::is_input_error) {
            Outcome::Failure
        } else if loaded.diagnostics.iter().any(Diagnostic::is_error) {
            Outcome::Findings
        } else {
            Outcome::Success
        },
    )
}

/// Where a kind comes from: `built-in`, or its folder in the repository (`kinds/<Kind>/`).
fn source(kind: &dyn aiml::kinds::Kind) -> &str {
    kind.origin().unwrap_or("built-in")
}

/// The schema of `spec` alone (`kubectl aiml schema KIND` prints the whole document).
pub(super) fn schema(context: &Context<'_>, kind: &str) -> anyhow::Result<Outcome> {
    let found = super::schema::kind(&context.registry, kind)?;
    context.printer.out_json(&format!(
        "{}\n",
        serde_json::to_string_pretty(&found.spec_schema())?
    ));
    Ok(Outcome::Success)
}

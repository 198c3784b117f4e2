//! `kubectl aiml rules [RULE-ID]`: the rules and their documentation.

use aiml::rules;

use super::{Context, Outcome};

pub(super) fn run(context: &Context<'_>, id: Option<&str>) -> anyhow::Result<Outcome> {
    let printer = &context.printer;
    let Some(id) = id else {
        let all = rules::all();
        if printer.json {
            let list: Vec<_> = all
                .iter()
                .map(|(stage, rule)| {
                    serde_json::json!({ "id": rule.id, "stage": stage, "summary": rule.summary })
                })
                .collect();
            printer.out(&format!("{}\n", serde_json::to_string_pretty(&list)?));
        } else {
            let mut text = String::new();
            let mut current = None;
            for (stage, rule) in &all {
                if current != Some(*stage) {
                    let title = match stage {
                        rules::Stage::Input => "INPUT FILES AND BLUEPRINT ENVELOPES",
                        rules::Stage::Blueprint => "BLUEPRINTS",
                        rules::Stage::Schema => "SCHEMAS",
                        rules::Stage::Manifest => "MANIFESTS (accelerators, node pools, Kueue)",
                        rules::Stage::Sync => "SYNC ROOTS (Config Sync, Argo CD)",
                    };
                    if current.is_some() {
                        text.push('\n');
                    }
                    text.push_str(title);
                    text.push('\n');
                    current = Some(*stage);
                }
                text.push_str(&format!("  {:<32} {}\n", rule.id, rule.summary));
            }
            text.push_str("\nShow one: kubectl aiml rules RULE-ID\n");
            printer.out(&text);
        }
        return Ok(Outcome::Success);
    };
    let Some((stage, rule)) = rules::find(id) else {
        let ids: Vec<&str> = rules::all().into_iter().map(|(_, rule)| rule.id).collect();
        let hint = aiml::catalog::closest(id, ids.iter().copied())
            .map(|best| format!("; did you mean `{best}`?"))
            .unwrap_or_default();
        anyhow::bail!("no rule `{id}`{hint} (`kubectl aiml rules` lists them)");
    };
    let doc = rules::doc(rule.id).unwrap_or(rule.summary);
    if printer.json {
        let json = serde_json::json!({
            "id": rule.id,
            "stage": stage,
            "summary": rule.summary,
            "doc": doc,
        });
        printer.out(&format!("{}\n", serde_json::to_string_pretty(&json)?));
    } else {
        printer.out(doc);
        if !doc.ends_with('\n') {
            printer.out("\n");
        }
    }
    Ok(Outcome::Success)
}

//! `kubectl aiml graph [NAME]`: the committed rendered objects and their edges, as Mermaid
//! or DOT.

use aiml::gitops::diff;
use aiml::graph;
use aiml::repo::RENDERED_DIR;

use super::{Context, Outcome, Output, plural};

pub(super) fn run(
    context: &Context<'_>,
    output: Output,
    name: Option<&str>,
    live: Option<&aiml::live::clusters::Options>,
) -> anyhow::Result<Outcome> {
    let root = context.root()?;
    let side = diff::read_dir(&root.join(RENDERED_DIR), context.limits.max_file_size)?;
    if !side.unreadable.is_empty() {
        context.printer.err(&format!(
            "warning: {} under `{RENDERED_DIR}/` not Kubernetes objects, left out of the graph: {}\n",
            plural(side.unreadable.len(), "file"),
            side.unreadable.join(", ")
        ));
    }
    let mut drawn = graph::build(&side, name, context.limits.max_graph_nodes)?;
    let mut outcome = Outcome::Success;
    if let Some(options) = live {
        let Some(settings) = super::status::settings(context, &root)? else {
            return Ok(Outcome::Failure);
        };
        let names: Vec<String> = name.map(str::to_string).into_iter().collect();
        let head = aiml::gitops::Repo::open(&root)
            .ok()
            .and_then(|repo| repo.head_commit());
        let report = aiml::live::status::runtime()?.block_on(aiml::live::status::collect(
            &side,
            &settings,
            &names,
            head,
            options,
            &aiml::live::clusters::Source::discover(),
            context.limits.max_live_objects,
        ));
        aiml::live::colour::colour(&mut drawn, &report);
        for target in &report.targets {
            if let Some(error) = &target.error {
                context.printer.err(&format!(
                    "error: {} ({}): left uncoloured: {error}\n",
                    target.blueprint, target.target
                ));
                outcome = Outcome::Failure;
            }
        }
    }
    if drawn.nodes.is_empty() {
        context.printer.err(&format!(
            "warning: no rendered object under `{RENDERED_DIR}/`: run `kubectl aiml render` first\n"
        ));
    }
    let text = match output {
        Output::Dot => graph::dot(&drawn),
        _ => graph::mermaid(&drawn),
    };
    context.printer.out(&text);
    Ok(outcome)
}

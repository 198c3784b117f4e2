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
    let drawn = graph::build(&side, name, context.limits.max_graph_nodes)?;
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
    Ok(Outcome::Success)
}

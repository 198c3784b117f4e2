//! `kubectl aiml diff [--base REV] [--render] [--exit-code] [--fail-on destructive]`: the
//! rendered objects of a git revision against the working tree (or a fresh render), with their
//! impact.

use aiml::gitops::{Repo, diff, report};
use aiml::repo::RENDERED_DIR;

use super::{Context, Outcome, Output};

/// What `diff` was asked to do.
pub(super) struct Options {
    /// `--base`.
    pub base: String,
    /// `--render`: compare with a fresh render instead of the working tree.
    pub render: bool,
    /// `--exit-code`: exit 1 when anything differs.
    pub exit_code: bool,
    /// `--fail-on`: exit 1 when the change does this.
    pub fail_on: Option<FailOn>,
    /// `--live`: compare with the clusters instead.
    pub live: Option<super::status::Selection>,
}

/// What `--fail-on` stops on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub(super) enum FailOn {
    /// A protected GCP resource deleted or recreated without its blueprint's `allowTeardown`.
    Destructive,
}

pub(super) fn run(
    context: &Context<'_>,
    output: Output,
    options: &Options,
) -> anyhow::Result<Outcome> {
    let root = context.root()?;
    if let Some(live) = &options.live {
        return run_live(context, output, options, live, &root);
    }
    let repo = Repo::open(&root)?;
    let tree = repo.tree_at(&options.base)?;
    let base_label = if tree.is_none() {
        format!("{} (no commits yet)", options.base)
    } else {
        options.base.clone()
    };
    let limit = context.limits.max_file_size;
    let base = diff::read_tree(&repo, tree.as_ref(), limit)?;
    let (head, head_label) = if options.render {
        let loaded = context.load(&root)?;
        let (temporary, report) = match super::render::fresh(context, &root, &loaded, &[], None)? {
            Ok(fresh) => fresh,
            Err(outcome) => return Ok(outcome),
        };
        // The staging folder holds only what changed: the folders that already held their
        // output (proven byte for byte) are the rest of the fresh render.
        let mut fresh = diff::read_dir(&temporary.path().join(RENDERED_DIR), limit)?;
        diff::add_folders(
            &mut fresh,
            &root.join(RENDERED_DIR),
            report.unchanged().iter().map(String::as_str),
            limit,
        )?;
        (fresh, "fresh render")
    } else {
        (
            diff::read_dir(&root.join(RENDERED_DIR), limit)?,
            "working tree",
        )
    };
    let compared = diff::diff(&base, &head, &base_label, head_label);
    print(context, output, &compared)?;
    let blocked = match options.fail_on {
        Some(FailOn::Destructive) => report_blocking(context, &compared),
        None => false,
    };
    Ok(if blocked || (options.exit_code && !compared.is_empty()) {
        Outcome::Findings
    } else {
        Outcome::Success
    })
}

/// Names on stderr each destructive change `--fail-on destructive` stops on; whether any.
fn report_blocking(context: &Context<'_>, compared: &diff::Diff) -> bool {
    let blocking: Vec<_> = compared.impact.blocking().collect();
    if blocking.is_empty() {
        return false;
    }
    let mut text = format!(
        "error: --fail-on destructive: {} would delete GCP resources their blueprint did not allow to be torn down\n",
        super::plural(blocking.len(), "change")
    );
    for item in &blocking {
        let object = &item.object;
        let name = match &object.namespace {
            Some(namespace) => format!("{namespace}/{}", object.name),
            None => object.name.clone(),
        };
        text.push_str(&format!(
            "  {} {} {name} [{}]: {}\n",
            item.action, object.kind, item.blueprint, item.consequence
        ));
    }
    text.push_str("  fix: keep the resources (undo the change), or set `allowTeardown: true` in the blueprint's spec, render and commit that first: the deletion is allowed once the base revision carries it\n");
    context.printer.err(&text);
    true
}

fn print(context: &Context<'_>, output: Output, compared: &diff::Diff) -> anyhow::Result<()> {
    let text = match output {
        Output::Json => report::json(compared)?,
        Output::Markdown => report::markdown(compared),
        Output::Text | Output::Mermaid | Output::Dot | Output::Yaml => report::text(compared),
    };
    context.printer.out(&text);
    Ok(())
}

/// `diff --live`: the clusters against a server-side dry run of `rendered/`.
fn run_live(
    context: &Context<'_>,
    output: Output,
    options: &Options,
    live: &super::status::Selection,
    root: &std::path::Path,
) -> anyhow::Result<Outcome> {
    let side = diff::read_dir_selected(
        &root.join(RENDERED_DIR),
        context.limits.max_file_size,
        diff::Selection::Only(&live.names),
    )?;
    super::status::check_names(&side, &live.names)?;
    let Some(settings) = super::status::settings(context, root)? else {
        return Ok(Outcome::Failure);
    };
    let runtime = aiml::live::status::runtime()?;
    let compared = runtime.block_on(aiml::live::apply::compare(
        &side,
        &settings,
        &live.names,
        &live.clusters,
        &aiml::live::clusters::Source::discover(),
        context.limits.max_live_objects,
    ));
    print(context, output, &compared.diff)?;
    if !compared.unchecked.is_empty() {
        context.printer.err(&format!(
            "note: {} not checked by the server: the namespace each lives in does not exist yet and is created by the same apply (a namespaced dry run needs its namespace): {}\n",
            super::plural(compared.unchecked.len(), "object"),
            compared.unchecked.join(", ")
        ));
    }
    for (blueprints, error) in &compared.errors {
        context
            .printer
            .err(&format!("error: {}: {error}\n", blueprints.join(", ")));
    }
    Ok(if !compared.errors.is_empty() {
        Outcome::Failure
    } else if !compared.diff.impact.server_refused.is_empty()
        || (options.exit_code && !compared.diff.is_empty())
    {
        Outcome::Findings
    } else {
        Outcome::Success
    })
}

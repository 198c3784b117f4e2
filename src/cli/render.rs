//! `kubectl aiml render [NAME…] [--check] [--force] [--commit [-m MESSAGE] [--branch NAME]]`.

use std::collections::BTreeMap;
use std::path::Path;

use aiml::cache::{self, Cache};
use aiml::gitops::commit::{self, Committed};
use aiml::input::Loaded;
use aiml::render::{self, Report};
use aiml::workspace::{self, Change, Comparison, HandEdits, Workspace};

use super::{Context, Outcome, outcome_of, plural, progress};

/// What `render` was asked to do.
pub(super) struct Options {
    /// Compare only (`--check`).
    pub check: bool,
    /// Overwrite hand edits (`--force`).
    pub force: bool,
    /// Commit the result (`--commit`).
    pub commit: Option<CommitOptions>,
    /// Reuse unchanged blueprints' output (not `--no-cache`).
    pub cache: bool,
}

/// `--commit` and its flags.
pub(super) struct CommitOptions {
    /// `-m`.
    pub message: Option<String>,
    /// `--branch`.
    pub branch: Option<String>,
}

pub(super) fn run(
    context: &Context<'_>,
    names: &[String],
    options: &Options,
) -> anyhow::Result<Outcome> {
    let root = context.root()?;
    // Everything a commit needs is checked before anything is written.
    let prepared = match &options.commit {
        Some(commit_options) => {
            if !names.is_empty() {
                anyhow::bail!(
                    "`--commit` renders and commits every blueprint, so that the commit is consistent; leave out the names ({})",
                    names.join(", ")
                );
            }
            Some(commit::prepare(&root, commit_options.branch.as_deref())?)
        }
        None => None,
    };
    let loaded = context.load(&root)?;
    let full = names.is_empty();
    if options.check {
        let cache = options
            .cache
            .then(|| open_cache(context, &root, &loaded))
            .transpose()?
            .flatten();
        let (temporary, mut report) = build_fresh(context, &root, &loaded, names, cache.as_ref())?;
        if !context.printer.json {
            let outcome = print_findings(context, &loaded, &mut report);
            if outcome != Outcome::Success {
                context.printer.err("nothing was written\n");
                return Ok(outcome);
            }
        }
        return check(context, &root, temporary.path(), &mut report, full);
    }
    let kustomize = context.kustomize()?;
    let workspace = Workspace::open(&root, context.limits.lock_timeout)?;
    if let Some(recovered) = &workspace.recovered {
        context.printer.err(&format!("note: {recovered}\n"));
    }
    let cache = options
        .cache
        .then(|| open_cache(context, &root, &loaded))
        .transpose()?
        .flatten();
    let mut report = render::build(
        &loaded,
        &context.registry,
        names,
        &kustomize,
        context.checks,
        cache.as_ref(),
        &root,
        &workspace.staging(),
        render::Output::Stage,
        &progress::Bar::stderr(),
    )?;
    let outcome = print_findings(context, &loaded, &mut report);
    if outcome != Outcome::Success {
        context.printer.err("nothing was written\n");
        return Ok(outcome);
    }
    if let Some(prepared) = &prepared {
        // Before the swap: a commit that git's ignore rules would thin out is refused whole.
        let paths = commit_paths(context, &root, &workspace.staging(), &report, &loaded)?;
        let ignored = commit::ignored(prepared, paths)?;
        if let Some(first) = ignored.first() {
            return Err(aiml::gitops::GitError::Ignored {
                first: first.clone(),
                count: ignored.len(),
            }
            .into());
        }
    }
    let comparison = workspace.commit(
        &report.folders(),
        &report.unchanged(),
        full,
        if options.force {
            HandEdits::Overwrite
        } else {
            HandEdits::Refuse
        },
    )?;
    report_foreign(context, &comparison);
    if let Some(cache) = &cache {
        remember(
            cache,
            &root,
            &report,
            full.then(|| blueprint_names(context, &loaded)),
        );
    }
    let reused = report.blueprints.iter().filter(|b| b.cached).count();
    context.printer.err(&format!(
        "rendered {} ({}{}){}; {} changed\n",
        plural(report.blueprints.len(), "blueprint"),
        plural(report.object_count(), "object"),
        if reused > 0 {
            format!("; {reused} unchanged, reused from the cache")
        } else {
            String::new()
        },
        if report.sync {
            " and the sync wiring"
        } else {
            ""
        },
        plural(comparison.drift.len(), "file")
    ));
    let (Some(prepared), Some(commit_options)) = (prepared, &options.commit) else {
        return Ok(Outcome::Success);
    };
    // The lock is held until the commit is made: no other render changes the files between
    // the swap and the commit.
    let committed = commit::commit(
        &prepared,
        commit_options.message.as_deref(),
        &blueprint_files(context, &loaded),
    )
    .map_err(|error| {
        anyhow::anyhow!(
            "the render succeeded and overlays/ and rendered/ hold its output, but the git commit failed: {error}; commit the files with git, or fix the cause and run `kubectl aiml render --commit` again (it renders nothing new and commits)"
        )
    })?;
    match committed {
        Committed::Nothing => context
            .printer
            .err("nothing to commit: blueprints, overlays and rendered output are as committed\n"),
        Committed::Commit {
            short_id,
            branch,
            subject,
            files,
            index_error,
            switched,
        } => {
            context.printer.err(&format!(
                "committed {short_id} on `{branch}`: {subject} ({})\n",
                plural(files, "file")
            ));
            if switched {
                context.printer.err(&format!(
                    "switched to `{branch}`: the checkout follows the commit (`git switch -` goes back)\n"
                ));
            }
            let hooks = commit::hooks(&prepared);
            if !hooks.is_empty() {
                context.printer.err(&format!(
                    "note: the repository has git hooks ({}), which this commit did not run: `--commit` commits with libgit2, which runs none. Run them yourself (e.g. `git hook run pre-commit`), or commit with git instead\n",
                    hooks.join(", ")
                ));
            }
            if let Some(error) = index_error {
                anyhow::bail!(
                    "committed {short_id}, but the git index could not be updated ({error}): `git status` shows the committed files as changed until `git reset -q` refreshes the index"
                );
            }
        }
    }
    Ok(Outcome::Success)
}

/// Renders into a temporary folder without touching the repository (waiting for a render in
/// progress, so that it never reads a half-done swap), printing the findings. `Err` with the
/// outcome when findings stop the render.
pub(super) fn fresh(
    context: &Context<'_>,
    root: &Path,
    loaded: &Loaded,
    names: &[String],
    cache: Option<&Cache>,
) -> anyhow::Result<Result<(tempfile::TempDir, Report), Outcome>> {
    let (temporary, mut report) = build_fresh(context, root, loaded, names, cache)?;
    let outcome = print_findings(context, loaded, &mut report);
    if outcome != Outcome::Success {
        return Ok(Err(outcome));
    }
    Ok(Ok((temporary, report)))
}

/// [`fresh`] without printing the findings.
fn build_fresh(
    context: &Context<'_>,
    root: &Path,
    loaded: &Loaded,
    names: &[String],
    cache: Option<&Cache>,
) -> anyhow::Result<(tempfile::TempDir, Report)> {
    let kustomize = context.kustomize()?;
    workspace::wait_for_renders(root, context.limits.lock_timeout)?;
    let temporary = super::interrupt::temporary_dir("aiml-check-")?;
    let report = render::build(
        loaded,
        &context.registry,
        names,
        &kustomize,
        context.checks,
        cache,
        root,
        temporary.path(),
        render::Output::Stage,
        &progress::Bar::stderr(),
    )?;
    Ok((temporary, report))
}

fn print_findings(context: &Context<'_>, loaded: &Loaded, report: &mut Report) -> Outcome {
    let suppressed = context.suppressions.apply(&mut report.diagnostics) + report.suppressed();
    context
        .printer
        .diagnostics(&report.diagnostics, suppressed, &|f| loaded.text(f));
    outcome_of(report)
}

/// `render --check`: compares a fresh render in `staging` with the repository. With `-o json`
/// the findings were not printed yet: one JSON object on stdout holds them and the stale
/// files ([`check_json`]).
fn check(
    context: &Context<'_>,
    root: &Path,
    staging: &Path,
    report: &mut Report,
    full: bool,
) -> anyhow::Result<Outcome> {
    if context.printer.json {
        context.suppressions.apply(&mut report.diagnostics);
        let outcome = outcome_of(report);
        if outcome != Outcome::Success {
            context.printer.out(&check_json(report, None)?);
            return Ok(outcome);
        }
    }
    let comparison =
        workspace::compare(root, staging, &report.folders(), &report.unchanged(), full)?;
    report_foreign(context, &comparison);
    if context.printer.json {
        context.printer.out(&check_json(report, Some(&comparison))?);
    }
    if comparison.drift.is_empty() {
        context.printer.err(&format!(
            "{} up to date ({})\n",
            plural(report.blueprints.len(), "blueprint"),
            plural(report.object_count(), "object")
        ));
        return Ok(Outcome::Success);
    }
    for d in &comparison.drift {
        let verb = match d.change {
            Change::Added => "would add",
            Change::Modified => "would change",
            Change::Removed => "would remove",
        };
        let by_hand = if comparison.hand_edited.contains(&d.path) {
            " (edited by hand)"
        } else {
            ""
        };
        context
            .printer
            .err(&format!("{verb} {}{by_hand}\n", d.path));
    }
    context.printer.err(&format!(
        "{} out of date: run `kubectl aiml render` and commit the result\n",
        plural(comparison.drift.len(), "file")
    ));
    Ok(Outcome::Findings)
}

/// `render --check -o json`: `{"checked", "up_to_date", "stale": [{"path", "change",
/// "edited_by_hand"}], "findings": [...]}`. `comparison` is `None` when findings stopped the
/// render before anything was compared (`checked: false`).
fn check_json(report: &Report, comparison: Option<&Comparison>) -> anyhow::Result<String> {
    let findings: serde_json::Value =
        serde_json::from_str(&aiml::diagnostic::render_json(&report.diagnostics))?;
    let stale: Vec<serde_json::Value> = comparison
        .map(|c| &c.drift[..])
        .unwrap_or_default()
        .iter()
        .map(|d| {
            serde_json::json!({
                "path": d.path,
                "change": match d.change {
                    Change::Added => "added",
                    Change::Modified => "modified",
                    Change::Removed => "removed",
                },
                "edited_by_hand": comparison.is_some_and(|c| c.hand_edited.contains(&d.path)),
            })
        })
        .collect();
    let value = serde_json::json!({
        "checked": comparison.is_some(),
        "up_to_date": comparison.is_some() && stale.is_empty(),
        "stale": stale,
        "findings": findings,
    });
    Ok(format!("{}\n", serde_json::to_string_pretty(&value)?))
}

/// Every file a render commit will hold, relative to the repository: the blueprint files,
/// `aiml.yaml`, `kinds/`, and each rendered blueprint's and the sync wiring's folders under
/// `overlays/` and `rendered/` (from `staging` when this render staged them, else as they are).
fn commit_paths(
    context: &Context<'_>,
    root: &Path,
    staging: &Path,
    report: &Report,
    loaded: &Loaded,
) -> anyhow::Result<Vec<String>> {
    use aiml::repo::{OVERLAYS_DIR, RENDERED_DIR, display_path, files_under};
    let mut paths: Vec<String> = blueprint_files(context, loaded).into_keys().collect();
    let settings = root.join(aiml::settings::SETTINGS_FILE);
    if settings.exists() {
        paths.push(aiml::settings::SETTINGS_FILE.to_string());
    }
    let under = |base: &Path, relative: &str, paths: &mut Vec<String>| -> std::io::Result<()> {
        let dir = base.join(relative);
        if dir.is_dir() {
            for file in files_under(&dir)? {
                paths.push(format!("{relative}/{}", display_path(&dir, &file)));
            }
        }
        Ok(())
    };
    under(root, aiml::kinds::repository::KINDS_DIR, &mut paths)?;
    let staged: std::collections::BTreeSet<String> = report.folders().into_iter().collect();
    let folders = report
        .blueprints
        .iter()
        .map(|b| b.name.clone())
        .chain(report.sync.then(|| aiml::sync::SYNC_DIR.to_string()));
    for name in folders {
        let base = if staged.contains(&name) {
            staging
        } else {
            root
        };
        for top in [OVERLAYS_DIR, RENDERED_DIR] {
            under(base, &format!("{top}/{name}"), &mut paths)?;
        }
    }
    Ok(paths)
}

/// Each blueprint file's blueprint names, for the commit message.
fn blueprint_files(context: &Context<'_>, loaded: &Loaded) -> BTreeMap<String, Vec<String>> {
    let mut files: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for blueprint in loaded.blueprints(&context.registry) {
        files
            .entry(blueprint.file.to_string())
            .or_default()
            .push(blueprint.name.to_string());
    }
    files
}

/// Entries under `overlays/` and `rendered/` that the tool did not generate are left alone,
/// and said so.
fn report_foreign(context: &Context<'_>, comparison: &Comparison) {
    for path in &comparison.foreign {
        context.printer.err(&format!(
            "warning: `{path}` was not generated by kubectl-aiml (no `{}` lists it); left alone\n",
            workspace::MARKER
        ));
    }
}

/// The repository's render cache, keyed on this run's settings, checks and kustomize (`None`
/// when `AIML_CACHE=off`).
fn open_cache(
    context: &Context<'_>,
    root: &Path,
    loaded: &Loaded,
) -> anyhow::Result<Option<Cache>> {
    let kustomize = context.kustomize()?;
    Ok(Cache::open(
        root,
        &cache::context(&[
            &format!("{:?}", loaded.settings),
            &format!("{:?}", context.checks.options),
            &format!("{:?}", context.checks.policy),
            // Which binary built the output: a new kustomize is a new cache.
            &format!("{kustomize:?}"),
            &kustomize.identity(),
        ]),
    ))
}

/// Records what this render wrote, once it is on disk; forgets removed blueprints after a
/// full render. A cache that cannot be written costs speed, never correctness: say so, go on.
fn remember(
    cache: &Cache,
    root: &Path,
    report: &Report,
    all: Option<std::collections::BTreeSet<String>>,
) {
    use rayon::prelude::*;
    let failed = report
        .blueprints
        .par_iter()
        .filter(|b| !b.cached)
        .filter_map(|b| b.record.as_ref().map(|record| (b, record)))
        .filter(|(b, record)| {
            cache
                .store(root, &b.name, record, b.cached_result())
                .is_err()
        })
        .count();
    if let Some(all) = all {
        cache.retain(&all);
    }
    let _ = failed;
}

fn blueprint_names(context: &Context<'_>, loaded: &Loaded) -> std::collections::BTreeSet<String> {
    loaded
        .blueprints(&context.registry)
        .iter()
        .map(|b| b.name.to_string())
        .collect()
}

//! `kubectl aiml status [NAME…] [--wait[=TIMEOUT]]`: what the clusters applied of `rendered/`
//! and whether it is ready, one line per blueprint and cluster (`-o json|yaml`: everything).

use std::time::{Duration, Instant};

use aiml::diagnostic::sanitize;
use aiml::gitops::{Repo, diff};
use aiml::live::clusters::{Options as ClusterOptions, Source};
use aiml::live::health::State;
use aiml::live::status::{self, Report, TargetStatus, Verdict};
use aiml::live::targets::{self, ClusterId};
use aiml::repo::RENDERED_DIR;

use super::{Context, Outcome, Output};

/// How often `--wait` asks again.
const POLL: Duration = Duration::from_secs(2);
/// Longest problem shown on the one-line view (the JSON has it whole).
const MAX_PROBLEM: usize = 240;

/// The blueprints asked about and how to reach their clusters (`status`, `diff --live`).
pub(super) struct Selection {
    /// The blueprints (all when empty).
    pub names: Vec<String>,
    /// `--context` and `--request-timeout`.
    pub clusters: ClusterOptions,
}

/// What `status` was asked to do.
pub(super) struct Options {
    /// Which blueprints, which clusters.
    pub selection: Selection,
    /// `--wait`: how long to wait for everything to be ready.
    pub wait: Option<Duration>,
}

pub(super) fn run(
    context: &Context<'_>,
    output: Output,
    options: &Options,
) -> anyhow::Result<Outcome> {
    let root = context.root()?;
    // What the sync engine pulls is the committed output: read it from HEAD when there is one
    // (uncommitted renders are not applied anywhere yet), else from the working tree.
    let repo = Repo::open(&root).ok();
    let head = repo.as_ref().and_then(Repo::head_commit);
    let limit = context.limits.max_file_size;
    // Only the named blueprints' folders (and the sync folder) are read.
    let selection = diff::Selection::Only(&options.selection.names);
    let side = match (&repo, &head) {
        (Some(repo), Some(_)) => {
            diff::read_tree_selected(repo, repo.tree_at("HEAD")?.as_ref(), limit, selection)?
        }
        _ => diff::read_dir_selected(&root.join(RENDERED_DIR), limit, selection)?,
    };
    check_names(&side, &options.selection.names)?;
    let Some(settings) = settings(context, &root)? else {
        return Ok(Outcome::Failure);
    };
    let source = Source::discover();
    let runtime = status::runtime()?;
    let began = Instant::now();
    let report = loop {
        let report = runtime.block_on(status::collect(
            &side,
            &settings,
            &options.selection.names,
            head.clone(),
            &options.selection.clusters,
            &source,
            context.limits.max_live_objects,
        ));
        let Some(wait) = options.wait else {
            break report;
        };
        if report.verdict() == Verdict::Ready || report.is_terminal() || began.elapsed() >= wait {
            break report;
        }
        std::thread::sleep(POLL.min(wait.saturating_sub(began.elapsed())));
    };
    match output {
        Output::Json => context
            .printer
            .out_json(&serde_json::to_string_pretty(&report)?),
        Output::Yaml => context.printer.out(&serde_saphyr::to_string(&report)?),
        _ => context.printer.out(&text(&report)),
    }
    if options.wait.is_some() && report.verdict() == Verdict::NotReady && !report.is_terminal() {
        context.printer.err(&format!(
            "not ready after waiting {}\n",
            aiml::limits::human_duration(began.elapsed())
        ));
    }
    Ok(match report.verdict() {
        Verdict::Ready => Outcome::Success,
        Verdict::NotReady => Outcome::Findings,
        Verdict::CouldNotAsk => Outcome::Failure,
    })
}

/// Refuses names without rendered output (with the closest one), and an empty `rendered/`.
pub(super) fn check_names(side: &diff::Side, names: &[String]) -> anyhow::Result<()> {
    let known = targets::blueprints(side);
    if known.is_empty() {
        anyhow::bail!(
            "no rendered output under `{RENDERED_DIR}/`: run `kubectl aiml render` and commit it first"
        );
    }
    for name in names {
        if !known.contains(name) {
            let suggestion = aiml::catalog::closest(name, known.iter().map(String::as_str))
                .map(|s| format!("; did you mean `{s}`?"))
                .unwrap_or_default();
            anyhow::bail!(
                "no blueprint named `{}` under `{RENDERED_DIR}/`{suggestion}",
                sanitize(name, 80)
            );
        }
    }
    Ok(())
}

/// The repository's settings; `None` (findings printed) when `aiml.yaml` is malformed.
pub(super) fn settings(
    context: &Context<'_>,
    root: &std::path::Path,
) -> anyhow::Result<Option<aiml::settings::Settings>> {
    let loaded = aiml::settings::load(root, context.limits.max_file_size)?;
    if loaded.diagnostics.is_empty() {
        return Ok(Some(loaded.settings));
    }
    let file = loaded.file.as_ref();
    context
        .printer
        .diagnostics(&loaded.diagnostics, 0, &|name: &str| {
            file.filter(|f| f.path == name).map(|f| f.text.clone())
        });
    Ok(None)
}

/// One line per target, aligned, then the reasons clusters could not be asked.
fn text(report: &Report) -> String {
    // The same reason for many targets (no kubeconfig, one cluster down) is told once.
    let mut reasons: Vec<String> = Vec::new();
    let rows: Vec<[String; 6]> = report
        .targets
        .iter()
        .map(|t| {
            [
                t.blueprint.clone(),
                t.target.to_string(),
                cluster(t),
                if t.error.is_some() {
                    "-".to_string()
                } else {
                    format!("{}/{}", t.ready, t.total)
                },
                sync(t, report.head.as_deref()),
                state(t, &mut reasons),
            ]
        })
        .collect();
    let header = ["BLUEPRINT", "TARGET", "CLUSTER", "READY", "SYNC", "STATUS"].map(str::to_string);
    let mut widths = [0usize; 6];
    for row in std::iter::once(&header).chain(&rows) {
        for (width, cell) in widths.iter_mut().zip(row) {
            *width = (*width).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (i, (cell, width)) in row.iter().zip(widths).enumerate() {
            if i + 1 == row.len() {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<width$}  "));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    for (index, reason) in reasons.iter().enumerate() {
        out.push_str(&format!("[{}] {reason}\n", index + 1));
    }
    let mut notes: Vec<String> = report
        .targets
        .iter()
        .flat_map(|t| t.unread.iter().map(|u| sanitize(u, 400)))
        .collect();
    notes.sort();
    notes.dedup();
    for note in notes {
        out.push_str(&format!("note: {note}\n"));
    }
    out
}

fn cluster(target: &TargetStatus) -> String {
    let name = match &target.cluster {
        Some(ClusterId::ConfigConnectorHost) => "config-connector-host".to_string(),
        Some(other) => other.key(),
        None => "unknown".to_string(),
    };
    match &target.context {
        Some(context) if *context != name && !context.starts_with("gke_") => {
            format!("{name} ({})", sanitize(context, 60))
        }
        _ => sanitize(&name, 120),
    }
}

fn sync(target: &TargetStatus, head: Option<&str>) -> String {
    let Some(sync) = &target.sync else {
        return "-".to_string();
    };
    let short = |c: &str| c.chars().take(7).collect::<String>();
    match (&sync.synced.commit, sync.health.state) {
        (Some(commit), _) if head.is_some_and(|h| h == commit) => {
            format!("{} (HEAD)", short(commit))
        }
        (Some(commit), _) => short(&sanitize(commit, 40)),
        (None, State::Missing) => "missing".to_string(),
        (None, _) => "not synced".to_string(),
    }
}

fn state(target: &TargetStatus, reasons: &mut Vec<String>) -> String {
    if let Some(error) = &target.error {
        let reason = sanitize(&error.to_string(), 600);
        let number = match reasons.iter().position(|r| *r == reason) {
            Some(index) => index + 1,
            None => {
                reasons.push(reason);
                reasons.len()
            }
        };
        return format!("could not ask [{number}]");
    }
    let word = match target.state {
        State::Ready => "ready",
        State::Progressing => "progressing",
        State::Failed => "failed",
        State::Missing => "missing",
    };
    match &target.problem {
        Some(problem) => format!("{word}: {}", sanitize(problem, MAX_PROBLEM)),
        None => word.to_string(),
    }
}

/// `90`, `90s`, `5m`, `1h`, `1m30s`.
pub(super) fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let bad = || format!("`{text}` is not a duration: use e.g. `90s`, `5m` or `1h`");
    if let Ok(seconds) = text.parse::<u64>() {
        return Ok(Duration::from_secs(seconds));
    }
    let mut total = 0u64;
    let mut digits = String::new();
    for c in text.chars() {
        if c.is_ascii_digit() {
            digits.push(c);
            continue;
        }
        let unit = match c {
            's' => 1,
            'm' => 60,
            'h' => 3600,
            _ => return Err(bad()),
        };
        let n: u64 = digits.parse().map_err(|_| bad())?;
        total = n
            .checked_mul(unit)
            .and_then(|v| total.checked_add(v))
            .ok_or_else(bad)?;
        digits.clear();
    }
    if !digits.is_empty() || text.is_empty() {
        return Err(bad());
    }
    Ok(Duration::from_secs(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_write_them() {
        for (text, seconds) in [
            ("90", 90),
            ("90s", 90),
            ("5m", 300),
            ("1h", 3600),
            ("1m30s", 90),
        ] {
            assert_eq!(
                parse_duration(text),
                Ok(Duration::from_secs(seconds)),
                "{text}"
            );
        }
        for text in ["", "5x", "m", "1.5m", "-1s", "99999999999999999999h"] {
            assert!(parse_duration(text).is_err(), "{text}");
        }
    }
}

//! How a [`Diff`] is shown: text for terminals, Markdown for pull-request comments, JSON for
//! bots. All three say the same things in the same order: the summary, the impact
//! (destructive changes, accelerators, cost), the counts per blueprint, then each object.

use std::fmt::Write as _;

use super::diff::{Change, Diff, FieldChange, ObjectDiff};
use super::impact::{AcceleratorDelta, Cost, Impact, Refused};
use super::prices::HOURS_PER_MONTH;

/// GitHub refuses comments above 65,536 characters; the Markdown stops adding objects below.
const MARKDOWN_BUDGET: usize = 60_000;

/// Values longer than this are cut in tables and one-line output.
const VALUE_WIDTH: usize = 120;

fn describe(object: &ObjectDiff) -> String {
    describe_ref(&object.object)
}

/// `Kind namespace/name`, as people read objects.
fn describe_ref(id: &crate::diagnostic::ObjectRef) -> String {
    match &id.namespace {
        Some(namespace) => format!("{} {namespace}/{}", id.kind, id.name),
        None => format!("{} {}", id.kind, id.name),
    }
}

/// `Kind/namespace/name` (or `Kind/name`), as in the refused-update lines.
fn slashed(id: &crate::diagnostic::ObjectRef) -> String {
    match &id.namespace {
        Some(namespace) => format!("{}/{namespace}/{}", id.kind, id.name),
        None => format!("{}/{}", id.kind, id.name),
    }
}

/// The first few of `fields`, each shown by `show`, then how many more.
fn listed(fields: &[String], show: impl Fn(&str) -> String) -> String {
    const SHOWN: usize = 3;
    let mut text: Vec<String> = fields.iter().take(SHOWN).map(|f| show(f)).collect();
    if fields.len() > SHOWN {
        text.push(format!("and {} more", fields.len() - SHOWN));
    }
    text.join(", ")
}

fn symbol(change: &Change) -> &'static str {
    match change {
        Change::Added => "+",
        Change::Removed => "-",
        Change::Changed => "~",
        Change::Renamed { .. } => ">",
    }
}

fn usd(value: f64) -> String {
    let sign = if value < 0.0 { "-" } else { "" };
    format!("{sign}${:.2}", value.abs())
}

fn signed_usd(value: f64) -> String {
    if value >= 0.0 {
        format!("+{}", usd(value))
    } else {
        usd(value)
    }
}

fn short(value: &str) -> String {
    let one_line = value.replace('\n', "\\n");
    if one_line.chars().count() > VALUE_WIDTH {
        let cut: String = one_line.chars().take(VALUE_WIDTH).collect();
        format!("{cut}…")
    } else {
        one_line
    }
}

fn summary(diff: &Diff) -> String {
    let totals = diff.totals();
    if diff.is_empty() {
        return format!(
            "no differences between the rendered objects of {} and the {}",
            diff.base, diff.head
        );
    }
    let wiring = diff.blueprints.contains_key(crate::sync::SYNC_DIR);
    let blueprints = diff.blueprints.len() - usize::from(wiring);
    let mut scope = match blueprints {
        0 => String::new(),
        1 => "1 blueprint".to_string(),
        n => format!("{n} blueprints"),
    };
    if wiring {
        if !scope.is_empty() {
            scope.push_str(" and ");
        }
        scope.push_str("the sync wiring");
    }
    format!(
        "{} → {}: {} added, {} removed, {} changed in {scope}",
        diff.base, diff.head, totals.added, totals.removed, totals.changed,
    )
}

fn monthly(hourly: f64) -> String {
    let month = hourly * HOURS_PER_MONTH;
    let sign = if month < 0.0 { "-" } else { "+" };
    let whole = month.abs().round();
    // Thousands separators for the monthly figure only: it is the one people compare.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "rounded, non-negative, far below u64::MAX"
    )]
    let digits = (whole as u64).to_string();
    let mut grouped = String::new();
    for (index, digit) in digits.chars().enumerate() {
        if index > 0 && (digits.len() - index).is_multiple_of(3) {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    format!("{sign}${grouped}/month")
}

/// What both reports say of an accelerator delta: what is counted (`TPU v4 chips`), where,
/// before, after and the signed change.
fn delta_parts(delta: &AcceleratorDelta) -> (String, &str, i64, i64, String) {
    let what = format!("{} {}", delta.accelerator, delta.unit);
    let change = format!("{:+}", delta.after - delta.before);
    (what, delta.counted_in, delta.before, delta.after, change)
}

/// A price per hour, or `none` when there is none.
fn per_hour(usd_per_hour: Option<f64>, none: &str) -> String {
    usd_per_hour.map_or(none.to_string(), |v| format!("{}/h", usd(v)))
}

/// The peak (every pool at its largest) and, beside it, what bills while nothing trains or
/// serves.
fn cost_headline(cost: &Cost) -> String {
    format!(
        "peak {}/h → {}/h ({}/h, about {} at {} h); idle {}/h → {}/h ({}/h, about {})",
        usd(cost.before_usd_per_hour),
        usd(cost.after_usd_per_hour),
        signed_usd(cost.delta()),
        monthly(cost.delta()),
        HOURS_PER_MONTH,
        usd(cost.before_idle_usd_per_hour),
        usd(cost.after_idle_usd_per_hour),
        signed_usd(cost.idle_delta()),
        monthly(cost.idle_delta()),
    )
}

/// The plain-text report.
#[must_use]
pub fn text(diff: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{}", summary(diff));
    if diff.is_empty() {
        return out;
    }
    let impact = &diff.impact;
    out.push_str("\nImpact\n");
    if impact.is_empty() {
        out.push_str("  nothing destroyed, no accelerator or cost change\n");
    }
    for item in &impact.server_refused {
        let _ = writeln!(
            out,
            "  ! refused by the server ({}): {} [{}]: {}: {}",
            item.context,
            slashed(&item.object),
            item.blueprint,
            item.reason,
            item.message
        );
    }
    for item in &impact.replaced_runs {
        let _ = writeln!(
            out,
            "  new run replaces the old one: {} (was {}) [{}]: {}",
            slashed(&item.object),
            item.from,
            item.blueprint,
            item.consequence
        );
    }
    for item in &impact.refused {
        let _ = writeln!(
            out,
            "  ! cannot be applied in place: {} {} changed ({}; {}) [{}]\n      {}",
            slashed(&item.object),
            listed(&item.fields, str::to_string),
            item.why,
            item.source,
            item.blueprint,
            item.remedy
        );
    }
    for item in &impact.destructive {
        let _ = writeln!(
            out,
            "  ! {} {} [{}]: {}",
            item.action,
            describe_ref(&item.object),
            item.blueprint,
            item.consequence
        );
    }
    for delta in &impact.accelerators {
        let (what, counted_in, before, after, change) = delta_parts(delta);
        let _ = writeln!(
            out,
            "  {what} in {counted_in}: {before} → {after} ({change})"
        );
    }
    let cost = &impact.cost;
    if !cost.lines.is_empty() || !cost.unpriced.is_empty() {
        let _ = writeln!(
            out,
            "  cost (estimate, list prices): {}",
            cost_headline(cost)
        );
        for line in &cost.lines {
            let _ = writeln!(
                out,
                "    {} [{}]: {} → {}, idle {} → {} ({})",
                line.object,
                line.blueprint,
                per_hour(line.before_usd_per_hour, "-"),
                per_hour(line.after_usd_per_hour, "-"),
                per_hour(line.before_idle_usd_per_hour, "-"),
                per_hour(line.after_idle_usd_per_hour, "-"),
                line.detail
            );
        }
        for why in &cost.unpriced {
            let _ = writeln!(out, "    not priced: {why}");
        }
        for note in &cost.notes {
            let _ = writeln!(out, "    note: {note}");
        }
        if !cost.sources.is_empty() {
            let sources: Vec<String> = cost
                .sources
                .iter()
                .map(|(id, _, _, as_of)| format!("{id}: {as_of}"))
                .collect();
            let _ = writeln!(
                out,
                "    prices: data/prices.tsv ({}); no discounts, disks or egress",
                sources.join("; ")
            );
        }
    }
    out.push_str("\nBlueprints\n");
    for (name, counts) in &diff.blueprints {
        let _ = writeln!(
            out,
            "  {name}: {} added, {} removed, {} changed",
            counts.added, counts.removed, counts.changed
        );
    }
    out.push_str("\nObjects\n");
    for object in &diff.objects {
        let renamed = match &object.change {
            Change::Renamed { from }
                if crate::gitops::impact::is_run(&object.object.group, &object.object.kind) =>
            {
                format!(" (new run, replaces {from})")
            }
            Change::Renamed { from } => format!(" (renamed from {from}: generator hash changed)"),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  {} {} [{}]{renamed}",
            symbol(&object.change),
            describe(object),
            object.blueprint
        );
        for field in &object.fields {
            out.push_str(&text_field(field));
        }
    }
    if !diff.unreadable.is_empty() {
        let _ = writeln!(
            out,
            "\nNot compared (not Kubernetes objects): {}",
            diff.unreadable.join(", ")
        );
    }
    out
}

fn text_field(field: &FieldChange) -> String {
    let multi_line = |value: &Option<String>| value.as_deref().is_some_and(|v| v.contains('\n'));
    if multi_line(&field.before) || multi_line(&field.after) {
        let mut out = format!("      {}:\n", field.path);
        let before = field.before.as_deref().unwrap_or("");
        let after = field.after.as_deref().unwrap_or("");
        for change in similar::TextDiff::from_lines(before, after).iter_all_changes() {
            let sign = match change.tag() {
                similar::ChangeTag::Delete => "-",
                similar::ChangeTag::Insert => "+",
                similar::ChangeTag::Equal => " ",
            };
            let _ = writeln!(
                out,
                "        {sign} {}",
                change.value().trim_end_matches('\n')
            );
        }
        return out;
    }
    match (&field.before, &field.after) {
        (Some(before), Some(after)) => {
            format!(
                "      {}: {} → {}\n",
                field.path,
                short(before),
                short(after)
            )
        }
        (None, Some(after)) => format!("      + {}: {}\n", field.path, short(after)),
        (Some(before), None) => format!("      - {}: {}\n", field.path, short(before)),
        (None, None) => String::new(),
    }
}

/// Inline code that survives any content: a fence longer than any backtick run inside.
fn code(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{}{pad}{fence}", text.replace('|', "\\|"))
}

fn cell(value: Option<&str>) -> String {
    value.map_or_else(|| "—".to_string(), |value| code(&short(value)))
}

fn html(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The Markdown report, for a pull-request comment.
#[must_use]
pub fn markdown(diff: &Diff) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "### kubectl aiml diff\n\n{}", summary(diff));
    if diff.is_empty() {
        return out;
    }
    out.push_str("\n| blueprint | added | removed | changed |\n|---|---:|---:|---:|\n");
    for (name, counts) in &diff.blueprints {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            code(name),
            counts.added,
            counts.removed,
            counts.changed
        );
    }
    markdown_impact(&mut out, &diff.impact);
    out.push_str("\n#### Objects\n\n");
    let mut left_out = 0;
    for object in &diff.objects {
        if out.len() > MARKDOWN_BUDGET {
            left_out += 1;
            continue;
        }
        out.push_str(&markdown_object(object));
    }
    if left_out > 0 {
        let _ = writeln!(
            out,
            "\n{left_out} more objects left out to fit a comment: run `kubectl aiml diff` to see them."
        );
    }
    if !diff.unreadable.is_empty() {
        let files: Vec<String> = diff.unreadable.iter().map(|f| code(f)).collect();
        let _ = writeln!(
            out,
            "\nNot compared (not Kubernetes objects): {}",
            files.join(", ")
        );
    }
    out
}

fn markdown_impact(out: &mut String, impact: &Impact) {
    out.push_str("\n#### Impact\n\n");
    if impact.is_empty() {
        out.push_str("Nothing is destroyed; no accelerator or cost change.\n");
        return;
    }
    for item in &impact.server_refused {
        out.push_str(&format!(
            "- :no_entry: **refused by the server** (`{}`): {} ({}): {}: {}\n",
            html(&item.context),
            code(&slashed(&item.object)),
            code(&item.blueprint),
            html(&item.reason),
            html(&item.message),
        ));
    }
    for item in &impact.replaced_runs {
        let _ = writeln!(
            out,
            "- :repeat: **new run replaces the old one**: {} (was {}) ({}): {}",
            code(&slashed(&item.object)),
            code(&item.from),
            code(&item.blueprint),
            item.consequence
        );
    }
    if !impact.refused.is_empty() {
        out.push_str("**Refused updates** (the API server or a webhook rejects these changes: the apply fails until the object is deleted and created again; nothing is destroyed until then)\n\n");
        for item in &impact.refused {
            out.push_str(&markdown_refused(item));
        }
        out.push('\n');
    }
    if !impact.destructive.is_empty() {
        out.push_str("**Destructive changes** (GCP cannot make these in place: Config Connector deletes and recreates the resource)\n\n");
        for item in &impact.destructive {
            let _ = writeln!(
                out,
                "- :warning: **{}** {} ({}): {}",
                item.action,
                code(&describe_ref(&item.object)),
                code(&item.blueprint),
                item.consequence
            );
        }
        out.push('\n');
    }
    if !impact.accelerators.is_empty() {
        out.push_str("**Accelerators**\n\n| accelerator | counted in | before | after | change |\n|---|---|---:|---:|---:|\n");
        for delta in &impact.accelerators {
            let (what, counted_in, before, after, change) = delta_parts(delta);
            let _ = writeln!(
                out,
                "| {what} | {counted_in} | {before} | {after} | **{change}** |"
            );
        }
        out.push('\n');
    }
    let cost = &impact.cost;
    if !cost.lines.is_empty() || !cost.unpriced.is_empty() {
        let _ = writeln!(
            out,
            "**Cost (estimate, list prices):** {}\n",
            cost_headline(cost)
        );
        if !cost.lines.is_empty() {
            out.push_str(
                "| object | blueprint | before | after | idle before | idle after | how |\n|---|---|---:|---:|---:|---:|---|\n",
            );
            for line in &cost.lines {
                let _ = writeln!(
                    out,
                    "| {} | {} | {} | {} | {} | {} | {} |",
                    code(&line.object),
                    code(&line.blueprint),
                    per_hour(line.before_usd_per_hour, "—"),
                    per_hour(line.after_usd_per_hour, "—"),
                    per_hour(line.before_idle_usd_per_hour, "—"),
                    per_hour(line.after_idle_usd_per_hour, "—"),
                    html(&line.detail).replace('|', "\\|")
                );
            }
            out.push('\n');
        }
        for why in &cost.unpriced {
            let _ = writeln!(out, "- not priced: {}", html(why));
        }
        for note in &cost.notes {
            let _ = writeln!(out, "- note: {}", html(note));
        }
        let sources: Vec<String> = cost
            .sources
            .iter()
            .map(|(id, what, url, as_of)| format!("[{id}]({url}) {} ({as_of})", html(what)))
            .collect();
        let _ = writeln!(
            out,
            "\n<sub>Estimate from the price table shipped with kubectl-aiml (`data/prices.tsv`): list prices, no committed-use or sustained-use discounts, no disks or egress. Sources: {}.</sub>",
            sources.join("; ")
        );
    }
}

fn markdown_refused(item: &Refused) -> String {
    let source = &item.source;
    format!(
        "- :no_entry: **cannot be applied in place**: {} ({}) {} changed: {} ([{} {}](https://github.com/{}/blob/{}/{}) `{}`). {}\n",
        code(&slashed(&item.object)),
        code(&item.blueprint),
        listed(&item.fields, code),
        html(&item.why),
        source.repository,
        source.reference,
        source.repository,
        source.commit,
        source.file,
        source.function,
        html(&capitalised(&item.remedy)),
    )
}

fn capitalised(text: &str) -> String {
    let mut chars = text.chars();
    chars.next().map_or_else(String::new, |first| {
        first.to_uppercase().chain(chars).collect::<String>() + "."
    })
}

fn markdown_object(object: &ObjectDiff) -> String {
    let mut out = String::new();
    let renamed = match &object.change {
        Change::Renamed { from }
            if crate::gitops::impact::is_run(&object.object.group, &object.object.kind) =>
        {
            format!(" (new run, replaces {})", html(from))
        }
        Change::Renamed { from } => format!(" (renamed from {})", html(from)),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "<details><summary><code>{} {}</code> ({}){renamed}</summary>\n",
        symbol(&object.change),
        html(&describe(object)),
        html(&object.blueprint)
    );
    let _ = writeln!(out, "File: {}\n", code(&object.file));
    if !object.fields.is_empty() {
        out.push_str("| field | before | after |\n|---|---|---|\n");
        for field in &object.fields {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code(&field.path),
                cell(field.before.as_deref()),
                cell(field.after.as_deref())
            );
        }
        out.push('\n');
    }
    let fence = if object.patch.contains("```") {
        "~~~~"
    } else {
        "```"
    };
    let _ = writeln!(out, "{fence}diff\n{}{fence}\n\n</details>\n", object.patch);
    out
}

/// The JSON report: the same content, for bots.
pub fn json(diff: &Diff) -> Result<String, serde_json::Error> {
    let totals = diff.totals();
    let mut value = serde_json::json!({
        "base": diff.base,
        "head": diff.head,
        "differs": !diff.is_empty(),
        "totals": totals,
        "impact": {
            "refused": diff.impact.refused,
            "replaced_runs": diff.impact.replaced_runs,
            "destructive": diff.impact.destructive,
            "accelerators": diff.impact.accelerators,
            "cost": {
                "estimate": true,
                "currency": "USD",
                "basis": "list prices per hour (data/prices.tsv); peak: every node pool at its largest; idle: pools at their smallest, reservations and cluster fees",
                "before_per_hour": round(diff.impact.cost.before_usd_per_hour),
                "after_per_hour": round(diff.impact.cost.after_usd_per_hour),
                "delta_per_hour": round(diff.impact.cost.delta()),
                "before_idle_per_hour": round(diff.impact.cost.before_idle_usd_per_hour),
                "after_idle_per_hour": round(diff.impact.cost.after_idle_usd_per_hour),
                "idle_delta_per_hour": round(diff.impact.cost.idle_delta()),
                "lines": diff.impact.cost.lines.iter().map(|line| serde_json::json!({
                    "blueprint": line.blueprint,
                    "object": line.object,
                    "before_per_hour": line.before_usd_per_hour.map(round),
                    "after_per_hour": line.after_usd_per_hour.map(round),
                    "before_idle_per_hour": line.before_idle_usd_per_hour.map(round),
                    "after_idle_per_hour": line.after_idle_usd_per_hour.map(round),
                    "detail": line.detail,
                })).collect::<Vec<_>>(),
                "unpriced": diff.impact.cost.unpriced,
                "notes": diff.impact.cost.notes,
                "sources": diff.impact.cost.sources.iter().map(|(id, what, url, as_of)| serde_json::json!({
                    "id": id, "what": what, "url": url, "as_of": as_of,
                })).collect::<Vec<_>>(),
            },
        },
        "blueprints": diff.blueprints,
        "objects": diff.objects,
        "unreadable": diff.unreadable,
    });
    // Only `diff --live` asks a server; the revision diff's JSON stays as it was.
    if !diff.impact.server_refused.is_empty() {
        value["impact"]["server_refused"] = serde_json::to_value(&diff.impact.server_refused)?;
    }
    Ok(format!("{}\n", serde_json::to_string_pretty(&value)?))
}

/// Dollars to a hundredth of a cent: enough for any total, and stable in JSON.
fn round(value: f64) -> f64 {
    (value * 10_000.0).round() / 10_000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gitops::diff::{Side, diff, read_dir};

    #[test]
    fn the_summary_names_the_sync_wiring_apart_from_blueprints() {
        let dir = tempfile::tempdir().unwrap();
        let write = |path: &str, text: &str| {
            let full = dir.path().join(path);
            fs_err::create_dir_all(full.parent().unwrap()).unwrap();
            fs_err::write(full, text).unwrap();
        };
        write(
            "a/workload/ns/configmap_c.yaml",
            "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c, namespace: ns}\ndata: {k: \"1\\n2\\n\"}\n",
        );
        write(
            "_sync/clusters/p/l/c/config-management-system/rootsync.configsync.gke.io_aiml-a.yaml",
            "apiVersion: configsync.gke.io/v1beta1\nkind: RootSync\nmetadata: {name: aiml-a, namespace: config-management-system}\n",
        );
        let head = read_dir(dir.path(), u64::MAX).unwrap();
        let compared = diff(&Side::default(), &head, "HEAD", "working tree");
        let text = text(&compared);
        assert!(
            text.starts_with(
                "HEAD → working tree: 2 added, 0 removed, 0 changed in 1 blueprint and the sync wiring\n"
            ),
            "{text}"
        );
        let markdown = markdown(&compared);
        assert!(
            markdown.contains("<details><summary><code>+ ConfigMap ns/c</code> (a)</summary>"),
            "{markdown}"
        );
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("x|y"), "`x\\|y`");
    }
}

//! Findings as plain data, and the renderers that show them.
//!
//! A [`Diagnostic`] is what a rule or a blueprint check found: a rule id, a severity, where
//! (file, line, column, and the Kubernetes object), what was found, what was expected and how
//! to fix it. Stages collect every finding instead of stopping at the first, and hand them to
//! [`render_human`] (stderr, with a snippet of the source) or [`render_json`] (`-o json`).

use std::borrow::Cow;
use std::cmp::Ordering;
use std::fmt;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};
use serde::{Deserialize, Serialize};

use crate::yaml::Span;

/// A rule, for listings and docs. Each module that checks rules lists its own; the
/// catalog in `crate::rules` assembles them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable kebab-case id, as findings carry it.
    pub id: &'static str,
    /// What the rule checks, in one line.
    pub summary: &'static str,
}

/// Annotation that turns rules off for the object carrying it: a comma-separated list of
/// rule ids.
pub const IGNORE_ANNOTATION: &str = "aiml.dev/ignore";

/// How a finding names its rule's doc.
#[must_use]
pub fn doc_reference(id: &str) -> String {
    format!("kubectl aiml rules {id}")
}

/// How bad a finding is. Only errors change the exit code.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// The output would not work; the command exits 1 (or 2 for malformed input).
    Error,
    /// Worth a look; never changes the exit code.
    Warning,
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
        })
    }
}

/// A rule id: kebab-case, e.g. `tpu-chips-per-host`. Built-in rules use static strings;
/// rules defined at run time (schemas, repository-defined kinds) own theirs.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RuleId(Cow<'static, str>);

impl RuleId {
    /// The id as text.
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&'static str> for RuleId {
    fn from(id: &'static str) -> Self {
        Self(Cow::Borrowed(id))
    }
}

impl From<String> for RuleId {
    fn from(id: String) -> Self {
        Self(Cow::Owned(id))
    }
}

impl std::ops::Deref for RuleId {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for RuleId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RuleId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl fmt::Display for RuleId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The Kubernetes object a finding is about, shown as `kind/namespace/name`. Its identity
/// includes the API group: the core `Service` and serviceusage's `Service` are different
/// objects.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    /// API group, `""` for the core group.
    #[serde(skip_serializing_if = "str::is_empty", default)]
    pub group: String,
    /// `kind`, e.g. `JobSet`.
    pub kind: String,
    /// `metadata.namespace`, absent for cluster-scoped objects.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
}

impl fmt::Display for ObjectRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.namespace {
            Some(ns) => write!(f, "{}/{}/{}", self.kind, ns, self.name),
            None => write!(f, "{}/{}", self.kind, self.name),
        }
    }
}

/// Builder methods that set an optional text field of [`Diagnostic`] of the same name.
macro_rules! text_setters {
    ($($(#[$doc:meta])* $name:ident;)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub fn $name(mut self, $name: impl Into<String>) -> Self {
            self.$name = Some($name.into());
            self
        }
    )*};
}

/// One finding.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Diagnostic {
    /// Kebab-case rule id, e.g. `tpu-chips-per-host`.
    pub rule: RuleId,
    /// Error or warning.
    pub severity: Severity,
    /// Repository-relative path of the file the finding points into.
    pub file: String,
    /// 1-based line (0 when the finding is about a whole file).
    pub line: u32,
    /// 1-based column (0 when unknown).
    pub column: u32,
    /// The object the finding is about, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub object: Option<ObjectRef>,
    /// Dotted field path inside the object or blueprint, e.g. `spec.tpu.topology`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// One terse sentence: what is wrong.
    pub message: String,
    /// What was found.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub found: Option<String>,
    /// What was expected instead.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub expected: Option<String>,
    /// How to fix it, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fix: Option<String>,
    /// The blueprint field this finding most likely traces back to, used by `render` to point
    /// findings on generated objects at the line the user wrote. Not part of the output.
    #[serde(skip)]
    pub blueprint_field: Option<String>,
}

impl Diagnostic {
    /// An error for `rule` with a message; fill in the rest with the builder methods.
    #[must_use]
    pub fn error(rule: impl Into<RuleId>, message: impl Into<String>) -> Self {
        Self::new(rule.into(), Severity::Error, message.into())
    }

    /// A warning for `rule` with a message.
    #[must_use]
    pub fn warning(rule: impl Into<RuleId>, message: impl Into<String>) -> Self {
        Self::new(rule.into(), Severity::Warning, message.into())
    }

    fn new(rule: RuleId, severity: Severity, message: String) -> Self {
        Self {
            rule,
            severity,
            file: String::new(),
            line: 0,
            column: 0,
            object: None,
            field: None,
            message,
            found: None,
            expected: None,
            fix: None,
            blueprint_field: None,
        }
    }

    /// Sets file and position.
    #[must_use]
    pub fn at(mut self, file: impl Into<String>, span: Span) -> Self {
        self.file = file.into();
        self.line = span.line;
        self.column = span.column;
        self
    }

    /// Sets the object.
    #[must_use]
    pub fn object(mut self, object: ObjectRef) -> Self {
        self.object = Some(object);
        self
    }

    text_setters! {
        /// Sets the dotted field path.
        field;
        /// Sets what was found.
        found;
        /// Sets what was expected.
        expected;
        /// Sets the fix.
        fix;
        /// Sets the blueprint field that `render` should point at.
        blueprint_field;
    }

    /// Whether this is an error.
    #[must_use]
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// A copy fit for printing: control characters escaped and long values cut.
    #[must_use]
    pub fn printable(&self) -> Diagnostic {
        let short = |text: &str| sanitize(text, 200);
        let mut d = self.clone();
        d.message = sanitize(&d.message, 300);
        d.file = short(&d.file);
        d.field = d.field.as_deref().map(short);
        d.found = d.found.as_deref().map(short);
        d.expected = d.expected.as_deref().map(short);
        d.fix = d.fix.as_deref().map(|fix| sanitize(fix, 300));
        if let Some(object) = &mut d.object {
            object.kind = short(&object.kind);
            object.name = short(&object.name);
            object.namespace = object.namespace.as_deref().map(short);
        }
        d
    }

    fn sort_key(&self) -> (&str, u32, u32, &str, Severity, &str) {
        (
            &self.file,
            self.line,
            self.column,
            self.rule.as_str(),
            self.severity,
            &self.message,
        )
    }
}

/// Sorts findings by file, line, column and rule, and drops exact duplicates, so that output
/// does not depend on the order rules or threads ran in.
pub fn sort(diagnostics: &mut Vec<Diagnostic>) {
    diagnostics.sort_by(|a, b| {
        a.sort_key().cmp(&b.sort_key()).then_with(|| {
            a.object
                .cmp(&b.object)
                .then_with(|| a.field.cmp(&b.field))
                .then(Ordering::Equal)
        })
    });
    diagnostics.dedup();
}

/// `text` made safe to print on a terminal: control characters (escape sequences, carriage
/// returns, …) and bidirectional overrides become escapes (`\u{1b}`), and text longer than `max`
/// characters is cut with a note of how much was left out. Newlines are kept only when
/// `max` allows a multi-line text (more than 200).
#[must_use]
pub fn sanitize(text: &str, max: usize) -> String {
    let keep_newlines = max > 200;
    let mut out = String::with_capacity(text.len().min(max.saturating_add(32)));
    for (count, c) in text.chars().enumerate() {
        if count == max {
            let rest = text.chars().count() - count;
            out.push_str(&format!("… ({rest} more characters)"));
            break;
        }
        match c {
            '\n' if keep_newlines => out.push('\n'),
            '\t' => out.push('\t'),
            c if c == '\n' || is_hostile(c) => {
                out.push_str(&c.escape_unicode().to_string());
            }
            c => out.push(c),
        }
    }
    out
}

/// Characters a terminal acts on or that reorder text, other than line breaks and tabs: C0 and
/// C1 controls, DEL, bidirectional overrides and zero-width marks.
#[must_use]
pub fn is_hostile(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// Looks up the text of a file by its display path, for snippets.
pub type SourceLookup<'a> = dyn Fn(&str) -> Option<String> + 'a;

/// How many findings of one rule human output shows in full; the others are counted in one
/// line. A hostile or generated input can repeat a finding a hundred thousand times, which
/// nobody reads; `-o json` keeps every finding for tools.
pub const SHOWN_PER_RULE: usize = 20;

/// A file's text with where each line starts, looked up once per file (not per finding: a
/// stream's findings would otherwise cost its length each).
struct Lines {
    text: String,
    starts: Vec<usize>,
}

impl Lines {
    fn new(text: String) -> Self {
        let starts = std::iter::once(0)
            .chain(text.match_indices('\n').map(|(i, _)| i + 1))
            .collect();
        Self { text, starts }
    }

    /// Line `number` (1-based) without its line break.
    fn line(&self, number: u32) -> Option<&str> {
        let index = usize::try_from(number.checked_sub(1)?).ok()?;
        let start = *self.starts.get(index)?;
        let end = self
            .starts
            .get(index + 1)
            .map_or(self.text.len(), |next| next - 1);
        let line = self.text.get(start..end)?;
        Some(line.strip_suffix('\r').unwrap_or(line))
    }
}

/// Renders findings for people: one block each, with the offending line when the source is
/// known; past [`SHOWN_PER_RULE`] findings of a rule, one line counts the rest. `color`
/// selects ANSI styling.
#[must_use]
pub fn render_human(diagnostics: &[Diagnostic], sources: &SourceLookup<'_>, color: bool) -> String {
    let renderer = if color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut out = String::new();
    let mut per_rule: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    let mut files: std::collections::HashMap<&str, Option<Lines>> =
        std::collections::HashMap::new();
    for d in diagnostics {
        let seen = per_rule.entry(d.rule.as_str()).or_default();
        *seen += 1;
        if *seen > SHOWN_PER_RULE {
            continue;
        }
        let lines = files
            .entry(d.file.as_str())
            .or_insert_with(|| sources(&d.file).map(Lines::new));
        let d = &d.printable();
        let level = match d.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let mut notes: Vec<String> = Vec::new();
        if let Some(object) = &d.object {
            notes.push(format!("object: {object}"));
        }
        if let Some(found) = &d.found {
            notes.push(format!("found: {found}"));
        }
        if let Some(expected) = &d.expected {
            notes.push(format!("expected: {expected}"));
        }
        let line_text = lines
            .as_ref()
            .and_then(|lines| lines.line(d.line))
            // A very long line (minified input) would flood the terminal; the notes say enough.
            .filter(|line| line.len() <= 500)
            // The line is shown, never what it leaks: credentials in it are masked.
            .map(crate::secrets::mask);
        let line_text = line_text.as_deref();
        let mut group =
            Group::with_title(level.primary_title(d.message.as_str()).id(d.rule.as_str()));
        match line_text {
            Some(text) => {
                let start = char_offset(text, d.column);
                let end = token_end(text, start);
                let label = d.field.as_deref().unwrap_or("");
                group = group.element(
                    Snippet::source(text)
                        .line_start(d.line as usize)
                        .path(d.file.as_str())
                        .annotation(AnnotationKind::Primary.span(start..end).label(label)),
                );
            }
            None => {
                let mut location = if d.line > 0 {
                    format!("{}:{}", d.file, d.line)
                } else {
                    d.file.clone()
                };
                // Without a line to label, the field path says where.
                if let Some(field) = d.field.as_deref().filter(|f| !f.is_empty()) {
                    location.push_str(&format!(", at `{field}`"));
                }
                notes.insert(0, format!("in {location}"));
            }
        }
        for note in &notes {
            group = group.element(Level::NOTE.message(note.as_str()));
        }
        if let Some(fix) = &d.fix {
            group = group.element(Level::HELP.message(fix.as_str()));
        }
        let doc = format!("rule: `{}`", doc_reference(d.rule.as_str()));
        group = group.element(Level::NOTE.message(doc.as_str()));
        let report: [Group<'_>; 1] = [group];
        out.push_str(&renderer.render(&report));
        out.push_str("\n\n");
    }
    for (rule, seen) in per_rule {
        if let Some(more) = seen.checked_sub(SHOWN_PER_RULE).filter(|more| *more > 0) {
            out.push_str(&format!(
                "… and {more} more `{}` findings (`-o json` lists every finding)\n",
                sanitize(rule, 100)
            ));
        }
    }
    out
}

/// One-line summary: `2 errors, 1 warning`, and `(3 suppressed)` when rules were turned off.
#[must_use]
pub fn summary(diagnostics: &[Diagnostic], suppressed: usize) -> String {
    let errors = diagnostics.iter().filter(|d| d.is_error()).count();
    let warnings = diagnostics.len() - errors;
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    let mut text = format!(
        "{}, {}",
        plural(errors, "error"),
        plural(warnings, "warning")
    );
    if suppressed > 0 {
        text.push_str(&format!(
            " ({suppressed} suppressed by `--ignore` or `aiml.dev/ignore`)"
        ));
    }
    text
}

/// Renders findings as a JSON array (stable field order, sorted input).
#[must_use]
pub fn render_json(diagnostics: &[Diagnostic]) -> String {
    let printable: Vec<serde_json::Value> = diagnostics
        .iter()
        .map(|d| {
            let mut value = serde_json::to_value(d.printable()).unwrap_or_default();
            if let Some(map) = value.as_object_mut() {
                map.insert("doc".into(), doc_reference(d.rule.as_str()).into());
            }
            value
        })
        .collect();
    let mut json = serde_json::to_string_pretty(&printable).unwrap_or_else(|_| "[]".into());
    json.push('\n');
    json
}

/// Byte offset of a 1-based character column in `line`.
fn char_offset(line: &str, column: u32) -> usize {
    let column = column.max(1) as usize - 1;
    line.char_indices()
        .nth(column)
        .map_or(line.len(), |(i, _)| i)
}

/// End of the YAML token starting at `start`: up to the `: ` of a key, or the end of a scalar.
fn token_end(line: &str, start: usize) -> usize {
    let rest = &line[start..];
    // A quoted scalar ends at its closing quote.
    if let Some(quote) = rest.chars().next().filter(|c| *c == '"' || *c == '\'')
        && let Some(close) = rest[1..].find(quote)
    {
        return start + close + 2;
    }
    let end = rest
        .find(": ")
        .or_else(|| rest.strip_suffix(':').map(str::len))
        // Inside a flow collection (`{a: 1, b: [2]}`) a scalar ends at `,`, `}` or `]`.
        .or_else(|| rest.find([',', '}', ']']))
        .or_else(|| rest.find(" #"))
        .unwrap_or_else(|| rest.trim_end().len());
    start + end.max(1).min(rest.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Diagnostic {
        Diagnostic::error(
            "tpu-topology-mismatch",
            "topology `4x4` does not match `v4-32`",
        )
        .at(
            "blueprints/a.yaml",
            Span {
                line: 2,
                column: 13,
                offset: 0,
                len: 0,
            },
        )
        .field("spec.tpu.topology")
        .found("4x4")
        .expected("2x2x4")
        .fix("set `topology: 2x2x4` or remove it")
    }

    #[test]
    fn renders_snippet_with_notes() {
        let text = "spec:\n  topology: 4x4\n";
        let lookup = |f: &str| (f == "blueprints/a.yaml").then(|| text.to_string());
        insta::assert_snapshot!(render_human(&[sample()], &lookup, false), @"
        error[tpu-topology-mismatch]: topology `4x4` does not match `v4-32`
         --> blueprints/a.yaml:2:13
          |
        2 |   topology: 4x4
          |             ^^^ spec.tpu.topology
          |
          = note: found: 4x4
          = note: expected: 2x2x4
          = help: set `topology: 2x2x4` or remove it
          = note: rule: `kubectl aiml rules tpu-topology-mismatch`
        ");
    }

    #[test]
    fn renders_location_without_source() {
        let lookup = |_: &str| None;
        let text = render_human(&[sample()], &lookup, false);
        assert!(text.contains("in blueprints/a.yaml:2"), "{text}");
    }

    #[test]
    fn printed_text_cannot_drive_the_terminal_and_stays_short() {
        let mut hostile = sample();
        hostile.message = "bad value `\u{1b}]0;owned\u{7}\u{1b}[2J`".into();
        hostile.found = Some("x".repeat(10_000));
        hostile.file = "blueprints/\u{1b}[31mred.yaml".into();
        let lookup = |_: &str| None;
        for text in [
            render_human(&[hostile.clone()], &lookup, false),
            render_json(&[hostile]),
        ] {
            assert!(
                !text.contains('\u{1b}') && !text.contains('\u{7}'),
                "{text}"
            );
            assert!(text.len() < 2_000, "{} bytes", text.len());
            assert!(text.contains("more characters"), "{text}");
        }
    }

    #[test]
    fn a_stream_of_findings_reads_its_file_once_and_shows_a_few_per_rule() {
        // One finding per line of a long file: looking the file up (a copy of its text) and
        // walking to the line for each finding made printing quadratic.
        let count = 5_000;
        let text = "x: 1\n".repeat(count);
        let findings: Vec<Diagnostic> = (1..=count)
            .map(|line| {
                let span = Span {
                    line: u32::try_from(line).unwrap(),
                    column: 1,
                    ..Span::default()
                };
                Diagnostic::warning("not-an-object", "skipped").at("big.yaml", span)
            })
            .collect();
        let lookups = std::cell::Cell::new(0);
        let lookup = |_: &str| {
            lookups.set(lookups.get() + 1);
            Some(text.clone())
        };
        let out = render_human(&findings, &lookup, false);
        assert_eq!(lookups.get(), 1);
        assert_eq!(
            out.matches("warning[not-an-object]").count(),
            SHOWN_PER_RULE
        );
        let more = count - SHOWN_PER_RULE;
        assert!(
            out.ends_with(&format!(
                "… and {more} more `not-an-object` findings (`-o json` lists every finding)\n"
            )),
            "{out}"
        );
        assert!(out.contains("20 | x: 1"), "{out}");
    }

    #[test]
    fn underlines_one_token() {
        let underline = |line: &str, column: u32| {
            let start = char_offset(line, column);
            line[start..token_end(line, start)].to_string()
        };
        assert_eq!(underline("  topology: 4x4", 13), "4x4");
        assert_eq!(underline("  - {name: c, value: 1}]}", 22), "1");
        assert_eq!(underline("  image: \"a, b\" # x", 10), "\"a, b\"");
        assert_eq!(underline("  spec:", 3), "spec");
        assert_eq!(underline("  size: large # why", 9), "large");
    }

    #[test]
    fn sorts_and_deduplicates() {
        let mut all = vec![sample(), sample().at("a.yaml", Span::default()), sample()];
        sort(&mut all);
        assert_eq!(all.len(), 2);
        assert_eq!(all[0].file, "a.yaml");
        assert_eq!(summary(&all, 0), "2 errors, 0 warnings");
        assert_eq!(
            summary(&all, 3),
            "2 errors, 0 warnings (3 suppressed by `--ignore` or `aiml.dev/ignore`)"
        );
    }
}

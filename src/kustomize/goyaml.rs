//! The YAML that `kustomize build` prints, written byte for byte.
//!
//! kustomize prints each object as `sigs.k8s.io/yaml` does: the object goes through JSON, is
//! read back by go-yaml v2 and written by go-yaml v2's emitter (a port of libyaml) with its
//! defaults: block style, two-space indent, sequences not indented under their key, map keys in
//! go-yaml's "natural" order, lines folded past 80 columns, strings quoted only when go-yaml v2
//! would read them back as something else. This module is that emitter, restricted to the
//! JSON data model. Every decision mirrors a named go-yaml function so that a difference found
//! by the differential tests (`tests/inproc.rs`) can be traced to its source.

use std::cmp::Ordering;

/// A JSON value as go-yaml v2 sees it after kustomize's JSON round trip.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Json {
    Null,
    Bool(bool),
    Int(i64),
    /// A float that is not integral; integral floats become [`Json::Int`] on the way through
    /// JSON (Go's encoder prints `1` for `1.0`).
    Float(f64),
    Str(String),
    Seq(Vec<Json>),
    /// Keys in any order: the emitter sorts them.
    Map(Vec<(String, Json)>),
}

/// Writes one document as go-yaml v2 would, ending with a newline.
pub(crate) fn emit(value: &Json) -> String {
    // `yaml_emitter_emit_stream_start`: a document starts as if after indentation.
    let mut emitter = Emitter {
        out: String::new(),
        column: 0,
        whitespace: true,
        indention: true,
    };
    match value {
        Json::Map(entries) if !entries.is_empty() => emitter.block_mapping(entries, 0),
        Json::Seq(items) if !items.is_empty() => emitter.block_sequence(items, 0),
        other => emitter.scalar_or_flow(other, 0),
    }
    emitter.out.push('\n');
    emitter.out
}

/// What the libyaml emitter tracks while writing.
struct Emitter {
    out: String,
    /// Characters (not bytes) on the current line.
    column: usize,
    /// The last character written was whitespace (or nothing was written yet).
    whitespace: bool,
    /// Only indentation has been written on this line.
    indention: bool,
}

/// go-yaml v2's `best_width`: scalars are folded at a space once a line is longer.
const BEST_WIDTH: usize = 80;
/// go-yaml v2's `best_indent`.
const INDENT: usize = 2;
/// Longest key written as a simple key (`yaml_emitter_check_simple_key`); longer keys would
/// need the `? ` form, which callers never produce (they fall back to the binary).
pub(crate) const MAX_SIMPLE_KEY: usize = 128;

impl Emitter {
    fn put(&mut self, c: char) {
        self.out.push(c);
        self.column += 1;
    }

    fn put_str(&mut self, s: &str) {
        self.out.push_str(s);
        self.column += s.chars().count();
    }

    fn put_break(&mut self) {
        self.out.push('\n');
        self.column = 0;
    }

    /// `yaml_emitter_write_indent`.
    fn write_indent(&mut self, indent: usize) {
        if !self.indention || self.column > indent || (self.column == indent && !self.whitespace) {
            self.put_break();
        }
        while self.column < indent {
            self.put(' ');
        }
        self.whitespace = true;
        self.indention = true;
    }

    /// `yaml_emitter_write_indicator`.
    fn write_indicator(&mut self, indicator: &str, need_whitespace: bool, is_whitespace: bool) {
        if need_whitespace && !self.whitespace {
            self.put(' ');
        }
        self.put_str(indicator);
        self.whitespace = is_whitespace;
        self.indention = false;
    }

    /// A block mapping whose keys start at `indent`.
    fn block_mapping(&mut self, entries: &[(String, Json)], indent: usize) {
        let mut sorted: Vec<&(String, Json)> = entries.iter().collect();
        sorted.sort_by(|a, b| natural_order(&a.0, &b.0));
        for (key, value) in sorted {
            self.write_indent(indent);
            self.scalar(key, indent + INDENT, true);
            self.write_indicator(":", false, false);
            self.node(value, indent, true);
        }
    }

    /// A block sequence whose dashes stand at `indent`.
    fn block_sequence(&mut self, items: &[Json], indent: usize) {
        for item in items {
            self.write_indent(indent);
            self.write_indicator("-", true, false);
            // The dash counts as indentation: a mapping or sequence item starts on its line.
            self.indention = true;
            self.node(item, indent, false);
        }
    }

    /// A value after `key:` (`in_mapping`) or after `- `, its parent at `parent_indent`.
    fn node(&mut self, value: &Json, parent_indent: usize, in_mapping: bool) {
        match value {
            Json::Map(entries) if !entries.is_empty() => {
                self.block_mapping(entries, parent_indent + INDENT);
            }
            Json::Seq(items) if !items.is_empty() => {
                // `yaml_emitter_increase_indent(indentless = mapping_context && !indention)`:
                // under a key the dashes stay at the key's column.
                let indent = if in_mapping {
                    parent_indent
                } else {
                    parent_indent + INDENT
                };
                self.block_sequence(items, indent);
            }
            other => self.scalar_or_flow(other, parent_indent + INDENT),
        }
    }

    fn scalar_or_flow(&mut self, value: &Json, indent: usize) {
        match value {
            Json::Map(_) => self.write_indicator("{}", true, false),
            Json::Seq(_) => self.write_indicator("[]", true, false),
            Json::Null => self.plain("null"),
            Json::Bool(b) => self.plain(if *b { "true" } else { "false" }),
            Json::Int(i) => self.plain(&i.to_string()),
            Json::Float(f) => self.plain(&format_float(*f)),
            Json::Str(s) => self.scalar(s, indent, false),
        }
    }

    fn plain(&mut self, text: &str) {
        if !self.whitespace {
            self.put(' ');
        }
        self.put_str(text);
        self.whitespace = false;
        self.indention = false;
    }

    /// A string, in the style go-yaml v2 chooses (`encoder.stringv` and
    /// `yaml_emitter_select_scalar_style`); `indent` is where folded lines continue.
    fn scalar(&mut self, s: &str, indent: usize, simple_key: bool) {
        let analysis = analyze(s);
        let style = select_style(s, &analysis, simple_key);
        let allow_breaks = !simple_key;
        match style {
            Style::Plain => self.write_plain(s, indent, allow_breaks),
            Style::Single => self.write_single_quoted(s, indent, allow_breaks),
            Style::Double => self.write_double_quoted(s, indent, allow_breaks),
            Style::Literal => self.write_literal(s, indent),
        }
    }

    /// Whether the space at `i` of `chars` may fold a long line: breaks allowed, the first
    /// space of a run, past the best width, and (`quoted`) not a quoted scalar's first or last
    /// character. Each style adds its own condition on what follows.
    fn folds_at(
        &self,
        allow_breaks: bool,
        spaces: bool,
        chars: &[char],
        i: usize,
        quoted: bool,
    ) -> bool {
        allow_breaks
            && !spaces
            && self.column > BEST_WIDTH
            && (!quoted || (i != 0 && i != chars.len() - 1))
    }

    /// A space of a scalar: a line break and the indentation where it folds, else itself.
    fn write_space(&mut self, fold: bool, indent: usize) {
        if fold {
            self.write_indent(indent);
        } else {
            self.put(' ');
        }
    }

    /// `yaml_emitter_write_plain_scalar`.
    fn write_plain(&mut self, value: &str, indent: usize, allow_breaks: bool) {
        if !self.whitespace {
            self.put(' ');
        }
        self.write_folding(value, indent, allow_breaks, false);
        self.whitespace = false;
        self.indention = false;
    }

    /// `yaml_emitter_write_single_quoted_scalar` (strings with line breaks never get here).
    fn write_single_quoted(&mut self, value: &str, indent: usize, allow_breaks: bool) {
        self.write_indicator("'", true, false);
        self.write_folding(value, indent, allow_breaks, true);
        self.write_indicator("'", false, false);
    }

    /// The text of a plain or (`quoted`) single-quoted scalar, folded at single spaces: the
    /// loops the two go-yaml functions share. A quote inside a quoted scalar is doubled.
    fn write_folding(&mut self, value: &str, indent: usize, allow_breaks: bool, quoted: bool) {
        let mut spaces = false;
        let chars: Vec<char> = value.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if c == ' ' {
                let fold = self.folds_at(allow_breaks, spaces, &chars, i, quoted)
                    && chars.get(i + 1).is_some_and(|&n| n != ' ');
                self.write_space(fold, indent);
                spaces = true;
            } else {
                if quoted && c == '\'' {
                    self.put('\'');
                }
                self.put(c);
                spaces = false;
            }
        }
    }

    /// `yaml_emitter_write_double_quoted_scalar`.
    fn write_double_quoted(&mut self, value: &str, indent: usize, allow_breaks: bool) {
        self.write_indicator("\"", true, false);
        let mut spaces = false;
        let chars: Vec<char> = value.chars().collect();
        for (i, &c) in chars.iter().enumerate() {
            if !is_printable(c) || c == '\u{FEFF}' || is_break(c) || c == '"' || c == '\\' {
                self.put('\\');
                match escape(c) {
                    Some(e) => self.put(e),
                    None => {
                        let code = u32::from(c);
                        let text = if code <= 0xFF {
                            format!("x{code:02X}")
                        } else if code <= 0xFFFF {
                            format!("u{code:04X}")
                        } else {
                            format!("U{code:08X}")
                        };
                        self.put_str(&text);
                    }
                }
                spaces = false;
            } else if c == ' ' {
                let fold = self.folds_at(allow_breaks, spaces, &chars, i, true);
                self.write_space(fold, indent);
                // A space after the break would be read as indentation: escape it.
                if fold && chars.get(i + 1) == Some(&' ') {
                    self.put('\\');
                }
                spaces = true;
            } else {
                self.put(c);
                spaces = false;
            }
        }
        self.write_indicator("\"", false, false);
    }

    /// `yaml_emitter_write_literal_scalar` with its block scalar hints.
    fn write_literal(&mut self, value: &str, indent: usize) {
        self.write_indicator("|", true, false);
        if value.starts_with([' ', '\n']) {
            self.write_indicator(&INDENT.to_string(), false, false);
        }
        // `select_style` only picks literal for values whose chomping is `-` or clip.
        if !value.ends_with('\n') {
            self.write_indicator("-", false, false);
        }
        self.put_break();
        self.indention = true;
        self.whitespace = true;
        let mut breaks = true;
        for c in value.chars() {
            if c == '\n' {
                self.put_break();
                self.indention = true;
                breaks = true;
            } else {
                if breaks {
                    self.write_indent(indent);
                    breaks = false;
                }
                self.put(c);
                self.indention = false;
            }
        }
        self.whitespace = false;
        self.indention = false;
        // libyaml ends the block with the value's own last line break; the next key's
        // `write_indent` then adds none because the column is 0 and `indention` is set.
        if value.ends_with('\n') {
            self.indention = true;
            self.whitespace = true;
        }
    }
}

/// go-yaml v2's float formatting (`strconv.FormatFloat(f, 'g', -1, 64)`), for the floats
/// [`representable_float`] admits.
fn format_float(f: f64) -> String {
    // Rust prints the shortest round-trip digits without an exponent, as Go's %g does for
    // exponents in [-4, 6).
    format!("{f}")
}

/// Whether go-yaml v2 prints `f` (a non-integral float) as [`format_float`] does.
pub(crate) fn representable_float(f: f64) -> bool {
    f.is_finite() && f.fract() != 0.0 && (1e-4..1e6).contains(&f.abs())
}

#[derive(Debug, PartialEq, Eq, Clone, Copy)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

/// `yaml_emitter_analyze_scalar`'s verdicts.
#[derive(Debug)]
struct Analysis {
    multiline: bool,
    block_plain_allowed: bool,
    single_quoted_allowed: bool,
    block_allowed: bool,
}

fn is_printable(c: char) -> bool {
    matches!(u32::from(c), 0x0A | 0x20..=0x7E | 0x85 | 0xA0..=0xD7FF | 0xE000..=0xFFFD)
        && c != '\u{FEFF}'
}

fn is_break(c: char) -> bool {
    matches!(c, '\r' | '\n' | '\u{85}' | '\u{2028}' | '\u{2029}')
}

fn is_blank(c: char) -> bool {
    c == ' ' || c == '\t'
}

fn escape(c: char) -> Option<char> {
    Some(match c {
        '\0' => '0',
        '\u{7}' => 'a',
        '\u{8}' => 'b',
        '\t' => 't',
        '\n' => 'n',
        '\u{b}' => 'v',
        '\u{c}' => 'f',
        '\r' => 'r',
        '\u{1b}' => 'e',
        '"' => '"',
        '\\' => '\\',
        '\u{85}' => 'N',
        '\u{a0}' => '_',
        '\u{2028}' => 'L',
        '\u{2029}' => 'P',
        _ => return None,
    })
}

/// `yaml_emitter_analyze_scalar`, for block context (the only one kustomize's output uses).
fn analyze(value: &str) -> Analysis {
    if value.is_empty() {
        return Analysis {
            multiline: false,
            block_plain_allowed: true,
            single_quoted_allowed: true,
            block_allowed: false,
        };
    }
    let chars: Vec<char> = value.chars().collect();
    let mut block_indicators = value.starts_with("---") || value.starts_with("...");
    let mut line_breaks = false;
    let mut special_characters = false;
    let (mut leading_space, mut leading_break) = (false, false);
    let (mut trailing_space, mut trailing_break) = (false, false);
    let (mut break_space, mut space_break) = (false, false);
    let mut preceded_by_whitespace = true;
    let (mut previous_space, mut previous_break) = (false, false);
    for (i, &c) in chars.iter().enumerate() {
        let followed_by_whitespace = chars.get(i + 1).is_none_or(|&n| is_blank(n) || is_break(n));
        if i == 0 {
            match c {
                '#' | ',' | '[' | ']' | '{' | '}' | '&' | '*' | '!' | '|' | '>' | '\'' | '"'
                | '%' | '@' | '`' => block_indicators = true,
                '?' | ':' | '-' if followed_by_whitespace => block_indicators = true,
                _ => {}
            }
        } else {
            match c {
                ':' if followed_by_whitespace => block_indicators = true,
                '#' if preceded_by_whitespace => block_indicators = true,
                _ => {}
            }
        }
        if !is_printable(c) {
            special_characters = true;
        }
        if c == ' ' {
            leading_space |= i == 0;
            trailing_space |= i + 1 == chars.len();
            break_space |= previous_break;
            previous_space = true;
            previous_break = false;
        } else if is_break(c) {
            line_breaks = true;
            leading_break |= i == 0;
            trailing_break |= i + 1 == chars.len();
            space_break |= previous_space;
            previous_space = false;
            previous_break = true;
        } else {
            previous_space = false;
            previous_break = false;
        }
        preceded_by_whitespace = is_blank(c) || is_break(c);
    }
    let mut analysis = Analysis {
        multiline: line_breaks,
        block_plain_allowed: true,
        single_quoted_allowed: true,
        block_allowed: true,
    };
    if leading_space || leading_break || trailing_space || trailing_break {
        analysis.block_plain_allowed = false;
    }
    if trailing_space {
        analysis.block_allowed = false;
    }
    if break_space {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
    }
    if space_break || special_characters {
        analysis.block_plain_allowed = false;
        analysis.single_quoted_allowed = false;
        analysis.block_allowed = false;
    }
    if line_breaks || block_indicators {
        analysis.block_plain_allowed = false;
    }
    analysis
}

/// `encoder.stringv` then `yaml_emitter_select_scalar_style`.
fn select_style(s: &str, analysis: &Analysis, simple_key: bool) -> Style {
    let requested = if s.contains('\n') {
        Style::Literal
    } else if resolves_to_string(s) && !is_base60_float(s) {
        Style::Plain
    } else {
        Style::Double
    };
    let mut style = requested;
    if simple_key && analysis.multiline {
        style = Style::Double;
    }
    if style == Style::Plain && (!analysis.block_plain_allowed || (s.is_empty() && simple_key)) {
        style = Style::Single;
    }
    if style == Style::Single && !analysis.single_quoted_allowed {
        style = Style::Double;
    }
    if style == Style::Literal && (!analysis.block_allowed || simple_key) {
        style = Style::Double;
    }
    style
}

/// Whether a literal block for `s` needs the `+` chomping indicator, which makes go-yaml v2
/// end the document with `...`; callers send such values to the binary.
pub(crate) fn needs_keep_chomping(s: &str) -> bool {
    s == "\n" || s.ends_with("\n\n")
}

/// go-yaml v2's `resolve("", s)` says `!!str`: the plain text would read back as this string.
fn resolves_to_string(s: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "", "~", "null", "Null", "NULL", "y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N",
        "no", "No", "NO", "off", "Off", "OFF", "true", "True", "TRUE", "false", "False", "FALSE",
        ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
        "-.Inf", "-.INF", "<<",
    ];
    if SPECIAL.contains(&s) {
        return false;
    }
    match s.as_bytes()[0] {
        b'.' => !is_go_float(s),
        b'0'..=b'9' | b'+' | b'-' => {
            if is_timestamp(s) {
                return false;
            }
            let plain: String = s.chars().filter(|&c| c != '_').collect();
            !(is_go_int(&plain) || is_yaml_style_float(&plain) || is_binary_int(&plain))
        }
        _ => true,
    }
}

/// `strconv.ParseInt(s, 0, 64)` or `ParseUint` would accept `s` (overflow aside: go-yaml
/// then tries it as a float, which matches too).
pub(crate) fn is_go_int(s: &str) -> bool {
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (digits, radix) = if let Some(rest) = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))
    {
        (rest, 16)
    } else if let Some(rest) = unsigned
        .strip_prefix("0o")
        .or_else(|| unsigned.strip_prefix("0O"))
    {
        (rest, 8)
    } else if let Some(rest) = unsigned
        .strip_prefix("0b")
        .or_else(|| unsigned.strip_prefix("0B"))
    {
        (rest, 2)
    } else if unsigned.len() > 1 && unsigned.starts_with('0') {
        (&unsigned[1..], 8)
    } else {
        (unsigned, 10)
    };
    !digits.is_empty() && digits.chars().all(|c| c.is_digit(radix))
}

fn is_binary_int(s: &str) -> bool {
    let rest = s.strip_prefix('-').unwrap_or(s);
    rest.strip_prefix("0b")
        .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c == '0' || c == '1'))
}

/// go-yaml's `yamlStyleFloat`: `^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$`.
pub(crate) fn is_yaml_style_float(s: &str) -> bool {
    crate::yaml::yaml_style_float(s)
}

/// `strconv.ParseFloat` on text starting with `.` (go-yaml's `.` hint).
fn is_go_float(s: &str) -> bool {
    is_yaml_style_float(s)
}

/// go-yaml v2's `parseTimestamp`: four digits then `-`, in one of its layouts. Only the
/// date-only layout and UTC times to the second are recognised exactly; callers send other
/// values that start like a timestamp to the binary ([`maybe_timestamp`]).
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    if !maybe_timestamp(s) {
        return false;
    }
    let parts: Vec<&str> = s.split('-').collect();
    let date_only = parts.len() == 3
        && parts[1..]
            .iter()
            .all(|p| (1..=2).contains(&p.len()) && p.bytes().all(|c| c.is_ascii_digit()))
        && b.len() <= 10;
    date_only || is_utc_second(s)
}

/// `YYYY-MM-DDTHH:MM:SSZ` naming a real instant, as maintenance windows are written: go-yaml's
/// layout `2006-1-2T15:4:5.999999999Z07:00` reads it when Go's `time.Parse` accepts every
/// field (month, day of that month, hour, minute, second in range) — the same instants the
/// maintenance fields accept, so one parser decides both.
fn is_utc_second(s: &str) -> bool {
    crate::gcp::maintenance::utc_seconds(s).is_some()
}

/// Text that go-yaml v2 might read as a timestamp: four digits then `-`.
pub(crate) fn maybe_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() > 4 && b[..4].iter().all(u8::is_ascii_digit) && b[4] == b'-'
}

/// Whether `s` is a timestamp in a layout [`is_timestamp`] does not know; callers fall back.
pub(crate) fn uncertain_timestamp(s: &str) -> bool {
    maybe_timestamp(s) && !is_timestamp(s)
}

/// go-yaml v2's `isBase60Float`.
fn is_base60_float(s: &str) -> bool {
    // ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$
    let s = s.strip_prefix(['+', '-']).unwrap_or(s);
    let (body, fraction) = match s.split_once('.') {
        Some((body, fraction)) => (body, Some(fraction)),
        None => (s, None),
    };
    if fraction.is_some_and(|f| !f.bytes().all(|b| b.is_ascii_digit() || b == b'_')) {
        return false;
    }
    let mut parts = body.split(':');
    let head = parts.next().unwrap_or("");
    let head_ok = head.as_bytes().first().is_some_and(u8::is_ascii_digit)
        && head.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    let mut sexagesimal = 0;
    for part in parts {
        sexagesimal += 1;
        let b = part.as_bytes();
        let ok = match b {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    head_ok && sexagesimal > 0
}

/// go-yaml v2's map key order (`keyList.Less`): letters after other characters, runs of
/// digits compared as numbers.
pub(crate) fn natural_order(a: &str, b: &str) -> Ordering {
    let ar: Vec<char> = a.chars().collect();
    let br: Vec<char> = b.chars().collect();
    let less = |x: &[char], y: &[char]| -> bool {
        for i in 0..x.len().min(y.len()) {
            if x[i] == y[i] {
                continue;
            }
            let xl = x[i].is_alphabetic();
            let yl = y[i].is_alphabetic();
            if xl && yl {
                return x[i] < y[i];
            }
            if xl || yl {
                return yl;
            }
            let (mut xn, mut yn) = (0_i64, 0_i64);
            if x[i] == '0' || y[i] == '0' {
                let mut j = i;
                while j > 0 && x[j - 1].is_ascii_digit() {
                    j -= 1;
                    if x[j] != '0' {
                        xn = 1;
                        yn = 1;
                        break;
                    }
                }
            }
            let mut xi = i;
            while xi < x.len() && x[xi].is_ascii_digit() {
                xn = xn
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(x[xi] as u8 - b'0'));
                xi += 1;
            }
            let mut yi = i;
            while yi < y.len() && y[yi].is_ascii_digit() {
                yn = yn
                    .wrapping_mul(10)
                    .wrapping_add(i64::from(y[yi] as u8 - b'0'));
                yi += 1;
            }
            if xn != yn {
                return xn < yn;
            }
            if xi != yi {
                return xi < yi;
            }
            return x[i] < y[i];
        }
        x.len() < y.len()
    };
    if less(&ar, &br) {
        Ordering::Less
    } else if less(&br, &ar) {
        Ordering::Greater
    } else {
        Ordering::Equal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(entries: &[(&str, Json)]) -> Json {
        Json::Map(
            entries
                .iter()
                .map(|(k, v)| ((*k).to_string(), v.clone()))
                .collect(),
        )
    }

    fn s(text: &str) -> Json {
        Json::Str(text.into())
    }

    #[test]
    fn utc_times_to_the_second_are_timestamps_when_go_would_parse_them() {
        // kustomize v5.5.0 prints `"2025-01-04T01:00:00Z"` quoted; an impossible date stays
        // with the binary.
        assert!(is_timestamp("2025-01-04T01:00:00Z"));
        assert!(is_timestamp("2024-02-29T23:59:59Z"));
        for unsure in [
            "2025-02-29T01:00:00Z",
            "2025-01-04T24:00:00Z",
            "2025-01-04T01:00:00+01:00",
            "2025-1-4T1:0:0Z",
        ] {
            assert!(uncertain_timestamp(unsure), "{unsure}");
        }
    }

    #[test]
    fn keys_sort_as_go_yaml_does() {
        let mut keys = vec![
            "a10", "a9", "A", "_x", "0", "a01", "a1", "a001", "b-c", "b.c", "b_c", "bC", "a b",
        ];
        keys.sort_by(|a, b| natural_order(a, b));
        // As printed by kustomize v5.5.0.
        assert_eq!(
            keys,
            [
                "_x", "0", "A", "a b", "a1", "a01", "a001", "a9", "a10", "b-c", "b.c", "b_c", "bC"
            ]
        );
    }

    #[test]
    fn strings_are_quoted_when_they_would_read_back_as_something_else() {
        let doc = map(&[
            ("yes", s("yes")),
            ("num", s("1.5")),
            ("oct", s("0755")),
            ("date", s("2024-01-01")),
            ("sexa", s("1:20")),
            ("plain", s("1.5Gi")),
            ("ip", s("10.0.0.0/8")),
            ("hash", s("a #b")),
            ("colon", s("a: b")),
            ("empty", s("")),
            ("tab", s("a\tb")),
            ("emoji", s("\u{1F600}")),
            ("quote", s("'x")),
        ]);
        assert_eq!(
            emit(&doc),
            "colon: 'a: b'\ndate: \"2024-01-01\"\nemoji: \"\\U0001F600\"\nempty: \"\"\nhash: 'a #b'\nip: 10.0.0.0/8\nnum: \"1.5\"\noct: \"0755\"\nplain: 1.5Gi\nquote: '''x'\nsexa: \"1:20\"\ntab: \"a\\tb\"\n\"yes\": \"yes\"\n"
        );
    }

    #[test]
    fn long_lines_fold_and_blocks_keep_their_lines() {
        let long = "this is a very long string with many spaces that goes well beyond eighty characters for sure yes it does";
        let doc = map(&[
            ("long", s(long)),
            ("lit", s("  indented\nline2\n")),
            (
                "list",
                Json::Seq(vec![
                    Json::Seq(vec![s("a"), s("b")]),
                    Json::Map(vec![]),
                    map(&[("k", s("v")), ("j", Json::Int(1))]),
                ]),
            ),
        ]);
        assert_eq!(
            emit(&doc),
            "list:\n- - a\n  - b\n- {}\n- j: 1\n  k: v\nlit: |2\n    indented\n  line2\nlong: this is a very long string with many spaces that goes well beyond eighty characters\n  for sure yes it does\n"
        );
    }
}

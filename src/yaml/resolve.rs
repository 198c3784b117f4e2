//! Plain scalars read as Kubernetes reads them.
//!
//! `kubectl` and the API server read YAML with `sigs.k8s.io/yaml`: go-yaml v2 (YAML 1.1
//! resolution, with Go's `strconv` number syntax) turns the text into Go values, which are
//! then converted to JSON — the JSON `kubectl apply` sends, and what the API server decodes
//! from a YAML body. [`resolve`] is go-yaml v2's `resolve` for an untagged plain scalar, so
//! every rule sees the value the cluster will: `010` is 8, `yes` is `true`, `1_000` is 1000.
//!
//! Readers disagree on some spellings (a YAML 1.2 reader takes `010` as 10, `yes` as a
//! string; a YAML 1.1 reader takes `0o10` as a string): [`ambiguity`] names them, so that
//! people can write what every reader reads alike.

/// What go-yaml v2 makes of a plain scalar.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Scalar {
    /// `~`, `null`, `Null`, `NULL`, or nothing.
    Null,
    /// The YAML 1.1 words: `y`, `yes`, `on`, `true`, `n`, `no`, `off`, `false` and their
    /// capitalised forms.
    Bool(bool),
    /// An integer in 64 bits (decimal, `0x`, `0o`, `0b`, or `0…` octal; underscores dropped).
    Int(i64),
    /// An integer above `i64::MAX` that fits 64 unsigned bits.
    Uint(u64),
    /// A finite float.
    Float(f64),
    /// `.inf`, `-.inf`, `.nan`: JSON has no such number, so `kubectl` refuses the file.
    NonFinite,
    /// Anything else is the text itself.
    Str,
}

/// go-yaml v2's `resolve("", text)` for a plain scalar.
pub(crate) fn resolve(text: &str) -> Scalar {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Scalar::Null,
        "y" | "Y" | "yes" | "Yes" | "YES" | "on" | "On" | "ON" | "true" | "True" | "TRUE" => {
            return Scalar::Bool(true);
        }
        "n" | "N" | "no" | "No" | "NO" | "off" | "Off" | "OFF" | "false" | "False" | "FALSE" => {
            return Scalar::Bool(false);
        }
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Scalar::NonFinite,
        _ => {}
    }
    match text.as_bytes()[0] {
        // `strconv.ParseFloat` on the text as written: no underscores, no sign.
        b'.' => finite_float(text).map_or(Scalar::Str, Scalar::Float),
        b'0'..=b'9' | b'+' | b'-' => {
            let plain = text.replace('_', "");
            if let Some(i) = go_int(&plain) {
                Scalar::Int(i)
            } else if let Some(u) = go_uint(&plain) {
                Scalar::Uint(u)
            } else {
                finite_float(&plain).map_or(Scalar::Str, Scalar::Float)
            }
        }
        _ => Scalar::Str,
    }
}

/// `strconv.ParseUint(text, 0, 64)`: `0x`, `0o`, `0b` (either case) or a leading `0` (octal)
/// choose the base.
fn go_uint(text: &str) -> Option<u64> {
    let bytes = text.as_bytes();
    let (digits, radix) = match bytes {
        [] => return None,
        [b'0', prefix, _, ..] if matches!(prefix.to_ascii_lowercase(), b'x' | b'o' | b'b') => {
            let radix = match prefix.to_ascii_lowercase() {
                b'x' => 16,
                b'o' => 8,
                _ => 2,
            };
            (&text[2..], radix)
        }
        [b'0', ..] => (&text[1..], 8),
        _ => (text, 10),
    };
    if digits.is_empty() {
        return Some(0);
    }
    if !digits.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// `strconv.ParseInt(text, 0, 64)`: an optional sign, then [`go_uint`] within `i64`.
fn go_int(text: &str) -> Option<i64> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if unsigned.is_empty() {
        return None;
    }
    let magnitude = i128::from(go_uint(unsigned)?);
    i64::try_from(if negative { -magnitude } else { magnitude }).ok()
}

/// go-yaml's `yamlStyleFloat`, also the YAML 1.2 core schema's float:
/// `[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`.
pub(crate) fn yaml_style_float(text: &str) -> bool {
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let digits = |t: &str| t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", fraction)) => !fraction.is_empty() && digits(fraction),
        Some((whole, fraction)) => digits(whole) && digits(fraction),
        None => !mantissa.is_empty() && digits(mantissa),
    };
    mantissa_ok
        && exponent.is_none_or(|e| {
            let e = e.strip_prefix(['+', '-']).unwrap_or(e);
            !e.is_empty() && digits(e)
        })
}

/// A float go-yaml v2 accepts: Go's `ParseFloat` fails on overflow, and the text stays a
/// string.
fn finite_float(text: &str) -> Option<f64> {
    if !yaml_style_float(text) {
        return None;
    }
    text.parse::<f64>().ok().filter(|f| f.is_finite())
}

/// A mapping key as `sigs.k8s.io/yaml` turns it into a JSON key, `None` for a string key
/// (kept as written). Floats print as Go's `FormatFloat(f, 'g', -1, 32)`.
pub(crate) fn json_key(scalar: Scalar) -> Option<String> {
    Some(match scalar {
        Scalar::Bool(b) => b.to_string(),
        Scalar::Int(i) => i.to_string(),
        Scalar::Uint(u) => u.to_string(),
        Scalar::Float(f) => go_float32(f),
        Scalar::Null | Scalar::NonFinite | Scalar::Str => return None,
    })
}

/// Go's `strconv.FormatFloat(f, 'g', -1, 32)`: the shortest digits of the `float32`, in
/// exponent form (`1e+06`) when the exponent is below -4 or at least 6.
fn go_float32(f: f64) -> String {
    #[allow(clippy::cast_possible_truncation)]
    let single = f as f32;
    let scientific = format!("{single:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((&scientific, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-4..6).contains(&exponent) {
        format!("{single}")
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
    }
}

/// How one reader takes a plain scalar, for comparing readers.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Reading {
    Null,
    Bool(bool),
    Number(f64),
    Text,
    NonFinite,
}

impl Reading {
    fn describe(self, text: &str) -> String {
        match self {
            Reading::Null => "null".to_string(),
            Reading::Bool(b) => format!("the boolean `{b}`"),
            Reading::Number(n) => format!("the number {n}"),
            Reading::Text => format!("the string \"{text}\""),
            Reading::NonFinite => "a non-finite number".to_string(),
        }
    }
}

#[allow(clippy::cast_precision_loss)]
fn kubectl(text: &str) -> Reading {
    match resolve(text) {
        Scalar::Null => Reading::Null,
        Scalar::Bool(b) => Reading::Bool(b),
        Scalar::Int(i) => Reading::Number(i as f64),
        Scalar::Uint(u) => Reading::Number(u as f64),
        Scalar::Float(f) => Reading::Number(f),
        Scalar::NonFinite => Reading::NonFinite,
        Scalar::Str => Reading::Text,
    }
}

/// `[-+]?` then digits of `radix` after `prefix`, with `_` allowed when `underscores`.
fn signed_digits(text: &str, prefix: &str, radix: u32, underscores: bool) -> Option<f64> {
    let (negative, body) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = body.strip_prefix(prefix)?;
    let kept: String = digits
        .chars()
        .filter(|&c| !(underscores && c == '_'))
        .collect();
    if kept.is_empty() || !kept.chars().all(|c| c.is_digit(radix)) {
        return None;
    }
    #[allow(clippy::cast_precision_loss)]
    let value = u128::from_str_radix(&kept, radix).ok()? as f64;
    Some(if negative { -value } else { value })
}

/// The YAML 1.2 core schema (<https://yaml.org/spec/1.2.2/#1032-tag-resolution>).
fn core_1_2(text: &str) -> Reading {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        "true" | "True" | "TRUE" => return Reading::Bool(true),
        "false" | "False" | "FALSE" => return Reading::Bool(false),
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Reading::NonFinite,
        _ => {}
    }
    let number = signed_digits(text, "", 10, false)
        .or_else(|| unsigned_digits(text, "0o", 8))
        .or_else(|| unsigned_digits(text, "0x", 16))
        .or_else(|| {
            yaml_style_float(text)
                .then(|| text.parse::<f64>().ok())
                .flatten()
        });
    match number {
        Some(n) if n.is_finite() => Reading::Number(n),
        Some(_) => Reading::NonFinite,
        None => Reading::Text,
    }
}

/// `prefix` then digits of `radix`, without a sign.
fn unsigned_digits(text: &str, prefix: &str, radix: u32) -> Option<f64> {
    let digits = text.strip_prefix(prefix)?;
    if digits.starts_with(['+', '-']) {
        return None;
    }
    signed_digits(digits, "", radix, false)
}

/// The YAML 1.1 types (<https://yaml.org/type/>): `y`/`n`/`on`/`off` booleans, `0b`, `0…`
/// octal, underscores, base 60 (`1:30` is 90), and floats that need a `.`.
fn yaml_1_1(text: &str) -> Reading {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Reading::Null,
        ".nan" | ".NaN" | ".NAN" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" => return Reading::NonFinite,
        _ => {}
    }
    if let Scalar::Bool(b) = resolve(text) {
        return Reading::Bool(b);
    }
    let body = text.strip_prefix(['+', '-']).unwrap_or(text);
    let negative = text.starts_with('-');
    let integer = if body.starts_with("0b") {
        signed_digits(text, "0b", 2, true)
    } else if body.starts_with("0x") {
        signed_digits(text, "0x", 16, true)
    } else if body.starts_with('0') && body.len() > 1 {
        signed_digits(text, "0", 8, true)
    } else if body == "0" || body.starts_with(|c: char| c.is_ascii_digit()) {
        signed_digits(text, "", 10, true).or_else(|| base_60(body, negative, false))
    } else {
        None
    };
    if let Some(n) = integer {
        return Reading::Number(n);
    }
    // `[-+]?([0-9][0-9_]*)?\.[0-9.]*([eE][-+][0-9]+)?` and base 60 with a fraction.
    let (mantissa, exponent) = match body.find(['e', 'E']) {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    let float_ok = mantissa.split_once('.').is_some_and(|(whole, fraction)| {
        (whole.is_empty()
            || (whole.starts_with(|c: char| c.is_ascii_digit())
                && whole.bytes().all(|b| b.is_ascii_digit() || b == b'_')))
            && fraction.bytes().all(|b| b.is_ascii_digit() || b == b'.')
    }) && exponent.is_none_or(|e| {
        e.starts_with(['+', '-']) && e.len() > 1 && e[1..].bytes().all(|b| b.is_ascii_digit())
    });
    if float_ok {
        let kept: String = text.chars().filter(|&c| c != '_').collect();
        return kept.parse::<f64>().map_or(Reading::Text, |f| {
            if f.is_finite() {
                Reading::Number(f)
            } else {
                Reading::NonFinite
            }
        });
    }
    base_60(body, negative, true).map_or(Reading::Text, Reading::Number)
}

/// YAML 1.1 sexagesimal numbers: `190:20:30` (an integer) or `1:30.5` (`fraction`).
fn base_60(body: &str, negative: bool, fraction: bool) -> Option<f64> {
    let (head, tail) = if fraction {
        body.split_once('.')?
    } else {
        (body, "")
    };
    let mut parts = head.split(':');
    let first = parts.next()?;
    let first_ok = first.starts_with(|c: char| c.is_ascii_digit() && (fraction || c != '0'))
        && first.bytes().all(|b| b.is_ascii_digit() || b == b'_');
    if !first_ok || !tail.bytes().all(|b| b.is_ascii_digit() || b == b'_') {
        return None;
    }
    let mut value: f64 = first.replace('_', "").parse().ok()?;
    let mut groups = 0;
    for part in parts {
        let ok = match part.as_bytes() {
            [d] => d.is_ascii_digit(),
            [t, d] => (b'0'..=b'5').contains(t) && d.is_ascii_digit(),
            _ => false,
        };
        if !ok {
            return None;
        }
        value = value * 60.0 + part.parse::<f64>().ok()?;
        groups += 1;
    }
    if groups == 0 {
        return None;
    }
    if fraction {
        value += format!("0.{}", tail.replace('_', ""))
            .parse::<f64>()
            .unwrap_or(0.0);
    }
    Some(if negative { -value } else { value })
}

/// Why a plain scalar reads differently in different readers, and the unambiguous spelling.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ambiguity {
    /// What is wrong, in words.
    pub message: String,
    /// How to write it so that every reader agrees.
    pub fix: String,
}

/// When kubectl (go-yaml v2), a YAML 1.2 reader and a YAML 1.1 reader do not all read the
/// plain scalar `text` alike: what each reads, and a spelling they agree on.
#[must_use]
pub(crate) fn ambiguity(text: &str) -> Option<Ambiguity> {
    // Most scalars are words: no reader takes them for anything but text.
    let first = *text.as_bytes().first()?;
    if !(first.is_ascii_digit() || b"+-.yYnNoO".contains(&first)) {
        return None;
    }
    let ours = kubectl(text);
    if ours == Reading::NonFinite {
        return None;
    }
    let (v12, v11) = (core_1_2(text), yaml_1_1(text));
    if ours == v12 && ours == v11 {
        return None;
    }
    let mut others = Vec::new();
    if v12 != ours {
        others.push(format!("{} to YAML 1.2 readers", v12.describe(text)));
    }
    if v11 != ours {
        others.push(format!("{} to YAML 1.1 readers", v11.describe(text)));
    }
    let message = format!(
        "`{text}` is {} to kubectl and the API server, but {}",
        ours.describe(text),
        others.join(" and ")
    );
    let fix = match ours {
        Reading::Number(n) => format!("write `{n}`, or quote it (`\"{text}\"`) if you meant text"),
        Reading::Bool(b) => format!("write `{b}`, or quote it (`\"{text}\"`) if you meant text"),
        _ => format!("quote it: `\"{text}\"`"),
    };
    Some(Ambiguity { message, fix })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_as_go_yaml_v2() {
        let cases: &[(&str, Scalar)] = &[
            ("010", Scalar::Int(8)),
            ("-010", Scalar::Int(-8)),
            ("0o10", Scalar::Int(8)),
            ("0O10", Scalar::Int(8)),
            ("0x1F", Scalar::Int(31)),
            ("0X1f", Scalar::Int(31)),
            ("-0x1F", Scalar::Int(-31)),
            ("0b101", Scalar::Int(5)),
            ("+0b101", Scalar::Int(5)),
            ("1_000", Scalar::Int(1000)),
            ("0x_1F", Scalar::Int(31)),
            ("+12", Scalar::Int(12)),
            ("0", Scalar::Int(0)),
            ("00", Scalar::Int(0)),
            ("09", Scalar::Float(9.0)),
            (".5", Scalar::Float(0.5)),
            ("+.5", Scalar::Float(0.5)),
            ("1.", Scalar::Float(1.0)),
            ("1e3", Scalar::Float(1000.0)),
            ("1_000.5", Scalar::Float(1000.5)),
            (
                "9223372036854775808",
                Scalar::Uint(9_223_372_036_854_775_808),
            ),
            ("1e400", Scalar::Str),
            ("._5", Scalar::Str),
            ("0x", Scalar::Str),
            ("0b", Scalar::Str),
            ("+", Scalar::Str),
            ("1:30", Scalar::Str),
            ("2001-12-14", Scalar::Str),
            ("0x1p3", Scalar::Str),
            ("_1", Scalar::Str),
            ("~", Scalar::Null),
            ("Null", Scalar::Null),
            ("NULL", Scalar::Null),
            ("y", Scalar::Bool(true)),
            ("N", Scalar::Bool(false)),
            ("Off", Scalar::Bool(false)),
            ("tRUE", Scalar::Str),
            (".inf", Scalar::NonFinite),
            ("-.Inf", Scalar::NonFinite),
            (".NaN", Scalar::NonFinite),
            ("-.nan", Scalar::Str),
        ];
        for (text, expected) in cases {
            assert_eq!(resolve(text), *expected, "{text}");
        }
    }

    #[test]
    fn keys_become_json_keys_as_sigs_yaml_writes_them() {
        let key = |text| json_key(resolve(text));
        assert_eq!(key("010").as_deref(), Some("8"));
        assert_eq!(key("yes").as_deref(), Some("true"));
        assert_eq!(key("1e3").as_deref(), Some("1000"));
        assert_eq!(key("1e6").as_deref(), Some("1e+06"));
        assert_eq!(key("0.00001").as_deref(), Some("1e-05"));
        assert_eq!(key("1.1").as_deref(), Some("1.1"));
        assert_eq!(key("name"), None);
    }

    #[test]
    fn names_what_readers_disagree_on() {
        for ambiguous in [
            "010", "0o10", "yes", "n", "On", "0b101", "1_000", "0X1F", "1e3", "09", "1:30", "0644",
        ] {
            assert!(ambiguity(ambiguous).is_some(), "{ambiguous}");
        }
        for clear in [
            "8", "0x1F", "true", "~", "Null", "0.5", ".5", "+12", "1.5", "007", "name", "no-such",
            "1Gi", "500m", ".inf",
        ] {
            assert_eq!(ambiguity(clear), None, "{clear}");
        }
        let octal = ambiguity("010").unwrap();
        assert_eq!(
            octal.message,
            "`010` is the number 8 to kubectl and the API server, but the number 10 to YAML 1.2 readers"
        );
        assert_eq!(
            octal.fix,
            "write `8`, or quote it (`\"010\"`) if you meant text"
        );
        assert!(
            ambiguity("0o10")
                .unwrap()
                .message
                .contains("the string \"0o10\" to YAML 1.1")
        );
    }
}

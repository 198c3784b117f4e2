//! String formats as the API server reads them (`k8s.io/kube-openapi/pkg/validation/strfmt`),
//! where they differ from JSON Schema's.

/// `format: duration` is a Go duration (`30s`, `1h30m`, `-1.5h`, `0`) or strfmt's spelled-out
/// form (`3 days`, `1w`), not JSON Schema's ISO 8601 (`PT30S`).
pub(crate) fn is_kubernetes_duration(text: &str) -> bool {
    is_go_duration(text) || is_spelled_duration(text)
}

fn is_go_duration(text: &str) -> bool {
    let text = text.strip_prefix(['-', '+']).unwrap_or(text);
    if text == "0" {
        return true;
    }
    let mut rest = text;
    let mut parts = 0;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..digits];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[digits..];
        let Some(unit) = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .into_iter()
            .filter(|unit| rest.starts_with(unit))
            .max_by_key(|unit| unit.len())
        else {
            return false;
        };
        rest = &rest[unit.len()..];
        parts += 1;
    }
    parts > 0
}

fn is_spelled_duration(text: &str) -> bool {
    const UNITS: [&str; 16] = [
        "ns",
        "us",
        "ms",
        "s",
        "m",
        "h",
        "d",
        "w",
        "nanosecond",
        "microsecond",
        "millisecond",
        "second",
        "minute",
        "hour",
        "day",
        "week",
    ];
    let digits = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let unit = text[digits..].trim_start();
    let unit = if unit.len() > 2 {
        unit.strip_suffix('s').unwrap_or(unit)
    } else {
        unit
    };
    digits > 0 && UNITS.contains(&unit)
}

/// `format: byte` is standard base64 with padding (Go's `base64.StdEncoding`), whose decoder
/// skips `\r` and `\n` anywhere (Go's encoding/base64, `Encoding.Decode`): line-wrapped
/// base64, as `openssl base64` writes it, is accepted by the server (Secret `data`, and CRD
/// fields through kube-openapi's `strfmt.IsBase64`).
pub(crate) fn is_base64(text: &str) -> bool {
    let unwrapped: String;
    let text = if text.contains(['\r', '\n']) {
        unwrapped = text.chars().filter(|c| !matches!(c, '\r' | '\n')).collect();
        unwrapped.as_str()
    } else {
        text
    };
    let body = text.trim_end_matches('=');
    let padding = text.len() - body.len();
    text.len().is_multiple_of(4)
        && padding <= 2
        && body
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_are_go_durations_or_spelled_out() {
        for good in ["30s", "1m30s", "-1.5h", "0", "100ms", "2µs", "3 days", "1w"] {
            assert!(is_kubernetes_duration(good), "{good}");
        }
        for bad in ["thirty", "PT30S", "30", "1.2.3s", "s", "", "5 fortnights"] {
            assert!(!is_kubernetes_duration(bad), "{bad}");
        }
    }

    #[test]
    fn bytes_are_padded_standard_base64() {
        for good in [
            "",
            "aGVsbG8=",
            "aGk=",
            "YWJj",
            "+/+/",
            "YWJj\nZGVm\r\n",
            "aGVs\nbG8=\n",
        ] {
            assert!(is_base64(good), "{good}");
        }
        for bad in [
            "hello!",
            "aGVsbG8",
            "aGVsbG8===",
            "a-_b",
            "YWJj ZGVm",
            "aGVs\tbG8=",
        ] {
            assert!(!is_base64(bad), "{bad}");
        }
    }
}

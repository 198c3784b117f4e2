//! Container image references: their grammar, whether they are pinned, their tag, the
//! default a kind falls back to, and the date of the source they were built from.

use super::{Planner, rule};

/// `registry/path:tag@digest` without tag and digest.
pub(super) fn image_name(image: &str) -> &str {
    let without_digest = image.split('@').next().unwrap_or(image);
    match without_digest.rsplit_once(':') {
        Some((name, tag)) if !tag.contains('/') => name,
        _ => without_digest,
    }
}

pub(super) fn is_pinned(image: &str) -> bool {
    if image.contains('@') {
        return true;
    }
    let name = image_name(image);
    match image
        .strip_prefix(name)
        .and_then(|rest| rest.strip_prefix(':'))
    {
        Some(tag) => tag != "latest",
        None => false,
    }
}

/// Checks the grammar of an image reference (the distribution reference grammar, without
/// its rarely used corners).
pub(super) fn check_image(image: &str) -> Result<(), String> {
    if image.is_empty() || image.len() > 512 {
        return Err("must have 1 to 512 characters".into());
    }
    let (rest, digest) = match image.split_once('@') {
        Some((rest, digest)) => (rest, Some(digest)),
        None => (image, None),
    };
    if let Some(digest) = digest {
        let valid = digest.split_once(':').is_some_and(|(algorithm, hex)| {
            let length = match algorithm {
                "sha256" => 64,
                "sha512" => 128,
                _ => return false,
            };
            hex.len() == length && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        });
        if !valid {
            return Err(
                "a digest is `sha256:` and 64 lowercase hex digits (or `sha512:` and 128)".into(),
            );
        }
    }
    let name = image_name(rest);
    if let Some(tag) = rest.strip_prefix(name).and_then(|t| t.strip_prefix(':')) {
        let valid = !tag.is_empty()
            && tag.len() <= 128
            && !tag.starts_with(['.', '-'])
            && tag
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"_.-".contains(&b));
        if !valid {
            return Err(format!("invalid tag `{tag}`"));
        }
    }
    let mut components = name.split('/').peekable();
    let first = components.peek().copied().unwrap_or_default();
    // A first component with `.` or `:` (or `localhost`) is a registry host, which may hold
    // upper case letters and a port.
    let has_registry =
        name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    if has_registry {
        components.next();
        if !first
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b".-:".contains(&b))
        {
            return Err(format!("invalid registry `{first}`"));
        }
    }
    for component in components {
        let valid = !component.is_empty()
            && component
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
            && component.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit());
        if !valid {
            return Err(format!(
                "path component `{component}` must be lowercase letters, digits and `._-`"
            ));
        }
    }
    Ok(())
}

/// The tag of an image reference (`None` for a digest or no tag).
#[must_use]
pub fn tag_of(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag)
}

/// Whether `text` is a `YYYY-MM-DD` date.
#[must_use]
pub fn is_date(text: &str) -> bool {
    let parts: Vec<&str> = text.split('-').collect();
    matches!(parts.as_slice(), [y, m, d]
        if y.len() == 4 && m.len() == 2 && d.len() == 2
            && [y, m, d].iter().all(|p| p.bytes().all(|b| b.is_ascii_digit()))
            && (1..=12).contains(&m.parse::<u32>().unwrap_or(0))
            && (1..=31).contains(&d.parse::<u32>().unwrap_or(0)))
}

/// The date at `field` of the `source` (e.g. `Saxml commit`) images were built from, when the
/// spec gives one and it is a date; a finding when it is not.
pub fn source_date<'d>(
    planner: &mut Planner<'_>,
    field: &str,
    date: Option<&'d str>,
    source: &str,
) -> Option<&'d str> {
    let date = date?;
    if is_date(date) {
        return Some(date);
    }
    let d = planner.error(rule::CONFLICT, field, format!("`{date}` is not a date"));
    d.expected = Some(format!(
        "`YYYY-MM-DD`, the date of the {source} the images were built from"
    ));
    None
}

/// The image written at `field`, else `default`, checked as [`Planner::check_image`] does.
pub fn image_or(
    planner: &mut Planner<'_>,
    field: &str,
    written: Option<&str>,
    default: impl FnOnce() -> String,
) -> String {
    let image = written.map_or_else(default, str::to_string);
    planner.check_image(field, &image);
    image
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_image_references() {
        for ok in [
            "python:3.11",
            "us-docker.pkg.dev/vertex-ai/tensorboard/uploader:1.0",
            "localhost:5000/a/b:v1",
            "nvcr.io/nvidia/tritonserver:24.01-py3",
            "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
        ] {
            assert_eq!(check_image(ok), Ok(()), "{ok}");
            assert!(is_pinned(ok), "{ok}");
        }
        for unpinned in ["python", "python:latest", "gcr.io/a/b", "localhost:5000/a"] {
            assert_eq!(check_image(unpinned), Ok(()), "{unpinned}");
            assert!(!is_pinned(unpinned), "{unpinned}");
        }
        for bad in ["", "Python:3", "a b", "a:", "a:-x", "a@sha256:zz", "a//b:1"] {
            assert!(check_image(bad).is_err(), "{bad}");
        }
        assert_eq!(image_name("localhost:5000/a/b:v1"), "localhost:5000/a/b");
    }

    #[test]
    fn a_tag_is_read_after_the_last_slash_and_never_from_a_digest() {
        let registry = "us-docker.pkg.dev/cloud-tpu-images/inference";
        assert_eq!(
            tag_of(&format!("{registry}/sax-util:v1.2.0")),
            Some("v1.2.0")
        );
        assert_eq!(tag_of("localhost:5000/sax-util"), None);
        assert_eq!(tag_of("sax-util:v1.2.0@sha256:0123"), None);
        assert_eq!(tag_of("sax-util"), None);
    }
}

//! Container image references: their grammar, and whether they are pinned.

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
}

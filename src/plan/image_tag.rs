//! The tag of a container image reference, and the date of the source it was built from, for
//! kinds that read a version from them.

use super::{Planner, rule};

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

#[cfg(test)]
mod tests {
    use super::tag_of;

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

//! Checks of values people write that any kind may take: spellings of ids, Cloud Storage
//! object URIs, numbers within bounds. Each reports at the field it is given.

use super::{Planner, rule};

/// 1 to `max` bytes, each an ASCII letter or digit or one of `extra`.
#[must_use]
pub fn spelled(text: &str, max: usize, extra: &[u8]) -> bool {
    !text.is_empty()
        && text.len() <= max
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
}

/// `gs://bucket/object` → (bucket, object), with findings when it is not one.
pub fn check_gcs_object(
    planner: &mut Planner<'_>,
    field: &str,
    uri: &str,
) -> Option<(String, String)> {
    let parsed = uri
        .strip_prefix("gs://")
        .and_then(|rest| rest.split_once('/'))
        .filter(|(bucket, object)| {
            !bucket.is_empty() && !object.is_empty() && !object.ends_with('/')
        });
    let Some((bucket, object)) = parsed else {
        let d = planner.error(
            rule::CONFLICT,
            field,
            format!("`{uri}` is not a Cloud Storage object"),
        );
        d.expected = Some("`gs://<bucket>/<object>`".into());
        return None;
    };
    planner.check_name(rule::BUCKET_NAME, field, bucket, crate::names::bucket);
    Some((bucket.to_string(), object.to_string()))
}

/// Reports `id` at `field` unless it is a Hugging Face repository id: `name` or `owner/name`.
pub fn check_hugging_face_id(planner: &mut Planner<'_>, field: &str, id: &str) {
    let part_ok = |part: &str| spelled(part, 96, b"-_.");
    let valid = match id.split_once('/') {
        Some((owner, model)) => part_ok(owner) && part_ok(model),
        None => part_ok(id),
    };
    if !valid {
        let d = planner.error(
            rule::CONFLICT,
            field,
            format!("`{id}` is not a Hugging Face model id"),
        );
        d.expected = Some("`<owner>/<model>`, e.g. `meta-llama/Llama-2-70b-hf`".into());
    }
}

/// Reports each `(field, value, min, max)` of `stanza` whose value is out of `min..=max`.
pub fn check_ranges(planner: &mut Planner<'_>, stanza: &str, bounds: &[(&str, u32, u32, u32)]) {
    for &(field, value, min, max) in bounds {
        if !(min..=max).contains(&value) {
            let field = format!("{stanza}.{field}");
            let d = planner.error(rule::CONFLICT, &field, format!("`{value}` is out of range"));
            d.expected = Some(format!("{min} to {max}"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::spelled;

    #[test]
    fn references_are_spelled_with_letters_digits_and_the_given_marks() {
        assert!(spelled("hf-token_1.json", usize::MAX, b"-_."));
        assert!(!spelled("", usize::MAX, b"-_."));
        assert!(!spelled("owner/model", 96, b"-_."));
        assert!(!spelled("hf.token", 255, b"-_"));
        assert!(spelled(&"a".repeat(255), 255, b"-_"));
        assert!(!spelled(&"a".repeat(256), 255, b"-_"));
    }
}

//! JSON pointers (RFC 6901) into a YAML tree, as JSON Schema validators report where an
//! instance fails: `/spec/containers/0/env` is `spec`, `containers`, 0, `env`.

/// One step of a JSON pointer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// A mapping key.
    Key(String),
    /// A sequence index (or, on a mapping, a key of digits).
    Index(usize),
}

/// The steps of a JSON pointer, `~1` and `~0` unescaped. A step of digits is an index; one
/// that only Rust's number parser reads as a number (`+5`) stays a key.
#[must_use]
pub fn steps(pointer: &str) -> Vec<Step> {
    pointer
        .split('/')
        .skip(1)
        .map(|raw| {
            let text = raw.replace("~1", "/").replace("~0", "~");
            match text.parse::<usize>() {
                Ok(index) if !text.starts_with('+') => Step::Index(index),
                _ => Step::Key(text),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_unescape_and_read_indexes() {
        assert_eq!(
            steps("/a~1b/0/~0c/+5"),
            [
                Step::Key("a/b".into()),
                Step::Index(0),
                Step::Key("~c".into()),
                Step::Key("+5".into()),
            ]
        );
        assert_eq!(steps(""), []);
    }
}

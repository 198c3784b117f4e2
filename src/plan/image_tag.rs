//! The tag of a container image reference, for kinds that read a version from it.

/// The tag of an image reference (`None` for a digest or no tag).
#[must_use]
pub fn tag_of(image: &str) -> Option<&str> {
    if image.contains('@') {
        return None;
    }
    let last = image.rsplit('/').next().unwrap_or(image);
    last.split_once(':').map(|(_, tag)| tag)
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

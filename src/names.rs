//! The forms Kubernetes and GCP give names and locations, checked before anything reaches an
//! API.
//!
//! Each check returns `Err(reason)` in words a person can act on; [`crate::plan::Planner`]
//! turns it into a finding at the blueprint field. Defaults derived from a blueprint name are
//! cut to fit with [`shortened`], which keeps distinct names distinct.

/// Checks a DNS-1123 label (Kubernetes names of namespaces, blueprints, …).
pub fn check_dns_label(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty".into());
    }
    if name.len() > 63 {
        return Err(format!("{} characters, at most 63 allowed", name.len()));
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    {
        return Err("only lowercase letters, digits and `-` are allowed".into());
    }
    if name.starts_with('-') || name.ends_with('-') {
        return Err("must start and end with a letter or digit".into());
    }
    Ok(())
}

/// Checks the form the API server requires of every object name: a path segment (not `.` or
/// `..`, no `/` or `%`).
pub fn path_segment(name: &str) -> Result<(), String> {
    if name == "." || name == ".." {
        return Err(format!("`{name}` is not allowed"));
    }
    if name.contains(['/', '%']) {
        return Err("`/` and `%` are not allowed".into());
    }
    Ok(())
}

/// Checks a GCP project id: 6 to 30 lowercase letters, digits or `-`, starting with a letter.
pub fn project_id(id: &str) -> Result<(), String> {
    let valid_chars = id
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !(6..=30).contains(&id.len()) || !valid_chars {
        return Err("project ids have 6 to 30 lowercase letters, digits or `-`".into());
    }
    if !id.starts_with(|c: char| c.is_ascii_lowercase()) || id.ends_with('-') {
        return Err("project ids start with a letter and do not end with `-`".into());
    }
    Ok(())
}

/// Checks a region name such as `us-central2` or `northamerica-northeast1`.
pub fn region(name: &str) -> Result<(), String> {
    let parts: Vec<&str> = name.split('-').collect();
    let ok = parts.len() == 2
        && !parts[0].is_empty()
        && parts[0].bytes().all(|b| b.is_ascii_lowercase())
        && {
            let tail = parts[1];
            let letters = tail.trim_end_matches(|c: char| c.is_ascii_digit());
            !letters.is_empty()
                && letters.len() < tail.len()
                && letters.bytes().all(|b| b.is_ascii_lowercase())
        };
    if ok {
        Ok(())
    } else {
        Err("regions look like `us-central2` or `europe-west4`".into())
    }
}

/// Checks a zone name such as `us-central2-b`.
pub fn zone(name: &str) -> Result<(), String> {
    match name.rsplit_once('-') {
        Some((region_part, letter))
            if region(region_part).is_ok()
                && letter.len() == 1
                && letter.bytes().all(|b| b.is_ascii_lowercase()) =>
        {
            Ok(())
        }
        _ => Err("zones look like `us-central2-b`: a region and a letter".into()),
    }
}

/// The region of a zone (`us-central2-b` → `us-central2`), or the location itself when it is
/// a region.
#[must_use]
pub fn region_of(location: &str) -> &str {
    if zone(location).is_ok() {
        location
            .rsplit_once('-')
            .map_or(location, |(region, _)| region)
    } else {
        location
    }
}

/// Checks a multi-region or region location of a data resource (`US`, `EU`, `us-central1`,
/// `NAM4`): letters, digits and `-`, at most 63 characters.
pub fn data_location(name: &str) -> Result<(), String> {
    let valid = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphabetic())
        && !name.ends_with('-')
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-');
    if valid {
        Ok(())
    } else {
        Err("locations look like `US`, `EU` or a region such as `us-central1`".into())
    }
}

/// Checks a service account id: 6 to 30 characters of the RFC 1035 form.
pub fn service_account_id(id: &str) -> Result<(), String> {
    if !(6..=30).contains(&id.len()) {
        return Err(format!(
            "service account ids have 6 to 30 characters, this has {}",
            id.len()
        ));
    }
    resource(id)
}

/// GCP resource names (RFC 1035): a lowercase letter first, then letters, digits or `-`, at
/// most 63 characters.
pub fn resource(name: &str) -> Result<(), String> {
    limited(name, 63)
}

/// RFC 1035 names of at most `max` characters (GKE clusters and node pools take 40).
pub fn limited(name: &str, max: usize) -> Result<(), String> {
    if name.is_empty() || name.len() > max {
        return Err(format!("must have 1 to {max} characters"));
    }
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err("must start with a lowercase letter".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        || name.ends_with('-')
    {
        return Err("only lowercase letters, digits and `-`, not ending with `-`".into());
    }
    Ok(())
}

/// Checks a Cloud Storage bucket name.
pub fn bucket(name: &str) -> Result<(), String> {
    if !(3..=63).contains(&name.len()) {
        return Err("bucket names have 3 to 63 characters".into());
    }
    let valid = name
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_.".contains(&b));
    let edges = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !valid || !name.starts_with(edges) || !name.ends_with(edges) {
        return Err("lowercase letters, digits, `-`, `_` and `.`, starting and ending with a letter or digit".into());
    }
    if name.starts_with("goog") || name.contains("google") {
        return Err("bucket names cannot start with `goog` or contain `google`".into());
    }
    Ok(())
}

/// Checks a Pub/Sub topic or subscription id: 3 to 255 characters, a letter first, then
/// letters, digits and `-_.~+%`, not starting with `goog`.
pub fn pubsub(name: &str) -> Result<(), String> {
    if !(3..=255).contains(&name.len()) {
        return Err("Pub/Sub ids have 3 to 255 characters".into());
    }
    if !name.starts_with(|c: char| c.is_ascii_alphabetic()) || name.starts_with("goog") {
        return Err("Pub/Sub ids start with a letter and not with `goog`".into());
    }
    if !name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"-_.~+%".contains(&b))
    {
        return Err("Pub/Sub ids hold letters, digits and `-_.~+%` only".into());
    }
    Ok(())
}

/// Checks a BigQuery dataset or table id: 1 to 1024 letters, digits or `_`.
pub fn bigquery(name: &str) -> Result<(), String> {
    if name.is_empty() || name.len() > 1024 {
        return Err("BigQuery ids have 1 to 1024 characters".into());
    }
    if !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
        return Err("BigQuery ids hold letters, digits and `_` only (no `-`)".into());
    }
    Ok(())
}

/// `base` + `suffix`, fitting `max` characters. When `base` must be cut, a short hash of the
/// whole of it goes before the suffix, so two long names that share a prefix stay distinct.
#[must_use]
pub fn shortened(base: &str, suffix: &str, max: usize) -> String {
    if base.len() + suffix.len() <= max {
        return format!("{base}{suffix}");
    }
    let hash = format!("-{:04x}", fnv1a(base) & 0xffff);
    let keep = max
        .saturating_sub(suffix.len() + hash.len())
        .min(base.len());
    format!("{}{hash}{suffix}", base[..keep].trim_end_matches('-'))
}

/// A GCP name derived from a blueprint name: `base` + `suffix`, cut to `max` characters
/// ([`shortened`]), starting with a letter (`aiml-` goes before a base that starts with a digit)
/// and at least `min` characters long (`-aiml` pads a short base). Every valid blueprint name
/// gives a valid derived name.
#[must_use]
pub fn derived(base: &str, suffix: &str, min: usize, max: usize) -> String {
    let mut base = if base.starts_with(|c: char| c.is_ascii_digit()) {
        format!("aiml-{base}")
    } else {
        base.to_string()
    };
    while base.len() + suffix.len() < min {
        base.push_str("-aiml");
    }
    shortened(&base, suffix, max)
}

/// A hash of `text` that never changes between runs or versions (FNV-1a), for name suffixes
/// and change-detection annotations; not for security.
#[must_use]
pub fn stable_hash(text: &str) -> u64 {
    fnv1a(text)
}

/// FNV-1a: a stable, dependency-free hash for name suffixes (not for security).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// `roles/storage.objectAdmin` → `storage-objectadmin`, for object names.
#[must_use]
pub fn role_slug(role: &str) -> String {
    role.trim_start_matches("roles/")
        .replace('.', "-")
        .to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shortened_names_fit_and_stay_distinct() {
        assert_eq!(
            shortened("multislice-v4-32-training", "-node", 30),
            "multislice-v4-32-training-node"
        );
        let a = shortened("a-very-long-blueprint-name-for-tpus", "-wi", 30);
        let b = shortened("a-very-long-blueprint-name-for-gpus", "-wi", 30);
        assert!(a.len() <= 30 && b.len() <= 30, "{a} {b}");
        assert_ne!(a, b);
        assert!(a.ends_with("-wi"), "{a}");
        assert!(resource(&a).is_ok(), "{a}");
    }

    #[test]
    fn derived_names_are_valid_for_every_blueprint_name() {
        for blueprint in [
            "a",
            "ab",
            "1x-train",
            "9",
            "a-very-long-blueprint-name-for-llama-pretraining-on-tpu-v5p-128",
        ] {
            let account = derived(blueprint, "-wi", 6, 30);
            assert_eq!(
                service_account_id(&account),
                Ok(()),
                "{blueprint}: {account}"
            );
            let network = derived(blueprint, "-network", 1, 63);
            assert_eq!(resource(&network), Ok(()), "{blueprint}: {network}");
            let cluster = derived(blueprint, "", 1, 40);
            assert_eq!(limited(&cluster, 40), Ok(()), "{blueprint}: {cluster}");
        }
        assert_eq!(derived("training", "-wi", 6, 30), "training-wi");
    }

    #[test]
    fn checks_gcp_names() {
        assert!(project_id("my-project").is_ok());
        assert!(project_id("My-Project").is_err());
        assert!(project_id("proj").is_err());
        assert!(bucket("my-project-data").is_ok());
        assert!(bucket("google-data").is_err());
        assert!(bucket("my-google-data").is_err());
        assert!(service_account_id("short").is_err());
        assert!(pubsub("sax-metrics").is_ok());
        assert!(pubsub("goog-x").is_err());
        assert!(bigquery("sax_metrics").is_ok());
        assert!(bigquery("sax-metrics").is_err());
        assert_eq!(
            role_slug("roles/storage.objectAdmin"),
            "storage-objectadmin"
        );
    }

    #[test]
    fn checks_locations() {
        for ok in ["us-central2", "europe-west4", "northamerica-northeast1"] {
            assert!(region(ok).is_ok(), "{ok}");
        }
        for bad in [
            "us-central2-b",
            "uscentral",
            "us-central",
            "US-central1",
            "",
        ] {
            assert!(region(bad).is_err(), "{bad}");
        }
        assert!(zone("us-central2-b").is_ok());
        assert!(zone("us-central2").is_err());
        assert!(zone("us-central2-bb").is_err());
        assert_eq!(region_of("us-central2-b"), "us-central2");
        assert_eq!(region_of("us-central2"), "us-central2");
    }
}

//! The fixtures and doc examples of the rules: what each one must be found by.

/// The rule an `err_<rule>[_<case>]` fixture is about: the file stem without `err_`, up to
/// an optional `_<case>` suffix.
pub fn rule_of(stem: &str) -> Option<&str> {
    let rest = stem.strip_prefix("err_")?;
    Some(rest.split_once('_').map_or(rest, |(rule, _)| rule))
}

/// Rules a fixture allows besides its own, from `# also: a, b` lines.
pub fn also_allowed(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# also:"))
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|rule| !rule.is_empty())
        .collect()
}

/// The policy a fixture or doc example is validated under: `# policy: requireDigests` asks
/// for digests, as `images.requireDigests` in `aiml.yaml` does.
pub fn policy_of(text: &str) -> aiml::validate::Policy {
    aiml::validate::Policy {
        require_digests: text
            .lines()
            .any(|line| line.trim() == "# policy: requireDigests"),
    }
}

/// Nothing when `found` (the findings of `rule`'s doc example under `## Fails`) holds a
/// finding of `rule`; otherwise the problem to report, naming the rules found instead.
pub fn example_fails_with(rule: &str, found: &[aiml::diagnostic::Diagnostic]) -> Option<String> {
    if found.iter().any(|finding| finding.rule == rule) {
        return None;
    }
    let rules: Vec<&str> = found.iter().map(|finding| finding.rule.as_str()).collect();
    Some(format!(
        "{rule}: the example does not fail with it (found {rules:?})"
    ))
}

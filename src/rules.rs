//! Every rule the tool reports, and its documentation.
//!
//! Rules live with the stage that checks them: input and envelope rules in
//! [`crate::blueprint`], blueprint-level rules in [`crate::plan`], schema rules in
//! [`crate::schema`], manifest rules in [`crate::validate`]. Each is documented by
//! `docs/rules/<rule-id>.md` (embedded at build time), with the same headings everywhere: what
//! the rule protects against, the GKE or Kubernetes behaviour behind it (with a link), an
//! example that fails, the fix, and the patterns it accepts on purpose. `kubectl aiml rules`
//! lists them; `kubectl aiml rules RULE-ID` prints one; every finding names its rule's doc.
//!
//! A rule can be turned off for one object with the annotation [`IGNORE_ANNOTATION`]
//! (`aiml.dev/ignore: rule-a, rule-b`) or for a whole run with `--ignore RULE-ID`.

include!(concat!(env!("OUT_DIR"), "/rule_docs.rs"));

/// A rule, for listings and docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    /// Stable kebab-case id, as findings carry it.
    pub id: &'static str,
    /// What the rule checks, in one line.
    pub summary: &'static str,
}

/// Annotation that turns rules off for the object carrying it: a comma-separated list of
/// rule ids.
pub const IGNORE_ANNOTATION: &str = "aiml.dev/ignore";

/// Headings every rule doc has, in this order.
pub const DOC_SECTIONS: &[&str] = &[
    "## What it protects against",
    "## Behind it",
    "## Fails",
    "## Fix",
    "## Accepted on purpose",
];

/// Which stage reports a rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Reading files and blueprint envelopes.
    Input,
    /// Planning a blueprint.
    Blueprint,
    /// Schemas of Kubernetes objects.
    Schema,
    /// Rules over Kubernetes objects.
    Manifest,
}

/// Every rule, with the stage that reports it, sorted by stage then id.
#[must_use]
pub fn all() -> Vec<(Stage, Rule)> {
    let mut rules: Vec<(Stage, Rule)> = crate::blueprint::RULES
        .iter()
        .map(|r| (Stage::Input, *r))
        .chain(crate::plan::RULES.iter().map(|r| (Stage::Blueprint, *r)))
        .chain(crate::schema::RULES.iter().map(|r| (Stage::Schema, *r)))
        .chain(crate::validate::RULES.iter().map(|r| (Stage::Manifest, *r)))
        .collect();
    rules.sort_by(|a, b| (a.0, a.1.id).cmp(&(b.0, b.1.id)));
    rules
}

/// The rule called `id`.
#[must_use]
pub fn find(id: &str) -> Option<(Stage, Rule)> {
    all().into_iter().find(|(_, rule)| rule.id == id)
}

/// The Markdown doc of the rule called `id`.
#[must_use]
pub fn doc(id: &str) -> Option<&'static str> {
    DOCS.binary_search_by(|(doc_id, _)| (*doc_id).cmp(id))
        .ok()
        .map(|index| DOCS[index].1)
}

/// How a finding names its rule's doc.
#[must_use]
pub fn doc_reference(id: &str) -> String {
    format!("kubectl aiml rules {id}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_kebab_case() {
        let mut seen = std::collections::BTreeSet::new();
        for (_, rule) in all() {
            assert!(
                rule.id
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-'),
                "{}",
                rule.id
            );
            assert!(seen.insert(rule.id), "{} is listed twice", rule.id);
            assert!(!rule.summary.is_empty(), "{}", rule.id);
        }
    }

    /// Every rule has a doc with every section and a link, and every doc is a rule's.
    #[test]
    fn every_rule_has_its_doc() {
        let ids: Vec<&str> = all().into_iter().map(|(_, rule)| rule.id).collect();
        let mut problems = Vec::new();
        for id in &ids {
            let Some(doc) = doc(id) else {
                problems.push(format!("{id}: no docs/rules/{id}.md"));
                continue;
            };
            if !doc.starts_with(&format!("# {id}\n")) {
                problems.push(format!("{id}: the doc must start with `# {id}`"));
            }
            let mut at = 0;
            for section in DOC_SECTIONS {
                match doc[at..].find(&format!("\n{section}\n")) {
                    Some(index) => at += index + 1,
                    None => problems.push(format!("{id}: missing or misplaced `{section}`")),
                }
            }
            if !doc.contains("https://") {
                problems.push(format!("{id}: no link to the documentation behind it"));
            }
            if !doc.contains("```yaml") {
                problems.push(format!("{id}: no YAML example"));
            }
        }
        for (id, _) in DOCS {
            if !ids.contains(id) {
                problems.push(format!("docs/rules/{id}.md documents no rule"));
            }
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}

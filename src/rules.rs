//! Every rule the tool reports, and its documentation.
//!
//! Rules live with the stage that checks them: input and envelope rules in
//! [`crate::blueprint`], blueprint-level rules in [`crate::plan`] (shared) and in each kind
//! ([`crate::kinds::Kind::rules`]), schema rules in
//! [`crate::schema`], manifest rules in [`crate::validate`]. Each is documented by
//! `docs/rules/<rule-id>.md` (embedded at build time), with the same headings everywhere: what
//! the rule protects against, the GKE or Kubernetes behaviour behind it (with a link), an
//! example that fails, the fix, and the patterns it accepts on purpose. `kubectl aiml rules`
//! lists them; `kubectl aiml rules RULE-ID` prints one; every finding names its rule's doc.
//!
//! A rule can be turned off for one object with the annotation [`IGNORE_ANNOTATION`]
//! (`aiml.dev/ignore: rule-a, rule-b`) or for a whole run with `--ignore RULE-ID`.

include!(concat!(env!("OUT_DIR"), "/rule_docs.rs"));

use crate::diagnostic::{Diagnostic, IGNORE_ANNOTATION, Rule};

/// Headings every rule doc has, in this order.
pub const DOC_SECTIONS: &[&str] = &[
    "## What it protects against",
    "## Behind it",
    "## Fails",
    "## Fix",
    "## Accepted on purpose",
];

/// Rule ids that mean the input itself is malformed (exit code 2 rather than 1).
pub const INPUT_RULES: &[&str] = &[
    "yaml-syntax",
    "blueprint-schema",
    "blueprint-kind",
    "blueprint-api-version",
    "blueprint-name",
    "blueprint-name-duplicate",
    "blueprint-object-collision",
    crate::settings::SETTINGS_SCHEMA,
    crate::jsonnet::JSONNET_EVALUATION,
];

/// Whether `diagnostic` is about malformed input rather than a finding.
#[must_use]
pub fn is_input_error(diagnostic: &Diagnostic) -> bool {
    diagnostic.is_error() && INPUT_RULES.contains(&diagnostic.rule.as_str())
}

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
    /// The GitOps wiring: sync roots.
    Sync,
}

/// Every rule, with the stage that reports it, sorted by stage then id. A rule checked at two
/// stages (a TPU topology in a blueprint's `tpu` stanza and in a pod's selector) is one rule
/// with one doc, listed under the later stage.
#[must_use]
pub fn all() -> Vec<(Stage, Rule)> {
    let mut rules: Vec<(Stage, Rule)> = Vec::new();
    let kinds = crate::kinds::Registry::builtin();
    let kind_rules: Vec<Rule> = kinds
        .iter()
        .flat_map(|kind| kind.rules())
        .copied()
        .collect();
    let stages = crate::validate::RULES
        .iter()
        .map(|r| (Stage::Manifest, *r))
        .chain(crate::schema::RULES.iter().map(|r| (Stage::Schema, *r)))
        .chain(crate::plan::RULES.iter().map(|r| (Stage::Blueprint, *r)))
        .chain(kind_rules.into_iter().map(|r| (Stage::Blueprint, r)))
        .chain(crate::blueprint::RULES.iter().map(|r| (Stage::Input, *r)))
        .chain(crate::settings::RULES.iter().map(|r| (Stage::Input, *r)))
        .chain(crate::jsonnet::RULES.iter().map(|r| (Stage::Input, *r)))
        .chain(crate::sync::RULES.iter().map(|r| (Stage::Sync, *r)));
    for (stage, rule) in stages {
        if !rules.iter().any(|(_, known)| known.id == rule.id) {
            rules.push((stage, rule));
        }
    }
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

/// The YAML example under the `## Fails` heading of the rule's doc, which the tests run to
/// prove that the rule reports it.
#[must_use]
pub fn failing_example(id: &str) -> Option<&'static str> {
    let doc = doc(id)?;
    let fails = &doc[doc.find("\n## Fails\n")?..];
    let fails = &fails[..fails[1..].find("\n## ").map_or(fails.len(), |end| end + 1)];
    let start = fails.find("```yaml\n")? + "```yaml\n".len();
    let end = fails[start..].find("```")?;
    Some(&fails[start..start + end])
}

/// Rules turned off: for the whole run (`--ignore`) and per object ([`IGNORE_ANNOTATION`]).
#[derive(Clone, Debug, Default)]
pub struct Suppressions {
    global: std::collections::BTreeSet<String>,
    per_object: std::collections::BTreeMap<crate::diagnostic::ObjectRef, Vec<String>>,
}

/// A rule named in `--ignore` that cannot be turned off.
#[derive(Debug, thiserror::Error)]
pub enum SuppressionError {
    /// No such rule.
    #[error("`--ignore {id}`: no rule has this id{}", suggestion.as_ref().map(|s| format!("; did you mean `{s}`?")).unwrap_or_default())]
    Unknown {
        /// As given.
        id: String,
        /// The closest rule id.
        suggestion: Option<String>,
    },
    /// Malformed input cannot be ignored: nothing past it could be checked.
    #[error("`--ignore {0}`: malformed input cannot be ignored; fix the input instead")]
    Input(String),
    /// A rule whose error stops a blueprint's plan cannot be ignored: see [`stops_planning`].
    #[error("`--ignore {id}`: {reason}", id = .0, reason = planning_reason(.0))]
    Planning(String),
}

/// Whether an error of rule `id` stops a blueprint from being planned: the rules the planner
/// reports (shared blueprint rules and each built-in kind's). Such a blueprint renders
/// nothing, so suppressing the error would leave it without output, and a render would then
/// remove what it rendered before: these rules cannot be turned off.
/// A rule that also judges plain manifests (`tpu-topology-shape` on a pod's selector) can
/// still be turned off for them: [`Suppressions::apply`] keeps its errors on blueprints.
#[must_use]
pub fn stops_planning(id: &str) -> bool {
    planner_rule(id) && !crate::validate::RULES.iter().any(|rule| rule.id == id)
}

/// Whether the planner reports rule `id` (shared blueprint rules and each built-in kind's).
fn planner_rule(id: &str) -> bool {
    crate::plan::RULES.iter().any(|rule| rule.id == id)
        || crate::kinds::Registry::builtin()
            .iter()
            .any(|kind| kind.rules().iter().any(|rule| rule.id == id))
}

/// An error the planner reported on a blueprint: it stopped that blueprint's plan, so no
/// suppression may drop it (the blueprint would render nothing).
fn stopped_a_plan(diagnostic: &crate::diagnostic::Diagnostic) -> bool {
    diagnostic.severity == crate::diagnostic::Severity::Error
        && diagnostic
            .object
            .as_ref()
            .is_some_and(|object| object.group == crate::blueprint::API_GROUP)
        && planner_rule(diagnostic.rule.as_str())
}

/// Why a rule that [`stops_planning`] cannot be turned off, for messages.
#[must_use]
pub fn planning_reason(id: &str) -> String {
    format!(
        "`{id}` stops a blueprint from being planned, so it cannot be turned off: the blueprint would render nothing and its output would be removed; fix the blueprint instead"
    )
}

impl Suppressions {
    /// Rules turned off for the whole run, checked against the registry.
    pub fn global(ids: &[String]) -> Result<Self, SuppressionError> {
        let known: Vec<&'static str> = all().into_iter().map(|(_, rule)| rule.id).collect();
        let mut global = std::collections::BTreeSet::new();
        for id in ids.iter().flat_map(|list| list.split(',')).map(str::trim) {
            if id.is_empty() {
                continue;
            }
            if !known.contains(&id) {
                return Err(SuppressionError::Unknown {
                    id: id.to_string(),
                    suggestion: crate::catalog::closest(id, known.iter().copied())
                        .map(str::to_string),
                });
            }
            if INPUT_RULES.contains(&id) {
                return Err(SuppressionError::Input(id.to_string()));
            }
            if stops_planning(id) {
                return Err(SuppressionError::Planning(id.to_string()));
            }
            global.insert(id.to_string());
        }
        Ok(Self {
            global,
            per_object: std::collections::BTreeMap::new(),
        })
    }

    /// Adds the rules each object turns off with [`IGNORE_ANNOTATION`].
    pub fn read_objects(&mut self, objects: &[crate::validate::Object<'_>]) {
        for object in objects {
            if let Some((id, rules)) = Self::turned_off(object) {
                self.add(id, rules);
            }
        }
    }

    /// The rules `object` turns off with [`IGNORE_ANNOTATION`], if any.
    #[must_use]
    pub fn turned_off(
        object: &crate::validate::Object<'_>,
    ) -> Option<(crate::diagnostic::ObjectRef, Vec<String>)> {
        let list = object
            .node
            .at(&["metadata", "annotations", IGNORE_ANNOTATION])
            .and_then(crate::yaml::Node::as_str)?;
        let ids = list
            .split(',')
            .map(str::trim)
            .filter(|id| !id.is_empty())
            .map(str::to_string)
            .collect();
        Some((object.id.clone(), ids))
    }

    /// Turns `rules` off for the object `id` (what [`Self::turned_off`] read).
    pub fn add(&mut self, id: crate::diagnostic::ObjectRef, rules: Vec<String>) {
        self.per_object.entry(id).or_default().extend(rules);
    }

    /// Drops the findings of turned-off rules (never those of malformed input); returns how
    /// many were dropped.
    pub fn apply(&self, diagnostics: &mut Vec<crate::diagnostic::Diagnostic>) -> usize {
        let before = diagnostics.len();
        diagnostics.retain(|d| {
            if INPUT_RULES.contains(&d.rule.as_str()) || stopped_a_plan(d) {
                return true;
            }
            if self.global.contains(d.rule.as_str()) {
                return false;
            }
            let off_for_object = d
                .object
                .as_ref()
                .and_then(|object| self.per_object.get(object))
                .is_some_and(|ids| ids.iter().any(|id| id == d.rule.as_str()));
            !off_for_object
        });
        before - diagnostics.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rule_ids_are_unique_kebab_case() {
        for stage in [
            crate::blueprint::RULES,
            crate::settings::RULES,
            crate::jsonnet::RULES,
            crate::sync::RULES,
            crate::plan::RULES,
            crate::schema::RULES,
            crate::validate::RULES,
        ] {
            let mut ids: Vec<&str> = stage.iter().map(|r| r.id).collect();
            ids.sort_unstable();
            let count = ids.len();
            ids.dedup();
            assert_eq!(
                count,
                ids.len(),
                "a rule listed twice in one stage: {ids:?}"
            );
        }
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

    #[test]
    fn rules_are_turned_off_by_flag_or_per_object_but_never_input_errors() {
        let text = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: a\n  annotations:\n    aiml.dev/ignore: gpu-count, schema-violation\n";
        let documents = crate::yaml::parse_documents(text).unwrap();
        let objects: Vec<_> = documents
            .iter()
            .filter_map(|n| crate::validate::Object::from_node("f.yaml", n))
            .collect();
        let mut suppressions = Suppressions::global(&["kueue-quota".into()]).unwrap();
        suppressions.read_objects(&objects);
        let on = |rule: &'static str, object: bool| {
            let mut d = crate::diagnostic::Diagnostic::error(rule, "m");
            if object {
                d = d.object(objects[0].id.clone());
            }
            d
        };
        let mut found = vec![
            on("gpu-count", true),
            on("gpu-count", false),
            on("kueue-quota", false),
            on("yaml-syntax", true),
            on("tpu-chips-per-host", true),
        ];
        assert_eq!(suppressions.apply(&mut found), 2);
        let left: Vec<&str> = found.iter().map(|d| d.rule.as_str()).collect();
        assert_eq!(left, ["gpu-count", "yaml-syntax", "tpu-chips-per-host"]);
        assert!(matches!(
            Suppressions::global(&["gpu-cuont".into()]),
            Err(SuppressionError::Unknown {
                suggestion: Some(_),
                ..
            })
        ));
        assert!(Suppressions::global(&["yaml-syntax".into()]).is_err());
    }

    /// A rule whose error stops a blueprint's plan is refused by name, with the reason.
    #[test]
    fn rules_that_stop_planning_cannot_be_turned_off() {
        for id in [
            "tpu-slices",
            "tpu-type-unknown",
            "gcp-project-id",
            "blueprint-conflict",
            "sax-model-too-large",
        ] {
            assert!(stops_planning(id), "{id}");
            let error = Suppressions::global(&[id.into()]).unwrap_err();
            assert!(matches!(error, SuppressionError::Planning(_)), "{id}");
            assert!(
                error.to_string().contains("cannot be turned off"),
                "{error}"
            );
        }
        assert!(!stops_planning("kueue-quota"));
        assert!(Suppressions::global(&["kueue-quota".into()]).is_ok());
    }

    /// A planner rule that also judges manifests can be turned off for them, never for the
    /// blueprint whose plan its error stopped.
    #[test]
    fn a_rule_shared_with_manifests_is_kept_on_blueprints() {
        use crate::diagnostic::{Diagnostic, ObjectRef};
        let id = "tpu-topology-shape";
        assert!(!stops_planning(id));
        let suppressions = Suppressions::global(&[id.into()]).unwrap();
        let on = |group: &str, kind: &str| {
            let mut d = Diagnostic::error(id, "bad shape");
            d.object = Some(ObjectRef {
                group: group.into(),
                kind: kind.into(),
                namespace: None,
                name: "x".into(),
            });
            d
        };
        let mut findings = vec![
            on(crate::blueprint::API_GROUP, "MultisliceTraining"),
            on("", "Pod"),
        ];
        assert_eq!(suppressions.apply(&mut findings), 1);
        assert_eq!(findings.len(), 1);
        assert_eq!(
            findings[0].object.as_ref().unwrap().kind,
            "MultisliceTraining"
        );
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

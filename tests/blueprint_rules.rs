//! Runs every fixture under `tests/fixtures/blueprints/` through loading and planning (no
//! kustomize): the blueprint-level rules.
//!
//! Each fixture is a blueprints file. `err_<rule-id>[_<case>].yaml` must produce at least one
//! finding of that rule, pointed at the fixture (file and line), and no error of another rule
//! unless a `# also: <rule-id>, …` line allows it; the findings as a person sees them are
//! snapshotted. Every blueprint-level rule (shared, or a kind's own) must have an `err_` fixture,
//! and the blueprint under its doc's `## Fails` must fail with it.

mod support;

use std::collections::BTreeSet;

use aiml::diagnostic::{Diagnostic, render_human};
use aiml::kinds::Registry;
use support::{also_allowed, rule_of};

const FIXTURES: &str = "tests/fixtures/blueprints";

/// Rules no shipped kind can reach; the unit tests of their modules cover them.
const UNIT_TESTED: &[&str] = &[];

/// Loads `text` as the only blueprint file of a repository and plans it.
fn findings(file_name: &str, text: &str) -> Vec<Diagnostic> {
    let repo = tempfile::tempdir().expect("temp dir");
    let blueprints = repo.path().join("blueprints");
    std::fs::create_dir_all(&blueprints).expect("mkdir");
    std::fs::write(blueprints.join(file_name), text).expect("write");
    let registry = Registry::builtin();
    let loaded = aiml::input::load(repo.path(), &registry, u64::MAX).expect("load");
    let (_, diagnostics) = aiml::render::compile(&loaded, &registry, &[]).expect("compile");
    diagnostics
}

#[test]
fn every_fixture_finds_its_rule_at_the_blueprint_line() {
    let mut covered = BTreeSet::new();
    let mut paths: Vec<_> = std::fs::read_dir(FIXTURES)
        .expect("fixtures")
        .map(|entry| entry.expect("entry").path())
        .collect();
    paths.sort();
    for path in paths {
        let file_name = path.file_name().unwrap().to_string_lossy().into_owned();
        let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&path).expect("read");
        let found = findings(&file_name, &text);
        let Some(rule) = rule_of(&stem) else {
            panic!("{file_name}: fixtures here are all `err_<rule>`");
        };
        covered.insert(rule.to_string());
        assert!(
            found.iter().any(|d| d.rule == rule),
            "{file_name}: no `{rule}` finding in {found:#?}"
        );
        let allowed = also_allowed(&text);
        for d in &found {
            assert!(
                !d.is_error() || d.rule == rule || allowed.contains(&d.rule.as_str()),
                "{file_name}: unexpected `{}`: {}",
                d.rule,
                d.message
            );
            assert_eq!(d.file, format!("blueprints/{file_name}"), "{file_name}");
            assert!(d.line > 0, "{file_name}: `{}` has no line", d.rule);
        }
        let lookup = |f: &str| (f == format!("blueprints/{file_name}")).then(|| text.clone());
        insta::with_settings!({snapshot_suffix => stem.clone(), prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!("blueprint_rule", render_human(&found, &lookup, false));
        });
    }
    let missing: Vec<&str> = blueprint_rules()
        .into_iter()
        .map(|rule| rule.id)
        .filter(|id| !covered.contains(*id) && !UNIT_TESTED.contains(id))
        .collect();
    assert!(
        missing.is_empty(),
        "rules without an err_ fixture: {missing:?}"
    );
}

/// Every rule planning reports: the shared ones and each kind's own.
fn blueprint_rules() -> Vec<aiml::diagnostic::Rule> {
    aiml::rules::all()
        .into_iter()
        .filter(|(stage, _)| *stage == aiml::rules::Stage::Blueprint)
        .map(|(_, rule)| rule)
        .collect()
}

/// The docs of blueprint rules show a whole blueprint that fails with the rule, so that they
/// cannot drift from what planning does. (Rules reached only through a manifest show a
/// manifest instead; `validate_rules` checks those.)
#[test]
fn every_blueprint_rule_doc_example_fails_with_its_rule() {
    let mut problems = Vec::new();
    for rule in blueprint_rules() {
        if UNIT_TESTED.contains(&rule.id) {
            continue;
        }
        let Some(example) = aiml::rules::failing_example(rule.id) else {
            problems.push(format!("{}: no YAML example under `## Fails`", rule.id));
            continue;
        };
        if !example.contains("apiVersion: aiml.dev/") {
            continue;
        }
        let found = findings("example.yaml", example);
        problems.extend(support::example_fails_with(rule.id, &found));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn blueprint_rule_ids_are_unique_kebab_case() {
    let mut seen = BTreeSet::new();
    for aiml::diagnostic::Rule { id, summary } in blueprint_rules() {
        assert!(
            id.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'),
            "{id}"
        );
        assert!(seen.insert(id), "{id} twice");
        assert!(!summary.is_empty());
    }
}

//! Overlays: the plain Kustomize folders compiled from blueprints, built in memory.
//!
//! Each blueprint kind renders its files from minijinja templates embedded in the binary.
//! Every `{{ value }}` is written as JSON (minijinja's JSON auto-escaping), which is also valid
//! YAML, so a value can never inject structure: a newline, `: `, `#`, `{{ }}` or a leading `*`
//! stays a literal string. Undefined variables are errors, not empty strings.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use minijinja::{AutoEscape, Environment, UndefinedBehavior};
use serde::Serialize;

/// The files of one overlay, by path relative to the overlay folder. Sorted, so iteration
/// order (and everything written from it) is deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Overlay {
    /// Relative path → content.
    pub files: BTreeMap<String, String>,
}

/// Templates embedded in the binary, by name (`<kind>/<file>`).
const TEMPLATES: &[(&str, &str)] = &[
    (
        "multislice/kustomization.yaml",
        include_str!("blueprint/templates/multislice/kustomization.yaml"),
    ),
    (
        "multislice/config-connector.yaml",
        include_str!("blueprint/templates/multislice/config-connector.yaml"),
    ),
    (
        "multislice/workload.yaml",
        include_str!("blueprint/templates/multislice/workload.yaml"),
    ),
];

static ENVIRONMENT: LazyLock<Environment<'static>> = LazyLock::new(|| {
    let mut env = Environment::new();
    env.set_undefined_behavior(UndefinedBehavior::Strict);
    env.set_auto_escape_callback(|_| AutoEscape::Json);
    // Block tags on their own lines leave no blank lines behind; files keep their final newline.
    match minijinja::syntax::SyntaxConfig::builder()
        .trim_blocks(true)
        .lstrip_blocks(true)
        .keep_trailing_newline(true)
        .build()
    {
        Ok(syntax) => env.set_syntax(syntax),
        Err(error) => panic!("template syntax configuration is invalid: {error:#}"),
    }
    for (name, source) in TEMPLATES {
        // A template that does not parse is a bug in this binary, caught by the unit test below.
        if let Err(error) = env.add_template(name, source) {
            panic!("embedded template {name} does not parse: {error:#}");
        }
    }
    env
});

/// Renders the embedded template `name` with `context`.
pub fn render(name: &str, context: &impl Serialize) -> Result<String, minijinja::Error> {
    let template = ENVIRONMENT.get_template(name)?;
    template.render(minijinja::value::Serde(context))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_templates_parse() {
        for (name, _) in TEMPLATES {
            assert!(ENVIRONMENT.get_template(name).is_ok(), "{name}");
        }
    }

    #[test]
    fn values_cannot_inject_yaml_structure() {
        let mut env = Environment::new();
        env.set_auto_escape_callback(|_| AutoEscape::Json);
        env.add_template("t", "value: {{ v }}\n").unwrap();
        let hostile = [
            "a\nb: injected",
            "key: value",
            "x # comment",
            "{{ 7 * 7 }}",
            "*alias",
            "&anchor x",
            "- item",
            "'single' \"double\"",
            "yes",
            "010",
        ];
        for value in hostile {
            let text = env
                .get_template("t")
                .unwrap()
                .render(minijinja::context! { v => value })
                .unwrap();
            let docs = crate::yaml::parse_documents(&text).unwrap();
            let map = docs[0].as_map().unwrap();
            assert_eq!(map.len(), 1, "{text}");
            assert_eq!(
                docs[0].get("value").unwrap().as_str(),
                Some(value),
                "{text}"
            );
        }
    }

    #[test]
    fn undefined_variables_fail() {
        let mut env = Environment::new();
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        env.add_template("t", "value: {{ pool.lables }}\n").unwrap();
        let result = env
            .get_template("t")
            .unwrap()
            .render(minijinja::context! { pool => BTreeMap::<String, String>::new() });
        assert!(result.is_err());
    }
}

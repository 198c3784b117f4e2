//! Rendering a kind's templates, and what their output may hold.

use minijinja::ErrorKind;

use super::plan::TemplateContext;
use super::{Inner, SHARED_BLOCKS, TEMPLATES_DIR};
use crate::overlay::TemplateError;
use crate::yaml::{Key, Node, Value};

impl Inner {
    /// Renders the object templates with `context` into one YAML stream, checking that each
    /// produced Kubernetes objects and nothing that turns rules off.
    pub(super) fn render(
        &self,
        blueprint: &str,
        context: &TemplateContext<'_>,
    ) -> Result<String, TemplateError> {
        let mut stream = String::new();
        for name in &self.object_templates {
            let path = format!("{}{TEMPLATES_DIR}/{name}", self.folder);
            let text = self
                .environment
                .get_template(name)
                .and_then(|template| template.render(minijinja::value::Serde(context)))
                .map_err(|error| self.render_error(&path, &error))?;
            if text.len() as u64 > self.max_output {
                return Err(TemplateError {
                    template: path,
                    message: format!(
                        "rendered {} for blueprint `{blueprint}`, more than the file size limit",
                        crate::limits::human_size(text.len() as u64)
                    ),
                });
            }
            check_output(&path, blueprint, &text)?;
            if text.trim().is_empty() {
                continue;
            }
            if !stream.is_empty() {
                stream.push_str("---\n");
            }
            stream.push_str(&text);
            if !stream.ends_with('\n') {
                stream.push('\n');
            }
        }
        Ok(stream)
    }

    pub(super) fn render_error(&self, path: &str, error: &minijinja::Error) -> TemplateError {
        // The error may come from an included template: name that one.
        let template = match error.name() {
            Some(SHARED_BLOCKS) => SHARED_BLOCKS.to_string(),
            Some(name) if self.environment.get_template(name).is_ok() => {
                format!("{}{TEMPLATES_DIR}/{name}", self.folder)
            }
            _ => path.to_string(),
        };
        let line = error
            .line()
            .map(|l| format!("line {l}: "))
            .unwrap_or_default();
        let message = match error.kind() {
            ErrorKind::TemplateNotFound => format!(
                "{line}{}: a kind's templates include only files of `{}{TEMPLATES_DIR}/` (and `{SHARED_BLOCKS}`)",
                error.detail().unwrap_or("template not found"),
                self.folder
            ),
            ErrorKind::OutOfFuel => {
                format!("{line}the template ran too long (a runaway loop?); rendering stopped")
            }
            kind => format!(
                "{line}{kind}{}",
                error.detail().map(|d| format!(": {d}")).unwrap_or_default()
            ),
        };
        TemplateError { template, message }
    }
}

/// Every document a kind's template renders is a Kubernetes object that does not turn
/// rules off.
pub(super) fn check_output(path: &str, blueprint: &str, text: &str) -> Result<(), TemplateError> {
    let error = |message: String| TemplateError {
        template: path.to_string(),
        message,
    };
    let documents = crate::yaml::parse_documents(text).map_err(|e| {
        let line = e
            .span
            .map(|s| format!(" at line {} of the output", s.line))
            .unwrap_or_default();
        error(format!(
            "rendered malformed YAML for blueprint `{blueprint}`{line}: {}",
            e.message
        ))
    })?;
    for document in documents {
        if matches!(document.value, Value::Null) {
            continue;
        }
        let line = document.span.line;
        let is_object = document.get("apiVersion").and_then(Node::as_str).is_some()
            && document.get("kind").and_then(Node::as_str).is_some()
            && document
                .at(&["metadata", "name"])
                .and_then(Node::as_str)
                .is_some();
        if !is_object {
            return Err(error(format!(
                "rendered a document that is not a Kubernetes object for blueprint `{blueprint}` (line {line} of the output); expected a mapping with `apiVersion`, `kind` and `metadata.name`"
            )));
        }
        // Anywhere, not only on the object's own metadata: items of a `List` are objects too.
        if let Some(key) = find_key(&document, crate::diagnostic::IGNORE_ANNOTATION) {
            return Err(error(format!(
                "sets `{}` for blueprint `{blueprint}` (line {} of the output): a kind cannot turn rules off; only a blueprint can, in its own `metadata.annotations`",
                crate::diagnostic::IGNORE_ANNOTATION,
                key.span.line
            )));
        }
    }
    Ok(())
}

/// The first mapping key called `name` in the tree under `node`.
pub(super) fn find_key<'n>(node: &'n Node, name: &str) -> Option<&'n Key> {
    match &node.value {
        Value::Map(entries) => entries.iter().find_map(|(key, value)| {
            if key.text == name {
                Some(key)
            } else {
                find_key(value, name)
            }
        }),
        Value::Seq(items) => items.iter().find_map(|item| find_key(item, name)),
        _ => None,
    }
}

//! `kubectl aiml validate [PATH…]`: the repository's blueprints, or anyone's manifests.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use aiml::blueprint;
use aiml::diagnostic::{self, Diagnostic};
use aiml::render::{self, Report};
use aiml::repo::{self, SourceFile};
use aiml::validate::{self, Object};

use super::{Context, Outcome, outcome_of};

pub(super) fn run(context: &Context<'_>, paths: &[PathBuf]) -> anyhow::Result<Outcome> {
    if paths.is_empty() {
        let root = context.root()?;
        let loaded = context.load(&root)?;
        let mut report = build_in_temp(context, &loaded, &root)?;
        let suppressed = context.suppressions.apply(&mut report.diagnostics) + report.suppressed();
        context
            .printer
            .diagnostics(&report.diagnostics, suppressed, &|f| loaded.text(f));
        if !context.printer.json && report.diagnostics.is_empty() {
            context.printer.err(&format!(
                "{} valid\n",
                super::plural(report.blueprints.len(), "blueprint")
            ));
        }
        return Ok(outcome_of(&report));
    }
    // Explicit paths: blueprints among them are compiled; everything else is a manifest.
    let is_blueprint = |node: &aiml::yaml::Node| {
        node.get("apiVersion").and_then(aiml::yaml::Node::as_str) == Some(blueprint::API_VERSION)
    };
    let mut manifests: Vec<SourceFile> = Vec::new();
    let mut blueprints = repo::Loaded::default();
    let mut diagnostics = Vec::new();
    let mut files = Vec::new();
    for path in paths {
        files.extend(inputs(path)?);
    }
    // Reading and parsing is most of the work on a large tree: in parallel, in input order.
    let max_file_size = context.limits.max_file_size;
    let read: Vec<_> = files
        .par_iter()
        .map(|file| {
            // Paths given on the command line are shown as given (less a leading `./`).
            let display = file
                .strip_prefix(".")
                .unwrap_or(file)
                .to_string_lossy()
                .replace('\\', "/");
            repo::read_source(file, display, max_file_size)
        })
        .collect();
    for result in read {
        let (mut source, diagnostic) = result?;
        diagnostics.extend(diagnostic);
        let (blueprint_documents, others) = std::mem::take(&mut source.documents)
            .into_iter()
            .partition::<Vec<_>, _>(|n| is_blueprint(n));
        if !blueprint_documents.is_empty() {
            blueprints.files.push(SourceFile {
                path: source.path.clone(),
                text: source.text.clone(),
                documents: blueprint_documents,
            });
        }
        source.documents = others;
        manifests.push(source);
    }
    let mut objects = Vec::new();
    let mut sources = Vec::new();
    for file in &manifests {
        for node in &file.documents {
            match Object::from_node(&file.path, node) {
                Some(object) => {
                    objects.push(object);
                    sources.push(file.text.as_str());
                }
                None => diagnostics.push(
                    Diagnostic::warning(
                        "not-an-object",
                        "document is not a Kubernetes object; skipped",
                    )
                    .at(file.path.clone(), node.span)
                    .expected("`apiVersion`, `kind` and `metadata.name`"),
                ),
            }
        }
    }
    let checks = context.checks;
    let schema_findings: Vec<Vec<Diagnostic>> = objects
        .par_iter()
        .zip(sources.par_iter())
        .map(|(object, source)| {
            checks
                .schemas
                .check_with_source(object, source, &checks.options)
        })
        .collect();
    diagnostics.extend(schema_findings.into_iter().flatten());
    diagnostics.extend(validate::validate(&objects));
    let mut count = objects.len();
    let mut suppressed_by_blueprints = 0;
    if !blueprints.files.is_empty() {
        blueprints.check_envelopes(&context.registry);
        let root = context.root().unwrap_or_else(|_| PathBuf::from("."));
        let report = build_in_temp(context, &blueprints, &root)?;
        count += report.blueprints.len();
        suppressed_by_blueprints = report.suppressed();
        diagnostics.extend(report.diagnostics);
    }
    diagnostic::sort(&mut diagnostics);
    let mut suppressions = context.suppressions.clone();
    suppressions.read_objects(&objects);
    let suppressed = suppressions.apply(&mut diagnostics) + suppressed_by_blueprints;
    let text_of = |f: &str| {
        manifests
            .iter()
            .find(|s| s.path == f)
            .map(|s| s.text.clone())
    };
    context
        .printer
        .diagnostics(&diagnostics, suppressed, &text_of);
    if !context.printer.json {
        context.printer.err(&format!(
            "{}\n",
            coverage(context, &objects, count, &diagnostics)
        ));
    }
    Ok(outcome_of(&Report {
        diagnostics,
        ..Report::default()
    }))
}

/// Nothing is skipped silently: what judged the objects, and how many nothing could judge.
fn coverage(
    context: &Context<'_>,
    objects: &[Object<'_>],
    count: usize,
    diagnostics: &[Diagnostic],
) -> String {
    let schemas = context.checks.schemas;
    let has_schema = |o: &Object<'_>| schemas.has_schema(o.api_version, &o.id.kind);
    let by_schema = objects.iter().filter(|o| has_schema(o)).count();
    let by_rules = objects.iter().filter(|o| validate::applies_to(o)).count();
    let unjudged = objects
        .iter()
        .filter(|o| !has_schema(o) && !validate::applies_to(o))
        .count();
    let mut line = format!(
        "{}: {by_schema} checked against their schema, {by_rules} by the manifest rules",
        super::plural(objects.len(), "object")
    );
    if unjudged > 0 {
        line.push_str(&format!(
            "; {unjudged} not applicable (no schema, no rule: see `schema-unknown-kind`)"
        ));
    }
    if count > objects.len() {
        line.push_str(&format!(
            "; {} compiled",
            super::plural(count - objects.len(), "blueprint")
        ));
    }
    if diagnostics.iter().all(|d| !d.is_error()) {
        line.push_str("; no errors");
    }
    line
}

/// The input files a command-line path stands for: a folder's YAML files, or the path itself
/// (which reading then checks is a regular file, and says what it is otherwise).
fn inputs(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let metadata = std::fs::metadata(path)
        .map_err(|_| anyhow::anyhow!("no such file or folder: `{}`", path.display()))?;
    if metadata.is_dir() {
        let files = repo::input_files(path)?;
        if files.is_empty() {
            anyhow::bail!(
                "`{}` holds no `*.yaml` or `*.yml` file: nothing to validate",
                path.display()
            );
        }
        Ok(files)
    } else {
        Ok(vec![path.to_path_buf()])
    }
}

/// Renders every blueprint of `loaded` into a throwaway folder, for its findings.
fn build_in_temp(
    context: &Context<'_>,
    loaded: &repo::Loaded,
    root: &Path,
) -> anyhow::Result<Report> {
    let kustomize = context.kustomize()?;
    let staging = tempfile::Builder::new()
        .prefix("aiml-validate-")
        .tempdir()?;
    Ok(render::build(
        loaded,
        &context.registry,
        &[],
        &kustomize,
        context.checks,
        None,
        root,
        staging.path(),
    )?)
}

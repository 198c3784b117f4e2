//! `kubectl aiml validate [PATH…]`: the repository's blueprints, or anyone's manifests.

use std::path::{Path, PathBuf};

use rayon::prelude::*;

use aiml::blueprint;
use aiml::diagnostic::{self, Diagnostic, ObjectRef};
use aiml::input;
use aiml::render::{self, Checks, Report};
use aiml::repo::{self, SourceFile};
use aiml::rules::Suppressions;
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
    let mut files = Vec::new();
    for path in paths {
        files.extend(inputs(path)?);
    }
    if files.iter().filter(|f| f.as_os_str() == STDIN_ARG).count() > 1 {
        anyhow::bail!(
            "standard input (`-` or `/dev/stdin`) is given more than once: it can be read once"
        );
    }
    // Each file is read, parsed and judged on its own, in parallel and in input order; what
    // the cross-object rules do not read is dropped with it, so that memory follows the
    // objects those rules need, not the whole tree.
    let max_file_size = context.limits.max_file_size;
    let mut diagnostics = Vec::new();
    // The settings of the repository of the current folder, if any: Jsonnet files evaluate
    // with its variables, and its `images` policy applies to every file.
    let root = context.root().ok();
    let settings = match &root {
        Some(root) => {
            let loaded = aiml::settings::load(root, max_file_size)?;
            diagnostics.extend(loaded.diagnostics);
            loaded.settings
        }
        None => aiml::settings::Settings::default(),
    };
    let checks = &context.checks.with_settings(&settings);
    let jsonnet = files
        .iter()
        .any(|f| repo::is_jsonnet(f))
        .then(|| -> anyhow::Result<JsonnetContext> {
            Ok(JsonnetContext {
                root: root.clone(),
                inputs: settings.jsonnet.clone(),
                timeout: aiml::jsonnet::timeout()?,
            })
        })
        .transpose()?;
    let checked: Vec<CheckedFile> = files
        .par_iter()
        .map(|file| check_file(checks, max_file_size, jsonnet.as_ref(), file))
        .collect::<anyhow::Result<_>>()?;
    let mut manifests: Vec<SourceFile> = Vec::new();
    // Blueprints given as paths are compiled alone (no sync wiring), under the same images
    // policy as the manifests.
    let mut blueprints = input::Loaded {
        settings: aiml::settings::Settings {
            images: settings.images,
            kubernetes_version: settings.kubernetes_version.clone(),
            ..aiml::settings::Settings::default()
        },
        ..input::Loaded::default()
    };
    let mut suppressions = context.suppressions.clone();
    let mut coverage = Coverage::default();
    for file in checked {
        diagnostics.extend(file.diagnostics);
        for (id, rules) in file.turned_off {
            suppressions.add(id, rules);
        }
        coverage.add(&file.coverage);
        if let (Some(blueprint_file), Some(jsonnet)) = (&file.blueprints, file.jsonnet) {
            blueprints
                .jsonnet
                .insert(blueprint_file.path.clone(), jsonnet);
        }
        blueprints.files.extend(file.blueprints);
        manifests.extend(file.kept);
    }
    let objects: Vec<Object<'_>> = manifests
        .iter()
        .flat_map(|file| {
            file.documents
                .iter()
                .filter_map(|node| Object::from_node(&file.path, node))
        })
        .collect();
    diagnostics.extend(validate::check_together(&objects));
    let mut count = coverage.objects;
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
    let suppressed = suppressions.apply(&mut diagnostics) + suppressed_by_blueprints;
    let text_of = |f: &str| {
        manifests
            .iter()
            .find(|s| s.path == f)
            .map(|s| s.text.clone())
            .or_else(|| blueprints.text(f))
    };
    context
        .printer
        .diagnostics(&diagnostics, suppressed, &text_of);
    if !context.printer.json {
        context
            .printer
            .err(&format!("{}\n", coverage.line(count, &diagnostics)));
    }
    Ok(outcome_of(&Report {
        diagnostics,
        ..Report::default()
    }))
}

/// How `validate PATH…` evaluates Jsonnet files.
struct JsonnetContext {
    /// The repository of the current folder: imports stay inside it (else inside the file's
    /// own folder).
    root: Option<PathBuf>,
    /// Its `aiml.yaml` variables.
    inputs: aiml::jsonnet::Inputs,
    timeout: std::time::Duration,
}

/// One input file after reading and the checks that judge its objects one by one.
struct CheckedFile {
    /// Its blueprint documents, compiled later with the repository's others.
    blueprints: Option<SourceFile>,
    /// What a Jsonnet file's evaluation read, for the blueprints' findings and snippets.
    jsonnet: Option<input::JsonnetFile>,
    /// The file with only the documents the cross-object rules read, when it has any or
    /// findings to print with its text.
    kept: Option<SourceFile>,
    /// Findings: malformed YAML, documents that are not objects, schemas, per-object rules.
    diagnostics: Vec<Diagnostic>,
    /// Rules its objects turn off by annotation.
    turned_off: Vec<(ObjectRef, Vec<String>)>,
    coverage: Coverage,
}

/// Reads `file` and runs what judges each of its objects alone.
fn check_file(
    checks: &Checks<'_>,
    max_file_size: u64,
    jsonnet_context: Option<&JsonnetContext>,
    file: &Path,
) -> anyhow::Result<CheckedFile> {
    // Paths given on the command line are shown as given (less a leading `./`).
    let display = file
        .strip_prefix(".")
        .unwrap_or(file)
        .to_string_lossy()
        .replace('\\', "/");
    let (mut source, mut diagnostics, jsonnet) = match jsonnet_context {
        Some(context) if repo::is_jsonnet(file) => {
            let root = jsonnet_root(context.root.as_deref(), file);
            let read = input::read_jsonnet(
                &root,
                file,
                display,
                &context.inputs,
                max_file_size,
                context.timeout,
            )?;
            (
                read.file,
                read.diagnostic.into_iter().collect(),
                read.jsonnet,
            )
        }
        _ if file.as_os_str() == STDIN_ARG => {
            let (source, diagnostics) =
                repo::parse_source(read_stdin(max_file_size)?, STDIN.into());
            (source, diagnostics, None)
        }
        _ => {
            let (source, diagnostics) = repo::read_source(file, display, max_file_size)?;
            (source, diagnostics, None)
        }
    };
    // A Helm template or a kustomize patch is not a manifest: said once, as such, and not
    // read field by field (its syntax and fields are the chart's or the base's business).
    let not_a_manifest = jsonnet
        .is_none()
        .then(|| not_a_manifest(file, &source, max_file_size))
        .flatten();
    if let Some((diagnostic, template)) = not_a_manifest {
        if template {
            // Template syntax is not YAML: its parse errors are not the file's defects.
            diagnostics.clear();
        }
        diagnostics.push(diagnostic);
        return Ok(CheckedFile {
            blueprints: None,
            jsonnet: None,
            kept: Some(SourceFile {
                documents: Vec::new(),
                ..source
            }),
            diagnostics,
            turned_off: Vec::new(),
            coverage: Coverage::default(),
        });
    }
    let is_blueprint = |node: &aiml::yaml::Node| {
        node.get("apiVersion").and_then(aiml::yaml::Node::as_str) == Some(blueprint::API_VERSION)
    };
    let (blueprint_documents, others) = std::mem::take(&mut source.documents)
        .into_iter()
        .partition::<Vec<_>, _>(|n| is_blueprint(n));
    let blueprints = (!blueprint_documents.is_empty()).then(|| SourceFile {
        path: source.path.clone(),
        text: source.text.clone(),
        documents: blueprint_documents,
    });
    let mut turned_off = Vec::new();
    let mut coverage = Coverage::default();
    let mut keep = Vec::with_capacity(others.len());
    for node in &others {
        let Some(object) = Object::from_node(&source.path, node) else {
            diagnostics.push(
                Diagnostic::warning(
                    "not-an-object",
                    "document is not a Kubernetes object; skipped",
                )
                .at(source.path.clone(), node.span)
                .expected("`apiVersion`, `kind` and `metadata.name`"),
            );
            keep.push(false);
            continue;
        };
        diagnostics.extend(checks.schemas.check_with_source(
            &object,
            &source.text,
            &checks.options,
        ));
        diagnostics.extend(validate::check_each_with(&object, checks.policy));
        turned_off.extend(Suppressions::turned_off(&object));
        let has_schema = checks
            .schemas
            .has_schema(object.api_version, &object.id.kind);
        let by_rules = validate::applies_to(&object);
        coverage.objects += 1;
        coverage.by_schema += usize::from(has_schema);
        coverage.by_rules += usize::from(by_rules);
        coverage.unjudged += usize::from(!has_schema && !by_rules);
        keep.push(by_rules);
    }
    let mut keep = keep.into_iter();
    source.documents = others
        .into_iter()
        .filter(|_| keep.next().unwrap_or(false))
        .collect();
    let kept = (!source.documents.is_empty() || !diagnostics.is_empty()).then_some(source);
    Ok(CheckedFile {
        blueprints,
        jsonnet,
        kept,
        diagnostics,
        turned_off,
        coverage,
    })
}

/// Nothing is skipped silently: what judged the objects, and how many nothing could judge.
#[derive(Debug, Default)]
struct Coverage {
    objects: usize,
    by_schema: usize,
    by_rules: usize,
    /// Neither a schema nor a rule.
    unjudged: usize,
}

impl Coverage {
    fn add(&mut self, other: &Coverage) {
        self.objects += other.objects;
        self.by_schema += other.by_schema;
        self.by_rules += other.by_rules;
        self.unjudged += other.unjudged;
    }

    /// The summary line; `count` adds compiled blueprints to the objects.
    fn line(&self, count: usize, diagnostics: &[Diagnostic]) -> String {
        let mut line = format!(
            "{}: {} checked against their schema, {} by the manifest rules",
            super::plural(self.objects, "object"),
            self.by_schema,
            self.by_rules
        );
        if self.unjudged > 0 {
            line.push_str(&format!(
                "; {} not applicable (no schema, no rule: see `schema-unknown-kind`)",
                self.unjudged
            ));
        }
        if count > self.objects {
            line.push_str(&format!(
                "; {} compiled",
                super::plural(count - self.objects, "blueprint")
            ));
        }
        if diagnostics.iter().all(|d| !d.is_error()) {
            line.push_str("; no errors");
        }
        line
    }
}

/// The folder a Jsonnet file's imports must stay in: the current repository when the file is
/// inside it, else the file's own folder.
fn jsonnet_root(repository: Option<&Path>, file: &Path) -> PathBuf {
    let folder = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let canonical = |p: &Path| p.canonicalize().ok();
    match (repository.and_then(canonical), canonical(folder)) {
        (Some(root), Some(dir)) if dir.starts_with(&root) => root,
        _ => folder.to_path_buf(),
    }
}

/// The argument that stands for standard input.
const STDIN_ARG: &str = "-";
/// How findings name standard input.
const STDIN: &str = "<stdin>";

/// The names of standard input on Unix systems.
const STDIN_PATHS: [&str; 3] = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

/// Whether `path` is standard input: `-`, or one of its names (`/dev/stdin`, `/dev/fd/0`) when
/// standard input is not a regular file (a pipe). Any other FIFO, device or socket is still
/// refused by reading, even when standard input happens to be that very file (`validate
/// /dev/null` with standard input from `/dev/null`).
fn is_stdin(path: &Path) -> bool {
    if path.as_os_str() == STDIN_ARG {
        return true;
    }
    if !STDIN_PATHS.iter().any(|name| path == Path::new(name)) {
        return false;
    }
    #[cfg(unix)]
    {
        use std::os::fd::AsFd as _;
        use std::os::unix::fs::MetadataExt as _;
        // A regular file behind `/dev/stdin` (`< file.yaml`) is read as that file.
        let Ok(named) = std::fs::metadata(path) else {
            return false;
        };
        if named.is_file() || named.is_dir() {
            return false;
        }
        let Ok(ours) = std::io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map(std::fs::File::from)
            .and_then(|stdin| stdin.metadata())
        else {
            return false;
        };
        named.dev() == ours.dev() && named.ino() == ours.ino()
    }
    #[cfg(not(unix))]
    false
}

/// Standard input as text, bounded like a file (`AIML_MAX_FILE_SIZE`).
fn read_stdin(limit: u64) -> Result<String, repo::ReadError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::io::stdin()
        .lock()
        .take(limit.saturating_add(1))
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(repo::ReadError::TooLarge {
            path: STDIN.into(),
            limit,
        });
    }
    String::from_utf8(bytes).map_err(|_| repo::ReadError::NotText { path: STDIN.into() })
}

/// The one finding for a file that is not a manifest as a whole, and whether it is a template
/// (whose parse errors are then dropped): a Helm template, or a kustomize patch on disk.
fn not_a_manifest(
    file: &Path,
    source: &SourceFile,
    max_file_size: u64,
) -> Option<(Diagnostic, bool)> {
    if let Some((span, action)) = helm_template(&source.text) {
        let message = format!(
            "Helm template (`{action}`): not a Kubernetes manifest until it is rendered; not checked"
        );
        let diagnostic = Diagnostic::warning("not-an-object", message)
            .at(source.path.clone(), span)
            .fix("validate what Helm renders: `helm template CHART | kubectl aiml validate -`");
        return Some((diagnostic, true));
    }
    // Standard input has no folder, so no kustomization beside it.
    if file.as_os_str() == STDIN_ARG {
        return None;
    }
    let kustomization = kustomize_patch(file, max_file_size)?;
    let message = format!(
        "kustomize patch (listed in `{kustomization}`): not a whole object; not checked on its own"
    );
    let first_line = aiml::yaml::Span {
        line: 1,
        column: 1,
        offset: 0,
        len: 0,
    };
    let diagnostic = Diagnostic::warning("not-an-object", message)
        .at(source.path.clone(), first_line)
        .fix("validate the build: `kubectl kustomize DIR | kubectl aiml validate -`");
    Some((diagnostic, false))
}

/// Where `text` first uses a Helm template action, and the action: a `{{ … }}` that reads
/// Helm's built-in objects (`.Values`, `.Release`, `.Chart`, `.Capabilities`, `.Files`) or
/// calls `include`, `define`, `template`, `tpl`, `toYaml` or `required`
/// (https://helm.sh/docs/chart_template_guide/builtin_objects/,
/// https://helm.sh/docs/chart_template_guide/named_templates/). A bare `{{` is not enough:
/// manifests carry Jinja chat templates in ConfigMaps and Argo `{{inputs.parameters.x}}`
/// in workflow steps, and those are objects to check.
fn helm_template(text: &str) -> Option<(aiml::yaml::Span, String)> {
    const WORDS: [&str; 11] = [
        ".Values",
        ".Release",
        ".Chart",
        ".Capabilities",
        ".Files",
        "include ",
        "define ",
        "template ",
        "tpl ",
        "toYaml ",
        "required ",
    ];
    let mut offset = 0;
    for (index, line) in text.split_inclusive('\n').enumerate() {
        // A comment that mentions an action is documentation; point at the first real one.
        if line.trim_start().starts_with('#') {
            offset += line.len();
            continue;
        }
        let mut rest = line;
        while let Some(open) = rest.find("{{") {
            let inside = &rest[open + 2..];
            let close = inside.find("}}").unwrap_or(inside.len());
            let action = &inside[..close];
            if WORDS.iter().any(|word| action.contains(word)) {
                let start = offset + (line.len() - rest.len()) + open;
                let column = line[..line.len() - rest.len() + open].chars().count() + 1;
                let shown: String = format!("{{{{{action}}}}}").chars().take(60).collect();
                return Some((
                    aiml::yaml::Span {
                        line: u32::try_from(index + 1).unwrap_or(u32::MAX),
                        column: u32::try_from(column).unwrap_or(u32::MAX),
                        offset: start,
                        len: 0,
                    },
                    shown,
                ));
            }
            rest = &inside[close.min(inside.len())..];
        }
        offset += line.len();
    }
    None
}

/// The kustomization beside `file` (or in the folder above it) that lists `file` as a patch
/// (`patches[].path`, `patchesStrategicMerge[]`, `patchesJson6902[].path`), as a path to show.
/// kustomize merges a patch into the objects of its resources, so the patch alone lacks what
/// the base gives (https://kubectl.docs.kubernetes.io/references/kustomize/kustomization/patches/).
fn kustomize_patch(file: &Path, max_file_size: u64) -> Option<String> {
    let target = normal(file);
    let folder = file.parent()?;
    for dir in [Some(folder), folder.parent()].into_iter().flatten() {
        for name in ["kustomization.yaml", "kustomization.yml", "Kustomization"] {
            let path = dir.join(name);
            let Ok(metadata) = std::fs::metadata(&path) else {
                continue;
            };
            if !metadata.is_file() || metadata.len() > max_file_size {
                continue;
            }
            let Ok(text) = std::fs::read_to_string(&path) else {
                continue;
            };
            let Ok(documents) = aiml::yaml::parse_documents(&text) else {
                continue;
            };
            let listed = documents.iter().any(|document| {
                patch_paths(document)
                    .into_iter()
                    .any(|patch| normal(&dir.join(patch)) == target)
            });
            if listed {
                return Some(path.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    None
}

/// The patch file paths a kustomization lists.
fn patch_paths(kustomization: &aiml::yaml::Node) -> Vec<&str> {
    use aiml::yaml::Node;
    let items = |key: &str| {
        kustomization
            .get(key)
            .and_then(Node::as_seq)
            .unwrap_or_default()
    };
    let mut paths: Vec<&str> = items("patchesStrategicMerge")
        .iter()
        .filter_map(Node::as_str)
        .collect();
    for key in ["patches", "patchesJson6902"] {
        paths.extend(
            items(key)
                .iter()
                .filter_map(|patch| patch.get("path").and_then(Node::as_str)),
        );
    }
    paths
}

/// `path` without `.` components and with `dir/..` folded, for comparing two spellings of one
/// file without touching the file system.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir if out.file_name().is_some() => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// The input files a command-line path stands for: a folder's YAML files, standard input
/// (`-`), or the path itself (which reading then checks is a regular file, and says what it
/// is otherwise).
fn inputs(path: &Path) -> anyhow::Result<Vec<PathBuf>> {
    if is_stdin(path) {
        return Ok(vec![PathBuf::from(STDIN_ARG)]);
    }
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
    loaded: &input::Loaded,
    root: &Path,
) -> anyhow::Result<Report> {
    let kustomize = context.kustomize()?;
    let staging = super::interrupt::temporary_dir("aiml-validate-")?;
    Ok(render::build(
        loaded,
        &context.registry,
        &[],
        &kustomize,
        context.checks,
        None,
        root,
        staging.path(),
        render::Output::FindingsOnly,
        &super::progress::Bar::stderr(),
    )?)
}

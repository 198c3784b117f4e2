//! The command line: clap definitions and the wiring of each command. No business logic:
//! every command calls the pipeline stages and prints what they return.
//!
//! stdout carries data (JSON, listings); stderr carries human diagnostics and progress.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};
use rayon::prelude::*;

use aiml::blueprint;
use aiml::diagnostic::{self, Diagnostic};
use aiml::kinds::Registry;
use aiml::kustomize::Kustomize;
use aiml::render::{self, Change, Checks, Report};
use aiml::repo::{self, SourceFile};
use aiml::schema::{CheckOptions, Schemas};
use aiml::validate::{self, Object};

/// Compile AI/ML blueprints for GKE into validated Kustomize overlays and rendered manifests.
#[derive(Debug, Parser)]
#[command(
    name = "kubectl-aiml",
    bin_name = "kubectl aiml",
    version,
    propagate_version = true,
    after_help = "Example:\n  kubectl aiml render            # compile blueprints/ into overlays/ and rendered/\n  kubectl aiml render --check    # in CI: fail when committed output is stale"
)]
pub struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct Global {
    /// Repository to work on.
    #[arg(long, global = true, value_name = "DIR", default_value = ".")]
    repo: PathBuf,
    /// Output format for structured output.
    #[arg(short, long, global = true, value_enum, default_value_t = Output::Text)]
    output: Output,
    /// Never color output (also honoured: the NO_COLOR environment variable).
    #[arg(long, global = true)]
    no_color: bool,
    /// Treat objects of kinds without a schema as errors, not warnings.
    #[arg(long, global = true)]
    strict: bool,
    /// Extra JSON schemas for other custom resources (kubeconform layout:
    /// `<group>/<kind>_<version>.json`); repeatable; they win over the built-in ones.
    #[arg(long, global = true, value_name = "DIR")]
    schemas: Vec<PathBuf>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Text,
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile blueprints into overlays/ and rendered/, validating everything.
    #[command(
        after_help = "Examples:\n  kubectl aiml render\n  kubectl aiml render multislice-v4-32-training\n  kubectl aiml render --check"
    )]
    Render {
        /// Blueprints to render (default: all).
        names: Vec<String>,
        /// Write nothing; exit 1 when overlays/ or rendered/ differ from a fresh render.
        #[arg(long)]
        check: bool,
    },
    /// Validate blueprints, or any Kubernetes YAML files or folders, with every rule.
    #[command(
        after_help = "Examples:\n  kubectl aiml validate                 # the repository's blueprints\n  kubectl aiml validate manifests/      # someone else's manifests\n  kubectl aiml validate -o json job.yaml"
    )]
    Validate {
        /// Files or folders (default: the repository's blueprints).
        paths: Vec<PathBuf>,
    },
    /// List blueprint kinds and the repository's blueprints.
    #[command(
        after_help = "Examples:\n  kubectl aiml blueprints -o json\n  kubectl aiml blueprints --schema MultisliceTraining > multislice.schema.json"
    )]
    Blueprints {
        /// Print the JSON Schema of this kind's `spec` instead (for editors).
        #[arg(long, value_name = "KIND")]
        schema: Option<String>,
    },
    /// Print the version.
    #[command(after_help = "Example:\n  kubectl aiml version")]
    Version,
}

/// How a command ended, mapped to the contract's exit codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// 0: success, nothing found.
    Success,
    /// 1: findings, or stale output under `--check`.
    Findings,
    /// 2: the command could not do its job.
    Failure,
}

impl From<Outcome> for ExitCode {
    fn from(outcome: Outcome) -> Self {
        ExitCode::from(match outcome {
            Outcome::Success => 0,
            Outcome::Findings => 1,
            Outcome::Failure => 2,
        })
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    let printer = Printer::new(&cli.global);
    let root = cli.global.repo.as_path();
    let registry = Registry::builtin();
    let extra_schemas;
    let schemas = if cli.global.schemas.is_empty() {
        Schemas::embedded()
    } else {
        extra_schemas = Schemas::with_dirs(&cli.global.schemas)?;
        &extra_schemas
    };
    let checks = Checks {
        schemas,
        options: CheckOptions {
            strict: cli.global.strict,
        },
    };
    match cli.command {
        Command::Render { names, check } => {
            render(root, &registry, checks, &names, check, &printer)
        }
        Command::Validate { paths } => validate_command(root, &registry, checks, &paths, &printer),
        Command::Blueprints { schema: Some(kind) } => kind_schema(&registry, &kind, &printer),
        Command::Blueprints { schema: None } => blueprints(root, &registry, &printer),
        Command::Version => {
            let mut text = format!("kubectl-aiml {}\n", env!("CARGO_PKG_VERSION"));
            // Which kustomize renders would use, when there is one.
            if let Ok(kustomize) = Kustomize::discover() {
                let version = kustomize
                    .version()
                    .unwrap_or_else(|_| "unknown version".into());
                text.push_str(&format!("kustomize {version} ({})\n", kustomize.name()));
            }
            printer.out(&text)?;
            Ok(Outcome::Success)
        }
    }
}

/// The one place that writes to stdout and stderr.
struct Printer {
    json: bool,
    color: bool,
}

impl Printer {
    fn new(global: &Global) -> Self {
        let no_color =
            global.no_color || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            json: global.output == Output::Json,
            color: !no_color && std::io::stderr().is_terminal(),
        }
    }

    fn out(&self, text: &str) -> std::io::Result<()> {
        let mut stdout = std::io::stdout().lock();
        stdout.write_all(text.as_bytes())?;
        stdout.flush()
    }

    fn err(&self, text: &str) {
        // Nothing sensible to do when stderr is gone.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    /// Prints findings (human on stderr, or JSON on stdout).
    fn diagnostics(
        &self,
        diagnostics: &[Diagnostic],
        sources: &diagnostic::SourceLookup<'_>,
    ) -> std::io::Result<()> {
        if self.json {
            return self.out(&diagnostic::render_json(diagnostics));
        }
        if !diagnostics.is_empty() {
            self.err(&diagnostic::render_human(diagnostics, sources, self.color));
            self.err(&format!("{}\n", diagnostic::summary(diagnostics)));
        }
        Ok(())
    }
}

fn outcome_of(report: &Report) -> Outcome {
    if report.has_input_errors() {
        Outcome::Failure
    } else if report.has_errors() {
        Outcome::Findings
    } else {
        Outcome::Success
    }
}

fn load_repo(root: &Path, registry: &Registry) -> anyhow::Result<repo::Loaded> {
    if !root.is_dir() {
        anyhow::bail!("repository folder `{}` does not exist", root.display());
    }
    repo::load(root, registry)
        .with_context(|| format!("could not read blueprints of `{}`", root.display()))
}

fn render(
    root: &Path,
    registry: &Registry,
    checks: Checks<'_>,
    names: &[String],
    check: bool,
    printer: &Printer,
) -> anyhow::Result<Outcome> {
    let loaded = load_repo(root, registry)?;
    let kustomize = Kustomize::discover()?;
    // Same file system as the repository, so the final swap is a rename.
    let staging = if check {
        tempfile::Builder::new().prefix("aiml-check-").tempdir()
    } else {
        tempfile::Builder::new()
            .prefix(".aiml-staging-")
            .tempdir_in(root)
    }
    .with_context(|| format!("could not create a staging folder in `{}`", root.display()))?;
    let report = render::build(
        &loaded,
        registry,
        names,
        &kustomize,
        checks,
        root,
        staging.path(),
    )?;
    printer.diagnostics(&report.diagnostics, &|f| loaded.text(f))?;
    let outcome = outcome_of(&report);
    if outcome != Outcome::Success {
        printer.err("nothing was written\n");
        return Ok(outcome);
    }
    let rendered: Vec<String> = report.blueprints.iter().map(|b| b.name.clone()).collect();
    let full = names.is_empty();
    let objects = report.object_count();
    let plural = |n: usize, word: &str| format!("{n} {word}{}", if n == 1 { "" } else { "s" });
    if check {
        let drift = render::compare(root, staging.path(), &rendered, full)?;
        if drift.is_empty() {
            printer.err(&format!(
                "{} up to date ({})\n",
                plural(rendered.len(), "blueprint"),
                plural(objects, "object")
            ));
            return Ok(Outcome::Success);
        }
        for d in &drift {
            let verb = match d.change {
                Change::Added => "would add",
                Change::Modified => "would change",
                Change::Removed => "would remove",
            };
            printer.err(&format!("{verb} {}\n", d.path));
        }
        printer.err(&format!(
            "{} out of date: run `kubectl aiml render` and commit the result\n",
            plural(drift.len(), "file")
        ));
        return Ok(Outcome::Findings);
    }
    let drift = render::commit(root, staging.path(), &rendered, full)?;
    printer.err(&format!(
        "rendered {} ({}); {} changed\n",
        plural(rendered.len(), "blueprint"),
        plural(objects, "object"),
        plural(drift.len(), "file")
    ));
    Ok(Outcome::Success)
}

fn validate_command(
    root: &Path,
    registry: &Registry,
    checks: Checks<'_>,
    paths: &[PathBuf],
    printer: &Printer,
) -> anyhow::Result<Outcome> {
    if paths.is_empty() {
        let loaded = load_repo(root, registry)?;
        let report = build_in_temp(&loaded, registry, checks, root)?;
        printer.diagnostics(&report.diagnostics, &|f| loaded.text(f))?;
        if !printer.json && report.diagnostics.is_empty() {
            printer.err(&format!("{} blueprints valid\n", report.blueprints.len()));
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
    for path in paths {
        let list = if path.is_dir() {
            repo::yaml_files(path)
                .with_context(|| format!("could not read `{}`", path.display()))?
        } else if path.is_file() {
            vec![path.clone()]
        } else {
            anyhow::bail!("no such file or folder: `{}`", path.display());
        };
        for file in list {
            // Paths given on the command line are shown as given (less a leading `./`).
            let display = file
                .strip_prefix(".")
                .unwrap_or(&file)
                .to_string_lossy()
                .replace('\\', "/");
            let (mut source, diagnostic) = repo::read_source(&file, display)
                .with_context(|| format!("could not read `{}`", file.display()))?;
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
    if !blueprints.files.is_empty() {
        blueprints.check_envelopes(registry);
        let report = build_in_temp(&blueprints, registry, checks, root)?;
        count += report.blueprints.len();
        diagnostics.extend(report.diagnostics);
    }
    diagnostic::sort(&mut diagnostics);
    let text_of = |f: &str| {
        manifests
            .iter()
            .find(|s| s.path == f)
            .map(|s| s.text.clone())
    };
    printer.diagnostics(&diagnostics, &text_of)?;
    if !printer.json && diagnostics.is_empty() {
        printer.err(&format!("{count} objects and blueprints valid\n"));
    }
    let report = Report {
        blueprints: Vec::new(),
        diagnostics,
    };
    Ok(outcome_of(&report))
}

/// Renders every blueprint of `loaded` into a throwaway folder, for its findings.
fn build_in_temp(
    loaded: &repo::Loaded,
    registry: &Registry,
    checks: Checks<'_>,
    root: &Path,
) -> anyhow::Result<Report> {
    let kustomize = Kustomize::discover()?;
    let staging = tempfile::Builder::new()
        .prefix("aiml-validate-")
        .tempdir()?;
    Ok(render::build(
        loaded,
        registry,
        &[],
        &kustomize,
        checks,
        root,
        staging.path(),
    )?)
}

fn kind_schema(registry: &Registry, kind: &str, printer: &Printer) -> anyhow::Result<Outcome> {
    let Some(found) = registry.get(kind) else {
        let names: Vec<String> = registry.names().map(|n| format!("`{n}`")).collect();
        printer.err(&format!(
            "error: unknown blueprint kind `{kind}`; known kinds: {}\n",
            names.join(", ")
        ));
        return Ok(Outcome::Failure);
    };
    printer.out(&format!(
        "{}\n",
        serde_json::to_string_pretty(&found.spec_schema())?
    ))?;
    Ok(Outcome::Success)
}

fn blueprints(root: &Path, registry: &Registry, printer: &Printer) -> anyhow::Result<Outcome> {
    let loaded = load_repo(root, registry)?;
    let listed: Vec<(String, String, String)> = loaded
        .blueprints(registry)
        .iter()
        .map(|b| {
            (
                b.name.to_string(),
                b.kind.name().to_string(),
                b.file.to_string(),
            )
        })
        .collect();
    if printer.json {
        let kinds: Vec<_> = registry
            .iter()
            .map(|k| serde_json::json!({ "kind": k.name(), "summary": k.summary() }))
            .collect();
        let items: Vec<_> = listed
            .iter()
            .map(|(name, kind, file)| serde_json::json!({ "name": name, "kind": kind, "file": file }))
            .collect();
        let json = serde_json::json!({
            "apiVersion": blueprint::API_VERSION,
            "kinds": kinds,
            "blueprints": items,
            "diagnostics": loaded.diagnostics,
        });
        printer.out(&format!("{}\n", serde_json::to_string_pretty(&json)?))?;
    } else {
        let mut text = format!("KINDS ({})\n", blueprint::API_VERSION);
        for k in registry.iter() {
            text.push_str(&format!("  {:<22} {}\n", k.name(), k.summary()));
        }
        text.push_str("\nBLUEPRINTS\n");
        if listed.is_empty() {
            text.push_str("  (none under blueprints/)\n");
        }
        for (name, kind, file) in &listed {
            text.push_str(&format!("  {name:<32} {kind:<22} {file}\n"));
        }
        printer.out(&text)?;
        printer.diagnostics(&loaded.diagnostics, &|f| loaded.text(f))?;
    }
    Ok(
        if loaded.diagnostics.iter().any(blueprint::is_input_error) {
            Outcome::Failure
        } else if loaded.diagnostics.iter().any(Diagnostic::is_error) {
            Outcome::Findings
        } else {
            Outcome::Success
        },
    )
}

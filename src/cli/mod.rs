//! The command line: clap definitions and the wiring of each command. No business logic:
//! every command calls the pipeline stages and prints what they return.
//!
//! stdout carries data (JSON, listings); stderr carries human diagnostics and progress. A
//! closed stdout (`… | head`) stops printing but never changes the exit code.

mod blueprints;
mod completion;
mod diff;
mod explain;
mod graph;
pub(crate) mod interrupt;
mod man;
mod progress;
mod render;
mod rules;
mod schema;
mod status;
mod validate;

use std::cell::Cell;
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand, ValueEnum};

use aiml::diagnostic::{self, Diagnostic};
use aiml::input;
use aiml::kinds::Registry;
use aiml::kustomize::Kustomize;
use aiml::limits::Limits;
use aiml::render::{Checks, Report};
use aiml::repo;
use aiml::rules::Suppressions;
use aiml::schema::{CheckOptions, Schemas};

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
    /// Repository to work on (default: the nearest folder from here up that holds
    /// `blueprints/`, else the git work tree).
    #[arg(long, global = true, value_name = "DIR")]
    repo: Option<PathBuf>,
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
    /// The Kubernetes version of the cluster (`1.34`): objects are checked against the
    /// built-in kinds it serves [default: 1.35, GKE's Regular channel; vendored: 1.32 to 1.36].
    #[arg(long, global = true, value_name = "VERSION")]
    kubernetes_version: Option<String>,
    /// Turn a rule off for this run (repeatable, or comma-separated); one object turns rules
    /// off with the annotation `aiml.dev/ignore: RULE[,RULE]`.
    #[arg(long, global = true, value_name = "RULE")]
    ignore: Vec<String>,
    /// Every container image must name its digest (`@sha256:…`): a tag alone is an
    /// `image-digest` error (as with `images.requireDigests: true` in `aiml.yaml`).
    #[arg(long, global = true)]
    require_digests: bool,
    /// How overlays are built: `auto` builds the tool's own overlays in process (byte for
    /// byte what kustomize prints) and runs the kustomize binary for anything else; `binary`
    /// runs the binary for every overlay.
    #[arg(long, global = true, value_enum, default_value_t = KustomizeMode::Auto)]
    kustomize: KustomizeMode,
}

/// `--kustomize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum KustomizeMode {
    Auto,
    Binary,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Output {
    Text,
    Json,
    /// Markdown, for pull-request comments (`diff` only).
    Markdown,
    /// Mermaid flowchart (`graph` only; its default).
    Mermaid,
    /// Graphviz DOT (`graph` only).
    Dot,
    /// YAML (`status` only).
    Yaml,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Compile blueprints into overlays/ and rendered/, validating everything.
    #[command(
        after_help = "Examples:\n  kubectl aiml render\n  kubectl aiml render multislice-v4-32-training\n  kubectl aiml render --check\n  kubectl aiml render --commit -m \"Train on four slices\"\n  kubectl aiml render --commit --branch aiml/four-slices   # for a pull request"
    )]
    Render {
        /// Blueprints to render (default: all).
        names: Vec<String>,
        /// Write nothing; exit 1 when overlays/ or rendered/ differ from a fresh render.
        #[arg(long)]
        check: bool,
        /// Overwrite generated files that were edited by hand (by default a render that
        /// would overwrite them stops and names them).
        #[arg(long, conflicts_with = "check")]
        force: bool,
        /// Then commit the changed blueprints, overlays and rendered files as one commit
        /// (identity from git config or GIT_AUTHOR_NAME / GIT_AUTHOR_EMAIL). The commit is
        /// made with libgit2, which runs no git hooks (pre-commit, commit-msg, …): run them
        /// yourself; the output says when the repository has any.
        #[arg(long, conflicts_with = "check")]
        commit: bool,
        /// The commit message (the list of changed blueprints follows it).
        #[arg(short, long, value_name = "MESSAGE", requires = "commit")]
        message: Option<String>,
        /// Commit on this branch (created from HEAD when absent) and switch the checkout to
        /// it, like `git switch -c NAME` then `git commit`: no file is written, other changes
        /// stay as they are. A branch that exists must differ from HEAD only in blueprints/,
        /// kinds/, overlays/, rendered/ and aiml.yaml.
        #[arg(long, value_name = "NAME", requires = "commit")]
        branch: Option<String>,
        /// Render every blueprint, ignoring the cache of unchanged ones (the output is the
        /// same; `AIML_CACHE=off` turns the cache off for every run).
        #[arg(long)]
        no_cache: bool,
    },
    /// Validate blueprints, or any Kubernetes YAML files or folders, with every rule.
    #[command(
        after_help = "Examples:\n  kubectl aiml validate                 # the repository's blueprints\n  kubectl aiml validate manifests/      # someone else's manifests\n  kubectl aiml validate -o json job.yaml\n  kustomize build k8s/ | kubectl aiml validate -   # a stream on standard input"
    )]
    Validate {
        /// Files or folders (default: the repository's blueprints); `-` or `/dev/stdin` reads
        /// standard input (named `<stdin>` in findings, bounded by `AIML_MAX_FILE_SIZE`).
        paths: Vec<PathBuf>,
    },
    /// Compare the rendered objects of a git revision with the working tree (or a fresh
    /// render): impact first (destructive changes, accelerators, cost), then every object.
    #[command(
        after_help = "Examples:\n  kubectl aiml diff                          # HEAD against the working tree\n  kubectl aiml diff --base origin/main -o markdown > comment.md\n  kubectl aiml diff --render --exit-code     # what a render would change now\n  kubectl aiml diff --base origin/main --fail-on destructive   # in CI: no cluster, pool or data deleted unasked\n  kubectl aiml diff --live                   # what applying rendered/ would change on the clusters"
    )]
    Diff {
        /// The git revision to compare with.
        #[arg(long, value_name = "REV", default_value = "HEAD")]
        base: String,
        /// Compare with what a render would write now, instead of the working tree.
        #[arg(long)]
        render: bool,
        /// Exit 1 when anything differs.
        #[arg(long)]
        exit_code: bool,
        /// Exit 1 when the change would do this, naming each object on stderr. `destructive`:
        /// delete or recreate a cluster, node pool, network, subnet or data store whose
        /// blueprint did not allow teardown (`spec.allowTeardown: true` in the base
        /// revision). With `--exit-code`, exit 1 when either says so.
        #[arg(long, value_name = "WHAT", value_enum)]
        fail_on: Option<diff::FailOn>,
        /// Compare the clusters instead: a server-side apply dry run of every rendered object
        /// on the cluster it targets, against what the cluster holds (exit 1 when a server
        /// refuses an object, 2 when a cluster cannot be asked).
        #[arg(long, conflicts_with_all = ["render", "base", "fail_on"])]
        live: bool,
        /// With `--live`: the blueprints to compare (default: all).
        #[arg(requires = "live")]
        names: Vec<String>,
        /// With `--live`: the kubeconfig context for every cluster.
        #[arg(long, value_name = "NAME", requires = "live")]
        context: Option<String>,
        /// With `--live`: how long one cluster may take to answer.
        #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = status::parse_duration, requires = "live")]
        request_timeout: std::time::Duration,
    },
    /// Draw the rendered objects and their edges (Config Connector references, depends-on,
    /// Service selectors, autoscaler targets, Kueue queues, sync roots) as Mermaid or DOT.
    #[command(
        after_help = "Examples:\n  kubectl aiml graph                       # every blueprint and rendered/_sync, Mermaid\n  kubectl aiml graph triton-t4-hpa -o dot | dot -Tsvg > triton.svg\n  kubectl aiml graph triton-t4-hpa --live    # coloured by what the clusters say"
    )]
    Graph {
        /// The blueprint to draw (default: every folder of rendered/, with the sync roots).
        name: Option<String>,
        /// Colour each object by its state on the cluster (as `status` reads it): green
        /// ready, amber progressing, red failed, grey missing.
        #[arg(long)]
        live: bool,
        /// With `--live`: the kubeconfig context for every cluster.
        #[arg(long, value_name = "NAME", requires = "live")]
        context: Option<String>,
        /// With `--live`: how long one cluster may take to answer.
        #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = status::parse_duration, requires = "live")]
        request_timeout: std::time::Duration,
    },
    /// Show what the clusters applied of rendered/ and whether it is ready: sync objects
    /// (synced commit, errors), Config Connector `Ready`, workloads, Kueue admission, nodes.
    #[command(
        after_help = "Exit status: 0 everything ready, 1 something not ready or failed, 2 a cluster could not be asked.\n\nExamples:\n  kubectl aiml status                          # every blueprint, one line per cluster\n  kubectl aiml status sax-llama2-70b-v5e-16 -o yaml\n  kubectl aiml status --wait=15m               # after a merge: until ready, or a failure\n  kubectl aiml status --context kind-dev       # one cluster for everything"
    )]
    Status {
        /// Blueprints to show (default: all with rendered output).
        names: Vec<String>,
        /// Wait until everything is ready or something failed, at most this long.
        #[arg(long, value_name = "TIMEOUT", num_args = 0..=1, default_missing_value = "10m", value_parser = status::parse_duration)]
        wait: Option<std::time::Duration>,
        /// The kubeconfig context to use for every cluster (default: the current context for
        /// the Config Connector host, `gke_<project>_<location>_<cluster>` for workload
        /// clusters, or what `aiml.yaml`'s `contexts` says).
        #[arg(long, value_name = "NAME")]
        context: Option<String>,
        /// How long one cluster may take to answer.
        #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = status::parse_duration)]
        request_timeout: std::time::Duration,
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
    /// List the rules, or show the documentation of one.
    #[command(
        after_help = "Examples:\n  kubectl aiml rules\n  kubectl aiml rules tpu-chips-per-host\n  kubectl aiml rules -o json"
    )]
    Rules {
        /// The rule to document (default: list every rule).
        id: Option<String>,
    },
    /// Print the JSON Schema of a blueprint kind (the whole document), for editors.
    #[command(
        after_help = "Examples:\n  kubectl aiml schema MultisliceTraining > .schemas/MultisliceTraining.json\n  # then, first line of a blueprint:\n  # yaml-language-server: $schema=../.schemas/MultisliceTraining.json"
    )]
    Schema {
        /// The blueprint kind (`kubectl aiml blueprints` lists them).
        kind: String,
    },
    /// Explain a blueprint kind or field: type, default, allowed values, documentation and
    /// sub-fields.
    #[command(
        after_help = "Examples:\n  kubectl aiml explain MultisliceTraining\n  kubectl aiml explain MultisliceTraining.spec.tpu\n  kubectl aiml explain SaxServing.spec.tpu.type\n  kubectl aiml explain SaxServing.spec.tpu.type v5litepod-16   # what one value means"
    )]
    Explain {
        /// `KIND` or `KIND.field.path` (arrays are walked through).
        target: String,
        /// A value of the field to explain (e.g. a TPU type).
        value: Option<String>,
    },
    /// Print a shell completion script (bash, zsh, fish), or the `kubectl_complete-aiml`
    /// executable that makes `kubectl aiml <TAB>` complete.
    #[command(
        after_help = "Examples:\n  source <(kubectl-aiml completion bash)\n  kubectl-aiml completion zsh > \"${fpath[1]}/_kubectl-aiml\"\n  kubectl-aiml completion fish > ~/.config/fish/completions/kubectl-aiml.fish\n  kubectl-aiml completion kubectl > ~/.local/bin/kubectl_complete-aiml && chmod +x ~/.local/bin/kubectl_complete-aiml"
    )]
    Completion {
        /// The shell, or `kubectl` for kubectl's plugin completion.
        #[arg(value_enum)]
        shell: completion::Shell,
    },
    /// Print the manual page (roff).
    #[command(
        after_help = "Example:\n  kubectl aiml man > ~/.local/share/man/man1/kubectl-aiml.1 && man kubectl-aiml"
    )]
    Man,
    /// Completion candidates for the words after `--` (used by the completion scripts).
    #[command(name = "__complete", hide = true)]
    Complete {
        /// The words typed after the program name; the last is the one to complete.
        #[arg(num_args = 0.., raw = true)]
        words: Vec<String>,
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
    /// 1: findings, stale output under `--check`, differences under `diff --exit-code`.
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

/// What every command shares.
struct Context<'s> {
    printer: Printer,
    registry: Registry,
    checks: Checks<'s>,
    limits: Limits,
    repo: Option<PathBuf>,
    suppressions: Suppressions,
    kustomize_mode: KustomizeMode,
}

impl Context<'_> {
    /// The repository root: `--repo`, or found from the current folder.
    fn root(&self) -> anyhow::Result<PathBuf> {
        if let Some(dir) = &self.repo {
            let metadata = std::fs::metadata(dir).map_err(|_| {
                anyhow::anyhow!("repository folder `{}` does not exist", dir.display())
            })?;
            if !metadata.is_dir() {
                anyhow::bail!(
                    "`{}` is {}, not a folder: `--repo` takes the repository folder",
                    dir.display(),
                    repo::describe_file_type(metadata.file_type())
                );
            }
            return Ok(dir.clone());
        }
        let here = std::env::current_dir().context("could not read the current folder")?;
        repo::discover(&here).ok_or_else(|| {
            anyhow::anyhow!(
                "not in a kubectl-aiml repository: no `{}/` folder in `{}` or above, and no git work tree; run from the repository or pass `--repo DIR`",
                repo::BLUEPRINTS_DIR,
                here.display()
            )
        })
    }

    /// Loads the repository's blueprints. A repository without any is an error: rendering
    /// it would delete every output, and checking it would check nothing.
    fn load(&self, root: &Path) -> anyhow::Result<input::Loaded> {
        let loaded = input::load(root, &self.registry, self.limits.max_file_size)?;
        let documents: usize = loaded.files.iter().map(|f| f.documents.len()).sum();
        if documents == 0 && loaded.diagnostics.is_empty() {
            anyhow::bail!(
                "no blueprint under `{}/` ({} files read): nothing to render or validate",
                repo::BLUEPRINTS_DIR,
                loaded.files.len()
            );
        }
        Ok(loaded)
    }

    fn kustomize(&self) -> anyhow::Result<Kustomize> {
        let kustomize = Kustomize::discover()?.with_limits(&self.limits);
        Ok(match self.kustomize_mode {
            KustomizeMode::Auto => kustomize,
            KustomizeMode::Binary => kustomize.binary_only(),
        })
    }
}

/// Runs the parsed command line.
pub fn run(cli: Cli) -> anyhow::Result<Outcome> {
    if cli.global.output == Output::Markdown && !matches!(cli.command, Command::Diff { .. }) {
        anyhow::bail!("`-o markdown` is for `kubectl aiml diff`; use `-o text` or `-o json`");
    }
    let is_graph = matches!(cli.command, Command::Graph { .. });
    if matches!(cli.global.output, Output::Mermaid | Output::Dot) && !is_graph {
        anyhow::bail!(
            "`-o mermaid` and `-o dot` are for `kubectl aiml graph`; use `-o text` or `-o json`"
        );
    }
    if cli.global.output == Output::Yaml && !matches!(cli.command, Command::Status { .. }) {
        anyhow::bail!("`-o yaml` is for `kubectl aiml status`; use `-o text` or `-o json`");
    }
    if is_graph && cli.global.output == Output::Json {
        anyhow::bail!("`kubectl aiml graph` prints `-o mermaid` (the default) or `-o dot`");
    }
    let output = cli.global.output;
    let printer = Printer::new(&cli.global);
    let limits = Limits::from_env()?;
    // Schemas from folders and the target version are not part of the cache's key: with
    // them, nothing is reused.
    let extra_schema_dirs = cli.global.schemas.clone();
    let target = cli.global.kubernetes_version.clone();
    let extra_schemas;
    let schemas = match &target {
        _ if !cli.global.schemas.is_empty() => {
            let version = target
                .as_deref()
                .unwrap_or(aiml::schema::KUBERNETES_VERSION);
            extra_schemas = Schemas::with_dirs_for(&cli.global.schemas, version)?;
            &extra_schemas
        }
        Some(version) => Schemas::embedded_for(version)?,
        None => Schemas::embedded(),
    };
    let mut context = Context {
        printer,
        registry: Registry::builtin(),
        checks: Checks {
            schemas,
            options: CheckOptions {
                strict: cli.global.strict,
            },
            policy: aiml::validate::Policy {
                require_digests: cli.global.require_digests,
            },
            version_pinned: target.is_some() || !cli.global.schemas.is_empty(),
        },
        limits,
        repo: cli.global.repo,
        suppressions: Suppressions::global(&cli.global.ignore)?,
        kustomize_mode: cli.global.kustomize,
    };
    // The repository's own kinds (`kinds/<Kind>/`) join once its root is known; the rules
    // and the version need no repository, and a command outside one says so itself.
    // Completion answers with what it can: a broken kind folder must not break the shell.
    match cli.command {
        Command::Rules { .. } | Command::Version | Command::Completion { .. } | Command::Man => {}
        Command::Complete { .. } => {
            if let Ok(root) = context.root()
                && let Ok(registry) = Registry::for_repository(&root, &context.limits)
            {
                context.registry = registry;
            }
        }
        _ => {
            if let Ok(root) = context.root() {
                context.registry = Registry::for_repository(&root, &context.limits)?;
            }
        }
    }
    match cli.command {
        Command::Render {
            names,
            check,
            force,
            commit,
            message,
            branch,
            no_cache,
        } => render::run(
            &context,
            &names,
            &render::Options {
                check,
                force,
                commit: commit.then_some(render::CommitOptions { message, branch }),
                cache: !no_cache && extra_schema_dirs.is_empty() && target.is_none(),
            },
        ),
        Command::Validate { paths } => validate::run(&context, &paths),
        Command::Diff {
            base,
            render,
            exit_code,
            fail_on,
            live,
            names,
            context: kube_context,
            request_timeout,
        } => diff::run(
            &context,
            output,
            &diff::Options {
                base,
                render,
                exit_code,
                fail_on,
                live: live.then_some(status::Selection {
                    names,
                    clusters: aiml::live::clusters::Options {
                        context: kube_context,
                        timeout: request_timeout,
                    },
                }),
            },
        ),
        Command::Graph {
            name,
            live,
            context: kube_context,
            request_timeout,
        } => graph::run(
            &context,
            output,
            name.as_deref(),
            live.then_some(aiml::live::clusters::Options {
                context: kube_context,
                timeout: request_timeout,
            })
            .as_ref(),
        ),
        Command::Status {
            names,
            wait,
            context: kube_context,
            request_timeout,
        } => status::run(
            &context,
            output,
            &status::Options {
                selection: status::Selection {
                    names,
                    clusters: aiml::live::clusters::Options {
                        context: kube_context,
                        timeout: request_timeout,
                    },
                },
                wait,
            },
        ),
        Command::Blueprints { schema: Some(kind) } => blueprints::schema(&context, &kind),
        Command::Blueprints { schema: None } => blueprints::list(&context),
        Command::Rules { id } => rules::run(&context, id.as_deref()),
        Command::Schema { kind } => schema::run(&context, &kind),
        Command::Explain { target, value } => explain::run(&context, &target, value.as_deref()),
        Command::Completion { shell } => Ok(completion::script(&context, shell)),
        Command::Man => man::run(&context),
        Command::Complete { words } => Ok(completion::run(&context, &words)),
        Command::Version => {
            let mut text = format!("kubectl-aiml {}\n", env!("CARGO_PKG_VERSION"));
            // Which kustomize renders would use, when there is one.
            if let Ok(kustomize) = context.kustomize() {
                let version = kustomize
                    .version()
                    .unwrap_or_else(|_| "unknown version".into());
                text.push_str(&format!("kustomize {version} ({})\n", kustomize.name()));
            }
            context.printer.out(&text);
            Ok(Outcome::Success)
        }
    }
}

/// The one place that writes to stdout and stderr.
struct Printer {
    json: bool,
    color: bool,
    /// stdout was closed by the reader: print nothing more there.
    closed: Cell<bool>,
}

impl Printer {
    fn new(global: &Global) -> Self {
        let no_color =
            global.no_color || std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
        Self {
            json: global.output == Output::Json,
            color: !no_color && std::io::stderr().is_terminal(),
            closed: Cell::new(false),
        }
    }

    /// Data on stdout: JSON under `-o json` (see [`Printer::out_json`]), else text with
    /// control characters escaped (the tool's own newlines and tabs kept).
    fn out(&self, text: &str) {
        if self.json {
            self.out_json(text);
        } else {
            self.write_out(&diagnostic::sanitize(text, usize::MAX));
        }
    }

    /// JSON on stdout, whatever `-o` says (schemas): the characters a terminal would act on
    /// become `\uXXXX` escapes, so it stays valid JSON with the same values.
    fn out_json(&self, json: &str) {
        self.write_out(&escape_json(json));
    }

    /// A reader that stops reading (`| head`) is not an error, and never turns findings into
    /// success: the exit code stays what the findings call for.
    fn write_out(&self, text: &str) {
        if self.closed.get() {
            return;
        }
        let mut stdout = std::io::stdout().lock();
        if stdout
            .write_all(text.as_bytes())
            .and_then(|()| stdout.flush())
            .is_err()
        {
            self.closed.set(true);
        }
    }

    /// Messages on stderr, with control characters escaped.
    fn err(&self, text: &str) {
        self.err_raw(&diagnostic::sanitize(text, usize::MAX));
    }

    fn err_raw(&self, text: &str) {
        // Nothing sensible to do when stderr is gone.
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }

    /// Prints findings (human on stderr, or JSON on stdout); `suppressed` findings were
    /// dropped by `--ignore` or `aiml.dev/ignore`.
    fn diagnostics(
        &self,
        diagnostics: &[Diagnostic],
        suppressed: usize,
        sources: &diagnostic::SourceLookup<'_>,
    ) {
        // Findings about values a Jsonnet library wrote point at the library.
        let diagnostics = &*aiml::jsonnet::relocate(diagnostics);
        if self.json {
            self.out(&diagnostic::render_json(diagnostics));
            return;
        }
        if !diagnostics.is_empty() || suppressed > 0 {
            // The quoted source lines keep their width (columns still point right), with
            // each character a terminal would act on shown as `�`.
            let sources = |file: &str| sources(file).map(|text| blank_controls(&text));
            let rendered = diagnostic::render_human(diagnostics, &sources, self.color);
            if self.color {
                // Already escaped field by field; the colors must survive.
                self.err_raw(&rendered);
            } else {
                self.err(&rendered);
            }
            self.err(&format!(
                "{}\n",
                diagnostic::summary(diagnostics, suppressed)
            ));
        }
    }
}

/// `text` with every hostile character replaced by `�`, one for one.
fn blank_controls(text: &str) -> String {
    text.chars()
        .map(|c| {
            if diagnostic::is_hostile(c) {
                '\u{fffd}'
            } else {
                c
            }
        })
        .collect()
}

/// JSON text with hostile characters as `\uXXXX` escapes. They can only stand inside strings
/// (JSON's own whitespace is spaces and line breaks), where the escape means the same
/// character.
fn escape_json(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        if diagnostic::is_hostile(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
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

/// `1 blueprint`, `2 objects`.
fn plural(n: usize, word: &str) -> String {
    format!("{n} {word}{}", if n == 1 { "" } else { "s" })
}

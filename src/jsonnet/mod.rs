//! Jsonnet blueprints: `blueprints/**/*.jsonnet` evaluated into the same [`Node`] trees a YAML
//! blueprint parses into, so that every later stage is unchanged.
//!
//! A file evaluates to one blueprint, a list of them, or an object whose values are
//! blueprints. Evaluation uses the pure-Rust `jrsonnet` evaluator with its standard library,
//! and is bounded and sealed:
//!
//! - **Imports** (`import`, `importstr`, `importbin`) resolve relative to the importing file
//!   and must stay inside the repository: absolute paths, `..` past the root and symbolic
//!   links that lead out are refused, naming the importing file and line. Every file read is
//!   bounded by the input file size limit and recorded, so that the render cache covers it.
//! - **Inputs** are the repository's own: external variables and top-level arguments come from
//!   `aiml.yaml` (`jsonnet:`), `std.native` has no functions, `std.thisFile` is
//!   repository-relative, and `std.trace` prints nothing. Nothing of the process environment
//!   reaches the evaluation, so output stays a pure function of the repository.
//! - **Resources**: a stack of at most [`MAX_STACK`] Jsonnet frames, output of at most the
//!   input file size limit and [`MAX_DEPTH`] levels deep, and a wall-clock limit
//!   ([`TIMEOUT_VAR`], default 60 s). Sizes are checked before large values are built (a
//!   string doubled forty times is refused by its length, never copied).
//! - **Isolation**: the evaluator allocates as it pleases and Rust aborts the process when an
//!   allocation fails, so no in-process check can turn every bomb into a finding. The binary
//!   therefore evaluates each file in a child process of itself ([`isolate`]) whose address
//!   space is capped ([`memory_limit`]) and which is killed at the time limit; its death is a
//!   `jsonnet-evaluation` finding naming the file. Library callers that do not opt in evaluate
//!   on a thread of their own process, with the same checks but no memory cap.
//!
//! Values carry no source positions out of the evaluator, so each produced field is placed by
//! a conservative search of the evaluated files (`locate`): a field points at the Jsonnet
//! line that defines it only when exactly one definition can have produced it; otherwise it
//! points at the file as a whole (line 0) and findings name the field path.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use crate::diagnostic::Diagnostic;
use crate::yaml::{Node, Span};

mod imports;
mod isolate;
mod job;
mod locate;
mod raw;
#[cfg(test)]
mod tests;

pub use isolate::{WORKER_ARG, isolate, memory_limit, worker};
pub use locate::relocate;

use job::{Job, Outcome};
use locate::{Sources, remember_library_lines};
use raw::{documents_in, split};

/// Rule id of a Jsonnet file that does not evaluate to blueprints.
pub const JSONNET_EVALUATION: &str = "jsonnet-evaluation";

/// Rules of this module.
pub const RULES: &[crate::diagnostic::Rule] = &[crate::diagnostic::Rule {
    id: JSONNET_EVALUATION,
    summary: "a Jsonnet blueprint file evaluates, inside the repository and its limits, to blueprints",
}];

/// Deepest Jsonnet call stack (the reference implementation's default `--max-stack`).
pub const MAX_STACK: usize = 500;

/// Deepest nesting of arrays and objects in a file's output, as for YAML blueprints.
pub const MAX_DEPTH: usize = 64;

/// What every output value costs at least against the output budget: about its size in
/// memory, so that millions of tiny values are refused before they are built.
const MIN_VALUE_COST: u64 = 32;

/// Longest evaluation of one file: `AIML_JSONNET_TIMEOUT`, seconds. Default 60.
pub const TIMEOUT_VAR: &str = "AIML_JSONNET_TIMEOUT";
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// Native stack of the evaluation thread. The evaluator grows its stack on the heap when deep
/// (`stacker`); [`MAX_STACK`] is what bounds recursion.
const THREAD_STACK: usize = 64 * 1024 * 1024;

/// What Jsonnet files receive from `aiml.yaml` (`jsonnet:`), by name.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Inputs {
    /// `std.extVar(name)` as a string.
    pub ext_vars: BTreeMap<String, String>,
    /// `std.extVar(name)` as the value of a Jsonnet expression.
    pub ext_code: BTreeMap<String, String>,
    /// Top-level arguments as strings (when the file is a function).
    pub tla_vars: BTreeMap<String, String>,
    /// Top-level arguments as Jsonnet expressions.
    pub tla_code: BTreeMap<String, String>,
}

/// A file evaluated into blueprint documents.
#[derive(Debug)]
pub struct Evaluated {
    /// The documents, in output order (list order, or object keys sorted).
    pub documents: Vec<Node>,
    /// For each document, where it sits in the output: `""` (the whole output), `[2]` or the
    /// object key.
    pub labels: Vec<String>,
    /// Every other file the evaluation read (repository-relative path → text), for the
    /// render cache.
    pub imports: BTreeMap<String, String>,
}

/// The evaluation time limit of this run ([`TIMEOUT_VAR`]).
pub fn timeout() -> Result<Duration, crate::limits::LimitError> {
    match std::env::var(TIMEOUT_VAR) {
        Ok(value) if !value.trim().is_empty() => {
            let seconds: Option<f64> = value.trim().parse().ok();
            seconds
                .filter(|s| s.is_finite() && *s > 0.0 && *s < 1e9)
                .map(Duration::from_secs_f64)
                .ok_or(crate::limits::LimitError {
                    variable: TIMEOUT_VAR,
                    value,
                    expected: "a number of seconds such as `60` or `0.5`",
                })
        }
        _ => Ok(DEFAULT_TIMEOUT),
    }
}

/// Evaluates the Jsonnet file `path` (shown as `display`, whose text is `text`) of the
/// repository at `root`. Every failure is one `jsonnet-evaluation` diagnostic.
pub fn evaluate(
    root: &Path,
    path: &Path,
    display: &str,
    text: &str,
    inputs: &Inputs,
    limit: u64,
    timeout: Duration,
) -> Result<Evaluated, Diagnostic> {
    let error = |message: String| failed(display, message);
    let root = root
        .canonicalize()
        .map_err(|e| error(format!("cannot resolve the repository root: {e}")))?;
    let main = path
        .canonicalize()
        .map_err(|e| error(format!("cannot resolve `{display}`: {e}")))?;
    let job = Job {
        root: root.clone(),
        main,
        inputs: inputs.clone(),
        limit,
    };
    let outcome = match isolate::worker_program() {
        Some(program) => isolate::run(program, &job, timeout, display)?,
        None => in_thread(job, timeout, display)?,
    };
    let (raw, files) = match outcome {
        Ok(done) => done,
        Err(failure) => return Err(failure.diagnostic(display)),
    };
    let mut imports: BTreeMap<String, String> = files;
    imports.remove(display);
    let sources = Sources::new(text, &imports);
    remember_library_lines(display, text, &imports);
    // The limit of a YAML stream holds for what one Jsonnet file yields too.
    let count = documents_in(&raw);
    if count > crate::limits::MAX_DOCUMENTS {
        return Err(error(format!(
            "evaluates to {count} documents, more than the {} one file may hold (a limit that protects against hostile input)",
            crate::limits::MAX_DOCUMENTS
        ))
        .expected(format!(
            "at most {} blueprints per file",
            crate::limits::MAX_DOCUMENTS
        ))
        .fix("split the blueprints over several files"));
    }
    let (documents, labels) = split(raw).map_err(|(message, field)| {
        let mut d = error(message).fix(
            "return a blueprint, a list of blueprints, or an object whose values are blueprints",
        );
        if !field.is_empty() {
            d = d.field(field);
        }
        d
    })?;
    let documents = documents
        .into_iter()
        .map(|raw| sources.node(raw, None, Span::default(), None))
        .collect();
    Ok(Evaluated {
        documents,
        labels,
        imports,
    })
}

/// Evaluates `job` on a thread of this process (no memory cap: see the module's notes).
fn in_thread(job: Job, timeout: Duration, display: &str) -> Result<Outcome, Diagnostic> {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::Builder::new()
        .name(format!("jsonnet {display}"))
        .stack_size(THREAD_STACK)
        .spawn(move || {
            // The receiver may be gone after a time-out: nothing is waiting any more.
            let _ = sender.send(job.run());
        })
        .map_err(|e| failed(display, format!("cannot start the Jsonnet evaluation: {e}")))?;
    match receiver.recv_timeout(timeout) {
        Ok(outcome) => Ok(outcome),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => Err(timed_out(display, timeout)),
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => Err(failed(
            display,
            "the Jsonnet evaluation stopped unexpectedly".into(),
        )),
    }
}

/// A `jsonnet-evaluation` error about the file `display` as a whole.
fn failed(display: &str, message: String) -> Diagnostic {
    let mut d = Diagnostic::error(JSONNET_EVALUATION, message);
    d.file = display.to_string();
    d
}

/// The file `display` did not evaluate within `timeout`.
fn timed_out(display: &str, timeout: Duration) -> Diagnostic {
    failed(
        display,
        format!(
            "jsonnet evaluation took longer than {} s",
            timeout.as_secs_f64()
        ),
    )
    .expected("an evaluation that ends")
    .fix(format!(
        "look for unbounded recursion or huge comprehensions, or raise `{TIMEOUT_VAR}`"
    ))
}

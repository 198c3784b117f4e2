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

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Not as _;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;
use std::time::Duration;

use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::function::CallLocation;
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{AsPathLike, IStr, ImportResolver, ResolvePath, SourcePath, State, Val};
use jrsonnet_gcmodule::Acyclic;
use jrsonnet_stdlib::TracePrinter;

use crate::diagnostic::Diagnostic;
use crate::yaml::{Key, Node, Span, Value};

mod isolate;
pub use isolate::{WORKER_ARG, isolate, memory_limit, worker};

/// Rule id of a Jsonnet file that does not evaluate to blueprints.
pub const JSONNET_EVALUATION: &str = "jsonnet-evaluation";

/// Rules of this module.
pub const RULES: &[crate::diagnostic::Rule] = &[crate::diagnostic::Rule {
    id: JSONNET_EVALUATION,
    summary: "a Jsonnet blueprint file evaluates, inside the repository and its limits, to blueprints",
}];

/// Extension of Jsonnet blueprint files.
pub const EXTENSION: &str = "jsonnet";

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

/// The value of an evaluated file, without positions: sent across threads.
#[derive(Debug)]
enum Raw {
    Null,
    Bool(bool),
    Number(f64),
    String(String),
    Array(Vec<Raw>),
    Object(Vec<(String, Raw)>),
}

// JSON between a worker and its parent; an object keeps its keys' order.
impl serde::Serialize for Raw {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Self::Null => serializer.serialize_unit(),
            Self::Bool(b) => serializer.serialize_bool(*b),
            Self::Number(n) => serializer.serialize_f64(*n),
            Self::String(s) => serializer.serialize_str(s),
            Self::Array(items) => serializer.collect_seq(items),
            Self::Object(entries) => serializer.collect_map(entries.iter().map(|(k, v)| (k, v))),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Raw {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Raw;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E>(self) -> Result<Raw, E> {
                Ok(Raw::Null)
            }
            fn visit_bool<E>(self, b: bool) -> Result<Raw, E> {
                Ok(Raw::Bool(b))
            }
            fn visit_f64<E>(self, n: f64) -> Result<Raw, E> {
                Ok(Raw::Number(n))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_i64<E>(self, n: i64) -> Result<Raw, E> {
                Ok(Raw::Number(n as f64))
            }
            #[allow(clippy::cast_precision_loss)]
            fn visit_u64<E>(self, n: u64) -> Result<Raw, E> {
                Ok(Raw::Number(n as f64))
            }
            fn visit_str<E>(self, s: &str) -> Result<Raw, E> {
                Ok(Raw::String(s.to_string()))
            }
            fn visit_string<E>(self, s: String) -> Result<Raw, E> {
                Ok(Raw::String(s))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Raw, A::Error> {
                let mut items = Vec::new();
                while let Some(item) = seq.next_element()? {
                    items.push(item);
                }
                Ok(Raw::Array(items))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Raw, A::Error> {
                let mut entries = Vec::new();
                while let Some(entry) = map.next_entry()? {
                    entries.push(entry);
                }
                Ok(Raw::Object(entries))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// Splits an output into blueprint documents and their labels.
/// How many documents [`split`] makes of `raw`.
fn documents_in(raw: &Raw) -> usize {
    match raw {
        Raw::Object(entries) if !is_blueprint(entries) => entries.len(),
        Raw::Array(items) => items.len(),
        _ => 1,
    }
}

/// Whether an object's keys make it one blueprint rather than an object of blueprints.
fn is_blueprint(entries: &[(String, Raw)]) -> bool {
    entries
        .iter()
        .any(|(k, _)| k == "apiVersion" || k == "kind" || k == "spec")
}

fn split(raw: Raw) -> Result<(Vec<Raw>, Vec<String>), (String, String)> {
    match raw {
        Raw::Object(entries) if is_blueprint(&entries) => {
            Ok((vec![Raw::Object(entries)], vec![String::new()]))
        }
        Raw::Object(entries) => Ok(entries.into_iter().map(|(k, v)| (v, k)).unzip()),
        Raw::Array(items) => Ok(items
            .into_iter()
            .enumerate()
            .map(|(i, v)| (v, format!("[{i}]")))
            .unzip()),
        other => Err((
            format!(
                "a Jsonnet blueprint file must evaluate to a blueprint, not {}",
                describe(&other)
            ),
            String::new(),
        )),
    }
}

fn describe(raw: &Raw) -> &'static str {
    match raw {
        Raw::Null => "null",
        Raw::Bool(_) => "a boolean",
        Raw::Number(_) => "a number",
        Raw::String(_) => "a string",
        Raw::Array(_) => "an array",
        Raw::Object(_) => "an object",
    }
}

/// A failed evaluation, as plain data.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct Failure {
    message: String,
    /// Innermost first: (file, line, column, description).
    frames: Vec<(String, u32, u32, String)>,
    /// Output path of a value that could not be converted.
    field: Option<String>,
    fix: Option<String>,
}

impl Failure {
    fn plain(message: String, field: &str, fix: Option<&str>) -> Self {
        Self {
            message,
            frames: Vec::new(),
            field: (!field.is_empty()).then(|| field.to_string()),
            fix: fix.map(str::to_string),
        }
    }

    /// The same failure, for the output value at `field`.
    fn at(mut self, field: &str) -> Self {
        if self.field.is_none() && !field.is_empty() {
            self.field = Some(field.to_string());
        }
        self
    }

    fn diagnostic(self, display: &str) -> Diagnostic {
        // The first frame in a repository file is where the error arose; the rest is the stack.
        let located = self.frames.iter().find(|(file, line, ..)| {
            *line > 0 && !file.starts_with('<') && Path::new(file).is_relative()
        });
        // The resolver's refusals are ours, not the program's runtime errors.
        let text = self.message.trim_end();
        let text = text
            .strip_prefix("runtime error: ")
            .filter(|rest| rest.starts_with("import of "))
            .unwrap_or(text);
        let mut message = format!("jsonnet: {text}");
        // The stack, innermost first; a frame repeated (recursion) is shown once with a count.
        let mut shown = 0;
        let mut frames = self.frames.iter().peekable();
        while let Some(frame) = frames.next() {
            let mut repeated = 1;
            while frames.peek() == Some(&frame) {
                frames.next();
                repeated += 1;
            }
            if shown == 4 {
                let rest = repeated + frames.count();
                message.push_str(&format!("\n  … {rest} more frames"));
                break;
            }
            shown += 1;
            let (file, line, column, description) = frame;
            let mut text = if *line > 0 {
                format!("\n  at {file}:{line}:{column}")
            } else {
                "\n  in".to_string()
            };
            if !description.is_empty() {
                text.push_str(&format!(" {description}"));
            }
            if repeated > 1 {
                text.push_str(&format!(" (×{repeated})"));
            }
            message.push_str(&text);
        }
        // Which part of the output was being produced: a line of the stack when the failure
        // has a place of its own, else the place itself.
        let mut field = self.field;
        if let (Some(_), Some(output)) = (located, &field) {
            message.push_str(&format!("\n  producing `{output}` of the output"));
            field = None;
        }
        let mut d = Diagnostic::error(JSONNET_EVALUATION, message);
        match located {
            Some((file, line, column, _)) => {
                d.file.clone_from(file);
                d.line = *line;
                d.column = *column;
            }
            None => d.file = display.to_string(),
        }
        d.field = field;
        d.fix = self.fix;
        d
    }
}

/// Everything the evaluation needs, owned: sent to a worker process as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
struct Job {
    root: PathBuf,
    main: PathBuf,
    inputs: Inputs,
    limit: u64,
}

type Outcome = Result<(Raw, BTreeMap<String, String>), Failure>;

impl Job {
    fn run(self) -> Outcome {
        jrsonnet_evaluator::stack::set_stack_depth_limit(MAX_STACK);
        let read = Rc::new(RefCell::new(BTreeMap::new()));
        let resolver = Resolver {
            root: self.root.clone(),
            limit: self.limit,
            read: read.clone(),
        };
        let context =
            jrsonnet_stdlib::ContextInitializer::new(PathResolver::Relative(self.root.clone()));
        context.settings_mut().trace_printer = Rc::new(Silent);
        for (name, value) in &self.inputs.ext_vars {
            context.add_ext_str(name.as_str().into(), value.as_str().into());
        }
        for (name, code) in &self.inputs.ext_code {
            // Cannot fail: the code is parsed when used.
            let _ = context.add_ext_code(name, code);
        }
        let mut builder = State::builder();
        builder
            .import_resolver(resolver)
            .context_initializer(context);
        let state = builder.build();
        let _entered = state.enter();
        let convert = |e: jrsonnet_evaluator::Error| self.failure(&e);
        let value = state
            .import_resolved(SourcePath::new(jrsonnet_ir::SourceFile::new(
                self.main.clone(),
            )))
            .map_err(convert)?;
        // The evaluator's interned strings hash by identity; the map is only read by name.
        #[allow(clippy::mutable_key_type)]
        let mut tla = std::collections::HashMap::new();
        for (name, value) in &self.inputs.tla_vars {
            tla.insert(
                IStr::from(name.as_str()),
                jrsonnet_evaluator::tla::TlaArg::String(value.as_str().into()),
            );
        }
        for (name, code) in &self.inputs.tla_code {
            tla.insert(
                IStr::from(name.as_str()),
                jrsonnet_evaluator::tla::TlaArg::InlineCode(code.clone()),
            );
        }
        let value = jrsonnet_evaluator::apply_tla(&tla, value).map_err(convert)?;
        let mut budget = self.limit;
        let raw = self.raw(&value, "", 0, &mut budget)?;
        let files = read.borrow().clone();
        Ok((raw, files))
    }

    fn failure(&self, error: &jrsonnet_evaluator::Error) -> Failure {
        let mut frames = Vec::new();
        if let ErrorKind::ImportSyntaxError { path, error } = error.error() {
            let [start] = path.map_source_locations(&[error.location.1]);
            frames.push((
                self.show(path.source_path()),
                u32::try_from(start.line).unwrap_or(0),
                u32::try_from(start.column).unwrap_or(0),
                "syntax".to_string(),
            ));
        }
        if let ErrorKind::StaticAnalysisError(found) = error.error() {
            for diagnostic in found {
                if let Some(span) = &diagnostic.span {
                    let [start] = span.0.map_source_locations(&[span.1]);
                    frames.push((
                        self.show(span.0.source_path()),
                        u32::try_from(start.line).unwrap_or(0),
                        u32::try_from(start.column).unwrap_or(0),
                        diagnostic.message.clone(),
                    ));
                }
            }
        }
        for element in &error.trace().0 {
            match &element.location {
                Some(span) => {
                    let [start] = span.0.map_source_locations(&[span.1]);
                    frames.push((
                        self.show(span.0.source_path()),
                        u32::try_from(start.line).unwrap_or(0),
                        u32::try_from(start.column).unwrap_or(0),
                        element.desc.clone(),
                    ));
                }
                None => frames.push((String::new(), 0, 0, element.desc.clone())),
            }
        }
        let fix = match error.error() {
            ErrorKind::StackOverflow => Some(format!(
                "look for recursion without an end: evaluation stops at {MAX_STACK} nested calls"
            )),
            ErrorKind::UndefinedExternalVariable(_) => {
                Some("define it under `jsonnet.extVars` (or `extCode`) in `aiml.yaml`".to_string())
            }
            _ => None,
        };
        let message = match error.error() {
            ErrorKind::StackOverflow => {
                format!("stack overflow: more than {MAX_STACK} nested calls (runaway recursion?)")
            }
            other => other.to_string(),
        };
        Failure {
            message,
            frames,
            field: None,
            fix,
        }
    }

    /// A source path as shown in messages: repository-relative.
    fn show(&self, path: &SourcePath) -> String {
        match path.path() {
            Some(p) => match p.strip_prefix(&self.root) {
                Ok(relative) => crate::repo::display_path(Path::new(""), relative),
                Err(_) => p.display().to_string(),
            },
            // `extCode` / `tlaCode`, evaluated from memory.
            None if path.downcast_ref::<jrsonnet_ir::SourceFifo>().is_some() => {
                "<code from aiml.yaml>".to_string()
            }
            None => format!("<{path}>"),
        }
    }

    /// Charges `bytes` of output to `budget` (at least [`MIN_VALUE_COST`]): an error once it
    /// is spent.
    fn charge(&self, budget: &mut u64, bytes: u64, field: &str) -> Result<(), Failure> {
        *budget = budget.saturating_sub(bytes.max(MIN_VALUE_COST));
        if *budget == 0 {
            return Err(self.too_large(field));
        }
        Ok(())
    }

    fn too_large(&self, field: &str) -> Failure {
        Failure::plain(
            format!(
                "the output is larger than {} (set `{}` to raise the limit)",
                crate::limits::human_size(self.limit),
                crate::limits::MAX_FILE_SIZE_VAR
            ),
            field,
            Some("look for strings or arrays that grow in a loop or a comprehension"),
        )
    }

    /// Forces `value`, `depth` levels deep in the output, into plain data, charging its size
    /// to `budget`. Sizes are checked before anything large is built.
    fn raw(
        &self,
        value: &Val,
        field: &str,
        depth: usize,
        budget: &mut u64,
    ) -> Result<Raw, Failure> {
        if depth > MAX_DEPTH {
            // The path is as deep as the nesting: its start tells where.
            let shown = match field.char_indices().nth(60) {
                Some((end, _)) => format!("{}…", &field[..end]),
                None => field.to_string(),
            };
            return Err(Failure::plain(
                format!("the output nests arrays and objects deeper than {MAX_DEPTH} levels"),
                &shown,
                Some("look for a function that wraps its own result without an end"),
            ));
        }
        let at = |key: &str| {
            if field.is_empty() {
                key.to_string()
            } else {
                format!("{field}.{key}")
            }
        };
        Ok(match value {
            Val::Null => {
                self.charge(budget, 4, field)?;
                Raw::Null
            }
            Val::Bool(b) => {
                self.charge(budget, 5, field)?;
                Raw::Bool(*b)
            }
            Val::Num(n) => {
                self.charge(budget, 8, field)?;
                Raw::Number(n.get())
            }
            Val::Str(s) => {
                // A string built by concatenation knows its length before it is flattened.
                self.charge(budget, s.len() as u64, field)?;
                Raw::String(s.to_string())
            }
            Val::Arr(items) => {
                self.charge(budget, 0, field)?;
                // Every item costs at least MIN_VALUE_COST: refuse before allocating.
                if u64::from(items.len()).saturating_mul(MIN_VALUE_COST) >= *budget {
                    return Err(self.too_large(field));
                }
                let mut out = Vec::with_capacity(items.len() as usize);
                for (i, item) in items.iter().enumerate() {
                    let path = format!("{field}[{i}]");
                    let item = item.map_err(|e| self.failure(&e).at(&path))?;
                    out.push(self.raw(&item, &path, depth + 1, budget)?);
                }
                Raw::Array(out)
            }
            Val::Obj(object) => {
                self.charge(budget, 0, field)?;
                let mut out = Vec::new();
                for key in object.fields() {
                    let key = key.to_string();
                    self.charge(budget, key.len() as u64, field)?;
                    let path = at(&key);
                    let item = object
                        .get(key.as_str().into())
                        .map_err(|e| self.failure(&e).at(&path))?
                        .unwrap_or(Val::Null);
                    let item = self.raw(&item, &path, depth + 1, budget)?;
                    out.push((key, item));
                }
                Raw::Object(out)
            }
            Val::Func(_) => {
                return Err(Failure::plain(
                    "a function is not a blueprint value".into(),
                    field,
                    Some("call it, or hide the field with `::`"),
                ));
            }
            #[allow(unreachable_patterns)]
            _ => {
                return Err(Failure::plain(
                    "a value Jsonnet cannot print as JSON".into(),
                    field,
                    None,
                ));
            }
        })
    }
}

/// `std.trace` prints nothing: output and messages are the tool's own.
#[derive(Acyclic)]
struct Silent;

impl TracePrinter for Silent {
    fn print_trace(&self, _loc: CallLocation<'_>, _value: IStr) {}
}

/// Resolves imports inside the repository only and records what was read.
#[derive(Acyclic)]
struct Resolver {
    /// Canonical repository root.
    root: PathBuf,
    limit: u64,
    /// Repository-relative path → text of every file loaded.
    read: Rc<RefCell<BTreeMap<String, String>>>,
}

fn refuse(message: String) -> jrsonnet_evaluator::Error {
    ErrorKind::RuntimeError(message.into()).into()
}

impl Resolver {
    /// A refused import, located at the import in the importing file when it is written there
    /// once (the evaluator does not say where an import stands).
    fn refuse_at(
        &self,
        from: &SourcePath,
        requested: &str,
        message: String,
    ) -> jrsonnet_evaluator::Error {
        let mut error = refuse(message);
        let text = from
            .path()
            .and_then(|p| self.read.borrow().get(&self.display(p)).cloned());
        if let Some(text) = text {
            let at: Vec<usize> = ["'", "\""]
                .iter()
                .flat_map(|q| {
                    let literal = format!("{q}{requested}{q}");
                    text.match_indices(&literal)
                        .filter(|(i, _)| {
                            text[..*i].trim_end().ends_with("import")
                                || text[..*i].trim_end().ends_with("importstr")
                                || text[..*i].trim_end().ends_with("importbin")
                        })
                        .map(|(i, _)| i)
                        .collect::<Vec<_>>()
                })
                .collect();
            if let [offset] = at.as_slice() {
                let start = u32::try_from(*offset).unwrap_or(0);
                let end = start.saturating_add(u32::try_from(requested.len() + 2).unwrap_or(0));
                let source = jrsonnet_evaluator::Source::new(from.clone(), text.as_str().into());
                error
                    .trace_mut()
                    .0
                    .push(jrsonnet_evaluator::StackTraceElement {
                        location: Some(jrsonnet_evaluator::Span(source, start, end)),
                        desc: "import".into(),
                    });
            }
        }
        error
    }

    fn display(&self, path: &Path) -> String {
        path.strip_prefix(&self.root).map_or_else(
            |_| path.display().to_string(),
            |relative| crate::repo::display_path(Path::new(""), relative),
        )
    }
}

/// `path` with `.` and `..` folded away, without touching the file system.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

impl ImportResolver for Resolver {
    fn resolve_from(
        &self,
        from: &SourcePath,
        path: &dyn AsPathLike,
    ) -> jrsonnet_evaluator::Result<SourcePath> {
        let requested: &Path = match path.as_path() {
            ResolvePath::Str(s) => Path::new(s),
            ResolvePath::Path(p) => p,
        };
        let shown = requested.display().to_string();
        let refuse = |message: String| self.refuse_at(from, &shown, message);
        if requested.is_absolute() {
            return Err(refuse(format!(
                "import of `{shown}` refused: absolute paths are not allowed; import files of the repository by a path relative to the importing file"
            )));
        }
        // Relative to the importing file; code from `aiml.yaml` imports from the root.
        let base = from
            .path()
            .and_then(Path::parent)
            .map_or_else(|| self.root.clone(), Path::to_path_buf);
        let joined = lexical(&base.join(requested));
        if !joined.starts_with(&self.root) {
            return Err(refuse(format!(
                "import of `{shown}` refused: it resolves outside the repository"
            )));
        }
        let canonical = match joined.canonicalize() {
            Ok(canonical) => canonical,
            Err(_) if std::fs::symlink_metadata(&joined).is_ok() => {
                return Err(refuse(format!(
                    "import of `{shown}` refused: it is a broken symbolic link"
                )));
            }
            Err(_) => {
                return Err(refuse(format!(
                    "import of `{shown}`: no such file `{}`",
                    self.display(&joined)
                )));
            }
        };
        if !canonical.starts_with(&self.root) {
            return Err(refuse(format!(
                "import of `{shown}` refused: it leads outside the repository through a symbolic link"
            )));
        }
        Ok(SourcePath::new(jrsonnet_ir::SourceFile::new(canonical)))
    }

    fn load_file_contents(&self, resolved: &SourcePath) -> jrsonnet_evaluator::Result<Vec<u8>> {
        if let Some(fifo) = resolved.downcast_ref::<jrsonnet_ir::SourceFifo>() {
            // Code from `aiml.yaml` (`extCode`, `tlaCode`), held in memory.
            return Ok(fifo.1.to_vec());
        }
        let Some(path) = resolved.path() else {
            return Err(refuse(format!("cannot import `{resolved}`")));
        };
        let display = self.display(path);
        let text = crate::repo::read_text(path, &display, self.limit)
            .map_err(|e| refuse(e.to_string()))?;
        self.read.borrow_mut().insert(display, text.clone());
        Ok(text.into_bytes())
    }
}

/// Where fields are defined in the evaluated files, for placing output values.
///
/// A value placed in a library gets a line past the end of the blueprint file: the libraries
/// follow it, in path order, as if appended ([`relocate`] turns such a line back into the
/// library's path and line).
struct Sources<'a> {
    /// Every evaluated text, the blueprint file's first: (is it the blueprint file, the line
    /// its first line is numbered after, text).
    texts: Vec<(bool, u32, &'a str)>,
    /// Field definitions by key.
    definitions: BTreeMap<String, Vec<Definition<'a>>>,
}

#[derive(Clone, Copy, Debug)]
struct Definition<'a> {
    main: bool,
    /// Line, numbered as in [`Sources`] (past the blueprint file's end in a library).
    line: u32,
    /// Byte offset of the line in its file.
    line_offset: usize,
    /// Byte offset of the key in the line.
    byte: usize,
    /// The line.
    text: &'a str,
}

impl<'a> Sources<'a> {
    fn new(main: &'a str, imports: &'a BTreeMap<String, String>) -> Self {
        let mut definitions: BTreeMap<String, Vec<Definition<'a>>> = BTreeMap::new();
        let mut texts = vec![(true, 0, main)];
        let mut base = line_count(main);
        for text in imports.values() {
            texts.push((false, base, text.as_str()));
            base = base.saturating_add(line_count(text));
        }
        for &(is_main, base, text) in &texts {
            let mut offset = 0;
            for (index, line) in text.split_inclusive('\n').enumerate() {
                for (key, byte) in field_definitions(line) {
                    definitions.entry(key).or_default().push(Definition {
                        main: is_main,
                        line: base.saturating_add(u32::try_from(index + 1).unwrap_or(u32::MAX)),
                        line_offset: offset,
                        byte,
                        text: line,
                    });
                }
                offset += line.len();
            }
        }
        Self { texts, definitions }
    }

    /// The node of `raw`, produced under `key` (`None`: a list item or a document), whose
    /// parent was placed at `parent`. `library`: whether it may be placed in a library; not
    /// under the envelope (`apiVersion`, `kind`, `metadata`), where a blueprint is named by
    /// the line of its own file.
    fn node(&self, raw: Raw, key: Option<&str>, parent: Span, library: Option<bool>) -> Node {
        let placed = key.and_then(|key| locate(self, key, &raw, library.unwrap_or(false)));
        let span = match (key, placed) {
            (_, Some(span)) => span,
            // A list item is where its list was written.
            (None, None) => parent,
            (Some(_), None) => Span::default(),
        };
        let value = match raw {
            Raw::Null => Value::Null,
            Raw::Bool(b) => Value::Bool(b),
            Raw::Number(n) => number(n),
            Raw::String(s) => Value::String(s),
            Raw::Array(items) => Value::Seq(
                items
                    .into_iter()
                    .map(|item| self.node(item, None, span, library.or(Some(true))))
                    .collect(),
            ),
            Raw::Object(entries) => Value::Map(
                entries
                    .into_iter()
                    .map(|(k, v)| {
                        // A document's fields decide for what is under them.
                        let library = library.or(Some(!matches!(
                            k.as_str(),
                            "apiVersion" | "kind" | "metadata"
                        )));
                        let node = self.node(v, Some(&k), span, library);
                        let key_span = key_span(self, &k, node.span);
                        (
                            Key {
                                text: k,
                                span: key_span,
                            },
                            node,
                        )
                    })
                    .collect(),
            ),
        };
        Node { value, span }
    }
}

/// A key's span: the definition's key when the value was placed on its line.
fn key_span(sources: &Sources<'_>, key: &str, value: Span) -> Span {
    if value.line == 0 {
        return value;
    }
    sources
        .definitions
        .get(key)
        .and_then(|defs| defs.iter().find(|d| d.line == value.line))
        .map_or(value, |d| Span {
            line: d.line,
            column: u32::try_from(d.text[..d.byte].chars().count() + 1).unwrap_or(0),
            // Offsets index the blueprint file's text only.
            offset: if d.main { d.line_offset + d.byte } else { 0 },
            len: 0,
        })
}

/// Lines of `text` as [`Sources`] numbers them (a last line without a newline counts).
fn line_count(text: &str) -> u32 {
    u32::try_from(text.split_inclusive('\n').count()).unwrap_or(u32::MAX)
}

/// A library as [`Sources`] numbered its lines: (path, the line its first line is numbered
/// after, its lines).
type LibraryLines = (String, u32, u32);

/// For each evaluated Jsonnet file (as shown), its libraries. Read by [`relocate`].
static LIBRARY_LINES: std::sync::Mutex<BTreeMap<String, Vec<LibraryLines>>> =
    std::sync::Mutex::new(BTreeMap::new());

fn remember_library_lines(display: &str, text: &str, imports: &BTreeMap<String, String>) {
    let mut base = line_count(text);
    let mut lines = Vec::new();
    for (path, import) in imports {
        lines.push((path.clone(), base, line_count(import)));
        base = base.saturating_add(line_count(import));
    }
    LIBRARY_LINES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(display.to_string(), lines);
}

/// Findings about values a Jsonnet library wrote, moved from the blueprint file (where their
/// nodes carry lines past its end) to the library's path and line. Every finding passes
/// through here before it is shown.
#[must_use]
pub fn relocate(diagnostics: &[Diagnostic]) -> std::borrow::Cow<'_, [Diagnostic]> {
    let libraries = LIBRARY_LINES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let place = |d: &Diagnostic| {
        libraries.get(&d.file).and_then(|lines| {
            lines
                .iter()
                .find(|(_, base, count)| d.line > *base && d.line - base <= *count)
                .map(|(path, base, _)| (path.clone(), d.line - base))
        })
    };
    if !diagnostics.iter().any(|d| place(d).is_some()) {
        return std::borrow::Cow::Borrowed(diagnostics);
    }
    let mut moved = diagnostics.to_vec();
    for d in &mut moved {
        if let Some((path, line)) = place(d) {
            d.file = path;
            d.line = line;
        }
    }
    std::borrow::Cow::Owned(moved)
}

/// Jsonnet numbers are doubles; whole ones are integers in YAML terms.
fn number(n: f64) -> Value {
    #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss)]
    if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
        Value::Int(n as i64)
    } else {
        Value::Float(n)
    }
}

/// The literal text a scalar is most likely written as, to tell definitions apart.
fn literals(raw: &Raw) -> Vec<String> {
    match raw {
        Raw::String(s) if !s.contains(['\n', '\'', '"', '\\']) => {
            vec![format!("'{s}'"), format!("\"{s}\"")]
        }
        Raw::Number(n) => vec![format!("{n}")],
        Raw::Bool(b) => vec![b.to_string()],
        _ => Vec::new(),
    }
}

/// Where the field `key` holding `raw` was written, when exactly one definition in the
/// evaluated files can have produced it: in the blueprint file, or (when `library`) in a
/// library whose line holds the value's literal (a library's field that takes its value from
/// an argument was not written there). A definition is `key:` (`::`, `:::`, `+:`), `'key':`,
/// `"key":` or `key =` (a local or a named argument of the same name). With several, a scalar
/// keeps those whose line holds its literal value. Anything else is not placed: a wrong line
/// would mislead more than none.
fn locate(sources: &Sources<'_>, key: &str, raw: &Raw, library: bool) -> Option<Span> {
    if let Some(span) = unique_string(sources, raw, library) {
        return Some(span);
    }
    let definitions = sources.definitions.get(key)?;
    let literals = literals(raw);
    let candidates: Vec<&Definition<'_>> = if definitions.len() == 1 {
        definitions.iter().collect()
    } else if literals.is_empty() {
        return None;
    } else {
        definitions
            .iter()
            .filter(|d| literals.iter().any(|l| find_token(d.text, l, 0).is_some()))
            .collect()
    };
    let [only] = candidates.as_slice() else {
        return None;
    };
    // Point at the literal when it is on the line (what is wrong), else at the key.
    let literal = literals.iter().find_map(|l| {
        only.text[only.byte..]
            .find(l.as_str())
            .map(|b| b + only.byte)
    });
    if !(only.main || library && literal.is_some()) {
        return None;
    }
    let byte = literal.unwrap_or(only.byte);
    Some(Span {
        line: only.line,
        column: u32::try_from(only.text[..byte].chars().count() + 1).unwrap_or(0),
        offset: if only.main {
            only.line_offset + byte
        } else {
            0
        },
        len: 0,
    })
}

/// `literal` in `text` from byte `from` on, standing alone (not inside a longer word or
/// number).
fn find_token(text: &str, literal: &str, from: usize) -> Option<usize> {
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.');
    text.get(from..)?
        .match_indices(literal)
        .map(|(i, _)| i + from)
        .find(|&i| {
            word(text[..i].chars().next_back()).not()
                && word(text[i + literal.len()..].chars().next()).not()
        })
}

/// A string value whose quoted literal is written exactly once in all evaluated files, in the
/// blueprint file or (when `library`) a library: it was written there (a call's argument, a
/// table of the fleet, a library's constant).
fn unique_string(sources: &Sources<'_>, raw: &Raw, library: bool) -> Option<Span> {
    let Raw::String(s) = raw else {
        return None;
    };
    if s.chars().count() < 2 {
        return None;
    }
    let mut found = None;
    let mut count = 0;
    for literal in literals(raw) {
        for &(main, base, text) in &sources.texts {
            for (offset, _) in text.match_indices(literal.as_str()) {
                count += 1;
                found = (main || library).then_some((main, base, text, offset));
            }
        }
    }
    let (main, base, text, offset) = found.filter(|_| count == 1)?;
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let line = u32::try_from(text[..offset].matches('\n').count() + 1).unwrap_or(0);
    Some(Span {
        line: base.saturating_add(line),
        column: u32::try_from(text[line_start..offset].chars().count() + 1).unwrap_or(0),
        offset: if main { offset } else { 0 },
        len: 0,
    })
}

/// Field definitions on one line of Jsonnet: (key, byte offset of the key).
fn field_definitions(line: &str) -> Vec<(String, usize)> {
    let trimmed = line.trim_start();
    if trimmed.starts_with("//")
        || trimmed.starts_with('#')
        || trimmed.starts_with('*')
        || trimmed.starts_with("/*")
    {
        return Vec::new();
    }
    let bytes = line.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let (key, start, end) = if b == b'\'' || b == b'"' {
            // A quoted key: the text up to the same quote.
            let Some(close) = line[i + 1..].find(b as char) else {
                break;
            };
            let end = i + 1 + close;
            (line[i + 1..end].to_string(), i, end + 1)
        } else if is_ident(b) && (i == 0 || !(is_ident(bytes[i - 1]) || bytes[i - 1] == b'.')) {
            let mut end = i;
            while end < bytes.len() && is_ident(bytes[end]) {
                end += 1;
            }
            (line[i..end].to_string(), i, end)
        } else {
            i += 1;
            continue;
        };
        let rest = line[end..].trim_start();
        let defines = rest.starts_with("+:")
            || (rest.starts_with(':') && !rest.starts_with(":="))
            || (rest.starts_with('=') && !rest.starts_with("=="));
        if defines && !key.is_empty() {
            found.push((key, start));
        }
        i = end.max(i + 1);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without a worker process (library callers, the fuzz target), the checks made before
    /// building values still turn the usual bombs into errors instead of aborts.
    #[test]
    fn bombs_are_refused_in_process_before_their_values_are_built() {
        let dir = tempfile::tempdir().unwrap();
        let bombs = [
            (
                "local f(n) = { a: f(n + 1) };\nf(0)\n",
                "deeper than 64 levels",
            ),
            ("{ x: std.range(1, 1e8) }\n", "larger than"),
            (
                "local f(n) = if n == 0 then [] else [f(n - 1)];\nf(100000)\n",
                "deeper than 64 levels",
            ),
            (
                "local d(s, n) = if n == 0 then s else d(s + s, n - 1);\n{ x: d('x', 40) }\n",
                "larger than",
            ),
        ];
        for (source, why) in bombs {
            let path = dir.path().join("bomb.jsonnet");
            std::fs::write(&path, source).unwrap();
            let error = evaluate(
                dir.path(),
                &path,
                "bomb.jsonnet",
                source,
                &Inputs::default(),
                64 << 20,
                Duration::from_secs(60),
            )
            .unwrap_err();
            assert!(error.message.contains(why), "{source}: {error:?}");
            assert_eq!(error.file, "bomb.jsonnet");
        }
    }

    #[test]
    fn field_definitions_find_keys_of_every_form() {
        let keys = |line: &str| {
            field_definitions(line)
                .into_iter()
                .map(|(k, _)| k)
                .collect::<Vec<_>>()
        };
        assert_eq!(keys("  topology: '2x4',\n"), ["topology"]);
        assert_eq!(
            keys("  name:: 'x', 'aiml.dev/ignore': 'a'\n"),
            ["name", "aiml.dev/ignore"]
        );
        assert_eq!(keys("local size = 4;\n"), ["size"]);
        assert_eq!(keys("spec+: { replicas: 2 }\n"), ["spec", "replicas"]);
        assert!(keys("  // topology: '2x4'\n").is_empty());
        assert!(keys("if a == b then self.x else c\n").is_empty());
    }

    #[test]
    fn a_field_is_placed_only_when_one_definition_can_have_made_it() {
        let main = "local lib = import 'lib.libsonnet';\n[\n  lib.model('a', topology='2x4'),\n  lib.model('b', topology='4x4'),\n]\n";
        let imports = BTreeMap::from([(
            "blueprints/lib.libsonnet".to_string(),
            "{ model(name, topology='2x2'):: { name: name, topology: topology } }\n".to_string(),
        )]);
        let sources = Sources::new(main, &imports);
        let span = locate(&sources, "topology", &Raw::String("4x4".into()), true).unwrap();
        assert_eq!((span.line, span.column), (4, 27));
        assert_eq!(&main[span.offset..span.offset + 5], "'4x4'");
        // The default is written in the library: placed there, on a line past the blueprint
        // file's five, when libraries may be pointed at.
        let span = locate(&sources, "topology", &Raw::String("2x2".into()), true).unwrap();
        assert_eq!((span.line, span.column), (6, 24));
        assert!(locate(&sources, "topology", &Raw::String("2x2".into()), false).is_none());
        // Defined only in the library, with a value the library did not write.
        assert!(locate(&sources, "name", &Raw::String("a".into()), true).is_none());
    }
}

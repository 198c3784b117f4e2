//! One evaluation with jrsonnet: the [`Job`] a thread or worker process runs, its limits
//! (stack, output size and depth, charged before values are built) and the conversion of
//! jrsonnet's values and errors into [`Raw`] and [`Failure`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;

use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::function::CallLocation;
use jrsonnet_evaluator::trace::PathResolver;
use jrsonnet_evaluator::{IStr, SourcePath, State, Val};
use jrsonnet_gcmodule::Acyclic;
use jrsonnet_stdlib::TracePrinter;

use super::imports::Resolver;
use super::raw::{Failure, Raw};
use super::{Inputs, MAX_DEPTH, MAX_STACK, MIN_VALUE_COST};

/// Everything the evaluation needs, owned: sent to a worker process as JSON.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct Job {
    pub(super) root: PathBuf,
    pub(super) main: PathBuf,
    pub(super) inputs: Inputs,
    pub(super) limit: u64,
}

pub(super) type Outcome = Result<(Raw, BTreeMap<String, String>), Failure>;

impl Job {
    pub(super) fn run(self) -> Outcome {
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
            frames.push(self.frame(path, error.location.1, "syntax".to_string()));
        }
        if let ErrorKind::StaticAnalysisError(found) = error.error() {
            for diagnostic in found {
                if let Some(span) = &diagnostic.span {
                    frames.push(self.frame(&span.0, span.1, diagnostic.message.clone()));
                }
            }
        }
        for element in &error.trace().0 {
            match &element.location {
                Some(span) => frames.push(self.frame(&span.0, span.1, element.desc.clone())),
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
    /// A frame of the stack a failure shows: the file, line and column of byte `offset` of
    /// `source`, and what happened there.
    fn frame(
        &self,
        source: &jrsonnet_ir::Source,
        offset: u32,
        description: String,
    ) -> (String, u32, u32, String) {
        let [start] = source.map_source_locations(&[offset]);
        (
            self.show(source.source_path()),
            u32::try_from(start.line).unwrap_or(0),
            u32::try_from(start.column).unwrap_or(0),
            description,
        )
    }

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

//! The import resolver: `import`, `importstr` and `importbin` resolve relative to the
//! importing file and stay inside the repository (no absolute path, no `..` past the root, no
//! link that leads out); every file read is bounded and recorded for the render cache.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};
use std::rc::Rc;

use jrsonnet_evaluator::error::ErrorKind;
use jrsonnet_evaluator::{AsPathLike, ImportResolver, ResolvePath, SourcePath};
use jrsonnet_gcmodule::Acyclic;

/// Resolves imports inside the repository only and records what was read.
#[derive(Acyclic)]
pub(super) struct Resolver {
    /// Canonical repository root.
    pub(super) root: PathBuf,
    pub(super) limit: u64,
    /// Repository-relative path → text of every file loaded.
    pub(super) read: Rc<RefCell<BTreeMap<String, String>>>,
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

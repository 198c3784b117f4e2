//! Runs the real kustomize on an overlay folder.
//!
//! Which binary: `AIML_KUSTOMIZE` if set (a `kustomize` binary, or `kubectl` to use its
//! built-in kustomize), else `kustomize` on `PATH`, else `kubectl kustomize`. One process per
//! overlay, no flags, no plugins: the same command a person or Config Sync would run.

mod goyaml;
pub mod inproc;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use wait_timeout::ChildExt as _;

/// A way to run kustomize.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kustomize {
    program: PathBuf,
    /// `build` for kustomize, `kustomize` for kubectl.
    subcommand: &'static str,
    /// Longest a build may take before it is killed.
    timeout: Duration,
    /// Most bytes a build may print.
    max_output: u64,
    /// Build the tool's own overlays in process ([`inproc`]), the binary being the fallback.
    in_process: bool,
}

/// Kustomize could not be run or failed.
#[derive(Debug, thiserror::Error)]
pub enum KustomizeError {
    /// No usable binary.
    #[error(
        "kustomize not found: set `AIML_KUSTOMIZE`, or put `kustomize` or `kubectl` on PATH (looked for {looked_for})"
    )]
    NotFound {
        /// What was looked for.
        looked_for: String,
    },
    /// The process could not start.
    #[error("could not run `{command}`: {source}")]
    Spawn {
        /// The command line.
        command: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The process ran longer than the limit and was killed.
    #[error(
        "`{command}` did not finish within {} and was stopped (set `{}` to allow longer)",
        crate::limits::human_duration(*timeout),
        crate::limits::KUSTOMIZE_TIMEOUT_VAR
    )]
    Timeout {
        /// The command line.
        command: String,
        /// The limit.
        timeout: Duration,
    },
    /// The process printed more than the limit.
    #[error(
        "`{command}` printed more than {} and was stopped (set `{}` to raise the limit)",
        crate::limits::human_size(*limit),
        crate::limits::MAX_FILE_SIZE_VAR
    )]
    TooMuchOutput {
        /// The command line.
        command: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// The binary reports a major version other than the one the tool's output follows.
    #[error(
        "`{command}` is kustomize {found}; kubectl aiml needs kustomize v5 (v5.5.0 is the reference: \
         its output is what overlays must build to). Install kustomize v5, or point `AIML_KUSTOMIZE` at one"
    )]
    WrongVersion {
        /// The command line of the build that needed the binary.
        command: String,
        /// The version it reports.
        found: String,
    },
    /// The process failed; its stderr is kept verbatim.
    #[error("`{command}` failed ({status}):\n{stderr}")]
    Failed {
        /// The command line.
        command: String,
        /// Exit status.
        status: String,
        /// What kustomize printed.
        stderr: String,
    },
}

impl Kustomize {
    /// Finds kustomize as described in the module docs.
    pub fn discover() -> Result<Self, KustomizeError> {
        if let Some(explicit) = std::env::var_os("AIML_KUSTOMIZE").filter(|v| !v.is_empty()) {
            let program = which::which(&explicit).map_err(|_| KustomizeError::NotFound {
                looked_for: format!("AIML_KUSTOMIZE={}", explicit.to_string_lossy()),
            })?;
            return Ok(Self::for_program(program));
        }
        for name in ["kustomize", "kubectl"] {
            if let Ok(program) = which::which(name) {
                return Ok(Self::for_program(program));
            }
        }
        Err(KustomizeError::NotFound {
            looked_for: "`kustomize` and `kubectl` on PATH".into(),
        })
    }

    fn for_program(program: PathBuf) -> Self {
        let is_kubectl = program
            .file_stem()
            .is_some_and(|stem| stem.to_string_lossy().starts_with("kubectl"));
        let limits = crate::limits::Limits::default();
        Self {
            program,
            subcommand: if is_kubectl { "kustomize" } else { "build" },
            timeout: limits.kustomize_timeout,
            max_output: limits.max_file_size,
            in_process: true,
        }
    }

    /// The same kustomize, with every overlay built by the binary (`--kustomize=binary`).
    #[must_use]
    pub fn binary_only(mut self) -> Self {
        self.in_process = false;
        self
    }

    /// Whether overlays in the in-process subset are built without the binary.
    #[must_use]
    pub fn in_process(&self) -> bool {
        self.in_process
    }

    /// The same kustomize with the time and output limits of `limits`.
    #[must_use]
    pub fn with_limits(mut self, limits: &crate::limits::Limits) -> Self {
        self.timeout = limits.kustomize_timeout;
        self.max_output = limits.max_file_size;
        self
    }

    /// The command line shown in messages, with `dir` as given (relative paths stay relative).
    #[must_use]
    pub fn command_line(&self, dir: &str) -> String {
        format!("{} {} {dir}", self.program_name(), self.subcommand)
    }

    /// The kustomize version (`v5.5.0`), as the binary reports it.
    pub fn version(&self) -> Result<String, KustomizeError> {
        let args: &[&str] = if self.subcommand == "kustomize" {
            &["version", "--client"]
        } else {
            &["version"]
        };
        let command = format!("{} {}", self.program_name(), args.join(" "));
        let output = Command::new(&self.program)
            .args(args)
            .output()
            .map_err(|source| KustomizeError::Spawn {
                command: command.clone(),
                source,
            })?;
        let text = String::from_utf8_lossy(&output.stdout);
        parse_version(&text).ok_or_else(|| KustomizeError::Failed {
            command,
            status: output.status.to_string(),
            stderr: format!("no kustomize version in its output: {}", text.trim()),
        })
    }

    /// The version the binary reports when it is not a v5, asked once per binary and process
    /// (only when an overlay needs the binary). A binary whose version cannot be read within
    /// a few seconds is given the benefit of the doubt: the build itself then says what fails.
    fn major_version_other_than_5(&self) -> Option<String> {
        use std::collections::BTreeMap;
        use std::sync::{Mutex, OnceLock};
        static CHECKED: OnceLock<Mutex<BTreeMap<PathBuf, Option<String>>>> = OnceLock::new();
        let checked = CHECKED.get_or_init(|| Mutex::new(BTreeMap::new()));
        let mut checked = checked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        checked
            .entry(self.program.clone())
            .or_insert_with(|| {
                let version = self.version_within(self.timeout.min(Duration::from_secs(10)))?;
                (!version.starts_with("v5.") && version != "v5").then_some(version)
            })
            .clone()
    }

    /// [`Self::version`] with a time limit; `None` when it cannot be read in time.
    fn version_within(&self, limit: Duration) -> Option<String> {
        let args: &[&str] = if self.subcommand == "kustomize" {
            &["version", "--client"]
        } else {
            &["version"]
        };
        let mut child = Command::new(&self.program)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let stdout = child
            .stdout
            .take()
            .map(|pipe| reader(pipe, 64 * 1024, None));
        match child.wait_timeout(limit) {
            Ok(Some(_)) => {}
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
        let text = stdout.map(join).unwrap_or_default();
        parse_version(&String::from_utf8_lossy(&text))
    }

    /// What identifies the binary's build without running it: its path, size, modification time
    /// and inode. Upgrading kustomize changes at least one, which is all a cache key needs;
    /// asking the binary for its version would cost a process per render.
    #[must_use]
    pub fn identity(&self) -> String {
        use std::os::unix::fs::MetadataExt as _;
        let resolved =
            std::fs::canonicalize(&self.program).unwrap_or_else(|_| self.program.clone());
        match std::fs::metadata(&resolved) {
            Ok(meta) => format!(
                "{} {} {}.{} {}",
                resolved.display(),
                meta.len(),
                meta.mtime(),
                meta.mtime_nsec(),
                meta.ino()
            ),
            Err(_) => resolved.display().to_string(),
        }
    }

    /// File name of the binary (`kustomize`, `kubectl`).
    #[must_use]
    pub fn name(&self) -> String {
        self.program_name()
    }

    fn program_name(&self) -> String {
        self.program.file_name().map_or_else(
            || self.program.to_string_lossy().into_owned(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// Builds the overlay in `dir`; `display_dir` names it in messages.
    ///
    /// The process is killed when it runs longer than the time limit or prints more than the
    /// output limit; both are errors naming the overlay.
    pub fn build(&self, dir: &Path, display_dir: &str) -> Result<String, KustomizeError> {
        let command = self.command_line(display_dir);
        if self.in_process
            && let Ok(output) = inproc::build(dir, self.max_output)
        {
            if output.len() as u64 > self.max_output {
                return Err(KustomizeError::TooMuchOutput {
                    command,
                    limit: self.max_output,
                });
            }
            return Ok(output);
        }
        if let Some(found) = self.major_version_other_than_5() {
            return Err(KustomizeError::WrongVersion { command, found });
        }
        let spawn_error = |source| KustomizeError::Spawn {
            command: command.clone(),
            source,
        };
        let mut child = Command::new(&self.program)
            .arg(self.subcommand)
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(spawn_error)?;
        // Read both pipes while waiting, so a chatty process cannot block on a full pipe.
        let limit = self.max_output;
        let overflow = Arc::new(AtomicBool::new(false));
        let stdout = child
            .stdout
            .take()
            .map(|pipe| reader(pipe, limit, Some(Arc::clone(&overflow))));
        let stderr = child
            .stderr
            .take()
            .map(|pipe| reader(pipe, 64 * 1024, None));
        let started = Instant::now();
        let status = loop {
            match child.wait_timeout(Duration::from_millis(20)) {
                Ok(Some(status)) => break status,
                Ok(None) => {}
                Err(source) => return Err(spawn_error(source)),
            }
            let too_long = started.elapsed() >= self.timeout;
            if too_long || overflow.load(Ordering::Relaxed) {
                // Killing fails only when the process is gone already.
                let _ = child.kill();
                let _ = child.wait();
                return Err(if too_long {
                    KustomizeError::Timeout {
                        command,
                        timeout: self.timeout,
                    }
                } else {
                    KustomizeError::TooMuchOutput { command, limit }
                });
            }
        };
        let stdout = stdout.map(join).unwrap_or_default();
        let stderr = stderr.map(join).unwrap_or_default();
        if overflow.load(Ordering::Relaxed) {
            return Err(KustomizeError::TooMuchOutput { command, limit });
        }
        if !status.success() {
            return Err(KustomizeError::Failed {
                command,
                status: status.to_string(),
                stderr: String::from_utf8_lossy(&stderr).trim_end().to_string(),
            });
        }
        String::from_utf8(stdout).map_err(|_| KustomizeError::Failed {
            command,
            status: "success".into(),
            stderr: "output is not UTF-8".into(),
        })
    }
}

/// Reads `pipe` on a thread, keeping at most `limit` bytes. Past the limit it sets `overflow`
/// (when given; the caller then kills the process) or drains and drops the rest.
fn reader(
    pipe: impl std::io::Read + Send + 'static,
    limit: u64,
    overflow: Option<Arc<AtomicBool>>,
) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        use std::io::Read as _;
        let mut pipe = pipe;
        let mut kept = Vec::new();
        let _ = (&mut pipe).take(limit).read_to_end(&mut kept);
        let mut probe = [0_u8; 1];
        match overflow {
            Some(flag) => {
                if pipe.read(&mut probe).is_ok_and(|n| n > 0) {
                    flag.store(true, Ordering::Relaxed);
                }
            }
            None => {
                let _ = std::io::copy(&mut pipe, &mut std::io::sink());
            }
        }
        kept
    })
}

fn join(handle: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    handle.join().unwrap_or_default()
}

/// The kustomize version in `kustomize version` or `kubectl version --client` output
/// (`v5.5.0`, `Kustomize Version: v5.5.0`).
fn parse_version(output: &str) -> Option<String> {
    output
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            line.strip_prefix("Kustomize Version:")
                .map(str::trim)
                .or_else(|| line.starts_with('v').then_some(line))
                .or_else(|| {
                    line.strip_prefix("{Version:kustomize/")
                        .map(|v| v.split_whitespace().next().unwrap_or(v))
                })
        })
        .find(|version| {
            version.starts_with('v') && version[1..].starts_with(|c: char| c.is_ascii_digit())
        })
        .map(ToString::to_string)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubectl_uses_its_kustomize_subcommand() {
        let k = Kustomize::for_program(PathBuf::from("/usr/bin/kubectl"));
        assert_eq!(k.command_line("overlays/a"), "kubectl kustomize overlays/a");
        let k = Kustomize::for_program(PathBuf::from("/opt/kustomize"));
        assert_eq!(k.command_line("overlays/a"), "kustomize build overlays/a");
    }

    #[test]
    fn reads_versions_of_both_binaries() {
        assert_eq!(parse_version("v5.5.0\n").as_deref(), Some("v5.5.0"));
        let kubectl = "Client Version: v1.32.4\nKustomize Version: v5.5.0\n";
        assert_eq!(parse_version(kubectl).as_deref(), Some("v5.5.0"));
        assert_eq!(parse_version("nothing here"), None);
    }
}

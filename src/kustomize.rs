//! Runs the real kustomize on an overlay folder.
//!
//! Which binary: `AIML_KUSTOMIZE` if set (a `kustomize` binary, or `kubectl` to use its
//! built-in kustomize), else `kustomize` on `PATH`, else `kubectl kustomize`. One process per
//! overlay, no flags, no plugins: the same command a person or Config Sync would run.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A way to run kustomize.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kustomize {
    program: PathBuf,
    /// `build` for kustomize, `kustomize` for kubectl.
    subcommand: &'static str,
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
        Self {
            program,
            subcommand: if is_kubectl { "kustomize" } else { "build" },
        }
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
    pub fn build(&self, dir: &Path, display_dir: &str) -> Result<String, KustomizeError> {
        let command = self.command_line(display_dir);
        let output = Command::new(&self.program)
            .arg(self.subcommand)
            .arg(dir)
            .output()
            .map_err(|source| KustomizeError::Spawn {
                command: command.clone(),
                source,
            })?;
        if !output.status.success() {
            return Err(KustomizeError::Failed {
                command,
                status: output.status.to_string(),
                stderr: String::from_utf8_lossy(&output.stderr)
                    .trim_end()
                    .to_string(),
            });
        }
        String::from_utf8(output.stdout).map_err(|_| KustomizeError::Failed {
            command,
            status: "success".into(),
            stderr: "output is not UTF-8".into(),
        })
    }
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

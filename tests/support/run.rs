//! A run of the binary, and the expectations on what it did.

use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

/// The binary, to run in `dir` without colours: what every run of it in the tests starts from.
pub fn aiml_command(dir: &Path) -> Command {
    let mut command = Command::new(cargo_bin("kubectl-aiml"));
    command.current_dir(dir).env("NO_COLOR", "1");
    command
}

/// `kubectl aiml ARGS` in `repo`, with `kubeconfig` and nothing of the user's home (the
/// cluster tests).
pub fn aiml_with_kubeconfig(repo: &Path, kubeconfig: &Path, args: &[&str]) -> Run {
    let output = aiml_command(repo)
        .args(args)
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", repo)
        .output()
        .expect("run kubectl-aiml");
    Run::from_output(args, output)
}

/// `kubectl aiml ARGS` in `dir` with `env`, `input` on its standard input.
pub fn aiml_with_stdin(dir: &Path, args: &[&str], input: &[u8], env: &[(&str, &str)]) -> Run {
    use std::io::Write as _;
    use std::process::Stdio;
    let mut child = aiml_command(dir)
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run kubectl-aiml");
    let mut stdin = child.stdin.take().expect("stdin");
    // The binary may stop reading early (a refusal): a broken pipe is its answer, not ours.
    let _ = stdin.write_all(input);
    drop(stdin);
    Run::from_output(args, child.wait_with_output().expect("wait"))
}

/// A finished run of the binary.
pub struct Run {
    /// The arguments it ran with, for messages.
    pub args: Vec<String>,
    /// What else a failure message names (the case a loop is at), or empty.
    pub context: String,
    /// Exit code.
    pub code: i32,
    /// What it printed on stdout.
    pub stdout: String,
    /// What it printed on stderr.
    pub stderr: String,
}

impl Run {
    /// The run of the binary with `args` that ended with `output`; it must have exited (not
    /// been killed) and printed UTF-8.
    pub fn from_output(args: &[&str], output: std::process::Output) -> Self {
        Self {
            args: args.iter().map(|arg| arg.to_string()).collect(),
            context: String::new(),
            code: output.status.code().expect("exit code"),
            stdout: String::from_utf8(output.stdout).expect("utf-8"),
            stderr: String::from_utf8(output.stderr).expect("utf-8"),
        }
    }

    /// The same run, with `context` (the case a loop is at) named by every failed expectation.
    pub fn about(mut self, context: impl std::fmt::Display) -> Self {
        self.context = format!(" ({context})");
        self
    }

    /// Panics with what was expected, the command, its exit code and everything it printed.
    #[track_caller]
    fn fail(&self, expected: &str) -> ! {
        panic!(
            "`kubectl-aiml {}`{}: expected {expected}\n{}",
            self.args.join(" "),
            self.context,
            self.transcript()
        )
    }

    /// Asserts the exit code.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        if self.code != code {
            self.fail(&format!("exit code {code}"));
        }
        self
    }

    /// Stdout read as the JSON list of findings that `-o json` prints.
    #[track_caller]
    pub fn findings(&self) -> Vec<serde_json::Value> {
        match serde_json::from_str(&self.stdout) {
            Ok(serde_json::Value::Array(findings)) => findings,
            _ => self.fail("a JSON list of findings on stdout"),
        }
    }

    /// Asserts that the run failed: any exit code but 0.
    #[track_caller]
    pub fn expect_failure(&self) -> &Self {
        if self.code == 0 {
            self.fail("a failure (an exit code other than 0)");
        }
        self
    }

    /// Asserts that `stream` (`"stdout"` or `"stderr"`) contains `needle`, or with `present:
    /// false` that it does not.
    #[track_caller]
    fn expect_text(&self, stream: &str, needle: &str, present: bool) -> &Self {
        let text = if stream == "stdout" {
            &self.stdout
        } else {
            &self.stderr
        };
        if text.contains(needle) != present {
            let no = if present { "" } else { "no " };
            self.fail(&format!("{no}{needle:?} on {stream}"));
        }
        self
    }

    /// Asserts that stderr contains `needle`.
    #[track_caller]
    pub fn stderr_has(&self, needle: &str) -> &Self {
        self.expect_text("stderr", needle, true)
    }

    /// Asserts that stdout contains `needle`.
    #[track_caller]
    pub fn stdout_has(&self, needle: &str) -> &Self {
        self.expect_text("stdout", needle, true)
    }

    /// Asserts that stderr does not contain `needle`.
    #[track_caller]
    pub fn stderr_lacks(&self, needle: &str) -> &Self {
        self.expect_text("stderr", needle, false)
    }

    /// What a person sees, for snapshots.
    pub fn transcript(&self) -> String {
        format!(
            "exit: {}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }
}

//! `kubectl-aiml`: the binary. kubectl finds it on PATH and runs it as `kubectl aiml`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let parsed = match cli::Cli::try_parse() {
        Ok(parsed) => parsed,
        Err(error) => {
            // clap prints help and version to stdout (exit 0) and usage errors to stderr.
            let _ = error.print();
            return ExitCode::from(if error.use_stderr() { 2 } else { 0 });
        }
    };
    match cli::run(parsed) {
        Ok(outcome) => outcome.into(),
        Err(error) if is_broken_pipe(&error) => ExitCode::SUCCESS,
        Err(error) => {
            #[expect(clippy::print_stderr, reason = "last-resort error report")]
            {
                eprintln!("error: {error:#}");
            }
            cli::Outcome::Failure.into()
        }
    }
}

/// A closed stdout (`kubectl aiml blueprints | head`) is not an error.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

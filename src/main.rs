//! `kubectl-aiml`: the binary. kubectl finds it on PATH and runs it as `kubectl aiml`.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A Jsonnet worker process (see `aiml::jsonnet::worker`), started by this binary itself.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == aiml::jsonnet::WORKER_ARG)
    {
        return aiml::jsonnet::worker();
    }
    if let Ok(program) = std::env::current_exe() {
        aiml::jsonnet::isolate(program);
    }
    // Before anything is made that an interruption should clean up.
    cli::interrupt::install();
    let parsed = match cli::Cli::try_parse() {
        Ok(parsed) => parsed,
        Err(error) if error.use_stderr() => {
            // A usage error quotes the arguments, which may come from hostile file names.
            let message = aiml::diagnostic::sanitize(&error.render().to_string(), usize::MAX);
            #[expect(
                clippy::print_stderr,
                reason = "usage errors, before any printer exists"
            )]
            {
                eprint!("{message}");
            }
            return ExitCode::from(2);
        }
        Err(error) => {
            // Help and version, on stdout.
            let _ = error.print();
            return ExitCode::SUCCESS;
        }
    };
    match cli::run(parsed) {
        Ok(outcome) => outcome.into(),
        Err(error) => {
            // Paths and messages of other programs may carry terminal escapes.
            let message = aiml::diagnostic::sanitize(&format!("{error:#}"), 4_000);
            #[expect(clippy::print_stderr, reason = "last-resort error report")]
            {
                eprintln!("error: {message}");
            }
            cli::Outcome::Failure.into()
        }
    }
}

// mimalloc returns freed memory to the system sooner than glibc's per-thread arenas, which
// keeps the peak of a large `validate` or fleet render lower, and allocates faster.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

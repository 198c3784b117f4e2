//! Evaluation in a child process of the binary itself. The child caps its own address space
//! and the parent kills it at the time limit, so an evaluation that runs out of memory or
//! stack aborts the child, never the command: its death is a finding about the file.
//!
//! One child per file: a file's evaluation starts from a fresh process, so a bomb is blamed on
//! the file that set it off, and the cost (a few milliseconds of process start) grows linearly
//! with the number of Jsonnet files, in parallel when the caller is.

use std::io::{Read as _, Write as _};
use std::os::unix::process::ExitStatusExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use wait_timeout::ChildExt as _;

use super::{Job, MAX_DEPTH, MAX_STACK, Outcome, THREAD_STACK, failed, timed_out};
use crate::diagnostic::Diagnostic;

/// Hidden first argument that makes the binary a Jsonnet worker (see [`worker`]).
pub const WORKER_ARG: &str = "__jsonnet-worker";

/// The program whose [`worker`] evaluates files, once [`isolate`] has named it.
static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Evaluates the Jsonnet files of this process in child processes of `program`, which must run
/// [`worker`] when its first argument is [`WORKER_ARG`]. Call once, early in `main`.
pub fn isolate(program: PathBuf) {
    // A second call keeps the first program: both are the same binary.
    let _ = PROGRAM.set(program);
}

pub(super) fn worker_program() -> Option<&'static Path> {
    PROGRAM.get().map(PathBuf::as_path)
}

/// The address space a worker may use when outputs may be `limit` bytes: eight times the
/// limit, at least 512 MiB (the default limit, 64 MiB, gives 512 MiB).
#[must_use]
pub fn memory_limit(limit: u64) -> u64 {
    limit.saturating_mul(8).max(512 << 20)
}

/// A worker: reads a job (JSON) from standard input, caps its own address space, evaluates on
/// a thread with a known stack and writes the outcome (JSON) to standard output. A job that
/// exhausts memory or stack aborts the worker, which its parent reports.
#[must_use]
pub fn worker() -> ExitCode {
    let mut input = Vec::new();
    if std::io::stdin().read_to_end(&mut input).is_err() {
        return ExitCode::from(3);
    }
    let Ok(job) = serde_json::from_slice::<Job>(&input) else {
        return ExitCode::from(3);
    };
    let cap = memory_limit(job.limit);
    // The thread's stack is mapped before the cap applies: the cap is for the evaluation.
    let outcome = std::thread::Builder::new()
        .stack_size(THREAD_STACK)
        .spawn(move || {
            // Linux enforces the cap; elsewhere it is best effort (macOS ignores RLIMIT_AS),
            // and the time limit and the size checks still apply.
            let capped = cap_address_space(cap);
            if cfg!(target_os = "linux") {
                capped?;
            }
            Ok::<_, std::io::Error>(job.run())
        })
        .ok()
        .and_then(|handle| handle.join().ok());
    let outcome: Option<Outcome> = match outcome {
        Some(Ok(outcome)) => Some(outcome),
        Some(Err(e)) => {
            #[expect(clippy::print_stderr, reason = "read by the parent process")]
            {
                eprintln!("cannot limit the memory of the Jsonnet worker: {e}");
            }
            return ExitCode::from(4);
        }
        None => None,
    };
    let Some(outcome) = outcome else {
        return ExitCode::from(5);
    };
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if serde_json::to_writer(&mut out, &outcome).is_err() || out.flush().is_err() {
        return ExitCode::from(6);
    }
    ExitCode::SUCCESS
}

/// Caps the address space of this process at `cap` bytes, or its hard limit if lower.
fn cap_address_space(cap: u64) -> std::io::Result<()> {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let current = getrlimit(Resource::As);
    let cap = current.maximum.map_or(cap, |hard| hard.min(cap));
    setrlimit(
        Resource::As,
        Rlimit {
            current: Some(cap),
            maximum: current.maximum,
        },
    )?;
    Ok(())
}

/// Runs `job` in a worker of `program`, at most `timeout` long.
pub(super) fn run(
    program: &Path,
    job: &Job,
    timeout: Duration,
    display: &str,
) -> Result<Outcome, Diagnostic> {
    let request = serde_json::to_vec(job)
        .map_err(|e| failed(display, format!("cannot start the Jsonnet evaluation: {e}")))?;
    let mut child = Command::new(program)
        .arg(WORKER_ARG)
        // One malloc arena: glibc reserves 64 MiB of address space per extra arena, which the
        // worker's address-space cap would count as if it were used.
        .env("MALLOC_ARENA_MAX", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| failed(display, format!("cannot start the Jsonnet evaluation: {e}")))?;
    // The answer cannot be larger than what the worker could hold, escaped.
    let cap = memory_limit(job.limit);
    let answer = child.stdout.take().map(|pipe| read(pipe, cap));
    let errors = child.stderr.take().map(|pipe| read(pipe, 64 * 1024));
    if let Some(mut stdin) = child.stdin.take() {
        // A worker that died before reading is reported below.
        let _ = stdin.write_all(&request);
    }
    let status = match child.wait_timeout(timeout) {
        Ok(Some(status)) => status,
        Ok(None) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(timed_out(display, timeout));
        }
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(failed(
                display,
                format!("cannot wait for the Jsonnet evaluation: {e}"),
            ));
        }
    };
    let answer = answer.map(join).unwrap_or_default();
    let errors = errors.map(join).unwrap_or_default();
    if status.success()
        && let Ok(outcome) = serde_json::from_slice::<Outcome>(&answer)
    {
        return Ok(outcome);
    }
    Err(died(
        display,
        &String::from_utf8_lossy(&errors),
        status,
        job.limit,
    ))
}

/// Reads at most `limit` bytes of `pipe` on a thread, then drains it.
fn read(pipe: impl std::io::Read + Send + 'static, limit: u64) -> std::thread::JoinHandle<Vec<u8>> {
    std::thread::spawn(move || {
        let mut pipe = pipe;
        let mut kept = Vec::new();
        let _ = (&mut pipe).take(limit).read_to_end(&mut kept);
        let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        kept
    })
}

fn join(handle: std::thread::JoinHandle<Vec<u8>>) -> Vec<u8> {
    handle.join().unwrap_or_default()
}

/// The finding for a worker that ended without an answer, from what the runtime printed.
fn died(display: &str, errors: &str, status: ExitStatus, limit: u64) -> Diagnostic {
    let cap = crate::limits::human_size(memory_limit(limit));
    if errors.contains("overflowed its stack") {
        failed(
            display,
            "jsonnet: the evaluation ran out of stack (calls or values nested too deeply)".into(),
        )
        .expected(format!(
            "at most {MAX_STACK} nested calls and {MAX_DEPTH} levels of nested values"
        ))
        .fix("look for recursion without an end, or values wrapped in a loop")
    } else if errors.contains("memory allocation") || status.signal() == Some(9) {
        failed(
            display,
            format!("jsonnet: the evaluation needed more than {cap} of memory"),
        )
        .expected(format!("an evaluation within {cap}"))
        .fix(format!(
            "look for strings or arrays that grow in a loop or a comprehension; the limit is 8 times `{}`",
            crate::limits::MAX_FILE_SIZE_VAR
        ))
    } else {
        failed(
            display,
            format!("jsonnet: the evaluation stopped unexpectedly ({status})"),
        )
    }
}

//! A suppression is never a deletion: a rule whose error stops a blueprint's plan cannot be
//! turned off (`--ignore` or `aiml.dev/ignore`), and no path of `render` (plain, by name,
//! `--check`, `--commit`, with or without the cache) removes the output of a blueprint that is
//! still there.

mod support;

use std::ffi::OsStr;
use std::process::Command;

use support::{EXAMPLE, Run, TestRepo};

const FILE: &str = "blueprints/multislice-v4-32-training.yaml";
const NAME: &str = "multislice-v4-32-training";

/// `git` in the repository, with a fixed identity and no machine configuration.
fn git(repo: &TestRepo, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(args)
        .current_dir(repo.path())
        .envs(identity())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", repo.path().join(".git"))
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).expect("utf-8")
}

fn identity() -> Vec<(&'static str, &'static OsStr)> {
    vec![
        ("GIT_AUTHOR_NAME", OsStr::new("Test")),
        ("GIT_AUTHOR_EMAIL", OsStr::new("test@example.com")),
        ("GIT_COMMITTER_NAME", OsStr::new("Test")),
        ("GIT_COMMITTER_EMAIL", OsStr::new("test@example.com")),
    ]
}

/// The example rendered and committed on `main`.
fn rendered_repo() -> TestRepo {
    let repo = TestRepo::new();
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "Render"]);
    repo
}

/// Every way to run `render` that writes or judges the output.
const PATHS: &[&[&str]] = &[
    &["render"],
    &["render", "--no-cache"],
    &["render", NAME],
    &["render", "--check"],
    &["render", "--check", "--no-cache"],
    &["render", "--commit"],
];

/// Runs every path of `render` with `extra` flags and checks that each stops with exit 2,
/// says `expect`, and leaves the output and git history as they were.
fn refused_everywhere(repo: &TestRepo, extra: &[&str], expect: &str) {
    let before = repo.generated();
    let head = git(repo, &["rev-parse", "HEAD"]);
    for path in PATHS {
        let args: Vec<&str> = path.iter().chain(extra).copied().collect();
        let run: Run = repo.aiml_with_env(&args, &identity());
        assert_eq!(run.code, 2, "{args:?}\n{}", run.transcript());
        assert!(
            run.stderr.contains(expect),
            "{args:?}\n{}",
            run.transcript()
        );
        assert!(
            repo.generated() == before,
            "{args:?} changed the output\n{}",
            run.transcript()
        );
        assert_eq!(git(repo, &["rev-parse", "HEAD"]), head, "{args:?}");
    }
}

#[test]
fn an_annotation_that_turns_off_a_planning_rule_is_refused_and_deletes_nothing() {
    let repo = rendered_repo();
    repo.write(
        FILE,
        &EXAMPLE
            .replace(
                &format!("  name: {NAME}\n"),
                &format!("  name: {NAME}\n  annotations:\n    aiml.dev/ignore: tpu-slices\n"),
            )
            .replace("slices: 2", "slices: 0"),
    );
    refused_everywhere(
        &repo,
        &[],
        "`aiml.dev/ignore` names `tpu-slices` stops a blueprint from being planned, so it cannot be turned off",
    );
}

#[test]
fn ignoring_a_planning_rule_is_refused_and_deletes_nothing() {
    let repo = rendered_repo();
    repo.write(FILE, &EXAMPLE.replace("type: v4-32", "type: v4-320000"));
    refused_everywhere(
        &repo,
        &["--ignore", "tpu-type-unknown"],
        "`--ignore tpu-type-unknown`: `tpu-type-unknown` stops a blueprint from being planned",
    );
    repo.write(FILE, &EXAMPLE.replace("my-project", "My_Project"));
    refused_everywhere(
        &repo,
        &["--ignore", "gcp-project-id"],
        "`gcp-project-id` stops a blueprint from being planned",
    );
}

//! What the integration tests share: a temporary repository and a run of the binary.

#![allow(dead_code, reason = "each test crate uses a part of this module")]

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

/// The repository's own example blueprint.
pub const EXAMPLE: &str = include_str!("../../blueprints/multislice-v4-32-training.yaml");

/// A temporary repository with the example blueprint.
pub struct TestRepo {
    /// The folder.
    pub dir: tempfile::TempDir,
}

impl TestRepo {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Self { dir };
        repo.write("blueprints/multislice-v4-32-training.yaml", EXAMPLE);
        repo
    }

    /// A temporary repository with no blueprint yet.
    pub fn empty() -> Self {
        Self {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, relative: &str, text: &str) {
        let path = self.path().join(relative);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    pub fn aiml(&self, args: &[&str]) -> Run {
        self.aiml_with_env(args, &[])
    }

    pub fn aiml_with_env(&self, args: &[&str], env: &[(&str, &std::ffi::OsStr)]) -> Run {
        let output = aiml_command(self.path())
            .args(args)
            .envs(env.iter().copied())
            .output()
            .expect("run kubectl-aiml");
        Run::from_output(args, output)
    }

    /// Writes `text` as `k8s/<name>` and runs `validate k8s`, as a CI job checks manifests.
    pub fn validate_manifest(&self, name: &str, text: &str) -> Run {
        self.write(&format!("k8s/{name}"), text);
        self.aiml(&["validate", "k8s"])
    }

    /// Every file under overlays/ and rendered/.
    pub fn generated(&self) -> BTreeMap<String, Vec<u8>> {
        let mut all = BTreeMap::new();
        for top in ["overlays", "rendered"] {
            for (path, content) in aiml::render::read_tree(&self.path().join(top)).expect("read") {
                all.insert(format!("{top}/{path}"), content);
            }
        }
        all
    }
}

/// The binary, to run in `dir` without colours: what every run of it in the tests starts from.
pub fn aiml_command(dir: &Path) -> Command {
    let mut command = Command::new(cargo_bin("kubectl-aiml"));
    command.current_dir(dir).env("NO_COLOR", "1");
    command
}

/// Runs `command` and panics, naming it with its exit code and output, unless it succeeds;
/// `why` says what its failure means (or what to do about it).
#[track_caller]
pub fn succeed(command: &mut Command, why: &str) -> std::process::Output {
    let output = command
        .output()
        .unwrap_or_else(|error| panic!("{why}: cannot run {command:?}: {error}"));
    assert!(
        output.status.success(),
        "{why}: {command:?} exited with {}\n--- stdout\n{}--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
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

/// One blueprint the repository ships under `blueprints/`.
pub struct Shipped {
    /// Its file, relative to the repository (`blueprints/x.yaml`).
    pub file: String,
    /// Its `metadata.name`.
    pub name: String,
    /// The file's text.
    pub text: String,
}

/// Every blueprint under the repository's `blueprints/` (YAML files, each document that is a
/// blueprint), discovered so that adding one needs no test edit. Never empty.
pub fn shipped_blueprints() -> Vec<Shipped> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut shipped = Vec::new();
    for (path, content) in aiml::render::read_tree(&root.join("blueprints")).expect("read") {
        let yaml = Path::new(&path)
            .extension()
            .is_some_and(|e| e == "yaml" || e == "yml");
        if !yaml {
            continue;
        }
        let file = format!("blueprints/{path}");
        let text = String::from_utf8(content).expect("utf-8");
        for document in aiml::yaml::parse_documents(&text).expect("yaml") {
            let name = document
                .get("metadata")
                .and_then(|m| m.get("name"))
                .and_then(|n| n.as_str())
                .unwrap_or_else(|| panic!("{file}: a blueprint without metadata.name"));
            shipped.push(Shipped {
                file: file.clone(),
                name: name.to_string(),
                text: text.clone(),
            });
        }
    }
    assert!(!shipped.is_empty(), "no blueprint found under blueprints/");
    shipped
}

/// Asserts that two trees of files (path → bytes) are the same, naming every file only in
/// one or different in both, grouped by blueprint folder (`rendered/<name>/`), instead of
/// printing two maps of bytes.
pub fn assert_same_files(
    (a_label, a): (&str, &BTreeMap<String, Vec<u8>>),
    (b_label, b): (&str, &BTreeMap<String, Vec<u8>>),
) {
    let mut problems: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let folder = |path: &str| path.splitn(3, '/').take(2).collect::<Vec<_>>().join("/");
    for path in a.keys().chain(b.keys()) {
        let what = match (a.get(path), b.get(path)) {
            (Some(x), Some(y)) if x == y => continue,
            (Some(_), Some(_)) => format!("{path}: differs"),
            (Some(_), None) => format!("{path}: only in {a_label}"),
            (None, _) => format!("{path}: only in {b_label}"),
        };
        let entry = problems.entry(folder(path)).or_default();
        if !entry.contains(&what) {
            entry.push(what);
        }
    }
    if problems.is_empty() {
        return;
    }
    let report: Vec<String> = problems
        .iter()
        .map(|(folder, files)| format!("{folder}/:\n  {}", files.join("\n  ")))
        .collect();
    panic!(
        "{a_label} and {b_label} differ in {} folder(s):\n{}",
        problems.len(),
        report.join("\n")
    );
}

/// Writes `text` (a script with its `#!` line) to `path` and makes it executable: a fake
/// program for the binary to run.
pub fn write_script(path: &Path, text: &str) {
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
}

/// Stages every file of `repo`'s work tree (ignore rules apply; deleted files are staged too)
/// and commits it on `HEAD` as `who`, after the current `HEAD` if there is one.
pub fn commit_all(repo: &git2::Repository, who: &git2::Signature<'_>, message: &str) -> git2::Oid {
    let mut index = repo.index().unwrap();
    index
        .add_all(["*"], git2::IndexAddOption::DEFAULT, None)
        .unwrap();
    index.update_all(["*"], None).unwrap();
    index.write().unwrap();
    let tree = repo.find_tree(index.write_tree().unwrap()).unwrap();
    let parent = repo.head().ok().map(|h| h.peel_to_commit().unwrap());
    let parents: Vec<&git2::Commit<'_>> = parent.iter().collect();
    repo.commit(Some("HEAD"), who, who, message, &tree, &parents)
        .unwrap()
}

/// Waits until `path` exists (a fake program touches it when it starts), and fails if it
/// does not within `within`.
#[track_caller]
pub fn wait_for_file(path: &Path, within: std::time::Duration) {
    let deadline = std::time::Instant::now() + within;
    while !path.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the fake kustomize never started: no {}",
            path.display()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// Sends `signal` (`TERM`, `KILL`…) to `child` with `kill`, which must succeed.
#[track_caller]
pub fn kill(child: &std::process::Child, signal: &str) {
    succeed(
        Command::new("kill").args([&format!("-{signal}"), &child.id().to_string()]),
        "kill",
    );
}

/// Asserts that some path of `paths` is `wanted`, listing them all when none is.
#[track_caller]
pub fn assert_some_path<P: AsRef<str>>(
    paths: impl IntoIterator<Item = P>,
    wanted: impl Fn(&str) -> bool,
) {
    let paths: Vec<P> = paths.into_iter().collect();
    if !paths.iter().any(|path| wanted(path.as_ref())) {
        let listed: Vec<&str> = paths.iter().map(AsRef::as_ref).collect();
        panic!("no such path among:\n{}", listed.join("\n"));
    }
}

/// Asserts that `text` contains each of `needles`, naming the first one it lacks.
#[track_caller]
pub fn assert_contains_all(text: &str, needles: &[&str]) {
    for needle in needles {
        assert!(text.contains(needle), "no `{needle}` in\n{text}");
    }
}

/// The path of `program` on PATH. A test that needs a program it cannot find fails, naming it:
/// a skipped test would pass without checking anything (scripts/install-test-deps installs
/// every program the tests run).
pub fn require(program: &str) -> std::path::PathBuf {
    which::which(program).unwrap_or_else(|_| {
        panic!(
            "`{program}` is not on PATH, and this test runs it; run scripts/install-test-deps (as root on Debian it installs it), or install {program}"
        )
    })
}

/// The rule an `err_<rule>[_<case>]` fixture is about: the file stem without `err_`, up to
/// an optional `_<case>` suffix.
pub fn rule_of(stem: &str) -> Option<&str> {
    let rest = stem.strip_prefix("err_")?;
    Some(rest.split_once('_').map_or(rest, |(rule, _)| rule))
}

/// Rules a fixture allows besides its own, from `# also: a, b` lines.
pub fn also_allowed(text: &str) -> Vec<&str> {
    text.lines()
        .filter_map(|line| line.strip_prefix("# also:"))
        .flat_map(|list| list.split(','))
        .map(str::trim)
        .filter(|rule| !rule.is_empty())
        .collect()
}

/// Nothing when `found` (the findings of `rule`'s doc example under `## Fails`) holds a
/// finding of `rule`; otherwise the problem to report, naming the rules found instead.
pub fn example_fails_with(rule: &str, found: &[aiml::diagnostic::Diagnostic]) -> Option<String> {
    if found.iter().any(|finding| finding.rule == rule) {
        return None;
    }
    let rules: Vec<&str> = found.iter().map(|finding| finding.rule.as_str()).collect();
    Some(format!(
        "{rule}: the example does not fail with it (found {rules:?})"
    ))
}

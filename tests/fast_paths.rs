//! Every fast path gives exactly the results of the slow path. The fast paths are the render
//! cache (`.aiml/cache`), the in-process kustomize build and the blueprints whose folders
//! already hold their output (staged nothing); the slow path turns all three off
//! (`AIML_CACHE=off`, `--kustomize=binary`, `AIML_STAGING=all`). Each command that reads or
//! writes rendered output runs both ways from the same state — a clean clone, a warm cache, a
//! cold cache, after an edit of a blueprint — and both must print the same stdout, exit with
//! the same code and leave the same files and git state. Each state also says what the right
//! answer is (a clean clone has nothing to change), so that two equally wrong paths fail too.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use assert_cmd::cargo::cargo_bin;

/// Which way a command runs.
#[derive(Clone, Copy, Debug)]
enum Way {
    /// The defaults: cache, in-process kustomize, skipped staging.
    Fast,
    /// Every fast path off.
    Slow,
}

/// What a run left behind, compared between the two ways.
#[derive(Debug, PartialEq)]
struct Observed {
    code: i32,
    stdout: String,
    /// Every file under `overlays/` and `rendered/`.
    files: BTreeMap<String, Vec<u8>>,
    /// `git rev-parse HEAD^{tree}` and `git status --porcelain`: what a commit made.
    head_tree: String,
    status: String,
}

fn git(dir: &Path, args: &[&str]) -> String {
    let output = support::succeed(
        Command::new(support::require("git"))
            .args(["-c", "user.name=Test", "-c", "user.email=test@example.com"])
            .args(args)
            .current_dir(dir),
        "git",
    );
    String::from_utf8(output.stdout).expect("utf-8")
}

fn aiml(dir: &Path, args: &[&str], way: Way) -> (i32, String, String) {
    let mut command = Command::new(cargo_bin("kubectl-aiml"));
    command
        .current_dir(dir)
        .env("NO_COLOR", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .env_remove("AIML_CACHE")
        .env_remove("AIML_STAGING");
    if let Way::Slow = way {
        command
            .arg("--kustomize=binary")
            .env("AIML_CACHE", "off")
            .env("AIML_STAGING", "all");
    }
    let output = command.args(args).output().expect("run kubectl-aiml");
    (
        output.status.code().expect("exit code"),
        String::from_utf8(output.stdout).expect("utf-8"),
        String::from_utf8(output.stderr).expect("utf-8"),
    )
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    for top in ["overlays", "rendered"] {
        for (path, content) in aiml::render::read_tree(&dir.join(top)).expect("read") {
            all.insert(format!("{top}/{path}"), content);
        }
    }
    all
}

/// A git repository holding the shipped blueprints (every file of `blueprints/`, discovered)
/// and the output the slow path renders for them, committed.
fn origin() -> tempfile::TempDir {
    let origin = tempfile::tempdir().expect("temp dir");
    let copy = |relative: &str| {
        for (path, content) in aiml::render::read_tree(Path::new(relative)).expect("read") {
            let to = origin.path().join(relative).join(path);
            std::fs::create_dir_all(to.parent().expect("parent")).expect("mkdir");
            std::fs::write(to, content).expect("write");
        }
    };
    copy("blueprints");
    std::fs::copy("aiml.yaml", origin.path().join("aiml.yaml")).expect("copy aiml.yaml");
    git(origin.path(), &["init", "-q", "-b", "main"]);
    let (code, _, stderr) = aiml(origin.path(), &["render"], Way::Slow);
    assert_eq!(code, 0, "{stderr}");
    git(origin.path(), &["add", "-A"]);
    git(
        origin.path(),
        &["commit", "-q", "-m", "blueprints and output"],
    );
    origin
}

/// A fresh clone of `origin` (no cache: `.aiml/` is never committed).
fn clone(origin: &Path) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    support::succeed(
        Command::new(support::require("git"))
            .args(["clone", "-q"])
            .arg(origin)
            .arg(dir.path()),
        "git clone",
    );
    dir
}

/// The commands compared, with their arguments. `render --check` prints its stale files as
/// JSON on stdout, so that the comparison covers them.
const COMMANDS: &[&[&str]] = &[
    &["render"],
    &["-o", "json", "render", "--check"],
    &["render", "--commit", "-m", "fast or slow"],
    &["diff", "--exit-code"],
    &["diff", "--render", "--exit-code"],
];

/// Runs every command both ways, each from its own clone of `origin` brought into a state by
/// `prepare`; returns what the fast way observed per command, after checking that the slow
/// way observed the same.
fn both_ways(origin: &Path, prepare: &dyn Fn(&Path)) -> Vec<(String, Observed, String)> {
    COMMANDS
        .iter()
        .map(|args| {
            let observe = |way: Way| {
                let dir = clone(origin);
                prepare(dir.path());
                let (code, stdout, stderr) = aiml(dir.path(), args, way);
                let observed = Observed {
                    code,
                    stdout,
                    files: files(dir.path()),
                    head_tree: git(dir.path(), &["rev-parse", "HEAD^{tree}"]),
                    status: git(dir.path(), &["status", "--porcelain"]),
                };
                (observed, stderr)
            };
            let (fast, fast_stderr) = observe(Way::Fast);
            let (slow, slow_stderr) = observe(Way::Slow);
            let command = args.join(" ");
            if fast != slow {
                let differing: Vec<&String> = fast
                    .files
                    .keys()
                    .chain(slow.files.keys())
                    .filter(|path| fast.files.get(*path) != slow.files.get(*path))
                    .collect();
                panic!(
                    "`{command}`: the fast path differs from the slow path\nexit: {} vs {}\nfiles that differ: {differing:?}\nhead tree: {} vs {}\nstatus: {:?} vs {:?}\n--- fast stdout\n{}--- slow stdout\n{}--- fast stderr\n{fast_stderr}--- slow stderr\n{slow_stderr}",
                    fast.code,
                    slow.code,
                    fast.head_tree.trim(),
                    slow.head_tree.trim(),
                    fast.status,
                    slow.status,
                    fast.stdout,
                    slow.stdout,
                );
            }
            (command, fast, fast_stderr)
        })
        .collect()
}

/// What every command must find in a repository whose committed output is current.
fn assert_nothing_changes(origin: &Path, observed: &[(String, Observed, String)]) {
    let head_tree = git(origin, &["rev-parse", "HEAD^{tree}"]);
    let committed = files(origin);
    for (command, observed, stderr) in observed {
        let context = format!("`{command}`\n{observed:?}\n--- stderr\n{stderr}");
        assert_eq!(observed.code, 0, "{context}");
        assert!(observed.files == committed, "files changed: {context}");
        assert_eq!(observed.head_tree, head_tree, "{context}");
        assert_eq!(observed.status, "", "{context}");
        if command.contains("--check") {
            let json: serde_json::Value =
                serde_json::from_str(&observed.stdout).expect("render --check -o json");
            assert_eq!(json["stale"], serde_json::json!([]), "{context}");
        }
        if command.starts_with("diff") {
            assert!(observed.stdout.contains("no differences"), "{context}");
        }
    }
}

/// Renders with the defaults, which fills the cache.
fn render_fast(dir: &Path) {
    let (code, _, stderr) = aiml(dir, &["render"], Way::Fast);
    assert_eq!(code, 0, "{stderr}");
    assert!(dir.join(".aiml/cache").is_dir(), "no cache written");
}

#[test]
fn a_clean_clone_has_nothing_to_change_either_way() {
    let origin = origin();
    let observed = both_ways(origin.path(), &|_| {});
    assert_nothing_changes(origin.path(), &observed);
}

#[test]
fn a_warm_cache_changes_nothing_either_way() {
    let origin = origin();
    let observed = both_ways(origin.path(), &|dir| {
        render_fast(dir);
    });
    assert_nothing_changes(origin.path(), &observed);
}

#[test]
fn a_cold_cache_changes_nothing_either_way() {
    let origin = origin();
    let observed = both_ways(origin.path(), &|dir| {
        render_fast(dir);
        std::fs::remove_dir_all(dir.join(".aiml/cache")).expect("remove the cache");
    });
    assert_nothing_changes(origin.path(), &observed);
}

/// Edits a blueprint that another blueprint references: the edit changes both outputs.
fn edit(dir: &Path) {
    let file = dir.join("blueprints/sax-llama2-70b-v5e-16.yaml");
    let text = std::fs::read_to_string(&file).expect("read");
    assert!(text.contains("spec:\n"), "{}", file.display());
    std::fs::write(
        &file,
        text.replacen("spec:\n", "spec:\n  namespace: serving\n", 1),
    )
    .expect("write");
}

#[test]
fn an_edit_is_seen_the_same_way_either_way() {
    let origin = origin();
    // With a warm cache, then the edit.
    let observed = both_ways(origin.path(), &|dir| {
        render_fast(dir);
        edit(dir);
    });
    let committed = files(origin.path());
    let by_command: BTreeMap<&str, &Observed> = observed
        .iter()
        .map(|(command, observed, _)| (command.as_str(), observed))
        .collect();
    let render = by_command["render"];
    assert_eq!(render.code, 0);
    let changed: Vec<&String> = render
        .files
        .keys()
        .filter(|path| render.files.get(*path) != committed.get(*path))
        .collect();
    for blueprint in ["sax-llama2-70b-v5e-16", "locust-bench"] {
        assert!(
            changed
                .iter()
                .any(|path| path.starts_with(&format!("rendered/{blueprint}/"))),
            "the edit changed no file of {blueprint}: {changed:?}"
        );
    }

    let check = by_command["-o json render --check"];
    assert_eq!(check.code, 1, "{check:?}");
    let json: serde_json::Value = serde_json::from_str(&check.stdout).expect("json");
    let stale = json["stale"].as_array().expect("stale is a list");
    assert!(
        stale.iter().any(|entry| entry["path"]
            .as_str()
            .is_some_and(|p| p.starts_with("rendered/sax-llama2-70b-v5e-16/"))),
        "{json:#}"
    );
    assert_eq!(check.files, committed, "render --check wrote files");

    let commit = by_command["render --commit -m fast or slow"];
    assert_eq!(commit.code, 0, "{commit:?}");
    assert_ne!(
        commit.head_tree,
        git(origin.path(), &["rev-parse", "HEAD^{tree}"]),
        "nothing committed"
    );
    assert_eq!(commit.status, "", "the commit left changes behind");
    assert_eq!(commit.files, render.files, "commit and render differ");

    // The working tree's rendered/ is still the committed one; a fresh render is not.
    assert_eq!(by_command["diff --exit-code"].code, 0);
    let fresh = by_command["diff --render --exit-code"];
    assert_eq!(fresh.code, 1, "{fresh:?}");
    assert!(
        fresh.stdout.contains("sax-llama2-70b-v5e-16"),
        "{}",
        fresh.stdout
    );
}

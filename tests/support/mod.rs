//! What the integration tests share: a temporary repository and a run of the binary.

#![allow(dead_code, reason = "each test crate uses a part of this module")]

use std::collections::BTreeMap;
use std::path::Path;

mod git;
mod process;
mod rules;
mod run;

#[allow(unused_imports, reason = "each test crate uses a part of these")]
pub use {
    git::commit_all,
    process::{kill, require, succeed, wait_for_file, write_script},
    rules::{also_allowed, example_fails_with, policy_of, rule_of},
    run::{Run, aiml_command, aiml_with_kubeconfig, aiml_with_stdin},
};

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

/// This repository and each example repository with rendered output, sorted.
pub fn repositories_with_output() -> Vec<std::path::PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut repositories = vec![root.to_path_buf()];
    for entry in std::fs::read_dir(root.join("examples")).expect("examples") {
        let path = entry.expect("entry").path();
        if path.join("rendered").is_dir() {
            repositories.push(path);
        }
    }
    repositories.sort();
    repositories
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

/// Copies the folder `from` to `to`, whole.
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir").flatten() {
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

/// Copies this repository's blueprints, settings and committed output (`overlays/`,
/// `rendered/`) into `to`: a GitOps repository as a user's clone holds it.
pub fn copy_this_repository(to: &Path) {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for folder in ["blueprints", "overlays", "rendered"] {
        copy_dir(&root.join(folder), &to.join(folder));
    }
    std::fs::copy(root.join("aiml.yaml"), to.join("aiml.yaml")).expect("copy aiml.yaml");
}

/// The one file in `folder` whose name starts with `prefix`: runs (Jobs, JobSets) carry a
/// content hash in their name, so tests find them by the part before it.
#[track_caller]
pub fn rendered_run(folder: &Path, prefix: &str) -> std::path::PathBuf {
    let found: Vec<std::path::PathBuf> = std::fs::read_dir(folder)
        .unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
        .map(|entry| entry.expect("entry").path())
        .filter(|path| {
            path.file_name()
                .is_some_and(|name| name.to_string_lossy().starts_with(prefix))
        })
        .collect();
    assert_eq!(
        found.len(),
        1,
        "one {prefix}* in {}: {found:?}",
        folder.display()
    );
    found.into_iter().next().expect("one")
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

//! The in-process build prints exactly what the pinned standalone kustomize prints.
//!
//! The reference is `kustomize` v5.5.0 as `scripts/install-test-deps` builds it from the Go
//! module proxy (found on PATH, or at `AIML_REFERENCE_KUSTOMIZE`); these tests fail rather
//! than skip without it, so CI cannot pass by comparing nothing.

use std::path::{Path, PathBuf};
use std::process::Command;

use aiml::kustomize::inproc;

mod support;
use support::TestRepo;

const PINNED: &str = "v5.5.0";

fn reference() -> PathBuf {
    let program = std::env::var_os("AIML_REFERENCE_KUSTOMIZE")
        .map(PathBuf::from)
        .or_else(|| which("kustomize"))
        .expect("the pinned standalone kustomize (scripts/install-test-deps builds it)");
    let version = Command::new(&program).arg("version").output().unwrap();
    let version = String::from_utf8_lossy(&version.stdout);
    assert!(
        version.trim() == PINNED || version.contains(&format!("kustomize/{PINNED}")),
        "{} is kustomize {version:?}, the reference is {PINNED}",
        program.display()
    );
    program
}

fn which(name: &str) -> Option<PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
}

fn kustomize_build(program: &Path, dir: &Path) -> Result<String, String> {
    let output = Command::new(program)
        .arg("build")
        .arg(dir)
        .output()
        .unwrap();
    if output.status.success() {
        Ok(String::from_utf8(output.stdout).unwrap())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

fn overlay_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = walk(root)
        .into_iter()
        .filter(|p| p.file_name().is_some_and(|n| n == "kustomization.yaml"))
        .map(|p| p.parent().unwrap().to_path_buf())
        .collect();
    dirs.sort();
    dirs
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}

/// Every overlay the repository ships builds in process, to kustomize's bytes.
#[test]
fn shipped_overlays_build_in_process_exactly_as_kustomize_does() {
    let kustomize = reference();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut dirs = overlay_dirs(&root.join("overlays"));
    for example in std::fs::read_dir(root.join("examples")).unwrap() {
        let overlays = example.unwrap().path().join("overlays");
        if overlays.is_dir() {
            dirs.extend(overlay_dirs(&overlays));
        }
    }
    // Every shipped blueprint has its committed overlays here (`committed_output_is_up_to_date`
    // in tests/cli.rs checks their content); one without would be compared with nothing.
    let shipped = support::shipped_blueprints();
    let missing: Vec<String> = shipped
        .iter()
        .filter(|b| {
            !dirs
                .iter()
                .any(|d| d.starts_with(root.join("overlays").join(&b.name)))
        })
        .map(|b| format!("{} ({}): no overlays/{}/", b.name, b.file, b.name))
        .collect();
    assert!(
        missing.is_empty(),
        "shipped blueprints without committed overlays (run `cargo run -- render` and commit):\n{}",
        missing.join("\n")
    );
    for dir in dirs {
        let expected = kustomize_build(&kustomize, &dir).unwrap();
        let built = inproc::build(&dir, u64::MAX).unwrap_or_else(|why| {
            panic!("{} is outside the in-process subset: {why}", dir.display())
        });
        if built != expected {
            let diff = similar::TextDiff::from_lines(&expected, &built);
            panic!(
                "{}: in-process output differs from kustomize:\n{}",
                dir.display(),
                diff.unified_diff().header("kustomize", "in-process")
            );
        }
    }
}

/// A fleet of every shipped kind, renamed into several projects, renders to the same bytes
/// in process as with the binary building every overlay.
#[test]
fn a_fleet_renders_identically_in_process_and_with_the_binary() {
    let shipped = support::shipped_blueprints();
    let fleet = |repo: &TestRepo| {
        for copy in 0..3 {
            for blueprint in &shipped {
                let mut text = blueprint
                    .text
                    .replace("my-project", &format!("fleet-project-{copy}"));
                for other in &shipped {
                    text = text.replace(other.name.as_str(), &format!("{}-{copy}", other.name));
                }
                let stem = blueprint.file.trim_start_matches("blueprints/");
                repo.write(&format!("blueprints/{copy}/{stem}"), &text);
            }
        }
    };
    let in_process = TestRepo::empty();
    fleet(&in_process);
    let binary = TestRepo::empty();
    fleet(&binary);
    // A binary that fails: the in-process run must not need it for any overlay.
    let refuse = in_process.path().join("no-kustomize");
    support::write_script(
        &refuse,
        "#!/bin/sh\necho 'the binary was called' >&2\nexit 1\n",
    );
    let run = in_process.aiml_with_env(&["render"], &[("AIML_KUSTOMIZE", refuse.as_os_str())]);
    run.expect_code(0);
    let run = binary.aiml(&["render", "--kustomize=binary", "--no-cache"]);
    run.expect_code(0);
    let (a, b) = (in_process.generated(), binary.generated());
    // Each copy of each shipped blueprint rendered something.
    for copy in 0..3 {
        for blueprint in &shipped {
            let folder = format!("rendered/{}-{copy}/", blueprint.name);
            assert!(
                a.keys().any(|path| path.starts_with(&folder)),
                "{} (copy {copy} of {}) rendered nothing in process",
                blueprint.name,
                blueprint.file
            );
        }
    }
    support::assert_same_files(("the in-process render", &a), ("the binary's render", &b));
}

mod generated {
    //! Property test: random objects, written in the YAML styles the tool's templates use,
    //! build in process to the reference kustomize's bytes, or are left to the binary.

    use super::*;
    use proptest::prelude::*;
    use std::cell::Cell;

    /// Text chosen to hit go-yaml's quoting, folding and escaping decisions.
    fn text() -> impl Strategy<Value = String> {
        let pieces = prop::sample::select(vec![
            "a",
            "b",
            "yes",
            "on",
            "true",
            "null",
            "~",
            "1",
            "0",
            "07",
            "1.5",
            "1e3",
            "0x1F",
            "1:20",
            "2024-01-01",
            "2025-01-04T01:00:00Z",
            "2025-02-29T01:00:00Z",
            "-",
            "--flag=x",
            " ",
            "  ",
            ": ",
            ":",
            "#",
            " #",
            "'",
            "\"",
            "\\",
            "\n",
            "\n\n",
            "\t",
            "é",
            "\u{1F600}",
            "\u{7}",
            "{",
            "[",
            ",",
            "*",
            "&",
            "!",
            "%",
            "@",
            "`",
            "?",
            "|",
            ">",
            "word",
            "longer words here",
            ".",
            "...",
            "---",
            "Gi",
            "/",
            "=",
            "$(VAR)",
            "${VAR}",
        ]);
        prop::collection::vec(pieces, 0..12).prop_map(|p| p.concat())
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-zA-Z][a-zA-Z0-9._/-]{0,12}",
            "[a-z]{1,3}[0-9]{1,3}",
            "[0-9]{1,3}",
            "_[a-z]{1,4}",
            text().prop_filter("non-empty", |s| !s.is_empty()),
        ]
    }

    #[derive(Clone, Debug)]
    enum V {
        Str(String),
        Int(i64),
        Float(f64),
        Bool(bool),
        Null,
        Seq(Vec<V>),
        Map(Vec<(String, V)>),
    }

    fn value() -> impl Strategy<Value = V> {
        let leaf = prop_oneof![
            4 => text().prop_map(V::Str),
            1 => any::<i64>().prop_map(V::Int),
            1 => (-100_000i32..100_000, 1u32..1000).prop_map(|(a, b)| V::Float(f64::from(a) + f64::from(b) / 1000.0)),
            1 => any::<bool>().prop_map(V::Bool),
            1 => Just(V::Null),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(V::Seq),
                prop::collection::vec((key(), inner), 0..4).prop_map(V::Map),
            ]
        })
    }

    /// JSON text for the value: a YAML flow collection with double-quoted strings.
    fn json(v: &V) -> String {
        match v {
            V::Str(s) => serde_json::to_string(s).unwrap(),
            V::Int(i) => i.to_string(),
            V::Float(f) => format!("{f:?}"),
            V::Bool(b) => b.to_string(),
            V::Null => "null".into(),
            V::Seq(items) => format!(
                "[{}]",
                items.iter().map(json).collect::<Vec<_>>().join(", ")
            ),
            V::Map(entries) => format!(
                "{{{}}}",
                entries
                    .iter()
                    .map(|(k, v)| format!("{}: {}", serde_json::to_string(k).unwrap(), json(v)))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        }
    }

    fn object(i: usize, namespaced: bool, data: &V) -> String {
        let namespace = if namespaced {
            "\n  namespace: \"ns\""
        } else {
            ""
        };
        format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"cm-{i}\"{namespace}\n  labels: {{\"app\": \"x\"}}\ndata: {}\n",
            json(data)
        )
    }

    fn overlay(data: &[(V, bool)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let resources: Vec<String> = data
            .iter()
            .enumerate()
            .map(|(i, (v, namespaced))| object(i, *namespaced, v))
            .collect();
        std::fs::write(dir.path().join("resources.yaml"), resources.join("---\n")).unwrap();
        std::fs::write(
            dir.path().join("kustomization.yaml"),
            "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nlabels:\n- pairs:\n    app.kubernetes.io/managed-by: kubectl-aiml\n    app.kubernetes.io/instance: \"x\"\n  includeSelectors: false\nresources:\n- \"resources.yaml\"\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn random_objects_build_in_process_exactly_as_kustomize_does() {
        let kustomize = reference();
        let built = Cell::new(0_u32);
        let fallbacks = std::cell::RefCell::new(std::collections::BTreeMap::<String, u32>::new());
        let cases = std::env::var("INPROC_CASES")
            .ok()
            .and_then(|c| c.parse().ok())
            .unwrap_or(96);
        let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
            cases,
            ..ProptestConfig::default()
        });
        runner
            .run(
                &prop::collection::vec((value(), any::<bool>()), 1..4),
                |data| {
                    let dir = overlay(&data);
                    match inproc::build(dir.path(), u64::MAX) {
                        Ok(output) => {
                            built.set(built.get() + 1);
                            prop_assert_eq!(Ok(output), kustomize_build(&kustomize, dir.path()));
                        }
                        Err(why) => {
                            *fallbacks.borrow_mut().entry(why.to_string()).or_default() += 1
                        }
                    }
                    Ok(())
                },
            )
            .unwrap();
        // The subset must be most of what the generator makes, or this test compares nothing.
        assert!(
            built.get() * 2 >= cases,
            "only {} of {cases} cases built in process; fallbacks: {fallbacks:?}",
            built.get()
        );
    }
}

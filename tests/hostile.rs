//! A cloned repository is untrusted input, `.aiml/` included: state files, links, names that
//! only differ by case, output folders the system refuses, interruptions. Each test is a
//! hostile repository (or environment) that changed something outside the repository, lost
//! data or left litter before the protection it tests.

mod support;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use support::{EXAMPLE, TestRepo};

const NAME: &str = "multislice-v4-32-training";

/// A folder outside the repository holding `keep.txt`, and everything in it.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dir")).unwrap();
        std::fs::write(dir.path().join("dir/keep.txt"), "keep\n").unwrap();
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Every path under it, for "nothing changed out here".
    fn listing(&self) -> Vec<String> {
        let mut all: Vec<String> = walk(self.path());
        all.sort();
        all
    }
}

/// Every path under `dir`, links listed but not followed.
fn walk(dir: &Path) -> Vec<String> {
    walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .map(|entry| entry.unwrap().path().display().to_string())
        .collect()
}

/// `to` as seen from `from`, through `..` (both canonical folders).
fn relative(from: &Path, to: &Path) -> String {
    let (from, to) = (from.canonicalize().unwrap(), to.canonicalize().unwrap());
    let common = from
        .ancestors()
        .find(|a| to.starts_with(a))
        .unwrap()
        .to_path_buf();
    let ups = from.strip_prefix(&common).unwrap().components().count();
    let down = to.strip_prefix(&common).unwrap();
    format!("{}{}", "../".repeat(ups), down.display())
}

fn rendered_repo() -> TestRepo {
    let repo = TestRepo::new();
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    repo
}

/// A committed `.aiml/journal.json` is not a way to delete or move folders: one that names
/// anything but `overlays/<name>` or `rendered/<name>`, or is not in the tool's format, stops
/// the render before anything moves, and stays for the user to look at.
#[test]
fn a_hostile_journal_changes_nothing() {
    let repo = rendered_repo();
    let outside = Outside::new();
    let before = repo.generated();
    let listing = outside.listing();
    let swap = |target: &str| {
        format!(
            r#"{{"swaps":[{{"target":{},"existed":false,"replaced":true}}],"committed":false}}"#,
            serde_json::to_string(target).unwrap()
        )
    };
    let escaping = format!("{}/dir", relative(repo.path(), outside.path()));
    let absolute = outside.path().join("dir").display().to_string();
    for journal in [
        swap(&escaping),
        swap(&absolute),
        swap(&format!("overlays/../{escaping}")),
        swap("blueprints"),
        // Not the tool's format: a field it never writes.
        r#"{"swaps":[],"committed":false,"by":"someone"}"#.to_string(),
        "[1, 2]".to_string(),
    ] {
        repo.write(".aiml/journal.json", &journal);
        let run = repo.aiml(&["render"]).about(&journal);
        run.expect_code(2)
            .stderr_has("`.aiml/journal.json` is not a journal kubectl-aiml writes")
            .stderr_has("nothing was changed");
        assert_eq!(outside.listing(), listing, "{journal}: outside changed");
        assert_eq!(repo.generated(), before, "{journal}: output changed");
        assert!(repo.path().join("blueprints").is_dir(), "{journal}");
        assert!(
            repo.path().join(".aiml/journal.json").exists(),
            "{journal}: the journal is evidence; it stays"
        );
    }
}

/// Links in `.aiml/` where the tool keeps its lock, journal, ignore file, staging, backups
/// and cache: refused by name, never written, read or removed through.
#[test]
fn state_entries_that_are_links_are_refused_and_never_followed() {
    for entry in [
        ".aiml/lock",
        ".aiml/journal.json.tmp",
        ".aiml/.gitignore",
        ".aiml/journal.json",
        ".aiml/staging",
        ".aiml/previous",
        ".aiml/cache",
        ".aiml",
    ] {
        for dangling in [true, false] {
            let repo = TestRepo::new();
            let outside = Outside::new();
            let target = if dangling {
                outside.path().join("created-through-the-link")
            } else {
                outside.path().join("dir")
            };
            std::fs::create_dir_all(repo.path().join(".aiml")).unwrap();
            if entry == ".aiml" {
                std::fs::remove_dir(repo.path().join(".aiml")).unwrap();
            }
            std::os::unix::fs::symlink(&target, repo.path().join(entry)).unwrap();
            let listing = outside.listing();
            let case = format!("{entry} -> {}", target.display());
            let run = repo.aiml(&["render"]).about(&case);
            run.expect_code(2)
                .stderr_has(&format!("`{entry}` is a symbolic link"));
            assert_eq!(outside.listing(), listing, "{case}: outside changed");
            assert!(repo.generated().is_empty(), "{case}: output written");
        }
    }
}

/// Blueprints, their folders and `aiml.yaml` are read only from inside the repository, like
/// Jsonnet imports: a link that leads out is refused, a link within it is fine.
#[test]
fn inputs_linked_from_outside_the_repository_are_refused() {
    let outside = Outside::new();
    let elsewhere = EXAMPLE.replace(&format!("name: {NAME}\n"), "name: from-outside\n");
    std::fs::write(outside.path().join("dir/blueprint.yaml"), &elsewhere).unwrap();
    std::fs::write(outside.path().join("aiml.yaml"), "git:\n  branch: main\n").unwrap();
    for (link, target, shown) in [
        (
            "blueprints/outside.yaml",
            outside.path().join("dir/blueprint.yaml"),
            "blueprints/outside.yaml",
        ),
        (
            "blueprints/team",
            outside.path().join("dir"),
            "blueprints/team/blueprint.yaml",
        ),
        ("aiml.yaml", outside.path().join("aiml.yaml"), "aiml.yaml"),
    ] {
        let repo = TestRepo::new();
        std::os::unix::fs::symlink(&target, repo.path().join(link)).unwrap();
        for args in [&["render"][..], &["validate"]] {
            let run = repo.aiml(args).about(link);
            run.expect_code(2).stderr_has(&format!(
                "`{shown}` leads outside the repository through a symbolic link"
            ));
            assert!(repo.generated().is_empty(), "{link}: output written");
        }
    }
    // Within the repository, a link is only another name.
    let repo = TestRepo::new();
    repo.write("shared/blueprint.yaml", &elsewhere);
    std::os::unix::fs::symlink(
        "../shared/blueprint.yaml",
        repo.path().join("blueprints/b.yaml"),
    )
    .unwrap();
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    assert!(repo.path().join("rendered/from-outside").is_dir());
}

/// A cache entry vouches only for files this machine wrote: one that came with the clone
/// (its key is a hash of public inputs, its result anything) never makes a render skip work
/// or `render --check` pass over output a render would change.
#[test]
fn a_forged_cache_entry_never_vouches_for_output() {
    let repo = rendered_repo();
    let folder = repo.path().join("rendered").join(NAME);
    let marker_path = folder.join(".aiml-generated");
    let marker = std::fs::read_to_string(&marker_path).unwrap();
    let (blob, file) = marker
        .lines()
        .find(|line| line.contains("jobset"))
        .and_then(|line| line.split_once("  "))
        .unwrap();
    let original = std::fs::read(folder.join(file)).unwrap();
    let mut forged = original.clone();
    forged.extend_from_slice(b"# injected: not what the blueprint renders\n");
    let forged_blob = aiml::workspace::blob_id(&forged).unwrap();
    let forged_marker = marker.replace(blob, &forged_blob);
    // What the hostile clone carries: output, marker and cache entry that agree.
    std::fs::write(folder.join(file), &forged).unwrap();
    std::fs::write(&marker_path, &forged_marker).unwrap();
    let entry_path = repo.path().join(format!(".aiml/cache/{NAME}.json"));
    let mut entry: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&entry_path).unwrap()).unwrap();
    entry["markers"][format!("rendered/{NAME}")] = forged_marker.into();
    std::fs::write(&entry_path, entry.to_string()).unwrap();

    let check = repo.aiml(&["render", "--check"]);
    check
        .expect_code(1)
        .stderr_has(&format!("would change rendered/{NAME}/{file}"));
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    assert_eq!(std::fs::read(folder.join(file)).unwrap(), original);
}

/// What a case-insensitive file system (macOS) would fold into one is refused by name:
/// blueprint files, their folders, Jsonnet files, kind folders.
#[test]
fn names_that_differ_only_by_case_are_refused() {
    let other =
        |name: &str| EXAMPLE.replace(&format!("name: {NAME}\n"), &format!("name: {name}\n"));
    for (files, first, second) in [
        (
            vec![("blueprints/Training.yaml", other("b"))],
            "blueprints/Training.yaml",
            "blueprints/training.yaml",
        ),
        (
            vec![
                ("blueprints/Team/a.yaml", other("a")),
                ("blueprints/team/b.yaml", other("b")),
            ],
            "blueprints/Team",
            "blueprints/team",
        ),
        (
            vec![
                ("blueprints/lib/Common.libsonnet", "{}".to_string()),
                ("blueprints/lib/common.libsonnet", "{}".to_string()),
            ],
            "blueprints/lib/Common.libsonnet",
            "blueprints/lib/common.libsonnet",
        ),
        (
            vec![
                ("kinds/Model/kind.yaml", "x: 1\n".to_string()),
                ("kinds/MODEL/kind.yaml", "x: 1\n".to_string()),
            ],
            "kinds/MODEL",
            "kinds/Model",
        ),
    ] {
        let repo = TestRepo::new();
        if first == "blueprints/Training.yaml" {
            std::fs::rename(
                repo.path().join(format!("blueprints/{NAME}.yaml")),
                repo.path().join("blueprints/training.yaml"),
            )
            .unwrap();
        }
        for (path, text) in &files {
            repo.write(path, text);
        }
        for args in [&["render"][..], &["validate"]] {
            let run = repo.aiml(args).about(first);
            run.expect_code(2)
                .stderr_has(&format!("`{first}` and `{second}` differ only by case"));
            assert!(repo.generated().is_empty(), "{first}: output written");
        }
    }
}

/// Removes the immutable attribute again, so that the test's folders can be deleted.
struct Immutable(PathBuf);

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.0).status();
        let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
    }
}

/// Makes `dir` unwritable: immutable (`chattr +i`, which stops root too) or, where that is
/// not available, read-only for a user who is not root. Panics when neither holds (a test
/// that cannot make its case is a failure, not a pass; the mapping of each error is also
/// covered by the `workspace` unit tests).
fn make_unwritable(dir: &Path) -> Immutable {
    let guard = Immutable(dir.to_path_buf());
    let immutable = Command::new("chattr")
        .arg("+i")
        .arg(dir)
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !immutable {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    }
    let probe = dir.join("probe");
    let writable = std::fs::write(&probe, "").is_ok();
    let _ = std::fs::remove_file(&probe);
    assert!(
        !writable,
        "cannot make `{}` unwritable here (no `chattr +i`, and root ignores permissions)",
        dir.display()
    );
    guard
}

#[test]
fn an_unwritable_output_folder_is_named_with_the_cause() {
    let repo = rendered_repo();
    repo.write(
        &format!("blueprints/{NAME}.yaml"),
        &EXAMPLE.replace("slices: 2", "slices: 3"),
    );
    let before = repo.generated();
    let _guard = make_unwritable(&repo.path().join("rendered"));
    let run = repo.aiml(&["render"]);
    run.expect_code(2)
        .stderr_has(&format!("could not replace `rendered/{NAME}`"));
    assert!(
        run.stderr.contains("immutable") || run.stderr.contains("not writable by this user"),
        "{}",
        run.stderr
    );
    run.stderr_has("nothing was changed")
        .stderr_lacks(".aiml/staging");
    assert_eq!(repo.generated(), before);
}

/// Ctrl-C, `kill` or a CI timeout in the middle of a run: its temporary folders go, and the
/// exit code is the shell's convention for the signal.
#[test]
fn an_interrupted_run_removes_its_temporary_folders() {
    let repo = TestRepo::new();
    let tmp = tempfile::tempdir().unwrap();
    let bin = tempfile::tempdir().unwrap();
    let started = bin.path().join("started");
    let fake = bin.path().join("kustomize");
    support::write_script(
        &fake,
        &format!(
            "#!/bin/sh\ncase \"$1\" in version) echo v5.5.0 ;; *) touch '{}'; exec sleep 20 ;; esac\n",
            started.display()
        ),
    );
    for (args, signal, code) in [
        (&["validate"][..], "TERM", 143),
        (&["validate"][..], "INT", 130),
        (&["render", "--check"][..], "TERM", 143),
        (&["render", "--check"][..], "HUP", 129),
    ] {
        let _ = std::fs::remove_file(&started);
        let mut child = support::aiml_command(repo.path())
            .args(args)
            .arg("--kustomize=binary")
            .env("AIML_KUSTOMIZE", &fake)
            .env("TMPDIR", tmp.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        support::wait_for_file(&started, Duration::from_secs(30));
        assert!(
            !walk(tmp.path()).is_empty(),
            "{args:?}: no temporary folder to clean up"
        );
        support::kill(&child, signal);
        let exit = child.wait().unwrap();
        assert_eq!(exit.code(), Some(code), "{args:?} {signal}: {exit:?}");
        assert_eq!(
            walk(tmp.path()),
            Vec::<String>::new(),
            "{args:?} {signal}: left in the temporary folder"
        );
    }
}

use super::swap::{Journal, Swap};
use super::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::repo::{OVERLAYS_DIR, RENDERED_DIR};

#[test]
fn a_folder_is_current_only_with_exactly_its_files_and_marker() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("_sync");
    let files = [("a/one.yaml", &b"one\n"[..]), ("two.yaml", &b"two\n"[..])];
    let current = || folder_is_current(&folder, "aiml.yaml", files).unwrap();
    assert!(!current(), "a missing folder is not current");
    write_folder(&folder, "aiml.yaml", files).unwrap();
    assert!(current());
    write(&folder.join("two.yaml"), "edited\n");
    assert!(!current(), "an edited file");
    write_folder(&folder, "aiml.yaml", files).unwrap();
    write(&folder.join("extra.yaml"), "x\n");
    assert!(!current(), "a file the marker does not list");
    fs_err::remove_file(folder.join("extra.yaml")).unwrap();
    assert!(current());
    assert!(
        !folder_is_current(&folder, "other.yaml", files).unwrap(),
        "a marker written for another source"
    );
    fs_err::remove_file(folder.join(MARKER)).unwrap();
    assert!(!current(), "no marker");
}

fn write(path: &Path, text: &str) {
    fs_err::create_dir_all(path.parent().unwrap()).unwrap();
    fs_err::write(path, text).unwrap();
}

/// Commits a full render of what is staged, moving folders with `rename`.
fn commit_all(
    workspace: &Workspace,
    rename: &mut dyn FnMut(&Path, &Path) -> std::io::Result<()>,
) -> Result<Comparison, WriteError> {
    workspace.commit_with(&[], &BTreeSet::new(), true, HandEdits::Refuse, rename)
}

/// Stages the generated folder `folder` (`overlays/<name>`) holding one file.
fn stage_file(workspace: &Workspace, folder: &str, source: &str, file: &str, content: &str) {
    let staged = workspace.staging().join(folder);
    write_folder(&staged, source, [(file, content.as_bytes())]).unwrap();
}

/// Stages `content` for blueprints `a` and `b` (and `b` only when `with_b`).
fn stage(workspace: &Workspace, content: &str, with_b: bool) {
    for name in ["a", "b"].into_iter().filter(|n| with_b || *n == "a") {
        for top in [OVERLAYS_DIR, RENDERED_DIR] {
            let file = format!("{content}\n");
            let folder = format!("{top}/{name}");
            stage_file(workspace, &folder, "blueprints/x.yaml", "f.yaml", &file);
        }
    }
}

/// Renders `content` for `a` (and `b` when `with_b`) into the repository at `root`.
fn render(root: &Path, content: &str, with_b: bool) -> Result<Comparison, WriteError> {
    let workspace = Workspace::open(root, Duration::from_secs(1)).unwrap();
    stage(&workspace, content, with_b);
    workspace.commit(&[], &BTreeSet::new(), true, HandEdits::Refuse)
}

/// A repository rendered once with `old` content for `a` and `b`.
fn repository() -> tempfile::TempDir {
    let root = tempfile::tempdir().unwrap();
    render(root.path(), "old", true).unwrap();
    root
}

fn tree(root: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut all = BTreeMap::new();
    for top in [OVERLAYS_DIR, RENDERED_DIR] {
        for (path, content) in crate::render::read_tree(&root.join(top)).unwrap() {
            all.insert(format!("{top}/{path}"), content);
        }
    }
    all
}

#[test]
fn a_failed_swap_puts_every_folder_back() {
    for fail_at in 1..=7 {
        let root = repository();
        let before = tree(root.path());
        let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
        stage(&workspace, "new", true);
        let mut calls = 0;
        let result = commit_all(&workspace, &mut |from, to| {
            calls += 1;
            if calls == fail_at {
                return Err(std::io::Error::other("disk full"));
            }
            fs_err::rename(from, to)
        });
        assert!(result.is_err(), "rename {fail_at} should fail the commit");
        assert_eq!(tree(root.path()), before, "rename {fail_at} failed");
    }
}

/// kill -9 at every point of the swap: the next run rolls back to the old tree (or, once
/// the swap is committed, keeps the new one), and leaves no staging, backup or journal.
#[test]
fn a_crash_during_the_swap_is_recovered_by_the_next_run() {
    for crash_at in 1..=8 {
        let root = repository();
        let before = tree(root.path());
        let mut workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
        // `b` is removed by this render: its folders go to the backup and are not replaced.
        stage(&workspace, "new", false);
        let mut calls = 0;
        let crashed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            commit_all(&workspace, &mut |from, to| {
                calls += 1;
                assert!(calls != crash_at, "simulated crash");
                fs_err::rename(from, to)
            })
        }))
        .is_err();
        workspace.crashed = true;
        drop(workspace);
        let after_crash = tree(root.path());
        let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
        let recovered = tree(root.path());
        if crashed {
            assert!(
                workspace.recovered.is_some(),
                "crash at {crash_at}: no recovery"
            );
            assert_eq!(recovered, before, "crash at {crash_at}: not rolled back");
        } else {
            assert_eq!(recovered, after_crash, "rename {crash_at} never happened");
        }
        let state = root.path().join(STATE_DIR);
        assert!(!state.join(JOURNAL_FILE).exists());
        assert!(!state.join(BACKUP_DIR).exists());
        drop(workspace);
        assert!(!state.join(STAGING_DIR).exists());
    }
}

#[test]
fn a_committed_swap_is_finished_by_the_next_run() {
    let root = repository();
    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    // What a run leaves when killed after its last rename, before cleaning up.
    let backup = workspace.backups().join("0");
    write(&backup.join("f.yaml"), "old\n");
    workspace
        .write_journal(&Journal {
            swaps: vec![Swap {
                target: "overlays/a".into(),
                existed: true,
                replaced: true,
            }],
            committed: true,
        })
        .unwrap();
    drop(workspace);
    let before = tree(root.path());
    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    assert!(workspace.recovered.as_deref().unwrap().contains("finished"));
    assert_eq!(tree(root.path()), before);
    assert!(!workspace.backups().exists());
}

#[test]
fn foreign_entries_are_kept_and_never_overwritten() {
    let root = repository();
    // Hand-made things: a folder without marker, and a file in a generated folder.
    write(&root.path().join("rendered/hand-made/x.yaml"), "mine\n");
    write(&root.path().join("rendered/a/NOTES.md"), "notes\n");
    let comparison = render(root.path(), "new", false).unwrap();
    assert_eq!(
        comparison.foreign,
        ["rendered/a/NOTES.md", "rendered/hand-made"]
    );
    let files = tree(root.path());
    assert_eq!(files["rendered/hand-made/x.yaml"], b"mine\n");
    assert_eq!(files["rendered/a/NOTES.md"], b"notes\n");
    assert_eq!(files["rendered/a/f.yaml"], b"new\n");
    assert!(
        !files.contains_key("rendered/b/f.yaml"),
        "b was generated: removed"
    );

    // A render that would write over a foreign folder stops before writing.
    write(&root.path().join("overlays/c/kustomization.yaml"), "mine\n");
    let before = tree(root.path());
    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    stage_file(
        &workspace,
        "overlays/c",
        "blueprints/c.yaml",
        "kustomization.yaml",
        "x",
    );
    let error = workspace
        .commit(&["c".into()], &BTreeSet::new(), false, HandEdits::Refuse)
        .unwrap_err();
    assert!(matches!(error, WriteError::Foreign { .. }), "{error}");
    assert_eq!(tree(root.path()), before);
}

/// The marker records what was written as git blob ids; a file that no longer has its id
/// was edited by hand, and a render that would overwrite or delete it stops first.
#[test]
fn hand_edits_are_refused_unless_overwritten() {
    let root = repository();
    let marker = fs_err::read_to_string(root.path().join("rendered/a").join(MARKER)).unwrap();
    // `printf 'old\n' | git hash-object --stdin`
    assert!(
        marker.contains("\n3367afdbbf91e638efe983616377c60477cc6612  f.yaml\n"),
        "{marker}"
    );
    write(&root.path().join("rendered/a/f.yaml"), "edited\n");
    write(&root.path().join("overlays/b/f.yaml"), "edited\n");
    let before = tree(root.path());

    // A render that writes the file unchanged, or exactly as edited, overwrites nothing.
    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    stage(&workspace, "old", true);
    stage_file(
        &workspace,
        "overlays/b",
        "blueprints/x.yaml",
        "f.yaml",
        "edited\n",
    );
    let comparison = workspace.compare(&[], &BTreeSet::new(), true).unwrap();
    assert_eq!(comparison.hand_edited, ["rendered/a/f.yaml"]);
    drop(workspace);

    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    stage(&workspace, "new", false);
    let error = workspace
        .commit(&[], &BTreeSet::new(), true, HandEdits::Refuse)
        .unwrap_err();
    match &error {
        WriteError::HandEdited { paths } => {
            assert_eq!(paths, &["overlays/b/f.yaml", "rendered/a/f.yaml"]);
        }
        other => panic!("{other}"),
    }
    assert!(error.to_string().contains("`--force`"), "{error}");
    assert_eq!(tree(root.path()), before, "nothing is written");
    workspace
        .commit(&[], &BTreeSet::new(), true, HandEdits::Overwrite)
        .unwrap();
    let files = tree(root.path());
    assert_eq!(files["rendered/a/f.yaml"], b"new\n");
    assert!(!files.contains_key("overlays/b/f.yaml"));
}

/// Markers written before blob ids were recorded still work: their files are generated,
/// and hand edits to them cannot be told apart (never refused).
#[test]
fn markers_without_blob_ids_are_read() {
    let root = repository();
    write(
        &root.path().join("rendered/a").join(MARKER),
        &format!("{MARKER_HEADER} from blueprints/x.yaml\nf.yaml\n"),
    );
    write(&root.path().join("rendered/a/f.yaml"), "edited\n");
    let comparison = render(root.path(), "new", true).unwrap();
    assert!(comparison.foreign.is_empty(), "{:?}", comparison.foreign);
    assert_eq!(tree(root.path())["rendered/a/f.yaml"], b"new\n");
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_never_written_through() {
    let root = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    write(&outside.path().join("keep/precious.txt"), "precious\n");
    std::os::unix::fs::symlink(outside.path(), root.path().join("rendered")).unwrap();
    let error = Workspace::open(root.path(), Duration::from_secs(1)).unwrap_err();
    assert!(matches!(error, WriteError::NotAFolder { .. }), "{error}");
    assert!(outside.path().join("keep/precious.txt").exists());

    // A blueprint folder that is a link is foreign: never replaced or followed.
    fs_err::remove_file(root.path().join("rendered")).unwrap();
    fs_err::create_dir_all(root.path().join("rendered")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.path().join("rendered/a")).unwrap();
    let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    stage(&workspace, "new", false);
    let error = workspace
        .commit(&["a".into()], &BTreeSet::new(), false, HandEdits::Refuse)
        .unwrap_err();
    assert!(matches!(error, WriteError::Foreign { .. }), "{error}");
    assert!(outside.path().join("keep/precious.txt").exists());
    assert!(!outside.path().join("f.yaml").exists());
}

/// A read-only, immutable or separately mounted output folder: the error names the folder,
/// the cause and the fix, not an internal staging path, and nothing moves.
#[test]
fn a_swap_the_system_refuses_names_the_folder_the_cause_and_the_fix() {
    for (code, cause, fix) in [
        (
            libc::EPERM,
            "most likely immutable",
            "chattr -i overlays overlays/a",
        ),
        (
            libc::EXDEV,
            "different file systems",
            "mount the repository as a whole",
        ),
        (libc::EROFS, "read-only file system", "Mount it writable"),
        (libc::EACCES, "not writable by this user", "chmod u+w"),
    ] {
        let root = repository();
        let before = tree(root.path());
        let workspace = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
        stage(&workspace, "new", true);
        let error = commit_all(&workspace, &mut |_, _| {
            Err(std::io::Error::from_raw_os_error(code))
        })
        .unwrap_err();
        let text = error.to_string();
        for expected in [
            "could not replace `overlays/a`",
            cause,
            fix,
            "nothing was changed",
        ] {
            assert!(text.contains(expected), "{code}: no `{expected}` in {text}");
        }
        assert!(!text.contains("staging/overlays"), "{text}");
        assert_eq!(tree(root.path()), before);
    }
}

/// Output paths that only differ by case are one file on macOS: refused before writing.
#[test]
fn output_paths_that_differ_only_by_case_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let folder = dir.path().join("rendered/a");
    for files in [
        [
            ("workload/x/role_A.yaml", &b"1"[..]),
            ("workload/x/role_a.yaml", b"2"),
        ],
        [
            ("workload/X/role_a.yaml", b"1"),
            ("workload/x/role_b.yaml", b"2"),
        ],
        [
            ("workload/x/role_a.yaml", b"1"),
            ("workload/x/role_a.yaml", b"2"),
        ],
    ] {
        let error = write_folder(&folder, "blueprints/a.yaml", files).unwrap_err();
        let text = error.to_string();
        assert!(text.contains("rendered/a/workload/"), "{text}");
        assert!(text.contains("differ only by case"), "{text}");
        assert!(!folder.exists(), "{text}: something was written");
        assert!(folder_is_current(&folder, "blueprints/a.yaml", files).is_err());
    }
}

#[test]
fn a_second_run_waits_for_the_lock_then_gives_up_naming_the_holder() {
    let root = tempfile::tempdir().unwrap();
    let first = Workspace::open(root.path(), Duration::from_secs(1)).unwrap();
    let error = Workspace::open(root.path(), Duration::from_millis(200)).unwrap_err();
    let text = error.to_string();
    assert!(
        text.contains(&format!("pid {}", std::process::id())),
        "{text}"
    );
    drop(first);
    assert!(Workspace::open(root.path(), Duration::from_millis(200)).is_ok());
}

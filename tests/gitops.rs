//! The GitOps loop on real temporary git repositories, made with git2 and a fixed identity and
//! time: `render --commit` (first commit, commit, nothing to commit, `--branch`, hand edits,
//! a repository in a sub-folder of the work tree, no identity), `diff` (added, removed,
//! changed and renamed objects, a destructive node pool change, accelerator and cost deltas,
//! `--exit-code`, `--render`, Markdown and JSON), and the Config Sync / Argo CD wiring against
//! the schemas.

mod support;

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

use support::{EXAMPLE, Run, TestRepo};

const AUTHOR: &str = "Test Author";

/// Runs the binary in `dir` with a fixed git identity and time, isolated from the machine's
/// git configuration (`HOME`); `identity: false` runs without any identity.
fn aiml(dir: &Path, args: &[&str], identity: bool) -> Run {
    let home = dir.join("..").join(format!(
        "{}-home",
        dir.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&home).unwrap();
    let mut command = support::aiml_command(dir);
    command
        .args(args)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1");
    for variable in [
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_AUTHOR_DATE",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
        "GIT_COMMITTER_DATE",
        "EMAIL",
    ] {
        command.env_remove(variable);
    }
    if identity {
        let fixed: [(&str, OsString); 6] = [
            ("GIT_AUTHOR_NAME", AUTHOR.into()),
            ("GIT_AUTHOR_EMAIL", "author@example.com".into()),
            ("GIT_AUTHOR_DATE", "@1700000000 +0000".into()),
            ("GIT_COMMITTER_NAME", "Test Committer".into()),
            ("GIT_COMMITTER_EMAIL", "committer@example.com".into()),
            ("GIT_COMMITTER_DATE", "@1700000000 +0000".into()),
        ];
        command.envs(fixed);
    }
    Run::from_output(args, command.output().expect("run kubectl-aiml"))
}

fn signature() -> git2::Signature<'static> {
    git2::Signature::new(
        "Setup",
        "setup@example.com",
        &git2::Time::new(1_600_000_000, 0),
    )
    .unwrap()
}

/// Stages every file of the work tree (ignore rules apply) and commits it on `HEAD`.
fn commit_all(repo: &git2::Repository, message: &str) -> git2::Oid {
    support::commit_all(repo, &signature(), message)
}

fn head(repo: &git2::Repository) -> git2::Commit<'_> {
    repo.head().unwrap().peel_to_commit().unwrap()
}

/// Paths of a commit's tree, under `prefix`.
fn paths(commit: &git2::Commit<'_>, prefix: &str) -> Vec<String> {
    let mut paths = Vec::new();
    commit
        .tree()
        .unwrap()
        .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(git2::ObjectType::Blob) {
                let path = format!("{dir}{}", entry.name().unwrap());
                if path.starts_with(prefix) {
                    paths.push(path);
                }
            }
            git2::TreeWalkResult::Ok
        })
        .unwrap();
    paths
}

/// The example repository under git, its blueprint committed.
fn git_repo() -> (TestRepo, git2::Repository) {
    let repo = TestRepo::new();
    let git = git2::Repository::init(repo.path()).unwrap();
    git.set_head("refs/heads/main").unwrap();
    commit_all(&git, "Add the blueprint");
    (repo, git)
}

fn set_slices(repo: &TestRepo, slices: u32) {
    repo.write(
        "blueprints/multislice-v4-32-training.yaml",
        &EXAMPLE.replace("slices: 2", &format!("slices: {slices}")),
    );
}

#[test]
fn render_commit_makes_one_commit_of_blueprints_overlays_and_rendered_files() {
    let (repo, git) = git_repo();
    let before = head(&git).id();
    // Someone's unrelated staged work stays staged and out of the commit.
    repo.write("NOTES.md", "notes\n");
    let mut index = git.index().unwrap();
    index.add_path(Path::new("NOTES.md")).unwrap();
    index.write().unwrap();

    let run = aiml(
        repo.path(),
        &["render", "--commit", "-m", "Render the training"],
        true,
    );
    run.expect_code(0);
    let commit = head(&git);
    assert_eq!(commit.parent_id(0).unwrap(), before);
    assert_eq!(commit.author().name().unwrap(), AUTHOR);
    assert_eq!(commit.committer().email().unwrap(), "committer@example.com");
    assert_eq!(commit.time().seconds(), 1_700_000_000);
    insta::assert_snapshot!(commit.message().unwrap(), @r"
    Render the training

    Blueprints:
    - multislice-v4-32-training (added)

    Rendered by kubectl-aiml 0.1.0.
    ");
    let committed = paths(&commit, "");
    support::assert_some_path(&committed, |p| {
        p.starts_with("overlays/multislice-v4-32-training/")
    });
    support::assert_some_path(&committed, |p| {
        p.contains("/jobset.jobset.x-k8s.io_multislice-v4-32-training-")
    });
    assert!(
        !committed
            .iter()
            .any(|p| p == "NOTES.md" || p.starts_with(".aiml"))
    );
    run.stderr_has("committed ")
        .stderr_has("on `main`: Render the training");

    // The committed files are clean in `git status`; the staged note is still staged.
    let statuses = git
        .statuses(Some(
            git2::StatusOptions::new()
                .include_ignored(false)
                .include_untracked(true),
        ))
        .unwrap();
    let dirty: Vec<(String, git2::Status)> = statuses
        .iter()
        .map(|s| (s.path().unwrap().to_string(), s.status()))
        .collect();
    assert_eq!(dirty, [("NOTES.md".to_string(), git2::Status::INDEX_NEW)]);

    // Nothing changed: no commit.
    let again = aiml(repo.path(), &["render", "--commit"], true);
    again.expect_code(0).stderr_has("nothing to commit");
    assert_eq!(head(&git).id(), commit.id());

    // A changed blueprint: one commit with the blueprint and its output, listed.
    set_slices(&repo, 3);
    let third = aiml(repo.path(), &["render", "--commit"], true);
    third.expect_code(0);
    let commit = head(&git);
    assert!(
        commit
            .message()
            .unwrap()
            .starts_with("Render multislice-v4-32-training\n\nBlueprints:\n- multislice-v4-32-training (changed)\n"),
        "{}",
        commit.message().unwrap()
    );
    let tree = commit.tree().unwrap();
    assert!(tree.get_path(Path::new("rendered/multislice-v4-32-training/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_multislice-v4-32-training-tpu-slice-2.yaml")).is_ok());
}

#[test]
fn the_first_commit_of_an_empty_repository() {
    let repo = TestRepo::new();
    let git = git2::Repository::init(repo.path()).unwrap();
    git.set_head("refs/heads/trunk").unwrap();
    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(0);
    let commit = head(&git);
    assert_eq!(commit.parent_count(), 0);
    assert!(
        commit
            .message()
            .unwrap()
            .starts_with("Add blueprint multislice-v4-32-training\n")
    );
    let committed = paths(&commit, "");
    assert!(committed.contains(&"blueprints/multislice-v4-32-training.yaml".to_string()));
    support::assert_some_path(&committed, |p| p.starts_with("rendered/"));
    run.stderr_has("on `trunk`");
}

/// The real `git` in `dir`, isolated from the machine's configuration like [`aiml`]; its
/// standard output.
fn git_cli(dir: &Path, args: &[&str]) -> String {
    let home = dir.join("..").join(format!(
        "{}-home",
        dir.file_name().unwrap().to_string_lossy()
    ));
    std::fs::create_dir_all(&home).unwrap();
    let output = Command::new("git")
        .args(args)
        .current_dir(dir)
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Setup")
        .env("GIT_AUTHOR_EMAIL", "setup@example.com")
        .env("GIT_COMMITTER_NAME", "Setup")
        .env("GIT_COMMITTER_EMAIL", "setup@example.com")
        .output()
        .expect("run git");
    assert!(output.status.success(), "git {args:?}: {output:?}");
    String::from_utf8(output.stdout).unwrap()
}

fn branch_tip<'r>(git: &'r git2::Repository, name: &str) -> git2::Commit<'r> {
    git.find_branch(name, git2::BranchType::Local)
        .unwrap()
        .get()
        .peel_to_commit()
        .unwrap()
}

/// `--branch` commits on the branch and moves the checkout there, as `git switch -c` and
/// `git commit` would: nothing of the change is left uncommitted in the checkout, the branch
/// it started on is untouched, and unrelated work (staged or not) stays as it was.
#[test]
fn branch_mode_commits_on_a_branch_and_switches_the_checkout_to_it() {
    let (repo, git) = git_repo();
    assert_eq!(aiml(repo.path(), &["render", "--commit"], true).code, 0);
    let main = head(&git).id();
    repo.write("NOTES.md", "notes\n");
    git_cli(repo.path(), &["add", "NOTES.md"]);
    repo.write("scratch.txt", "scratch\n");
    set_slices(&repo, 3);
    let unrelated = "A  NOTES.md\n?? scratch.txt\n";

    let run = aiml(
        repo.path(),
        &[
            "render",
            "--commit",
            "--branch",
            "aiml/three-slices",
            "-m",
            "Three slices",
        ],
        true,
    );
    run.expect_code(0);
    run.stderr_has("on `aiml/three-slices`: Three slices")
        .stderr_has("switched to `aiml/three-slices`");
    assert_eq!(
        git_cli(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "aiml/three-slices\n"
    );
    assert_eq!(branch_tip(&git, "main").id(), main, "main is untouched");
    // Only the unrelated work shows: the change is committed, the index agrees.
    assert_eq!(git_cli(repo.path(), &["status", "--porcelain"]), unrelated);
    let branch = branch_tip(&git, "aiml/three-slices");
    assert_eq!(branch.parent_id(0).unwrap(), main);
    let changed = git_cli(
        repo.path(),
        &["diff", "--name-only", "main", "aiml/three-slices"],
    );
    assert!(
        changed.contains("blueprints/multislice-v4-32-training.yaml\n"),
        "{changed}"
    );
    assert!(changed.contains("tpu-slice-2.yaml\n"), "{changed}");
    assert!(!changed.contains("NOTES.md"), "{changed}");

    // The next plain commit goes on the review branch, never on main.
    set_slices(&repo, 4);
    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(0).stderr_has("on `aiml/three-slices`");
    assert_eq!(
        branch_tip(&git, "aiml/three-slices").parent_id(0).unwrap(),
        branch.id()
    );
    assert_eq!(branch_tip(&git, "main").id(), main);

    // Back on main, its checkout is consistent: the output matches its blueprints.
    git_cli(repo.path(), &["switch", "-q", "main"]);
    assert_eq!(git_cli(repo.path(), &["status", "--porcelain"]), unrelated);
    let check = aiml(repo.path(), &["render", "--check"], true);
    check.expect_code(0);

    // A branch that exists and differs from main outside the owned paths: switching there
    // would change files the render did not write. Refused before anything is written.
    git_cli(repo.path(), &["switch", "-q", "-c", "other"]);
    repo.write("OTHER.md", "other\n");
    git_cli(repo.path(), &["add", "OTHER.md"]);
    git_cli(
        repo.path(),
        &["commit", "-q", "-m", "Other", "--", "OTHER.md"],
    );
    git_cli(repo.path(), &["switch", "-q", "main"]);
    set_slices(&repo, 5);
    let before = repo.generated();
    let run = aiml(
        repo.path(),
        &["render", "--commit", "--branch", "other"],
        true,
    );
    run.expect_code(2);
    run.stderr_has("branch `other` differs from the checkout")
        .stderr_has("`OTHER.md`")
        .stderr_has("git switch other");
    assert!(repo.generated() == before, "nothing was written");
    assert_eq!(
        git_cli(repo.path(), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "main\n"
    );

    let bad = aiml(
        repo.path(),
        &["render", "--commit", "--branch", "bad..name"],
        true,
    );
    bad.expect_code(2);
}

/// Output that git ignores would be left out of the commit: refused before anything is
/// written, whichever file ignores it.
#[test]
fn git_ignored_output_stops_the_commit_before_anything_is_written() {
    for (file, rule) in [
        (".gitignore", "rendered/\n"),
        (".git/info/exclude", "overlays/\n"),
        // The global excludes file (`$XDG_CONFIG_HOME/git/ignore`).
        ("../{home}/git/ignore", "*.yaml\n!blueprints/**\n"),
    ] {
        let (repo, git) = git_repo();
        let before = head(&git).id();
        let home = format!(
            "{}-home",
            repo.path().file_name().unwrap().to_string_lossy()
        );
        repo.write(&file.replace("{home}", &home), rule);
        let run = aiml(repo.path(), &["render", "--commit"], true);
        assert_eq!(run.code, 2, "{file}\n{}", run.transcript());
        assert!(
            run.stderr.contains("git ignores")
                && run
                    .stderr
                    .contains("would commit blueprints without their output")
                && run.stderr.contains("nothing was written"),
            "{file}\n{}",
            run.stderr
        );
        assert!(repo.generated().is_empty(), "{file}: nothing was written");
        assert_eq!(head(&git).id(), before, "{file}");
    }
}

/// libgit2 runs no hooks: a repository that has some is told so.
#[test]
fn a_commit_says_when_the_repository_has_hooks_it_did_not_run() {
    let (repo, _git) = git_repo();
    repo.write(".git/hooks/pre-commit.sample", "#!/bin/sh\n");
    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(0).stderr_lacks("hooks");

    repo.write(".git/hooks/pre-commit", "#!/bin/sh\nexit 1\n");
    set_slices(&repo, 3);
    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(0);
    run.stderr_has(
        "note: the repository has git hooks (pre-commit), which this commit did not run",
    )
    .stderr_has("libgit2, which runs none");

    git_cli(repo.path(), &["config", "core.hooksPath", ".githooks"]);
    set_slices(&repo, 4);
    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(0)
        .stderr_has("git hooks (core.hooksPath = .githooks)");
}

#[test]
fn without_a_git_identity_nothing_is_written() {
    let (repo, git) = git_repo();
    let run = aiml(repo.path(), &["render", "--commit"], false);
    run.expect_code(2)
        .stderr_has("git config --global user.name");
    assert!(repo.generated().is_empty(), "nothing may be rendered");
    assert_eq!(head(&git).parent_count(), 0);
    // The repository's own config is enough.
    let mut config = git.config().unwrap();
    config.set_str("user.name", "Config Person").unwrap();
    config.set_str("user.email", "config@example.com").unwrap();
    let run = aiml(repo.path(), &["render", "--commit"], false);
    run.expect_code(0);
    assert_eq!(head(&git).author().name().unwrap(), "Config Person");

    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(outside.path().join("blueprints")).unwrap();
    std::fs::write(outside.path().join("blueprints/b.yaml"), EXAMPLE).unwrap();
    let run = aiml(outside.path(), &["render", "--commit"], true);
    run.expect_code(2).stderr_has("not in a git repository");
    assert!(!outside.path().join("rendered").exists());
}

#[test]
fn hand_edits_are_refused_until_forced() {
    let (repo, git) = git_repo();
    assert_eq!(aiml(repo.path(), &["render", "--commit"], true).code, 0);
    let committed = head(&git).id();
    let edited_file = "rendered/multislice-v4-32-training/workload/_cluster/clusterqueue.kueue.x-k8s.io_multislice-v4-32-training.yaml";
    let edited =
        std::fs::read_to_string(repo.path().join(edited_file)).unwrap() + "# tuned by hand\n";
    repo.write(edited_file, &edited);
    set_slices(&repo, 3);
    let before = repo.generated();

    let run = aiml(repo.path(), &["render", "--commit"], true);
    run.expect_code(2)
        .stderr_has(edited_file)
        .stderr_has("--force");
    assert_eq!(repo.generated(), before, "nothing is written");
    assert_eq!(head(&git).id(), committed, "nothing is committed");

    let run = aiml(repo.path(), &["render", "--commit", "--force"], true);
    run.expect_code(0);
    assert_ne!(head(&git).id(), committed);
    let now = std::fs::read_to_string(repo.path().join(edited_file)).unwrap();
    assert!(!now.contains("# tuned by hand"));
}

#[test]
fn a_repository_in_a_sub_folder_of_the_work_tree() {
    let outer = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(outer.path()).unwrap();
    std::fs::write(outer.path().join("README.md"), "monorepo\n").unwrap();
    commit_all(&git, "Start");
    let platform = outer.path().join("platform");
    std::fs::create_dir_all(platform.join("blueprints")).unwrap();
    std::fs::write(platform.join("blueprints/train.yaml"), EXAMPLE).unwrap();
    let run = aiml(&platform, &["render", "--commit"], true);
    run.expect_code(0);
    let committed = paths(&head(&git), "");
    assert!(committed.contains(&"platform/blueprints/train.yaml".to_string()));
    support::assert_some_path(&committed, |p| {
        p.starts_with("platform/rendered/multislice-v4-32-training/")
    });
    assert!(committed.contains(&"README.md".to_string()));
    let diff = aiml(&platform, &["diff", "--exit-code"], true);
    diff.expect_code(0);

    // `--branch` from the sub-folder: the checkout moves, clean, the outer files untouched.
    std::fs::write(
        platform.join("blueprints/train.yaml"),
        EXAMPLE.replace("slices: 2", "slices: 3"),
    )
    .unwrap();
    let run = aiml(&platform, &["render", "--commit", "--branch", "sub"], true);
    run.expect_code(0);
    assert_eq!(git_cli(outer.path(), &["status", "--porcelain"]), "");
    assert_eq!(
        git_cli(outer.path(), &["rev-parse", "--abbrev-ref", "HEAD"]),
        "sub\n"
    );
    assert!(paths(&head(&git), "").contains(&"README.md".to_string()));
}

// ---------------------------------------------------------------------------------------
// diff

/// Rendered files of a blueprint folder `serving`, written by hand (no kustomize): the base.
const BASE: &[(&str, &str)] = &[
    (
        "rendered/serving/config-connector/my-project/containercluster.container.cnrm.cloud.google.com_serving.yaml",
        "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerCluster\nmetadata:\n  name: serving\n  namespace: my-project\nspec:\n  location: us-central1-a\n  initialNodeCount: 1\n",
    ),
    (
        "rendered/serving/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_serving-tpu.yaml",
        "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerNodePool\nmetadata:\n  name: serving-tpu\n  namespace: my-project\nspec:\n  clusterRef:\n    name: serving\n  location: us-central1-a\n  nodeCount: 2\n  placementPolicy:\n    type: COMPACT\n    tpuTopology: 2x4\n  nodeConfig:\n    machineType: ct5lp-hightpu-4t\n",
    ),
    (
        "rendered/serving/config-connector/my-project/containernodepool.container.cnrm.cloud.google.com_serving-gpu.yaml",
        "apiVersion: container.cnrm.cloud.google.com/v1beta1\nkind: ContainerNodePool\nmetadata:\n  name: serving-gpu\n  namespace: my-project\nspec:\n  clusterRef:\n    name: serving\n  location: us-central1-a\n  nodeCount: 2\n  nodeConfig:\n    machineType: n1-standard-4\n    guestAccelerator:\n    - type: nvidia-tesla-t4\n      count: 1\n",
    ),
    (
        "rendered/serving/config-connector/my-project/storagebucket.storage.cnrm.cloud.google.com_my-project-serving-data.yaml",
        "apiVersion: storage.cnrm.cloud.google.com/v1beta1\nkind: StorageBucket\nmetadata:\n  name: my-project-serving-data\n  namespace: my-project\nspec:\n  location: US\n",
    ),
    (
        "rendered/serving/workload/_cluster/namespace_serving.yaml",
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: serving\n",
    ),
    (
        "rendered/serving/workload/serving/configmap_settings-5h9mt7f2kg.yaml",
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings-5h9mt7f2kg\n  namespace: serving\ndata:\n  batch: \"8\"\n  model: llama\n",
    ),
    (
        "rendered/serving/workload/serving/deployment.apps_server.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: server\n  namespace: serving\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: server}\n  template:\n    metadata:\n      labels: {app: server}\n    spec:\n      nodeSelector:\n        cloud.google.com/gke-accelerator: nvidia-tesla-t4\n      containers:\n      - name: server\n        image: server:1\n        resources:\n          limits:\n            nvidia.com/gpu: 1\n",
    ),
];

/// The same folder after a change: the TPU slice grows from 2x4 to 4x4 (its placement
/// policy cannot change in place), one more GPU node and replica, the bucket goes, the
/// ConfigMap generator hash changes, a Service comes.
fn changed() -> Vec<(&'static str, String)> {
    let mut files: Vec<(&'static str, String)> = BASE
        .iter()
        .filter(|(path, _)| !path.contains("storagebucket"))
        .map(|(path, text)| (*path, (*text).to_string()))
        .collect();
    for (path, text) in &mut files {
        if path.ends_with("serving-tpu.yaml") {
            *text = text
                .replace("nodeCount: 2", "nodeCount: 4")
                .replace("tpuTopology: 2x4", "tpuTopology: 4x4");
        } else if path.ends_with("serving-gpu.yaml") {
            *text = text.replace("nodeCount: 2", "nodeCount: 3");
        } else if path.ends_with("deployment.apps_server.yaml") {
            *text = text
                .replace("replicas: 2", "replicas: 3")
                .replace("server:1", "server:2");
        } else if path.contains("configmap_settings") {
            *path = "rendered/serving/workload/serving/configmap_settings-8b7c6d5f4g.yaml";
            *text = text
                .replace("settings-5h9mt7f2kg", "settings-8b7c6d5f4g")
                .replace("\"8\"", "\"16\"");
        }
    }
    files.push((
        "rendered/serving/workload/serving/service_server.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: server\n  namespace: serving\nspec:\n  selector: {app: server}\n  ports:\n  - port: 80\n".to_string(),
    ));
    files
}

/// A git repository whose `HEAD` holds [`BASE`] and whose work tree holds [`changed`].
fn diff_repo() -> (tempfile::TempDir, git2::Repository) {
    let dir = tempfile::tempdir().unwrap();
    let git = git2::Repository::init(dir.path()).unwrap();
    let write = |path: &str, text: &str| {
        let full = dir.path().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    };
    std::fs::create_dir_all(dir.path().join("blueprints")).unwrap();
    for (path, text) in BASE {
        write(path, text);
    }
    commit_all(&git, "Base");
    std::fs::remove_dir_all(dir.path().join("rendered")).unwrap();
    for (path, text) in changed() {
        write(path, &text);
    }
    (dir, git)
}

#[test]
fn diff_reports_objects_impact_first() {
    let (dir, _git) = diff_repo();
    let run = aiml(dir.path(), &["diff"], true);
    run.expect_code(0);
    insta::assert_snapshot!("diff_text", run.stdout);
    assert_eq!(run.stderr, "");
}

#[test]
fn diff_as_json_has_the_same_content() {
    let (dir, _git) = diff_repo();
    let run = aiml(dir.path(), &["diff", "-o", "json"], true);
    run.expect_code(0);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    assert_eq!(json["differs"], true);
    assert_eq!(
        json["totals"],
        serde_json::json!({"added": 1, "removed": 1, "changed": 4})
    );
    let changes: Vec<(String, String, String)> = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["change"].as_str().unwrap().to_string(),
                o["object"]["kind"].as_str().unwrap().to_string(),
                o["object"]["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("removed", "StorageBucket", "my-project-serving-data"),
        ("changed", "ContainerNodePool", "serving-gpu"),
        ("changed", "ContainerNodePool", "serving-tpu"),
        ("renamed", "ConfigMap", "settings-8b7c6d5f4g"),
        ("added", "Service", "server"),
        ("changed", "Deployment", "server"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    let mut sorted = changes.clone();
    sorted.sort();
    let mut expected_sorted = expected.clone();
    expected_sorted.sort();
    assert_eq!(sorted, expected_sorted, "{changes:#?}");
    let renamed = json["objects"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["change"] == "renamed")
        .unwrap();
    assert_eq!(renamed["from"], "settings-5h9mt7f2kg");
    insta::assert_json_snapshot!("diff_impact_json", json["impact"]);
}

#[test]
fn a_destructive_node_pool_change_and_the_deltas_are_named() {
    let (dir, _git) = diff_repo();
    let json: serde_json::Value =
        serde_json::from_str(&aiml(dir.path(), &["diff", "-o", "json"], true).stdout).unwrap();
    let impact = &json["impact"];
    let destructive = impact["destructive"].as_array().unwrap();
    let pool = destructive
        .iter()
        .find(|d| d["object"]["name"] == "serving-tpu")
        .expect("the TPU pool is recreated");
    assert_eq!(pool["action"], "recreate");
    assert_eq!(
        pool["fields"],
        serde_json::json!(["spec.placementPolicy.tpuTopology"])
    );
    assert!(
        pool["consequence"]
            .as_str()
            .unwrap()
            .contains("its TPU slice (8 TPU v5e chips on 2 nodes) is torn down"),
        "{pool}"
    );
    // A bigger node count alone is an update in place.
    assert!(
        !destructive
            .iter()
            .any(|d| d["object"]["name"] == "serving-gpu")
    );
    let bucket = destructive
        .iter()
        .find(|d| d["object"]["kind"] == "StorageBucket")
        .unwrap();
    assert_eq!(bucket["action"], "remove");
    let accelerators = impact["accelerators"].as_array().unwrap();
    let delta = |name: &str, counted: &str| {
        accelerators
            .iter()
            .find(|a| a["accelerator"] == name && a["counted_in"] == counted)
            .map(|a| (a["before"].as_i64().unwrap(), a["after"].as_i64().unwrap()))
    };
    assert_eq!(delta("TPU v5e", "node pools"), Some((8, 16)));
    assert_eq!(delta("nvidia-tesla-t4", "node pools"), Some((2, 3)));
    assert_eq!(delta("nvidia-tesla-t4", "workloads"), Some((2, 3)));
    // 2 x 4 v5e chips at $1.20 + 2 x (n1-standard-4 $0.189999 + T4 $0.35) + the GKE fee $0.10,
    // then 4 x 4 chips and 3 GPU nodes.
    let cost = &impact["cost"];
    assert_eq!(cost["estimate"], true);
    assert_eq!(cost["before_per_hour"], 10.78);
    assert_eq!(cost["after_per_hour"], 20.92);
    assert_eq!(cost["delta_per_hour"], 10.14);
}

#[test]
fn diff_exit_code_says_whether_anything_differs() {
    let (dir, git) = diff_repo();
    let run = aiml(dir.path(), &["diff", "--exit-code"], true);
    run.expect_code(1);
    commit_all(&git, "Changed");
    let run = aiml(dir.path(), &["diff", "--exit-code"], true);
    run.expect_code(0);
    assert!(run.stdout.starts_with("no differences"), "{}", run.stdout);
    // Against an older revision, the change shows again.
    let run = aiml(
        dir.path(),
        &["diff", "--base", "HEAD~1", "--exit-code"],
        true,
    );
    run.expect_code(1);
    let run = aiml(dir.path(), &["diff", "--base", "no-such-rev"], true);
    run.expect_code(2)
        .stderr_has("`no-such-rev` is not a revision");
}

#[test]
fn diff_as_markdown_is_a_pull_request_comment() {
    let (dir, _git) = diff_repo();
    let run = aiml(dir.path(), &["diff", "-o", "markdown"], true);
    run.expect_code(0);
    insta::assert_snapshot!("diff_markdown", run.stdout);
    let elsewhere = aiml(dir.path(), &["validate", "-o", "markdown"], true);
    elsewhere.expect_code(2);
}

#[test]
fn diff_with_render_compares_what_a_render_would_write() {
    let (repo, _git) = git_repo();
    assert_eq!(aiml(repo.path(), &["render", "--commit"], true).code, 0);
    set_slices(&repo, 3);
    // The working tree's rendered output is unchanged until a render.
    let run = aiml(repo.path(), &["diff", "--exit-code"], true);
    run.expect_code(0);
    let run = aiml(repo.path(), &["diff", "--render", "--exit-code"], true);
    run.expect_code(1);
    assert!(
        run.stdout.starts_with("HEAD → fresh render: 1 added"),
        "{}",
        run.stdout
    );
    run.stdout_has("TPU v4 chips in node pools: 32 → 48 (+16)")
        .stdout_has("+ ContainerNodePool my-project/multislice-v4-32-training-tpu-slice-2");
    assert!(
        repo.generated().keys().all(|p| !p.contains("tpu-slice-2")),
        "--render writes nothing"
    );
}

/// Releasing kept slices (fixed pools → scale to zero) leaves the peak as it was and takes the
/// slices out of what bills while nothing trains: `diff` shows both, per pool and in total.
#[test]
fn diff_shows_the_idle_cost_beside_the_peak() {
    let (repo, git) = git_repo();
    let kept = EXAMPLE.replace(
        "capacity: {type: onDemand}",
        "capacity: {type: onDemand}\n    idle: keep",
    );
    repo.write("blueprints/multislice-v4-32-training.yaml", &kept);
    assert_eq!(aiml(repo.path(), &["render"], true).code, 0);
    commit_all(&git, "Keep the slices");
    repo.write("blueprints/multislice-v4-32-training.yaml", EXAMPLE);
    assert_eq!(aiml(repo.path(), &["render"], true).code, 0);
    let run = aiml(repo.path(), &["diff"], true);
    run.expect_code(0);
    let impact = &run.stdout[..run
        .stdout
        .find("\nBlueprints\n")
        .unwrap_or(run.stdout.len())];
    insta::assert_snapshot!("diff_idle_cost", impact);
    let run = aiml(repo.path(), &["diff", "-o", "json"], true);
    let json: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
    let cost = &json["impact"]["cost"];
    // Two v4-32 slices: 32 chips at $3.22, at the peak before and after; idle only before.
    assert_eq!(cost["before_per_hour"], cost["after_per_hour"]);
    assert_eq!(cost["idle_delta_per_hour"], -103.04);
    assert_eq!(cost["lines"][0]["after_idle_per_hour"], 0.0);
}

// ---------------------------------------------------------------------------------------
// Config Sync and Argo CD wiring

/// A blueprint on the example's cluster, and one on a cluster that exists already.
fn wired_repo(settings: &str) -> TestRepo {
    let repo = TestRepo::new();
    repo.write(
        "blueprints/guest.yaml",
        "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata:\n  name: guest\nspec:\n  project: my-project\n  cluster:\n    blueprint: multislice-v4-32-training\n  tpu:\n    type: v4-8\n",
    );
    repo.write(
        "blueprints/outside.yaml",
        "apiVersion: aiml.dev/v1alpha1\nkind: MultisliceTraining\nmetadata:\n  name: outside\nspec:\n  project: other-project\n  region: us-central2\n  zone: us-central2-b\n  cluster:\n    existing: true\n    name: prod\n  tpu:\n    type: v4-8\n",
    );
    repo.write("aiml.yaml", settings);
    repo
}

fn files_under(repo: &TestRepo, prefix: &str) -> Vec<String> {
    repo.generated()
        .keys()
        .filter_map(|p| p.strip_prefix(prefix).map(str::to_string))
        .collect()
}

#[test]
fn config_sync_wiring_gathers_each_cluster_and_passes_the_schemas() {
    let repo = wired_repo("git:\n  repo: https://github.com/acme/ml-platform.git\n");
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    insta::assert_snapshot!(
        "config_sync_layout",
        files_under(&repo, "rendered/_sync/").join("\n")
    );
    let fleet = files_under(
        &repo,
        "rendered/multislice-v4-32-training/config-connector/my-project/",
    );
    for kind in [
        "gkehubmembership",
        "gkehubfeature.",
        "gkehubfeaturemembership",
    ] {
        assert!(
            fleet.iter().any(|f| f.starts_with(kind)),
            "{kind}: {fleet:#?}"
        );
    }
    // Only the blueprint that creates a cluster registers it.
    for other in ["guest", "outside"] {
        assert!(
            !files_under(&repo, &format!("rendered/{other}/"))
                .iter()
                .any(|f| f.contains("gkehub")),
            "{other}"
        );
    }
    let strict = repo.aiml(&["validate", "--strict", "rendered"]);
    strict.expect_code(0);
    repo.aiml(&["render", "--check"]).expect_code(0);

    // Without settings, a full render removes the wiring.
    std::fs::remove_file(repo.path().join("aiml.yaml")).unwrap();
    let check = repo.aiml(&["render", "--check"]);
    check
        .expect_code(1)
        .stderr_has("would remove rendered/_sync/");
    repo.aiml(&["render"]).expect_code(0);
    assert!(!repo.path().join("rendered/_sync").exists());
}

#[test]
fn argocd_wiring_is_one_application_per_sync_root() {
    let repo = wired_repo(
        "git:\n  repo: https://github.com/acme/ml-platform.git\n  dir: platform\nsync:\n  engine: argocd\n",
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    insta::assert_snapshot!(
        "argocd_layout",
        files_under(&repo, "rendered/_sync/").join("\n")
    );
    assert!(
        !repo.generated().keys().any(|p| p.contains("gkehub")),
        "Argo CD needs no fleet objects"
    );
    let strict = repo.aiml(&["validate", "--strict", "rendered"]);
    strict.expect_code(0);
}

#[test]
fn settings_are_read_strictly() {
    let repo = TestRepo::new();
    repo.write(
        "aiml.yaml",
        "git:\n  repo: https://github.com/acme/ml-platform.git\n  brnach: main\n",
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(2);
    insta::assert_snapshot!(run.stderr);
    assert!(repo.generated().is_empty());
}

/// A git URL with credentials would be written into every sync object and committed: refused
/// at its line, without the secret in any output, with nothing written; a wired repository
/// renders once the URL is clean.
#[test]
fn credentials_in_the_git_url_are_refused_and_never_echoed() {
    for (line, url) in [
        (
            2,
            "https://robot:glpat-s3cr3tT0kenValue@gitlab.example.com/acme/p.git",
        ),
        (2, "https://s3cr3tT0kenValue@github.com/acme/p.git"),
        (2, "ssh://git:s3cr3tT0kenValue@example.com/acme/p.git"),
        (
            2,
            "https://example.com/acme/p.git?access_token=s3cr3tT0kenValue",
        ),
    ] {
        let repo = wired_repo(&format!("git:\n  repo: {url}\nsync: {{engine: argocd}}\n"));
        for args in [&["render"][..], &["render", "--check"], &["validate"]] {
            let run = repo.aiml(args);
            assert_eq!(run.code, 2, "{url} {args:?}\n{}", run.transcript());
            assert!(
                run.stderr.contains("`git.repo` holds a credential")
                    && run.stderr.contains(&format!("aiml.yaml:{line}")),
                "{url} {args:?}\n{}",
                run.stderr
            );
            let all = format!("{}{}", run.stdout, run.stderr);
            assert!(
                !all.contains("s3cr3t"),
                "{url} {args:?}: the secret is echoed\n{all}"
            );
            let json = repo.aiml(&[args, &["-o", "json"][..]].concat());
            assert!(!json.stdout.contains("s3cr3t") && !json.stderr.contains("s3cr3t"));
        }
        assert!(repo.generated().is_empty(), "{url}: nothing was written");
    }
    for (field, value) in [("branch", "../x..y"), ("branch", "a..b"), ("dir", "../up")] {
        let repo = wired_repo(&format!(
            "git:\n  repo: https://github.com/acme/p.git\n  {field}: '{value}'\n"
        ));
        let run = repo.aiml(&["render"]);
        assert_eq!(run.code, 2, "{value}\n{}", run.transcript());
        run.stderr_has(&format!("git.{field}"));
        assert!(repo.generated().is_empty());
    }
    let repo = wired_repo("git:\n  repo: git@github.com:acme/p.git\n  branch: release/2026-11\n");
    let run = repo.aiml(&["render"]);
    run.expect_code(0);

    // The same class in a blueprint: any field written out as a URL carries its password into
    // the output. Refused as a leak, shown masked.
    let repo = TestRepo::new();
    repo.write(
        "blueprints/multislice-v4-32-training.yaml",
        &EXAMPLE.replace(
            "import jax;",
            "# https://robot:s3cr3tT0kenValue@storage.googleapis.com\n      import jax;",
        ),
    );
    let run = repo.aiml(&["render"]);
    run.expect_code(1);
    run.stderr_has("error[secret-literal]")
        .stderr_has("a password in a URL")
        .stderr_lacks("s3cr3t");
    assert!(repo.generated().is_empty());
}

/// The CI examples the README points at parse, run the documented commands, and use the
/// released binary or image pinned by version and checksum: they build nothing.
#[test]
fn ci_examples_run_the_review_commands() {
    for (file, runs) in [
        (
            "examples/ci/github-actions.yaml",
            &[
                "kubectl-aiml render --check",
                "kubectl-aiml diff --base \"origin/${{ github.base_ref }}\" -o markdown",
                "--fail-on destructive",
                "KUBECTL_AIML_VERSION: v",
                "sha256sum --check --strict",
            ][..],
        ),
        (
            "examples/ci/cloudbuild.yaml",
            &[
                "args: [render, --check]",
                "kubectl-aiml diff --base \"origin/${_BASE_BRANCH}\" -o markdown",
                "--fail-on, destructive]",
                "_AIML_IMAGE: ghcr.io/kubectl-aiml/kubectl-aiml:v",
                "@sha256:",
            ][..],
        ),
    ] {
        let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(file))
            .unwrap_or_else(|e| panic!("{file}: {e}"));
        let documents =
            aiml::yaml::parse_documents(&text).unwrap_or_else(|e| panic!("{file}: {e}"));
        assert_eq!(documents.len(), 1, "{file}");
        for command in runs {
            assert!(text.contains(command), "{file} lacks {command}");
        }
        assert!(!text.contains("cargo install"), "{file} builds the tool");
    }
}

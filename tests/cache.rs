//! The render cache never changes what is written: renders that reuse unchanged blueprints
//! leave exactly the tree a render without the cache writes, across edits of blueprints and
//! of the blueprints they reference, deleted and hand-edited output, and a corrupt cache.

mod support;

use std::collections::BTreeMap;

use support::TestRepo;

/// The repository's own blueprints, in a fresh repository.
fn repository() -> TestRepo {
    let repo = TestRepo::new();
    for blueprint in support::shipped_blueprints() {
        repo.write(&blueprint.file, &blueprint.text);
    }
    if let Ok(settings) = std::fs::read_to_string("aiml.yaml") {
        repo.write("aiml.yaml", &settings);
    }
    repo
}

fn edit(repo: &TestRepo, file: &str, from: &str, to: &str) {
    let path = repo.path().join(file);
    let text = std::fs::read_to_string(&path).expect("read");
    assert!(text.contains(from), "{file} has no `{from}`");
    std::fs::write(&path, text.replacen(from, to, 1)).expect("write");
}

/// What a render without the cache writes for the blueprints of `repo` as they are now.
fn uncached(repo: &TestRepo) -> BTreeMap<String, Vec<u8>> {
    let fresh = TestRepo::new();
    std::fs::remove_file(
        fresh
            .path()
            .join("blueprints/multislice-v4-32-training.yaml"),
    )
    .expect("remove");
    for (path, content) in aiml::render::read_tree(&repo.path().join("blueprints")).expect("read") {
        fresh.write(
            &format!("blueprints/{path}"),
            std::str::from_utf8(&content).expect("utf-8"),
        );
    }
    if let Ok(settings) = std::fs::read_to_string(repo.path().join("aiml.yaml")) {
        fresh.write("aiml.yaml", &settings);
    }
    let run = fresh.aiml(&["render", "--no-cache"]);
    run.expect_code(0);
    fresh.generated()
}

/// The cached render's tree is the uncached one, naming any file that differs.
fn same_as_uncached(repo: &TestRepo) {
    support::assert_same_files(
        ("the cached render", &repo.generated()),
        ("a render without the cache", &uncached(repo)),
    );
}

fn render(repo: &TestRepo) -> String {
    let run = repo.aiml(&["render"]);
    run.expect_code(0);
    run.stderr
}

#[test]
fn cached_renders_write_what_uncached_renders_write() {
    let repo = repository();
    render(&repo);
    assert!(repo.path().join(".aiml/cache").is_dir(), "no cache written");

    // Nothing changed: nothing rendered again, nothing written.
    assert!(render(&repo).contains("0 files changed"));
    same_as_uncached(&repo);

    // A referenced blueprint changes what its dependents render: the load test follows the
    // Saxml server's new namespace although its own file did not change.
    edit(
        &repo,
        "blueprints/sax-llama2-70b-v5e-16.yaml",
        "spec:\n",
        "spec:\n  namespace: serving\n",
    );
    render(&repo);
    let load_test = std::fs::read_to_string(
        repo.path()
            .join("rendered/locust-bench/workload/locust-bench/deployment.apps_locust-worker.yaml"),
    )
    .expect("read");
    assert!(
        load_test.contains(".serving.svc.cluster.local"),
        "{load_test}"
    );
    same_as_uncached(&repo);

    // Output deleted or edited behind the tool's back is rendered again, not trusted.
    std::fs::remove_dir_all(repo.path().join("rendered/triton-t4-hpa")).expect("remove");
    render(&repo);
    same_as_uncached(&repo);
    let file = repo
        .path()
        .join("overlays/multislice-v4-32-training/workload/resources.yaml");
    let original = std::fs::read(&file).expect("read");
    std::fs::write(&file, b"# edited\n").expect("write");
    let run = repo.aiml(&["render"]);
    // A hand edit must stop the render.
    run.expect_code(2).stderr_has("edited by hand");
    // Put back byte for byte (a new modification time): the cache sees the same content.
    std::fs::write(&file, &original).expect("write");
    assert!(render(&repo).contains("0 files changed"));

    // A corrupt or foreign cache is ignored.
    for entry in std::fs::read_dir(repo.path().join(".aiml/cache")).expect("cache") {
        std::fs::write(entry.expect("entry").path(), b"{not json").expect("write");
    }
    edit(
        &repo,
        "blueprints/locust-bench.yaml",
        "workers: 4",
        "workers: 3",
    );
    render(&repo);
    same_as_uncached(&repo);

    // `render --check` reads the cache and agrees.
    let check = repo.aiml(&["render", "--check"]);
    check.expect_code(0);
}

#[test]
fn the_cache_can_be_turned_off() {
    let repo = repository();
    let run = repo.aiml_with_env(&["render"], &[("AIML_CACHE", std::ffi::OsStr::new("off"))]);
    run.expect_code(0);
    assert!(!repo.path().join(".aiml/cache").exists());
}

#[test]
fn changing_one_blueprint_renders_only_that_one() {
    let repo = repository();
    let blueprints = support::shipped_blueprints().len();
    render(&repo);
    let others = blueprints - 1;
    assert!(
        render(&repo).contains(&format!("{blueprints} unchanged, reused from the cache")),
        "a no-op render reuses every blueprint"
    );
    edit(
        &repo,
        "blueprints/locust-bench.yaml",
        "workers: 4",
        "workers: 5",
    );
    let stderr = render(&repo);
    assert!(
        stderr.contains(&format!("{others} unchanged, reused from the cache")),
        "{stderr}"
    );
    same_as_uncached(&repo);
}

/// Renders racing on one repository and its cache: each waits for the lock, none fails, and
/// the tree and the cache they leave are those of one render.
#[test]
fn concurrent_renders_share_the_cache_safely() {
    let repo = repository();
    render(&repo);
    edit(
        &repo,
        "blueprints/locust-bench.yaml",
        "workers: 4",
        "workers: 6",
    );
    let runs: Vec<support::Run> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..4)
            .map(|_| scope.spawn(|| repo.aiml(&["render"])))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("join"))
            .collect()
    });
    for run in &runs {
        run.expect_code(0);
    }
    same_as_uncached(&repo);
    assert!(render(&repo).contains("0 files changed"));
    let check = repo.aiml(&["render", "--check"]);
    check.expect_code(0);
}

/// Files are written only when their bytes change: a render without the cache rebuilds every
/// blueprint but leaves folders that already hold its output untouched (same inodes, so
/// editors, `git status` and file watchers see nothing), and replaces only the folders of the
/// blueprint that changed.
#[cfg(unix)]
#[test]
fn renders_without_the_cache_rewrite_only_what_changed() {
    use std::os::unix::fs::MetadataExt as _;
    let repo = repository();
    render(&repo);
    let inodes = |repo: &TestRepo| -> BTreeMap<String, u64> {
        repo.generated()
            .into_keys()
            .map(|path| {
                let inode = std::fs::metadata(repo.path().join(&path))
                    .expect("stat")
                    .ino();
                (path, inode)
            })
            .collect()
    };
    let before = inodes(&repo);
    let run = repo.aiml(&["render", "--no-cache"]);
    run.expect_code(0);
    assert_eq!(inodes(&repo), before, "an unchanged render rewrote files");

    edit(
        &repo,
        "blueprints/locust-bench.yaml",
        "workers: 4",
        "workers: 7",
    );
    let run = repo.aiml(&["render", "--no-cache"]);
    run.expect_code(0);
    let after = inodes(&repo);
    let rewritten: Vec<&String> = after
        .iter()
        .filter(|(path, inode)| before.get(*path) != Some(inode))
        .map(|(path, _)| path)
        .collect();
    assert!(!rewritten.is_empty());
    assert!(
        rewritten
            .iter()
            .all(|p| p.starts_with("overlays/locust-bench/")
                || p.starts_with("rendered/locust-bench/")),
        "{rewritten:?}"
    );
    same_as_uncached(&repo);
}

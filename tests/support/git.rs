//! Commits in the temporary git repositories of the tests.

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

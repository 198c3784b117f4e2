//! `render --commit`: one commit of the changed blueprints, overlays and rendered files.
//!
//! The commit is built from the files `render` just wrote (never a second render): the tree
//! of the base commit, with every file under `blueprints/`, `kinds/`, `overlays/`, `rendered/`
//! and `aiml.yaml` taken from the work tree (git-ignored files left out unless tracked, files
//! gone from the work tree removed). Nothing else goes in: other changes, staged or not, stay as
//! they are. On the current branch the index is then updated for those paths, so `git status`
//! shows them clean.
//!
//! With `--branch NAME` the commit goes on that branch (created from `HEAD` when absent) and
//! the checkout moves to it, as `git switch -c NAME` then `git commit` would: the work tree
//! already holds what the commit holds, so leaving `HEAD` behind would leave the change
//! uncommitted in the checkout, where the next plain `--commit` would put the change meant for
//! review on the current branch. Nothing in the work tree is written; the index is brought in
//! line with the commit for the paths it owns, other staged changes stay staged. A branch that
//! exists is switched to only when its files differ from `HEAD`'s in those paths alone
//! ([`prepare`] checks it before anything is rendered); otherwise the user switches first.
//!
//! libgit2 runs no git hooks (`pre-commit`, `commit-msg`, …): [`hooks`] says which the
//! repository has, so that the command can tell the user to run them.
//!
//! Creating the commit and moving the branch is one step (libgit2 refuses to move a branch
//! whose tip is not the commit's parent, so a concurrent commit is never lost). Identity comes
//! from `GIT_AUTHOR_*` / `GIT_COMMITTER_*` and `EMAIL`, else git config (`user.*`,
//! `author.*`, `committer.*`); [`prepare`] checks it before anything is rendered.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::{GitError, Repo};
use crate::kinds::repository::KINDS_DIR;
use crate::repo::{BLUEPRINTS_DIR, OVERLAYS_DIR, RENDERED_DIR};
use crate::settings::SETTINGS_FILE;

/// What a render commit takes from the work tree: what people write and what the tool writes.
const OWNED: [&str; 5] = [
    BLUEPRINTS_DIR,
    KINDS_DIR,
    OVERLAYS_DIR,
    RENDERED_DIR,
    SETTINGS_FILE,
];

/// Where the commit goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// The current branch (or detached `HEAD`).
    Head,
    /// Another branch, created from `HEAD` when absent.
    Branch(String),
}

/// Everything checked before rendering: the repository, the identity and the target.
pub struct Prepared {
    repo: Repo,
    author: git2::Signature<'static>,
    committer: git2::Signature<'static>,
    target: Target,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prepared")
            .field("repo", &self.repo)
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

/// Opens the git repository of `root` and checks that a commit can be made there: a work
/// tree, no merge or rebase in progress, an identity, a valid branch name.
pub fn prepare(root: &Path, branch: Option<&str>) -> Result<Prepared, GitError> {
    let repo = Repo::open(root)?;
    let state = repo.repo.state();
    if state != git2::RepositoryState::Clean {
        return Err(GitError::Busy(format!("{state:?}").to_lowercase()));
    }
    let target = match branch {
        None => Target::Head,
        Some(name) => {
            if !git2::Branch::name_is_valid(name)? {
                return Err(GitError::BranchName(name.to_string()));
            }
            // The current branch: an ordinary commit.
            let head = repo.repo.find_reference("HEAD")?;
            if head.symbolic_target()? == Some(format!("refs/heads/{name}").as_str()) {
                Target::Head
            } else {
                diverged(&repo, name)?;
                Target::Branch(name.to_string())
            }
        }
    };
    let config = repo.repo.config()?;
    let (author, committer) = identity(&config, &|name| std::env::var(name).ok())?;
    Ok(Prepared {
        repo,
        author,
        committer,
        target,
    })
}

/// Whether `path` (relative to the work tree) is one a render commit owns.
fn is_owned(prefix: &str, path: &str) -> bool {
    path.strip_prefix(prefix).is_some_and(|relative| {
        OWNED.iter().any(|top| {
            relative == *top
                || relative
                    .strip_prefix(top)
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    })
}

/// Refuses a branch that exists and whose files differ from `HEAD`'s outside the owned
/// paths: the checkout could not move there without changing files the render did not write.
fn diverged(repo: &Repo, name: &str) -> Result<(), GitError> {
    let git = &repo.repo;
    let branch = match git.find_branch(name, git2::BranchType::Local) {
        Ok(branch) => branch.get().peel_to_tree()?,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let head = git.head().ok().and_then(|h| h.peel_to_tree().ok());
    let diff = git.diff_tree_to_tree(head.as_ref(), Some(&branch), None)?;
    for delta in diff.deltas() {
        let path = delta
            .new_file()
            .path()
            .or_else(|| delta.old_file().path())
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !is_owned(&repo.prefix, &path) {
            return Err(GitError::BranchDiverged {
                branch: name.to_string(),
                path: crate::diagnostic::sanitize(&path, 200),
            });
        }
    }
    Ok(())
}

/// What a commit did.
#[derive(Debug, PartialEq, Eq)]
pub enum Committed {
    /// Nothing differed from the base commit: no commit.
    Nothing,
    /// A commit was made.
    Commit {
        /// Its id, abbreviated to 7 hex digits.
        short_id: String,
        /// The branch it went on (`HEAD` when detached).
        branch: String,
        /// Its first line.
        subject: String,
        /// Files added, changed or removed.
        files: usize,
        /// Set when the commit is made but the index could not be updated: why.
        index_error: Option<String>,
        /// The checkout moved to this branch (`--branch`).
        switched: bool,
    },
}

/// A change to one path, relative to the kubectl-aiml repository.
#[derive(Debug)]
struct Update {
    path: String,
    /// New blob and mode; `None`: removed.
    blob: Option<(git2::Oid, git2::FileMode)>,
}

/// Commits the files of the kubectl-aiml repository that `render` owns or reads
/// (`blueprints/`, `kinds/`, `overlays/`, `rendered/`, `aiml.yaml`). `message` goes first;
/// the list of changed blueprints follows (`blueprint_files`: each blueprint file's blueprint
/// names).
pub fn commit(
    prepared: &Prepared,
    message: Option<&str>,
    blueprint_files: &BTreeMap<String, Vec<String>>,
) -> Result<Committed, GitError> {
    let repo = &prepared.repo;
    let git = &repo.repo;
    let (base_commit, branch) = base(prepared)?;
    let base_tree = match &base_commit {
        Some(commit) => commit.tree()?,
        None => git.find_tree(git.treebuilder(None)?.write()?)?,
    };
    let updates = updates(repo, &base_tree)?;
    if updates.is_empty() {
        return Ok(Committed::Nothing);
    }
    let mut builder = git2::build::TreeUpdateBuilder::new();
    for update in &updates {
        let path = format!("{}{}", repo.prefix, update.path);
        match update.blob {
            Some((oid, mode)) => builder.upsert(path.as_str(), oid, mode),
            None => builder.remove(path.as_str()),
        };
    }
    let tree_id = builder.create_updated(git, &base_tree)?;
    let tree = git.find_tree(tree_id)?;
    let full_message = message_for(message, &updates, blueprint_files, &base_tree, &repo.prefix);
    let parents: Vec<&git2::Commit<'_>> = base_commit.iter().collect();
    let reference = match &prepared.target {
        Target::Head => "HEAD".to_string(),
        Target::Branch(name) => format!("refs/heads/{name}"),
    };
    let id = git.commit(
        Some(&reference),
        &prepared.author,
        &prepared.committer,
        &full_message,
        &tree,
        &parents,
    )?;
    let index_error = match &prepared.target {
        Target::Head => update_index(repo, &updates).err().map(|e| e.to_string()),
        // The work tree already holds the commit's files: moving `HEAD` and the index there
        // is what `git switch` would do, without writing a file.
        Target::Branch(name) => git
            .set_head(&format!("refs/heads/{name}"))
            .and_then(|()| index_to_tree(repo, &tree))
            .err()
            .map(|e| e.to_string()),
    };
    Ok(Committed::Commit {
        short_id: id.to_string()[..7].to_string(),
        branch,
        subject: full_message.lines().next().unwrap_or_default().to_string(),
        files: updates.len(),
        index_error,
        switched: matches!(prepared.target, Target::Branch(_)),
    })
}

/// The commit to build on and the branch name to report.
fn base(prepared: &Prepared) -> Result<(Option<git2::Commit<'_>>, String), GitError> {
    let git = &prepared.repo.repo;
    let head_commit = || -> Result<Option<git2::Commit<'_>>, GitError> {
        match git.head() {
            Ok(head) => Ok(Some(head.peel_to_commit()?)),
            // A repository without commits: the first commit has no parent.
            Err(e)
                if e.code() == git2::ErrorCode::UnbornBranch
                    || e.code() == git2::ErrorCode::NotFound =>
            {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    };
    match &prepared.target {
        Target::Head => {
            let head = git.find_reference("HEAD")?;
            let branch = head
                .symbolic_target()?
                .and_then(|t| t.strip_prefix("refs/heads/"))
                .unwrap_or("HEAD")
                .to_string();
            Ok((head_commit()?, branch))
        }
        Target::Branch(name) => match git.find_branch(name, git2::BranchType::Local) {
            Ok(branch) => Ok((Some(branch.get().peel_to_commit()?), name.clone())),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok((head_commit()?, name.clone())),
            Err(e) => Err(e.into()),
        },
    }
}

/// The owned paths whose work-tree content differs from `base`.
fn updates(repo: &Repo, base: &git2::Tree<'_>) -> Result<Vec<Update>, GitError> {
    let root = repo.workdir.join(&repo.prefix);
    let mut in_base: BTreeMap<String, (git2::Oid, i32)> = BTreeMap::new();
    for top in OWNED {
        let Ok(entry) = base.get_path(Path::new(&format!("{}{top}", repo.prefix))) else {
            continue;
        };
        match entry.kind() {
            Some(git2::ObjectType::Tree) => {
                let tree = repo.repo.find_tree(entry.id())?;
                tree.walk(git2::TreeWalkMode::PreOrder, |dir, item| {
                    if item.kind() == Some(git2::ObjectType::Blob) {
                        let name = item.name().unwrap_or_default();
                        in_base.insert(format!("{top}/{dir}{name}"), (item.id(), item.filemode()));
                    }
                    git2::TreeWalkResult::Ok
                })?;
            }
            Some(git2::ObjectType::Blob) => {
                in_base.insert(top.to_string(), (entry.id(), entry.filemode()));
            }
            _ => {}
        }
    }
    let mut present: BTreeMap<String, (Vec<u8>, git2::FileMode)> = BTreeMap::new();
    for top in OWNED {
        let start = root.join(top);
        if fs_err::symlink_metadata(&start).is_err() {
            continue;
        }
        for entry in walkdir::WalkDir::new(&start).sort_by_file_name() {
            let entry = entry.map_err(std::io::Error::other)?;
            if entry.file_type().is_dir() {
                continue;
            }
            let relative = crate::repo::display_path(&root, entry.path());
            let git_path = format!("{}{relative}", repo.prefix);
            if !in_base.contains_key(&relative)
                && repo.repo.is_path_ignored(Path::new(&git_path))?
            {
                continue;
            }
            let (content, mode) = if entry.file_type().is_symlink() {
                let target = fs_err::read_link(entry.path())?;
                (
                    target.to_string_lossy().into_owned().into_bytes(),
                    git2::FileMode::Link,
                )
            } else if entry.file_type().is_file() {
                (fs_err::read(entry.path())?, file_mode(entry.path())?)
            } else {
                // FIFOs, sockets, devices: git does not store them.
                continue;
            };
            present.insert(relative, (content, mode));
        }
    }
    let mut updates = Vec::new();
    for (path, (content, mode)) in &present {
        let oid = git2::Oid::hash_object(git2::ObjectType::Blob, content)?;
        if in_base.get(path) == Some(&(oid, i32::from(*mode))) {
            continue;
        }
        let written = repo.repo.blob(content)?;
        updates.push(Update {
            path: path.clone(),
            blob: Some((written, *mode)),
        });
    }
    for path in in_base.keys().filter(|path| !present.contains_key(*path)) {
        updates.push(Update {
            path: path.clone(),
            blob: None,
        });
    }
    updates.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(updates)
}

#[cfg(unix)]
fn file_mode(path: &Path) -> std::io::Result<git2::FileMode> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = fs_err::metadata(path)?.permissions().mode() & 0o111 != 0;
    Ok(if executable {
        git2::FileMode::BlobExecutable
    } else {
        git2::FileMode::Blob
    })
}

#[cfg(not(unix))]
fn file_mode(_: &Path) -> std::io::Result<git2::FileMode> {
    Ok(git2::FileMode::Blob)
}

/// Brings the index in line with the commit for the committed paths.
fn update_index(repo: &Repo, updates: &[Update]) -> Result<(), git2::Error> {
    let mut index = repo.repo.index()?;
    for update in updates {
        let path = format!("{}{}", repo.prefix, update.path);
        match update.blob {
            Some(_) => index.add_path(Path::new(&path))?,
            None => {
                // Not in the index (never staged): nothing to remove.
                let _ = index.remove_path(Path::new(&path));
            }
        }
    }
    index.write()
}

/// Makes the index hold exactly `tree`'s files under the owned paths (after the checkout moved
/// to a branch); entries already right keep their cached file stats.
fn index_to_tree(repo: &Repo, tree: &git2::Tree<'_>) -> Result<(), git2::Error> {
    let mut wanted: BTreeMap<String, (git2::Oid, u32)> = BTreeMap::new();
    tree.walk(git2::TreeWalkMode::PreOrder, |dir, item| {
        if item.kind() == Some(git2::ObjectType::Blob) {
            let path = format!("{dir}{}", item.name().unwrap_or_default());
            if is_owned(&repo.prefix, &path) {
                let mode = u32::try_from(item.filemode()).unwrap_or_default();
                wanted.insert(path, (item.id(), mode));
            }
        }
        git2::TreeWalkResult::Ok
    })?;
    let mut index = repo.repo.index()?;
    let mut right = BTreeSet::new();
    let mut stale = Vec::new();
    for entry in index.iter() {
        let path = String::from_utf8_lossy(&entry.path).into_owned();
        if !is_owned(&repo.prefix, &path) {
            continue;
        }
        match wanted.get(&path) {
            Some((id, mode)) if *id == entry.id && *mode == entry.mode => {
                right.insert(path);
            }
            Some(_) => {}
            None => stale.push(path),
        }
    }
    for path in stale {
        index.remove_path(Path::new(&path))?;
    }
    for path in wanted.keys().filter(|path| !right.contains(*path)) {
        index.add_path(Path::new(path))?;
    }
    index.write()
}

/// The hooks the repository has, which this commit does not run: `core.hooksPath` when set,
/// else the files in `.git/hooks/` other than git's `*.sample` ones. Empty: none.
#[must_use]
pub fn hooks(prepared: &Prepared) -> Vec<String> {
    let git = &prepared.repo.repo;
    if let Ok(config) = git.config()
        && let Ok(path) = config.get_string("core.hooksPath")
        && !path.trim().is_empty()
    {
        return vec![format!(
            "core.hooksPath = {}",
            crate::diagnostic::sanitize(&path, 200)
        )];
    }
    let Ok(entries) = fs_err::read_dir(git.path().join("hooks")) else {
        return Vec::new();
    };
    let mut found: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_ok_and(|t| !t.is_dir()))
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".sample"))
        .map(|name| crate::diagnostic::sanitize(&name, 80))
        .collect();
    found.sort();
    found
}

/// The paths among `paths` (relative to the kubectl-aiml repository) that git ignores and that
/// the commit's base does not track: a commit would leave them out. Returned relative to the
/// work tree.
pub fn ignored(
    prepared: &Prepared,
    paths: impl IntoIterator<Item = String>,
) -> Result<Vec<String>, GitError> {
    let repo = &prepared.repo;
    let (base_commit, _) = base(prepared)?;
    let base_tree = base_commit.map(|c| c.tree()).transpose()?;
    let mut out = Vec::new();
    for path in paths {
        let git_path = format!("{}{path}", repo.prefix);
        if repo.repo.is_path_ignored(Path::new(&git_path))?
            && base_tree
                .as_ref()
                .is_none_or(|tree| tree.get_path(Path::new(&git_path)).is_err())
        {
            out.push(git_path);
        }
    }
    Ok(out)
}

/// The commit message: the given message (or a summary line), then what changed per
/// blueprint.
fn message_for(
    message: Option<&str>,
    updates: &[Update],
    blueprint_files: &BTreeMap<String, Vec<String>>,
    base: &git2::Tree<'_>,
    prefix: &str,
) -> String {
    let mut touched: BTreeSet<String> = BTreeSet::new();
    let mut wiring = false;
    let mut settings = false;
    for update in updates {
        let mut parts = update.path.splitn(3, '/');
        match (parts.next(), parts.next()) {
            (Some(OVERLAYS_DIR | RENDERED_DIR), Some(crate::sync::SYNC_DIR)) => wiring = true,
            (Some(OVERLAYS_DIR | RENDERED_DIR), Some(name)) => {
                touched.insert(name.to_string());
            }
            (Some(BLUEPRINTS_DIR), Some(_)) => {
                if let Some(names) = blueprint_files.get(&update.path) {
                    touched.extend(names.iter().cloned());
                }
            }
            (Some(SETTINGS_FILE), None) => settings = true,
            _ => {}
        }
    }
    let exists_in_base = |name: &str| {
        [OVERLAYS_DIR, RENDERED_DIR].iter().any(|top| {
            base.get_path(Path::new(&format!("{prefix}{top}/{name}")))
                .is_ok()
        })
    };
    let exists_now = |name: &str| {
        blueprint_files
            .values()
            .any(|names| names.iter().any(|n| n == name))
    };
    let mut lines = Vec::new();
    let (mut added, mut removed) = (0, 0);
    for name in &touched {
        let status = match (exists_in_base(name), exists_now(name)) {
            (false, true) => {
                added += 1;
                "added"
            }
            (true, false) => {
                removed += 1;
                "removed"
            }
            _ => "changed",
        };
        lines.push(format!("- {name} ({status})"));
    }
    let subject = match message.map(str::trim).filter(|m| !m.is_empty()) {
        Some(message) => message.to_string(),
        None => match touched.len() {
            0 if wiring || settings => "Render the sync wiring".to_string(),
            0 => "Render blueprints".to_string(),
            1 => {
                let name = touched.iter().next().cloned().unwrap_or_default();
                match (added, removed) {
                    (1, _) => format!("Add blueprint {name}"),
                    (_, 1) => format!("Remove blueprint {name}"),
                    _ => format!("Render {name}"),
                }
            }
            n => format!("Render {n} blueprints"),
        },
    };
    let mut text = format!("{subject}\n");
    if !lines.is_empty() {
        text.push_str("\nBlueprints:\n");
        for line in &lines {
            text.push_str(line);
            text.push('\n');
        }
    }
    if settings {
        text.push_str(&format!("\nSettings: {SETTINGS_FILE} changed.\n"));
    }
    if wiring {
        text.push_str(&format!(
            "\nSync wiring: {RENDERED_DIR}/{}/ changed.\n",
            crate::sync::SYNC_DIR
        ));
    }
    text.push_str(&format!(
        "\nRendered by kubectl-aiml {}.\n",
        env!("CARGO_PKG_VERSION")
    ));
    text
}

/// Author and committer as git finds them: `GIT_AUTHOR_*` / `GIT_COMMITTER_*` first (`EMAIL`
/// as a last email), then `author.*` / `committer.*` and `user.*` in git config.
pub fn identity(
    config: &git2::Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(git2::Signature<'static>, git2::Signature<'static>), GitError> {
    let value = |variable: &str, keys: &[&str]| -> Option<String> {
        env(variable).filter(|v| !v.trim().is_empty()).or_else(|| {
            keys.iter()
                .find_map(|key| config.get_string(key).ok().filter(|v| !v.trim().is_empty()))
        })
    };
    let signature = |role: &str, upper: &str| -> Result<git2::Signature<'static>, GitError> {
        let name = value(
            &format!("GIT_{upper}_NAME"),
            &[&format!("{role}.name"), "user.name"],
        )
        .ok_or_else(|| GitError::NoIdentity {
            missing: "user.name".into(),
        })?;
        let email = value(
            &format!("GIT_{upper}_EMAIL"),
            &[&format!("{role}.email"), "user.email"],
        )
        .or_else(|| env("EMAIL").filter(|v| !v.trim().is_empty()))
        .ok_or_else(|| GitError::NoIdentity {
            missing: "user.email".into(),
        })?;
        let variable: &'static str = if upper == "AUTHOR" {
            "GIT_AUTHOR_DATE"
        } else {
            "GIT_COMMITTER_DATE"
        };
        match env(variable).filter(|v| !v.trim().is_empty()) {
            Some(date) => {
                let time = parse_date(&date).ok_or(GitError::Date {
                    variable,
                    value: date.clone(),
                })?;
                Ok(git2::Signature::new(&name, &email, &time)?)
            }
            None => Ok(git2::Signature::now(&name, &email)?),
        }
    };
    Ok((
        signature("author", "AUTHOR")?,
        signature("committer", "COMMITTER")?,
    ))
}

/// A date as `GIT_AUTHOR_DATE` takes it: git's internal format (`@1700000000 +0100`, or
/// without `@`), or ISO 8601 / RFC 3339 (`2026-01-02T03:04:05+01:00`, `Z`, or a space for
/// `T`; no offset is UTC), or RFC 2822 (`Thu, 02 Jan 2026 03:04:05 +0100`).
#[must_use]
pub fn parse_date(text: &str) -> Option<git2::Time> {
    let text = text.trim();
    let raw = text.strip_prefix('@').unwrap_or(text);
    let mut parts = raw.split_whitespace();
    if let Some(seconds) = parts.next().and_then(|s| s.parse::<i64>().ok()) {
        let offset = match parts.next() {
            Some(zone) => offset_minutes(zone)?,
            None => 0,
        };
        return parts
            .next()
            .is_none()
            .then(|| git2::Time::new(seconds, offset));
    }
    iso_8601(text).or_else(|| rfc_2822(text))
}

/// `+0100`, `-05:30`, `Z` → minutes east of UTC.
fn offset_minutes(zone: &str) -> Option<i32> {
    if zone == "Z" || zone == "z" {
        return Some(0);
    }
    let (sign, digits) = match zone.as_bytes().first()? {
        b'+' => (1, &zone[1..]),
        b'-' => (-1, &zone[1..]),
        _ => return None,
    };
    let digits: String = digits.chars().filter(|c| *c != ':').collect();
    if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let hours: i32 = digits[..2].parse().ok()?;
    let minutes: i32 = digits[2..].parse().ok()?;
    (hours < 24 && minutes < 60).then_some(sign * (hours * 60 + minutes))
}

fn iso_8601(text: &str) -> Option<git2::Time> {
    let (date, rest) = text.split_at_checked(10)?;
    let rest = rest.strip_prefix(['T', 't', ' '])?;
    let mut ymd = date.split('-');
    let (year, month, day) = (
        ymd.next()?.parse::<i64>().ok()?,
        ymd.next()?.parse::<u32>().ok()?,
        ymd.next()?.parse::<u32>().ok()?,
    );
    let zone_at = rest.find(['Z', 'z', '+', '-']).unwrap_or(rest.len());
    let (clock, zone) = rest.split_at(zone_at);
    let offset = if zone.is_empty() {
        0
    } else {
        offset_minutes(zone)?
    };
    let seconds = clock_seconds(clock)?;
    let local = civil_seconds(year, month, day)? + seconds;
    Some(git2::Time::new(local - i64::from(offset) * 60, offset))
}

fn rfc_2822(text: &str) -> Option<git2::Time> {
    let text = text.split_once(", ").map_or(text, |(_, rest)| rest);
    let parts: Vec<&str> = text.split_whitespace().collect();
    let [day, month, year, clock, zone] = parts.as_slice() else {
        return None;
    };
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| m.eq_ignore_ascii_case(month))? + 1;
    let offset = offset_minutes(zone)?;
    let local = civil_seconds(
        year.parse().ok()?,
        u32::try_from(month).ok()?,
        day.parse().ok()?,
    )? + clock_seconds(clock)?;
    Some(git2::Time::new(local - i64::from(offset) * 60, offset))
}

fn clock_seconds(clock: &str) -> Option<i64> {
    let mut parts = clock.split(':');
    let hours: i64 = parts.next()?.parse().ok()?;
    let minutes: i64 = parts.next()?.parse().ok()?;
    let seconds: i64 = match parts.next() {
        Some(s) => s.split('.').next()?.parse().ok()?,
        None => 0,
    };
    (parts.next().is_none() && hours < 24 && minutes < 60 && seconds < 61)
        .then_some(hours * 3600 + minutes * 60 + seconds)
}

/// Seconds from 1970-01-01 to midnight of a proleptic Gregorian date (Howard Hinnant's
/// `days_from_civil`).
fn civil_seconds(year: i64, month: u32, day: u32) -> Option<i64> {
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) {
        return None;
    }
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month = i64::from(month);
    let day_of_year =
        (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    Some((era * 146_097 + day_of_era - 719_468) * 86_400)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_in_the_formats_git_takes() {
        let at = |text: &str| parse_date(text).map(|t| (t.seconds(), t.offset_minutes()));
        assert_eq!(at("@1700000000 +0000"), Some((1_700_000_000, 0)));
        assert_eq!(at("1700000000 -0130"), Some((1_700_000_000, -90)));
        assert_eq!(at("2023-11-14T22:13:20Z"), Some((1_700_000_000, 0)));
        assert_eq!(at("2023-11-14 23:13:20+01:00"), Some((1_700_000_000, 60)));
        assert_eq!(
            at("Tue, 14 Nov 2023 23:13:20 +0100"),
            Some((1_700_000_000, 60))
        );
        assert_eq!(at("2000-02-29T00:00:00Z"), Some((951_782_400, 0)));
        for bad in ["yesterday", "2023-13-01T00:00:00Z", "@1 +25:00", "1 2 3"] {
            assert_eq!(at(bad), None, "{bad}");
        }
    }

    #[test]
    fn identity_comes_from_the_environment_then_config() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = git2::Config::open(&dir.path().join("config")).unwrap();
        let none = |_: &str| None;
        assert!(matches!(
            identity(&config, &none),
            Err(GitError::NoIdentity { .. })
        ));
        config.set_str("user.name", "Config Person").unwrap();
        config.set_str("user.email", "config@example.com").unwrap();
        let (author, committer) = identity(&config, &none).unwrap();
        assert_eq!(author.name().unwrap(), "Config Person");
        assert_eq!(committer.email().unwrap(), "config@example.com");
        let env = |name: &str| match name {
            "GIT_AUTHOR_NAME" => Some("Env Author".to_string()),
            "GIT_COMMITTER_DATE" => Some("@1700000000 +0000".to_string()),
            _ => None,
        };
        let (author, committer) = identity(&config, &env).unwrap();
        assert_eq!(author.name().unwrap(), "Env Author");
        assert_eq!(author.email().unwrap(), "config@example.com");
        assert_eq!(committer.when().seconds(), 1_700_000_000);
        let bad = |name: &str| (name == "GIT_AUTHOR_DATE").then(|| "soon".to_string());
        assert!(matches!(
            identity(&config, &bad),
            Err(GitError::Date { .. })
        ));
    }
}

//! GitOps: committing what `render` wrote, and reviewing a change as objects.
//!
//! - [`commit`]: `render --commit` makes one commit of the changed blueprints, overlays and
//!   rendered files through git2 (no `git` process), on the current branch or on another
//!   branch without touching the checkout.
//! - [`diff`]: `kubectl aiml diff` compares the rendered objects of a git revision with the
//!   working tree (or a fresh render): objects matched by identity, field-level changes.
//! - [`impact`]: what a diff means before anyone reads it: destructive changes (Config
//!   Connector fields GCP cannot update in place, removed stateful resources), TPU chips and
//!   GPUs gained or lost, and an hourly cost estimate from [`prices`].
//!
//! Neighbours: [`crate::workspace`] writes the files a commit picks up; [`crate::manifest`]
//! gives objects their identity and file layout, which the diff reads back.

pub mod commit;
pub mod diff;
pub mod impact;
pub mod prices;
pub mod report;

use std::path::{Path, PathBuf};

/// Why a git operation could not be done (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The repository folder is in no git work tree.
    #[error("`{0}` is not in a git repository; run `git init` first, or leave out `--commit`")]
    NotARepository(String),
    /// git refuses a repository another user owns unless `safe.directory` names it (CVE-2022-24765);
    /// libgit2 applies the same check. Common in CI containers, where the checkout belongs to
    /// the runner's user.
    #[error(
        "the git repository at `{0}` belongs to another user, and git trusts it only if `safe.directory` names it; run as its owner, or trust it with `git config --global --add safe.directory {0}`"
    )]
    NotOwned(String),
    /// A bare repository has no work tree to commit from.
    #[error("`{0}` is a bare git repository: there is no work tree to commit")]
    Bare(String),
    /// No author or committer identity.
    #[error(
        "no git identity to commit as ({missing}): set `git config --global user.name \"Your Name\"` and `git config --global user.email you@example.com`, or the GIT_AUTHOR_NAME and GIT_AUTHOR_EMAIL environment variables"
    )]
    NoIdentity {
        /// What is missing, e.g. `user.email`.
        missing: String,
    },
    /// A `GIT_*_DATE` variable that cannot be read.
    #[error(
        "`{variable}={value}` is not a date git understands here: use `@UNIX-SECONDS +HHMM` or ISO 8601 (`2026-01-02T03:04:05+01:00`)"
    )]
    Date {
        /// The variable.
        variable: &'static str,
        /// Its value.
        value: String,
    },
    /// A branch name git would refuse.
    #[error("`{0}` is not a valid branch name")]
    BranchName(String),
    /// `--branch` names a branch whose files differ from the checkout's outside what a render
    /// commit owns: switching to it would change files the render did not write.
    #[error(
        "branch `{branch}` differs from the checkout outside blueprints/, kinds/, overlays/, rendered/ and aiml.yaml (first: `{path}`), so the checkout cannot move to it with the render's commit; switch to it first (`git switch {branch}`), then run `kubectl aiml render --commit` there"
    )]
    BranchDiverged {
        /// The branch.
        branch: String,
        /// The first differing path.
        path: String,
    },
    /// Git ignores files the commit must hold: it would leave them out.
    #[error(
        "git ignores {} (first: `{first}`), so `--commit` would commit blueprints without their output; nothing was written. Remove the rule that matches it (`git check-ignore -v {first}` names the file and line), or leave out `--commit`",
        if *.count == 1 { "a file the commit must hold".to_string() } else { format!("{} files the commit must hold", .count) }
    )]
    Ignored {
        /// The first ignored path, relative to the work tree.
        first: String,
        /// How many.
        count: usize,
    },
    /// A merge, rebase or similar is in progress.
    #[error("the git repository is in the middle of a {0}; finish or abort it first")]
    Busy(String),
    /// A revision that does not resolve.
    #[error("`{rev}` is not a revision of this repository: {message}")]
    Revision {
        /// As given.
        rev: String,
        /// libgit2's account.
        message: String,
    },
    /// libgit2 failed.
    #[error("git: {0}")]
    Git(#[from] git2::Error),
    /// File system trouble; the path is in the message.
    #[error(transparent)]
    Io(#[from] std::io::Error),
}

/// A git repository and where the kubectl-aiml repository sits in its work tree.
pub struct Repo {
    /// The repository.
    pub repo: git2::Repository,
    /// The kubectl-aiml repository root relative to the work tree, with `/` separators and a
    /// trailing `/` (`""` at the work tree's root).
    pub prefix: String,
    /// The work tree.
    pub workdir: PathBuf,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("prefix", &self.prefix)
            .field("workdir", &self.workdir)
            .finish_non_exhaustive()
    }
}

impl Repo {
    /// Opens the git repository whose work tree holds `root`.
    pub fn open(root: &Path) -> Result<Self, GitError> {
        let root = fs_err::canonicalize(root)?;
        let repo = git2::Repository::discover(&root).map_err(|error| {
            if error.code() == git2::ErrorCode::Owner {
                GitError::NotOwned(root.display().to_string())
            } else {
                GitError::NotARepository(root.display().to_string())
            }
        })?;
        let Some(workdir) = repo.workdir() else {
            return Err(GitError::Bare(repo.path().display().to_string()));
        };
        let workdir = fs_err::canonicalize(workdir)?;
        let relative = root
            .strip_prefix(&workdir)
            .map_err(|_| GitError::NotARepository(root.display().to_string()))?;
        let mut prefix = crate::repo::display_path(Path::new(""), relative);
        if !prefix.is_empty() {
            prefix.push('/');
        }
        Ok(Self {
            repo,
            prefix,
            workdir,
        })
    }

    /// The full id of the commit `HEAD` points at (`None` without commits).
    #[must_use]
    pub fn head_commit(&self) -> Option<String> {
        let commit = self.repo.head().ok()?.peel_to_commit().ok()?;
        Some(commit.id().to_string())
    }

    /// The tree of `rev` (`None` for `HEAD` of a repository without commits).
    pub fn tree_at(&self, rev: &str) -> Result<Option<git2::Tree<'_>>, GitError> {
        if rev == "HEAD" && self.repo.head().is_err() {
            return Ok(None);
        }
        let object = self
            .repo
            .revparse_single(rev)
            .map_err(|e| GitError::Revision {
                rev: rev.to_string(),
                message: e.message().to_string(),
            })?;
        object
            .peel_to_tree()
            .map(Some)
            .map_err(|e| GitError::Revision {
                rev: rev.to_string(),
                message: e.message().to_string(),
            })
    }
}

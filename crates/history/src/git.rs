//! What the repository says about the code being measured: commit, branch, a dirty work tree,
//! the commit's time and subject; which commits a baseline (`main`, a tag, a commit) holds; and
//! whether a new history file is one git would list as untracked. Read through the `git` program, from the current directory; outside a repository (or
//! without `git`) there is nothing to record.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The commit a run measured.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GitInfo {
    /// Full commit hash.
    pub commit: String,
    /// Branch name: `HEAD`'s, or on a detached `HEAD` the CI's (`GITHUB_HEAD_REF`,
    /// `GITHUB_REF_NAME`, `CI_COMMIT_REF_NAME`); `None` when neither tells.
    pub branch: Option<String>,
    /// Uncommitted changes to tracked files.
    pub dirty: bool,
    /// The commit's committer time, RFC 3339.
    pub time: Option<String>,
    /// The commit's subject line.
    pub subject: Option<String>,
}

fn git(dir: Option<&Path>, args: &[&str]) -> Option<String> {
    let mut c = Command::new("git");
    if let Some(d) = dir {
        c.arg("-C").arg(d);
    }
    let out = c
        .args(args)
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string())
}

/// The top of the repository around the current directory.
pub fn toplevel() -> Option<PathBuf> {
    git(None, &["rev-parse", "--show-toplevel"])
        .filter(|s| !s.is_empty())
        .map(PathBuf::from)
}

/// The current commit, or `None` outside a repository (or before its first commit).
pub fn current() -> Option<GitInfo> {
    let commit = git(None, &["rev-parse", "--verify", "-q", "HEAD"])?;
    let mut info = describe(&commit)?;
    info.branch = git(None, &["symbolic-ref", "-q", "--short", "HEAD"])
        .filter(|b| !b.is_empty())
        .or_else(ci_branch);
    // The history file itself (committed by some teams) does not make the tree dirty.
    info.dirty = git(
        None,
        &[
            "status",
            "--porcelain",
            "--untracked-files=no",
            "--",
            ":(top,exclude).volley",
        ],
    )
    .is_some_and(|s| !s.is_empty());
    Some(info)
}

/// The branch a CI names for a detached checkout.
fn ci_branch() -> Option<String> {
    ["GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_REF_NAME"]
        .iter()
        .filter_map(|k| std::env::var(k).ok())
        .find(|v| !v.is_empty())
}

/// A commit's hash, time and subject (`rev` as git reads it); `None` when git does not know it.
pub fn describe(rev: &str) -> Option<GitInfo> {
    if rev.starts_with('-') {
        return None;
    }
    let out = git(
        None,
        &[
            "log",
            "-1",
            "--format=%H%x00%cI%x00%s",
            "--end-of-options",
            rev,
            "--",
        ],
    )?;
    let mut parts = out.splitn(3, '\0');
    let commit = parts.next()?.to_string();
    if commit.len() < 7 {
        return None;
    }
    Some(GitInfo {
        commit,
        branch: None,
        dirty: false,
        time: parts.next().map(str::to_string),
        subject: parts.next().map(str::to_string),
    })
}

/// The commits reachable from `rev`, newest first (at most `limit`); `None` when `rev` is not
/// a revision of this repository (or there is none).
pub fn history_of(rev: &str, limit: usize) -> Option<Vec<String>> {
    if rev.starts_with('-') {
        return None;
    }
    let max = format!("--max-count={limit}");
    let out = git(None, &["rev-list", &max, "--end-of-options", rev, "--"])?;
    Some(out.lines().map(str::to_string).collect())
}

/// Whether `path` (a file that exists) lies in a git work tree that does not ignore it, so
/// that `git status` lists it as untracked.
pub fn unignored(path: &Path) -> bool {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let Some(name) = path.file_name().map(|n| n.to_string_lossy()) else {
        return false;
    };
    git(Some(dir), &["rev-parse", "--is-inside-work-tree"]).as_deref() == Some("true")
        && git(Some(dir), &["check-ignore", "-q", "--", &name]).is_none()
}

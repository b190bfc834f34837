//! What the history tests share: a git repository of their own, commits in it, and RunResults
//! made from a real one with chosen numbers.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

/// Runs git in `dir` with a fixed identity; its stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.invalid")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.invalid")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A new repository at `dir` on branch `main`.
pub fn repo(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    git(dir, &["init", "-q"]);
    git(dir, &["checkout", "-q", "-b", "main"]);
}

/// An empty commit; its hash.
pub fn commit(dir: &Path, subject: &str) -> String {
    git(dir, &["commit", "-q", "--allow-empty", "-m", subject]);
    git(dir, &["rev-parse", "HEAD"])
}

/// A RunResult like `template` with the given throughput and p50 (µs), started at `started`.
pub fn result(template: &Value, rps: f64, p50_us: u64, started: &str) -> Value {
    let mut r = template.clone();
    r["throughput_rps"] = rps.into();
    r["latency_us"]["p50"] = p50_us.into();
    r["service_time_us"]["p50"] = p50_us.into();
    r["started_at"] = started.into();
    r
}

/// `2026-11-01T00:MM:SSZ` for the `i`th run: distinct, increasing.
pub fn started(i: usize) -> String {
    format!(
        "2026-11-01T{:02}:{:02}:{:02}Z",
        i / 3600,
        (i / 60) % 60,
        i % 60
    )
}

//! The commit volley is built from, for `volley --version` and `volley version --json`:
//! `git rev-parse --short=12 HEAD`, or `unknown` when the sources are not a git checkout (a
//! crate from a registry, an archive).

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn main() {
    let commit = git(&["rev-parse", "--short=12", "HEAD"]);
    println!(
        "cargo:rustc-env=VOLLEY_COMMIT={}",
        commit.as_deref().unwrap_or("unknown")
    );
    // Run again when HEAD moves: a checkout, a commit on the current branch.
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        let dir = Path::new(&dir);
        println!("cargo:rerun-if-changed={}", dir.join("HEAD").display());
        println!(
            "cargo:rerun-if-changed={}",
            dir.join("packed-refs").display()
        );
        if let Some(r) = git(&["symbolic-ref", "-q", "HEAD"]) {
            println!("cargo:rerun-if-changed={}", dir.join(r).display());
        }
    }
    println!("cargo:rerun-if-changed=build.rs");
}

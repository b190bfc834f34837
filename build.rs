//! The commit volley is built from, for `volley --version` and `volley version --json`:
//! `VOLLEY_BUILD_COMMIT` when set (an archive of a commit that says which, as the bench
//! scripts' baseline builds do), else `git rev-parse --short=12 HEAD` when these sources are
//! the top of a git checkout, else `unknown` (a crate from a registry, an archive — also one
//! unpacked inside another checkout, whose HEAD is not these sources').

use std::path::Path;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether the git work tree around us is these sources' own.
fn own_checkout() -> bool {
    let (Some(top), Ok(here)) = (
        git(&["rev-parse", "--show-toplevel"]),
        std::env::var("CARGO_MANIFEST_DIR"),
    ) else {
        return false;
    };
    let canon = |p: &str| std::fs::canonicalize(p).ok();
    canon(&top).is_some_and(|t| Some(t) == canon(&here))
}

fn main() {
    println!("cargo:rerun-if-env-changed=VOLLEY_BUILD_COMMIT");
    let commit = std::env::var("VOLLEY_BUILD_COMMIT")
        .ok()
        .filter(|c| !c.trim().is_empty())
        .or_else(|| {
            own_checkout()
                .then(|| git(&["rev-parse", "--short=12", "HEAD"]))
                .flatten()
        });
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

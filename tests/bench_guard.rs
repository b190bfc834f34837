//! `volley bench` guardrails: `--dry-run` lists the cells and the estimated time without
//! starting anything; a large matrix needs `--yes` (or a terminal to confirm); a server on the
//! wrong port or backgrounded by its start line fails early with a hint; no zombie children
//! pile up during a suite; an interrupted suite sums up its skipped cells in one line.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

fn bench(dir: &Path, suite: &str, extra: &[&str]) -> (Output, PathBuf) {
    let file = dir.join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.join("out");
    let o = Command::new(VOLLEY)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .args(extra)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    (o, out)
}

fn index(out: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(out.join("suite.json")).unwrap()).unwrap()
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A control suite of `n` cells (closed port: nothing to start, nothing fails).
fn control_suite(n: usize, duration: &str) -> String {
    let conns: Vec<String> = (1..=n).map(|c| c.to_string()).collect();
    format!(
        "[suite]\nname = \"big\"\nduration = \"{duration}\"\n[[server]]\nname = \"none\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"g\"\nconnections = [{}]\n",
        conns.join(", ")
    )
}

#[test]
fn dry_run_lists_cells_and_the_estimate_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"small\"\nrepetitions = 2\nwarmup = \"1s\"\nduration = \"3s\"\n[[server]]\nname = \"a\"\nstart = \"touch {0}/started; exec sleep 100\"\n[[server]]\nname = \"none\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"get\"\nconnections = [1, 2]\n[[scenario]]\nname = \"one\"\nservers = [\"a\"]\n",
        dir.path().display()
    );
    let (o, out) = bench(dir.path(), &suite, &["--dry-run"]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // 2 reps × (a: 2 + 1 cells, none: 2 cells) = 10 cells of 1 + 3 + 2 s.
    assert!(
        stdout.contains("10 cells, about 1m00s, 2 repetitions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  a · get (connections): 2 cells × 2 = 4, about 24s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  a · one: 1 cell × 2 = 2, about 12s"),
        "{stdout}"
    );
    assert!(stdout.contains("builds not included"), "{stdout}");
    assert!(!out.exists(), "no results folder");
    assert!(!dir.path().join("started").exists(), "no server started");
}

#[test]
fn a_large_matrix_needs_yes_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = bench(dir.path(), &control_suite(101, "1s"), &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("101 cells") && err.contains("--yes") && err.contains("--dry-run"),
        "{err}"
    );
    assert!(!out.exists(), "nothing created");
    // With --yes it goes ahead (--dry-run keeps the test short: it lists, and exits 0).
    let (o, out) = bench(
        dir.path(),
        &control_suite(101, "1s"),
        &["--yes", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("101 cells"));
    assert!(!out.exists());
    // 100 cells is not over the limit, but 100 cells of 20 s are over 30 minutes.
    let (o, _) = bench(dir.path(), &control_suite(100, "20s"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("about 36m40s"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_large_matrix_runs_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let mut suite = control_suite(101, "1ms");
    suite = suite.replace("[suite]\n", "[suite]\nwarmup = \"0s\"\n");
    let (o, out) = bench(dir.path(), &suite, &["--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let idx = index(&out);
    assert_eq!(idx["rows"].as_array().unwrap().len(), 101);
}

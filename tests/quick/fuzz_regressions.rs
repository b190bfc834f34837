//! Replays every input kept under `fuzz/regressions/<target>/` through the same check the
//! fuzz target runs (`volley_fuzzing`, crates/fuzzing), so what the fuzzer once found stays fixed without a
//! nightly toolchain. Inputs that crashed are kept there with the fix; a few hand-picked ones
//! cover each target's main paths.

use std::path::{Path, PathBuf};

fn inputs(target: &str) -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable folder entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    assert!(
        !files.is_empty(),
        "no regression input in {}",
        dir.display()
    );
    files
}

fn replay(target: &str, check: fn(&[u8])) {
    for path in inputs(target) {
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = path.display().to_string();
        if let Err(panic) = std::panic::catch_unwind(|| check(&data)) {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            panic!("{target}: {name} failed the check again: {msg}");
        }
    }
}

#[test]
fn response() {
    replay("response", volley_fuzzing::check_response);
}

#[test]
fn units() {
    replay("units", volley_fuzzing::check_units);
}

#[test]
fn suite() {
    replay("suite", volley_fuzzing::check_suite);
}

#[test]
fn result() {
    replay("result", volley_fuzzing::check_result);
}

#[test]
fn h2() {
    replay("h2", volley_fuzzing::check_h2);
}

#[test]
fn h3() {
    replay("h3", volley_fuzzing::check_h3);
}

#[test]
fn hsperfdata() {
    replay("hsperfdata", volley_fuzzing::check_hsperfdata);
}

#[test]
fn gctrace() {
    replay("gctrace", volley_fuzzing::check_gctrace);
}

#[test]
fn jvmlog() {
    replay("jvmlog", volley_fuzzing::check_jvmlog);
}

#[test]
fn nodetrace() {
    replay("nodetrace", volley_fuzzing::check_nodetrace);
}

#[test]
fn h2_worker() {
    replay("h2_worker", volley_fuzzing::check_h2_worker);
}

/// The `h2_worker` seeds reach what they are named for (a seed that no longer does would
/// still pass its check while testing nothing).
#[test]
fn h2_worker_seeds_reach_their_paths() {
    let run = |name: &str| {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fuzz/regressions/h2_worker")
            .join(name);
        let data = std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        volley_fuzzing::run_h2_worker(&data, false).expect("an input with its set-up")
    };
    // Every request written twice (the resend of a graceful GOAWAY's unprocessed streams),
    // then a `protocol` error when the next connection turns it away again.
    let o = run("seed-goaway-every-connection");
    assert_eq!(
        (o.taken, o.written_twice, o.errors.protocol),
        (8, 8, 8),
        "{o:?}"
    );
    // POST is not sent again.
    let o = run("seed-goaway-every-connection-post");
    assert_eq!((o.written_twice, o.errors.protocol), (0, 8), "{o:?}");
    let o = run("seed-refused-every-stream");
    assert_eq!(
        (o.taken, o.written_twice, o.errors.protocol),
        (8, 8, 8),
        "{o:?}"
    );
    // A PING before SETTINGS: the connection was of no use, a connect error, and before any
    // response the run ends.
    let o = run("seed-ping-before-settings");
    assert_eq!((o.sent, o.errors.connect), (0, 1), "{o:?}");
    // Bodies queued up to the bound, not the 8 × 256 KiB the windows allow.
    let o = run("seed-wide-windows-never-reads");
    assert!(o.max_out > 64 << 10, "{o:?}");
    let o = run("seed-stalled-stream");
    assert_eq!((o.completed, o.errors.timeout), (1, 2), "{o:?}");
    let o = run("seed-responses");
    assert!(o.completed >= 12, "{o:?}");
}

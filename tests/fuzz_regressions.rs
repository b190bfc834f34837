//! Replays every input kept under `fuzz/regressions/<target>/` through the same check the
//! fuzz target runs (`volley::fuzzing`), so what the fuzzer once found stays fixed without a
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
    replay("response", volley::fuzzing::check_response);
}

#[test]
fn units() {
    replay("units", volley::fuzzing::check_units);
}

#[test]
fn suite() {
    replay("suite", volley::fuzzing::check_suite);
}

#[test]
fn result() {
    replay("result", volley::fuzzing::check_result);
}

#[test]
fn h2() {
    replay("h2", volley::fuzzing::check_h2);
}

#[test]
fn hsperfdata() {
    replay("hsperfdata", volley::fuzzing::check_hsperfdata);
}

#[test]
fn gctrace() {
    replay("gctrace", volley::fuzzing::check_gctrace);
}

#[test]
fn jvmlog() {
    replay("jvmlog", volley::fuzzing::check_jvmlog);
}

#[test]
fn nodetrace() {
    replay("nodetrace", volley::fuzzing::check_nodetrace);
}

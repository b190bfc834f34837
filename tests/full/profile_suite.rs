//! `profile = true` in a suite: the harness turns on what lets each runtime's frames be walked
//! and named (a JVM's `-XX:+PreserveFramePointer`, Node's `--perf-basic-prof`), volley asks
//! the JVM for its perf map, and each cell's folded stacks land beside its RunResult, named in
//! `server.profile.path` and drawn in the suite's report. The JVM is a fixture with a known hot
//! method (tests/fixtures/profile/Burn.java: `burn`, called from `handle`).

use crate::common;

use std::path::Path;

use common::{bench_suite, output_text, scratch, suite_index};
use serde_json::Value;

const SUITE: &str = r#"[suite]
name = "profiled"
duration = "4s"
warmup = "2s"

[[server]]
name = "java"
dir = "java"
build = "javac -d out Burn.java"
start = "exec java -XX:CompileCommand=quiet -XX:CompileCommand=dontinline,Burn::* -cp out Burn"
runtime = "jvm"

[[server]]
name = "node"
dir = "node"
start = "exec node server.js"
runtime = "node"

[[scenario]]
name = "get"
connections = 4
profile = true
"#;

/// The suite's folder: Burn.java in `java/`, the Node reference server in `node/`.
fn folder() -> std::path::PathBuf {
    let dir = scratch("profile", "suite");
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    for (from, to) in [
        ("tests/fixtures/profile/Burn.java", "java/Burn.java"),
        ("servers/node/server.js", "node/server.js"),
    ] {
        let to = dir.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(root.join(from), to).unwrap();
    }
    dir
}

/// Each row's RunResult and folded stacks, by server name.
fn profiled_rows(out: &Path) -> Vec<(String, Value, String)> {
    let idx = suite_index(out);
    let rows = idx["rows"].as_array().unwrap();
    rows.iter()
        .map(|row| {
            assert_eq!(row["status"], "ok", "{row:#}");
            let json = out.join(row["path"].as_str().unwrap());
            let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
            let named = r["server"]["profile"]["path"]
                .as_str()
                .unwrap_or_else(|| panic!("no folded file named: {:#}", r["server"]["profile"]));
            let folded = json.parent().unwrap().join(named);
            let text = std::fs::read_to_string(&folded)
                .unwrap_or_else(|e| panic!("{}: {e}", folded.display()));
            (row["server"].as_str().unwrap().to_string(), r, text)
        })
        .collect()
}

#[test]
fn a_profiled_suite_names_a_jvms_hot_method_and_a_nodes_handler() {
    for tool in ["java", "javac", "jcmd", "node"] {
        if !common::on_path(tool) {
            common::skip(&format!(
                "{tool} is not installed (servers/install.sh installs it)"
            ));
            return;
        }
    }
    let dir = folder();
    let (o, out) = bench_suite(&dir, SUITE, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let rows = profiled_rows(&out);
    assert_eq!(rows.len(), 2);
    for (server, r, folded) in &rows {
        let p = &r["server"]["profile"];
        // The samples add up to the CPU the kernel's counters give per request.
        let (sampled, counted) = (
            p["cpu_us_per_request"].as_f64().unwrap(),
            r["server"]["per_request"]["cpu_us"].as_f64().unwrap(),
        );
        assert!(
            (sampled / counted - 1.0).abs() < 0.2,
            "{server}: sampled {sampled} µs a request, counted {counted}"
        );
        let pid = p["processes"][0]["pid"].as_i64().unwrap();
        // The runtimes' maps are the harness's leftovers: gone with the server.
        assert!(
            !Path::new(&format!("/tmp/perf-{pid}.map")).exists(),
            "{server}: /tmp/perf-{pid}.map left behind"
        );
        if server == "java" {
            assert_java(p, folded);
        } else {
            // server.js's handler is `handle`, named from the map --perf-basic-prof writes.
            assert!(
                folded
                    .lines()
                    .any(|l| l.contains("JS:") && l.contains("handle") && l.contains("server.js")),
                "{folded}"
            );
        }
    }
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(
        html.contains("Burn.burn"),
        "the report draws the JVM's stacks"
    );
}

/// Frames of the JIT's compiler threads: their loop, or a stack cut short inside the compiler
/// (C2's `Compile::`, C1's `Compilation::`).
const JIT_FRAMES: [&str; 4] = [
    "CompileBroker::",
    "Compile::",
    "Compilation::",
    "C2Compiler::",
];

/// The JVM ran with frame pointers kept and its perf map written; `burn` is its hottest
/// function, under `handle`.
fn assert_java(p: &Value, folded: &str) {
    let jvm = &p["processes"][0]["jvm"];
    assert_eq!(jvm["preserve_frame_pointer"], true, "{p:#}");
    assert_eq!(jvm["perf_map"], true, "{p:#}");
    let top = &p["top"][0];
    assert!(
        top["name"].as_str().unwrap().contains("Burn.burn("),
        "the hottest function is not burn: {:#}",
        p["top"]
    );
    // Most of the CPU spent serving: the JIT's compiler threads, still at work after the
    // warm-up on a slow machine (a fifth of the JVM's CPU on a loaded runner), are left out.
    let (mut all, mut jit, mut burn) = (0u64, 0u64, 0u64);
    for l in folded.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let n: u64 = n.parse().unwrap();
        all += n;
        if JIT_FRAMES.iter().any(|f| stack.contains(f)) {
            jit += n;
        }
        if stack.rsplit(';').next().unwrap().contains("Burn.burn(") {
            burn += n;
        }
    }
    let serving = (all - jit) as f64;
    assert!(
        burn as f64 >= 0.5 * serving,
        "burn has {burn} of {all} samples, {jit} of them the JIT's: {top:#}"
    );
    // Its caller is walked through the compiled frames (PreserveFramePointer).
    let walked = folded
        .lines()
        .any(|l| l.contains("Burn.handle(") && l.contains("Burn.burn("));
    assert!(walked, "no stack from handle to burn:\n{folded}");
}

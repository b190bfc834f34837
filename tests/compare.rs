//! `volley compare` on real results: runs against the built-in server (a fast path and a
//! delayed one), results edited for deterministic cases, suite folders with 5 repetitions a
//! side (synthesized, and from a real `volley bench`), and inputs that must be refused.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Mutex, OnceLock};

use common::scratch;
use serde_json::{json, Value};

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

/// Real runs compete for the 2 cores with nothing else from this file.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// `volley run URL -c 2 -d 1s --quiet --json PATH`.
fn run_to(url: &str, path: &Path) {
    let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let o = Command::new(VOLLEY)
        .args(["run", url, "-c", "2", "-d", "1s", "--quiet", "--json"])
        .arg(path)
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "volley run {url}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// A run against `/` and one against `/delay?ms=2` (much slower with 2 connections).
fn runs() -> &'static (PathBuf, PathBuf) {
    static RUNS: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    RUNS.get_or_init(|| {
        let server = volley::serve::spawn("127.0.0.1:0").unwrap();
        let dir = scratch("compare", "runs");
        let (a, b) = (dir.join("fast.json"), dir.join("slow.json"));
        run_to(&format!("http://{}/", server.addr), &a);
        run_to(&format!("http://{}/delay?ms=2", server.addr), &b);
        (a, b)
    })
}

fn read(p: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn write(p: &Path, v: &Value) {
    std::fs::write(p, serde_json::to_string_pretty(v).unwrap()).unwrap();
}

fn compare(args: &[&dyn AsRef<std::ffi::OsStr>]) -> Output {
    let mut c = Command::new(VOLLEY);
    c.arg("compare");
    for a in args {
        c.arg(a);
    }
    c.output().unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// The comparison JSON of `volley compare A B ARGS --json -`.
fn compare_json(a: &Path, b: &Path, extra: &[&str]) -> (Option<i32>, Value) {
    let mut c = Command::new(VOLLEY);
    c.arg("compare")
        .arg(a)
        .arg(b)
        .args(extra)
        .args(["--json", "-"]);
    let o = c.output().unwrap();
    let v: Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&o)));
    assert_eq!(v["schema"], "volley.compare/1");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("B/A"),
        "with --json - the table goes to stderr: {}",
        text(&o)
    );
    (o.status.code(), v)
}

#[test]
fn a_result_against_itself_is_no_regression() {
    let (a, _) = runs();
    let o = compare(&[a, a, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("too few repetitions to call (n=1/1; need 5 a side)"),
        "{out}"
    );
    assert!(out.contains("no regression beyond 5%"), "{out}");
    assert!(out.contains("1.000") && out.contains("+0.0%"), "{out}");
}

#[test]
fn a_slower_target_is_a_regression() {
    let (fast, slow) = runs();
    let o = compare(&[fast, slow, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("REGRESSION") && out.contains("regression: "),
        "{out}"
    );
    // Without the flag the same difference is shown, and the exit code stays 0.
    let o = compare(&[fast, slow]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The other way round B is faster: no regression.
    let o = compare(&[slow, fast, &"--fail-if-slower", &"5"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Open-loop latency metric by flag: the delayed path's p99 is higher, so worse.
    let (code, v) = compare_json(fast, slow, &["--metric", "p99", "--fail-if-slower", "5%"]);
    assert_eq!(code, Some(1));
    let p = &v["pairs"][0];
    assert_eq!(p["metric"], "p99");
    assert_eq!(p["better"], "lower");
    assert!(p["ratio"].as_f64().unwrap() > 1.0, "{p}");
    assert_eq!(p["regression"], true);
}

#[test]
fn edited_throughput_is_judged_by_the_medians() {
    let (a, _) = runs();
    let dir = scratch("compare", "edited");
    let base = read(a);
    let tput = base["throughput_rps"].as_f64().unwrap();
    let with = |factor: f64, name: &str| {
        let mut v = base.clone();
        v["throughput_rps"] = json!(tput * factor);
        let p = dir.join(name);
        write(&p, &v);
        p
    };
    let ninety = with(0.9, "ninety.json");
    let (code, v) = compare_json(a, &ninety, &["--fail-if-slower", "5%"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["regression"], true);
    assert_eq!(v["fail_if_slower_pct"], 5.0);
    let p = &v["pairs"][0];
    assert_eq!(p["metric"], "throughput");
    assert_eq!(p["better"], "higher");
    assert!((p["ratio"].as_f64().unwrap() - 0.9).abs() < 1e-9, "{p}");
    assert!(
        (p["change_pct"].as_f64().unwrap() + 10.0).abs() < 1e-6,
        "{p}"
    );
    assert_eq!(p["a"].as_f64().unwrap(), tput);
    assert_eq!(p["verdict"], "too few repetitions");
    assert_eq!(p["p_value"], Value::Null);
    assert_eq!((p["n_a"].as_u64(), p["n_b"].as_u64()), (Some(1), Some(1)));
    let names: Vec<&str> = p["secondary"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["metric"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["p50", "p99", "errors", "cpu_per_request"]);
    // 10% worse passes a 15% limit; 3% worse passes 5%.
    let (code, _) = compare_json(a, &ninety, &["--fail-if-slower", "15"]);
    assert_eq!(code, Some(0));
    let (code, _) = compare_json(
        a,
        &with(0.97, "ninety-seven.json"),
        &["--fail-if-slower", "5%"],
    );
    assert_eq!(code, Some(0));
    // --json PATH writes the file and prints the table; an unwritable path exits 3.
    let out = dir.join("cmp.json");
    let o = compare(&[a, &ninety, &"--json", &out]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert_eq!(read(&out)["pairs"][0]["verdict"], "too few repetitions");
    let o = compare(&[a, &ninety, &"--json", &"/nonexistent-dir/cmp.json"]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("/nonexistent-dir/cmp.json"));
}

/// A results folder with `suite.json` and one run file per (scenario, rep), each a copy of
/// `template` with the given throughput.
fn suite_folder(dir: &Path, template: &Value, cells: &[(&str, &[f64])]) -> PathBuf {
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    let mut rows = Vec::new();
    for (scenario, throughputs) in cells {
        for (i, t) in throughputs.iter().enumerate() {
            let rel = format!("runs/serve__{scenario}__r{}.json", i + 1);
            let mut v = template.clone();
            v["throughput_rps"] = json!(t);
            write(&dir.join(&rel), &v);
            rows.push(json!({
                "server": "serve", "scenario": scenario, "axes": {"connections": "2"},
                "rep": i + 1, "status": "ok", "reason": null, "control": false,
                "path": rel, "log": null, "flags": ["-c", "2"], "headline": null, "wall_s": 1.0
            }));
        }
    }
    let index = json!({
        "schema": "volley.suite/1", "volley_version": "0.1.0", "suite_file": "made.toml",
        "suite": {"suite": {"name": "made"}},
        "env": {"cpu_model": null, "cores": 2, "kernel": null,
                "pinning": {"client_cpus": null, "server_cpus": null}, "tools": {}},
        "started_at": "2024-01-01T00:00:00.000000Z", "finished_at": null, "state": "done",
        "builds": [], "rows": rows
    });
    write(&dir.join("suite.json"), &index);
    dir.to_path_buf()
}

#[test]
fn five_repetitions_a_side_give_a_verdict() {
    let (a, _) = runs();
    let template = read(a);
    let dir = scratch("compare", "five");
    let base = suite_folder(
        &dir.join("base"),
        &template,
        &[
            ("get", &[1000.0, 1010.0, 990.0, 1020.0, 980.0]),
            ("extra", &[5.0]),
        ],
    );
    let slower = suite_folder(
        &dir.join("slower"),
        &template,
        &[("get", &[900.0, 910.0, 890.0, 920.0, 880.0])],
    );
    let (code, v) = compare_json(&base, &slower, &["--fail-if-slower", "5%"]);
    assert_eq!(code, Some(1), "{v}");
    let p = &v["pairs"][0];
    assert_eq!(p["label"], "get connections=2");
    assert_eq!(p["server"], "serve");
    assert_eq!(p["verdict"], "slower");
    assert_eq!(p["u"], 0.0);
    // Completely separated samples of 5 and 5: SciPy's asymptotic two-sided p (see the unit
    // tests of src/compare/stats.rs).
    assert!(
        (p["p_value"].as_f64().unwrap() - 0.012185780355344813).abs() < 1e-9,
        "{p}"
    );
    assert_eq!(p["a"], 1000.0);
    assert_eq!(p["b"], 900.0);
    assert_eq!(p["a_range"], json!([980.0, 1020.0]));
    assert_eq!((p["n_a"].as_u64(), p["n_b"].as_u64()), (Some(5), Some(5)));
    // The cell only A has is listed, not an error.
    assert_eq!(v["only_in_a"][0]["label"], "extra connections=2");
    assert_eq!(v["only_in_b"], json!([]));
    // The other way round: faster.
    let (code, v) = compare_json(&slower, &base, &["--fail-if-slower", "5%"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["pairs"][0]["verdict"], "faster");

    // Medians 10% apart but the samples overlap: not significant, so no regression even
    // with a 0% limit (with 5+ a side the test decides, not the medians).
    let noisy = suite_folder(
        &dir.join("noisy"),
        &template,
        &[("get", &[1200.0, 700.0, 1150.0, 900.0, 800.0])],
    );
    let (code, v) = compare_json(&base, &noisy, &["--fail-if-slower", "0"]);
    assert_eq!(code, Some(0), "{v}");
    let p = &v["pairs"][0];
    assert_eq!(p["verdict"], "no significant difference");
    assert!(p["p_value"].as_f64().unwrap() >= 0.05);
    let o = compare(&[&base, &noisy]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("no significant difference (p="), "{out}");
    assert!(
        out.contains("only in A: extra connections=2 · serve"),
        "{out}"
    );
}

#[test]
fn real_suites_with_five_repetitions() {
    let dir = scratch("compare", "bench");
    let suite = |name: &str, path: &str| {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(
            &file,
            format!(
                "[suite]\nname = \"{name}\"\nrepetitions = 5\nduration = \"300ms\"\n\
                 [[server]]\nname = \"serve\"\nstart = \"exec {VOLLEY} serve --port {{port}}\"\n\
                 [[scenario]]\nname = \"get\"\npath = \"{path}\"\nconnections = 2\n"
            ),
        )
        .unwrap();
        let out = dir.join(name);
        let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let o = Command::new(VOLLEY)
            .arg("bench")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .current_dir(&dir)
            .output()
            .unwrap();
        assert_eq!(o.status.code(), Some(0), "bench {name}: {}", text(&o));
        out
    };
    let fast = suite("fast", "/");
    let slow = suite("slow", "/delay?ms=3");
    let (code, v) = compare_json(&fast, &slow, &["--fail-if-slower", "5%"]);
    assert_eq!(code, Some(1), "{v}");
    let p = &v["pairs"][0];
    assert_eq!((p["n_a"].as_u64(), p["n_b"].as_u64()), (Some(5), Some(5)));
    assert_eq!(p["metric"], "throughput");
    assert_eq!(p["verdict"], "slower", "{p}");
    assert!(p["p_value"].as_f64().unwrap() < 0.05, "{p}");
    // suite.json given directly works the same as its folder.
    let (code, v) = compare_json(&fast.join("suite.json"), &fast, &[]);
    assert_eq!(code, Some(0));
    assert_eq!(v["pairs"][0]["verdict"], "no significant difference");
    assert_eq!(v["pairs"][0]["p_value"], 1.0);
}

#[test]
fn bad_inputs_exit_2_naming_the_path() {
    let (a, _) = runs();
    let dir = scratch("compare", "bad");
    let missing = dir.join("missing.json");
    let o = compare(&[a, &missing]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains(missing.to_str().unwrap()));

    let foreign = dir.join("foreign.json");
    std::fs::write(&foreign, "{\"hello\": 1}").unwrap();
    let o = compare(&[&foreign, a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("foreign.json") && err.contains("not a volley result"),
        "{err}"
    );

    let not_json = dir.join("notes.txt");
    std::fs::write(&not_json, "p99 was fine").unwrap();
    let o = compare(&[a, &not_json]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("notes.txt"));

    let empty_dir = scratch("compare", "bad/empty");
    let o = compare(&[&empty_dir, a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("without suite.json"));

    // Two suites without a cell in common: nothing pairs up.
    let template = read(a);
    let x = suite_folder(
        &dir.join("x"),
        &template,
        &[("get", &[1.0]), ("post", &[1.0])],
    );
    let y = suite_folder(
        &dir.join("y"),
        &template,
        &[("head", &[1.0]), ("put", &[1.0])],
    );
    let o = compare(&[&x, &y]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("nothing pairs up")
            && err.contains(x.to_str().unwrap())
            && err.contains(y.to_str().unwrap()),
        "{err}"
    );

    let o = compare(&[a, a, &"--fail-if-slower", &"-5%"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

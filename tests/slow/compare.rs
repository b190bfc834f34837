//! `volley compare` on real results: runs against the built-in server (a fast path and a
//! delayed one: different loads, compared only with `--force`), results edited for
//! deterministic cases, suite folders with 5 repetitions a side (synthesized, and from a real
//! `volley bench`), the width of the table, and inputs that must be refused.

use crate::common;

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

use common::output_text as text;

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

/// The output with its wrapped prose joined again: every line break and the indentation after
/// it become one space, so that phrases can be looked for whatever the wrapping.
fn flat(out: &[u8]) -> String {
    String::from_utf8_lossy(out)
        .split('\n')
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The longest line of a text, in characters.
fn longest_line(s: &str) -> usize {
    s.lines().map(|l| l.chars().count()).max().unwrap_or(0)
}

#[test]
fn a_result_against_itself_is_no_regression() {
    let (a, _) = runs();
    // The same file twice is refused: every server would pair with itself.
    let o = compare(&[a, a]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = flat(&o.stderr);
    assert!(
        err.contains("same results") && err.contains("--baseline"),
        "{err}"
    );
    // A copy is other results that happen to hold the same numbers.
    let copy = scratch("compare", "itself").join("copy.json");
    std::fs::copy(a, &copy).unwrap();
    let o = compare(&[a, &copy, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = flat(&o.stdout);
    assert!(out.contains("cannot be called (n=1/1)"), "{out}");
    assert!(out.contains("too few repetitions to call"), "{out}");
    assert!(out.contains("no regression beyond 5%"), "{out}");
    assert!(out.contains("1.000") && out.contains("+0.0%"), "{out}");
}

#[test]
fn single_runs_show_the_ratio_and_fail_only_when_allowed() {
    let (fast, slow) = runs();
    // The two runs loaded different paths: not one test, refused without --force, naming
    // what differs.
    let o = compare(&[fast, slow, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = flat(&o.stderr);
    assert!(
        err.contains("A /; B /delay?ms=2") && err.contains("--force"),
        "{err}"
    );
    assert!(
        o.stdout.is_empty(),
        "no table for a refused pair: {}",
        text(&o)
    );

    // With --force: one repetition a side cannot be called, so --fail-if-slower passes and
    // says why; the ratio and change are shown, and the line says the loads differ.
    let o = compare(&[fast, slow, &"--force", &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = flat(&o.stdout);
    assert!(out.contains("cannot be called (n=1/1)"), "{out}");
    assert!(out.contains("loads differ [1]"), "{out}");
    assert!(
        out.contains("[1] loads differ (compared because of --force): A /; B /delay?ms=2"),
        "{out}"
    );
    assert!(!out.contains("REGRESSION"), "{out}");
    assert!(
        out.contains("not a regression: run · ") && out.contains("--allow-single"),
        "{out}"
    );
    let (code, v) = compare_json(fast, slow, &["--force", "--fail-if-slower", "5%"]);
    assert_eq!(code, Some(0));
    let p = &v["pairs"][0];
    let ratio = p["ratio"].as_f64().unwrap();
    assert!(ratio < 0.95, "{p}");
    assert!(
        out.contains(&format!("{ratio:.3}")),
        "the ratio is shown: {out}"
    );
    assert_eq!(p["verdict"], "too few repetitions");
    assert_eq!(
        (p["beyond_limit"].as_bool(), p["regression"].as_bool()),
        (Some(true), Some(false))
    );
    assert_eq!(p["loads_differ"], true);
    assert_ne!(p["a_load_id"], p["b_load_id"]);
    assert_eq!(
        (v["force"].as_bool(), v["allow_single"].as_bool()),
        (Some(true), Some(false))
    );

    // --allow-single judges the medians alone: a regression, and the output says so.
    let o = compare(&[
        fast,
        slow,
        &"--force",
        &"--fail-if-slower",
        &"5%",
        &"--allow-single",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let out = flat(&o.stdout);
    assert!(out.contains("REGRESSION"), "{out}");
    assert!(
        out.contains("by the medians alone (n=1/1; --allow-single)"),
        "{out}"
    );
    // Without --fail-if-slower the difference is shown and the exit code stays 0.
    let o = compare(&[fast, slow, &"--force"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // The other way round B is faster: no regression.
    let o = compare(&[
        slow,
        fast,
        &"--force",
        &"--fail-if-slower",
        &"5",
        &"--allow-single",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    // Latency metric by flag: the delayed path's p99 is higher, so worse.
    let (code, v) = compare_json(
        fast,
        slow,
        &[
            "--metric",
            "p99",
            "--fail-if-slower",
            "5%",
            "--allow-single",
            "--force",
        ],
    );
    assert_eq!(code, Some(1));
    let p = &v["pairs"][0];
    assert_eq!(p["metric"], "p99");
    assert_eq!(p["better"], "lower");
    assert!(p["ratio"].as_f64().unwrap() > 1.0, "{p}");
    assert_eq!(p["regression"], true);
    // --allow-single means nothing without --fail-if-slower: a usage error naming the flag.
    let o = compare(&[fast, slow, &"--allow-single"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--fail-if-slower"));
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
    let (code, v) = compare_json(a, &ninety, &["--fail-if-slower", "5%", "--allow-single"]);
    assert_eq!(code, Some(1), "{v}");
    assert_eq!(v["regression"], true);
    assert_eq!(v["fail_if_slower_pct"], 5.0);
    let p = &v["pairs"][0];
    assert_eq!(p["metric"], "throughput");
    assert_eq!(p["better"], "higher");
    assert_eq!(p["loads_differ"], false, "one load: the same load_id");
    assert_eq!(p["a_load_id"], base["load_id"]);
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
    // Without --allow-single the same difference cannot fail.
    let (code, v) = compare_json(a, &ninety, &["--fail-if-slower", "5%"]);
    assert_eq!(code, Some(0), "{v}");
    assert_eq!(v["pairs"][0]["beyond_limit"], true);
    // 10% worse passes a 15% limit; 3% worse passes 5%.
    let (code, v) = compare_json(a, &ninety, &["--fail-if-slower", "15", "--allow-single"]);
    assert_eq!(code, Some(0));
    assert_eq!(v["pairs"][0]["beyond_limit"], false);
    let (code, _) = compare_json(
        a,
        &with(0.97, "ninety-seven.json"),
        &["--fail-if-slower", "5%", "--allow-single"],
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
    let cells: Vec<(&str, &str, &[f64])> = cells.iter().map(|(s, t)| ("serve", *s, *t)).collect();
    servers_folder(dir, template, &cells)
}

/// A results folder of several servers: one run file per (server, scenario, rep).
fn servers_folder(dir: &Path, template: &Value, cells: &[(&str, &str, &[f64])]) -> PathBuf {
    let cells: Vec<(&str, &str, Vec<Value>)> = cells
        .iter()
        .map(|(server, scenario, throughputs)| {
            let runs = throughputs
                .iter()
                .map(|t| {
                    let mut v = template.clone();
                    v["throughput_rps"] = json!(t);
                    v
                })
                .collect();
            (*server, *scenario, runs)
        })
        .collect();
    runs_folder(dir, &cells)
}

/// A results folder holding the given runs: one file per (server, scenario, rep).
fn runs_folder(dir: &Path, cells: &[(&str, &str, Vec<Value>)]) -> PathBuf {
    std::fs::create_dir_all(dir.join("runs")).unwrap();
    let mut rows = Vec::new();
    for (server, scenario, runs) in cells {
        for (i, v) in runs.iter().enumerate() {
            let rel = format!("runs/{server}__{scenario}__r{}.json", i + 1);
            write(&dir.join(&rel), v);
            rows.push(json!({
                "server": server, "scenario": scenario, "axes": {"connections": "2"},
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
    let out = flat(&o.stdout);
    assert!(out.contains("no significant difference"), "{out}");
    assert!(
        out.contains("only in A: extra connections=2 · serve"),
        "{out}"
    );
}

/// `--baseline` on a synthetic folder of three servers: v2 is 10 % slower (called, with the
/// shift and its interval), v3 the same as v1 (no significant difference).
#[test]
fn baseline_calls_the_slower_server_with_its_interval() {
    let (a, _) = runs();
    let template = read(a);
    let dir = scratch("compare", "baseline");
    let folder = servers_folder(
        &dir.join("ab"),
        &template,
        &[
            ("v1", "get", &[1000.0, 1010.0, 990.0, 1020.0, 980.0]),
            ("v2", "get", &[900.0, 910.0, 890.0, 920.0, 880.0]),
            ("v3", "get", &[1005.0, 995.0, 1015.0, 985.0, 1000.0]),
            ("v2", "only-v2", &[1.0]),
        ],
    );
    let o = compare(&[
        &folder,
        &"--baseline",
        &"v1",
        &"--fail-if-slower",
        &"5",
        &"--json",
        &"-",
    ]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let pairs = v["pairs"].as_array().unwrap();
    assert_eq!(pairs.len(), 2, "{v}");
    let p = &pairs[0];
    assert_eq!(
        (p["a_name"].as_str(), p["b_name"].as_str()),
        (Some("v1"), Some("v2"))
    );
    assert_eq!(p["verdict"], "slower");
    assert_eq!(p["regression"], true);
    // The differences are −100 + 10k, k = −4..4 taken 1, 2, 3, 4, 5, 4, 3, 2, 1 times: the
    // shift −100 (−10 % of 1000), the 95 % interval of 5 and 5 [D_3, D_23] = [−130, −70].
    assert_eq!(p["effect_pct"], -10.0);
    let near = |k: &str, want: f64| (p[k].as_f64().unwrap() - want).abs() < 1e-9;
    assert!(
        near("ci_low_pct", -13.0) && near("ci_high_pct", -7.0),
        "{p}"
    );
    assert_eq!(pairs[1]["b_name"], "v3");
    assert_eq!(pairs[1]["verdict"], "no significant difference");
    assert_eq!(v["only_in_b"][0]["label"], "only-v2 connections=2");
    let o = compare(&[&folder, &"--baseline", &"v1", &"--wide"]);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        out.contains("10.0% slower, 95% CI 7.0–13.0% (p=0.012"),
        "{out}"
    );
    // --against picks servers.
    let o = compare(&[
        &folder,
        &"--baseline",
        &"v1",
        &"--against",
        &"v3",
        &"--json",
        &"-",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["pairs"].as_array().unwrap().len(), 1);
    assert_eq!(v["pairs"][0]["b_name"], "v3");
}

/// A requests file's named requests, compared by name: in B `post` is twice as slow (called
/// slower with five repetitions a side) while the whole run's p99 and `hello` are not, and
/// `missing` is called `gone`.
#[test]
fn named_requests_are_compared_by_name() {
    let mix = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report/mix.json"));
    let dir = scratch("compare", "requests");
    // Per repetition: the run's p99, hello's and post's.
    let side = |p99s: [(u64, u64, u64); 5], rename: bool| -> Vec<Value> {
        p99s.iter()
            .map(|&(run, hello, post)| {
                let mut v = mix.clone();
                v["latency_us"]["p99"] = json!(run);
                v["endpoints"][0]["latency_us"]["p99"] = json!(hello);
                v["endpoints"][1]["latency_us"]["p99"] = json!(post);
                if rename {
                    v["endpoints"][2]["name"] = json!("gone");
                }
                v
            })
            .collect()
    };
    let a = runs_folder(
        &dir.join("a"),
        &[(
            "serve",
            "mix",
            side(
                [
                    (230, 228, 225),
                    (231, 230, 227),
                    (232, 232, 229),
                    (233, 229, 226),
                    (234, 231, 228),
                ],
                false,
            ),
        )],
    );
    let b = runs_folder(
        &dir.join("b"),
        &[(
            "serve",
            "mix",
            side(
                [
                    (231, 231, 450),
                    (232, 229, 455),
                    (233, 230, 460),
                    (234, 232, 452),
                    (230, 228, 458),
                ],
                true,
            ),
        )],
    );
    let (code, v) = compare_json(&a, &b, &["--metric", "p99", "--fail-if-slower", "5%"]);
    assert_eq!(code, Some(0), "--fail-if-slower judges the whole runs: {v}");
    let p = &v["pairs"][0];
    assert_eq!(
        p["verdict"], "no significant difference",
        "the mix hides it"
    );
    let e = p["endpoints"].as_array().expect("the requests compared");
    let names: Vec<&str> = e.iter().map(|x| x["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["hello", "post"], "paired by name, in A's order");
    let post = &e[1];
    assert_eq!(post["verdict"], "slower");
    assert_eq!(
        (post["metric"].as_str(), post["better"].as_str()),
        (Some("p99"), Some("lower"))
    );
    assert_eq!(
        (post["method"].as_str(), post["path"].as_str()),
        (Some("POST"), Some("/"))
    );
    assert_eq!(
        (post["a"].as_f64(), post["b"].as_f64()),
        (Some(227.0), Some(455.0))
    );
    assert_eq!(post["a_range"], json!([225.0, 229.0]));
    assert_eq!(
        (post["n_a"].as_u64(), post["n_b"].as_u64()),
        (Some(5), Some(5))
    );
    assert!(post["p_value"].as_f64().unwrap() < 0.05, "{post}");
    assert!(post["effect_pct"].as_f64().unwrap() > 90.0, "{post}");
    assert_eq!(e[0]["verdict"], "no significant difference");
    assert_eq!(
        p["endpoints_only_in_a"],
        json!([{"name": "missing", "method": "GET", "path": "/nope/{rand:1..5}", "runs": 5}])
    );
    assert_eq!(p["endpoints_only_in_b"][0]["name"], "gone");
    // Every key a pair had is still there.
    for key in [
        "label",
        "server",
        "metric",
        "a",
        "b",
        "ratio",
        "verdict",
        "secondary",
        "effect_pct",
    ] {
        assert!(p.get(key).is_some(), "{key} missing: {p}");
    }

    // The table: the pair, then its requests, the slow one called.
    let o = compare(&[&a, &b, &"--metric", &"p99"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let raw = String::from_utf8_lossy(&o.stdout);
    assert!(longest_line(&raw) <= 100, "{raw}");
    let by_request = raw
        .find("By request, mix connections=2 · serve: p99, lower is better")
        .expect(&raw);
    assert!(
        raw.find("no significant difference").unwrap() < by_request,
        "{raw}"
    );
    let post_line = raw[by_request..]
        .lines()
        .find(|l| l.starts_with("post "))
        .expect(&raw);
    assert!(
        post_line.contains("227 µs")
            && post_line.contains("455 µs")
            && post_line.contains("slower"),
        "{post_line}"
    );
    let out = flat(&o.stdout);
    assert!(
        out.contains("only in A: request missing (GET /nope/{rand:1..5}, 5 runs)"),
        "{out}"
    );
    assert!(out.contains("only in B: request gone"), "{out}");
    assert!(
        out.contains("By request: the named requests of the requests files"),
        "{out}"
    );
    let o = compare(&[&a, &b, &"--metric", &"p99", &"--wide"]);
    let raw = String::from_utf8_lossy(&o.stdout);
    assert!(
        raw.lines()
            .any(|l| l.starts_with("post ") && l.contains("POST /") && l.contains("U=0")),
        "{raw}"
    );

    // A metric of the whole run only: no requests compared, and a note says why.
    let (_, v) = compare_json(&a, &b, &["--metric", "cpu_per_request"]);
    assert!(v["pairs"][0].get("endpoints").is_none(), "{v}");
    assert!(
        v["pairs"][0]["notes"].as_array().unwrap().iter().any(|n| n
            .as_str()
            .unwrap()
            .contains("named requests are not compared")),
        "{v}"
    );
    // Runs without named requests: no such keys.
    let plain = |d: &str| {
        let mut v = mix.clone();
        v["endpoints"] = json!([]);
        let p = dir.join(d);
        write(&p, &v);
        p
    };
    let (_, v) = compare_json(&plain("plain-a.json"), &plain("plain-b.json"), &[]);
    let keys: Vec<&String> = v["pairs"][0].as_object().unwrap().keys().collect();
    assert!(keys.iter().all(|k| !k.starts_with("endpoints")), "{keys:?}");
}

#[test]
fn the_table_fits_100_columns_unless_wide() {
    let (a, _) = runs();
    let template = read(a);
    let dir = scratch("compare", "width");
    let name = "post-1k.with_a_rather_long_scenario_name";
    let x = suite_folder(
        &dir.join("a-results-folder-with-a-long-name-as-scripts-make-them-20240101T000000Z"),
        &template,
        &[
            (name, &[1000.0, 1010.0, 990.0, 1020.0, 980.0]),
            ("get", &[5000.0]),
        ],
    );
    let y = suite_folder(
        &dir.join("b-results-folder-with-a-long-name-as-scripts-make-them-20240102T000000Z"),
        &template,
        &[
            (name, &[1200.0, 700.0, 1150.0, 900.0, 800.0]),
            ("get", &[4000.0]),
        ],
    );
    let o = compare(&[&x, &y, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let raw = String::from_utf8_lossy(&o.stdout);
    assert!(
        longest_line(&raw) <= 100,
        "{} columns:\n{raw}",
        longest_line(&raw)
    );
    let out = flat(&o.stdout);
    // Both pairs are there with their calls, the ranges under the medians.
    assert!(out.contains("no significant difference"), "{raw}");
    assert!(out.contains("cannot be called (n=1/1)"), "{out}");
    assert!(out.contains("980.0–1,020.0"), "{out}");
    assert!(
        out.contains("not a regression: get connections=2 · serve: req/s 20.0% worse"),
        "{out}"
    );
    assert!(
        !out.contains("p50 A → B"),
        "details only with --wide: {out}"
    );
    // --wide: one line per pair with every detail, however wide.
    let o = compare(&[&x, &y, &"--wide"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(longest_line(&out) > 100, "{out}");
    for detail in [
        "p50 A → B",
        "CPU/req A → B",
        "U=",
        "n=5/5",
        "1,000.0 (980.0–1,020.0)",
    ] {
        assert!(out.contains(detail), "--wide lacks {detail}: {out}");
    }
}

#[test]
fn runs_of_another_load_are_not_repetitions() {
    let (a, _) = runs();
    let template = read(a);
    let dir = scratch("compare", "loads");
    let x = suite_folder(&dir.join("x"), &template, &[("get", &[1000.0; 5])]);
    let y = suite_folder(&dir.join("y"), &template, &[("get", &[1000.0; 5])]);
    // The fifth repetition of A ran 2 s, not 1 s (an id is derived from the keys when absent).
    let odd = x.join("runs/serve__get__r5.json");
    let mut v = read(&odd);
    v.as_object_mut().unwrap().remove("load_id");
    v["load"]["duration_s"] = json!(2.0);
    write(&odd, &v);
    let (code, v) = compare_json(&x, &y, &[]);
    assert_eq!(code, Some(0), "{v}");
    let p = &v["pairs"][0];
    assert_eq!(
        (p["n_a"].as_u64(), p["n_b"].as_u64()),
        (Some(4), Some(5)),
        "{p}"
    );
    assert_eq!(p["loads_differ"], false);
    assert_eq!(
        v["only_in_a"][0]["label"], "get connections=2 (-d 2s)",
        "the run of another load is a line of its own: {v}"
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
    // Different paths are different loads: refused, naming the path.
    let o = compare(&[&fast, &slow, &"--fail-if-slower", &"5%"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("get · serve: A /; B /delay?ms=3"),
        "{}",
        text(&o)
    );
    let (code, v) = compare_json(&fast, &slow, &["--fail-if-slower", "5%", "--force"]);
    assert_eq!(code, Some(1), "{v}");
    let p = &v["pairs"][0];
    assert_eq!(p["loads_differ"], true);
    assert_eq!((p["n_a"].as_u64(), p["n_b"].as_u64()), (Some(5), Some(5)));
    assert_eq!(p["metric"], "throughput");
    assert_eq!(p["verdict"], "slower", "{p}");
    assert!(p["p_value"].as_f64().unwrap() < 0.05, "{p}");
    // A folder and its own suite.json, or the folder by another path, are the same results.
    for other in [fast.join("suite.json"), fast.join("runs").join("..")] {
        let o = compare(&[&fast, &other]);
        assert_eq!(o.status.code(), Some(2), "{}", text(&o));
        let err = flat(&o.stderr);
        assert!(
            err.contains("same results") && err.contains("--baseline"),
            "{err}"
        );
    }
}

/// Two identical servers in one suite, 5 interleaved repetitions of 300 ms: `--baseline`
/// pairs them on the same scenario and finds them within a few percent of each other.
#[test]
fn baseline_inside_one_real_suite() {
    let dir = scratch("compare", "ab-bench");
    let file = dir.join("ab.toml");
    let server = |name: &str| {
        format!("[[server]]\nname = \"{name}\"\nstart = \"exec {VOLLEY} serve --port {{port}}\"\n")
    };
    std::fs::write(
        &file,
        format!(
            "[suite]\nname = \"ab\"\nrepetitions = 5\nduration = \"300ms\"\nbaseline = \"v1\"\n\
             {}{}[[scenario]]\nname = \"get\"\npath = \"/delay?ms=2\"\nconnections = 2\n",
            server("v1"),
            server("v2")
        ),
    )
    .unwrap();
    let out = dir.join("out");
    let o = {
        let _guard = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(VOLLEY)
            .arg("bench")
            .arg(&file)
            .arg("--out")
            .arg(&out)
            .current_dir(&dir)
            .output()
            .unwrap()
    };
    assert_eq!(o.status.code(), Some(0), "bench: {}", text(&o));
    let table = flat(&o.stdout);
    assert!(
        table.contains("vs v1"),
        "the suite's table compares with its baseline: {table}"
    );
    assert!(table.contains("get · v2 vs v1: req/s ×"), "{table}");
    let index = read(&out.join("suite.json"));
    assert_eq!(index["baseline"], "v1", "{index}");
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("### vs v1 (baseline)") && md.contains("| get | v2 | req/s | ×"),
        "{md}"
    );
    let o = compare(&[&out, &"--baseline", &"v1", &"--json", &"-"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["pairs"][0];
    assert_eq!(
        (p["a_name"].as_str(), p["b_name"].as_str()),
        (Some("v1"), Some("v2")),
        "{p}"
    );
    // Two identical servers differ by little. Whether the test at 5 % calls that little
    // difference is chance (one suite in twenty at least, and v2 always runs second in a
    // repetition): the verdict must be one of the three, the effect small and inside its
    // interval. (CI once measured +0.8 %, CI 0.1-2.9 %, p = 0.022: "faster".)
    let verdicts = ["no significant difference", "faster", "slower"];
    assert!(
        verdicts.contains(&p["verdict"].as_str().unwrap_or("")),
        "{p}"
    );
    let (lo, e, hi) = (
        p["ci_low_pct"].as_f64().unwrap(),
        p["effect_pct"].as_f64().unwrap(),
        p["ci_high_pct"].as_f64().unwrap(),
    );
    assert!(lo <= e && e <= hi, "{p}");
    assert!(e.abs() < 5.0, "identical servers, an effect of {e}%: {p}");
    assert_eq!(v["pairs"].as_array().unwrap().len(), 1);
    // Unknown names exit 2 naming the servers there are.
    let o = compare(&[&out, &"--baseline", &"v9"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = flat(&o.stderr);
    assert!(
        err.contains("--baseline v9") && err.contains("v1, v2"),
        "{err}"
    );
    let o = compare(&[&out, &"--baseline", &"v1", &"--against", &"v7"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(flat(&o.stderr).contains("--against v7"), "{}", text(&o));
    // --baseline takes one results folder.
    let o = compare(&[&out, &out, &"--baseline", &"v1"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(
        flat(&o.stderr).contains("one results folder"),
        "{}",
        text(&o)
    );
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

    // A suite of many cells that pair with nothing: the message lists a few and counts the rest.
    let many: Vec<(String, Vec<f64>)> = (0..40).map(|i| (format!("s{i}"), vec![1.0])).collect();
    let many: Vec<(&str, &[f64])> = many
        .iter()
        .map(|(n, v)| (n.as_str(), v.as_slice()))
        .collect();
    let z = suite_folder(&dir.join("z"), &template, &many);
    let o = compare(&[&x, &z]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("and 35 more") && err.len() < 2_000, "{err}");

    let o = compare(&[a, a, &"--fail-if-slower", &"-5%"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
}

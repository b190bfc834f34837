//! Run history end to end: `--save` on a real run (commit, host, scalars, histograms), the
//! file opened before the load (bad, foreign, damaged or newer files: exit 2, nothing sent), a
//! save that fails after the run (exit 3, files written), two savers at once, a migration
//! from schema 1, and `history check`/`trend`/`export` over a history made in a git
//! repository of the test's own.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::history::{commit, git, repo, result, started};
use common::{normal, output_text, scratch, volley};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

fn volley_in(dir: &Path, args: &[&str]) -> std::process::Output {
    common::limited(
        std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(args)
            .current_dir(dir),
        args,
        LIMIT,
    )
}

fn code(o: &std::process::Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

/// One real RunResult (a short run against an in-process server), as a template.
fn template(dir: &Path) -> Value {
    let server = normal();
    let json = dir.join("template.json");
    let o = volley(
        &[
            "run",
            &server.url("/"),
            "-n",
            "300",
            "-c",
            "2",
            "-q",
            "--json",
            json.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    serde_json::from_str(&std::fs::read_to_string(json).unwrap()).unwrap()
}

#[test]
fn a_saved_run_keeps_its_commit_host_numbers_and_histograms() {
    let dir = scratch("history", "saved");
    repo(&dir);
    let sha = commit(&dir, "first");
    let server = normal();
    let o = volley_in(
        &dir,
        &[
            "run",
            &server.url("/"),
            "-n",
            "500",
            "-c",
            "2",
            "-q",
            "--json",
            "r.json",
            "--save",
        ],
    );
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    assert!(
        output_text(&o).contains("saved 1 result to"),
        "{}",
        output_text(&o)
    );
    // The default file: .volley/history.db at the top of the repository; made here, so the
    // tip on keeping it out of commits.
    let db = dir.join(".volley/history.db");
    assert!(db.is_file());
    assert!(
        output_text(&o).contains("volley: tip: add .volley/ to .gitignore"),
        "{}",
        output_text(&o)
    );
    let r: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("r.json")).unwrap()).unwrap();
    let o = volley_in(&dir, &["history", "show", "1", "--json"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    let s: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(s["git"]["commit"], sha.as_str());
    assert_eq!(s["git"]["branch"], "main");
    assert_eq!(s["git"]["dirty"], false);
    assert_eq!(s["load_id"], r["load_id"]);
    assert_eq!(s["host"]["cpu_model"], r["env"]["cpu_model"]);
    assert_eq!(s["host"]["cores"], r["env"]["cores"]);
    assert_eq!(
        s["scalars"]["latency_us.p99"],
        r["latency_us"]["p99"].as_f64().unwrap()
    );
    assert_eq!(s["scalars"]["requests.completed"], 500.0);
    assert_eq!(s["scalars"]["throughput_rps"], r["throughput_rps"]);
    assert_eq!(s["latency_hdr"], r["latency_hdr"]);
    assert_eq!(s["service_time_hdr"], r["service_time_hdr"]);
    // `show` recomputes percentiles from the histogram.
    let o = volley_in(&dir, &["history", "show", "1"]);
    assert!(
        output_text(&o).contains("500 values"),
        "{}",
        output_text(&o)
    );
    // Importing the same file again keeps one row.
    let o = volley_in(&dir, &["history", "import", "r.json", "--commit", &sha]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    assert!(
        output_text(&o).contains("(1 already there)") && !output_text(&o).contains("tip:"),
        "{}",
        output_text(&o)
    );
    let o = volley_in(&dir, &["history", "list", "--json"]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 1);
}

/// `volley history --history DB list --json`: the saved runs, oldest first (the command must
/// succeed).
fn listed(db: &Path) -> Vec<Value> {
    let o = volley(
        &[
            "history",
            "--history",
            db.to_str().unwrap(),
            "list",
            "--json",
        ],
        LIMIT,
    );
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A SQLite file at `path` made by `sql`.
fn sqlite(path: &Path, sql: &str) -> PathBuf {
    rusqlite::Connection::open(path)
        .unwrap()
        .execute_batch(sql)
        .unwrap();
    path.to_path_buf()
}

/// A file that cannot be a history is refused before the load: exit 2, naming `--history`,
/// and the server never sees a request.
#[test]
fn a_bad_history_file_costs_nothing() {
    let dir = scratch("history", "bad");
    let garbage = dir.join("garbage.db");
    std::fs::write(&garbage, vec![0x5a_u8; 8192]).unwrap();
    let app = volley::history::schema::APPLICATION_ID;
    let foreign = sqlite(
        &dir.join("foreign.db"),
        "CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL);",
    );
    let newer = sqlite(
        &dir.join("newer.db"),
        &format!("PRAGMA application_id = {app}; PRAGMA user_version = 99; CREATE TABLE runs (id INTEGER);"),
    );
    let rows: String = (0..2000)
        .map(|i| format!("INSERT INTO t VALUES ('row {i} {}');", "x".repeat(50)))
        .collect();
    let damaged = sqlite(
        &dir.join("damaged.db"),
        &format!("PRAGMA application_id = {app}; CREATE TABLE t (x TEXT); CREATE INDEX tx ON t (x); {rows}"),
    );
    // Overwrite pages in the middle of the file.
    let mut bytes = std::fs::read(&damaged).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 4096] {
        *b = 0xff;
    }
    std::fs::write(&damaged, bytes).unwrap();
    let not_a_dir = dir.join("plain-file");
    std::fs::write(&not_a_dir, "x").unwrap();
    let cases: Vec<(PathBuf, &str)> = vec![
        (garbage, "not a volley history"),
        (foreign, "another program"),
        (newer, "newer volley"),
        (damaged, "not a volley history"),
        (dir.clone(), "is a directory"),
        (not_a_dir.join("h.db"), "cannot open"),
    ];
    for (path, words) in cases {
        let server = normal();
        let p = path.to_str().unwrap();
        let o = volley(
            &["run", &server.url("/"), "-n", "10", "-q", "--history", p],
            LIMIT,
        );
        let text = output_text(&o);
        assert_eq!(code(&o), 2, "{p}: {text}");
        assert!(
            text.contains("--history") && text.contains(p) && text.contains(words),
            "{p}: {text}"
        );
        assert_eq!(server.requests(), 0, "{p}: the load started");
    }
}

/// The database never costs a measurement: a history locked by someone else while the run
/// ends is a failed save (exit 3) with every result file written.
#[test]
fn a_failed_save_keeps_the_result_files() {
    let dir = scratch("history", "locked");
    let db = dir.join("h.db");
    volley::history::Store::open(&db, volley::history::Mode::Create).unwrap();
    let server = normal();
    let json = dir.join("r.json");
    let html = dir.join("r.html");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            &server.url("/"),
            "-d",
            "2s",
            "-c",
            "1",
            "-q",
            "--history",
        ])
        .arg(&db)
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .env("VOLLEY_HISTORY_BUSY_MS", "300")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Lock it once volley has it open (its write-ahead log appears when it checks the file,
    // before the load), for the save.
    let wal = dir.join("h.db-wal");
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !wal.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "volley never opened the history"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let locker = rusqlite::Connection::open(&db).unwrap();
    locker.execute_batch("BEGIN EXCLUSIVE;").unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{text}");
    assert!(
        text.contains("--save") && text.contains("result files are written"),
        "{text}"
    );
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(r["requests"]["completed"].as_u64().unwrap() > 0);
    assert!(std::fs::read_to_string(&html).unwrap().contains("</html>"));
    locker.execute_batch("ROLLBACK;").unwrap();
}

/// Volley processes saving into one file at once (WAL, a saver waits its turn), from the
/// moment the file is created: every row is there. Three processes start together on each of
/// four new files, twice each.
#[test]
fn two_savers_at_once_lose_nothing() {
    let dir = scratch("history", "concurrent");
    let server = normal();
    let url = server.url("/");
    let (files, savers, rounds) = (4, 3, 2);
    for f in 0..files {
        let db = dir.join(format!("h{f}.db"));
        let start = std::sync::Arc::new(std::sync::Barrier::new(savers));
        let handles: Vec<_> = (0..savers)
            .map(|_| {
                let (db, url, start) = (db.clone(), url.clone(), start.clone());
                std::thread::spawn(move || {
                    start.wait();
                    for _ in 0..rounds {
                        let o = volley(
                            &[
                                "run",
                                &url,
                                "-n",
                                "50",
                                "-c",
                                "1",
                                "-q",
                                "--history",
                                db.to_str().unwrap(),
                            ],
                            LIMIT,
                        );
                        assert_eq!(code(&o), 0, "{}", output_text(&o));
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(listed(&db).len(), savers * rounds);
    }
}

/// A history written by the first schema is migrated when opened, its rows intact.
#[test]
fn a_first_schema_history_is_migrated() {
    let dir = scratch("history", "migrate");
    let db = dir.join("old.db");
    let c = rusqlite::Connection::open(&db).unwrap();
    c.execute_batch(volley::history::schema::MIGRATIONS[0])
        .unwrap();
    c.execute_batch(&format!(
        "PRAGMA application_id = {}; PRAGMA user_version = 1;",
        volley::history::schema::APPLICATION_ID
    ))
    .unwrap();
    c.execute(
        "INSERT INTO runs (recorded_at, started_at, kind, source, git_commit, git_branch, host_id,
            cores, client_cpus, volley_version, load_id, mode, url, interrupted, digest)
         VALUES ('2026-10-01T00:00:00Z', '2026-10-01T00:00:00Z', 'run', 'run',
            'abcdef1234567890abcdef1234567890abcdef12', 'main', 'h', 2, '0-1', '0.0.9', 'l1',
            'closed', 'http://127.0.0.1:1/', 0, 'd1')",
        [],
    )
    .unwrap();
    c.execute(
        "INSERT INTO scalars (run, name, value) VALUES (1, 'throughput_rps', 1234.5)",
        [],
    )
    .unwrap();
    drop(c);
    let row = &listed(&db)[0];
    assert_eq!(row["throughput_rps"], 1234.5);
    assert_eq!(
        row["git"]["commit"],
        "abcdef1234567890abcdef1234567890abcdef12"
    );
    let c = rusqlite::Connection::open(&db).unwrap();
    let v: i64 = c
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(v, volley::history::schema::VERSION);
}

/// The history of a repository: 12 commits on main at about 10,000 req/s (±1 %), a feature
/// commit at 8,800 (−12 %), and one that did not change anything.
struct Made {
    dir: PathBuf,
    template: Value,
    n: usize,
}

impl Made {
    fn import(&mut self, sha: &str, branch: &str, values: &[(f64, u64)]) {
        let mut paths = Vec::new();
        for (rps, p50) in values {
            self.n += 1;
            let r = result(&self.template, *rps, *p50, &started(self.n));
            let p = self.dir.join(format!("r{}.json", self.n));
            std::fs::write(&p, serde_json::to_string(&r).unwrap()).unwrap();
            paths.push(p.display().to_string());
        }
        let mut args = vec!["history", "import", "--commit", sha, "--branch", branch];
        args.extend(paths.iter().map(String::as_str));
        let o = volley_in(&self.dir, &args);
        assert_eq!(code(&o), 0, "{}", output_text(&o));
    }
}

fn noisy(i: usize, level: f64) -> f64 {
    // ±1 %, deterministic.
    level * (1.0 + ((i * 7919) % 21) as f64 / 1000.0 - 0.01)
}

fn made_history(name: &str) -> Made {
    let dir = scratch("history", name);
    repo(&dir);
    let template = template(&dir);
    let mut m = Made {
        dir: dir.clone(),
        template,
        n: 0,
    };
    for c in 0..12 {
        let sha = commit(&dir, &format!("main {c}"));
        let reps: Vec<(f64, u64)> = (0..3).map(|k| (noisy(c * 3 + k, 10_000.0), 100)).collect();
        m.import(&sha, "main", &reps);
    }
    m
}

#[test]
fn check_calls_a_regression_and_not_a_steady_commit() {
    let mut m = made_history("check");
    let dir = m.dir.clone();
    git(&dir, &["checkout", "-q", "-b", "feature"]);
    let slow = commit(&dir, "slower");
    let reps: Vec<(f64, u64)> = (0..5).map(|k| (noisy(k, 8_800.0), 100)).collect();
    m.import(&slow, "feature", &reps);
    let o = volley_in(
        &dir,
        &[
            "history",
            "check",
            "--baseline",
            "main",
            "--json",
            "check.json",
        ],
    );
    let text = output_text(&o);
    assert_eq!(code(&o), 1, "{text}");
    assert!(text.contains("REGRESSION"), "{text}");
    let j: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("check.json")).unwrap()).unwrap();
    assert_eq!(j["regressions"], 1);
    let f = &j["series"][0]["findings"][0];
    assert_eq!(f["metric"], "throughput");
    assert_eq!(f["call"], "regression");
    // 12 commits in the level: the commits are the samples.
    assert_eq!(f["test"], "commits", "{f}");
    assert_eq!(f["baseline_commits"], 12);
    let effect = f["effect_pct"].as_f64().unwrap();
    assert!((-13.5..-10.5).contains(&effect), "{effect}");

    // One run only: the same test (its median is the run).
    let one = commit(&dir, "slower, measured once");
    m.import(&one, "feature", &[(8_700.0, 100)]);
    let o = volley_in(&dir, &["history", "check", "--json", "-"]);
    assert_eq!(code(&o), 1, "{}", output_text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["series"][0]["findings"][0]["test"], "commits");
    assert_eq!(j["series"][0]["findings"][0]["call"], "regression");

    // A steady commit: exit 0.
    let same = commit(&dir, "steady");
    let reps: Vec<(f64, u64)> = (0..5).map(|k| (noisy(k + 40, 10_000.0), 100)).collect();
    m.import(&same, "feature", &reps);
    let o = volley_in(&dir, &["history", "check", "--baseline", "main"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    assert!(
        output_text(&o).contains("0 series regressed"),
        "{}",
        output_text(&o)
    );

    // Thresholds from the suite file: a 15 % minimum effect lets the slow commit pass.
    std::fs::write(dir.join("s.toml"), "[history]\nmin_effect = \"15%\"\n").unwrap();
    let o = volley_in(
        &dir,
        &["history", "check", "--commit", &slow, "--suite", "s.toml"],
    );
    assert_eq!(code(&o), 0, "{}", output_text(&o));
}

#[test]
fn unlike_runs_are_refused_with_their_reason() {
    let mut m = made_history("unlike");
    let dir = m.dir.clone();
    git(&dir, &["checkout", "-q", "-b", "feature"]);
    let sha = commit(&dir, "other machine");
    m.template["env"]["cpu_model"] = "Some Other CPU".into();
    m.import(&sha, "feature", &[(10_000.0, 100)]);
    let o = volley_in(&dir, &["history", "check"]);
    let text = output_text(&o);
    assert_eq!(code(&o), 2, "{text}");
    assert!(
        text.contains("cannot compare: the host differs") && text.contains("Some Other CPU"),
        "{text}"
    );

    let sha = commit(&dir, "other load");
    m.template["env"]["cpu_model"] = m.template["env"]["cpu_model"].clone();
    let mut t = template(&dir);
    t["load_id"] = "0123456789abcdef".into();
    m.template = t;
    m.import(&sha, "feature", &[(10_000.0, 100)]);
    let o = volley_in(&dir, &["history", "check"]);
    let text = output_text(&o);
    assert_eq!(code(&o), 2, "{text}");
    assert!(
        text.contains("the load differs (load_id 0123456789abcdef"),
        "{text}"
    );
}

#[test]
fn bad_check_and_trend_input_exits_2_naming_it() {
    let m = made_history("bad-input");
    let dir = m.dir.clone();
    for (args, words) in [
        (
            vec!["history", "check", "--metric", "p99.5"],
            "invalid value 'p99.5' for '--metric <M>': unknown metric",
        ),
        (
            vec!["history", "trend", "--metric", "speed"],
            "invalid value 'speed' for '--metric <M>': unknown metric",
        ),
        (
            vec!["history", "check", "--baseline", "no-such-branch"],
            "--baseline no-such-branch: not a revision",
        ),
        (
            vec!["history", "check", "--min-effect", "lots"],
            "--min-effect lots",
        ),
        (vec!["history", "show", "999"], "no run #999"),
        (
            vec!["history", "check", "--alpha", "2"],
            "--alpha 2: must be between 0 and 1",
        ),
        (
            vec!["history", "list", "--since", "yesterday"],
            "--since yesterday: not a duration",
        ),
        (
            vec!["history", "trend", "--suite", "no-such.toml"],
            "no-such.toml",
        ),
        (
            vec!["history", "import", "r1.json", "--commit", "abc1234"],
            "--commit abc1234: not a revision",
        ),
        (
            vec!["history", "check", "--baseline=--output=x"],
            "--baseline --output=x: not a revision",
        ),
        (
            vec!["history", "--history", "nope.db", "list"],
            "nope.db: no history there yet",
        ),
    ] {
        let o = volley_in(&dir, &args);
        let text = output_text(&o);
        assert_eq!(code(&o), 2, "{args:?}: {text}");
        assert!(text.contains(words), "{args:?}: {text}");
    }
    // A baseline whose commits have no saved run.
    git(&dir, &["checkout", "-q", "--orphan", "elsewhere"]);
    let lone = commit(&dir, "unrelated root");
    git(&dir, &["checkout", "-q", "main"]);
    let o = volley_in(&dir, &["history", "check", "--baseline", &lone]);
    let text = output_text(&o);
    assert_eq!(code(&o), 2, "{text}");
    // HEAD (main) has runs; the baseline's history has none.
    assert!(text.contains("no saved run of its history"), "{text}");
    // A trend page into a folder that does not exist.
    let o = volley_in(&dir, &["history", "trend", "--html", "no/such/dir/t.html"]);
    assert_eq!(code(&o), 2, "{}", output_text(&o));
    assert!(
        output_text(&o).contains("--html no/such/dir/t.html"),
        "{}",
        output_text(&o)
    );
}

#[test]
fn trend_marks_the_change_at_its_commit_and_exports_agree() {
    let mut m = made_history("trend");
    let dir = m.dir.clone();
    let mut step = String::new();
    for c in 0..8 {
        let sha = commit(&dir, &format!("after {c}"));
        if c == 0 {
            step = sha.clone();
        }
        let reps: Vec<(f64, u64)> = (0..3)
            .map(|k| (noisy(c * 3 + k + 5, 12_000.0), 90))
            .collect();
        m.import(&sha, "main", &reps);
    }
    let o = volley_in(&dir, &["history", "trend", "--json", "-"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = &j["trends"][0];
    assert_eq!(t["metric"], "throughput");
    let changes: Vec<&Value> = t["points"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| !p["change"].is_null())
        .collect();
    assert_eq!(changes.len(), 1, "{t}");
    assert_eq!(changes[0]["commit"], step.as_str());
    let pct = changes[0]["change"]["pct"].as_f64().unwrap();
    assert!((18.0..22.0).contains(&pct), "{pct}");
    assert_eq!(t["levels"].as_array().unwrap().len(), 2);

    // BMF of HEAD: the median of its three runs, in bencher's units.
    let o = volley_in(&dir, &["history", "export", "--format", "bmf"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    let bmf: Value = serde_json::from_slice(&o.stdout).unwrap();
    let (name, measures) = bmf.as_object().unwrap().iter().next().unwrap();
    assert!(name.starts_with("http-127.0.0.1"), "{name}");
    let v = measures["throughput"]["value"].as_f64().unwrap();
    assert!((11_800.0..12_200.0).contains(&v), "{v}");
    assert_eq!(measures["latency"]["value"], 90_000.0);
    let schema: Value = serde_json::json!({
        "type": "object",
        "patternProperties": {".+": {"type": "object", "patternProperties": {".+": {
            "type": "object",
            "properties": {"value": {"type": "number"}, "lower_value": {"type": "number"},
                "upper_value": {"type": "number"}},
            "required": ["value"]}}}}
    });
    assert!(jsonschema::is_valid(&schema, &bmf), "{bmf}");

    // Otava's CSV: one row per commit, the medians.
    let o = volley_in(
        &dir,
        &[
            "history",
            "export",
            "--format",
            "otava-csv",
            "--out",
            "otava",
        ],
    );
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    let yaml = std::fs::read_to_string(dir.join("otava/otava.yaml")).unwrap();
    assert!(
        yaml.contains("type: csv") && yaml.contains("direction: 1"),
        "{yaml}"
    );
    let csv_file = std::fs::read_dir(dir.join("otava"))
        .unwrap()
        .flatten()
        .find(|e| e.path().extension().is_some_and(|x| x == "csv"))
        .unwrap()
        .path();
    let csv = std::fs::read_to_string(csv_file).unwrap();
    assert_eq!(csv.lines().count(), 1 + 20, "{csv}");
    assert!(
        csv.starts_with("time,commit,branch,throughput,p50,p99\n"),
        "{csv}"
    );
    assert!(csv.contains(&step));
}

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

/// `[history] save = true` in a suite: every finished cell saved with its suite, scenario,
/// server, axes and repetition, and a capacity cell with its answer; `volley capacity --save`
/// the same way.
#[test]
fn a_suite_and_a_capacity_search_are_saved() {
    let dir = scratch("history", "suite");
    repo(&dir);
    let sha = commit(&dir, "suite");
    let suite = format!(
        r#"[suite]
name = "hist"
warmup = "200ms"
duration = "500ms"
repetitions = 2

[[server]]
name = "serve"
start = "{VOLLEY} serve --port {{port}}"

[[scenario]]
name = "plain"
path = "/"
connections = [1, 2]

[[scenario]]
name = "search"
path = "/delay?ms=5"
connections = 4
capacity = {{ slo = "p99<40ms", start_rate = 200, precision = "30%", repeat = 1, closed_loop = false, step_duration = "500ms" }}

[history]
save = true
path = "h.db"
"#
    );
    let (o, out) = common::bench_suite(&dir, &suite, &[]);
    let text = output_text(&o);
    assert_eq!(code(&o), 0, "{text}");
    assert!(text.contains("saved 6 results to h.db"), "{text}");
    let rows = listed(&dir.join("h.db"));
    assert_eq!(rows.len(), 6);
    let plain: Vec<&Value> = rows.iter().filter(|r| r["scenario"] == "plain").collect();
    assert_eq!(plain.len(), 4);
    assert!(plain.iter().all(|r| r["suite"] == "hist"
        && r["server"] == "serve"
        && r["git"]["commit"] == sha.as_str()));
    let axes: std::collections::BTreeSet<&str> =
        plain.iter().map(|r| r["axes"].as_str().unwrap()).collect();
    assert_eq!(
        axes.into_iter().collect::<Vec<_>>(),
        ["connections=1", "connections=2"]
    );
    let reps: std::collections::BTreeSet<u64> =
        plain.iter().map(|r| r["rep"].as_u64().unwrap()).collect();
    assert_eq!(reps.len(), 2);
    let caps: Vec<&Value> = rows.iter().filter(|r| r["kind"] == "capacity").collect();
    assert_eq!(caps.len(), 2);
    let index = common::suite_index(&out);
    let row = index["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| !r["capacity"].is_null())
        .unwrap();
    let want = row["capacity"]["max_rate_rps"].as_f64();
    assert!(
        caps.iter().any(|c| c["max_rate_rps"].as_f64() == want),
        "{caps:?} vs {want:?}"
    );
    // The two repetitions of a search are one series.
    assert_eq!(caps[0]["load_id"], caps[1]["load_id"]);

    // `volley capacity --save`.
    let server = normal();
    let o = volley_in(
        &dir,
        &[
            "capacity",
            &server.url("/"),
            "--slo",
            "p99<50ms",
            "--step-duration",
            "300ms",
            "--max-rate",
            "400",
            "--start-rate",
            "200",
            "--no-closed-loop",
            "--out",
            "cap",
            "--history",
            "h.db",
        ],
    );
    let text = output_text(&o);
    assert_eq!(code(&o), 0, "{text}");
    assert!(text.contains("saved 1 result to h.db"), "{text}");
    let o = volley_in(
        &dir,
        &[
            "history",
            "--history",
            "h.db",
            "trend",
            "--metric",
            "max_rate",
            "--json",
            "-",
        ],
    );
    let j: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(j["trends"].as_array().unwrap().len(), 2, "{j}");
}

/// The trend page in headless Chromium: a chart per series, the change point's row marked,
/// no script error or CSP violation, and a commit subject of markup shown as text.
#[test]
fn the_trend_page_in_a_browser() {
    let mut m = made_history("browser");
    let dir = m.dir.clone();
    let evil = "<img src=x onerror=alert(1)> faster";
    let sha = commit(&dir, evil);
    m.import(
        &sha,
        "main",
        &[(12_000.0, 90), (12_050.0, 90), (11_990.0, 90)],
    );
    for c in 0..5 {
        let sha = commit(&dir, &format!("after {c}"));
        m.import(
            &sha,
            "main",
            &[(noisy(c, 12_000.0), 90), (noisy(c + 9, 12_000.0), 90)],
        );
    }
    let o = volley_in(&dir, &["history", "trend", "--html", "trend.html"]);
    assert_eq!(code(&o), 0, "{}", output_text(&o));
    let page = dir.join("trend.html");
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(
        !html.contains("<img src=x"),
        "markup reached the page unescaped"
    );
    let out = common::cdp::headless(&page, &["--dump-dom"]);
    let dom = String::from_utf8_lossy(&out.stdout);
    let (attrs, text) = common::cdp::selftest(&dom);
    for (k, v) in [
        ("done", "1"),
        ("errors", "0"),
        ("violations", "0"),
        ("alerts", "0"),
        ("charts", "1"),
        ("changes", "1"),
    ] {
        assert!(
            attrs.iter().any(|(n, got)| n == k && got == v),
            "data-{k} should be {v}: {attrs:?} {text}"
        );
    }
    // uPlot draws on two canvases per chart (the plot and its cursor overlay is HTML).
    assert!(
        attrs.iter().any(|(n, got)| n == "canvases" && got != "0"),
        "{attrs:?}"
    );
    assert!(
        dom.contains("&lt;img src=x onerror=alert(1)&gt; faster"),
        "the subject as text"
    );
    // The changed commit's row is the marked one, and the page links it.
    let row = dom
        .find("class=\"change improvement\"")
        .expect("the change is an improvement");
    assert!(dom[row..]
        .find("</tr>")
        .is_some_and(|end| dom[row..row + end].contains(&sha[..7])));
}

/// The CI example stays runnable: its workflow is YAML whose `volley` commands parse, and its
/// suite file loads (with its `[history]` rules).
#[test]
fn the_ci_example_parses() {
    use clap::Parser;
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/history");
    let text = std::fs::read_to_string(root.join("github-workflow.yml")).unwrap();
    let wf: Value = serde_saphyr::from_str(&text).expect("the workflow is YAML");
    let steps = wf["jobs"]["bench"]["steps"].as_array().unwrap();
    let mut commands = 0;
    for step in steps {
        let Some(run) = step["run"].as_str() else {
            continue;
        };
        for line in run
            .lines()
            .filter(|l| l.trim_start().starts_with("volley "))
        {
            let argv: Vec<&str> = line.split('#').next().unwrap().split_whitespace().collect();
            volley::cmd::Cli::try_parse_from(&argv).unwrap_or_else(|e| panic!("{line}: {e}"));
            commands += 1;
        }
    }
    assert!(commands >= 3, "{commands}");
    let suite = volley::config::suite::SuiteConfig::load(&root.join("suite.toml"), 2).unwrap();
    assert!(suite.history.save);
    assert_eq!(
        suite.history.gate.as_deref(),
        Some(&["throughput".to_string(), "p50".to_string()][..])
    );
}

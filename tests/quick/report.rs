//! Reports: golden files for Markdown and CSV (from saved suite results and a saved capacity
//! search), for a journey's Markdown and HTML "By request" part and for the summary of a run
//! of rate stages, `volley report`, report flags of `volley run`, and thresholds.
//!
//! The golden files are rewritten with `UPDATE_GOLDEN=1 cargo test --test tests quick::report::`; review the
//! diff before committing it.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::assert_golden;

use volley::report::{Format, Report};
use volley::result::journey::JourneyResult;

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/report")
        .join(name)
}

fn load(name: &str) -> Report {
    Report::load(&[fixture(name)]).unwrap()
}

#[test]
fn markdown_and_csv_of_a_suite_match_the_golden_files() {
    let quick = load("quick");
    assert_golden("quick.md", &Format::Markdown.reporter().render(&quick));
    assert_golden("quick.csv", &Format::Csv.reporter().render(&quick));
    // Failures, a control, two repetitions.
    let faults = load("faults");
    assert_golden("faults.md", &Format::Markdown.reporter().render(&faults));
    assert_golden("faults.csv", &Format::Csv.reporter().render(&faults));
    assert_golden("faults.txt", &Format::Terminal.reporter().render(&faults));
}

#[test]
fn markdown_and_csv_of_one_run_match_the_golden_files() {
    let run = load("quick/runs/rust__get__r1.json");
    assert!(run.single_run().is_some());
    assert_golden("run.md", &Format::Markdown.reporter().render(&run));
    assert_golden("run.csv", &Format::Csv.reporter().render(&run));
}

#[test]
fn terminal_markdown_and_csv_of_a_capacity_search_match_the_golden_files() {
    // The fixture folder (a real search with its closed loop and --pid) through `volley
    // report`: its CSV and Markdown files, and the terminal rendering of its capacity.json.
    let dir = tempfile::tempdir().unwrap();
    let (md, csv) = (dir.path().join("c.md"), dir.path().join("c.csv"));
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(fixture("capacity"))
        .arg("--markdown")
        .arg(&md)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let md = std::fs::read_to_string(&md).unwrap();
    let csv = std::fs::read_to_string(&csv).unwrap();
    // What the golden files must say, so a rewrite cannot make them say something else.
    assert!(md.contains("within the SLO `p99<20ms`"), "{md}");
    assert!(
        md.contains("| 1 | 127.0.0.1:18182 | 875 | SLO | 2.84 ms | 955 | 92% |"),
        "{md}"
    );
    assert!(md.contains("Max sustainable rate: 875 req/s"));
    let rows: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(rows.len(), 1 + 1 + 7, "header, closed loop, seven steps");
    assert!(rows[1].contains(",closed-loop,"));
    assert!(rows[3].contains(",2,500,500,pass,"));
    assert_golden("capacity.md", &md);
    assert_golden("capacity.csv", &csv);
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(fixture("capacity/capacity.json"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let txt = String::from_utf8_lossy(&o.stdout);
    assert!(txt.contains("Max sustainable rate: 875 req/s"), "{txt}");
    assert_eq!(txt.lines().filter(|l| l.starts_with("step ")).count(), 7);
    assert_golden("capacity.txt", &txt);
}

#[test]
fn a_capacity_sweep_reads_as_windows_in_every_format() {
    // A real `volley capacity --sweep` (closed loop first for its top, --pid): each window a
    // line, the sweep's line with its bias, the answer; Markdown and CSV say the same.
    let dir = tempfile::tempdir().unwrap();
    let (md, csv) = (dir.path().join("s.md"), dir.path().join("s.csv"));
    let json = fixture("capacity-sweep/capacity.json");
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(&json)
        .arg("--markdown")
        .arg(&md)
        .arg("--csv")
        .arg(&csv)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(&json)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    let txt = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        txt.lines().filter(|l| l.starts_with("window at ")).count(),
        10,
        "{txt}"
    );
    assert!(
        txt.contains("Sweep: 200 → 1,161 req/s (1.5 × the closed loop) over 10 s"),
        "{txt}"
    );
    assert!(txt.contains("the knee errs high"), "{txt}");
    assert!(txt.contains("Max sustainable rate: 729 req/s"), "{txt}");
    assert!(
        txt.contains("from a sweep of 10 windows (resolution 96 req/s)"),
        "{txt}"
    );
    assert_golden("capacity-sweep.txt", &txt);
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(md.contains("| window at 6 s | 825 |"), "{md}");
    assert_golden("capacity-sweep.md", &md);
    let csv = std::fs::read_to_string(&csv).unwrap();
    let rows: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert!(
        rows[0].ends_with(",path,phase,window_start_s"),
        "{}",
        rows[0]
    );
    assert_eq!(rows.len(), 1 + 1 + 10, "header, closed loop, ten windows");
    assert!(rows[8].ends_with(",sweep,6"), "{}", rows[8]);
    assert_golden("capacity-sweep.csv", &csv);
}

#[test]
fn the_summary_of_a_rate_stage_run_matches_the_golden_file() {
    // A real run of 0 → 2,000/s over 2 s, 2 s at 2,000/s, down to 500/s over 1 s: each second's
    // target beside what was sent and completed, between the throughput and the latencies.
    let txt = Format::Terminal
        .reporter()
        .render(&load("rate-stages.json"));
    for line in [
        "  Stages       each second: target (requests due by the stages) beside sent and completed",
        "    0–1               500.0       500        500  100.0 %  █████",
        "    2–3             2,000.0     2,000      2,000  100.0 %  ████████████████████",
        "    4–5             1,250.0     1,250      1,250  100.0 %  ████████████▌",
    ] {
        assert!(txt.lines().any(|l| l == line), "no {line:?} in\n{txt}");
    }
    assert_golden("rate-stages.txt", &txt);
    // The Markdown (and the HTML's load line, which is the same text) says the stages, not
    // only their mean rate.
    let md = Format::Markdown
        .reporter()
        .render(&load("rate-stages.json"));
    assert!(
        md.contains(
            "open loop in rate stages 2 s:2,000.0, 2 s:2,000.0, 1 s:500.0 (mean 1,450.0 req/s)"
        ),
        "{md}"
    );
    let saved = std::fs::read_to_string(fixture("rate-stages.json")).unwrap();
    let saved: serde_json::Value = serde_json::from_str(&saved).unwrap();
    crate::quick::schema::assert_valid(&saved, "tests/fixtures/report/rate-stages.json");
    // A run at one rate has no such block (the golden faults.txt and capacity.txt keep the
    // other summaries as they were).
    let plain = Format::Terminal.reporter().render(&load("open-loop.json"));
    assert!(!plain.contains("Stages"), "{plain}");
}

#[test]
fn gc_tables_of_a_run_match_the_golden_files() {
    // A JVM run with `server.gc` (40 G1 pauses from its log): the Markdown GC table and its
    // note; the CSV carries the GC scalars as `server.gc.*` columns.
    let gc = load("gc-run.json");
    let md = Format::Markdown.reporter().render(&gc);
    assert!(md.contains("| server | GC source | collections | pause p50 (ms) |"));
    assert!(md.contains("| 71% of 20 |"));
    assert_golden("gc-run.md", &md);
    let csv = Format::Csv.reporter().render(&gc);
    let header = csv.lines().next().unwrap();
    for col in [
        "server.gc.pause_ms.p99",
        "server.gc.pause_max_ms",
        "server.gc.alloc_rate_mb_s",
        "server.gc.slow_overlap_fraction",
    ] {
        assert!(header.split(',').any(|c| c == col), "no {col} column");
    }
    assert!(
        !header.contains("server.gc.events.") && !header.contains("alloc_rate_series"),
        "lists stay out"
    );
    assert_golden("gc-run.csv", &csv);
    // A run without GC figures has no GC table.
    let md = Format::Markdown.reporter().render(&load("open-loop.json"));
    assert!(!md.contains("GC"), "{md}");
}

#[test]
fn reports_of_a_request_mix_match_the_golden_files() {
    // A real run of three named requests (`mix.json`): each request's scalars are CSV columns
    // `endpoints.<name>.*`, after the run's own.
    let mix = load("mix.json");
    let csv = Format::Csv.reporter().render(&mix);
    let lines: Vec<&str> = csv.split("\r\n").filter(|l| !l.is_empty()).collect();
    assert_eq!(lines.len(), 2, "header and one run");
    let header: Vec<&str> = lines[0].split(',').collect();
    let row: Vec<&str> = lines[1].split(',').collect();
    assert_eq!(header.len(), row.len());
    let value = |col: &str| {
        let i = header
            .iter()
            .position(|h| *h == col)
            .unwrap_or_else(|| panic!("no column {col}"));
        row[i]
    };
    assert_eq!(value("checks.body_regex"), "18685", "the run's checks");
    assert_eq!(value("endpoints.hello.requests.sent"), "179644");
    assert_eq!(value("endpoints.post.checks.body_regex"), "18685");
    assert_eq!(value("endpoints.missing.status_codes.404"), "11227");
    assert_eq!(value("endpoints.missing.path"), "/nope/{rand:1..5}");
    assert_eq!(value("endpoints.post.latency_us.p99"), "227");
    let first = header
        .iter()
        .position(|h| h.starts_with("endpoints."))
        .unwrap();
    let names: Vec<&str> = header[first..]
        .iter()
        .map(|h| h.split('.').nth(1).unwrap())
        .fold(Vec::new(), |mut v, n| {
            if v.last() != Some(&n) {
                v.push(n);
            }
            v
        });
    assert_eq!(
        names,
        ["hello", "post", "missing"],
        "grouped, in the file's order"
    );
    assert!(!lines[0].contains("_hdr"), "no histograms");
    assert_golden("mix.csv", &csv);

    // Markdown: after the servers' table, one of the named requests; the load names the file.
    let md = Format::Markdown.reporter().render(&mix);
    assert!(
        md.starts_with("## mix.toml → http://127.0.0.1:18383/\n"),
        "{md}"
    );
    assert!(
        md.contains("2 s, keep-alive, 3 requests of mix.toml (weighted, 3 named)"),
        "{md}"
    );
    assert!(!md.contains("GET /\n"), "not one request: {md}");
    let servers = md.find("| server | req/s |").unwrap();
    let by_request = md
        .find("| server | name | request | share of sent | req/s | p50 | p99 | p99.9 | failed | errors |")
        .expect("the table of named requests");
    assert!(servers < by_request);
    for row in [
        "| 127.0.0.1:18383 | hello | GET /hello | 80.0% | 89,790.5 | 62 µs | 230 µs | 340 µs | 0 | 0 |",
        "| 127.0.0.1:18383 | post | POST / | 15.0% | 16,835.6 | 62 µs | 227 µs | 336 µs | 18,685 | 0 |",
        "| 127.0.0.1:18383 | missing | GET /nope/{rand:1..5} | 5.0% | 5,611.5 | 63 µs | 227 µs | 323 µs | 11,227 | 0 |",
    ] {
        assert!(md.contains(row), "{row} missing from:\n{md}");
    }
    assert_golden("mix.md", &md);
    // A run without named requests has no such table.
    let md = Format::Markdown.reporter().render(&load("open-loop.json"));
    assert!(!md.contains("| name | request |"), "{md}");
}

/// `mix.json` made the run of a journey: its `missing` step captures a value from a 404 (never
/// JSON), so its capture check fails every time and the `post` steps that need the value are
/// skipped.
fn journey_mix() -> Report {
    let mut report = load("mix.json");
    let r = report.cells[0].result.as_mut().unwrap();
    r.journey = Some(JourneyResult {
        users_started: 8,
        skipped: 2_400,
        captures_missed: [("not_json".to_string(), 11_227)].into_iter().collect(),
        cookies_refused: 3,
        ..Default::default()
    });
    r.requests.skipped = Some(2_400);
    r.checks.insert("capture".into(), 11_227);
    for e in &mut r.endpoints {
        e.requests.skipped = Some(0);
    }
    r.endpoints[1].requests.skipped = Some(2_400);
    r.endpoints[2].checks.insert("capture".into(), 11_227);
    report
}

/// The HTML page's "By request" part: its heading to the last journey paragraph.
fn by_request_html(html: &str) -> &str {
    let start = html
        .find("<h3 id=\"g0-requests\">")
        .expect("a By request part");
    let last = html
        .rfind("<p class=\"journey\">")
        .expect("a journey paragraph");
    let end = last + html[last..].find("</p>\n").unwrap() + "</p>\n".len();
    &html[start..end]
}

#[test]
fn reports_of_a_journey_match_the_golden_files() {
    // Markdown: the named requests gain the checks that failed (capture among them) and the
    // steps skipped; a line says what the users met, in the terminal's words.
    let report = journey_mix();
    let md = Format::Markdown.reporter().render(&report);
    assert!(
        md.contains("| failed | errors | checks failed | skipped |\n"),
        "{md}"
    );
    for row in [
        "| 127.0.0.1:18383 | hello | GET /hello | 80.0% | 89,790.5 | 62 µs | 230 µs | 340 µs | 0 | 0 | 0 | 0 |",
        "| 127.0.0.1:18383 | post | POST / | 15.0% | 16,835.6 | 62 µs | 227 µs | 336 µs | 18,685 | 0 | body\\_regex 18,685 | 2,400 |",
        "| 127.0.0.1:18383 | missing | GET /nope/{rand:1..5} | 5.0% | 5,611.5 | 63 µs | 227 µs | 323 µs | 11,227 | 0 | capture 11,227 | 0 |",
    ] {
        assert!(md.contains(row), "{row} missing from:\n{md}");
    }
    let line = "Journey: 8 users started · 2,400 steps skipped (a value they need was not captured) · captures missed: not\\_json 11,227 · 3 cookies refused\n";
    assert!(md.contains(line), "{md}");
    assert_golden("journey.md", &md);

    // HTML: the same column and paragraph, escaped.
    let html = Format::Html.reporter().render(&report);
    let part = by_request_html(&html);
    assert!(
        part.contains("<th>checks failed</th><th>skipped</th></tr>"),
        "{part}"
    );
    assert!(part.contains(">capture 11,227</td><td class=\"n\" data-v=\"0\">0</td></tr>"));
    assert!(part.contains("<td class=\"n bad\" data-v=\"2400\">2,400</td></tr>"));
    assert!(part.contains("<p class=\"journey\"><b>Journey</b>: 8 users started · 2,400 steps skipped (a value they need was not captured) · captures missed: not_json 11,227 · 3 cookies refused</p>"));
    assert_golden("journey.html", part);

    // Without a journey, neither (the golden mix.md holds the rest).
    let plain = load("mix.json");
    let md = Format::Markdown.reporter().render(&plain);
    let html = Format::Html.reporter().render(&plain);
    for text in [&md, &html] {
        assert!(!text.contains("skipped") && !text.contains("Journey"));
    }
}

#[test]
fn journeys_of_several_runs_are_summed_per_server() {
    // Two repetitions of one server and a run of another in one scenario: a line per server,
    // named, its repetitions' journeys added up; the steps skipped summed like failed.
    let mut report = journey_mix();
    let mut again = report.cells[0].clone();
    again.rep = 2;
    let mut other = report.cells[0].clone();
    other.server = "<b>other</b>".into();
    report.cells.extend([again, other]);
    let md = Format::Markdown.reporter().render(&report);
    assert!(
        md.contains(
            "Journey (127.0.0.1:18383, 2 runs summed): 16 users started · 4,800 steps skipped"
        ),
        "{md}"
    );
    assert!(
        md.contains("Journey (&lt;b&gt;other&lt;/b&gt;): 8 users started"),
        "{md}"
    );
    assert!(
        md.contains("| 18,685 | 0 | body\\_regex 18,685 | 2,400 |"),
        "{md}"
    );
    assert!(
        md.contains("| 37,370 | 0 | body\\_regex 37,370 | 4,800 |"),
        "{md}"
    );
    let html = Format::Html.reporter().render(&report);
    assert!(html.contains("<b>Journey</b> (&lt;b&gt;other&lt;/b&gt;): 8 users started"));
    assert!(!html.contains("<b>other</b>"));
}

#[test]
fn csv_has_one_row_per_cell_and_every_scalar() {
    let text = Format::Csv.reporter().render(&load("faults"));
    let lines: Vec<&str> = text.split("\r\n").filter(|l| !l.is_empty()).collect();
    let idx: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("faults/suite.json")).unwrap())
            .unwrap();
    assert_eq!(lines.len() - 1, idx["rows"].as_array().unwrap().len());
    let header: Vec<&str> = lines[0].split(',').collect();
    for col in [
        "server",
        "status",
        "reason",
        "throughput_rps",
        "latency_us.p99_999",
        "server.per_request.cpu_us",
        "errors.connect",
        "status_codes.200",
    ] {
        assert!(header.contains(&col), "column {col} missing: {header:?}");
    }
    assert!(
        !lines[0].contains("latency_hdr"),
        "histograms are not scalars"
    );
    let failed = lines.iter().find(|l| l.starts_with("dies,")).unwrap();
    assert!(failed.contains("exited with status 4 before it was ready"));
}

#[test]
fn markdown_escapes_what_came_from_outside() {
    let mut r = load("quick");
    r.cells[0].server = "<b>x|y</b>".into();
    let md = Format::Markdown.reporter().render(&r);
    assert!(md.contains("&lt;b&gt;x\\|y&lt;/b&gt;"), "{md}");
    assert!(!md.contains("<b>"));
}

#[test]
fn report_command_writes_every_format_and_names_bad_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let (md, csv, html) = (
        dir.path().join("r.md"),
        dir.path().join("r.csv"),
        dir.path().join("r.html"),
    );
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(fixture("quick"))
        .arg("--markdown")
        .arg(&md)
        .arg("--csv")
        .arg(&csv)
        .arg("--html")
        .arg(&html)
        .output()
        .unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(std::fs::read_to_string(&md).unwrap().contains("| rust |"));
    assert!(std::fs::read_to_string(&csv)
        .unwrap()
        .starts_with("server,scenario"));
    assert!(std::fs::read_to_string(&html)
        .unwrap()
        .starts_with("<!doctype html>"));

    // Without an output flag: the table on stdout.
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(fixture("quick"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("post-1k"));

    for bad in ["/no/such/result.json", env!("CARGO_MANIFEST_DIR")] {
        let o = Command::new(VOLLEY).args(["report", bad]).output().unwrap();
        assert_eq!(o.status.code(), Some(2), "{bad}");
        assert!(String::from_utf8_lossy(&o.stderr).contains(bad), "{bad}");
    }
    let not_volley = dir.path().join("x.json");
    std::fs::write(&not_volley, "{\"a\": 1}").unwrap();
    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(&not_volley)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not a volley result"));

    let o = Command::new(VOLLEY)
        .arg("report")
        .arg(fixture("quick"))
        .args(["--csv", "/no/such/dir/r.csv"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(3), "an output that cannot be written");
}

fn run_with(extra: &[&str]) -> std::process::Output {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    Command::new(VOLLEY)
        .args(["run", &url, "-c", "2", "-d", "1s", "--quiet"])
        .args(extra)
        .output()
        .unwrap()
}

#[test]
fn thresholds_pass_fail_and_exit_codes() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let o = run_with(&[
        "--threshold",
        "rps>1",
        "--threshold",
        "errors<0.1%",
        "--threshold",
        "p99<1us",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1), "a broken threshold exits 1");
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("Thresholds   2 of 3 passed"), "{out}");
    assert!(out.contains("FAIL p99<1us"), "{out}");
    assert!(out.contains("pass rps>1"), "{out}");
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["thresholds"][2]["threshold"], "p99<1us");
    assert_eq!(r["thresholds"][2]["pass"], false);
    assert!(r["thresholds"][2]["actual"].as_f64().unwrap() >= 1.0);
    assert_eq!(r["thresholds"][0]["pass"], true);

    let o = run_with(&["--threshold", "rps>1"]);
    assert_eq!(o.status.code(), Some(0));

    let o = run_with(&["--threshold", "p98<1ms"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--threshold"));
}

#[test]
fn run_writes_report_files_and_checks_their_paths_first() {
    let dir = tempfile::tempdir().unwrap();
    let (md, csv, html) = (
        dir.path().join("r.md"),
        dir.path().join("r.csv"),
        dir.path().join("r.html"),
    );
    let o = run_with(&[
        "--markdown",
        md.to_str().unwrap(),
        "--csv",
        csv.to_str().unwrap(),
        "--html",
        html.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let csv_text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(csv_text.split("\r\n").filter(|l| !l.is_empty()).count(), 2);
    assert!(std::fs::read_to_string(&md).unwrap().contains("req/s"));
    assert!(std::fs::metadata(&html).unwrap().len() > 0);

    let o = run_with(&["--csv", "/no/such/dir/r.csv"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--csv /no/such/dir/r.csv"));
}

/// Three runs at one address with three different loads (closed `/`, open `/`, open
/// `/delay?ms=1` with another `-c`) are three rows labelled by what differs, never one row
/// of "3/3" repetitions; two runs of one load are one row of two.
#[test]
fn runs_of_different_loads_are_different_rows() {
    let dir = tempfile::tempdir().unwrap();
    let read = |name: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap()
    };
    let mut runs = vec![
        read("quick/runs/rust__get__r1.json"),
        read("open-loop.json"),
        read("open-loop.json"),
    ];
    runs[2]["target"]["url"] = "http://127.0.0.1:8080/delay?ms=1".into();
    runs[2]["load"]["connections"] = 3.into();
    let mut other_port = runs[1].clone();
    other_port["target"]["url"] = "http://127.0.0.1:9999/".into();
    runs.push(other_port);
    let mut paths = Vec::new();
    for (i, r) in runs.iter_mut().enumerate() {
        r["target"]["addr"] = "127.0.0.1:8080".into();
        // Files written before load_id existed: the id comes from what they record.
        r.as_object_mut().unwrap().remove("load_id");
        let p = dir.path().join(format!("r{i}.json"));
        std::fs::write(&p, r.to_string()).unwrap();
        paths.push(p);
    }
    let report = Report::load(&paths[..3]).unwrap();
    let series = report.series();
    let labels: Vec<&str> = series.iter().map(|s| s.label.as_str()).collect();
    assert_eq!(labels.len(), 3, "{labels:?}");
    assert!(labels[0].contains("closed loop"), "{labels:?}");
    assert!(labels[1].contains("open loop") && !labels[1].contains("delay"));
    assert!(labels[2].contains("/delay?ms=1") && labels[2].contains("-c 3"));
    let table = Format::Terminal.reporter().render(&report);
    assert!(!table.contains("3/3") && table.contains("1/1"), "{table}");

    let again = Report::load(&[paths[1].clone(), paths[3].clone()]).unwrap();
    let series = again.series();
    assert_eq!(series.len(), 1);
    assert_eq!(series[0].cells.len(), 2, "the same load twice: repetitions");
}

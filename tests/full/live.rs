//! The live views against real runs of the binary: the dashboard's guards (token, Host, no
//! CORS), its event stream (replay from the start and from `Last-Event-ID`, the end with the
//! result and the report), `/metrics` read by the Python `prometheus_client` parser, taken
//! addresses, and a page that never reads not holding volley's exit.

use crate::common;

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::live::{events, get, Event, Running};
use serde_json::Value;

fn ticks(evs: &[Event]) -> usize {
    evs.iter().filter(|e| e.kind == "tick").count()
}

#[test]
fn the_dashboard_guards_its_door() {
    let server = common::normal();
    let url = server.url("/");
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "2",
        "-d",
        "3s",
        "-R",
        "200",
        "--dashboard",
        "--quiet",
    ]);
    let (addr, token) = run.door();
    let host = addr.to_string();
    let page = format!("/?token={token}");

    let (code, head, body) = get(addr, &host, &page, "GET");
    assert_eq!(code, 200, "{head}");
    assert!(
        head.contains("Content-Security-Policy: default-src 'none'"),
        "{head}"
    );
    assert!(head.contains("connect-src 'self'"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("access-control-allow"),
        "no CORS: {head}"
    );
    assert!(body.contains("volley live"), "the page");

    assert_eq!(get(addr, &host, "/", "GET").0, 401, "no token");
    assert_eq!(
        get(addr, &host, "/?token=00", "GET").0,
        401,
        "a wrong token"
    );
    assert_eq!(
        get(addr, &host, "/events", "GET").0,
        401,
        "events without the token"
    );
    let wrong = format!("/?token={}", "0".repeat(token.len()));
    assert_eq!(
        get(addr, &host, &wrong, "GET").0,
        401,
        "a token of the right length"
    );
    let rebound = format!("rebind.example:{}", addr.port());
    let (code, _, body) = get(addr, &rebound, &page, "GET");
    assert_eq!(code, 403, "a foreign Host, even with the token: {body}");
    assert_eq!(
        get(addr, &format!("localhost:{}", addr.port()), &page, "GET").0,
        200
    );
    assert_eq!(get(addr, &host, &page, "POST").0, 405);
    let (code, head, body) = get(addr, &host, &page, "HEAD");
    assert_eq!((code, body.as_str()), (200, ""), "{head}");
    assert!(
        !addr.ip().is_unspecified() && addr.ip().is_loopback(),
        "binds loopback: {addr}"
    );
    assert_eq!(run.wait(Duration::from_secs(20)), 0);
}

#[test]
fn events_replay_from_the_start_and_from_the_last_id_and_end_with_the_report() {
    let server = common::normal();
    let url = server.url("/");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "4",
        "-d",
        "5s",
        "-R",
        "400",
        "--dashboard",
        "--quiet",
        "--json",
        json.to_str().unwrap(),
    ]);
    let (addr, token) = run.door();
    // A page that connects mid-run and leaves after two seconds...
    let first = events(addr, &token, None, |e| ticks(e) >= 2);
    assert_eq!(first[0].kind, "meta");
    assert_eq!(first[0].data["target_rps"], 400.0);
    assert_eq!(
        first[1].id,
        Some(1),
        "ticks are numbered from 1: {:?}",
        first[1]
    );
    let last = first.last().unwrap().id.unwrap();
    // A page loaded now replays the whole run from the start...
    let token2 = token.clone();
    let whole = std::thread::spawn(move || {
        events(addr, &token2, None, |e| {
            e.last().is_some_and(|e| e.kind == "end")
        })
    });
    // ...and the first one reconnects where it left off (what EventSource does).
    let rest = events(addr, &token, Some(last), |e| {
        e.last().is_some_and(|e| e.kind == "end")
    });
    assert_eq!(rest[0].kind, "tick", "no meta again on a reconnect");
    assert_eq!(rest[0].id, Some(last + 1), "the next second, not a repeat");
    let whole = whole.join().unwrap();
    assert_eq!(whole[0].kind, "meta");
    assert_eq!(run.wait(Duration::from_secs(20)), 0);

    let result: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let end = whole.last().unwrap();
    assert_eq!(
        end.data["result"]["requests"], result["requests"],
        "the end carries the result"
    );
    let html = end.data["report_html"].as_str().unwrap();
    assert!(
        html.contains("volley report") && html.contains("id=\"data\""),
        "the report page"
    );

    let seconds: Vec<&Event> = whole.iter().filter(|e| e.kind == "tick").collect();
    let ids: Vec<u64> = seconds.iter().map(|e| e.id.unwrap()).collect();
    assert_eq!(
        ids,
        (1..=ids.len() as u64).collect::<Vec<_>>(),
        "every second once, in order"
    );
    let completed: u64 = seconds
        .iter()
        .map(|e| e.data["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(
        completed,
        result["requests"]["completed"].as_u64().unwrap(),
        "the ticks add up to the run"
    );
    // The seconds' histograms hold every response, losslessly.
    let hists: Vec<_> = seconds
        .iter()
        .map(|e| volley::stats::histogram::decode(e.data["latency_hdr"].as_str().unwrap()).unwrap())
        .collect();
    let merged = volley::stats::histogram::sum(hists.iter());
    assert_eq!(merged.len(), completed);
    assert_eq!(
        merged.value_at_quantile(0.99),
        result["latency_us"]["p99"].as_u64().unwrap(),
        "the seconds merged give the run's p99"
    );
    let via_reconnect: u64 = first
        .iter()
        .chain(&rest)
        .filter(|e| e.kind == "tick")
        .map(|e| e.data["completed"].as_u64().unwrap())
        .sum();
    assert_eq!(
        via_reconnect, completed,
        "nothing lost or repeated across the reconnect"
    );
}

#[test]
fn a_page_that_never_reads_does_not_hold_the_exit() {
    let server = common::normal();
    let url = server.url("/");
    let started = Instant::now();
    let mut run = Running::start(&["run", &url, "-c", "2", "-d", "2s", "--dashboard", "--quiet"]);
    let (addr, token) = run.door();
    // Connects, asks for the stream, and never reads a byte: the end's report (hundreds of KB)
    // cannot be written to it.
    let mut idle = TcpStream::connect(addr).unwrap();
    write!(
        idle,
        "GET /events?token={token} HTTP/1.1\r\nHost: {addr}\r\n\r\n"
    )
    .unwrap();
    assert_eq!(run.wait(Duration::from_secs(15)), 0);
    let took = started.elapsed();
    assert!(
        took < Duration::from_secs(6),
        "volley took {took:?} for a 2 s run"
    );
    drop(idle);
}

#[test]
fn taken_addresses_are_refused_before_the_load() {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port().to_string();
    let server = common::normal();
    let url = server.url("/");
    for (flag, addr) in [
        ("--dashboard-addr", format!("127.0.0.1:{port}")),
        ("--metrics-addr", format!(":{port}")),
    ] {
        let out = common::volley(
            &["run", &url, "-d", "1s", flag, &addr],
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {err}");
        assert!(
            err.contains(flag) && err.contains(&port),
            "{flag} named: {err}"
        );
    }
    for (flag, bad) in [
        ("--metrics-addr", "example.com:80"),
        ("--dashboard-addr", "127.0.0.1:99999"),
    ] {
        let out = common::volley(
            &["run", &url, "-d", "1s", flag, bad],
            Duration::from_secs(20),
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag} {bad}: {err}");
        assert!(err.contains(flag), "{err}");
    }
    assert_eq!(server.requests(), 0, "nothing sent");
}

/// The Python client library's OpenMetrics parser (what Prometheus's own accepts, in a few
/// lines): the families it read, as JSON.
fn parse_openmetrics(text: &str) -> Value {
    let script = r#"
import json, sys
from prometheus_client.openmetrics.parser import text_string_to_metric_families
out = {}
for fam in text_string_to_metric_families(sys.stdin.read()):
    out[fam.name] = {"type": fam.type, "samples": [[s.name, s.labels, s.value] for s in fam.samples]}
print(json.dumps(out))
"#;
    let mut child = Command::new("python3")
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    if err.contains("No module named 'prometheus_client'") {
        common::skip("no prometheus_client (scripts/install-test-deps.sh installs it)");
        return Value::Null;
    }
    assert!(
        out.status.success(),
        "the parser refused the text: {err}\n{text}"
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn metrics_are_openmetrics_a_real_parser_reads() {
    let server = common::normal();
    let url = server.url("/");
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "2",
        "-d",
        "3s",
        "-R",
        "300",
        "--metrics-addr",
        "127.0.0.1:0",
        "--quiet",
    ]);
    let addr = run.metrics_addr();
    std::thread::sleep(Duration::from_millis(2300));
    let (code, head, text) = get(addr, &addr.to_string(), "/metrics", "GET");
    assert_eq!(code, 200, "{head}");
    assert!(head.contains("application/openmetrics-text"), "{head}");
    assert_eq!(
        get(
            addr,
            &format!("rebind.example:{}", addr.port()),
            "/metrics",
            "GET"
        )
        .0,
        403
    );
    assert_eq!(get(addr, &addr.to_string(), "/other", "GET").0, 404);
    let fams = parse_openmetrics(&text);
    assert_eq!(run.wait(Duration::from_secs(20)), 0);
    if fams.is_null() {
        return;
    }
    for (name, kind) in [
        ("volley_requests", "counter"),
        ("volley_errors", "counter"),
        ("volley_request_duration_seconds", "histogram"),
        ("volley_service_time_seconds", "histogram"),
        ("volley_target_rate", "gauge"),
        ("volley_achieved_rate", "gauge"),
        ("volley_inflight", "gauge"),
    ] {
        assert_eq!(fams[name]["type"], kind, "{name} in {fams}");
    }
    let samples = fams["volley_requests"]["samples"].as_array().unwrap();
    let ok = samples
        .iter()
        .find(|s| s[1]["status_class"] == "2xx")
        .unwrap();
    assert!(
        ok[2].as_f64().unwrap() >= 300.0,
        "at least a second's responses: {ok}"
    );
    assert!(
        ok[1]["run_id"].as_str().is_some_and(|r| r.len() == 16),
        "{ok}"
    );
    let count = fams["volley_request_duration_seconds"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s[0] == "volley_request_duration_seconds_count")
        .unwrap()[2]
        .as_f64()
        .unwrap();
    assert_eq!(
        count,
        ok[2].as_f64().unwrap(),
        "the histogram counts every response"
    );
    assert_eq!(fams["volley_target_rate"]["samples"][0][2], 300.0);
}

/// Every series the shipped Grafana dashboard queries is one volley exports (a renamed metric
/// would leave a panel empty without an error).
#[test]
fn the_grafana_dashboard_queries_only_exported_series() {
    use std::sync::{Arc, Mutex};
    use volley::live::{metrics::MetricsHandler, Names, Totals};
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/grafana-dashboard.json"
    );
    let dash: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let server = volley::live::observer::ServerJson {
        t_s: 1.0,
        cpu_user_pct: 50.0,
        cpu_sys_pct: 10.0,
        rss_bytes: 1,
        threads: 1,
        syscalls_per_s: Some(1.0),
        ctx_switches_per_s: 1.0,
        gc: Some(volley::monitor::gc::counters::LiveGc {
            pause_count: 1,
            pause_total_ms: 1.0,
            pause_max_ms: 1.0,
        }),
    };
    let totals = Totals {
        target_rps: Some(1.0),
        users: Some(1),
        server: Some(server),
        ..Default::default()
    };
    let names = Names {
        scenario: "run".into(),
        endpoint: "/".into(),
    };
    let text = MetricsHandler::new("r", names, Arc::new(Mutex::new(totals))).text();
    let exported: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split(['{', ' ']).next())
        .collect();
    let re = regex::Regex::new(r"volley_[a-z_]+").unwrap();
    let mut queried = 0;
    for panel in dash["panels"].as_array().unwrap() {
        for t in panel["targets"].as_array().unwrap() {
            let expr = t["expr"].as_str().unwrap();
            for m in re.find_iter(expr) {
                queried += 1;
                let name = m.as_str();
                // A native histogram (remote write) has the family's bare name.
                let native = [
                    "volley_request_duration_seconds",
                    "volley_service_time_seconds",
                ]
                .contains(&name);
                assert!(
                    native || exported.contains(&name),
                    "{name} (panel {}) is not exported:\n{text}",
                    panel["title"]
                );
            }
        }
    }
    assert!(queried >= 10, "{queried}");
}

/// With `--pid`, the ticks and `/metrics` carry the server's last second (here the test
/// process itself, which runs the in-process server).
#[test]
fn a_monitored_server_is_in_the_ticks_and_the_metrics() {
    let server = common::normal();
    let url = server.url("/");
    let pid = std::process::id().to_string();
    // A Go gctrace log: one collection before the run (not counted), two during it.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("gc.log");
    let line = |n: u32, stw_ms: &str| {
        format!("gc {n} @0.5s 1%: {stw_ms}+1.0+{stw_ms} ms clock, 0.1+0.2/0.3/0.4+0.5 ms cpu, 4->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 8 P\n")
    };
    std::fs::write(&log, line(1, "9.0")).unwrap();
    let log_arg = log.display().to_string();
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "2",
        "-d",
        "5s",
        "-R",
        "300",
        "--pid",
        &pid,
        "--gc-log",
        &log_arg,
        "--dashboard",
        "--metrics-addr",
        "127.0.0.1:0",
        "--quiet",
    ]);
    let (addr, token) = run.door();
    let maddr = run.metrics_addr();
    let mut appended = false;
    let evs = events(addr, &token, None, |e| {
        let with_server = e
            .iter()
            .filter(|e| e.kind == "tick" && !e.data["server"].is_null())
            .count();
        if with_server >= 1 && !appended {
            appended = true;
            let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
            f.write_all(format!("{}{}", line(2, "1.5"), line(3, "0.5")).as_bytes())
                .unwrap();
        }
        let gc_seen = e
            .iter()
            .any(|e| e.kind == "tick" && e.data["server"]["gc"]["pause_count"] == 2);
        (with_server >= 2 && gc_seen) || e.last().is_some_and(|e| e.kind == "end")
    });
    let (_, _, text) = get(maddr, &maddr.to_string(), "/metrics", "GET");
    assert_eq!(run.wait(Duration::from_secs(20)), 0);
    let s = &evs.iter().rev().find(|e| e.kind == "tick").unwrap().data["server"];
    // The two collections logged during the run, each paused 2 × its stop-the-world term.
    assert_eq!(s["gc"]["pause_count"], 2, "{s}");
    assert!(
        (s["gc"]["pause_total_ms"].as_f64().unwrap() - 4.0).abs() < 1e-9,
        "{s}"
    );
    assert_eq!(s["gc"]["pause_max_ms"], 3.0, "{s}");
    assert!(s["rss_bytes"].as_u64().unwrap() > 1 << 20, "{s}");
    assert!(s["threads"].as_u64().unwrap() >= 2, "{s}");
    assert!(
        s["cpu_user_pct"].as_f64().is_some() && s["ctx_switches_per_s"].as_f64().is_some(),
        "{s}"
    );
    for name in [
        "volley_server_resident_memory_bytes",
        "volley_server_cpu_user_cores",
        "volley_server_threads",
        "volley_server_gc_pauses_total",
    ] {
        assert!(text.contains(name), "{name} in\n{text}");
    }
}

/// A client that sends its request head a byte at a time loses its connection after the
/// head's deadline (5 s in all), not after a timeout per byte: slow clients cannot keep the
/// dashboard's 32 slots.
#[test]
fn a_head_sent_a_byte_at_a_time_is_cut_at_the_deadline() {
    use std::io::Read;
    let server = common::normal();
    let url = server.url("/");
    let mut run = Running::start(&[
        "run",
        &url,
        "-c",
        "1",
        "-d",
        "10s",
        "-R",
        "50",
        "--dashboard",
        "--quiet",
    ]);
    let (addr, _) = run.door();
    let mut s = TcpStream::connect(addr).unwrap();
    let started = Instant::now();
    let head = b"GET /?token=x HTTP/1.1\r\nHost: localhost\r\n";
    let mut cut = None;
    for b in head.iter().cycle() {
        if s.write_all(&[*b]).is_err() {
            cut = Some(started.elapsed());
            break;
        }
        std::thread::sleep(Duration::from_millis(700));
        if started.elapsed() > Duration::from_secs(9) {
            break;
        }
    }
    let mut answer = String::new();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let _ = s.read_to_string(&mut answer);
    let took = cut.unwrap_or_else(|| started.elapsed());
    assert!(
        answer.starts_with("HTTP/1.1 408") || cut.is_some(),
        "{answer:?}"
    );
    assert!(
        took < Duration::from_secs(9),
        "still connected after {took:?}"
    );
    assert_eq!(run.wait(Duration::from_secs(20)), 0);
}

//! `server.gc` against real runtimes (issue: GC pauses on the latency timeline). Each
//! reference server is started with its GC log on and loaded with POST bodies so it collects;
//! the log, parsed here with volley's own parsers, is the ground truth for what volley reports
//! (no timing assertions: only which pauses, their kinds and lengths, and where they fall).
//!
//! A runtime's tests are skipped, with a printed reason, only when its toolchain is missing.

use crate::common;
use crate::common::clock;

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use clock::{process_start_ms, rfc3339_ms};
use common::*;
use serde_json::Value;
use volley::monitor::gc::{gotrace, jvmlog, nodetrace, GcLog};

const LIMIT: Duration = Duration::from_secs(60);

fn skip_without(programs: &[&str]) -> bool {
    let missing: Vec<&str> = programs.iter().copied().filter(|p| !on_path(p)).collect();
    if !missing.is_empty() {
        skip(&format!(
            "{} not installed (servers/install.sh)",
            missing.join(", ")
        ));
    }
    !missing.is_empty()
}

/// Copies `servers/NAME` into a scratch folder (builds must not write into the source tree).
fn copy_server(name: &str, into: &Path) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("servers")
        .join(name);
    let dst = into.join(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap().flatten() {
        if e.path().is_file() {
            std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
        }
    }
    dst
}

fn build(dir: &Path, program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .expect("build runs");
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A started reference server, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Starts `cmd` (its PORT set here) and waits until it accepts connections.
    fn start(mut cmd: Command) -> Server {
        let port = free_port();
        let child = cmd
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .spawn()
            .expect("server starts");
        let mut s = Server { child, port };
        let deadline = Instant::now() + Duration::from_secs(30);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Some(st) = s.child.try_wait().unwrap() {
                panic!("server exited before listening: {st}");
            }
            assert!(Instant::now() < deadline, "server not up within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        s
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A bounded POST load on `url`: 64 KiB bodies (each one allocated by the server), 16
/// connections, 3 s measured after a 500 ms warm-up.
fn load_args(url: &str) -> Vec<String> {
    [
        "run",
        url,
        "-m",
        "POST",
        "--body-size",
        "64KiB",
        "-c",
        "16",
        "-d",
        "3s",
        "--warmup",
        "500ms",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

fn run_json(url: &str, extra: &[&str]) -> Value {
    let mut args = load_args(url);
    args.extend(extra.iter().map(|s| s.to_string()));
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let (code, j, stderr) = volley_json(&a, LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_schema(&j);
    j
}

/// Checks a result against `schema/run.schema.json` (so the `gc` block is schema-checked).
fn assert_schema(j: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/run.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v.iter_errors(j).map(|e| e.to_string()).collect();
    assert!(errs.is_empty(), "result violates the schema: {errs:?}");
}

/// One log event on the run's clock: (seconds from t0, kind, pause ms).
type Placed = (f64, String, f64);

/// The log's events placed on the run's clock: `origin` is where the log's own clock reads
/// 0, ms since the epoch; an event's own wall time wins when the log has one.
fn place(log: &GcLog, origin: f64, t0_ms: f64) -> Vec<Placed> {
    log.events
        .iter()
        .map(|e| {
            let at = e.unix_ms.unwrap_or(origin + e.t_s * 1e3);
            ((at - t0_ms) / 1e3, e.kind.clone(), e.pause_ms)
        })
        .collect()
}

/// The issue's check of a log source: every event volley reports is one of the log's (same
/// kind and length, start within `tol_s`), every log pause well inside the window (at least
/// 100 ms from both edges) is among volley's events, and the counts and total are those of
/// the matched set. Returns how many log pauses lay well inside the window.
fn assert_events_match_log(gc: &Value, placed: &[Placed], window_s: f64, tol_s: f64) -> usize {
    let events = gc["events"].as_array().expect("events");
    assert_eq!(gc["events_truncated"], false, "{gc:#}");
    let mut used = vec![false; placed.len()];
    let mut matched_total = 0.0;
    let mut worst_dt: f64 = 0.0;
    for ev in events {
        let (t, kind, ms) = (
            ev["t_s"].as_f64().unwrap(),
            ev["kind"].as_str().unwrap(),
            ev["pause_ms"].as_f64().unwrap(),
        );
        let hit = placed.iter().enumerate().position(|(i, p)| {
            !used[i] && p.1 == kind && (p.2 - ms).abs() < 1e-6 && (p.0 - t).abs() <= tol_s
        });
        let i = hit.unwrap_or_else(|| {
            let near: Vec<&Placed> = placed.iter().filter(|p| (p.0 - t).abs() < 0.5).collect();
            panic!("volley's event {ev} is not in the log; log events near it: {near:?}")
        });
        used[i] = true;
        matched_total += placed[i].2;
        worst_dt = worst_dt.max((placed[i].0 - t).abs());
    }
    eprintln!(
        "{} events matched, largest start difference {:.3} ms",
        events.len(),
        worst_dt * 1e3
    );
    let mut inside = 0;
    for (i, p) in placed.iter().enumerate() {
        if p.0 >= 0.1 && p.0 + p.2 / 1e3 <= window_s - 0.1 {
            inside += 1;
            assert!(
                used[i],
                "log pause {p:?} lies inside the window (0..{window_s} s) but volley did not report it"
            );
        }
    }
    assert_eq!(gc["pause_count"].as_u64().unwrap(), events.len() as u64);
    let total = gc["pause_total_ms"].as_f64().unwrap();
    assert!(
        (total - matched_total).abs() < 0.01,
        "pause_total_ms {total} vs the log's {matched_total} over the same pauses"
    );
    inside
}

fn server_gc(j: &Value) -> &Value {
    let gc = &j["server"]["gc"];
    assert!(gc.is_object(), "no server.gc: {:#}", j["server"]);
    gc
}

fn t0_and_window(j: &Value) -> (f64, f64) {
    (
        rfc3339_ms(j["started_at"].as_str().unwrap()),
        j["server"]["window_s"].as_f64().expect("server.window_s"),
    )
}

/// Java: the JDK server with a 32 MiB G1 heap, its `-Xlog:gc` log in `dir/gc.log`.
fn start_java(dir: &Path) -> (Server, PathBuf) {
    let src = copy_server("java", dir);
    build(&src, "javac", &["-d", "out", "Server.java"]);
    let log = dir.join("gc.log");
    let mut cmd = Command::new("java");
    cmd.args(["-Xmx32m", "-XX:+UseG1GC", "-cp", "out", "Server"])
        .current_dir(&src)
        .env("JAVA_TOOL_OPTIONS", jvmlog::xlog_option(&log))
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    (Server::start(cmd), log)
}

#[test]
fn jvm_log_is_the_ground_truth_and_the_counters_agree_with_it() {
    if skip_without(&["java", "javac"]) {
        return;
    }
    let dir = scratch("gc", "jvm");
    let (server, log_path) = start_java(&dir);
    let log_arg = log_path.display().to_string();

    // (a) The log read by volley: the same pauses as the log itself.
    let j = run_json(
        &server.url(),
        &["--pid", &server.pid(), "--gc-log", &log_arg],
    );
    let gc = server_gc(&j);
    assert_eq!(gc["source"], "jvm-log", "{gc:#}");
    let (t0, window) = t0_and_window(&j);
    let log = jvmlog::parse(&std::fs::read_to_string(&log_path).unwrap());
    assert!(
        log.events.iter().all(|e| e.unix_ms.is_some()),
        "xlog_option decorates every line with timemillis"
    );
    let placed = place(&log, f64::NAN, t0);
    // Times: both sides use the line's timemillis; volley rounds t_s to 1 ms and t0 is kept
    // to 1 µs, so 2 ms is slack enough.
    let inside = assert_events_match_log(gc, &placed, window, 0.002);
    assert!(inside > 0, "the JVM never collected in the window: {gc:#}");
    assert!(gc["pause_count"].as_u64().unwrap() > 0);
    // Correlation sanity (4): a fraction in [0, 1] of at least one slowest request.
    let f = gc["slow_overlap_fraction"].as_f64().expect("a fraction");
    assert!((0.0..=1.0).contains(&f), "{f}");
    assert!(gc["slow_requests_checked"].as_u64().unwrap() > 0, "{gc:#}");

    // (b) The counter file alone (no --gc-log): counts and pause time agree with the log's.
    let json_path = dir.join("hsperf.json");
    let mut args = load_args(&server.url());
    args.extend(
        [
            "--pid",
            &server.pid(),
            "--json",
            &json_path.display().to_string(),
        ]
        .iter()
        .map(|s| s.to_string()),
    );
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    let waited = pause_threads_wait_ns(server.child.id());
    let out = volley(&a, LIMIT);
    let waited_ms = (pause_threads_wait_ns(server.child.id()) - waited) as f64 / 1e6;
    assert_eq!(out.status.code(), Some(0), "{}", output_text(&out));
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    assert_schema(&j);
    let gc = server_gc(&j);
    assert_eq!(gc["source"], "hsperfdata", "{gc:#}");
    // The summary says it (5): its GC line.
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("GC ") && l.contains("hsperfdata")),
        "no GC line in the summary:\n{text}"
    );
    let log = jvmlog::parse(&std::fs::read_to_string(&log_path).unwrap());
    let (t0, _) = t0_and_window(&j);
    assert_counters_match_log(gc, &place(&log, f64::NAN, t0), waited_ms);
}

/// How long the JVM's VM thread and GC worker threads, on which pauses run, have waited for a
/// CPU so far, ns (`/proc/PID/task/*/schedstat`, second field; a thread born later counts
/// from 0).
fn pause_threads_wait_ns(pid: u32) -> u64 {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).unwrap();
    let wait = |t: &Path| -> Option<u64> {
        let comm = std::fs::read_to_string(t.join("comm")).ok()?;
        if !(comm.starts_with("VM Thread") || comm.starts_with("GC Thread")) {
            return None;
        }
        let stat = std::fs::read_to_string(t.join("schedstat")).ok()?;
        stat.split_whitespace().nth(1)?.parse().ok()
    };
    tasks.flatten().filter_map(|t| wait(&t.path())).sum()
}

/// Log pauses, as (collections, pause ms).
#[derive(Debug, Default)]
struct Tally(f64, f64);

impl Tally {
    fn add(&mut self, p: &Placed) {
        let remark = ["Remark", "Cleanup"].iter().any(|x| p.1.contains(x));
        self.0 += if remark { 0.0 } else { 1.0 };
        self.1 += p.2;
    }
}

/// The counters count what changed between their first and last readings (`counters_span`):
/// every log pause well inside that span, none well outside it, and a pause at an edge may
/// fall either way, whole or in part (a collection's invocation is counted when it starts,
/// its time when it ends). An edge is known to `edge_ms` (the read's own length) plus 2 ms
/// for the log's placement, as in (a), which checks that placement against volley's. The
/// collections must lie between the log's inside the span and those plus the edges'. The
/// pause time too, within 5 % (the issue's criterion); the JVM's collector timer covers less
/// of a pause than its log line does, a part that grows when the pause's threads wait for a
/// CPU, so the time may also fall short by as long as they waited (`waited_ms`, during the
/// run: none on an idle machine).
fn assert_counters_match_log(gc: &Value, placed: &[Placed], waited_ms: f64) {
    let span = &gc["counters_span"];
    let f = |k: &str| {
        span[k]
            .as_f64()
            .unwrap_or_else(|| panic!("counters_span.{k}: {gc:#}"))
    };
    let (from, to, edge) = (f("from_s"), f("to_s"), f("edge_ms") / 1e3 + 0.002);
    assert!((0.0..to).contains(&from), "{span}");
    let (mut inside, mut at_edges) = (Tally::default(), Tally::default());
    for p in placed {
        let end = p.0 + p.2 / 1e3;
        if p.0 > from + edge && end < to - edge {
            inside.add(p);
        } else if end > from - edge && p.0 < to + edge {
            at_edges.add(p);
        }
    }
    let collections = gc["collections"].as_u64().unwrap() as f64;
    let pause_ms = gc["pause_total_ms"].as_f64().unwrap();
    eprintln!(
        "hsperfdata: {collections} collections, {pause_ms} ms paused over {from}..{to} s; the log: {inside:?} inside, {at_edges:?} at the edges (±{:.3} ms); the pause threads waited {waited_ms:.1} ms",
        edge * 1e3
    );
    assert!(inside.0 > 0.0, "no collection inside the span: {gc:#}");
    assert!(
        (inside.0..=inside.0 + at_edges.0).contains(&collections),
        "hsperfdata counted {collections} collections, the log {inside:?} inside its span and {at_edges:?} at its edges: {gc:#}"
    );
    assert!(
        (0.95 * inside.1 - waited_ms..=1.05 * (inside.1 + at_edges.1)).contains(&pause_ms),
        "hsperfdata counted {pause_ms} ms paused, the log {inside:?} inside its span and {at_edges:?} at its edges, its pause threads waited {waited_ms} ms: {gc:#}"
    );
}

#[test]
fn go_gctrace_is_the_ground_truth() {
    if skip_without(&["go"]) {
        return;
    }
    let dir = scratch("gc", "go");
    let src = copy_server("go", &dir);
    build(&src, "go", &["build", "-o", "server", "."]);
    let log_path = dir.join("stderr.log");
    let mut cmd = Command::new(src.join("server"));
    cmd.current_dir(&src)
        .env("GODEBUG", "gctrace=1")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log_path).unwrap());
    let server = Server::start(cmd);
    let log_arg = log_path.display().to_string();
    let j = run_json(
        &server.url(),
        &["--pid", &server.pid(), "--gc-log", &log_arg],
    );
    let gc = server_gc(&j);
    assert_eq!(gc["source"], "go-gctrace", "{gc:#}");
    let (t0, window) = t0_and_window(&j);
    let log = gotrace::parse(&std::fs::read_to_string(&log_path).unwrap());
    // Go's `@Ts` counts from the process start, which both volley and this test take from
    // /proc (clock ticks, 10 ms at 100 Hz); `@Ts` itself has 1 ms resolution and volley rounds
    // t_s to 1 ms: 15 ms of slack.
    let placed = place(&log, process_start_ms(server.child.id()), t0);
    let inside = assert_events_match_log(gc, &placed, window, 0.015);
    assert!(inside > 0, "Go never collected in the window: {gc:#}");
}

#[test]
fn node_trace_gc_is_the_ground_truth() {
    if skip_without(&["node"]) {
        return;
    }
    let dir = scratch("gc", "node");
    let src = copy_server("node", &dir);
    let preload = dir.join("gc.js");
    std::fs::write(&preload, nodetrace::NODE_PRELOAD_JS).unwrap();
    let log_path = dir.join("stdout.log");
    let mut cmd = Command::new("node");
    cmd.arg("server.js")
        .current_dir(&src)
        .env("NODE_OPTIONS", format!("--require {}", preload.display()))
        .stdout(std::fs::File::create(&log_path).unwrap())
        .stderr(Stdio::null());
    let server = Server::start(cmd);
    let log_arg = log_path.display().to_string();
    let j = run_json(
        &server.url(),
        &["--pid", &server.pid(), "--gc-log", &log_arg],
    );
    let gc = server_gc(&j);
    assert_eq!(gc["source"], "node-trace-gc", "{gc:#}");
    let (t0, window) = t0_and_window(&j);
    let log = nodetrace::parse(&std::fs::read_to_string(&log_path).unwrap());
    let anchor = log.anchor_unix_ms.expect("the preload's anchor line");
    // Both sides place an event at its own wall time, or at the anchor plus its isolate time:
    // only volley's 1 ms rounding of t_s differs.
    let placed = place(&log, anchor, t0);
    let inside = assert_events_match_log(gc, &placed, window, 0.002);
    assert!(inside > 0, "Node never collected in the window: {gc:#}");
}

/// `volley serve` in the background, its port read from its first line.
fn start_volley_serve() -> (Child, u16) {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["serve", "--port", "0"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line
        .split("127.0.0.1:")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("no port in {line:?}"));
    (child, port)
}

#[test]
fn a_server_that_never_collects_has_no_pause_and_no_overlap() {
    let dir = scratch("gc", "none");
    let (mut child, port) = start_volley_serve();
    let pid = child.id().to_string();
    let url = format!("http://127.0.0.1:{port}/");
    let empty = dir.join("empty.log");
    std::fs::write(&empty, "").unwrap();
    let garbage = dir.join("garbage.log");
    std::fs::write(&garbage, "hello\nnot a gc line\n\u{1}\u{2}binary\n").unwrap();
    let base = [
        "run", &url, "-c", "2", "-d", "1s", "--warmup", "0s", "--pid", &pid,
    ];

    // An empty log: no pause, and nothing says what the file is (a server that has not
    // collected yet, or the wrong file), so nothing is claimed about the slowest requests:
    // the fraction is null and the note says why. (A log of a known format with no pause in
    // the window gives 0: monitor::gc::summary's unit tests.)
    let mut a = base.to_vec();
    a.extend(["--gc-log", empty.to_str().unwrap()]);
    let (code, j, stderr) = volley_json(&a, LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_schema(&j);
    let gc = server_gc(&j);
    assert_eq!(gc["pause_count"], 0, "{gc:#}");
    assert_eq!(gc["events"].as_array().unwrap().len(), 0);
    assert!(gc["slow_overlap_fraction"].is_null(), "{gc:#}");
    assert!(
        gc["note"]
            .as_str()
            .is_some_and(|n| n.contains("no GC line of a known format")),
        "{gc:#}"
    );

    // Garbage only (5): the run succeeds and says the log has no GC line it knows.
    let mut a = base.to_vec();
    a.extend(["--gc-log", garbage.to_str().unwrap()]);
    let (code, j, stderr) = volley_json(&a, LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_schema(&j);
    let gc = server_gc(&j);
    assert_eq!(gc["pause_count"], 0, "{gc:#}");
    assert!(gc["slow_overlap_fraction"].is_null(), "{gc:#}");
    let note = gc["note"].as_str().expect("a note");
    assert!(note.contains("no GC line of a known format"), "{note}");
    assert!(note.contains(garbage.to_str().unwrap()), "{note}");

    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn gc_log_needs_a_pid_and_a_readable_file_before_any_load() {
    // 127.0.0.1:9 (discard) is never listened on here: a run that got as far as the load
    // would report connection errors, not a usage error.
    let url = "http://127.0.0.1:9/";
    let o = volley(&["run", url, "-d", "1s", "--gc-log", "/tmp/x.log"], LIMIT);
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--gc-log"), "{e}");

    let me = std::process::id().to_string();
    let t = Instant::now();
    let o = volley(
        &[
            "run",
            url,
            "-d",
            "5s",
            "--pid",
            &me,
            "--gc-log",
            "/nonexistent/gc.log",
        ],
        LIMIT,
    );
    assert_eq!(o.status.code(), Some(2), "{}", output_text(&o));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--gc-log"), "{e}");
    assert!(e.contains("/nonexistent/gc.log"), "{e}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "refused only after the 5 s load"
    );
}

#[test]
fn suite_servers_with_a_runtime_get_their_gc_log() {
    if skip_without(&["go", "java", "javac"]) {
        return;
    }
    let dir = scratch("gc", "suite");
    copy_server("go", &dir);
    copy_server("java", &dir);
    let suite = r#"[suite]
name = "gc"
duration = "2s"

[[server]]
name = "go"
dir = "go"
build = "go build -o server ."
start = "exec ./server"
runtime = "go"

[[server]]
name = "java"
dir = "java"
build = "javac -d out Server.java"
start = "exec java -Xmx32m -cp out Server"
runtime = "jvm"

[[scenario]]
name = "post"
connections = 16
body_size = "64KiB"
"#;
    let (o, out) = bench_suite(&dir, suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let idx = suite_index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{idx:#}");
    for r in rows {
        let p = r["path"].as_str().unwrap_or_else(|| panic!("{r:#}"));
        let j: Value =
            serde_json::from_str(&std::fs::read_to_string(out.join(p)).unwrap()).unwrap();
        assert_schema(&j);
        let gc = server_gc(&j);
        let want = if r["server"] == "go" {
            "go-gctrace"
        } else {
            "jvm-log"
        };
        assert_eq!(gc["source"], want, "{r:#}\n{gc:#}");
        assert!(gc["pause_count"].as_u64().unwrap() > 0, "{gc:#}");
        let argv: Vec<&str> = j["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert!(argv.contains(&"--gc-log"), "{argv:?}");
    }
}

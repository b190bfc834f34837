//! `volley run --http3` against Caddy (Debian's, which serves HTTP/3 beside HTTP/1.1 and
//! HTTP/2 on one port): every request the run sent is one Caddy logged over HTTP/3, in the
//! closed loop with concurrent streams, the open loop and with a connection per request; and
//! against peers that fail: a port where nothing listens, one that swallows every datagram,
//! and Caddy stopped in the middle of a run — each bounded in time and counted.

use crate::common;

use std::net::UdpSocket;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::caddy::Caddy;

use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// `volley run URL --http3 EXTRA… --json`: its exit code, RunResult and output.
fn run(url: &str, cacert: &str, extra: &[&str], dir: &Path) -> (i32, Value, String) {
    let json = dir.join("r.json");
    let mut args = vec!["run", url, "--http3", "--cacert", cacert];
    args.extend_from_slice(extra);
    args.extend(["--json", json.to_str().unwrap()]);
    let o = common::volley(&args, LIMIT);
    let text = common::output_text(&o);
    let r = std::fs::read_to_string(&json)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null);
    (o.status.code().unwrap_or(-1), r, text)
}

fn cacert(c: &Caddy) -> String {
    c.cacert().display().to_string()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a count: {v}"))
}

#[test]
fn every_request_sent_is_one_caddy_served_over_http3() {
    let Some(caddy) = Caddy::start("closed") else {
        return;
    };
    let args = ["-c", "4", "--streams", "8", "-d", "2s"];
    let (code, r, text) = run(&caddy.url(), &cacert(&caddy), &args, &caddy.dir);
    assert_eq!(code, 0, "{text}");
    crate::quick::schema::assert_valid(&r, "an --http3 RunResult");
    assert_eq!(r["target"]["protocol"], "h3", "{text}");
    let quic = &r["target"]["quic"];
    assert_eq!(
        (u(&quic["version"]), u(&quic["connections"])),
        (1, 4),
        "{quic}"
    );
    assert_eq!(u(&quic["streams_per_connection"]), 8);
    assert_eq!(r["target"]["tls"]["alpn"], "h3");
    // Four connections opened at once: none had a session to resume.
    assert_eq!(r["target"]["tls"]["resumed_fraction"], 0.0, "{text}");
    let req = &r["requests"];
    assert_eq!(u(&req["errors"]), 0, "{text}");
    assert_eq!(u(&req["completed"]), u(&req["sent"]), "{text}");
    assert!(u(&req["completed"]) > 1000, "{text}");
    assert!(u(&r["bytes"]["received"]) > 0, "{}", r["bytes"]);
    drop(std::fs::remove_file(caddy.dir.join("r.json")));
    // Caddy writes its log as it serves: every request of the run is there, no more.
    assert_eq!(caddy.h3_logged() as u64, u(&req["sent"]), "{text}");
    assert!(text.contains("TLSv1.3, ALPN h3"), "{text}");
}

#[test]
fn the_open_loop_and_a_connection_per_request() {
    let Some(caddy) = Caddy::start("open") else {
        return;
    };
    let (code, r, text) = run(
        &caddy.url(),
        &cacert(&caddy),
        &["-R", "400", "-c", "4", "-d", "2s"],
        &caddy.dir,
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(u(&r["requests"]["completed"]), 800, "{text}");
    let open = caddy.h3_logged();
    assert_eq!(open, 800);
    // --no-keepalive: a QUIC connection, with its handshake, per request.
    let (code, r, text) = run(
        &caddy.url(),
        &cacert(&caddy),
        &["-c", "2", "--no-keepalive", "-n", "50"],
        &caddy.dir,
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(u(&r["requests"]["completed"]), 50, "{text}");
    assert_eq!(u(&r["target"]["quic"]["connections"]), 50, "{text}");
    assert_eq!(u(&r["target"]["tls"]["handshakes"]), 50, "{text}");
    assert_eq!(caddy.h3_logged() - open, 50);
    // The first handshake has no session to resume; Caddy's ticket is in before the next.
    let resumed = r["target"]["tls"]["resumed_fraction"].as_f64().unwrap();
    assert!(resumed > 0.5, "{text}");
    assert!(r["target"]["quic"]["zero_rtt"].is_null(), "{text}");
}

#[test]
fn zero_rtt_sends_requests_with_the_handshake_of_a_resumed_session() {
    let Some(caddy) = Caddy::start("0rtt") else {
        return;
    };
    let args = ["-c", "2", "--no-keepalive", "-n", "60", "--0rtt"];
    let (code, r, text) = run(&caddy.url(), &cacert(&caddy), &args, &caddy.dir);
    assert_eq!(code, 0, "{text}");
    assert_eq!(u(&r["requests"]["completed"]), 60, "{text}");
    assert_eq!(caddy.h3_logged(), 60, "each request served once: {text}");
    let z = &r["target"]["quic"]["zero_rtt"];
    // Caddy accepts early data; its ticket of a 0-RTT connection comes after the response,
    // so the next connection often has none (a full handshake, which leaves one).
    assert!(u(&z["offered"]) >= 10, "{text}");
    assert_eq!(u(&z["accepted"]), u(&z["offered"]), "{text}");
    let resumed = r["target"]["tls"]["resumed_fraction"].as_f64().unwrap();
    assert!(resumed * 60.0 >= u(&z["offered"]) as f64 - 0.5, "{text}");
    assert!(text.contains("0-RTT on "), "{text}");
}

#[test]
fn peers_that_fail_are_counted_within_the_timeout() {
    let dir = common::scratch("h3", "fail");
    let pem = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    std::fs::write(dir.join("cert.pem"), pem.cert.pem()).unwrap();
    let cacert = dir.join("cert.pem").display().to_string();
    // Nothing on the port: the kernel's ICMP answers make every connect fail at once.
    let port = common::nginx::free_port();
    let t = Instant::now();
    let url = format!("https://127.0.0.1:{port}/");
    let (code, r, text) = run(&url, &cacert, &["-c", "2", "-d", "1s"], &dir);
    assert_eq!(code, 1, "{text}");
    assert!(u(&r["errors"]["connect"]) > 0, "{text}");
    assert!(text.contains("volley: no response from"), "{text}");
    // A socket that swallows every datagram: the handshakes time out (--timeout).
    let sink = UdpSocket::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", sink.local_addr().unwrap().port());
    let (code, r, text) = run(
        &url,
        &cacert,
        &["-c", "2", "-d", "1s", "--timeout", "500ms"],
        &dir,
    );
    assert_eq!(code, 1, "{text}");
    assert!(u(&r["errors"]["connect"]) > 0, "{text}");
    assert!(
        text.contains("the TLS handshake did not finish within --timeout"),
        "{text}"
    );
    assert!(
        t.elapsed() < Duration::from_secs(20),
        "bounded: {:?}",
        t.elapsed()
    );
    drop(sink);
}

#[test]
fn a_server_that_stops_mid_run_ends_its_requests_as_errors() {
    let Some(mut caddy) = Caddy::start("stopped") else {
        return;
    };
    let json = caddy.dir.join("r.json");
    let mut args: Vec<String> = ["run", &caddy.url(), "--http3", "--cacert", &cacert(&caddy)]
        .iter()
        .map(|s| s.to_string())
        .collect();
    args.extend(["-c", "2", "-d", "4s", "--timeout", "1s", "--json"].map(String::from));
    args.push(json.display().to_string());
    let child = Command::new(common::volley_bin())
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let _ = caddy.child.kill();
    let _ = caddy.child.wait();
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(15),
        "bounded: {:?}",
        t.elapsed()
    );
    let text = common::output_text(&o);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let req = &r["requests"];
    assert!(u(&req["completed"]) > 0, "{text}");
    assert!(u(&req["errors"]) > 0, "the stop is counted: {text}");
    let e = &r["errors"];
    let counted = ["connect", "timeout", "reset", "protocol", "closed"]
        .iter()
        .map(|k| u(&e[*k]))
        .sum::<u64>();
    assert_eq!(counted, u(&req["errors"]), "{e}");
}

/// A UDP relay between volley and `to` that drops every other datagram each way (this kernel
/// has no netem); it runs until dropped.
struct LossyRelay {
    port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<u64>>,
}

impl LossyRelay {
    fn start(to: u16) -> LossyRelay {
        use std::sync::atomic::{AtomicBool, Ordering};
        let front = UdpSocket::bind("127.0.0.1:0").unwrap();
        front
            .set_read_timeout(Some(Duration::from_millis(5)))
            .unwrap();
        let port = front.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            // One back socket per client address, so the server sees each connection apart.
            let mut backs: Vec<(std::net::SocketAddr, UdpSocket)> = Vec::new();
            let mut buf = vec![0u8; 65_536];
            let (mut n, mut dropped) = (0u64, 0u64);
            while !flag.load(Ordering::Relaxed) {
                if let Ok((len, from)) = front.recv_from(&mut buf) {
                    if !backs.iter().any(|(a, _)| *a == from) {
                        let b = UdpSocket::bind("127.0.0.1:0").unwrap();
                        b.connect(("127.0.0.1", to)).unwrap();
                        b.set_nonblocking(true).unwrap();
                        backs.push((from, b));
                    }
                    n += 1;
                    if n % 2 == 0 {
                        dropped += 1;
                    } else if let Some((_, b)) = backs.iter().find(|(a, _)| *a == from) {
                        let _ = b.send(&buf[..len]);
                    }
                }
                for (client, b) in &backs {
                    while let Ok(len) = b.recv(&mut buf) {
                        n += 1;
                        if n % 2 == 0 {
                            dropped += 1;
                        } else {
                            let _ = front.send_to(&buf[..len], client);
                        }
                    }
                }
            }
            dropped
        });
        LossyRelay {
            port,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it: the datagrams it dropped.
    fn finish(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.thread.take().map_or(0, |t| t.join().unwrap())
    }
}

#[test]
fn half_the_datagrams_lost_are_recovered_and_counted() {
    let Some(caddy) = Caddy::start("lossy") else {
        return;
    };
    let relay = LossyRelay::start(caddy.port);
    // The relay's port speaks for Caddy's name (the certificate is for localhost).
    let url = format!("https://localhost:{}/", relay.port);
    let t = Instant::now();
    // (Closed loop: at half the datagrams lost each request waits out QUIC's probe timeouts,
    // some 0.5 s on this path, so an open loop's rate would not be reached.)
    // Caddy's site is named by its own port: the requests say it (`:authority`).
    let host = format!("Host: localhost:{}", caddy.port);
    let args = [
        "-c",
        "8",
        "--streams",
        "4",
        "-d",
        "3s",
        "--timeout",
        "5s",
        "-H",
        &host,
    ];
    let (code, r, text) = run(&url, &cacert(&caddy), &args, &caddy.dir);
    assert!(
        t.elapsed() < Duration::from_secs(30),
        "bounded: {:?}",
        t.elapsed()
    );
    let dropped = relay.finish();
    assert_eq!(code, 0, "{text}");
    let quic = &r["target"]["quic"];
    assert!(dropped > 100, "the relay dropped {dropped}");
    assert!(u(&quic["lost_packets"]) > 0, "QUIC saw the loss: {quic}");
    // QUIC recovers what was lost: requests are answered, later, or time out whole.
    let req = &r["requests"];
    let timeouts = u(&r["errors"]["timeout"]);
    assert!(u(&req["completed"]) + timeouts <= u(&req["sent"]), "{text}");
    assert!(u(&req["completed"]) >= 20, "{text}");
    assert!(
        text.contains("packets sent, ") && text.contains(" lost ("),
        "the summary says so: {text}"
    );
    // Caddy served every completed request; a timed-out one it may have served too, and a
    // request on a connection QUIC gave up on goes again once.
    let logged = caddy.h3_logged() as u64;
    assert!(logged >= u(&req["completed"]), "{logged} logged: {text}");
}

#[test]
fn a_suite_runs_h3_cells_on_a_server_that_speaks_it() {
    if !common::on_path("caddy") {
        common::skip("caddy is not installed (scripts/install-test-deps.sh installs it)");
        return;
    }
    let dir = common::scratch("h3", "suite");
    let caddyfile = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h3/Caddyfile");
    // Caddy keeps its autosaved configuration under $HOME: the cell's own TMPDIR.
    let suite = format!(
        r#"[suite]
name = "h3"
duration = "2s"

[[server]]
name = "caddy"
protocols = ["https", "h3"]
start = "exec env HOME=\"$TMPDIR\" caddy run --adapter caddyfile --config {}"

[[scenario]]
name = "get"
protocol = ["https", "h3"]
connections = 2
"#,
        caddyfile.display()
    );
    let (o, out) = common::bench_suite(&dir, &suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", common::output_text(&o));
    let idx = common::checked_suite_index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{idx:#}");
    for row in rows {
        assert_eq!(row["status"], "ok", "{row:#}");
        let j: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(row["path"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        let want = if row["axes"]["protocol"] == "h3" {
            "h3"
        } else {
            "http/1.1"
        };
        assert_eq!(j["target"]["protocol"], want, "{row:#}");
        assert!(u(&j["requests"]["completed"]) > 0);
    }
}

#[test]
fn responses_are_checked_over_http3_as_over_http2() {
    let Some(caddy) = Caddy::start("checks") else {
        return;
    };
    let load = ["-c", "2", "--streams", "8", "-n", "300"];
    let pass = [
        "--expect-status",
        "200",
        "--expect-header",
        "content-type: text/plain; charset=utf-8",
        "--expect-body-contains",
        ".",
        "--expect-body-regex",
        "^\\.$",
        "--expect-size",
        "1",
    ];
    let (code, r, text) = run(
        &caddy.url(),
        &cacert(&caddy),
        &[&load[..], &pass].concat(),
        &caddy.dir,
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(u(&r["requests"]["completed"]), 300, "{text}");
    assert_eq!(u(&r["requests"]["failed_checks"]), 0, "{}", r["checks"]);
    let fail = [
        "--expect-header",
        "x-missing",
        "--expect-body-contains",
        "nope",
    ];
    let (code, r, text) = run(
        &caddy.url(),
        &cacert(&caddy),
        &[&load[..], &fail].concat(),
        &caddy.dir,
    );
    assert_eq!(code, 1, "the implied checks<=1% breaks: {text}");
    assert_eq!(u(&r["requests"]["failed_checks"]), 300, "{}", r["checks"]);
    assert_eq!(u(&r["checks"]["header"]), 300, "{}", r["checks"]);
    assert_eq!(u(&r["checks"]["body_contains"]), 300, "{}", r["checks"]);
    assert_eq!(u(&r["requests"]["errors"]), 0, "{text}");
    assert_eq!(caddy.h3_logged(), 600);
}

/// The shipped protocols suite's HTTP/3 cells on the reference server that speaks it
/// (`servers/rust`: hyper's router over quinn and h3 on its TLS port): `volley bench
/// suites/protocols.toml --only rust --only h3 --only h3-streams`, each cell an HTTP/3 run of
/// 1 KiB responses, every one a 200, no error.
#[test]
fn the_protocols_suites_h3_cells_run_on_the_rust_reference_server() {
    if !common::on_path("cargo") {
        common::skip("cargo is not on PATH (the rust reference server's build)");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    // Built first, within a build's time (the suite's build line then finds it up to date).
    let build = common::limited(
        Command::new("cargo")
            .args(["build", "--release", "--locked", "--quiet"])
            .current_dir(root.join("servers/rust")),
        &["build"],
        Duration::from_secs(900),
    );
    assert!(build.status.success(), "{}", common::output_text(&build));
    let out = common::scratch("h3", "rust-suite").join("out");
    let o = common::limited(
        Command::new(env!("CARGO_BIN_EXE_volley"))
            .args(["bench", "suites/protocols.toml", "--out"])
            .arg(&out)
            .args(["--only", "rust", "--only", "h3", "--only", "h3-streams"])
            .current_dir(root),
        &["bench"],
        Duration::from_secs(180),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    let idx = common::checked_suite_index(&out);
    let rows = idx["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 2, "{idx:#}");
    for row in rows {
        assert_eq!(row["status"], "ok", "{row:#}");
        let r: Value = serde_json::from_str(
            &std::fs::read_to_string(out.join(row["path"].as_str().unwrap())).unwrap(),
        )
        .unwrap();
        crate::quick::schema::assert_valid(&r, "the rust server's h3 RunResult");
        assert_eq!(r["target"]["protocol"], "h3", "{row:#}");
        assert_eq!(r["target"]["tls"]["alpn"], "h3", "{row:#}");
        let streams = if row["scenario"] == "h3-streams" {
            10
        } else {
            1
        };
        assert_eq!(
            u(&r["target"]["quic"]["streams_per_connection"]),
            streams,
            "{row:#}"
        );
        let req = &r["requests"];
        let done = u(&req["completed"]);
        assert!(done > 0, "{row:#}");
        assert_eq!(u(&req["errors"]), 0, "{}", r["errors"]);
        assert_eq!(u(&r["status_codes"]["200"]), done, "{}", r["status_codes"]);
        // Each response carries its 1 KiB body (and HTTP/3's frame and field bytes).
        assert!(u(&r["bytes"]["received"]) >= done * 1024, "{}", r["bytes"]);
    }
}

#[test]
fn verify_sends_one_request_over_http3_before_the_load() {
    let Some(caddy) = Caddy::start("verify") else {
        return;
    };
    let good = ["--verify", "-n", "10", "--expect-header", "server"];
    let (code, r, text) = run(&caddy.url(), &cacert(&caddy), &good, &caddy.dir);
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("verify GET /: GET / HTTP/3\n"), "{text}");
    assert!(text.contains("\n  200 · 1 body bytes\n"), "{text}");
    assert!(text.contains("\n  server: Caddy"), "{text}");
    assert!(
        text.contains("\n  body: \".\"\n  checks passed\n"),
        "{text}"
    );
    assert_eq!(u(&r["requests"]["completed"]), 10, "{text}");
    assert_eq!(
        caddy.h3_logged(),
        11,
        "the verified request and the load's ten"
    );
    // A check the response fails stops the run before the load: one more request.
    let bad = ["--verify", "-n", "10", "--expect-body-contains", "nope"];
    let (code, _, text) = run(&caddy.url(), &cacert(&caddy), &bad, &caddy.dir);
    assert_eq!(code, 2, "{text}");
    assert!(text.contains("  FAILED: body_contains\n"), "{text}");
    assert_eq!(caddy.h3_logged(), 12);
}

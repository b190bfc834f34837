//! HTTP/2 end to end: the real `volley` binary against nginx speaking h2c (prior knowledge)
//! and h2 over TLS (ALPN), and against an in-process TLS server that offers only HTTP/1.1.
//! Every request nginx logs is one volley completed; the server's stream limit caps
//! `--streams` and the summary says so; request bodies larger than the initial window get
//! through flow control; the open loop keeps its rate over streams. Hostile HTTP/2 servers
//! are in `tests/quick/h2_hostile.rs`.

use crate::common;
use crate::common::nginx;
use crate::common::tls;

use std::time::Duration;

use common::{assert_invariant, volley, volley_json};
use tls::{After, Versions};

const LIMIT: Duration = Duration::from_secs(60);

/// nginx answering `.` with h2c on one port, h2 over TLS (a self-signed certificate for
/// localhost) on another, and `max_streams` concurrent streams at most.
struct Servers {
    nginx: nginx::Nginx,
    h2c: u16,
    h2: u16,
    cert: String,
    _dir: tempfile::TempDir,
}

fn servers(max_streams: u32) -> Servers {
    let dir = tempfile::tempdir().unwrap();
    let leaf = tls::self_signed(&["localhost"]);
    let cert = tls::write(dir.path(), "cert.pem", &leaf.pem);
    let key = tls::write(dir.path(), "key.pem", &leaf.key_pem);
    let (h2c, h2) = (nginx::free_port(), nginx::free_port());
    let blocks = format!(
        "http2_max_concurrent_streams {max_streams};\n\
         server {{ listen 127.0.0.1:{h2c} http2; location / {{ return 200 '.'; }} }}\n\
         server {{ listen 127.0.0.1:{h2} ssl http2; ssl_certificate {cert};\n\
         ssl_certificate_key {key}; location / {{ return 200 '.'; }} }}"
    );
    let nginx = nginx::start(dir.path(), &blocks, &[h2c, h2]);
    Servers {
        nginx,
        h2c,
        h2,
        cert,
        _dir: dir,
    }
}

fn n(j: &serde_json::Value, path: &str) -> u64 {
    j.pointer(path)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{path} in {j:#}"))
}

#[test]
fn h2c_streams_complete_every_request_nginx_logs() {
    let s = servers(128);
    let url = format!("http://127.0.0.1:{}/", s.h2c);
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--h2c",
            "-c",
            "2",
            "--streams",
            "16",
            "-n",
            "3000",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, "/requests/completed"), 3000, "{err}");
    assert_eq!(n(&j, "/status_codes/200"), 3000);
    assert_eq!(s.nginx.requests(), 3000, "nginx's access log");
    assert_invariant(&j);
    assert_eq!(j["target"]["protocol"], "h2c");
    assert_eq!(n(&j, "/load/streams"), 16);
    assert_eq!(n(&j, "/target/h2/streams_per_connection"), 16);
    assert_eq!(n(&j, "/target/h2/max_concurrent_streams"), 128);
    assert_eq!(
        n(&j, "/connections/opened"),
        2,
        "two connections carry it all"
    );
}

#[test]
fn https_speaks_h2_when_the_server_offers_it_and_http1_when_told() {
    let s = servers(128);
    let url = format!("https://localhost:{}/", s.h2);
    let base = ["run", &url[..], "--cacert", &s.cert, "-c", "2", "-n", "400"];
    let (code, j, err) = volley_json(&[&base[..], &["--streams", "8"]].concat(), LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["target"]["protocol"], "h2");
    assert_eq!(j["target"]["tls"]["alpn"], "h2");
    assert_eq!(n(&j, "/requests/completed"), 400);
    let (code, j, err) = volley_json(&[&base[..], &["--http1.1"]].concat(), LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["target"]["protocol"], "http/1.1");
    assert_eq!(j["target"]["tls"]["alpn"], "http/1.1");
    assert!(j["target"]["h2"].is_null());
    assert_eq!(s.nginx.requests(), 800);
}

#[test]
fn auto_io_takes_epoll_for_http2_over_tls_and_says_nothing_of_it() {
    // docs/contract.md, "I/O backends": `--http2` on https:// runs on epoll under `auto`;
    // `--io uring` still takes the ring where the kernel gives it.
    let s = servers(128);
    let url = format!("https://localhost:{}/", s.h2);
    let run = |io: &str| {
        let args = [
            "run", &url, "--cacert", &s.cert, "--http2", "-c", "2", "-n", "100", "--io", io,
        ];
        let (code, j, err) = volley_json(&args, LIMIT);
        assert_eq!(code, 0, "{err}");
        assert_eq!(n(&j, "/requests/completed"), 100);
        assert!(!j["warnings"].to_string().contains("io_uring"), "{j}");
        j["client"]["io"].as_str().unwrap().to_string()
    };
    assert_eq!(run("auto"), "epoll");
    assert_eq!(run("epoll"), "epoll");
}

#[test]
fn the_servers_stream_limit_caps_streams_and_the_summary_says_so() {
    let s = servers(8);
    let url = format!("http://127.0.0.1:{}/", s.h2c);
    let args = [
        "run",
        &url[..],
        "--h2c",
        "-c",
        "2",
        "--streams",
        "32",
        "-n",
        "2000",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, "/target/h2/max_concurrent_streams"), 8);
    assert_eq!(n(&j, "/target/h2/streams_per_connection"), 8);
    assert_eq!(
        n(&j, "/requests/completed"),
        2000,
        "no stream refused: {err}"
    );
    assert_eq!(n(&j, "/requests/errors"), 0);
    let out = volley(&args, LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("HTTP/2 (h2c): 8 streams per connection: the server allows 8 at once"),
        "{text}"
    );
}

#[test]
fn request_bodies_larger_than_the_initial_window_get_through() {
    let s = servers(128);
    let url = format!("http://127.0.0.1:{}/", s.h2c);
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--h2c",
            "-m",
            "POST",
            "--body-size",
            "200KiB",
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "100",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, "/requests/completed"), 100, "{err}");
    // nginx answers `return 200` before it reads a body, so the bytes it took are not
    // checked here: the windows' arithmetic is tested in engine::h2::conn.
    assert_eq!(n(&j, "/requests/errors"), 0);
    assert_invariant(&j);
}

#[test]
fn the_open_loop_keeps_its_rate_over_streams() {
    let s = servers(128);
    let url = format!("http://127.0.0.1:{}/", s.h2c);
    let args = [
        "run",
        &url,
        "--h2c",
        "-c",
        "2",
        "--streams",
        "8",
        "-R",
        "1000",
        "-d",
        "2s",
    ];
    // A run that volley itself measured as starved (its threads waited for CPUs other
    // processes had) says nothing about the rate kept: it runs again, at most twice, and says
    // so. Each run's requests are in nginx's count.
    let (mut runs, mut earlier) = (0, 0);
    let (code, j, err) = loop {
        let (code, j, err) = volley_json(&args, LIMIT);
        runs += 1;
        if !j["client"]["starved"].as_bool().unwrap_or(false) || runs == 3 {
            break (code, j, err);
        }
        eprintln!("run {runs} was starved, running again:\n{err}");
        earlier += n(&j, "/requests/completed");
    };
    if j["client"]["starved"].as_bool() == Some(true) {
        // Starved in all three runs: whatever rate was kept, volley must say why in its
        // headline (and the count below still holds).
        assert!(err.contains("!! volley starved"), "{err}");
        assert!(
            code == 0 || code == 1,
            "exit {code} (a rate not kept exits 1): {err}"
        );
        eprintln!("starved in {runs} runs: the rate kept was not checked");
    } else {
        assert_eq!(code, 0, "{err}");
        let achieved = j["achieved_rps"].as_f64().unwrap();
        assert!((990.0..=1010.0).contains(&achieved), "{achieved}");
    }
    assert_eq!(n(&j, "/requests/errors"), 0);
    assert!(j["schedule_lag_us"]["p50"].as_f64().is_some());
    assert_eq!(
        s.nginx.requests() as u64,
        earlier + n(&j, "/requests/completed")
    );
}

#[test]
fn http2_against_a_server_without_h2_is_one_line_and_exit_2() {
    let leaf = tls::self_signed(&["localhost"]);
    let dir = tls::tempdir();
    let cert = tls::write(dir.path(), "cert.pem", &leaf.pem);
    // rustls refuses an ALPN offer it has nothing in common with (an alert); other servers
    // (OpenSSL's) go on without a protocol.
    let cases: [(&[&[u8]], &str); 2] = [
        (&[b"http/1.1"], "refused h2 by ALPN"),
        (&[], "chose no protocol by ALPN"),
    ];
    for (alpn, says) in cases {
        let config = tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both);
        let server = tls::serve(tls::with_alpn(config, alpn), After::Answer);
        let url = server.url("localhost", "/");
        let out = volley(
            &["run", &url, "--cacert", &cert, "--http2", "-n", "10"],
            LIMIT,
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(
            err.contains("does not speak HTTP/2 over TLS: its handshake")
                && err.contains(says)
                && err.contains("drop --http2"),
            "{err}"
        );
        assert!(out.stdout.is_empty());
        assert_eq!(server.requests(), 0);
    }
    // Without --http2 such a server is simply spoken to in HTTP/1.1.
    let config = tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both);
    let server = tls::serve(config, After::Answer);
    let url = server.url("localhost", "/");
    let (code, j, err) = volley_json(&["run", &url, "--cacert", &cert, "-n", "10"], LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["target"]["protocol"], "http/1.1");
}

#[test]
fn header_and_body_checks_judge_every_h2_and_h2c_response() {
    let s = servers(128);
    let h2c = format!("http://127.0.0.1:{}/", s.h2c);
    let h2 = format!("https://localhost:{}/", s.h2);
    let protocols: [(&str, Vec<&str>); 2] = [
        ("h2c", vec!["run", &h2c, "--h2c"]),
        ("h2", vec!["run", &h2, "--cacert", &s.cert]),
    ];
    for (protocol, base) in protocols {
        let load = ["-c", "2", "--streams", "8", "-n", "300"];
        let pass = [
            "--expect-header",
            "server",
            "--expect-body-contains",
            ".",
            "--expect-body-regex",
            "^\\.$",
        ];
        let (code, j, err) = volley_json(&[&base[..], &load, &pass].concat(), LIMIT);
        assert_eq!(code, 0, "{protocol}: {err}");
        assert_eq!(j["target"]["protocol"], protocol);
        assert_eq!(n(&j, "/requests/completed"), 300);
        assert_eq!(
            n(&j, "/requests/failed_checks"),
            0,
            "{protocol}: {}",
            j["checks"]
        );
        let fail = [
            "--expect-header",
            "x-missing",
            "--expect-body-contains",
            "nope",
        ];
        let (code, j, err) = volley_json(&[&base[..], &load, &fail].concat(), LIMIT);
        assert_eq!(code, 1, "{protocol}: the implied checks<=1% breaks: {err}");
        assert_eq!(n(&j, "/requests/completed"), 300);
        assert_eq!(n(&j, "/requests/failed_checks"), 300, "{protocol}");
        assert_eq!(n(&j, "/checks/header"), 300, "{protocol}");
        assert_eq!(n(&j, "/checks/body_contains"), 300, "{protocol}");
        assert_eq!(n(&j, "/checks/body_regex"), 0, "{protocol}");
        assert_invariant(&j);
    }
}

#[test]
fn verify_speaks_the_protocol_the_run_speaks() {
    let s = servers(128);
    let h2c = format!("http://127.0.0.1:{}/", s.h2c);
    let h2 = format!("https://localhost:{}/", s.h2);
    let runs: [(Vec<&str>, &str); 3] = [
        (vec!["run", &h2c, "--h2c"], "HTTP/2"),
        (vec!["run", &h2, "--cacert", &s.cert], "HTTP/2"),
        (
            vec!["run", &h2, "--cacert", &s.cert, "--http1.1"],
            "HTTP/1.1",
        ),
    ];
    let mut logged = 0;
    for (base, spoken) in runs {
        let good = ["--verify", "-n", "10", "--expect-header", "server"];
        let out = volley(&[&base[..], &good].concat(), LIMIT);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{base:?}: {err}");
        assert!(
            err.contains(&format!("verify GET /: GET / {spoken}\n")),
            "{err}"
        );
        assert!(err.contains("\n  200 · 1 body bytes\n"), "{err}");
        // HTTP/2 field names are lower case; HTTP/1.1's as nginx sends them.
        assert!(err.to_lowercase().contains("\n  server: nginx"), "{err}");
        assert!(err.contains("\n  body: \".\"\n  checks passed\n"), "{err}");
        logged += 11;
        // A check the response fails stops the run before the load: one request reached nginx.
        let bad = ["--verify", "-n", "10", "--expect-body-contains", "nope"];
        let out = volley(&[&base[..], &bad].concat(), LIMIT);
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(2), "{base:?}: {err}");
        assert!(err.contains("  FAILED: body_contains\n"), "{err}");
        logged += 1;
        assert_eq!(s.nginx.requests(), logged, "{base:?}");
    }
}

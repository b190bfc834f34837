//! HTTPS and Unix sockets that work, end to end: the real `volley` binary against in-process
//! rustls servers (certificates from rcgen) and a Unix-socket HTTP server. What was negotiated
//! (version, cipher, ALPN, SNI, resumption, client certificates) and measured (handshake and
//! connect times) is checked, in closed and open loop, user ramps and over Unix sockets; the
//! result file validates against its schema; and the byte stream holds under load: large
//! bodies both ways, key updates, closes, one-byte records, bursts of tickets, idle reconnects,
//! many connections.
//! Servers and settings that are refused or break are in `tests/quick/tls_refused.rs`.

use crate::common;
use crate::common::tls;

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{assert_invariant, volley_json};
use tls::{
    assert_percentiles, assert_schema_valid, check_https_run, client_auth_server, n, pki,
    setup_failure, tempdir, trusted_server, unix_server, After, Versions, LIMIT,
};

// ---- what is negotiated ----

#[test]
fn https_with_a_private_ca_negotiates_tls13_and_measures_the_handshake() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "50", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    check_https_run(&j, "TLSv1.3", 50);
    assert_eq!(s.requests(), 50);
    assert!(
        j["target"]["tls"]["cipher"]
            .as_str()
            .unwrap()
            .contains("TLS13"),
        "{}",
        j["target"]
    );
}

#[test]
fn thresholds_judge_the_handshake_and_connect_times() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "-n",
            "20",
            "-c",
            "2",
            "-t",
            "1",
            "--threshold",
            "tls_handshake_p99<60s",
            "--threshold",
            "connect_max<1us",
        ],
        LIMIT,
    );
    assert_eq!(code, 1, "the connect threshold cannot hold: {err}");
    let t = &j["thresholds"];
    assert_eq!(t[0]["threshold"], "tls_handshake_p99<60s", "{t}");
    assert_eq!(t[0]["pass"], true, "{t}");
    assert!(t[0]["actual"].as_f64().unwrap() > 0.0, "{t}");
    assert_eq!(t[1]["pass"], false, "{t}");
}

#[test]
fn a_tls12_only_server_is_reported_as_tls12() {
    let p = pki();
    let s = trusted_server(&p, Versions::Tls12);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "20", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    check_https_run(&j, "TLSv1.2", 20);
}

#[test]
fn insecure_accepts_a_self_signed_certificate_and_says_so() {
    let leaf = tls::self_signed(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &["run", &url, "-k", "-n", "20", "-c", "1", "-t", "1"],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 20);
    assert_eq!(j["target"]["tls"]["insecure"], true, "{}", j["target"]);
}

#[test]
fn a_server_without_alpn_is_still_http11_and_says_no_alpn() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let config = tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both);
    let s = tls::serve(tls::with_alpn(config, &[]), After::Answer);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "10", "-c", "1", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 10);
    assert!(j["target"]["tls"]["alpn"].is_null(), "{}", j["target"]);
    assert_eq!(j["target"]["protocol"], "http/1.1");
}

#[test]
fn the_urls_host_is_sent_as_sni_but_an_address_is_not() {
    let p = pki();
    let leaf = p.ca.server(&["localhost", "127.0.0.1"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    for (host, want) in [("localhost", Some("localhost")), ("127.0.0.1", None)] {
        let url = s.url(host, "/");
        let (code, j, err) = volley_json(
            &[
                "run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1", "-t", "1",
            ],
            LIMIT,
        );
        assert_eq!(code, 0, "{host}: {err}");
        assert_eq!(n(&j, &["requests", "completed"]), 5, "{}", j["errors"]);
        let names = s.names();
        assert_eq!(names.last().unwrap().as_deref(), want, "{host}: {names:?}");
    }
}

// ---- resumption ----

fn resumed_fraction(versions: Versions, extra: &[&str]) -> (f64, Value) {
    let p = pki();
    let s = trusted_server(&p, versions);
    let url = s.url("localhost", "/");
    let mut args = vec![
        "run",
        &url,
        "--cacert",
        &p.cacert,
        "--no-keepalive",
        "-n",
        "200",
        "-c",
        "2",
        "-t",
        "1",
    ];
    args.extend_from_slice(extra);
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{}", j["errors"]);
    let tls = &j["target"]["tls"];
    assert!(n(&j, &["target", "tls", "handshakes"]) >= 200, "{tls}");
    assert_eq!(
        s.handshakes(),
        n(&j, &["target", "tls", "handshakes"]),
        "{tls}"
    );
    (tls["resumed_fraction"].as_f64().unwrap(), j)
}

#[test]
fn new_connections_resume_their_sessions() {
    let (f, j) = resumed_fraction(Versions::Both, &[]);
    assert!(f > 0.8, "resumed {f}: {}", j["target"]["tls"]);
    assert_eq!(j["target"]["tls"]["version"], "TLSv1.3");
}

#[test]
fn tls12_sessions_resume_too() {
    let (f, j) = resumed_fraction(Versions::Tls12, &[]);
    assert!(f > 0.8, "resumed {f}: {}", j["target"]["tls"]);
    assert_eq!(j["target"]["tls"]["version"], "TLSv1.2");
}

#[test]
fn no_tls_resume_makes_every_handshake_full() {
    let (f, j) = resumed_fraction(Versions::Both, &["--no-tls-resume"]);
    assert_eq!(f, 0.0, "{}", j["target"]["tls"]);
}

// ---- client certificates ----

#[test]
fn a_client_certificate_is_presented_when_given() {
    for versions in [Versions::Both, Versions::Tls12] {
        client_certificate_accepted(versions);
    }
}

fn client_certificate_accepted(versions: Versions) {
    let (p, s, cert, key) = client_auth_server(versions);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "--cert", &cert, "--key", &key, "-n", "20", "-c",
            "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{}", j["errors"]);
    assert_eq!(s.requests(), 20);
}

#[test]
fn one_pem_file_with_certificate_and_key_is_enough_for_cert() {
    let (p, s, cert, key) = client_auth_server(Versions::Both);
    let both = format!(
        "{}{}",
        std::fs::read_to_string(&cert).unwrap(),
        std::fs::read_to_string(&key).unwrap()
    );
    let combined = tls::write(p.dir.path(), "client-both.pem", &both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "--cert", &combined, "-n", "5", "-c", "1", "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 5, "{}", j["errors"]);
}

// ---- load shapes: open loop, user ramp, many connections, handshake time ----

#[test]
fn open_loop_over_tls_holds_the_rate() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-R", "200", "-d", "1s", "-c", "4", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    let done = n(&j, &["requests", "completed"]);
    assert!((185..=205).contains(&done), "completed {done}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(j["target"]["tls"]["version"], "TLSv1.3");
}

#[test]
fn a_user_ramp_over_tls_works() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "--users",
            "4",
            "--spawn-rate",
            "100",
            "-d",
            "1s",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert!(n(&j, &["requests", "completed"]) > 0);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert!(
        n(&j, &["target", "tls", "handshakes"]) >= 4,
        "{}",
        j["target"]
    );
}

#[test]
fn many_connections_over_two_threads_count_every_handshake() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "600", "-c", "24", "-t", "2",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 600, "{}", j["errors"]);
    assert_eq!(
        n(&j, &["target", "tls", "handshakes"]),
        24,
        "{}",
        j["target"]
    );
    assert_eq!(s.handshakes(), 24);
    assert_eq!(s.requests(), 600);
}

#[test]
fn the_handshake_time_covers_what_the_server_sees_of_it() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "--no-keepalive",
            "--no-tls-resume",
            "-n",
            "60",
            "-c",
            "1",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    let client = &j["tls_handshake_us"];
    let server = s.durations();
    assert_eq!(server.len(), 60);
    let server_p50 = server[server.len() / 2].as_micros() as u64;
    // The client's handshake spans the server's: from before its ClientHello is sent to
    // after the server's Finished is processed.
    assert!(
        n(client, &["min"]) > 0,
        "a handshake cannot take 0 us: {client}"
    );
    assert!(
        n(client, &["p50"]) * 10 >= server_p50 * 8,
        "client p50 {} us, server p50 {server_p50} us: {client}",
        client["p50"]
    );
}

// ---- Unix sockets ----

#[test]
fn a_unix_socket_carries_the_urls_host_and_path() {
    let dir = tempdir();
    let path = dir.path().join("app.sock");
    let (count, heads) = unix_server(&path);
    let sock = path.display().to_string();
    let (code, j, err) = volley_json(
        &[
            "run",
            "http://api/x",
            "--unix-socket",
            &sock,
            "-n",
            "100",
            "-c",
            "2",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 100, "{}", j["errors"]);
    assert_eq!(
        j["target"]["addr"],
        format!("unix:{sock}"),
        "{}",
        j["target"]
    );
    assert_eq!(j["target"]["unix_socket"], sock.as_str(), "{}", j["target"]);
    assert!(j["target"]["tls"].is_null(), "{}", j["target"]);
    assert_eq!(count.load(Ordering::SeqCst), 100);
    let heads = heads.lock().unwrap();
    let first = &heads[0];
    assert!(first.starts_with("GET /x HTTP/1.1\r\n"), "{first:?}");
    assert!(
        first.lines().any(|l| l.eq_ignore_ascii_case("host: api")),
        "{first:?}"
    );
}

#[test]
fn https_over_a_unix_socket_verifies_the_urls_host() {
    let p = pki();
    let leaf = p.ca.server(&["api.internal"]);
    let path = p.dir.path().join("tls.sock");
    let s = tls::serve_unix(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        &path,
    );
    let sock = path.display().to_string();
    let (code, j, err) = volley_json(
        &[
            "run",
            "https://api.internal/x",
            "--unix-socket",
            &sock,
            "--cacert",
            &p.cacert,
            "-n",
            "20",
            "-c",
            "2",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{}", j["errors"]);
    assert_eq!(
        j["target"]["addr"],
        format!("unix:{sock}"),
        "{}",
        j["target"]
    );
    assert_eq!(j["target"]["tls"]["version"], "TLSv1.3", "{}", j["target"]);
    assert_eq!(s.requests(), 20);
    assert_eq!(s.names()[0].as_deref(), Some("api.internal"));
    // The name in the URL is what the certificate must carry, socket or not.
    let err = setup_failure(&[
        "run",
        "https://other.internal/x",
        "--unix-socket",
        &sock,
        "--cacert",
        &p.cacert,
        "-n",
        "5",
        "-c",
        "1",
    ]);
    assert!(err.contains("not valid for this host"), "{err}");
}

// ---- the result file ----

#[test]
fn https_and_unix_socket_results_validate_against_the_schema() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "50", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_schema_valid(&j, "https run");
    assert_percentiles(&j["connect_us"], "connect_us");
    assert_percentiles(&j["tls_handshake_us"], "tls_handshake_us");
    assert!(j["connect_hdr"].as_str().is_some(), "connect_hdr");
    assert!(
        j["tls_handshake_hdr"].as_str().is_some(),
        "tls_handshake_hdr"
    );
    let tls = &j["target"]["tls"];
    assert!(tls["resumed_fraction"].as_f64().is_some(), "{tls}");
    assert!(j["target"]["unix_socket"].is_null(), "{}", j["target"]);

    let dir = tempdir();
    let path = dir.path().join("app.sock");
    let _server = unix_server(&path);
    let sock = path.display().to_string();
    let (code, j, err) = volley_json(
        &[
            "run",
            "http://api/",
            "--unix-socket",
            &sock,
            "-n",
            "20",
            "-c",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_schema_valid(&j, "unix socket run");
    assert!(j["target"]["tls"].is_null(), "{}", j["target"]);
    assert!(j["tls_handshake_us"].is_null(), "{}", j["tls_handshake_us"]);
}

#[test]
fn the_server_monitor_works_over_tls() {
    // The in-process server is this test process: monitor it.
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let pid = std::process::id().to_string();
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-d", "1s", "-c", "2", "-t", "1", "--pid", &pid,
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    let pids = j["server"]["pids"]
        .as_array()
        .unwrap_or_else(|| panic!("{}", j["server"]));
    assert!(
        pids.iter()
            .any(|p| p.as_u64() == Some(std::process::id() as u64)),
        "{pids:?}"
    );
    assert_eq!(j["target"]["tls"]["version"], "TLSv1.3");
}

// ---- the byte stream under load: large bodies, key updates, closes, one-byte records ----

#[test]
fn large_responses_over_tls_are_read_whole() {
    const SIZE: usize = 300 * 1024;
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Body(SIZE),
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "30", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 30, "{}", j["errors"]);
    assert!(
        n(&j, &["bytes", "received"]) >= 30 * SIZE as u64,
        "{}",
        j["bytes"]
    );
}

#[test]
fn large_request_bodies_over_tls_are_written_whole() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "-n",
            "20",
            "-c",
            "2",
            "-t",
            "1",
            "-m",
            "POST",
            "--body-size",
            "1MiB",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{}", j["errors"]);
    assert_eq!(s.requests(), 20, "the server read every body whole");
    assert!(n(&j, &["bytes", "sent"]) >= 20 << 20, "{}", j["bytes"]);
}

#[test]
fn a_server_key_update_keeps_the_connection_going() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::KeyUpdate,
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "50", "-c", "1", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(n(&j, &["requests", "completed"]), 50, "{}", j["errors"]);
    assert_eq!(n(&j, &["connections", "opened"]), 1, "{}", j["connections"]);
    assert_eq!(s.requests(), 50);
}

#[test]
fn close_notify_after_each_response_reconnects_cleanly() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::CloseNotify,
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "40", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 40, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert!(
        n(&j, &["target", "tls", "handshakes"]) >= 40,
        "{}",
        j["target"]
    );
}

#[test]
fn a_body_delimited_by_the_close_is_complete_with_or_without_close_notify() {
    for notify in [true, false] {
        let p = pki();
        let leaf = p.ca.server(&["localhost"]);
        let s = tls::serve(
            tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
            After::UntilClose { notify },
        );
        let url = s.url("localhost", "/");
        let (code, j, err) = volley_json(
            &[
                "run", &url, "--cacert", &p.cacert, "-n", "20", "-c", "2", "-t", "1",
            ],
            LIMIT,
        );
        assert_eq!(code, 0, "close_notify {notify}: {err}");
        assert_invariant(&j);
        assert_eq!(
            n(&j, &["requests", "completed"]),
            20,
            "close_notify {notify}: {}",
            j["errors"]
        );
        assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    }
}

#[test]
fn a_response_in_one_byte_records_is_reassembled() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Trickle,
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-n", "30", "-c", "2", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 30, "{}", j["errors"]);
    assert_eq!(n(&j, &["status_codes", "200"]), 30, "{}", j["status_codes"]);
}

/// 900 tickets before each response: more records without data than one read may take (its
/// budget), fewer than a flood. The read stops at its budget with the rest of the burst already
/// in the socket, where no new event announces it: the worker comes back to the connection by
/// itself, so every response completes on the one connection, none waiting for its timeout.
#[test]
fn records_without_data_beyond_a_reads_budget_are_read_without_a_new_event() {
    let leaf = tls::self_signed(&["localhost"]);
    let s = tls::serve(
        tls::config_flood(vec![leaf.der.clone()], leaf.key()),
        After::Burst { tickets: 900 },
    );
    let url = s.url("localhost", "/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-n",
            "30",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "5s",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 30, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["connections", "opened"]), 1, "{}", j["connections"]);
}

#[test]
fn an_idle_connection_closed_with_close_notify_is_reopened_without_errors() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::IdleClose,
    );
    let url = s.url("localhost", "/");
    // A request every 50 ms on one connection; the server closes it 20 ms after each answer.
    let (code, j, err) = volley_json(
        &[
            "run", &url, "--cacert", &p.cacert, "-R", "20", "-d", "1s", "-c", "1", "-t", "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    let done = n(&j, &["requests", "completed"]);
    assert!(
        (18..=21).contains(&done),
        "completed {done}: {}",
        j["errors"]
    );
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert!(
        n(&j, &["target", "tls", "handshakes"]) >= 18,
        "{}",
        j["target"]
    );
}

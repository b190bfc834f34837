//! HTTPS servers and settings that cannot be used or that break, end to end: the real
//! `volley` binary against in-process rustls servers (certificates from rcgen) and raw TCP
//! servers. When TLS cannot be set up at all (an untrusted, expired or wrong-host certificate,
//! plain HTTP on an https:// URL or TLS on an http:// one, a required client certificate, a
//! chain over 64 KiB, no common protocol or cipher suite, unusable files, a missing Unix
//! socket) the run exits 2 before any request with one actionable line, whatever its shape.
//! When it breaks later (an alert or corrupt record after the handshake, a stalled, closed or
//! reset handshake, a certificate that turns bad, a flood of records without data) the run ends
//! in bounded time with the right error kind, and says why. What works is in `tests/quick/tls.rs`.

use crate::common;
use crate::common::tls;

use std::io::Read;
use std::net::TcpListener;
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{assert_invariant, volley, volley_json};
use serde_json::Value;
use tls::{
    client_auth_server, n, pki, setup_failure, stderr, tempdir, trusted_server, After, Ca,
    Versions, LIMIT,
};

// ---- certificates, servers and settings that cannot be used: exit 2 before any request ----

#[test]
fn a_self_signed_certificate_without_k_exits_2_before_any_request() {
    let leaf = tls::self_signed(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let err = setup_failure(&["run", &url, "-n", "20", "-c", "2", "-t", "1"]);
    let port = s.addr.port();
    assert!(
        err.starts_with(&format!(
            "volley: TLS handshake with localhost:{port} failed: "
        )),
        "{err}"
    );
    assert!(err.contains("--cacert") && err.contains("-k"), "{err}");
    assert_eq!(s.handshakes(), 0);
    assert_eq!(s.requests(), 0, "no request bytes were written");
}

#[test]
fn an_expired_certificate_exits_2_saying_expired() {
    let p = pki();
    let leaf = p.ca.expired_server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let err = setup_failure(&["run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1"]);
    assert!(err.contains("expired"), "{err}");
    assert_eq!(s.requests(), 0);
}

#[test]
fn a_certificate_for_another_host_exits_2() {
    let p = pki();
    let leaf = p.ca.server(&["example.com"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = format!("https://127.0.0.1:{}/", s.addr.port());
    let err = setup_failure(&["run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1"]);
    assert!(err.contains("not valid for this host"), "{err}");
    assert!(err.contains("127.0.0.1"), "{err}");
    assert_eq!(s.requests(), 0);
}

#[test]
fn plain_http_on_an_https_url_exits_2_suggesting_http() {
    // Like nginx or Go: the ClientHello is a bad request, answered in plain HTTP.
    let s = common::spawn(|mut c, _| {
        let mut buf = [0u8; 4096];
        let _ = c.stream.read(&mut buf);
        let _ =
            c.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    });
    let url = format!("https://127.0.0.1:{}/", s.addr.port());
    let err = setup_failure(&["run", &url, "-k", "-n", "5", "-c", "1"]);
    assert!(err.contains("plain HTTP"), "{err}");
    assert!(err.contains("http://"), "{err}");
    assert!(err.contains("400 Bad Request"), "{err}");
}

#[test]
fn a_tls_server_on_an_http_url_exits_2_saying_use_https() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = format!("http://127.0.0.1:{}/", s.addr.port());
    // The server answers the cleartext request with a TLS alert record: before any response
    // of the run, that names the mistake instead of counting reconnects.
    let err = setup_failure(&[
        "run",
        &url,
        "-d",
        "1s",
        "-c",
        "1",
        "-t",
        "1",
        "--timeout",
        "500ms",
    ]);
    assert!(
        err.contains("speaks TLS") && err.contains("use https://"),
        "{err}"
    );
    assert_eq!(s.requests(), 0, "no HTTP request was understood");
}

/// In TLS 1.2 the server refuses the handshake before the client's Finished is answered: the
/// client sees the alert while still handshaking.
#[test]
fn a_tls12_server_that_requires_a_client_certificate_asks_for_cert() {
    client_certificate_missing(Versions::Tls12);
}

/// In TLS 1.3 the client's handshake is complete when it sends its (empty) Certificate and
/// Finished; the server's `certificate_required` alert arrives after that, when the first
/// request has already been written.
#[test]
fn a_tls13_server_that_requires_a_client_certificate_asks_for_cert() {
    client_certificate_missing(Versions::Both);
}

fn client_certificate_missing(versions: Versions) {
    let (p, s, _, _) = client_auth_server(versions);
    let url = s.url("localhost", "/");
    let err = setup_failure(&[
        "run", &url, "--cacert", &p.cacert, "-n", "20", "-c", "2", "-t", "1",
    ]);
    assert!(err.contains("--cert"), "{err}");
    assert!(err.contains("TLS handshake with localhost:"), "{err}");
    assert_eq!(s.requests(), 0, "no request reached the server");
}

#[test]
fn a_certificate_chain_over_64_kib_exits_2_naming_the_bound() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    // The leaf and the CA certificate again and again: far more than 64 KiB.
    let mut chain = vec![leaf.der.clone()];
    let ca = p.ca.der();
    while chain.iter().map(|c| c.len()).sum::<usize>() < 100 * 1024 {
        chain.push(ca.clone());
    }
    let s = tls::serve(
        tls::config(chain, leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let err = setup_failure(&["run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1"]);
    assert!(err.contains("64 KiB"), "{err}");
    assert_eq!(s.requests(), 0);
}

#[test]
fn a_server_that_only_speaks_h2_refuses_http1_1_naming_the_alert() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let config = tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both);
    let s = tls::serve(tls::with_alpn(config, &[b"h2"]), After::Answer);
    let url = s.url("localhost", "/");
    let err = setup_failure(&[
        "run",
        &url,
        "--cacert",
        &p.cacert,
        "--http1.1",
        "-n",
        "5",
        "-c",
        "1",
    ]);
    assert!(err.contains("NoApplicationProtocol"), "{err}");
    assert_eq!(s.requests(), 0);
}

#[test]
fn no_cipher_suite_in_common_exits_2_saying_so() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(tls::config_no_common_suite(&leaf), After::Answer);
    let url = s.url("localhost", "/");
    let err = setup_failure(&["run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1"]);
    assert!(
        err.contains("no TLS version or cipher suite in common"),
        "{err}"
    );
    assert_eq!(s.requests(), 0);
}

#[test]
fn unusable_tls_files_exit_2_naming_their_flag_before_connecting() {
    let p = pki();
    let s = trusted_server(&p, Versions::Both);
    let url = s.url("localhost", "/");
    let other = Ca::new("other").client("someone else");
    let client = p.ca.client("volley");
    let cert = tls::write(p.dir.path(), "client.pem", &client.pem);
    let wrong_key = tls::write(p.dir.path(), "wrong.key", &other.key_pem);
    let junk = tls::write(p.dir.path(), "junk.pem", "not pem\n");
    let missing = p.dir.path().join("missing.pem").display().to_string();
    let cases: [(&[&str], &str); 4] = [
        (&["--cacert", &missing], "--cacert "),
        (&["--cacert", &junk], "--cacert "),
        (&["--cert", &junk, "--key", &junk], "--cert "),
        (&["--cert", &cert, "--key", &wrong_key], "--cert/--key"),
    ];
    for (flags, names) in cases {
        let mut args = vec!["run", url.as_str(), "-n", "5", "-c", "1"];
        args.extend_from_slice(flags);
        let err = setup_failure(&args);
        assert!(err.contains(names), "{flags:?}: {err}");
    }
    assert_eq!(s.handshakes(), 0, "no connection was made");
}

#[test]
fn a_missing_or_non_socket_unix_path_exits_2_naming_the_flag() {
    let dir = tempdir();
    let missing = dir.path().join("nothing.sock").display().to_string();
    let file = tls::write(dir.path(), "plain.txt", "not a socket\n");
    for path in [&missing, &file] {
        let o = volley(
            &[
                "run",
                "http://api/x",
                "--unix-socket",
                path,
                "-n",
                "5",
                "-c",
                "1",
            ],
            LIMIT,
        );
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(2), "{path}: {err}");
        assert!(err.contains(&format!("--unix-socket {path}")), "{err}");
        assert_eq!(err.lines().count(), 1, "{err:?}");
    }
}

#[test]
fn an_untrusted_certificate_ends_every_kind_of_run_before_any_request() {
    let leaf = tls::self_signed(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let loads: [&[&str]; 5] = [
        &["--warmup", "300ms", "-d", "1s", "-c", "2"],
        &["-R", "100", "-d", "1s", "-c", "2"],
        &["--users", "3", "--spawn-rate", "10", "-d", "1s"],
        &["-d", "1s", "-c", "4", "-t", "2"],
        &["-d", "1s", "-c", "2", "--no-keepalive"],
    ];
    for load in loads {
        let mut args = vec!["run", url.as_str()];
        args.extend_from_slice(load);
        let err = setup_failure(&args);
        assert!(err.contains("--cacert"), "{load:?}: {err}");
    }
    assert_eq!(s.requests(), 0);
}

// ---- servers that break after set-up: bounded time, the right error kind ----

#[test]
fn a_fatal_alert_after_the_handshake_is_a_protocol_error() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::RawAlert,
    );
    let url = s.url("localhost", "/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "-d",
            "1s",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "1s",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "nothing completed: {err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "protocol"]) > 0, "{}", j["errors"]);
    assert!(s.handshakes() >= 1 && s.requests() >= 1);
}

#[test]
fn a_corrupt_record_after_the_handshake_is_a_protocol_error() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::CorruptRecord,
    );
    let url = s.url("localhost", "/");
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "-d",
            "1s",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "1s",
        ],
        LIMIT,
    );
    assert_eq!(code, 1, "nothing completed: {err}");
    assert_invariant(&j);
    assert!(n(&j, &["errors", "protocol"]) > 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["errors", "timeout"]), 0, "{}", j["errors"]);
}

/// A partial record and the FIN in one segment: the close must be read at once (a `closed`
/// error), not found by the request timeout.
#[test]
fn a_record_cut_short_by_the_close_ends_the_request_at_once() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both),
        After::Truncated,
    );
    let url = s.url("localhost", "/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "-n",
            "3",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "10s",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "nothing completed: {err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["errors", "closed"]), 3, "{}", j["errors"]);
    assert_eq!(n(&j, &["errors", "timeout"]), 0, "{}", j["errors"]);
}

#[test]
fn a_stalled_handshake_times_out_as_a_connect_error() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
            if held.len() > 64 {
                return;
            }
        }
    });
    let url = format!("https://localhost:{port}/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-d",
            "1s",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "300ms",
        ],
        LIMIT,
    );
    let took = t.elapsed();
    assert!(took < Duration::from_secs(4), "took {took:?}");
    assert_eq!(code, 1, "no response: {err}");
    assert_invariant(&j);
    assert!(n(&j, &["errors", "connect"]) > 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "sent"]), 0);
    assert!(
        err.contains("(the TLS handshake did not finish within --timeout)"),
        "{err}"
    );
}

#[test]
fn a_stalled_handshake_with_a_request_count_still_ends() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(16).collect();
        std::thread::sleep(Duration::from_secs(10));
        drop(held);
    });
    let url = format!("https://localhost:{port}/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-n",
            "3",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "300ms",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "no response: {err}");
    assert!(n(&j, &["errors", "connect"]) > 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "sent"]), 0);
}

#[test]
fn a_server_that_closes_during_the_handshake_is_not_a_setup_failure() {
    // Reads the ClientHello and closes: a failing connection, not a certificate to fix.
    let s = common::spawn(|mut c, _| {
        let mut buf = [0u8; 4096];
        let _ = c.stream.read(&mut buf);
    });
    let url = format!("https://127.0.0.1:{}/", s.addr.port());
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-d",
            "500ms",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "300ms",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "no response: {err}");
    assert_invariant(&j);
    assert!(n(&j, &["errors", "connect"]) > 0, "{}", j["errors"]);
    assert!(
        err.contains("(closed by the server during the TLS handshake)"),
        "{err}"
    );
}

/// Reads the ClientHello and resets the connection (SO_LINGER 0): the TCP connects succeed, so
/// nothing is "refused"; before any response the reset is a `connect` error, not a set-up
/// failure, and the warning and the last line name it.
#[test]
fn a_reset_during_the_handshake_is_a_connect_error_named_as_a_reset() {
    let s = common::spawn(|mut c, _| {
        let mut buf = [0u8; 4096];
        let _ = c.stream.read(&mut buf);
        c.reset();
    });
    let url = format!("https://127.0.0.1:{}/", s.addr.port());
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-d",
            "500ms",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "300ms",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(4),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "no response: {err}");
    assert_invariant(&j);
    assert!(n(&j, &["errors", "connect"]) > 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "sent"]), 0);
    assert!(
        j["connect_us"]["max"].is_u64(),
        "connected: {}",
        j["connect_us"]
    );
    let reason = "reset by the server during the TLS handshake";
    assert!(
        err.contains(&format!("volley: no response from {url} ({reason})")),
        "{err}"
    );
    assert!(!err.contains("refused"), "{err}");
    let warned = j["warnings"].as_array().unwrap().iter().any(|w| {
        let w = w.as_str().unwrap();
        w.contains("could not be opened at all") && w.contains(&format!("the first: {reason}"))
    });
    assert!(warned, "{}", j["warnings"]);
}

#[test]
fn a_certificate_that_turns_bad_after_the_first_handshake_fails_those_connections_only() {
    let p = pki();
    let good = p.ca.server(&["localhost"]);
    let bad = tls::self_signed(&["localhost"]);
    let good = Arc::new(tls::config(
        vec![good.der.clone()],
        good.key(),
        Versions::Both,
    ));
    let bad = Arc::new(tls::config(
        vec![bad.der.clone()],
        bad.key(),
        Versions::Both,
    ));
    let s = tls::serve_with(
        move |k| Arc::clone(if k == 0 { &good } else { &bad }),
        After::Answer,
    );
    let url = s.url("localhost", "/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--cacert",
            &p.cacert,
            "--no-keepalive",
            "--no-tls-resume",
            "-n",
            "20",
            "-c",
            "1",
            "-t",
            "1",
            "--timeout",
            "500ms",
        ],
        LIMIT,
    );
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    // One good handshake: the run goes on, the later failures are connect errors.
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(n(&j, &["requests", "completed"]), 1, "{}", j["requests"]);
    assert!(n(&j, &["errors", "connect"]) > 0, "{}", j["errors"]);
    assert_eq!(s.requests(), 1, "no request went to the untrusted server");
    assert_eq!(s.handshakes(), 1);
}

/// A server that floods its connections with TLS records that carry no data, all but its
/// second connection, which answers normally (with `-c 2 -t 1`: the flooded connection's
/// neighbour on the same worker).
fn flooding(data_every: Option<usize>) -> tls::TlsServer {
    let leaf = tls::self_signed(&["localhost"]);
    let config = Arc::new(tls::config_flood(vec![leaf.der.clone()], leaf.key()));
    tls::serve_each(
        move |_| Arc::clone(&config),
        move |k| match k {
            1 => After::Answer,
            _ => After::Flood { data_every },
        },
    )
}

/// The flood tests one at a time: each floods from a server thread as fast as a core allows
/// while volley's worker takes the other; two at once on two cores starve the well-behaved
/// connection of both (what they check is the worker's fairness, not the machine's).
static ONE_FLOOD: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Runs 1 s on two connections of one worker against `s` (`-k`) with `--timeout`: how long it
/// took, the exit code, the RunResult and stderr.
fn run_beside_a_flood(s: &tls::TlsServer, timeout: &str) -> (Duration, i32, Value, String) {
    let _alone = ONE_FLOOD.lock().unwrap_or_else(|p| p.into_inner());
    let url = s.url("localhost", "/");
    let t = Instant::now();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "-k",
            "-d",
            "1s",
            "-c",
            "2",
            "-t",
            "1",
            "--timeout",
            timeout,
        ],
        LIMIT,
    );
    (t.elapsed(), code, j, err)
}

/// What a run beside a flood must show whatever ended the flooded connections: it ended within
/// `-d` + `--timeout` + 1 s (`bound`), its memory stayed small, and the other connection on the
/// same worker got at least `least` responses meanwhile.
fn assert_spared(took: Duration, bound: Duration, least: u64, (code, j, err): (i32, &Value, &str)) {
    assert!(took < bound, "took {took:?}");
    assert_eq!(code, 0, "the well-behaved connection got responses: {err}");
    assert_invariant(j);
    let completed = n(j, &["requests", "completed"]);
    assert!(completed >= least, "{} {}", j["requests"], j["errors"]);
    let rss = n(j, &["client", "rss_max_bytes"]);
    assert!(rss < 64 << 20, "volley grew to {rss} bytes");
}

/// NewSessionTicket messages, which rustls takes without bound (it ends runs of empty records
/// and of key updates itself), as fast as the client reads them: past 1,000 records in a row
/// without data the read ends the connection as a `protocol` error naming the flood; the
/// worker serves its other connection meanwhile.
#[test]
fn a_flood_of_records_without_data_ends_its_connection_and_spares_the_others() {
    let s = flooding(None);
    let (took, code, j, err) = run_beside_a_flood(&s, "1s");
    assert_spared(took, Duration::from_secs(3), 20, (code, &j, &err));
    assert!(n(&j, &["errors", "protocol"]) > 0, "{}", j["errors"]);
    let named = j["warnings"].as_array().unwrap().iter().any(|w| {
        w.as_str()
            .unwrap()
            .contains("more than 1,000 records in a row without any data")
    });
    assert!(named, "{}", j["warnings"]);
    assert!(s.handshakes() >= 2);
}

/// One byte of data after every 500 tickets keeps each run without data short of the bound,
/// and the read buffer never fills: reads stop at their budget, and the worker comes back to
/// the connection after the others. The request still times out on time, and the other
/// connection still gets its responses.
#[test]
fn a_flood_with_a_byte_of_data_now_and_then_cannot_hold_the_worker() {
    let s = flooding(Some(500));
    let (took, code, j, err) = run_beside_a_flood(&s, "500ms");
    // epoll: the other connection has its turn after each read's budget; io_uring reads each
    // receive whole, but the other connection's receive is armed first once the flood took
    // every buffer (ENOBUFS), so it is never left without one.
    assert_spared(took, Duration::from_millis(2500), 5, (code, &j, &err));
    assert!(n(&j, &["errors", "timeout"]) > 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["errors", "protocol"]), 0, "{}", j["errors"]);
}

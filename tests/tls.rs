//! HTTPS and Unix sockets end to end: the real `volley` binary against in-process rustls
//! servers (certificates from rcgen) and a Unix-socket HTTP server. Happy paths check what
//! was negotiated and measured; hostile or misconfigured servers must end the run in bounded
//! time with one actionable line (exit 2) when TLS cannot be set up at all, or with the right
//! error kind when it breaks later.

mod common;
#[path = "common/tls.rs"]
mod tls;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::process::Output;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{assert_invariant, volley, volley_json};
use tls::{After, Ca, Versions};

const LIMIT: Duration = Duration::from_secs(20);

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn n(j: &Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A run that must end before any load: exit 2, exactly one line on stderr (returned).
fn setup_failure(args: &[&str]) -> String {
    let t = Instant::now();
    let o = volley(args, LIMIT);
    let err = stderr(&o);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("volley: "), "{err}");
    assert!(
        o.stdout.is_empty(),
        "nothing on stdout: {}",
        String::from_utf8_lossy(&o.stdout)
    );
    err
}

/// A CA, a leaf for `localhost` signed by it, and `ca.pem` in a temporary folder.
struct Pki {
    dir: tempfile::TempDir,
    ca: Ca,
    cacert: String,
}

fn pki() -> Pki {
    let dir = tempdir();
    let ca = Ca::new("volley test CA");
    let cacert = tls::write(dir.path(), "ca.pem", &ca.pem());
    Pki { dir, ca, cacert }
}

fn trusted_server(p: &Pki, versions: Versions) -> tls::TlsServer {
    let leaf = p.ca.server(&["localhost"]);
    tls::serve(
        tls::config(vec![leaf.der.clone()], leaf.key(), versions),
        After::Answer,
    )
}

fn check_https_run(j: &Value, version: &str, requests: u64) {
    assert_invariant(j);
    assert_eq!(
        n(j, &["requests", "completed"]),
        requests,
        "{}",
        j["requests"]
    );
    assert_eq!(n(j, &["requests", "errors"]), 0, "{}", j["errors"]);
    let t = &j["target"];
    assert_eq!(t["protocol"], "http/1.1", "{t}");
    assert_eq!(t["tls"]["version"], version, "{t}");
    assert_eq!(t["tls"]["alpn"], "http/1.1", "{t}");
    assert_eq!(t["tls"]["insecure"], false, "{t}");
    assert!(
        t["tls"]["cipher"].as_str().is_some_and(|c| !c.is_empty()),
        "{t}"
    );
    assert!(t["tls"]["handshakes"].as_u64().unwrap() >= 1, "{t}");
    assert!(
        j["tls_handshake_us"]["p50"].as_u64().is_some(),
        "{}",
        j["tls_handshake_us"]
    );
    assert!(
        j["connect_us"]["p50"].as_u64().is_some(),
        "{}",
        j["connect_us"]
    );
}

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

fn client_auth_server(versions: Versions) -> (Pki, tls::TlsServer, String, String) {
    let p = pki();
    let client_ca = Ca::new("client CA");
    let leaf = p.ca.server(&["localhost"]);
    let s = tls::serve(
        tls::config_client_auth(&leaf, &client_ca, versions),
        After::Answer,
    );
    let client = client_ca.client("volley");
    let cert = tls::write(p.dir.path(), "client.pem", &client.pem);
    let key = tls::write(p.dir.path(), "client.key", &client.key_pem);
    (p, s, cert, key)
}

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

/// An HTTP/1.1 server on a Unix socket: answers 200 `.` to each request, keeping the heads.
fn unix_server(path: &std::path::Path) -> (Arc<AtomicU64>, Arc<Mutex<Vec<String>>>) {
    let listener = std::os::unix::net::UnixListener::bind(path).unwrap();
    let count = Arc::new(AtomicU64::new(0));
    let heads = Arc::new(Mutex::new(Vec::new()));
    let (c, h) = (Arc::clone(&count), Arc::clone(&heads));
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { continue };
            let _ = s.set_read_timeout(Some(Duration::from_secs(5)));
            let (c, h) = (Arc::clone(&c), Arc::clone(&h));
            std::thread::spawn(move || {
                let mut r = tls::Requests::default();
                while r.next(&mut s) {
                    c.fetch_add(1, Ordering::SeqCst);
                    h.lock().unwrap().push(r.last_head.clone());
                    if s.write_all(tls::OK).is_err() {
                        return;
                    }
                }
            });
        }
    });
    (count, heads)
}

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

// ---- certificates and servers that cannot be used: exit 2 before any request ----

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

// ---- the result file ----

fn assert_schema_valid(doc: &Value, what: &str) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/run.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).unwrap();
    let errs: Vec<String> = v
        .iter_errors(doc)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(errs.is_empty(), "{what}: {}", errs.join("\n"));
}

fn assert_percentiles(block: &Value, what: &str) {
    for k in ["p50", "p90", "p99", "max"] {
        assert!(block[k].as_u64().is_some(), "{what}.{k}: {block}");
    }
}

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

// ---- the byte stream under load: large bodies both ways, key updates, closes ----

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
}

// ---- names, files and transports ----

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
fn a_server_that_only_speaks_h2_exits_2_naming_the_alert() {
    let p = pki();
    let leaf = p.ca.server(&["localhost"]);
    let config = tls::config(vec![leaf.der.clone()], leaf.key(), Versions::Both);
    let s = tls::serve(tls::with_alpn(config, &[b"h2"]), After::Answer);
    let url = s.url("localhost", "/");
    let err = setup_failure(&["run", &url, "--cacert", &p.cacert, "-n", "5", "-c", "1"]);
    assert!(err.contains("NoApplicationProtocol"), "{err}");
    assert_eq!(s.requests(), 0);
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

//! Proxies (docs/contract.md, "Proxies"), end to end against an in-process proxy: an https://
//! run goes through a `CONNECT` tunnel (TLS inside it, every request at the server, `--verify`
//! too), an http:// one is forwarded in absolute form with the proxy's credentials, the
//! environment names a proxy for other hosts but never for loopback ones. A proxy that
//! refuses (407, 403, 502), speaks something else or never ends its answer ends the run before
//! any request (exit 2, naming the status); one that stalls costs connect errors within
//! `--timeout`. Against a real proxy (tinyproxy): `tests/full/proxy.rs`.

use crate::common;
use crate::common::proxy::{self, Behaviour};
use crate::common::tls::{self, Versions};

use std::process::Command;
use std::time::{Duration, Instant};

use common::{assert_invariant, limited, volley_bin, volley_json};
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(20);

/// Runs volley with `--json -` and these environment variables.
fn json_with_env(args: &[&str], env: &[(&str, &str)]) -> (i32, Value, String) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--json", "-", "--quiet"]);
    let mut cmd = Command::new(volley_bin());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = limited(cmd.args(&all), &all, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let json = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("no JSON on stdout ({e}); stderr:\n{stderr}"));
    (out.status.code().unwrap_or(-1), json, stderr)
}

/// A run that ends before any load: exit 2 within 5 s; its stderr.
fn refused(args: &[&str], env: &[(&str, &str)]) -> String {
    let t = Instant::now();
    let mut cmd = Command::new(volley_bin());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = limited(cmd.args(args), args, LIMIT);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    err
}

#[test]
fn https_goes_through_a_connect_tunnel_and_every_request_reaches_the_server() {
    let p = tls::pki();
    let server = tls::trusted_server(&p, Versions::Both);
    let px = proxy::start(Behaviour::Honest);
    let url = server.url("localhost", "/");
    let args = [
        "run",
        &url,
        "-x",
        &px.url(),
        "--cacert",
        &p.cacert,
        "-n",
        "300",
        "-c",
        "4",
        "-t",
        "2",
        "--verify",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_invariant(&j);
    assert_eq!(j["requests"]["completed"], 300, "{err}");
    // --verify's request went through the tunnel too.
    assert_eq!(server.requests(), 301);
    let port = server.addr.port();
    let connects: Vec<String> = px.heads();
    assert_eq!(
        connects.len(),
        5,
        "4 connections and --verify's: {connects:?}"
    );
    for h in &connects {
        assert!(
            h.starts_with(&format!("CONNECT localhost:{port} HTTP/1.1\r\n")),
            "{h}"
        );
    }
    assert_eq!(j["target"]["proxy"]["url"], px.url());
    assert_eq!(j["target"]["proxy"]["mode"], "tunnel");
    assert_eq!(j["target"]["proxy"]["source"], "flag");
    assert_eq!(j["target"]["addr"], px.addr.to_string());
    for key in ["connect_us", "proxy_connect_us", "tls_handshake_us"] {
        assert!(j[key]["p50"].as_u64().is_some(), "{key}: {}", j[key]);
    }
    assert_eq!(j["target"]["tls"]["handshakes"], 4);
}

#[test]
fn the_headline_says_a_run_went_through_a_proxy() {
    let server = common::normal();
    let px = proxy::start(Behaviour::Honest);
    let out = common::volley(
        &[
            "run",
            &server.url("/"),
            "-x",
            &px.url(),
            "--proxytunnel",
            "-n",
            "20",
            "-c",
            "1",
        ],
        LIMIT,
    );
    let text = common::output_text(&out);
    assert_eq!(out.status.code(), Some(0), "{text}");
    let first = String::from_utf8_lossy(&out.stdout)
        .lines()
        .next()
        .unwrap_or("")
        .to_string();
    assert!(
        first.ends_with(&format!("through proxy {} (CONNECT tunnel)", px.url())),
        "{text}"
    );
    assert!(text.contains("\n  Proxy CONNECT p50 "), "{text}");
    assert_eq!(server.requests(), 20);
}

#[test]
fn http_requests_are_forwarded_in_absolute_form_with_the_proxys_credentials() {
    let px = proxy::start(Behaviour::Honest);
    let via = format!("http://user:s%3Acret@{}", px.addr);
    // The proxy answers: the target's name need not resolve here (the proxy resolves it).
    let url = "http://volley-proxy-test.invalid:8080/p?q=1";
    let (code, j, err) = volley_json(&["run", url, "-x", &via, "-n", "50", "-c", "2"], LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["requests"]["completed"], 50);
    let heads = px.heads();
    assert_eq!(heads.len(), 50);
    for h in &heads {
        assert!(h.starts_with(&format!("GET {url} HTTP/1.1\r\n")), "{h}");
        // "user:s:cret" in base64.
        let lines: Vec<&str> = h.lines().collect();
        assert!(
            lines.contains(&"Proxy-Authorization: Basic dXNlcjpzOmNyZXQ="),
            "{h}"
        );
        assert!(
            lines.contains(&"Host: volley-proxy-test.invalid:8080"),
            "{h}"
        );
    }
    assert_eq!(j["target"]["proxy"]["mode"], "forward");
    assert_eq!(
        j["target"]["proxy"]["url"],
        format!("http://<redacted>@{}", px.addr)
    );
    let text = j.to_string();
    assert!(
        !text.contains("cret"),
        "the password is in the result: {text}"
    );
}

#[test]
fn the_environment_proxies_other_hosts_but_never_loopback_ones() {
    let px = proxy::start(Behaviour::Honest);
    let url = "http://volley-proxy-test.invalid/";
    let env = [("http_proxy", px.url())];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, j, err) = json_with_env(&["run", url, "-n", "10", "-c", "1"], &env);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["requests"]["completed"], 10);
    assert_eq!(j["target"]["proxy"]["source"], "env");
    // A loopback target ignores the environment's proxy (here one that refuses everything).
    let dead = proxy::start(Behaviour::Answer(b"HTTP/1.1 403 Forbidden\r\n\r\n"));
    let server = common::normal();
    let env = [
        ("HTTP_PROXY", dead.url()),
        ("HTTPS_PROXY", dead.url()),
        ("ALL_PROXY", dead.url()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (code, j, err) = json_with_env(&["run", &server.url("/"), "-n", "10"], &env);
    assert_eq!(code, 0, "{err}");
    assert_eq!(server.requests(), 10);
    assert!(j["target"].get("proxy").is_none(), "{}", j["target"]);
    assert!(dead.heads().is_empty());
    // NO_PROXY (and --noproxy) take a host off the proxy: then its name must resolve itself.
    let skip = [("http_proxy", px.url()), ("NO_PROXY", "invalid".into())];
    let skip: Vec<(&str, &str)> = skip.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let err = refused(&["run", url, "-n", "1"], &skip);
    assert!(err.contains("volley-proxy-test.invalid"), "{err}");
    assert_eq!(px.heads().len(), 10);
}

#[test]
fn a_refused_connect_exits_2_before_any_request_naming_the_status() {
    let server = common::normal();
    let cases: [(&'static [u8], &str); 3] = [
        (
            b"HTTP/1.1 407 Proxy Authentication Required\r\nProxy-Authenticate: Basic\r\nContent-Length: 0\r\n\r\n",
            "the proxy refused CONNECT: 407 Proxy Authentication Required; give its credentials",
        ),
        (b"HTTP/1.1 403 Forbidden\r\n\r\n", "403 Forbidden; it does not allow CONNECT"),
        (b"HTTP/1.1 400 Bad Request\n\n", "400 Bad Request"),
    ];
    for (answer, says) in cases {
        let px = proxy::start(Behaviour::Answer(answer));
        let args = [
            "run",
            &server.url("/"),
            "-x",
            &px.url(),
            "--proxytunnel",
            "-d",
            "2s",
        ];
        let err = refused(&args, &[]);
        assert!(err.contains(says), "{err}");
        assert!(err.contains(&format!("proxy {}", px.url())), "{err}");
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn a_proxy_that_answers_in_another_protocol_or_never_ends_its_head_exits_2() {
    let server = common::normal();
    let cases: [(Behaviour, &str); 3] = [
        (
            Behaviour::Answer(b"SSH-2.0-OpenSSH_9.2\r\n"),
            "is not HTTP (it began \"SSH-2.0",
        ),
        (
            Behaviour::Answer(b"\x16\x03\x01\x00\x05hello"),
            "is not HTTP",
        ),
        (Behaviour::Flood, "has no end of head within 8192 bytes"),
    ];
    for (b, says) in cases {
        let px = proxy::start(b);
        let url = server.url("/");
        let err = refused(
            &["run", &url, "-x", &px.url(), "--proxytunnel", "-d", "2s"],
            &[],
        );
        assert!(err.contains(says), "{err}");
    }
}

/// A run of 1 s with `--timeout` through a proxy behaving like `b`: it ends within 5 s, exit 1,
/// with at least one connect error per connection, and stderr says `says`.
fn costs_connect_errors(server: &common::TestServer, b: Behaviour, timeout: &str, says: &str) {
    let px = proxy::start(b);
    let t = Instant::now();
    let url = server.url("/");
    let args = [
        "run",
        &url,
        "-x",
        &px.url(),
        "--proxytunnel",
        "-d",
        "1s",
        "-c",
        "2",
        "--timeout",
        timeout,
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "took {:?}",
        t.elapsed()
    );
    assert_eq!(code, 1, "{err}");
    let connect = j["errors"]["connect"].as_u64().unwrap();
    assert!(connect >= 2, "{}", j["errors"]);
    assert!(err.contains(says), "{err}");
}

#[test]
fn a_proxy_that_never_answers_costs_connect_errors_within_the_timeout() {
    let server = common::normal();
    let says = "the proxy did not answer CONNECT within --timeout";
    costs_connect_errors(&server, Behaviour::Stall, "300ms", says);
}

#[test]
fn proxy_settings_that_cannot_work_exit_2_naming_the_flag_or_variable() {
    type Case<'a> = (&'a [&'a str], &'a [(&'a str, &'a str)], &'a str);
    let cases: [Case; 5] = [
        (
            &[
                "run",
                "http://a/",
                "-x",
                "127.0.0.1:1",
                "--unix-socket",
                "/tmp/s",
            ],
            &[],
            "volley: -x/--proxy: cannot be used with --unix-socket",
        ),
        (&["run", "http://a/", "--proxytunnel"], &[], "--proxy"),
        (
            &["run", "http://a/", "-x", "socks5://127.0.0.1:1"],
            &[],
            "volley: -x/--proxy: `socks5://127.0.0.1:1`: socks5:// proxies are not supported",
        ),
        (
            &["run", "https://example.invalid/"],
            &[("HTTPS_PROXY", "https://u:secret@p:1")],
            "volley: the HTTPS_PROXY variable: `https://<redacted>@p:1`: https:// proxies",
        ),
        (
            &["run", "http://a/", "-x", "http://p:99999"],
            &[],
            "is not a proxy URL",
        ),
    ];
    for (args, env, says) in cases {
        let err = refused(args, env);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(!err.contains("secret"), "{err}");
    }
}

#[test]
fn a_busy_or_closing_proxy_costs_connect_errors_not_the_run() {
    let server = common::normal();
    let cases = [
        (
            Behaviour::Answer(b"HTTP/1.0 502 Bad Gateway\r\n\r\n"),
            "the proxy refused CONNECT: 502 Bad Gateway; it could not reach the target",
        ),
        (
            Behaviour::Answer(b"HTTP/1.1 503 Service Unavailable\r\n\r\n"),
            "the proxy refused CONNECT: 503 Service Unavailable",
        ),
        // Part of an answer, then the close: seen at once, not after --timeout.
        (
            Behaviour::PartialThenClose,
            "the proxy closed the connection within its answer to CONNECT",
        ),
    ];
    for (b, says) in cases {
        // Seen at once, not after --timeout.
        costs_connect_errors(&server, b, "10s", says);
    }
}

#[test]
fn an_answer_in_pieces_opens_the_tunnel() {
    let server = common::normal();
    let px = proxy::start(Behaviour::SplitAnswer);
    let args = [
        "run",
        &server.url("/"),
        "-x",
        &px.url(),
        "--proxytunnel",
        "-n",
        "50",
        "-c",
        "2",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["requests"]["completed"], 50);
    assert_eq!(server.requests(), 50);
    // The 200 ms between the pieces is the tunnel's set-up.
    assert!(
        j["proxy_connect_us"]["min"].as_u64().unwrap() >= 150_000,
        "{}",
        j["proxy_connect_us"]
    );
}

#[test]
fn a_refusal_after_the_first_response_is_a_connect_error_the_warning_names() {
    let server = common::normal();
    let px = proxy::start(Behaviour::HonestThen(1, b"HTTP/1.1 403 Forbidden\r\n\r\n"));
    let args = [
        "run",
        &server.url("/"),
        "-x",
        &px.url(),
        "--proxytunnel",
        "--no-keepalive",
        "-n",
        "20",
        "-c",
        "1",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "one response came: {err}");
    assert_eq!(j["requests"]["completed"], 1);
    assert_eq!(server.requests(), 1);
    assert!(
        j["errors"]["connect"].as_u64().unwrap() >= 1,
        "{}",
        j["errors"]
    );
    let warnings = j["warnings"].to_string();
    assert!(
        warnings.contains("the proxy refused CONNECT: 403 Forbidden"),
        "{warnings}"
    );
}

#[test]
fn credentials_in_a_proxy_url_without_a_scheme_are_redacted() {
    let px = proxy::start(Behaviour::Honest);
    let via = format!("user:pass-word@{}", px.addr);
    let url = "http://volley-proxy-test.invalid/";
    let (code, j, err) = volley_json(&["run", url, "-x", &via, "-n", "5", "-c", "1"], LIMIT);
    assert_eq!(code, 0, "{err}");
    let text = format!("{j}{err}");
    assert!(!text.contains("pass-word"), "{text}");
    assert!(
        j["argv"]
            .to_string()
            .contains(&format!("<redacted>@{}", px.addr)),
        "{}",
        j["argv"]
    );
    let heads = px.heads();
    assert!(
        heads[0].contains("Proxy-Authorization: Basic dXNlcjpwYXNzLXdvcmQ="),
        "{heads:?}"
    );
}

#[test]
fn the_targets_first_bytes_arriving_with_the_proxys_answer_stay_for_the_connection() {
    // This h2c server speaks first (its SETTINGS), and the proxy writes them in the same
    // write as its 200: the answer's head must be read exactly, no byte further.
    let server = common::h2::serve(common::h2::Behaviour::SettingsFirst);
    let px = proxy::start(Behaviour::Coalescing);
    let url = server.server.url("/");
    let args = [
        "run",
        &url,
        "-x",
        &px.url(),
        "--h2c",
        "--streams",
        "4",
        "-n",
        "200",
        "-c",
        "2",
    ];
    let (code, j, err) = volley_json(&args, LIMIT);
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["requests"]["completed"], 200, "{err}");
    assert_eq!(j["target"]["protocol"], "h2c");
    let early = px.coalesced.load(std::sync::atomic::Ordering::SeqCst);
    assert!(
        early >= 9,
        "the server's SETTINGS did not come with the answer: {early} bytes"
    );
}

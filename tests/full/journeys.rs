//! Journeys over HTTP/2 and HTTP/3 (docs/contract.md, "Journeys"): the login journey of
//! `quick::journeys` through nginx speaking h2c (prior knowledge) and h2 over TLS, and through
//! Caddy speaking HTTP/3, proxying to the in-process login app. With `--streams N` each of a connection's N stream slots is a
//! user: each logs in once, sends only its own token and session cookie, and a failed capture
//! skips its dependents, as over HTTP/1.1.

use crate::common;
use crate::common::{login, nginx, tls};
use crate::quick::journeys::JOURNEY;

use std::time::Duration;

use common::caddy::Caddy;
use common::volley_json;

const LIMIT: Duration = Duration::from_secs(60);

/// nginx in front of `app`: h2c on one port, h2 over TLS on another.
struct Front {
    _nginx: nginx::Nginx,
    h2c: u16,
    h2: u16,
    cert: String,
    dir: tempfile::TempDir,
}

fn front(app: &login::LoginApp) -> Front {
    let dir = tempfile::tempdir().unwrap();
    let leaf = tls::self_signed(&["localhost"]);
    let cert = tls::write(dir.path(), "cert.pem", &leaf.pem);
    let key = tls::write(dir.path(), "key.pem", &leaf.key_pem);
    let (h2c, h2) = (nginx::free_port(), nginx::free_port());
    let port = app.server.addr.port();
    let proxy = "location / { proxy_pass http://app; proxy_http_version 1.1; \
         proxy_set_header Connection \"\"; }";
    let blocks = format!(
        "upstream app {{ server 127.0.0.1:{port}; keepalive 16; }}\n\
         server {{ listen 127.0.0.1:{h2c} http2; {proxy} }}\n\
         server {{ listen 127.0.0.1:{h2} ssl http2; ssl_certificate {cert};\n\
         ssl_certificate_key {key}; {proxy} }}"
    );
    let nginx = nginx::start(dir.path(), &blocks, &[h2c, h2]);
    Front {
        _nginx: nginx,
        h2c,
        h2,
        cert,
        dir,
    }
}

fn endpoint<'a>(j: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap()
}

#[test]
fn each_stream_slot_is_a_user_over_h2c_and_h2() {
    for protocol in ["h2c", "h2"] {
        let app = login::start();
        let f = front(&app);
        let file = tls::write(f.dir.path(), "journey.toml", JOURNEY);
        let url = match protocol {
            "h2c" => format!("http://127.0.0.1:{}/", f.h2c),
            _ => format!("https://localhost:{}/", f.h2),
        };
        let mut args = vec!["run", &url, "--requests-file", &file, "-c", "2", "-t", "1"];
        args.extend(["--streams", "4", "-n", "1500"]);
        match protocol {
            "h2c" => args.push("--h2c"),
            _ => args.extend(["--cacert", &f.cert]),
        }
        users_each_logged_in_once(protocol, &args, &app);
    }
}

#[test]
fn each_stream_slot_is_a_user_over_h3() {
    let app = login::start();
    let upstream = format!("reverse_proxy 127.0.0.1:{}", app.server.addr.port());
    let Some(caddy) = Caddy::start_with("journey", &upstream) else {
        return;
    };
    let file = tls::write(&caddy.dir, "journey.toml", JOURNEY);
    let (url, cert) = (caddy.url(), caddy.cacert().display().to_string());
    let mut args = vec![
        "run",
        &url,
        "--http3",
        "--cacert",
        &cert,
        "--requests-file",
        &file,
    ];
    args.extend(["-c", "2", "-t", "1", "--streams", "4", "-n", "1500"]);
    users_each_logged_in_once("h3", &args, &app);
}

/// Runs `args` (2 connections × 4 streams of the login journey) and checks that each of the 8
/// stream slots was a user of its own, as over HTTP/1.1.
fn users_each_logged_in_once(protocol: &str, args: &[&str], app: &login::LoginApp) {
    let (code, j, err) = volley_json(args, LIMIT);
    assert_eq!(code, 0, "{protocol}: {err}");
    assert_eq!(j["target"]["protocol"], protocol);
    let t = app.tally();
    assert_eq!(
        t.logins.len(),
        8,
        "{protocol}: 2 connections × 4 streams: {:?}",
        t.logins
    );
    assert!(
        t.logins.values().all(|&n| n == 1),
        "{protocol}: {:?}",
        t.logins
    );
    assert_eq!(
        (t.unauthorized, t.mixups, t.empty_tokens),
        (0, 0, 0),
        "{protocol}: {t:?}"
    );
    let cart = endpoint(&j, "cart")["requests"]["completed"]
        .as_u64()
        .unwrap();
    assert!(cart > 500, "{protocol}: {cart}");
    assert_eq!(
        t.cookies_ok, cart,
        "{protocol}: the session cookie went with every cart"
    );
    assert_eq!(j["journey"]["users_started"], 8, "{protocol}");
    assert_eq!(j["requests"]["skipped"], 0, "{protocol}");
    assert_eq!(j["checks"]["capture"], 0, "{protocol}");
}

#[test]
fn a_failed_capture_skips_its_dependents_over_h2() {
    let app = login::start();
    let f = front(&app);
    let text = JOURNEY.replace("path = \"/login\"", "path = \"/login-html\"");
    let file = tls::write(f.dir.path(), "journey.toml", &text);
    let url = format!("http://127.0.0.1:{}/", f.h2c);
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--h2c",
            "--requests-file",
            &file,
            "-c",
            "1",
            "--streams",
            "2",
            "-n",
            "40",
        ],
        LIMIT,
    );
    assert_eq!(code, 1, "{err}");
    let t = app.tally();
    assert_eq!(t.requests, 40, "only logins went: {t:?}");
    assert_eq!(j["checks"]["capture"], 40);
    assert_eq!(j["journey"]["captures_missed"]["not_json"], 40);
    assert_eq!(
        j["requests"]["skipped"],
        40 - 2,
        "one step per later login: it starts over"
    );
}

#[test]
fn verify_walks_the_journey_over_h2_without_showing_a_value() {
    let app = login::start();
    let f = front(&app);
    let file = tls::write(f.dir.path(), "journey.toml", JOURNEY);
    let h2c = format!("http://127.0.0.1:{}/", f.h2c);
    let h2 = format!("https://localhost:{}/", f.h2);
    let runs: [Vec<&str>; 2] = [
        vec!["run", &h2c, "--h2c"],
        vec!["run", &h2, "--cacert", &f.cert],
    ];
    for base in runs {
        let rest = ["--requests-file", &file, "--verify", "-c", "1", "-n", "3"];
        let out = common::volley(&[&base[..], &rest].concat(), LIMIT);
        let text = common::output_text(&out);
        assert_eq!(out.status.code(), Some(0), "{text}");
        assert!(text.contains("verify cart: GET /cart HTTP/2"), "{text}");
        assert!(
            text.contains("set-cookie: sid=<redacted>; Path=/; HttpOnly"),
            "{text}"
        );
        assert!(
            text.contains("{var.token}") && !text.contains("\"tok"),
            "{text}"
        );
    }
    assert_eq!(app.tally().unauthorized, 0);
}

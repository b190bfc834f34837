//! Journeys against hostile logins: the login a journey captures from floods `Set-Cookie`,
//! sends a body too large to keep, values too large to send back, a body that never ends or
//! a `Content-Length` that lies, and cookies a jar must refuse. Each run of the real binary
//! ends in bounded time with volley's memory small, the bound that held counted under its
//! name (`journey.cookies_refused`, `journey.values_cut`, `journey.captures_missed`, an error
//! kind), the steps that needed the lost value skipped rather than sent without it, and what
//! the server saw next within the bounds (50 cookies of at most 4096 bytes, values of at most
//! 4096 bytes). Over HTTP/1.1, and the `Set-Cookie` floods over h2c too, where a head is
//! bounded by its size rather than its count of fields. The well-behaved journeys are
//! `quick::journeys`.

use crate::common;

use std::io::{BufReader, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use common::{assert_invariant, read_request, scratch, spawn, volley_json, Seen, TestServer};

/// volley's peak RSS must stay below this whatever the login sends (as in `quick::hostile`).
const RSS_LIMIT: u64 = 64 << 20;

/// The most cookies a user's jar holds, and the largest cookie it stores.
const JAR_COOKIES: usize = 50;
const COOKIE_BYTES: usize = 4096;

/// The size a captured value is cut at.
const VALUE_BYTES: usize = 4096;

/// Log in once (capturing the token from the JSON body), then `/me` with it, again and again.
const JOURNEY: &str = r#"
[[request]]
name = "login"
once = true
method = "POST"
path = "/login"
headers = { Content-Type = "application/json" }
body = '{{"user": "u{user}"}}'
capture = { token = { json = "/accessToken" } }

[[request]]
name = "me"
path = "/me"
headers = { Authorization = "Bearer {var.token}" }
"#;

/// A login answer: 200, `fields` (each `Name: value`) and a JSON `body`.
fn answer(fields: &[String], body: &str) -> Vec<u8> {
    let mut out = String::from("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n");
    for f in fields {
        out.push_str(f);
        out.push_str("\r\n");
    }
    out.push_str(&format!("Content-Length: {}\r\n\r\n{body}", body.len()));
    out.into_bytes()
}

/// The token every well-formed login answer carries.
const TOKEN_BODY: &str = r#"{"accessToken":"tok1"}"#;

/// A login app: `POST /login` is answered by `login` (which writes what it likes and says
/// whether the connection goes on), anything else 200 `{}`. Every request is recorded.
struct App {
    server: TestServer,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl App {
    fn start<F>(login: F) -> App
    where
        F: Fn(&mut TcpStream) -> bool + Send + Sync + 'static,
    {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = Arc::clone(&seen);
        let server = spawn(move |c, _| {
            let mut w = c.stream.try_clone().unwrap();
            let mut r = BufReader::new(c.stream);
            while let Some(req) = read_request(&mut r) {
                let is_login = req.target == "/login";
                s.lock().unwrap().push(req);
                let go_on = if is_login {
                    login(&mut w)
                } else {
                    w.write_all(&answer(&[], "{}")).is_ok()
                };
                if !go_on {
                    return;
                }
            }
        });
        App { server, seen }
    }

    /// The requests to `path` the app read.
    fn seen(&self, path: &str) -> Vec<Seen> {
        let all = self.seen.lock().unwrap();
        all.iter().filter(|r| r.target == path).cloned().collect()
    }
}

/// `volley run` of `journey` against `app` with `-t 1 -c 1 --timeout 1s` and `extra`: exit
/// code and RunResult, checked for the counter invariant, no panic, its wall time (`within`)
/// and its memory.
fn run(app: &App, name: &str, journey: &str, extra: &[&str], within: Duration) -> (i32, Value) {
    let dir = scratch("journeys-hostile", name);
    let file = dir.join("journey.toml");
    std::fs::write(&file, journey).unwrap();
    let (url, file) = (app.server.url("/"), file.display().to_string());
    let mut args = vec![
        "run",
        url.as_str(),
        "--requests-file",
        file.as_str(),
        "-t",
        "1",
        "-c",
        "1",
        "--timeout",
        "1s",
    ];
    args.extend_from_slice(extra);
    checked(&args, name, within)
}

/// Runs volley with `args` (and `--json -`): exit code and RunResult, checked for the
/// counter invariant, no panic, its wall time (`within`), its memory and the schema.
fn checked(args: &[&str], name: &str, within: Duration) -> (i32, Value) {
    let t = Instant::now();
    let (code, j, stderr) = volley_json(args, Duration::from_secs(60));
    let took = t.elapsed();
    assert!(took < within, "took {took:?}, over {within:?}\n{stderr}");
    assert!(!stderr.contains("panicked"), "volley panicked:\n{stderr}");
    assert!(code == 0 || code == 1, "exit {code}\n{stderr}");
    assert_invariant(&j);
    let rss = n(&j, &["client", "rss_max_bytes"]);
    assert!(rss < RSS_LIMIT, "volley grew to {rss} bytes\n{stderr}");
    crate::quick::schema::assert_valid(&j, name);
    (code, j)
}

fn n(j: &Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

fn endpoint<'a>(j: &'a Value, name: &str) -> &'a Value {
    j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}: {}", j["endpoints"]))
}

/// The cookies of a `Cookie` header, as (name, value).
fn cookies(header: Option<&str>) -> Vec<(String, String)> {
    header
        .unwrap_or("")
        .split("; ")
        .filter(|c| !c.is_empty())
        .map(|c| {
            let (k, v) = c.split_once('=').unwrap_or((c, ""));
            (k.to_string(), v.to_string())
        })
        .collect()
}

/// A login whose `Set-Cookie` fields pass every bound of a jar at once, in a head HTTP/1.1
/// takes (at most 128 fields, 64 KiB): 120 distinct cookies, more than the 50 a jar keeps,
/// then one of 5000 bytes (over a cookie's 4096) and one of 40 KiB (over the 8 KiB a
/// response keeps for the jar). The jar keeps 50; the two large ones are refused and counted
/// wherever they come; `/me` carries the 50 and nothing larger than a jar allows.
#[test]
fn a_set_cookie_flood_fills_the_jar_to_its_bound_and_the_large_ones_are_refused() {
    let app = App::start(|w| {
        let mut fields: Vec<String> = (0..120)
            .map(|i| format!("Set-Cookie: c{i:03}=v{i}; Path=/"))
            .collect();
        fields.push(format!("Set-Cookie: big={}; Path=/", "b".repeat(5000)));
        fields.push(format!("Set-Cookie: huge={}; Path=/", "h".repeat(40 << 10)));
        w.write_all(&answer(&fields, TOKEN_BODY)).is_ok()
    });
    let (code, j) = run(
        &app,
        "cookie-flood",
        JOURNEY,
        &["-n", "20"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{}", j["errors"]);
    assert_eq!(n(&j, &["journey", "users_started"]), 1, "{}", j["journey"]);
    assert_eq!(
        n(&j, &["journey", "cookies_refused"]),
        2,
        "the 5000-byte and the 40 KiB cookie: {}",
        j["journey"]
    );
    let me = app.seen("/me");
    assert_eq!(me.len(), 19);
    for r in &me {
        assert_eq!(r.header("authorization"), Some("Bearer tok1"));
        let header = r.header("cookie");
        let sent = cookies(header);
        assert_eq!(sent.len(), JAR_COOKIES, "the jar's bound: {header:?}");
        assert!(
            sent.iter().all(|(k, v)| k.starts_with('c') && v.len() < 8),
            "only the small ones: {header:?}"
        );
        assert!(header.unwrap().len() < JAR_COOKIES * COOKIE_BYTES);
    }
}

/// A login whose `Set-Cookie` flood (5000 fields and a 100 KiB cookie) is past what a
/// response head may be: a protocol error, named, whose fields never reach the jar; the steps
/// after it are skipped and the user logs in again.
#[test]
fn a_set_cookie_flood_past_the_head_limits_is_a_protocol_error() {
    let mut fields: Vec<String> = (0..5000)
        .map(|i| format!("Set-Cookie: c{i}=v{i}; Path=/"))
        .collect();
    fields.push(format!(
        "Set-Cookie: huge={}; Path=/",
        "h".repeat(100 << 10)
    ));
    let reply = Arc::new(answer(&fields, TOKEN_BODY));
    let app = App::start(move |w| w.write_all(&reply).is_ok());
    let (code, j) = run(
        &app,
        "cookie-flood-head",
        JOURNEY,
        &["-n", "10"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["errors", "protocol"]), 10, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), 10, "{}", j["errors"]);
    assert_eq!(
        n(&j, &["journey", "users_started"]),
        10,
        "each error starts the user over"
    );
    assert_eq!(
        n(&j, &["journey", "skipped"]),
        9,
        "`me` after each login but the last"
    );
    assert_eq!(
        n(&j, &["journey", "cookies_refused"]),
        0,
        "no field reached a jar"
    );
    assert!(app.seen("/me").is_empty());
    let w = j["warnings"].to_string();
    assert!(w.contains("too many headers"), "{w}");
}

/// A 10 MiB JSON body with the token at its end, past the 64 KiB a capture reads: the
/// capture misses (the window cuts the JSON), `/me` is skipped, and the body streams by.
#[test]
fn a_huge_json_body_is_read_through_a_bounded_window_and_the_capture_misses() {
    let body = format!(
        "{{\"pad\":\"{}\",\"accessToken\":\"tok1\"}}",
        "x".repeat(10 << 20)
    );
    let reply = Arc::new(answer(&[], &body));
    let app = App::start(move |w| w.write_all(&reply).is_ok());
    let (code, j) = run(
        &app,
        "huge-json",
        JOURNEY,
        &["-n", "5"],
        Duration::from_secs(20),
    );
    assert_eq!(code, 1, "the capture check fails the run");
    assert_eq!(n(&j, &["requests", "completed"]), 5, "{}", j["errors"]);
    assert!(n(&j, &["bytes", "received"]) > 50 << 20);
    assert_eq!(n(&j, &["checks", "capture"]), 5, "{}", j["checks"]);
    assert_eq!(
        j["journey"]["captures_missed"],
        serde_json::json!({"not_json": 5}),
        "{}",
        j["journey"]
    );
    assert_eq!(n(&j, &["journey", "skipped"]), 4);
    assert_eq!(endpoint(&j, "me")["requests"]["skipped"], 4);
    assert!(app.seen("/me").is_empty(), "nothing sent without its token");
}

/// A 60 KiB header captured, and a 60 KiB regex match within the body's window: each value
/// is cut at 4096 bytes and counted, and the server gets 4096 bytes of each.
#[test]
fn values_over_4096_bytes_are_cut_and_counted() {
    let journey = r#"
[[request]]
name = "login"
once = true
method = "POST"
path = "/login"
body = "go"
capture = { h = { header = "X-Session" }, r = { regex = "ref=([a-z]+);", group = 1 } }

[[request]]
name = "me"
path = "/me"
headers = { X-H = "{var.h}", X-R = "{var.r}" }
"#;
    let header = format!("X-Session: {}", "a".repeat(60 << 10));
    let body = format!("ref={};", "b".repeat(60 << 10));
    let reply = Arc::new(answer(&[header], &body));
    let app = App::start(move |w| w.write_all(&reply).is_ok());
    let (code, j) = run(
        &app,
        "values-cut",
        journey,
        &["-n", "5"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 0, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "completed"]), 5);
    assert_eq!(n(&j, &["journey", "users_started"]), 1);
    assert_eq!(
        n(&j, &["journey", "values_cut"]),
        2,
        "two values, each cut: {}",
        j["journey"]
    );
    let me = app.seen("/me");
    assert_eq!(me.len(), 4);
    for r in &me {
        assert_eq!(r.header("x-h"), Some("a".repeat(VALUE_BYTES).as_str()));
        assert_eq!(r.header("x-r"), Some("b".repeat(VALUE_BYTES).as_str()));
    }
}

/// A login whose chunked body trickles for ever: it times out at `--timeout`, counted as a
/// timeout; `/me` is skipped and the run ends on time.
#[test]
fn a_login_body_that_never_ends_times_out_and_its_dependents_are_skipped() {
    let app = App::start(|w| {
        if w.write_all(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
            .is_err()
        {
            return false;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && w.write_all(b"1\r\n{\r\n").is_ok() {
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    });
    let (code, j) = run(
        &app,
        "trickle",
        JOURNEY,
        &["-d", "2s"],
        Duration::from_secs(5),
    );
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    let timeouts = n(&j, &["errors", "timeout"]);
    assert!(timeouts >= 1, "{}", j["errors"]);
    assert_eq!(n(&j, &["requests", "errors"]), timeouts, "{}", j["errors"]);
    assert!(n(&j, &["journey", "skipped"]) >= 1, "{}", j["journey"]);
    assert!(j["journey"]["captures_missed"]
        .as_object()
        .unwrap()
        .is_empty());
    assert!(app.seen("/me").is_empty());
}

/// A login that says `Content-Length: 100`, sends the token's JSON (22 bytes) and closes:
/// an error, and nothing is captured from a response that never completed.
#[test]
fn a_login_whose_content_length_lies_is_an_error_and_captures_nothing() {
    let app = App::start(|w| {
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n";
        let _ = w.write_all(format!("{head}{TOKEN_BODY}").as_bytes());
        false
    });
    let (code, j) = run(
        &app,
        "short-body",
        JOURNEY,
        &["-n", "5"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 1);
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert_eq!(n(&j, &["requests", "errors"]), 5, "{}", j["errors"]);
    assert_eq!(n(&j, &["errors", "closed"]), 5, "{}", j["errors"]);
    assert!(j["journey"]["captures_missed"]
        .as_object()
        .unwrap()
        .is_empty());
    assert_eq!(n(&j, &["journey", "skipped"]), 4);
    assert!(
        app.seen("/me").is_empty(),
        "no token from a broken response"
    );
}

/// Cookies for another domain and `Secure` cookies over plain http are refused, counted,
/// and never sent back; the good one beside them is.
#[test]
fn cookies_for_another_domain_or_secure_over_http_are_refused_and_never_sent() {
    let app = App::start(|w| {
        let fields = [
            "Set-Cookie: other=1; Domain=example.com; Path=/".to_string(),
            "Set-Cookie: sec=1; Secure; Path=/".to_string(),
            "Set-Cookie: ok=1; Path=/".to_string(),
        ];
        w.write_all(&answer(&fields, TOKEN_BODY)).is_ok()
    });
    let (code, j) = run(
        &app,
        "refused",
        JOURNEY,
        &["-n", "5"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 0, "{}", j["errors"]);
    assert_eq!(
        n(&j, &["journey", "cookies_refused"]),
        2,
        "{}",
        j["journey"]
    );
    let me = app.seen("/me");
    assert_eq!(me.len(), 4);
    for r in &me {
        assert_eq!(r.header("cookie"), Some("ok=1"));
        assert_eq!(r.header("authorization"), Some("Bearer tok1"));
    }
}

/// A login app over h2c (prior knowledge), its frames written by hand: `POST /login` is
/// answered with the header fields `login` gives (HPACK-encoded, in HEADERS and
/// CONTINUATION frames of 16 KiB) and a JSON body with the token, anything else 200 `{}`.
/// Every request is recorded with its decoded fields (`cookie` fields joined by `; `, as
/// RFC 9113 §8.2.3 allows a client to split them).
mod h2c {
    use super::*;
    use common::h2::kind::*;
    use common::h2::{frame, PREFACE};
    use std::io::Read;

    /// A header field: name, value.
    pub type Field = (Vec<u8>, Vec<u8>);

    /// HEADERS flags: padded, priority.
    const PADDED: u8 = 0x8;
    const PRIORITY: u8 = 0x20;

    pub struct App {
        pub server: TestServer,
        seen: Arc<Mutex<Vec<Seen>>>,
    }

    impl App {
        pub fn start(login: Vec<Field>) -> App {
            let seen = Arc::new(Mutex::new(Vec::new()));
            let s = Arc::clone(&seen);
            let login = Arc::new(login);
            let server = spawn(move |c, _| serve(c.stream, &login, &s));
            App { server, seen }
        }

        /// The requests to `path` the app read.
        pub fn seen(&self, path: &str) -> Vec<Seen> {
            let all = self.seen.lock().unwrap();
            all.iter().filter(|r| r.target == path).cloned().collect()
        }
    }

    /// A header block being read: its bytes, its stream, whether the request ends with it.
    #[derive(Default)]
    struct Block {
        bytes: Vec<u8>,
        stream: u32,
        ends: bool,
    }

    /// One connection, until volley closes it (or 10 s pass without a byte).
    fn serve(mut s: TcpStream, login: &[Field], seen: &Mutex<Vec<Seen>>) {
        let _ = s.set_read_timeout(Some(Duration::from_secs(10)));
        let mut buf = Vec::new();
        let mut decoder = loona_hpack::Decoder::new();
        let mut encoder = loona_hpack::Encoder::new();
        let mut block = Block::default();
        let mut preface = false;
        let mut open: Vec<(u32, Seen)> = Vec::new();
        if s.write_all(&frame(SETTINGS, 0, 0, &[])).is_err() {
            return;
        }
        let mut tmp = vec![0u8; 64 << 10];
        loop {
            match s.read(&mut tmp) {
                Ok(0) | Err(_) => return,
                Ok(k) => buf.extend_from_slice(&tmp[..k]),
            }
            if !preface {
                if buf.len() < PREFACE.len() {
                    continue;
                }
                assert_eq!(&buf[..PREFACE.len()], PREFACE);
                buf.drain(..PREFACE.len());
                preface = true;
            }
            let mut out = Vec::new();
            while buf.len() >= 9 {
                let len = u32::from_be_bytes([0, buf[0], buf[1], buf[2]]) as usize;
                if buf.len() < 9 + len {
                    break;
                }
                let (kind, flags) = (buf[3], buf[4]);
                let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
                let payload = buf[9..9 + len].to_vec();
                buf.drain(..9 + len);
                let mut ended = None;
                match kind {
                    SETTINGS if flags & ACK == 0 => out.extend(frame(SETTINGS, ACK, 0, &[])),
                    PING if flags & ACK == 0 => out.extend(frame(PING, ACK, 0, &payload)),
                    HEADERS | CONTINUATION => {
                        let mut p = &payload[..];
                        if kind == HEADERS {
                            if flags & PADDED != 0 {
                                p = &p[1..p.len() - p[0] as usize];
                            }
                            if flags & PRIORITY != 0 {
                                p = &p[5..];
                            }
                            block = Block {
                                bytes: Vec::new(),
                                stream,
                                ends: flags & END_STREAM != 0,
                            };
                        }
                        block.bytes.extend_from_slice(p);
                        if flags & END_HEADERS != 0 {
                            let fields = decoder.decode(&block.bytes).expect("HPACK decodes");
                            open.push((block.stream, request(&fields)));
                            if block.ends {
                                ended = Some(block.stream);
                            }
                        }
                    }
                    DATA => {
                        if !payload.is_empty() {
                            let n = (payload.len() as u32).to_be_bytes();
                            out.extend(frame(WINDOW_UPDATE, 0, 0, &n));
                        }
                        if flags & END_STREAM != 0 {
                            ended = Some(stream);
                        }
                    }
                    _ => {}
                }
                let Some(id) = ended else { continue };
                let Some(at) = open.iter().position(|(s, _)| *s == id) else {
                    continue;
                };
                let (_, req) = open.remove(at);
                let is_login = req.target == "/login";
                seen.lock().unwrap().push(req);
                let (fields, body): (&[Field], &[u8]) = if is_login {
                    (login, TOKEN_BODY.as_bytes())
                } else {
                    (&[], b"{}")
                };
                out.extend(response(&mut encoder, id, fields, body));
            }
            if !out.is_empty() && s.write_all(&out).is_err() {
                return;
            }
        }
    }

    /// A 200 on `stream` with `fields` and `body`: HEADERS and CONTINUATION frames of at most
    /// 16 KiB (the default frame size), then one DATA frame.
    fn response(
        encoder: &mut loona_hpack::Encoder,
        stream: u32,
        fields: &[Field],
        body: &[u8],
    ) -> Vec<u8> {
        let status = (&b":status"[..], &b"200"[..]);
        let head = encoder
            .encode(std::iter::once(status).chain(fields.iter().map(|(k, v)| (&k[..], &v[..]))));
        let mut out = Vec::new();
        let mut chunks = head.chunks(16_384).peekable();
        let mut kind = HEADERS;
        while let Some(c) = chunks.next() {
            let end = if chunks.peek().is_none() {
                END_HEADERS
            } else {
                0
            };
            out.extend(frame(kind, end, stream, c));
            kind = CONTINUATION;
        }
        out.extend(frame(DATA, END_STREAM, stream, body));
        out
    }

    /// A request from its decoded fields.
    fn request(fields: &[Field]) -> Seen {
        let text = |b: &[u8]| String::from_utf8_lossy(b).to_string();
        let pseudo = |name: &[u8]| {
            fields
                .iter()
                .find(|(k, _)| k == name)
                .map(|(_, v)| text(v))
                .unwrap_or_default()
        };
        let mut headers: Vec<(String, String)> = fields
            .iter()
            .filter(|(k, _)| !k.starts_with(b":") && k != b"cookie")
            .map(|(k, v)| (text(k), text(v)))
            .collect();
        let cookie: Vec<String> = fields
            .iter()
            .filter(|(k, _)| k == b"cookie")
            .map(|(_, v)| text(v))
            .collect();
        if !cookie.is_empty() {
            headers.push(("cookie".into(), cookie.join("; ")));
        }
        Seen {
            method: pseudo(b":method"),
            target: pseudo(b":path"),
            headers,
            body: Vec::new(),
        }
    }
}

/// `volley run --h2c` of [`JOURNEY`] against `app` with one stream and `extra`, checked as
/// [`run`] checks.
fn run_h2c(app: &h2c::App, name: &str, extra: &[&str], within: Duration) -> (i32, Value) {
    let dir = scratch("journeys-hostile", name);
    let file = dir.join("journey.toml");
    std::fs::write(&file, JOURNEY).unwrap();
    let (url, file) = (app.server.url("/"), file.display().to_string());
    let mut args = vec![
        "run",
        url.as_str(),
        "--h2c",
        "--requests-file",
        file.as_str(),
        "-t",
        "1",
        "-c",
        "1",
        "--streams",
        "1",
        "--timeout",
        "1s",
    ];
    args.extend_from_slice(extra);
    checked(&args, name, within)
}

/// `set-cookie` fields: `count` small distinct cookies, then one `bigK=` of each size in
/// `large`.
fn set_cookies(count: usize, large: &[usize]) -> Vec<h2c::Field> {
    let small = (0..count).map(|i| format!("c{i:03}=v; Path=/"));
    let large = large
        .iter()
        .enumerate()
        .map(|(k, n)| format!("big{k}={}; Path=/", "b".repeat(*n)));
    small
        .chain(large)
        .map(|v| (b"set-cookie".to_vec(), v.into_bytes()))
        .collect()
}

/// Over HTTP/2 a head is bounded by its decoded size (64 KiB), not by a count of fields: 700
/// `Set-Cookie` fields, then two too large for a jar (5000 and 10 000 bytes), in one head.
/// The jar keeps 50, the large ones are refused and counted.
#[test]
fn over_h2c_a_set_cookie_flood_fills_the_jar_to_its_bound_and_the_large_ones_are_refused() {
    let app = h2c::App::start(set_cookies(700, &[5000, 10_000]));
    let (code, j) = run_h2c(
        &app,
        "h2c-cookie-flood",
        &["-n", "20"],
        Duration::from_secs(10),
    );
    assert_eq!(code, 0, "{} {}", j["errors"], j["warnings"]);
    assert_eq!(n(&j, &["requests", "completed"]), 20);
    assert_eq!(n(&j, &["journey", "users_started"]), 1);
    assert_eq!(
        n(&j, &["journey", "cookies_refused"]),
        2,
        "{}",
        j["journey"]
    );
    let me = app.seen("/me");
    assert_eq!(me.len(), 19);
    for r in &me {
        assert_eq!(r.header("authorization"), Some("Bearer tok1"));
        let header = r.header("cookie");
        let sent = cookies(header);
        assert_eq!(sent.len(), JAR_COOKIES, "the jar's bound: {header:?}");
        assert!(sent.iter().all(|(k, _)| k.starts_with('c')), "{header:?}");
        assert!(header.unwrap().len() < JAR_COOKIES * COOKIE_BYTES);
    }
}

/// A `Set-Cookie` flood past an HTTP/2 head's bounds: 5000 fields are a header block over
/// 64 KiB, 1500 a block under it that decodes to a header list over 64 KiB. Each is a
/// protocol error (ENHANCE_YOUR_CALM, named in a warning), nothing reaches the jar, `/me` is
/// skipped.
#[test]
fn over_h2c_a_set_cookie_flood_past_the_head_bounds_is_a_protocol_error() {
    for (fields, bound) in [(5000, "a header block over"), (1500, "a header list over")] {
        let app = h2c::App::start(set_cookies(fields, &[]));
        let name = format!("h2c-cookie-flood-{fields}");
        let (code, j) = run_h2c(&app, &name, &["-n", "5"], Duration::from_secs(10));
        assert_eq!(code, 1, "{fields}");
        assert_eq!(
            n(&j, &["errors", "protocol"]),
            5,
            "{fields}: {}",
            j["errors"]
        );
        assert_eq!(
            n(&j, &["requests", "errors"]),
            5,
            "{fields}: {}",
            j["errors"]
        );
        assert_eq!(n(&j, &["journey", "cookies_refused"]), 0, "{fields}");
        assert_eq!(n(&j, &["journey", "skipped"]), 4, "{fields}");
        assert!(app.seen("/me").is_empty(), "{fields}");
        let w = j["warnings"].to_string();
        assert!(
            w.contains(bound) && w.contains("ENHANCE_YOUR_CALM"),
            "{fields}: {w}"
        );
    }
}

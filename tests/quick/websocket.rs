//! `volley run ws://…` (docs/contract.md, "WebSocket"): against an echo server (tungstenite, on
//! a thread per connection) the messages echoed are the requests completed, the server's own
//! count agrees, binary frames and `--no-keepalive` do what they say; against hostile servers
//! (a refused or wrong upgrade, a 2 GiB frame, a ping flood, closes with a code, messages
//! nobody asked for, a server that never answers the upgrade) each run ends in bounded time
//! and memory with every failure counted under its kind and named in the summary.

use crate::common::{self, Ctx, TestServer};

use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;
use tungstenite::Message;

/// volley's peak RSS must stay below this whatever the server does.
const RSS_LIMIT: u64 = 64 << 20;

/// What the echo server saw: binary messages and the close codes volley sent.
#[derive(Default)]
struct Seen {
    binary: u64,
    closes: Vec<u16>,
}

/// An echo server: each text or binary message back as it came, counted (the server's count
/// is `requests`).
fn echo() -> (TestServer, Arc<Mutex<Seen>>) {
    let seen = Arc::new(Mutex::new(Seen::default()));
    let s = Arc::clone(&seen);
    let server = common::spawn(move |c, _| {
        let count = Arc::clone(&c.requests);
        let Ok(mut ws) = tungstenite::accept(c.stream) else {
            return;
        };
        loop {
            match ws.read() {
                Ok(m @ (Message::Text(_) | Message::Binary(_))) => {
                    if m.is_binary() {
                        s.lock().unwrap().binary += 1;
                    }
                    count.fetch_add(1, Ordering::SeqCst);
                    if ws.send(m).is_err() {
                        return;
                    }
                }
                Ok(Message::Close(frame)) => {
                    let code = frame.map_or(1005, |f| u16::from(f.code));
                    s.lock().unwrap().closes.push(code);
                    let _ = ws.flush();
                    return;
                }
                Ok(_) => {}
                Err(_) => return,
            }
        }
    });
    (server, seen)
}

/// `volley run URL extra --json -` within `within`: exit code, RunResult, the output; the
/// counter invariant and the memory bound checked.
fn run(url: &str, extra: &[&str], within: Duration) -> (i32, Value, String) {
    let mut args = vec!["run", url];
    args.extend_from_slice(extra);
    let t = Instant::now();
    let (code, j, text) = common::volley_json(&args, Duration::from_secs(60));
    let took = t.elapsed();
    assert!(took < within, "took {took:?}, over {within:?}\n{text}");
    if code != 2 {
        common::assert_invariant(&j);
        super::schema::assert_valid(&j, &format!("volley run {url} {extra:?}"));
        let rss = n(&j, &["client", "rss_max_bytes"]);
        assert!(rss < RSS_LIMIT, "volley grew to {rss} bytes\n{text}");
    }
    (code, j, text)
}

fn n(j: &Value, path: &[&str]) -> u64 {
    let mut v = j;
    for p in path {
        v = &v[*p];
    }
    v.as_u64().unwrap_or_else(|| panic!("{path:?} in {j}"))
}

/// Reads the upgrade request on `c` and answers 101 with the accept its key calls for.
fn upgrade(c: &mut Ctx) -> bool {
    upgrade_then(c, &[])
}

/// [`upgrade`], with `more` (frames) in the same write as the 101.
fn upgrade_then(c: &mut Ctx, more: &[u8]) -> bool {
    let Some(head) = c.read_request_head() else {
        return false;
    };
    let key = head
        .lines()
        .find_map(|l| {
            let (name, v) = l.split_once(':')?;
            name.eq_ignore_ascii_case("sec-websocket-key")
                .then(|| v.trim().to_string())
        })
        .unwrap_or_default();
    let accept = tungstenite::handshake::derive_accept_key(key.as_bytes());
    let head = format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: {accept}\r\n\r\n"
    );
    c.write(&[head.as_bytes(), more].concat())
}

/// A server's frame: FIN, `opcode`, unmasked `payload`.
fn frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0x80 | opcode];
    match payload.len() {
        n @ 0..=125 => f.push(n as u8),
        n @ 126..=0xffff => {
            f.push(126);
            f.extend_from_slice(&(n as u16).to_be_bytes());
        }
        n => {
            f.push(127);
            f.extend_from_slice(&(n as u64).to_be_bytes());
        }
    }
    f.extend_from_slice(payload);
    f
}

/// Reads one whole client frame from `c` (masked, at most 64 KiB): its opcode, or `None`
/// at the end of the stream.
fn read_frame(c: &mut Ctx) -> Option<u8> {
    let mut head = [0u8; 2];
    c.stream.read_exact(&mut head).ok()?;
    let len = match head[1] & 0x7f {
        126 => {
            let mut l = [0u8; 2];
            c.stream.read_exact(&mut l).ok()?;
            u16::from_be_bytes(l) as usize
        }
        127 => return None,
        n => n as usize,
    };
    let mut rest = vec![0u8; 4 + len];
    c.stream.read_exact(&mut rest).ok()?;
    Some(head[0] & 0x0f)
}

#[test]
fn each_message_echoed_is_a_completed_request_as_the_server_counts() {
    let (server, seen) = echo();
    let url = format!("ws://{}/ws", server.addr);
    let (code, j, text) = run(
        &url,
        &["-c", "4", "-t", "2", "--pipeline", "4", "-n", "2000"],
        Duration::from_secs(20),
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 2000, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(
        server.requests(),
        2000,
        "the server echoed every message once"
    );
    assert_eq!(j["target"]["protocol"], "websocket");
    let ws = &j["target"]["websocket"];
    assert_eq!(ws["message_type"], "text");
    assert_eq!(ws["message_bytes"], 5, "the default message is `hello`");
    assert_eq!(n(ws, &["upgrades"]), 4, "one upgrade per connection: {ws}");
    assert!(ws["upgrade_mean_us"].as_f64().unwrap() > 0.0);
    assert!(
        j["status_codes"].as_object().is_none_or(|m| m.is_empty()),
        "messages have no status: {}",
        j["status_codes"]
    );
    assert_eq!(seen.lock().unwrap().binary, 0);
    // The run's end says so to each connection: going away.
    std::thread::sleep(Duration::from_millis(200));
    let closes = seen.lock().unwrap().closes.clone();
    assert_eq!(closes, vec![1001; 4], "closes the server saw");
}

#[test]
fn binary_frames_and_one_exchange_per_connection() {
    let (server, seen) = echo();
    let url = format!("ws://{}/ws", server.addr);
    let extra = [
        "--ws-binary",
        "--body-size",
        "300",
        "--no-keepalive",
        "-n",
        "40",
        "-c",
        "2",
    ];
    let (code, j, text) = run(&url, &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 40, "{text}");
    let ws = &j["target"]["websocket"];
    assert_eq!(
        (ws["message_type"].as_str(), n(ws, &["message_bytes"])),
        (Some("binary"), 300)
    );
    assert_eq!(
        n(ws, &["upgrades"]),
        40,
        "--no-keepalive: a connection per message: {ws}"
    );
    std::thread::sleep(Duration::from_millis(200));
    let seen = seen.lock().unwrap();
    assert_eq!(seen.binary, 40);
    assert_eq!(
        seen.closes.len(),
        40,
        "each connection closed with a close frame"
    );
    assert!(seen.closes.iter().all(|c| *c == 1000), "{:?}", seen.closes);
}

#[test]
fn a_refused_upgrade_ends_the_run_naming_the_status() {
    let server = common::answering(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
    let url = format!("ws://{}/nope", server.addr);
    let o = common::volley(&["run", &url, "-d", "5s"], Duration::from_secs(20));
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("WebSocket upgrade of ws://"), "{text}");
    assert!(text.contains("HTTP/1.1 404 Not Found"), "{text}");
}

#[test]
fn a_wrong_accept_ends_the_run_naming_it() {
    let server = common::spawn(|mut c, _| {
        if c.read_request_head().is_some() {
            c.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: bm90IHRoZSBrZXk=\r\n\r\n");
            std::thread::sleep(Duration::from_secs(1));
        }
    });
    let url = format!("ws://{}/", server.addr);
    let o = common::volley(&["run", &url, "-d", "5s"], Duration::from_secs(20));
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("Sec-WebSocket-Accept `bm90IHRoZSBrZXk=`"),
        "{text}"
    );
}

#[test]
fn a_server_that_never_answers_the_upgrade_costs_connect_errors_within_the_timeout() {
    let server = common::spawn(|mut c, _| {
        let _ = c.read_request_head();
        std::thread::sleep(Duration::from_secs(5));
    });
    let url = format!("ws://{}/", server.addr);
    let (code, j, text) = run(
        &url,
        &["-c", "2", "-d", "2s", "--timeout", "500ms"],
        Duration::from_secs(15),
    );
    assert_eq!(code, 1, "no message was answered: {text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "connect"]) >= 2, "{}", j["errors"]);
    assert!(
        text.contains("did not answer the WebSocket upgrade within --timeout"),
        "{text}"
    );
}

#[test]
fn a_2_gib_frame_is_refused_at_its_header_as_a_protocol_error() {
    let server = common::spawn(|mut c, _| {
        if !upgrade(&mut c) {
            return;
        }
        while read_frame(&mut c).is_some() {
            // A binary frame that says it is 2 GiB long, and a little of it.
            let mut f = vec![0x82, 127];
            f.extend_from_slice(&(2u64 << 30).to_be_bytes());
            f.extend_from_slice(&[0; 1024]);
            if !c.write(&f) {
                return;
            }
        }
    });
    let url = format!("ws://{}/", server.addr);
    let (_, j, text) = run(&url, &["-c", "2", "-d", "1s"], Duration::from_secs(15));
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "protocol"]) >= 2, "{}", j["errors"]);
    assert!(text.contains("a message of 2147483648 bytes"), "{text}");
}

#[test]
fn a_ping_flood_is_answered_within_bounds_and_messages_still_complete() {
    let server = common::spawn(|mut c, _| {
        if !upgrade(&mut c) {
            return;
        }
        let mut pings = Vec::new();
        for _ in 0..64 {
            pings.extend(frame(0x9, b"flood"));
        }
        while let Some(op) = read_frame(&mut c) {
            if op == 0x1 && !(c.write(&pings) && c.write(&frame(0x1, b"hello"))) {
                return;
            }
        }
    });
    let url = format!("ws://{}/", server.addr);
    let (code, j, text) = run(&url, &["-c", "2", "-d", "1s"], Duration::from_secs(15));
    assert_eq!(code, 0, "{text}");
    let done = n(&j, &["requests", "completed"]);
    assert!(done > 10, "{text}");
    let pings = n(&j, &["target", "websocket", "pings"]);
    assert!(pings >= done * 64, "pings {pings} for {done} messages");
}

#[test]
fn closes_with_a_code_are_counted_and_end_the_messages_in_flight() {
    let server = common::spawn(|mut c, _| {
        if !upgrade(&mut c) {
            return;
        }
        // Three echoes, then 1011 with a reason.
        for k in 0..4 {
            if read_frame(&mut c).is_none() {
                return;
            }
            let f = if k < 3 {
                frame(0x1, b"hello")
            } else {
                frame(
                    0x8,
                    &[&1011u16.to_be_bytes()[..], b"internal error"].concat(),
                )
            };
            if !c.write(&f) {
                return;
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    });
    let url = format!("ws://{}/", server.addr);
    let (_, j, text) = run(&url, &["-c", "1", "-d", "1s"], Duration::from_secs(15));
    let closes = n(&j, &["target", "websocket", "close_codes", "1011"]);
    assert!(closes >= 2, "{}", j["target"]["websocket"]);
    assert_eq!(n(&j, &["errors", "closed"]), closes, "{}", j["errors"]);
    assert!(n(&j, &["requests", "completed"]) >= 3 * closes - 3);
    assert!(text.contains("1011 (internal error)"), "{text}");
}

#[test]
fn messages_nobody_asked_for_are_counted_apart() {
    let server = common::spawn(|mut c, _| {
        if !upgrade(&mut c) {
            return;
        }
        while read_frame(&mut c).is_some() {
            // The echo, then one of the server's own.
            if !c.write(&[frame(0x1, b"hello"), frame(0x1, b"news")].concat()) {
                return;
            }
        }
    });
    let url = format!("ws://{}/", server.addr);
    let (code, j, text) = run(&url, &["-c", "1", "-n", "200"], Duration::from_secs(15));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{text}");
    let own = n(&j, &["target", "websocket", "server_messages"]);
    assert!((150..=200).contains(&own), "server's own messages: {own}");
}

#[test]
fn flags_that_do_not_apply_to_websocket_are_refused_by_name() {
    for (args, says) in [
        (
            vec!["--http3"],
            "--http3: cannot be used with a ws:// or wss:// URL",
        ),
        (
            vec!["-m", "POST"],
            "cannot be used with a ws:// or wss:// URL: the upgrade is a GET",
        ),
        (vec!["--streams", "4"], "--streams: needs HTTP/2 or HTTP/3"),
        (
            vec!["--expect-status", "200"],
            "--expect-status: cannot be used with a ws://",
        ),
    ] {
        let mut a = vec!["run", "ws://127.0.0.1:9/"];
        a.extend(args.iter());
        let o = common::volley(&a, Duration::from_secs(10));
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
    let o = common::volley(
        &["run", "http://127.0.0.1:9/", "--ws-binary"],
        Duration::from_secs(10),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("--ws-binary: needs a ws:// or wss:// URL"),
        "{text}"
    );
}

/// The summary of a run of the echo server says what the WebSocket did.
#[test]
fn the_summary_names_the_websocket() {
    let (server, _) = echo();
    let url = format!("ws://{}/ws", server.addr);
    let o = common::volley(
        &["run", &url, "-n", "100", "-c", "2"],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(text.contains("WebSocket: 2 upgrades"), "{text}");
    let _ = std::io::stdout().flush();
}

#[test]
fn an_open_loop_sends_messages_at_their_due_times_and_users_ramp() {
    let (server, _) = echo();
    let url = format!("ws://{}/ws", server.addr);
    // 200 messages a second for 2 s: each is due on the schedule, sent or counted unsent (a
    // busy machine may leave some behind: --allow-shortfall keeps that from the exit code).
    let extra = ["-R", "200", "-d", "2s", "-c", "4", "--allow-shortfall"];
    let (code, j, text) = run(&url, &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(j["load"]["mode"], "open");
    let (sent, unsent) = (n(&j, &["requests", "sent"]), n(&j, &["requests", "unsent"]));
    assert!(
        (399..=401).contains(&(sent + unsent)),
        "sent {sent} + unsent {unsent}\n{text}"
    );
    assert!(n(&j, &["requests", "completed"]) >= 300, "{text}");
    assert!(
        j["schedule_lag_us"]["p99"].as_f64().is_some(),
        "{}",
        j["schedule_lag_us"]
    );
    // Users ramp: each is a connection, upgraded once.
    let (code, j, text) = run(&url, &["--stages", "1s:4,1s:4"], Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(j["load"]["mode"], "ramp");
    assert_eq!(
        n(&j, &["target", "websocket", "upgrades"]),
        4,
        "{}",
        j["target"]["websocket"]
    );
    assert!(n(&j, &["requests", "completed"]) > 100);
}

#[test]
fn a_greeting_with_the_upgrade_answers_no_message() {
    // The server says hello with its 101 (one write), then echoes.
    let server = common::spawn(|mut c, _| {
        if !upgrade_then(&mut c, &frame(0x1, b"welcome")) {
            return;
        }
        while let Some(op) = read_frame(&mut c) {
            if op == 0x1 && !c.write(&frame(0x1, b"hello")) {
                return;
            }
        }
    });
    let url = format!("ws://{}/", server.addr);
    let (code, j, text) = run(
        &url,
        &["--no-keepalive", "-n", "20", "-c", "1"],
        Duration::from_secs(15),
    );
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 20, "{text}");
    assert_eq!(
        n(&j, &["target", "websocket", "server_messages"]),
        20,
        "each greeting apart"
    );
    // Each message's service time is the echo's round trip, never 0 (a greeting taken for it).
    assert!(
        j["service_time_us"]["min"].as_f64().unwrap() > 0.0,
        "{}",
        j["service_time_us"]
    );
}

/// An echo server that keeps the text of each message it echoed.
fn recording_echo() -> (TestServer, Arc<Mutex<Vec<String>>>) {
    let texts = Arc::new(Mutex::new(Vec::new()));
    let t = Arc::clone(&texts);
    let server = common::spawn(move |c, _| {
        let count = Arc::clone(&c.requests);
        let Ok(mut ws) = tungstenite::accept(c.stream) else {
            return;
        };
        while let Ok(m) = ws.read() {
            if let Message::Text(s) = &m {
                t.lock().unwrap().push(s.to_string());
                count.fetch_add(1, Ordering::SeqCst);
                if ws.send(m).is_err() {
                    return;
                }
            } else if m.is_close() {
                let _ = ws.flush();
                return;
            }
        }
    });
    (server, texts)
}

#[test]
fn a_requests_file_makes_templated_messages_with_results_by_name() {
    let (server, texts) = recording_echo();
    let dir = common::scratch("ws-file", "mix");
    let file = dir.join("messages.toml");
    std::fs::write(
        &file,
        r#"
[[request]]
name = "join"
body = '{{"op": "join", "id": {seq}}}'

[[request]]
body = "ping-{rand:1..9}"
weight = 3
"#,
    )
    .unwrap();
    let f = file.display().to_string();
    let url = server.url("/chat").replacen("http://", "ws://", 1);
    let extra = [
        "--requests-file",
        &f,
        "-n",
        "400",
        "-c",
        "2",
        "--pipeline",
        "2",
    ];
    let (code, j, text) = run(&url, &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 400, "{text}");
    assert_eq!(server.requests(), 400);
    let rows: Vec<(String, u64)> = j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let name = e["name"].as_str().unwrap().to_string();
            (name, n(e, &["requests", "completed"]))
        })
        .collect();
    assert_eq!(
        rows,
        [("join".to_string(), 100), ("message 2".to_string(), 300)]
    );
    // The table's request is the upgrade the messages ride on.
    assert_eq!(j["endpoints"][0]["method"], "GET", "{}", j["endpoints"]);
    assert_eq!(j["endpoints"][0]["path"], "/chat");
    let texts = texts.lock().unwrap();
    let mut ids: Vec<u64> = texts
        .iter()
        .filter_map(|t| {
            let v: Value = serde_json::from_str(t).ok()?;
            v["id"].as_u64()
        })
        .collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), 100, "each join has its own {{seq}}");
    let pings = texts.iter().filter(|t| t.starts_with("ping-")).count();
    assert_eq!(pings, 300);
    assert!(texts
        .iter()
        .filter(|t| t.starts_with("ping-"))
        .all(|t| matches!(t.as_bytes(), [.., b'1'..=b'9']) && t.len() == 6));
}

#[test]
fn a_requests_file_message_with_an_http_key_is_refused_at_its_line() {
    let dir = common::scratch("ws-file", "mistakes");
    let cases = [
        (
            "[[request]]\nbody = \"a\"\npath = \"/x\"\n",
            "messages.toml:3:8: [[request]] 1: path: not in a ws:// run",
        ),
        (
            "[[request]]\nexpect_status = 200\n",
            "expect_status: not in a ws:// run: a message has no status",
        ),
        ("GET http://127.0.0.1:9/x\n", "not vegeta targets"),
    ];
    for (k, (text, says)) in cases.iter().enumerate() {
        let name = if k == 2 {
            "targets.txt"
        } else {
            "messages.toml"
        };
        let file = dir.join(format!("{k}-{name}"));
        let file = file.with_file_name(name);
        std::fs::write(&file, text).unwrap();
        let f = file.display().to_string();
        let o = common::volley(
            &["run", "ws://127.0.0.1:9/", "--requests-file", &f],
            Duration::from_secs(10),
        );
        let out = common::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{text}: {out}");
        assert!(out.contains(says), "{text}: {out}");
    }
}

//! `volley run ws://… --h2c` and `wss://… --http2` (docs/contract.md, "WebSocket"): WebSocket
//! over HTTP/2 (RFC 8441). An in-process HTTP/2 server, frames written by hand, announces
//! SETTINGS_ENABLE_CONNECT_PROTOCOL, answers the extended CONNECT and echoes the WebSocket's
//! messages on that stream: the messages echoed are the requests completed, as the server
//! counts them, closed and open loop, with --pipeline. Against servers that do not offer it,
//! refuse it, or turn hostile on the tunnel (a 2 GiB frame, a ping flood, a window never
//! opened, a reset) each run ends in bounded time and memory, every failure counted and named.

use crate::common::h2::{frame, kind::*, LINGER, PREFACE};
use crate::common::{self, tls};

use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// volley's peak RSS must stay below this whatever the server does.
const RSS_LIMIT: u64 = 64 << 20;

/// SETTINGS_ENABLE_CONNECT_PROTOCOL.
const ENABLE_CONNECT_PROTOCOL: u16 = 0x8;

/// How the server behaves on every connection.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Mode {
    /// Announces extended CONNECT, answers 200 and echoes every message.
    Echo,
    /// Its SETTINGS do not announce extended CONNECT.
    NoSetting,
    /// Answers the CONNECT with this `:status` (an HPACK static index: 13 is 404), ending
    /// the stream.
    Status(u8),
    /// Answers every message with the header of a 2 GiB binary frame and 1 KiB of it.
    HugeFrame,
    /// Answers every message with 64 pings, then the echo.
    PingFlood,
    /// Announces a stream window of 0 and never opens it.
    ZeroWindow,
    /// Echoes three messages, then resets the stream (INTERNAL_ERROR).
    Reset,
    /// Echoes every message; with the third of a connection, a graceful GOAWAY that keeps
    /// the stream.
    GoAway,
    /// Never answers the CONNECT.
    Silent,
    /// Answers the CONNECT 200 with `sec-websocket-extensions: permessage-deflate`.
    Extension,
}

/// What the server saw, over all connections.
#[derive(Default)]
struct Seen {
    /// Extended CONNECTs (HEADERS with `:protocol websocket`).
    connects: u64,
    /// Binary messages.
    binary: u64,
    /// Close codes volley sent (1005: a close without one).
    closes: Vec<u16>,
    /// HEADERS that were not an extended CONNECT for a WebSocket.
    other: u64,
}

struct Server {
    addr: std::net::SocketAddr,
    /// Messages the server read (each echoed unless the mode says otherwise).
    messages: Arc<AtomicU64>,
    seen: Arc<Mutex<Seen>>,
}

impl Server {
    fn url(&self, path: &str) -> String {
        format!("ws://{}{path}", self.addr)
    }
    fn messages(&self) -> u64 {
        self.messages.load(Ordering::SeqCst)
    }
}

/// Starts a cleartext (h2c) server in `mode`.
fn serve(mode: Mode) -> Server {
    serve_on(mode, None)
}

/// Starts a server in `mode`, over TLS with `tls` (ALPN h2).
fn serve_on(mode: Mode, tls: Option<Arc<rustls::ServerConfig>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let messages = Arc::new(AtomicU64::new(0));
    let seen = Arc::new(Mutex::new(Seen::default()));
    let (m, s) = (Arc::clone(&messages), Arc::clone(&seen));
    std::thread::spawn(move || {
        for sock in listener.incoming() {
            let Ok(sock) = sock else { continue };
            let _ = sock.set_nodelay(true);
            let _ = sock.set_read_timeout(Some(LINGER));
            let (m, s, tls) = (Arc::clone(&m), Arc::clone(&s), tls.clone());
            std::thread::spawn(move || match tls {
                None => Peer::new(sock, m, s).run(mode),
                Some(cfg) => {
                    let conn = rustls::ServerConnection::new(cfg).unwrap();
                    Peer::new(rustls::StreamOwned::new(conn, sock), m, s).run(mode)
                }
            });
        }
    });
    Server {
        addr,
        messages,
        seen,
    }
}

/// The server's side of one connection.
struct Peer<S: Read + Write> {
    io: S,
    buf: Vec<u8>,
    /// The WebSocket's bytes from volley, not yet a whole frame.
    ws: Vec<u8>,
    messages: Arc<AtomicU64>,
    seen: Arc<Mutex<Seen>>,
    /// Messages read on this connection.
    answered: u64,
}

/// A server's (unmasked) WebSocket frame.
fn ws_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
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

/// One whole client frame at the start of `b` (masked, FIN set): its opcode, unmasked
/// payload and length.
fn client_frame(b: &[u8]) -> Option<(u8, Vec<u8>, usize)> {
    if b.len() < 2 {
        return None;
    }
    let (len, mut at) = match b[1] & 0x7f {
        126 => (u16::from_be_bytes([*b.get(2)?, *b.get(3)?]) as usize, 4),
        127 => (
            u64::from_be_bytes(b.get(2..10)?.try_into().ok()?) as usize,
            10,
        ),
        n => (n as usize, 2),
    };
    assert_eq!(b[1] & 0x80, 0x80, "a client frame is masked");
    let mask: [u8; 4] = b.get(at..at + 4)?.try_into().ok()?;
    at += 4;
    let payload = b.get(at..at + len)?;
    let payload = payload
        .iter()
        .enumerate()
        .map(|(k, x)| x ^ mask[k & 3])
        .collect();
    Some((b[0] & 0x0f, payload, at + len))
}

fn settings(values: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, v) in values {
        p.extend(id.to_be_bytes());
        p.extend(v.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &p)
}

impl<S: Read + Write> Peer<S> {
    fn new(io: S, messages: Arc<AtomicU64>, seen: Arc<Mutex<Seen>>) -> Self {
        Peer {
            io,
            buf: Vec::new(),
            ws: Vec::new(),
            messages,
            seen,
            answered: 0,
        }
    }

    fn write(&mut self, bytes: &[u8]) -> bool {
        self.io.write_all(bytes).is_ok() && self.io.flush().is_ok()
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 64 << 10];
        match self.io.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    /// A whole HTTP/2 frame at the start of the buffer: kind, flags, stream, payload.
    fn take_frame(&mut self) -> Option<(u8, u8, u32, Vec<u8>)> {
        if self.buf.len() < 9 {
            return None;
        }
        let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
        if self.buf.len() < 9 + len {
            return None;
        }
        let stream =
            u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]]) & 0x7fff_ffff;
        let f = (
            self.buf[3],
            self.buf[4],
            stream,
            self.buf[9..9 + len].to_vec(),
        );
        self.buf.drain(..9 + len);
        Some(f)
    }

    fn run(&mut self, mode: Mode) {
        while self.buf.len() < PREFACE.len() {
            if !self.fill() {
                return;
            }
        }
        assert_eq!(&self.buf[..PREFACE.len()], PREFACE);
        self.buf.drain(..PREFACE.len());
        let values: Vec<(u16, u32)> = match mode {
            Mode::NoSetting => vec![],
            Mode::ZeroWindow => vec![(ENABLE_CONNECT_PROTOCOL, 1), (4, 0)],
            _ => vec![(ENABLE_CONNECT_PROTOCOL, 1)],
        };
        if !self.write(&settings(&values)) {
            return;
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline && self.fill() {
            while let Some((kind, flags, stream, payload)) = self.take_frame() {
                let out = match kind {
                    SETTINGS if flags & ACK == 0 => frame(SETTINGS, ACK, 0, &[]),
                    PING if flags & ACK == 0 => frame(PING, ACK, 0, &payload),
                    HEADERS => self.connect(mode, stream, &payload),
                    DATA => {
                        let mut out = Vec::new();
                        if mode != Mode::ZeroWindow && !payload.is_empty() {
                            // The window volley used is given back.
                            let n = (payload.len() as u32).to_be_bytes();
                            out.extend(frame(WINDOW_UPDATE, 0, 0, &n));
                            out.extend(frame(WINDOW_UPDATE, 0, stream, &n));
                        }
                        self.ws.extend_from_slice(&payload);
                        match self.messages_in(mode, stream) {
                            Some(more) => out.extend(more),
                            None => {
                                let _ = self.write(&out);
                                return;
                            }
                        }
                        out
                    }
                    RST_STREAM => return,
                    _ => Vec::new(),
                };
                if !out.is_empty() && !self.write(&out) {
                    return;
                }
            }
        }
    }

    /// The answer to a HEADERS frame: the extended CONNECT's.
    fn connect(&mut self, mode: Mode, stream: u32, block: &[u8]) -> Vec<u8> {
        let has = |b: &[u8], what: &[u8]| b.windows(what.len()).any(|w| w == what);
        // volley's block: literals without indexing, names and values without Huffman.
        let websocket = has(block, b"\x09:protocol\x09websocket")
            && has(block, b"\x02\x07CONNECT")
            && has(block, b"\x15sec-websocket-version\x0213");
        {
            let mut seen = self.seen.lock().unwrap();
            if websocket {
                seen.connects += 1;
            } else {
                seen.other += 1;
            }
        }
        match mode {
            Mode::Status(index) => {
                frame(HEADERS, END_HEADERS | END_STREAM, stream, &[0x80 | index])
            }
            Mode::Silent => Vec::new(),
            Mode::Extension => {
                let mut head = vec![0x88, 0, 24];
                head.extend_from_slice(b"sec-websocket-extensions");
                head.push(18);
                head.extend_from_slice(b"permessage-deflate");
                frame(HEADERS, END_HEADERS, stream, &head)
            }
            // :status 200 (static index 8); the stream stays open.
            _ => frame(HEADERS, END_HEADERS, stream, &[0x88]),
        }
    }

    /// The whole client frames read so far, answered as `mode` says; `None` once volley
    /// closed (its close is answered, the stream ended).
    fn messages_in(&mut self, mode: Mode, stream: u32) -> Option<Vec<u8>> {
        let mut out = Vec::new();
        while let Some((op, payload, used)) = client_frame(&self.ws) {
            self.ws.drain(..used);
            match op {
                0x1 | 0x2 => {
                    if op == 0x2 {
                        self.seen.lock().unwrap().binary += 1;
                    }
                    self.messages.fetch_add(1, Ordering::SeqCst);
                    self.answered += 1;
                    let k = self.answered;
                    let answer = match mode {
                        Mode::HugeFrame => {
                            let mut f = vec![0x82, 127];
                            f.extend_from_slice(&(2u64 << 30).to_be_bytes());
                            f.extend_from_slice(&[0; 1024]);
                            f
                        }
                        Mode::PingFlood => {
                            let mut f = ws_frame(0x9, b"flood").repeat(64);
                            f.extend(ws_frame(op, &payload));
                            f
                        }
                        Mode::Reset if k > 3 => {
                            out.extend(frame(RST_STREAM, 0, stream, &2u32.to_be_bytes()));
                            return Some(out);
                        }
                        Mode::GoAway if k == 3 => {
                            let mut last = stream.to_be_bytes().to_vec();
                            last.extend(0u32.to_be_bytes());
                            out.extend(frame(GOAWAY, 0, 0, &last));
                            ws_frame(op, &payload)
                        }
                        _ => ws_frame(op, &payload),
                    };
                    for chunk in answer.chunks(16_384) {
                        out.extend(frame(DATA, 0, stream, chunk));
                    }
                }
                0x8 => {
                    let code = match payload.as_slice() {
                        [a, b, ..] => u16::from_be_bytes([*a, *b]),
                        _ => 1005,
                    };
                    self.seen.lock().unwrap().closes.push(code);
                    out.extend(frame(DATA, END_STREAM, stream, &ws_frame(0x8, &payload)));
                    let _ = self.write(&out);
                    return None;
                }
                _ => {}
            }
        }
        Some(out)
    }
}

/// `volley run URL extra --json -` within `within`: exit code, RunResult, the output; the
/// counter invariant, the schema and the memory bound checked.
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

#[test]
fn each_message_echoed_over_the_stream_is_a_completed_request_as_the_server_counts() {
    let s = serve(Mode::Echo);
    let extra = [
        "--h2c",
        "-c",
        "4",
        "-t",
        "2",
        "--pipeline",
        "4",
        "-n",
        "2000",
    ];
    let (code, j, text) = run(&s.url("/ws"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 2000, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(s.messages(), 2000, "the server echoed every message once");
    assert_eq!(j["target"]["protocol"], "websocket");
    let ws = &j["target"]["websocket"];
    assert_eq!(ws["over"], "h2c", "{ws}");
    assert_eq!(ws["message_type"], "text");
    assert_eq!(n(ws, &["upgrades"]), 4, "one tunnel per connection: {ws}");
    assert!(ws["upgrade_mean_us"].as_f64().unwrap() > 0.0);
    assert_eq!(
        n(&j, &["target", "h2", "connections"]),
        4,
        "{}",
        j["target"]
    );
    assert!(
        j["status_codes"].as_object().is_none_or(|m| m.is_empty()),
        "messages have no status: {}",
        j["status_codes"]
    );
    std::thread::sleep(Duration::from_millis(200));
    let seen = s.seen.lock().unwrap();
    assert_eq!(seen.connects, 4, "an extended CONNECT per connection");
    assert_eq!(seen.other, 0);
    assert_eq!(seen.closes, vec![1001; 4], "the run's end says going away");
}

#[test]
fn binary_messages_larger_than_a_frame_and_one_exchange_per_connection() {
    let s = serve(Mode::Echo);
    // 100 KB messages: several DATA frames each, beyond the server's 64 KiB window, which it
    // opens as it reads.
    let extra = [
        "--h2c",
        "--ws-binary",
        "--body-size",
        "100000",
        "-n",
        "30",
        "-c",
        "2",
    ];
    let (code, j, text) = run(&s.url("/"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 30, "{text}");
    assert_eq!(s.seen.lock().unwrap().binary, 30);
    let extra = ["--h2c", "--no-keepalive", "-n", "10", "-c", "1"];
    let (code, j, text) = run(&s.url("/"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 10, "{text}");
    assert_eq!(n(&j, &["target", "websocket", "upgrades"]), 10);
}

#[test]
fn an_open_loop_sends_messages_at_their_due_times_over_the_stream() {
    let s = serve(Mode::Echo);
    let extra = [
        "--h2c",
        "-R",
        "200",
        "-d",
        "2s",
        "-c",
        "4",
        "--allow-shortfall",
    ];
    let (code, j, text) = run(&s.url("/ws"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(j["load"]["mode"], "open");
    let (sent, unsent) = (n(&j, &["requests", "sent"]), n(&j, &["requests", "unsent"]));
    assert!(
        (399..=401).contains(&(sent + unsent)),
        "sent {sent} + unsent {unsent}\n{text}"
    );
    let done = n(&j, &["requests", "completed"]);
    assert!(done >= 300, "{text}");
    assert_eq!(s.messages(), done + n(&j, &["requests", "unfinished"]));
    assert!(j["schedule_lag_us"]["p99"].as_f64().is_some());
}

#[test]
fn a_server_without_extended_connect_ends_the_run_naming_the_setting() {
    let s = serve(Mode::NoSetting);
    let o = common::volley(
        &["run", &s.url("/ws"), "--h2c", "-d", "5s"],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("WebSocket upgrade of ws://"), "{text}");
    assert!(
        text.contains(
            "the server does not offer WebSocket over HTTP/2 (no \
             SETTINGS_ENABLE_CONNECT_PROTOCOL); drop --h2c/--http2 to upgrade HTTP/1.1"
        ),
        "{text}"
    );
    assert_eq!(s.seen.lock().unwrap().connects, 0, "no CONNECT was sent");
}

#[test]
fn a_refused_connect_ends_the_run_naming_its_status() {
    let s = serve(Mode::Status(13));
    let o = common::volley(
        &["run", &s.url("/nope"), "--h2c", "-d", "5s"],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains("answered the WebSocket's extended CONNECT with :status 404"),
        "{text}"
    );
}

#[test]
fn a_2xx_that_chooses_an_extension_ends_the_run_naming_it() {
    let s = serve(Mode::Extension);
    let o = common::volley(
        &["run", &s.url("/"), "--h2c", "-d", "5s"],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(
        text.contains(
            "answered the WebSocket's extended CONNECT with a 2xx that chose the extension \
             `permessage-deflate`, which volley did not offer"
        ),
        "{text}"
    );
}

#[test]
fn a_2_gib_frame_on_the_stream_is_refused_at_its_header_and_closed_with_1009() {
    let s = serve(Mode::HugeFrame);
    let (_, j, text) = run(
        &s.url("/"),
        &["--h2c", "-c", "2", "-d", "1s"],
        Duration::from_secs(15),
    );
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "protocol"]) >= 2, "{}", j["errors"]);
    assert!(text.contains("a message of 2147483648 bytes"), "{text}");
    std::thread::sleep(Duration::from_millis(200));
    let closes = s.seen.lock().unwrap().closes.clone();
    assert!(closes.contains(&1009), "closes the server saw: {closes:?}");
}

#[test]
fn a_ping_flood_on_the_stream_is_answered_within_bounds() {
    let s = serve(Mode::PingFlood);
    let (code, j, text) = run(
        &s.url("/"),
        &["--h2c", "-c", "2", "-d", "1s"],
        Duration::from_secs(15),
    );
    assert_eq!(code, 0, "{text}");
    let done = n(&j, &["requests", "completed"]);
    assert!(done > 10, "{text}");
    let pings = n(&j, &["target", "websocket", "pings"]);
    assert!(pings >= done * 64, "pings {pings} for {done} messages");
}

#[test]
fn a_window_never_opened_times_the_messages_out_within_bounds() {
    let s = serve(Mode::ZeroWindow);
    let extra = [
        "--h2c",
        "-c",
        "2",
        "--pipeline",
        "8",
        "--body-size",
        "100000",
        "-d",
        "1500ms",
        "--timeout",
        "500ms",
    ];
    let (code, j, text) = run(&s.url("/"), &extra, Duration::from_secs(10));
    assert_eq!(code, 1, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "timeout"]) >= 2, "{}", j["errors"]);
    let errors = j["errors"].as_object().unwrap();
    for (kind, v) in errors {
        if kind != "timeout" {
            assert_eq!(v.as_u64(), Some(0), "{kind}: {}", j["errors"]);
        }
    }
    assert_eq!(s.messages(), 0, "no message reached the server");
}

#[test]
fn a_reset_stream_ends_its_messages_as_protocol_errors() {
    let s = serve(Mode::Reset);
    let (_, j, text) = run(
        &s.url("/"),
        &["--h2c", "-c", "1", "-d", "1s"],
        Duration::from_secs(15),
    );
    assert!(n(&j, &["requests", "completed"]) >= 3, "{text}");
    assert!(n(&j, &["errors", "protocol"]) >= 1, "{}", j["errors"]);
    assert!(
        text.contains("reset the WebSocket's stream 1 (RST_STREAM INTERNAL_ERROR)"),
        "{text}"
    );
    assert!(
        n(&j, &["target", "websocket", "upgrades"]) >= 2,
        "reconnected"
    );
}

#[test]
fn the_summary_names_the_http2_that_carries_the_websocket() {
    let s = serve(Mode::Echo);
    let o = common::volley(
        &[
            "run",
            &s.url("/ws"),
            "--h2c",
            "--h2-window",
            "1048576",
            "-n",
            "100",
            "-c",
            "2",
        ],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(0), "{text}");
    assert!(
        text.contains("WebSocket over HTTP/2 (h2c): 2 upgrades (extended CONNECT, mean"),
        "{text}"
    );
    assert!(
        text.contains("HTTP/2 (h2c): 1 stream per connection"),
        "{text}"
    );
}

#[test]
fn wss_with_http2_speaks_websocket_over_h2_by_alpn() {
    let leaf = tls::self_signed(&["localhost"]);
    let cfg = tls::with_alpn(
        tls::config(vec![leaf.der.clone()], leaf.key(), tls::Versions::Both),
        &[b"h2"],
    );
    let s = serve_on(Mode::Echo, Some(Arc::new(cfg)));
    let url = format!("wss://localhost:{}/ws", s.addr.port());
    let extra = ["--http2", "-k", "-c", "2", "--pipeline", "2", "-n", "200"];
    let (code, j, text) = run(&url, &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 200, "{text}");
    assert_eq!(s.messages(), 200);
    assert_eq!(j["target"]["websocket"]["over"], "h2");
    assert_eq!(j["target"]["tls"]["alpn"], "h2", "{}", j["target"]["tls"]);
}

#[test]
fn http2_flags_must_fit_the_websocket_url() {
    for (url, args, says) in [
        (
            "ws://127.0.0.1:9/",
            vec!["--http2"],
            "--http2: needs a wss:// URL",
        ),
        (
            "wss://127.0.0.1:9/",
            vec!["--h2c"],
            "--h2c: is HTTP/2 in cleartext and needs a ws:// URL",
        ),
        (
            "ws://127.0.0.1:9/",
            vec!["--http3"],
            "over HTTP/3 (RFC 9220) it is not supported",
        ),
        (
            "ws://127.0.0.1:9/",
            vec!["--h2c", "--streams", "4"],
            "--streams: cannot be used with a ws:// or wss:// URL",
        ),
    ] {
        let mut a = vec!["run", url];
        a.extend(args.iter());
        let o = common::volley(&a, Duration::from_secs(10));
        let text = common::output_text(&o);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {text}");
        assert!(text.contains(says), "{args:?}: {text}");
    }
}

#[test]
fn a_graceful_goaway_lets_the_messages_in_flight_finish_then_reconnects() {
    let s = serve(Mode::GoAway);
    let extra = ["--h2c", "-c", "2", "--pipeline", "2", "-n", "300"];
    let (code, j, text) = run(&s.url("/ws"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 300, "{text}");
    assert_eq!(n(&j, &["requests", "errors"]), 0, "{}", j["errors"]);
    assert_eq!(s.messages(), 300, "each message reached the server once");
    assert!(n(&j, &["target", "h2", "goaways"]) >= 2, "{}", j["target"]);
    assert!(
        n(&j, &["target", "websocket", "upgrades"]) >= 4,
        "replaced connections"
    );
}

#[test]
fn a_connect_never_answered_costs_connect_errors_within_the_timeout() {
    let s = serve(Mode::Silent);
    let extra = ["--h2c", "-c", "2", "-d", "2s", "--timeout", "500ms"];
    let (code, j, text) = run(&s.url("/"), &extra, Duration::from_secs(15));
    assert_eq!(code, 1, "no message was answered: {text}");
    assert_eq!(n(&j, &["requests", "completed"]), 0);
    assert!(n(&j, &["errors", "connect"]) >= 2, "{}", j["errors"]);
    assert!(
        text.contains("did not answer the WebSocket's extended CONNECT within --timeout"),
        "{text}"
    );
}

#[test]
fn wss_with_http2_against_a_server_that_chooses_http11_says_how_to_upgrade_instead() {
    let leaf = tls::self_signed(&["localhost"]);
    let cfg = tls::config(vec![leaf.der.clone()], leaf.key(), tls::Versions::Both);
    let s = tls::serve(cfg, tls::After::Answer);
    let url = format!("wss://localhost:{}/ws", s.addr.port());
    let o = common::volley(
        &["run", &url, "--http2", "-k", "-d", "5s"],
        Duration::from_secs(20),
    );
    let text = common::output_text(&o);
    assert_eq!(o.status.code(), Some(2), "{text}");
    assert!(text.contains("drop --http2 to upgrade HTTP/1.1"), "{text}");
}

#[test]
fn through_a_proxys_tunnel_the_websocket_still_rides_an_http2_stream() {
    let s = serve(Mode::Echo);
    let proxy = common::proxy::start(common::proxy::Behaviour::Honest);
    let extra = ["--h2c", "-x", &proxy.url(), "-c", "2", "-n", "100"];
    let (code, j, text) = run(&s.url("/ws"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(n(&j, &["requests", "completed"]), 100, "{text}");
    assert_eq!(s.messages(), 100);
    assert_eq!(j["target"]["websocket"]["over"], "h2c");
    let heads = proxy.heads();
    let connect = format!("CONNECT {} HTTP/1.1", s.addr);
    assert!(heads.iter().any(|h| h.starts_with(&connect)), "{heads:?}");
}

#[test]
fn a_websocket_over_http2_is_another_load_than_one_upgraded_from_http11() {
    // The same URL path and flags, upgraded (tungstenite) and over HTTP/2.
    let upgraded = common::spawn(|c, _| {
        let Ok(mut ws) = tungstenite::accept(c.stream) else {
            return;
        };
        while let Ok(m) = ws.read() {
            if (m.is_text() || m.is_binary()) && ws.send(m).is_err() {
                return;
            }
        }
    });
    let s = serve(Mode::Echo);
    let extra = ["-c", "1", "-n", "20"];
    let (code, h1, text) = run(
        &format!("ws://{}/ws", upgraded.addr),
        &extra,
        Duration::from_secs(20),
    );
    assert_eq!(code, 0, "{text}");
    let with_h2c = [&extra[..], &["--h2c"]].concat();
    let (code, h2, text) = run(&s.url("/ws"), &with_h2c, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(h1["target"]["websocket"]["over"], "http/1.1");
    assert_ne!(
        h1["load_id"], h2["load_id"],
        "{} {}",
        h1["load_id"], h2["load_id"]
    );
}

#[test]
fn messages_from_a_requests_file_ride_the_stream_as_rendered() {
    let s = serve(Mode::Echo);
    let dir = common::scratch("ws-h2-file", "mix");
    let file = dir.join("messages.toml");
    std::fs::write(
        &file,
        "[[request]]\nname = \"big\"\nbody_size = 1000\n\n[[request]]\nbody = \"id-{seq}\"\n",
    )
    .unwrap();
    let f = file.display().to_string();
    let extra = ["--h2c", "--requests-file", &f, "-c", "2", "-n", "400"];
    let (code, j, text) = run(&s.url("/ws"), &extra, Duration::from_secs(20));
    assert_eq!(code, 0, "{text}");
    assert_eq!(s.messages(), 400);
    let counts: Vec<u64> = j["endpoints"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| n(e, &["requests", "completed"]))
        .collect();
    assert_eq!(counts, [200, 200], "{}", j["endpoints"]);
    // 200 messages of 1,000 bytes went, not the run's 5-byte `hello`.
    assert!(n(&j, &["bytes", "sent"]) > 200 * 1000, "{}", j["bytes"]);
}

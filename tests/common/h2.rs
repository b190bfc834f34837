//! In-process HTTP/2 servers (h2c, prior knowledge) for integration tests: one well-behaved
//! minimal server and hostile ones, one per [`Behaviour`]. Frames are written by hand (the
//! hostile ones must break the rules a library enforces); each connection runs on its own
//! thread and ends when volley closes it (a write fails) or after [`LINGER`].

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::{spawn, Ctx, TestServer};

mod reflection;
pub use reflection::{Files, Reflection};

/// What a client sends first.
pub const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// How long a connection is kept after the server is done with it (waiting for volley to
/// close it), at most.
pub const LINGER: Duration = Duration::from_secs(3);

/// A literal field without indexing, its name new (HPACK, RFC 7541 §6.2.2), both short.
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    [
        &[0, name.len() as u8][..],
        name,
        &[value.len() as u8],
        value,
    ]
    .concat()
}

/// A gRPC answer on stream `s`: 200 `application/grpc`, a `HelloReply{message: "hi"}`, then
/// (with `trailers`) `grpc-status` 0, or 3 with `failure` as its message.
fn grpc_answer(s: u32, failure: Option<&str>, trailers: bool) -> Vec<u8> {
    let mut head = vec![STATUS_200];
    head.extend(literal(b"content-type", b"application/grpc"));
    let mut out = frame(HEADERS, END_HEADERS, s, &head);
    // Field 1 (a string) "hi", behind gRPC's prefix.
    out.extend(frame(DATA, 0, s, &[0, 0, 0, 0, 4, 0x0a, 2, b'h', b'i']));
    if trailers {
        let mut t = match failure {
            None => literal(b"grpc-status", b"0"),
            Some(_) => literal(b"grpc-status", b"3"),
        };
        if let Some(m) = failure {
            t.extend(literal(b"grpc-message", m.as_bytes()));
        }
        out.extend(frame(HEADERS, END_HEADERS | END_STREAM, s, &t));
    }
    out
}

/// A head, one gRPC message of [`HUGE_MESSAGE`] bytes in DATA frames of 16 KiB, and OK.
fn grpc_huge(s: u32) -> Vec<u8> {
    let mut head = vec![STATUS_200];
    head.extend(literal(b"content-type", b"application/grpc"));
    let mut out = frame(HEADERS, END_HEADERS, s, &head);
    let mut prefix = vec![0];
    prefix.extend((HUGE_MESSAGE as u32).to_be_bytes());
    out.extend(frame(DATA, 0, s, &prefix));
    let chunk = frame(DATA, 0, s, &[b'x'; 16 << 10]);
    for _ in 0..HUGE_MESSAGE / (16 << 10) {
        out.extend_from_slice(&chunk);
    }
    out.extend(frame(
        HEADERS,
        END_HEADERS | END_STREAM,
        s,
        &literal(b"grpc-status", b"0"),
    ));
    out
}

/// Frame types and flags used here (RFC 9113 §6).
pub mod kind {
    pub const DATA: u8 = 0;
    pub const HEADERS: u8 = 1;
    pub const RST_STREAM: u8 = 3;
    pub const SETTINGS: u8 = 4;
    pub const PING: u8 = 6;
    pub const GOAWAY: u8 = 7;
    pub const WINDOW_UPDATE: u8 = 8;
    pub const CONTINUATION: u8 = 9;
    pub const END_STREAM: u8 = 0x1;
    pub const ACK: u8 = 0x1;
    pub const END_HEADERS: u8 = 0x4;
}
use kind::*;

/// `:status: 200` from the HPACK static table.
const STATUS_200: u8 = 0x88;

/// How a server behaves on every connection.
#[derive(Debug, Clone, Copy)]
pub enum Behaviour {
    /// Answers every stream 200 with a one-byte body once the request has ended, after
    /// holding what one read brought for `hold` (so streams overlap); announces
    /// SETTINGS_MAX_CONCURRENT_STREAMS `max_streams` when given.
    Normal {
        max_streams: Option<u32>,
        hold: Duration,
    },
    /// Like `Normal`, but after the `n`th stream of a connection it sends GOAWAY (code 0) with
    /// that stream as the last, answers the streams up to it and ignores later ones.
    GoAwayAfter(u32),
    /// At the first stream: GOAWAY with that stream as the last and this error code, nothing
    /// answered, then the connection is closed.
    GoAwayError(u32),
    /// RST_STREAM with this code on every stream.
    Reset(u32),
    /// Like `Normal`, but its SETTINGS go first, before the client's preface arrives (a
    /// server may speak first).
    SettingsFirst,
    /// SETTINGS_INITIAL_WINDOW_SIZE 0 and never a WINDOW_UPDATE: request bodies never leave.
    ZeroWindow,
    /// At the first stream, SETTINGS frames without end, never reading.
    SettingsFlood,
    /// At the first stream, PINGs without end, never reading.
    PingFlood,
    /// At the first stream, a HEADERS frame without END_HEADERS and CONTINUATIONs without end.
    EndlessContinuation,
    /// Every response head starts with an HPACK table size update to 128 MiB and indexes
    /// 4 KiB values (a table that would grow without a bound).
    HugeTableSize,
    /// Answers the preface with an HTTP/1.1 400 and closes.
    Http11,
    /// Answers the preface with a PING instead of its SETTINGS.
    PingFirst,
    /// Announces this setting (id, value), which no client may accept.
    BadSetting(u16, u32),
    /// Answers the preface with an SSH banner.
    Garbage,
    /// Sends its SETTINGS and at once GOAWAY with this code, last stream 0, then closes.
    GoAwayFirst(u32),
    /// The first connection answers 5 streams, then GOAWAY (graceful); every later one
    /// answers the preface with a PING: the failures come after responses did.
    PingFirstAfterOne,
    /// At the first stream, GOAWAY NO_ERROR with last stream 0 (nothing processed), then
    /// closes: the same requests come back on every connection.
    RefuseAll,
    /// Opens every window to 2^31 − 1 and allows 16 MiB frames, then never reads.
    NeverReads,
    /// Every response head is 64 KiB of HPACK table size updates and its status.
    SizeUpdates,
    /// Every response declares `content-length: 10` and sends one byte.
    ShortBody,
    /// Answers every stream but the first of each connection, which it never answers.
    StallFirst,
    /// Answers every stream with 1 MiB of DATA in one write, whatever the windows.
    IgnoresWindow,
    /// A gRPC server: every stream is answered 200 `application/grpc`, a message, and
    /// trailers with `grpc-status` 0, except every `fail_every`th stream of a connection
    /// (0: none), which ends with `grpc-status: 3` and a `grpc-message`.
    Grpc { fail_every: u32 },
    /// A gRPC server that never sends trailers: a head and a message, and the stream never
    /// ends.
    GrpcNoTrailers,
    /// A gRPC server whose reply is one message of 64 MiB (as its prefix says), then OK.
    GrpcHuge,
    /// A gRPC server whose reply's prefix says 4 GiB and whose DATA never stop (until the
    /// connection is closed).
    GrpcEndless,
    /// A gRPC server that answers calls as `Grpc { fail_every: 0 }` and server reflection as
    /// the [`Reflection`] says.
    GrpcReflection(Reflection),
}

/// The reply of [`Behaviour::GrpcHuge`]: bytes.
pub const HUGE_MESSAGE: usize = 64 << 20;

/// A running HTTP/2 test server.
pub struct H2Server {
    pub server: TestServer,
    /// The most streams open at once (HEADERS read, not answered) on any one connection.
    pub max_open: Arc<AtomicU64>,
    /// Connections accepted.
    pub connections: Arc<AtomicU64>,
}

impl H2Server {
    pub fn url(&self, path: &str) -> String {
        self.server.url(path)
    }
    /// Requests answered (or, for the hostile behaviours, streams the server saw).
    pub fn requests(&self) -> u64 {
        self.server.requests()
    }
    pub fn max_open(&self) -> u64 {
        self.max_open.load(Ordering::SeqCst)
    }
    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

/// Starts a server that behaves like `b` on every connection.
pub fn serve(b: Behaviour) -> H2Server {
    let max_open = Arc::new(AtomicU64::new(0));
    let connections = Arc::new(AtomicU64::new(0));
    let (m, n) = (Arc::clone(&max_open), Arc::clone(&connections));
    let server = spawn(move |c, k| {
        n.fetch_add(1, Ordering::SeqCst);
        let mut p = Peer::new(c, Arc::clone(&m));
        let _ = p.stream().set_read_timeout(Some(LINGER));
        if early(&mut p, b, k) {
            return;
        }
        if !p.read_preface() {
            return;
        }
        run(&mut p, b);
    });
    H2Server {
        server,
        max_open,
        connections,
    }
}

fn run(p: &mut Peer, b: Behaviour) {
    match b {
        Behaviour::Normal { max_streams, hold } => {
            let settings = max_streams.map(|n| vec![(3u16, n)]).unwrap_or_default();
            p.serve(&settings, hold, None);
        }
        Behaviour::GoAwayAfter(n) => p.serve(&[], Duration::ZERO, Some(n)),
        Behaviour::GoAwayError(code) => {
            if let Some(stream) = p.start(&[]) {
                p.send(GOAWAY, 0, 0, &goaway(stream, code));
                p.close();
            }
        }
        Behaviour::Reset(code) => p.reset_all(code),
        Behaviour::ZeroWindow => p.zero_window(),
        Behaviour::SettingsFirst => p.serve(&[], Duration::ZERO, None),
        Behaviour::SettingsFlood => {
            if p.start(&[]).is_some() {
                flood(p, &frame(SETTINGS, 0, 0, &[]));
            }
        }
        Behaviour::PingFlood => {
            if p.start(&[]).is_some() {
                flood(p, &frame(PING, 0, 0, b"flooding"));
            }
        }
        Behaviour::EndlessContinuation => {
            if let Some(stream) = p.start(&[]) {
                let mut first = frame(HEADERS, 0, stream, &[STATUS_200]);
                first.extend(frame(CONTINUATION, 0, stream, &[0x40; 1024]).repeat(16));
                p.write(&first);
                flood(p, &frame(CONTINUATION, 0, stream, &[0x40; 1024]));
            }
        }
        Behaviour::HugeTableSize => p.huge_table(),
        Behaviour::PingFirstAfterOne => p.serve(&[], Duration::ZERO, Some(5)),
        Behaviour::RefuseAll => {
            if p.start(&[]).is_some() {
                p.send(GOAWAY, 0, 0, &goaway(0, 0));
                p.close();
            }
        }
        Behaviour::NeverReads => p.never_reads(),
        Behaviour::SizeUpdates => p.answer_each(size_updates),
        Behaviour::ShortBody => p.answer_each(|s| {
            let mut head = vec![STATUS_200];
            // content-length (static index 28) "10", without indexing.
            head.extend([0x0f, 0x0d, 0x02, b'1', b'0']);
            let mut out = frame(HEADERS, END_HEADERS, s, &head);
            out.extend(frame(DATA, END_STREAM, s, b"."));
            out
        }),
        Behaviour::Grpc { fail_every } => p.answer_each(|s| {
            // Client streams are odd: the connection's k-th is 2k - 1.
            let fails = fail_every > 0 && s.div_ceil(2) % fail_every == 0;
            grpc_answer(s, if fails { Some("name refused") } else { None }, true)
        }),
        Behaviour::GrpcNoTrailers => p.answer_each(|s| grpc_answer(s, None, false)),
        Behaviour::GrpcHuge => p.answer_each(grpc_huge),
        Behaviour::GrpcEndless => p.endless_reply(),
        Behaviour::GrpcReflection(r) => p.reflection(r),
        Behaviour::StallFirst => p.answer_each(|s| {
            if s == 1 {
                return Vec::new();
            }
            let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
            out.extend(frame(DATA, END_STREAM, s, b"."));
            out
        }),
        Behaviour::IgnoresWindow => p.answer_each(|s| {
            let mut out = frame(HEADERS, END_HEADERS, s, &[STATUS_200]);
            for k in 0..64 {
                let fl = if k == 63 { END_STREAM } else { 0 };
                out.extend(frame(DATA, fl, s, &[b'x'; 16_384]));
            }
            out
        }),
        Behaviour::Http11
        | Behaviour::PingFirst
        | Behaviour::BadSetting(..)
        | Behaviour::Garbage
        | Behaviour::GoAwayFirst(_) => unreachable!("handled at the preface"),
    }
}

/// The behaviours that answer the preface badly (on connection `k`): true when handled.
fn early(p: &mut Peer, b: Behaviour, k: u64) -> bool {
    let answer = match b {
        Behaviour::Http11 => {
            http11(p);
            return true;
        }
        Behaviour::PingFirstAfterOne if k == 0 => return false,
        Behaviour::PingFirst | Behaviour::PingFirstAfterOne => frame(PING, 0, 0, b"12345678"),
        Behaviour::BadSetting(id, v) => settings(&[(id, v)]),
        Behaviour::Garbage => b"SSH-2.0-OpenSSH_9.6\r\n".to_vec(),
        Behaviour::GoAwayFirst(code) => {
            let mut a = settings(&[]);
            a.extend(frame(GOAWAY, 0, 0, &goaway(0, code)));
            a
        }
        Behaviour::SettingsFirst => {
            p.write(&settings(&[]));
            return false;
        }
        _ => return false,
    };
    if p.read_preface() {
        p.write(&answer);
        p.close();
    }
    true
}

/// A response head that starts with table size updates (to 0) up to the 64 KiB a header
/// block may take, in HEADERS and CONTINUATION frames, ending the stream.
fn size_updates(stream: u32) -> Vec<u8> {
    let mut block = vec![0x20; (64 << 10) - 1];
    block.push(STATUS_200);
    let mut out = Vec::new();
    let mut chunks = block.chunks(16_384).peekable();
    let mut kind = HEADERS;
    while let Some(c) = chunks.next() {
        let end = if chunks.peek().is_none() {
            END_HEADERS
        } else {
            0
        };
        let fl = if kind == HEADERS {
            END_STREAM | end
        } else {
            end
        };
        out.extend(frame(kind, fl, stream, c));
        kind = CONTINUATION;
    }
    out
}

/// `unit` again and again (64 KiB at a time) until volley closes (30 s at most).
fn flood(p: &mut Peer, unit: &[u8]) {
    let chunk = unit.repeat((64 << 10) / unit.len().max(1));
    let deadline = Instant::now() + Duration::from_secs(30);
    while p.write(&chunk) && Instant::now() < deadline {}
}

fn http11(p: &mut Peer) {
    let mut buf = [0u8; 64];
    let _ = p.stream().read(&mut buf);
    p.write(
        b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\nConnection: close\r\n\r\nBad Request",
    );
    p.close();
}

/// A frame: length (3), type, flags, stream (4), payload.
pub fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let mut f = (payload.len() as u32).to_be_bytes()[1..].to_vec();
    f.push(kind);
    f.push(flags);
    f.extend((stream & 0x7fff_ffff).to_be_bytes());
    f.extend_from_slice(payload);
    f
}

fn settings(values: &[(u16, u32)]) -> Vec<u8> {
    let mut p = Vec::new();
    for (id, v) in values {
        p.extend(id.to_be_bytes());
        p.extend(v.to_be_bytes());
    }
    frame(SETTINGS, 0, 0, &p)
}

fn goaway(last: u32, code: u32) -> Vec<u8> {
    let mut p = last.to_be_bytes().to_vec();
    p.extend(code.to_be_bytes());
    p
}

/// An HPACK integer with an `n`-bit prefix (RFC 7541 §5.1) after the bits of `first`.
fn hpack_int(mut v: usize, n: u32, first: u8, out: &mut Vec<u8>) {
    let max = (1usize << n) - 1;
    if v < max {
        out.push(first | v as u8);
        return;
    }
    out.push(first | max as u8);
    v -= max;
    while v >= 128 {
        out.push((v % 128) as u8 | 0x80);
        v /= 128;
    }
    out.push(v as u8);
}

/// A client frame as the server reads it.
struct Frame {
    kind: u8,
    flags: u8,
    stream: u32,
    payload: Vec<u8>,
}

/// The server's side of one connection.
struct Peer {
    ctx: Ctx,
    buf: Vec<u8>,
    max_open: Arc<AtomicU64>,
    /// Streams whose HEADERS arrived and that are not answered yet.
    open: Vec<u32>,
    /// Streams whose request ended (END_STREAM), to answer.
    done: Vec<u32>,
    /// Streams seen on this connection.
    seen: u32,
}

impl Peer {
    fn new(ctx: Ctx, max_open: Arc<AtomicU64>) -> Self {
        Peer {
            ctx,
            buf: Vec::new(),
            max_open,
            open: Vec::new(),
            done: Vec::new(),
            seen: 0,
        }
    }

    fn stream(&mut self) -> &mut TcpStream {
        &mut self.ctx.stream
    }

    fn write(&mut self, bytes: &[u8]) -> bool {
        self.ctx.stream.write_all(bytes).is_ok()
    }

    fn send(&mut self, kind: u8, flags: u8, stream: u32, payload: &[u8]) -> bool {
        self.write(&frame(kind, flags, stream, payload))
    }

    /// Stops writing and waits (bounded) for volley to close its side.
    fn close(&mut self) {
        let _ = self.ctx.stream.shutdown(Shutdown::Write);
        let deadline = Instant::now() + LINGER;
        let mut tmp = [0u8; 16 << 10];
        while Instant::now() < deadline {
            match self.ctx.stream.read(&mut tmp) {
                Ok(n) if n > 0 => {}
                _ => return,
            }
        }
    }

    fn fill(&mut self) -> bool {
        let mut tmp = [0u8; 64 << 10];
        match self.ctx.stream.read(&mut tmp) {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.buf.extend_from_slice(&tmp[..n]);
                true
            }
        }
    }

    fn read_preface(&mut self) -> bool {
        while self.buf.len() < PREFACE.len() {
            if !self.fill() {
                return false;
            }
        }
        if &self.buf[..PREFACE.len()] != PREFACE {
            return false;
        }
        self.buf.drain(..PREFACE.len());
        true
    }

    /// A whole frame at the start of the buffer, taken out of it.
    fn take_frame(&mut self) -> Option<Frame> {
        if self.buf.len() < 9 {
            return None;
        }
        let len = u32::from_be_bytes([0, self.buf[0], self.buf[1], self.buf[2]]) as usize;
        if self.buf.len() < 9 + len {
            return None;
        }
        let f = Frame {
            kind: self.buf[3],
            flags: self.buf[4],
            stream: u32::from_be_bytes([self.buf[5], self.buf[6], self.buf[7], self.buf[8]])
                & 0x7fff_ffff,
            payload: self.buf[9..9 + len].to_vec(),
        };
        self.buf.drain(..9 + len);
        Some(f)
    }

    /// Handles the connection frames every behaviour answers (SETTINGS and PING acks);
    /// returns the frame when it is about a stream, `None` when it was handled.
    fn common(&mut self, f: Frame) -> Option<Frame> {
        match f.kind {
            SETTINGS if f.flags & ACK == 0 => {
                self.send(SETTINGS, ACK, 0, &[]);
                None
            }
            PING if f.flags & ACK == 0 => {
                let p = f.payload.clone();
                self.send(PING, ACK, 0, &p);
                None
            }
            HEADERS | DATA | RST_STREAM => Some(f),
            _ => None,
        }
    }

    /// Notes a stream frame: new streams, ended requests (DATA's window is given back when
    /// `replenish`).
    fn track(&mut self, f: &Frame, replenish: bool) {
        match f.kind {
            HEADERS if !self.open.contains(&f.stream) => {
                self.open.push(f.stream);
                self.seen += 1;
            }
            DATA if replenish && !f.payload.is_empty() => {
                let n = (f.payload.len() as u32).to_be_bytes();
                self.send(WINDOW_UPDATE, 0, 0, &n);
                if f.flags & END_STREAM == 0 {
                    self.send(WINDOW_UPDATE, 0, f.stream, &n);
                }
            }
            RST_STREAM => self.open.retain(|s| *s != f.stream),
            _ => {}
        }
        if matches!(f.kind, HEADERS | DATA) && f.flags & END_STREAM != 0 {
            self.done.push(f.stream);
        }
        let open = self.open.len() as u64;
        self.max_open.fetch_max(open, Ordering::SeqCst);
    }

    /// Sends the server's SETTINGS and reads until the first stream's HEADERS: its id.
    fn start(&mut self, values: &[(u16, u32)]) -> Option<u32> {
        self.write(&settings(values));
        loop {
            while let Some(f) = self.take_frame() {
                if let Some(f) = self.common(f) {
                    if f.kind == HEADERS {
                        self.ctx.requests.fetch_add(1, Ordering::SeqCst);
                        return Some(f.stream);
                    }
                }
            }
            if !self.fill() {
                return None;
            }
        }
    }

    /// The well-behaved server; with `goaway_after`, graceful GOAWAY after that many streams.
    fn serve(&mut self, values: &[(u16, u32)], hold: Duration, goaway_after: Option<u32>) {
        self.write(&settings(values));
        let mut last: Option<u32> = None;
        while self.fill() {
            while let Some(f) = self.take_frame() {
                let Some(f) = self.common(f) else { continue };
                if last.is_some_and(|l| f.stream > l) {
                    continue; // not processed: volley sends it again elsewhere
                }
                self.track(&f, true);
                if last.is_none() && goaway_after == Some(self.seen) {
                    last = Some(f.stream);
                    self.send(GOAWAY, 0, 0, &goaway(f.stream, 0));
                }
            }
            if !self.done.is_empty() && !hold.is_zero() {
                std::thread::sleep(hold);
            }
            if !self.answer() {
                return;
            }
            if last.is_some() && self.open.is_empty() {
                self.close();
                return;
            }
        }
    }

    /// Answers every ended request 200 with a one-byte body.
    fn answer(&mut self) -> bool {
        let mut out = Vec::new();
        for s in std::mem::take(&mut self.done) {
            out.extend(frame(HEADERS, END_HEADERS, s, &[STATUS_200]));
            out.extend(frame(DATA, END_STREAM, s, b"."));
            self.open.retain(|o| *o != s);
            self.ctx.requests.fetch_add(1, Ordering::SeqCst);
        }
        out.is_empty() || self.write(&out)
    }

    /// Opens the windows wide, then reads nothing more (for at most 10 s).
    fn never_reads(&mut self) {
        let mut open = settings(&[(4, 0x7fff_ffff), (5, (1 << 24) - 1)]);
        open.extend(frame(
            WINDOW_UPDATE,
            0,
            0,
            &(0x7fff_ffffu32 - 65_535).to_be_bytes(),
        ));
        self.write(&open);
        std::thread::sleep(Duration::from_secs(10));
    }

    /// Answers each stream whose request ended with `answer(stream)`'s bytes (none: never).
    fn answer_each(&mut self, answer: impl Fn(u32) -> Vec<u8>) {
        self.write(&settings(&[]));
        while self.fill() {
            while let Some(f) = self.take_frame() {
                if let Some(f) = self.common(f) {
                    self.track(&f, true);
                }
            }
            let mut out = Vec::new();
            for s in std::mem::take(&mut self.done) {
                self.ctx.requests.fetch_add(1, Ordering::SeqCst);
                out.extend(answer(s));
            }
            if !out.is_empty() && !self.write(&out) {
                return;
            }
        }
    }

    /// Answers the first request with a head, a gRPC prefix of 4 GiB and DATA frames for as
    /// long as the connection takes them.
    fn endless_reply(&mut self) {
        self.write(&settings(&[]));
        while self.fill() {
            while let Some(f) = self.take_frame() {
                if let Some(f) = self.common(f) {
                    self.track(&f, true);
                }
            }
            let Some(s) = std::mem::take(&mut self.done).into_iter().next() else {
                continue;
            };
            self.ctx.requests.fetch_add(1, Ordering::SeqCst);
            let mut head = vec![STATUS_200];
            head.extend(literal(b"content-type", b"application/grpc"));
            let mut out = frame(HEADERS, END_HEADERS, s, &head);
            out.extend(frame(DATA, 0, s, &[0, 0xff, 0xff, 0xff, 0xff]));
            let chunk = frame(DATA, 0, s, &[b'x'; 16 << 10]);
            let mut ok = self.write(&out);
            while ok {
                ok = self.write(&chunk);
            }
            return;
        }
    }

    fn reset_all(&mut self, code: u32) {
        self.write(&settings(&[]));
        while self.fill() {
            while let Some(f) = self.take_frame() {
                let Some(f) = self.common(f) else { continue };
                if f.kind == HEADERS && !self.open.contains(&f.stream) {
                    self.open.push(f.stream);
                    self.ctx.requests.fetch_add(1, Ordering::SeqCst);
                    if !self.send(RST_STREAM, 0, f.stream, &code.to_be_bytes()) {
                        return;
                    }
                }
            }
        }
    }

    fn zero_window(&mut self) {
        self.write(&settings(&[(4, 0)]));
        while self.fill() {
            while let Some(f) = self.take_frame() {
                if let Some(f) = self.common(f) {
                    self.track(&f, false);
                }
            }
            // Never answers: no request can end without its body.
        }
    }

    fn huge_table(&mut self) {
        self.write(&settings(&[]));
        while self.fill() {
            while let Some(f) = self.take_frame() {
                let Some(f) = self.common(f) else { continue };
                if f.kind != HEADERS {
                    continue;
                }
                self.ctx.requests.fetch_add(1, Ordering::SeqCst);
                let mut block = Vec::new();
                hpack_int(1 << 27, 5, 0x20, &mut block);
                block.push(STATUS_200);
                for i in 0..3 {
                    // Literal with incremental indexing, new name.
                    block.push(0x40);
                    let name = format!("x-fill-{i}");
                    hpack_int(name.len(), 7, 0, &mut block);
                    block.extend(name.as_bytes());
                    hpack_int(4096, 7, 0, &mut block);
                    block.extend(std::iter::repeat_n(b'a', 4096));
                }
                if !self.send(HEADERS, END_HEADERS | END_STREAM, f.stream, &block) {
                    return;
                }
            }
        }
    }
}

//! Fuzz target `h2_worker`: a real worker (`engine::worker::probe::Probe`) speaks HTTP/2
//! (h2c) over in-memory connections (`engine::mem`) to a server played by the input, on a
//! clock the input moves, and its promises are checked after every step: each request written
//! at most twice, what a connection queues within [`out_bound`], every request counted exactly
//! once (the list is at [`check_h2_worker`]).
//!
//! Input: 4 set-up bytes, then the server's byte stream with markers (see [`check_h2_worker`]
//! and fuzz/regressions/README.md).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use volley_engine::clock::Clock;
use volley_engine::h2::conn::{BODY_AHEAD, MAX_QUEUED_ACKS, RECEIVE_WINDOW};
use volley_engine::h2::frame::{DEFAULT_MAX_FRAME, HEADER_LEN, PREFACE};
use volley_engine::mem::MemNet;
use volley_engine::transport::Endpoint;
use volley_engine::worker::probe::{Probe, Seen};
use volley_engine::{SetupGate, Shared, STOP_NONE};
use volley_model::stats::recorder::{Counters, ErrorCounts, WorkerReport};
use volley_plan::{HttpVersion, IoBackend, Pacer, RequestTemplate};

/// The manual clock of the worker under test (run-clock ns).
static NOW: AtomicU64 = AtomicU64::new(0);
/// One input at a time per process: the clock is shared (the regression test runs tests on
/// several threads).
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// The escape byte of the server's stream: `ESC ESC` is one literal `ESC`, `ESC c` a command.
pub const ESC: u8 = 0xFF;

/// The request's header block: GET (or POST), http, /, `:authority h` (indexed and literal
/// HPACK fields, no dynamic table).
const BLOCK_GET: &[u8] = &[0x82, 0x86, 0x84, 0x41, 0x01, b'h'];
const BLOCK_POST: &[u8] = &[0x83, 0x86, 0x84, 0x41, 0x01, b'h'];

/// The bodies a set-up may ask for: none, one small frame, more than one frame, and more than
/// `BODY_AHEAD` (so a server that opens its windows wide and never reads meets the bound).
const BODIES: [usize; 4] = [0, 100, 20_000, 4 * BODY_AHEAD];

/// Simulated time after the input (in housekeeping ticks of 10 ms) before the run is
/// interrupted as a user would (Ctrl-C, then Ctrl-C again): a request that never gets
/// written (a server that never reads) holds a `-n` run until then. 3 s: over ten of the
/// longest timeouts (256 ms) or back-offs (100 ms); such inputs were the slowest to run.
const SETTLE_TICKS: u32 = 300;
const TICK_NS: u64 = 10_000_000;

/// The run an input sets up.
#[derive(Debug, Clone, Copy)]
pub struct Setup {
    /// `-c`: connections.
    pub connections: usize,
    /// `--streams`.
    pub streams: usize,
    /// Request body bytes.
    pub body: usize,
    /// `--h2-window`.
    pub window: u32,
    /// `-n`: requests.
    pub requests: u64,
    /// POST (not idempotent) instead of GET.
    pub post: bool,
    /// `--no-keepalive`.
    pub no_keepalive: bool,
    /// `--timeout`, ns.
    pub timeout_ns: u64,
    /// Bytes a new connection's socket takes before a write blocks (`usize::MAX`: any).
    pub room: usize,
}

impl Setup {
    /// The set-up of an input's first 4 bytes (see [`check_h2_worker`]).
    pub fn read(b: [u8; 4]) -> Setup {
        Setup {
            connections: usize::from(b[0] & 3) + 1,
            streams: usize::from((b[0] >> 2) & 7) + 1,
            body: BODIES[usize::from((b[0] >> 5) & 3)],
            window: if b[0] & 0x80 != 0 {
                65_535
            } else {
                RECEIVE_WINDOW
            },
            requests: u64::from(b[1] & 15) + 1,
            post: b[1] & 0x10 != 0,
            no_keepalive: b[1] & 0x20 != 0,
            timeout_ns: (u64::from(b[2] & 63) + 1) * 4_000_000,
            room: match b[3] {
                255 => usize::MAX,
                n => usize::from(n) * 64,
            },
        }
    }

    fn block(&self) -> &'static [u8] {
        if self.post {
            BLOCK_POST
        } else {
            BLOCK_GET
        }
    }
}

/// The most a connection may hold queued and not written (`H2Conn::out`), for `setup`.
/// Bodies are copied into `out` only while it holds less than `BODY_AHEAD` bytes, a frame
/// (`DEFAULT_MAX_FRAME` + its header) at a time, so bodies add at most `BODY_AHEAD` plus one
/// frame. Acknowledgements (a PING ACK is the largest, 17 bytes) are refused beyond
/// `MAX_QUEUED_ACKS` unwritten, so at most one more is queued before the connection fails.
/// The rest is per stream the client may have open (`--streams`): its HEADERS, one
/// RST_STREAM when it times out, and two WINDOW_UPDATEs (a second one only after the first
/// was written and the server used half the window again); and the connection's preface,
/// SETTINGS and two WINDOW_UPDATEs.
pub fn out_bound(setup: &Setup) -> usize {
    let frame = HEADER_LEN + DEFAULT_MAX_FRAME as usize;
    let acks = (MAX_QUEUED_ACKS + 1) * (HEADER_LEN + 8);
    let update = HEADER_LEN + 4;
    let per_stream = HEADER_LEN + setup.block().len() + (HEADER_LEN + 4) + 2 * update;
    let connection = PREFACE.len() + HEADER_LEN + 2 * 6 + 2 * update;
    BODY_AHEAD + frame + acks + setup.streams * per_stream + connection
}

/// The client's bytes on one connection as its server reads them: HEADERS frames counted.
#[derive(Debug, Default)]
struct ClientBytes {
    preface_read: usize,
    head: Vec<u8>,
    skip: usize,
    headers: u64,
}

impl ClientBytes {
    fn read(&mut self, mut b: &[u8]) {
        while !b.is_empty() {
            if self.preface_read < PREFACE.len() {
                let k = (PREFACE.len() - self.preface_read).min(b.len());
                assert_eq!(
                    b[..k],
                    PREFACE[self.preface_read..self.preface_read + k],
                    "the connection does not start with the HTTP/2 preface"
                );
                self.preface_read += k;
                b = &b[k..];
                continue;
            }
            if self.skip > 0 {
                let k = self.skip.min(b.len());
                self.skip -= k;
                b = &b[k..];
                continue;
            }
            let k = (HEADER_LEN - self.head.len()).min(b.len());
            self.head.extend_from_slice(&b[..k]);
            b = &b[k..];
            if self.head.len() == HEADER_LEN {
                let h = &self.head;
                self.skip =
                    (usize::from(h[0]) << 16) | (usize::from(h[1]) << 8) | usize::from(h[2]);
                if h[3] == 0x1 {
                    self.headers += 1;
                }
                self.head.clear();
            }
        }
    }
}

/// What a run of the `h2_worker` target came to (for tests that the inputs reach what they
/// are meant to).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Requests taken.
    pub taken: u64,
    /// Measured counters: sent.
    pub sent: u64,
    /// Measured counters: completed.
    pub completed: u64,
    /// Measured counters: errors by kind.
    pub errors: ErrorCounts,
    /// Unfinished at the end.
    pub unfinished: u64,
    /// Unsent.
    pub unsent: u64,
    /// Requests written twice.
    pub written_twice: u64,
    /// Connections the worker opened.
    pub connections: u64,
    /// The most bytes a connection held queued and not written.
    pub max_out: usize,
    /// The run ended by Ctrl-C after the input (a request the server never let go).
    pub interrupted: bool,
}

/// What the checks remember between steps.
struct Watch {
    bound: usize,
    max_out: usize,
    /// Per request index: the writes seen, as (pipe, stream).
    writes: Vec<Vec<(u64, u32)>>,
    /// Per request index: it ended (counted).
    ended: Vec<bool>,
    /// Requests held by the worker after the last step, and whether each was counted sent.
    live: HashMap<u64, bool>,
    /// Requests taken after the last step.
    taken: u64,
    /// Measured counters of the intervals already reported.
    reported: Counters,
    /// `completed + errors − errors.connect`, `unsent` and `errors.connect` after the last step.
    counted: (u64, u64, u64),
    /// Tolerate requests that end as completed (or a non-connect error) without having been
    /// written, counting them in `answered_unwritten`.
    lenient: bool,
    answered_unwritten: u64,
    /// Streams opened and not written after the last step, as (pipe, stream).
    unwritten_streams: HashSet<(u64, u32)>,
    /// Streams opened and let go of before they were written (the request answered, failed
    /// or sent elsewhere): their HEADERS may still be written, read by no request.
    released_streams: u64,
    /// The client's bytes per pipe.
    client: Vec<ClientBytes>,
    step: u64,
}

impl Watch {
    fn new(setup: Setup, lenient: bool) -> Self {
        Watch {
            bound: out_bound(&setup),
            max_out: 0,
            writes: Vec::new(),
            ended: Vec::new(),
            live: HashMap::new(),
            taken: 0,
            reported: Counters::default(),
            counted: (0, 0, 0),
            lenient,
            answered_unwritten: 0,
            unwritten_streams: HashSet::new(),
            released_streams: 0,
            client: Vec::new(),
            step: 0,
        }
    }

    fn take_reports(&mut self, reports: Vec<WorkerReport>) -> (u64, u64) {
        let mut end = (0, 0);
        for r in reports {
            match r {
                WorkerReport::Interval(iv) => self.reported.merge(&iv.counts),
                WorkerReport::Done(e) => end = (e.unfinished, e.unsent),
                WorkerReport::Warmup { .. } => panic!("a warm-up report from a run without one"),
                WorkerReport::Started { .. } => {}
            }
        }
        end
    }

    /// Counted so far: (`completed + errors − errors.connect`, `unsent`, `errors.connect`).
    fn counted(&self, current: &Counters, unsent: u64) -> (u64, u64, u64) {
        let mut all = self.reported.clone();
        all.merge(current);
        let connect = all.errors.connect;
        (
            all.completed + all.errors.total() - connect,
            unsent,
            connect,
        )
    }

    /// The checks after one step of the worker.
    fn observe(&mut self, p: &Probe, net: &MemNet) {
        self.step += 1;
        let reports = p.reports();
        self.take_reports(reports);
        let slots = p.slots();
        let mut live = HashMap::new();
        let step = self.step;
        let hold = |r: &Seen, live: &mut HashMap<u64, bool>| {
            assert!(
                live.insert(r.index, r.sent).is_none(),
                "request {} is held twice at step {step}",
                r.index
            );
        };
        for s in &slots {
            self.max_out = self.max_out.max(s.h2_out);
            assert!(
                s.h2_out <= self.bound,
                "a connection queued {} bytes not written (bound {}) at step {}",
                s.h2_out,
                self.bound,
                self.step
            );
            for r in &s.requests {
                hold(r, &mut live);
                if !r.written {
                    continue;
                }
                let pipe = s.pipe.expect("a written request is on a socket");
                let i = r.index as usize;
                if self.writes.len() <= i {
                    self.writes.resize(i + 1, Vec::new());
                }
                let w = &mut self.writes[i];
                if !w.contains(&(pipe, r.stream)) {
                    w.push((pipe, r.stream));
                }
                assert!(
                    w.len() <= 2,
                    "request {} written {} times ({w:?}) at step {}",
                    r.index,
                    w.len(),
                    self.step
                );
            }
        }
        for r in p.requeued() {
            hold(&r, &mut live);
        }
        let mut unwritten_streams = HashSet::new();
        let mut written_streams = HashSet::new();
        for s in &slots {
            for r in s.requests.iter().filter(|r| r.stream != 0) {
                let at = (s.pipe.expect("a stream is on a socket"), r.stream);
                if r.written {
                    written_streams.insert(at);
                } else {
                    unwritten_streams.insert(at);
                }
            }
        }
        self.released_streams += self
            .unwritten_streams
            .iter()
            .filter(|at| !unwritten_streams.contains(at) && !written_streams.contains(at))
            .count() as u64;
        self.unwritten_streams = unwritten_streams;
        let taken = p.taken();
        assert!(
            live.keys().all(|i| *i < taken),
            "a request not taken is held"
        );
        if self.ended.len() < taken as usize {
            self.ended.resize(taken as usize, false);
        }
        for i in live.keys() {
            assert!(
                !self.ended[*i as usize],
                "request {i} is held again after it ended (step {})",
                self.step
            );
        }
        // Requests that left the worker since the last step, and whether each was sent (one
        // taken and gone within the step was never written: a write and the end of its
        // request never come from the same step: a handler that writes ends only requests
        // of an earlier write, and a turn is observed between its writes and housekeeping).
        let gone: Vec<(u64, bool)> = self
            .live
            .iter()
            .map(|(i, sent)| (*i, *sent))
            .chain((self.taken..taken).map(|i| (i, false)))
            .filter(|(i, _)| !live.contains_key(i))
            .collect();
        for (i, _) in &gone {
            self.ended[*i as usize] = true;
        }
        let g_sent = gone.iter().filter(|(_, sent)| *sent).count() as u64;
        let g_unsent = gone.len() as u64 - g_sent;
        let counted = self.counted(p.counters(), p.unsent());
        let answered = counted.0 - self.counted.0;
        let unsent = counted.1 - self.counted.1;
        let connect = counted.2 - self.counted.2;
        // A sent request ends completed or with a non-connect error; one never written ends
        // unsent or with `connect` (which a failed connect with no request on it counts too).
        assert!(
            answered >= g_sent,
            "{g_sent} sent requests ended at step {} but {answered} were counted completed or \
             as non-connect errors",
            self.step
        );
        let unwritten = answered - g_sent;
        if unwritten > 0 && !self.lenient {
            panic!(
                "{unwritten} more requests counted completed or as non-connect errors than sent \
                 ones ended at step {}: one never written was answered (on a stream whose \
                 HEADERS were not written?), or one was counted twice",
                self.step
            );
        }
        self.answered_unwritten += unwritten;
        let g_unsent = g_unsent
            .checked_sub(unwritten)
            .expect("more answered than ended");
        assert!(
            unsent <= g_unsent && g_unsent <= unsent + connect,
            "{g_unsent} requests never written ended at step {} but {unsent} were counted \
             unsent and {connect} connect errors",
            self.step
        );
        self.counted = counted;
        self.live = live;
        self.taken = taken;
        self.read_client(net);
    }

    /// The server reads what the client wrote: a request is marked written no later than
    /// its HEADERS reach the server.
    fn read_client(&mut self, net: &MemNet) {
        let st = net.state();
        for pipe in &st.pipes {
            let mut pipe = pipe.lock().unwrap_or_else(|e| e.into_inner());
            let id = pipe.id as usize;
            if self.client.len() <= id {
                self.client.resize_with(id + 1, ClientBytes::default);
            }
            self.client[id].read(&pipe.from_client);
            pipe.from_client.clear();
        }
        let headers: u64 = self.client.iter().map(|c| c.headers).sum();
        let writes = self.writes.iter().map(Vec::len).sum::<usize>() as u64;
        // A stream the worker let go of before its HEADERS were written (a request answered
        // or failed first, or sent elsewhere) may still have them written after.
        assert!(
            headers <= writes + self.released_streams,
            "the server read {headers} HEADERS frames but the worker marked {writes} writes"
        );
    }

    /// The checks once the worker finished: what it still held is unfinished (written) or
    /// unsent (never written), and the counters keep their invariant.
    fn finished(&mut self, reports: Vec<WorkerReport>, unsent_before: u64) -> Outcome {
        let (unfinished, unsent) = self.take_reports(reports);
        let held = self.live.len() as u64;
        let sent_held = self.live.values().filter(|sent| **sent).count() as u64;
        assert_eq!(
            unfinished, sent_held,
            "{sent_held} sent requests held at the end but {unfinished} unfinished"
        );
        assert_eq!(
            unfinished + (unsent - unsent_before),
            held,
            "{held} requests held at the end, {unfinished} unfinished and {} more unsent",
            unsent - unsent_before
        );
        let c = &self.reported;
        let errors = c.errors.total();
        assert_eq!(
            c.sent + self.answered_unwritten,
            c.completed + (errors - c.errors.connect) + unfinished,
            "sent = completed + (errors − errors.connect) + unfinished broken: {c:?}, unfinished {unfinished}"
        );
        let never_sent = self.taken - c.sent - unsent - self.answered_unwritten;
        assert!(
            never_sent <= c.errors.connect,
            "{} requests taken, {} sent, {unsent} unsent: {never_sent} more than the {} connect errors",
            self.taken,
            c.sent,
            c.errors.connect
        );
        for (i, w) in self.writes.iter().enumerate() {
            assert!(w.len() <= 2, "request {i} written {} times", w.len());
        }
        Outcome {
            taken: self.taken,
            sent: c.sent,
            completed: c.completed,
            errors: c.errors,
            unfinished,
            unsent,
            written_twice: self.writes.iter().filter(|w| w.len() == 2).count() as u64,
            connections: self.client.len() as u64,
            max_out: self.max_out,
            interrupted: false,
        }
    }
}

/// The in-memory server of one input.
struct Server {
    net: MemNet,
    /// The connection the server's bytes go to.
    current: u64,
    /// Server bytes not yet handed over.
    pending: Vec<u8>,
    /// Connects are left pending (never accepted) while set.
    stall: bool,
}

impl Server {
    /// The connection bytes go to: the current one, or once the client dropped it, the
    /// first one it opened after.
    fn target(&mut self) -> Option<u64> {
        let st = self.net.state();
        let open = |id: u64| {
            st.pipes
                .get(id as usize)
                .is_some_and(|p| !p.lock().unwrap_or_else(|e| e.into_inner()).dropped)
        };
        if !open(self.current) {
            let next = (self.current + 1..st.pipes.len() as u64).find(|i| open(*i));
            if let Some(n) = next {
                self.current = n;
            }
        }
        open(self.current).then_some(self.current)
    }

    /// The next open connection after the current one (round robin).
    fn next(&mut self) {
        let st = self.net.state();
        let n = st.pipes.len() as u64;
        let open = |id: u64| {
            !st.pipes[id as usize]
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .dropped
        };
        if let Some(i) = (1..=n).map(|k| (self.current + k) % n).find(|i| open(*i)) {
            self.current = i;
        }
    }

    fn with_pipe(&self, id: u64, f: impl FnOnce(&mut volley_engine::mem::Pipe)) {
        let st = self.net.state();
        if let Some(p) = st.pipes.get(id as usize) {
            f(&mut p.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}

/// Fuzz target `h2_worker`. The worker's promises, checked after every step:
///
/// 1. each request is written at most twice (sent once, sent again at most once), whatever
///    the server does (GOAWAY with any last stream, REFUSED_STREAM, resets, connection errors,
///    closes);
/// 2. what a connection has queued and not written (`H2Conn::out`; the in-memory socket keeps
///    nothing of its own) stays within `out_bound` (`h2_worker_out_bound`);
/// 3. every request taken ends counted exactly once (completed, an error of one kind,
///    unfinished or unsent), and at the end `sent = completed + (errors − errors.connect) +
///    unfinished` holds.
///
/// Bytes 0-3 set the run up:
///
/// - byte 0: bits 0-1 `-c` 1 to 4; bits 2-4 `--streams` 1 to 8; bits 5-6 the request body
///   (none, 100 bytes, 20,000 bytes, 256 KiB); bit 7 a 65,535-byte window (else 2^31 − 1);
/// - byte 1: bits 0-3 `-n` 1 to 16; bit 4 POST (not idempotent: never sent again) instead
///   of GET; bit 5 `--no-keepalive`;
/// - byte 2: bits 0-5 `--timeout` in steps of 4 ms (4 to 256 ms);
/// - byte 3: the bytes a new connection's socket takes before a write blocks, in 64-byte
///   steps (255: any number).
///
/// The rest is what the server sends, to the current connection (the first; after the
/// client drops it, the next one it opens: bytes wait while there is none), except `0xFF` followed by a command:
///
/// - `FF FF`: a literal `0xFF`;
/// - `FF 00`-`FF 3F`: time passes, 2 to 128 ms (`(c + 1) × 2`);
/// - `FF 40`-`FF 5F`: the socket takes 2^(c − 0x40) more bytes; `FF 60`-`FF 7F`: 100 to
///   3,200 more (`(c − 0x5F) × 100`);
/// - `FF 80`: the server closes the connection; `FF 81`: it resets it;
/// - `FF 82`: bytes go to the next open connection (round robin);
/// - `FF 83`: connects are refused / accepted again (toggle);
/// - `FF 84`: connects stall (never accepted) / are accepted again (toggle);
/// - `FF 85`: the bytes so far are read now (one read per command otherwise);
/// - `FF 86`: Ctrl-C (the first drains, the second stops);
/// - other commands are ignored.
///
/// After the input the server is silent and time passes until the run ends (with Ctrl-C
/// after 3 simulated seconds, again after 6).
pub fn check_h2_worker(data: &[u8]) {
    run_h2_worker(data, false);
}

/// Runs an `h2_worker` input (see [`check_h2_worker`]), panicking when a check fails; `None`
/// for an input shorter than its set-up. `lenient` tolerates and accounts for a request never
/// written that ends completed or with a non-connect error (a server answering a stream
/// whose HEADERS were not written: the defect of `fuzz/regressions/h2_worker/crash-*`, fixed;
/// kept for a fuzz run to go on past a defect of that kind while one is open).
pub fn run_h2_worker(data: &[u8], lenient: bool) -> Option<Outcome> {
    let (head, wire) = data.split_first_chunk::<4>()?;
    keep_freed_memory();
    let setup = Setup::read(*head);
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    NOW.store(0, Ordering::Relaxed);
    let net = MemNet::new(setup.room);
    let mut probe = Probe::new(
        shared(&setup, &net),
        setup.connections,
        Pacer::closed(Some(setup.requests)),
    )
    .expect("a worker for the fuzz target");
    let mut watch = Watch::new(setup, lenient);
    let mut server = Server {
        net: net.clone(),
        current: 0,
        pending: Vec::new(),
        stall: false,
    };
    probe.start();
    let mut alive = settle(&mut probe, &mut watch, &server);
    let mut k = 0;
    while alive && k < wire.len() {
        let b = wire[k];
        k += 1;
        if b != ESC {
            server.pending.push(b);
            continue;
        }
        let Some(&c) = wire.get(k) else { break };
        k += 1;
        if c == ESC {
            server.pending.push(ESC);
            continue;
        }
        deliver(&mut probe, &mut watch, &mut server);
        match c {
            0x00..=0x3F => {
                NOW.fetch_add((u64::from(c) + 1) * 2_000_000, Ordering::Relaxed);
            }
            0x40..=0x7F => {
                let more = if c < 0x60 {
                    1usize << (c - 0x40)
                } else {
                    usize::from(c - 0x5F) * 100
                };
                if let Some(id) = server.target() {
                    server.with_pipe(id, |p| p.room = p.room.saturating_add(more));
                    probe.writable(id);
                    watch.observe(&probe, &net);
                }
            }
            0x80 | 0x81 => {
                if let Some(id) = server.target() {
                    server.with_pipe(id, |p| {
                        if c == 0x80 {
                            p.closed = true;
                        } else {
                            p.reset = true;
                        }
                    });
                    probe.readable(id, true);
                    watch.observe(&probe, &net);
                }
            }
            0x82 => server.next(),
            0x83 => {
                let mut st = net.state();
                st.refuse = !st.refuse;
            }
            0x84 => server.stall = !server.stall,
            0x86 => probe.interrupt(),
            _ => {}
        }
        alive = settle(&mut probe, &mut watch, &server);
    }
    if alive {
        deliver(&mut probe, &mut watch, &mut server);
        alive = settle(&mut probe, &mut watch, &server);
    }
    // The server goes silent; time passes until the run ends.
    let mut ticks = 0;
    while alive {
        NOW.fetch_add(TICK_NS, Ordering::Relaxed);
        ticks += 1;
        if ticks == SETTLE_TICKS || ticks == 2 * SETTLE_TICKS {
            probe.interrupt();
        }
        assert!(
            ticks <= 3 * SETTLE_TICKS,
            "the worker did not end 3 simulated seconds after a second Ctrl-C"
        );
        alive = settle(&mut probe, &mut watch, &server);
    }
    let unsent_before = probe.unsent();
    let reports = probe.finish();
    let mut outcome = watch.finished(reports, unsent_before);
    outcome.interrupted = ticks >= SETTLE_TICKS;
    Some(outcome)
}

/// Each input builds a worker, whose histograms (three of about 220 KiB, three more at each
/// interval, one per connect) are cleared as they are made. glibc returns such blocks to the
/// kernel when they are freed (unmapped, or the heap trimmed), so each input paid a page
/// fault for every page cleared: most of its time. Kept in the heap, the same memory is
/// cleared again in cache.
fn keep_freed_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        #[cfg(target_env = "gnu")]
        // SAFETY: mallopt only changes the allocator's policy for later allocations.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 16 << 20);
            libc::mallopt(libc::M_TRIM_THRESHOLD, 256 << 20);
        }
    });
}

/// Hands the server's pending bytes to the current connection and lets the worker read them
/// (they wait while the client has no connection open).
fn deliver(probe: &mut Probe, watch: &mut Watch, server: &mut Server) {
    if server.pending.is_empty() {
        return;
    }
    let Some(id) = server.target() else {
        // No connection yet: they go to the next one.
        return;
    };
    let bytes = std::mem::take(&mut server.pending);
    server.with_pipe(id, |p| p.to_client.extend(bytes));
    probe.readable(id, false);
    watch.observe(probe, &server.net);
}

/// What follows an event in the loop: connects finish (unless they stall), then a turn of
/// the loop. False when the worker is done.
fn settle(probe: &mut Probe, watch: &mut Watch, server: &Server) -> bool {
    if !server.stall {
        for s in probe.slots() {
            if let (true, Some(id)) = (s.connecting, s.pipe) {
                probe.writable(id);
                watch.observe(probe, &server.net);
            }
        }
    }
    let alive = probe.turn_start();
    watch.observe(probe, &server.net);
    if alive {
        probe.turn_end();
        watch.observe(probe, &server.net);
    }
    alive
}

/// The run `setup` describes, against `net`, on the manual clock.
fn shared(setup: &Setup, net: &MemNet) -> Shared {
    let method = if setup.post { "POST" } else { "GET" };
    let bytes: Arc<[u8]> = format!("{method} / HTTP/1.1\r\nHost: h\r\n\r\n")
        .into_bytes()
        .into();
    Shared {
        endpoint: Endpoint::Mem(net.clone()),
        tls: None,
        tunnel: None,
        quic: None,
        ws: None,
        grpc: false,
        h3_request: Default::default(),
        h3_mix: Vec::new(),
        setup_gate: SetupGate::default(),
        template: RequestTemplate {
            bytes: Arc::clone(&bytes),
            method: method.to_string(),
            idempotent: !setup.post,
            asks_close: setup.no_keepalive,
        },
        stream_bytes: bytes,
        pipeline: 1,
        keepalive: !setup.no_keepalive,
        open_loop: false,
        batch_window_ns: 0,
        wake_quantum_ns: 0,
        timeout_ns: setup.timeout_ns,
        t0_ns: 0,
        end_ns: None,
        clock: Clock::manual(&NOW),
        stop: AtomicU8::new(STOP_NONE),
        threads: 1,
        ramp: None,
        think_ns: 0,
        grow: false,
        http: HttpVersion::H2c,
        streams: setup.streams,
        h2_window: setup.window,
        h2_block: setup.block().into(),
        body: vec![b'b'; setup.body].into(),
        mix: None,
        checks: None,
        cookie_host: "127.0.0.1".into(),
        io: IoBackend::Epoll,
    }
}

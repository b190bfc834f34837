//! A worker thread: one epoll loop driving its own connections. The loop is the same for every
//! mode; the pacer says when the next request is due. Nothing here is shared with other
//! threads except the stop flag and the report channel (one message per second).

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};

use super::clock::{tighten_timer_slack, TimerFd};
use super::conn::{Conn, ConnState, InFlight, Phase};
use super::poller::Poller;
use super::transport::{self, ConnectState};
use super::{Shared, STOP_ABORT, STOP_DRAIN};
use crate::plan::pacer::share_of_indices;
use crate::plan::{Due, Pacer};
use crate::stats::recorder::{ns_to_us, ErrorKind, Recorder, Report, WorkerEnd};

const TIMER: Token = Token(usize::MAX - 1);
/// Token of the waker that interrupts `poll` on Ctrl-C.
pub const WAKER: Token = Token(usize::MAX - 2);
/// Timeouts, back-offs and the phase clock are checked this often at the least.
const HOUSEKEEPING_NS: u64 = 10_000_000;
/// Events taken per wait.
const EVENTS: usize = 1024;
/// One read buffer per thread; connections keep only an incomplete response head.
const READ_BUF_BYTES: usize = 256 * 1024;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    Warmup,
    Measured,
    /// Nothing new is sent; in-flight requests finish or time out until the deadline.
    Draining {
        deadline_ns: u64,
    },
}

/// One worker's state.
pub struct Worker {
    id: usize,
    shared: Arc<Shared>,
    poll: Poller,
    conns: Vec<Conn>,
    free: Vec<usize>,
    /// Local address connections are bound to once the default ran out of ports.
    source: Option<std::net::IpAddr>,
    /// Slots `0..active` are in use (all of them unless virtual users ramp).
    active: usize,
    /// Users thinking (`--think-time`): (ready time, slot), oldest first.
    thinking: VecDeque<(u64, usize)>,
    /// Open connections with requests queued by `dispatch` and not yet written.
    to_flush: Vec<usize>,
    /// Requests taken from the schedule that must go (again) before any new one.
    requeue: VecDeque<InFlight>,
    pacer: Pacer,
    measured_pacer: Option<Pacer>,
    stage: Stage,
    /// End of the send window (run-clock ns) once known.
    window_end_ns: u64,
    rec: Recorder,
    timer: TimerFd,
    read_buf: Vec<u8>,
    next_housekeeping_ns: u64,
    last_response_ns: u64,
    last_send_ns: u64,
    unsent: u64,
}

impl Worker {
    /// Prepares worker `id` with `connections` slots and its measured-phase pacer.
    pub fn new(
        id: usize,
        shared: Arc<Shared>,
        poll: Poll,
        connections: usize,
        pacer: Pacer,
        tx: std::sync::mpsc::Sender<Report>,
    ) -> io::Result<Self> {
        let timer = TimerFd::new()?;
        let poll = Poller::new(poll, EVENTS);
        poll.registry().register(
            &mut SourceFd(&std::os::fd::AsRawFd::as_raw_fd(&timer)),
            TIMER,
            Interest::READABLE,
        )?;
        let head = shared.template.is_head();
        let conns = (0..connections)
            .map(|_| Conn::new(head, shared.pipeline))
            .collect();
        let warm = shared.t0_ns > 0;
        let mut warm_pacer = pacer.unlimited();
        warm_pacer.restart(0);
        let mut measured = pacer;
        if !warm {
            measured.restart(0);
        }
        let rec = Recorder::new(id, tx, shared.t0_ns);
        Ok(Worker {
            id,
            poll,
            conns,
            free: Vec::with_capacity(connections),
            to_flush: Vec::new(),
            thinking: VecDeque::new(),
            active: 0,
            source: None,
            requeue: VecDeque::new(),
            pacer: if warm { warm_pacer } else { measured.clone() },
            measured_pacer: if warm { Some(measured) } else { None },
            stage: if warm { Stage::Warmup } else { Stage::Measured },
            window_end_ns: shared.end_ns.unwrap_or(u64::MAX),
            rec,
            timer,
            read_buf: vec![0; READ_BUF_BYTES],
            next_housekeeping_ns: 0,
            last_response_ns: 0,
            last_send_ns: 0,
            unsent: 0,
            shared,
        })
    }

    /// Runs until the measured window and its drain are over (or the run is stopped).
    pub fn run(mut self) {
        tighten_timer_slack();
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.rec.send(Report::Started {
            thread: self.id,
            tid,
        });
        let now = self.shared.clock.now_ns();
        if self.shared.ramp.is_some() {
            self.update_users(now);
        } else {
            self.activate(0, self.conns.len(), now);
        }
        let mut events = Vec::with_capacity(EVENTS);
        loop {
            let now = self.shared.clock.now_ns();
            if self.stage == Stage::Warmup
                && now >= self.shared.t0_ns
                && self.shared.stop.load(Ordering::Relaxed) == 0
            {
                self.begin_measured();
            }
            // Dispatch before the end-of-window check: requests due inside the window go even
            // when the worker woke a little after it (they are late, and that is recorded).
            self.dispatch(now);
            if !self.advance_stage(now) {
                break;
            }
            if now >= self.next_housekeeping_ns {
                self.housekeeping(now);
                self.next_housekeeping_ns = now + HOUSEKEEPING_NS;
            }
            let timeout = self.poll_timeout(now);
            if let Err(e) = self.poll.wait(Some(timeout), &mut events) {
                eprintln!("volley: worker {}: epoll failed: {e}", self.id);
                break;
            }
            for ev in &events {
                match ev.token {
                    TIMER => self.timer.clear(),
                    WAKER => {}
                    Token(i) => {
                        if ev.writable {
                            self.on_writable(i);
                        }
                        if ev.readable || ev.hangup {
                            self.on_readable(i, ev.hangup);
                        }
                    }
                }
            }
        }
        self.finish();
    }

    /// Moves between warm-up, measured window and drain. False when the worker is done.
    fn advance_stage(&mut self, now: u64) -> bool {
        let stop = self.shared.stop.load(Ordering::Relaxed);
        if stop >= STOP_ABORT {
            if self.stage != Stage::Warmup {
                self.window_end_ns = self.window_end_ns.min(now);
            }
            return false;
        }
        match self.stage {
            Stage::Warmup if stop >= STOP_DRAIN => return false,
            Stage::Warmup => {}
            Stage::Measured => {
                let exhausted = self.pacer.peek() == Due::Exhausted
                    && !self.requeue.iter().any(|r| !r.sent_counted);
                if stop >= STOP_DRAIN || now >= self.window_end_ns || exhausted {
                    self.window_end_ns = if exhausted && now < self.window_end_ns {
                        self.last_send_ns.max(self.shared.t0_ns)
                    } else {
                        self.window_end_ns.min(now)
                    };
                    let drain = if stop >= STOP_DRAIN {
                        self.shared.timeout_ns.min(1_000_000_000)
                    } else {
                        2 * self.shared.timeout_ns + 100_000_000
                    };
                    self.stage = Stage::Draining {
                        deadline_ns: now + drain,
                    };
                    self.drop_unwritten_requeue();
                    if !exhausted {
                        // The window closed (or Ctrl-C): what -n already took still goes,
                        // anything else not yet written stays unsent.
                        self.drop_unwritten_inflight();
                    }
                }
            }
            Stage::Draining { deadline_ns } => {
                let deadline_ns = if stop >= STOP_DRAIN {
                    deadline_ns.min(now + self.shared.timeout_ns.min(1_000_000_000))
                } else {
                    deadline_ns
                };
                self.stage = Stage::Draining { deadline_ns };
                let idle =
                    self.requeue.is_empty() && self.conns.iter().all(|c| c.inflight.is_empty());
                if idle || now >= deadline_ns {
                    return false;
                }
            }
        }
        true
    }

    fn begin_measured(&mut self) {
        if let Some(mut p) = self.measured_pacer.take() {
            p.restart(self.shared.t0_ns);
            self.pacer = p;
        }
        // Warm-up requests not yet written are dropped; written ones finish and count as warm-up.
        self.requeue.retain(|r| r.sent_counted);
        self.stage = Stage::Measured;
        let counts = std::mem::take(&mut self.rec.warmup);
        if self.shared.t0_ns > 0 {
            self.rec.send(Report::Warmup {
                thread: self.id,
                counts: Box::new(counts),
            });
        }
    }

    /// Nothing new is sent after the window: requests queued on a connection (or waiting for
    /// it to connect) whose first byte is not written are taken back and count as unsent.
    fn drop_unwritten_inflight(&mut self) {
        let len = self.shared.template.bytes.len() as u64;
        for i in 0..self.conns.len() {
            let c = &mut self.conns[i];
            let mut dropped = 0u64;
            while c
                .inflight
                .back()
                .is_some_and(|r| !r.sent_counted && r.stream_pos >= c.write_pos)
            {
                let r = c.inflight.pop_back().expect("checked above");
                c.write_end -= len;
                if r.phase == Phase::Measured {
                    dropped += 1;
                }
            }
            self.unsent += dropped;
            let c = &self.conns[i];
            if !self.shared.keepalive
                && c.inflight.is_empty()
                && matches!(c.state, ConnState::Connecting { .. })
            {
                // The connect was for a request that will not go now.
                self.retire(i);
            }
        }
    }

    /// Requests that were taken but never written cannot go after the window: they are unsent.
    fn drop_unwritten_requeue(&mut self) {
        let before = self.requeue.len();
        self.requeue.retain(|r| r.sent_counted);
        self.unsent += (before - self.requeue.len()) as u64;
    }

    /// Nanoseconds until the loop must wake: the next phase boundary or housekeeping tick, or
    /// (open loop) the next due time when a connection is free for it.
    fn poll_timeout(&mut self, now: u64) -> u64 {
        let mut wake = self.next_housekeeping_ns;
        match self.stage {
            Stage::Warmup => wake = wake.min(self.shared.t0_ns),
            Stage::Measured => wake = wake.min(self.window_end_ns),
            Stage::Draining { deadline_ns } => wake = wake.min(deadline_ns),
        }
        if let Some(&(ready, _)) = self.thinking.front() {
            wake = wake.min(ready.max(now));
        }
        if !self.is_draining() && !self.free.is_empty() && self.requeue.is_empty() {
            if let Due::At(t) = self.pacer.peek() {
                if t > now && t < wake {
                    if self.poll.is_precise() {
                        wake = t;
                    } else {
                        // epoll_wait's timeout is in milliseconds: arm the timerfd instead.
                        self.timer.arm(self.shared.clock.to_monotonic(t));
                    }
                }
            }
        }
        wake.saturating_sub(now)
    }

    fn is_draining(&self) -> bool {
        matches!(self.stage, Stage::Draining { .. })
    }

    fn phase(&self) -> Phase {
        if self.stage == Stage::Warmup {
            Phase::Warmup
        } else {
            Phase::Measured
        }
    }

    fn mark_free(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.in_free {
            c.in_free = true;
            self.free.push(i);
        }
    }

    /// Whether slot `i` can take another request now.
    fn can_take(&self, i: usize, now: u64) -> bool {
        // A closed slot takes a request too: its connect then belongs to that request, so a
        // server that refuses connections ends requests with `connect` (and `-n` terminates).
        let c = &self.conns[i];
        if i >= self.active || now < c.ready_ns {
            return false; // a retired user, or one thinking
        }
        match c.state {
            ConnState::Open => self.shared.keepalive && c.inflight.len() < self.shared.pipeline,
            ConnState::Closed => c.inflight.is_empty(),
            _ => false,
        }
    }

    /// Hands due requests to free connections: first anything waiting to be (re)sent, then
    /// the schedule. In the open loop a request waiting for a connection is late, and that counts.
    fn dispatch(&mut self, now: u64) {
        while let Some(&(ready, i)) = self.thinking.front() {
            if ready > now {
                break;
            }
            self.thinking.pop_front();
            if self.can_take(i, now) {
                self.mark_free(i);
            }
        }
        while let Some(&i) = self.free.last() {
            if !self.can_take(i, now) {
                self.free.pop();
                self.conns[i].in_free = false;
                continue;
            }
            let req = if let Some(r) = self.requeue.pop_front() {
                if self.is_draining() && !r.sent_counted {
                    // Taken before the window closed but never written: it is unsent.
                    if r.phase == Phase::Measured {
                        self.unsent += 1;
                    }
                    continue;
                }
                r
            } else {
                if self.is_draining() {
                    break;
                }
                // Nothing due at or after the end of the send window is taken.
                let start = match self.pacer.peek() {
                    Due::Now if now < self.window_end_ns => now,
                    Due::At(t) if t <= now && t < self.window_end_ns => t,
                    _ => break,
                };
                self.pacer.advance();
                InFlight::new(start, self.phase())
            };
            self.assign(i, req, now);
        }
        // One write per connection for everything just queued on it: a pipelined window
        // refilled by a batch of responses goes out in a single syscall.
        while let Some(i) = self.to_flush.pop() {
            self.conns[i].flush_pending = false;
            self.write(i, now);
        }
    }

    fn assign(&mut self, i: usize, mut req: InFlight, now: u64) {
        let len = self.shared.template.bytes.len() as u64;
        let c = &mut self.conns[i];
        req.write_ns = 0;
        // The pacer's own lag counts from when both the request was due and a connection was
        // free for it: waiting for a busy server's connection is latency, not client lag.
        req.lag_origin_ns = req.start_ns.max(c.ready_ns).min(now);
        req.stream_pos = c.write_end;
        c.write_end += len;
        c.inflight.push_back(req);
        if c.state == ConnState::Open {
            if !c.flush_pending {
                c.flush_pending = true;
                self.to_flush.push(i);
            }
        } else {
            self.connect(i, now);
        }
    }

    fn connect(&mut self, i: usize, now: u64) {
        let mut attempt = transport::connect(self.shared.addr, self.source);
        // Out of ephemeral ports towards a loopback target: move on to the next source
        // address (127.0.0.2, .3, ...), each with a port range of its own.
        while let Err(e) = &attempt {
            if !transport::is_port_exhaustion(e) {
                break;
            }
            match transport::next_loopback_source(self.shared.addr, self.source) {
                Some(ip) => {
                    self.source = Some(ip);
                    attempt = transport::connect(self.shared.addr, self.source);
                }
                None => break,
            }
        }
        match attempt {
            Ok(mut s) => {
                if let Err(e) = self.poll.registry().register(
                    &mut s,
                    Token(i),
                    Interest::READABLE | Interest::WRITABLE,
                ) {
                    self.connect_failed(i, now, e);
                    return;
                }
                let c = &mut self.conns[i];
                c.stream = Some(s);
                c.state = ConnState::Connecting { since_ns: now };
            }
            Err(e) => self.connect_failed(i, now, e),
        }
    }

    /// The server sent bytes on a fresh connection before any request: drop it, count it, and
    /// reconnect after a back-off that grows while it keeps happening.
    fn unsolicited(&mut self, i: usize, now: u64) {
        let measured = self.stage != Stage::Warmup;
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.unsolicited_streak += 1;
        c.state = ConnState::Backoff {
            until_ns: now + Conn::backoff_ns(c.unsolicited_streak),
        };
        if measured {
            self.rec.counts(now).unsolicited += 1;
        }
    }

    fn connect_failed(&mut self, i: usize, now: u64, _e: io::Error) {
        let phase = self.phase();
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.connect_failures += 1;
        c.state = ConnState::Backoff {
            until_ns: now + Conn::backoff_ns(c.connect_failures),
        };
        // Without keep-alive the connect belongs to a request: that request is lost to `connect`.
        // With keep-alive no request was on the socket yet; the failed attempt itself is counted.
        let lost: Vec<InFlight> = c.inflight.drain(..).collect();
        if lost.is_empty() {
            self.count_error(phase, ErrorKind::Connect, now);
        }
        for r in lost {
            if r.sent_counted {
                // A resend whose new connection failed: it was sent once, so it is `closed`.
                self.count_error(r.phase, ErrorKind::Closed, now);
            } else {
                self.count_error(r.phase, ErrorKind::Connect, now);
            }
        }
    }

    fn count_error(&mut self, phase: Phase, kind: ErrorKind, now: u64) {
        match phase {
            Phase::Warmup => self.rec.warmup.errors.add(kind),
            Phase::Measured => self.rec.counts(now).errors.add(kind),
        }
    }

    fn on_writable(&mut self, i: usize) {
        let now = self.shared.clock.now_ns();
        let c = &mut self.conns[i];
        if let ConnState::Connecting { .. } = c.state {
            let Some(s) = c.stream.as_ref() else { return };
            match transport::connect_state(s) {
                ConnectState::Pending => return,
                ConnectState::Failed(e) => {
                    self.connect_failed(i, now, e);
                    return;
                }
                ConnectState::Ready => {
                    c.state = ConnState::Open;
                    c.ready_ns = c.ready_ns.max(now);
                    c.connect_failures = 0;
                    c.ever_connected = true;
                    match self.phase() {
                        Phase::Warmup => self.rec.warmup.connections_opened += 1,
                        Phase::Measured => self.rec.counts(now).connections_opened += 1,
                    }
                    if self.shared.keepalive {
                        self.mark_free(i);
                    }
                }
            }
        }
        if self.conns[i].state == ConnState::Open {
            self.write(i, now);
        }
    }

    /// Writes as much of the queued request stream as the socket takes. All requests on a
    /// connection are the same bytes, so the stream is the template repeated; a buffer of
    /// `pipeline` copies lets one write carry a whole window of pipelined requests.
    fn write(&mut self, i: usize, now: u64) {
        // Fields are borrowed one by one (no Arc clone: that would be an atomic per write).
        let len = self.shared.template.bytes.len() as u64;
        let (open_loop, keepalive) = (self.shared.open_loop, self.shared.keepalive);
        loop {
            let c = &mut self.conns[i];
            if c.state != ConnState::Open || c.write_pos >= c.write_end {
                return;
            }
            let Some(s) = c.stream.as_mut() else { return };
            let off = (c.write_pos % len) as usize;
            let avail =
                ((c.write_end - c.write_pos) as usize).min(self.shared.stream_bytes.len() - off);
            match s.write(&self.shared.stream_bytes[off..off + avail]) {
                Ok(0) => {
                    self.fail(i, ErrorKind::Closed, now, true);
                    return;
                }
                Ok(n) => {
                    c.write_pos += n as u64;
                    let write_pos = c.write_pos;
                    let mut newly_sent = 0u64;
                    for r in c.inflight.iter_mut() {
                        if r.stream_pos >= write_pos {
                            break;
                        }
                        if r.write_ns != 0 {
                            continue;
                        }
                        r.write_ns = now.max(1);
                        if r.sent_counted {
                            continue; // a resend: sent once already
                        }
                        r.sent_counted = true;
                        if !open_loop && keepalive {
                            // Closed loop measures from the write (DESIGN §3): a request that
                            // had to wait for its slot to reconnect does not carry the connect.
                            r.start_ns = r.write_ns;
                        }
                        match r.phase {
                            Phase::Measured => {
                                newly_sent += 1;
                                if open_loop {
                                    self.rec.lag(ns_to_us(now.saturating_sub(r.lag_origin_ns)));
                                }
                            }
                            Phase::Warmup => self.rec.warmup.sent += 1,
                        }
                    }
                    if self.stage == Stage::Warmup {
                        self.rec.warmup.bytes_sent += n as u64;
                    } else {
                        let cnt = self.rec.counts(now);
                        cnt.sent += newly_sent;
                        cnt.bytes_sent += n as u64;
                        if newly_sent > 0 {
                            self.last_send_ns = now;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(i, error_kind(&e), now, true);
                    return;
                }
            }
        }
    }

    /// `hangup`: epoll saw the peer's FIN (or an error) with this event, so a short read does
    /// not mean the socket is drained: the end of stream must still be read.
    fn on_readable(&mut self, i: usize, hangup: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(s) = c.stream.as_mut() else { return };
            if matches!(c.state, ConnState::Connecting { .. }) {
                // A refused connect is reported as readable + error: let the writable path decide.
                self.on_writable(i);
                if !matches!(self.conns[i].state, ConnState::Open) {
                    return;
                }
                continue;
            }
            match s.read(&mut self.read_buf) {
                Ok(0) => {
                    let now = self.shared.clock.now_ns();
                    self.on_eof(i, now);
                    return;
                }
                Ok(n) => {
                    let now = self.shared.clock.now_ns();
                    // Bytes count as they arrive (like bytes sent), so a body that never ends
                    // is still seen in `bytes.received`.
                    if self.stage == Stage::Warmup {
                        self.rec.warmup.bytes_received += n as u64;
                    } else {
                        self.rec.counts(now).bytes_received += n as u64;
                    }
                    if !self.on_bytes(i, n, now) {
                        return;
                    }
                    if n < self.read_buf.len() && !hangup {
                        // A short read drained the socket (edge-triggered: no more data until the
                        // next event), saving the read() that would return EAGAIN.
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let now = self.shared.clock.now_ns();
                    self.fail(i, error_kind(&e), now, true);
                    return;
                }
            }
        }
    }

    /// Parses `n` bytes from the read buffer. False when the connection was closed meanwhile.
    fn on_bytes(&mut self, i: usize, n: usize, now: u64) -> bool {
        let mut off = 0;
        while off < n {
            let c = &mut self.conns[i];
            if c.inflight.is_empty() {
                if c.responses == 0 {
                    // A fresh connection on which the server spoke first: replacing it at once
                    // would loop as fast as the server accepts, so back off like a failed
                    // connect.
                    self.unsolicited(i, now);
                } else {
                    // Bytes nobody asked for on a used connection (e.g. a 408 after an idle
                    // timeout): it is no longer trustworthy; replace it.
                    self.close_and_replace(i, now, true);
                }
                return false;
            }
            match c.parser.feed(&self.read_buf[off..n]) {
                Ok((used, done)) => {
                    off += used;
                    if let Some(resp) = done {
                        let c = &mut self.conns[i];
                        c.responses += 1;
                        c.unsolicited_streak = 0;
                        c.ready_ns = now + self.shared.think_ns;
                        if self.shared.think_ns > 0 {
                            // Think times are all equal, so wake-ups come in completion order.
                            self.thinking.push_back((c.ready_ns, i));
                        }
                        let req = c.inflight.pop_front().expect("checked non-empty above");
                        self.complete(req, resp.status, now);
                        if !resp.keep_alive || !self.shared.keepalive {
                            self.close_and_replace(i, now, !self.shared.template.asks_close);
                            return false;
                        }
                        if i >= self.active && self.conns[i].inflight.is_empty() {
                            self.retire(i);
                            return false;
                        }
                        // A pipelined window is refilled once half of it is free, so refills
                        // go out several requests per write instead of one write per response.
                        if self.conns[i].inflight.len() <= self.shared.pipeline / 2 {
                            self.mark_free(i);
                        }
                    }
                }
                Err(_) => {
                    self.fail(i, ErrorKind::Protocol, now, false);
                    return false;
                }
            }
        }
        true
    }

    fn complete(&mut self, req: InFlight, status: u16, now: u64) {
        match req.phase {
            Phase::Warmup => {
                self.rec.warmup.completed += 1;
            }
            Phase::Measured => {
                let latency = ns_to_us(now.saturating_sub(req.start_ns));
                let write = if req.write_ns == 0 { now } else { req.write_ns };
                let service = ns_to_us(now.saturating_sub(write));
                self.rec.response(now, latency, service, status);
                self.last_response_ns = now;
            }
        }
    }

    fn on_eof(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        match c.parser.eof() {
            Ok(Some(resp)) => {
                // A close-delimited body ends here.
                if let Some(req) = c.inflight.pop_front() {
                    c.responses += 1;
                    c.ready_ns = now + self.shared.think_ns;
                    if self.shared.think_ns > 0 {
                        self.thinking.push_back((c.ready_ns, i));
                    }
                    self.complete(req, resp.status, now);
                }
                self.close_and_replace(i, now, !self.shared.template.asks_close);
            }
            Ok(None) => self.fail(i, ErrorKind::Closed, now, true),
            Err(_) => self.fail(i, ErrorKind::Closed, now, true),
        }
    }

    /// The connection failed with requests on it. A silent close of a reused connection before
    /// any byte of the next response lets idempotent requests go once more on a new connection
    /// (latency still from their original start); everything else ends with `kind`.
    fn fail(&mut self, i: usize, kind: ErrorKind, now: u64, by_server: bool) {
        let idempotent = self.shared.template.idempotent;
        let c = &mut self.conns[i];
        let silent = by_server
            && c.responses > 0
            && c.parser.is_idle()
            && matches!(kind, ErrorKind::Closed | ErrorKind::Reset);
        let reqs: Vec<InFlight> = c.inflight.drain(..).collect();
        self.retry_or_end(reqs, silent && idempotent, kind, now);
        self.close_and_replace(i, now, by_server);
    }

    /// Requests taken off a connection that is going away: those never written go again
    /// first (in order); written ones go again once if `may_resend`, otherwise end with `kind`.
    fn retry_or_end(&mut self, reqs: Vec<InFlight>, may_resend: bool, kind: ErrorKind, now: u64) {
        let mut back = Vec::new();
        for mut r in reqs {
            if !r.sent_counted {
                back.push(r);
            } else if may_resend && !r.resent {
                r.resent = true;
                back.push(r);
            } else {
                self.count_error(r.phase, kind, now);
            }
        }
        for r in back.into_iter().rev() {
            self.requeue.push_front(r);
        }
    }

    /// Closes the socket and, with keep-alive, opens a new one at once.
    fn close_and_replace(&mut self, i: usize, now: u64, by_server: bool) {
        let phase = self.phase();
        let c = &mut self.conns[i];
        let had_socket = c.stream.is_some();
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        // Requests still queued behind a response that closed the connection go again.
        let rest: Vec<InFlight> = c.inflight.drain(..).collect();
        c.reset_socket();
        c.state = ConnState::Closed;
        c.ready_ns = c.ready_ns.max(now);
        if had_socket && by_server && self.shared.keepalive {
            match phase {
                Phase::Warmup => self.rec.warmup.closed_by_server += 1,
                Phase::Measured => self.rec.counts(now).closed_by_server += 1,
            }
        }
        let idempotent = self.shared.template.idempotent;
        self.retry_or_end(rest, idempotent, ErrorKind::Closed, now);
        if i >= self.active {
            return; // a retired user's slot stays closed
        }
        if self.shared.keepalive {
            if !self.is_draining() || !self.requeue.is_empty() {
                self.connect(i, now);
            }
        } else {
            self.mark_free(i);
        }
    }

    /// Brings slots `from..to` into use: with keep-alive they connect at once.
    fn activate(&mut self, from: usize, to: usize, now: u64) {
        self.active = self.active.max(to);
        for i in from..to {
            if self.shared.keepalive && self.conns[i].state == ConnState::Closed {
                self.connect(i, now);
            } else {
                self.mark_free(i);
            }
        }
    }

    /// A user leaves (ramp down): its connection closes once it has nothing in flight.
    fn retire(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.state = ConnState::Closed;
    }

    /// Follows the ramp: this thread's share of the users active now.
    fn update_users(&mut self, now: u64) {
        let Some(ramp) = self.shared.ramp.as_ref() else {
            return;
        };
        let users = ramp.users_at(now.saturating_sub(self.shared.t0_ns));
        let target = (share_of_indices(users, self.id as u64, self.shared.threads as u64) as usize)
            .min(self.conns.len());
        if target > self.active {
            self.activate(self.active, target, now);
        } else if target < self.active {
            let old = self.active;
            self.active = target;
            for i in target..old {
                if self.conns[i].inflight.is_empty() {
                    self.retire(i);
                }
            }
        }
        self.rec.users = target as u64;
    }

    /// Timeouts, connect deadlines and back-offs; also rolls the per-second interval.
    fn housekeeping(&mut self, now: u64) {
        if self.shared.ramp.is_some() && !self.is_draining() {
            self.update_users(now);
        }
        if self.stage != Stage::Warmup {
            self.rec.tick(now);
        }
        let timeout = self.shared.timeout_ns;
        for i in 0..self.conns.len() {
            let c = &self.conns[i];
            match c.state {
                ConnState::Connecting { since_ns } if now.saturating_sub(since_ns) > timeout => {
                    self.connect_failed(i, now, io::Error::from(io::ErrorKind::TimedOut));
                }
                ConnState::Backoff { until_ns } if now >= until_ns => {
                    // After failed connects the next attempt waits for a request to carry.
                    self.conns[i].state = ConnState::Closed;
                    self.conns[i].ready_ns = now;
                    self.mark_free(i);
                }
                ConnState::Open => {
                    if let Some(front) = c.inflight.front() {
                        if front.write_ns > 0 && now.saturating_sub(front.write_ns) > timeout {
                            self.fail(i, ErrorKind::Timeout, now, false);
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn finish(mut self) {
        let now = self.shared.clock.now_ns();
        let mut unfinished = 0u64;
        for c in &self.conns {
            unfinished += c
                .inflight
                .iter()
                .filter(|r| r.phase == Phase::Measured && r.sent_counted)
                .count() as u64;
            self.unsent += c
                .inflight
                .iter()
                .filter(|r| r.phase == Phase::Measured && !r.sent_counted)
                .count() as u64;
        }
        for r in &self.requeue {
            if r.phase == Phase::Measured {
                if r.sent_counted {
                    unfinished += 1;
                } else {
                    self.unsent += 1;
                }
            }
        }
        if self.stage != Stage::Warmup && self.pacer.is_open() {
            let end = self.window_end_ns.min(now);
            self.unsent += self.pacer.count_due_before(end);
        }
        if self.stage == Stage::Warmup {
            let counts = std::mem::take(&mut self.rec.warmup);
            self.rec.send(Report::Warmup {
                thread: self.id,
                counts: Box::new(counts),
            });
        } else {
            self.rec.flush();
        }
        let never_connected = self
            .conns
            .iter()
            .filter(|c| !c.ever_connected && c.connect_failures > 0)
            .count() as u64;
        self.rec.send(Report::Done(Box::new(WorkerEnd {
            thread: self.id,
            unfinished,
            unsent: self.unsent,
            last_response_ns: self.last_response_ns,
            last_send_ns: self.last_send_ns,
            never_connected,
        })));
    }
}

/// How a failed read or write ends the requests on the connection.
fn error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
        _ => ErrorKind::Closed,
    }
}

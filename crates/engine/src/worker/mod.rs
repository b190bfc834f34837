//! A worker thread: one epoll loop driving its own connections. The loop is the same for every
//! mode; the pacer says when the next request is due. Nothing here is shared with other
//! threads except the stop flag and the report channel (one message per second).

mod failure;
mod h2;
mod h3;
mod journey;
#[doc(hidden)]
pub mod probe;
mod response;
mod ring;
mod schedule;
mod socket;
mod wake;
mod ws;
mod ws_h2;

pub(crate) use wake::DEFAULT_QUANTUM_NS as DEFAULT_WAKE_QUANTUM_NS;

use std::collections::VecDeque;
use std::io;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use mio::unix::SourceFd;
use mio::{Interest, Poll, Token};

use super::check;
use super::clock::{tighten_timer_slack, TimerFd};
use super::conn::{Conn, ConnState, InFlight, Phase, NO_ENTRY};
use super::h2::conn::Event;
use super::journey::users::{JourneyCounts, Users, NO_USER};
use super::poller::{Event as PollEvent, Poller};
use super::stream::{Handshake, Socket, Stream};
use super::transport::{self, ConnectState, Endpoint};
use super::{Shared, STOP_ABORT, STOP_DRAIN};
use journey::journey_users;
use volley_model::stats::histogram::{new_hist, Hist};
use volley_model::stats::recorder::{
    ns_to_us, ErrorKind, ProtocolSample, Recorder, WorkerEnd, WorkerReport,
};
use volley_model::stats::transport::TransportStats;
use volley_plan::pacer::share_of_indices;
use volley_plan::{Due, HttpVersion, IoBackend, Pacer};

const TIMER: Token = Token(usize::MAX - 1);
/// Token of the waker that interrupts `poll` on Ctrl-C.
pub(crate) const WAKER: Token = Token(usize::MAX - 2);
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
pub(crate) struct Worker {
    id: usize,
    shared: Arc<Shared>,
    poll: Poller,
    conns: Vec<Conn>,
    free: Vec<usize>,
    /// Local address connections are bound to once the default ran out of ports.
    source: Option<std::net::IpAddr>,
    /// Slots `0..active` are in use (all of them unless virtual users ramp, or the open loop
    /// opens connections on demand).
    active: usize,
    /// Slots in use from the start.
    initial: usize,
    /// The most slots in use at once.
    max_active: usize,
    /// Users thinking (`--think-time`): (ready time, slot), oldest first.
    thinking: VecDeque<(u64, usize)>,
    /// Open connections with requests queued by `dispatch` and not yet written.
    to_flush: Vec<usize>,
    /// Connections whose last read stopped at its budget, to read again after the next wait.
    unread: Vec<usize>,
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
    /// Open loop: unsent requests at their lower bound (window end − due time), in µs.
    unsent_latency: Option<Hist>,
    /// The first response that could not be parsed (for the warning).
    protocol_sample: Option<ProtocolSample>,
    /// The first bytes a server sent before any request (for the warning).
    unsolicited_sample: Option<Vec<u8>>,
    /// Connect and handshake times.
    transport: TransportStats,
    /// Why the first failed TLS handshake failed (for the warning).
    connect_sample: Option<String>,
    /// HTTP/2 events of the read being handled (kept to reuse its allocation).
    h2_events: Vec<Event>,
    /// Requests this thread has taken from its schedule (their indexes follow from it).
    taken: u64,
    /// Room for a templated body while its length is counted.
    scratch: Vec<u8>,
    /// A WebSocket message's payload rendered from its request (`--requests-file`), while it
    /// is framed into `scratch`.
    ws_body: Vec<u8>,
    /// io_uring was chosen but could not be set up on this thread (why).
    io_fallback: Option<String>,
    /// A journey's users (`None`: the workload keeps no state per user).
    users: Option<Users>,
    /// `--http3`: the QUIC endpoint that routes datagrams to this thread's connections.
    quic_ep: Option<quinn_proto::Endpoint>,
    /// No QUIC timer of this thread's connections is due before this (`worker/h3.rs`).
    h3_next: Option<std::time::Instant>,
    /// Open loop: users' next steps, in order of when each is due (after its think time).
    follow: VecDeque<InFlight>,
    /// A journey's mix picks so far: each worker's picks hold the weights.
    mix_turns: u64,
    /// Open loop: how soon the next timed wake-up for due requests may come.
    wake: wake::WakeQuantum,
    /// The `Cookie` value of the request being rendered, and its path (for the jar's match).
    cookie_buf: Vec<u8>,
    path_buf: Vec<u8>,
    /// What the journey's captures and cookies met (for the summary).
    journey: JourneyCounts,
    /// `ws://`, `wss://`: the upgrades' keys and the frames' masks.
    ws_rng: crate::ws::MaskRng,
}

impl Worker {
    /// Prepares worker `id` with `connections` of its `slots` in use from the start and its
    /// measured-phase pacer.
    pub fn new(
        id: usize,
        shared: Arc<Shared>,
        poll: Poll,
        (connections, slots): (usize, usize),
        pacer: Pacer,
        tx: std::sync::mpsc::Sender<WorkerReport>,
    ) -> io::Result<Self> {
        let timer = TimerFd::new()?;
        let poll = Poller::new(poll, EVENTS);
        poll.registry().register(
            &mut SourceFd(&std::os::fd::AsRawFd::as_raw_fd(&timer)),
            TIMER,
            Interest::READABLE,
        )?;
        let head = shared.template.is_head();
        let conns = (0..slots.max(connections))
            .map(|_| Conn::new(head, shared.pipeline))
            .collect();
        let warm = shared.t0_ns > 0;
        let mut warm_pacer = pacer.warmup();
        warm_pacer.restart(0);
        let mut measured = pacer;
        if !warm {
            measured.restart(0);
        }
        let rec = Recorder::new(id, tx, shared.t0_ns).window_ends_at(shared.end_ns);
        Ok(Worker {
            id,
            poll,
            conns,
            free: Vec::with_capacity(connections),
            to_flush: Vec::new(),
            unread: Vec::new(),
            thinking: VecDeque::new(),
            active: 0,
            initial: connections,
            max_active: 0,
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
            unsent_latency: None,
            protocol_sample: None,
            unsolicited_sample: None,
            transport: TransportStats::default(),
            connect_sample: None,
            h2_events: Vec::new(),
            taken: 0,
            scratch: Vec::new(),
            ws_body: Vec::new(),
            io_fallback: None,
            users: journey_users(&shared, slots.max(connections)),
            follow: VecDeque::new(),
            quic_ep: shared.quic.as_ref().map(|_| crate::quic::endpoint()),
            h3_next: None,
            mix_turns: 0,
            wake: wake::WakeQuantum::new(if shared.open_loop {
                shared.wake_quantum_ns
            } else {
                0
            }),
            cookie_buf: Vec::new(),
            path_buf: Vec::new(),
            journey: JourneyCounts::default(),
            ws_rng: crate::ws::MaskRng::new(ws::seed(id)),
            shared,
        })
    }

    /// Runs until the measured window and its drain are over (or the run is stopped).
    pub fn run(mut self) {
        tighten_timer_slack();
        if self.shared.io == IoBackend::Uring {
            if let Err(e) = self.poll.use_ring(self.conns.len()) {
                self.io_fallback = Some(e.0);
            }
        }
        // SAFETY: gettid has no preconditions.
        let tid = unsafe { libc::gettid() };
        self.rec.send(WorkerReport::Started {
            thread: self.id,
            tid,
        });
        let now = self.shared.clock.now_ns();
        if self.shared.ramp.is_some() {
            self.update_users(now);
        } else {
            self.activate(0, self.initial, now);
        }
        let mut events = Vec::with_capacity(EVENTS);
        loop {
            let now = self.shared.clock.now_ns();
            self.wake.woke(now);
            if !self.turn(now) {
                break;
            }
            let mut timeout = self.poll_timeout(now);
            if !self.unread.is_empty() {
                timeout = 0;
            }
            if self.poll.is_ring() {
                self.flush_ring();
            }
            if let Err(e) = self.poll.wait(Some(timeout), &mut events) {
                stderrln!("volley: worker {}: waiting for events failed: {e}", self.id);
                break;
            }
            for ev in &events {
                match *ev {
                    PollEvent::Ring(r) => self.on_ring(r),
                    PollEvent::Ready(ev) => match ev.token {
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
                    },
                }
            }
            self.read_again();
        }
        self.finish();
    }

    /// What the loop does at each wake-up before it waits: the phase, due requests and the
    /// stage ([`Worker::turn_start`]), then housekeeping ([`Worker::turn_end`]). False when
    /// the worker is done.
    fn turn(&mut self, now: u64) -> bool {
        if !self.turn_start(now) {
            return false;
        }
        self.turn_end(now);
        true
    }

    /// The first half of a turn: the phase, due requests (written), the stage. False when
    /// the worker is done.
    fn turn_start(&mut self, now: u64) -> bool {
        if self.stage == Stage::Warmup
            && now >= self.shared.t0_ns
            && self.shared.stop.load(Ordering::Relaxed) == 0
        {
            self.begin_measured();
        }
        // Dispatch before the end-of-window check: requests due inside the window go even
        // when the worker woke a little after it (they are late, and that is recorded).
        self.dispatch(now);
        self.advance_stage(now)
    }

    /// The second half of a turn: housekeeping, when it is due.
    fn turn_end(&mut self, now: u64) {
        self.h3_timers(now);
        if now >= self.next_housekeeping_ns {
            self.housekeeping(now);
            self.next_housekeeping_ns = now + HOUSEKEEPING_NS;
        }
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
        // Warm-up requests not yet written are dropped (their users with them: a journey's
        // user is free again); written ones finish and count as warm-up.
        let dropped: Vec<InFlight> = self
            .requeue
            .iter()
            .filter(|r| !r.sent_counted)
            .copied()
            .collect();
        self.requeue.retain(|r| r.sent_counted);
        for r in &dropped {
            self.journey_drop(r);
        }
        self.stage = Stage::Measured;
        let counts = std::mem::take(&mut self.rec.warmup);
        if self.shared.t0_ns > 0 {
            self.rec.send(WorkerReport::Warmup {
                thread: self.id,
                counts: Box::new(counts),
            });
        }
    }

    /// Nothing new is sent after the window: requests queued on a connection (or waiting for
    /// it to connect) whose first byte is not written are taken back and count as unsent.
    fn drop_unwritten_inflight(&mut self) {
        for i in 0..self.conns.len() {
            loop {
                let c = &mut self.conns[i];
                if !c
                    .inflight
                    .back()
                    .is_some_and(|r| !r.sent_counted && r.stream_pos >= c.write_pos)
                {
                    break;
                }
                if c.multiplexed() {
                    // HTTP/2 and HTTP/3: only requests still waiting for a stream can be
                    // taken back.
                    if c.h2_queued == 0 {
                        break;
                    }
                    c.h2_queued -= 1;
                } else {
                    let pos = c.inflight.back().expect("checked above").stream_pos;
                    c.unqueue_last(pos);
                }
                let r = c.inflight.pop_back().expect("checked above");
                if r.phase == Phase::Measured {
                    self.unsent_request(r.start_ns);
                }
            }
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
        let mut requeue = std::mem::take(&mut self.requeue);
        requeue.retain(|r| {
            if !r.sent_counted && r.phase == Phase::Measured {
                self.unsent_request(r.start_ns);
            }
            r.sent_counted
        });
        self.requeue = requeue;
    }

    /// A measured request that was due but will never be written. In the open loop it waited
    /// at least until the end of the send window: leaving it out of the corrected latencies
    /// would omit the worst of them, so it is recorded there at that lower bound.
    fn unsent_request(&mut self, due_ns: u64) {
        self.unsent += 1;
        if self.pacer.is_open() {
            let lower_bound = self.window_end_ns.saturating_sub(due_ns);
            volley_model::stats::histogram::record(
                self.unsent_latency.get_or_insert_with(new_hist),
                ns_to_us(lower_bound),
            );
        }
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
        if let Some(r) = self.follow.front() {
            wake = wake.min(r.start_ns.max(now));
        }
        // With --max-connections a due request can also open a connection.
        let can_send =
            !self.free.is_empty() || (self.shared.grow && self.active < self.conns.len());
        if !self.is_draining() && can_send && self.requeue.is_empty() {
            // With a batch window the wake-up is for the whole batch: its last due time.
            if let Some(t) = self.pacer.batch_end(self.shared.batch_window_ns) {
                let t = self.wake.wake_for(t);
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
        if let Some(ns) = self.h3_timeout_ns() {
            wake = wake.min(now.saturating_add(ns));
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

    /// Timeouts, connect deadlines and back-offs; also rolls the per-second interval.
    fn housekeeping(&mut self, now: u64) {
        self.wake.review(now);
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
                // A stalled TLS handshake times out here too, as a connect.
                ConnState::Connecting { since_ns, .. }
                    if now.saturating_sub(since_ns) > timeout =>
                {
                    self.connect_failed(i, now, io::Error::from(io::ErrorKind::TimedOut));
                }
                ConnState::Backoff { until_ns } if now >= until_ns => {
                    // After failed connects the next attempt waits for a request to carry.
                    self.conns[i].state = ConnState::Closed;
                    self.conns[i].ready_ns = now;
                    self.mark_free(i);
                }
                ConnState::Open
                    if c.h2.as_ref().is_some_and(|h| !h.settings_seen())
                        && now.saturating_sub(c.opened_ns) > timeout =>
                {
                    // An HTTP/2 connection whose server never sent its SETTINGS never became
                    // usable: a failed connect, like a stalled handshake.
                    self.connect_failed(i, now, io::Error::from(io::ErrorKind::TimedOut));
                }
                ConnState::Open if c.multiplexed() => self.h2_timeouts(i, now),
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
        self.window_end_ns = self.window_end_ns.min(now);
        for i in 0..self.conns.len() {
            self.count_quic(i);
        }
        let mut unfinished = 0u64;
        let mut never_written = Vec::new();
        let mut unfinished_by: Vec<u16> = Vec::new();
        let conns = self.conns.iter().flat_map(|c| c.inflight.iter());
        for r in conns.chain(self.requeue.iter()) {
            if r.phase == Phase::Measured {
                if r.sent_counted {
                    unfinished += 1;
                    unfinished_by.extend(self.endpoint_of(r));
                } else {
                    never_written.push(r.start_ns);
                }
            }
        }
        for e in unfinished_by {
            self.rec.endpoints.get(e).unfinished += 1;
        }
        for due in never_written {
            self.unsent_request(due);
        }
        if self.stage != Stage::Warmup && self.pacer.is_open() {
            let end = self.window_end_ns;
            while let Some(due) = self.pacer.take_due_before(end) {
                self.unsent_request(due);
                if self.users.is_some() {
                    // A journey's arrival that never started.
                    self.journey.arrivals_unsent += 1;
                }
            }
        }
        // Warm-up requests that ended after t0 were counted after the report sent at t0:
        // they go now, added to it, so the warm-up counts every request it wrote.
        if self.stage == Stage::Warmup || self.shared.t0_ns > 0 {
            let counts = std::mem::take(&mut self.rec.warmup);
            self.rec.send(WorkerReport::Warmup {
                thread: self.id,
                counts: Box::new(counts),
            });
        }
        if self.stage != Stage::Warmup {
            self.rec.flush();
        }
        let never_connected = self
            .conns
            .iter()
            .filter(|c| !c.ever_connected && c.connect_failures > 0)
            .count() as u64;
        let slowest = self.rec.take_slowest();
        let endpoints = std::mem::take(&mut self.rec.endpoints);
        self.rec.send(WorkerReport::Done(Box::new(WorkerEnd {
            thread: self.id,
            io_fallback: self.io_fallback.take(),
            unfinished,
            unsent: self.unsent,
            unsent_latency: self.unsent_latency.take(),
            last_response_ns: self.last_response_ns,
            last_send_ns: self.last_send_ns,
            never_connected,
            max_active: self.max_active as u64,
            protocol_sample: self.protocol_sample.take(),
            unsolicited_sample: self.unsolicited_sample.take(),
            connect_sample: self.connect_sample.take(),
            slowest,
            transport: std::mem::take(&mut self.transport),
            endpoints,
            journey: self.journey,
        })));
        self.close_websockets();
        // Sockets go before the ring they may still have operations in.
        self.conns.clear();
    }

    /// The named request (endpoint) of `r`, in a workload.
    #[inline]
    pub(super) fn endpoint_of(&self, r: &InFlight) -> Option<u16> {
        if r.entry == NO_ENTRY {
            return None;
        }
        self.shared.mix.as_deref()?.requests[r.entry as usize].endpoint
    }
}

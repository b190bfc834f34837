//! A worker driven step by step from outside its loop, and what it holds between steps: the
//! `h2_worker` fuzz target plays the server over in-memory connections
//! ([`crate::mem`]) with a manual clock, calls the same handlers the loop calls on
//! events, and checks the worker's promises after every step. Not for runs.

use std::sync::mpsc;

use super::*;
use crate::STOP_NONE;
use volley_model::stats::recorder::Counters;

/// A request as the probe sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// Its index in the run (unique per request taken).
    pub index: u64,
    /// Its first byte was written on its current connection.
    pub written: bool,
    /// Its HTTP/2 stream (0: none yet).
    pub stream: u32,
    /// Counted as sent.
    pub sent: bool,
    /// Marked as resent once.
    pub resent: bool,
}

impl Seen {
    fn of(r: &InFlight) -> Self {
        Seen {
            index: r.index,
            written: r.write_ns != 0,
            stream: r.stream,
            sent: r.sent_counted,
            resent: r.resent,
        }
    }
}

/// A connection slot as the probe sees it.
#[derive(Debug, Clone, Default)]
pub struct Slot {
    /// The in-memory pipe of its socket, when it has one.
    pub pipe: Option<u64>,
    /// Its socket is still connecting.
    pub connecting: bool,
    /// Bytes its HTTP/2 session has queued and not written (`H2Conn::out`).
    pub h2_out: usize,
    /// Its requests, oldest first.
    pub requests: Vec<Seen>,
}

/// A worker (thread 0 of 1) with its report channel.
pub struct Probe {
    w: Worker,
    rx: mpsc::Receiver<WorkerReport>,
}

impl Probe {
    /// A worker for `shared` with `connections` slots and `pacer`'s schedule, not started.
    pub fn new(shared: Shared, connections: usize, pacer: Pacer) -> io::Result<Probe> {
        let (tx, rx) = mpsc::channel();
        let w = Worker::new(
            0,
            Arc::new(shared),
            Poll::new()?,
            (connections, connections),
            pacer,
            tx,
        )?;
        Ok(Probe { w, rx })
    }

    /// What `run` does before its loop: the connections come into use.
    pub fn start(&mut self) {
        let now = self.w.shared.clock.now_ns();
        let initial = self.w.initial;
        self.w.activate(0, initial, now);
    }

    /// The first half of a turn of the loop (due requests written, the stage). False when
    /// the worker is done (then only [`Probe::finish`] is left).
    pub fn turn_start(&mut self) -> bool {
        let now = self.w.shared.clock.now_ns();
        self.w.turn_start(now)
    }

    /// The second half of that turn (housekeeping: timeouts, back-offs), after which the
    /// loop would wait. Apart, a request written in the first half and timed out in the
    /// second (a connection silent for longer than the timeout) is seen written first.
    pub fn turn_end(&mut self) {
        let now = self.w.shared.clock.now_ns();
        self.w.turn_end(now);
    }

    /// The slot whose socket is `pipe`.
    fn slot_of(&self, pipe: u64) -> Option<usize> {
        self.w.conns.iter().position(
            |c| matches!(&c.stream, Some(Stream::Plain(Socket::Mem(m))) if m.id() == pipe),
        )
    }

    /// epoll said `pipe` is readable (`hangup`: with the peer's close or an error).
    pub fn readable(&mut self, pipe: u64, hangup: bool) {
        if let Some(i) = self.slot_of(pipe) {
            self.w.on_readable(i, hangup);
        }
    }

    /// epoll said `pipe` is writable (a connect finished, or the socket took bytes).
    pub fn writable(&mut self, pipe: u64) {
        if let Some(i) = self.slot_of(pipe) {
            self.w.on_writable(i);
        }
    }

    /// Ctrl-C: the first drains, the second stops (what the engine tells its workers).
    pub fn interrupt(&mut self) {
        let stop = &self.w.shared.stop;
        let next = if stop.load(Ordering::Relaxed) == STOP_NONE {
            STOP_DRAIN
        } else {
            STOP_ABORT
        };
        stop.store(next, Ordering::Relaxed);
    }

    /// The slots, in order.
    pub fn slots(&self) -> Vec<Slot> {
        self.w
            .conns
            .iter()
            .map(|c| Slot {
                pipe: match &c.stream {
                    Some(Stream::Plain(Socket::Mem(m))) => Some(m.id()),
                    _ => None,
                },
                connecting: matches!(c.state, ConnState::Connecting { .. }),
                h2_out: c.h2.as_ref().map_or(0, |h| h.out.len()),
                requests: c.inflight.iter().map(Seen::of).collect(),
            })
            .collect()
    }

    /// Requests waiting to go (again) before any new one.
    pub fn requeued(&self) -> Vec<Seen> {
        self.w.requeue.iter().map(Seen::of).collect()
    }

    /// Requests taken from the schedule so far.
    pub fn taken(&self) -> u64 {
        self.w.taken
    }

    /// Requests counted as unsent so far.
    pub fn unsent(&self) -> u64 {
        self.w.unsent
    }

    /// The current interval's measured counters (earlier ones are in [`Probe::reports`]).
    pub fn counters(&self) -> &Counters {
        self.w.rec.current()
    }

    /// The reports sent so far.
    pub fn reports(&self) -> Vec<WorkerReport> {
        self.rx.try_iter().collect()
    }

    /// What `run` does after its loop; the reports sent since the last [`Probe::reports`].
    pub fn finish(self) -> Vec<WorkerReport> {
        self.w.finish();
        self.rx.try_iter().collect()
    }
}

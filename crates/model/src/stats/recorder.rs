//! Per-thread recorder. A worker records into its own interval histograms and counters with
//! no locks or atomics; at every second boundary of the measured window it sends the interval
//! to the aggregator and starts a fresh one. Warm-up requests only touch warm-up counters.

use std::sync::mpsc::Sender;

use super::histogram::{new_hist, record, Hist};
use super::slowest::{SlowRequest, Slowest};

/// Error kinds (docs/contract.md, "Counters").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The TCP connection could not be opened (the request was never sent).
    Connect,
    /// No complete response within `--timeout` of the write.
    Timeout,
    /// The connection was reset.
    Reset,
    /// The response could not be parsed.
    Protocol,
    /// The connection closed before a complete response.
    Closed,
}

/// Counts per error kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ErrorCounts {
    /// Connections that could not be opened.
    pub connect: u64,
    /// Requests without a response within the timeout.
    pub timeout: u64,
    /// Connections reset by the peer.
    pub reset: u64,
    /// Unparsable responses.
    pub protocol: u64,
    /// Connections closed before a complete response.
    pub closed: u64,
}

impl ErrorCounts {
    /// Adds one error.
    pub fn add(&mut self, kind: ErrorKind) {
        match kind {
            ErrorKind::Connect => self.connect += 1,
            ErrorKind::Timeout => self.timeout += 1,
            ErrorKind::Reset => self.reset += 1,
            ErrorKind::Protocol => self.protocol += 1,
            ErrorKind::Closed => self.closed += 1,
        }
    }
    /// All errors.
    pub fn total(&self) -> u64 {
        self.connect + self.timeout + self.reset + self.protocol + self.closed
    }
    /// Adds another set of counts.
    pub fn merge(&mut self, o: &ErrorCounts) {
        *self += *o;
    }
}

/// Counts of disjoint requests (two threads' intervals, two shards of one load) add.
impl std::ops::AddAssign for ErrorCounts {
    fn add_assign(&mut self, o: ErrorCounts) {
        // Destructured so that a new error kind cannot be left out of the sum unnoticed.
        let ErrorCounts {
            connect,
            timeout,
            reset,
            protocol,
            closed,
        } = o;
        self.connect += connect;
        self.timeout += timeout;
        self.reset += reset;
        self.protocol += protocol;
        self.closed += closed;
    }
}

impl std::iter::Sum for ErrorCounts {
    fn sum<I: Iterator<Item = ErrorCounts>>(iter: I) -> ErrorCounts {
        iter.fold(ErrorCounts::default(), |mut total, e| {
            total += e;
            total
        })
    }
}

/// Status codes are three digits (100-999 after parsing).
const STATUS_SLOTS: usize = 1000;

/// Counters of one interval (or of the warm-up).
#[derive(Debug, Clone)]
pub struct Counters {
    /// Requests whose first byte was written.
    pub sent: u64,
    /// Complete responses (any status).
    pub completed: u64,
    /// Errors by kind.
    pub errors: ErrorCounts,
    /// Responses by status code, indexed by code.
    pub status: Box<[u64; STATUS_SLOTS]>,
    /// Request bytes written.
    pub bytes_sent: u64,
    /// Response bytes read.
    pub bytes_received: u64,
    /// TCP connections established.
    pub connections_opened: u64,
    /// Connections the server ended.
    pub closed_by_server: u64,
    /// Fresh connections on which the server sent bytes before any request (replaced after a
    /// back-off).
    pub unsolicited: u64,
    /// Responses that failed a check, by check (`CHECK_NAMES` order).
    pub checks: [u64; CHECK_NAMES.len()],
    /// Responses with a status below 400 that failed a check (those of 400 or more are
    /// failed already): `requests.failed` is these plus the 4xx and 5xx.
    pub failed_checks_only: u64,
    /// Responses that failed at least one check, whatever their status, each once (the
    /// `checks` threshold's count).
    pub failed_checks: u64,
    /// A journey's steps not sent because their user lacked a value they need (its capture
    /// failed).
    pub skipped: u64,
}

/// The checks, in the order `Counters::checks` counts them (`checks {name: count}`).
pub const CHECK_NAMES: [&str; 8] = [
    "status",
    "body_contains",
    "body_regex",
    "header",
    "size",
    "capture",
    "grpc_status",
    "json",
];

impl Default for Counters {
    fn default() -> Self {
        Counters {
            sent: 0,
            completed: 0,
            errors: ErrorCounts::default(),
            status: Box::new([0; STATUS_SLOTS]),
            bytes_sent: 0,
            bytes_received: 0,
            connections_opened: 0,
            closed_by_server: 0,
            unsolicited: 0,
            checks: [0; CHECK_NAMES.len()],
            failed_checks_only: 0,
            failed_checks: 0,
            skipped: 0,
        }
    }
}

impl Counters {
    /// Adds another set of counters.
    pub fn merge(&mut self, o: &Counters) {
        self.sent += o.sent;
        self.completed += o.completed;
        self.errors.merge(&o.errors);
        for (a, b) in self.status.iter_mut().zip(o.status.iter()) {
            *a += *b;
        }
        self.bytes_sent += o.bytes_sent;
        self.bytes_received += o.bytes_received;
        self.connections_opened += o.connections_opened;
        self.closed_by_server += o.closed_by_server;
        self.unsolicited += o.unsolicited;
        for (a, b) in self.checks.iter_mut().zip(o.checks.iter()) {
            *a += *b;
        }
        self.failed_checks_only += o.failed_checks_only;
        self.failed_checks += o.failed_checks;
        self.skipped += o.skipped;
    }

    /// Completed responses that failed (`requests.failed`): status 400 or more, and those
    /// below 400 that failed a check.
    pub fn failed(&self) -> u64 {
        self.status[400..].iter().sum::<u64>() + self.failed_checks_only
    }

    /// Non-zero status codes in ascending order (a WebSocket's messages have none: slot 0).
    pub fn status_codes(&self) -> Vec<(u16, u64)> {
        self.status
            .iter()
            .enumerate()
            .filter(|(code, n)| *code > 0 && **n > 0)
            .map(|(code, n)| (code as u16, *n))
            .collect()
    }
}

/// One second (or the last partial second) of one worker's measured window.
#[derive(Debug)]
pub struct Interval {
    /// Worker index.
    pub thread: usize,
    /// Bucket k covers [t0 + k s, t0 + k + 1 s).
    pub bucket: u64,
    /// Corrected latency (µs).
    pub latency: Hist,
    /// Service time (µs).
    pub service: Hist,
    /// Schedule lag (µs), open loop only.
    pub lag: Hist,
    /// Counters of the interval.
    pub counts: Counters,
    /// Virtual users of this worker at the end of the interval (ramp mode).
    pub users: u64,
}

/// What workers tell the aggregator.
#[derive(Debug)]
pub enum WorkerReport {
    /// The worker's thread id (for the client CPU self-check).
    Started {
        /// Worker index.
        thread: usize,
        /// Linux thread id.
        tid: i32,
    },
    /// A finished interval.
    Interval(Box<Interval>),
    /// Warm-up counters, at t0 and again at the end (the warm-up requests that ended after
    /// t0; all of them at the end if the run stopped during the warm-up). The reports add up.
    Warmup {
        /// Worker index.
        thread: usize,
        /// The warm-up's counters.
        counts: Box<Counters>,
    },
    /// The worker is done; final numbers that only exist at the end.
    Done(Box<WorkerEnd>),
}

/// End-of-run numbers of one worker.
#[derive(Debug, Default, Clone)]
pub struct WorkerEnd {
    /// Worker index.
    pub thread: usize,
    /// io_uring was chosen but this thread could not set up its ring (why): it used epoll.
    pub io_fallback: Option<String>,
    /// Measured requests still in flight when the worker stopped.
    pub unfinished: u64,
    /// Measured requests due (open loop) but never written.
    pub unsent: u64,
    /// Open loop: those requests at their lower bound (end of the send window − due time),
    /// µs; `None` when there were none.
    pub unsent_latency: Option<Hist>,
    /// Last measured response, ns on the run clock (0 if none).
    pub last_response_ns: u64,
    /// Last measured write, ns on the run clock (0 if none).
    pub last_send_ns: u64,
    /// Connections that never managed to open (for the warning).
    pub never_connected: u64,
    /// The most connection slots in use at once.
    pub max_active: u64,
    /// The first response this worker could not parse: what the server sent (for the warning).
    pub protocol_sample: Option<ProtocolSample>,
    /// The first bytes a server sent this worker on a fresh connection before any request.
    pub unsolicited_sample: Option<Vec<u8>>,
    /// Why this worker's first failed TLS handshake failed (for the warning).
    pub connect_sample: Option<String>,
    /// Its slowest measured requests, slowest first (bounded: `stats::slowest`).
    pub slowest: Vec<SlowRequest>,
    /// Connect and TLS handshake times, and what TLS negotiated.
    pub transport: super::transport::TransportStats,
    /// Results per named request of a workload (measured phase).
    pub endpoints: super::endpoints::Endpoints,
    /// A journey's users: what they met (zero without a journey).
    pub journey: super::journey::JourneyCounts,
}

/// Bytes kept of what a server sent that volley could not use: one more than a warning shows,
/// so it can tell the sample was cut.
pub const SAMPLE_BYTES: usize = 65;

/// The start of a response that could not be parsed, and why (kept once per worker, on the
/// error path only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProtocolSample {
    /// The parser's reason.
    pub reason: String,
    /// Up to [`SAMPLE_BYTES`] bytes from where the response (or the framing that broke) began.
    pub bytes: Vec<u8>,
}

/// The phase a request belongs to: the phase it was due in (open loop) or taken in (closed
/// loop), whenever it completes (docs/contract.md, "Phases and time").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Warm-up: counted only in the warm-up line.
    Warmup,
    /// The measured window.
    Measured,
}

/// A worker's recorder.
pub struct Recorder {
    thread: usize,
    tx: Sender<WorkerReport>,
    t0_ns: u64,
    bucket: u64,
    /// The measured window's last second (a run of `-d`): what completes in the drain after
    /// the window counts in it, so the series spans the window and no sliver of a second
    /// trails it.
    last_bucket: u64,
    next_boundary_ns: u64,
    latency: Hist,
    service: Hist,
    lag: Hist,
    counts: Counters,
    /// Warm-up counters (sent at t0, and what came after it at the end).
    pub warmup: Counters,
    /// Active virtual users (ramp mode); reported with every interval.
    pub users: u64,
    dirty: bool,
    slowest: Slowest,
    /// Measured results per named request of a workload.
    pub endpoints: super::endpoints::Endpoints,
}

const SECOND_NS: u64 = 1_000_000_000;

impl Recorder {
    /// A recorder for worker `thread` whose measured window starts at `t0_ns`.
    pub fn new(thread: usize, tx: Sender<WorkerReport>, t0_ns: u64) -> Self {
        Recorder {
            thread,
            tx,
            t0_ns,
            bucket: 0,
            last_bucket: u64::MAX,
            next_boundary_ns: t0_ns + SECOND_NS,
            latency: new_hist(),
            service: new_hist(),
            lag: new_hist(),
            counts: Counters::default(),
            warmup: Counters::default(),
            users: 0,
            dirty: false,
            slowest: Slowest::default(),
            endpoints: Default::default(),
        }
    }

    /// The measured window ends at `end_ns` (`-d`): later events count in its last second.
    pub fn window_ends_at(mut self, end_ns: Option<u64>) -> Self {
        if let Some(end) = end_ns {
            self.last_bucket = end.saturating_sub(1).saturating_sub(self.t0_ns) / SECOND_NS;
        }
        self
    }

    /// Sends a report (a closed channel only means the run is being torn down).
    pub fn send(&self, r: WorkerReport) {
        let _ = self.tx.send(r);
    }

    /// Moves to the bucket containing `now_ns`, sending finished intervals. Cheap when nothing changes.
    #[inline]
    pub fn tick(&mut self, now_ns: u64) {
        if now_ns >= self.next_boundary_ns {
            self.roll(now_ns);
        }
    }

    fn roll(&mut self, now_ns: u64) {
        let bucket = ((now_ns - self.t0_ns) / SECOND_NS).min(self.last_bucket);
        // With users active the second is reported even if nothing completed in it; past the
        // window's end the last second goes on (it is sent once, at the end).
        if bucket != self.bucket && (self.dirty || self.users > 0) {
            self.flush();
        }
        self.bucket = bucket;
        self.next_boundary_ns = if self.bucket == self.last_bucket {
            u64::MAX
        } else {
            self.t0_ns + (self.bucket + 1) * SECOND_NS
        };
    }

    /// Sends the current interval (also the partial last one) and starts a fresh one.
    pub fn flush(&mut self) {
        let interval = Interval {
            thread: self.thread,
            bucket: self.bucket,
            latency: std::mem::replace(&mut self.latency, new_hist()),
            service: std::mem::replace(&mut self.service, new_hist()),
            lag: std::mem::replace(&mut self.lag, new_hist()),
            counts: std::mem::take(&mut self.counts),
            users: self.users,
        };
        self.dirty = false;
        self.send(WorkerReport::Interval(Box::new(interval)));
    }

    /// Measured counters of the current interval as they stand (for checks that follow a
    /// worker step by step: the `h2_worker` fuzz target).
    #[doc(hidden)]
    pub fn current(&self) -> &Counters {
        &self.counts
    }

    /// Measured counters of the current interval, for recording.
    #[inline]
    pub fn counts(&mut self, now_ns: u64) -> &mut Counters {
        self.tick(now_ns);
        self.dirty = true;
        &mut self.counts
    }

    /// The counters an event of `phase` goes to: the warm-up's, or the current second's.
    #[inline]
    pub fn counters_for(&mut self, phase: Phase, now_ns: u64) -> &mut Counters {
        match phase {
            Phase::Warmup => &mut self.warmup,
            Phase::Measured => self.counts(now_ns),
        }
    }

    /// A complete measured response: corrected latency, service time (µs) and status.
    #[inline]
    pub fn response(&mut self, now_ns: u64, latency_us: u64, service_us: u64, status: u16) {
        let c = self.counts(now_ns);
        c.completed += 1;
        c.status[status as usize % STATUS_SLOTS] += 1;
        record(&mut self.latency, latency_us);
        record(&mut self.service, service_us);
        self.slowest
            .offer(latency_us, now_ns.saturating_sub(self.t0_ns));
    }

    /// A measured response of `status` failed the checks named in `failed` (none: it passed).
    #[inline]
    pub fn checked(&mut self, now_ns: u64, status: u16, failed: &[&'static str]) {
        if failed.is_empty() {
            return;
        }
        let c = self.counts(now_ns);
        for name in failed {
            if let Some(k) = CHECK_NAMES.iter().position(|n| n == name) {
                c.checks[k] += 1;
            }
        }
        c.failed_checks += 1;
        if status < 400 {
            c.failed_checks_only += 1;
        }
    }

    /// A measured journey step (of endpoint `e`) was skipped: its user lacked a value.
    #[inline]
    pub fn skipped(&mut self, now_ns: u64, e: Option<u16>) {
        self.counts(now_ns).skipped += 1;
        if let Some(e) = e {
            self.endpoints.skipped(e);
        }
    }

    /// The slowest measured requests so far, slowest first (for the worker's end).
    pub fn take_slowest(&mut self) -> Vec<SlowRequest> {
        std::mem::take(&mut self.slowest).into_sorted()
    }

    /// A measured request's first byte was written `lag_us` after it was due (open loop).
    #[inline]
    pub fn lag(&mut self, lag_us: u64) {
        record(&mut self.lag, lag_us);
    }
}

/// Convenience for the worker: histograms record whole microseconds, rounded down from ns.
#[inline]
pub fn ns_to_us(ns: u64) -> u64 {
    ns / 1_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_latency_past_the_initial_bound_is_recorded_as_it_was() {
        // Ten minutes of corrected latency (an open loop far over capacity): the histogram
        // grows; before, saturating_record wrote 60 s.
        let (tx, rx) = std::sync::mpsc::channel();
        let mut r = Recorder::new(0, tx, 0);
        r.response(1, 600_000_000, 1_000, 200);
        r.lag(120_000_000);
        r.flush();
        let Ok(WorkerReport::Interval(i)) = rx.recv() else {
            panic!("an interval")
        };
        assert!(i.latency.max() >= 599_000_000, "{}", i.latency.max());
        assert!(i.lag.max() >= 119_000_000, "{}", i.lag.max());
    }

    /// The (bucket, completed) of each interval sent so far.
    fn sent_buckets(rx: &std::sync::mpsc::Receiver<WorkerReport>) -> Vec<(u64, u64)> {
        rx.try_iter()
            .map(|w| match w {
                WorkerReport::Interval(i) => (i.bucket, i.counts.completed),
                _ => panic!("an interval"),
            })
            .collect()
    }

    #[test]
    fn what_completes_after_the_window_counts_in_its_last_second() {
        // A 2 s window from t0 = 5 s: a response in the drain, 0.3 ms after the end, belongs
        // to second 1, not to a second 2 of 0.3 ms.
        let (tx, rx) = std::sync::mpsc::channel();
        let t0 = 5 * SECOND_NS;
        let mut r = Recorder::new(0, tx, t0).window_ends_at(Some(t0 + 2 * SECOND_NS));
        r.response(t0 + 500_000_000, 100, 100, 200);
        r.response(t0 + 1_500_000_000, 100, 100, 200);
        r.response(t0 + 2 * SECOND_NS + 300_000, 100, 100, 200);
        r.flush();
        let buckets = sent_buckets(&rx);
        assert_eq!(buckets, [(0, 1), (1, 2)]);
        // A 1 s window: its one second is sent once, with the drain's response in it.
        let (tx, rx) = std::sync::mpsc::channel();
        let mut r = Recorder::new(0, tx, t0).window_ends_at(Some(t0 + SECOND_NS));
        r.response(t0 + 500_000_000, 100, 100, 200);
        r.response(t0 + SECOND_NS + 300_000, 100, 100, 200);
        r.flush();
        let buckets = sent_buckets(&rx);
        assert_eq!(buckets, [(0, 2)]);
    }
}

//! The load engine: N OS threads, one event loop each (io_uring or epoll), connections owned
//! by one thread for life. [`run`] spawns the workers and runs the aggregator on the calling
//! thread: it merges each second's intervals, turns Ctrl-C into a drain, and tells the
//! observers ([`Observer`]) what happened — the engine itself writes nothing anywhere.
//!
//! A load from a Rust program: a `volley_plan::LoadSpec` (`LoadSpec::closed_loop`, then its
//! fields), its `Plan`, a [`Route`] ([`Route::tcp`]), then [`run`]; the numbers are in
//! [`EngineOutput`]. `examples/closed_loop.rs` is one; docs/contract.md says what they mean.

// volley-model's `stderrln!`, which drops a failed write to stderr instead of panicking.
#[macro_use]
extern crate volley_model;

pub mod check;
pub mod clock;
pub mod conn;
pub mod h2;
pub mod h3;
pub mod journey;
#[doc(hidden)]
pub mod mem;
pub(crate) mod poller;
pub mod probe;
pub mod proxy;
pub mod quic;
pub mod response;
pub(crate) mod ring;
pub mod stream;
pub mod tls;
pub mod transport;
pub mod worker;
pub mod ws;

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};

use clock::Clock;
use tls::TlsClient;
use transport::Endpoint;
pub use volley_model::stats::observer::{Observer, Observers};
use volley_model::stats::recorder::{WorkerEnd, WorkerReport};
use volley_model::stats::transport::TransportStats;
use volley_model::stats::Aggregator;
use volley_plan::{HttpVersion, IoBackend, IoChoice, LoadSpec, Plan, RequestTemplate};

/// Where a run's connections go and how: the endpoint, and for `https://` the TLS client.
#[derive(Debug, Clone)]
pub struct Route {
    /// The address or Unix socket.
    pub endpoint: Endpoint,
    /// TLS, for `https://`.
    pub tls: Option<TlsClient>,
    /// Through a proxy's `CONNECT` tunnel: the endpoint is the proxy's.
    pub tunnel: Option<proxy::Tunnel>,
    /// How the workers move bytes ([`choose_io`], before the run's clock starts).
    pub io: IoPick,
    /// `--http3`: QUIC's client settings (the endpoint is then the server's UDP address).
    pub quic: Option<quic::QuicClient>,
}

impl Route {
    /// Cleartext TCP to `addr`, on the backend `io` picks ([`choose_io`]; call it before a
    /// run, not within one: probing the kernel takes a moment).
    pub fn tcp(addr: std::net::SocketAddr, io: IoChoice) -> Result<Route, String> {
        Ok(Route {
            endpoint: Endpoint::Tcp(addr),
            tls: None,
            tunnel: None,
            io: choose_io(io, IoLoad::KeepAlive)?,
            quic: None,
        })
    }
}

/// The I/O backend a run uses, and why io_uring is not used where `--io auto` wanted it.
#[derive(Debug, Clone)]
pub struct IoPick {
    /// The backend.
    pub backend: IoBackend,
    /// `auto` fell back to epoll: why.
    pub note: Option<String>,
}

/// What a run's first exchanges found wrong with the server's set-up before any response
/// (its TLS, or the HTTP version asked for): the run ends with this reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SetupFailure {
    /// An `https://` run whose handshakes fail on the server's set-up (its certificate, its
    /// TLS settings, no TLS at all): why.
    Handshake(String),
    /// An `http://` run whose server answered with TLS records: it speaks HTTPS there.
    SpeaksTls,
    /// HTTP/2 was asked for (`--http2`, `--h2c`) and the server does not speak it there: why.
    NoH2(String),
    /// The server's first HTTP/2 frames broke the protocol or sent the client away before
    /// any request was written (a PING first, an impossible setting, a GOAWAY): why.
    H2Unusable(String),
    /// The proxy refused the `CONNECT` tunnel (a 407, 403, 502) or did not answer it in HTTP:
    /// why, with its status.
    Proxy(String),
    /// A `ws://` or `wss://` run whose server refused the upgrade (another status than 101)
    /// or answered it wrongly: why.
    WebSocket(String),
}

/// The run's first exchanges decide whether the server's set-up fits the URL: a set-up
/// failure (certificate, alert, not TLS — or TLS on an `http://` URL, or no HTTP/2 where it
/// was asked for) before any response of the run ends the run, with its reason — not
/// thousands of connect errors. With TLS 1.3 a
/// server may refuse the client's certificate only after the client's side of the handshake
/// ended, so the gate opens at the first response, not at the first handshake.
#[derive(Debug, Default)]
pub struct SetupGate {
    passed: AtomicBool,
    failure: Mutex<Option<SetupFailure>>,
}

impl SetupGate {
    /// A response arrived: later failures are counted as errors.
    #[inline]
    pub(crate) fn pass(&self) {
        if !self.passed.load(Ordering::Relaxed) {
            self.passed.store(true, Ordering::Relaxed);
        }
    }

    /// A set-up failure: true when it ends the run (no response arrived before it).
    pub(crate) fn fail(&self, failure: impl FnOnce() -> SetupFailure) -> bool {
        if self.passed.load(Ordering::Relaxed) {
            return false;
        }
        let mut f = self.failure.lock().unwrap_or_else(|p| p.into_inner());
        f.get_or_insert_with(failure);
        true
    }

    fn take(&self) -> Option<SetupFailure> {
        self.failure
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .take()
    }
}

/// `Shared::stop`: keep going.
pub const STOP_NONE: u8 = 0;
/// `Shared::stop`: send nothing new, drain for at most a second.
pub(crate) const STOP_DRAIN: u8 = 1;
/// `Shared::stop`: stop now (a second Ctrl-C).
pub(crate) const STOP_ABORT: u8 = 2;

/// Read-only run parameters every worker sees, plus the stop flag.
pub struct Shared {
    /// Where connections go (the address resolved once, or the Unix socket).
    pub endpoint: Endpoint,
    /// TLS for `https://`.
    pub tls: Option<TlsClient>,
    /// The `CONNECT` tunnel every connection opens first, through a proxy.
    pub tunnel: Option<proxy::Tunnel>,
    /// The first handshake's verdict.
    pub setup_gate: SetupGate,
    /// The request.
    pub template: RequestTemplate,
    /// The request bytes repeated `pipeline` times, so one write can carry a window (the
    /// template's own bytes without pipelining).
    pub stream_bytes: Arc<[u8]>,
    /// Requests outstanding per connection.
    pub pipeline: usize,
    /// Reuse connections.
    pub keepalive: bool,
    /// Open loop: schedule lag is recorded.
    pub open_loop: bool,
    /// Open loop: requests due within this long of the next one are held and written with
    /// it in one wake-up, at the last one's due time (never before a request's own). 0, the
    /// default, writes each at its due time. Set by `VOLLEY_BATCH_WINDOW_US` (an experiment:
    /// fewer wake-ups of client and server for lag up to the window; see BENCHMARKS.md).
    pub batch_window_ns: u64,
    /// Open loop: the least time between two timed wake-ups for due requests once the worker
    /// is busy most of the time (`worker::wake`). Set by `VOLLEY_WAKE_QUANTUM_US` (0: off).
    pub wake_quantum_ns: u64,
    /// Per-request timeout.
    pub timeout_ns: u64,
    /// End of warm-up on the run clock (0 without warm-up).
    pub t0_ns: u64,
    /// End of the send window (`t0 + d`), `None` with `-n`.
    pub end_ns: Option<u64>,
    /// The run clock.
    pub clock: Clock,
    /// STOP_NONE / STOP_DRAIN / STOP_ABORT.
    pub stop: AtomicU8,
    /// Worker threads.
    pub threads: usize,
    /// Virtual users over time (ramp mode).
    pub ramp: Option<volley_plan::ramp::Ramp>,
    /// `--think-time` in ns.
    pub think_ns: u64,
    /// `--max-connections`: the open loop opens connections on demand.
    pub grow: bool,
    /// Which HTTP the run speaks (HTTP/2 decided per connection for `https://` by ALPN).
    pub http: HttpVersion,
    /// HTTP/2: concurrent streams per connection (`--streams`).
    pub streams: usize,
    /// HTTP/2: the receive window connections announce.
    pub h2_window: u32,
    /// HTTP/2: the request's header block, the same on every stream (empty on HTTP/1.1 runs).
    pub h2_block: Arc<[u8]>,
    /// `--http3`: QUIC's client settings.
    pub quic: Option<quic::QuicClient>,
    /// `--http3`: the request's frames (HEADERS, DATA), shared by every stream.
    pub h3_request: bytes::Bytes,
    /// `--http3` with a requests file: each request's frames when nothing in it is templated,
    /// built once (by the request's index; `None`: rendered as its stream opens).
    pub h3_mix: Vec<Option<bytes::Bytes>>,
    /// The request body (HTTP/2 sends it in DATA frames).
    pub body: Arc<[u8]>,
    /// `--requests-file`: the workload's requests, rendered per request.
    pub mix: Option<Arc<volley_plan::Mix>>,
    /// `--expect-*` of a run of one request (a workload's requests carry their own).
    pub checks: Option<Arc<volley_plan::workload::Checks>>,
    /// The target's host name, lower case: the host a journey's cookies are kept for.
    pub cookie_host: String,
    /// The I/O backend the workers use.
    pub io: IoBackend,
    /// `ws://` and `wss://`: the upgrade and the message every connection sends.
    pub ws: Option<ws::WsRun>,
    /// `--grpc`: each request is a gRPC call (its `grpc-status` counted by code).
    pub grpc: bool,
}

/// Everything the engine measured.
pub struct EngineOutput {
    /// Totals, warm-up counters and time series.
    pub agg: Aggregator,
    /// Per-worker end-of-run numbers.
    pub ends: Vec<WorkerEnd>,
    /// Wall clock at t0.
    pub started_at: SystemTime,
    /// From t0 to the later of the send-window end and the last measured response.
    pub elapsed_s: f64,
    /// The send window: from t0 to its end (Ctrl-C ends it early; with `-n`, the last
    /// measured write).
    pub window_s: f64,
    /// Open loop: the corrected latencies include unsent requests at their lower bound.
    pub latency_lower_bound: bool,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// How long the warm-up ran: all of it, or up to a Ctrl-C during it (0 without one).
    pub warmup_s: f64,
    /// Connect and handshake times of every worker, and what TLS negotiated.
    pub transport: TransportStats,
    /// The server's TLS set-up did not fit the URL (see [`SetupGate`]): the run stopped before
    /// any response; why.
    pub setup_failure: Option<SetupFailure>,
    /// The I/O backend the run used.
    pub io: IoBackend,
    /// Why io_uring was not used (on some or all threads) where `--io auto` chose it.
    pub io_note: Option<String>,
}

impl EngineOutput {
    /// Why the first failed connect failed, when a worker knew (a TLS handshake's reason, a
    /// reset, a timeout, an HTTP/2 connection that never became usable); `None` when no connect
    /// failed or none said why (refused, unreachable).
    pub fn first_connect_failure(&self) -> Option<&str> {
        self.ends.iter().find_map(|e| e.connect_sample.as_deref())
    }
}

impl Shared {
    fn new(spec: &LoadSpec, plan: &Plan, route: Route, clock: Clock, io: IoBackend) -> Self {
        let t0_ns = spec.warmup.as_nanos() as u64;
        let pipeline = spec.pipeline;
        let mix = plan.mix.clone().map(|mut m| {
            if spec.http.may_be_h2() {
                h2_blocks(&mut m, spec.tls.is_some());
            }
            Arc::new(m)
        });
        let h3_mix = match (&mix, &route.quic) {
            (Some(m), Some(_)) => h3_frames(m),
            _ => Vec::new(),
        };
        Shared {
            endpoint: route.endpoint,
            tls: route.tls,
            tunnel: route.tunnel,
            h3_request: if route.quic.is_some() {
                h3::request::frames_for_spec(spec).into()
            } else {
                bytes::Bytes::new()
            },
            quic: route.quic,
            setup_gate: SetupGate::default(),
            stream_bytes: if pipeline == 1 {
                Arc::clone(&plan.template.bytes)
            } else {
                plan.template.bytes.repeat(pipeline).into()
            },
            template: plan.template.clone(),
            pipeline,
            keepalive: spec.keepalive,
            open_loop: spec.is_open(),
            batch_window_ns: std::env::var("VOLLEY_BATCH_WINDOW_US")
                .ok()
                .and_then(|v| v.parse::<u64>().ok())
                .map_or(0, |us| us.saturating_mul(1000)),
            // Checked by the config as the flags are (surrounding spaces allowed there too).
            wake_quantum_ns: std::env::var(volley_plan::WAKE_QUANTUM_VAR)
                .ok()
                .and_then(|v| v.trim().parse::<u64>().ok())
                .map_or(worker::DEFAULT_WAKE_QUANTUM_NS, |us| {
                    us.min(1_000_000) * 1000
                }),
            timeout_ns: spec.timeout.as_nanos() as u64,
            t0_ns,
            end_ns: spec.duration.map(|d| t0_ns + d.as_nanos() as u64),
            clock,
            stop: AtomicU8::new(STOP_NONE),
            threads: plan.threads.len(),
            ramp: spec.ramp.as_ref().map(|r| r.ramp.clone()),
            think_ns: spec.think_time.as_nanos() as u64,
            grow: spec.max_connections.is_some() && spec.is_open() && spec.ramp.is_none(),
            http: spec.http,
            streams: spec.h2.streams,
            h2_window: spec.h2.window,
            h2_block: if spec.http.may_be_h2() {
                h2::request::for_spec(spec).into()
            } else {
                Arc::from(&[][..])
            },
            body: Arc::clone(&spec.body),
            checks: (!spec.checks.is_empty()).then(|| Arc::new(spec.checks.clone())),
            cookie_host: spec.target.host.to_ascii_lowercase(),
            io,
            mix,
            h3_mix,
            ws: spec.ws.map(|w| ws::WsRun::new(spec, w)),
            grpc: spec.grpc.is_some(),
        }
    }
}

/// The HTTP/2 header blocks of a workload's requests that have nothing templated in their
/// head, encoded once.
fn h2_blocks(mix: &mut volley_plan::Mix, https: bool) {
    let jar = mix.workload.journey.cookies;
    for r in &mut mix.requests {
        if fixed(r, jar) {
            let len = r.body_bytes.len();
            r.h2_block = Some(h2::request::for_mix(r, &FIXED, https, len).into());
        }
    }
}

/// The HTTP/3 frames of a workload's requests that have nothing templated, built once.
fn h3_frames(mix: &volley_plan::Mix) -> Vec<Option<bytes::Bytes>> {
    let jar = mix.workload.journey.cookies;
    let frames =
        |r: &volley_plan::MixRequest| h3::request::frames_for_mix(r, &FIXED, &r.body_bytes);
    mix.requests
        .iter()
        .map(|r| fixed(r, jar).then(|| frames(r)))
        .collect()
}

/// What a request with nothing templated is rendered with (its placeholders are none).
const FIXED: volley_plan::workload::Context<'static> = volley_plan::workload::Context {
    index: 0,
    conn: 0,
    user: 0,
    seed: 0,
    row: None,
    vars: &[],
    cookie: None,
};

/// Whether request `r`'s head and body are the same every time (with a cookie jar, it sends
/// its own `Cookie` or none is added).
fn fixed(r: &volley_plan::MixRequest, jar: bool) -> bool {
    let fixed_body = !matches!(r.body, volley_plan::workload::Body::Template(_));
    let fixed_head = r.path.is_literal() && r.fields.iter().all(|(_, v)| v.is_literal());
    fixed_head && fixed_body && (!jar || r.own_cookie)
}

/// Runs the load of `spec`, split by `plan`, along `route`. `interrupts` counts Ctrl-C presses
/// (set by the signal handler): the first drains, the second stops. `observer` is told of
/// every step (see [`Observer`]).
pub fn run(
    spec: &LoadSpec,
    plan: Plan,
    route: Route,
    interrupts: &AtomicUsize,
    observer: &mut dyn Observer,
) -> std::io::Result<EngineOutput> {
    let (io, mut io_note) = (route.io.backend, route.io.note.clone());
    let clock = Clock::start();
    let wall_start = SystemTime::now();
    let shared = Arc::new(Shared::new(spec, &plan, route, clock, io));
    let threads = plan.threads.len();
    let (tx, rx) = mpsc::channel::<WorkerReport>();
    let (wakers, handles) = spawn_workers(&shared, plan, tx)?;
    let started_at = wall_start + Duration::from_nanos(shared.t0_ns);
    observer.start(started_at);
    let mut c = Collector {
        shared: &shared,
        agg: Aggregator::new(threads, spec.ramp.is_some()),
        ends: Vec::new(),
        threads,
        measuring: false,
        next_tick_ns: shared.t0_ns + 1_000_000_000,
        stop_seen: 0,
        stop_at_ns: None,
    };
    c.collect(&rx, &wakers, interrupts, observer);
    for h in handles {
        let _ = h.join();
    }
    let end_now = clock.now_ns();
    let elapsed_s = c.elapsed_ns(end_now) as f64 / 1e9;
    let window_s = c.window_end_ns().min(end_now).saturating_sub(shared.t0_ns) as f64 / 1e9;
    let warmup_end_ns = c
        .stop_at_ns
        .unwrap_or(u64::MAX)
        .min(end_now)
        .min(shared.t0_ns);
    let done = c.agg.finish(elapsed_s);
    // Unsent requests enter the whole run's corrected histogram only: they belong to no
    // second of the series, and their values are bounds, not measurements.
    let mut latency_lower_bound = false;
    let mut transport = TransportStats::default();
    let mut fell_back = 0;
    for e in &mut c.ends {
        if let Some(why) = e.io_fallback.take() {
            fell_back += 1;
            io_note.get_or_insert_with(|| format!("worker {}: {why}", e.thread));
        }
        transport.merge(&std::mem::take(&mut e.transport));
        if let Some(h) = e.unsent_latency.take() {
            latency_lower_bound = true;
            let _ = c.agg.latency.add(&h);
        }
    }
    let t0_ns = shared.t0_ns;
    for b in &done {
        observer.second(b, end_now.saturating_sub(t0_ns) as f64 / 1e9);
    }
    observer.done();
    Ok(EngineOutput {
        agg: c.agg,
        ends: c.ends,
        started_at,
        elapsed_s,
        window_s,
        latency_lower_bound,
        interrupted: c.stop_seen > 0,
        warmup_s: warmup_end_ns as f64 / 1e9,
        transport,
        setup_failure: shared.setup_gate.take(),
        // Threads whose ring could not be set up used epoll; the run did when all of them did.
        io: if fell_back == threads {
            IoBackend::Epoll
        } else {
            io
        },
        io_note,
    })
}

/// How a run's connections carry it, as far as the choice of backend goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IoLoad {
    /// Keep-alive connections (HTTP/1.1, h2c, HTTPS negotiating, WebSocket).
    KeepAlive,
    /// A connection per request (`--no-keepalive`).
    ConnectionPerRequest,
    /// HTTP/2 over TLS (`--http2` on `https://`).
    TlsHttp2,
}

/// The backend for `choice` (probing io_uring takes a moment, so this runs before the clock
/// does). `auto` wants io_uring for keep-alive loads, except:
/// - a connection per request: the ring's set-up per connection (a connect poll, a multishot
///   receive armed and torn down) costs more client CPU than its batching saves
///   (BENCHMARKS.md, "A new connection per request");
/// - HTTP/2 over TLS: against nginx the ring's receive per arriving segment made volley and
///   nginx both pay more a request (4.5 against epoll's 3.9 µs of client CPU, nginx serving
///   20 % fewer requests), against h2o it was even (BENCHMARKS.md, "HTTP/2 over TLS ahead of h2load").
///
/// Err: why an explicit `--io uring` cannot be had.
pub fn choose_io(choice: IoChoice, load: IoLoad) -> Result<IoPick, String> {
    let pick = |backend, note| IoPick { backend, note };
    match choice {
        IoChoice::Epoll => Ok(pick(IoBackend::Epoll, None)),
        IoChoice::Auto if load != IoLoad::KeepAlive => Ok(pick(IoBackend::Epoll, None)),
        IoChoice::Uring => ring::probe()
            .map(|()| pick(IoBackend::Uring, None))
            .map_err(|e| e.0),
        IoChoice::Auto => Ok(match ring::probe() {
            Ok(()) => pick(IoBackend::Uring, None),
            Err(e) => pick(IoBackend::Epoll, Some(e.0)),
        }),
    }
}

/// Starts one worker thread per thread plan, each with its own epoll instance and waker.
fn spawn_workers(
    shared: &Arc<Shared>,
    plan: Plan,
    tx: mpsc::Sender<WorkerReport>,
) -> std::io::Result<(Vec<mio::Waker>, Vec<JoinHandle<()>>)> {
    let mut wakers = Vec::with_capacity(plan.threads.len());
    let mut handles = Vec::with_capacity(plan.threads.len());
    for (k, tp) in plan.threads.into_iter().enumerate() {
        let poll = mio::Poll::new()?;
        wakers.push(mio::Waker::new(poll.registry(), worker::WAKER)?);
        let w = worker::Worker::new(
            k,
            Arc::clone(shared),
            poll,
            (tp.connections, tp.slots),
            tp.pacer,
            tx.clone(),
        )?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("volley-worker-{k}"))
                .spawn(move || w.run())?,
        );
    }
    Ok((wakers, handles))
}

/// The aggregator's side of a run: reports from the workers in, observers told, Ctrl-C out.
struct Collector<'a> {
    shared: &'a Shared,
    agg: Aggregator,
    ends: Vec<WorkerEnd>,
    threads: usize,
    measuring: bool,
    next_tick_ns: u64,
    stop_seen: usize,
    stop_at_ns: Option<u64>,
}

impl Collector<'_> {
    /// Takes reports until every worker is done (or gone), waking at least every 100 ms to
    /// pass on Ctrl-C, start the measured window's observers and tick them once a second.
    fn collect(
        &mut self,
        rx: &mpsc::Receiver<WorkerReport>,
        wakers: &[mio::Waker],
        interrupts: &AtomicUsize,
        observer: &mut dyn Observer,
    ) {
        let t0_ns = self.shared.t0_ns;
        loop {
            match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(WorkerReport::Started { tid, .. }) => observer.thread(tid),
                Ok(WorkerReport::Interval(iv)) => {
                    let elapsed_s = self.shared.clock.now_ns().saturating_sub(t0_ns) as f64 / 1e9;
                    for b in self.agg.add(*iv) {
                        observer.second(&b, elapsed_s);
                    }
                }
                Ok(WorkerReport::Warmup { counts, .. }) => self.agg.warmup.merge(&counts),
                Ok(WorkerReport::Done(end)) => {
                    self.ends.push(*end);
                    if self.ends.len() == self.threads {
                        break;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => break,
            }
            let now = self.shared.clock.now_ns();
            self.pass_on_interrupts(now, interrupts, wakers);
            if now >= t0_ns && !self.measuring {
                self.measuring = true;
                observer.measuring(now);
            }
            if now >= self.next_tick_ns {
                if self.measuring {
                    observer.tick(now, (now - t0_ns) as f64 / 1e9);
                }
                self.next_tick_ns += 1_000_000_000;
            }
        }
    }

    /// The first Ctrl-C drains, the second stops; the workers are woken to see it at once.
    fn pass_on_interrupts(&mut self, now: u64, interrupts: &AtomicUsize, wakers: &[mio::Waker]) {
        let presses = interrupts.load(Ordering::Relaxed);
        if presses <= self.stop_seen {
            return;
        }
        self.stop_seen = presses;
        self.stop_at_ns.get_or_insert(now);
        self.shared.stop.store(
            if presses >= 2 { STOP_ABORT } else { STOP_DRAIN },
            Ordering::Relaxed,
        );
        for w in wakers {
            let _ = w.wake();
        }
    }

    /// From t0 to the later of the send window's end (Ctrl-C ends it early; with `-n` it is the
    /// last measured write) and the last measured response.
    fn elapsed_ns(&self, end_now: u64) -> u64 {
        let t0_ns = self.shared.t0_ns;
        let window_end = self.window_end_ns();
        let last_response = self
            .ends
            .iter()
            .map(|e| e.last_response_ns)
            .max()
            .unwrap_or(0);
        window_end
            .max(last_response)
            .min(end_now)
            .saturating_sub(t0_ns)
    }

    /// End of the send window on the run clock.
    fn window_end_ns(&self) -> u64 {
        let t0_ns = self.shared.t0_ns;
        match (self.shared.end_ns, self.stop_at_ns) {
            (Some(e), Some(s)) => e.min(s),
            (Some(e), None) => e,
            (None, _) => self
                .ends
                .iter()
                .map(|e| e.last_send_ns)
                .max()
                .unwrap_or(t0_ns),
        }
        .max(t0_ns)
    }
}

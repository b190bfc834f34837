//! The load engine: N OS threads, one epoll loop each, connections owned by one thread for
//! life. This module spawns the workers and runs the aggregator on the calling thread: it
//! merges each second's intervals, samples volley's own CPU, drives the live line and the
//! HdrHistogram interval log, and turns Ctrl-C into a drain.

pub mod clock;
pub mod conn;
pub mod poller;
pub mod response;
pub mod transport;
pub mod worker;

use std::io::Write;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use crate::config::LoadConfig;
use crate::monitor::client::{rusage_self, ClientSampler};
use crate::plan::{Plan, RequestTemplate};
use crate::stats::aggregate::FinishedBucket;
use crate::stats::hdrlog::HdrLog;
use crate::stats::recorder::{Report, WorkerEnd};
use crate::stats::{Aggregator, TimePoint};
use clock::Clock;

/// `Shared::stop`: keep going.
pub const STOP_NONE: u8 = 0;
/// `Shared::stop`: send nothing new, drain for at most a second.
pub const STOP_DRAIN: u8 = 1;
/// `Shared::stop`: stop now (a second Ctrl-C).
pub const STOP_ABORT: u8 = 2;

/// Read-only run parameters every worker sees, plus the stop flag.
pub struct Shared {
    /// Target address (resolved once).
    pub addr: SocketAddr,
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
    pub ramp: Option<crate::plan::ramp::Ramp>,
    /// `--think-time` in ns.
    pub think_ns: u64,
}

/// Destination of the live progress line.
pub trait Progress {
    /// A second finished (all workers reported it).
    fn second(&mut self, point: &TimePoint, elapsed_s: f64);
    /// The run ended; clear the line.
    fn done(&mut self);
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
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// Client CPU samples and machine samples.
    pub sampler: Option<ClientSampler>,
    /// Process CPU over the measured window (user, sys seconds) and peak RSS bytes.
    pub client_rusage: (f64, f64, u64),
    /// The `--hdr-log` file could not be written (the run still completed).
    pub hdr_log_error: Option<String>,
}

/// Runs the load described by `cfg`/`plan` against `addr`. `interrupts` counts Ctrl-C presses
/// (set by the signal handler). `hdr_log` receives the interval log if given.
pub fn run(
    cfg: &LoadConfig,
    plan: Plan,
    addr: SocketAddr,
    interrupts: &AtomicUsize,
    hdr_log: Option<Box<dyn Write + Send>>,
    progress: &mut dyn Progress,
) -> std::io::Result<EngineOutput> {
    let clock = Clock::start();
    let wall_start = SystemTime::now();
    let t0_ns = cfg.warmup.as_nanos() as u64;
    let pipeline = cfg.pipeline;
    let shared = Arc::new(Shared {
        addr,
        stream_bytes: if pipeline == 1 {
            Arc::clone(&plan.template.bytes)
        } else {
            plan.template.bytes.repeat(pipeline).into()
        },
        template: plan.template.clone(),
        pipeline,
        keepalive: cfg.keepalive,
        open_loop: cfg.rate_rps.is_some(),
        timeout_ns: cfg.timeout.as_nanos() as u64,
        t0_ns,
        end_ns: cfg.duration.map(|d| t0_ns + d.as_nanos() as u64),
        clock,
        stop: AtomicU8::new(STOP_NONE),
        threads: plan.threads.len(),
        ramp: cfg.ramp.as_ref().map(|r| r.ramp.clone()),
        think_ns: cfg.think_time.as_nanos() as u64,
    });
    let (tx, rx) = mpsc::channel::<Report>();
    let threads = plan.threads.len();
    let mut wakers = Vec::with_capacity(threads);
    let mut handles = Vec::with_capacity(threads);
    for (k, tp) in plan.threads.into_iter().enumerate() {
        let poll = mio::Poll::new()?;
        wakers.push(mio::Waker::new(poll.registry(), worker::WAKER)?);
        let w = worker::Worker::new(
            k,
            Arc::clone(&shared),
            poll,
            tp.connections,
            tp.pacer,
            tx.clone(),
        )?;
        handles.push(
            std::thread::Builder::new()
                .name(format!("volley-worker-{k}"))
                .spawn(move || w.run())?,
        );
    }
    drop(tx);

    let started_at = wall_start + Duration::from_nanos(t0_ns);
    let mut agg = Aggregator::new(threads, cfg.ramp.is_some());
    let mut ends: Vec<WorkerEnd> = Vec::new();
    let mut sampler: Option<ClientSampler> = None;
    let mut tids = Vec::new();
    let mut next_sample_ns = t0_ns + 1_000_000_000;
    let mut stop_seen = 0usize;
    let mut stop_at_ns: Option<u64> = None;
    let mut hdr_log_error = None;

    let mut log = match hdr_log {
        Some(out) => {
            let comment = format!(
                "volley {} {}",
                env!("CARGO_PKG_VERSION"),
                cfg.argv.join(" ")
            );
            Some(HdrLog::begin(out, started_at, &comment)?)
        }
        None => None,
    };
    let mut emit = |done: Vec<FinishedBucket>,
                    hdr_log_error: &mut Option<String>,
                    progress: &mut dyn Progress,
                    now_ns: u64| {
        for b in done {
            if let (Some(l), None) = (log.as_mut(), hdr_log_error.as_ref()) {
                if let Err(e) = l.interval(&b.latency, b.point.t_s as f64, b.point.interval_s) {
                    *hdr_log_error = Some(e.to_string());
                }
            }
            progress.second(&b.point, now_ns.saturating_sub(t0_ns) as f64 / 1e9);
        }
    };

    loop {
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Report::Started { tid, .. }) => {
                tids.push(tid);
                if let Some(s) = sampler.as_mut() {
                    s.add_thread(tid);
                }
            }
            Ok(Report::Interval(iv)) => {
                let done = agg.add(*iv);
                emit(done, &mut hdr_log_error, progress, clock.now_ns());
            }
            Ok(Report::Warmup { counts, .. }) => agg.warmup.merge(&counts),
            Ok(Report::Done(end)) => {
                ends.push(*end);
                if ends.len() == threads {
                    break;
                }
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        let now = clock.now_ns();
        let presses = interrupts.load(Ordering::Relaxed);
        if presses > stop_seen {
            stop_seen = presses;
            stop_at_ns.get_or_insert(now);
            shared.stop.store(
                if presses >= 2 { STOP_ABORT } else { STOP_DRAIN },
                Ordering::Relaxed,
            );
            for w in &wakers {
                let _ = w.wake();
            }
        }
        if now >= t0_ns && sampler.is_none() {
            let mut s = ClientSampler::new(now);
            for tid in &tids {
                s.add_thread(*tid);
            }
            sampler = Some(s);
        }
        if now >= next_sample_ns {
            if let Some(s) = sampler.as_mut() {
                s.sample(now, (now - t0_ns) as f64 / 1e9);
            }
            next_sample_ns += 1_000_000_000;
        }
    }
    for h in handles {
        let _ = h.join();
    }
    let end_now = clock.now_ns();
    let window_end = match (shared.end_ns, stop_at_ns) {
        (Some(e), Some(s)) => e.min(s),
        (Some(e), None) => e,
        (None, _) => ends.iter().map(|e| e.last_send_ns).max().unwrap_or(t0_ns),
    };
    let last_response = ends.iter().map(|e| e.last_response_ns).max().unwrap_or(0);
    let elapsed_ns = window_end
        .max(last_response)
        .min(end_now)
        .saturating_sub(t0_ns);
    let elapsed_s = elapsed_ns as f64 / 1e9;
    let done = agg.finish(elapsed_s);
    emit(done, &mut hdr_log_error, progress, end_now);
    progress.done();
    let (u, s, rss) = rusage_self();
    let (u0, s0) = sampler.as_ref().map(|s| s.start_rusage).unwrap_or((u, s));
    Ok(EngineOutput {
        agg,
        ends,
        started_at,
        elapsed_s,
        interrupted: stop_seen > 0,
        sampler,
        client_rusage: (u - u0, s - s0, rss),
        hdr_log_error,
    })
}

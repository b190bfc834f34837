//! The live views' observer: once a second, from the aggregator's thread (nothing on a
//! worker's path), it turns the finished second into a tick for the feed and adds it to the
//! totals `/metrics` shows.

use std::sync::{Arc, Mutex};

use serde::Serialize;

use super::feed::Feed;
use super::metrics::Totals;
use volley_engine::Observer;
use volley_model::stats::aggregate::FinishedBucket;
use volley_model::stats::histogram::{encode, new_hist};
use volley_model::stats::recorder::ErrorCounts;
use volley_monitor::client::rusage_self;
use volley_monitor::server::{self as server_monitor, LatestTick};

/// One second as the page reads it (docs/contract.md, "Watching a run live").
#[derive(Debug, Serialize)]
pub struct Tick {
    /// Seconds from t0 at the second's start.
    pub t_s: u64,
    /// The second's length (shorter for the last).
    pub interval_s: f64,
    /// The second's start on the wall clock, ms since the Unix epoch.
    pub unix_ms: Option<u64>,
    /// Requests written.
    pub sent: u64,
    /// Responses completed.
    pub completed: u64,
    /// Completed responses that failed (status ≥ 400 or a check).
    pub failed: u64,
    /// Errors by kind (`{connect, timeout, reset, protocol, closed}`, as the RunResult's).
    pub errors: ErrorCounts,
    /// `-R`, when the run has one.
    pub target_rps: Option<f64>,
    /// Virtual users active (ramp mode).
    pub users: Option<u64>,
    /// TCP connections established in the second.
    pub connections_opened: u64,
    /// Volley's own CPU.
    pub client: ClientJson,
    /// The monitored server's last closed second (`--pid`), or null.
    pub server: Option<ServerJson>,
    /// The second's corrected latency, µs, HdrHistogram V2 compressed, base64.
    pub latency_hdr: String,
    /// The second's service time, likewise.
    pub service_time_hdr: String,
}

/// The monitored server in its last closed second.
#[derive(Debug, Clone, Serialize)]
pub struct ServerJson {
    /// Seconds from t0 at the end of the server's second.
    pub t_s: f64,
    /// User CPU, percent of one core.
    pub cpu_user_pct: f64,
    /// System CPU, percent of one core.
    pub cpu_sys_pct: f64,
    /// Resident memory of the tree.
    pub rss_bytes: u64,
    /// Threads of the tree.
    pub threads: u64,
    /// Syscalls per second (null when not counted).
    pub syscalls_per_s: Option<f64>,
    /// Context switches per second (voluntary + involuntary).
    pub ctx_switches_per_s: f64,
    /// The server's stop-the-world pauses since t0: a JVM's counters, or the lines appended
    /// to `--gc-log` (null with neither).
    pub gc: Option<volley_monitor::gc::counters::LiveGc>,
}

impl From<&server_monitor::Tick> for ServerJson {
    fn from(t: &server_monitor::Tick) -> Self {
        let per_s = |n: u64| (n as f64 / t.interval_s.max(1e-9) * 10.0).round() / 10.0;
        ServerJson {
            t_s: t.sample.t_s,
            cpu_user_pct: t.sample.cpu_user_pct,
            cpu_sys_pct: t.sample.cpu_sys_pct,
            rss_bytes: t.sample.rss_bytes,
            threads: t.sample.threads,
            syscalls_per_s: t.syscalls.map(per_s),
            ctx_switches_per_s: per_s(t.ctx.voluntary + t.ctx.involuntary),
            gc: t.gc,
        }
    }
}

/// Volley's CPU in one second.
#[derive(Debug, Serialize)]
pub struct ClientJson {
    /// Percent of one core (user + system).
    pub cpu_pct: f64,
    /// The cores volley may use: `cpu_pct / cores` near 100 is a saturated client.
    pub cores: usize,
}

/// Feeds the page and the metrics.
pub struct LiveObserver {
    feed: Option<Arc<Feed>>,
    totals: Arc<Mutex<Totals>>,
    target_rps: Option<f64>,
    cores: usize,
    next_t_s: u64,
    last_cpu_s: Option<f64>,
    server: LatestTick,
    /// t0 on the wall clock, ms since the Unix epoch.
    t0_unix_ms: Option<u64>,
}

impl LiveObserver {
    /// An observer for a run of `-R target_rps` on `cores` cores; `feed` when a page watches;
    /// `server` where the server monitor (if any) keeps its latest second.
    pub fn new(
        feed: Option<Arc<Feed>>,
        totals: Arc<Mutex<Totals>>,
        target_rps: Option<f64>,
        cores: usize,
        server: LatestTick,
    ) -> Self {
        totals.lock().unwrap_or_else(|e| e.into_inner()).target_rps = target_rps;
        LiveObserver {
            feed,
            totals,
            target_rps,
            cores: cores.max(1),
            next_t_s: 0,
            last_cpu_s: None,
            server,
            t0_unix_ms: None,
        }
    }

    fn cpu_pct(&mut self, interval_s: f64) -> (f64, f64) {
        let (u, s, _) = rusage_self();
        let now = u + s;
        let pct = match self.last_cpu_s.replace(now) {
            Some(before) if interval_s > 0.0 => {
                ((now - before) / interval_s * 1000.0).round() / 10.0
            }
            _ => 0.0,
        };
        (pct, now)
    }

    fn push(&self, tick: &Tick) {
        if let Some(feed) = &self.feed {
            let json = serde_json::to_string(tick).expect("a tick serializes");
            feed.tick(tick.t_s, &json);
        }
    }
}

impl Observer for LiveObserver {
    fn start(&mut self, started_at: std::time::SystemTime) {
        self.t0_unix_ms = started_at
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .map(|d| d.as_millis() as u64);
    }

    fn measuring(&mut self, _now_ns: u64) {
        let (u, s, _) = rusage_self();
        self.last_cpu_s = Some(u + s);
    }

    fn second(&mut self, b: &FinishedBucket, _elapsed_s: f64) {
        let empty = encode(&new_hist());
        // Seconds in which no worker reported anything are ticks of zeros: the page's time
        // axis has no holes.
        while self.next_t_s < b.point.t_s {
            let t_s = self.next_t_s;
            self.next_t_s += 1;
            self.push(&Tick {
                t_s,
                interval_s: 1.0,
                unix_ms: self.t0_unix_ms.map(|t| t + t_s * 1000),
                sent: 0,
                completed: 0,
                failed: 0,
                errors: ErrorCounts::default(),
                target_rps: self.target_rps,
                users: None,
                connections_opened: 0,
                client: ClientJson {
                    cpu_pct: 0.0,
                    cores: self.cores,
                },
                server: None,
                latency_hdr: empty.clone(),
                service_time_hdr: empty.clone(),
            });
        }
        self.next_t_s = b.point.t_s + 1;
        let (cpu_pct, cpu_s) = self.cpu_pct(b.point.interval_s);
        let server = self
            .server
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(ServerJson::from);
        let tick = Tick {
            t_s: b.point.t_s,
            interval_s: b.point.interval_s,
            unix_ms: self.t0_unix_ms.map(|t| t + b.point.t_s * 1000),
            sent: b.point.sent,
            completed: b.point.completed,
            failed: b.counts.failed(),
            errors: b.counts.errors,
            target_rps: self.target_rps,
            users: b.point.users,
            connections_opened: b.counts.connections_opened,
            client: ClientJson {
                cpu_pct,
                cores: self.cores,
            },
            server: server.clone(),
            latency_hdr: encode(&b.latency),
            service_time_hdr: encode(&b.service),
        };
        self.push(&tick);
        let mut t = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        let _ = t.latency.add(&b.latency);
        let _ = t.service.add(&b.service);
        t.counts.merge(&b.counts);
        t.achieved_rps = b.point.completed as f64 / b.point.interval_s.max(1e-9);
        t.users = b.point.users;
        t.client_cpu_s = cpu_s;
        t.server = server;
    }
}

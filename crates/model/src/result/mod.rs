//! The file formats: the RunResult of one run (`"schema": "volley.run/1"`), the index of a
//! suite's results folder (`suite.json`, [`suite`]), and their typed vocabularies ([`kinds`],
//! [`warning`]). Keys carry their units. Readers must ignore unknown keys; new optional keys
//! may appear without a schema bump (docs/contract.md). This module depends on `stats` only:
//! everything that makes or reads results sits above it.

pub mod capacity;
pub mod endpoint;
mod failed;
pub mod gc;
pub mod identity;
pub mod journey;
pub mod kinds;
pub mod profile;
pub mod redact;
pub mod suite;
mod target;
pub mod transport;
pub mod warning;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::stats::{ErrorCounts, Percentiles, TimePoint};
pub use gc::{GcSource, ServerGc};
pub use kinds::{Arrivals, BuildStatus, CellStatus, IoBackend, Mode, SuiteState};
pub use suite::{
    axes_label, BuildRow, CapacityRow, Headline, SuiteEnv, SuiteIndex, SuitePinning, SuiteRow,
    SUITE_SCHEMA,
};
pub use target::TargetInfo;
pub use transport::{GrpcInfo, ProxyInfo, QuicInfo, SetupTimes, TlsInfo, WsInfo, ZeroRtt};
pub use warning::{Warning, WarningKind};

/// A result file that cannot be used: not JSON of the expected shape, or another schema.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// Not JSON, or keys missing or of the wrong type.
    #[error("{0}")]
    Json(#[from] serde_json::Error),
    /// A `schema` other than the one expected.
    #[error("schema `{found}` is not {expected}")]
    Schema {
        /// The file's `schema`.
        found: String,
        /// What the reader wanted.
        expected: &'static str,
    },
}

/// Schema identifier of `RunResult`.
pub const RUN_SCHEMA: &str = "volley.run/1";

/// The result of one `volley run`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunResult {
    /// Always `volley.run/1`.
    pub schema: String,
    /// Version of volley that produced it.
    pub volley_version: String,
    /// The command line.
    pub argv: Vec<String>,
    /// Wall clock at t0 (end of warm-up), RFC 3339 with microseconds.
    pub started_at: String,
    /// Stopped by Ctrl-C (results up to then).
    pub interrupted: bool,
    /// Where it ran.
    pub env: Env,
    /// What was loaded.
    pub target: TargetInfo,
    /// How it was loaded.
    pub load: LoadInfo,
    /// Hash of the normalised load ([`identity`]): runs are repetitions of one test only when
    /// it is equal (absent in results written before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_id: Option<String>,
    /// From t0 to the later of the send-window end and the last measured response.
    pub elapsed_s: f64,
    /// completed / elapsed_s, all statuses.
    pub throughput_rps: f64,
    /// Open loop: requests written in the send window ÷ its length — the rate the server
    /// was offered (null in closed loop).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rps: Option<f64>,
    /// Request counters; sent = completed + (errors − errors.connect) + unfinished.
    pub requests: Requests,
    /// Bytes on the wire.
    pub bytes: Bytes,
    /// Responses per status code.
    pub status_codes: BTreeMap<String, u64>,
    /// Errors by kind.
    pub errors: ErrorCounts,
    /// Responses that failed a check (`--expect-*`), by check: `status`, `body_contains`,
    /// `body_regex`, `header`, `size` (absent without checks; each failed response is once
    /// in `requests.failed`, never in `errors`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub checks: BTreeMap<String, u64>,
    /// Connection counters.
    pub connections: Connections,
    /// Corrected latency (open loop: from the due time; closed loop: the service time).
    pub latency_us: Percentiles,
    /// The corrected latencies include requests due but never sent, at their lower bound
    /// (end of the send window − due time): the percentiles are lower bounds.
    #[serde(default)]
    pub latency_lower_bound: bool,
    /// From the first byte written to the last byte read.
    pub service_time_us: Percentiles,
    /// Open loop: the pacer's own lag, write time − the later of the due time and the moment a
    /// connection was free for the request (waiting for a busy server's connection is in
    /// `latency_us`, not here); null in closed loop.
    pub schedule_lag_us: Option<Percentiles>,
    /// Connect and TLS handshake times (`connect_us`, `tls_handshake_us`), apart from the
    /// request latencies.
    #[serde(flatten)]
    pub setup: SetupTimes,
    /// `latency_us` histogram, HdrHistogram V2 compressed, base64.
    pub latency_hdr: String,
    /// `service_time_us` histogram, same encoding.
    pub service_time_hdr: String,
    /// Per-second summary.
    pub timeseries: Vec<TimePoint>,
    /// The load generator's own resource use.
    pub client: ClientInfo,
    /// Machine CPU split, one sample a second.
    pub machine: Machine,
    /// Server monitor (`--pid`); null when not monitored.
    pub server: Option<ServerInfo>,
    /// Warm-up counters (excluded from everything above).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup: Option<Warmup>,
    /// Warnings the summary showed (sentences in the JSON).
    #[serde(default)]
    pub warnings: Vec<Warning>,
    /// `--threshold` criteria and whether they held (absent without thresholds).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub thresholds: Vec<Checked>,
    /// `volley merge`: every input shard, in the order given (absent on a plain run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shards: Vec<Shard>,
    /// `--requests-file`: each named request's results, in the order of the file (absent
    /// without named requests; the numbers above are the whole mix's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<endpoint::EndpointResult>,
    /// A journey's users (a requests file that captures values, keeps cookies or has once
    /// steps; absent otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journey: Option<journey::JourneyResult>,
    /// `--shard` / `--start-at`: which shard of the load this run was and how it started
    /// (null on a plain run).
    #[serde(default)]
    pub shard: Option<ShardInfo>,
}

/// One input of a merged result (`volley merge`): what cannot be added up without losing it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Shard {
    /// The shard's command line.
    pub argv: Vec<String>,
    /// The shard's t0, RFC 3339 with microseconds.
    pub started_at: String,
    /// Where the shard ran.
    pub env: Env,
    /// The shard's own resource use.
    pub client: ClientInfo,
    /// `--shard`: its index (absent for a plain run merged by hand).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<u64>,
    /// Its completed responses per second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub throughput_rps: Option<f64>,
    /// Open loop: the rate it wrote.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub achieved_rps: Option<f64>,
    /// `--start-at`: how late it started, µs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_late_us: Option<i64>,
}

/// Environment of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Env {
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// Cores volley may use.
    pub cores: usize,
    /// Kernel release.
    pub kernel: Option<String>,
    /// CPU pinning.
    pub pinning: Pinning,
}

/// CPUs the client (and, in a suite, the server) were allowed to use.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pinning {
    /// The client's CPU list, e.g. "0-1".
    pub client_cpus: String,
    /// The server's CPU list: where volley pinned it, else the affinity of `--pid` when it
    /// is fewer than the CPUs online (whoever set it).
    pub server_cpus: Option<String>,
}

/// `shard`: one shard of a load run by several generators (docs/contract.md, "Shards").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardInfo {
    /// This shard, from 0.
    pub index: u64,
    /// How many shards the load has.
    pub count: u64,
    /// `--start-at` as given (null without it).
    pub start_at: Option<String>,
    /// The whole load's identity (its `load_id`): every shard of one load has the same.
    pub config_hash: String,
    /// The wall clock's error bound when it started (adjtimex `maxerror`), µs.
    pub clock_maxerror_us: Option<u64>,
    /// A time service kept the clock synchronised.
    #[serde(default)]
    pub clock_synchronised: Option<bool>,
    /// `--clock-budget`, µs (null: `off`).
    #[serde(default)]
    pub clock_budget_us: Option<u64>,
    /// How late after `--start-at` the run started, µs (null without it).
    pub start_late_us: Option<i64>,
    /// `--max-late`, µs (null without `--start-at`).
    #[serde(default)]
    pub max_late_us: Option<u64>,
}

/// `target.requests_file`: which workload ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestsFileInfo {
    /// The file as given.
    pub path: String,
    /// SHA-256 of its bytes and those of the files it names (data, bodies): enters `load_id`.
    pub sha256: String,
    /// Requests in it.
    pub requests: usize,
    /// `weighted` or `sequence`.
    pub order: String,
    /// Names, user and default ones and `other` (`endpoints[]`): at most 101.
    pub names: usize,
}

/// The receive window HTTP/2 connections announce unless `--h2-window` says otherwise:
/// 2^31 − 1, the largest there is (small windows throttle a benchmark, not the server).
pub const DEFAULT_H2_WINDOW: u32 = (1 << 31) - 1;

/// `target.h2`: how HTTP/2 went (docs/contract.md, "HTTP/2").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct H2Info {
    /// Connections that spoke HTTP/2 (warm-up and reconnects included).
    pub connections: u64,
    /// The smallest SETTINGS_MAX_CONCURRENT_STREAMS the server sent; null when it set none.
    pub max_concurrent_streams: Option<u64>,
    /// Streams in flight per connection at most: `--streams` capped by the server's limit.
    pub streams_per_connection: u64,
    /// GOAWAY frames received (each ended a connection; streams it had not processed went
    /// again on another).
    pub goaways: u64,
    /// The receive window the client announced, per stream and per connection (bytes).
    pub window: u64,
}

fn one() -> u64 {
    1
}

/// Load parameters.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LoadInfo {
    /// Closed loop, open loop or virtual users.
    pub mode: Mode,
    /// Connections.
    pub connections: u64,
    /// Open loop: the most connections it could open on demand (`--max-connections`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_connections: Option<u64>,
    /// Worker threads.
    pub threads: u64,
    /// Open-loop rate; null in closed loop.
    pub rate_rps: Option<f64>,
    /// Open loop: how arrivals are spread; null in closed loop.
    pub arrivals: Option<Arrivals>,
    /// Seed of Poisson arrivals; null otherwise.
    pub seed: Option<u64>,
    /// Measured send window; null with `-n`.
    pub duration_s: Option<f64>,
    /// Requests (`-n`); null with a duration.
    #[serde(default)]
    pub requests: Option<u64>,
    /// Warm-up length.
    pub warmup_s: f64,
    /// Connections reused.
    pub keepalive: bool,
    /// Requests outstanding per connection.
    pub pipeline: u64,
    /// HTTP/2 concurrent streams per connection asked for (`--streams`; 1 in results
    /// written before HTTP/2).
    #[serde(default = "one")]
    pub streams: u64,
    /// Per-request timeout.
    pub timeout_s: f64,
    /// Ramp mode: the most virtual users (each holds one connection).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub users: Option<u64>,
    /// Ramp mode with `--users`: users added per second (null: all at once).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spawn_rate: Option<f64>,
    /// Ramp mode with `--stages`: each stage's length and users at its end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stages: Option<Vec<StageInfo>>,
    /// `--rate-stages`: the open loop's rate over time, the whole load's (a shard takes every
    /// N-th request of its schedule); `rate_rps` is then their mean.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_stages: Option<Vec<RateStageInfo>>,
    /// Pause between a response and the connection's next request.
    #[serde(default)]
    pub think_time_s: f64,
}

impl LoadInfo {
    /// `--rate-stages` as written (`2s:1,000, 8s:10,000`), for the reports' descriptions.
    pub fn stages_text(&self) -> Option<String> {
        let stages = self.rate_stages.as_ref()?;
        let parts: Vec<String> = stages
            .iter()
            .map(|s| {
                format!(
                    "{}:{}",
                    crate::units::seconds(s.duration_s),
                    crate::units::rate(s.rate_rps)
                )
            })
            .collect();
        Some(parts.join(", "))
    }
}

/// One `--rate-stages` stage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RateStageInfo {
    /// How long the stage lasts (0: a step).
    pub duration_s: f64,
    /// Requests per second at its end (it ramps linearly from the previous stage's, the first
    /// from 0).
    pub rate_rps: f64,
}

/// One `--stages` entry.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StageInfo {
    /// Stage length.
    pub duration_s: f64,
    /// Users at the end of the stage.
    pub users: u64,
}

/// Request counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Requests {
    /// First byte written.
    pub sent: u64,
    /// Complete responses, any status.
    pub completed: u64,
    /// Σ errors.
    pub errors: u64,
    /// Still in flight after the drain.
    pub unfinished: u64,
    /// Due but never written (open loop).
    pub unsent: u64,
    /// Completed responses with status ≥ 400 (part of `completed`, never of `errors`).
    #[serde(default)]
    pub failed: u64,
    /// Completed responses that failed at least one check (`--expect-*`), whatever their
    /// status, each once (the `checks` threshold's count); absent without checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed_checks: Option<u64>,
    /// A journey's steps not sent because their user lacked a value they need (a capture
    /// failed); absent without a journey.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<u64>,
}

/// The sum of two optional counters: absent only when both are.
pub fn add_counts(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    match (a, b) {
        (None, None) => None,
        _ => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    }
}

/// Shards of one load sent disjoint requests, so their counters add (`volley merge`).
impl std::ops::AddAssign for Requests {
    fn add_assign(&mut self, o: Requests) {
        // Destructured so that a new counter cannot be left out of the sum unnoticed.
        let Requests {
            sent,
            completed,
            errors,
            unfinished,
            unsent,
            failed,
            failed_checks,
            skipped,
        } = o;
        self.sent += sent;
        self.completed += completed;
        self.errors += errors;
        self.unfinished += unfinished;
        self.unsent += unsent;
        self.failed += failed;
        self.failed_checks = add_counts(self.failed_checks, failed_checks);
        self.skipped = add_counts(self.skipped, skipped);
    }
}

impl std::iter::Sum for Requests {
    fn sum<I: Iterator<Item = Requests>>(iter: I) -> Requests {
        let zero = Requests {
            sent: 0,
            completed: 0,
            errors: 0,
            unfinished: 0,
            unsent: 0,
            failed: 0,
            failed_checks: None,
            skipped: None,
        };
        iter.fold(zero, |mut total, r| {
            total += r;
            total
        })
    }
}

/// Bytes on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Bytes {
    /// Request bytes written.
    pub sent: u64,
    /// Response bytes read.
    pub received: u64,
}

/// Shards of one load used their own connections, so their byte counts add (`volley merge`).
impl std::ops::AddAssign for Bytes {
    fn add_assign(&mut self, o: Bytes) {
        // Destructured so that a new counter cannot be left out of the sum unnoticed.
        let Bytes { sent, received } = o;
        self.sent += sent;
        self.received += received;
    }
}

impl std::iter::Sum for Bytes {
    fn sum<I: Iterator<Item = Bytes>>(iter: I) -> Bytes {
        let zero = Bytes {
            sent: 0,
            received: 0,
        };
        iter.fold(zero, |mut total, b| {
            total += b;
            total
        })
    }
}

/// Connection counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connections {
    /// TCP connections established in the measured window (those from the warm-up are in
    /// `warmup.connections_opened`).
    pub opened: u64,
    /// Connections the server closed (with `Connection: close`, silently, or by reset).
    pub closed_by_server: u64,
    /// Fresh connections on which the server spoke before any request was sent; each was
    /// dropped and replaced after a back-off (absent when none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub unsolicited: u64,
    /// Open loop with `--max-connections`: the most connections open at once (absent
    /// otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_open: Option<u64>,
}

/// Shards of one load opened their own connections, so the counts add (`volley merge`).
impl std::ops::AddAssign for Connections {
    fn add_assign(&mut self, o: Connections) {
        // Destructured so that a new counter cannot be left out of the sum unnoticed.
        let Connections {
            opened,
            closed_by_server,
            unsolicited,
            max_open,
        } = o;
        self.opened += opened;
        self.closed_by_server += closed_by_server;
        self.unsolicited += unsolicited;
        // Shards on separate machines: the sum of their peaks bounds the load's peak.
        self.max_open = match (self.max_open, max_open) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
    }
}

impl std::iter::Sum for Connections {
    fn sum<I: Iterator<Item = Connections>>(iter: I) -> Connections {
        let zero = Connections {
            opened: 0,
            closed_by_server: 0,
            unsolicited: 0,
            max_open: None,
        };
        iter.fold(zero, |mut total, c| {
            total += c;
            total
        })
    }
}

/// Volley's own resource use over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClientInfo {
    /// User CPU seconds.
    pub cpu_user_s: f64,
    /// System CPU seconds.
    pub cpu_sys_s: f64,
    /// Peak resident memory.
    pub rss_max_bytes: u64,
    /// Highest 1 s CPU use, percent of one core.
    pub cpu_pct_max: f64,
    /// The numbers may describe the client rather than the server.
    pub saturated: bool,
    /// Fraction of 1 s samples that were saturated.
    pub saturated_fraction: f64,
    /// The I/O backend the engine used (absent in files of versions before `--io`, and in
    /// merged shards that differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub io: Option<IoBackend>,
    /// Other processes took volley's CPUs: its threads waited on run queues without volley
    /// being busy (measured, not inferred from lag; docs/contract.md, "client check").
    #[serde(default)]
    pub starved: bool,
    /// Fraction of 1 s samples in which the client was starved.
    #[serde(default)]
    pub starved_fraction: f64,
    /// Highest 1 s run-queue wait of a worker thread, percent of the second.
    #[serde(default)]
    pub wait_pct_max: f64,
    /// The processes that used the most CPU during the window, volley's own left out (at
    /// most 3, each at least 5 % of a core).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub busiest_others: Vec<OtherProcess>,
}

/// A process that used CPU during the window.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherProcess {
    /// Its pid.
    pub pid: i32,
    /// Its command name (/proc/PID/comm).
    pub command: String,
    /// Its CPU over the window, percent of one core.
    pub cpu_pct: f64,
}

/// One second of the machine view (percent of all CPUs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct MachineSample {
    /// Seconds from t0.
    pub t_s: f64,
    /// user + nice.
    pub user_pct: f64,
    /// system.
    pub system_pct: f64,
    /// softirq (network processing lands here).
    pub softirq_pct: f64,
    /// iowait.
    pub iowait_pct: f64,
    /// idle.
    pub idle_pct: f64,
    /// steal: time a hypervisor gave this machine's CPUs to others (absent before 0.1's
    /// busy-machine evidence).
    #[serde(default)]
    pub steal_pct: f64,
    /// CPU pressure (PSI `some`): the share of the second in which a runnable task waited for
    /// a CPU; absent where the kernel has no /proc/pressure/cpu.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_pressure_pct: Option<f64>,
    /// volley's own CPU that second, percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_cpu_pct: Option<f64>,
    /// The longest a volley worker thread waited on a run queue that second, percent of the
    /// second.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_wait_pct: Option<f64>,
}

/// A `--threshold` checked against a result (kept in the RunResult's `thresholds`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Checked {
    /// The threshold as written.
    pub threshold: String,
    /// The measured value in the threshold's unit (µs, req/s, count or %); null when there
    /// was nothing to measure (no response, no monitor), which fails.
    pub actual: Option<f64>,
    /// Whether it held.
    pub pass: bool,
    /// Not written by the user: the bound declared checks imply (`checks<=1%`); absent (false)
    /// for the others.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
}

/// Machine view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// One sample a second.
    pub samples: Vec<MachineSample>,
}

/// The monitored server's process tree over the measured window (docs/contract.md, "Server monitor").
/// CPU, context switches, syscalls and I/O are deltas between the window's edges (t0 and
/// the end); memory and threads are maxima of the 10 Hz samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerInfo {
    /// Every process of the tree seen in the window (the first 256).
    pub pids: Vec<i32>,
    /// User CPU time of the tree.
    pub cpu_user_s: f64,
    /// System CPU time of the tree.
    pub cpu_sys_s: f64,
    /// Peak Σ RSS (pages shared between processes count once per process).
    pub rss_max_bytes: u64,
    /// Peak number of threads.
    pub threads_max: u64,
    /// Voluntary context switches, Σ over every thread seen.
    pub ctx_switches_voluntary: u64,
    /// Involuntary context switches (preemptions), Σ over every thread seen.
    pub ctx_switches_involuntary: u64,
    /// Syscalls entered (perf `raw_syscalls:sys_enter`); null when they cannot be counted.
    pub syscalls: Option<u64>,
    /// Why `syscalls` is null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub syscalls_unavailable_reason: Option<String>,
    /// The most frequent syscalls (at most 10) among those counted by name.
    pub syscalls_top: Vec<SyscallCount>,
    /// /proc/PID/io `syscr`: read-type calls (not recv/epoll/accept/futex: not "syscalls").
    pub io_calls_read: u64,
    /// /proc/PID/io `syscw`: write-type calls.
    pub io_calls_write: u64,
    /// /proc/PID/io `rchar`.
    pub io_bytes_read: u64,
    /// /proc/PID/io `wchar`.
    pub io_bytes_written: u64,
    /// Window totals divided by `requests.completed`.
    pub per_request: PerRequest,
    /// One sample a second (or per interval when longer), time from t0 at the sample's end.
    pub samples: Vec<ServerSample>,
    /// Peak number of live processes.
    #[serde(default)]
    pub processes_max: u64,
    /// From the first edge (t0) to the last, seconds.
    #[serde(default)]
    pub window_s: f64,
    /// Sampling interval (`--monitor-interval`), seconds.
    #[serde(default)]
    pub sample_interval_s: f64,
    /// When the monitored process exited, seconds from t0; absent while it lived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exited_at_s: Option<f64>,
    /// Processes of the tree that exited during the window, in words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// The server's garbage collections in the window (a JVM's counter file, or the
    /// runtime's GC log); null when none was found.
    #[serde(default)]
    pub gc: Option<ServerGc>,
    /// `--profile`: where the tree's CPU went, from its sampled stacks (absent without it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<profile::ProfileInfo>,
}

/// One entry of the syscall top list.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyscallCount {
    /// Kernel name (`sys_enter_<name>` tracepoint), e.g. `writev`, `newfstatat`.
    pub name: String,
    /// Calls in the window.
    pub count: u64,
}

/// Server cost per completed request; every value is null when nothing completed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct PerRequest {
    /// CPU time (user + system), µs.
    pub cpu_us: Option<f64>,
    /// User CPU time, µs.
    pub user_us: Option<f64>,
    /// System CPU time, µs.
    pub sys_us: Option<f64>,
    /// Context switches (voluntary + involuntary).
    pub ctx_switches: Option<f64>,
    /// Syscalls; null also when syscalls are not counted.
    pub syscalls: Option<f64>,
}

/// One point of the server's series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerSample {
    /// End of the sample's interval, seconds from t0.
    pub t_s: f64,
    /// User CPU over the interval, percent of one core (above 100 with several busy cores).
    pub cpu_user_pct: f64,
    /// System CPU over the interval, percent of one core.
    pub cpu_sys_pct: f64,
    /// Peak Σ RSS in the interval.
    pub rss_bytes: u64,
    /// Peak threads in the interval.
    pub threads: u64,
    /// Σ open descriptors at the interval's end (absent when unreadable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fds: Option<u64>,
}

/// Warm-up counters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Warmup {
    /// Warm-up length.
    pub duration_s: f64,
    /// Requests written.
    pub sent: u64,
    /// Responses.
    pub completed: u64,
    /// Errors.
    pub errors: u64,
    /// Connections opened during the warm-up (kept for the measured window).
    #[serde(default)]
    pub connections_opened: u64,
}

impl RunResult {
    /// Parses a RunResult, checking the schema identifier.
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        let mut r: RunResult = serde_json::from_str(text)?;
        if r.schema != RUN_SCHEMA {
            return Err(ReadError::Schema {
                found: r.schema,
                expected: RUN_SCHEMA,
            });
        }
        // Files of versions before redaction carry secrets verbatim: nothing read passes them on.
        r.argv = redact::argv(&r.argv);
        r.target.url = redact::url(&r.target.url).into_owned();
        for s in &mut r.shards {
            s.argv = redact::argv(&s.argv);
        }
        Ok(r)
    }
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

//! `suite.json`: the index of a `volley bench` results folder, and the axes labels that name
//! a suite's cells everywhere.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{BuildStatus, CellStatus, Mode, ReadError, RunResult, SuiteState};

/// Schema identifier of `SuiteIndex`.
pub const SUITE_SCHEMA: &str = "volley.suite/1";

/// `suite.json`: the index of a suite's results folder, rewritten after every cell (docs/contract.md, "Suites").
/// Each finished cell's RunResult is a file of its own, named by `rows[].path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteIndex {
    /// Always `volley.suite/1`.
    pub schema: String,
    /// Version of volley that ran the suite.
    pub volley_version: String,
    /// The suite file as given.
    pub suite_file: String,
    /// The suite file's content as JSON.
    pub suite: serde_json::Value,
    /// `[suite] baseline`: the server the reports compare every other with.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<String>,
    /// `--only` names, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub only: Vec<String>,
    /// Where it ran.
    pub env: SuiteEnv,
    /// Wall clock when the suite started, RFC 3339.
    pub started_at: String,
    /// Wall clock when it ended; null while it runs.
    pub finished_at: Option<String>,
    /// Running, done or interrupted.
    pub state: SuiteState,
    /// Builds, one per managed server.
    pub builds: Vec<BuildRow>,
    /// One row per cell, in run order (rep -> server -> cell).
    pub rows: Vec<SuiteRow>,
}

/// Environment of a suite.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteEnv {
    /// CPU model name.
    pub cpu_model: Option<String>,
    /// CPUs online.
    pub cores: usize,
    /// Kernel release.
    pub kernel: Option<String>,
    /// What was pinned where (`null`: not pinned).
    pub pinning: SuitePinning,
    /// Versions: `volley`, and per server the first line of its `version` command.
    pub tools: BTreeMap<String, String>,
}

/// CPU lists applied with `sched_setaffinity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuitePinning {
    /// volley's CPUs during the measurements.
    pub client_cpus: Option<String>,
    /// Every server process's CPUs.
    pub server_cpus: Option<String>,
}

/// One server build.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BuildRow {
    /// The server.
    pub server: String,
    /// Pending, ok or failed.
    pub status: BuildStatus,
    /// Why it failed.
    pub reason: Option<String>,
    /// Build output, relative to the results folder.
    pub log: String,
    /// How long it took.
    pub wall_s: Option<f64>,
}

/// One cell of the matrix and what became of it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteRow {
    /// Server name.
    pub server: String,
    /// Scenario name.
    pub scenario: String,
    /// The cell's axis values (`{"connections": "3"}`); empty for a scenario without lists.
    pub axes: BTreeMap<String, String>,
    /// Repetition, from 1.
    pub rep: u32,
    /// Pending, ok, failed, interrupted or skipped.
    pub status: CellStatus,
    /// Why it failed or was skipped.
    pub reason: Option<String>,
    /// The server's last stderr lines, with a failure.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stderr_tail: Vec<String>,
    /// Other remarks (a server that needed SIGKILL, say).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// A control cell (`control = "closed-port"`): never a suite failure.
    #[serde(default)]
    pub control: bool,
    /// The RunResult, relative to the results folder (null when nothing was measured).
    pub path: Option<String>,
    /// The server's stderr, relative to the results folder (managed servers).
    pub log: Option<String>,
    /// `volley run` flags of the cell (without URL and harness flags).
    pub flags: Vec<String>,
    /// Headline numbers of the RunResult.
    pub headline: Option<Headline>,
    /// Wall time of the cell: start, ready, warm-up, run, stop.
    pub wall_s: Option<f64>,
    /// A capacity cell (`capacity = {…}` scenario): its answer; `path` is then its
    /// `volley.capacity/1` file and `headline` is null.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacityRow>,
}

/// The answer of a capacity cell, in `suite.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityRow {
    /// The SLO, as written.
    pub slo: Vec<String>,
    /// The highest rate that met it (a lower bound unless `limited_by` is `slo`).
    pub max_rate_rps: Option<f64>,
    /// What stopped the search.
    pub limited_by: Option<super::capacity::LimitedBy>,
    /// The closed-loop maximum over the same connections.
    pub closed_loop_rps: Option<f64>,
    /// Runs of the search.
    pub steps: usize,
}

/// The numbers a suite table shows for a cell.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Headline {
    /// Closed loop, open loop or virtual users.
    pub mode: Mode,
    /// Completed responses per second.
    pub throughput_rps: f64,
    /// Completed responses.
    pub completed: u64,
    /// Errors of every kind.
    pub errors: u64,
    /// Corrected latency p50, µs.
    pub latency_p50_us: Option<u64>,
    /// Corrected latency p99, µs.
    pub latency_p99_us: Option<u64>,
    /// Server CPU per request, µs (null without monitor).
    pub server_cpu_us_per_request: Option<f64>,
    /// Server peak RSS (null without monitor).
    pub server_rss_max_bytes: Option<u64>,
    /// The client was saturated.
    pub client_saturated: bool,
    /// The corrected percentiles are lower bounds (open loop with unsent requests).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub latency_lower_bound: bool,
}

impl Headline {
    /// The headline numbers of a result.
    pub fn of(r: &RunResult) -> Headline {
        Headline {
            mode: r.load.mode,
            throughput_rps: r.throughput_rps,
            completed: r.requests.completed,
            errors: r.requests.errors,
            latency_p50_us: r.latency_us.p50,
            latency_p99_us: r.latency_us.p99,
            latency_lower_bound: r.latency_lower_bound,
            server_cpu_us_per_request: r.server.as_ref().and_then(|s| s.per_request.cpu_us),
            server_rss_max_bytes: r.server.as_ref().map(|s| s.rss_max_bytes),
            client_saturated: r.client.saturated,
        }
    }
}

impl SuiteIndex {
    /// Parses a suite index, checking the schema identifier.
    pub fn from_json(text: &str) -> Result<Self, ReadError> {
        let r: SuiteIndex = serde_json::from_str(text)?;
        if r.schema != SUITE_SCHEMA {
            return Err(ReadError::Schema {
                found: r.schema,
                expected: SUITE_SCHEMA,
            });
        }
        Ok(r)
    }
}

/// The reason of a `skipped` row that Ctrl-C kept from running (rows skipped for a missing
/// program say which program instead).
pub const SKIPPED_BY_INTERRUPT: &str = "interrupted before this cell";

/// `connections=3,rate=500`: axis values as they are shown and compared everywhere.
pub fn axes_label<'a>(axes: impl IntoIterator<Item = (&'a String, &'a String)>) -> String {
    axes.into_iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

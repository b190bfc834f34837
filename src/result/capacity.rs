//! `volley capacity`'s file format (`volley.capacity/1`): the SLO, the rate found, the bracket
//! and every step with its verdict (docs/contract.md, "Capacity").

use serde::{Deserialize, Serialize};

use crate::stats::Percentiles;

/// Schema identifier of [`CapacityResult`].
pub const CAPACITY_SCHEMA: &str = "volley.capacity/1";

/// What one step of the search showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The rate was kept and every SLO held.
    Pass,
    /// An SLO broke, or the server could not keep the rate (shortfall).
    Fail,
    /// Latency drifted up during the step: the rate is not sustained.
    Unstable,
    /// volley itself was the limit: the step says nothing about the server.
    Client,
}

impl Verdict {
    /// The word printed and written.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Fail => "fail",
            Verdict::Unstable => "unstable",
            Verdict::Client => "client",
        }
    }
}

/// What stopped the search from going higher.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitedBy {
    /// A rate above broke the SLO (or was not kept): the answer is the server's.
    Slo,
    /// volley saturated: the answer is a lower bound.
    Client,
    /// `--max-rate` passed: the server may sustain more.
    MaxRate,
}

/// The bracket: the highest rate that passed and the lowest that did not (null when none).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Bracket {
    /// Highest passing rate, req/s.
    pub low_rps: Option<f64>,
    /// Lowest rate that did not pass, req/s.
    pub high_rps: Option<f64>,
}

/// One measured step (one run; a repeated rate has one step per run).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityStep {
    /// The open-loop rate asked for, req/s.
    pub target_rps: f64,
    /// The rate written (`achieved_rps` of the run).
    pub achieved_rps: Option<f64>,
    /// What the step showed.
    pub verdict: Verdict,
    /// Why, in words.
    pub reason: String,
    /// Corrected latency of the run.
    pub latency_us: Percentiles,
    /// The monitored server's CPU µs per request (null without `--pid`).
    pub server_cpu_us_per_request: Option<f64>,
    /// The step's RunResult file.
    pub path: String,
    /// `--pid`: seconds spent waiting for the server to be idle before the step (at most 10;
    /// 0 without `--pid`).
    #[serde(default)]
    pub idle_wait_s: f64,
}

/// The result of one `volley capacity`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityResult {
    /// Always `volley.capacity/1`.
    pub schema: String,
    /// Version of volley that produced it.
    pub volley_version: String,
    /// The command line (secrets redacted).
    pub argv: Vec<String>,
    /// Wall clock at start, RFC 3339.
    pub started_at: String,
    /// Seconds from start to end.
    pub wall_s: f64,
    /// The URL loaded.
    pub url: String,
    /// The SLO, as written (`p99<10ms`).
    pub slo: Vec<String>,
    /// `--precision`: the bracket's width relative to its low end, percent.
    pub precision_pct: f64,
    /// Measured seconds per step.
    pub step_duration_s: f64,
    /// The highest rate that met the SLO (a lower bound when `limited_by` is `client` or
    /// `max_rate`); null when none did.
    pub max_rate_rps: Option<f64>,
    /// What stopped the search; null when no rate met the SLO or it was interrupted early.
    pub limited_by: Option<LimitedBy>,
    /// Highest passing and lowest failing rates.
    pub bracket: Bracket,
    /// Ctrl-C ended the search: the bracket is the one reached so far.
    pub interrupted: bool,
    /// Every finished step, in the order run.
    pub steps: Vec<CapacityStep>,
}

//! `volley capacity`'s file format (`volley.capacity/1`): the SLO, the rate found, the bracket
//! and every step with its verdict (docs/contract.md, "Capacity").

use serde::{Deserialize, Serialize};

use crate::stats::Percentiles;

/// Schema identifier of [`CapacityResult`].
pub const CAPACITY_SCHEMA: &str = "volley.capacity/1";

words! {
    /// What one step of the search showed.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Verdict {
        /// The rate was kept and every SLO held.
        Pass = "pass",
        /// An SLO broke, or the server could not keep the rate (shortfall).
        Fail = "fail",
        /// Latency drifted up during the step: the rate is not sustained.
        Unstable = "unstable",
        /// volley itself was the limit: the step says nothing about the server.
        Client = "client",
        /// Other processes starved volley of CPU (measured: its threads waited on run queues):
        /// the step says nothing about the server, nor about volley; it is run again.
        Machine = "machine",
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
    /// The machine was too busy to measure (volley starved at one rate three times): no
    /// answer.
    Machine,
}

words! {
    /// Where a step was in the search (`phase` of a step).
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Phase {
        /// The geometric ramp (×2 up, ÷2 down), its boundary rate's repetitions included.
        Ramp = "ramp",
        /// Bisection of the bracket.
        Bisect = "bisect",
        /// A rate run again to confirm the answer (the rate found, the bracket's high end).
        Confirm = "confirm",
        /// A window of `--sweep`: part of one run whose rate rose linearly (`window` says
        /// which part).
        Sweep = "sweep",
    }
}

/// One end of the bracket run again before the answer is given.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Recheck {
    /// The rate, req/s.
    pub rate_rps: f64,
    /// What the search had decided for it (`pass` for the answer).
    pub was: Verdict,
    /// What its confirmation runs decided (majority, as a bisection rate).
    pub now: Verdict,
    /// Its confirmation runs.
    pub runs: u32,
    /// How many of them passed.
    pub passes: u32,
}

impl Recheck {
    /// The runs contradicted the search: a pass that does not pass again, or a rate above
    /// the answer that passes now (a pass above a failure).
    pub fn contradicts(&self) -> bool {
        (self.was == Verdict::Pass) != (self.now == Verdict::Pass)
    }
}

/// How the answer was confirmed before it was given.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Confirmation {
    /// Every rate run again, in order: the answer, then the bracket's high end, each round.
    pub rechecks: Vec<Recheck>,
    /// The last round held: the answer passed again and the rate above it failed again (or
    /// was the client's limit, or there was none).
    pub reproduced: bool,
    /// Rounds run: a contradicted end moves the bracket, the search goes on from there and
    /// the new answer is confirmed again, at most 3 times.
    pub rounds: u32,
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
    /// Complete responses of the step.
    #[serde(default)]
    pub completed: u64,
    /// Errors of every kind (`requests.errors`).
    #[serde(default)]
    pub errors: u64,
    /// Responses with a status of 400 or more (`requests.failed`).
    #[serde(default)]
    pub failed: u64,
    /// Schedule lag p99 of the step, µs (how late volley wrote; the `client` verdict's
    /// measure).
    #[serde(default)]
    pub schedule_lag_p99_us: Option<u64>,
    /// The monitored server's mean CPU over the step, percent of one core (null without
    /// `--pid`). Divided by `server_cores`: its utilisation.
    #[serde(default)]
    pub server_cpu_pct: Option<f64>,
    /// Where in the search it ran (null in files from before confirmation).
    #[serde(default)]
    pub phase: Option<Phase>,
    /// A sweep's window: where in the sweep's run it lies (absent for a step of its own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window: Option<Window>,
}

/// Where a sweep's window lies in its run: `[start_s, start_s + duration_s)` from t0.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Window {
    /// Seconds from the run's t0 (after the warm-up).
    pub start_s: f64,
    /// Its length, seconds.
    pub duration_s: f64,
    /// The requests the schedule had due in it (the integral of the rate over it).
    pub due: f64,
    /// Requests written in it.
    pub sent: u64,
}

words! {
    /// Where a sweep's highest rate came from.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum SweepTop {
        /// `--max-rate`.
        MaxRate = "max_rate",
        /// 1.5 × the closed-loop maximum measured before the sweep.
        ClosedLoop = "closed_loop",
    }
}

/// `volley capacity --sweep`: one run whose rate rose linearly, read window by window
/// (docs/contract.md, "Capacity", "Sweep").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// The rate at the start of the ramp, req/s.
    pub from_rps: f64,
    /// The rate at its end, req/s.
    pub to_rps: f64,
    /// Where `to_rps` came from.
    pub top: SweepTop,
    /// The ramp's length (the run's measured window), seconds.
    pub duration_s: f64,
    /// Each window's length, seconds.
    pub window_s: f64,
    /// How much the rate rises over one window, req/s: the sweep cannot tell rates closer
    /// than this apart.
    pub resolution_rps: f64,
    /// The window where the SLO broke and stayed broken (its mean rate, req/s); null when
    /// none did.
    pub knee_rps: Option<f64>,
    /// Which way the sweep's reading errs and by how much, in words.
    pub bias: String,
    /// The run's RunResult file.
    pub path: String,
    /// The run was interrupted (Ctrl-C) or failed before its end: the windows are those it
    /// finished.
    #[serde(default)]
    pub cut_short: bool,
}

/// The closed-loop reference: the same connections, as fast as the server answers (wrk's
/// question), measured once before the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ClosedLoopStep {
    /// Completed responses per second.
    pub throughput_rps: f64,
    /// Connections it ran over.
    pub connections: u64,
    /// Its latency (service time: a closed loop waits for each response).
    pub latency_us: Percentiles,
    /// Errors of every kind.
    pub errors: u64,
    /// The monitored server's mean CPU, percent of one core (null without `--pid`).
    pub server_cpu_pct: Option<f64>,
    /// volley itself was saturated: the throughput is a lower bound of the server's.
    pub client_saturated: bool,
    /// Its RunResult file.
    pub path: String,
}

/// Why an answer is well above (over 110 % of) the closed-loop maximum of the same
/// connections, from the closed loop measured again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClosedLoopFinding {
    /// Measured again, the closed loop reached the answer: the first measurement was low (the
    /// machine, a pause of the server), and the share uses the higher one.
    FirstMeasurementLow,
    /// Measured again, it stayed below the answer, which reproduced: the server does less with
    /// every connection busy at once than at a paced rate (seen with Java's HttpServer).
    ServerSlowerWhenSaturated,
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
    /// Connections of every step (`-c`).
    #[serde(default)]
    pub connections: u64,
    /// The lowest rate run (what "no rate meets the SLO" names).
    #[serde(default)]
    pub lowest_tried_rps: Option<f64>,
    /// Why a step could not run, when one could not (exit 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Runs of each bisection rate and the rule that decides it, e.g. `2 of 3 runs pass`.
    #[serde(default)]
    pub repeat_rule: String,
    /// The CPUs the monitored server may run on (its affinity), the 100 % of its
    /// utilisation; null without `--pid`.
    #[serde(default)]
    pub server_cores: Option<f64>,
    /// The closed-loop maximum over the same connections, measured first (null with
    /// `--no-closed-loop`, or when it could not run).
    #[serde(default)]
    pub closed_loop: Option<ClosedLoopStep>,
    /// How the answer was confirmed (null when there was no answer to confirm, or in files
    /// from before confirmation).
    #[serde(default)]
    pub confirmation: Option<Confirmation>,
    /// The closed loop measured again, when the answer was well above the first measurement
    /// (null otherwise).
    #[serde(default)]
    pub closed_loop_again: Option<ClosedLoopStep>,
    /// Which explanation the numbers support when the answer is well above the closed-loop
    /// maximum (null otherwise).
    #[serde(default)]
    pub closed_loop_finding: Option<ClosedLoopFinding>,
    /// Remarks that are not verdicts (a server still busy before a step, say).
    #[serde(default)]
    pub notes: Vec<String>,
    /// Where it ran (the first measurement's `env`; null when nothing was measured).
    #[serde(default)]
    pub env: Option<super::Env>,
    /// `--sweep`: the run whose windows are the steps of phase `sweep` (absent for a search).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sweep: Option<Sweep>,
}

impl CapacityResult {
    /// The step the answer rests on: the last passing run at `max_rate_rps`.
    pub fn step_at_max(&self) -> Option<&CapacityStep> {
        let m = self.max_rate_rps?;
        self.steps
            .iter()
            .rev()
            .find(|s| s.target_rps == m && s.verdict == Verdict::Pass)
    }

    /// The last run at the bracket's high end (why the search went no higher).
    pub fn step_above(&self) -> Option<&CapacityStep> {
        let h = self.bracket.high_rps?;
        self.steps.iter().rev().find(|s| s.target_rps == h)
    }

    /// The sustainable rate as a share of the closed-loop maximum (the coordinated-omission
    /// lesson in one number); null when either is missing.
    pub fn share_of_closed_loop(&self) -> Option<f64> {
        let c = self.closed_loop_reference()?.throughput_rps;
        let m = self.max_rate_rps?;
        (c > 0.0).then(|| m / c)
    }

    /// The closed-loop maximum the answer is set beside: the higher of its measurements (a
    /// second one is taken only when the first was well below the answer).
    pub fn closed_loop_reference(&self) -> Option<&ClosedLoopStep> {
        match (&self.closed_loop, &self.closed_loop_again) {
            (Some(a), Some(b)) if b.throughput_rps > a.throughput_rps => Some(b),
            (a, _) => a.as_ref(),
        }
    }

    /// Reads a `volley.capacity/1` file's text.
    pub fn from_json(text: &str) -> Result<CapacityResult, serde_json::Error> {
        serde_json::from_str(text)
    }
}

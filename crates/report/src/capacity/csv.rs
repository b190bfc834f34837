//! A capacity search as CSV (RFC 4180, as `report::csv`): one row per step, the closed-loop
//! reference first (`step` = `closed-loop`, and `closed-loop-again` when it was measured
//! twice), every search of the report in turn; `path`, `phase` and a sweep's `window_start_s`
//! end each row.

use super::CapacityEntry;
use crate::csv::line;
use volley_model::result::capacity::{CapacityStep, ClosedLoopStep};

/// The columns, in order.
pub(crate) const COLUMNS: [&str; 22] = [
    "server",
    "scenario",
    "axes",
    "rep",
    "step",
    "target_rps",
    "achieved_rps",
    "verdict",
    "latency_p50_us",
    "latency_p90_us",
    "latency_p99_us",
    "latency_p99_9_us",
    "latency_max_us",
    "completed",
    "errors",
    "failed",
    "schedule_lag_p99_us",
    "server_cpu_pct",
    "server_utilisation_pct",
    "server_cpu_us_per_request",
    "idle_wait_s",
    "reason",
];

fn opt<T: ToString>(v: Option<T>) -> String {
    v.map_or(String::new(), |v| v.to_string())
}

/// The CSV of every search in `entries` (a header line even when there is none).
pub fn render(entries: &[CapacityEntry]) -> String {
    let mut out = String::new();
    let mut head: Vec<String> = COLUMNS.iter().map(|s| s.to_string()).collect();
    head.push("path".into());
    head.push("phase".into());
    head.push("window_start_s".into());
    line(&mut out, &head);
    for e in entries {
        let Some(r) = &e.result else { continue };
        let id = [
            e.server.clone(),
            e.scenario.clone(),
            e.axes_label(),
            e.rep.to_string(),
        ];
        let loops = [
            ("closed-loop", &r.closed_loop),
            ("closed-loop-again", &r.closed_loop_again),
        ];
        for (name, c) in loops {
            if let Some(c) = c {
                let mut rec: Vec<String> = id.to_vec();
                rec.extend(closed_loop_fields(name, c, r.server_cores));
                line(&mut out, &rec);
            }
        }
        for (n, s) in r.steps.iter().enumerate() {
            let mut rec: Vec<String> = id.to_vec();
            rec.extend(step_fields(n + 1, s, r.server_cores));
            line(&mut out, &rec);
        }
    }
    out
}

fn utilisation(cpu_pct: Option<f64>, cores: Option<f64>) -> Option<f64> {
    let cores = cores.filter(|c| *c > 0.0)?;
    Some((cpu_pct? / cores * 10.0).round() / 10.0)
}

fn closed_loop_fields(name: &str, c: &ClosedLoopStep, cores: Option<f64>) -> Vec<String> {
    let p = &c.latency_us;
    vec![
        name.into(),
        String::new(),
        c.throughput_rps.to_string(),
        String::new(),
        opt(p.p50),
        opt(p.p90),
        opt(p.p99),
        opt(p.p99_9),
        opt(p.max),
        String::new(),
        c.errors.to_string(),
        String::new(),
        String::new(),
        opt(c.server_cpu_pct),
        opt(utilisation(c.server_cpu_pct, cores)),
        String::new(),
        String::new(),
        "the closed-loop reference over the same connections".into(),
        c.path.clone(),
        String::new(),
        String::new(),
    ]
}

fn step_fields(n: usize, s: &CapacityStep, cores: Option<f64>) -> Vec<String> {
    let p = &s.latency_us;
    vec![
        n.to_string(),
        s.target_rps.to_string(),
        opt(s.achieved_rps),
        s.verdict.as_str().into(),
        opt(p.p50),
        opt(p.p90),
        opt(p.p99),
        opt(p.p99_9),
        opt(p.max),
        s.completed.to_string(),
        s.errors.to_string(),
        s.failed.to_string(),
        opt(s.schedule_lag_p99_us),
        opt(s.server_cpu_pct),
        opt(utilisation(s.server_cpu_pct, cores)),
        opt(s
            .server_cpu_us_per_request
            .map(|v| (v * 100.0).round() / 100.0)),
        s.idle_wait_s.to_string(),
        s.reason.clone(),
        s.path.clone(),
        s.phase.map_or("", |p| p.as_str()).into(),
        opt(s.window.map(|w| w.start_s)),
    ]
}

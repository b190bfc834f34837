//! A whole search, as `volley capacity` and a suite's capacity cell both run it: the search
//! over the steps, the closed-loop reference (unless turned off), and the `volley.capacity/1`
//! result assembled from them.

pub mod sweep;

use std::time::SystemTime;

use super::{ClosedLoopError, Found, Search, StepRunner, Steps};
use super::{CLOSED_LOOP_AGAIN_FILE, CLOSED_LOOP_FILE};
use volley_model::result::capacity::{
    CapacityResult, ClosedLoopFinding, ClosedLoopStep, LimitedBy, CAPACITY_SCHEMA,
};

/// An answer above this multiple of the closed-loop maximum is suspicious: the closed loop is
/// measured again before the numbers are explained.
pub(crate) const SUSPICIOUS_SHARE: f64 = 1.1;

/// What a search is about, for its result.
pub struct About {
    /// The command line (secrets redacted).
    pub argv: Vec<String>,
    /// The URL (secrets redacted).
    pub url: String,
    /// The SLO as written.
    pub slo: Vec<String>,
    /// Wall clock at the start.
    pub started_at: SystemTime,
}

/// A search run to its end: where it ended and the result to write.
pub struct Searched {
    /// The search's end (its error, an interrupt).
    pub found: Found,
    /// The `volley.capacity/1` result.
    pub result: CapacityResult,
}

/// Runs `search` over `steps`, then the closed-loop reference (when `closed_loop`); `said`
/// hears the closed-loop step's line.
pub fn run(
    steps: &mut Steps,
    search: &Search,
    closed_loop: bool,
    about: About,
    said: &mut dyn FnMut(&ClosedLoopStep),
) -> Searched {
    let t0 = std::time::Instant::now();
    let found = search.run(steps as &mut dyn StepRunner);
    let ends = Ends {
        found,
        reference: None,
        sweep: None,
    };
    finish(steps, search, ends, closed_loop, about, said, t0)
}

/// What a search or a sweep ended with, before the closed loop is set beside it.
pub(crate) struct Ends {
    pub found: Found,
    /// The closed loop when it was measured first (a sweep's top).
    pub reference: Option<ClosedLoopStep>,
    pub sweep: Option<volley_model::result::capacity::Sweep>,
}

/// The closed-loop reference (unless measured already, or not wanted), measured again when the
/// answer is well above it, and the `volley.capacity/1` result.
pub(crate) fn finish(
    steps: &mut Steps,
    search: &Search,
    ends: Ends,
    closed_loop: bool,
    about: About,
    said: &mut dyn FnMut(&ClosedLoopStep),
    t0: std::time::Instant,
) -> Searched {
    let Ends {
        mut found,
        mut reference,
        sweep,
    } = ends;
    // Last, on a server the search has warmed (a JIT compiled, caches filled), as its steps
    // were: first it would measure a cold server against warm steps.
    if closed_loop && reference.is_none() && !found.interrupted && found.error.is_none() {
        reference = measure_closed_loop(steps, &mut found, CLOSED_LOOP_FILE, said);
    }
    let (again, finding) = match &reference {
        Some(first) if suspicious(&found, first) && !found.interrupted => {
            let again = measure_closed_loop(steps, &mut found, CLOSED_LOOP_AGAIN_FILE, said);
            let finding = again.as_ref().map(|a| explain(&found, a));
            (again, finding)
        }
        _ => (None, None),
    };
    let wall_s = (t0.elapsed().as_secs_f64() * 10.0).round() / 10.0;
    let result = CapacityResult {
        schema: CAPACITY_SCHEMA.into(),
        volley_version: env!("CARGO_PKG_VERSION").into(),
        argv: about.argv,
        started_at: humantime::format_rfc3339_seconds(about.started_at).to_string(),
        wall_s,
        url: about.url,
        slo: about.slo,
        precision_pct: search.precision * 100.0,
        step_duration_s: steps.step.as_secs_f64(),
        max_rate_rps: found.max_rps,
        limited_by: found.limited_by,
        bracket: found.bracket,
        interrupted: found.interrupted,
        steps: std::mem::take(&mut steps.done),
        connections: steps.base.load.connections as u64,
        lowest_tried_rps: found.lowest_tried_rps,
        error: found.error.clone(),
        repeat_rule: search.rule(),
        server_cores: steps
            .base
            .monitor
            .as_ref()
            .and_then(|m| super::server_cores(m.pid)),
        closed_loop: reference,
        closed_loop_again: again,
        closed_loop_finding: finding,
        confirmation: found.confirmation.clone(),
        notes: std::mem::take(&mut steps.notes),
        env: steps.env.take(),
        sweep,
    };
    Searched { found, result }
}

/// One closed-loop measurement into `file`; an interrupt or a failure is recorded in `found`.
pub(crate) fn measure_closed_loop(
    steps: &mut Steps,
    found: &mut Found,
    file: &str,
    said: &mut dyn FnMut(&ClosedLoopStep),
) -> Option<ClosedLoopStep> {
    match steps.closed_loop(file) {
        Ok(c) => {
            said(&c);
            Some(c)
        }
        Err(ClosedLoopError::Interrupted) => {
            found.interrupted = true;
            None
        }
        Err(ClosedLoopError::Failed(m)) => {
            found.error = Some(format!("the closed-loop step: {m}"));
            None
        }
    }
}

/// The server's own answer (`slo`) is well above a closed loop that was the server's (volley
/// not saturated in it).
fn suspicious(found: &Found, first: &ClosedLoopStep) -> bool {
    found.limited_by == Some(LimitedBy::Slo)
        && !first.client_saturated
        && found
            .max_rps
            .is_some_and(|m| m > SUSPICIOUS_SHARE * first.throughput_rps)
}

/// Which explanation the second closed-loop measurement supports.
fn explain(found: &Found, again: &ClosedLoopStep) -> ClosedLoopFinding {
    let answer = found.max_rps.unwrap_or(0.0);
    if again.throughput_rps * SUSPICIOUS_SHARE >= answer {
        ClosedLoopFinding::FirstMeasurementLow
    } else {
        ClosedLoopFinding::ServerSlowerWhenSaturated
    }
}

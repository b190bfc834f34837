//! A whole `volley capacity --sweep`: its top (`--max-rate`, or 1.5 × the closed loop measured
//! first), the sweep (run again when other processes starved volley in most of its windows),
//! the answer it reads, `--confirm`'s bisection and confirmation from its bracket, then the
//! closed loop and the result as a search has them (docs/contract.md, "Capacity", "Sweep").

use std::time::Duration;

use super::{finish, measure_closed_loop, About, Ends, Searched};
use crate::search::stop;
use crate::sweep::{SweepPlan, Swept, TOP_OVER_CLOSED_LOOP};
use crate::{idle, Found, Search, StepError, Steps, CLOSED_LOOP_FILE, MACHINE_ATTEMPTS};
use volley_model::result::capacity::{ClosedLoopStep, LimitedBy, SweepTop, Verdict};
use volley_model::units::thousands;

/// What `volley capacity --sweep` was asked for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepSetup {
    /// `--start-rate`.
    pub from_rps: f64,
    /// `--max-rate`; none: 1.5 × the closed loop, measured first.
    pub to_rps: Option<f64>,
    /// `--sweep-duration`.
    pub duration: Duration,
    /// `--sweep-window`.
    pub window: Duration,
    /// `--confirm`.
    pub confirm: bool,
}

/// Runs the sweep over `steps` (and `--confirm`'s steps by `search`'s rules), then the closed
/// loop (when `closed_loop`, unless it was measured first for the top).
pub fn run(
    steps: &mut Steps,
    setup: &SweepSetup,
    search: &Search,
    closed_loop: bool,
    about: About,
    said: &mut dyn FnMut(&ClosedLoopStep),
) -> Searched {
    let t0 = std::time::Instant::now();
    let mut found = Found::stopped(false, None);
    let mut reference = None;
    let top = match setup.to_rps {
        Some(to) => Some((to, SweepTop::MaxRate)),
        None => {
            reference = measure_closed_loop(steps, &mut found, CLOSED_LOOP_FILE, said);
            reference.as_ref().map(|c| {
                (
                    (c.throughput_rps * TOP_OVER_CLOSED_LOOP).round(),
                    SweepTop::ClosedLoop,
                )
            })
        }
    };
    let mut sweep = None;
    if let Some((to_rps, top)) = top {
        let plan = SweepPlan {
            from_rps: setup.from_rps,
            to_rps,
            top,
            duration: setup.duration,
            window: setup.window,
        };
        match measured(steps, &plan) {
            Ok(swept) => {
                found = found_of(&swept);
                sweep = Some(swept.sweep);
                let bracketed =
                    matches!(found.limited_by, Some(LimitedBy::Slo | LimitedBy::Client))
                        && found.bracket.low_rps.is_some();
                if setup.confirm && bracketed && !found.interrupted {
                    found = search.narrow_and_confirm(steps, found);
                }
            }
            Err(e) => stop(&mut found, e),
        }
    }
    let ends = Ends {
        found,
        reference,
        sweep,
    };
    finish(steps, search, ends, closed_loop, about, said, t0)
}

/// The sweep, run again (after the machine is idle) while other processes starved volley in
/// most of its windows: three such runs in a row give no answer.
fn measured(steps: &mut Steps, plan: &SweepPlan) -> Result<Swept, StepError> {
    if plan.to_rps <= plan.from_rps {
        return Err(StepError::Failed(format!(
            "the sweep's top, {} req/s, is not above --start-rate {}: give --max-rate, or a lower --start-rate",
            thousands(plan.to_rps.round() as u64),
            thousands(plan.from_rps.round() as u64)
        )));
    }
    for attempt in 1..=MACHINE_ATTEMPTS {
        let before = steps.done.len();
        let file = match attempt {
            1 => "sweep.json".to_string(),
            n => format!("sweep-{n}.json"),
        };
        let swept = steps.sweep(plan, &file)?;
        if swept.reading.limited_by != Some(LimitedBy::Machine) || swept.interrupted {
            if !swept.reading.starved.is_empty() {
                let rates: Vec<String> = swept
                    .reading
                    .starved
                    .iter()
                    .map(|r| thousands(r.round() as u64))
                    .collect();
                steps.notes.push(format!(
                    "other processes starved volley in the sweep's windows at {} req/s: they are left out of its reading",
                    rates.join(", ")
                ));
            }
            return Ok(swept);
        }
        let why = format!(
            "other processes starved volley in {} of its {} windows",
            swept.reading.starved.len(),
            swept.windows.len()
        );
        if attempt == MACHINE_ATTEMPTS {
            return Err(StepError::Busy(format!(
                "the machine was too busy to read the sweep: {why}, {MACHINE_ATTEMPTS} runs in a row"
            )));
        }
        // The starved run's windows say nothing: the next run's replace them.
        steps.done.truncate(before);
        steps
            .notes
            .push(format!("the sweep ran again: {why} ({file})"));
        let (waited, idle) = idle::wait_machine();
        if !idle {
            steps.notes.push(format!(
                "the machine was still busy after {waited:.0} s before the sweep ran again"
            ));
        }
    }
    unreachable!("the last attempt returns")
}

/// The sweep's reading as the search's end.
fn found_of(swept: &Swept) -> Found {
    let r = &swept.reading;
    let mut found = Found::stopped(swept.interrupted, None);
    found.max_rps = r.max_rps;
    found.limited_by = r.limited_by;
    found.bracket = r.bracket;
    found.lowest_tried_rps = swept.windows.first().map(|w| w.target_rps);
    found.client_high = swept
        .windows
        .iter()
        .any(|w| Some(w.target_rps) == r.knee_rps && w.verdict == Verdict::Client);
    // Every window's verdict is what its rate was decided: a confirmation that contradicts
    // the answer moves the bracket to the windows next to it.
    for w in swept
        .windows
        .iter()
        .filter(|w| w.verdict != Verdict::Machine)
    {
        found.decided.push((w.target_rps, w.verdict));
    }
    found
}

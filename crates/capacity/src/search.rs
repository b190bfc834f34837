//! The search, pure: a geometric ramp (×2 from the start rate, capped at the maximum; ÷2 down
//! when the first rate already does not pass), then bisection until the bracket is within the
//! precision, a rate next to the boundary decided by the majority rule; a `client` verdict
//! bounds the bracket like a failure. Then the answer is confirmed (`confirm`): a contradiction
//! moves the bracket and the search goes on from there. The rules, step by step, are
//! docs/contract.md, "Capacity". Steps are run through [`StepRunner`], so tests drive it with a
//! model of a server and no clock.

mod confirm;

#[cfg(test)]
use confirm::CONFIRM_ROUNDS;
use volley_model::result::capacity::{Bracket, Confirmation, LimitedBy, Phase, Verdict};

/// One run's verdict and why.
#[derive(Debug, Clone, PartialEq)]
pub struct StepOutcome {
    /// What the run showed.
    pub verdict: Verdict,
    /// Why, in words.
    pub reason: String,
}

/// Why a step gave no verdict.
#[derive(Debug, Clone, PartialEq)]
pub enum StepError {
    /// Ctrl-C: stop with the bracket so far.
    Interrupted,
    /// The step could not run (the message says why).
    Failed(String),
    /// The machine was too busy to measure the rate: volley was starved at it again and again
    /// (the message names the busiest processes). No answer is given.
    Busy(String),
}

/// Runs one step at a rate (req/s).
pub trait StepRunner {
    /// Measures `rate` once and judges it.
    fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError>;

    /// The runs from now on are of this phase of the search (recorded with each step).
    fn phase(&mut self, _phase: Phase) {}
}

/// The search's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// First rate of the ramp, req/s.
    pub start_rps: f64,
    /// Highest rate tried (`--max-rate`); none: no cap.
    pub max_rps: Option<f64>,
    /// Stop when (high − low) ÷ low is at most this (0.05 for 5 %).
    pub precision: f64,
    /// Runs per bisection rate (majority rule); at least 1.
    pub repeat: u32,
}

/// Where the search ended.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// Highest passing rate (a lower bound unless `limited_by` is `Slo`).
    pub max_rps: Option<f64>,
    /// What stopped it; none when nothing passed, or interrupted/failed before an answer.
    pub limited_by: Option<LimitedBy>,
    /// Highest pass and lowest non-pass.
    pub bracket: Bracket,
    /// The lowest rate tried.
    pub lowest_tried_rps: Option<f64>,
    /// Stopped by Ctrl-C.
    pub interrupted: bool,
    /// A step could not run.
    pub error: Option<String>,
    /// The bracket's high end is a rate the client could not measure (not a failure of the
    /// server).
    pub client_high: bool,
    /// How the answer was confirmed (none when there was none to confirm).
    pub confirmation: Option<Confirmation>,
    /// Each rate's decided verdict so far (its majority; the latest when run again).
    pub decided: Vec<(f64, Verdict)>,
}

/// A rate's runs under the majority rule.
#[derive(Debug, Clone, Copy)]
struct Tally {
    /// The majority's verdict once decided (before: the last run that did not pass).
    verdict: Verdict,
    runs: u32,
    passes: u32,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            verdict: Verdict::Fail,
            runs: 0,
            passes: 0,
        }
    }
}

/// Rates are whole requests per second.
fn whole(rate: f64) -> f64 {
    rate.round().max(1.0)
}

/// Records why the search stopped early.
pub(crate) fn stop(found: &mut Found, e: StepError) {
    match e {
        StepError::Interrupted => found.interrupted = true,
        StepError::Failed(m) => found.error = Some(m),
        StepError::Busy(m) => {
            found.error = Some(m);
            found.limited_by = Some(LimitedBy::Machine);
        }
    }
}

impl Found {
    /// A search that ended before its first step: interrupted, or with an error.
    pub(crate) fn stopped(interrupted: bool, error: Option<String>) -> Found {
        Found {
            max_rps: None,
            limited_by: None,
            bracket: Bracket::default(),
            lowest_tried_rps: None,
            interrupted,
            error,
            client_high: false,
            confirmation: None,
            decided: Vec::new(),
        }
    }

    /// Records `rate`'s decided verdict, replacing an earlier one.
    fn decide(&mut self, rate: f64, verdict: Verdict) {
        match self.decided.iter_mut().find(|(r, _)| *r == rate) {
            Some(d) => d.1 = verdict,
            None => self.decided.push((rate, verdict)),
        }
    }

    /// What was decided for `rate`, if it ran.
    fn decided_at(&self, rate: f64) -> Option<Verdict> {
        self.decided
            .iter()
            .find(|(r, _)| *r == rate)
            .map(|(_, v)| *v)
    }
}

impl Search {
    /// The repeat rule in words: `2 of 3 runs pass`, `1 run` (no repetition).
    pub(crate) fn rule(&self) -> String {
        let n = self.repeat.max(1);
        if n == 1 {
            "each rate runs once; the answer and the rate above it run once more to confirm it"
                .into()
        } else {
            format!(
                "ramp rates run once, but the first to fail above a pass and every bisection rate pass when {need} of up to {n} runs pass; \
                 the answer is confirmed by {n} more runs (it passes {need} again, the rate above it fails {need} again)",
                need = n / 2 + 1
            )
        }
    }

    /// Runs the search to its end, then confirms its answer.
    pub fn run(&self, runner: &mut dyn StepRunner) -> Found {
        let mut found = Found::stopped(false, None);
        let mut rate = whole(self.start_rps);
        if let Some(max) = self.max_rps {
            rate = rate.min(whole(max));
        }
        let searched = self
            .search_from(runner, &mut found, rate)
            .and_then(|()| self.confirm(runner, &mut found));
        if let Err(e) = searched {
            stop(&mut found, e);
        }
        self.finish(found)
    }

    /// Goes on from a bracket found otherwise (a sweep's: `found` holds it and the rates
    /// decided so far): bisection to the precision, then the answer confirmed, as [`Search::run`]
    /// does after its ramp.
    pub fn narrow_and_confirm(&self, runner: &mut dyn StepRunner, mut found: Found) -> Found {
        runner.phase(Phase::Bisect);
        let searched = self
            .bisect(runner, &mut found)
            .and_then(|()| self.confirm(runner, &mut found));
        if let Err(e) = searched {
            stop(&mut found, e);
        }
        self.finish(found)
    }

    /// The ramp from `rate`, then the bisection when the ramp leaves a bracket to narrow.
    fn search_from(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        rate: f64,
    ) -> Result<(), StepError> {
        runner.phase(Phase::Ramp);
        if self.ramp(runner, found, rate)? {
            runner.phase(Phase::Bisect);
            self.bisect(runner, found)?;
        }
        Ok(())
    }

    /// Up from `rate` (×2) while steps pass; down (÷2, to 1 req/s) while none has. True when
    /// a bisection between a pass and a non-pass is left to do.
    fn ramp(
        &self,
        runner: &mut dyn StepRunner,
        found: &mut Found,
        mut rate: f64,
    ) -> Result<bool, StepError> {
        loop {
            found.lowest_tried_rps =
                Some(found.lowest_tried_rps.map_or(rate, |l: f64| l.min(rate)));
            let mut verdict = runner.run(rate)?.verdict;
            if verdict != Verdict::Pass && found.bracket.low_rps.is_some() {
                // The ramp's first non-pass above a pass is next to the boundary: a fluke there
                // would end the ramp far below the server's capacity, so it is decided by the
                // majority rule like a bisection rate (this run counts as the first).
                verdict = self.repeated_after(runner, rate, verdict)?;
            }
            found.decide(rate, verdict);
            let next = match verdict {
                Verdict::Pass => {
                    found.bracket.low_rps = Some(rate);
                    if found.bracket.high_rps.is_some() {
                        return Ok(true);
                    }
                    match self.max_rps.map(whole) {
                        Some(max) if rate >= max => {
                            found.limited_by = Some(LimitedBy::MaxRate);
                            return Ok(false);
                        }
                        Some(max) => (rate * 2.0).min(max),
                        None => rate * 2.0,
                    }
                }
                // A rate that failed, or that the client could not measure, is the bracket's
                // high end; with nothing passed yet a lower rate is tried.
                v => {
                    found.bracket.high_rps = Some(rate);
                    found.client_high = v == Verdict::Client;
                    if found.bracket.low_rps.is_some() {
                        return Ok(true);
                    }
                    whole(rate / 2.0)
                }
            };
            if next == rate {
                // Down to 1 req/s and nothing passed.
                found.limited_by = found.client_high.then_some(LimitedBy::Client);
                return Ok(false);
            }
            rate = next;
        }
    }

    /// Bisection between the bracket's ends until it is within the precision. A rate the
    /// client cannot measure lowers the high end like a failure, so the answer closes in on
    /// the client's limit too ("at least X" with X as high as it can measure).
    fn bisect(&self, runner: &mut dyn StepRunner, found: &mut Found) -> Result<(), StepError> {
        // Set when the bisection ends by itself; an interrupted one has no answer yet.
        found.limited_by = None;
        while let (Some(low), Some(high)) = (found.bracket.low_rps, found.bracket.high_rps) {
            if (high - low) / low <= self.precision {
                break;
            }
            let mid = whole((low + high) / 2.0);
            if mid <= low || mid >= high {
                break;
            }
            let verdict = self.repeated(runner, mid)?.verdict;
            found.decide(mid, verdict);
            match verdict {
                Verdict::Pass => found.bracket.low_rps = Some(mid),
                v => {
                    found.bracket.high_rps = Some(mid);
                    found.client_high = v == Verdict::Client;
                }
            }
        }
        found.limited_by = Some(if found.client_high {
            LimitedBy::Client
        } else {
            LimitedBy::Slo
        });
        Ok(())
    }

    /// One bisection rate: up to `repeat` runs, majority wins, `client` at once.
    fn repeated(&self, runner: &mut dyn StepRunner, rate: f64) -> Result<Tally, StepError> {
        self.tally(runner, rate, Tally::default())
    }

    /// A rate whose first run gave `first` (not a pass), decided by the majority rule.
    fn repeated_after(
        &self,
        runner: &mut dyn StepRunner,
        rate: f64,
        first: Verdict,
    ) -> Result<Verdict, StepError> {
        if matches!(first, Verdict::Client | Verdict::Machine) {
            return Ok(first);
        }
        let so_far = Tally {
            verdict: first,
            runs: 1,
            passes: 0,
        };
        Ok(self.tally(runner, rate, so_far)?.verdict)
    }

    /// Runs `rate` until `repeat` runs' majority is decided, from the runs so far.
    fn tally(
        &self,
        runner: &mut dyn StepRunner,
        rate: f64,
        mut t: Tally,
    ) -> Result<Tally, StepError> {
        let n = self.repeat.max(1);
        let need = n / 2 + 1;
        while t.passes < need && t.runs - t.passes < n - need + 1 {
            let o = runner.run(rate)?;
            t.runs += 1;
            match o.verdict {
                Verdict::Pass => t.passes += 1,
                // A runner gives `machine` only when it could not measure (it re-runs).
                Verdict::Client | Verdict::Machine => {
                    t.verdict = o.verdict;
                    return Ok(t);
                }
                v => t.verdict = v,
            }
        }
        if t.passes >= need {
            t.verdict = Verdict::Pass;
        }
        Ok(t)
    }

    fn finish(&self, mut found: Found) -> Found {
        // A busy machine gives no answer: what passed before it says nothing either way.
        found.max_rps = found
            .bracket
            .low_rps
            .filter(|_| found.limited_by != Some(LimitedBy::Machine));
        found
    }
}

#[cfg(test)]
mod tests;

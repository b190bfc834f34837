//! The search, pure: a geometric ramp (×2 from the start rate, capped at the maximum) until a
//! step does not pass, then bisection until the bracket is narrower than the precision. When
//! the first rate already does not pass, the ramp goes down instead (÷2, to 1 req/s) until a
//! rate passes. Steps are run through [`StepRunner`], so tests drive it with a model of a
//! server and no clock.
//!
//! Repeat rule: ramp steps run once, but the first that does not pass after one that did (the
//! step next to the boundary) is decided like a bisection rate: each runs up to `repeat` times
//! and passes when a majority of its runs pass (it stops as soon as the majority is decided:
//! 2 passes or 2 non-passes out of 3). A `client` verdict bounds the bracket like a failure; when the
//! bracket's high end is one, the answer is a lower bound ("at least X: the client is the
//! limit"), X as close to the client's limit as the precision asks.

use crate::result::capacity::{Bracket, LimitedBy, Verdict};

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
}

/// Rates are whole requests per second.
fn whole(rate: f64) -> f64 {
    rate.round().max(1.0)
}

/// Records why the search stopped early.
fn stop(found: &mut Found, e: StepError) {
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
    pub fn stopped(interrupted: bool, error: Option<String>) -> Found {
        Found {
            max_rps: None,
            limited_by: None,
            bracket: Bracket::default(),
            lowest_tried_rps: None,
            interrupted,
            error,
            client_high: false,
        }
    }
}

impl Search {
    /// The repeat rule in words: `2 of 3 runs pass`, `1 run` (no repetition).
    pub fn rule(&self) -> String {
        let n = self.repeat.max(1);
        if n == 1 {
            "each rate runs once".into()
        } else {
            format!(
                "ramp rates run once, but the first to fail above a pass and every bisection rate pass when {} of up to {n} runs pass",
                n / 2 + 1
            )
        }
    }

    /// Runs the search to its end.
    pub fn run(&self, runner: &mut dyn StepRunner) -> Found {
        let mut found = Found::stopped(false, None);
        let mut rate = whole(self.start_rps);
        if let Some(max) = self.max_rps {
            rate = rate.min(whole(max));
        }
        let bisect = match self.ramp(runner, &mut found, rate) {
            Ok(b) => b,
            Err(e) => {
                stop(&mut found, e);
                return self.finish(found);
            }
        };
        if bisect {
            if let Err(e) = self.bisect(runner, &mut found) {
                stop(&mut found, e);
            }
        }
        self.finish(found)
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
            match self.repeated(runner, mid)? {
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
    fn repeated(&self, runner: &mut dyn StepRunner, rate: f64) -> Result<Verdict, StepError> {
        self.tally(runner, rate, 0, 0, Verdict::Fail)
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
        self.tally(runner, rate, 0, 1, first)
    }

    /// Runs `rate` until `repeat` runs' majority is decided, from `passes` and `others` so far.
    fn tally(
        &self,
        runner: &mut dyn StepRunner,
        rate: f64,
        mut passes: u32,
        mut others: u32,
        mut last_other: Verdict,
    ) -> Result<Verdict, StepError> {
        let n = self.repeat.max(1);
        let need = n / 2 + 1;
        while passes < need && others < n - need + 1 {
            let o = runner.run(rate)?;
            match o.verdict {
                Verdict::Pass => passes += 1,
                // A runner gives `machine` only when it could not measure (it re-runs).
                Verdict::Client | Verdict::Machine => return Ok(o.verdict),
                v => {
                    others += 1;
                    last_other = v;
                }
            }
        }
        Ok(if passes >= need {
            Verdict::Pass
        } else {
            last_other
        })
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
mod tests {
    use super::*;

    /// A server of capacity `c`: passes below, fails above; within `noise` of `c` the verdict
    /// alternates (pass, fail, pass, ...) by a counter, no clock.
    struct Model {
        c: f64,
        noise: f64,
        client_limit: f64,
        runs: Vec<f64>,
        flip: bool,
    }

    impl Model {
        fn new(c: f64) -> Self {
            Model {
                c,
                noise: 0.0,
                client_limit: f64::INFINITY,
                runs: Vec::new(),
                flip: false,
            }
        }
    }

    impl StepRunner for Model {
        fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
            self.runs.push(rate);
            let verdict = if rate > self.client_limit {
                Verdict::Client
            } else if (rate - self.c).abs() < self.noise {
                self.flip = !self.flip;
                if self.flip {
                    Verdict::Pass
                } else {
                    Verdict::Fail
                }
            } else if rate <= self.c {
                Verdict::Pass
            } else {
                Verdict::Fail
            };
            Ok(StepOutcome {
                verdict,
                reason: String::new(),
            })
        }
    }

    fn search() -> Search {
        Search {
            start_rps: 100.0,
            max_rps: None,
            precision: 0.05,
            repeat: 3,
        }
    }

    #[test]
    fn finds_a_known_capacity_within_the_precision() {
        for c in [150.0, 800.0, 41_200.0, 99_999.0, 1_000_000.0] {
            let mut m = Model::new(c);
            let f = search().run(&mut m);
            let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
            assert_eq!(f.limited_by, Some(LimitedBy::Slo), "c={c}");
            assert!(low <= c && c < high, "c={c}: {low}..{high}");
            assert!((high - low) / low <= 0.05, "c={c}: {low}..{high}");
            assert_eq!(f.max_rps, Some(low));
        }
    }

    #[test]
    fn the_client_limit_gives_a_lower_bound() {
        let mut m = Model::new(50_000.0);
        m.client_limit = 3_000.0;
        let f = search().run(&mut m);
        assert_eq!(f.limited_by, Some(LimitedBy::Client));
        // The ramp passes 1,600 and meets the client at 3,200; the bisection closes in on
        // the client's limit (3,000) to the precision.
        let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
        assert!(f.client_high);
        assert!(low <= 3_000.0 && 3_000.0 < high, "{low}..{high}");
        assert!((high - low) / low <= 0.05, "{low}..{high}");
        assert_eq!(f.max_rps, Some(low));
        // A server limit below the client's is the server's answer again.
        let mut m = Model::new(2_000.0);
        m.client_limit = 3_000.0;
        let f = search().run(&mut m);
        assert_eq!(f.limited_by, Some(LimitedBy::Slo), "{:?}", m.runs);
        assert!(!f.client_high);
        let low = f.bracket.low_rps.unwrap();
        assert!(low <= 2_000.0 && f.bracket.high_rps.unwrap() > 2_000.0);
    }

    #[test]
    fn the_max_rate_stops_the_ramp() {
        let mut m = Model::new(50_000.0);
        let f = Search {
            max_rps: Some(1_000.0),
            ..search()
        }
        .run(&mut m);
        assert_eq!(f.limited_by, Some(LimitedBy::MaxRate));
        assert_eq!(f.max_rps, Some(1_000.0));
        assert_eq!(m.runs, vec![100.0, 200.0, 400.0, 800.0, 1_000.0]);
    }

    #[test]
    fn no_rate_meets_the_slo() {
        // Not even 1 req/s passes: down from 100 by halves, then nothing.
        let mut m = Model::new(0.5);
        let f = search().run(&mut m);
        assert_eq!(f.max_rps, None);
        assert_eq!(f.limited_by, None);
        assert_eq!(f.lowest_tried_rps, Some(1.0));
        assert_eq!(f.bracket.high_rps, Some(1.0));
        assert_eq!(m.runs, vec![100.0, 50.0, 25.0, 13.0, 7.0, 4.0, 2.0, 1.0]);
    }

    #[test]
    fn a_capacity_below_the_start_rate_is_found_going_down() {
        for c in [10.0, 37.0, 99.0] {
            let mut m = Model::new(c);
            let f = search().run(&mut m);
            let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
            assert_eq!(f.limited_by, Some(LimitedBy::Slo), "c={c}: {:?}", m.runs);
            assert!(low <= c && c < high, "c={c}: {low}..{high}");
            // Whole rates: the bracket cannot be narrower than 1 req/s.
            assert!(
                (high - low) / low <= 0.05 || high - low <= 1.0,
                "c={c}: {low}..{high}"
            );
        }
    }

    #[test]
    fn a_client_limit_from_the_first_step_goes_down_to_what_it_can_measure() {
        // The client copes with 30 req/s; the server would take 1,000.
        let mut m = Model::new(1_000.0);
        m.client_limit = 30.0;
        let f = search().run(&mut m);
        assert_eq!(f.limited_by, Some(LimitedBy::Client));
        // Down to 25, which it measures, then up to the client's limit between 25 and 50.
        assert_eq!(&m.runs[..3], &[100.0, 50.0, 25.0]);
        let low = f.max_rps.unwrap();
        assert!((29.0..=30.0).contains(&low), "{low}: {:?}", m.runs);
        // A client that copes with nothing: no number, and the client named.
        let mut m = Model::new(1_000.0);
        m.client_limit = 0.0;
        let f = search().run(&mut m);
        assert_eq!(f.max_rps, None);
        assert_eq!(f.limited_by, Some(LimitedBy::Client));
        assert_eq!(f.lowest_tried_rps, Some(1.0));
    }

    #[test]
    fn a_noisy_boundary_is_decided_by_the_majority() {
        let mut m = Model::new(1_000.0);
        m.noise = 60.0;
        let f = search().run(&mut m);
        let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
        assert!((high - low) / low <= 0.05);
        assert!(low > 1_000.0 - 60.0 - 0.05 * 1_000.0 && high < 1_000.0 + 60.0 + 100.0);
        // A bisection rate never runs more than 3 times.
        let mut counts = std::collections::BTreeMap::new();
        for r in &m.runs {
            *counts.entry(*r as u64).or_insert(0) += 1;
        }
        assert!(counts.values().all(|&n| n <= 3), "{counts:?}");
        assert!(counts.values().any(|&n| n == 3), "{counts:?}");
    }

    #[test]
    fn a_fluke_at_the_end_of_the_ramp_is_outvoted() {
        // Capacity 50,000; the first run at 3,200 fails by chance (the bench saw it: one slow
        // second at 4 % of a server's capacity). The majority of its runs decides it.
        struct Fluke {
            model: Model,
            fluked: bool,
        }
        impl StepRunner for Fluke {
            fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
                if rate == 3_200.0 && !self.fluked {
                    self.fluked = true;
                    self.model.runs.push(rate);
                    return Ok(StepOutcome {
                        verdict: Verdict::Unstable,
                        reason: String::new(),
                    });
                }
                self.model.run(rate)
            }
        }
        let mut f = Fluke {
            model: Model::new(50_000.0),
            fluked: false,
        };
        let found = search().run(&mut f);
        assert_eq!(
            &f.model.runs[..7],
            &[100.0, 200.0, 400.0, 800.0, 1_600.0, 3_200.0, 3_200.0]
        );
        let low = found.bracket.low_rps.unwrap();
        assert!(
            (47_000.0..=50_000.0).contains(&low),
            "{low}: {:?}",
            f.model.runs
        );
        // With one run a rate (--repeat 1) the fluke stands: that is what the flag says.
        let mut f = Fluke {
            model: Model::new(50_000.0),
            fluked: false,
        };
        let found = Search {
            repeat: 1,
            ..search()
        }
        .run(&mut f);
        assert_eq!(found.bracket.high_rps, Some(3_200.0));
    }

    #[test]
    fn an_interrupt_keeps_the_bracket_so_far() {
        struct Stops(u32);
        impl StepRunner for Stops {
            fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
                self.0 += 1;
                // 100 and 200 pass, 400 fails twice (decided), Ctrl-C during the bisection.
                if self.0 > 4 {
                    return Err(StepError::Interrupted);
                }
                Ok(StepOutcome {
                    verdict: if rate <= 200.0 {
                        Verdict::Pass
                    } else {
                        Verdict::Fail
                    },
                    reason: String::new(),
                })
            }
        }
        let mut stops = Stops(0);
        let f = search().run(&mut stops);
        assert_eq!(stops.0, 5);
        assert!(f.interrupted);
        assert_eq!(f.bracket.low_rps, Some(200.0));
        assert_eq!(f.bracket.high_rps, Some(400.0));
        assert_eq!(f.limited_by, None);
    }
}

//! The search against models of a server: known capacities, noise, a client limit, flukes.

use super::*;
use volley_model::result::capacity::Phase;

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
    // The ramp, then the answer again (2 of 3 passes; no rate above it to fail again).
    assert_eq!(
        m.runs,
        vec![100.0, 200.0, 400.0, 800.0, 1_000.0, 1_000.0, 1_000.0]
    );
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
    // A rate's decision never takes more than 3 runs: at most 3 in the search, and 3 more
    // each time a round of confirmation runs it again.
    let mut counts = std::collections::BTreeMap::new();
    for r in &m.runs {
        *counts.entry(*r as u64).or_insert(0) += 1;
    }
    let c = f.confirmation.as_ref().unwrap();
    for (rate, n) in &counts {
        let rechecked = c
            .rechecks
            .iter()
            .filter(|r| r.rate_rps as u64 == *rate)
            .count();
        assert!(*n <= 3 * (1 + rechecked), "{rate}: {n} runs; {counts:?}");
    }
    // Inside the noise a majority is needed: some decision took all 3 runs.
    assert!(c.rechecks.iter().any(|r| r.runs == 3), "{c:?}");
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
    // With one run a rate (--repeat 1) the fluke ends the search, but not the answer: 3,200
    // runs again to confirm it, passes, and the search goes on up from there.
    let mut f = Fluke {
        model: Model::new(50_000.0),
        fluked: false,
    };
    let found = Search {
        repeat: 1,
        ..search()
    }
    .run(&mut f);
    let c = found.confirmation.as_ref().unwrap();
    let contradicted: Vec<_> = c.rechecks.iter().filter(|r| r.contradicts()).collect();
    assert_eq!(contradicted.len(), 1, "{c:?}");
    assert_eq!(
        (
            contradicted[0].rate_rps,
            contradicted[0].was,
            contradicted[0].now
        ),
        (3_200.0, Verdict::Unstable, Verdict::Pass)
    );
    assert!(c.reproduced, "{c:?}");
    let low = found.max_rps.unwrap();
    assert!((47_000.0..=50_000.0).contains(&low), "{low}: {c:?}");
}

#[test]
fn the_answer_is_confirmed_by_running_both_ends_again() {
    let mut m = Model::new(41_200.0);
    let f = search().run(&mut m);
    let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
    let c = f.confirmation.unwrap();
    assert!(c.reproduced);
    assert_eq!(c.rounds, 1);
    let ends: Vec<_> = c
        .rechecks
        .iter()
        .map(|r| (r.rate_rps, r.was, r.now, r.runs, r.passes))
        .collect();
    assert_eq!(
        ends,
        vec![
            (low, Verdict::Pass, Verdict::Pass, 2, 2),
            (high, Verdict::Fail, Verdict::Fail, 2, 0)
        ]
    );
    // The last four runs are the confirmation's.
    assert_eq!(&m.runs[m.runs.len() - 4..], &[low, low, high, high]);
}

#[test]
fn an_answer_that_does_not_pass_again_moves_down_and_is_confirmed_again() {
    // The server's capacity falls from 41,200 to 30,000 once the search is done (a cache
    // evicted, a neighbour woke up): the answer fails again, the search goes on below it and
    // the new answer holds.
    struct Falls {
        model: Model,
        confirming: bool,
    }
    impl StepRunner for Falls {
        fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
            if self.confirming {
                self.model.c = 30_000.0;
            }
            self.model.run(rate)
        }
        fn phase(&mut self, phase: Phase) {
            self.confirming |= phase == Phase::Confirm;
        }
    }
    let mut f = Falls {
        model: Model::new(41_200.0),
        confirming: false,
    };
    let found = search().run(&mut f);
    let c = found.confirmation.clone().unwrap();
    assert!(c.reproduced, "{c:?}");
    assert!(c.rounds >= 2, "{c:?}");
    assert_eq!(
        (c.rechecks[0].was, c.rechecks[0].now),
        (Verdict::Pass, Verdict::Fail)
    );
    let low = found.max_rps.unwrap();
    assert!((28_500.0..=30_000.0).contains(&low), "{low}: {c:?}");
    assert_eq!(found.limited_by, Some(LimitedBy::Slo));
}

#[test]
fn results_that_never_reproduce_are_given_as_such_within_three_rounds() {
    // Every confirmation run fails, whatever the rate: the answer moves down each round and
    // never holds. After three rounds the search gives what it has, marked not reproduced.
    struct Never {
        model: Model,
        confirming: bool,
    }
    impl StepRunner for Never {
        fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
            let o = self.model.run(rate)?;
            Ok(StepOutcome {
                verdict: if self.confirming {
                    Verdict::Fail
                } else {
                    o.verdict
                },
                reason: o.reason,
            })
        }
        fn phase(&mut self, phase: Phase) {
            self.confirming = phase == Phase::Confirm;
        }
    }
    let mut n = Never {
        model: Model::new(10_000.0),
        confirming: false,
    };
    let found = search().run(&mut n);
    let c = found.confirmation.unwrap();
    assert!(!c.reproduced);
    assert_eq!(c.rounds, CONFIRM_ROUNDS);
    assert!(c.rechecks.iter().all(|r| r.contradicts()), "{c:?}");
    assert!(n.model.runs.len() < 80, "{}", n.model.runs.len());
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

#[test]
fn a_rate_above_that_the_client_cannot_measure_again_makes_the_answer_a_lower_bound() {
    // The server fails above 1,000; when the answer is confirmed, volley can no longer measure
    // the rate above it (its own limit fell): the answer stands, as "at least".
    struct Shrinks {
        model: Model,
        confirming: bool,
    }
    impl StepRunner for Shrinks {
        fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
            if self.confirming && rate > self.model.c {
                self.model.runs.push(rate);
                return Ok(StepOutcome {
                    verdict: Verdict::Client,
                    reason: String::new(),
                });
            }
            self.model.run(rate)
        }
        fn phase(&mut self, phase: Phase) {
            self.confirming = phase == Phase::Confirm;
        }
    }
    let mut s = Shrinks {
        model: Model::new(1_000.0),
        confirming: false,
    };
    let f = search().run(&mut s);
    assert!(f.confirmation.as_ref().unwrap().reproduced);
    assert!(f.client_high);
    assert_eq!(f.limited_by, Some(LimitedBy::Client));
    assert!(f.max_rps.is_some_and(|m| m <= 1_000.0));
}

/// A sweep's bracket, its windows' verdicts decided: narrowed by bisection and confirmed; when
/// the sweep read high (its answer fails as a step), the answer moves down to the window below.
#[test]
fn a_sweeps_bracket_is_narrowed_and_confirmed() {
    let from = |low: f64, high: f64, windows: &[(f64, Verdict)]| {
        let mut f = Found::stopped(false, None);
        f.bracket = Bracket {
            low_rps: Some(low),
            high_rps: Some(high),
        };
        f.limited_by = Some(LimitedBy::Slo);
        f.decided = windows.to_vec();
        f
    };
    let mut m = Model::new(760.0);
    let f = search().narrow_and_confirm(&mut m, from(700.0, 800.0, &[(600.0, Verdict::Pass)]));
    assert_eq!(f.limited_by, Some(LimitedBy::Slo));
    let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
    assert!(
        low <= 760.0 && 760.0 < high && (high - low) / low <= 0.05,
        "{low}..{high}"
    );
    assert!(f.confirmation.as_ref().is_some_and(|c| c.reproduced));
    assert!(
        m.runs.iter().all(|r| (700.0..=800.0).contains(r)),
        "{:?}",
        m.runs
    );
    // The sweep read 700 as a pass, but as a step it fails: the window below, 650, is the
    // new low end.
    let mut m = Model::new(680.0);
    let windows = [(650.0, Verdict::Pass), (700.0, Verdict::Pass)];
    let f = search().narrow_and_confirm(&mut m, from(700.0, 750.0, &windows));
    let (low, high) = (f.bracket.low_rps.unwrap(), f.bracket.high_rps.unwrap());
    assert!(low <= 680.0 && 680.0 < high, "{low}..{high}: {:?}", m.runs);
    assert!(m.runs.iter().all(|r| *r >= 650.0), "{:?}", m.runs);
}

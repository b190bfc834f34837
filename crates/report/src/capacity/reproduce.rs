//! Whether a capacity answer reproduced, in words: the confirmation runs of its two ends, and
//! which explanation a second closed-loop measurement supports when the answer is well above
//! the first (docs/contract.md, "Capacity").

use super::text::rps;
use volley_model::result::capacity::{CapacityResult, ClosedLoopFinding, Recheck, Verdict};

/// `41,200 passed 2 of 2 runs again`, `43,500 failed 2 of 2 runs again`, `3,200 was unstable
/// before and passed 2 of 3 runs now`.
fn recheck(r: &Recheck) -> String {
    let runs = format!("of {} run{}", r.runs, if r.runs == 1 { "" } else { "s" });
    let (rate, failed) = (rps(r.rate_rps), r.runs - r.passes);
    match (r.was == Verdict::Pass, r.now == Verdict::Pass) {
        (true, true) => format!("{rate} passed {} {runs} again", r.passes),
        (false, false) if r.now == Verdict::Client => {
            format!("{rate} was again beyond what the client measures")
        }
        (false, false) => format!("{rate} failed {failed} {runs} again"),
        (true, false) => {
            format!(
                "{rate} passed before but not now ({} {runs} {})",
                failed,
                r.now.as_str()
            )
        }
        (false, true) => format!(
            "{rate} was {} before but passed {} {runs} now",
            r.was.as_str(),
            r.passes
        ),
    }
}

/// The confirmation in one sentence (none when the answer had none):
/// `Confirmed: 41,200 passed 2 of 2 runs again; 43,500 failed 2 of 2 runs again.`, or, when
/// results contradicted each other to the end, `Not reproduced: …`.
pub(crate) fn confirmation(r: &CapacityResult) -> Option<String> {
    let c = r.confirmation.as_ref()?;
    if c.rechecks.is_empty() {
        return None;
    }
    let all: Vec<String> = c.rechecks.iter().map(recheck).collect();
    let contradicted = c.rechecks.iter().any(Recheck::contradicts);
    Some(if c.reproduced && !contradicted {
        format!("Confirmed: {}.", all.join("; "))
    } else if c.reproduced {
        format!(
            "Confirmed after {} rounds (a contradiction moves the bracket and the search goes on): {}.",
            c.rounds,
            all.join("; ")
        )
    } else {
        format!(
            "Not reproduced after {} round{}: {} — results at these rates contradict each other, \
             so the answer is noise-bound (a busy machine, a server whose capacity changes): \
             run the search again, on a quiet machine, with longer steps.",
            c.rounds,
            if c.rounds == 1 { "" } else { "s" },
            all.join("; ")
        )
    })
}

/// The answer did not reproduce: the headline says so.
pub(crate) fn not_reproduced(r: &CapacityResult) -> bool {
    r.confirmation
        .as_ref()
        .is_some_and(|c| !c.reproduced && !c.rechecks.is_empty())
}

/// Which explanation the closed loop measured twice supports (none without a second
/// measurement).
pub(crate) fn closed_loop_finding(r: &CapacityResult) -> Option<String> {
    let (first, again) = (r.closed_loop.as_ref()?, r.closed_loop_again.as_ref()?);
    let m = rps(r.max_rate_rps?);
    let twice = format!(
        "the closed loop measured twice: {} and {} req/s",
        rps(first.throughput_rps),
        rps(again.throughput_rps)
    );
    let cpu = |v: Option<f64>| v.map_or("-".to_string(), |c| format!("{c:.0} %"));
    Some(match r.closed_loop_finding? {
        ClosedLoopFinding::FirstMeasurementLow => format!(
            "The answer, {m} req/s, was well above the first closed-loop measurement; {twice}: \
             the first was low (the machine or a pause of the server), and the share uses the second."
        ),
        ClosedLoopFinding::ServerSlowerWhenSaturated if not_reproduced(r) => format!(
            "The answer, {m} req/s, is well above {twice}; but the answer itself did not \
             reproduce, so the numbers support no explanation firmly."
        ),
        ClosedLoopFinding::ServerSlowerWhenSaturated => format!(
            "The answer, {m} req/s, is well above {twice}, and it reproduced: this server does \
             less with every connection busy at once than at a paced rate (its CPU {} in the \
             closed loop, {} at the answer).",
            cpu(again.server_cpu_pct),
            cpu(r.step_at_max().and_then(|s| s.server_cpu_pct))
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capacity::text::summary;
    use crate::capacity::text::tests::{result, step};
    use crate::capacity::text::versus_closed_loop;
    use volley_model::result::capacity::{Bracket, ClosedLoopStep, Confirmation, LimitedBy};

    fn recheck(rate_rps: f64, was: Verdict, now: Verdict, runs: u32, passes: u32) -> Recheck {
        Recheck {
            rate_rps,
            was,
            now,
            runs,
            passes,
        }
    }

    fn answered(confirmation: Confirmation) -> CapacityResult {
        let b = Bracket {
            low_rps: Some(41_200.0),
            high_rps: Some(43_500.0),
        };
        let mut r = result(
            vec![step(
                41_200.0,
                Verdict::Pass,
                "within the SLO: p99 8.70 ms",
                8_700,
            )],
            b,
            Some(LimitedBy::Slo),
        );
        r.confirmation = Some(confirmation);
        r
    }

    #[test]
    fn a_confirmed_answer_says_how() {
        let r = answered(Confirmation {
            rechecks: vec![
                recheck(41_200.0, Verdict::Pass, Verdict::Pass, 2, 2),
                recheck(43_500.0, Verdict::Fail, Verdict::Fail, 2, 0),
            ],
            reproduced: true,
            rounds: 1,
        });
        let s = summary(&r);
        assert!(s.starts_with("Max sustainable rate: 41,200 req/s"), "{s}");
        assert!(
            s.ends_with(
                "Confirmed: 41,200 passed 2 of 2 runs again; 43,500 failed 2 of 2 runs again."
            ),
            "{s}"
        );
    }

    #[test]
    fn an_answer_that_never_reproduced_says_so_in_its_first_words() {
        let r = answered(Confirmation {
            rechecks: vec![
                recheck(41_200.0, Verdict::Pass, Verdict::Fail, 3, 1),
                recheck(38_000.0, Verdict::Pass, Verdict::Unstable, 2, 0),
                recheck(36_000.0, Verdict::Fail, Verdict::Pass, 3, 2),
            ],
            reproduced: false,
            rounds: 3,
        });
        let s = summary(&r);
        assert!(
            s.starts_with("Max sustainable rate (not reproduced): 41,200 req/s"),
            "{s}"
        );
        for part in [
            "Not reproduced after 3 rounds: ",
            "41,200 passed before but not now (2 of 3 runs fail)",
            "38,000 passed before but not now (2 of 2 runs unstable)",
            "36,000 was fail before but passed 2 of 3 runs now",
        ] {
            assert!(s.contains(part), "{part:?} in {s}");
        }
    }

    fn closed(rps: f64, cpu: f64) -> ClosedLoopStep {
        ClosedLoopStep {
            throughput_rps: rps,
            connections: 50,
            latency_us: Default::default(),
            errors: 0,
            server_cpu_pct: Some(cpu),
            client_saturated: false,
            path: "closed-loop.json".into(),
        }
    }

    #[test]
    fn a_second_closed_loop_decides_which_explanation_holds() {
        let mut r = answered(Confirmation {
            rechecks: vec![recheck(41_200.0, Verdict::Pass, Verdict::Pass, 2, 2)],
            reproduced: true,
            rounds: 1,
        });
        r.closed_loop = Some(closed(23_442.0, 98.0));
        r.closed_loop_again = Some(closed(24_100.0, 99.0));
        r.closed_loop_finding = Some(ClosedLoopFinding::ServerSlowerWhenSaturated);
        let v = versus_closed_loop(&r).unwrap();
        assert!(v.starts_with("Closed-loop maximum over 50 connections: 24,100 req/s; the sustainable rate is 171 % of it."), "{v}");
        assert!(v.contains("measured twice: 23,442 and 24,100 req/s, and it reproduced: this server does less with every connection busy at once"), "{v}");
        // Measured again it reached the answer: the first was low, and the share uses the second.
        r.closed_loop_again = Some(closed(42_000.0, 99.0));
        r.closed_loop_finding = Some(ClosedLoopFinding::FirstMeasurementLow);
        let v = versus_closed_loop(&r).unwrap();
        assert!(
            v.contains("42,000 req/s; the sustainable rate is 98 % of it"),
            "{v}"
        );
        assert!(v.contains("the first was low"), "{v}");
    }
}

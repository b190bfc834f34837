//! A step's verdict (`client`, `machine`, `fail`, `unstable` or `pass`) and its reason in words,
//! from the step's RunResult, pure ([`judge`]). The verdicts, the order they are tried in and
//! their limits (the constants below) are docs/contract.md, "Capacity". Lag alone is no verdict:
//! a late client that was neither busy nor starved (a brief hiccup) is judged by the SLO, with
//! the lag in its corrected latency.

use volley_config::threshold::{self, Threshold};
use volley_model::result::capacity::Verdict;
use volley_model::result::{RunResult, WarningKind};
use volley_model::units;

/// Schedule lag p99 above this (µs) means the client could not keep its own schedule.
pub(crate) const LAG_LIMIT_US: u64 = 1_000;
/// volley's CPU per worker thread at or above which a shortfall is the client's, percent. Not
/// 100 minus a little: on a machine shared with the server and other work a saturated
/// thread gets less than a core (a clean-clone CI run measured 86.8 % for a client that
/// wrote 46 % of its rate).
pub(crate) const CLIENT_BUSY_PCT: f64 = 80.0;
/// The rate written may be this much below the target (fraction).
pub(crate) const SHORTFALL: f64 = 0.01;
/// Drift: the last third's p99 above this many times the first third's.
pub(crate) const DRIFT_RATIO: f64 = 1.5;
/// ... and above it by at least this (µs).
pub(crate) const DRIFT_FLOOR_US: f64 = 1_000.0;

/// Why a starved step says nothing: how long volley waited for a CPU and who had it.
fn starved(r: &RunResult, lag: Option<u64>) -> String {
    let c = &r.client;
    let late = lag.map_or(String::new(), |l| format!("lag p99 {}, ", ms(l as f64)));
    let who: Vec<String> = c
        .busiest_others
        .iter()
        .map(|p| format!("{} (pid {}) {:.0} %", p.command, p.pid, p.cpu_pct))
        .collect();
    let who = if who.is_empty() {
        String::new()
    } else {
        format!("; busiest: {}", who.join(", "))
    };
    format!(
        "the machine starved volley ({late}its threads waited up to {:.0} % of a second for a CPU while it used at most {:.0} % of a core{who})",
        c.wait_pct_max, c.cpu_pct_max
    )
}

/// The verdict of one step at `target` req/s and why, in words.
pub fn judge(r: &RunResult, target: f64, slo: &[Threshold]) -> (Verdict, String) {
    judge_part(r, target, slo, 0.0)
}

/// [`judge`] for a part of a run (a sweep's window): a shortfall is below `target` by more
/// than 1 % *and* more than `floor_rps` (a second's two requests due at its edge are not a
/// shortfall).
pub fn judge_part(
    r: &RunResult,
    target: f64,
    slo: &[Threshold],
    floor_rps: f64,
) -> (Verdict, String) {
    let short_of = |a: f64| a < target - (target * SHORTFALL).max(floor_rps);
    if r.client.saturated {
        return (
            Verdict::Client,
            format!(
                "the client saturated (volley's CPU up to {:.0} % of a core): at least this rate was not measurable",
                r.client.cpu_pct_max
            ),
        );
    }
    let lag = r.schedule_lag_us.as_ref().and_then(|l| l.p99);
    let late = lag.is_some_and(|l| l > LAG_LIMIT_US);
    let short = r.achieved_rps.is_some_and(short_of);
    if r.client.starved && (late || short) {
        return (Verdict::Machine, starved(r, lag));
    }
    // A rate not kept while volley's threads were busy to the full: the shortfall is the
    // client's (a short step may hold too few CPU samples for `client.saturated`).
    let busy = r.client.cpu_pct_max >= CLIENT_BUSY_PCT * r.load.threads.max(1) as f64;
    if short && busy {
        return (
            Verdict::Client,
            format!(
                "the client could not write the rate (volley's CPU up to {:.0} % of a core over {} thread{}): at least this rate was not measurable",
                r.client.cpu_pct_max,
                r.load.threads,
                if r.load.threads == 1 { "" } else { "s" }
            ),
        );
    }
    for t in slo {
        let c = t.check(r);
        if !c.pass {
            return (
                Verdict::Fail,
                format!(
                    "SLO broken: {} {} ({})",
                    t.metric.name(),
                    t.show(t.actual(r)),
                    t.text
                ),
            );
        }
    }
    if let Some(why) = checks_failed(r, slo) {
        return (Verdict::Fail, why);
    }
    match r.achieved_rps {
        Some(a) if short_of(a) => {
            return (Verdict::Fail, shortfall(r, a, target));
        }
        None => {
            return (
                Verdict::Fail,
                "no achieved rate (not an open-loop run)".into(),
            )
        }
        _ => {}
    }
    if let Some((first, last)) = thirds(r) {
        if last > first * DRIFT_RATIO && last - first >= DRIFT_FLOOR_US {
            return (
                Verdict::Unstable,
                format!(
                    "latency drifted up: p99 {} in the first third, at least {} in every second of the last",
                    ms(first),
                    ms(last)
                ),
            );
        }
    }
    let shown: Vec<String> = slo
        .iter()
        .map(|t| format!("{} {}", t.metric.name(), t.show(t.actual(r))))
        .collect();
    (
        Verdict::Pass,
        format!("within the SLO: {}", shown.join(", ")),
    )
}

/// Why the step's responses broke the bound their checks imply, if they did.
fn checks_failed(r: &RunResult, slo: &[Threshold]) -> Option<String> {
    let t = threshold::implied_for(r, slo)?;
    (!t.check(r).pass).then(|| {
        format!(
            "checks failed: {} of the responses failed a check ({}, implied by the checks)",
            t.show(t.actual(r)),
            t.text
        )
    })
}

/// Why a rate was not kept, with the run's own diagnosis when it has one: the connections
/// were too few for the rate at the latency seen (rate × latency), or they were not the limit.
fn shortfall(r: &RunResult, achieved: f64, target: f64) -> String {
    let head = format!(
        "the rate was not kept: {} of {} req/s written (shortfall over 1 %)",
        units::thousands(achieved.round() as u64),
        units::thousands(target.round() as u64)
    );
    let why = r
        .warnings
        .iter()
        .find(|w| w.kind() == WarningKind::Shortfall)
        .and_then(|w| w.text().split_once("; ").map(|(_, why)| why.to_string()))
        .map(|why| why.replace(" (accepted with --allow-shortfall)", ""));
    match why {
        Some(why) => format!("{head}; {why}"),
        None => head,
    }
}

/// The per-second p99 of the first third of the time series (its median) and of the last
/// third (its lowest second), µs: a rise counts only when every second of the last third
/// holds it, so one slow second at the end is not drift.
fn thirds(r: &RunResult) -> Option<(f64, f64)> {
    let p99s: Vec<f64> = r
        .timeseries
        .iter()
        .filter_map(|p| p.latency_p99_us)
        .map(|v| v as f64)
        .collect();
    if p99s.len() < 3 {
        return None;
    }
    let n = p99s.len() / 3;
    let mut first = p99s[..n].to_vec();
    first.sort_by(f64::total_cmp);
    let median = if n % 2 == 1 {
        first[n / 2]
    } else {
        (first[n / 2 - 1] + first[n / 2]) / 2.0
    };
    let lowest_last = p99s[p99s.len() - n..]
        .iter()
        .copied()
        .fold(f64::INFINITY, f64::min);
    Some((median, lowest_last))
}

fn ms(us: f64) -> String {
    format!("{:.1} ms", us / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_config::threshold::parse;
    use volley_model::stats::{Percentiles, TimePoint};

    fn base() -> RunResult {
        let text = include_str!("../../../tests/fixtures/report/open-loop.json");
        let mut r: RunResult = serde_json::from_str(text).unwrap();
        r.client.saturated = false;
        r.schedule_lag_us = Some(Percentiles {
            p99: Some(50),
            ..Default::default()
        });
        r.achieved_rps = Some(1000.0);
        r.latency_us.p99 = Some(5_000);
        r.timeseries = (0..9)
            .map(|t| TimePoint {
                latency_p99_us: Some(5_000),
                ..TimePoint::empty(t)
            })
            .collect();
        r.errors = Default::default();
        r
    }

    fn slo() -> Vec<Threshold> {
        vec![parse("p99<10ms").unwrap()]
    }

    #[test]
    fn a_kept_rate_within_the_slo_passes() {
        let (v, why) = judge(&base(), 1000.0, &slo());
        assert_eq!(v, Verdict::Pass, "{why}");
        assert!(why.contains("p99 5"), "{why}");
    }

    #[test]
    fn a_broken_slo_fails_and_names_it() {
        let mut r = base();
        r.latency_us.p99 = Some(31_000);
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Fail);
        assert!(why.contains("p99<10ms") && why.contains("31"), "{why}");
    }

    #[test]
    fn a_shortfall_fails() {
        let mut r = base();
        r.achieved_rps = Some(980.0);
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Fail);
        assert!(why.contains("the rate was not kept"), "{why}");
        // Not kept while volley's one thread was busy: the client's, not the server's.
        let mut busy = r.clone();
        busy.load.threads = 1;
        busy.client.cpu_pct_max = 86.8;
        let (v, why) = judge(&busy, 1000.0, &slo());
        assert_eq!(v, Verdict::Client, "{why}");
        assert!(why.contains("could not write the rate"), "{why}");
        // The run's own diagnosis follows: here, too few connections for the rate.
        r.warnings.push(volley_model::result::Warning::from_text(
            "target rate not reached: 980.0 of 1,000.0 req/s sent (98 %); at the observed mean latency of 50.00 ms the rate needs about 50 connections (rate × latency), the run had 10: raise -c, or let the open loop open them on demand with --max-connections 100 (accepted with --allow-shortfall)",
        ));
        let (_, why) = judge(&r, 1000.0, &slo());
        assert!(
            why.contains("needs about 50 connections") && !why.contains("accepted"),
            "{why}"
        );
        r.achieved_rps = Some(991.0);
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Pass);
    }

    #[test]
    fn only_measured_evidence_blames_the_client_or_the_machine() {
        // Saturated, by its CPU: the client.
        let mut r = base();
        r.client.saturated = true;
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Client);
        // Late (one 3.4 ms spike) but neither busy nor starved: no verdict of its own; the SLO
        // judges, with the lag in the corrected latency.
        let mut r = base();
        r.schedule_lag_us.as_mut().unwrap().p99 = Some(3_400);
        r.client.cpu_pct_max = 5.4;
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Pass, "{why}");
        // Late and starved (its threads waited for a CPU another process had): the machine,
        // and who had the CPU.
        r.client.starved = true;
        r.client.wait_pct_max = 41.0;
        r.client.cpu_pct_max = 16.0;
        r.client.busiest_others = vec![volley_model::result::OtherProcess {
            pid: 4242,
            command: "cc1plus".into(),
            cpu_pct: 93.0,
        }];
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Machine, "{why}");
        assert!(
            why.contains("lag p99 3.4 ms")
                && why.contains("waited up to 41 % of a second")
                && why.contains("cc1plus (pid 4242) 93 %"),
            "{why}"
        );
        // Short of the rate and starved: the machine too, not the server's shortfall.
        let mut r = base();
        r.achieved_rps = Some(700.0);
        r.client.starved = true;
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Machine);
        // Starved seconds in a step that kept its rate and schedule say nothing against it.
        let mut r = base();
        r.client.starved = true;
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Pass);
    }

    /// A step judged from the kernel's accounting of volley's worker thread: each second the
    /// fake schedstat source moves the thread's time on a CPU by `run_ms` and its run-queue
    /// wait by `wait_ms`, through the real sampler and the real client check.
    fn judged_from_schedstat(run_ms: u64, wait_ms: u64, lag_p99_us: u64) -> (Verdict, String) {
        use std::sync::{Arc, Mutex};
        use volley_measure::client_check::ClientCheck;
        use volley_monitor::client::ClientSampler;
        let clock = Arc::new(Mutex::new((1_000_000u64, 0u64)));
        let read = Arc::clone(&clock);
        let schedstat = Box::new(move |_tid: i32| {
            let (run, wait) = *read.lock().unwrap();
            Some(format!("{run} {wait} 42\n"))
        });
        let mut sampler = ClientSampler::with_schedstat(0, schedstat);
        sampler.add_thread(7);
        for second in 1..=5u64 {
            let mut c = clock.lock().unwrap();
            c.0 += run_ms * 1_000_000;
            c.1 += wait_ms * 1_000_000;
            drop(c);
            sampler.sample(second * 1_000_000_000, second as f64);
        }
        let check = ClientCheck::of(&sampler.samples, 1.0, Some(lag_p99_us), Vec::new());
        // As the RunResult's `client` carries them (measure::assemble).
        let mut r = base();
        r.load.threads = 1;
        r.client.saturated = check.by_cpu;
        r.client.starved = check.starved;
        r.client.wait_pct_max = check.wait_pct_max;
        r.client.cpu_pct_max = check.cpu_pct_max;
        r.schedule_lag_us.as_mut().unwrap().p99 = Some(lag_p99_us);
        judge(&r, 1000.0, &slo())
    }

    #[test]
    fn the_kernels_accounting_decides_between_client_machine_and_neither() {
        // On a CPU 150 ms a second and waiting 400 ms for it (a hog on its core), 2.9 ms late:
        // starved, the machine's step — never the client's.
        let (v, why) = judged_from_schedstat(150, 400, 2_900);
        assert_eq!(v, Verdict::Machine, "{why}");
        assert!(why.contains("waited up to 40 % of a second"), "{why}");
        // On a CPU 980 ms a second: saturated, the client's step.
        let (v, why) = judged_from_schedstat(980, 15, 2_900);
        assert_eq!(v, Verdict::Client, "{why}");
        // A 3 ms hiccup (3 ms waiting, 3.4 ms late) changes nothing: the SLO judges.
        let (v, why) = judged_from_schedstat(50, 3, 3_400);
        assert_eq!(v, Verdict::Pass, "{why}");
    }

    #[test]
    fn responses_failing_their_checks_fail_the_step_unless_the_slo_names_checks() {
        let mut r = base();
        r.requests.completed = 10_000;
        r.checks.insert("status".into(), 0);
        r.requests.failed_checks = Some(100);
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Pass, "exactly 1 % is within: {why}");
        r.requests.failed_checks = Some(101);
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Fail, "{why}");
        assert!(
            why.contains("checks failed: 1.010%") && why.contains("checks<=1%"),
            "{why}"
        );
        // The SLO's own bound on checks replaces the implied one.
        let own = vec![parse("p99<10ms").unwrap(), parse("checks<5%").unwrap()];
        assert_eq!(judge(&r, 1000.0, &own).0, Verdict::Pass);
        // Without checks declared there is nothing to judge.
        r.checks.clear();
        r.requests.failed_checks = None;
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Pass);
    }

    #[test]
    fn drift_is_unstable_but_small_jitter_is_not() {
        let mut r = base();
        for (i, p) in r.timeseries.iter_mut().enumerate() {
            p.latency_p99_us = Some(if i >= 6 { 9_000 } else { 3_000 });
        }
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Unstable, "{why}");
        // 2× but only 300 µs more: jitter, not drift.
        for (i, p) in r.timeseries.iter_mut().enumerate() {
            p.latency_p99_us = Some(if i >= 6 { 600 } else { 300 });
        }
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Pass);
        // One slow second at the end (a server at 4 % of its capacity, seen in the bench):
        // not drift while the other seconds of the last third stay where they were.
        for (i, p) in r.timeseries.iter_mut().enumerate() {
            p.latency_p99_us = Some(if i == 8 { 2_600 } else { 200 });
        }
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Pass);
        // A rise through the step: the last third all above 1.5× the first's median.
        for (i, p) in r.timeseries.iter_mut().enumerate() {
            p.latency_p99_us = Some(200 + 600 * i as u64);
        }
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Unstable, "{why}");
        assert!(
            why.contains("first third") && why.contains("every second of the last"),
            "{why}"
        );
    }
}

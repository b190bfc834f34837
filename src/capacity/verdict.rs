//! A step's verdict from its RunResult, pure. In this order:
//! 1. `client`: volley's schedule lag p99 exceeded 1 ms, or it was saturated
//!    (`client.saturated`): the numbers describe volley, not the server; the reason names the
//!    lag when there was one (a late run is marked saturated too);
//! 2. `fail`: an SLO broke;
//! 3. `fail`: the rate written (`achieved_rps`) is more than 1 % below the target (shortfall:
//!    the server cannot take the rate);
//! 4. `unstable`: every per-second p99 of the last third of the time series is more than
//!    1.5× the median of the first third's, and higher by 1 ms or more (sub-millisecond jitter
//!    is not drift, nor is one slow second among the last); needs 3 seconds with a p99;
//! 5. `pass`.

use crate::config::threshold::Threshold;
use crate::result::capacity::Verdict;
use crate::result::{RunResult, WarningKind};
use crate::units;

/// Schedule lag p99 above this (µs) means the client could not keep its own schedule.
pub const LAG_LIMIT_US: u64 = 1_000;
/// volley's CPU per worker thread at or above which a shortfall is the client's, percent. Not
/// 100 minus a little: on a machine shared with the server and other work a saturated
/// thread gets less than a core (a clean-clone CI run measured 86.8 % for a client that
/// wrote 46 % of its rate).
pub const CLIENT_BUSY_PCT: f64 = 80.0;
/// The rate written may be this much below the target (fraction).
pub const SHORTFALL: f64 = 0.01;
/// Drift: the last third's p99 above this many times the first third's.
pub const DRIFT_RATIO: f64 = 1.5;
/// ... and above it by at least this (µs).
pub const DRIFT_FLOOR_US: f64 = 1_000.0;

/// The verdict of one step at `target` req/s and why, in words.
pub fn judge(r: &RunResult, target: f64, slo: &[Threshold]) -> (Verdict, String) {
    // The lag first: a run marks its client saturated when it was late as well as when it was
    // busy (`client.saturated`), and a late client is named for its lag, not for a CPU it may
    // hardly have used.
    if let Some(lag) = r.schedule_lag_us.as_ref().and_then(|l| l.p99) {
        if lag > LAG_LIMIT_US {
            return (
                Verdict::Client,
                format!(
                    "the client fell behind its schedule (lag p99 {} > 1 ms)",
                    ms(lag as f64)
                ),
            );
        }
    }
    if r.client.saturated {
        return (
            Verdict::Client,
            format!(
                "the client saturated (volley's CPU up to {:.0} % of a core): at least this rate was not measurable",
                r.client.cpu_pct_max
            ),
        );
    }
    // A rate not kept while volley's threads were busy to the full: the shortfall is the
    // client's (a short step may hold too few CPU samples for `client.saturated`).
    let short = r
        .achieved_rps
        .is_some_and(|a| a < target * (1.0 - SHORTFALL));
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
    match r.achieved_rps {
        Some(a) if a < target * (1.0 - SHORTFALL) => {
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
    use crate::config::threshold::parse;
    use crate::stats::{Percentiles, TimePoint};

    fn base() -> RunResult {
        let text = include_str!("../../tests/fixtures/report/open-loop.json");
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
        r.warnings.push(crate::result::Warning::from_text(
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
    fn a_saturated_or_late_client_is_the_limit() {
        let mut r = base();
        r.client.saturated = true;
        assert_eq!(judge(&r, 1000.0, &slo()).0, Verdict::Client);
        let mut r = base();
        r.schedule_lag_us.as_mut().unwrap().p99 = Some(1_500);
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Client);
        assert!(why.contains("schedule"), "{why}");
        // A late client is marked saturated too (`client.saturated` is CPU or lag): it is
        // named for its lag, not for the 1 % of a core it used.
        r.client.saturated = true;
        r.client.cpu_pct_max = 1.0;
        let (v, why) = judge(&r, 1000.0, &slo());
        assert_eq!(v, Verdict::Client);
        assert!(
            why.contains("fell behind its schedule") && !why.contains("CPU"),
            "{why}"
        );
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

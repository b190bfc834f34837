//! Judging one pair of series: medians, ranges and the Mann-Whitney U test of the headline
//! metric, the regression check of `--fail-if-slower`, and the secondary metrics shown beside
//! it (docs/contract.md, "Comparisons").

use super::endpoints;
use super::loads::{what_differs, LoadSeries};
use super::{
    stats, Judgement, MetricDiff, Options, Pair, Verdict, ALPHA, MIN_REPETITIONS, SECONDARY,
};
use volley_model::metric::Metric;
use volley_model::result::{Mode, RunResult};
use volley_report::model::median;

/// Judges the series `x` of A against its counterpart `y` of B: `opts.metric`, or the
/// headline of their load mode, with the secondary metrics beside it; `opts.fail_pct` is
/// `--fail-if-slower`, which a pair too small to call breaks only with `opts.allow_single`.
pub(super) fn pair(x: &LoadSeries, y: &LoadSeries, opts: Options) -> Pair {
    let (ra, rb) = (x.ok(), y.ok());
    let mode_a = ra.first().map(|r| r.load.mode);
    let mode_b = rb.first().map(|r| r.load.mode);
    let loads_differ =
        matches!((&x.series.load_id, &y.series.load_id), (Some(a), Some(b)) if a != b);
    let mut notes: Vec<String> = Vec::new();
    if loads_differ {
        notes.push(format!(
            "loads differ (compared because of --force): {}",
            what_differs(x, y)
        ));
    } else {
        notes.extend(mode_note(mode_a, mode_b));
    }
    let m = opts
        .metric
        .unwrap_or_else(|| Metric::headline(mode_a.or(mode_b).unwrap_or(Mode::Closed)));
    let j = judge(m, &ra, &rb);
    if j.verdict == Verdict::NotMeasured {
        notes.extend(not_measured_notes(m, &j, &ra, &rb));
    }
    let endpoints = endpoints::compare(m, &ra, &rb);
    let named = ra.iter().chain(&rb).any(|r| !r.endpoints.is_empty());
    if named && !m.per_request() {
        notes.push(format!(
            "{} belongs to the whole run: the named requests are not compared",
            m.label()
        ));
    }
    let beyond_limit = opts.fail_pct.is_some_and(|limit| beyond(m, &j, limit));
    let regression = beyond_limit && is_called_or_allowed(j.verdict, opts.allow_single);
    let (a_load_id, b_load_id) = (x.series.load_id.clone(), y.series.load_id.clone());
    let (x, y) = (&x.series, &y.series);
    Pair {
        label: x.label.clone(),
        server: x.server.clone(),
        b_label: (y.label != x.label).then(|| y.label.clone()),
        b_server: (y.server != x.server).then(|| y.server.clone()),
        judged: j,
        regression,
        secondary: secondary(&ra, &rb),
        notes,
        beyond_limit,
        a_load_id,
        b_load_id,
        loads_differ,
        a_name: x.server.clone(),
        b_name: y.server.clone(),
        endpoints,
    }
}

/// A note when the two sides ran in different load modes (their numbers mean different things).
fn mode_note(a: Option<Mode>, b: Option<Mode>) -> Option<String> {
    match (a, b) {
        (Some(a), Some(b)) if a != b => Some(format!("load modes differ: A {a}, B {b}")),
        _ => None,
    }
}

/// Why a side lacks the metric, one note per side that does.
fn not_measured_notes(
    m: Metric,
    j: &Judgement,
    ra: &[&RunResult],
    rb: &[&RunResult],
) -> Vec<String> {
    let why = |runs: &[&RunResult]| {
        if runs.is_empty() {
            "no finished run"
        } else if m == Metric::CpuPerRequest {
            "no server monitor"
        } else {
            "no response"
        }
    };
    let mut notes = Vec::new();
    if j.n_a == 0 {
        notes.push(format!("A: {}", why(ra)));
    }
    if j.n_b == 0 {
        notes.push(format!("B: {}", why(rb)));
    }
    notes
}

/// The [`SECONDARY`] metrics of a pair: medians only, no test.
fn secondary(ra: &[&RunResult], rb: &[&RunResult]) -> Vec<MetricDiff> {
    SECONDARY
        .iter()
        .map(|&s| {
            let med = |runs: &[&RunResult]| {
                median(&runs.iter().filter_map(|r| s.value(r)).collect::<Vec<_>>())
            };
            diff(s, med(ra), med(rb))
        })
        .collect()
}

/// Smallest and largest value; `None` for no values.
fn range(v: &[f64]) -> Option<[f64; 2]> {
    let lo = v.iter().copied().reduce(f64::min)?;
    let hi = v.iter().copied().reduce(f64::max)?;
    Some([lo, hi])
}

/// Two medians of one metric, their ratio and change.
fn diff(metric: Metric, a: Option<f64>, b: Option<f64>) -> MetricDiff {
    let ratio = match (a, b) {
        (Some(a), Some(b)) if a != 0.0 => Some(b / a),
        _ => None,
    };
    MetricDiff {
        metric,
        a,
        b,
        ratio,
        change_pct: ratio.map(|r| (r - 1.0) * 100.0),
        better: metric.better(),
    }
}

/// Medians and ranges of `metric` on both sides' runs, and the test when each side has at
/// least [`MIN_REPETITIONS`] values.
fn judge(metric: Metric, a: &[&RunResult], b: &[&RunResult]) -> Judgement {
    let va: Vec<f64> = a.iter().filter_map(|r| metric.value(r)).collect();
    let vb: Vec<f64> = b.iter().filter_map(|r| metric.value(r)).collect();
    judge_values(metric, &va, &vb)
}

/// Medians and ranges of the values `va` of A and `vb` of B (one per repetition) of
/// `metric`, and the test when each side has at least [`MIN_REPETITIONS`]: how a pair's
/// headline and each of its named requests are judged alike.
pub(super) fn judge_values(metric: Metric, va: &[f64], vb: &[f64]) -> Judgement {
    let d = diff(metric, median(va), median(vb));
    let (mut verdict, mut u, mut p_value) = (Verdict::TooFew, None, None);
    if va.is_empty() || vb.is_empty() {
        verdict = Verdict::NotMeasured;
    } else if va.len() >= MIN_REPETITIONS && vb.len() >= MIN_REPETITIONS {
        if let Some(t) = stats::mann_whitney_u(va, vb) {
            u = Some(t.u());
            p_value = Some(t.p_value);
            verdict = if t.p_value >= ALPHA {
                Verdict::NoDifference
            } else if t.b_tends_larger() == metric.higher_is_better() {
                Verdict::Faster
            } else {
                Verdict::Slower
            };
        }
    }
    let effect = stats::effect(va, vb, ALPHA);
    Judgement {
        headline: d,
        a_range: range(va),
        b_range: range(vb),
        n_a: va.len(),
        n_b: vb.len(),
        verdict,
        u,
        p_value,
        effect_pct: effect.map(|e| e.pct),
        ci_low_pct: effect.and_then(|e| e.low_pct),
        ci_high_pct: effect.and_then(|e| e.high_pct),
    }
}

/// How much worse B's median is than A's, in percent of A (positive: worse; infinite when a
/// lower-is-better metric rose from 0).
pub fn worse_pct(metric: Metric, a: f64, b: f64) -> f64 {
    if a == 0.0 {
        return if !metric.higher_is_better() && b > 0.0 {
            f64::INFINITY
        } else {
            0.0
        };
    }
    let change = (b - a) / a.abs() * 100.0;
    if metric.higher_is_better() {
        -change
    } else {
        change
    }
}

/// Whether B's median is worse than A's by more than `limit_pct` percent of A's.
fn beyond(metric: Metric, j: &Judgement, limit_pct: f64) -> bool {
    let (Some(a), Some(b)) = (j.headline.a, j.headline.b) else {
        return false;
    };
    worse_pct(metric, a, b) > limit_pct
}

/// Whether a difference beyond the limit is a regression: when the test called it slower, or,
/// with `--allow-single`, when there were too few repetitions to call it at all.
fn is_called_or_allowed(verdict: Verdict, allow_single: bool) -> bool {
    match verdict {
        Verdict::Slower => true,
        Verdict::TooFew => allow_single,
        Verdict::Faster | Verdict::NoDifference | Verdict::NotMeasured => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_model::metric::Stat;

    #[test]
    fn worse_pct_follows_the_metric_direction() {
        assert_eq!(worse_pct(Metric::Throughput, 100.0, 90.0), 10.0);
        assert_eq!(worse_pct(Metric::Throughput, 100.0, 110.0), -10.0);
        assert_eq!(worse_pct(Metric::Latency(Stat::P99), 100.0, 120.0), 20.0);
        assert_eq!(worse_pct(Metric::Errors, 0.0, 3.0), f64::INFINITY);
        assert_eq!(worse_pct(Metric::Errors, 0.0, 0.0), 0.0);
    }

    #[test]
    fn only_called_differences_fail_unless_single_runs_are_allowed() {
        assert!(is_called_or_allowed(Verdict::Slower, false));
        assert!(!is_called_or_allowed(Verdict::TooFew, false));
        assert!(is_called_or_allowed(Verdict::TooFew, true));
        for v in [Verdict::Faster, Verdict::NoDifference, Verdict::NotMeasured] {
            assert!(!is_called_or_allowed(v, true), "{v:?}");
        }
    }

    #[test]
    fn headline_by_mode_and_names_round_trip() {
        assert_eq!(Metric::headline(Mode::Closed), Metric::Throughput);
        assert_eq!(Metric::headline(Mode::Ramp), Metric::Throughput);
        assert_eq!(Metric::headline(Mode::Open), Metric::Latency(Stat::P99));
    }
}

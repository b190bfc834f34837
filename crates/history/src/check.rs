//! `volley history check`: the newest runs of a commit against the baseline's history, like
//! with like only. Pure: series in, findings out. For each series and metric the baseline's
//! per-commit medians are split at their change points ([`super::changepoint`]) and the last
//! level (the commits since the last change, at most a window's worth) is the reference: a level
//! of several commits is judged by their medians (`by_commits`), a level of one commit by its
//! repetitions (`by_repetitions`). A change is called when it is at least `min_effect_pct` and
//! significant at `alpha`; tail statistics warn instead of failing unless asked to gate. The
//! rules, and why commits are the samples, are docs/contract.md, "Run history".

use super::changepoint::{self, Settings as CpSettings};
use super::measure::Measure;
use statrs::distribution::{ContinuousCDF, StudentsT};

use super::series::{median, Key, Point, Series};
use volley_model::stats::ab::{effect, mann_whitney_u, MIN_CALL_N};

/// The smallest change called, percent: also the smallest change point the trends mark
/// (Otava's `min_magnitude`), so that a level is not split at a shift no check would call.
pub(crate) const DEFAULT_MIN_EFFECT_PCT: f64 = 5.0;

/// The tests' level: two-sided, so a regression by chance alone is called at half of it.
pub(crate) const DEFAULT_ALPHA: f64 = 0.005;

/// How a check judges.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Metrics whose regression fails the check.
    pub gate: Vec<Measure>,
    /// Metrics whose regression is reported only.
    pub warn: Vec<Measure>,
    /// Smallest change called, percent of the baseline's median.
    pub min_effect_pct: f64,
    /// Level of the tests.
    pub alpha: f64,
    /// The change-point detector (its `max_pvalue` is the t-test's level).
    pub changepoint: CpSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gate: vec![
                Measure::Run(volley_model::metric::Metric::Throughput),
                Measure::Run(volley_model::metric::Metric::Latency(
                    volley_model::metric::Stat::P50,
                )),
                Measure::MaxRate,
            ],
            warn: vec![Measure::Run(volley_model::metric::Metric::Latency(
                volley_model::metric::Stat::P99,
            ))],
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
            alpha: DEFAULT_ALPHA,
            changepoint: CpSettings {
                min_magnitude: DEFAULT_MIN_EFFECT_PCT / 100.0,
                ..CpSettings::default()
            },
        }
    }
}

/// What a metric of a series showed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// Worse by at least the minimum effect, significantly.
    Regression,
    /// Better by at least the minimum effect, significantly.
    Improvement,
    /// Neither.
    NoChange,
}

/// The test behind a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Test {
    /// The current commit's median against the level's commit medians: Student's t
    /// prediction test (each CI job one sample; the level holds two commits or more).
    Commits,
    /// Mann-Whitney U on the repetitions (a level of one commit, 6 or more values a side).
    MannWhitney,
    /// Student's t-test on the repetitions (a level of one commit, fewer values).
    TTest,
}

/// One metric of one series.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// The metric.
    pub measure: Measure,
    /// It fails the check when it regresses.
    pub gating: bool,
    /// The call.
    pub call: Call,
    /// The baseline's last level: its median.
    pub baseline_median: f64,
    /// Values in it (repetitions of its commits).
    pub baseline_n: usize,
    /// Commits in it.
    pub baseline_commits: usize,
    /// The commit the level starts at (after a change point, or where the window cut it);
    /// `None` when it is the baseline's first.
    pub level_since: Option<String>,
    /// The current runs' median.
    pub current_median: f64,
    /// Their number.
    pub current_n: usize,
    /// Current against baseline, percent of the baseline's median (positive: higher).
    pub effect_pct: Option<f64>,
    /// Its confidence interval (5 values a side or more).
    pub ci_pct: Option<(f64, f64)>,
    /// The test's p-value.
    pub p_value: f64,
    /// Which test.
    pub test: Test,
}

/// One series of the current commit.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The series' name.
    pub name: String,
    /// Its key.
    pub key: Key,
    /// Its findings; empty when it cannot be compared.
    pub findings: Vec<Finding>,
    /// Why it cannot be compared.
    pub refused: Option<String>,
}

impl Entry {
    /// A gating regression was called.
    pub fn regressed(&self) -> bool {
        self.findings
            .iter()
            .any(|f| f.gating && f.call == Call::Regression)
    }
}

/// Judges every current series against its baseline series.
pub fn check(current: &[Series<'_>], baseline: &[Series<'_>], s: &Settings) -> Vec<Entry> {
    current
        .iter()
        .map(|cur| {
            let name = cur.name();
            match baseline.iter().find(|b| b.key == cur.key) {
                Some(base) => Entry {
                    name,
                    key: cur.key.clone(),
                    findings: judge(cur, base, s),
                    refused: None,
                },
                None => Entry {
                    name,
                    key: cur.key.clone(),
                    findings: Vec::new(),
                    refused: Some(why_unlike(cur, baseline)),
                },
            }
        })
        .collect()
}

/// Why a series has no like in the baseline: another load, another host, or no history.
fn why_unlike(cur: &Series<'_>, baseline: &[Series<'_>]) -> String {
    // Plain runs have no suite labels: their URL's path names the test (not its host and
    // port, which the load identity leaves out too).
    let plain = cur.key.scenario.is_empty() && cur.key.server.is_empty();
    let url = |s: &Series<'_>| {
        s.runs.last().map(|r| {
            volley_model::result::identity::scheme_and_path(&r.record.url)
                .1
                .to_string()
        })
    };
    let same_test: Vec<&Series<'_>> = baseline
        .iter()
        .filter(|b| b.key.test() == cur.key.test() && (!plain || url(b) == url(cur)))
        .collect();
    // The closest: the same load on another host, or the same host under another load.
    let other = same_test
        .iter()
        .find(|b| b.key.load_id == cur.key.load_id)
        .or_else(|| same_test.iter().find(|b| b.key.host_id == cur.key.host_id))
        .or(same_test.last());
    let Some(other) = other else {
        return "the baseline has no run of this test".to_string();
    };
    let mut why = Vec::new();
    if other.key.load_id != cur.key.load_id {
        why.push(format!(
            "the load differs (load_id {} against the baseline's {}): another rate, duration, \
             connections or request",
            cur.key.load_id, other.key.load_id
        ));
    }
    if other.key.host_id != cur.key.host_id {
        let (a, b) = (&cur.runs[0].record.host, &other.runs[0].record.host);
        why.push(format!(
            "the host differs (fingerprint {} against {}: {})",
            cur.key.host_id,
            other.key.host_id,
            a.differences(b).join(", ")
        ));
    }
    format!("cannot compare: {}", why.join("; "))
}

fn judge(cur: &Series<'_>, base: &Series<'_>, s: &Settings) -> Vec<Finding> {
    let measures = s.gate.iter().map(|m| (*m, true)).chain(
        s.warn
            .iter()
            .filter(|m| !s.gate.contains(m))
            .map(|m| (*m, false)),
    );
    let mut out = Vec::new();
    for (m, gating) in measures {
        if !m.applies_to(cur.key.capacity) {
            continue;
        }
        let cur_values: Vec<f64> = cur.points(m).into_iter().flat_map(|p| p.values).collect();
        let points = base.points(m);
        if cur_values.is_empty() || points.is_empty() {
            continue;
        }
        let medians: Vec<f64> = points.iter().map(|p| p.median()).collect();
        let cps = changepoint::detect(&medians, &s.changepoint);
        let since = cps.last().map_or(0, |c| c.index);
        let from = since.max(points.len().saturating_sub(s.changepoint.window));
        let level = &points[from..];
        let mut f = finding(m, gating, level, &cur_values, s);
        f.level_since = (from > 0).then(|| points[from].label());
        out.push(f);
    }
    out
}

/// Whether the Mann-Whitney test on `a` against `b` values can reach `alpha` at all: 5 values
/// a side or more, and a p-value below `alpha` when the samples do not overlap (with the normal
/// approximation, 5 against 5 cannot go below 0.012). Otherwise the t-test judges.
fn rank_test_can_call(a: usize, b: usize, alpha: f64) -> bool {
    if a < MIN_CALL_N || b < MIN_CALL_N {
        return false;
    }
    let low: Vec<f64> = (0..a).map(|i| i as f64).collect();
    let high: Vec<f64> = (a..a + b).map(|i| i as f64).collect();
    mann_whitney_u(&low, &high).is_some_and(|t| t.p_value < alpha)
}

/// What a level says against the current values: the test, its p-value, the baseline value
/// the effect is relative to, the effect and its interval (percent).
struct Judged {
    test: Test,
    p_value: f64,
    baseline: f64,
    effect_pct: Option<f64>,
    ci_pct: Option<(f64, f64)>,
}

/// The commits are the samples: a CI job's repetitions share its machine's state (pooled, they
/// would call a job's drift a change), so a level of several commits is judged by their
/// medians, the current commit's median a new sample of them (a prediction interval: Student's
/// t with the sample deviation, k − 1 degrees).
fn by_commits(medians: &[f64], current: f64, alpha: f64) -> Judged {
    let k = medians.len() as f64;
    let mean = medians.iter().sum::<f64>() / k;
    let sd = (medians.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (k - 1.0)).sqrt();
    let scale = sd * (1.0 + 1.0 / k).sqrt();
    let (p_value, half) = match StudentsT::new(0.0, 1.0, k - 1.0) {
        Ok(d) if scale > 0.0 => {
            let t = (current - mean) / scale;
            (
                (2.0 * d.sf(t.abs())).min(1.0),
                d.inverse_cdf(1.0 - alpha / 2.0) * scale,
            )
        }
        _ if current == mean => (1.0, 0.0),
        _ => (0.0, 0.0),
    };
    let pct = |v: f64| (mean != 0.0).then(|| v / mean.abs() * 100.0);
    Judged {
        test: Test::Commits,
        p_value,
        baseline: mean,
        effect_pct: pct(current - mean),
        ci_pct: pct(current - mean - half).zip(pct(current - mean + half)),
    }
}

/// A level of one commit: its repetitions against the current ones (Mann-Whitney where it can
/// reach `alpha`, else the t-test), the effect the Hodges-Lehmann shift.
fn by_repetitions(base: &[f64], cur: &[f64], alpha: f64) -> Judged {
    let e = effect(base, cur, alpha);
    let (test, p_value) = if rank_test_can_call(base.len(), cur.len(), alpha) {
        let p = mann_whitney_u(base, cur).map_or(1.0, |t| t.p_value);
        (Test::MannWhitney, p)
    } else {
        (Test::TTest, pooled_t(base, cur))
    };
    Judged {
        test,
        p_value,
        baseline: median(base),
        effect_pct: e.map(|e| e.pct),
        ci_pct: e.and_then(|e| Some((e.low_pct?, e.high_pct?))),
    }
}

/// Student's two-sample t-test with the pooled sample variance (n − 1: the repetitions are
/// few, and the population deviation Otava's change points use would overstate the evidence).
fn pooled_t(a: &[f64], b: &[f64]) -> f64 {
    let (n1, n2) = (a.len() as f64, b.len() as f64);
    if n1 + n2 <= 2.0 {
        return 1.0;
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let (m1, m2) = (mean(a), mean(b));
    let ss = |v: &[f64], m: f64| v.iter().map(|x| (x - m).powi(2)).sum::<f64>();
    let pooled = (ss(a, m1) + ss(b, m2)) / (n1 + n2 - 2.0);
    let scale = (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
    if scale == 0.0 {
        return if m1 == m2 { 1.0 } else { 0.0 };
    }
    match StudentsT::new(0.0, 1.0, n1 + n2 - 2.0) {
        Ok(d) => (2.0 * d.sf(((m1 - m2) / scale).abs())).min(1.0),
        Err(_) => 1.0,
    }
}

fn finding(m: Measure, gating: bool, level: &[Point], cur: &[f64], s: &Settings) -> Finding {
    let medians: Vec<f64> = level.iter().map(|p| p.median()).collect();
    let base_values: Vec<f64> = level.iter().flat_map(|p| p.values.clone()).collect();
    let j = if medians.len() >= 2 {
        by_commits(&medians, median(cur), s.alpha)
    } else {
        by_repetitions(&base_values, cur, s.alpha)
    };
    let worse = j
        .effect_pct
        .map(|p| if m.higher_is_better() { -p } else { p });
    let significant = j.p_value < s.alpha;
    let call = match worse {
        Some(w) if significant && w >= s.min_effect_pct => Call::Regression,
        Some(w) if significant && -w >= s.min_effect_pct => Call::Improvement,
        _ => Call::NoChange,
    };
    Finding {
        measure: m,
        gating,
        call,
        baseline_median: j.baseline,
        baseline_n: base_values.len(),
        baseline_commits: level.len(),
        level_since: None,
        current_median: median(cur),
        current_n: cur.len(),
        effect_pct: j.effect_pct,
        ci_pct: j.ci_pct,
        p_value: j.p_value,
        test: j.test,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pooled_t_test_matches_scipy() {
        // scipy 1.16: ttest_ind([1, 2, 3, 4], [3, 5, 6]) -> statistic -2.0402, pvalue 0.096840.
        let p = pooled_t(&[1.0, 2.0, 3.0, 4.0], &[3.0, 5.0, 6.0]);
        assert!((p - 0.096_839_69).abs() < 1e-7, "{p}");
        assert_eq!(pooled_t(&[1.0], &[2.0]), 1.0);
        assert_eq!(pooled_t(&[1.0, 1.0], &[2.0, 2.0]), 0.0);
    }

    #[test]
    fn a_new_commit_is_judged_against_the_commits_spread() {
        let j = by_commits(&[100.0, 102.0, 98.0, 101.0, 99.0], 90.0, 0.005);
        assert_eq!(j.test, Test::Commits);
        assert!((j.effect_pct.unwrap() + 10.0).abs() < 1e-9);
        assert!(j.p_value < 0.005, "{}", j.p_value);
        let (lo, hi) = j.ci_pct.unwrap();
        assert!(lo < -10.0 && hi > -10.0 && hi < 0.0, "{lo} {hi}");
        let j = by_commits(&[100.0, 102.0, 98.0, 101.0, 99.0], 101.0, 0.005);
        assert!(j.p_value > 0.5);
    }

    #[test]
    fn the_rank_test_is_used_only_where_it_can_call() {
        // 5 against 5 cannot reach 0.01 with the normal approximation (0.012 at best).
        assert!(!rank_test_can_call(5, 5, 0.01));
        assert!(rank_test_can_call(5, 5, 0.05));
        assert!(rank_test_can_call(6, 6, 0.01));
        assert!(rank_test_can_call(30, 5, 0.01));
        assert!(!rank_test_can_call(30, 4, 0.01));
    }
}

//! `volley history check`: the newest runs of a commit against the baseline's history, like
//! with like only. Pure: series in, findings out.
//!
//! For each series and metric: the baseline's per-commit medians are split at their change
//! points ([`super::changepoint`]); the baseline is the last level (the commits since the last
//! change, at most a window's worth). The current runs' effect against it is the
//! Hodges-Lehmann shift in percent of its median. A change is called when it is at least
//! `min_effect_pct` and significant: with 5 values a side or more by the Mann-Whitney U test at
//! `alpha` (the test of `volley compare`), with fewer by Otava's t-test at the change-point
//! level (`max_pvalue`). Tail statistics warn instead of failing unless asked to gate.

use super::changepoint::{self, Settings as CpSettings};
use super::measure::Measure;
use super::series::{median, Key, Series};
use crate::stats::ab::{effect, mann_whitney_u, MIN_CALL_N};

/// The smallest change called, percent: also the smallest change point the trends mark
/// (Otava's `min_magnitude`), so that a level is not split at a shift no check would call.
pub const DEFAULT_MIN_EFFECT_PCT: f64 = 5.0;

/// How a check judges.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Metrics whose regression fails the check.
    pub gate: Vec<Measure>,
    /// Metrics whose regression is reported only.
    pub warn: Vec<Measure>,
    /// Smallest change called, percent of the baseline's median.
    pub min_effect_pct: f64,
    /// Level of the Mann-Whitney test.
    pub alpha: f64,
    /// The change-point detector (its `max_pvalue` is the t-test's level).
    pub changepoint: CpSettings,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            gate: vec![
                Measure::Run(crate::metric::Metric::Throughput),
                Measure::Run(crate::metric::Metric::Latency(crate::metric::Stat::P50)),
                Measure::MaxRate,
            ],
            warn: vec![Measure::Run(crate::metric::Metric::Latency(
                crate::metric::Stat::P99,
            ))],
            min_effect_pct: DEFAULT_MIN_EFFECT_PCT,
            alpha: 0.01,
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
    /// Mann-Whitney U on the repetitions.
    MannWhitney,
    /// Student's t-test against the baseline's last level (fewer than 5 values a side).
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
    /// The change point the level starts at (a commit label), when there is one.
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
    let same_test: Vec<&Series<'_>> = baseline
        .iter()
        .filter(|b| b.key.test() == cur.key.test())
        .collect();
    let Some(other) = same_test.last() else {
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
        let base_values: Vec<f64> = level.iter().flat_map(|p| p.values.clone()).collect();
        out.push(finding(m, gating, &base_values, &cur_values, s, |f| {
            f.baseline_commits = level.len();
            f.level_since = cps.last().map(|c| points[c.index].label());
        }));
    }
    out
}

fn finding(
    m: Measure,
    gating: bool,
    base: &[f64],
    cur: &[f64],
    s: &Settings,
    fill: impl FnOnce(&mut Finding),
) -> Finding {
    let e = effect(base, cur, s.alpha);
    let (test, p_value, level) = if base.len() >= MIN_CALL_N && cur.len() >= MIN_CALL_N {
        let p = mann_whitney_u(base, cur).map_or(1.0, |t| t.p_value);
        (Test::MannWhitney, p, s.alpha)
    } else {
        let p = changepoint::ttest(base, cur).pvalue;
        (Test::TTest, p, s.changepoint.max_pvalue)
    };
    let pct = e.map(|e| e.pct);
    let worse = pct.map(|p| if m.higher_is_better() { -p } else { p });
    let call = match worse {
        Some(w) if p_value < level && w >= s.min_effect_pct => Call::Regression,
        Some(w) if p_value < level && -w >= s.min_effect_pct => Call::Improvement,
        _ => Call::NoChange,
    };
    let mut f = Finding {
        measure: m,
        gating,
        call,
        baseline_median: median(base),
        baseline_n: base.len(),
        baseline_commits: 0,
        level_since: None,
        current_median: median(cur),
        current_n: cur.len(),
        effect_pct: pct,
        ci_pct: e.and_then(|e| Some((e.low_pct?, e.high_pct?))),
        p_value,
        test,
    };
    fill(&mut f);
    f
}

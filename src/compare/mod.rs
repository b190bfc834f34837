//! `volley compare A B [--metric M] [--fail-if-slower PCT] [--json PATH|-]`: B against A, cell
//! by cell (DESIGN §4 "Comparisons").
//!
//! A and B are each a RunResult, a `suite.json` or a results folder. Cells pair by scenario,
//! axes and server, with every repetition of a cell on each side; two sides of one series each
//! (two single runs, say) pair with each other whatever their names. Per pair the headline
//! metric — throughput in closed loop and ramp, corrected p99 in open loop, or `--metric` — is
//! judged: with at least [`MIN_REPETITIONS`] a side by a two-sided Mann-Whitney U test at
//! [`ALPHA`] ([`stats`]); with fewer the medians, their ratio and each side's range are shown
//! and no call is made.

pub mod stats;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::metric::{Metric, Stat};
use crate::report::model::{median, LoadError, Report, Series};
use crate::result::{Mode, RunResult};

/// Schema identifier of the comparison JSON.
pub const COMPARE_SCHEMA: &str = "volley.compare/1";
/// Significance level of the verdicts.
pub const ALPHA: f64 = 0.05;
/// Repetitions each side needs before a verdict is given.
pub const MIN_REPETITIONS: usize = 5;

/// Why two inputs cannot be compared (exit 2); every message names the paths.
#[derive(Debug, thiserror::Error)]
pub enum CompareError {
    /// An input is missing, unreadable or not a volley result.
    #[error(transparent)]
    Load(#[from] LoadError),
    /// No cell of A has a counterpart in B.
    #[error("{a} and {b}: nothing pairs up (cells pair by scenario, axes and server): A has {a_cells}; B has {b_cells}")]
    NothingPairs {
        /// Path of A.
        a: String,
        /// Path of B.
        b: String,
        /// A's cells, listed.
        a_cells: String,
        /// B's cells, listed.
        b_cells: String,
    },
    /// Cells pair up, but none has a finished run on both sides.
    #[error("{a} and {b}: no pair of cells has a finished run on both sides")]
    NoData {
        /// Path of A.
        a: String,
        /// Path of B.
        b: String,
    },
}

/// The metrics every pair shows beside its headline, without a verdict.
pub const SECONDARY: [Metric; 4] = [
    Metric::Latency(Stat::P50),
    Metric::Latency(Stat::P99),
    Metric::Errors,
    Metric::CpuPerRequest,
];

/// The call on one pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Verdict {
    /// B is significantly better (higher throughput; lower latency, CPU or errors).
    #[serde(rename = "faster")]
    Faster,
    /// B is significantly worse.
    #[serde(rename = "slower")]
    Slower,
    /// The test finds no difference at α = 0.05.
    #[serde(rename = "no significant difference")]
    NoDifference,
    /// Fewer than 5 repetitions on a side: medians and ranges only.
    #[serde(rename = "too few repetitions")]
    TooFew,
    /// The metric is missing on a side (no finished run, no server monitor, no response).
    #[serde(rename = "not measured")]
    NotMeasured,
}

/// One metric of a pair: medians over the finished repetitions of each side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MetricDiff {
    /// `throughput`, `p99`, ... (the `--metric` names).
    pub metric: Metric,
    /// Median of A (req/s, µs or a count); null when not measured.
    pub a: Option<f64>,
    /// Median of B.
    pub b: Option<f64>,
    /// b / a; null when a is 0 or either is missing.
    pub ratio: Option<f64>,
    /// (b / a − 1) · 100.
    pub change_pct: Option<f64>,
    /// `higher` or `lower`: the better direction.
    pub better: &'static str,
}

/// One pair of series: the headline metric judged, secondary metrics shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Pair {
    /// Scenario and axes (A's).
    pub label: String,
    /// Server (A's).
    pub server: String,
    /// B's label, when it differs (two single runs pair whatever their names).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_label: Option<String>,
    /// B's server, when it differs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub b_server: Option<String>,
    /// The headline metric.
    #[serde(flatten)]
    pub headline: MetricDiff,
    /// Smallest and largest value of A's repetitions.
    pub a_range: Option<[f64; 2]>,
    /// Smallest and largest value of B's repetitions.
    pub b_range: Option<[f64; 2]>,
    /// Repetitions of A with the metric.
    pub n_a: usize,
    /// Repetitions of B with the metric.
    pub n_b: usize,
    /// The call.
    pub verdict: Verdict,
    /// The smaller U of the test (null without a test).
    pub u: Option<f64>,
    /// Two-sided p-value (null without a test).
    pub p_value: Option<f64>,
    /// B got worse than `--fail-if-slower` allows.
    pub regression: bool,
    /// Secondary metrics, no verdict.
    pub secondary: Vec<MetricDiff>,
    /// Remarks (load modes that differ, a metric that was not measured).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// A series of one side without a counterpart on the other.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Unpaired {
    /// Scenario and axes.
    pub label: String,
    /// Server.
    pub server: String,
    /// Repetitions that finished.
    pub finished: usize,
}

/// The whole comparison (`--json`, `"schema": "volley.compare/1"`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    /// Always `volley.compare/1`.
    pub schema: &'static str,
    /// Version of volley that compared.
    pub volley_version: &'static str,
    /// The baseline as given.
    pub a: String,
    /// The candidate as given.
    pub b: String,
    /// What A is (`GET http://…` for a run, the suite's name), for the table only.
    #[serde(skip)]
    pub a_title: String,
    /// What B is.
    #[serde(skip)]
    pub b_title: String,
    /// `--metric`; null: each pair's headline by its load mode.
    pub metric: Option<Metric>,
    /// Significance level.
    pub alpha: f64,
    /// Repetitions a side needed for a verdict.
    pub min_repetitions: usize,
    /// `--fail-if-slower` in percent; null without it.
    pub fail_if_slower_pct: Option<f64>,
    /// Any pair is a regression (the exit code is then 1).
    pub regression: bool,
    /// The pairs, in A's order.
    pub pairs: Vec<Pair>,
    /// Series of A that B lacks.
    pub only_in_a: Vec<Unpaired>,
    /// Series of B that A lacks.
    pub only_in_b: Vec<Unpaired>,
}

/// Medians, ranges and the test of one metric over two sets of runs.
struct Judged {
    diff: MetricDiff,
    a_range: Option<[f64; 2]>,
    b_range: Option<[f64; 2]>,
    n_a: usize,
    n_b: usize,
    verdict: Verdict,
    u: Option<f64>,
    p_value: Option<f64>,
}

fn range(v: &[f64]) -> Option<[f64; 2]> {
    let lo = v.iter().copied().reduce(f64::min)?;
    let hi = v.iter().copied().reduce(f64::max)?;
    Some([lo, hi])
}

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

fn judge(metric: Metric, a: &[&RunResult], b: &[&RunResult]) -> Judged {
    let va: Vec<f64> = a.iter().filter_map(|r| metric.value(r)).collect();
    let vb: Vec<f64> = b.iter().filter_map(|r| metric.value(r)).collect();
    let d = diff(metric, median(&va), median(&vb));
    let (mut verdict, mut u, mut p_value) = (Verdict::TooFew, None, None);
    if va.is_empty() || vb.is_empty() {
        verdict = Verdict::NotMeasured;
    } else if va.len() >= MIN_REPETITIONS && vb.len() >= MIN_REPETITIONS {
        if let Some(t) = stats::mann_whitney_u(&va, &vb) {
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
    Judged {
        diff: d,
        a_range: range(&va),
        b_range: range(&vb),
        n_a: va.len(),
        n_b: vb.len(),
        verdict,
        u,
        p_value,
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

/// Whether a judged headline breaks `--fail-if-slower limit_pct`: with 5+ repetitions a side
/// the test must also call it slower; with fewer the medians decide.
fn is_regression(metric: Metric, j: &Judged, limit_pct: f64) -> bool {
    let (Some(a), Some(b)) = (j.diff.a, j.diff.b) else {
        return false;
    };
    let worse = worse_pct(metric, a, b) > limit_pct;
    match j.verdict {
        Verdict::Slower => worse,
        Verdict::TooFew => worse,
        Verdict::Faster | Verdict::NoDifference | Verdict::NotMeasured => false,
    }
}

fn unpaired(s: &Series) -> Unpaired {
    Unpaired {
        label: s.label.clone(),
        server: s.server.clone(),
        finished: s.ok().len(),
    }
}

fn describe(series: &[Series]) -> String {
    if series.is_empty() {
        return "no cells".into();
    }
    series
        .iter()
        .map(|s| format!("`{} · {}`", s.label, s.server))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Compares B against A. `metric` overrides each pair's headline; `fail_pct` is
/// `--fail-if-slower` in percent.
pub fn compare(
    (a_name, a): (&str, &Report),
    (b_name, b): (&str, &Report),
    metric: Option<Metric>,
    fail_pct: Option<f64>,
) -> Result<Comparison, CompareError> {
    let sa = a.series();
    let sb = b.series();
    let mut matched: Vec<(usize, usize)> = Vec::new();
    if sa.len() == 1 && sb.len() == 1 {
        // Two single runs (or one cell each): there is only one thing to compare.
        matched.push((0, 0));
    } else {
        for (i, s) in sa.iter().enumerate() {
            if let Some(j) = sb
                .iter()
                .position(|t| t.label == s.label && t.server == s.server)
            {
                matched.push((i, j));
            }
        }
    }
    if matched.is_empty() {
        return Err(CompareError::NothingPairs {
            a: a_name.into(),
            b: b_name.into(),
            a_cells: describe(&sa),
            b_cells: describe(&sb),
        });
    }
    let mut pairs = Vec::new();
    for &(i, j) in &matched {
        let (x, y) = (&sa[i], &sb[j]);
        let (ra, rb) = (x.ok(), y.ok());
        let mut notes = Vec::new();
        let mode_a = ra.first().map(|r| r.load.mode);
        let mode_b = rb.first().map(|r| r.load.mode);
        if let (Some(ma), Some(mb)) = (&mode_a, &mode_b) {
            if ma != mb {
                notes.push(format!("load modes differ: A {ma}, B {mb}"));
            }
        }
        let m =
            metric.unwrap_or_else(|| Metric::headline(mode_a.or(mode_b).unwrap_or(Mode::Closed)));
        let j = judge(m, &ra, &rb);
        if j.verdict == Verdict::NotMeasured {
            let why = |runs: &[&RunResult]| {
                if runs.is_empty() {
                    "no finished run"
                } else if m == Metric::CpuPerRequest {
                    "no server monitor"
                } else {
                    "no response"
                }
            };
            if j.n_a == 0 {
                notes.push(format!("A: {}", why(&ra)));
            }
            if j.n_b == 0 {
                notes.push(format!("B: {}", why(&rb)));
            }
        }
        let regression = fail_pct.is_some_and(|limit| is_regression(m, &j, limit));
        let secondary = SECONDARY
            .iter()
            .map(|&s| {
                let med = |runs: &[&RunResult]| {
                    median(&runs.iter().filter_map(|r| s.value(r)).collect::<Vec<_>>())
                };
                diff(s, med(&ra), med(&rb))
            })
            .collect();
        pairs.push(Pair {
            label: x.label.clone(),
            server: x.server.clone(),
            b_label: (y.label != x.label).then(|| y.label.clone()),
            b_server: (y.server != x.server).then(|| y.server.clone()),
            headline: j.diff,
            a_range: j.a_range,
            b_range: j.b_range,
            n_a: j.n_a,
            n_b: j.n_b,
            verdict: j.verdict,
            u: j.u,
            p_value: j.p_value,
            regression,
            secondary,
            notes,
        });
    }
    if !matched
        .iter()
        .any(|&(i, j)| !sa[i].ok().is_empty() && !sb[j].ok().is_empty())
    {
        return Err(CompareError::NoData {
            a: a_name.into(),
            b: b_name.into(),
        });
    }
    let only_in_a = (0..sa.len())
        .filter(|i| !matched.iter().any(|m| m.0 == *i))
        .map(|i| unpaired(&sa[i]))
        .collect();
    let only_in_b = (0..sb.len())
        .filter(|j| !matched.iter().any(|m| m.1 == *j))
        .map(|j| unpaired(&sb[j]))
        .collect();
    Ok(Comparison {
        schema: COMPARE_SCHEMA,
        volley_version: env!("CARGO_PKG_VERSION"),
        a: a_name.into(),
        b: b_name.into(),
        a_title: a.title.clone(),
        b_title: b.title.clone(),
        metric,
        alpha: ALPHA,
        min_repetitions: MIN_REPETITIONS,
        fail_if_slower_pct: fail_pct,
        regression: pairs.iter().any(|p| p.regression),
        pairs,
        only_in_a,
        only_in_b,
    })
}

/// `0.012`, `0.40`, `<0.0001`.
pub fn format_p(p: f64) -> String {
    if p < 0.0001 {
        "p<0.0001".into()
    } else if p < 0.01 {
        format!("p={p:.4}")
    } else if p < 0.1 {
        format!("p={p:.3}")
    } else {
        format!("p={p:.2}")
    }
}

fn verdict_text(p: &Pair) -> String {
    let n = format!("n={}/{}", p.n_a, p.n_b);
    match p.verdict {
        Verdict::TooFew => {
            format!("too few repetitions to call ({n}; need {MIN_REPETITIONS} a side)")
        }
        Verdict::NotMeasured => "not measured".into(),
        v => {
            let word = match v {
                Verdict::Faster => "faster",
                Verdict::Slower => "slower",
                _ => "no significant difference",
            };
            format!(
                "{word} ({}, U={}, {n})",
                format_p(p.p_value.unwrap_or(1.0)),
                p.u.unwrap_or(0.0)
            )
        }
    }
}

/// The comparison as a table, one line per pair, then the unpaired cells, the notes and the
/// regressions.
pub fn render(c: &Comparison) -> String {
    let header = [
        "scenario",
        "server",
        "metric",
        "better",
        "A",
        "B",
        "B/A",
        "change",
        "verdict",
        "p50 A → B",
        "p99 A → B",
        "errors A → B",
        "CPU/req A → B",
    ];
    let mut rows: Vec<Vec<String>> = Vec::new();
    let mut notes: Vec<String> = Vec::new();
    for p in &c.pairs {
        let m = p.headline.metric;
        let side = |v: Option<f64>, r: Option<[f64; 2]>, n: usize| match v {
            None => "-".to_string(),
            Some(v) if n > 1 => {
                let r = r.unwrap_or([v, v]);
                format!("{} ({}–{})", m.format(v), m.format(r[0]), m.format(r[1]))
            }
            Some(v) => m.format(v),
        };
        let two = |d: &MetricDiff| {
            let m = d.metric;
            let f = |v: Option<f64>| v.map_or("-".to_string(), |v| m.format(v));
            if d.a.is_none() && d.b.is_none() {
                "-".to_string()
            } else {
                format!("{} → {}", f(d.a), f(d.b))
            }
        };
        let mut verdict = verdict_text(p);
        for note in &p.notes {
            notes.push(note.clone());
            verdict += &format!(" [{}]", notes.len());
        }
        if p.regression {
            verdict += " REGRESSION";
        }
        let mut row = vec![
            match &p.b_label {
                Some(b) => format!("{} vs {b}", p.label),
                None => p.label.clone(),
            },
            match &p.b_server {
                Some(b) => format!("{} vs {b}", p.server),
                None => p.server.clone(),
            },
            m.label().to_string(),
            p.headline.better.to_string(),
            side(p.headline.a, p.a_range, p.n_a),
            side(p.headline.b, p.b_range, p.n_b),
            p.headline.ratio.map_or("-".into(), |r| format!("{r:.3}")),
            p.headline
                .change_pct
                .map_or("-".into(), |c| format!("{c:+.1}%")),
            verdict,
        ];
        row.extend(p.secondary.iter().map(two));
        rows.push(row);
    }
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in &rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    // Text columns left, numbers right.
    let left = [
        true, true, true, true, false, false, false, false, true, false, false, false, false,
    ];
    let line = |cells: &[String]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&width).enumerate() {
            let pad = " ".repeat(w - cell.chars().count());
            if left[i] {
                s += cell;
                s += &pad;
            } else {
                s += &pad;
                s += cell;
            }
            s += "  ";
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = format!("A: {} ({})\nB: {} ({})\n\n", c.a, c.a_title, c.b, c.b_title);
    out += &line(&header.map(String::from));
    out += &line(&width.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>());
    for r in &rows {
        out += &line(r);
    }
    for (i, n) in notes.iter().enumerate() {
        out += &format!("[{}] {n}\n", i + 1);
    }
    out += &format!(
        "\nA and B are medians over the finished repetitions (min–max with more than one); B/A above 1 means B is higher.\n\
         Metric: {}. Verdicts with {MIN_REPETITIONS}+ repetitions a side: two-sided Mann-Whitney U test, α = {ALPHA}; \"faster\" means better in the metric's direction.\n",
        match c.metric {
            Some(m) => format!("{} (--metric)", m.label()),
            None => "req/s in closed loop and ramp, corrected p99 in open loop".into(),
        }
    );
    for (side, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        for u in list {
            out += &format!(
                "only in {side}: {} · {} ({} finished)\n",
                u.label, u.server, u.finished
            );
        }
    }
    if let Some(limit) = c.fail_if_slower_pct {
        let bad: Vec<&Pair> = c.pairs.iter().filter(|p| p.regression).collect();
        if bad.is_empty() {
            out += &format!("\nno regression beyond {limit}%\n");
        }
        for p in bad {
            let m = p.headline.metric;
            let worse = match (p.headline.a, p.headline.b) {
                (Some(a), Some(b)) => worse_pct(m, a, b),
                _ => f64::NAN,
            };
            out += &format!(
                "\nregression: {} · {}: {} {} worse than A (limit {limit}%)\n",
                p.label,
                p.server,
                m.label(),
                if worse.is_finite() {
                    format!("{worse:.1}%")
                } else {
                    "infinitely".into()
                }
            );
        }
    }
    out
}

/// Loads one side (a RunResult, suite.json or results folder).
pub fn load(path: &Path) -> Result<Report, CompareError> {
    Ok(Report::load(&[PathBuf::from(path)])?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worse_pct_follows_the_metric_direction() {
        assert_eq!(worse_pct(Metric::Throughput, 100.0, 90.0), 10.0);
        assert_eq!(worse_pct(Metric::Throughput, 100.0, 110.0), -10.0);
        assert_eq!(worse_pct(Metric::Latency(Stat::P99), 100.0, 120.0), 20.0);
        assert_eq!(worse_pct(Metric::Errors, 0.0, 3.0), f64::INFINITY);
        assert_eq!(worse_pct(Metric::Errors, 0.0, 0.0), 0.0);
    }

    #[test]
    fn headline_by_mode_and_names_round_trip() {
        assert_eq!(Metric::headline(Mode::Closed), Metric::Throughput);
        assert_eq!(Metric::headline(Mode::Ramp), Metric::Throughput);
        assert_eq!(Metric::headline(Mode::Open), Metric::Latency(Stat::P99));
    }

    #[test]
    fn p_formatting() {
        assert_eq!(format_p(0.012185), "p=0.012");
        assert_eq!(format_p(0.40339), "p=0.40");
        assert_eq!(format_p(0.0079), "p=0.0079");
        assert_eq!(format_p(0.00001), "p<0.0001");
    }
}

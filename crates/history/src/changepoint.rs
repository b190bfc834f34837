//! Change points in a series of runs: E-divisive means with the Student t-test, the variant
//! Apache Otava (formerly Hunter) uses (Fleming et al., "Hunter: Using Change Point Detection to
//! Hunt for Performance Regressions", ICPE 2023). Pure: values in, change points out; the two
//! steps (split, merge) are at [`detect`]. What trends and checks make of them is
//! docs/contract.md, "Run history".
//!
//! `tests/full/history_otava.rs` runs Otava 0.8 from PyPI on the same series and requires the same
//! indexes.

use statrs::distribution::{ContinuousCDF, StudentsT};

/// The detector's settings: Otava's names and defaults.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Settings {
    /// Points per window of the split step (Otava's `window_len`, default 50).
    pub window: usize,
    /// Largest p-value a change point may have (default 0.001).
    pub max_pvalue: f64,
    /// Smallest relative change a point with a passing p-value must still show; 0 keeps every
    /// significant point (Otava's `min_magnitude`).
    pub min_magnitude: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            window: 50,
            max_pvalue: 0.001,
            min_magnitude: 0.0,
        }
    }
}

/// The two sides of a change point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Split {
    /// Mean before.
    pub mean_before: f64,
    /// Mean after.
    pub mean_after: f64,
    /// Population standard deviation before (numpy's `std`).
    pub std_before: f64,
    /// After.
    pub std_after: f64,
    /// Two-sided p-value of Student's t-test (pooled variance) between the sides.
    pub pvalue: f64,
}

impl Split {
    /// `after / before − 1`, 0 when the mean before is 0.
    pub(crate) fn forward_change(&self) -> f64 {
        if self.mean_before == 0.0 {
            0.0
        } else {
            self.mean_after / self.mean_before - 1.0
        }
    }

    /// The larger of the relative changes both ways (Otava's magnitude).
    pub(crate) fn magnitude(&self) -> f64 {
        let back = if self.mean_after == 0.0 {
            0.0
        } else {
            self.mean_before / self.mean_after - 1.0
        };
        self.forward_change().abs().max(back.abs())
    }
}

/// A change point: the first index of the new level, and the test between its neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// Index into the series of the first value after the change.
    pub index: usize,
    /// The energy statistic that chose it.
    pub qhat: f64,
    /// Before against after (between the neighbouring change points).
    pub split: Split,
}

/// The change points of `series`, by index, in two steps:
///
/// 1. **Split.** Windows of `window` points, half a window apart, are each split recursively at
///    the point that maximises the energy statistic Q̂ (Matteson and James's E-divisive) as long
///    as a two-sided Student t-test between the two sides is significant at a relaxed level
///    (10 × `max_pvalue` below 0.05). Their union are the weak change points.
/// 2. **Merge.** The weakest point (highest p-value; when all pass, the smallest relative change
///    under `min_magnitude`) is dropped and its neighbours re-tested, until every point left
///    passes both.
pub fn detect(series: &[f64], s: &Settings) -> Vec<ChangePoint> {
    let window = s.window.max(2);
    let first_pass = if s.max_pvalue < 0.05 {
        s.max_pvalue * 10.0
    } else if s.max_pvalue < 0.5 {
        s.max_pvalue * 2.0
    } else {
        s.max_pvalue
    };
    let weak = split(series, window, first_pass);
    merge(weak, series, s.max_pvalue, s.min_magnitude)
}

/// The two-sided Student t-test (pooled variance) as Otava computes it: numpy's population
/// standard deviations handed to scipy's `ttest_ind_from_stats`.
pub(crate) fn ttest(left: &[f64], right: &[f64]) -> Split {
    let (m1, s1) = mean_std(left);
    let (m2, s2) = mean_std(right);
    let (n1, n2) = (left.len() as f64, right.len() as f64);
    let pvalue = if left.len() + right.len() > 2 {
        let df = n1 + n2 - 2.0;
        let pooled = ((n1 - 1.0) * s1 * s1 + (n2 - 1.0) * s2 * s2) / df;
        let t = (m1 - m2) / (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
        student_two_sided(t, df)
    } else {
        1.0
    };
    Split {
        mean_before: m1,
        mean_after: m2,
        std_before: s1,
        std_after: s2,
        pvalue,
    }
}

fn mean_std(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    if v.len() < 2 {
        return (mean, 0.0);
    }
    let var = v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / n;
    (mean, var.sqrt())
}

/// `2·P(T > |t|)`; an infinite `t` (both sides constant, different means) is 0, and 0/0 (both
/// constant and equal) is 1: no evidence of a change.
fn student_two_sided(t: f64, df: f64) -> f64 {
    if t.is_nan() {
        return 1.0;
    }
    if t.is_infinite() {
        return 0.0;
    }
    match StudentsT::new(0.0, 1.0, df) {
        Ok(d) => (2.0 * d.sf(t.abs())).min(1.0),
        Err(_) => 1.0,
    }
}

/// Half-open ranges between consecutive change points (empty ones left out), as Otava's
/// `get_intervals`.
fn intervals(points: &[usize], len: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::with_capacity(points.len() + 1);
    let mut start = 0;
    for &p in points.iter().chain(std::iter::once(&len)) {
        if p != start {
            out.push((start, p));
        }
        start = p;
    }
    out
}

/// The test at `index` against the intervals: the two intervals it separates when it is one of
/// their ends (merge step), or the interval it falls in cut there (split step).
fn test_at(index: usize, series: &[f64], iv: &[(usize, usize)]) -> Split {
    for (i, &(a, b)) in iv.iter().enumerate() {
        if b == index {
            let (c, d) = iv.get(i + 1).copied().unwrap_or((b, b));
            return ttest(&series[a..b], &series[c..d]);
        }
        if a < index && index < b {
            return ttest(&series[a..index], &series[index..b]);
        }
    }
    ttest(&series[..index], &series[index..])
}

/// The τ in `(start, end)` that maximises Q̂(series[start..τ], series[τ..κ]) over κ ≤ end, and
/// that maximum; the first in (τ, κ) order on ties, as numpy's `argmax` over Otava's matrix.
fn candidate(x: &[f64], start: usize, end: usize) -> (usize, f64) {
    let d = |i: usize, j: usize| (x[i] - x[j]).abs();
    let mut best = (start + 1, f64::NEG_INFINITY);
    // Σ_{start ≤ i < k < τ} |x_i − x_k|, grown with τ.
    let mut within_x = 0.0;
    for tau in start + 1..end {
        within_x += (start..tau - 1).map(|i| d(i, tau - 1)).sum::<f64>();
        let n = (tau - start) as f64;
        let (mut cross, mut within_y) = (0.0, 0.0);
        for kappa in tau + 1..=end {
            let j = kappa - 1;
            cross += (start..tau).map(|i| d(i, j)).sum::<f64>();
            within_y += (tau..j).map(|k| d(k, j)).sum::<f64>();
            let m = (kappa - tau) as f64;
            let mut q = 2.0 / (m + n) * cross;
            if n > 1.0 {
                q -= 2.0 * m / ((m + n) * (n - 1.0)) * within_x;
            }
            if m > 1.0 {
                q -= 2.0 * n / ((m + n) * (m - 1.0)) * within_y;
            }
            if q > best.1 {
                best = (tau, q);
            }
        }
    }
    best
}

/// E-divisive over one window with the t-test as the stopping rule (Otava's
/// `ChangePointDetector`): indexes into `x`.
fn divide(x: &[f64], max_pvalue: f64) -> Vec<ChangePoint> {
    let mut points: Vec<ChangePoint> = Vec::new();
    loop {
        let idx: Vec<usize> = points.iter().map(|p| p.index).collect();
        let iv = intervals(&idx, x.len());
        let mut best: Option<(usize, f64)> = None;
        for &(a, b) in iv.iter().filter(|(a, b)| b - a > 1) {
            let c = candidate(x, a, b);
            if best.is_none_or(|(_, q)| c.1 > q) {
                best = Some(c);
            }
        }
        let Some((index, qhat)) = best else { break };
        let split = test_at(index, x, &iv);
        if split.pvalue > max_pvalue || split.pvalue.is_nan() {
            break;
        }
        points.push(ChangePoint { index, qhat, split });
        points.sort_by_key(|p| p.index);
    }
    points
}

/// The split step: windows half a window apart, each divided; the union re-tested against its
/// neighbours.
fn split(series: &[f64], window: usize, max_pvalue: f64) -> Vec<ChangePoint> {
    let step = window / 2;
    let mut points: Vec<ChangePoint> = Vec::new();
    let mut start = 0;
    while start < series.len() {
        let end = (start + window).min(series.len());
        let mut found = divide(&series[start..end], max_pvalue);
        for p in &mut found {
            p.index += start;
        }
        let last = found.last().map_or(0, |p| p.index);
        start = last.max(start + step);
        for p in found {
            if !points.iter().any(|q| q.index == p.index) {
                points.push(p);
            }
        }
    }
    points.sort_by_key(|p| p.index);
    retest(&mut points, series);
    points
}

fn retest(points: &mut [ChangePoint], series: &[f64]) {
    let idx: Vec<usize> = points.iter().map(|p| p.index).collect();
    let iv = intervals(&idx, series.len());
    for p in points.iter_mut() {
        p.split = test_at(p.index, series, &iv);
    }
}

/// The merge step: drop the weakest point until every one left passes.
fn merge(
    mut points: Vec<ChangePoint>,
    series: &[f64],
    max_pvalue: f64,
    min_magnitude: f64,
) -> Vec<ChangePoint> {
    while !points.is_empty() {
        let mut weakest = first_max_by(&points, |p| p.split.pvalue);
        if points[weakest].split.pvalue < max_pvalue {
            weakest = first_max_by(&points, |p| -p.split.magnitude());
            if points[weakest].split.magnitude() > min_magnitude {
                return points;
            }
        }
        points.remove(weakest);
        let idx: Vec<usize> = points.iter().map(|p| p.index).collect();
        let iv = intervals(&idx, series.len());
        // Re-tested: the points now at `weakest` and `weakest + 1`, as Otava 0.8 does (the
        // left neighbour keeps its statistics until it is itself re-tested), so that both give
        // the same answer on the same series.
        for i in [weakest, weakest + 1] {
            if let Some(p) = points.get_mut(i) {
                p.split = test_at(p.index, series, &iv);
            }
        }
    }
    points
}

/// The position of the first largest `key` (Python's `max`).
fn first_max_by(points: &[ChangePoint], key: impl Fn(&ChangePoint) -> f64) -> usize {
    let mut best = 0;
    for (i, p) in points.iter().enumerate().skip(1) {
        if key(p) > key(&points[best]) {
            best = i;
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    fn noisy(levels: &[(usize, f64)], seed: u64) -> Vec<f64> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut v = Vec::new();
        for &(n, level) in levels {
            for _ in 0..n {
                v.push(level * (1.0 + rng.gen_range(-0.02..0.02)));
            }
        }
        v
    }

    #[test]
    fn a_step_is_found_where_it_is() {
        let v = noisy(&[(30, 100.0), (20, 120.0)], 1);
        let cps = detect(&v, &Settings::default());
        assert_eq!(cps.iter().map(|c| c.index).collect::<Vec<_>>(), vec![30]);
        let s = cps[0].split;
        assert!((s.forward_change() - 0.2).abs() < 0.02, "{s:?}");
        assert!(s.pvalue < 1e-6);
    }

    #[test]
    fn two_steps_over_windows_are_both_found() {
        let v = noisy(&[(40, 100.0), (40, 90.0), (40, 100.0)], 2);
        let cps = detect(&v, &Settings::default());
        assert_eq!(
            cps.iter().map(|c| c.index).collect::<Vec<_>>(),
            vec![40, 80]
        );
    }

    #[test]
    fn a_flat_series_has_none() {
        assert!(detect(&noisy(&[(60, 100.0)], 3), &Settings::default()).is_empty());
        assert!(detect(&[5.0; 20], &Settings::default()).is_empty());
        assert!(detect(&[], &Settings::default()).is_empty());
        assert!(detect(&[1.0], &Settings::default()).is_empty());
    }

    #[test]
    fn a_small_change_is_dropped_by_min_magnitude() {
        let v = noisy(&[(30, 100.0), (30, 103.0)], 4);
        let all = detect(&v, &Settings::default());
        assert_eq!(all.len(), 1, "{all:?}");
        let big_only = Settings {
            min_magnitude: 0.05,
            ..Settings::default()
        };
        assert!(detect(&v, &big_only).is_empty());
    }

    #[test]
    fn the_t_test_matches_scipy() {
        // scipy 1.16: ttest_ind_from_stats(2.0, np.std([1, 2, 3]), 3, 5.0, np.std([4, 5, 6]), 3)
        // -> statistic -4.5, pvalue 0.010822550462608247.
        let s = ttest(&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]);
        assert!(
            (s.pvalue - 0.010822550462608247).abs() < 1e-12,
            "{}",
            s.pvalue
        );
        assert_eq!(ttest(&[1.0], &[2.0]).pvalue, 1.0);
        assert_eq!(ttest(&[1.0, 1.0], &[2.0, 2.0]).pvalue, 0.0);
        assert_eq!(ttest(&[1.0, 1.0], &[1.0, 1.0]).pvalue, 1.0);
    }
}

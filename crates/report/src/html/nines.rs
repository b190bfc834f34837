//! Latency percentile curves on the "nines" axis, from the repetitions' histograms added up.

use volley_model::result::RunResult;
use volley_model::stats::histogram::{self, decode, Hist};

/// Adds up the histograms of several repetitions (lossless: counts per bucket add). A
/// histogram that cannot be decoded is left out; the number merged is returned with the sum.
pub fn merged(results: &[&RunResult], hdr: impl Fn(&RunResult) -> &str) -> Option<(Hist, usize)> {
    merged_encoded(results.iter().map(|r| hdr(r)))
}

/// Adds up encoded histograms (a named request's, from the repetitions that have it), as
/// [`merged`] does.
pub fn merged_encoded<'a>(hdrs: impl Iterator<Item = &'a str>) -> Option<(Hist, usize)> {
    let decoded: Vec<Hist> = hdrs.filter_map(|h| decode(h).ok()).collect();
    (!decoded.is_empty()).then(|| (histogram::sum(&decoded), decoded.len()))
}

/// Points per nine on the percentile plot's x axis (x = 1 is 90%, x = 2 is 99%, ...).
const STEPS_PER_NINE: u32 = 20;
/// The fixed grid stops at six nines (99.9999%); a longer tail is one segment to the max.
const GRID_NINES: f64 = 6.0;

/// The percentile curve of `h` on the "nines" scale: points (x, value µs) with
/// x = −log10(1 − q) on a fixed grid of `STEPS_PER_NINE` points per nine, ending with the max.
///
/// A histogram of n values cannot tell quantiles above 1 − 1/n apart from the max, so the grid
/// stops below x = log10(n) and the max is placed there, where it belongs on this scale.
pub fn percentile_points(h: &Hist) -> Vec<(f64, u64)> {
    let n = h.len();
    if n == 0 {
        return Vec::new();
    }
    let resolvable = (n as f64).log10();
    let mut pts = Vec::new();
    for i in 0.. {
        // Division rather than repeated addition keeps x = 1, 2, ... exact.
        let x = f64::from(i) / f64::from(STEPS_PER_NINE);
        // Compared as rounded, so a grid point never lands on the max's x.
        if round3(x) >= round3(resolvable) || x > GRID_NINES {
            break;
        }
        let q = 1.0 - 10f64.powf(-x);
        pts.push((round3(x), h.value_at_quantile(q)));
    }
    pts.push((round3(resolvable), h.max()));
    pts
}

/// Rounded to three decimals, so grid points and the max compare as the page shows them.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::super::tests::fixture;
    use super::super::Page;
    use super::*;
    use volley_model::stats::histogram::new_hist;

    fn hist(values: impl IntoIterator<Item = u64>) -> Hist {
        let mut h = new_hist();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn percentile_points_on_the_nines_scale() {
        let h = hist(1..=1000);
        let pts = percentile_points(&h);
        // 1000 values resolve three nines: 60 grid points below x = 3, then the max at 3.
        assert_eq!(pts.len(), 61);
        assert_eq!(pts[0], (0.0, 1));
        assert_eq!(pts[20], (1.0, 900));
        assert_eq!(pts[40], (2.0, 990));
        assert_eq!(*pts.last().unwrap(), (3.0, 1000));
        for w in pts.windows(2) {
            assert!(w[0].0 < w[1].0, "x increases: {w:?}");
            assert!(w[0].1 <= w[1].1, "latency never falls: {w:?}");
        }
        // q = 1 − 10^−1.5 ≈ 0.9684
        assert_eq!(pts[30].0, 1.5);
        assert_eq!(pts[30].1, h.value_at_quantile(1.0 - 10f64.powf(-1.5)));
    }

    #[test]
    fn percentile_points_edge_cases() {
        assert!(percentile_points(&new_hist()).is_empty());
        assert_eq!(percentile_points(&hist([42])), vec![(0.0, 42)]);
        // log10(31_643) = 4.50030: the grid point 4.5 would round onto the max's x.
        let pts = percentile_points(&hist(1..=31_643));
        assert_eq!(pts[pts.len() - 2].0, 4.45);
        assert_eq!(*pts.last().unwrap(), (4.5, 31_647));
        // Ten million values: the grid stops at six nines and the max sits at x = 7.
        let mut h = new_hist();
        h.record_n(100, 10_000_000 - 1).unwrap();
        h.record(5_000).unwrap();
        let pts = percentile_points(&h);
        assert_eq!(pts.len(), 6 * 20 + 2);
        assert_eq!(pts[pts.len() - 2], (6.0, 100));
        assert_eq!(pts.last().unwrap().0, 7.0);
        assert_eq!(pts.last().unwrap().1, h.max());
    }

    #[test]
    fn repetitions_merge_by_adding_histograms() {
        let report = fixture("faults");
        let series = report.series();
        let page = Page::of(&series);
        let g = &page.groups[0];
        let row = g
            .rows
            .iter()
            .find(|r| r.series.server == "volley-serve")
            .unwrap();
        assert_eq!(row.ok.len(), 2);
        let (h, runs) = merged(&row.results(), |r| &r.latency_hdr).unwrap();
        assert_eq!(runs, 2);
        let completed: u64 = row.results().iter().map(|r| r.requests.completed).sum();
        assert_eq!(h.len(), completed, "counts add up");
        let line = page.data.groups[0]
            .hdr
            .iter()
            .find(|l| l.server == row.server && !l.service)
            .unwrap();
        assert_eq!(line.count, completed);
        assert_eq!(*line.y_us.last().unwrap(), h.max());
        // Closed loop with keep-alive: the service time is the same curve and is not repeated.
        assert!(page.data.groups[0].hdr.iter().all(|l| !l.service));
    }
}

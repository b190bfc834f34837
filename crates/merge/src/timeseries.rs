//! The shards on one wall clock (docs/contract.md, "Merging shards", time and time series): the
//! merged window, and the per-second series with each shard's seconds moved by its start offset.

use std::collections::BTreeMap;

use super::refusals::Starts;
use super::{round, MAX_START_SPREAD_US};
use volley_model::result::{RunResult, Warning};
use volley_model::stats::TimePoint;

/// Merged time series and how many of its seconds lost p50/p99 because several shards had
/// responses in them.
#[derive(Debug, Clone, PartialEq)]
pub struct Aligned {
    /// One point per second of the merged window, no holes.
    pub series: Vec<TimePoint>,
    /// Seconds whose p50/p99 are null because more than one shard contributed latencies.
    pub nulled: usize,
}

/// The merged `elapsed_s`: from the earliest start to the end of the shard that ended last.
pub(super) fn window_s(rs: &[&RunResult], offsets_s: &[f64]) -> f64 {
    round(
        rs.iter()
            .zip(offsets_s)
            .map(|(r, o)| o + r.elapsed_s)
            .fold(0.0, f64::max),
        6,
    )
}

/// The merged series of `rs`, warning about what alignment could not keep exact: seconds whose
/// percentiles are null, and (forced merges) counts moved by a fraction of a second.
pub(super) fn merge(
    rs: &[&RunResult],
    starts: &Starts,
    elapsed_s: f64,
    warnings: &mut Vec<Warning>,
) -> Vec<TimePoint> {
    let shard_series: Vec<(f64, &[TimePoint])> = rs
        .iter()
        .zip(&starts.offsets_s)
        .map(|(r, o)| (*o, r.timeseries.as_slice()))
        .collect();
    let aligned = align_timeseries(&shard_series, elapsed_s);
    if aligned.nulled > 0 {
        warnings.push(Warning::series_percentiles_nulled(aligned.nulled));
    }
    if starts.spread_us >= MAX_START_SPREAD_US {
        warnings.push(Warning::forced_merge(starts.spread_us as f64 / 1e6));
    }
    aligned.series
}

/// Aligns the shards' series by wall clock. Each shard is (its start's offset from the earliest
/// start in seconds, its series); shard bucket k covers [start + k, start + k + 1) and goes to
/// the merged bucket it overlaps most: k + the offset rounded to the nearest second (so shards
/// within 10 ms map k → k). Counters, users and rate targets add, the maximum is the maximum; p50/p99 are kept
/// only where a single shard had responses (the others add no samples), since percentiles
/// cannot be combined. `elapsed_s` is the merged window: it sets the last bucket's length.
pub fn align_timeseries(shards: &[(f64, &[TimePoint])], elapsed_s: f64) -> Aligned {
    let mut buckets = buckets(shards);
    let mut series = Vec::new();
    let mut nulled = 0;
    let last = buckets.keys().next_back().copied();
    let Some(last) = last else {
        return Aligned { series, nulled };
    };
    for t in 0..=last {
        let Some(acc) = buckets.remove(&t) else {
            series.push(TimePoint::empty(t));
            continue;
        };
        let (p50, p99) = match acc.with_latency.as_slice() {
            [one] => *one,
            [] => (None, None),
            _ => {
                nulled += 1;
                (None, None)
            }
        };
        series.push(TimePoint {
            t_s: t,
            interval_s: interval_s(elapsed_s, t, &acc),
            sent: acc.sent,
            completed: acc.completed,
            errors: acc.errors,
            latency_p50_us: p50,
            latency_p99_us: p99,
            latency_max_us: acc.max,
            users: acc.users,
            target: acc.target,
        });
    }
    Aligned { series, nulled }
}

/// One merged second while the shards' seconds are added into it.
#[derive(Default)]
struct Acc {
    sent: u64,
    completed: u64,
    errors: u64,
    users: Option<u64>,
    /// `--rate-stages`: the shards' targets add up to the whole load's.
    target: Option<f64>,
    max: Option<u64>,
    /// (p50, p99) of each shard that had responses in this second.
    with_latency: Vec<(Option<u64>, Option<u64>)>,
    interval_s: f64,
}

/// Every shard's seconds added into the merged second they overlap most.
fn buckets(shards: &[(f64, &[TimePoint])]) -> BTreeMap<u64, Acc> {
    let mut buckets: BTreeMap<u64, Acc> = BTreeMap::new();
    for (offset_s, series) in shards {
        let shift = offset_s.max(0.0).round() as u64;
        for p in *series {
            let acc = buckets.entry(p.t_s + shift).or_default();
            acc.sent += p.sent;
            acc.completed += p.completed;
            acc.errors += p.errors;
            if let Some(u) = p.users {
                acc.users = Some(acc.users.unwrap_or(0) + u);
            }
            if let Some(r) = p.target {
                acc.target = Some(acc.target.unwrap_or(0.0) + r);
            }
            acc.max = acc.max.max(p.latency_max_us);
            if p.latency_p50_us.is_some() || p.latency_p99_us.is_some() {
                acc.with_latency.push((p.latency_p50_us, p.latency_p99_us));
            }
            acc.interval_s = acc.interval_s.max(p.interval_s);
        }
    }
    buckets
}

/// The length of merged second `t`: whole, or cut by the end of the merged window.
fn interval_s(elapsed_s: f64, t: u64, acc: &Acc) -> f64 {
    let left = elapsed_s - t as f64;
    if left >= 1.0 {
        1.0
    } else if left > 0.0 {
        round(left, 6)
    } else {
        // A forced merge moved a shard's last bucket past the merged window's end.
        acc.interval_s
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_shards::point;
    use super::*;

    #[test]
    fn timeseries_aligned_by_wall_clock() {
        let a = [
            point(0, 10, Some(5), Some(9)),
            point(1, 10, Some(5), Some(9)),
            point(2, 4, Some(5), Some(9)),
        ];
        let b = [point(0, 7, Some(6), Some(30)), point(1, 3, None, None)];
        // b started 1.3 s after a: its bucket 0 overlaps a's second 1 most.
        let m = align_timeseries(&[(0.0, &a), (1.3, &b)], 3.3);
        let completed: Vec<u64> = m.series.iter().map(|p| p.completed).collect();
        assert_eq!(completed, vec![10, 10 + 7, 4 + 3]);
        assert_eq!(
            m.series[0].latency_p50_us,
            Some(5),
            "one shard: its own p50 is exact"
        );
        assert_eq!(
            m.series[1].latency_p50_us, None,
            "two shards with responses"
        );
        assert_eq!(m.series[1].latency_max_us, Some(30));
        assert_eq!(
            m.series[2].latency_p50_us,
            Some(5),
            "b had no response in its second"
        );
        assert_eq!(m.series[2].interval_s, 1.0);
        assert_eq!(m.nulled, 1);
        // Within 10 ms, k -> k; a gap is filled with an empty second; the last is partial.
        let c = [point(0, 1, Some(1), Some(1)), point(3, 1, Some(1), Some(1))];
        let m = align_timeseries(&[(0.0, &c), (0.009, &c)], 3.5);
        assert_eq!(m.series.len(), 4);
        assert_eq!(m.series[1], TimePoint::empty(1));
        assert_eq!(m.series[3].completed, 2);
        assert_eq!(m.series[3].interval_s, 0.5);
        assert!(align_timeseries(&[], 1.0).series.is_empty());
    }

    #[test]
    fn rate_stage_targets_add_up_to_the_whole_loads() {
        // Two shards of a staged load, each due half of it: the merged second is due all.
        let with = |t_s, target| TimePoint {
            target: Some(target),
            ..point(t_s, 5, Some(1), Some(1))
        };
        let (a, b) = (
            [with(0, 250.0), with(1, 500.0)],
            [with(0, 250.0), with(1, 500.0)],
        );
        let m = align_timeseries(&[(0.0, &a), (0.004, &b)], 2.0);
        let targets: Vec<Option<f64>> = m.series.iter().map(|p| p.target).collect();
        assert_eq!(targets, [Some(500.0), Some(1000.0)]);
        // A load without stages has none.
        let c = [point(0, 1, Some(1), Some(1))];
        assert_eq!(align_timeseries(&[(0.0, &c)], 1.0).series[0].target, None);
    }
}

//! The aggregator merges every worker's per-second intervals into run totals and a per-second
//! summary. It keeps only the totals and one small record per finished second.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::histogram::{new_hist, Hist};
use super::recorder::{Counters, Interval};

/// One second of the time series (`timeseries`; docs/contract.md, "Time series, histograms, client check").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimePoint {
    /// Seconds from t0 at the bucket's start.
    pub t_s: u64,
    /// Bucket length (1 except for a partial last bucket).
    pub interval_s: f64,
    /// Requests written in the bucket.
    pub sent: u64,
    /// Responses completed in the bucket.
    pub completed: u64,
    /// Errors in the bucket.
    pub errors: u64,
    /// Median corrected latency of the bucket's responses.
    pub latency_p50_us: Option<u64>,
    /// 99th percentile.
    pub latency_p99_us: Option<u64>,
    /// Maximum.
    pub latency_max_us: Option<u64>,
    /// Active virtual users (ramp mode only).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub users: Option<u64>,
    /// `--rate-stages`: the requests the schedule had due in the bucket (the integral of the
    /// target rate over it), beside `sent`.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub target: Option<f64>,
}

impl TimePoint {
    /// A full second in which nothing happened.
    pub fn empty(t_s: u64) -> Self {
        TimePoint {
            t_s,
            interval_s: 1.0,
            sent: 0,
            completed: 0,
            errors: 0,
            latency_p50_us: None,
            latency_p99_us: None,
            latency_max_us: None,
            users: None,
            target: None,
        }
    }
}

/// A finished bucket, with the merged histograms for the interval log and live views.
#[derive(Debug)]
pub struct FinishedBucket {
    /// The summary kept in the time series.
    pub point: TimePoint,
    /// All threads' corrected latency for this bucket.
    pub latency: Hist,
    /// All threads' service time for this bucket.
    pub service: Hist,
    /// All threads' counters for this bucket (errors by kind, status codes).
    pub counts: Counters,
    /// All threads' schedule lag for this bucket (open loop; empty otherwise).
    pub lag: Hist,
}

struct Pending {
    reported: usize,
    users: u64,
    latency: Hist,
    service: Hist,
    lag: Hist,
    counts: Counters,
}

/// Run totals and time series.
pub struct Aggregator {
    threads: usize,
    ramp: bool,
    pending: BTreeMap<u64, Pending>,
    /// Corrected latency over the measured window.
    pub latency: Hist,
    /// Service time over the measured window.
    pub service: Hist,
    /// Schedule lag over the measured window.
    pub lag: Hist,
    /// Measured counters.
    pub counts: Counters,
    /// Warm-up counters.
    pub warmup: Counters,
    /// Finished seconds.
    pub series: Vec<TimePoint>,
}

impl Aggregator {
    /// An aggregator expecting intervals from `threads` workers; `ramp` adds users to the series.
    pub fn new(threads: usize, ramp: bool) -> Self {
        Aggregator {
            threads,
            ramp,
            pending: BTreeMap::new(),
            latency: new_hist(),
            service: new_hist(),
            lag: new_hist(),
            counts: Counters::default(),
            warmup: Counters::default(),
            series: Vec::new(),
        }
    }

    /// Adds one worker's interval. Returns the buckets every worker has now reported.
    pub fn add(&mut self, iv: Interval) -> Vec<FinishedBucket> {
        self.latency
            .add(&iv.latency)
            .expect("auto-resizing histograms accept any value");
        self.service
            .add(&iv.service)
            .expect("auto-resizing histograms accept any value");
        self.lag
            .add(&iv.lag)
            .expect("auto-resizing histograms accept any value");
        self.counts.merge(&iv.counts);
        let p = self.pending.entry(iv.bucket).or_insert_with(|| Pending {
            reported: 0,
            users: 0,
            latency: new_hist(),
            service: new_hist(),
            lag: new_hist(),
            counts: Counters::default(),
        });
        p.reported += 1;
        p.users += iv.users;
        p.latency
            .add(&iv.latency)
            .expect("auto-resizing histograms accept any value");
        p.service
            .add(&iv.service)
            .expect("auto-resizing histograms accept any value");
        p.lag
            .add(&iv.lag)
            .expect("auto-resizing histograms accept any value");
        p.counts.merge(&iv.counts);
        // A worker sends each bucket at most once and in order, so a bucket every worker has
        // passed is complete; so is every earlier one.
        let mut done = Vec::new();
        if self
            .pending
            .get(&iv.bucket)
            .is_some_and(|p| p.reported >= self.threads)
        {
            let keys: Vec<u64> = self.pending.range(..=iv.bucket).map(|(k, _)| *k).collect();
            for k in keys {
                done.push(self.finish_bucket(k, 1.0));
            }
        }
        done
    }

    /// Finishes every bucket still open; `elapsed_s` sets the length of the last one.
    pub fn finish(&mut self, elapsed_s: f64) -> Vec<FinishedBucket> {
        let keys: Vec<u64> = self.pending.keys().copied().collect();
        let done = keys
            .into_iter()
            .map(|k| {
                let len = (elapsed_s - k as f64).clamp(0.0, 1.0);
                self.finish_bucket(k, if len > 0.0 { len } else { 1.0 })
            })
            .collect();
        // The last bucket may have been finished early (every worker had reported it) before
        // the run's length was known: give it its partial length now.
        if let Some(last) = self.series.last_mut() {
            let len = elapsed_s - last.t_s as f64;
            if len > 0.0 && len < 1.0 {
                last.interval_s = (len * 1e6).round() / 1e6;
            }
        }
        done
    }

    fn finish_bucket(&mut self, k: u64, interval_s: f64) -> FinishedBucket {
        let p = self.pending.remove(&k).expect("bucket is pending");
        let nonempty = !p.latency.is_empty();
        let point = TimePoint {
            t_s: k,
            interval_s: (interval_s * 1e6).round() / 1e6,
            sent: p.counts.sent,
            completed: p.counts.completed,
            errors: p.counts.errors.total(),
            latency_p50_us: nonempty.then(|| p.latency.value_at_quantile(0.5)),
            latency_p99_us: nonempty.then(|| p.latency.value_at_quantile(0.99)),
            latency_max_us: nonempty.then(|| p.latency.max()),
            users: self.ramp.then_some(p.users),
            target: None,
        };
        // Seconds in which no worker recorded anything still appear, as zeros, so the series
        // has no holes.
        let first_missing = self.series.last().map_or(0, |last| last.t_s + 1);
        for t in first_missing..k {
            self.series.push(TimePoint::empty(t));
        }
        self.series.push(point.clone());
        FinishedBucket {
            point,
            latency: p.latency,
            service: p.service,
            counts: p.counts,
            lag: p.lag,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn interval(thread: usize, bucket: u64, values: &[u64]) -> Interval {
        let mut latency = new_hist();
        let mut counts = Counters::default();
        for v in values {
            latency.record(*v).unwrap();
            counts.completed += 1;
        }
        Interval {
            thread,
            bucket,
            latency,
            service: new_hist(),
            lag: new_hist(),
            counts,
            users: 2,
        }
    }

    #[test]
    fn buckets_finish_when_every_thread_reported() {
        let mut a = Aggregator::new(2, false);
        assert!(a.add(interval(0, 0, &[10, 20])).is_empty());
        let done = a.add(interval(1, 0, &[30]));
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].point.completed, 3);
        assert_eq!(done[0].point.latency_max_us, Some(30));
        // Thread 0 skips bucket 1 (nothing happened) and reports 2; thread 1 reports 2.
        assert!(a.add(interval(0, 2, &[5])).is_empty());
        let done = a
            .add(interval(1, 2, &[]))
            .into_iter()
            .map(|b| b.point.t_s)
            .collect::<Vec<_>>();
        assert_eq!(done, vec![2]);
        let ts: Vec<u64> = a.series.iter().map(|p| p.t_s).collect();
        assert_eq!(ts, vec![0, 1, 2], "the empty second is filled in");
        assert_eq!(a.series[1].latency_p50_us, None);
        assert_eq!(a.latency.len(), 4);
        assert_eq!(a.counts.completed, 4);
        assert_eq!(a.series[0].users, None, "users only in ramp mode");
        let mut r = Aggregator::new(2, true);
        r.add(interval(0, 0, &[1]));
        r.add(interval(1, 0, &[1]));
        assert_eq!(r.series[0].users, Some(4), "users summed over workers");
    }

    #[test]
    fn finish_sets_the_partial_last_bucket() {
        let mut a = Aggregator::new(2, false);
        a.add(interval(0, 3, &[7]));
        let done = a.finish(3.25);
        assert_eq!(done.len(), 1);
        assert_eq!(done[0].point.interval_s, 0.25);
        assert_eq!(a.series.len(), 4);
        // A last bucket that every worker already reported still gets its partial length.
        let mut a = Aggregator::new(1, false);
        a.add(interval(0, 0, &[7]));
        assert!(a.finish(0.4).is_empty());
        assert_eq!(a.series[0].interval_s, 0.4);
    }
}

//! A run's HDR histogram (µs) as a Prometheus native histogram (seconds) at [`SCHEMA`] 3 (8
//! buckets per power of two, each 9 % wide), from [`crate::buckets`].

use super::proto::{BucketSpan, Histogram};
use crate::buckets;
use volley_model::stats::histogram::Hist;

/// Native histogram schema: buckets (2^((i-1)/8), 2^(i/8)].
pub(crate) const SCHEMA: i32 = 3;
/// Prometheus' default zero threshold.
const ZERO_THRESHOLD: f64 = 1e-128;

/// `h` (µs) as a native histogram sample at `timestamp_ms`.
pub(crate) fn from_hdr(h: &Hist, timestamp_ms: i64) -> Histogram {
    let (zero, buckets) = buckets::counts(h, SCHEMA);
    let (spans, deltas) = spans_and_deltas(&buckets);
    Histogram {
        count_int: h.len(),
        sum: buckets::sum_s(h),
        schema: SCHEMA,
        zero_threshold: ZERO_THRESHOLD,
        zero_count_int: zero,
        positive_spans: spans,
        positive_deltas: deltas,
        // A run's histogram only grows: a counter histogram.
        reset_hint: 0,
        timestamp: timestamp_ms,
    }
}

/// Buckets (index ascending, counts) as spans of consecutive indexes and count deltas.
fn spans_and_deltas(buckets: &[(i32, u64)]) -> (Vec<BucketSpan>, Vec<i64>) {
    let mut spans: Vec<BucketSpan> = Vec::new();
    let mut deltas = Vec::with_capacity(buckets.len());
    let mut prev_index: Option<i32> = None;
    let mut prev_count = 0i64;
    for &(i, c) in buckets {
        match prev_index {
            Some(p) if i == p + 1 => spans.last_mut().expect("a span is open").length += 1,
            Some(p) => spans.push(BucketSpan {
                offset: i - p - 1,
                length: 1,
            }),
            None => spans.push(BucketSpan {
                offset: i,
                length: 1,
            }),
        }
        deltas.push(c as i64 - prev_count);
        prev_count = c as i64;
        prev_index = Some(i);
    }
    (spans, deltas)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_model::stats::histogram::new_hist;

    fn bucket_index(v: f64) -> i32 {
        buckets::upper_index(v, SCHEMA)
    }

    #[test]
    fn buckets_follow_the_schema() {
        assert_eq!(bucket_index(1.0), 0, "1 is the upper bound of bucket 0");
        assert_eq!(bucket_index(1.01), 1);
        assert_eq!(bucket_index(2.0), 8);
        assert_eq!(bucket_index(0.5), -8);
        assert_eq!(
            bucket_index(0.001),
            -79,
            "1 ms: (2^-10, …] at 8 per doubling"
        );
    }

    #[test]
    fn counts_survive_as_spans_and_deltas() {
        let mut h = new_hist();
        for (v, n) in [(0u64, 2u64), (1_000, 3), (1_200, 1), (4_000, 5)] {
            h.record_n(v, n).unwrap();
        }
        let n = from_hdr(&h, 7);
        assert_eq!((n.count_int, n.zero_count_int, n.timestamp), (11, 2, 7));
        // Rebuild absolute counts by index.
        let mut idx = 0;
        let mut count = 0i64;
        let mut got = Vec::new();
        let mut d = n.positive_deltas.iter();
        for s in &n.positive_spans {
            idx += s.offset;
            for _ in 0..s.length {
                count += d.next().unwrap();
                got.push((idx, count));
                idx += 1;
            }
        }
        let want: Vec<(i32, i64)> = vec![
            (bucket_index(0.001), 3),
            (bucket_index(0.0012), 1),
            (bucket_index(0.004), 5),
        ];
        assert_eq!(got, want, "{:?}", n.positive_spans);
        assert!(
            (n.sum - (3.0 * 0.001 + 0.0012 + 5.0 * 0.004)).abs() < 1e-4,
            "{}",
            n.sum
        );
    }
}

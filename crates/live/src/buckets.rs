//! A run's HDR histogram (µs) in base-2 exponential buckets of seconds: the shape of both
//! Prometheus native histograms and OTLP exponential histograms. At `scale` s, bucket i holds
//! the values in (2^((i-1)/2^s), 2^(i/2^s)] (OTLP numbers the same bucket i - 1). Every HDR
//! bucket's count goes to the bucket its middle value falls in; zeros to the zero bucket.
//! Lossy only in bucket width: HDR's are 0.1 %.

use volley_model::stats::histogram::Hist;

/// The bucket of `v` seconds (> 0) at `scale`: the i with 2^((i-1)/2^scale) < v ≤ 2^(i/2^scale).
pub(crate) fn upper_index(v: f64, scale: i32) -> i32 {
    let per_doubling = 2f64.powi(scale);
    let i = (v.log2() * per_doubling).ceil() as i32;
    // log2 rounding at an exact bucket bound: the bound belongs to the lower bucket.
    if 2f64.powf((i - 1) as f64 / per_doubling) >= v {
        i - 1
    } else {
        i
    }
}

/// The counts of `h` (µs) at `scale`: (the zero bucket's count, [(upper index, count)] in
/// ascending index, empty buckets left out).
pub(crate) fn counts(h: &Hist, scale: i32) -> (u64, Vec<(i32, u64)>) {
    let mut zero = 0u64;
    let mut buckets: Vec<(i32, u64)> = Vec::new();
    for v in h.iter_recorded() {
        let us = h.median_equivalent(v.value_iterated_to());
        let n = v.count_at_value();
        if us == 0 {
            zero += n;
            continue;
        }
        let i = upper_index(us as f64 / 1e6, scale);
        match buckets.last_mut() {
            Some((last, c)) if *last == i => *c += n,
            _ => buckets.push((i, n)),
        }
    }
    (zero, buckets)
}

/// The sum of `h` (µs) in seconds: HDR's mean × count.
pub(crate) fn sum_s(h: &Hist) -> f64 {
    h.mean() * h.len() as f64 / 1e6
}

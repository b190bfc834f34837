//! The slowest requests of one worker, with their times, in a bounded heap: what the GC
//! correlation needs (which of the slowest requests overlapped a pause) without keeping
//! anything per request beyond a few thousand entries (docs/contract.md, "GC pauses").

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Requests kept per worker: the run's p99.9 is 10,000 requests in 10 million, so two
/// workers keep all of them up to about 16 million requests; beyond, the correlation is made
/// over the slowest kept (and says how many it checked).
pub(crate) const KEPT_PER_WORKER: usize = 8192;

/// One slow request: its latency and when its response came, ns from t0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct SlowRequest {
    /// Latency as recorded (corrected in the open loop), microseconds.
    pub latency_us: u64,
    /// When the response completed, ns after t0; the request began `latency_us` before.
    pub end_ns: u64,
}

impl SlowRequest {
    /// The request's window, seconds from t0: from its start (intended start in the open
    /// loop) to its response.
    pub fn window_s(&self) -> (f64, f64) {
        let end = self.end_ns as f64 / 1e9;
        (end - self.latency_us as f64 / 1e6, end)
    }
}

/// A min-heap of the slowest requests seen, at most `cap`.
#[derive(Debug)]
pub(crate) struct Slowest {
    heap: BinaryHeap<Reverse<SlowRequest>>,
    cap: usize,
}

impl Default for Slowest {
    fn default() -> Self {
        Slowest::new(KEPT_PER_WORKER)
    }
}

impl Slowest {
    /// Keeps at most `cap` requests.
    pub fn new(cap: usize) -> Self {
        Slowest {
            heap: BinaryHeap::new(),
            cap,
        }
    }

    /// Offers a request; kept if it is among the `cap` slowest so far. One comparison in the
    /// common case (faster than the fastest kept).
    #[inline]
    pub(crate) fn offer(&mut self, latency_us: u64, end_ns: u64) {
        let r = SlowRequest { latency_us, end_ns };
        if self.heap.len() < self.cap {
            self.heap.push(Reverse(r));
        } else if let Some(mut least) = self.heap.peek_mut() {
            if r > least.0 {
                *least = Reverse(r);
            }
        }
    }

    /// The kept requests, slowest first.
    pub(crate) fn into_sorted(self) -> Vec<SlowRequest> {
        // Sorted ascending by Reverse = descending by the request.
        self.heap
            .into_sorted_vec()
            .into_iter()
            .map(|r| r.0)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_slowest_and_no_more() {
        let mut s = Slowest::new(3);
        for (k, lat) in [5u64, 1, 9, 7, 3, 8].iter().enumerate() {
            s.offer(*lat, k as u64);
        }
        let kept: Vec<u64> = s.into_sorted().iter().map(|r| r.latency_us).collect();
        assert_eq!(kept, vec![9, 8, 7]);
    }

    #[test]
    fn a_window_ends_at_the_response() {
        let r = SlowRequest {
            latency_us: 2_000,
            end_ns: 1_500_000_000,
        };
        let (a, b) = r.window_s();
        assert!((a - 1.498).abs() < 1e-9 && (b - 1.5).abs() < 1e-9);
    }
}

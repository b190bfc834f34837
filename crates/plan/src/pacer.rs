//! The pacer decides when the next request of one worker thread is due. The engine has one
//! loop for every mode; the mode lives here, as data (closed loop, constant rate, Poisson).
//!
//! Times are nanoseconds on the run's monotonic clock, so the maths is testable with plain numbers.

use std::sync::Arc;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::rate::RateShape;

/// When the next request may go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Due {
    /// As soon as a connection is free (closed loop).
    Now,
    /// At this time (open loop), possibly already past: then it is late.
    At(u64),
    /// Nothing more to send in this phase.
    Exhausted,
}

#[derive(Debug, Clone)]
enum Kind {
    Closed,
    /// Request i (global) is due at origin + i / rate; this thread owns i = thread + j * threads.
    Constant {
        ns_per_request: f64,
    },
    /// Exponential gaps at rate / threads.
    Poisson {
        mean_gap_ns: f64,
        rng: SmallRng,
        next_due: u64,
    },
    /// A rate that changes with time (`--rate-stages`): request i (global) is due when the
    /// integrated rate reaches i; with Poisson arrivals, this thread's process runs at unit
    /// rate ÷ threads in integrated-rate space (`next_n`), mapped back through the inverse.
    Staged {
        shape: Arc<RateShape>,
        poisson: Option<(SmallRng, f64)>,
    },
}

/// Per-thread schedule of one phase (warm-up or measured).
#[derive(Debug, Clone)]
pub struct Pacer {
    kind: Kind,
    thread: u64,
    threads: u64,
    origin_ns: u64,
    /// Requests of this thread taken so far in this phase.
    taken: u64,
    /// This thread's share of `-n`, if any.
    limit: Option<u64>,
    seed: u64,
    /// `--shard`: the constant schedule's offset from the phase's origin (a shard's first
    /// request is due `index / rate` after the whole load's).
    phase_ns: u64,
}

impl Pacer {
    /// Closed loop: a request whenever a connection is free; `limit` is this thread's share of `-n`.
    pub fn closed(limit: Option<u64>) -> Self {
        Pacer {
            kind: Kind::Closed,
            thread: 0,
            threads: 1,
            origin_ns: 0,
            taken: 0,
            limit,
            seed: 0,
            phase_ns: 0,
        }
    }

    /// Open loop at `rate_rps` overall; this is thread `thread` of `threads`.
    /// `total` is the run's `-n` (this thread owns the indices i < total with i ≡ thread mod threads).
    pub(crate) fn constant(
        rate_rps: f64,
        thread: usize,
        threads: usize,
        total: Option<u64>,
    ) -> Self {
        let (thread, threads) = (thread as u64, threads as u64);
        Pacer {
            kind: Kind::Constant {
                ns_per_request: 1e9 / rate_rps,
            },
            thread,
            threads,
            origin_ns: 0,
            taken: 0,
            limit: total.map(|n| share_of_indices(n, thread, threads)),
            seed: 0,
            phase_ns: 0,
        }
    }

    /// Open loop with Poisson arrivals at `rate_rps` overall (each thread runs a Poisson process
    /// at rate/threads; their sum is again Poisson at the full rate).
    pub(crate) fn poisson(
        rate_rps: f64,
        thread: usize,
        threads: usize,
        total: Option<u64>,
        seed: u64,
    ) -> Self {
        let (thread, threads) = (thread as u64, threads as u64);
        let seed = seed.wrapping_add(thread.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut p = Pacer {
            kind: Kind::Poisson {
                mean_gap_ns: 1e9 * threads as f64 / rate_rps,
                rng: SmallRng::seed_from_u64(seed),
                next_due: 0,
            },
            thread,
            threads,
            origin_ns: 0,
            taken: 0,
            limit: total.map(|n| share_of_indices(n, thread, threads)),
            seed,
            phase_ns: 0,
        };
        p.restart(0);
        p
    }

    /// Open loop at a rate that changes with time (`shape`): this pacer owns the requests
    /// `offset`, `offset + stride`, … of the whole schedule (thread k of T: `k`, `T`; of shard
    /// s of N: `s + N·k`, `N·T`); `poisson`: Poisson arrivals at its share of the rate (from
    /// `seed`), else uniform.
    pub fn staged(
        shape: Arc<RateShape>,
        (offset, stride): (u64, u64),
        poisson: bool,
        seed: u64,
    ) -> Self {
        let (thread, threads) = (offset, stride.max(1));
        let seed = seed.wrapping_add(thread.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        let mut p = Pacer {
            kind: Kind::Staged {
                shape,
                poisson: poisson.then(|| (SmallRng::seed_from_u64(seed), 0.0)),
            },
            thread,
            threads,
            origin_ns: 0,
            taken: 0,
            limit: None,
            seed,
            phase_ns: 0,
        };
        p.restart(0);
        p
    }

    /// Starts a phase at `origin_ns`: indices restart at 0 (the warm-up and the measured window
    /// each have their own schedule). `limit` applies to the measured phase only.
    pub fn restart(&mut self, origin_ns: u64) {
        self.origin_ns = origin_ns;
        self.taken = 0;
        if let Kind::Poisson {
            mean_gap_ns,
            rng,
            next_due,
        } = &mut self.kind
        {
            *rng = SmallRng::seed_from_u64(self.seed);
            *next_due = origin_ns + exp_gap(rng, *mean_gap_ns);
        }
        if let Kind::Staged {
            poisson: Some((rng, next_n)),
            ..
        } = &mut self.kind
        {
            *rng = SmallRng::seed_from_u64(self.seed);
            *next_n = exp_unit(rng) * self.threads as f64;
        }
    }

    /// The same schedule shifted by `phase_ns` (a constant-rate shard's place in the whole
    /// load's schedule; nothing for other schedules).
    pub(crate) fn with_phase(mut self, phase_ns: u64) -> Self {
        self.phase_ns = phase_ns;
        self
    }

    /// The warm-up's schedule: this one without a request limit; with stages, the first
    /// stage's starting rate held constant (nothing when it is 0).
    pub fn warmup(&self) -> Self {
        match &self.kind {
            Kind::Staged { shape, poisson } => {
                let rate = shape.rate_at(0.0);
                let mut p = if rate > 0.0 {
                    let k = (self.thread as usize, self.threads as usize);
                    match poisson {
                        Some(_) => Pacer::poisson(rate, k.0, k.1, None, self.seed),
                        None => Pacer::constant(rate, k.0, k.1, None),
                    }
                } else {
                    Pacer::staged(Arc::new(RateShape::new(0.0, &[])), (0, 1), false, 0)
                };
                p.thread = self.thread;
                p.threads = self.threads;
                p
            }
            _ => self.unlimited(),
        }
    }

    /// A copy without a request limit (for the warm-up phase).
    pub fn unlimited(&self) -> Self {
        Pacer {
            limit: None,
            ..self.clone()
        }
    }

    /// True for an open-loop schedule.
    pub fn is_open(&self) -> bool {
        !matches!(self.kind, Kind::Closed)
    }

    /// When this thread's next request is due.
    pub fn peek(&self) -> Due {
        if let Some(limit) = self.limit {
            if self.taken >= limit {
                return Due::Exhausted;
            }
        }
        match &self.kind {
            Kind::Closed => Due::Now,
            Kind::Constant { ns_per_request } => {
                let i = self.thread + self.taken * self.threads;
                Due::At(self.origin_ns + self.phase_ns + (i as f64 * ns_per_request) as u64)
            }
            Kind::Poisson { next_due, .. } => Due::At(*next_due),
            Kind::Staged { shape, .. } if shape.total() <= 0.0 => Due::Exhausted,
            Kind::Staged { shape, poisson } => {
                let n = match poisson {
                    Some((_, next_n)) => *next_n,
                    None => (self.thread + self.taken * self.threads) as f64,
                };
                match shape.time_of(n) {
                    Some(t) => Due::At(self.origin_ns + self.phase_ns + (t * 1e9) as u64),
                    None => Due::Exhausted,
                }
            }
        }
    }

    /// Marks the request returned by `peek` as taken.
    pub fn advance(&mut self) {
        self.taken += 1;
        if let Kind::Poisson {
            mean_gap_ns,
            rng,
            next_due,
        } = &mut self.kind
        {
            *next_due += exp_gap(rng, *mean_gap_ns);
        }
        if let Kind::Staged {
            poisson: Some((rng, next_n)),
            ..
        } = &mut self.kind
        {
            *next_n += exp_unit(rng) * self.threads as f64;
        }
    }

    /// Open loop: the due time of the last request due within `window_ns` of the next one
    /// (the next one's own when no other is), or None when nothing more is due. Waking then
    /// sends them all with one wake-up and none before its time; a request further on is not
    /// in the batch and keeps its own deadline.
    pub fn batch_end(&self, window_ns: u64) -> Option<u64> {
        let Due::At(first) = self.peek() else {
            return None;
        };
        // No window (the default): the next one alone, with nothing computed or cloned on the
        // path of every wake-up.
        if window_ns == 0 {
            return Some(first);
        }
        let limit_left = self.limit.map_or(u64::MAX, |l| l - self.taken);
        let end = first.saturating_add(window_ns);
        match &self.kind {
            Kind::Closed => None,
            Kind::Constant { ns_per_request } => {
                // Due times are floor((i0 + k·T)·gap): step k while it stays within the window.
                let step = *ns_per_request * self.threads as f64;
                let mut k = ((window_ns as f64 / step) as u64 + 1).min(limit_left - 1);
                let due = |k: u64| {
                    let i = self.thread + (self.taken + k) * self.threads;
                    self.origin_ns + self.phase_ns + (i as f64 * ns_per_request) as u64
                };
                while k > 0 && due(k) > end {
                    k -= 1;
                }
                Some(due(k))
            }
            Kind::Poisson { .. } | Kind::Staged { .. } => {
                let mut p = self.clone();
                let mut last = first;
                for _ in 1..limit_left.min(MAX_BATCH) {
                    p.advance();
                    match p.peek() {
                        Due::At(t) if t <= end => last = t,
                        _ => break,
                    }
                }
                Some(last)
            }
        }
    }

    /// Requests taken in this phase.
    pub fn taken(&self) -> u64 {
        self.taken
    }

    /// Open loop: takes the next request due before `end_ns`, returning its due time; `None`
    /// when there is none. At the end of a run, what this yields was due but never taken (the
    /// `unsent` counter).
    pub fn take_due_before(&mut self, end_ns: u64) -> Option<u64> {
        match self.peek() {
            Due::At(t) if t < end_ns => {
                self.advance();
                Some(t)
            }
            _ => None,
        }
    }
}

/// The most requests of a Poisson schedule looked ahead for one batch.
const MAX_BATCH: u64 = 64;

/// How many of the indices 0..total are ≡ thread (mod threads): a thread's share of requests
/// (open loop) or of virtual users dealt round-robin.
pub fn share_of_indices(total: u64, thread: u64, threads: u64) -> u64 {
    if thread >= total {
        0
    } else {
        (total - thread).div_ceil(threads)
    }
}

/// An exponential variate of mean 1.
fn exp_unit(rng: &mut SmallRng) -> f64 {
    let u: f64 = rng.gen();
    -(1.0 - u).ln()
}

fn exp_gap(rng: &mut SmallRng, mean_ns: f64) -> u64 {
    // 1 - u lies in (0, 1], so the logarithm is finite.
    let u: f64 = rng.gen();
    (-(1.0 - u).ln() * mean_ns) as u64
}

/// Splits `total` into `parts` shares that differ by at most one (earlier parts get the extra).
pub(crate) fn split_evenly(total: u64, parts: usize) -> Vec<u64> {
    let parts = parts.max(1) as u64;
    (0..parts)
        .map(|k| total / parts + u64::from(k < total % parts))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stages(start: f64, s: &[(f64, f64)]) -> Arc<RateShape> {
        let s: Vec<_> = s
            .iter()
            .map(|&(d, r)| (std::time::Duration::from_secs_f64(d), r))
            .collect();
        Arc::new(RateShape::new(start, &s))
    }

    /// Every due time of `p`, in ns from its origin.
    fn all_due(mut p: Pacer) -> Vec<u64> {
        let mut out = Vec::new();
        while let Due::At(t) = p.peek() {
            out.push(t);
            p.advance();
        }
        out
    }

    #[test]
    fn staged_due_times_match_the_integral_exactly_across_threads() {
        // 0 → 1000/s over 2 s, then 1000/s for 1 s: 2000 requests, over 3 threads.
        let shape = stages(0.0, &[(2.0, 1000.0), (1.0, 1000.0)]);
        let mut due: Vec<u64> = (0..3)
            .flat_map(|k| all_due(Pacer::staged(Arc::clone(&shape), (k, 3), false, 1)))
            .collect();
        due.sort_unstable();
        assert_eq!(due.len(), 2001, "requests 0..=2000");
        for (i, &t) in due.iter().enumerate() {
            let n = shape.integral(t as f64 / 1e9);
            assert!(
                (n - i as f64).abs() < 1e-3 + 1e-6 * i as f64,
                "{i}: {t} ns integrates to {n}"
            );
        }
        // Each whole second holds its integral: 250, 750, 1000.
        let per_second = |s: u64| due.iter().filter(|&&t| t / 1_000_000_000 == s).count();
        assert_eq!(
            (per_second(0), per_second(1), per_second(2)),
            (250, 750, 1000)
        );
    }

    #[test]
    fn staged_poisson_counts_per_window_follow_the_rate() {
        // 2000/s for 5 s, a step to 8000/s for 5 s: counts per 100 ms window are Poisson with
        // means 200 and 800, so their dispersion (variance ÷ mean) is near 1.
        let shape = stages(2000.0, &[(5.0, 2000.0), (0.0, 8000.0), (5.0, 8000.0)]);
        let due: Vec<u64> = (0..2)
            .flat_map(|k| all_due(Pacer::staged(Arc::clone(&shape), (k, 2), true, 42)))
            .collect();
        for (from, to, mean) in [(0u64, 50u64, 200.0), (50, 100, 800.0)] {
            let counts: Vec<f64> = (from..to)
                .map(|w| due.iter().filter(|&&t| t / 100_000_000 == w).count() as f64)
                .collect();
            let m = counts.iter().sum::<f64>() / counts.len() as f64;
            let var =
                counts.iter().map(|c| (c - m).powi(2)).sum::<f64>() / (counts.len() - 1) as f64;
            assert!((m - mean).abs() < mean * 0.05, "mean {m} for {mean}");
            // With 50 windows the dispersion's spread is about √(2/49) ≈ 0.2.
            assert!(
                (0.5..1.6).contains(&(var / m)),
                "dispersion {} at {mean}",
                var / m
            );
        }
        let total = due.len() as f64;
        assert!((total - 50_000.0).abs() < 4.0 * 50_000f64.sqrt(), "{total}");
    }

    #[test]
    fn a_staged_warmup_holds_the_starting_rate() {
        // A step to 500/s at 0 s: the warm-up runs at 500/s (every 2 ms), with no end of its own.
        let step = Pacer::staged(stages(0.0, &[(0.0, 500.0), (2.0, 500.0)]), (0, 1), false, 1);
        let mut w = step.warmup();
        w.restart(0);
        let mut due = Vec::new();
        for _ in 0..3 {
            let Due::At(t) = w.peek() else { panic!() };
            due.push(t);
            w.advance();
        }
        assert_eq!(due, [0, 2_000_000, 4_000_000]);
        // A ramp from 0: nothing to warm up at.
        let ramp = Pacer::staged(stages(0.0, &[(2.0, 500.0)]), (0, 1), false, 1);
        assert_eq!(ramp.warmup().peek(), Due::Exhausted);
    }

    #[test]
    fn closed_loop_is_always_due_until_its_limit() {
        let mut p = Pacer::closed(Some(2));
        assert_eq!(p.peek(), Due::Now);
        p.advance();
        p.advance();
        assert_eq!(p.peek(), Due::Exhausted);
        assert_eq!(Pacer::closed(None).peek(), Due::Now);
    }

    #[test]
    fn constant_rate_interleaves_threads() {
        // 1000 req/s over 2 threads: thread 0 owns 0, 2, 4 ... due every 2 ms; thread 1 owns 1, 3, 5 ...
        let mut a = Pacer::constant(1000.0, 0, 2, None);
        let mut b = Pacer::constant(1000.0, 1, 2, None);
        a.restart(5_000_000);
        b.restart(5_000_000);
        let mut due = Vec::new();
        for _ in 0..3 {
            for p in [&mut a, &mut b] {
                if let Due::At(t) = p.peek() {
                    due.push(t - 5_000_000);
                }
                p.advance();
            }
        }
        assert_eq!(
            due,
            vec![0, 1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000]
        );
    }

    #[test]
    fn request_limit_is_split_by_index() {
        // -n 5 over 2 threads: thread 0 sends 0, 2, 4 and thread 1 sends 1, 3.
        let mut a = Pacer::constant(100.0, 0, 2, Some(5));
        let mut b = Pacer::constant(100.0, 1, 2, Some(5));
        let count = |p: &mut Pacer| {
            let mut n = 0;
            while p.peek() != Due::Exhausted {
                p.advance();
                n += 1;
            }
            n
        };
        assert_eq!((count(&mut a), count(&mut b)), (3, 2));
        assert_eq!(share_of_indices(1, 3, 4), 0);
    }

    #[test]
    fn unsent_counts_only_requests_due_inside_the_window() {
        // 10 req/s for 1 s: due at 0, 100 ms, ... 900 ms. Three taken, seven never sent.
        let mut p = Pacer::constant(10.0, 0, 1, None);
        p.restart(0);
        for _ in 0..3 {
            p.advance();
        }
        let due: Vec<u64> = std::iter::from_fn(|| p.take_due_before(1_000_000_000)).collect();
        assert_eq!(due.len(), 7);
        assert_eq!(
            due[0], 300_000_000,
            "the first unsent one was due at 300 ms"
        );
    }

    #[test]
    fn poisson_has_the_right_mean_and_is_reproducible() {
        let mut p = Pacer::poisson(1000.0, 0, 1, None, 42);
        p.restart(0);
        let n = 20_000;
        let mut last = 0;
        let mut first = Vec::new();
        for i in 0..n {
            if let Due::At(t) = p.peek() {
                assert!(t >= last);
                last = t;
                if i < 5 {
                    first.push(t);
                }
            }
            p.advance();
        }
        let mean_gap_ms = last as f64 / n as f64 / 1e6;
        assert!(
            (mean_gap_ms - 1.0).abs() < 0.05,
            "mean gap {mean_gap_ms} ms"
        );
        let mut q = Pacer::poisson(1000.0, 0, 1, None, 42);
        q.restart(0);
        let again: Vec<u64> = (0..5)
            .map(|_| {
                let t = match q.peek() {
                    Due::At(t) => t,
                    _ => unreachable!(),
                };
                q.advance();
                t
            })
            .collect();
        assert_eq!(first, again);
    }

    #[test]
    fn a_batch_ends_at_the_last_request_due_within_the_window() {
        // 20,000 req/s on one thread: due every 50 µs.
        let mut p = Pacer::constant(20_000.0, 0, 1, None);
        p.restart(1_000_000);
        assert_eq!(
            p.batch_end(0),
            Some(1_000_000),
            "no window: the next one alone"
        );
        assert_eq!(p.batch_end(49_999), Some(1_000_000));
        assert_eq!(
            p.batch_end(150_000),
            Some(1_150_000),
            "0, 50, 100 and 150 µs"
        );
        p.advance();
        assert_eq!(p.batch_end(120_000), Some(1_150_000), "50, 100 and 150 µs");
        // Two threads at 20,000 req/s: each thread's requests are 100 µs apart.
        let q = Pacer::constant(20_000.0, 1, 2, None);
        assert_eq!(q.batch_end(250_000), Some(250_000), "50, 150 and 250 µs");
        // -n: a batch never goes past the thread's share.
        let mut r = Pacer::constant(20_000.0, 0, 1, Some(3));
        r.restart(0);
        r.advance();
        assert_eq!(
            r.batch_end(1_000_000),
            Some(100_000),
            "requests 1 and 2 only"
        );
        r.advance();
        r.advance();
        assert_eq!(r.batch_end(1_000_000), None);
        assert_eq!(Pacer::closed(None).batch_end(1_000), None);
    }

    #[test]
    fn a_poisson_batch_stays_within_its_window() {
        let mut p = Pacer::poisson(50_000.0, 0, 1, None, 7);
        p.restart(0);
        for _ in 0..1000 {
            let Due::At(first) = p.peek() else {
                unreachable!()
            };
            let end = p.batch_end(100_000).expect("open-ended schedule");
            assert!(end >= first && end <= first + 100_000);
            // Every request due up to `end` is in the batch: the one after it is later than the window.
            let mut q = p.clone();
            while matches!(q.peek(), Due::At(t) if t <= end) {
                q.advance();
            }
            if q.taken() - p.taken() < MAX_BATCH {
                assert!(matches!(q.peek(), Due::At(t) if t > first + 100_000));
            }
            p.advance();
        }
    }

    #[test]
    fn even_split() {
        assert_eq!(split_evenly(10, 3), vec![4, 3, 3]);
        assert_eq!(split_evenly(2, 4), vec![1, 1, 0, 0]);
    }
}

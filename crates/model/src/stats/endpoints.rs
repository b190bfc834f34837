//! Results per named request of a workload (`--requests-file`): each name's corrected latency
//! and service time histograms, counts, statuses and errors, kept by each worker for the whole
//! measured window and merged after the run; no per-second series. A worker makes a name's
//! numbers when it first records something for it ([`Endpoints::get`]). Names come from
//! `config::requests::names` (at most 101); a run of one URL has none and records nothing here.
//! What a name costs in memory and CPU is docs/contract.md, "Workloads" (results per name),
//! measured in BENCHMARKS.md, "Default names".

use hdrhistogram::Histogram;

use super::histogram::{record, Hist};
use super::recorder::{Counters, ErrorKind};

/// One name's measured numbers on one worker (or merged).
#[derive(Debug, Clone)]
pub struct EndpointStats {
    /// Corrected latency, µs.
    pub latency: Hist,
    /// Service time, µs.
    pub service: Hist,
    /// Sent, completed, errors and statuses.
    pub counts: Counters,
    /// Responses that failed a check (each counted once), by check name.
    pub checks_failed: Vec<(&'static str, u64)>,
    /// Responses that failed a check or had a status of 400 or more.
    pub failed: u64,
    /// Requests still in flight when the worker stopped.
    pub unfinished: u64,
}

fn growing_hist() -> Hist {
    // Sized by what is recorded (auto-resize), not for 60 s up front.
    let mut h = Histogram::new(3).expect("3 significant digits are valid");
    h.auto(true);
    h
}

impl Default for EndpointStats {
    fn default() -> Self {
        EndpointStats {
            latency: growing_hist(),
            service: growing_hist(),
            counts: Counters::default(),
            checks_failed: Vec::new(),
            failed: 0,
            unfinished: 0,
        }
    }
}

impl EndpointStats {
    /// Adds `o` to these.
    pub fn merge(&mut self, o: &EndpointStats) {
        let _ = self.latency.add(&o.latency);
        let _ = self.service.add(&o.service);
        self.counts.merge(&o.counts);
        for (name, n) in &o.checks_failed {
            self.check_failed(name, *n);
        }
        self.failed += o.failed;
        self.unfinished += o.unfinished;
    }

    /// `n` more responses failed check `name`.
    pub(crate) fn check_failed(&mut self, name: &'static str, n: u64) {
        match self.checks_failed.iter_mut().find(|(c, _)| *c == name) {
            Some((_, m)) => *m += n,
            None => self.checks_failed.push((name, n)),
        }
    }
}

/// A worker's numbers per name, indexed by the name's number; a name appears when first used.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// By endpoint index; `None` until this worker recorded something for it.
    pub stats: Vec<Option<Box<EndpointStats>>>,
}

impl Endpoints {
    /// The numbers of endpoint `e`, made on first use.
    #[inline]
    pub fn get(&mut self, e: u16) -> &mut EndpointStats {
        let e = e as usize;
        if self.stats.len() <= e {
            self.stats.resize_with(e + 1, || None);
        }
        self.stats[e].get_or_insert_with(Default::default)
    }

    /// A measured request of endpoint `e` was written.
    #[inline]
    pub fn sent(&mut self, e: u16) {
        self.get(e).counts.sent += 1;
    }

    /// A measured response of endpoint `e`.
    #[inline]
    pub fn response(&mut self, e: u16, latency_us: u64, service_us: u64, status: u16) {
        let s = self.get(e);
        s.counts.completed += 1;
        s.counts.status[status as usize % s.counts.status.len()] += 1;
        record(&mut s.latency, latency_us);
        record(&mut s.service, service_us);
        if status >= 400 {
            s.failed += 1;
        }
    }

    /// A measured response of endpoint `e` with `status` failed the checks in `failed`.
    #[inline]
    pub fn checked(&mut self, e: u16, status: u16, failed: &[&'static str]) {
        if failed.is_empty() {
            return;
        }
        let s = self.get(e);
        for name in failed {
            s.check_failed(name, 1);
        }
        s.counts.failed_checks += 1;
        if status < 400 {
            s.failed += 1;
        }
    }

    /// A measured journey step of endpoint `e` was skipped (its user lacked a value).
    #[inline]
    pub fn skipped(&mut self, e: u16) {
        self.get(e).counts.skipped += 1;
    }

    /// A measured request of endpoint `e` ended with an error.
    #[inline]
    pub fn error(&mut self, e: u16, kind: ErrorKind) {
        self.get(e).counts.errors.add(kind);
    }

    /// Adds another worker's numbers.
    pub fn merge(&mut self, o: &Endpoints) {
        for (e, s) in o.stats.iter().enumerate() {
            if let Some(s) = s {
                self.get(e as u16).merge(s);
            }
        }
    }

    /// Whether nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.stats.iter().all(Option::is_none)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_merge_exactly_and_grow_only_where_used() {
        let mut a = Endpoints::default();
        let mut b = Endpoints::default();
        for v in 1..=1000u64 {
            a.response(2, v, v / 2, 200);
            b.response(2, v + 1000, v, if v % 10 == 0 { 503 } else { 200 });
        }
        b.error(0, ErrorKind::Timeout);
        a.sent(2);
        let mut all = Endpoints::default();
        all.merge(&a);
        all.merge(&b);
        assert!(all.stats[1].is_none(), "never used: no histograms");
        let s = all.stats[2].as_ref().unwrap();
        assert_eq!(s.counts.completed, 2000);
        assert_eq!(s.latency.len(), 2000);
        assert_eq!(s.latency.max(), 2000);
        assert_eq!(s.failed, 100);
        assert_eq!(s.counts.status[503], 100);
        assert_eq!(s.counts.sent, 1);
        assert_eq!(all.stats[0].as_ref().unwrap().counts.errors.timeout, 1);
    }

    #[test]
    fn latencies_past_the_first_bucket_are_kept() {
        let mut e = Endpoints::default();
        for v in [5, 2_048, 3_000, 250_000, 90_000_000] {
            e.response(0, v, v, 200);
        }
        let s = e.stats[0].as_ref().unwrap();
        for h in [&s.latency, &s.service] {
            assert_eq!(h.len(), 5);
            assert_eq!(h.min(), 5);
            assert!(h.equivalent(h.max(), 90_000_000), "{}", h.max());
            assert_eq!(h.count_between(2_000, 3_000), 2);
        }
    }
}

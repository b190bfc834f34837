//! The counters (docs/contract.md, "Merging shards", counters): shards of one load sent
//! disjoint requests over their own connections, so every count adds up; so do the warm-up's.

use std::collections::BTreeMap;

use volley_model::result::{Bytes, Connections, Requests, RunResult, Warmup};
use volley_model::stats::ErrorCounts;

/// The counter blocks of the merged result.
pub(super) struct Totals {
    /// `requests`.
    pub requests: Requests,
    /// `bytes`.
    pub bytes: Bytes,
    /// `status_codes`.
    pub status_codes: BTreeMap<String, u64>,
    /// `errors`.
    pub errors: ErrorCounts,
    /// `connections`.
    pub connections: Connections,
}

/// Every counter block summed over the shards.
pub(super) fn sum(rs: &[&RunResult]) -> Totals {
    Totals {
        requests: rs.iter().map(|r| r.requests).sum(),
        bytes: rs.iter().map(|r| r.bytes).sum(),
        status_codes: sum_status_codes(rs),
        errors: rs.iter().map(|r| r.errors).sum(),
        connections: rs.iter().map(|r| r.connections).sum(),
    }
}

/// Responses per status code over every shard.
fn sum_status_codes(rs: &[&RunResult]) -> BTreeMap<String, u64> {
    let mut sum = BTreeMap::new();
    for (code, count) in rs.iter().flat_map(|r| &r.status_codes) {
        *sum.entry(code.clone()).or_insert(0) += count;
    }
    sum
}

/// The warm-up counters summed (its length: the longest), when any shard warmed up.
pub(super) fn warmup(rs: &[&RunResult]) -> Option<Warmup> {
    rs.iter().any(|r| r.warmup.is_some()).then(|| {
        let ws = rs.iter().filter_map(|r| r.warmup.as_ref());
        Warmup {
            duration_s: ws.clone().map(|w| w.duration_s).fold(0.0, f64::max),
            sent: ws.clone().map(|w| w.sent).sum(),
            completed: ws.clone().map(|w| w.completed).sum(),
            errors: ws.clone().map(|w| w.errors).sum(),
            connections_opened: ws.map(|w| w.connections_opened).sum(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_shards::{shard, T0};
    use super::*;

    #[test]
    fn every_counter_adds_up() {
        let a = shard(T0, &[100, 200, 300]);
        let mut b = shard(T0, &[100]);
        b.requests.errors = 4;
        b.requests.unfinished = 1;
        b.requests.unsent = 2;
        b.errors.timeout = 3;
        b.errors.closed = 1;
        b.connections.closed_by_server = 5;
        b.connections.unsolicited = 6;
        b.status_codes.insert("503".into(), 7);
        b.requests.failed = 7;
        // A shard without checks has none that failed: the other's count is the sum.
        b.requests.failed_checks = Some(3);
        let t = sum(&[&a, &b]);
        assert_eq!(
            t.requests,
            Requests {
                sent: 4,
                completed: 4,
                errors: 4,
                unfinished: 1,
                unsent: 2,
                failed: 7,
                failed_checks: Some(3),
                skipped: None,
            }
        );
        assert_eq!(
            t.bytes,
            Bytes {
                sent: 40,
                received: 80,
            }
        );
        let codes: Vec<(&str, u64)> = t
            .status_codes
            .iter()
            .map(|(c, n)| (c.as_str(), *n))
            .collect();
        assert_eq!(codes, vec![("200", 4), ("503", 7)]);
        assert_eq!(
            (t.errors.timeout, t.errors.closed, t.errors.total()),
            (3, 1, 4)
        );
        assert_eq!(
            t.connections,
            Connections {
                opened: 4,
                closed_by_server: 5,
                unsolicited: 6,
                max_open: None,
            }
        );
    }

    #[test]
    fn warmup_adds_when_any_shard_warmed_up() {
        let a = shard(T0, &[100]);
        let mut b = shard(T0, &[100]);
        assert_eq!(warmup(&[&a, &b]), None);
        b.warmup = Some(Warmup {
            duration_s: 1.5,
            sent: 10,
            completed: 9,
            errors: 1,
            connections_opened: 2,
        });
        let mut c = b.clone();
        c.warmup.as_mut().unwrap().duration_s = 1.0;
        let w = warmup(&[&a, &b, &c]).unwrap();
        assert_eq!(
            (
                w.duration_s,
                w.sent,
                w.completed,
                w.errors,
                w.connections_opened
            ),
            (1.5, 20, 18, 2, 4)
        );
    }
}

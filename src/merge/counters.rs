//! The counters (docs/contract.md, "Merging shards", counters): shards of one load sent
//! disjoint requests over their own connections, so every count adds up; so do the warm-up's.

use std::collections::BTreeMap;

use crate::result::{Bytes, Connections, Requests, RunResult, Warmup};
use crate::stats::ErrorCounts;

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


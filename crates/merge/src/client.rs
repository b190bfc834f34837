//! The client block (docs/contract.md, "Merging shards", client): the shards' CPU time adds up;
//! memory, CPU peaks and saturation are the worst shard's, since a peak of one process does not
//! add to another's.

use super::round;
use volley_model::result::{ClientInfo, RunResult};

/// The merged resource use of the shards' load generators.
pub(super) fn merge(rs: &[&RunResult]) -> ClientInfo {
    ClientInfo {
        cpu_user_s: round(rs.iter().map(|r| r.client.cpu_user_s).sum(), 6),
        cpu_sys_s: round(rs.iter().map(|r| r.client.cpu_sys_s).sum(), 6),
        rss_max_bytes: rs.iter().map(|r| r.client.rss_max_bytes).max().unwrap_or(0),
        cpu_pct_max: rs.iter().map(|r| r.client.cpu_pct_max).fold(0.0, f64::max),
        saturated: rs.iter().any(|r| r.client.saturated),
        saturated_fraction: rs
            .iter()
            .map(|r| r.client.saturated_fraction)
            .fold(0.0, f64::max),
        // One backend when every shard used it; none when they differ.
        io: rs
            .first()
            .and_then(|r| r.client.io)
            .filter(|io| rs.iter().all(|r| r.client.io == Some(*io))),
        starved: rs.iter().any(|r| r.client.starved),
        starved_fraction: rs
            .iter()
            .map(|r| r.client.starved_fraction)
            .fold(0.0, f64::max),
        wait_pct_max: rs.iter().map(|r| r.client.wait_pct_max).fold(0.0, f64::max),
        // Each shard saw the machine from its own process: the worst shard's list.
        busiest_others: rs
            .iter()
            .max_by(|a, b| {
                a.client
                    .starved_fraction
                    .total_cmp(&b.client.starved_fraction)
            })
            .map(|r| r.client.busiest_others.clone())
            .unwrap_or_default(),
    }
}

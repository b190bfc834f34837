//! The `shards` list (docs/contract.md, "Merging shards", also): what of each input cannot be
//! added up without losing it (command line, start, environment, the client's own use).

use volley_model::result::{RunResult, Shard};

/// Every input shard in the order given; an input that was itself merged contributes its
/// shards, so that a merge of merges still lists the runs that made it.
pub(super) fn list(rs: &[&RunResult]) -> Vec<Shard> {
    let mut shards = Vec::new();
    for r in rs {
        if r.shards.is_empty() {
            shards.push(Shard {
                argv: r.argv.clone(),
                started_at: r.started_at.clone(),
                env: r.env.clone(),
                client: r.client.clone(),
                index: r.shard.as_ref().map(|s| s.index),
                throughput_rps: Some(r.throughput_rps),
                achieved_rps: r.achieved_rps,
                start_late_us: r.shard.as_ref().and_then(|s| s.start_late_us),
            });
        } else {
            shards.extend(r.shards.iter().cloned());
        }
    }
    shards
}

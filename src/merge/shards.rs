//! The `shards` list (docs/contract.md, "Merging shards", also): what of each input cannot be
//! added up without losing it (command line, start, environment, the client's own use).

use crate::result::{RunResult, Shard};

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
            });
        } else {
            shards.extend(r.shards.iter().cloned());
        }
    }
    shards
}

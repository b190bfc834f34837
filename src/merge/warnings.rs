//! Warnings the merge carries over or adds for what it drops (docs/contract.md, "Merging
//! shards", also): each shard warning once, naming the shards that had it unless all did, so
//! that a problem of one shard is not taken for a problem of the whole load.

use crate::result::{RunResult, Warning};

/// The shards' own warnings in the order first seen: once when every shard had it, else
/// prefixed with the files of the shards that had it.
pub(super) fn of_shards(inputs: &[(String, RunResult)]) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let mut seen: Vec<&Warning> = Vec::new();
    for (_, r) in inputs {
        for w in &r.warnings {
            if seen.contains(&w) {
                continue;
            }
            seen.push(w);
            let holders: Vec<&str> = inputs
                .iter()
                .filter(|(_, o)| o.warnings.contains(w))
                .map(|(p, _)| p.as_str())
                .collect();
            warnings.push(if holders.len() == inputs.len() {
                w.clone()
            } else {
                Warning::of_shards(&holders, w)
            });
        }
    }
    warnings
}

/// The merge has no thresholds: the shards' judged each shard alone, and the merged load is
/// not what they judged. Warns when a shard had some.
pub(super) fn thresholds_dropped(rs: &[&RunResult], warnings: &mut Vec<Warning>) {
    if rs.iter().any(|r| !r.thresholds.is_empty()) {
        warnings.push(Warning::thresholds_not_carried());
    }
}


//! Warnings the merge carries over or adds for what it drops (docs/contract.md, "Merging
//! shards", also): each shard warning once, naming the shards that had it unless all did, so
//! that a problem of one shard is not taken for a problem of the whole load.

use volley_model::result::{RunResult, Warning};

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
/// not what they judged. Warns when a shard had some of its user's (the bound checks imply
/// is judged again on the merged result).
pub(super) fn thresholds_dropped(rs: &[&RunResult], warnings: &mut Vec<Warning>) {
    if rs.iter().flat_map(|r| &r.thresholds).any(|t| !t.implied) {
        warnings.push(Warning::thresholds_not_carried());
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_shards::{shard, T0};
    use super::*;

    #[test]
    fn a_warning_of_every_shard_once_of_some_with_their_files() {
        let mut a = shard(T0, &[100]);
        let mut b = shard(T0, &[100]);
        let c = shard(T0, &[100]);
        a.warnings.push("slow".into());
        b.warnings.push("slow".into());
        b.warnings.push("late".into());
        let inputs = [
            ("a.json".into(), a),
            ("b.json".into(), b),
            ("c.json".into(), c),
        ];
        let texts: Vec<String> = of_shards(&inputs)
            .iter()
            .map(|w| w.text().to_string())
            .collect();
        assert_eq!(
            texts,
            vec![
                "closed loop",
                "shard a.json, b.json: slow",
                "shard b.json: late"
            ]
        );
    }
}

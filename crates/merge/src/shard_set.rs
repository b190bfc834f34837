//! Shards of one sharded load (`--shard I/N`, docs/contract.md, "Shards"): a merge of them
//! must hold all N of one run — one `config_hash`, one `--start-at`, every index exactly once
//! — each started within its `--max-late`. Such a set is aligned on its common start instead
//! of the 10 ms `started_at` rule (which clocks kept to a 10 ms budget each could break).

use std::collections::BTreeMap;

use super::MergeError;
use volley_model::result::RunResult;

/// What the inputs are, as shards.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// Plain runs (or `--force`d ones): the `started_at` rule applies.
    Runs,
    /// A complete set of one sharded load that started at one `--start-at`.
    StartedTogether,
    /// A complete set started by hand (no `--start-at`): the `started_at` rule applies.
    ByHand,
}

/// Checks a set of shard results: all or none are shards, and then all of one load, every
/// index once, none late.
pub(super) fn check(inputs: &[(String, RunResult)]) -> Result<Kind, MergeError> {
    let shards: Vec<(&String, &volley_model::result::ShardInfo)> = inputs
        .iter()
        .filter_map(|(p, r)| {
            r.shard
                .as_ref()
                .filter(|s| s.count > 1 || s.start_at.is_some())
                .map(|s| (p, s))
        })
        .collect();
    if shards.is_empty() {
        return Ok(Kind::Runs);
    }
    let err = |path: &str, message: String| MergeError::Input {
        path: path.to_string(),
        message,
    };
    if shards.len() != inputs.len() {
        let plain: Vec<&str> = inputs
            .iter()
            .filter(|(_, r)| r.shard.is_none())
            .map(|(p, _)| p.as_str())
            .collect();
        return Err(err(
            plain[0],
            format!(
                "not a shard (no --shard), merged with shards of a sharded load: {}",
                plain.join(", ")
            ),
        ));
    }
    let (p0, s0) = shards[0];
    for (p, s) in &shards[1..] {
        if s.config_hash != s0.config_hash || s.count != s0.count {
            return Err(err(
                p,
                format!(
                    "shard {}/{} of load {} does not belong with {p0} (shard {}/{} of load {}): the shards of one load share their config hash and count",
                    s.index, s.count, s.config_hash, s0.index, s0.count, s0.config_hash
                ),
            ));
        }
        if s.start_at != s0.start_at {
            return Err(err(
                p,
                format!(
                    "started at {} but {p0} at {}: shards of one run share --start-at",
                    s.start_at.as_deref().unwrap_or("(no --start-at)"),
                    s0.start_at.as_deref().unwrap_or("(no --start-at)")
                ),
            ));
        }
    }
    let mut by_index: BTreeMap<u64, &String> = BTreeMap::new();
    for (p, s) in &shards {
        if let Some(other) = by_index.insert(s.index, p) {
            return Err(err(
                p,
                format!(
                    "shard {}/{} is also {other}: each shard may be given once",
                    s.index, s.count
                ),
            ));
        }
    }
    let missing: Vec<String> = (0..s0.count)
        .filter(|i| !by_index.contains_key(i))
        .map(|i| i.to_string())
        .collect();
    if !missing.is_empty() {
        return Err(err(
            p0,
            format!(
                "incomplete: {} of {} shards given; missing shard{} {} (a partial merge would not be the load that ran)",
                by_index.len(),
                s0.count,
                if missing.len() == 1 { "" } else { "s" },
                missing.join(", ")
            ),
        ));
    }
    for (p, s) in &shards {
        if let (Some(late), Some(max)) = (s.start_late_us, s.max_late_us) {
            if late > max as i64 {
                return Err(err(
                    p,
                    format!(
                        "shard {} started {:.1} ms late, more than its --max-late {:.0} ms",
                        s.index,
                        late as f64 / 1e3,
                        max as f64 / 1e3
                    ),
                ));
            }
        }
    }
    Ok(if s0.start_at.is_some() {
        Kind::StartedTogether
    } else {
        Kind::ByHand
    })
}

#[cfg(test)]
mod tests {
    use super::super::merge;
    use super::super::test_shards::{shard, T0};
    use super::*;
    use volley_model::result::ShardInfo;

    /// Shard `index` of `count` of load `hash`, started at one --start-at, `late_ms` late.
    fn of(index: u64, count: u64, hash: &str, late_ms: i64) -> (String, RunResult) {
        let mut r = shard(T0 + late_ms * 1000, &[100, 200]);
        r.shard = Some(ShardInfo {
            index,
            count,
            start_at: Some("2026-11-25T12:00:00Z".into()),
            config_hash: hash.into(),
            clock_maxerror_us: Some(2_000),
            clock_synchronised: Some(true),
            clock_budget_us: Some(10_000),
            start_late_us: Some(late_ms * 1000),
            max_late_us: Some(100_000),
        });
        (format!("s{index}.json"), r)
    }

    fn error(inputs: &[(String, RunResult)]) -> String {
        merge(inputs, vec![], false).unwrap_err().to_string()
    }

    #[test]
    fn a_complete_set_started_together_merges_past_the_10_ms_rule() {
        // 40 ms apart: refused for plain runs, fine for shards within their --max-late.
        let set = [of(0, 3, "abc", 0), of(1, 3, "abc", 40), of(2, 3, "abc", 5)];
        assert_eq!(check(&set).unwrap(), Kind::StartedTogether);
        let m = merge(&set, vec![], false).unwrap();
        assert_eq!(m.requests.completed, 6);
        assert_eq!(m.shards.len(), 3);
        assert_eq!(m.shards[1].index, Some(1));
        assert_eq!(m.shards[1].start_late_us, Some(40_000));
        assert!(m.shard.is_none());
        // The whole load they were cut from, whose id each shard carries (and a single
        // process of that load has): not a hash of three equal ids.
        assert_eq!(m.load_id.as_deref(), Some("abc"));
    }

    #[test]
    fn incomplete_duplicated_mismatched_and_late_sets_are_refused() {
        let e = error(&[of(0, 3, "abc", 0), of(2, 3, "abc", 0)]);
        assert!(
            e.contains("incomplete: 2 of 3") && e.contains("missing shard 1"),
            "{e}"
        );
        let e = error(&[of(0, 2, "abc", 0), of(0, 2, "abc", 0), of(1, 2, "abc", 0)]);
        assert!(e.contains("shard 0/2 is also s0.json"), "{e}");
        let e = error(&[of(0, 2, "abc", 0), of(1, 2, "xyz", 0)]);
        assert!(e.contains("does not belong") && e.contains("xyz"), "{e}");
        let e = error(&[of(0, 2, "abc", 0), of(1, 3, "abc", 0)]);
        assert!(e.contains("does not belong"), "{e}");
        let (p, mut late) = of(1, 2, "abc", 0);
        late.shard.as_mut().unwrap().start_late_us = Some(250_000);
        let e = error(&[of(0, 2, "abc", 0), (p, late)]);
        assert!(
            e.contains("started 250.0 ms late") && e.contains("--max-late 100 ms"),
            "{e}"
        );
        let (p, mut other) = of(1, 2, "abc", 0);
        other.shard.as_mut().unwrap().start_at = Some("2026-11-25T13:00:00Z".into());
        let e = error(&[of(0, 2, "abc", 0), (p, other)]);
        assert!(e.contains("share --start-at"), "{e}");
        // A plain run among shards.
        let e = error(&[of(0, 2, "abc", 0), ("plain.json".into(), shard(T0, &[1]))]);
        assert!(
            e.starts_with("plain.json") && e.contains("not a shard"),
            "{e}"
        );
    }
}

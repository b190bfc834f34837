//! What cannot be merged at all (docs/contract.md, "Merging shards", refusals): shards of
//! different targets or load modes are not one load, a file given twice would count double, and
//! shards that did not start together cannot be aligned second by second unless `--force`
//! accepts the error. Inputs that are not RunResults are refused as they are read
//! (`read_shard`).

use std::path::{Path, PathBuf};

use super::{parse_started_at, MergeError, MAX_START_SPREAD_US};
use volley_model::result::RunResult;

/// When the shards started, relative to the first to start.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Starts {
    /// Each shard's start in seconds after the earliest, in the order given.
    pub offsets_s: Vec<f64>,
    /// The shard that started first (the first given among equals).
    pub earliest: usize,
    /// The latest start minus the earliest, microseconds.
    pub spread_us: i64,
}

/// Refuses shards that are not of one load (checked in this order: none, targets, modes,
/// unreadable `started_at`, start spread without `force`); else when each started.
pub(super) fn check(inputs: &[(String, RunResult)], force: bool) -> Result<Starts, MergeError> {
    let Some((_, first)) = inputs.first() else {
        return Err(MergeError::Input {
            path: String::new(),
            message: "no shard given".into(),
        });
    };
    same_target(inputs, first)?;
    same_mode(inputs, first)?;
    let starts = starts(inputs)?;
    if starts.spread_us >= MAX_START_SPREAD_US && !force {
        return Err(MergeError::Start {
            spread_ms: starts.spread_us as f64 / 1000.0,
            list: inputs
                .iter()
                .map(|(p, r)| format!("{p} ({})", r.started_at))
                .collect::<Vec<_>>()
                .join(", "),
        });
    }
    Ok(starts)
}

/// Refuses `path` when it names a file already in `seen` (under another name too): that shard
/// would count double. Otherwise adds it to `seen`.
pub(super) fn given_once(seen: &mut Vec<PathBuf>, path: &Path) -> Result<(), MergeError> {
    let canonical = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if seen.contains(&canonical) {
        return Err(MergeError::Input {
            path: path.display().to_string(),
            message: "given twice (a shard would count double)".into(),
        });
    }
    seen.push(canonical);
    Ok(())
}

/// `path: what`, each file: a refusal shows what differs, file by file.
fn listing(inputs: &[(String, RunResult)], what: impl Fn(&RunResult) -> String) -> String {
    inputs
        .iter()
        .map(|(p, r)| format!("{p}: {}", what(r)))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The method and the URL's path and query: what must match for shards to be one load (the
/// host may differ: shards can load a server through different addresses).
fn target_key(r: &RunResult) -> (String, String) {
    let path = volley_config::parse_url(&r.target.url)
        .map(|t| t.path)
        .unwrap_or_else(|_| r.target.url.clone());
    (r.target.method.to_ascii_uppercase(), path)
}

fn same_target(inputs: &[(String, RunResult)], first: &RunResult) -> Result<(), MergeError> {
    if inputs
        .iter()
        .any(|(_, r)| target_key(r) != target_key(first))
    {
        return Err(MergeError::Target {
            list: listing(inputs, |r| {
                let (m, p) = target_key(r);
                format!("{m} {p}")
            }),
        });
    }
    Ok(())
}

fn same_mode(inputs: &[(String, RunResult)], first: &RunResult) -> Result<(), MergeError> {
    if inputs.iter().any(|(_, r)| r.load.mode != first.load.mode) {
        return Err(MergeError::Mode {
            list: listing(inputs, |r| r.load.mode.to_string()),
        });
    }
    Ok(())
}

/// Each shard's `started_at`, relative to the earliest; a file whose `started_at` cannot be
/// read is refused.
fn starts(inputs: &[(String, RunResult)]) -> Result<Starts, MergeError> {
    let starts: Vec<i64> = inputs
        .iter()
        .map(|(p, r)| {
            parse_started_at(&r.started_at).map_err(|m| MergeError::Input {
                path: p.clone(),
                message: m,
            })
        })
        .collect::<Result<_, _>>()?;
    let t0 = *starts.iter().min().expect("at least one shard");
    let spread_us = starts.iter().max().expect("at least one shard") - t0;
    let earliest = starts
        .iter()
        .position(|&s| s == t0)
        .expect("the minimum is one of them");
    let offsets_s = starts.iter().map(|s| (s - t0) as f64 / 1e6).collect();
    Ok(Starts {
        offsets_s,
        earliest,
        spread_us,
    })
}

#[cfg(test)]
mod tests {
    use super::super::merge;
    use super::super::test_shards::{shard, T0};
    use super::*;
    use volley_model::result::Mode;

    #[test]
    fn refusals_name_the_files() {
        let a = shard(T0, &[100]);
        let late = shard(T0 + 10_000, &[100]);
        let e = merge(
            &[
                ("a.json".into(), a.clone()),
                ("late.json".into(), late.clone()),
            ],
            vec![],
            false,
        )
        .unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, MergeError::Start { .. }), "{msg}");
        assert!(msg.contains("a.json") && msg.contains("late.json") && msg.contains("10.0 ms"));
        assert!(merge(
            &[("a.json".into(), a.clone()), ("late.json".into(), late)],
            vec![],
            true
        )
        .is_ok());
        let just_under = shard(T0 + 9_999, &[100]);
        assert!(merge(
            &[("a.json".into(), a.clone()), ("b.json".into(), just_under)],
            vec![],
            false
        )
        .is_ok());
        let mut other = shard(T0, &[100]);
        other.target.url = "http://10.0.0.2:8080/hello".into();
        let e = merge(
            &[("a.json".into(), a.clone()), ("o.json".into(), other)],
            vec![],
            true,
        )
        .unwrap_err();
        assert!(matches!(e, MergeError::Target { .. }));
        assert!(e.to_string().contains("o.json: GET /hello"), "{e}");
        let mut open = shard(T0, &[100]);
        open.load.mode = Mode::Open;
        let e = merge(
            &[("a.json".into(), a), ("o.json".into(), open)],
            vec![],
            true,
        )
        .unwrap_err();
        assert!(matches!(e, MergeError::Mode { .. }), "{e}");
    }
}

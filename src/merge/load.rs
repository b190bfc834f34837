//! The load block (docs/contract.md, "Merging shards", counters): what each shard carried adds
//! up (connections, threads, rates, users, requests, each stage's users); the settings are the
//! first shard's, with a warning where shards disagree, since one value cannot describe them
//! all.

use super::round;
use crate::result::{LoadInfo, RunResult, StageInfo, Warning};

/// The merged load of `rs` (not empty), warning about settings the shards disagree on.
pub(super) fn merge(rs: &[&RunResult], warnings: &mut Vec<Warning>) -> LoadInfo {
    for what in settings_that_differ(rs) {
        warnings.push(Warning::shards_differ(what));
    }
    let stages = stages(rs, warnings);
    let l0 = &rs[0].load;
    let loads = rs.iter().map(|r| &r.load);
    LoadInfo {
        mode: l0.mode,
        connections: loads.clone().map(|l| l.connections).sum(),
        threads: loads.clone().map(|l| l.threads).sum(),
        rate_rps: sum_some(loads.clone().map(|l| l.rate_rps)).map(|v| round(v, 6)),
        arrivals: l0.arrivals,
        seed: if loads.clone().all(|l| l.seed == l0.seed) {
            l0.seed
        } else {
            None
        },
        duration_s: loads.clone().filter_map(|l| l.duration_s).reduce(f64::max),
        requests: if loads.clone().all(|l| l.requests.is_some()) {
            Some(loads.clone().filter_map(|l| l.requests).sum())
        } else {
            None
        },
        warmup_s: loads.clone().map(|l| l.warmup_s).fold(0.0, f64::max),
        keepalive: l0.keepalive,
        pipeline: l0.pipeline,
        timeout_s: l0.timeout_s,
        users: sum_some(loads.clone().map(|l| l.users)),
        spawn_rate: sum_some(loads.clone().map(|l| l.spawn_rate)).map(|v| round(v, 6)),
        stages,
        think_time_s: l0.think_time_s,
    }
}

/// The settings (as the user knows them) on which some shard differs from the first, in the
/// order the warnings are given.
fn settings_that_differ(rs: &[&RunResult]) -> Vec<&'static str> {
    let first = rs[0];
    let l0 = &first.load;
    let loads = rs.iter().map(|r| &r.load);
    [
        (
            "keep-alive",
            loads.clone().any(|l| l.keepalive != l0.keepalive),
        ),
        (
            "--pipeline",
            loads.clone().any(|l| l.pipeline != l0.pipeline),
        ),
        (
            "--arrivals",
            loads.clone().any(|l| l.arrivals != l0.arrivals),
        ),
        (
            "--timeout",
            loads.clone().any(|l| l.timeout_s != l0.timeout_s),
        ),
        (
            "--think-time",
            loads.clone().any(|l| l.think_time_s != l0.think_time_s),
        ),
        ("-d", loads.clone().any(|l| l.duration_s != l0.duration_s)),
        (
            "the request body",
            rs.iter()
                .any(|r| r.target.body_bytes != first.target.body_bytes),
        ),
        (
            "target.addr",
            rs.iter().any(|r| r.target.addr != first.target.addr),
        ),
    ]
    .into_iter()
    .filter_map(|(what, differs)| differs.then_some(what))
    .collect()
}

/// The first shard's stages, with the users of every shard added when all have the same stage
/// lengths (else with a warning: users at different times do not add up).
fn stages(rs: &[&RunResult], warnings: &mut Vec<Warning>) -> Option<Vec<StageInfo>> {
    let loads = rs.iter().map(|r| &r.load);
    match rs[0].load.stages.as_ref() {
        Some(st0)
            if loads.clone().all(|l| {
                l.stages.as_ref().is_some_and(|s| {
                    s.len() == st0.len()
                        && s.iter().zip(st0).all(|(a, b)| a.duration_s == b.duration_s)
                })
            }) =>
        {
            Some(
                st0.iter()
                    .enumerate()
                    .map(|(i, s)| StageInfo {
                        duration_s: s.duration_s,
                        users: loads
                            .clone()
                            .filter_map(|l| l.stages.as_ref().map(|st| st[i].users))
                            .sum(),
                    })
                    .collect(),
            )
        }
        Some(st0) => {
            warnings.push(Warning::stages_differ());
            Some(st0.clone())
        }
        None => None,
    }
}

/// Sums of the optional values present, `None` when there are none.
fn sum_some<T: std::iter::Sum<T> + Copy>(v: impl Iterator<Item = Option<T>> + Clone) -> Option<T> {
    v.clone().any(|x| x.is_some()).then(|| v.flatten().sum())
}


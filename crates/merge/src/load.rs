//! The load block (docs/contract.md, "Merging shards", counters): what each shard carried adds
//! up (connections, threads, rates, users, requests, each stage's users); the settings are the
//! first shard's, with a warning where shards disagree, since one value cannot describe them
//! all.

use super::round;
use volley_model::result::{LoadInfo, RunResult, StageInfo, Warning};

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
        max_connections: sum_some(loads.clone().map(|l| l.max_connections)),
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
        streams: l0.streams,
        timeout_s: l0.timeout_s,
        users: sum_some(loads.clone().map(|l| l.users)),
        spawn_rate: sum_some(loads.clone().map(|l| l.spawn_rate)).map(|v| round(v, 6)),
        stages,
        think_time_s: l0.think_time_s,
        // Every shard records the whole load's stages.
        rate_stages: l0.rate_stages.clone(),
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
        ("--streams", loads.clone().any(|l| l.streams != l0.streams)),
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

#[cfg(test)]
mod tests {
    use super::super::test_shards::{shard, T0};
    use super::*;
    use volley_model::result::Mode;

    fn ramp(users: &[u64], durations: &[f64]) -> RunResult {
        let mut r = shard(T0, &[100]);
        r.load.mode = Mode::Ramp;
        r.load.users = users.iter().copied().max();
        r.load.stages = Some(
            users
                .iter()
                .zip(durations)
                .map(|(&users, &duration_s)| StageInfo { duration_s, users })
                .collect(),
        );
        r
    }

    #[test]
    fn what_shards_carried_adds_up_and_settings_are_the_first_shards() {
        let a = ramp(&[2, 4], &[1.0, 2.0]);
        let mut b = ramp(&[1, 3], &[1.0, 2.0]);
        b.load.pipeline = 2;
        b.target.addr = "10.0.0.2:8080".into();
        let mut warnings = Vec::new();
        let l = merge(&[&a, &b], &mut warnings);
        assert_eq!((l.connections, l.threads, l.users), (4, 2, Some(7)));
        let users: Vec<u64> = l.stages.unwrap().iter().map(|s| s.users).collect();
        assert_eq!(users, vec![3, 7], "stages of equal lengths: users add");
        assert_eq!(l.pipeline, 1, "the first shard's");
        let texts: Vec<&str> = warnings.iter().map(|w| w.text()).collect();
        assert_eq!(
            texts,
            vec![
                "the shards differ in --pipeline; the merged load shows the first shard's",
                "the shards differ in target.addr; the merged load shows the first shard's",
            ]
        );

        let c = ramp(&[5], &[3.0]);
        let mut warnings = Vec::new();
        let l = merge(&[&a, &c], &mut warnings);
        assert_eq!(
            l.stages, a.load.stages,
            "stages that differ: the first shard's"
        );
        assert!(warnings[0]
            .text()
            .starts_with("the shards' --stages differ"));
    }
}

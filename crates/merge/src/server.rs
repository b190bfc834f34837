//! The server monitor block (docs/contract.md, "Merging shards", server): one monitor is kept,
//! several are not, since their process trees, samples and peaks cannot be added into one.

use super::round;
use volley_model::result::{PerRequest, RunResult, ServerInfo, Warning};

/// The one shard's monitor, with its `per_request` figures over every shard's `completed`
/// responses when all shards loaded the same address; null when no shard or several shards
/// monitored a server. Each case warns but the first.
pub(super) fn merge(
    inputs: &[(String, RunResult)],
    completed: u64,
    warnings: &mut Vec<Warning>,
) -> Option<ServerInfo> {
    let monitored: Vec<(&String, &ServerInfo)> = inputs
        .iter()
        .filter_map(|(p, r)| r.server.as_ref().map(|s| (p, s)))
        .collect();
    match monitored.as_slice() {
        [] => None,
        [(path, s)] => {
            let mut s = (*s).clone();
            let addr = &inputs[0].1.target.addr;
            if inputs.iter().all(|(_, r)| &r.target.addr == addr) {
                // Every shard loaded the server that shard monitored: its costs are shared by
                // all their requests.
                s.per_request = per_request(&s, completed);
                warnings.push(Warning::server_from_one_shard(path, addr));
            } else {
                warnings.push(Warning::server_from_one_shard_elsewhere(path));
            }
            Some(s)
        }
        many => {
            let paths: Vec<&str> = many.iter().map(|(p, _)| p.as_str()).collect();
            warnings.push(Warning::server_not_merged(&paths));
            None
        }
    }
}

/// The server's window totals divided by `completed` responses (all null when none).
fn per_request(s: &ServerInfo, completed: u64) -> PerRequest {
    let per = |v: f64| (completed > 0).then(|| round(v / completed as f64, 3));
    let ctx = s.ctx_switches_voluntary + s.ctx_switches_involuntary;
    PerRequest {
        cpu_us: per((s.cpu_user_s + s.cpu_sys_s) * 1e6),
        user_us: per(s.cpu_user_s * 1e6),
        sys_us: per(s.cpu_sys_s * 1e6),
        ctx_switches: per(ctx as f64),
        syscalls: s.syscalls.and_then(|v| per(v as f64)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::merge;
    use super::super::test_shards::{shard, T0};
    use super::*;

    #[test]
    fn one_server_monitor_is_kept_several_are_not() {
        let mut a = shard(T0, &[100, 200]);
        let b = shard(T0 + 1_000, &[100, 200]);
        a.server = Some(ServerInfo {
            pids: vec![42],
            cpu_user_s: 0.003,
            cpu_sys_s: 0.001,
            ctx_switches_voluntary: 6,
            ctx_switches_involuntary: 2,
            per_request: PerRequest {
                cpu_us: Some(2000.0),
                ..PerRequest::default()
            },
            ..ServerInfo::default()
        });
        let m = merge(
            &[("a.json".into(), a.clone()), ("b.json".into(), b)],
            vec![],
            false,
        )
        .unwrap();
        let s = m.server.as_ref().expect("one monitor: kept");
        assert_eq!(s.pids, vec![42]);
        // 4 ms of CPU over the 4 responses of both shards, which loaded the same address.
        assert_eq!(s.per_request.cpu_us, Some(1000.0));
        assert_eq!(s.per_request.ctx_switches, Some(2.0));
        assert!(m.warnings.iter().any(|w| w
            .text()
            .starts_with("server: monitored by one shard (a.json)")));
        let m = merge(
            &[("a.json".into(), a.clone()), ("a2.json".into(), a)],
            vec![],
            false,
        )
        .unwrap();
        assert!(m.server.is_none());
        assert!(m
            .warnings
            .iter()
            .any(|w| w.text().starts_with("server is null: 2 shards")));
    }
}

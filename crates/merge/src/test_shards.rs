//! Shards for the unit tests of the merge: small closed-loop RunResults whose numbers are easy
//! to add up by hand.

use volley_model::result::*;
use volley_model::stats::histogram::{encode, new_hist, Hist};
use volley_model::stats::{ErrorCounts, Percentiles, TimePoint};

use super::format_started_at;

/// A start time for the shards of a test (November 2023), in µs since the Unix epoch.
pub(crate) const T0: i64 = 1_700_000_000_000_000;

/// A histogram of `values`, in µs.
pub(crate) fn hist(values: &[u64]) -> Hist {
    let mut h = new_hist();
    for v in values {
        h.record(*v).unwrap();
    }
    h
}

/// One full second of a series with `completed` responses.
pub(crate) fn point(t_s: u64, completed: u64, p50: Option<u64>, max: Option<u64>) -> TimePoint {
    TimePoint {
        t_s,
        interval_s: 1.0,
        sent: completed,
        completed,
        errors: 0,
        latency_p50_us: p50,
        latency_p99_us: p50,
        latency_max_us: max,
        users: None,
        target: None,
    }
}

/// A closed-loop shard of `completed` responses with latencies `values`, started at
/// `start_us`, 2 seconds long.
pub fn shard(start_us: i64, values: &[u64]) -> RunResult {
    let h = hist(values);
    let n = values.len() as u64;
    RunResult {
        schema: RUN_SCHEMA.into(),
        volley_version: "0.1.0".into(),
        argv: vec!["volley".into(), "run".into()],
        started_at: format_started_at(start_us),
        interrupted: false,
        env: Env {
            cpu_model: None,
            cores: 2,
            kernel: None,
            pinning: Pinning {
                client_cpus: "0-1".into(),
                server_cpus: None,
            },
        },
        target: TargetInfo {
            url: "http://127.0.0.1:8080/".into(),
            addr: "127.0.0.1:8080".into(),
            method: "GET".into(),
            body_bytes: 0,
            protocol: Some("http/1.1".into()),
            h2: None,
            quic: None,
            websocket: None,
            grpc: None,
            tls: None,
            unix_socket: None,
            proxy: None,
            requests_file: None,
        },
        load: LoadInfo {
            mode: Mode::Closed,
            connections: 2,
            max_connections: None,
            threads: 1,
            rate_rps: None,
            arrivals: None,
            seed: None,
            duration_s: Some(2.0),
            requests: None,
            warmup_s: 0.0,
            keepalive: true,
            pipeline: 1,
            streams: 1,
            timeout_s: 2.0,
            users: None,
            spawn_rate: None,
            stages: None,
            think_time_s: 0.0,
            rate_stages: None,
        },
        load_id: None,
        elapsed_s: 2.0,
        throughput_rps: n as f64 / 2.0,
        achieved_rps: None,
        requests: Requests {
            sent: n,
            completed: n,
            errors: 0,
            unfinished: 0,
            unsent: 0,
            failed: 0,
            failed_checks: None,
            skipped: None,
        },
        bytes: Bytes {
            sent: 10 * n,
            received: 20 * n,
        },
        status_codes: [("200".to_string(), n)].into_iter().collect(),
        errors: ErrorCounts::default(),
        connections: Connections {
            opened: 2,
            closed_by_server: 0,
            unsolicited: 0,
            max_open: None,
        },
        latency_us: Percentiles::of(&h),
        latency_lower_bound: false,
        service_time_us: Percentiles::of(&h),
        schedule_lag_us: None,
        setup: SetupTimes::default(),
        latency_hdr: encode(&h),
        service_time_hdr: encode(&h),
        timeseries: vec![
            point(0, n / 2, Some(values[0]), Some(h.max())),
            point(1, n - n / 2, Some(values[0]), Some(h.max())),
        ],
        client: ClientInfo {
            cpu_user_s: 0.5,
            cpu_sys_s: 0.25,
            rss_max_bytes: 1000,
            cpu_pct_max: 40.0,
            saturated: false,
            saturated_fraction: 0.0,
            io: Some(IoBackend::Epoll),
            starved: false,
            starved_fraction: 0.0,
            wait_pct_max: 0.0,
            busiest_others: Vec::new(),
        },
        machine: Machine {
            samples: Vec::new(),
        },
        server: None,
        warmup: None,
        warnings: vec!["closed loop".into()],
        thresholds: Vec::new(),
        shards: Vec::new(),
        endpoints: Vec::new(),
        journey: None,
        checks: Default::default(),
        shard: None,
    }
}

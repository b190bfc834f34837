//! Coordinated omission: against a server that stalls every response for 500 ms every 5 s,
//! an open-loop run at 1000 req/s must report the stall in the corrected latency (p99 near
//! 450 ms: 10% of requests fall in a pause, waiting uniformly 0-500 ms) while the service
//! time, measured from the actual write, stays far below.

use crate::common;

use std::time::Duration;

use common::*;

#[test]
fn stalls_show_in_corrected_latency_not_in_service_time() {
    // Pauses at 2 s and 7 s: both inside the 10 s window, none at its end.
    let s = stalling_from(
        Duration::from_secs(2),
        Duration::from_secs(5),
        Duration::from_millis(500),
    );
    let (code, j, stderr) = volley_json(
        &[
            "run",
            &s.url("/"),
            "-R",
            "1000",
            "-c",
            "20",
            "-t",
            "1",
            "-d",
            "10s",
        ],
        Duration::from_secs(40),
    );
    assert_eq!(code, 0, "{stderr}");
    assert_invariant(&j);
    let lat = &j["latency_us"];
    let svc = &j["service_time_us"];
    let p99 = lat["p99"].as_u64().unwrap();
    let svc_p99 = svc["p99"].as_u64().unwrap();
    eprintln!(
        "corrected p50 {} p99 {} max {}; service p50 {} p99 {}",
        lat["p50"], p99, lat["max"], svc["p50"], svc_p99
    );
    assert!(
        (380_000..=520_000).contains(&p99),
        "corrected p99 {p99} µs, expected about 450 ms"
    );
    assert!(
        svc_p99 < 100_000,
        "service p99 {svc_p99} µs should be far below the stall"
    );
    assert!(lat["max"].as_u64().unwrap() >= 450_000);
    // The rate was held: ~10,000 requests, none lost.
    let completed = j["requests"]["completed"].as_u64().unwrap();
    assert!(
        (9_900..=10_010).contains(&completed),
        "completed {completed}"
    );
    assert_eq!(j["requests"]["unsent"], 0);
    // Requests waited for a free connection during the stall: that wait is in the corrected
    // latency, not in the pacer's own lag, which stays far below the stall.
    let lag_p99 = j["schedule_lag_us"]["p99"].as_u64().unwrap();
    assert!(lag_p99 < 100_000, "schedule lag p99 {lag_p99} µs");
    assert_eq!(s.requests(), j["requests"]["sent"].as_u64().unwrap());
    // The time series has every second, and the stalled seconds show it.
    let ts = j["timeseries"].as_array().unwrap();
    assert!(ts.len() >= 10, "{} buckets", ts.len());
    let worst = ts
        .iter()
        .filter_map(|p| p["latency_max_us"].as_u64())
        .max()
        .unwrap();
    assert!(worst >= 400_000);
}

#[test]
fn closed_loop_hides_the_same_stall() {
    // The same server in closed loop: every connection simply waits, so few requests are
    // slow, and the summary warns that closed-loop latency hides queueing.
    let s = stalling(Duration::from_secs(5), Duration::from_millis(500));
    let (_, j, stderr) = volley_json(
        &["run", &s.url("/"), "-c", "20", "-t", "1", "-d", "6s"],
        Duration::from_secs(40),
    );
    let p99 = j["latency_us"]["p99"].as_u64().unwrap();
    assert!(p99 < 100_000, "closed-loop p99 {p99}");
    assert!(stderr.contains("coordinated omission"), "{stderr}");
    assert!(j["schedule_lag_us"].is_null());
}

#[test]
fn the_timerfd_fallback_paces_too() {
    // Without epoll_pwait2 the due times go through a timerfd; the rate must hold the same.
    let s = normal();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            &s.url("/"),
            "-R",
            "400",
            "-n",
            "200",
            "-c",
            "4",
            "-t",
            "1",
            "--quiet",
            "--json",
            "-",
        ])
        .env("VOLLEY_EPOLL_WAIT", "1")
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["requests"]["completed"], 200);
    let el = j["elapsed_s"].as_f64().unwrap();
    assert!(
        (0.45..0.75).contains(&el),
        "200 requests at 400/s took {el} s"
    );
}

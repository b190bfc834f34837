//! Numbers that must not mislead: an open loop the server cannot keep up with (unsent requests
//! in the corrected latencies at their lower bounds, the shortfall as a headline and exit 1,
//! `--allow-shortfall`, `--max-connections`), and responses that all failed (a headline,
//! `requests.failed`, the `failed<1%` threshold).

use crate::common;

use std::time::Duration;

use common::*;
use volley::stats::histogram::decode;

/// Answers every request after `delay`: one connection carries 1/delay requests a second.
fn slow(delay: Duration) -> TestServer {
    spawn(move |mut c, _| {
        while c.read_request() {
            std::thread::sleep(delay);
            if !c.write(OK) {
                return;
            }
        }
    })
}

const LIMIT: Duration = Duration::from_secs(30);

#[test]
fn unsent_requests_are_lower_bounds_in_the_corrected_latency() {
    // 2 connections × 10 req/s each = 20 req/s of capacity for 100 req/s over 2 s.
    let s = slow(Duration::from_millis(100));
    let url = s.url("/");
    let args = ["run", &url, "-R", "100", "-c", "2", "-t", "1", "-d", "2s"];
    let (code, j, stderr) = volley_json(&args, LIMIT);
    assert_eq!(
        code, 1,
        "a shortfall fails the run like a broken threshold\n{stderr}"
    );
    assert_invariant(&j);
    let completed = j["requests"]["completed"].as_u64().unwrap();
    let unsent = j["requests"]["unsent"].as_u64().unwrap();
    assert!((30..=50).contains(&completed), "completed {completed}");
    assert!(unsent >= 140, "unsent {unsent}");
    assert_eq!(j["latency_lower_bound"], true);
    // Every due request is in the corrected histogram: the sent ones measured, the unsent
    // ones at their lower bound (end of window − due time); the service time has only the
    // measured ones.
    let latency = decode(j["latency_hdr"].as_str().unwrap()).unwrap();
    let service = decode(j["service_time_hdr"].as_str().unwrap()).unwrap();
    assert_eq!(latency.len(), completed + unsent);
    assert_eq!(service.len(), completed);
    // Requests due early in the window and never sent waited well over a second; their lower
    // bounds spread from ~0 to ~1.6 s, so the median is far above the service time.
    let p50 = j["latency_us"]["p50"].as_u64().unwrap();
    assert!(p50 > 500_000, "corrected p50 {p50} µs");
    let achieved = j["achieved_rps"].as_f64().unwrap();
    assert!((15.0..=25.0).contains(&achieved), "achieved {achieved}");
    // The headline comes before the numbers and says what to do.
    let head = stderr.split("Throughput").next().unwrap();
    assert!(
        head.contains("!! target rate not reached:") && head.contains("of 100.0 req/s sent"),
        "{stderr}"
    );
    assert!(head.contains("--max-connections"), "{stderr}");
    assert!(
        head.contains("!! corrected percentiles are lower bounds"),
        "{stderr}"
    );

    let mut accepted = args.to_vec();
    accepted.push("--allow-shortfall");
    let (code, _, stderr) = volley_json(&accepted, LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("(accepted with --allow-shortfall)"),
        "{stderr}"
    );
}

#[test]
fn max_connections_opens_what_the_rate_needs() {
    let s = slow(Duration::from_millis(100));
    let url = s.url("/");
    let (code, j, stderr) = volley_json(
        &[
            "run",
            &url,
            "-R",
            "100",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "2s",
            "--max-connections",
            "40",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{stderr}");
    assert_invariant(&j);
    let peak = j["connections"]["max_open"].as_u64().unwrap();
    // 100 req/s × 100 ms needs about 10 connections at once.
    assert!((8..=20).contains(&peak), "max_open {peak}");
    assert_eq!(j["load"]["max_connections"], 40);
    assert_eq!(j["latency_lower_bound"], false);
    let achieved = j["achieved_rps"].as_f64().unwrap();
    assert!(achieved >= 99.0, "achieved {achieved}");
    assert!(!stderr.contains("target rate not reached"), "{stderr}");

    // Only where it means something.
    let out = volley(&["run", &url, "-c", "2", "--max-connections", "4"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--max-connections") && err.contains("-R"),
        "{err}"
    );
    let out = volley(
        &["run", &url, "-R", "10", "-c", "8", "--max-connections", "4"],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn failed_responses_are_a_headline_and_a_threshold() {
    let s = answering(b"HTTP/1.1 404 Not Found\r\nContent-Length: 1\r\n\r\n.");
    let url = s.url("/nothing");
    let args = ["run", &url, "-c", "2", "-t", "1", "-n", "300"];
    let (code, j, stderr) = volley_json(&args, LIMIT);
    assert_eq!(
        code, 0,
        "no threshold: 4xx alone do not change the exit code\n{stderr}"
    );
    assert_eq!(j["requests"]["failed"], 300);
    assert_eq!(j["requests"]["completed"], 300);
    assert_eq!(
        j["requests"]["errors"], 0,
        "failed responses are not errors"
    );
    let head = stderr.split("Throughput").next().unwrap();
    assert!(head.contains("!! all 300 responses were 404"), "{stderr}");

    let mut gated = args.to_vec();
    gated.extend(["--threshold", "failed<1%"]);
    let (code, j, _) = volley_json(&gated, LIMIT);
    assert_eq!(code, 1);
    assert_eq!(j["thresholds"][0]["actual"], 100.0);
}

#[test]
fn a_few_server_errors_are_a_share_in_the_headline() {
    // Every 10th response is a 503.
    let s = spawn(|mut c, _| {
        let mut n = 0u64;
        while c.read_request() {
            n += 1;
            let reply: &[u8] = if n.is_multiple_of(10) {
                b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 1\r\n\r\n."
            } else {
                OK
            };
            if !c.write(reply) {
                return;
            }
        }
    });
    let url = s.url("/");
    let (code, j, stderr) = volley_json(&["run", &url, "-c", "1", "-n", "200"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["requests"]["failed"], 20);
    assert!(
        stderr.contains("!! 10.0 % of the responses were 5xx (20 of 200)"),
        "{stderr}"
    );
}

/// Picking the address opens no connection: against a server that serves only the first
/// connection it accepts (and resets every later one), `-n 1` gets its response.
#[test]
fn the_address_is_picked_without_a_probe_connection() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut first = true;
        for s in listener.incoming() {
            let Ok(stream) = s else { continue };
            if !first {
                let _ = socket2::SockRef::from(&stream).set_linger(Some(Duration::ZERO));
                continue; // dropped: a reset
            }
            first = false;
            let mut c = ctx(stream);
            std::thread::spawn(move || c.answer_each(OK));
        }
    });
    let url = format!("http://{addr}/");
    let (code, j, stderr) = volley_json(&["run", &url, "-n", "1", "-c", "1"], LIMIT);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(j["requests"]["completed"], 1, "{stderr}");
    assert_eq!(j["errors"]["reset"], 0);
    assert_eq!(j["connections"]["opened"], 1);
}

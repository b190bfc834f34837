//! A/B inside one suite against real servers of known speed: two in-process servers, the second
//! 25 % slower per request, measured in one suite with interleaved repetitions; `volley compare
//! RESULTS --baseline` must call B slower with an interval that holds the true effect.

use crate::common;

use std::time::Duration;

use common::*;

/// Answers each request after `delay` (one connection: 1/delay requests a second at most).
fn taking(delay: Duration) -> TestServer {
    spawn(move |mut c, _| {
        while c.read_request() {
            std::thread::sleep(delay);
            if !c.write(OK) {
                return;
            }
        }
    })
}

#[test]
fn the_slower_of_two_servers_is_called_with_its_interval() {
    let (fast, slow) = (
        taking(Duration::from_millis(4)),
        taking(Duration::from_millis(5)),
    );
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"ab\"\nrepetitions = 5\nduration = \"400ms\"\nbaseline = \"v1\"\n\
         [[server]]\nname = \"v1\"\nurl = \"{}\"\n[[server]]\nname = \"v2\"\nurl = \"{}\"\n\
         [[scenario]]\nname = \"get\"\nconnections = 1\n",
        fast.url("/"),
        slow.url("/")
    );
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = volley(
        &[
            "compare",
            out.to_str().unwrap(),
            "--baseline",
            "v1",
            "--json",
            "-",
        ],
        Duration::from_secs(30),
    );
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let p = &v["pairs"][0];
    assert_eq!(
        (p["a_name"].as_str(), p["b_name"].as_str()),
        (Some("v1"), Some("v2"))
    );
    // Throughput is 1/(delay + overhead): v2 about 20 % lower (4/5), a little less with the
    // overhead both share.
    assert_eq!(p["verdict"], "slower", "{p:#}");
    let (lo, hi) = (
        p["ci_low_pct"].as_f64().unwrap(),
        p["ci_high_pct"].as_f64().unwrap(),
    );
    let true_effect = -20.0 * 4.0 / 4.3; // with ~0.3 ms of overhead per request
    eprintln!(
        "v2 vs v1: effect {:.1} %, 95 % CI {lo:.1}..{hi:.1} %, p {}",
        p["effect_pct"].as_f64().unwrap_or(f64::NAN),
        p["p_value"]
    );
    assert!(
        lo - 3.0 <= true_effect && true_effect <= hi + 3.0,
        "interval {lo:.1}..{hi:.1} % should hold about {true_effect:.1} %: {p:#}"
    );
    assert!(hi < 0.0, "the whole interval is slower: {p:#}");
}

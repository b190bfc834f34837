//! `volley capacity --sweep` end to end against a server of known capacity (K slots × S ms):
//! one run whose rate rises linearly from 0.3 to 1.5 of the capacity, read window by window,
//! must find it within 85–102 %; `--confirm` then narrows its bracket with steps of their own.
//! Every window is a step of phase `sweep` on disk (one RunResult, the sweep's), and the JSON
//! matches the schema. Plus bad input (exit 2, the flag named).

use crate::common;

use std::time::Duration;

use common::capacity::*;
use common::*;
use serde_json::Value;

/// 4 slots × 5 ms: 800 req/s nominal.
const K: usize = 4;
const S_MS: u64 = 5;

/// One sweep of 16 one-second windows from 0.3 to 1.5 of the nominal capacity (60 req/s a
/// window), without the closed loop; `extra` flags added.
fn sweep(out: &std::path::Path, extra: &[&str]) -> (Searched, KnownCapacity) {
    let nominal = K as f64 / S_MS as f64 * 1000.0;
    let (from, to) = (
        (nominal * 0.3).round().to_string(),
        (nominal * 1.5).round().to_string(),
    );
    undisturbed(
        |attempt| {
            let srv = KnownCapacity::start(K, Duration::from_millis(S_MS));
            let mut args = vec![
                "--slo",
                "p99<50ms",
                "--sweep",
                "--start-rate",
                &from,
                "--max-rate",
                &to,
                "--sweep-duration",
                "16s",
                "--no-closed-loop",
                "-c",
                "16",
            ];
            args.extend_from_slice(extra);
            let s = capacity(
                &srv.server.url("/"),
                &out.join(format!("attempt-{attempt}")),
                &args,
            );
            (s, srv)
        },
        // Under 80 % of its capacity this server answers in S: a window there that did not
        // pass (other than a starved one, which the reading leaves out) was a stall of the
        // machine, not the server's answer.
        |s, srv| {
            let c = srv.measured();
            s.steps()
                .iter()
                .find(|w| rate(w) as f64 <= 0.8 * c && !["pass", "machine"].contains(&verdict(w)))
                .map(|w| {
                    format!(
                        "the {} req/s window did not pass ({})",
                        rate(w),
                        w["reason"]
                    )
                })
        },
    )
}

fn windows(s: &Searched) -> Vec<&Value> {
    s.steps().iter().filter(|w| w["phase"] == "sweep").collect()
}

#[test]
fn a_sweep_finds_the_capacity_in_one_run() {
    let _one = one_at_a_time();
    let out = scratch("capacity", "sweep");
    let (s, server) = sweep(&out, &[]);
    eprintln!("{}", s.stderr);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    check_files(&s);
    let sw = &s.json["sweep"];
    assert_eq!(sw["window_s"], 1.0);
    assert_eq!(sw["duration_s"], 16.0);
    assert_eq!(sw["top"], "max_rate");
    assert_eq!(sw["resolution_rps"], 60.0);
    assert!(sw["bias"].as_str().unwrap().contains("high"), "{sw}");
    let ws = windows(&s);
    assert_eq!(ws.len(), 16, "one step per window, and only those");
    assert_eq!(s.steps().len(), 16);
    for (i, w) in ws.iter().enumerate() {
        assert_eq!(w["window"]["start_s"], i as f64);
        assert_eq!(w["path"], sw["path"], "every window is of the sweep's run");
        // The rate rises 60 req/s a second from 240: window i's mean is 240 + 60 (i + ½).
        let mean = 240.0 + 60.0 * (i as f64 + 0.5);
        assert!(
            (w["target_rps"].as_f64().unwrap() - mean).abs() <= 0.5,
            "{w}"
        );
        assert!(
            (w["window"]["due"].as_f64().unwrap() - mean).abs() <= 0.1,
            "{w}"
        );
    }
    let run: Value =
        serde_json::from_str(&std::fs::read_to_string(sw["path"].as_str().unwrap()).unwrap())
            .unwrap();
    assert_eq!(
        run["load"]["rate_stages"][1]["rate_rps"], 1200.0,
        "{}",
        run["load"]
    );
    assert!(
        s.stderr.contains("Sweep: 240 → 1,200 req/s over 16 s"),
        "{}",
        s.stderr
    );
    assert!(
        s.stderr
            .contains("from a sweep of 16 windows (resolution 60 req/s)"),
        "{}",
        s.stderr
    );
    assert!(s.stderr.contains("window at  15 s:"), "{}", s.stderr);
    // The answer is the last window that passed below the knee, where the SLO broke for good.
    let max = s.json["max_rate_rps"].as_f64().expect("a rate found");
    let knee = sw["knee_rps"].as_f64().expect("a knee");
    assert_eq!(s.json["limited_by"], "slo", "{}", s.stderr);
    assert_eq!(s.json["bracket"]["low_rps"], max);
    assert_eq!(s.json["bracket"]["high_rps"], knee);
    assert!(knee > max);
    let after: Vec<&str> = ws
        .iter()
        .filter(|w| w["target_rps"].as_f64().unwrap() >= knee)
        .map(|w| verdict(w))
        .collect();
    assert!(after.iter().all(|v| *v != "pass"), "{after:?}");
    // The bound: within 85–102 % of the true capacity (K over the time a slot was
    // really held).
    let c = server.measured();
    eprintln!("capacity {c:.0} req/s; the sweep found {max} (knee {knee})");
    assert!(
        (c * 0.85..=c * 1.02).contains(&max),
        "found {max} req/s, capacity {c:.0}:\n{}",
        s.stderr
    );
}

#[test]
fn confirm_narrows_the_sweeps_bracket_with_steps_of_their_own() {
    let _one = one_at_a_time();
    let out = scratch("capacity", "sweep-confirm");
    let (s, server) = sweep(&out, &["--confirm", "--repeat", "1", "--precision", "5%"]);
    eprintln!("{}", s.stderr);
    assert_eq!(s.code, Some(0), "{}", s.stderr);
    check_files(&s);
    let steps = s.steps();
    let n = windows(&s).len();
    assert_eq!(n, 16);
    assert!(
        steps[..n].iter().all(|w| w["phase"] == "sweep"),
        "the windows come first"
    );
    let own: Vec<&Value> = steps[n..].iter().collect();
    assert!(
        own.iter().any(|st| st["phase"] == "confirm"),
        "the answer is run again: {own:?}"
    );
    assert!(own
        .iter()
        .all(|st| st["window"].is_null() && st["path"] != s.json["sweep"]["path"]));
    assert!(!s.json["confirmation"].is_null());
    assert!(s.stderr.contains("then "), "{}", s.stderr);
    // Steps of 1 s have the search's own tolerance (tests/slow/capacity.rs).
    let max = s.json["max_rate_rps"].as_f64().expect("a rate found");
    let c = server.measured();
    assert!(
        (c * 0.95 / 1.10..=c * 1.05).contains(&max),
        "found {max} req/s, capacity {c:.0}:\n{}",
        s.stderr
    );
}

#[test]
fn sweep_flags_are_checked() {
    let url = "http://127.0.0.1:9/";
    for (args, named) in [
        (
            &["--sweep", "--sweep-window", "1500ms", "--max-rate", "900"][..],
            "--sweep-window",
        ),
        (
            &["--sweep", "--sweep-duration", "2s", "--max-rate", "900"][..],
            "--sweep-duration",
        ),
        (&["--sweep", "--max-rate", "50"][..], "--max-rate"),
        (&["--sweep", "--no-closed-loop"][..], "--max-rate"),
        (&["--confirm"][..], "--sweep"),
        (&["--sweep-duration", "10s"][..], "--sweep"),
    ] {
        let mut all = vec!["capacity", url, "--slo", "p99<10ms", "--start-rate", "100"];
        all.extend_from_slice(args);
        let o = volley(&all, Duration::from_secs(10));
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(named), "{args:?} names {named}: {e}");
    }
}

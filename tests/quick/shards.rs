//! `--shard I/N` and `--start-at` through the binary on one host (shards sharing its clock:
//! `--clock-budget off`): the shards' shares add up to the whole, start together, carry the
//! whole load's id, and merge exactly; a late shard sends nothing and exits 3; an
//! unsynchronised clock exits 2 before the start; shares too small to split exit 2.

use crate::common;

use std::time::{Duration, SystemTime};

use common::volley;
use serde_json::Value;

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[test]
fn three_shards_started_together_are_one_load() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let dir = tempfile::tempdir().unwrap();
    let at = rfc3339(SystemTime::now() + Duration::from_millis(1500));
    let handles: Vec<_> = (0..3)
        .map(|i| {
            let (url, at) = (url.clone(), at.clone());
            let json = dir.path().join(format!("s{i}.json"));
            std::thread::spawn(move || {
                let o = volley(
                    &[
                        "run",
                        &url,
                        "-R",
                        "1500",
                        "-c",
                        "7",
                        "-d",
                        "2s",
                        "--shard",
                        &format!("{i}/3"),
                        "--start-at",
                        &at,
                        "--clock-budget",
                        "off",
                        "-q",
                        "--json",
                        json.to_str().unwrap(),
                    ],
                    Duration::from_secs(30),
                );
                (o, json)
            })
        })
        .collect();
    let mut files = Vec::new();
    let mut shards = Vec::new();
    for h in handles {
        let (o, json) = h.join().unwrap();
        assert_eq!(
            o.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&o.stderr)
        );
        let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        files.push(json.to_str().unwrap().to_string());
        shards.push(j);
    }
    // Shares: 7 connections as 2/3/2 (k6's rule), 1,500 req/s as 500 each.
    let conns: Vec<u64> = shards
        .iter()
        .map(|j| j["load"]["connections"].as_u64().unwrap())
        .collect();
    assert_eq!(conns, [2, 3, 2]);
    for (i, j) in shards.iter().enumerate() {
        assert_eq!(j["load"]["rate_rps"].as_f64(), Some(500.0));
        // Its share of the schedule exactly: 1,000 due. Three processes and the server share
        // two cores here, so one may still be descheduled when its window closes, leaving
        // the last one or two due unsent (counted as such).
        let count = |k: &str| j["requests"][k].as_u64().unwrap();
        let (sent, unsent) = (count("sent"), count("unsent"));
        assert_eq!(sent + unsent, 1000, "shard {i}: {}", j["requests"]);
        assert!(unsent <= 10, "shard {i}: {}", j["requests"]);
        assert_eq!(j["shard"]["index"].as_u64(), Some(i as u64));
        assert_eq!(j["shard"]["count"].as_u64(), Some(3));
        assert_eq!(j["shard"]["start_at"], at.as_str());
        // Started within its bound, on the clock of this host.
        let late = j["shard"]["start_late_us"].as_i64().unwrap();
        assert!((0..100_000).contains(&late), "{late} µs late");
        // Every shard carries the whole load's id.
        assert_eq!(j["load_id"], shards[0]["load_id"]);
        assert_eq!(j["shard"]["config_hash"], j["load_id"]);
    }
    // A single process of the whole load has the same id.
    let o = volley(
        &[
            "run", &url, "-R", "1500", "-c", "7", "-d", "2s", "-q", "--json", "-",
        ],
        Duration::from_secs(30),
    );
    let whole: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(whole["load_id"], shards[0]["load_id"]);
    // Merged: exactly the whole, aligned on the common start.
    let out = dir.path().join("merged.json");
    let mut args = vec!["merge"];
    args.extend(files.iter().map(String::as_str));
    args.extend(["-o", out.to_str().unwrap()]);
    let o = volley(&args, Duration::from_secs(30));
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let m: Value = serde_json::from_str(&std::fs::read_to_string(&out).unwrap()).unwrap();
    assert_eq!(m["requests"]["completed"].as_u64(), Some(3000));
    let achieved = m["achieved_rps"].as_f64().unwrap();
    assert!((achieved - 1500.0).abs() <= 15.0, "{achieved}");
    assert_eq!(m["shards"].as_array().unwrap().len(), 3);
    assert!(m["shards"][2]["achieved_rps"].as_f64().is_some());
    // The server counted what the shards and the single run sent.
    assert_eq!(
        server.paths.totals().get("GET /").copied(),
        Some(3000 + 3000)
    );
}

#[test]
fn a_late_shard_sends_nothing_and_exits_3() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", server.addr);
    let past = rfc3339(SystemTime::now() - Duration::from_secs(1));
    let o = volley(
        &[
            "run",
            &url,
            "-R",
            "100",
            "-d",
            "1s",
            "--shard",
            "1/2",
            "--start-at",
            &past,
            "--clock-budget",
            "off",
        ],
        Duration::from_secs(20),
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(3), "{e}");
    assert!(
        e.contains("late shard") && e.contains("--max-late 100 ms"),
        "{e}"
    );
    assert_eq!(
        server.requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "nothing was sent"
    );
}

#[test]
fn bad_shards_and_clocks_exit_2_before_the_load() {
    let url = "http://127.0.0.1:9/";
    for (args, want) in [
        (vec!["--shard", "3/3"], "--shard"),
        (vec!["--shard", "x"], "--shard"),
        (
            vec!["-c", "2", "--shard", "2/3", "--clock-budget", "off"],
            "leaves a shard with none",
        ),
        (vec!["--max-late", "50ms"], "--max-late: needs --start-at"),
        (vec!["--start-at", "tomorrow"], "--start-at"),
        (
            vec!["--clock-budget", "soon", "--shard", "0/2"],
            "--clock-budget",
        ),
    ] {
        let mut a = vec!["run", url, "-d", "1s"];
        a.extend(args.iter().copied());
        let o = volley(&a, Duration::from_secs(10));
        let e = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
    // The budget is checked against what the kernel says of its clock: an unsynchronised one
    // (this machine's, and many CI machines') exits 2 unless the budget is off.
    let synced = volley::sys::clock::status().is_some_and(|s| s.synchronised);
    let o = volley(
        &["run", url, "-d", "1s", "--shard", "0/2"],
        Duration::from_secs(10),
    );
    let e = String::from_utf8_lossy(&o.stderr);
    if !synced {
        assert_eq!(o.status.code(), Some(2), "{e}");
        assert!(
            e.contains("not synchronised") && e.contains("--clock-budget off"),
            "{e}"
        );
    }
}

//! `volley capacity` end to end against an in-process server of known capacity: K worker slots,
//! each busy S ms per request, an unbounded queue above K/S·1000 req/s. The rate found must be
//! within the search's precision of that capacity; every step is on disk; the JSON matches
//! `schema/capacity.schema.json`. Plus bad input (exit 2, the flag named).

mod common;

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use common::*;
use serde_json::Value;

/// K slots busy S each: at most K requests in service, the rest wait.
fn known_capacity(k: usize, s: Duration) -> TestServer {
    let slots = Arc::new((Mutex::new(k), Condvar::new()));
    spawn(move |mut c, _| {
        while c.read_request() {
            let (lock, cv) = &*slots;
            let mut free = lock.lock().unwrap();
            while *free == 0 {
                free = cv.wait(free).unwrap();
            }
            *free -= 1;
            drop(free);
            std::thread::sleep(s);
            *lock.lock().unwrap() += 1;
            cv.notify_one();
            if !c.write(OK) {
                return;
            }
        }
    })
}

fn schema_errors(doc: &Value) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/capacity.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema");
    v.iter_errors(doc)
        .map(|e| format!("{}: {}", e.instance_path, e))
        .collect()
}

/// One search against `url`: its exit code, stderr and JSON (null when none was printed).
fn search(url: &str, outdir: &std::path::Path) -> (Option<i32>, String, Value) {
    let o = volley(
        &[
            "capacity",
            url,
            "--slo",
            "p99<50ms",
            "--step-duration",
            "2s",
            "--warmup",
            "1s",
            "--start-rate",
            "200",
            "--precision",
            "10%",
            "--repeat",
            "1",
            "-c",
            "16",
            "--out",
            outdir.to_str().unwrap(),
            "--json",
            "-",
        ],
        Duration::from_secs(120),
    );
    let stderr = String::from_utf8_lossy(&o.stderr).to_string();
    let j = serde_json::from_slice(&o.stdout).unwrap_or(Value::Null);
    (o.status.code(), stderr, j)
}

#[test]
fn finds_the_capacity_of_a_known_server() {
    // 4 slots × 5 ms: 800 req/s (a little less: sleeps overshoot).
    let server = known_capacity(4, Duration::from_millis(5));
    let out = scratch("capacity", "known");
    let url = server.url("/");
    // On a machine busy with other work the client itself may fall behind (schedule lag):
    // volley then honestly refuses a number (a `client` verdict). Such a search says
    // nothing about the server and is run again, up to three times; any search that does
    // give a number must give the right one.
    let mut attempt = 0;
    let (outdir, stderr, j) = loop {
        attempt += 1;
        let outdir = out.join(format!("steps-{attempt}"));
        let (code, stderr, j) = search(&url, &outdir);
        let client_bound = j["steps"]
            .as_array()
            .is_some_and(|s| s.iter().any(|s| s["verdict"] == "client"));
        if client_bound && attempt < 3 {
            eprintln!("attempt {attempt}: the client was the limit, searching again:\n{stderr}");
            continue;
        }
        assert_eq!(code, Some(0), "attempt {attempt}:\n{stderr}");
        break (outdir, stderr, j);
    };
    // The step lines and the answer (shown with --nocapture).
    eprintln!("{stderr}");
    let errs = schema_errors(&j);
    assert!(errs.is_empty(), "{}", errs.join("\n"));
    assert_eq!(j["schema"], "volley.capacity/1");
    assert!(stderr.contains("Max sustainable rate"), "{stderr}");
    let max = j["max_rate_rps"].as_f64().expect("a rate found");
    let (low, high) = (
        j["bracket"]["low_rps"].as_f64().unwrap(),
        j["bracket"]["high_rps"].as_f64().unwrap(),
    );
    assert_eq!(max, low);
    assert!((high - low) / low <= 0.10 + 1e-9, "{low}..{high}");
    assert_eq!(j["limited_by"], "slo", "{stderr}");
    // The capacity (800, a little less in practice) lies in the bracket, give or take the
    // precision: the knee of an unbounded queue over a 2 s step is not sharp.
    assert!(
        (800.0 * 0.8..=800.0 * 1.1).contains(&max),
        "max {max} req/s, bracket {low}..{high}:\n{stderr}"
    );
    // Every step is on disk, a full RunResult.
    let steps = j["steps"].as_array().unwrap();
    assert!(steps.len() >= 4, "{steps:?}");
    for s in steps {
        let path = s["path"].as_str().unwrap();
        let r: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(r["schema"], "volley.run/1");
        assert!(s["reason"].as_str().is_some_and(|r| !r.is_empty()));
    }
    assert!(outdir.join("capacity.json").exists());
}

#[test]
fn an_slo_is_required_and_checked() {
    let o = volley(
        &["capacity", "http://127.0.0.1:9/"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--slo"));
    let o = volley(
        &["capacity", "http://127.0.0.1:9/", "--slo", "p98<1ms"],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("--slo") && e.contains("p98"), "{e}");
    let o = volley(
        &[
            "capacity",
            "http://127.0.0.1:9/",
            "--slo",
            "p99<1ms",
            "-R",
            "100",
        ],
        Duration::from_secs(10),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("-R/--rate"));
}

//! `--rate-stages` end to end (docs/contract.md, "Modes", "Rate stages"): the real `volley`
//! binary against an in-process server, each second's requests against the integral of the
//! target, the RunResult's load, a start at `--start-at` (the warm-up, then the stages), and
//! the flags it excludes. The schedule's exactness is
//! `plan::pacer`'s and `plan::rate`'s unit tests (a fake clock: plain numbers).

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use common::{volley, volley_json};

const LIMIT: Duration = Duration::from_secs(60);

/// Seconds from `from` to `to`, negative when `to` is earlier.
fn secs_between(from: SystemTime, to: SystemTime) -> f64 {
    match to.duration_since(from) {
        Ok(d) => d.as_secs_f64(),
        Err(e) => -e.duration().as_secs_f64(),
    }
}

/// Each second's `field` of the time series.
fn per_second(j: &serde_json::Value, field: &str) -> Vec<f64> {
    j["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t[field].as_f64().unwrap())
        .collect()
}

#[test]
fn each_second_sends_the_integral_of_its_target() {
    let server = common::normal();
    let url = server.url("/");
    // 0 → 400/s over 1 s (200 requests), then 400/s for 1 s (400).
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--rate-stages",
            "1s:400,1s:400",
            "-c",
            "8",
            "-t",
            "1",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(j["load"]["mode"], "open");
    assert_eq!(j["load"]["rate_rps"], 300.0, "the stages' mean");
    assert_eq!(j["load"]["duration_s"], 2.0);
    let stages = &j["load"]["rate_stages"];
    assert_eq!(stages[0]["duration_s"], 1.0);
    assert_eq!(stages[1]["rate_rps"], 400.0);
    let sent: Vec<u64> = j["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["sent"].as_u64().unwrap())
        .collect();
    assert_eq!(sent.len(), 2, "{sent:?}");
    let target: Vec<f64> = j["timeseries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["target"].as_f64().unwrap())
        .collect();
    assert_eq!(
        target,
        [200.0, 400.0],
        "each second's target beside its sent"
    );
    // Each whole second holds its integral, to a request or two at its edges on a busy machine.
    assert!(
        sent[0].abs_diff(200) <= 4 && sent[1].abs_diff(400) <= 4,
        "{sent:?}"
    );
    // Requests 0..600 are due before the window ends (600 is due at its end: not in it).
    let r = &j["requests"];
    assert_eq!(
        r["sent"].as_u64().unwrap() + r["unsent"].as_u64().unwrap(),
        600,
        "{r}"
    );
    crate::quick::schema::assert_valid(&j, "a run of rate stages");
}

#[test]
fn shards_take_every_nth_request_of_the_whole_schedule() {
    let server = common::normal();
    let url = server.url("/");
    let sent: Vec<(u64, Vec<u64>)> = ["0/2", "1/2"]
        .iter()
        .map(|shard| {
            let args = [
                "run",
                &url,
                "--rate-stages",
                "1s:400,1s:400",
                "-c",
                "4",
                "-t",
                "1",
                "--shard",
                shard,
                "--clock-budget",
                "off",
            ];
            let (code, j, err) = volley_json(&args, LIMIT);
            assert_eq!(code, 0, "{shard}: {err}");
            assert_eq!(
                j["load"]["rate_stages"][1]["rate_rps"], 400.0,
                "the whole load's stages"
            );
            let series = j["timeseries"].as_array().unwrap();
            let per_second = series.iter().map(|t| t["sent"].as_u64().unwrap()).collect();
            // Each shard's target is its share: half of the whole load's 200 and 400.
            let targets: Vec<f64> = series[..2]
                .iter()
                .map(|t| t["target"].as_f64().unwrap())
                .collect();
            // (The last second may be a little short of a whole one: its target with it.)
            assert!(
                (targets[0] - 100.0).abs() <= 0.5 && (targets[1] - 200.0).abs() <= 1.0,
                "{shard}: {targets:?}"
            );
            (j["requests"]["sent"].as_u64().unwrap(), per_second)
        })
        .collect();
    assert_eq!(sent[0].0 + sent[1].0, 600, "{sent:?}");
    assert!(sent[0].0.abs_diff(sent[1].0) <= 1, "{sent:?}");
    for s in &sent {
        assert!(
            s.1[0].abs_diff(100) <= 3 && s.1[1].abs_diff(200) <= 3,
            "{sent:?}"
        );
    }
}

#[test]
fn the_stages_are_part_of_the_load_identity() {
    let server = common::normal();
    let url = server.url("/");
    let id = |extra: &[&str]| {
        let mut args = vec!["run", url.as_str(), "-c", "2", "-t", "1"];
        args.extend_from_slice(extra);
        let (code, j, err) = volley_json(&args, LIMIT);
        assert_eq!(code, 0, "{err}");
        j["load_id"].as_str().unwrap().to_string()
    };
    let ramp = id(&["--rate-stages", "0.5s:200"]);
    let step = id(&["--rate-stages", "0s:100,0.5s:100"]);
    assert_ne!(ramp, step, "the same mean, another shape");
    assert_eq!(ramp, id(&["--rate-stages", "500ms:200"]), "the same stages");
}

#[test]
fn the_flags_it_replaces_are_refused_by_name() {
    let url = "http://127.0.0.1:9/";
    for (extra, want) in [
        (
            &["-R", "10"][..],
            "--rate-stages: cannot be combined with -R/--rate",
        ),
        (
            &["-d", "5s"][..],
            "cannot be combined with -d/--duration (the stages are the duration)",
        ),
        (&["-n", "10"][..], "cannot be combined with -n/--requests"),
        (&["--users", "5"][..], "cannot be combined with --users"),
        (&["--think-time", "1s"][..], "--think-time"),
    ] {
        let mut args = vec!["run", url, "--rate-stages", "1s:100"];
        args.extend_from_slice(extra);
        let out = volley(&args, LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {err}");
        assert!(err.contains(want), "{extra:?}: expected {want:?} in {err}");
    }
    for (spec, want) in [
        ("1s", "stage 1 `1s` is not DURATION:RATE"),
        ("1s:100,x:5", "stage 2"),
        ("0s:100", "the stages last 0 s in total"),
        ("1s:0", "less than one request"),
    ] {
        let out = volley(&["run", url, "--rate-stages", spec], LIMIT);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{spec}: {err}");
        assert!(err.contains(want), "{spec}: expected {want:?} in {err}");
    }
}

#[test]
fn a_start_at_in_the_future_starts_the_warm_up_and_then_the_stages() {
    // A server that notes the wall clock of the first request it reads.
    let first: Arc<Mutex<Option<SystemTime>>> = Arc::default();
    let seen = Arc::clone(&first);
    let server = common::spawn(move |mut c, _| {
        while c.read_request() {
            seen.lock().unwrap().get_or_insert_with(SystemTime::now);
            if !c.write(common::OK) {
                return;
            }
        }
    });
    let url = server.url("/");
    // A step to 200/s (the warm-up's rate, for 1 s), 200 → 400/s over 1 s (300 requests),
    // then 400/s for 1 s; the warm-up starts 1.5 s from now.
    let at_text = humantime::format_rfc3339_millis(SystemTime::now() + Duration::from_millis(1500))
        .to_string();
    // The instant volley reads (to the millisecond).
    let at = humantime::parse_rfc3339(&at_text).unwrap();
    let (code, j, err) = volley_json(
        &[
            "run",
            &url,
            "--rate-stages",
            "0s:200,1s:400,1s:400",
            "--warmup",
            "1s",
            "-c",
            "8",
            "-t",
            "1",
            "--start-at",
            &at_text,
            "--clock-budget",
            "off",
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "{err}");
    // Nothing reached the server before --start-at, and the warm-up's first request soon after.
    let first = first.lock().unwrap().expect("the server read requests");
    let first_s = secs_between(at, first);
    assert!(
        (0.0..0.2).contains(&first_s),
        "first request {first_s} s after --start-at"
    );
    // Started on time: t0 is --start-at + the warm-up (and its lateness, within --max-late).
    let shard = &j["shard"];
    assert_eq!(shard["start_at"], at_text.as_str());
    let late_s = shard["start_late_us"].as_f64().unwrap() / 1e6;
    assert!((0.0..0.1).contains(&late_s), "{late_s} s late");
    let t0 = humantime::parse_rfc3339(j["started_at"].as_str().unwrap()).unwrap();
    let t0_s = secs_between(at, t0);
    assert!(
        (1.0..1.1).contains(&t0_s) && (t0_s - 1.0 - late_s).abs() < 0.02,
        "t0 {t0_s} s after --start-at, {late_s} s late"
    );
    // The warm-up ran at the first stage's starting rate (excluded from the counts below).
    let warm = j["warmup"]["completed"].as_u64().unwrap();
    assert!(warm.abs_diff(200) <= 4, "{warm} warm-up responses");
    // The stages, from t0: each second sends its target.
    assert_eq!(j["load"]["rate_rps"], 350.0, "the stages' mean");
    assert_eq!(per_second(&j, "target"), [300.0, 400.0]);
    let sent = per_second(&j, "sent");
    assert!(
        (sent[0] - 300.0).abs() <= 4.0 && (sent[1] - 400.0).abs() <= 4.0,
        "{sent:?}"
    );
    let r = &j["requests"];
    assert_eq!(
        r["sent"].as_u64().unwrap() + r["unsent"].as_u64().unwrap(),
        700,
        "{r}"
    );
    crate::quick::schema::assert_valid(&j, "a run of rate stages started at --start-at");
}

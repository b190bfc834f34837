//! A suite scenario's `shards = N` (docs/contract.md, "Suites"): each cell runs as N `volley
//! run --shard i/N` processes on this host, started together, and its RunResult is their merge.
//! Checked against `volley serve` (in this process as a `url` server, whose own counts are the
//! truth, and started by the harness, whose monitor only shard 0 has), with a shard that
//! cannot start in time, with Ctrl-C passed on to the processes, and with the values a suite
//! must refuse before anything starts.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{bench_suite, checked_suite_index, output_text};
use serde_json::Value;

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The row of server `server` and its RunResult.
fn row_and_run<'a>(idx: &'a Value, out: &Path, server: &str) -> (&'a Value, Value) {
    let row = idx["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["server"] == server)
        .unwrap_or_else(|| panic!("no row of {server}: {idx:#}"));
    let path = row["path"].as_str().unwrap_or_else(|| panic!("{row:#}"));
    (row, read_json(&out.join(path)))
}

/// The cell's id, from its RunResult's path (`runs/<id>.json`).
fn cell_id(row: &Value) -> String {
    let path = row["path"].as_str().unwrap();
    path.strip_prefix("runs/")
        .and_then(|p| p.strip_suffix(".json"))
        .unwrap()
        .to_string()
}

/// Live processes whose command line holds `marker` (zombies and this test excluded).
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(e.path().join("stat")).unwrap_or_default();
        let zombie = stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'));
        if !zombie && String::from_utf8_lossy(&cmdline).contains(marker) {
            found.push(pid);
        }
    }
    found
}

#[test]
fn a_cell_of_three_shards_is_one_load_merged_from_three_processes() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        r#"[suite]
name = "sharded"
duration = "2s"

[[server]]
name = "there"
url = "http://{addr}/"

[[server]]
name = "managed"
start = "exec {VOLLEY} serve --port {{port}}"

[[scenario]]
name = "open"
shards = 3
rate = 600
connections = 6
monitor_interval = "50ms"
"#,
        addr = server.addr
    );
    let t = Instant::now();
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    assert!(
        t.elapsed() < Duration::from_secs(60),
        "took {:?}",
        t.elapsed()
    );
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(stderr.contains("open · 3 shards · rep 1"), "{stderr}");
    let idx = checked_suite_index(&out);
    for server_name in ["there", "managed"] {
        let (row, run) = row_and_run(&idx, &out, server_name);
        assert_eq!(row["status"], "ok", "{row:#}");
        // The scenario's monitor_interval reaches the monitor of the server the harness
        // started (a url server has none).
        if server_name == "managed" {
            assert_eq!(
                run["server"]["sample_interval_s"].as_f64(),
                Some(0.05),
                "{run:#}"
            );
        }
        let id = cell_id(row);
        // The whole load, merged: 600 req/s for 2 s over 6 connections, exactly.
        assert_eq!(
            run["load"]["rate_rps"].as_f64(),
            Some(600.0),
            "{server_name}"
        );
        assert_eq!(run["load"]["connections"].as_u64(), Some(6));
        assert_eq!(run["requests"]["sent"].as_u64(), Some(1200));
        assert_eq!(run["requests"]["completed"].as_u64(), Some(1200));
        assert!(run["shard"].is_null(), "the merge is the whole load");
        let argv: Vec<&str> = run["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| a.as_str().unwrap())
            .collect();
        assert_eq!(argv[..2], ["volley", "run"]);
        assert_eq!(argv[argv.len() - 2..], ["--shards", "3"], "{argv:?}");
        let shards = run["shards"].as_array().unwrap();
        assert_eq!(shards.len(), 3);
        for (i, s) in shards.iter().enumerate() {
            assert_eq!(s["index"].as_u64(), Some(i as u64));
            let late = s["start_late_us"].as_i64().unwrap();
            assert!((0..100_000).contains(&late), "shard {i}: {late} µs late");
            assert!(s["achieved_rps"].as_f64().is_some());
            let shard_argv: Vec<&str> = s["argv"]
                .as_array()
                .unwrap()
                .iter()
                .map(|a| a.as_str().unwrap())
                .collect();
            let shard_flag = format!("{i}/3");
            assert!(
                shard_argv
                    .windows(2)
                    .any(|w| w == ["--shard", shard_flag.as_str()]),
                "{shard_argv:?}"
            );
            // Only shard 0 monitors the server the harness started.
            let monitors = shard_argv.contains(&"--pid");
            assert_eq!(
                monitors,
                server_name == "managed" && i == 0,
                "{shard_argv:?}"
            );
        }
        // Each process's own result is kept beside the cell's, with its stderr in logs/.
        let mut files: Vec<String> = std::fs::read_dir(out.join(format!("runs/{id}.shards")))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        files.sort();
        assert_eq!(files, ["shard-0.json", "shard-1.json", "shard-2.json"]);
        let mut completed = 0;
        for (i, f) in files.iter().enumerate() {
            let shard = read_json(&out.join(format!("runs/{id}.shards/{f}")));
            assert_eq!(shard["shard"]["index"].as_u64(), Some(i as u64));
            assert_eq!(shard["shard"]["count"].as_u64(), Some(3));
            assert_eq!(shard["load_id"], shards_load_id(&out, &id));
            completed += shard["requests"]["completed"].as_u64().unwrap();
            assert!(out.join(format!("logs/{id}.shard-{i}.stderr")).is_file());
        }
        assert_eq!(completed, 1200);
        if server_name == "managed" {
            assert!(run["server"].is_object(), "shard 0's monitor is kept");
            assert!(run["env"]["pinning"].is_object());
        } else {
            assert!(run["server"].is_null());
        }
    }
    // The url server counted what the three processes of its cell sent, and nothing more.
    assert_eq!(server.paths.totals().get("GET /").copied(), Some(1200));
    assert!(
        processes_with(&out.display().to_string()).is_empty(),
        "no shard process is left"
    );
}

/// Shard 0's load id: every shard carries the whole load's.
fn shards_load_id(out: &Path, id: &str) -> Value {
    read_json(&out.join(format!("runs/{id}.shards/shard-0.json")))["load_id"].clone()
}

#[test]
fn a_shard_that_cannot_start_in_time_fails_the_cell_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    // No shard starts within 0 ms of --start-at: each sends nothing and exits 3.
    let suite = format!(
        "[suite]\nname = \"late\"\nduration = \"1s\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"g\"\nshards = 2\nconnections = 2\nmax_late = \"0ms\"\n",
        server.addr
    );
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", output_text(&o));
    let idx = checked_suite_index(&out);
    let row = &idx["rows"][0];
    assert_eq!(row["status"], "failed");
    let reason = row["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("shard 0/2 exited with status 3 without a result: volley: late shard"),
        "{reason}"
    );
    assert!(
        reason.contains("; shard 1/2 exited with status 3"),
        "{reason}"
    );
    assert!(row["path"].is_null());
    // What the processes left stays on disk.
    let id = "there__g__r1";
    assert!(out.join(format!("runs/{id}.shards")).is_dir());
    assert!(out.join(format!("logs/{id}.shard-1.stderr")).is_file());
    assert_eq!(server.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn verify_runs_once_and_thresholds_judge_the_merged_load() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"judged\"\nduration = \"500ms\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"g\"\nshards = 2\nconnections = 2\nverify = true\nthresholds = [\"p99<1us\", \"errors<1%\"]\n",
        server.addr
    );
    let (o, out) = bench_suite(dir.path(), &suite, &[]);
    // A broken threshold is a note, and the suite's exit 1.
    assert_eq!(o.status.code(), Some(1), "{}", output_text(&o));
    let idx = checked_suite_index(&out);
    let (row, run) = row_and_run(&idx, &out, "there");
    assert_eq!(row["status"], "ok", "{row:#}");
    let notes: Vec<&str> = row["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap())
        .collect();
    assert!(
        notes
            .iter()
            .any(|n| n.starts_with("threshold broken: p99<1us")),
        "{notes:?}"
    );
    let judged: Vec<(&str, bool)> = run["thresholds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["threshold"].as_str().unwrap(),
                t["pass"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(judged, [("p99<1us", false), ("errors<1%", true)]);
    let id = cell_id(row);
    for i in 0..2 {
        let shard = read_json(&out.join(format!("runs/{id}.shards/shard-{i}.json")));
        assert!(
            shard["thresholds"].as_array().is_none_or(Vec::is_empty),
            "shard {i} judged nothing: {}",
            shard["thresholds"]
        );
        assert!(!shard["argv"].to_string().contains("--verify"));
    }
    // --verify sent its one request, once, before the shards' load.
    let completed = run["requests"]["completed"].as_u64().unwrap();
    assert_eq!(
        server.paths.totals().get("GET /").copied(),
        Some(completed + 1)
    );
}

#[test]
fn ctrl_c_reaches_the_shards_which_keep_what_they_measured() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"int\"\nduration = \"20s\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"g\"\nshards = 2\nrate = 200\nconnections = 2\n",
        server.addr
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(VOLLEY)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the shards are measuring.
    let deadline = Instant::now() + Duration::from_secs(20);
    while server.requests.load(std::sync::atomic::Ordering::SeqCst) < 100 {
        assert!(Instant::now() < deadline, "the shards never sent");
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let t = Instant::now();
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", output_text(&o));
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    let idx = checked_suite_index(&out);
    let (row, run) = row_and_run(&idx, &out, "there");
    assert_eq!(row["status"], "interrupted", "{row:#}");
    assert_eq!(run["interrupted"], true);
    assert_eq!(run["shards"].as_array().unwrap().len(), 2);
    let id = cell_id(row);
    for i in 0..2 {
        let shard = read_json(&out.join(format!("runs/{id}.shards/shard-{i}.json")));
        assert_eq!(shard["interrupted"], true, "shard {i}");
    }
    let completed = run["requests"]["completed"].as_u64().unwrap();
    assert!(completed >= 100, "{completed}");
    assert_eq!(server.paths.totals().get("GET /").copied(), Some(completed));
    assert!(processes_with(&out.display().to_string()).is_empty());
}

#[test]
fn bad_shards_are_refused_before_anything_starts() {
    let dir = tempfile::tempdir().unwrap();
    let case = |body: &str| {
        let suite = format!(
            "[suite]\nname = \"bad\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"exit 1\"\n[[scenario]]\nname = \"g\"\n{body}"
        );
        let (o, out) = bench_suite(dir.path(), &suite, &[]);
        assert_eq!(o.status.code(), Some(2), "{body}: {}", output_text(&o));
        assert!(!out.exists(), "{body}: nothing is created");
        String::from_utf8_lossy(&o.stderr).into_owned()
    };
    let file = dir.path().join("suite.toml").display().to_string();
    for (body, at, says) in [
        ("shards = 0\n", "9:10", "shards: `0` is not from 1 to 10000"),
        ("shards = 10001\n", "9:10", "`10001` is not from 1 to 10000"),
        (
            "shards = \"3\"\n",
            "9:10",
            "must be a whole number from 1 to 10000, not a string",
        ),
        ("shards = [1, 0]\n", "9:14", "`0` is not from 1 to 10000"),
        (
            "shards = 2\ncapacity = { slo = \"p99<10ms\" }\n",
            "9:10",
            "`shards` cannot be combined with `capacity`",
        ),
        (
            "shards = 2\nstart_at = \"2030-01-01T00:00:00Z\"\n",
            "10:12",
            "`start_at` cannot be combined with `shards`",
        ),
        (
            "shards = 2\nshard = \"0/2\"\n",
            "10:9",
            "`shard` cannot be combined with `shards`",
        ),
        (
            "connections = 2\nshards = 3\n",
            "10:10",
            "-c/--connections: 2 over 3 shards leaves a shard with none",
        ),
    ] {
        let stderr = case(body);
        assert!(
            stderr.contains(&format!("{file}:{at}: [[scenario]] \"g\"")) && stderr.contains(says),
            "{body}: {stderr}"
        );
    }
    // A good one: the dry run says how it will run.
    let suite = "[suite]\nname = \"ok\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"exit 1\"\n[[scenario]]\nname = \"g\"\nshards = 4\nconnections = 4\n";
    let (o, _) = bench_suite(dir.path(), suite, &["--dry-run"]);
    assert_eq!(o.status.code(), Some(0), "{}", output_text(&o));
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("  a · g · 4 shards each: 1 cell × 1 = 1"),
        "{stdout}"
    );
}

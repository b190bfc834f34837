//! Bad input exits 2 with a message naming the flag or file; refused connections and
//! no responses exit 1; Ctrl-C exits 130 with the results so far.

use crate::common;

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

const LIMIT: Duration = Duration::from_secs(20);

fn expect(args: &[&str], code: i32, needle: &str) {
    let out = volley(args, LIMIT);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(code),
        "volley {args:?}\nstderr: {stderr}"
    );
    assert!(
        stderr.contains(needle),
        "volley {args:?}: stderr does not name `{needle}`:\n{stderr}"
    );
}

#[test]
fn bad_flags_exit_2_naming_the_flag() {
    let url = "http://127.0.0.1:9/";
    expect(&["run", "127.0.0.1:8080"], 2, "URL");
    expect(&["run", "http://"], 2, "URL");
    expect(&["run", "ftp://x/"], 2, "unsupported scheme");
    expect(
        &["run", "ftp://127.0.0.1/"],
        2,
        "use http://, https://, or ws:// and wss:// for WebSocket",
    );
    expect(
        &["run", "https://127.0.0.1:1/", "--cacert", "/no/such/ca.pem"],
        2,
        "--cacert /no/such/ca.pem",
    );
    expect(
        &["run", "https://127.0.0.1:1/", "--key", "/etc/hostname"],
        2,
        "--key: needs --cert",
    );
    expect(
        &["run", "http://x/", "--unix-socket", "/no/such.sock"],
        2,
        "--unix-socket /no/such.sock",
    );
    expect(
        &[
            "serve",
            "--port",
            "0",
            "--tls-cert",
            "/no/c.pem",
            "--tls-key",
            "/no/k.pem",
        ],
        2,
        "--tls-cert /no/c.pem",
    );
    expect(&["run", "http://127.0.0.1:99999/"], 2, "port");
    expect(&["run", url, "-c", "0"], 2, "-c/--connections");
    expect(&["run", url, "-t", "0"], 2, "-t/--threads");
    expect(&["run", url, "-d", "5s", "-n", "100"], 2, "-n/--requests");
    expect(&["run", url, "-d", "10x"], 2, "--duration");
    expect(&["run", url, "--timeout", "soon"], 2, "--timeout");
    expect(&["run", url, "--warmup", "-1s"], 2, "--warmup");
    expect(&["run", url, "--body-size", "1XB"], 2, "--body-size");
    expect(
        &["run", url, "--body-file", "/nonexistent/body.bin"],
        2,
        "--body-file /nonexistent/body.bin",
    );
    expect(&["run", url, "-R", "-5"], 2, "-R/--rate");
    expect(&["run", url, "-R", "0"], 2, "-R/--rate");
    expect(&["run", url, "-R", "fast"], 2, "-R/--rate");
    expect(&["run", url, "--arrivals", "poisson"], 2, "--arrivals");
    expect(&["run", url, "--pipeline", "0"], 2, "--pipeline");
    expect(
        &["run", url, "--pipeline", "4", "--no-keepalive"],
        2,
        "--pipeline",
    );
    expect(&["run", url, "-H", "NoColon"], 2, "-H/--header");
    expect(&["run", url, "-m", "GE T"], 2, "-m/--method");
    // h2load's `-m 10` is its streams per connection, not a method.
    expect(
        &["run", url, "-m", "10"],
        2,
        "h2load's -m is volley's --streams 10",
    );
    expect(&["run", url, "-m", "get"], 2, "did you mean `GET`?");
    expect(&["run", url, "-m", "Post"], 2, "did you mean `POST`?");
    expect(
        &["run", url, "--body", "a", "--body-size", "1k"],
        2,
        "--body",
    );
    expect(
        &["run", url, "--json", "/nonexistent/dir/out.json"],
        2,
        "--json /nonexistent/dir/out.json",
    );
    expect(
        &["run", url, "--hdr-log", "/nonexistent/dir/h.log"],
        2,
        "--hdr-log",
    );
    expect(
        &["run", "http://name.that.does.not.exist.invalid/"],
        2,
        "cannot resolve",
    );
    expect(&["bogus"], 2, "unrecognized subcommand");
}

#[test]
fn a_bad_requests_file_exits_2_naming_the_file_the_line_and_the_key() {
    // Nothing listens on port 9: every one of these is refused before any load.
    let url = "http://127.0.0.1:9/";
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/requests");
    let bad = format!("{dir}/bad_weight.toml");
    let mix = format!("{dir}/mix.toml");
    expect(
        &["run", url, "--requests-file", &bad],
        2,
        &format!(
            "--requests-file {bad}:6:10: [[request]] 2: weight: must be a number above 0 (80, or 0.8), not 0"
        ),
    );
    expect(
        &["run", url, "--requests-file", "/no/such/mix.toml"],
        2,
        "--requests-file /no/such/mix.toml: No such file",
    );
    expect(
        &["run", "http://127.0.0.1:9/api", "--requests-file", &mix],
        2,
        "the URL names the host; the file names the paths",
    );
    expect(
        &["run", url, "--requests-file", &mix, "-m", "PUT"],
        2,
        "--requests-file: cannot be combined with -m/--method",
    );
    expect(
        &["run", url, "--requests-file", &mix, "--body", "x"],
        2,
        "cannot be combined with --body",
    );
    expect(
        &["run", url, "--expect-body-regex", "(x"],
        2,
        "--expect-body-regex: `(x` is not a regex",
    );
    expect(
        &["run", url, "--expect-status", "2yy"],
        2,
        "--expect-status",
    );
    expect(
        &["run", url, "--expect-header", "a b"],
        2,
        "--expect-header",
    );
    expect(&["run", url, "--expect-size", "1XB"], 2, "--expect-size");
}

#[test]
fn ramp_flag_rules_exit_2() {
    let url = "http://127.0.0.1:9/";
    expect(
        &[
            "run",
            url,
            "--users",
            "100",
            "--spawn-rate",
            "10",
            "-d",
            "5s",
        ],
        2,
        "shorter than the ramp",
    );
    expect(
        &["run", url, "--users", "10", "-c", "5"],
        2,
        "-c/--connections",
    );
    expect(&["run", url, "--users", "10", "-R", "100"], 2, "-R/--rate");
    expect(
        &["run", url, "--users", "10", "--warmup", "1s"],
        2,
        "--warmup",
    );
    expect(
        &["run", url, "--users", "10", "-n", "100"],
        2,
        "-n/--requests",
    );
    expect(&["run", url, "--users", "0"], 2, "--users");
    expect(&["run", url, "--spawn-rate", "5"], 2, "needs --users");
    expect(
        &["run", url, "--users", "10", "--spawn-rate", "-1"],
        2,
        "--spawn-rate",
    );
    expect(
        &["run", url, "--stages", "10s:5", "-d", "10s"],
        2,
        "-d/--duration",
    );
    expect(
        &["run", url, "--stages", "10s:5", "--users", "5"],
        2,
        "--users",
    );
    expect(&["run", url, "--stages", "10s"], 2, "--stages: stage 1");
    expect(
        &["run", url, "--stages", "1s:0"],
        2,
        "no stage has any users",
    );
    expect(
        &["run", url, "-R", "10", "--think-time", "1s"],
        2,
        "--think-time",
    );
}

#[test]
fn too_many_connections_for_the_descriptor_limit_exits_2() {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args(["run", "http://127.0.0.1:9/", "-c", "5000", "-d", "1s"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit is async-signal-safe; it only lowers this child's own limit.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("-c/--connections") && stderr.contains("5064") && stderr.contains("1024"),
        "{stderr}"
    );
}

#[test]
fn soft_descriptor_limit_is_raised_by_volley() {
    let s = normal();
    let url = s.url("/");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volley"));
    cmd.args([
        "run", &url, "-c", "1500", "-n", "3000", "--quiet", "--json", "-",
    ])
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    // SAFETY: as above; soft 1024, hard high enough.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 8192,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["requests"]["completed"], 3000);
    assert_eq!(j["errors"]["connect"], 0, "{}", j["errors"]);
}

#[test]
fn refused_connection_exits_1_with_a_clear_message() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("http://127.0.0.1:{port}/");
    let (code, j, stderr) = volley_json(&["run", &url, "-c", "2", "-d", "500ms"], LIMIT);
    assert_eq!(code, 1);
    assert!(
        stderr.contains("nothing accepts connections") && stderr.contains("no response"),
        "{stderr}"
    );
    assert!(j["errors"]["connect"].as_u64().unwrap() > 0);
    assert_eq!(j["requests"]["completed"], 0);
}

#[test]
fn ctrl_c_keeps_what_was_measured_and_exits_130() {
    let s = normal();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("r.json");
    let child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            &s.url("/"),
            "-c",
            "4",
            "-d",
            "30s",
            "--quiet",
            "--json",
        ])
        .arg(&json)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // The window starts with volley's first request, however long it took to start.
    let spawned = Instant::now();
    while s.requests() == 0 && spawned.elapsed() < Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(5));
    }
    let first = Instant::now();
    std::thread::sleep(Duration::from_millis(1500));
    let t = Instant::now();
    // SAFETY: signalling our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let (since_first, wall) = (
        t.duration_since(first).as_secs_f64(),
        t.duration_since(spawned).as_secs_f64(),
    );
    let out = child.wait_with_output().unwrap();
    assert!(
        t.elapsed() < Duration::from_secs(5),
        "stopped in {:?}",
        t.elapsed()
    );
    assert_eq!(
        out.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("INTERRUPTED"), "{stdout}");
    let j: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(j["interrupted"], true);
    assert!(j["requests"]["completed"].as_u64().unwrap() > 0);
    let el = j["elapsed_s"].as_f64().unwrap();
    // Up to the Ctrl-C (plus its noticing and at most a second of drain), not the 30 s asked
    // for.
    assert!(
        el >= since_first - 0.05 && el <= wall + 1.5,
        "elapsed {el}: Ctrl-C {since_first} s after the first request, {wall} s after the start"
    );
    assert_invariant(&j);
}

#[test]
fn hdr_log_has_a_line_per_second() {
    let s = normal();
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("lat.hlog");
    let out = volley(
        &[
            "run",
            &s.url("/"),
            "-c",
            "2",
            "-d",
            "2s",
            "--quiet",
            "--hdr-log",
            log.to_str().unwrap(),
        ],
        LIMIT,
    );
    assert_eq!(out.status.code(), Some(0));
    let text = std::fs::read(&log).unwrap();
    let intervals = hdrhistogram::serialization::interval_log::IntervalLogIterator::new(&text)
        .filter_map(|e| match e.unwrap() {
            hdrhistogram::serialization::interval_log::LogEntry::Interval(iv) => {
                Some(iv.start_timestamp())
            }
            _ => None,
        })
        .count();
    assert!((2..=3).contains(&intervals), "{intervals} intervals");
}

#[test]
fn outputs_to_dev_null_are_written_not_synced() {
    // /dev/null cannot be synced (EINVAL): the run still succeeds, and the device stays one.
    let s = normal();
    let url = s.url("/");
    let args = [
        "run",
        &url,
        "-c",
        "1",
        "-n",
        "20",
        "--json",
        "/dev/null",
        "--csv",
        "/dev/null",
        "--markdown",
        "/dev/null",
    ];
    let o = volley(&args, LIMIT);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let report = [
        "report",
        "tests/fixtures/report/open-loop.json",
        "--html",
        "/dev/null",
    ];
    let o = volley(&report, LIMIT);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(!std::fs::metadata("/dev/null")
        .unwrap()
        .file_type()
        .is_file());
}

#[test]
fn capacity_leaves_out_of_its_help_the_run_flags_it_refuses() {
    let out = volley(&["capacity", "--help"], LIMIT);
    let help = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        help.contains("--slo") && help.contains("--connections"),
        "{help}"
    );
    // Their own lines (their names still come up in other flags' words).
    for refused in [
        "--rate",
        "--duration",
        "--requests",
        "--users",
        "--stages",
        "--threshold",
    ] {
        let line = format!("{refused} <");
        assert!(!help.contains(&line), "{refused} in the help:\n{help}");
    }
    // Still refused with a reason, not as an unknown flag.
    let url = "http://127.0.0.1:1/";
    for (flag, value) in [("-R", "100"), ("-d", "5s"), ("--threshold", "p99<1ms")] {
        let args = ["capacity", url, "--slo", "p99<10ms", flag, value];
        expect(&args, 2, "capacity");
    }
}

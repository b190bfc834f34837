//! The server monitor against real child processes: `volley serve` (thread per connection)
//! started behind a `sh` wrapper, so the monitored pid is the wrapper and the server is its
//! descendant. Its hidden `/burn?us=N` endpoint spends N µs of CPU per request, which the
//! monitor must find again per request.

use crate::common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// A server process tree: `sh -c "volley serve --port 0; :"` (the `; :` keeps sh from exec'ing,
/// so the server is a child of the pid we monitor).
struct ServerTree {
    sh: Child,
    port: u16,
}

impl ServerTree {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// Started behind `prefix` (e.g. `taskset -c 1`, which execs the `sh`).
    fn start_with(prefix: &[&str]) -> Self {
        let cmd = format!("{} serve --port 0; :", env!("CARGO_BIN_EXE_volley"));
        let argv: Vec<&str> = prefix.iter().copied().chain(["sh", "-c", &cmd]).collect();
        let mut sh = Command::new(argv[0])
            .args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("sh runs");
        let mut line = String::new();
        BufReader::new(sh.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        // "volley serve: listening on http://127.0.0.1:PORT/ (...)"
        let port = line
            .split("127.0.0.1:")
            .nth(1)
            .and_then(|r| r.split('/').next())
            .and_then(|p| p.parse().ok())
            .unwrap_or_else(|| panic!("no port in {line:?}"));
        ServerTree { sh, port }
    }

    fn pid(&self) -> String {
        self.sh.id().to_string()
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// The server's own pid (the child of sh).
    fn server_pid(&self) -> i32 {
        let t = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.sh.id()))
            .unwrap_or_default();
        t.split_whitespace()
            .next()
            .and_then(|p| p.parse().ok())
            .expect("sh has the server as its child")
    }

    /// Kills the server (then sh ends too) and reaps sh.
    fn kill_server(&mut self) {
        // SAFETY: kill(2) on a pid we started.
        unsafe { libc::kill(self.server_pid(), libc::SIGKILL) };
    }
}

impl Drop for ServerTree {
    fn drop(&mut self) {
        if let Ok(t) = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", self.sh.id()))
        {
            for p in t.split_whitespace().filter_map(|p| p.parse::<i32>().ok()) {
                // SAFETY: kill(2) on the server we started.
                unsafe { libc::kill(p, libc::SIGKILL) };
            }
        }
        let _ = self.sh.kill();
        let _ = self.sh.wait();
    }
}

fn f(v: &Value, ptr: &str) -> f64 {
    v.pointer(ptr)
        .and_then(Value::as_f64)
        .unwrap_or_else(|| panic!("{ptr} is not a number: {:?}", v.pointer(ptr)))
}

fn u(v: &Value, ptr: &str) -> u64 {
    v.pointer(ptr)
        .and_then(Value::as_u64)
        .unwrap_or_else(|| panic!("{ptr} is not a count: {:?}", v.pointer(ptr)))
}

/// Voluntary + involuntary context switches of one thread so far.
fn thread_ctx(pid: i32, tid: i32) -> u64 {
    let t = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/status")).unwrap();
    let c = volley::monitor::procfs::parse_status_ctx(&t).unwrap();
    c.voluntary + c.involuntary
}

#[test]
fn cpu_per_request_matches_the_burn_and_switches_are_summed_over_threads() {
    const BURN_US: f64 = 1000.0;
    let tree = ServerTree::start();
    let server = tree.server_pid();
    let main_before = thread_ctx(server, server);
    let (code, j, stderr) = volley_json(
        &[
            "run",
            &tree.url(&format!("/burn?us={BURN_US}")),
            "-c",
            "2",
            "-d",
            "2s",
            "--warmup",
            "300ms",
            "--pid",
            &tree.pid(),
        ],
        LIMIT,
    );
    assert_eq!(code, 0, "stderr: {stderr}");
    let main_after = thread_ctx(server, server);
    let completed = u(&j, "/requests/completed");
    assert!(completed > 100, "only {completed} requests");
    let s = &j["server"];

    // The wrapper and the server: descendants are found.
    let pids: Vec<i64> = s["pids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_i64().unwrap())
        .collect();
    assert!(
        pids.contains(&(tree.sh.id() as i64)) && pids.contains(&(server as i64)),
        "pids {pids:?}"
    );
    assert_eq!(u(&j, "/server/processes_max"), 2);
    assert!(
        u(&j, "/server/threads_max") >= 3,
        "sh + accept + connections"
    );

    // The CPU the server burned per request, within 20%.
    let cpu_us = f(&j, "/server/per_request/cpu_us");
    assert!(
        (cpu_us - BURN_US).abs() <= 0.2 * BURN_US,
        "per_request.cpu_us = {cpu_us}, burn {BURN_US} µs; server block: {s}"
    );
    let user_s = f(&j, "/server/cpu_user_s");
    let sys_s = f(&j, "/server/cpu_sys_s");
    assert!(
        (f(&j, "/server/per_request/user_us") + f(&j, "/server/per_request/sys_us") - cpu_us).abs()
            < 0.01,
    );
    assert!(user_s > sys_s, "a busy loop is user time: {s}");

    // Context switches: every connection thread blocks or is preempted around its requests;
    // the main (accept) thread, all that /proc/PID/status would show, hardly switches.
    let ctx = u(&j, "/server/ctx_switches_voluntary") + u(&j, "/server/ctx_switches_involuntary");
    assert!(
        ctx >= completed / 4,
        "{ctx} switches for {completed} requests"
    );
    assert!(
        ctx > 10 * (main_after - main_before),
        "{ctx} switches in all, {} in the main thread",
        main_after - main_before
    );
    let per_ctx = f(&j, "/server/per_request/ctx_switches");
    assert!((per_ctx - ctx as f64 / completed as f64).abs() < 0.01);

    // Syscalls: a number where perf may count them (each request is at least a recvfrom and
    // a sendto), otherwise null with the reason.
    match s["syscalls"].as_u64() {
        Some(n) => {
            assert!(n >= 2 * completed, "{n} syscalls for {completed} requests");
            let top = s["syscalls_top"].as_array().unwrap();
            let names: Vec<&str> = top.iter().map(|t| t["name"].as_str().unwrap()).collect();
            assert!(
                names.contains(&"recvfrom") && names.contains(&"sendto"),
                "{names:?}"
            );
            assert!(f(&j, "/server/per_request/syscalls") >= 2.0);
            assert!(s.get("syscalls_unavailable_reason").is_none());
        }
        None => {
            assert!(s["syscalls"].is_null());
            assert!(s["per_request"]["syscalls"].is_null());
            let reason = s["syscalls_unavailable_reason"].as_str().unwrap();
            assert!(!reason.is_empty());
        }
    }

    // The series: about one sample a second, the tree's RSS and threads in each.
    let samples = s["samples"].as_array().unwrap();
    assert!((2..=3).contains(&samples.len()), "{samples:?}");
    for p in samples {
        assert!(p["rss_bytes"].as_u64().unwrap() > 0);
        assert!(p["threads"].as_u64().unwrap() >= 3);
    }
    assert!(s.get("exited_at_s").is_none());
    assert!(f(&j, "/server/window_s") >= 2.0);
}

#[test]
fn a_pid_that_does_not_exist_exits_2_naming_it() {
    let srv = normal();
    for cmd in [
        vec!["run", "URL", "-d", "1s", "--pid", "99999999"],
        vec!["monitor", "--pid", "99999999"],
    ] {
        let url = srv.url("/");
        let args: Vec<&str> = cmd
            .iter()
            .map(|a| if *a == "URL" { url.as_str() } else { a })
            .collect();
        let out = volley(&args, LIMIT);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(
            stderr.contains("--pid 99999999: no such process"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(srv.requests(), 0, "nothing is sent for a bad --pid");
    let out = volley(&["run", &srv.url("/"), "--monitor-interval", "50ms"], LIMIT);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--monitor-interval: needs --pid"));
}

#[test]
fn the_server_dying_mid_run_exits_3_with_results_written() {
    let mut tree = ServerTree::start();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let mut volley_run = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args([
            "run",
            &tree.url("/"),
            "-c",
            "2",
            "-d",
            "3s",
            "--timeout",
            "500ms",
            "--quiet",
            "--pid",
            &tree.pid(),
            "--json",
            json.to_str().unwrap(),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1000));
    tree.kill_server();
    let deadline = Instant::now() + LIMIT;
    while volley_run.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "volley did not finish");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = volley_run.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(3),
        "stdout:\n{stdout}\nstderr:\n{stderr}"
    );
    let j: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let s = &j["server"];
    let died = f(&j, "/server/exited_at_s");
    assert!((0.5..2.5).contains(&died), "exited_at_s {died}");
    assert!(
        s["note"].as_str().unwrap().contains("exited"),
        "note: {}",
        s["note"]
    );
    // The series ends around the death.
    for p in s["samples"].as_array().unwrap() {
        assert!(p["t_s"].as_f64().unwrap() <= died + 1.1, "{p} after {died}");
    }
    assert!(u(&j, "/requests/completed") > 0);
    assert!(stdout.contains("exited"), "the summary warns:\n{stdout}");
}

#[test]
fn monitor_prints_a_line_a_second_and_stops_at_the_duration() {
    let tree = ServerTree::start();
    // The second that ends with -d gets its line too (it used to be cut: one line for 2 s).
    let out = volley(&["monitor", "--pid", &tree.pid(), "-d", "2s"], LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains(" | ") && !l.contains("usr%"))
        .collect();
    assert_eq!(lines.len(), 2, "one line per second:\n{stdout}");
    assert!(lines[1].trim_start().starts_with("2.0 "), "{stdout}");
    assert!(stdout.contains("usr%") && stdout.contains("syscalls/s"));
    assert!(stdout.contains("Server"), "totals at the end:\n{stdout}");
}

#[test]
fn monitor_stops_on_ctrl_c_with_exit_0() {
    let tree = ServerTree::start();
    let child = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["monitor", "--pid", &tree.pid()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1300));
    // SAFETY: kill(2) on the child we started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "stdout:\n{stdout}");
    assert!(started.elapsed() < Duration::from_secs(5), "slow to stop");
    assert!(stdout.contains("Server"), "totals at the end:\n{stdout}");
}

#[test]
fn a_server_pinned_by_someone_else_is_reported_pinned() {
    // nginx started with `taskset -c 1` and given as --pid: its affinity is read from the
    // process, whoever set it.
    let online = std::thread::available_parallelism().map_or(1, |n| n.get());
    assert!(online >= 2, "needs two CPUs to pin the server to one");
    let pinning = |tree: &ServerTree| {
        let args = [
            "run",
            &tree.url("/"),
            "-c",
            "1",
            "-n",
            "50",
            "--pid",
            &tree.pid(),
        ];
        let (code, j, stderr) = volley_json(&args, LIMIT);
        assert_eq!(code, 0, "{stderr}");
        j["env"].clone()
    };
    let env = pinning(&ServerTree::start_with(&["taskset", "-c", "1"]));
    assert_eq!(env["pinning"]["server_cpus"], "1", "{env}");
    // Not pinned at all: all CPUs allowed is no pinning.
    let env = pinning(&ServerTree::start());
    assert!(env["pinning"]["server_cpus"].is_null(), "{env}");
}

#[test]
fn a_monitor_started_as_a_load_opens_its_connections_counts_the_new_threads() {
    // `volley serve` starts a thread per connection: threads started while the monitor's
    // counters were being opened, by one that had none yet, were neither counted nor
    // inherited, and the window showed CPU with 0 syscalls.
    let tree = ServerTree::start();
    let mut load = Command::new(env!("CARGO_BIN_EXE_volley"))
        .args(["run", &tree.url("/"), "-c", "50", "-d", "6s", "--quiet"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = volley(&["monitor", "--pid", &tree.pid(), "-d", "2s"], LIMIT);
    let _ = load.wait();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(0), "{text}");
    let server = text
        .lines()
        .find(|l| l.trim_start().starts_with("Server"))
        .unwrap_or("");
    let cores: f64 = server
        .split("CPU ")
        .nth(1)
        .and_then(|r| r.split(" cores").next())
        .and_then(|c| c.parse().ok())
        .unwrap_or(0.0);
    if cores >= 0.2 {
        assert!(
            !server.contains(", 0 syscalls/s"),
            "CPU without syscalls:\n{text}"
        );
    }
}

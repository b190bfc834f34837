//! `volley bench` guardrails: `--dry-run` lists the cells and the estimated time without
//! starting anything; a large matrix needs `--yes` (or a terminal to confirm); a server on the
//! wrong port or backgrounded by its start line fails early with a hint; no zombie children
//! pile up during a suite; an interrupted suite sums up its skipped cells in one line.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common;
use common::{bench_suite as bench, suite_index as index};

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A control suite of `n` cells (closed port: nothing to start, nothing fails).
fn control_suite(n: usize, duration: &str) -> String {
    let conns: Vec<String> = (1..=n).map(|c| c.to_string()).collect();
    format!(
        "[suite]\nname = \"big\"\nduration = \"{duration}\"\n[[server]]\nname = \"none\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"g\"\nconnections = [{}]\n",
        conns.join(", ")
    )
}

#[test]
fn dry_run_lists_cells_and_the_estimate_and_starts_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"small\"\nrepetitions = 2\nwarmup = \"1s\"\nduration = \"3s\"\n[[server]]\nname = \"a\"\nstart = \"touch {0}/started; exec sleep 100\"\n[[server]]\nname = \"none\"\ncontrol = \"closed-port\"\n[[scenario]]\nname = \"get\"\nconnections = [1, 2]\n[[scenario]]\nname = \"one\"\nservers = [\"a\"]\n",
        dir.path().display()
    );
    let (o, out) = bench(dir.path(), &suite, &["--dry-run"]);
    let stdout = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // 2 reps × (a: 2 + 1 cells, none: 2 cells) = 10 cells of 1 + 3 + 2 s.
    assert!(
        stdout.contains("10 cells, about 1m00s, 2 repetitions"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  a · get (connections): 2 cells × 2 = 4, about 24s"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  a · one: 1 cell × 2 = 2, about 12s"),
        "{stdout}"
    );
    assert!(stdout.contains("builds not included"), "{stdout}");
    assert!(!out.exists(), "no results folder");
    assert!(!dir.path().join("started").exists(), "no server started");
}

#[test]
fn a_large_matrix_needs_yes_without_a_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = bench(dir.path(), &control_suite(101, "1s"), &[]);
    let err = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert!(
        err.contains("101 cells") && err.contains("--yes") && err.contains("--dry-run"),
        "{err}"
    );
    assert!(!out.exists(), "nothing created");
    // With --yes it goes ahead (--dry-run keeps the test short: it lists, and exits 0).
    let (o, out) = bench(
        dir.path(),
        &control_suite(101, "1s"),
        &["--yes", "--dry-run"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(text(&o.stdout).contains("101 cells"));
    assert!(!out.exists());
    // 100 cells is not over the limit, but 100 cells of 20 s are over 30 minutes.
    let (o, _) = bench(dir.path(), &control_suite(100, "20s"), &[]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("about 36m40s"),
        "{}",
        text(&o.stderr)
    );
}

#[test]
fn a_large_matrix_runs_with_yes() {
    let dir = tempfile::tempdir().unwrap();
    let mut suite = control_suite(101, "1ms");
    suite = suite.replace("[suite]\n", "[suite]\nwarmup = \"0s\"\n");
    let (o, out) = bench(dir.path(), &suite, &["--yes"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let idx = index(&out);
    assert_eq!(idx["rows"].as_array().unwrap().len(), 101);
}

/// A port on 127.0.0.1 that nothing listens on (the kernel's pick).
fn free_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

#[test]
fn a_server_on_another_port_fails_early_and_once() {
    let dir = tempfile::tempdir().unwrap();
    let fixed = free_port();
    let suite = format!(
        "[suite]\nname = \"w\"\nrepetitions = 3\nduration = \"1s\"\n[[server]]\nname = \"fixed\"\nstart = \"exec {VOLLEY} serve --port {fixed}\"\nready_timeout = \"60s\"\n[[scenario]]\nname = \"g\"\n"
    );
    let t0 = Instant::now();
    let (o, out) = bench(dir.path(), &suite, &[]);
    let took = t0.elapsed();
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let idx = index(&out);
    let rows = idx["rows"].as_array().unwrap();
    let first = rows[0]["reason"].as_str().unwrap();
    assert!(
        first.starts_with(&format!("listening on {fixed}, not on $PORT=")),
        "{first}"
    );
    assert!(first.contains("use $PORT or {port}"), "{first}");
    let detect = rows[0]["wall_s"].as_f64().unwrap();
    eprintln!("wrong port detected: cell wall {detect:.2} s (start, detection, stop)");
    assert!(
        detect < 5.0,
        "detected after {detect} s, not within a few seconds"
    );
    for r in &rows[1..] {
        let reason = r["reason"].as_str().unwrap();
        assert!(reason.starts_with("not started: listening on"), "{reason}");
        assert!(r["wall_s"].as_f64().unwrap() < 0.5, "no second wait: {r}");
    }
    assert!(took < Duration::from_secs(15), "the suite took {took:?}");
}

#[test]
fn a_backgrounded_server_gets_a_hint() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"bg\"\nduration = \"1s\"\n[[server]]\nname = \"bg\"\nstart = \"{VOLLEY} serve --port {{port}} &\"\n[[scenario]]\nname = \"g\"\n"
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(3), "{}", text(&o.stderr));
    let idx = index(&out);
    let reason = idx["rows"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("before it was ready")
            && reason.contains("ends with `&`")
            && reason.contains(&format!("(`exec {VOLLEY} serve --port")),
        "{reason}"
    );
    assert!(text(&o.stderr).contains("keep it in the foreground"));
}

/// Zombie children of `pid` (state Z, parent `pid`).
fn zombie_children(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(child) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) else {
            continue;
        };
        let mut f = stat.rsplit(')').next().unwrap_or("").split_whitespace();
        let (state, ppid) = (f.next(), f.next().and_then(|p| p.parse::<i32>().ok()));
        if state == Some("Z") && ppid == Some(pid) {
            out.push(child);
        }
    }
    out
}

#[test]
fn children_are_reaped_as_they_exit() {
    let dir = tempfile::tempdir().unwrap();
    // Servers that stop at once on SIGTERM, one that exits before it is ready, one that dies
    // during its run: each cell's first process must be waited for.
    let suite = format!(
        "[suite]\nname = \"z\"\nrepetitions = 3\nwarmup = \"0s\"\nduration = \"300ms\"\n[[server]]\nname = \"ok\"\nstart = \"exec {VOLLEY} serve --port {{port}}\"\n[[server]]\nname = \"early\"\nstart = \"exit 4\"\n[[server]]\nname = \"dies\"\nstart = \"{VOLLEY} serve --port {{port}} & sleep 0.5; kill -9 $!; exit 1\"\n[[scenario]]\nname = \"g\"\nconnections = [1, 2]\n"
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let mut child = Command::new(VOLLEY)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(dir.path().join("out"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as i32;
    // A zombie seen in two looks 1 s apart was not reaped as it exited.
    let mut seen: std::collections::BTreeMap<i32, Instant> = Default::default();
    let mut lasting = Vec::new();
    let mut looks = 0;
    while child.try_wait().unwrap().is_none() {
        let now = zombie_children(pid);
        seen.retain(|p, _| now.contains(p));
        for p in now {
            let first = *seen.entry(p).or_insert_with(Instant::now);
            if first.elapsed() > Duration::from_secs(1) && !lasting.contains(&p) {
                lasting.push(p);
            }
        }
        looks += 1;
        std::thread::sleep(Duration::from_millis(100));
    }
    assert!(
        looks > 20,
        "the suite ran long enough to be watched ({looks} looks)"
    );
    assert!(lasting.is_empty(), "zombie children of volley: {lasting:?}");
}

#[test]
fn an_interrupted_suite_sums_up_its_skipped_cells_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, control_suite(40, "3s")).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(VOLLEY)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while !out.join("suite.json").exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1000));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(130), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(
        stdout.contains(
            "skipped 39 cells (interrupted): none×g connections=2, none×g connections=3,"
        ),
        "{stdout}"
    );
    assert!(stdout.contains(", … and 33 more\n"), "{stdout}");
    assert!(
        !stdout.contains("skipped ["),
        "no row per skipped cell: {stdout}"
    );
    assert!(stdout.lines().count() < 20, "{stdout}");
    assert!(
        stdout.contains("40 cells in ")
            && stdout.contains(": 0 ok, 0 failed, 1 interrupted, 39 skipped (interrupted)."),
        "{stdout}"
    );
}

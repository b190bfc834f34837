//! `volley bench` against fake servers: one that exits at once, one that never becomes ready,
//! one that crashes mid-run, one that ignores SIGTERM (with a descendant that leaves its
//! process group). Each fails (or is noted) with the right reason, the other cells are saved,
//! and no process is left behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::{bench_suite as bench, suite_index as index};

const VOLLEY: &str = env!("CARGO_BIN_EXE_volley");

/// `suite.json` checked against `schema/suite.schema.json`.
fn assert_schema(idx: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/schema/suite.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let v = jsonschema::draft202012::new(&schema).expect("a valid draft 2020-12 schema");
    let errs: Vec<String> = v
        .iter_errors(idx)
        .map(|e| format!("{}: {e}", e.instance_path))
        .collect();
    assert!(
        errs.is_empty(),
        "suite.json violates the schema:\n{}",
        errs.join("\n")
    );
    let mut broken = idx.clone();
    broken["rows"][0]["status"] = "fine".into();
    assert!(!v.is_valid(&broken), "a broken index passed the schema");
}

/// The RunResult a suite row points at.
fn run_of(out: &Path, row: &Value) -> Value {
    let path = out.join(row["path"].as_str().expect("a measured row has a path"));
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Whether one of a row's notes starts with `prefix`.
fn has_note(row: &Value, prefix: &str) -> bool {
    row["notes"]
        .as_array()
        .is_some_and(|n| n.iter().any(|n| n.as_str().unwrap().starts_with(prefix)))
}

fn rows<'a>(idx: &'a Value, server: &str) -> Vec<&'a Value> {
    idx["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["server"] == server)
        .collect()
}

/// Processes whose command line or environment holds `marker`.
fn processes_with(marker: &str) -> Vec<i32> {
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        if pid == std::process::id() as i32 {
            continue;
        }
        let hit = ["cmdline", "environ"].iter().any(|f| {
            std::fs::read(e.path().join(f))
                .map(|b| String::from_utf8_lossy(&b).contains(marker))
                .unwrap_or(false)
        });
        let zombie = std::fs::read_to_string(e.path().join("stat"))
            .map(|s| {
                s.rsplit(')')
                    .next()
                    .unwrap_or("")
                    .trim_start()
                    .starts_with('Z')
            })
            .unwrap_or(true);
        if hit && !zombie {
            found.push(pid);
        }
    }
    found
}

fn serve_line() -> String {
    format!("exec {VOLLEY} serve --port {{port}}")
}

#[test]
fn failing_servers_fail_only_their_cells_and_leave_no_process() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("volley-bench-test-{}", std::process::id());
    // Every server gets the marker in its environment, so leftovers can be found in /proc.
    let env = format!("env = {{ VOLLEY_TEST_MARKER = \"{marker}\" }}");
    let suite = format!(
        r#"
[suite]
name = "faults"
duration = "2s"
server_cpus = "1"

[[server]]
name = "good"
start = "grep Cpus_allowed_list /proc/self/status >&2; {serve}"
{env}
version = "{VOLLEY} --version"

[[server]]
name = "exits"
start = "echo 'fatal: cannot open config' >&2; exit 4"
{env}

[[server]]
name = "never-ready"
start = "exec sleep 60"
ready_timeout = "1s"
{env}

# Crashes half a second into the load (once its two connections are up), not a fixed time
# after it starts: on a busy machine starting it can take that long.
[[server]]
name = "crashes"
start = "{VOLLEY} serve --port {{port}} & p=$!; until [ $(ss -Htn state established '( sport = :{{port}} )' | wc -l) -ge 2 ]; do sleep 0.05; done; sleep 0.5; echo 'panic: out of cheese' >&2; kill -9 $p; exit 2"
{env}

[[server]]
name = "stubborn"
start = "trap '' TERM; setsid sh -c 'trap \"\" TERM; exec sleep 300' & {serve}"
{env}

[[server]]
name = "none"
control = "closed-port"

[[scenario]]
name = "get"
connections = 2
"#,
        serve = serve_line(),
    );
    let t0 = Instant::now();
    let (o, out) = bench(dir.path(), &suite, &[]);
    let took = t0.elapsed();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(
        o.status.code(),
        Some(3),
        "a failed cell exits 3\n{stderr}\n{stdout}"
    );

    let idx = index(&out);
    assert_schema(&idx);
    assert_eq!(idx["schema"], "volley.suite/1");
    assert_eq!(idx["state"], "done");
    assert_eq!(idx["env"]["pinning"]["server_cpus"], "1");
    assert!(idx["env"]["tools"]["good"]
        .as_str()
        .unwrap()
        .starts_with("volley "));

    // The good server's cell is saved, pinned, and its RunResult is on disk.
    let good = rows(&idx, "good");
    assert_eq!(good[0]["status"], "ok", "{:#}", good[0]);
    let run = run_of(&out, good[0]);
    assert_eq!(run["schema"], "volley.run/1");
    let run_schema: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/schema/run.schema.json"
        ))
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::draft202012::new(&run_schema).unwrap();
    assert!(
        v.is_valid(&run),
        "a cell's RunResult is a valid volley.run/1"
    );
    assert!(run["requests"]["completed"].as_u64().unwrap() > 0);
    assert!(run["server"]["cpu_user_s"].is_number(), "the monitor ran");
    assert_eq!(run["env"]["pinning"]["server_cpus"], "1");
    let good_log = std::fs::read_to_string(out.join(good[0]["log"].as_str().unwrap())).unwrap();
    assert!(
        good_log.contains("Cpus_allowed_list:\t1\n"),
        "the server ran on CPU 1 only: {good_log}"
    );

    let exits = rows(&idx, "exits");
    assert_eq!(exits[0]["status"], "failed");
    assert_eq!(
        exits[0]["reason"],
        "exited with status 4 before it was ready"
    );
    assert_eq!(exits[0]["stderr_tail"][0], "fatal: cannot open config");

    let never = rows(&idx, "never-ready");
    assert_eq!(never[0]["status"], "failed");
    let reason = never[0]["reason"].as_str().unwrap();
    assert!(reason.starts_with("not ready after 1s"), "{reason}");
    assert!(
        never[0]["wall_s"].as_f64().unwrap() < 3.0,
        "ready_timeout is honoured"
    );

    let crashes = rows(&idx, "crashes");
    assert_eq!(crashes[0]["status"], "failed", "{:#}", crashes[0]);
    let reason = crashes[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("exited with status 2 during the run"),
        "{reason}"
    );
    assert!(
        crashes[0]["path"].is_string(),
        "what was measured before the crash is kept"
    );
    assert!(crashes[0]["stderr_tail"]
        .as_array()
        .unwrap()
        .iter()
        .any(|l| l == "panic: out of cheese"));

    let stubborn = rows(&idx, "stubborn");
    assert_eq!(stubborn[0]["status"], "ok", "{:#}", stubborn[0]);
    assert!(
        stubborn[0]["notes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|n| n.as_str().unwrap().contains("killed with SIGKILL")),
        "{:#}",
        stubborn[0]
    );
    assert!(stubborn[0]["wall_s"].as_f64().unwrap() >= 5.0);

    let none = rows(&idx, "none");
    assert_eq!(none[0]["status"], "ok", "a control never fails");
    assert_eq!(none[0]["control"], true);
    assert_eq!(none[0]["headline"]["completed"], 0);
    assert!(none[0]["headline"]["errors"].as_u64().unwrap() > 0);

    // The final table and the results path.
    assert!(stdout.contains("good"), "{stdout}");
    assert!(stdout.contains("failed [1]"), "{stdout}");
    assert!(stdout.contains("suite.json"), "{stdout}");
    assert!(
        stdout.contains("servers pinned to CPU 1, volley not pinned"),
        "{stdout}"
    );
    assert!(stderr.contains("[1/6] good"), "progress: {stderr}");
    assert!(stderr.contains("ETA"), "progress: {stderr}");
    assert!(took < Duration::from_secs(60), "took {took:?}");

    // Reports of everything so far are rewritten after every cell.
    for f in ["report.html", "report.md", "results.csv"] {
        assert!(out.join(f).is_file(), "{f} written");
    }
    let md = std::fs::read_to_string(out.join("report.md")).unwrap();
    assert!(
        md.contains("| good |") && md.contains("exited with status 4"),
        "{md}"
    );

    let left = processes_with(&marker);
    assert!(left.is_empty(), "processes left behind: {left:?}");
}

#[test]
fn broken_thresholds_in_a_suite_exit_1() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"{}\"\n[[scenario]]\nname = \"g\"\nthresholds = [\"rps>1\", \"p99<1us\"]\n",
        serve_line()
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    let r = &idx["rows"][0];
    assert_eq!(r["status"], "ok", "a broken threshold is not a failed cell");
    assert!(has_note(r, "threshold broken: p99<1us"), "{r:#}");
    assert!(String::from_utf8_lossy(&o.stdout).contains("thresholds broken"));
}

#[test]
fn a_cell_whose_responses_fail_their_checks_breaks_the_implied_threshold() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"created\"\nrequests = 200\nconnections = 2\nexpect_status = 201\n",
        server.addr
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    let r = &idx["rows"][0];
    assert_eq!(r["status"], "ok", "a broken threshold is not a failed cell");
    assert!(
        has_note(r, "threshold broken: checks<=1%, implied by the checks"),
        "{r:#}"
    );
    let run = run_of(&out, r);
    assert_eq!(
        run["thresholds"][0]["implied"], true,
        "{:#}",
        run["thresholds"]
    );
}

#[test]
fn a_url_server_is_measured_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"hello\"\npath = \"/hello\"\nconnections = 2\n",
        server.addr
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    let r = &idx["rows"][0];
    assert_eq!(r["status"], "ok");
    assert!(r["log"].is_null(), "no lifecycle, no server log");
    let run = run_of(&out, r);
    assert_eq!(
        run["target"]["url"],
        format!("http://{}/hello", server.addr)
    );
    assert!(run["server"].is_null(), "no monitor without a process");
    assert!(run["requests"]["completed"].as_u64().unwrap() > 0);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("servers not pinned, volley not pinned"),
        "{stdout}"
    );
}

#[test]
fn bad_suite_files_name_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = bench(
        dir.path(),
        "[suite]\nname = \"x\"\n[[server]]\nname = \"a\"\nstart = \"true\"\n[[scenario]]\nname = \"g\"\nconnections = -3\n",
        &[],
    );
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("suite.toml:8:15:"), "{e}");
    assert!(e.contains("connections"), "{e}");
    assert!(!out.exists(), "nothing is created for a bad suite");

    let (o, _) = bench(dir.path(), "[suite\nname = 1\n", &[]);
    assert_eq!(o.status.code(), Some(2));
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("suite.toml:1:"), "{e}");

    let missing = Command::new(VOLLEY)
        .args(["bench", "/no/such/suite.toml"])
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("/no/such/suite.toml"));
}

#[test]
fn only_and_out_are_checked() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"{}\"\n[[server]]\nname = \"b\"\nstart = \"exit 1\"\n[[scenario]]\nname = \"g\"\n",
        serve_line()
    );
    let (o, _) = bench(dir.path(), &suite, &["--only", "zzz"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--only: `zzz`"));

    // --only a: the failing server b is not run, so the suite passes.
    let (o, out) = bench(dir.path(), &suite, &["--only", "a"]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    assert_eq!(idx["rows"].as_array().unwrap().len(), 1);
    assert_eq!(idx["only"][0], "a");

    // A results folder is never overwritten.
    let (o, _) = bench(dir.path(), &suite, &["--only", "a"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not empty"));
}

#[test]
fn a_failed_build_fails_only_its_server() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\nrepetitions = 2\n[[server]]\nname = \"broken\"\nbuild = \"echo 'error[E0425]: cannot find value' >&2; exit 101\"\nstart = \"{serve}\"\n[[server]]\nname = \"fine\"\nbuild = \"true\"\nstart = \"{serve}\"\n[[scenario]]\nname = \"g\"\n",
        serve = serve_line()
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(o.status.code(), Some(3));
    let idx = index(&out);
    assert_schema(&idx);
    let builds = idx["builds"].as_array().unwrap();
    assert_eq!(builds[0]["status"], "failed");
    assert!(builds[0]["reason"]
        .as_str()
        .unwrap()
        .contains("exited with status 101"));
    let log = std::fs::read_to_string(out.join(builds[0]["log"].as_str().unwrap())).unwrap();
    assert!(log.contains("error[E0425]"));
    assert_eq!(builds[1]["status"], "ok");
    for r in rows(&idx, "broken") {
        assert_eq!(r["status"], "failed");
        assert!(r["reason"].as_str().unwrap().starts_with("build failed"));
        assert_eq!(r["stderr_tail"][0], "error[E0425]: cannot find value");
    }
    for r in rows(&idx, "fine") {
        assert_eq!(r["status"], "ok");
    }
    assert!(String::from_utf8_lossy(&o.stderr).contains("error[E0425]"));
}

#[test]
fn ctrl_c_keeps_the_cell_and_skips_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("volley-bench-int-{}", std::process::id());
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"20s\"\n[[server]]\nname = \"a\"\nstart = \"{}\"\nenv = {{ M = \"{marker}\" }}\n[[scenario]]\nname = \"g\"\nconnections = [1, 2]\n",
        serve_line()
    );
    let file = dir.path().join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let out = dir.path().join("out");
    let child = Command::new(VOLLEY)
        .arg("bench")
        .arg(&file)
        .arg("--out")
        .arg(&out)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Wait until the first cell is measuring.
    let deadline = Instant::now() + Duration::from_secs(20);
    while processes_with(&marker).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(1500));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(130),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    assert_schema(&idx);
    assert_eq!(idx["state"], "interrupted");
    let r = idx["rows"].as_array().unwrap();
    assert_eq!(r[0]["status"], "interrupted");
    assert!(
        r[0]["path"].is_string(),
        "the interrupted measurement is saved"
    );
    let run = run_of(&out, &r[0]);
    assert_eq!(run["interrupted"], true);
    assert_eq!(r[1]["status"], "skipped");
    assert!(processes_with(&marker).is_empty(), "the server was stopped");
    let md = std::fs::read_to_string(out.join("report.md")).expect("the report is kept");
    assert!(md.contains("| a |"), "{md}");
}

/// Runs `volley bench` on a small tmpfs of its own (a private mount namespace, so nothing
/// leaks), then copies the results out. Needs root, as CI and this project's machines are.
fn bench_on_tmpfs(dir: &Path, suite: &str, size: &str) -> (Output, PathBuf) {
    let mnt = dir.join("mnt");
    let keep = dir.join("keep");
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&keep).unwrap();
    let file = dir.join("suite.toml");
    std::fs::write(&file, suite).unwrap();
    let script = format!(
        "mount -t tmpfs -o size={size} volley-test {mnt} || exit 90; {VOLLEY} bench {file} --out {mnt}/out; rc=$?; cp -r {mnt}/out {keep}/ 2>/dev/null; exit $rc",
        mnt = mnt.display(),
        file = file.display(),
        keep = keep.display()
    );
    let o = Command::new("unshare")
        .args(["-m", "sh", "-c", &script])
        .output()
        .unwrap();
    assert_ne!(
        o.status.code(),
        Some(90),
        "mounting a tmpfs needs root: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    (o, keep.join("out"))
}

#[test]
fn a_full_disk_is_refused_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"{}\"\n[[scenario]]\nname = \"g\"\n",
        serve_line()
    );
    let (o, out) = bench_on_tmpfs(dir.path(), &suite, "2m");
    assert_eq!(
        o.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("free") && e.contains("need about"), "{e}");
    assert!(!out.exists(), "nothing was started");
}

#[test]
fn a_disk_that_fills_up_loses_no_measurement() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    // The first cell's server fills the disk before it starts; the second frees it.
    let start = format!(
        "if [ ! -e {m}/filled ]; then touch {m}/filled; dd if=/dev/zero of={m}/filler bs=64k 2>/dev/null; else rm -f {m}/filler; fi; {serve}",
        m = mnt.display(),
        serve = serve_line()
    );
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"{start}\"\n[[scenario]]\nname = \"g\"\nconnections = [1, 2]\n"
    );
    let (o, out) = bench_on_tmpfs(dir.path(), &suite, "20m");
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(
        o.status.code(),
        Some(0),
        "everything was written in the end\n{stderr}"
    );
    assert!(stderr.contains("kept in memory"), "{stderr}");
    assert!(stderr.contains("(it failed before)"), "{stderr}");
    let idx = index(&out);
    for r in idx["rows"].as_array().unwrap() {
        assert_eq!(r["status"], "ok", "{r:#}");
        let p = r["path"].as_str().expect("both results written");
        assert!(out.join(p).is_file());
        let notes = r["notes"].as_array().cloned().unwrap_or_default();
        assert!(
            !notes
                .iter()
                .any(|x| x.as_str().unwrap().contains("not written")),
            "{r:#}"
        );
    }
}

#[test]
fn a_disk_that_stays_full_shows_the_numbers_and_exits_3() {
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    let start = format!(
        "dd if=/dev/zero of={m}/filler-$PORT bs=64k 2>/dev/null; {serve}",
        m = mnt.display(),
        serve = serve_line()
    );
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"a\"\nstart = \"{start}\"\n[[scenario]]\nname = \"g\"\n"
    );
    let (o, _) = bench_on_tmpfs(dir.path(), &suite, "20m");
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert_eq!(o.status.code(), Some(3), "{stderr}");
    assert!(stderr.contains("could not be written"), "{stderr}");
    assert!(stderr.contains("runs/a__g__r1.json"), "{stderr}");
    // The measurement is in the final table all the same.
    let line = stdout.lines().find(|l| l.starts_with("g ")).expect(&stdout);
    assert!(!line.contains(" - "), "numbers shown: {line}");
}

/// An open-loop cell the server cannot keep up with: a note on the cell (the suite goes on and
/// exits 0), and its result says the corrected percentiles are lower bounds.
#[test]
fn a_shortfall_in_a_suite_is_a_note_on_the_cell() {
    let dir = tempfile::tempdir().unwrap();
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = format!(
        "[suite]\nname = \"x\"\nduration = \"1s\"\n[[server]]\nname = \"slow\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"over\"\npath = \"/delay?ms=100\"\nrate = 100\nconnections = 2\n",
        server.addr
    );
    let (o, out) = bench(dir.path(), &suite, &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    let r = &idx["rows"][0];
    assert_eq!(r["status"], "ok", "a shortfall is not a failed cell");
    assert!(has_note(r, "target rate not reached:"), "{r:#}");
    let run = run_of(&out, r);
    assert_eq!(run["latency_lower_bound"], true);
    assert!(run["achieved_rps"].as_f64().unwrap() < 50.0);
    assert_eq!(r["headline"]["latency_lower_bound"], true);
    assert_schema(&idx);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(
        stdout.contains("≥ "),
        "the table marks lower bounds\n{stdout}"
    );
}

/// A cell whose responses are all 404 measured an error page: failed with the reason (the
/// suite exits 3), or with `fail_on_status = false` kept with a note.
#[test]
fn a_cell_of_error_pages_fails_unless_the_suite_says_otherwise() {
    let server = volley::serve::spawn("127.0.0.1:0").unwrap();
    let suite = |extra: &str| {
        format!(
            "[suite]\nname = \"x\"\nduration = \"300ms\"\n{extra}[[server]]\nname = \"there\"\nurl = \"http://{}/\"\n[[scenario]]\nname = \"missing\"\npath = \"/nothing\"\nconnections = 1\n",
            server.addr
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let (o, out) = bench(dir.path(), &suite(""), &[]);
    assert_eq!(
        o.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let idx = index(&out);
    let r = &idx["rows"][0];
    assert_eq!(r["status"], "failed", "{r:#}");
    assert_eq!(r["reason"], "404 on every response");
    assert_eq!(
        run_of(&out, r)["requests"]["failed"],
        run_of(&out, r)["requests"]["completed"]
    );

    let dir = tempfile::tempdir().unwrap();
    let (o, out) = bench(dir.path(), &suite("fail_on_status = false\n"), &[]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let r = &index(&out)["rows"][0];
    assert_eq!(r["status"], "ok");
    assert!(has_note(r, "404 on every response"), "{r:#}");

    let dir = tempfile::tempdir().unwrap();
    let (o, _) = bench(dir.path(), &suite("fail_on_status = \"yes\"\n"), &[]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("fail_on_status") && err.contains("suite.toml:4"),
        "{err}"
    );
}

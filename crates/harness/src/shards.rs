//! A cell of `shards = N` (N > 1): N `volley run --shard i/N` processes of volley itself,
//! started together on this host at one `--start-at`, each writing its RunResult to
//! `runs/<cell>.shards/shard-i.json` (its stderr to `logs/<cell>.shard-i.stderr`); the N
//! results are merged by `merge::merge`, the path of `volley merge`, into the cell's RunResult
//! (docs/contract.md, "Suites").

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant, SystemTime};

use super::cell::CellOutcome;
use super::lifecycle;
use super::matrix::PlannedCell;
use super::Harness;
use volley_config::suite::shard_lead;
use volley_config::{GcLogConfig, RunConfig};
use volley_merge as merge;
use volley_model::result::{CellStatus, RunResult};

/// How long after the load's planned end the processes may still run (a drain, writing the
/// result) before they are stopped like Ctrl-C stops them.
const OVERRUN: Duration = Duration::from_secs(30);

/// How long a process stopped that way has to write its result before it is killed.
const KILL_AFTER: Duration = Duration::from_secs(10);

/// How often the processes are looked at while they run.
const POLL: Duration = Duration::from_millis(20);

/// What the harness gives shard 0 alone: the server's process group to monitor and its
/// runtime's GC log. A merge keeps `server` only when exactly one shard monitored it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Monitored<'a> {
    /// The server's process group.
    pub pid: Option<i32>,
    /// Its GC log.
    pub gc_log: Option<&'a GcLogConfig>,
}

/// One shard's process.
struct Process {
    /// Shard index.
    index: u32,
    child: Child,
    /// How it ended, once it has.
    status: Option<ExitStatus>,
    /// Its RunResult, as given to `--json`.
    json: PathBuf,
    /// Its stderr.
    log: PathBuf,
}

impl Harness<'_> {
    /// Runs a cell of `cell.cell.shards` processes against `url` with the cell's `flags` (its
    /// `argv` is the whole load's command line, `cfg` its configuration) and merges their
    /// results.
    pub(super) fn sharded_cell(
        &mut self,
        cell: &PlannedCell,
        url: &str,
        (cfg, flags, argv): (&RunConfig, &[String], &[String]),
        monitored: Monitored,
    ) -> CellOutcome {
        let n = cell.cell.shards;
        let rel_dir = format!("runs/{}.shards", cell.id);
        let dir = self.out_dir.join(&rel_dir);
        if let Err(e) = std::fs::create_dir_all(&dir) {
            return CellOutcome::failed(format!("{}: {e}", dir.display()), Vec::new());
        }
        let exe = match std::env::current_exe() {
            Ok(p) => p,
            Err(e) => {
                return CellOutcome::failed(format!("cannot find volley itself: {e}"), Vec::new())
            }
        };
        if self.interrupted() {
            return interrupted("interrupted before the shards started");
        }
        let lead = shard_lead(n);
        let start_at = humantime::format_rfc3339_millis(SystemTime::now() + lead).to_string();
        let started = Instant::now();
        let mut procs: Vec<Process> = Vec::new();
        for i in 0..n {
            let json = dir.join(format!("shard-{i}.json"));
            let log = self
                .out_dir
                .join(format!("logs/{}.shard-{i}.stderr", cell.id));
            let args = shard_args(ShardRun {
                url,
                flags,
                index: i,
                count: n,
                start_at: &start_at,
                json: &json,
                monitored: if i == 0 {
                    monitored
                } else {
                    Monitored {
                        pid: None,
                        gc_log: None,
                    }
                },
            });
            match spawn(&exe, &args, &log) {
                Ok(child) => procs.push(Process {
                    index: i,
                    child,
                    status: None,
                    json,
                    log,
                }),
                Err(e) => {
                    kill_all(&mut procs);
                    return CellOutcome::failed(
                        format!("cannot start shard {i}/{n} ({}): {e}", exe.display()),
                        Vec::new(),
                    );
                }
            }
        }
        let bound = run_bound(cfg, lead).map(|b| started + b);
        let overran = self.wait_all(&mut procs, bound);
        let mut inputs = Vec::new();
        let mut missing = Vec::new();
        for p in &procs {
            let rel = format!("{rel_dir}/shard-{}.json", p.index);
            match merge::read_shard(&p.json) {
                Ok(r) => inputs.push((rel, r)),
                Err(_) => missing.push(no_result(p, n)),
            }
        }
        if !missing.is_empty() {
            let reason = missing.join("; ");
            if self.interrupted() {
                return interrupted(&format!(
                    "interrupted before every shard had measured: {reason}"
                ));
            }
            let reason = match overran {
                Some(late) => format!("{late}; {reason}"),
                None => reason,
            };
            return CellOutcome::failed(reason, Vec::new());
        }
        let mut whole = argv.to_vec();
        whole.extend(["--shards".to_string(), n.to_string()]);
        let mut merged =
            match merge::merge(&inputs, volley_model::result::redact::argv(&whole), false) {
                Ok(m) => m,
                Err(e) => {
                    return CellOutcome::failed(format!("the shards do not merge: {e}"), Vec::new())
                }
            };
        self.complete(&mut merged, cfg);
        let interrupted = merged.interrupted;
        let mut outcome = self.judged(cell, merged, interrupted);
        // Stopped for running too long, not by Ctrl-C: what they measured is kept, but the
        // cell is not the load that was planned.
        if let (Some(late), false) = (overran, self.interrupted()) {
            outcome.status = CellStatus::Failed;
            outcome.reason = Some(late);
        }
        outcome
    }

    /// What the merge cannot know: the server's CPUs (the processes were not told them) and
    /// the cell's thresholds, judged on the whole load (the processes were given none).
    fn complete(&self, merged: &mut RunResult, cfg: &RunConfig) {
        merged.env.pinning.server_cpus = self.suite.server_cpus.as_ref().map(|c| c.text.clone());
        merged.thresholds = cfg.thresholds.iter().map(|t| t.check(merged)).collect();
    }

    /// Waits for every process; each Ctrl-C is passed on to them as SIGINT (the first drains
    /// and keeps what they measured, the second stops them), as is the end of `bound`, after
    /// which they are killed if they do not end within [`KILL_AFTER`]. Says so when the bound
    /// was reached.
    fn wait_all(&mut self, procs: &mut [Process], bound: Option<Instant>) -> Option<String> {
        let mut forwarded = self.interrupts.load(Ordering::SeqCst);
        let mut stopped: Option<Instant> = None;
        let mut overran = None;
        loop {
            for p in procs.iter_mut().filter(|p| p.status.is_none()) {
                p.status = p.child.try_wait().ok().flatten();
            }
            let running: Vec<&mut Process> =
                procs.iter_mut().filter(|p| p.status.is_none()).collect();
            if running.is_empty() {
                return overran;
            }
            let pressed = self.interrupts.load(Ordering::SeqCst);
            let now = Instant::now();
            if pressed > forwarded {
                forwarded = pressed;
                signal(&running, libc::SIGINT);
            }
            match (bound, stopped) {
                (Some(b), None) if now > b => {
                    let shards: Vec<String> = running.iter().map(|p| p.index.to_string()).collect();
                    overran = Some(format!(
                        "shard {} still running {}s after the load's planned end: stopped",
                        shards.join(", "),
                        OVERRUN.as_secs()
                    ));
                    signal(&running, libc::SIGINT);
                    stopped = Some(now);
                }
                (_, Some(t)) if now > t + KILL_AFTER => {
                    signal(&running, libc::SIGKILL);
                }
                _ => {}
            }
            std::thread::sleep(POLL);
        }
    }
}

/// A cell Ctrl-C ended before it had a measurement.
fn interrupted(reason: &str) -> CellOutcome {
    let mut o = CellOutcome::failed(reason.to_string(), Vec::new());
    o.status = CellStatus::Interrupted;
    o
}

/// Why shard `p` of `n` has no result: how it ended and the last line of its stderr.
fn no_result(p: &Process, n: u32) -> String {
    let how = p
        .status
        .map_or("did not end".to_string(), lifecycle::describe);
    let last = lifecycle::tail(&p.log, 1, |_| true);
    match last.first() {
        Some(line) => format!("shard {}/{n} {how} without a result: {line}", p.index),
        None => format!("shard {}/{n} {how} without a result", p.index),
    }
}

/// Sends `sig` to each process.
fn signal(procs: &[&mut Process], sig: i32) {
    for p in procs {
        // SAFETY: kill(2) on a child not yet waited for: its pid is still ours.
        unsafe {
            libc::kill(p.child.id() as i32, sig);
        }
    }
}

/// Kills and waits for the processes started so far (one could not be started).
fn kill_all(procs: &mut [Process]) {
    for p in procs {
        let _ = p.child.kill();
        let _ = p.child.wait();
    }
}

/// Starts volley (`exe`) with `args`, its stderr to `log`, in a process group of its own (a
/// Ctrl-C at the terminal reaches the harness, which passes it on once), ended with SIGTERM
/// (which it takes as Ctrl-C) if the harness dies.
fn spawn(exe: &Path, args: &[String], log: &Path) -> std::io::Result<Child> {
    let err = std::fs::File::create(log)?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .process_group(0);
    // SAFETY: between fork and exec only prctl, which is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            Ok(())
        });
    }
    cmd.spawn()
}

/// One shard's process, as [`shard_args`] spells it.
struct ShardRun<'a> {
    url: &'a str,
    /// The cell's flags.
    flags: &'a [String],
    index: u32,
    count: u32,
    /// `--start-at`, RFC 3339.
    start_at: &'a str,
    /// Where it writes its RunResult.
    json: &'a Path,
    /// The server it monitors (shard 0 only).
    monitored: Monitored<'a>,
}

/// The arguments of a shard's `volley run`: the cell's flags without `--verify` (run once by
/// the harness before) and thresholds (judged on the merged result, not on a share), its
/// `--shard`, the common `--start-at` on this host's clock, quiet, its JSON file, and the
/// monitor when it has it.
fn shard_args(s: ShardRun) -> Vec<String> {
    let mut args = vec!["run".to_string(), s.url.to_string()];
    args.extend(
        s.flags
            .iter()
            .filter(|f| *f != "--verify" && !f.starts_with("--threshold="))
            // The monitor's interval goes with the monitor (shard 0's --pid).
            .filter(|f| s.monitored.pid.is_some() || !f.starts_with("--monitor-interval="))
            .cloned(),
    );
    args.extend([
        "--shard".to_string(),
        format!("{}/{}", s.index, s.count),
        "--start-at".to_string(),
        s.start_at.to_string(),
        "--clock-budget".to_string(),
        "off".to_string(),
        "--quiet".to_string(),
        "--json".to_string(),
        s.json.display().to_string(),
    ]);
    if let Some(pid) = s.monitored.pid {
        args.extend(["--pid".to_string(), pid.to_string()]);
    }
    if let Some(log) = s.monitored.gc_log {
        args.extend(["--gc-log".to_string(), log.path.display().to_string()]);
    }
    args
}

/// How long the processes of a load with a time may run from their spawn: the lead, how late
/// one may start, warm-up, the measured time, a timeout's drain and [`OVERRUN`]. None for a
/// load of a number of requests only, which has no planned end.
fn run_bound(cfg: &RunConfig, lead: Duration) -> Option<Duration> {
    let load = &cfg.load;
    let measured = load.duration.or_else(|| {
        load.ramp
            .as_ref()
            .map(|r| Duration::from_nanos(r.ramp.total_ns()))
    })?;
    Some(lead + cfg.start.max_late + load.warmup + measured + load.timeout + OVERRUN)
}

#[cfg(test)]
mod tests {
    use super::*;
    use volley_config::{args_from, RunFlags};

    /// `volley run`'s flags, and the two output flags a shard is given (`cmd::run`'s).
    #[derive(clap::Args)]
    struct Cli {
        #[command(flatten)]
        flags: RunFlags,
        #[arg(long)]
        quiet: bool,
        #[arg(long)]
        json: Option<String>,
    }

    fn config(args: &[&str]) -> RunConfig {
        let flags: RunFlags = args_from(args).unwrap();
        RunConfig::from_flags(&flags, 2).unwrap()
    }

    #[test]
    fn each_shard_gets_its_index_the_common_start_and_shard_0_the_monitor() {
        let flags: Vec<String> = [
            "--rate=600",
            "--verify",
            "--threshold=p99<10ms",
            "--header=X-A: 1",
        ]
        .map(String::from)
        .to_vec();
        let gc = GcLogConfig {
            path: "/tmp/gc.log".into(),
            format: None,
        };
        let run = |index, monitored| {
            shard_args(ShardRun {
                url: "http://127.0.0.1:8080/",
                flags: &flags,
                index,
                count: 3,
                start_at: "2030-01-01T00:00:01.500Z",
                json: Path::new("out/runs/c.shards/shard-1.json"),
                monitored,
            })
        };
        let first = run(
            0,
            Monitored {
                pid: Some(4242),
                gc_log: Some(&gc),
            },
        );
        assert_eq!(
            first,
            [
                "run",
                "http://127.0.0.1:8080/",
                "--rate=600",
                "--header=X-A: 1",
                "--shard",
                "0/3",
                "--start-at",
                "2030-01-01T00:00:01.500Z",
                "--clock-budget",
                "off",
                "--quiet",
                "--json",
                "out/runs/c.shards/shard-1.json",
                "--pid",
                "4242",
                "--gc-log",
                "/tmp/gc.log",
            ]
        );
        let other = run(
            2,
            Monitored {
                pid: None,
                gc_log: None,
            },
        );
        assert_eq!(other[5], "2/3");
        assert!(!other.iter().any(|a| a == "--pid" || a == "--gc-log"));
        // What each process is given parses as `volley run` would parse it.
        let cli: Cli = args_from(&other[1..]).unwrap();
        assert_eq!(cli.flags.shard.as_deref(), Some("2/3"));
        assert!(!cli.flags.verify && cli.flags.threshold.is_empty());
        assert!(cli.quiet && cli.json.is_some());
    }

    #[test]
    fn the_wait_is_bounded_by_the_loads_planned_end() {
        let lead = Duration::from_millis(1_015);
        let timed = config(&[
            "http://127.0.0.1:1/",
            "-R",
            "600",
            "-d",
            "2s",
            "--warmup",
            "1s",
            "--timeout",
            "3s",
        ]);
        // 1.015 + 0.1 (max late) + 1 + 2 + 3 + 30 s.
        assert_eq!(run_bound(&timed, lead), Some(Duration::from_millis(37_115)));
        let counted = config(&["http://127.0.0.1:1/", "-n", "1000"]);
        assert_eq!(run_bound(&counted, lead), None);
    }

    #[test]
    fn a_shard_without_a_result_is_named_with_its_last_line() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("shard-1.stderr");
        std::fs::write(
            &log,
            "volley: starting\n\nvolley: late shard: it could start only 412.0 ms after --start-at\n",
        )
        .unwrap();
        let child = Command::new("sh").args(["-c", "exit 3"]).spawn().unwrap();
        let mut p = Process {
            index: 1,
            child,
            status: None,
            json: dir.path().join("shard-1.json"),
            log,
        };
        p.status = Some(p.child.wait().unwrap());
        assert_eq!(
            no_result(&p, 3),
            "shard 1/3 exited with status 3 without a result: volley: late shard: it could start only 412.0 ms after --start-at"
        );
        p.log = dir.path().join("none");
        assert_eq!(
            no_result(&p, 3),
            "shard 1/3 exited with status 3 without a result"
        );
    }
}

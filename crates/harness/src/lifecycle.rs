//! A managed server's life in one cell: build (once per suite), start in its own process group
//! (pinned, with `PORT`), stop with SIGTERM then SIGKILL, reap it, and prove that no process of
//! it is left. Waiting until it is ready is in [`super::ready`].

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::net::TcpListener;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::certificate::{self, CertFiles};
use super::pinning;
use super::runtime;
use volley_config::suite::{Managed, Protocol};
use volley_config::GcLogConfig;
use volley_model::sys::cpus::CpuList;
use volley_monitor::gc::gotrace;
use volley_monitor::procfs;

/// How long a server gets between SIGTERM and SIGKILL (docs/contract.md, "Suites").
pub(crate) const STOP_GRACE: Duration = Duration::from_secs(5);

/// Lines of a server's stderr shown with a failure.
pub(crate) const TAIL_LINES: usize = 12;

/// A port on 127.0.0.1 that nothing listened on a moment ago (the kernel's pick).
pub(crate) fn free_port() -> std::io::Result<u16> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?.port())
}

/// Substitutes `{port}` in a start line or environment value.
pub(crate) fn substitute(text: &str, port: u16) -> String {
    text.replace("{port}", &port.to_string())
}

/// Runs a build line in `dir` through `sh -c`, output to `log`. `Err` carries the reason.
pub fn build(dir: &Path, line: &str, log: &Path, interrupts: &AtomicUsize) -> Result<(), String> {
    let out = File::create(log).map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let err = out
        .try_clone()
        .map_err(|e| format!("cannot write {}: {e}", log.display()))?;
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(line)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("cannot run `sh -c {line}` in {}: {e}", dir.display()))?;
    let pgid = child.id() as i32;
    loop {
        let done = match child.try_wait() {
            Ok(Some(status)) if status.success() => Some(Ok(())),
            Ok(Some(status)) => Some(Err(format!("build `{line}` {}", describe(status)))),
            Ok(None) => None,
            Err(e) => Some(Err(format!("build `{line}`: {e}"))),
        };
        if let Some(r) = done {
            // Nothing a build started (a compiler daemon, say) outlives it: it would compete
            // with the servers for the CPU.
            let _ = stop_group(&mut child, pgid, Duration::from_secs(1));
            return r;
        }
        if interrupts.load(Ordering::SeqCst) > 0 {
            let _ = stop_group(&mut child, pgid, Duration::from_secs(2));
            return Err("interrupted".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `exited with status 1` / `was killed by signal 9 (SIGKILL)`.
pub fn describe(status: ExitStatus) -> String {
    if let Some(code) = status.code() {
        return format!("exited with status {code}");
    }
    match status.signal() {
        Some(sig) => format!("was killed by signal {sig} ({})", signal_name(sig)),
        None => "ended".into(),
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}

/// A started server.
pub(crate) struct Running {
    /// The `sh -c` process (replaced by the server when the start line `exec`s it, as it
    /// should: dash otherwise stays the server's parent); its pid is the process group id.
    pub child: Child,
    /// Where it listens.
    pub port: u16,
    /// Its stderr, for the tail shown with failures.
    pub stderr_log: std::path::PathBuf,
    /// Its own `TMPDIR` (or, when the suite sets `TMPDIR`, the folder of its certificate),
    /// removed after the stop (run dirs such as nginx's go with it).
    pub tmp: Option<std::path::PathBuf>,
    /// The certificate it was given (`TLS_CERT`, `TLS_KEY`) in an https or h2 cell.
    pub tls: Option<CertFiles>,
    /// The protocol of its cell (how readiness is asked).
    pub protocol: Protocol,
    /// The GC log its runtime writes (`runtime` of its `[[server]]`).
    pub gc_log: Option<GcLogConfig>,
}

impl Running {
    /// The process group (= the first process's pid).
    pub(crate) fn pgid(&self) -> i32 {
        self.child.id() as i32
    }

    /// Last lines of its stderr (without Go's gctrace lines, when the harness turned them on
    /// there: they would push the server's own last words out of the tail).
    pub(crate) fn stderr_tail(&self) -> Vec<String> {
        let gctrace = self.gc_log.as_ref().is_some_and(|g| {
            g.format == Some(volley_model::result::GcSource::GoGctrace) && g.path == self.stderr_log
        });
        let keep = |l: &str| !(gctrace && gotrace::parse_line(l).is_some());
        tail(&self.stderr_log, TAIL_LINES, keep)
    }
}

/// Starts `m.start` in `m.dir` through `sh -c`, in a new process group, with `PORT` and
/// `{port}`, pinned to `cpus`, stdout and stderr to `logs.0`/`logs.1`, for a cell of
/// `protocol`: over TLS (https, h2) a fresh certificate is written into its private folder and
/// named by `TLS_CERT` and `TLS_KEY`; for h2c `H2C=1` is set; a `profiled` cell's runtime gets
/// the switches that let its stacks be walked and named (`runtime`).
pub fn start(
    m: &Managed,
    port: u16,
    cpus: Option<&CpuList>,
    logs: (&Path, &Path),
    protocol: Protocol,
    profiled: bool,
) -> Result<Running, String> {
    let tls = protocol.tls();
    let open = |p: &Path| File::create(p).map_err(|e| format!("cannot write {}: {e}", p.display()));
    let (out, err) = (open(logs.0)?, open(logs.1)?);
    let line = substitute(&m.start, port);
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&line)
        .current_dir(&m.dir)
        .env("PORT", port.to_string())
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .process_group(0);
    if protocol == Protocol::H2c {
        cmd.env("H2C", "1");
    }
    // A fresh TMPDIR per cell, unless the suite sets one: what a server leaves there (nginx's
    // run dir, say) is removed with it after the stop.
    // An https cell's certificate goes there too; when the suite's TMPDIR is used, into a
    // folder of the harness's own, removed the same way.
    let own_tmp = !m.env.iter().any(|(k, _)| k == "TMPDIR");
    let tmp = if own_tmp || tls || m.runtime.is_some() {
        let t = std::env::temp_dir().join(format!("volley-bench-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&t).map_err(|e| format!("cannot create {}: {e}", t.display()))?;
        if own_tmp {
            cmd.env("TMPDIR", &t);
        }
        Some(t)
    } else {
        None
    };
    let tls = match (&tmp, tls) {
        (Some(dir), true) => {
            let files = certificate::generate(dir).map_err(|e| {
                let _ = std::fs::remove_dir_all(dir);
                e.to_string()
            })?;
            cmd.env("TLS_CERT", &files.cert).env("TLS_KEY", &files.key);
            Some(files)
        }
        _ => None,
    };
    let env: Vec<(String, String)> = m
        .env
        .iter()
        .map(|(k, v)| (k.clone(), substitute(v, port)))
        .collect();
    cmd.envs(env.iter().map(|(k, v)| (k, v)));
    let gc_log = match (m.runtime, &tmp) {
        (Some(rt), Some(dir)) => {
            let (vars, log) =
                runtime::runtime_env(rt, dir, logs, &env, profiled).inspect_err(|_| {
                    let _ = std::fs::remove_dir_all(dir);
                })?;
            cmd.envs(vars);
            Some(log)
        }
        _ => None,
    };
    let set = cpus.map(|c| pinning::cpu_set(&c.cpus));
    // SAFETY: between fork and exec only async-signal-safe calls: prctl and sched_setaffinity.
    unsafe {
        cmd.pre_exec(move || {
            // If volley itself is killed, its server does not outlive it.
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong);
            if let Some(set) = &set {
                if libc::sched_setaffinity(0, size_of::<libc::cpu_set_t>(), set) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
    let child = cmd.spawn().map_err(|e| {
        if let Some(t) = &tmp {
            let _ = std::fs::remove_dir_all(t);
        }
        format!("cannot start `sh -c {line}` in {}: {e}", m.dir.display())
    })?;
    Ok(Running {
        child,
        port,
        stderr_log: logs.1.to_path_buf(),
        tmp,
        tls,
        protocol,
        gc_log,
    })
}

/// How a stop went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Stopped {
    /// The server had already exited before the stop (with this description).
    pub exited_before: Option<String>,
    /// SIGTERM was not enough within the grace period; SIGKILL ended it.
    pub killed: bool,
    /// Processes still alive after SIGKILL (should never happen).
    pub left: Vec<i32>,
}

impl Stopped {
    /// Notes for the suite index.
    pub(crate) fn notes(&self) -> Vec<String> {
        let mut n = Vec::new();
        if self.killed {
            n.push(format!(
                "did not stop within {} s of SIGTERM; killed with SIGKILL",
                STOP_GRACE.as_secs()
            ));
        }
        if !self.left.is_empty() {
            n.push(format!("processes left running: {:?}", self.left));
        }
        n
    }
}

/// Stops the server: SIGTERM to its process group and to every descendant that left it, up
/// to `STOP_GRACE` for all of them to exit, then SIGKILL. Reaps the first process.
pub(crate) fn stop(r: &mut Running) -> Stopped {
    let mut out = Stopped::default();
    if let Ok(Some(status)) = r.child.try_wait() {
        out.exited_before = Some(describe(status));
    }
    let pgid = r.pgid();
    let (killed, left) = stop_group(&mut r.child, pgid, STOP_GRACE);
    out.killed = killed;
    out.left = left;
    if let Some(t) = r.tmp.take() {
        let _ = std::fs::remove_dir_all(t);
    }
    out
}

fn stop_group(child: &mut Child, pgid: i32, grace: Duration) -> (bool, Vec<i32>) {
    // Descendants that moved to a process group of their own are found through their parents.
    let mut members = members(pgid, child.id() as i32);
    signal_all(pgid, &members, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    loop {
        let _ = child.try_wait();
        members.extend(members_now(pgid, &members));
        members.retain(|p| alive(*p));
        if members.is_empty() {
            reap(child);
            return (false, Vec::new());
        }
        if Instant::now() >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    signal_all(pgid, &members, libc::SIGKILL);
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let _ = child.try_wait();
        members.retain(|p| alive(*p));
        if members.is_empty() || Instant::now() >= deadline {
            reap(child);
            return (true, members);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits for the first process once it is no longer alive: it may have died between the last
/// `try_wait` and the look at `/proc`, and a `Child` dropped unwaited stays a zombie for as
/// long as volley runs. A process still alive (stuck after SIGKILL) is not waited for.
fn reap(child: &mut Child) {
    if !alive(child.id() as i32) {
        let _ = child.wait();
    }
}

fn signal_all(pgid: i32, pids: &[i32], sig: i32) {
    // SAFETY: plain kill(2) calls on a group and pids this harness started.
    unsafe {
        libc::kill(-pgid, sig);
        for p in pids {
            libc::kill(*p, sig);
        }
    }
}

/// Live processes of group `pgid` plus every descendant of `root` (wherever its group).
pub(crate) fn members(pgid: i32, root: i32) -> Vec<i32> {
    let table = process_table();
    let mut out: Vec<i32> = table
        .iter()
        .filter(|s| s.pgrp == pgid && !s.exited())
        .map(|s| s.pid)
        .collect();
    let mut frontier = vec![root];
    if table.iter().any(|s| s.pid == root && !s.exited()) {
        out.push(root);
    }
    while let Some(p) = frontier.pop() {
        for s in table.iter().filter(|s| s.ppid == p && !s.exited()) {
            if !out.contains(&s.pid) {
                out.push(s.pid);
            }
            frontier.push(s.pid);
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

fn members_now(pgid: i32, known: &[i32]) -> Vec<i32> {
    let table = process_table();
    table
        .iter()
        .filter(|s| !s.exited())
        .filter(|s| s.pgrp == pgid || known.contains(&s.ppid))
        .map(|s| s.pid)
        .filter(|p| !known.contains(p))
        .collect()
}

fn process_table() -> Vec<procfs::PidStat> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .bytes()
                .all(|b| b.is_ascii_digit())
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|t| procfs::parse_pid_stat(&t))
        .collect()
}

/// The process exists and is not a zombie.
pub(crate) fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| procfs::parse_pid_stat(&t))
        .is_some_and(|s| !s.exited())
}

/// The last `n` lines of a log file (reads at most its last 16 KiB).
pub(crate) fn tail(path: &Path, n: usize, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let Ok(mut f) = File::open(path) else {
        return Vec::new();
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let _ = f.seek(SeekFrom::Start(len.saturating_sub(16 * 1024)));
    let mut buf = Vec::new();
    let _ = f.read_to_end(&mut buf);
    let text = String::from_utf8_lossy(&buf);
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && keep(l))
        .collect();
    lines[lines.len().saturating_sub(n)..]
        .iter()
        .map(|l| l.chars().take(300).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn substitutes_port() {
        assert_eq!(
            substitute("./s --port {port} x{port}", 81),
            "./s --port 81 x81"
        );
    }

    #[test]
    fn tail_keeps_last_non_empty_lines() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("log");
        std::fs::write(&p, "a\nb\n\nc\nd\n").unwrap();
        assert_eq!(tail(&p, 2, |_| true), vec!["c", "d"]);
        assert_eq!(tail(&p, 2, |l| l != "d"), vec!["b", "c"]);
        assert!(tail(&dir.path().join("none"), 3, |_| true).is_empty());
    }

    #[test]
    fn describes_exits() {
        assert_eq!(
            describe(ExitStatus::from_raw(1 << 8)),
            "exited with status 1"
        );
        assert_eq!(
            describe(ExitStatus::from_raw(9)),
            "was killed by signal 9 (SIGKILL)"
        );
    }
}

//! The server monitor (`--pid`; docs/contract.md, "Server monitor"): a sampler over a process and all its descendants.
//!
//! Use: `attach(pid, ..)` before the load (a missing or unreadable pid is a usage error), then
//! either drive the `TreeSampler` yourself (`volley monitor`) or hand it to `ServerMonitor`,
//! which samples on its own thread: `arm(t0)` reads the window's first edge exactly at t0,
//! then every `interval` (10 Hz by default), and `finish(completed)` reads the last edge and
//! returns the `server` block of the RunResult. The JSON series keeps one sample per second
//! (per interval when that is longer): averages of CPU, maxima of memory, threads and
//! descriptors, so memory follows the run's length in seconds like the latency time series.

use std::fs;
use std::io;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::gc::watch::{Clocks, GcWatch};
use super::perf::{self, SyscallCounters, SyscallReading};
use super::procfs::{self, CtxSwitches};
use super::read::{read_tree, Units};
use super::tree::{Accountant, Point, ProcKey, Snapshot, WindowTotals};
use crate::settings::MonitorConfig;
use volley_model::result::{PerRequest, ServerInfo, ServerSample, SyscallCount};

/// Why a pid cannot be monitored (exit code 2: found before the load starts).
#[derive(Debug, thiserror::Error)]
pub enum MonitorError {
    /// Nothing runs under that pid.
    #[error("--pid {pid}: no such process")]
    NoSuchProcess {
        /// The pid given.
        pid: i32,
    },
    /// The process has exited and waits for its parent to reap it.
    #[error("--pid {pid}: the process has already exited (a zombie waiting for its parent)")]
    Exited {
        /// The pid given.
        pid: i32,
    },
    /// A /proc file of the process cannot be read (usually another user's process).
    #[error("--pid {pid}: cannot read {path}: {source} (monitor a process of your own user, or run as root)")]
    Unreadable {
        /// The pid given.
        pid: i32,
        /// The file.
        path: String,
        /// The operating system's reason.
        source: io::Error,
    },
    /// A /proc file has a format volley does not understand.
    #[error("--pid {pid}: {path} is not in the format volley knows")]
    Unparsable {
        /// The pid given.
        pid: i32,
        /// The file.
        path: String,
    },
    /// The GC log cannot be read.
    #[error("--gc-log {path}: {source}")]
    GcLog {
        /// The file.
        path: String,
        /// The operating system's reason.
        source: io::Error,
    },
}

/// Final partial series buckets shorter than this are dropped: CPU times come in 10 ms ticks,
/// so a shorter bucket's percentages would be mostly rounding.
const MIN_PARTIAL_BUCKET_S: f64 = 0.25;

/// One closed bucket of the series plus the rates `volley monitor` prints.
#[derive(Debug, Clone, PartialEq)]
pub struct Tick {
    /// The JSON sample.
    pub sample: ServerSample,
    /// Bucket length, seconds.
    pub interval_s: f64,
    /// Context switches in the bucket.
    pub ctx: CtxSwitches,
    /// Syscalls in the bucket (null when not counted).
    pub syscalls: Option<u64>,
    /// Live processes at the end of the bucket.
    pub processes: u64,
    /// The pauses since t0: a JVM's counters, or the lines appended to `--gc-log`.
    pub gc: Option<super::gc::counters::LiveGc>,
}

#[derive(Debug)]
struct Bucket {
    start: Instant,
    totals: WindowTotals,
    syscalls: Option<u64>,
    rss_bytes: u64,
    threads: u64,
    fds: Option<u64>,
    readings: u32,
}

/// The sampler over one process tree. Not thread-bound: `ServerMonitor` runs it on a thread of
/// its own, `volley monitor` on the main thread.
pub struct TreeSampler {
    root: ProcKey,
    interval: Duration,
    bucket_len: Duration,
    units: Units,
    known: Vec<ProcKey>,
    perf: Result<SyscallCounters, String>,
    perf_base: Option<SyscallReading>,
    acct: Option<Accountant>,
    t0: Option<Instant>,
    /// The run's t0 when it was armed (`sampling_loop`): the monitor thread may wake after it,
    /// and GC log events belong on the run's clock, not on that late first edge.
    run_t0: Option<Instant>,
    bucket: Option<Bucket>,
    last_point: Point,
    samples: Vec<ServerSample>,
    root_exited_at_s: Option<f64>,
    tree_gone: bool,
    gc: GcWatch,
}

/// Checks that `cfg.pid` can be monitored (and its GC log read) and opens its syscall
/// counters (at most `perf_fd_budget` descriptors). Nothing is counted yet: the window starts
/// with `TreeSampler::baseline`.
pub fn attach(cfg: &MonitorConfig, perf_fd_budget: usize) -> Result<TreeSampler, MonitorError> {
    let (pid, interval) = (cfg.pid, cfg.interval);
    if let Some(log) = &cfg.gc_log {
        fs::File::open(&log.path).map_err(|source| MonitorError::GcLog {
            path: log.path.display().to_string(),
            source,
        })?;
    }
    let units = Units::detect();
    let stat_path = format!("/proc/{pid}/stat");
    let text = fs::read_to_string(&stat_path).map_err(|e| match e.kind() {
        io::ErrorKind::NotFound => MonitorError::NoSuchProcess { pid },
        _ => MonitorError::Unreadable {
            pid,
            path: stat_path.clone(),
            source: e,
        },
    })?;
    let stat = procfs::parse_pid_stat(&text).ok_or(MonitorError::Unparsable {
        pid,
        path: stat_path,
    })?;
    if stat.exited() {
        return Err(MonitorError::Exited { pid });
    }
    // /proc/PID/io needs the same permission as ptrace-reading the process: the first thing
    // to fail for another user's process.
    for file in ["io", "status"] {
        let path = format!("/proc/{pid}/{file}");
        if let Err(e) = fs::read_to_string(&path) {
            return Err(match e.kind() {
                io::ErrorKind::NotFound => MonitorError::NoSuchProcess { pid },
                _ => MonitorError::Unreadable {
                    pid,
                    path,
                    source: e,
                },
            });
        }
    }
    let root = ProcKey {
        pid,
        starttime_ticks: stat.starttime_ticks,
    };
    // The tracepoints first: finding them may take a mount in a child process, time in which
    // a server under load starts threads that no counter would see.
    let tracepoints = perf::tracepoints();
    let snap = read_tree(&[root], units, false);
    let known: Vec<ProcKey> = snap.procs.iter().map(|r| r.key).collect();
    let perf = tracepoints
        .and_then(|tp| open_counters(&tp, root, units, &live_tids(&snap), perf_fd_budget));
    Ok(TreeSampler {
        root,
        interval,
        bucket_len: interval.max(Duration::from_secs(1)),
        units,
        known,
        perf,
        perf_base: None,
        acct: None,
        t0: None,
        run_t0: None,
        bucket: None,
        last_point: Point::default(),
        samples: Vec::new(),
        root_exited_at_s: None,
        tree_gone: false,
        gc: GcWatch::new(cfg.gc_log.clone()),
    })
}

/// The threads of the tree's live processes.
fn live_tids(snap: &Snapshot) -> Vec<i32> {
    snap.procs
        .iter()
        .filter(|r| !r.exited)
        .flat_map(|r| r.tasks.iter().map(|t| t.tid))
        .collect()
}

/// Tries to open the syscall counters at most this many times while threads keep starting.
const COUNTER_PASSES: usize = 5;

/// Opens the syscall counters on every thread of the tree, `tids` to begin with. A thread
/// started while the counters were being opened may have been started by one that had no
/// counter yet: it would be neither counted nor inherited (a server accepting a load's
/// connections starts one a connection). So the totals' counters (one per thread, a quick
/// pass) are opened, the tree is listed again, and a pass that saw a new thread is done again;
/// after [`COUNTER_PASSES`] the count is refused with the reason, never shown short. The
/// per-name counters of the top list come after (a thread started meanwhile may be missing
/// from a name's count, never from the total).
fn open_counters(
    tp: &perf::Tracepoints,
    root: ProcKey,
    units: Units,
    tids: &[i32],
    budget: usize,
) -> Result<SyscallCounters, String> {
    let mut tids = tids.to_vec();
    for _ in 0..COUNTER_PASSES {
        let mut counters = SyscallCounters::open_totals(tp, &tids, budget)?;
        let now = live_tids(&read_tree(&[root], units, false));
        if now.iter().all(|t| tids.contains(t)) {
            counters.open_names(tp, &tids, budget)?;
            return Ok(counters);
        }
        tids = now;
    }
    Err(format!(
        "threads kept starting while the syscall counters were being opened ({COUNTER_PASSES} \
         tries), so some would not be counted: attach before the load starts (volley run \
         --pid), or once the server's threads are steady"
    ))
}

/// Descriptors volley can spend on perf counters next to `connections` sockets: the soft
/// RLIMIT_NOFILE is raised towards the hard one for them (never above `perf::DEFAULT_FD_BUDGET`).
pub fn perf_fd_budget(connections: u64) -> usize {
    let reserved = connections + volley_model::sys::limits::FD_SLACK;
    let want = reserved + perf::DEFAULT_FD_BUDGET as u64;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return 0;
    }
    if lim.rlim_cur < want {
        let raised = libc::rlimit {
            rlim_cur: want.min(lim.rlim_max),
            rlim_max: lim.rlim_max,
        };
        // SAFETY: setrlimit reads the struct; failure leaves the old limit.
        if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
            lim.rlim_cur = raised.rlim_cur;
        }
    }
    lim.rlim_cur
        .saturating_sub(reserved)
        .min(perf::DEFAULT_FD_BUDGET as u64) as usize
}

fn round(v: f64, digits: i32) -> f64 {
    let m = 10f64.powi(digits);
    (v * m).round() / m
}

impl TreeSampler {
    /// Sampling interval.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// Why syscalls are not counted, if they are not.
    pub fn syscalls_unavailable_reason(&self) -> Option<&str> {
        self.perf.as_ref().err().map(|s| s.as_str())
    }

    /// When the monitored process itself exited, seconds after t0.
    pub(crate) fn root_exited_at_s(&self) -> Option<f64> {
        self.root_exited_at_s
    }

    /// Nothing of the tree is left to sample.
    pub(crate) fn tree_gone(&self) -> bool {
        self.tree_gone
    }

    /// t0 as the run's clock has it: the instant it was armed for, even when the first edge
    /// was read later (`base`).
    fn origin(&self, base: Instant) -> Instant {
        self.run_t0.map_or(base, |armed| armed.min(base))
    }

    /// The wall clock at `t0` (read now, less the time since `t0`: reading the tree at the
    /// baseline takes milliseconds) and when the monitored process started.
    fn clocks(&self, t0: Instant) -> Clocks {
        let t0 = self.origin(t0);
        let unix_ms = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs_f64() * 1e3)
                .unwrap_or(0.0)
        };
        let now_unix_ms = unix_ms(std::time::SystemTime::now());
        let since_t0_ms = t0.elapsed().as_secs_f64() * 1e3;
        let started = since_boot_s().map(|up| {
            let age_s = up - self.root.starttime_ticks as f64 / self.units.ticks_per_s;
            now_unix_ms - age_s * 1e3
        });
        Clocks {
            t0_unix_ms: now_unix_ms - since_t0_ms,
            process_start_unix_ms: started,
        }
    }

    fn read_syscalls(&self, by_name: bool) -> Option<SyscallReading> {
        self.perf.as_ref().ok().map(|c| c.read(by_name))
    }

    fn snapshot(&mut self, now: Instant, with_fds: bool) -> (Snapshot, f64) {
        let snap = read_tree(&self.known, self.units, with_fds);
        let t_s = self.t0.map(|t0| (now - t0).as_secs_f64()).unwrap_or(0.0);
        if self.root_exited_at_s.is_none()
            && !snap.procs.iter().any(|r| r.key == self.root && !r.exited)
        {
            self.root_exited_at_s = Some(t_s);
        }
        self.known = snap.procs.iter().map(|r| r.key).collect();
        self.tree_gone = snap.procs.iter().all(|r| r.exited);
        (snap, t_s)
    }

    /// Reads the window's first edge; `now` is t0. Everything is counted from here.
    pub(crate) fn baseline(&mut self, now: Instant) {
        self.t0 = Some(now);
        let (snap, _) = self.snapshot(now, true);
        let clocks = self.clocks(now);
        self.gc
            .baseline(&live_pids(&snap), clocks, self.origin(now));
        let acct = Accountant::new(&snap);
        self.perf_base = self.read_syscalls(true);
        let p = acct.max();
        self.last_point = p;
        self.bucket = Some(Bucket {
            start: now,
            totals: WindowTotals::default(),
            syscalls: self.perf_base.as_ref().map(|r| r.total),
            rss_bytes: p.rss_bytes,
            threads: p.threads,
            fds: p.fds,
            readings: 1,
        });
        self.acct = Some(acct);
    }

    /// Takes one sample (call every `interval`); returns the series bucket it closes, if any.
    pub fn sample(&mut self, now: Instant) -> Option<Tick> {
        if self.acct.is_none() {
            self.baseline(now);
            return None;
        }
        if self.tree_gone {
            return None;
        }
        let start = self.bucket.as_ref().map(|b| b.start).unwrap_or(now);
        // Descriptors are counted once per bucket, at its end: listing /proc/PID/fd of a
        // server with many connections ten times a second would cost more than it tells.
        let closing = now + self.interval / 2 >= start + self.bucket_len;
        let (snap, t_s) = self.snapshot(now, closing);
        self.gc.sample(t_s, &live_pids(&snap));
        let point = self
            .acct
            .as_mut()
            .expect("baseline taken")
            .update(&snap, t_s);
        self.last_point = point;
        self.add_to_bucket(&point);
        if closing || self.tree_gone {
            self.close_bucket(now, t_s)
        } else {
            None
        }
    }

    fn close_bucket(&mut self, now: Instant, t_s: f64) -> Option<Tick> {
        let acct = self.acct.as_ref()?;
        let totals = acct.totals();
        let syscalls = self.read_syscalls(false).map(|r| r.total);
        let b = self.bucket.replace(Bucket {
            start: now,
            totals,
            syscalls,
            rss_bytes: 0,
            threads: 0,
            fds: None,
            readings: 0,
        })?;
        let dur = (now - b.start).as_secs_f64();
        if dur <= 0.0 || b.readings == 0 {
            return None;
        }
        let pct = |a: u64, b: u64| {
            round(
                a.saturating_sub(b) as f64 / self.units.ticks_per_s / dur * 100.0,
                1,
            )
        };
        let sample = ServerSample {
            t_s: round(t_s, 3),
            cpu_user_pct: pct(totals.user_ticks, b.totals.user_ticks),
            cpu_sys_pct: pct(totals.sys_ticks, b.totals.sys_ticks),
            rss_bytes: b.rss_bytes,
            threads: b.threads,
            fds: b.fds,
        };
        self.samples.push(sample.clone());
        Some(Tick {
            sample,
            interval_s: dur,
            ctx: CtxSwitches {
                voluntary: totals.ctx.voluntary.saturating_sub(b.totals.ctx.voluntary),
                involuntary: totals
                    .ctx
                    .involuntary
                    .saturating_sub(b.totals.ctx.involuntary),
            },
            syscalls: match (syscalls, b.syscalls) {
                (Some(a), Some(b)) => Some(a.saturating_sub(b)),
                _ => None,
            },
            processes: self.last_point.processes,
            gc: self.gc.live(),
        })
    }

    /// Reads the window's last edge (`now`) and summarizes the window; per-request figures
    /// divide by `completed` (null when it is 0).
    pub fn finish(mut self, now: Instant, completed: u64) -> ServerInfo {
        let t_s = self.read_last_edge(now);
        let end = self.read_syscalls(true);
        let (syscalls, syscalls_top) = self.syscalls_in_window(end.as_ref());
        let acct = self.acct.as_ref().expect("baseline");
        let totals = acct.totals();
        let max = acct.max();
        let (pids, _) = acct.pids();
        let notes = exit_notes(acct, self.root.pid);
        let tps = self.units.ticks_per_s;
        let cpu_user_s = totals.user_ticks as f64 / tps;
        let cpu_sys_s = totals.sys_ticks as f64 / tps;
        let per = |v: f64| (completed > 0).then(|| round(v / completed as f64, 3));
        let ctx_total = totals.ctx.voluntary + totals.ctx.involuntary;
        let info = ServerInfo {
            pids,
            cpu_user_s: round(cpu_user_s, 3),
            cpu_sys_s: round(cpu_sys_s, 3),
            rss_max_bytes: max.rss_bytes,
            threads_max: max.threads,
            processes_max: max.processes,
            ctx_switches_voluntary: totals.ctx.voluntary,
            ctx_switches_involuntary: totals.ctx.involuntary,
            syscalls,
            syscalls_unavailable_reason: self.perf.as_ref().err().cloned(),
            syscalls_top,
            io_calls_read: totals.io.calls_read,
            io_calls_write: totals.io.calls_write,
            io_bytes_read: totals.io.bytes_read,
            io_bytes_written: totals.io.bytes_written,
            per_request: PerRequest {
                cpu_us: per((cpu_user_s + cpu_sys_s) * 1e6),
                user_us: per(cpu_user_s * 1e6),
                sys_us: per(cpu_sys_s * 1e6),
                ctx_switches: per(ctx_total as f64),
                syscalls: syscalls.and_then(|s| per(s as f64)),
            },
            window_s: round(t_s, 6),
            sample_interval_s: self.interval.as_secs_f64(),
            samples: std::mem::take(&mut self.samples),
            exited_at_s: self.root_exited_at_s.map(|t| round(t, 3)),
            note: (!notes.is_empty()).then(|| notes.join("; ")),
            gc: std::mem::take(&mut self.gc).finish(t_s),
            profile: None,
        };
        // Dropping the counters hands them to a detached process (see SyscallCounters' Drop).
        drop(std::mem::replace(&mut self.perf, Err(String::new())));
        info
    }

    /// A reading's gauges into the open bucket (peaks of memory and threads, the last fds).
    fn add_to_bucket(&mut self, point: &Point) {
        if let Some(b) = self.bucket.as_mut() {
            if point.processes > 0 {
                b.rss_bytes = b.rss_bytes.max(point.rss_bytes);
                b.threads = b.threads.max(point.threads);
                b.fds = point.fds.or(b.fds);
                b.readings += 1;
            }
        }
    }

    /// Reads the tree once more at `now` (unless it is gone) into the last, partial bucket,
    /// which is kept when long enough to mean something. Returns the window's length, seconds.
    fn read_last_edge(&mut self, now: Instant) -> f64 {
        self.close_series(now);
        (now - self.t0.expect("baseline taken")).as_secs_f64()
    }

    /// Ends the series at `now`: reads the tree into the open bucket and closes it when it is
    /// long enough to mean something, returning it (`volley monitor` prints it as its last
    /// line). `finish` at the same instant then adds nothing to the series.
    pub(crate) fn close_series(&mut self, now: Instant) -> Option<Tick> {
        if self.acct.is_none() {
            self.baseline(now);
        }
        if self.tree_gone {
            return None;
        }
        let (snap, t_s) = self.snapshot(now, true);
        self.gc.sample(t_s, &live_pids(&snap));
        let point = self.acct.as_mut().expect("baseline").update(&snap, t_s);
        self.add_to_bucket(&point);
        let partial = self
            .bucket
            .as_ref()
            .map(|b| (now - b.start).as_secs_f64())
            .unwrap_or(0.0);
        if partial >= MIN_PARTIAL_BUCKET_S || self.samples.is_empty() && partial > 0.0 {
            self.close_bucket(now, t_s)
        } else {
            None
        }
    }

    /// Syscalls between the window's edges, and the ten most frequent of those counted by name.
    fn syscalls_in_window(&self, end: Option<&SyscallReading>) -> (Option<u64>, Vec<SyscallCount>) {
        let (Ok(c), Some(a), Some(b)) = (&self.perf, &self.perf_base, end) else {
            return (None, Vec::new());
        };
        let mut top: Vec<SyscallCount> = c
            .names()
            .iter()
            .zip(a.by_name.iter().zip(&b.by_name))
            .map(|(n, (x, y))| SyscallCount {
                name: n.to_string(),
                count: y.saturating_sub(*x),
            })
            .filter(|s| s.count > 0)
            .collect();
        top.sort_by(|x, y| y.count.cmp(&x.count).then(x.name.cmp(&y.name)));
        top.truncate(10);
        (Some(b.total.saturating_sub(a.total)), top)
    }
}

/// Seconds since boot on the clock /proc's start times use (CLOCK_BOOTTIME).
fn since_boot_s() -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime fills the struct we own.
    let ok = unsafe { libc::clock_gettime(libc::CLOCK_BOOTTIME, &mut ts) } == 0;
    ok.then(|| ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9)
}

/// The live processes of a reading.
fn live_pids(snap: &Snapshot) -> Vec<i32> {
    snap.procs
        .iter()
        .filter(|r| !r.exited)
        .map(|r| r.key.pid)
        .collect()
}

/// The processes of the tree that exited in the window, in words (the first few by pid).
fn exit_notes(acct: &Accountant, root_pid: i32) -> Vec<String> {
    let mut notes = Vec::new();
    let (exits, exits_total) = acct.exits();
    for e in exits {
        if e.pid == root_pid {
            notes.push(format!(
                "pid {} (the monitored process) exited at {:.2} s; the series ends there",
                e.pid, e.t_s
            ));
        } else {
            notes.push(format!("pid {} exited at {:.2} s", e.pid, e.t_s));
        }
    }
    if exits_total > exits.len() as u64 {
        notes.push(format!(
            "{} more processes exited",
            exits_total - exits.len() as u64
        ));
    }
    notes
}

enum Control {
    Arm(Instant),
    Stop,
}

/// The monitor's latest closed second, for what watches a run live (`--dashboard`,
/// `--metrics-addr`): written by the sampling thread, read once a second by the live observer.
pub type LatestTick = std::sync::Arc<std::sync::Mutex<Option<Tick>>>;

/// A `TreeSampler` on a thread of its own (`volley run --pid`, and the suite harness).
pub struct ServerMonitor {
    control: mpsc::Sender<Control>,
    handle: JoinHandle<TreeSampler>,
}

impl ServerMonitor {
    /// Starts the sampling thread; it waits for `arm`.
    pub fn spawn(sampler: TreeSampler) -> io::Result<Self> {
        Self::spawn_watched(sampler, None)
    }

    /// Like [`ServerMonitor::spawn`], also keeping each closed second in `latest`.
    pub fn spawn_watched(sampler: TreeSampler, latest: Option<LatestTick>) -> io::Result<Self> {
        let (tx, rx) = mpsc::channel();
        let handle = std::thread::Builder::new()
            .name("volley-monitor".into())
            .spawn(move || sampling_loop(sampler, rx, latest))?;
        Ok(ServerMonitor {
            control: tx,
            handle,
        })
    }

    /// Sets t0: the first edge is read then (at once if it has passed).
    pub(crate) fn arm(&self, t0: Instant) {
        let _ = self.control.send(Control::Arm(t0));
    }

    /// Sets t0 from the wall clock (the engine's `started_at`), taken to the monotonic clock
    /// by reading both at once.
    pub fn arm_at(&self, t0: std::time::SystemTime) {
        let (now, wall) = (Instant::now(), std::time::SystemTime::now());
        let at = match t0.duration_since(wall) {
            Ok(ahead) => now + ahead,
            Err(behind) => now.checked_sub(behind.duration()).unwrap_or(now),
        };
        self.arm(at);
    }

    /// Reads the last edge now and returns the summary (see `TreeSampler::finish`).
    pub fn finish(self, completed: u64) -> ServerInfo {
        let _ = self.control.send(Control::Stop);
        match self.handle.join() {
            Ok(sampler) => sampler.finish(Instant::now(), completed),
            Err(_) => ServerInfo {
                note: Some("the monitor thread failed; no server figures".into()),
                syscalls_unavailable_reason: Some("the monitor thread failed".into()),
                ..ServerInfo::default()
            },
        }
    }
}

fn sampling_loop(
    mut s: TreeSampler,
    rx: mpsc::Receiver<Control>,
    latest: Option<LatestTick>,
) -> TreeSampler {
    let t0 = match rx.recv() {
        Ok(Control::Arm(t0)) => t0,
        Ok(Control::Stop) | Err(_) => return s,
    };
    let wait = t0.saturating_duration_since(Instant::now());
    if !wait.is_zero() {
        match rx.recv_timeout(wait) {
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            // Stopped before t0 (an engine error or Ctrl-C in the warm-up): an empty window.
            _ => {
                s.baseline(Instant::now());
                return s;
            }
        }
    }
    let base = Instant::now().max(t0);
    s.run_t0 = Some(t0);
    s.baseline(base);
    let mut next = base + s.interval;
    loop {
        let wait = next.saturating_duration_since(Instant::now());
        match rx.recv_timeout(wait) {
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let now = Instant::now();
                if let (Some(tick), Some(l)) = (s.sample(now), &latest) {
                    *l.lock().unwrap_or_else(|e| e.into_inner()) = Some(tick);
                }
                next += s.interval;
                if next < now {
                    // Fell behind (a huge tree, a stalled machine): skip, do not burst.
                    next = now + s.interval;
                }
            }
            _ => return s,
        }
    }
}

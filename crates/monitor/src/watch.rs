//! The server monitor alone (`volley monitor`): one vmstat-like line per interval for watching
//! a server under any load tool, until a duration passes, Ctrl-C, or the process tree is gone.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::client::machine_sample;
use super::procfs::{self, CpuTimes};
use super::server::{Tick, TreeSampler};
use volley_model::result::ServerInfo;
use volley_model::units::thousands;

/// The column header printed above the lines.
pub const HEADER: &str =
    "    time procs threads   usr%   sys%       rss    fds   vcsw/s   ivcsw/s   syscalls/s | machine us  sy  si  wa  id";

/// One line for one closed bucket; `machine` is the machine's split over about the same time.
pub fn line(t: &Tick, machine: Option<&volley_model::result::MachineSample>) -> String {
    let s = &t.sample;
    let per_s = |n: u64| thousands((n as f64 / t.interval_s.max(1e-9)).round() as u64);
    let rss_mib = format!("{:.1}M", s.rss_bytes as f64 / 1024.0 / 1024.0);
    let fds = s.fds.map(thousands).unwrap_or_else(|| "-".into());
    let sys = t.syscalls.map(per_s).unwrap_or_else(|| "-".into());
    let m = machine
        .map(|m| {
            format!(
                "{:>3.0} {:>3.0} {:>3.0} {:>3.0} {:>3.0}",
                m.user_pct, m.system_pct, m.softirq_pct, m.iowait_pct, m.idle_pct
            )
        })
        .unwrap_or_else(|| "  -   -   -   -   -".into());
    format!(
        "{:>8.1} {:>5} {:>7} {:>6.1} {:>6.1} {:>9} {:>6} {:>8} {:>9} {:>12} |        {m}",
        s.t_s,
        t.processes,
        s.threads,
        s.cpu_user_pct,
        s.cpu_sys_pct,
        rss_mib,
        fds,
        per_s(t.ctx.voluntary),
        per_s(t.ctx.involuntary),
        sys
    )
}

fn read_proc_stat() -> Option<CpuTimes> {
    procfs::parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?)
}

/// How a watch ended.
pub struct Watched {
    /// The tree's totals over the whole watch (per-request figures empty: no requests).
    pub info: ServerInfo,
    /// When the watched process exited, seconds after the start.
    pub died_at_s: Option<f64>,
}

/// Samples `s` every `interval` until `duration` passes, Ctrl-C is pressed or the tree is gone;
/// `each` gets one formatted [`line()`] per closed bucket.
pub fn watch(
    mut s: TreeSampler,
    interval: Duration,
    duration: Option<Duration>,
    interrupts: &AtomicUsize,
    mut each: impl FnMut(String),
) -> Watched {
    let start = Instant::now();
    let end = duration.map(|d| start + d);
    s.baseline(start);
    let mut machine_prev = read_proc_stat();
    let mut print = |tick: Tick| {
        let m = read_proc_stat();
        let ms = match (machine_prev, m) {
            (Some(a), Some(b)) => Some(machine_sample(&a, &b, tick.sample.t_s)),
            _ => None,
        };
        machine_prev = m.or(machine_prev);
        each(line(&tick, ms.as_ref()));
    };
    let mut next = start + interval;
    loop {
        if !sleep_until(next, end, interrupts) {
            break;
        }
        let now = Instant::now();
        if let Some(tick) = s.sample(now) {
            print(tick);
        }
        if s.tree_gone() {
            break;
        }
        next += interval;
        if next < now {
            next = now + interval;
        }
    }
    // The last second ends with the watch (at -d, or Ctrl-C): it gets its line too, so
    // `-d 2s` prints two.
    let now = Instant::now();
    if let Some(tick) = s.close_series(now) {
        print(tick);
    }
    let died_at_s = s.root_exited_at_s();
    Watched {
        info: s.finish(now, 0),
        died_at_s,
    }
}

/// Sleeps until `next` in short steps, so Ctrl-C is seen promptly even with long intervals.
/// False when the watch should end instead (Ctrl-C, or `end` reached).
fn sleep_until(next: Instant, end: Option<Instant>, interrupts: &AtomicUsize) -> bool {
    loop {
        if interrupts.load(Ordering::Relaxed) > 0 {
            return false;
        }
        let now = Instant::now();
        if end.is_some_and(|e| now >= e) {
            return false;
        }
        if now >= next {
            return true;
        }
        std::thread::sleep((next - now).min(Duration::from_millis(50)));
    }
}

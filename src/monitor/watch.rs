//! `volley monitor --pid PID [-d DUR]`: the server monitor alone, one vmstat-like line a
//! second, for watching a server under any load tool. Stops at `-d`, on Ctrl-C (exit 0) or
//! when the process tree is gone (exit 3, "the server died"), then prints the totals.

use std::io::Write;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::client::machine_sample;
use super::procfs::{self, CpuTimes};
use super::server::{self, Tick};
use crate::cli::MonitorArgs;
use crate::config;
use crate::report::terminal::server_lines;
use crate::units::thousands;
use crate::ExitCode;

/// The column header printed above the lines.
pub const HEADER: &str =
    "    time procs threads   usr%   sys%       rss    fds   vcsw/s   ivcsw/s   syscalls/s | machine us  sy  si  wa  id";

/// One line for one closed bucket; `machine` is the machine's split over about the same time.
pub fn line(t: &Tick, machine: Option<&crate::result::MachineSample>) -> String {
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

/// Runs `volley monitor`; `interrupts` counts Ctrl-C presses.
pub fn execute(args: &MonitorArgs, interrupts: &AtomicUsize) -> ExitCode {
    let cfg = match config::monitor_config(Some(args.pid), Some(args.monitor_interval)) {
        Ok(Some(c)) => c,
        Ok(None) => unreachable!("a pid was given"),
        Err(e) => {
            eprintln!("volley monitor: {e}");
            return ExitCode::Usage;
        }
    };
    if args.duration == Some(Duration::ZERO) {
        eprintln!("volley monitor: -d/--duration: must be longer than 0");
        return ExitCode::Usage;
    }
    let mut s = match server::attach(cfg.pid, cfg.interval, server::perf_fd_budget(0)) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("volley monitor: {e}");
            return ExitCode::Usage;
        }
    };
    let mut out = std::io::stdout().lock();
    let syscalls = match s.syscalls_unavailable_reason() {
        None => "syscalls counted with perf tracepoints".to_string(),
        Some(r) => format!("syscalls not counted: {r}"),
    };
    let _ = writeln!(
        out,
        "volley monitor: pid {} and its descendants, sampled every {} ms ({syscalls}); Ctrl-C stops",
        cfg.pid,
        cfg.interval.as_millis()
    );
    let _ = writeln!(out, "{HEADER}");
    let _ = out.flush();
    let start = Instant::now();
    let end = args.duration.map(|d| start + d);
    s.baseline(start);
    let mut machine_prev = read_proc_stat();
    let mut next = start + cfg.interval;
    let mut interrupted = false;
    loop {
        // Sleep in short steps so Ctrl-C is seen promptly even with long intervals.
        loop {
            if interrupts.load(Ordering::Relaxed) > 0 {
                interrupted = true;
                break;
            }
            let now = Instant::now();
            if now >= next || end.is_some_and(|e| now >= e) {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(50)));
        }
        let now = Instant::now();
        if interrupted || end.is_some_and(|e| now >= e) {
            break;
        }
        if let Some(tick) = s.sample(now) {
            let m = read_proc_stat();
            let ms = match (machine_prev, m) {
                (Some(a), Some(b)) => Some(machine_sample(&a, &b, tick.sample.t_s)),
                _ => None,
            };
            machine_prev = m.or(machine_prev);
            let _ = writeln!(out, "{}", line(&tick, ms.as_ref()));
            let _ = out.flush();
        }
        if s.tree_gone() {
            break;
        }
        next += cfg.interval;
        if next < now {
            next = now + cfg.interval;
        }
    }
    let died = s.root_exited_at_s();
    let info = s.finish(Instant::now(), 0);
    let _ = writeln!(out);
    for (k, l) in server_lines(&info, 0).iter().enumerate() {
        let label = if k == 0 { "Server" } else { "" };
        let _ = writeln!(out, "  {label:<13}{l}");
    }
    let _ = out.flush();
    match died {
        Some(t) => {
            eprintln!(
                "volley monitor: pid {} exited {t:.2} s after the start",
                cfg.pid
            );
            ExitCode::Failed
        }
        _ => ExitCode::Ok,
    }
}

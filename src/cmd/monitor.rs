//! `volley monitor --pid PID [-d DUR]`: watch a server and its descendants, one line per
//! interval, then the totals. Exit 0 at `-d` or Ctrl-C, 3 when the process exited ("the server
//! died"), 2 for a bad pid.

use std::io::Write;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use clap::Args;

use super::ExitCode;
use crate::config::monitor_config;
use crate::monitor::server;
use crate::monitor::watch::{self, HEADER};
use crate::report::terminal::{gc_line, server_lines};
use crate::units;

/// `volley monitor` flags.
#[derive(Debug, Args, Clone)]
pub struct MonitorArgs {
    /// The process to watch (its descendants are included).
    #[arg(long, allow_negative_numbers = true)]
    pub pid: i64,

    /// Stop after this long, e.g. 30s [default: until Ctrl-C or the process exits].
    #[arg(short = 'd', long = "duration", value_parser = units::parse_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,

    /// Sampling interval (lines are printed once a second, or once per interval when longer).
    #[arg(long, value_parser = units::parse_duration, default_value = "100ms", allow_hyphen_values = true)]
    pub monitor_interval: Duration,
}

/// Runs `volley monitor`; `interrupts` counts Ctrl-C presses.
pub(crate) fn execute(args: &MonitorArgs, interrupts: &AtomicUsize) -> ExitCode {
    let cfg = match monitor_config(Some(args.pid), Some(args.monitor_interval), None) {
        Ok(Some(c)) => c,
        Ok(None) => unreachable!("a pid was given"),
        Err(e) => {
            stderrln!("volley monitor: {e}");
            return ExitCode::Usage;
        }
    };
    if args.duration == Some(Duration::ZERO) {
        stderrln!("volley monitor: -d/--duration: must be longer than 0");
        return ExitCode::Usage;
    }
    let s = match server::attach(&cfg, server::perf_fd_budget(0)) {
        Ok(s) => s,
        Err(e) => {
            stderrln!("volley monitor: {e}");
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
    let w = watch::watch(s, cfg.interval, args.duration, interrupts, |line| {
        let _ = writeln!(out, "{line}");
        let _ = out.flush();
    });
    let _ = writeln!(out);
    for (k, l) in server_lines(&w.info, 0).iter().enumerate() {
        let label = if k == 0 { "Server" } else { "" };
        let _ = writeln!(out, "  {label:<13}{l}");
    }
    if let Some(g) = &w.info.gc {
        let _ = writeln!(out, "  {:<13}{}", "GC", gc_line(g));
    }
    let _ = out.flush();
    match w.died_at_s {
        Some(t) => {
            stderrln!(
                "volley monitor: pid {} exited {t:.2} s after the start",
                cfg.pid
            );
            ExitCode::Failed
        }
        None => ExitCode::Ok,
    }
}

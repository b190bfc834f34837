//! The terminal: the run summary — what a wrk user reads at a glance, plus what wrk leaves out
//! (corrected vs service time, every percentile to 99.999, errors by kind, warnings) — the
//! suite table, and the live one-line progress display ([`live`]).

pub mod live;

pub use live::LiveLine;

use std::fmt::Write as _;

use super::model::Report;
use super::Reporter;
use crate::result::{Arrivals, Mode, RunResult, ServerInfo};
use crate::stats::histogram::QUANTILES;
use crate::stats::Percentiles;
use crate::units::{bytes, micros_f, opt_micros, rate, seconds, thousands};

/// Terminal summary reporter.
pub struct TerminalReporter;

impl Reporter for TerminalReporter {
    fn render(&self, report: &Report) -> String {
        match report.single_run() {
            Some(r) => summary(r),
            None => super::suite_table::render(report),
        }
    }
}

/// The human summary of one run.
pub fn summary(r: &RunResult) -> String {
    let mut o = String::new();
    let l = &r.load;
    let _ = writeln!(
        o,
        "volley {}  {} {}  ({})",
        r.volley_version, r.target.method, r.target.url, r.target.addr
    );
    let mut how = match l.mode {
        Mode::Open => format!(
            "open loop at {} req/s ({})",
            rate(l.rate_rps.unwrap_or(0.0)),
            l.arrivals.unwrap_or(Arrivals::Uniform)
        ),
        Mode::Ramp => match (&l.stages, l.spawn_rate) {
            (Some(st), _) => {
                let parts: Vec<String> = st
                    .iter()
                    .map(|s| format!("{}:{}", seconds(s.duration_s), thousands(s.users)))
                    .collect();
                format!("virtual users in stages {}", parts.join(", "))
            }
            (None, Some(r)) => format!(
                "{} virtual users, {} added per second",
                thousands(l.users.unwrap_or(0)),
                rate(r)
            ),
            (None, None) => format!("{} virtual users", thousands(l.users.unwrap_or(0))),
        },
        Mode::Closed => "closed loop".to_string(),
    };
    if l.think_time_s > 0.0 {
        let _ = write!(how, ", think time {}", seconds(l.think_time_s));
    }
    if l.mode == Mode::Ramp {
        let _ = write!(how, ", {} thread{}", l.threads, plural(l.threads));
    } else {
        let _ = write!(
            how,
            ", {} connection{}, {} thread{}",
            l.connections,
            plural(l.connections),
            l.threads,
            plural(l.threads)
        );
    }
    match (l.duration_s, l.requests) {
        (Some(d), _) => {
            let _ = write!(how, ", {}", seconds(d));
        }
        (None, Some(n)) => {
            let _ = write!(how, ", {} request{}", thousands(n), plural(n));
        }
        _ => {}
    }
    if l.warmup_s > 0.0 {
        let _ = write!(how, " after {} warm-up", seconds(l.warmup_s));
    }
    how.push_str(if l.keepalive {
        ", keep-alive"
    } else {
        ", new connection per request"
    });
    if l.pipeline > 1 {
        let _ = write!(how, ", pipeline {}", l.pipeline);
    }
    if r.target.body_bytes > 0 {
        let _ = write!(how, ", body {}", bytes(r.target.body_bytes));
    }
    let _ = writeln!(o, "{how}");
    if r.interrupted {
        let _ = writeln!(o, "INTERRUPTED: results cover the run up to Ctrl-C");
    }
    let _ = writeln!(o);

    let _ = writeln!(
        o,
        "  Throughput   {} req/s   ({} responses in {})",
        rate(r.throughput_rps),
        thousands(r.requests.completed),
        format_elapsed(r.elapsed_s)
    );
    let el = r.elapsed_s.max(1e-9);
    let _ = writeln!(
        o,
        "  Transfer     received {} ({}/s), sent {}",
        bytes(r.bytes.received),
        bytes((r.bytes.received as f64 / el) as u64),
        bytes(r.bytes.sent)
    );
    let _ = writeln!(o);

    // Percentile table: one column in closed loop, corrected/service/lag in open loop.
    let mut cols: Vec<(&str, &Percentiles)> = Vec::new();
    if l.mode != Mode::Open {
        cols.push(("latency", &r.latency_us));
    } else {
        cols.push(("corrected", &r.latency_us));
        cols.push(("service", &r.service_time_us));
        if let Some(lag) = &r.schedule_lag_us {
            cols.push(("send lag", lag));
        }
    }
    let _ = write!(o, "  {:<10}", "Latency");
    for (name, _) in &cols {
        let _ = write!(o, "{name:>12}");
    }
    let _ = writeln!(o);
    let mut row = |label: &str, f: &dyn Fn(&Percentiles) -> String| {
        let _ = write!(o, "    {label:<8}");
        for (_, p) in &cols {
            let _ = write!(o, "{:>12}", f(p));
        }
        let _ = writeln!(o);
    };
    row("min", &|p| opt_micros(p.min));
    for (k, (_, label)) in QUANTILES.iter().enumerate() {
        row(label, &|p| opt_micros(p.quantile_values()[k]));
    }
    row("max", &|p| opt_micros(p.max));
    row("mean", &|p| {
        p.mean.map(micros_f).unwrap_or_else(|| "-".into())
    });
    row("stdev", &|p| {
        p.stdev.map(micros_f).unwrap_or_else(|| "-".into())
    });
    let _ = writeln!(o);

    let q = &r.requests;
    let _ = writeln!(
        o,
        "  Requests     sent {} · completed {} · errors {} · unfinished {} · unsent {}",
        thousands(q.sent),
        thousands(q.completed),
        thousands(q.errors),
        thousands(q.unfinished),
        thousands(q.unsent)
    );
    let status: Vec<String> = r
        .status_codes
        .iter()
        .map(|(code, n)| {
            let flag = if code.starts_with('4') || code.starts_with('5') {
                " (!)"
            } else {
                ""
            };
            format!("{code}: {}{flag}", thousands(*n))
        })
        .collect();
    let _ = writeln!(
        o,
        "  Status       {}",
        if status.is_empty() {
            "no responses".into()
        } else {
            status.join(" · ")
        }
    );
    let e = &r.errors;
    let errs: Vec<String> = [
        ("connect", e.connect),
        ("timeout", e.timeout),
        ("reset", e.reset),
        ("protocol", e.protocol),
        ("closed", e.closed),
    ]
    .iter()
    .filter(|(_, n)| *n > 0)
    .map(|(k, n)| format!("{k} {}", thousands(*n)))
    .collect();
    let _ = writeln!(
        o,
        "  Errors       {}",
        if errs.is_empty() {
            "none".to_string()
        } else {
            errs.join(" · ")
        }
    );
    let warm_conns = r.warmup.as_ref().map(|w| w.connections_opened).unwrap_or(0);
    let _ = writeln!(
        o,
        "  Connections  opened {}{} · closed by server {}",
        thousands(r.connections.opened),
        if warm_conns > 0 {
            format!(" (+{} in the warm-up)", thousands(warm_conns))
        } else {
            String::new()
        },
        thousands(r.connections.closed_by_server)
    );
    let c = &r.client;
    let cpu = c.cpu_user_s + c.cpu_sys_s;
    let per_million = if q.completed > 0 {
        format!(
            ", {:.2} CPU-s per million responses",
            cpu / q.completed as f64 * 1e6
        )
    } else {
        String::new()
    };
    let _ = writeln!(
        o,
        "  Client       CPU {:.2} s ({:.0}% user) = {:.2} cores{per_million}, RSS {}",
        cpu,
        if cpu > 0.0 {
            c.cpu_user_s / cpu * 100.0
        } else {
            0.0
        },
        cpu / el,
        bytes(c.rss_max_bytes)
    );
    if let Some(srv) = &r.server {
        for (k, line) in server_lines(srv, q.completed).iter().enumerate() {
            let label = if k == 0 { "Server" } else { "" };
            let _ = writeln!(o, "  {label:<13}{line}");
        }
    }
    if let Some(w) = &r.warmup {
        let _ = writeln!(
            o,
            "  Warm-up      {}: {} responses, {} errors (excluded from everything above)",
            seconds(w.duration_s),
            thousands(w.completed),
            thousands(w.errors)
        );
    }
    if !r.thresholds.is_empty() {
        let _ = writeln!(o);
        let broken = r.thresholds.iter().filter(|t| !t.pass).count();
        let _ = writeln!(
            o,
            "  Thresholds   {} of {} passed{}",
            r.thresholds.len() - broken,
            r.thresholds.len(),
            if broken > 0 {
                " — BROKEN (exit code 1)"
            } else {
                ""
            }
        );
        for t in &r.thresholds {
            let shown = crate::config::threshold::parse(&t.threshold)
                .map(|th| th.show(t.actual))
                .unwrap_or_else(|_| format!("{:?}", t.actual));
            let _ = writeln!(
                o,
                "    {} {:<20} measured {shown}",
                if t.pass { "pass" } else { "FAIL" },
                t.threshold
            );
        }
    }
    if !r.warnings.is_empty() {
        let _ = writeln!(o);
        for w in &r.warnings {
            let _ = writeln!(o, "  ! {w}");
        }
    }
    o
}

/// A per-request figure with the precision its size deserves: 12, 2.1, 0.05.
fn per_req(v: f64) -> String {
    if v >= 10.0 {
        format!("{v:.0}")
    } else if v >= 0.1 || v == 0.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// The "Server" block (`--pid`): what the server spent, per request and in all. `completed`
/// is the number of completed requests (0 from `volley monitor`: no per-request figures).
pub fn server_lines(s: &ServerInfo, completed: u64) -> Vec<String> {
    let cpu = s.cpu_user_s + s.cpu_sys_s;
    let (user_pct, sys_pct) = if cpu > 0.0 {
        (s.cpu_user_s / cpu * 100.0, s.cpu_sys_s / cpu * 100.0)
    } else {
        (0.0, 0.0)
    };
    let cores = if s.window_s > 0.0 {
        cpu / s.window_s
    } else {
        0.0
    };
    let mut first = vec![format!(
        "CPU {cores:.2} cores ({user_pct:.0}% user / {sys_pct:.0}% sys)"
    )];
    let top = |div: f64| -> String {
        let names: Vec<String> = s
            .syscalls_top
            .iter()
            .take(3)
            .map(|t| format!("{} {}", t.name, per_req(t.count as f64 / div)))
            .collect();
        if names.is_empty() {
            String::new()
        } else {
            format!(" ({})", names.join(", "))
        }
    };
    let p = &s.per_request;
    let mut second = Vec::new();
    if completed > 0 {
        if let Some(cpu_us) = p.cpu_us {
            first.push(format!("{} CPU per request", micros_f(cpu_us)));
        }
        match (s.syscalls, p.syscalls) {
            (Some(_), Some(per)) => first.push(format!(
                "{} syscalls per request{}",
                per_req(per),
                top(completed as f64)
            )),
            _ => first.push("syscalls not counted".to_string()),
        }
        if let Some(ctx) = p.ctx_switches {
            second.push(format!("{ctx:.2} context switches per request"));
        }
    } else {
        match s.syscalls {
            Some(n) if s.window_s > 0.0 => first.push(format!(
                "{} syscalls/s{}",
                thousands((n as f64 / s.window_s).round() as u64),
                top(s.window_s)
            )),
            _ => first.push("syscalls not counted".to_string()),
        }
        let ctx = s.ctx_switches_voluntary + s.ctx_switches_involuntary;
        if s.window_s > 0.0 {
            second.push(format!(
                "{} context switches/s",
                thousands((ctx as f64 / s.window_s).round() as u64)
            ));
        }
    }
    let processes = s.processes_max.max(1);
    second.push(format!("RSS max {}", bytes(s.rss_max_bytes)));
    second.push(format!(
        "{} process{} / {} thread{}",
        processes,
        if processes == 1 { "" } else { "es" },
        s.threads_max,
        plural(s.threads_max)
    ));
    let mut third = vec![format!(
        "in {}: {:.2} CPU-s ({:.2} user, {:.2} sys)",
        format_elapsed(s.window_s),
        cpu,
        s.cpu_user_s,
        s.cpu_sys_s
    )];
    if let Some(n) = s.syscalls {
        third.push(format!("{} syscalls", thousands(n)));
    }
    third.push(format!(
        "{} context switches ({} voluntary)",
        thousands(s.ctx_switches_voluntary + s.ctx_switches_involuntary),
        thousands(s.ctx_switches_voluntary)
    ));
    third.push(format!(
        "I/O calls {} read / {} write",
        thousands(s.io_calls_read),
        thousands(s.io_calls_write)
    ));
    let mut lines = vec![
        format!("{},", first.join(", ")),
        second.join(", "),
        third.join(", "),
    ];
    if let Some(note) = &s.note {
        lines.push(format!("note: {note}"));
    }
    lines
}

fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

fn format_elapsed(s: f64) -> String {
    format!("{s:.2} s")
}

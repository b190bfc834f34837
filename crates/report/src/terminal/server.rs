//! The "Server" block (`--pid`) of the run summary and of `volley monitor`: what the server
//! spent, per request when a run counted its requests, per second when only watched.

use super::{format_elapsed, plural};
use volley_model::result::{ServerGc, ServerInfo};
use volley_model::units::{bytes, micros_f, thousands};

/// The "Server" block (`--pid`): what the server spent, per request and in all. `completed`
/// is the number of completed requests (0 from `volley monitor`: no per-request figures).
pub fn server_lines(s: &ServerInfo, completed: u64) -> Vec<String> {
    let mut first = vec![cpu_share(s)];
    let mut second = Vec::new();
    if completed > 0 {
        per_request(s, completed, &mut first, &mut second);
    } else {
        per_second(s, &mut first, &mut second);
    }
    second.extend(footprint(s));
    let mut lines = vec![
        format!("{},", first.join(", ")),
        second.join(", "),
        totals(s).join(", "),
    ];
    if let Some(note) = &s.note {
        lines.push(format!("note: {note}"));
    }
    lines
}

/// `CPU 0.58 cores (23% user / 77% sys)`: cores busy over the monitor's window.
fn cpu_share(s: &ServerInfo) -> String {
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
    format!("CPU {cores:.2} cores ({user_pct:.0}% user / {sys_pct:.0}% sys)")
}

/// Costs divided by the completed requests: CPU and syscalls on the first line, context
/// switches on the second.
fn per_request(s: &ServerInfo, completed: u64, first: &mut Vec<String>, second: &mut Vec<String>) {
    let p = &s.per_request;
    if let Some(cpu_us) = p.cpu_us {
        first.push(format!("{} CPU per request", micros_f(cpu_us)));
    }
    match (s.syscalls, p.syscalls) {
        (Some(_), Some(per)) => first.push(format!(
            "{} syscalls per request{}",
            per_req(per),
            top_syscalls(s, completed as f64)
        )),
        _ => first.push("syscalls not counted".to_string()),
    }
    if let Some(ctx) = p.ctx_switches {
        second.push(format!("{ctx:.2} context switches per request"));
    }
}

/// Without requests to divide by (`volley monitor`), rates over the window instead.
fn per_second(s: &ServerInfo, first: &mut Vec<String>, second: &mut Vec<String>) {
    match s.syscalls {
        Some(n) if s.window_s > 0.0 => first.push(format!(
            "{} syscalls/s{}",
            thousands((n as f64 / s.window_s).round() as u64),
            top_syscalls(s, s.window_s)
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

/// ` (recvfrom 1.0, sendto 1.0, close 0.00)`: the three most frequent syscalls, each divided
/// by `div`; empty when none were counted.
fn top_syscalls(s: &ServerInfo, div: f64) -> String {
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
}

/// Peak memory and the size of the process tree.
fn footprint(s: &ServerInfo) -> [String; 2] {
    let processes = s.processes_max.max(1);
    [
        format!("RSS max {}", bytes(s.rss_max_bytes)),
        format!(
            "{} process{} / {} thread{}",
            processes,
            if processes == 1 { "" } else { "es" },
            s.threads_max,
            plural(s.threads_max)
        ),
    ]
}

/// Everything the window added up: CPU seconds, syscalls, context switches, I/O calls.
fn totals(s: &ServerInfo) -> Vec<String> {
    let cpu = s.cpu_user_s + s.cpu_sys_s;
    let mut parts = vec![format!(
        "in {}: {:.2} CPU-s ({:.2} user, {:.2} sys)",
        format_elapsed(s.window_s),
        cpu,
        s.cpu_user_s,
        s.cpu_sys_s
    )];
    if let Some(n) = s.syscalls {
        parts.push(format!("{} syscalls", thousands(n)));
    }
    parts.push(format!(
        "{} context switches ({} voluntary)",
        thousands(s.ctx_switches_voluntary + s.ctx_switches_involuntary),
        thousands(s.ctx_switches_voluntary)
    ));
    parts.push(format!(
        "I/O calls {} read / {} write",
        thousands(s.io_calls_read),
        thousands(s.io_calls_write)
    ));
    parts
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

/// The GC line: `312 pauses (jvm-log), p99 4.1 ms, max 17.2 ms, 1.84 s in all; 26 MB/s
/// allocated; 71% of the 120 requests above p99.9 overlapped a pause`.
pub fn gc_line(g: &ServerGc) -> String {
    let count = |n: u64, what: &str| format!("{} {what}{}", thousands(n), plural(n));
    let ms = |v: f64| {
        if v >= 1000.0 {
            format!("{:.2} s", v / 1000.0)
        } else if v >= 10.0 {
            format!("{v:.0} ms")
        } else {
            format!("{v:.2} ms")
        }
    };
    let mut parts = Vec::new();
    if g.source.per_pause() {
        parts.push(format!(
            "{} ({}), p50 {}, p99 {}, max {}, {} in all",
            count(g.pause_count, "pause"),
            g.source.as_str(),
            ms(g.pause_ms.p50),
            ms(g.pause_ms.p99),
            ms(g.pause_max_ms),
            ms(g.pause_total_ms)
        ));
    } else {
        parts.push(format!(
            "{} ({}: per-sample totals), {} paused, max {} in a sample",
            count(g.collections, "collection"),
            g.source.as_str(),
            ms(g.pause_total_ms),
            ms(g.pause_max_ms)
        ));
    }
    if let Some(rate) = g.alloc_rate_mb_s {
        parts.push(format!("{rate:.1} MB/s allocated"));
    }
    if let (Some(f), Some(n)) = (g.slow_overlap_fraction, g.slow_requests_checked) {
        parts.push(format!(
            "{:.0}% of the {} requests at or above p99.9 overlapped a pause",
            f * 100.0,
            thousands(n)
        ));
    }
    if g.unparsed_lines > 0 {
        parts.push(format!(
            "{} not understood",
            count(g.unparsed_lines, "log line")
        ));
    }
    parts.join("; ")
}

//! What a request costs the server: CPU, syscalls, context switches, memory and threads.

use super::glance::peak_rss;
use super::{med, num, opt_f, server_cell, tend, thead, txt};
use crate::html::{Group, Row};
use volley_model::result::RunResult;
use volley_model::units::bytes;

/// Cores the server kept busy over the monitor's window (the run's length without one).
fn cpu_cores(r: &RunResult) -> Option<f64> {
    let s = r.server.as_ref()?;
    let window = if s.window_s > 0.0 {
        s.window_s
    } else {
        r.elapsed_s
    };
    (window > 0.0).then(|| (s.cpu_user_s + s.cpu_sys_s) / window)
}

/// What a request costs the server.
pub(super) fn efficiency(o: &mut String, g: &Group) {
    let rows: Vec<&Row> = g
        .rows
        .iter()
        .filter(|r| r.results().iter().any(|x| x.server.is_some()))
        .collect();
    if rows.is_empty() {
        return;
    }
    o.push_str("<h3>Server cost per request</h3>");
    thead(
        o,
        &[
            "server",
            "CPU µs/req",
            "user µs/req",
            "sys µs/req",
            "syscalls/req",
            "context switches/req",
            "CPU cores busy",
            "peak RSS",
            "threads",
            "top syscalls per request",
        ],
    );
    for row in rows {
        cost_row(o, row);
    }
    tend(o);
}

/// A server's medians per request, cores busy, peaks, and its most frequent syscalls.
fn cost_row(o: &mut String, row: &Row) {
    let rs = row.results();
    server_cell(o, row);
    for f in [
        (|r: &RunResult| r.server.as_ref()?.per_request.cpu_us) as fn(&RunResult) -> Option<f64>,
        |r| r.server.as_ref()?.per_request.user_us,
        |r| r.server.as_ref()?.per_request.sys_us,
        |r| r.server.as_ref()?.per_request.syscalls,
        |r| r.server.as_ref()?.per_request.ctx_switches,
    ] {
        let v = med(&rs, f);
        num(o, v, &opt_f(v, |v| format!("{v:.2}")));
    }
    let cores = med(&rs, cpu_cores);
    num(o, cores, &opt_f(cores, |v| format!("{v:.2}")));
    let rss = peak_rss(row);
    num(o, rss, &opt_f(rss, |v| bytes(v as u64)));
    let threads = rs
        .iter()
        .filter_map(|r| r.server.as_ref().map(|s| s.threads_max as f64))
        .reduce(f64::max);
    num(o, threads, &opt_f(threads, |v| format!("{v}")));
    txt(o, &top_syscalls(row));
    o.push_str("</tr>\n");
}

/// The four most frequent syscalls per request of the representative repetition, or why
/// syscalls were not counted.
fn top_syscalls(row: &Row) -> String {
    row.representative()
        .and_then(|(_, r)| {
            let s = r.server.as_ref()?;
            let n = r.requests.completed.max(1) as f64;
            Some(
                s.syscalls_top
                    .iter()
                    .take(4)
                    .map(|c| format!("{} {:.2}", c.name, c.count as f64 / n))
                    .collect::<Vec<_>>()
                    .join(", "),
            )
        })
        .filter(|t| !t.is_empty())
        .or_else(|| {
            row.results().iter().find_map(|r| {
                r.server
                    .as_ref()?
                    .syscalls_unavailable_reason
                    .as_ref()
                    .map(|w| format!("not counted: {w}"))
            })
        })
        .unwrap_or_default()
}

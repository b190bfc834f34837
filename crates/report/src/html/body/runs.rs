//! What the medians are made of: every latency percentile of every kind, and one row per
//! repetition with its counters.

use std::fmt::Write;

use super::{num, opt_f, server_cell, status_cell, tend, thead, txt};
use crate::html::{escape_html as esc, Group, Row};
use crate::model::{median, Cell};
use volley_model::metric::Stat;
use volley_model::result::{CellStatus, RunResult};
use volley_model::stats::Percentiles;
use volley_model::units::{bytes, micros, micros_f, rate, seconds, thousands};

/// Picks one latency kind's percentiles from a result.
type Pick = fn(&RunResult) -> Option<&Percentiles>;

/// The latency kinds, in table order.
const KINDS: [(&str, Pick); 3] = [
    ("corrected", |r| Some(&r.latency_us)),
    ("service time", |r| Some(&r.service_time_us)),
    ("send lag", |r| r.schedule_lag_us.as_ref()),
];

/// Every percentile of every latency kind, medians over the repetitions.
pub(super) fn all_percentiles(o: &mut String, g: &Group) {
    let lines = percentile_lines(g);
    if lines.is_empty() {
        return;
    }
    o.push_str(
        "<details><summary>All latency percentiles (medians over the repetitions)</summary>",
    );
    thead(
        o,
        &[
            "server", "latency", "min", "mean", "stdev", "p50", "p75", "p90", "p95", "p99",
            "p99.9", "p99.99", "p99.999", "max",
        ],
    );
    for (row, kind, ps) in lines {
        percentile_row(o, row, kind, &ps);
    }
    tend(o);
    o.push_str("</details>\n");
}

/// The lines of the table: per server, each latency kind its repetitions recorded.
fn percentile_lines<'g, 'a>(
    g: &'g Group<'a>,
) -> Vec<(&'g Row<'a>, &'static str, Vec<&'g Percentiles>)> {
    let mut lines = Vec::new();
    for row in &g.rows {
        let rs = row.results();
        for (i, (kind, pick)) in KINDS.iter().enumerate() {
            let ps: Vec<&Percentiles> = rs.iter().filter_map(|r| pick(r)).collect();
            // Service time is shown when it differs from the corrected latency (open loop,
            // or connect time without keep-alive).
            let differs = i != 1 || rs.iter().any(|r| r.service_time_us != r.latency_us);
            if !ps.is_empty() && differs {
                lines.push((row, *kind, ps));
            }
        }
    }
    lines
}

/// One server's percentiles of one latency kind, medians over its repetitions.
fn percentile_row(o: &mut String, row: &Row, kind: &str, ps: &[&Percentiles]) {
    server_cell(o, row);
    txt(o, kind);
    let m = |f: &dyn Fn(&Percentiles) -> Option<f64>| {
        median(&ps.iter().filter_map(|p| f(p)).collect::<Vec<_>>())
    };
    let us = |v: f64| micros(v.round() as u64);
    let v = m(&|p| p.min.map(|v| v as f64));
    num(o, v, &opt_f(v, us));
    let v = m(&|p| p.mean);
    num(o, v, &opt_f(v, micros_f));
    let v = m(&|p| p.stdev);
    num(o, v, &opt_f(v, micros_f));
    for s in Stat::PERCENTILES {
        let v = m(&|p| s.of(p));
        num(o, v, &opt_f(v, us));
    }
    let v = m(&|p| p.max.map(|v| v as f64));
    num(o, v, &opt_f(v, us));
    o.push_str("</tr>\n");
}

/// Columns of the every-run table of counters.
const RUN_COLUMNS: [&str; 15] = [
    "server",
    "rep",
    "status",
    "req/s",
    "elapsed",
    "sent",
    "completed",
    "errors",
    "unfinished",
    "unsent",
    "bytes sent",
    "bytes received",
    "connections opened",
    "closed by server",
    "warm-up responses",
];

/// Columns of the every-run table of the client.
const CLIENT_COLUMNS: [&str; 7] = [
    "server",
    "rep",
    "client CPU",
    "client peak CPU",
    "client RSS",
    "client saturated",
    "started",
];

/// One row per repetition with its counters, then one with what volley itself spent: what the
/// medians above are made of (two tables, so that each fits the page).
pub(super) fn every_run(o: &mut String, g: &Group) {
    o.push_str("<details><summary>Every run</summary>");
    thead(o, &RUN_COLUMNS);
    for row in &g.rows {
        for c in &row.series.cells {
            server_cell(o, row);
            num(o, Some(f64::from(c.rep)), &c.rep.to_string());
            status_cell(o, c.status == CellStatus::Ok, c.status);
            if let Some(r) = &c.result {
                counters(o, r);
            }
            o.push_str("</tr>\n");
        }
    }
    tend(o);
    let measured = |c: &&&Cell| c.result.is_some();
    if g.rows
        .iter()
        .any(|r| r.series.cells.iter().any(|c| c.result.is_some()))
    {
        o.push_str("<h3>The client (volley) in every run</h3>");
        thead(o, &CLIENT_COLUMNS);
        for row in &g.rows {
            for c in row.series.cells.iter().filter(measured) {
                let Some(r) = &c.result else { continue };
                server_cell(o, row);
                num(o, Some(f64::from(c.rep)), &c.rep.to_string());
                client(o, r);
                txt(o, &r.started_at);
                o.push_str("</tr>\n");
            }
        }
        tend(o);
    }
    o.push_str("</details>\n");
}

/// A repetition's throughput, request, byte and connection counters.
fn counters(o: &mut String, r: &RunResult) {
    let count = |o: &mut String, n: u64| num(o, Some(n as f64), &thousands(n));
    num(o, Some(r.throughput_rps), &rate(r.throughput_rps));
    num(o, Some(r.elapsed_s), &esc(&seconds(r.elapsed_s)));
    count(o, r.requests.sent);
    count(o, r.requests.completed);
    count(o, r.requests.errors);
    count(o, r.requests.unfinished);
    count(o, r.requests.unsent);
    num(o, Some(r.bytes.sent as f64), &bytes(r.bytes.sent));
    num(o, Some(r.bytes.received as f64), &bytes(r.bytes.received));
    count(o, r.connections.opened);
    count(o, r.connections.closed_by_server);
    match &r.warmup {
        Some(w) => count(o, w.completed),
        None => num(o, None, ""),
    }
}

/// What the client spent in a repetition, and whether it was saturated.
fn client(o: &mut String, r: &RunResult) {
    let cpu = r.client.cpu_user_s + r.client.cpu_sys_s;
    num(
        o,
        Some(cpu),
        &format!(
            "{cpu:.2} s ({:.0}% user)",
            if cpu > 0.0 {
                r.client.cpu_user_s / cpu * 100.0
            } else {
                0.0
            }
        ),
    );
    num(
        o,
        Some(r.client.cpu_pct_max),
        &format!("{:.0}%", r.client.cpu_pct_max),
    );
    num(
        o,
        Some(r.client.rss_max_bytes as f64),
        &bytes(r.client.rss_max_bytes),
    );
    let _ = write!(
        o,
        "<td class=\"{}\" data-v=\"{}\">{} ({:.0}% of samples)</td>",
        if r.client.saturated { "bad" } else { "" },
        r.client.saturated_fraction,
        if r.client.saturated { "yes" } else { "no" },
        r.client.saturated_fraction * 100.0
    );
}

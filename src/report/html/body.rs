//! The page's HTML: header (environment and settings), a summary, one section per scenario
//! group (verdict, main table, chart slots, efficiency table, warnings, thresholds), the cells
//! that did not finish, and the suite files. Every string that came from a config, a server or
//! a response goes through `escape_html`; numbers sort by a `data-v` attribute holding the raw
//! value, so the display can be rounded and carry units.

use std::collections::BTreeMap;
use std::fmt::Write;

use serde_json::Value;

use super::{escape_html as esc, Group, GroupData, Page, Row, Spread};
use crate::report::markdown::describe_load;
use crate::report::model::{median, Cell, Report};
use crate::result::{BuildStatus, CellStatus, RunResult, SuiteRow};
use crate::stats::Percentiles;
use crate::units::{bytes, micros, micros_f, rate, seconds, thousands};

/// The page body (everything inside `<body>` but the scripts).
pub fn render(report: &Report, page: &Page) -> String {
    let mut o = String::new();
    header(&mut o, report, page);
    for (i, g) in page.groups.iter().enumerate() {
        group(
            &mut o,
            report,
            i,
            g,
            &page.data.groups[i],
            &page.data.servers,
        );
    }
    noted(&mut o, report);
    suite_files(&mut o, report);
    o.push_str(
        "<footer><p>req/s, latency percentiles and per-request costs are medians over the \
         repetitions that finished (min and max: the range of req/s); RSS and threads are peaks. \
         Latency is corrected for coordinated omission in open loop (from each request's due \
         time) and is service time in closed loop. The percentile plot adds up the repetitions' \
         histograms. Charts: uPlot 1.6.32 (MIT).</p>\
         <div id=\"selftest\" hidden></div></footer>\n",
    );
    o
}

/// A table cell that sorts by `v` and shows `text` (already escaped or numeric).
fn num(o: &mut String, v: Option<f64>, text: &str) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(o, "<td class=\"n\" data-v=\"{v}\">{text}</td>");
        }
        _ => o.push_str("<td class=\"n\" data-v=\"\">–</td>"),
    }
}

/// A text cell, escaped.
fn txt(o: &mut String, s: &str) {
    let _ = write!(o, "<td>{}</td>", esc(s));
}

/// The header row of a sortable table.
fn thead(o: &mut String, cols: &[&str]) {
    o.push_str("<div class=\"wide\"><table class=\"sortable\"><thead><tr>");
    for c in cols {
        let _ = write!(o, "<th>{}</th>", esc(c));
    }
    o.push_str("</tr></thead><tbody>\n");
}

/// Closes a table opened by `thead`.
fn tend(o: &mut String) {
    o.push_str("</tbody></table></div>\n");
}

fn opt_f(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".into(), f)
}

fn med(rs: &[&RunResult], f: impl Fn(&RunResult) -> Option<f64>) -> Option<f64> {
    median(&rs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

fn cpu_cores(r: &RunResult) -> Option<f64> {
    let s = r.server.as_ref()?;
    let window = if s.window_s > 0.0 {
        s.window_s
    } else {
        r.elapsed_s
    };
    (window > 0.0).then(|| (s.cpu_user_s + s.cpu_sys_s) / window)
}

fn volley_version(report: &Report) -> String {
    report
        .suites
        .first()
        .map(|s| s.volley_version.clone())
        .or_else(|| {
            report
                .cells
                .iter()
                .find_map(|c| c.result.as_ref().map(|r| r.volley_version.clone()))
        })
        .unwrap_or_else(|| env!("CARGO_PKG_VERSION").into())
}

/// The suite row a cell came from (for its flags, stderr tail and notes).
fn row_of<'r>(report: &'r Report, c: &Cell) -> Option<&'r SuiteRow> {
    report.suites.iter().flat_map(|s| s.rows.iter()).find(|r| {
        r.server == c.server && r.scenario == c.scenario && r.axes == c.axes && r.rep == c.rep
    })
}

fn header(o: &mut String, report: &Report, page: &Page) {
    let finished = report
        .cells
        .iter()
        .filter(|c| c.status == CellStatus::Ok)
        .count();
    let _ = writeln!(
        o,
        "<header><h1>{}</h1><p class=\"sub\">volley {} · {} scenario cell{} · {} server{} · {finished} of {} cells finished</p>",
        esc(&report.title),
        esc(&volley_version(report)),
        page.groups.len(),
        if page.groups.len() == 1 { "" } else { "s" },
        page.data.servers.len(),
        if page.data.servers.len() == 1 { "" } else { "s" },
        report.cells.len(),
    );
    if page.groups.len() > 1 {
        o.push_str("<nav><b>Scenarios:</b> ");
        for (i, g) in page.groups.iter().enumerate() {
            let _ = write!(o, "<a href=\"#g{i}\">{}</a> ", esc(&g.label));
        }
        o.push_str("</nav>\n");
    }
    // The answer first, then where and how it was measured.
    summary(o, page);
    environment(o, report);
    settings(o, report, page);
    o.push_str("</header>\n");
}

/// Where it ran: one line per suite, then the distinct environments of the runs themselves
/// (a single run, or runs whose environment differs from their suite's).
fn environment(o: &mut String, report: &Report) {
    o.push_str("<section id=\"environment\"><h2>Environment</h2>");
    thead(
        o,
        &[
            "source",
            "CPU",
            "cores",
            "kernel",
            "servers pinned to",
            "volley pinned to",
            "volley",
            "started",
            "finished",
        ],
    );
    for s in &report.suites {
        let name = s
            .suite
            .get("suite")
            .and_then(|v| v.get("name"))
            .and_then(Value::as_str)
            .unwrap_or("suite");
        o.push_str("<tr>");
        txt(o, &format!("suite {name} ({}, {})", s.suite_file, s.state));
        txt(o, s.env.cpu_model.as_deref().unwrap_or("unknown"));
        num(o, Some(s.env.cores as f64), &s.env.cores.to_string());
        txt(o, s.env.kernel.as_deref().unwrap_or("?"));
        txt(
            o,
            s.env.pinning.server_cpus.as_deref().unwrap_or("not pinned"),
        );
        txt(
            o,
            s.env.pinning.client_cpus.as_deref().unwrap_or("not pinned"),
        );
        txt(o, &s.volley_version);
        txt(o, &s.started_at);
        txt(o, s.finished_at.as_deref().unwrap_or("running"));
        o.push_str("</tr>\n");
    }
    // Distinct run environments, counted; the first cell (how many runs) is known at the end.
    let mut seen: Vec<(String, usize, String)> = Vec::new();
    for r in report.cells.iter().filter_map(|c| c.result.as_ref()) {
        let e = &r.env;
        let in_suite = report.suites.iter().any(|s| {
            s.env.cpu_model == e.cpu_model
                && s.env.kernel == e.kernel
                && s.env.pinning.server_cpus == e.pinning.server_cpus
                && s.volley_version == r.volley_version
        });
        if in_suite {
            continue;
        }
        let key = format!(
            "{:?}|{}|{:?}|{:?}|{}|{}",
            e.cpu_model,
            e.cores,
            e.kernel,
            e.pinning.server_cpus,
            e.pinning.client_cpus,
            r.volley_version
        );
        if let Some(s) = seen.iter_mut().find(|s| s.0 == key) {
            s.1 += 1;
            continue;
        }
        let mut rest = String::new();
        txt(&mut rest, e.cpu_model.as_deref().unwrap_or("unknown"));
        num(&mut rest, Some(e.cores as f64), &e.cores.to_string());
        txt(&mut rest, e.kernel.as_deref().unwrap_or("?"));
        txt(
            &mut rest,
            e.pinning.server_cpus.as_deref().unwrap_or("not pinned"),
        );
        txt(&mut rest, &e.pinning.client_cpus);
        txt(&mut rest, &r.volley_version);
        txt(&mut rest, &r.started_at);
        txt(&mut rest, "");
        seen.push((key, 1, rest));
    }
    for (_, n, rest) in &seen {
        let label = if *n == 1 {
            "run".to_string()
        } else {
            format!("{n} runs (the first's start)")
        };
        o.push_str("<tr>");
        txt(o, &label);
        o.push_str(rest);
        o.push_str("</tr>\n");
    }
    tend(o);
    // Versions of every server, from the suites' `version` commands.
    let tools: Vec<(&String, &String)> = report
        .suites
        .iter()
        .flat_map(|s| s.env.tools.iter())
        .collect();
    if !tools.is_empty() {
        o.push_str("<h3>Versions</h3>");
        thead(o, &["name", "version"]);
        let mut shown: Vec<(&String, &String)> = Vec::new();
        for t in tools {
            if shown.contains(&t) {
                continue;
            }
            shown.push(t);
            o.push_str("<tr>");
            txt(o, t.0);
            txt(o, t.1);
            o.push_str("</tr>\n");
        }
        tend(o);
    }
    o.push_str("</section>\n");
}

/// The load block of every scenario group, one row each, with the suite's flags.
fn settings(o: &mut String, report: &Report, page: &Page) {
    o.push_str("<section id=\"settings\"><h2>Settings</h2>");
    thead(
        o,
        &[
            "scenario",
            "mode",
            "connections",
            "threads",
            "rate",
            "duration",
            "warm-up",
            "keep-alive",
            "method",
            "path",
            "body",
            "pipeline",
            "timeout",
            "users / spawn / think",
        ],
    );
    let mut commands: Vec<(usize, String, Vec<String>)> = Vec::new();
    for (i, g) in page.groups.iter().enumerate() {
        let first = g.rows.iter().find_map(|r| r.ok.first().map(|(_, r)| *r));
        // A suite cell's `volley run` flags, or a plain run's whole command line.
        let flags = g
            .rows
            .iter()
            .flat_map(|r| r.series.cells.iter())
            .find_map(|c| row_of(report, c))
            .map(|r| ("volley run flags", r.flags.clone()))
            .or_else(|| first.map(|r| ("command", r.argv.clone())));
        if let Some((what, f)) = flags.filter(|f| !f.1.is_empty()) {
            commands.push((i, what.to_string(), f));
        }
        let _ = write!(o, "<tr><td><a href=\"#g{i}\">{}</a></td>", esc(&g.label));
        match first {
            Some(r) => {
                let l = &r.load;
                txt(o, l.mode.as_str());
                num(o, Some(l.connections as f64), &l.connections.to_string());
                num(o, Some(l.threads as f64), &l.threads.to_string());
                let rate_text = match l.rate_rps {
                    Some(v) => format!(
                        "{} req/s{}{}",
                        rate(v),
                        l.arrivals
                            .as_ref()
                            .map(|a| format!(", {a}"))
                            .unwrap_or_default(),
                        l.seed.map(|s| format!(", seed {s}")).unwrap_or_default()
                    ),
                    None => "closed loop".into(),
                };
                num(o, l.rate_rps, &esc(&rate_text));
                let dur = match (l.duration_s, l.requests) {
                    (Some(d), _) => seconds(d),
                    (None, Some(n)) => format!("{} requests", thousands(n)),
                    _ => "–".into(),
                };
                num(o, l.duration_s, &esc(&dur));
                num(o, Some(l.warmup_s), &esc(&seconds(l.warmup_s)));
                txt(o, if l.keepalive { "yes" } else { "no" });
                txt(o, &r.target.method);
                txt(o, &url_path(&r.target.url));
                num(
                    o,
                    Some(r.target.body_bytes as f64),
                    &esc(&bytes(r.target.body_bytes)),
                );
                num(o, Some(l.pipeline as f64), &l.pipeline.to_string());
                num(o, Some(l.timeout_s), &esc(&seconds(l.timeout_s)));
                let mut ramp = Vec::new();
                if let Some(u) = l.users {
                    ramp.push(format!("{u} users"));
                }
                if let Some(s) = l.spawn_rate {
                    ramp.push(format!("{s}/s"));
                }
                if let Some(st) = &l.stages {
                    ramp.push(
                        st.iter()
                            .map(|s| format!("{}:{}", seconds(s.duration_s), s.users))
                            .collect::<Vec<_>>()
                            .join(", "),
                    );
                }
                if l.think_time_s > 0.0 {
                    ramp.push(format!("think {}", seconds(l.think_time_s)));
                }
                txt(o, &ramp.join(" · "));
            }
            None => {
                o.push_str("<td colspan=\"13\" class=\"muted\">no finished run</td>");
            }
        }
        o.push_str("</tr>\n");
    }
    tend(o);
    if !commands.is_empty() {
        o.push_str("<dl class=\"flags\">");
        for (i, what, flags) in commands {
            let _ = write!(
                o,
                "<dt>{} — {}</dt><dd>",
                esc(&page.groups[i].label),
                esc(&what)
            );
            for f in &flags {
                let _ = write!(o, "<code>{}</code> ", esc(f));
            }
            o.push_str("</dd>");
        }
        o.push_str("</dl>\n");
    }
    o.push_str("</section>\n");
}

fn url_path(url: &str) -> String {
    url.splitn(4, '/')
        .nth(3)
        .map(|p| format!("/{p}"))
        .unwrap_or_else(|| "/".into())
}

/// Rows that compete: not controls, with finished repetitions.
fn contenders<'g, 'a>(g: &'g Group<'a>) -> Vec<&'g Row<'a>> {
    g.rows
        .iter()
        .filter(|r| !r.series.control() && r.rps.is_some())
        .collect()
}

fn best_by<'g, 'a>(
    rows: &[&'g Row<'a>],
    f: impl Fn(&Row) -> Option<f64>,
) -> Option<(&'g Row<'a>, f64)> {
    rows.iter()
        .filter_map(|r| f(r).map(|v| (*r, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

fn p99(r: &Row) -> Option<f64> {
    med(&r.results(), |x| x.latency_us.p99.map(|v| v as f64))
}

fn cpu_per_req(r: &Row) -> Option<f64> {
    med(&r.results(), |x| x.server.as_ref()?.per_request.cpu_us)
}

fn peak_rss(r: &Row) -> Option<f64> {
    r.results()
        .iter()
        .filter_map(|x| x.server.as_ref().map(|s| s.rss_max_bytes as f64))
        .reduce(f64::max)
}

/// Rows by median throughput, fastest first.
fn by_speed<'g, 'a>(g: &'g Group<'a>) -> Vec<(&'g Row<'a>, Spread)> {
    let mut v: Vec<(&Row, Spread)> = contenders(g)
        .into_iter()
        .filter_map(|r| r.rps.map(|s| (r, s)))
        .collect();
    v.sort_by(|a, b| b.1.median.total_cmp(&a.1.median));
    v
}

/// One line per scenario group: who is fastest, by how much, and who is cheapest.
fn summary(o: &mut String, page: &Page) {
    if page.groups.is_empty() {
        o.push_str("<p class=\"muted\">No cells yet.</p>\n");
        return;
    }
    if page.groups.len() == 1 && page.groups[0].rows.len() == 1 {
        return; // one run: nothing to compare
    }
    o.push_str("<section id=\"summary\"><h2>At a glance</h2>");
    thead(
        o,
        &[
            "scenario",
            "fastest",
            "req/s",
            "runner-up",
            "req/s",
            "lead",
            "lowest p99",
            "lowest CPU/req",
            "lowest peak RSS",
            "cells finished",
        ],
    );
    for (i, g) in page.groups.iter().enumerate() {
        let speed = by_speed(g);
        let rows = contenders(g);
        let _ = write!(o, "<tr><td><a href=\"#g{i}\">{}</a></td>", esc(&g.label));
        match speed.first() {
            Some((r, s)) => {
                txt(o, &r.series.server);
                num(o, Some(s.median), &rate(s.median));
            }
            None => o.push_str("<td>–</td><td class=\"n\" data-v=\"\">–</td>"),
        }
        match speed.get(1) {
            Some((r, s)) => {
                txt(o, &r.series.server);
                num(o, Some(s.median), &rate(s.median));
                let lead = speed[0].1.median / s.median;
                num(o, lead.is_finite().then_some(lead), &format!("{lead:.2}×"));
            }
            None => o.push_str(
                "<td>–</td><td class=\"n\" data-v=\"\">–</td><td class=\"n\" data-v=\"\">–</td>",
            ),
        }
        for (f, fmt) in [
            (
                p99 as fn(&Row) -> Option<f64>,
                (|v| micros(v.round() as u64)) as fn(f64) -> String,
            ),
            (cpu_per_req, |v| format!("{v:.1} µs")),
            (peak_rss, |v| bytes(v as u64)),
        ] {
            match best_by(&rows, f) {
                Some((r, v)) => {
                    let _ = write!(
                        o,
                        "<td data-v=\"{v}\">{} ({})</td>",
                        esc(&r.series.server),
                        esc(&fmt(v))
                    );
                }
                None => o.push_str("<td data-v=\"\">–</td>"),
            }
        }
        let (ok, all) = g.rows.iter().fold((0, 0), |(a, b), r| {
            (a + r.ok.len(), b + r.series.cells.len())
        });
        num(o, Some(ok as f64), &format!("{ok} of {all}"));
        o.push_str("</tr>\n");
    }
    tend(o);
    o.push_str("</section>\n");
}

/// The verdict sentences of a group.
fn verdict(g: &Group) -> Vec<String> {
    let speed = by_speed(g);
    let mut out = Vec::new();
    match speed.as_slice() {
        [] => {}
        [(r, s)] => out.push(format!(
            "{}: {} req/s (median of {}).",
            r.series.server,
            rate(s.median),
            r.ok.len()
        )),
        [(a, sa), (b, sb), ..] => {
            let lead = sa.median / sb.median;
            let mut line = format!(
                "{} is fastest at {} req/s, {:.2}× {} ({} req/s).",
                a.series.server,
                rate(sa.median),
                lead,
                b.series.server,
                rate(sb.median)
            );
            if a.ok.len() > 1 || b.ok.len() > 1 {
                if sa.overlaps(sb) {
                    line.push_str(
                        " Their req/s ranges over the repetitions overlap: no clear difference.",
                    );
                } else {
                    line.push_str(" Their req/s ranges over the repetitions do not overlap.");
                }
            } else {
                line.push_str(" One repetition each: run more to tell noise from difference.");
            }
            out.push(line);
        }
    }
    let saturated: Vec<&str> = g
        .rows
        .iter()
        .filter(|r| r.results().iter().any(|x| x.client.saturated))
        .map(|r| r.series.server.as_str())
        .collect();
    if !saturated.is_empty() {
        out.push(format!(
            "The client was saturated against {}: those numbers may describe volley rather than the server.",
            saturated.join(", ")
        ));
    }
    let rows = contenders(g);
    if rows.len() > 1 {
        if let Some((r, v)) = best_by(&rows, p99) {
            out.push(format!(
                "Lowest p99 latency: {} ({}).",
                r.series.server,
                micros(v.round() as u64)
            ));
        }
        if let Some((r, v)) = best_by(&rows, cpu_per_req) {
            out.push(format!(
                "Least server CPU per request: {} ({v:.1} µs).",
                r.series.server
            ));
        }
        if let Some((r, v)) = best_by(&rows, peak_rss) {
            out.push(format!(
                "Smallest peak memory: {} ({}).",
                r.series.server,
                bytes(v as u64)
            ));
        }
    }
    out
}

fn group(
    o: &mut String,
    report: &Report,
    i: usize,
    g: &Group,
    data: &GroupData,
    servers: &[String],
) {
    let _ = write!(
        o,
        "<section class=\"group\" id=\"g{i}\"><h2>{}</h2>",
        esc(&g.label)
    );
    if let Some(r) = g.rows.iter().find_map(|r| r.ok.first().map(|(_, r)| *r)) {
        let _ = write!(o, "<p class=\"load\">{}</p>", esc(&describe_load(r)));
    }
    let v = verdict(g);
    if !v.is_empty() {
        o.push_str("<p class=\"verdict\">");
        for line in v {
            let _ = write!(o, "{} ", esc(&line));
        }
        o.push_str("</p>\n");
    }
    main_table(o, g);
    charts(o, i, data, servers);
    efficiency(o, g);
    all_percentiles(o, g);
    every_run(o, g);
    warnings(o, g);
    thresholds(o, g);
    let fails: Vec<&Cell> = g.rows.iter().flat_map(|r| r.failures()).collect();
    if !fails.is_empty() {
        o.push_str("<h3>Cells that did not finish</h3>");
        cell_table(o, report, &fails);
    }
    o.push_str("</section>\n");
}

/// Columns of a group's main table.
const MAIN_COLUMNS: [&str; 17] = [
    "server",
    "req/s",
    "min",
    "max",
    "vs fastest",
    "p50",
    "p90",
    "p99",
    "p99.9",
    "p99.99",
    "max latency",
    "errors",
    "status codes",
    "CPU/req",
    "peak RSS",
    "runs",
    "notes",
];

fn main_table(o: &mut String, g: &Group) {
    let fastest = by_speed(g).first().map(|(_, s)| s.median);
    thead(o, &MAIN_COLUMNS);
    for row in &g.rows {
        let rs = row.results();
        let mut name = esc(&row.series.server);
        let mut notes: Vec<String> = Vec::new();
        if row.series.control() {
            name.push_str(" <span class=\"badge control\">control</span>");
        }
        if rs.iter().any(|r| r.client.saturated) {
            name.push_str(" <span class=\"badge warn\">client saturated</span>");
            notes.push(
                "the client was saturated: these numbers may describe volley, not the server"
                    .into(),
            );
        }
        if rs.iter().any(|r| r.interrupted) {
            notes.push("interrupted".into());
        }
        // Each distinct status and reason once, with the repetitions it happened in.
        let mut fail_reasons: Vec<(String, Vec<u32>)> = Vec::new();
        for c in row.failures() {
            let why = format!(
                "{}: {}",
                c.status,
                c.reason.as_deref().unwrap_or(match c.status.as_str() {
                    // `volley bench` rewrites the report after every cell.
                    "pending" => "not run yet",
                    _ => "no reason given",
                })
            );
            match fail_reasons.iter_mut().find(|(w, _)| *w == why) {
                Some((_, reps)) => reps.push(c.rep),
                None => fail_reasons.push((why, vec![c.rep])),
            }
        }
        let fail_reasons: Vec<String> = fail_reasons
            .into_iter()
            .map(|(why, reps)| {
                let reps: Vec<String> = reps.iter().map(u32::to_string).collect();
                format!(
                    "{why} (rep{} {})",
                    if reps.len() > 1 { "s" } else { "" },
                    reps.join(", ")
                )
            })
            .collect();
        let broken = rs
            .iter()
            .flat_map(|r| r.thresholds.iter())
            .filter(|t| !t.pass)
            .count();
        let total_t: usize = rs.iter().map(|r| r.thresholds.len()).sum();
        if total_t > 0 {
            notes.push(format!("thresholds: {broken} of {total_t} broken"));
        }
        let _ = write!(
            o,
            "<tr{}><td class=\"server\" data-v=\"{}\"><span class=\"swatch s{}\"></span>{name}</td>",
            if rs.is_empty() { " class=\"failed\"" } else { "" },
            esc(&row.series.server),
            row.server % 10
        );
        if rs.is_empty() {
            // Nothing to measure: one wide cell with the reasons (the sorter keeps such rows
            // at the bottom).
            let _ = write!(
                o,
                "<td colspan=\"{}\" class=\"bad\">0 of {} runs finished",
                MAIN_COLUMNS.len() - 1,
                row.series.cells.len()
            );
            for f in &fail_reasons {
                let _ = write!(o, "<div>{}</div>", esc(f));
            }
            o.push_str("</td></tr>\n");
            continue;
        }
        let s = row.rps;
        num(o, s.map(|s| s.median), &opt_f(s.map(|s| s.median), rate));
        num(o, s.map(|s| s.min), &opt_f(s.map(|s| s.min), rate));
        num(o, s.map(|s| s.max), &opt_f(s.map(|s| s.max), rate));
        let rel = match (s, fastest) {
            (Some(s), Some(f)) if f > 0.0 && !row.series.control() => Some(s.median / f * 100.0),
            _ => None,
        };
        num(o, rel, &opt_f(rel, |v| format!("{v:.0}%")));
        for f in [
            (|r: &RunResult| r.latency_us.p50) as fn(&RunResult) -> Option<u64>,
            |r| r.latency_us.p90,
            |r| r.latency_us.p99,
            |r| r.latency_us.p99_9,
            |r| r.latency_us.p99_99,
            |r| r.latency_us.max,
        ] {
            let v = med(&rs, |r| f(r).map(|v| v as f64));
            num(o, v, &opt_f(v, |v| micros(v.round() as u64)));
        }
        // Errors by kind, summed over the repetitions.
        let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &rs {
            for (k, n) in [
                ("connect", r.errors.connect),
                ("timeout", r.errors.timeout),
                ("reset", r.errors.reset),
                ("protocol", r.errors.protocol),
                ("closed", r.errors.closed),
            ] {
                *kinds.entry(k).or_default() += n;
            }
        }
        let errors: u64 = kinds.values().sum();
        let detail = kinds
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k} {}", thousands(*n)))
            .collect::<Vec<_>>()
            .join(", ");
        let _ = write!(
            o,
            "<td class=\"n{}\" data-v=\"{errors}\">{}{}</td>",
            if errors > 0 { " bad" } else { "" },
            thousands(errors),
            if detail.is_empty() {
                String::new()
            } else {
                format!(" <small>({})</small>", esc(&detail))
            }
        );
        let mut codes: BTreeMap<&str, u64> = BTreeMap::new();
        for r in &rs {
            for (k, n) in &r.status_codes {
                *codes.entry(k.as_str()).or_default() += n;
            }
        }
        let codes_text = codes
            .iter()
            .map(|(k, n)| format!("{k}: {}", thousands(*n)))
            .collect::<Vec<_>>()
            .join(", ");
        let non_2xx = codes.iter().any(|(k, _)| !k.starts_with('2'));
        let _ = write!(
            o,
            "<td{}>{}</td>",
            if non_2xx { " class=\"bad\"" } else { "" },
            esc(&codes_text)
        );
        let cpu = cpu_per_req(row);
        num(o, cpu, &opt_f(cpu, |v| format!("{v:.1} µs")));
        let rss = peak_rss(row);
        num(o, rss, &opt_f(rss, |v| bytes(v as u64)));
        let ok = rs.len();
        let all = row.series.cells.len();
        let _ = write!(
            o,
            "<td class=\"n{}\" data-v=\"{ok}\">{ok}/{all}</td>",
            if ok < all { " bad" } else { "" }
        );
        o.push_str("<td class=\"notes\">");
        for f in &fail_reasons {
            let _ = write!(o, "<div class=\"bad\">{}</div>", esc(f));
        }
        for n in &notes {
            let _ = write!(o, "<div>{}</div>", esc(n));
        }
        o.push_str("</td></tr>\n");
    }
    tend(o);
}

/// Chart slots; the page's script fills each from `PageData` by group and index.
fn charts(o: &mut String, i: usize, d: &GroupData, servers: &[String]) {
    // A chart needs a line, and a line two points: a single value is in the tables already.
    let line = |v: &[Option<u64>]| v.iter().filter(|x| x.is_some()).count() >= 2;
    let mut slots: Vec<(String, &str)> = Vec::new();
    if d.hdr.iter().any(|l| l.x.len() >= 2) {
        let dashed = if d.hdr.iter().any(|l| l.service) {
            "; solid: corrected latency (from the due time), dashed: service time (from the write)"
        } else {
            ""
        };
        slots.push((
            format!("Latency by percentile, repetitions merged{dashed}"),
            "hdr",
        ));
    }
    // One bar of one run says nothing the table does not.
    if d.throughput.len() > 1 || d.throughput.iter().any(|b| b.runs > 1) {
        slots.push((
            "Throughput, req/s: median (bar) and min–max over the repetitions (whisker)".into(),
            "throughput",
        ));
    }
    if d.over_time
        .iter()
        .any(|s| s.rps.iter().filter(|x| x.is_some()).count() >= 2)
    {
        slots.push((
            "Throughput over time, req/s (the median-throughput repetition)".into(),
            "rps-time",
        ));
    }
    if d.over_time.iter().any(|s| line(&s.p50_us)) {
        slots.push((
            "Latency over time: p50 (solid) and p99 (dashed) per second".into(),
            "latency-time",
        ));
    }
    if !d.resources.is_empty() {
        slots.push((
            "Server memory over time: resident set size (Σ over the process tree)".into(),
            "rss-time",
        ));
    }
    if slots.is_empty() {
        return;
    }
    o.push_str("<div class=\"charts\">");
    for (title, kind) in &slots {
        let _ = write!(
            o,
            "<figure><figcaption>{}</figcaption><div class=\"chart\" data-chart=\"{kind}\" data-group=\"{i}\"></div></figure>",
            esc(title)
        );
    }
    o.push_str("</div>\n");
    if !d.resources.is_empty() {
        o.push_str("<h3>Server CPU over time: user and system, stacked (% of one core)</h3><div class=\"charts small\">");
        for (k, r) in d.resources.iter().enumerate() {
            let _ = write!(
                o,
                "<figure><figcaption><span class=\"swatch s{}\"></span>{} <small>(rep {})</small></figcaption><div class=\"chart\" data-chart=\"cpu\" data-group=\"{i}\" data-index=\"{k}\"></div></figure>",
                r.server % 10,
                esc(&servers[r.server]),
                r.rep
            );
        }
        o.push_str("</div>\n");
    }
}

/// What a request costs the server.
fn efficiency(o: &mut String, g: &Group) {
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
        let rs = row.results();
        let _ = write!(
            o,
            "<tr><td class=\"server\" data-v=\"{0}\"><span class=\"swatch s{1}\"></span>{0}</td>",
            esc(&row.series.server),
            row.server % 10
        );
        for f in [
            (|r: &RunResult| r.server.as_ref()?.per_request.cpu_us)
                as fn(&RunResult) -> Option<f64>,
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
        let top = row
            .representative()
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
            .unwrap_or_default();
        txt(o, &top);
        o.push_str("</tr>\n");
    }
    tend(o);
}

/// Every percentile of every latency kind, medians over the repetitions.
fn all_percentiles(o: &mut String, g: &Group) {
    type Pick = fn(&RunResult) -> Option<&Percentiles>;
    let kinds: [(&str, Pick); 3] = [
        ("corrected", |r| Some(&r.latency_us)),
        ("service time", |r| Some(&r.service_time_us)),
        ("send lag", |r| r.schedule_lag_us.as_ref()),
    ];
    let mut lines: Vec<(&Row, &str, Vec<&Percentiles>)> = Vec::new();
    for row in &g.rows {
        let rs = row.results();
        for (i, (kind, pick)) in kinds.iter().enumerate() {
            let ps: Vec<&Percentiles> = rs.iter().filter_map(|r| pick(r)).collect();
            // Service time is shown when it differs from the corrected latency (open loop,
            // or connect time without keep-alive).
            let differs = i != 1 || rs.iter().any(|r| r.service_time_us != r.latency_us);
            if !ps.is_empty() && differs {
                lines.push((row, kind, ps));
            }
        }
    }
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
        let _ = write!(
            o,
            "<tr><td class=\"server\" data-v=\"{0}\"><span class=\"swatch s{1}\"></span>{0}</td>",
            esc(&row.series.server),
            row.server % 10
        );
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
        for i in 0..8 {
            let v = m(&|p| p.quantile_values()[i].map(|v| v as f64));
            num(o, v, &opt_f(v, us));
        }
        let v = m(&|p| p.max.map(|v| v as f64));
        num(o, v, &opt_f(v, us));
        o.push_str("</tr>\n");
    }
    tend(o);
    o.push_str("</details>\n");
}

/// One row per repetition with its counters: what the medians above are made of.
fn every_run(o: &mut String, g: &Group) {
    o.push_str("<details><summary>Every run</summary>");
    thead(
        o,
        &[
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
            "client CPU",
            "client peak CPU",
            "client RSS",
            "client saturated",
            "started",
        ],
    );
    for row in &g.rows {
        for c in &row.series.cells {
            let _ = write!(
                o,
                "<tr><td class=\"server\" data-v=\"{0}\"><span class=\"swatch s{1}\"></span>{0}</td>",
                esc(&row.series.server),
                row.server % 10
            );
            num(o, Some(f64::from(c.rep)), &c.rep.to_string());
            let _ = write!(
                o,
                "<td class=\"{}\">{}</td>",
                if c.status == CellStatus::Ok {
                    "good"
                } else {
                    "bad"
                },
                c.status
            );
            let Some(r) = &c.result else {
                o.push_str("</tr>\n");
                continue;
            };
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
            txt(o, &r.started_at);
            o.push_str("</tr>\n");
        }
    }
    tend(o);
    o.push_str("</details>\n");
}

/// Each distinct warning once, with the servers it came from.
fn warnings(o: &mut String, g: &Group) {
    let mut list: Vec<(String, Vec<String>)> = Vec::new();
    for row in &g.rows {
        for r in row.results() {
            for w in &r.warnings {
                match list.iter_mut().find(|(t, _)| t == w.text()) {
                    Some((_, who)) => {
                        if !who.contains(&row.series.server) {
                            who.push(row.series.server.clone());
                        }
                    }
                    None => list.push((w.text().to_string(), vec![row.series.server.clone()])),
                }
            }
        }
    }
    if list.is_empty() {
        return;
    }
    o.push_str("<h3>Warnings</h3><ul class=\"warnings\">");
    for (w, who) in list {
        let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(&who.join(", ")), esc(&w));
    }
    o.push_str("</ul>\n");
}

fn thresholds(o: &mut String, g: &Group) {
    let any = g
        .rows
        .iter()
        .any(|r| r.ok.iter().any(|(_, x)| !x.thresholds.is_empty()));
    if !any {
        return;
    }
    o.push_str("<h3>Thresholds</h3>");
    thead(o, &["server", "rep", "threshold", "measured", "result"]);
    for row in &g.rows {
        for (rep, r) in &row.ok {
            for t in &r.thresholds {
                o.push_str("<tr>");
                txt(o, &row.series.server);
                num(o, Some(f64::from(*rep)), &rep.to_string());
                txt(o, &t.threshold);
                num(o, t.actual, &opt_f(t.actual, |v| format!("{v}")));
                let _ = writeln!(
                    o,
                    "<td class=\"{}\">{}</td></tr>",
                    if t.pass { "good" } else { "bad" },
                    if t.pass { "pass" } else { "FAIL" }
                );
            }
        }
    }
    tend(o);
}

/// Cells with their status, reason, the server's last stderr lines and the harness's notes.
fn cell_table(o: &mut String, report: &Report, cells: &[&Cell]) {
    thead(
        o,
        &[
            "server",
            "scenario",
            "rep",
            "status",
            "reason",
            "stderr (last lines) and notes",
        ],
    );
    for c in cells {
        let row = row_of(report, c);
        o.push_str("<tr>");
        txt(o, &c.server);
        txt(o, &c.label());
        num(o, Some(f64::from(c.rep)), &c.rep.to_string());
        let _ = write!(
            o,
            "<td class=\"{}\">{}</td>",
            if c.status == CellStatus::Ok {
                "good"
            } else {
                "bad"
            },
            c.status
        );
        txt(o, c.reason.as_deref().unwrap_or(""));
        o.push_str("<td>");
        if let Some(r) = row {
            if !r.stderr_tail.is_empty() {
                let _ = write!(o, "<pre>{}</pre>", esc(&r.stderr_tail.join("\n")));
            }
            for n in &r.notes {
                let _ = write!(o, "<div>{}</div>", esc(n));
            }
        }
        o.push_str("</td></tr>\n");
    }
    tend(o);
}

/// The harness's notes on cells that finished (a control's refused connections, a server that
/// needed SIGKILL): cells that did not finish are listed under their scenario already.
fn noted(o: &mut String, report: &Report) {
    let noted: Vec<&Cell> = report
        .cells
        .iter()
        .filter(|c| {
            c.status == CellStatus::Ok
                && row_of(report, c)
                    .is_some_and(|r| !r.notes.is_empty() || !r.stderr_tail.is_empty())
        })
        .collect();
    if noted.is_empty() {
        return;
    }
    o.push_str("<section id=\"notes\"><h2>Notes on finished cells</h2>");
    cell_table(o, report, &noted);
    o.push_str("</section>\n");
}

/// The suite files as run: `[suite]`, servers, scenarios, builds.
fn suite_files(o: &mut String, report: &Report) {
    for s in &report.suites {
        let _ = write!(
            o,
            "<section class=\"suite\"><details><summary>Suite file {} as run</summary>",
            esc(&s.suite_file)
        );
        if !s.only.is_empty() {
            let _ = write!(o, "<p>--only {}</p>", esc(&s.only.join(" ")));
        }
        if let Some(Value::Object(m)) = s.suite.get("suite") {
            o.push_str("<h3>[suite]</h3>");
            thead(o, &["key", "value"]);
            for (k, v) in m {
                o.push_str("<tr>");
                txt(o, k);
                txt(o, &value_text(v));
                o.push_str("</tr>\n");
            }
            tend(o);
        }
        for (key, title) in [("server", "[[server]]"), ("scenario", "[[scenario]]")] {
            if let Some(Value::Array(items)) = s.suite.get(key) {
                let mut cols: Vec<&String> = Vec::new();
                for it in items {
                    if let Value::Object(m) = it {
                        for k in m.keys() {
                            if !cols.contains(&k) {
                                cols.push(k);
                            }
                        }
                    }
                }
                // `name` first: it is what the rest of the page calls it.
                cols.sort_by_key(|k| *k != "name");
                let _ = write!(o, "<h3>{}</h3>", esc(title));
                thead(o, &cols.iter().map(|c| c.as_str()).collect::<Vec<_>>());
                for it in items {
                    o.push_str("<tr>");
                    for c in &cols {
                        txt(o, &it.get(c.as_str()).map(value_text).unwrap_or_default());
                    }
                    o.push_str("</tr>\n");
                }
                tend(o);
            }
        }
        if !s.builds.is_empty() {
            o.push_str("<h3>Builds</h3>");
            thead(o, &["server", "status", "reason", "wall time"]);
            for b in &s.builds {
                o.push_str("<tr>");
                txt(o, &b.server);
                let _ = write!(
                    o,
                    "<td class=\"{}\">{}</td>",
                    if b.status == BuildStatus::Ok {
                        "good"
                    } else {
                        "bad"
                    },
                    b.status
                );
                txt(o, b.reason.as_deref().unwrap_or(""));
                num(o, b.wall_s, &opt_f(b.wall_s, seconds));
                o.push_str("</tr>\n");
            }
            tend(o);
        }
        o.push_str("</details></section>\n");
    }
}

/// A TOML value as written: strings bare, everything else as JSON.
fn value_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

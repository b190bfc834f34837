//! Where and how it was measured: the environment of every suite and run, the versions of the
//! servers, and the load settings of every scenario group with the flags that produced them.

use std::fmt::Write;

use serde_json::Value;

use super::{num, row_of, tend, thead, txt};
use crate::html::{escape_html as esc, Group, Page};
use crate::model::Report;
use volley_model::result::{LoadInfo, RunResult, SuiteIndex};
use volley_model::units::{bytes, rate, seconds, thousands};

/// Where it ran: one line per suite, then the distinct environments of the runs themselves
/// (a single run, or runs whose environment differs from their suite's).
pub(super) fn environment(o: &mut String, report: &Report) {
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
        suite_row(o, s);
    }
    for (_, n, rest) in &run_environments(report) {
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
    versions(o, report);
    protocols(o, report);
    o.push_str("</section>\n");
}

/// How the runs spoke to their servers (the protocol, and TLS's version, cipher and ALPN),
/// when any did not use plain HTTP/1.1 over TCP.
fn protocols(o: &mut String, report: &Report) {
    let p = report.protocols();
    if p.iter().all(|d| d == "http/1.1") {
        return;
    }
    o.push_str("<h3>Protocols</h3>");
    thead(o, &["protocol"]);
    for d in &p {
        o.push_str("<tr>");
        txt(o, d);
        o.push_str("</tr>\n");
    }
    tend(o);
}

/// A suite's environment, as its index recorded it.
fn suite_row(o: &mut String, s: &SuiteIndex) {
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

/// Distinct run environments that no suite already shows: (key, how many runs, the row's
/// cells after the first). The first cell, how many runs, is only known at the end.
fn run_environments(report: &Report) -> Vec<(String, usize, String)> {
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
        seen.push((key, 1, run_environment_cells(r)));
    }
    seen
}

/// A run's environment cells, from CPU to start time.
fn run_environment_cells(r: &RunResult) -> String {
    let e = &r.env;
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
    rest
}

/// Versions of every server, from the suites' `version` commands, each once.
fn versions(o: &mut String, report: &Report) {
    let tools: Vec<(&String, &String)> = report
        .suites
        .iter()
        .flat_map(|s| s.env.tools.iter())
        .collect();
    if tools.is_empty() {
        return;
    }
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

/// Columns of the settings table.
const SETTINGS_COLUMNS: [&str; 14] = [
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
];

/// The load block of every scenario group, one row each, with the suite's flags.
pub(super) fn settings(o: &mut String, report: &Report, page: &Page) {
    o.push_str("<section id=\"settings\"><h2>Settings</h2>");
    thead(o, &SETTINGS_COLUMNS);
    let mut commands: Vec<(usize, String, Vec<String>)> = Vec::new();
    for (i, g) in page.groups.iter().enumerate() {
        let first = g.rows.iter().find_map(|r| r.ok.first().map(|(_, r)| *r));
        if let Some((what, f)) = command(report, g, first) {
            commands.push((i, what.to_string(), f));
        }
        let _ = write!(o, "<tr><td><a href=\"#g{i}\">{}</a></td>", esc(&g.label));
        match first {
            Some(r) => load_cells(o, r),
            None => {
                o.push_str("<td colspan=\"13\" class=\"muted\">no finished run</td>");
            }
        }
        o.push_str("</tr>\n");
    }
    tend(o);
    commands_list(o, page, &commands);
    o.push_str("</section>\n");
}

/// A suite cell's `volley run` flags, or a plain run's whole command line; None when empty.
fn command(
    report: &Report,
    g: &Group,
    first: Option<&RunResult>,
) -> Option<(&'static str, Vec<String>)> {
    let flags = g
        .rows
        .iter()
        .flat_map(|r| r.series.cells.iter())
        .find_map(|c| row_of(report, c))
        .map(|r| ("volley run flags", r.flags.clone()))
        .or_else(|| first.map(|r| ("command", r.argv.clone())));
    flags.filter(|f| !f.1.is_empty())
}

/// The settings row of one run, from mode to users.
fn load_cells(o: &mut String, r: &RunResult) {
    let l = &r.load;
    txt(o, l.mode.as_str());
    num(o, Some(l.connections as f64), &l.connections.to_string());
    num(o, Some(l.threads as f64), &l.threads.to_string());
    num(o, l.rate_rps, &esc(&rate_text(l)));
    let dur = match (l.duration_s, l.requests) {
        (Some(d), _) => seconds(d),
        (None, Some(n)) => format!("{} requests", thousands(n)),
        _ => "–".into(),
    };
    num(o, l.duration_s, &esc(&dur));
    num(o, Some(l.warmup_s), &esc(&seconds(l.warmup_s)));
    txt(o, if l.keepalive { "yes" } else { "no" });
    match &r.target.requests_file {
        // Each request of the file has its own method, path and body.
        Some(f) => {
            txt(o, "–");
            txt(
                o,
                &format!(
                    "requests file {} ({} request{}, {})",
                    f.path,
                    f.requests,
                    if f.requests == 1 { "" } else { "s" },
                    f.order
                ),
            );
            num(o, None, "");
        }
        None => {
            txt(o, &r.target.method);
            txt(o, &url_path(&r.target.url));
            num(
                o,
                Some(r.target.body_bytes as f64),
                &esc(&bytes(r.target.body_bytes)),
            );
        }
    }
    num(o, Some(l.pipeline as f64), &l.pipeline.to_string());
    num(o, Some(l.timeout_s), &esc(&seconds(l.timeout_s)));
    txt(o, &ramp_text(l));
}

/// `2,000 req/s, poisson, seed 7`, or `closed loop`.
fn rate_text(l: &LoadInfo) -> String {
    // A staged rate is its stages, with their mean.
    let (before, after) = match l.stages_text() {
        Some(s) => (format!("rate stages {s} (mean "), ")"),
        None => (String::new(), ""),
    };
    match l.rate_rps {
        Some(v) => format!(
            "{before}{} req/s{after}{}{}",
            rate(v),
            l.arrivals
                .as_ref()
                .map(|a| format!(", {a}"))
                .unwrap_or_default(),
            l.seed.map(|s| format!(", seed {s}")).unwrap_or_default()
        ),
        None => "closed loop".into(),
    }
}

/// Users, spawn rate, stages and think time, those that were set.
fn ramp_text(l: &LoadInfo) -> String {
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
    ramp.join(" · ")
}

/// The flags or command line of each group, under the table.
fn commands_list(o: &mut String, page: &Page, commands: &[(usize, String, Vec<String>)]) {
    if commands.is_empty() {
        return;
    }
    o.push_str("<dl class=\"flags\">");
    for (i, what, flags) in commands {
        let _ = write!(
            o,
            "<dt>{} — {}</dt><dd>",
            esc(&page.groups[*i].label),
            esc(what)
        );
        for f in flags {
            let _ = write!(o, "<code>{}</code> ", esc(f));
        }
        o.push_str("</dd>");
    }
    o.push_str("</dl>\n");
}

/// The path and query of a URL, `/` when it has none.
fn url_path(url: &str) -> String {
    url.splitn(4, '/')
        .nth(3)
        .map(|p| format!("/{p}"))
        .unwrap_or_else(|| "/".into())
}

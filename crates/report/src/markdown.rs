//! Markdown: the tables a person pastes into a README or a blog post — throughput, latency
//! percentiles and server cost per scenario, medians over the repetitions, with the
//! environment and the settings underneath.

use std::fmt::Write;
use volley_model::metric::Stat;

use super::endpoints::{self, EndpointFigures};
use super::model::{median, pause_ms, GcFigures, Report, Series};
use super::Reporter;
use volley_model::result::RunResult;
use volley_model::units::{bytes, micros, rate, thousands};

/// Markdown reporter.
pub(crate) struct MarkdownReporter;

impl Reporter for MarkdownReporter {
    fn render(&self, report: &Report) -> String {
        let mut o = String::new();
        let _ = writeln!(o, "## {}\n", esc(&report.title));
        let series = report.series();
        let mut labels: Vec<&str> = Vec::new();
        for s in &series {
            if !labels.contains(&s.label.as_str()) {
                labels.push(&s.label);
            }
        }
        for label in labels {
            let group: Vec<&Series> = series.iter().filter(|s| s.label == label).collect();
            scenario(&mut o, report, label, &group);
        }
        super::capacity::markdown::render(
            &mut o,
            &report.capacity,
            !report.cells.is_empty() || !report.suites.is_empty(),
        );
        versus(&mut o, report);
        let _ = writeln!(o, "{}", esc(&environment(report)));
        let _ = writeln!(
            o,
            "\nreq/s, percentiles and server figures are medians over the repetitions that finished (min–max: the range of req/s); latency runs from each request's due time in open loop (corrected for coordinated omission) and from its send in closed loop."
        );
        o
    }
}

/// With `[suite] baseline`: every other server against it, a row per server and cell.
fn versus(o: &mut String, report: &Report) {
    let lines = super::versus::lines(report);
    let Some(first) = lines.first() else {
        return;
    };
    let _ = writeln!(o, "### vs {} (baseline)\n", esc(&first.baseline));
    let _ = writeln!(
        o,
        "| scenario | server | metric | ratio | shift (95% CI) | verdict |"
    );
    let _ = writeln!(o, "|---|---|---|--:|--:|---|");
    for l in &lines {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} |",
            esc(&l.label),
            esc(&l.server),
            l.metric.label(),
            l.ratio_text(),
            esc(&l.shift_text()),
            esc(&l.verdict())
        );
    }
    let _ = writeln!(
        o,
        "\nratio: median of the server ÷ median of {}; the shift is the Hodges-Lehmann estimate (median of every difference) in % of the baseline's median with its 95% confidence interval; a call needs 5+ repetitions a side and p < 0.05 (two-sided Mann-Whitney U test).\n",
        esc(&first.baseline)
    );
}

/// One scenario cell: its heading (in a suite), the load, the servers' table and, where a
/// monitor ran, their cost.
fn scenario(o: &mut String, report: &Report, label: &str, group: &[&Series]) {
    if report.single_run().is_none() {
        let _ = writeln!(o, "### {}\n", esc(label));
    }
    if let Some(r) = group.iter().find_map(|s| s.ok().first().copied()) {
        let _ = writeln!(o, "{}\n", esc(&describe_load(r)));
    }
    let _ = writeln!(
        o,
        "| server | req/s | min–max | p50 | p90 | p95 | p99 | p99.9 | p99.99 | max | errors | runs |"
    );
    let _ = writeln!(o, "|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|");
    for s in group {
        server_row(o, s);
    }
    o.push('\n');
    endpoints_table(o, group);
    journey_lines(o, group);
    cost_table(o, group);
    gc_table(o, group);
    profile_tables(o, group);
}

/// `--profile`: per server, its first profiled run's functions with the most self CPU per
/// request (`server.profile.top`).
fn profile_tables(o: &mut String, group: &[&Series]) {
    for s in group {
        let Some(p) = s
            .ok()
            .into_iter()
            .find_map(|r| r.server.as_ref()?.profile.as_ref())
        else {
            continue;
        };
        let _ = writeln!(
            o,
            "Where {}'s CPU went ({} samples of {} at {} Hz{}):\n",
            esc(&s.server),
            thousands(p.samples),
            esc(&p.event),
            p.frequency_hz,
            p.cpu_us_per_request
                .map_or(String::new(), |v| format!(", {v:.1} µs of CPU a request"))
        );
        o.push_str(&crate::flame::top_markdown(&p.top));
        o.push('\n');
        if let Some(off) = &p.off_cpu {
            off_cpu_table(o, &s.server, off);
        }
    }
}

/// `--profile-off-cpu`: the functions the server's threads blocked in most, in µs of waiting
/// per request (`server.profile.off_cpu.top`).
fn off_cpu_table(o: &mut String, server: &str, off: &volley_model::result::profile::OffCpuInfo) {
    let _ = writeln!(
        o,
        "Where {}'s threads waited (off-CPU: {} waits, blocked {:.1} ms{}, preempted {:.1} ms; µs of waiting, kernel frames left out):\n",
        esc(server),
        thousands(off.switches),
        off.blocked_ms,
        off.blocked_us_per_request
            .map_or(String::new(), |v| format!(" = {v:.1} µs a request")),
        off.preempted_ms,
    );
    o.push_str(&crate::flame::top_markdown(&off.top));
    o.push('\n');
}

/// The server runtime's collections, where `server.gc` was read: nothing otherwise.
fn gc_table(o: &mut String, group: &[&Series]) {
    let rows: Vec<(&str, GcFigures)> = group
        .iter()
        .filter_map(|s| Some((s.server.as_str(), GcFigures::of(&s.ok())?)))
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "| server | GC source | collections | pause p50 (ms) | pause p99 (ms) | pause max (ms) | allocated (GB) | alloc rate (MB/s) | requests ≥ p99.9 overlapping a pause |"
    );
    let _ = writeln!(o, "|---|---|--:|--:|--:|--:|--:|--:|--:|");
    for (server, g) in &rows {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            esc(server),
            esc(&g.source),
            g.collections.round(),
            pause_ms(g.p50_ms),
            pause_ms(g.p99_ms),
            pause_ms(g.max_ms),
            g.alloc_gb.map_or("-".into(), |v| format!("{v:.2}")),
            g.alloc_mb_s.map_or("-".into(), |v| format!("{v:.0}")),
            esc(&g.overlap_text()),
        );
    }
    o.push('\n');
    for (server, g) in &rows {
        if let Some(n) = &g.note {
            let _ = writeln!(o, "GC note, {}: {}\n", esc(server), esc(n));
        }
    }
}

/// A server's row: medians over the repetitions that finished, or why none did.
fn server_row(o: &mut String, s: &Series) {
    let ok = s.ok();
    let runs = format!("{}/{}", ok.len(), s.cells.len());
    let name = if s.control() {
        format!("{} (control)", s.server)
    } else {
        s.server.clone()
    };
    if ok.is_empty() {
        let why = s.reason().unwrap_or_else(|| "no result".into());
        let _ = writeln!(
            o,
            "| {} | {} | | | | | | | | | | {runs} |",
            esc(&name),
            esc(&format!("failed: {why}"))
        );
        return;
    }
    let tput: Vec<f64> = ok.iter().map(|r| r.throughput_rps).collect();
    let range = if ok.len() > 1 {
        format!(
            "{}–{}",
            rate(tput.iter().cloned().fold(f64::INFINITY, f64::min)),
            rate(tput.iter().cloned().fold(0.0, f64::max))
        )
    } else {
        String::new()
    };
    // Unsent requests made some repetition's percentiles lower bounds: so is their median.
    let at_least = if ok.iter().any(|r| r.latency_lower_bound) {
        "≥ "
    } else {
        ""
    };
    let pct = |s: Stat| {
        median(
            &ok.iter()
                .filter_map(|r| s.of(&r.latency_us))
                .collect::<Vec<_>>(),
        )
        .map_or("-".into(), |v| {
            format!("{at_least}{}", micros(v.round() as u64))
        })
    };
    let _ = writeln!(
        o,
        "| {} | {} | {range} | {} | {} | {} | {} | {} | {} | {} | {} | {runs} |",
        esc(&name),
        median(&tput).map_or("-".into(), rate),
        pct(Stat::P50),
        pct(Stat::P90),
        pct(Stat::P95),
        pct(Stat::P99),
        pct(Stat::P99_9),
        pct(Stat::P99_99),
        pct(Stat::Max),
        ok.iter().map(|r| r.requests.errors).sum::<u64>(),
    );
}

/// The named requests of a requests file, one row per server and name: nothing for a
/// scenario without them. A journey's runs add the checks that failed and the steps skipped.
fn endpoints_table(o: &mut String, group: &[&Series]) {
    let rows: Vec<(&str, Vec<EndpointFigures>)> = group
        .iter()
        .map(|s| (s.server.as_str(), endpoints::figures(&s.ok())))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    if rows.is_empty() {
        return;
    }
    let journey = rows
        .iter()
        .any(|(_, f)| f.iter().any(|e| e.skipped.is_some()));
    let (head, align) = match journey {
        true => (" checks failed | skipped |", "---|--:|"),
        false => ("", ""),
    };
    let _ = writeln!(
        o,
        "| server | name | request | share of sent | req/s | p50 | p99 | p99.9 | failed | errors |{head}"
    );
    let _ = writeln!(o, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|{align}");
    for (server, figures) in &rows {
        for e in figures {
            endpoint_row(o, server, e, journey);
        }
    }
    let _ = writeln!(
        o,
        "\nBy request: the named requests of the requests file (the table above is the whole mix); share of the requests sent, medians like the rest, failed (status ≥ 400 or a failed check) and errors summed over the repetitions.{}\n",
        if journey {
            " Checks failed: the responses that failed each check (capture: a value to capture was not found), summed; skipped: the steps not sent because a value they need was not captured, summed."
        } else {
            ""
        }
    );
}

/// A named request's row; with `journey`, its checks that failed and steps skipped too.
fn endpoint_row(o: &mut String, server: &str, e: &EndpointFigures, journey: bool) {
    let at_least = if e.lower_bound { "≥ " } else { "" };
    let pct = |v: Option<f64>| {
        v.map_or("-".into(), |v| {
            format!("{at_least}{}", micros(v.round() as u64))
        })
    };
    let _ = write!(
        o,
        "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
        esc(server),
        esc(&e.name),
        esc(&e.request()),
        e.share.map_or("-".into(), |v| format!("{:.1}%", v * 100.0)),
        e.rps.map_or("-".into(), rate),
        pct(e.latency[0]),
        pct(e.latency[1]),
        pct(e.latency[2]),
        thousands(e.failed),
        thousands(e.errors),
    );
    if journey {
        let checks = e.checks_text();
        let _ = write!(
            o,
            " {} | {} |",
            if checks.is_empty() {
                "0".into()
            } else {
                esc(&checks)
            },
            e.skipped.map_or("-".into(), thousands)
        );
    }
    o.push('\n');
}

/// A line per server whose runs had a journey: what its users met (the terminal's words).
fn journey_lines(o: &mut String, group: &[&Series]) {
    let lines = crate::journey::lines(group.iter().map(|s| (s.server.as_str(), s.ok())));
    for l in &lines {
        let _ = writeln!(
            o,
            "{}\n",
            esc(&format!(
                "Journey{}: {}",
                l.label(group.len() > 1),
                l.text()
            ))
        );
    }
}

/// Server cost, where a monitor ran: nothing for a scenario without one.
fn cost_table(o: &mut String, group: &[&Series]) {
    let costly: Vec<&&Series> = group
        .iter()
        .filter(|s| s.ok().iter().any(|r| r.server.is_some()))
        .collect();
    if costly.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "| server | CPU µs/req | user µs/req | sys µs/req | syscalls/req | ctx switches/req | peak RSS | threads |"
    );
    let _ = writeln!(o, "|---|--:|--:|--:|--:|--:|--:|--:|");
    for s in costly {
        cost_row(o, s);
    }
    o.push('\n');
}

/// A server's cost per request (medians) and its peaks.
fn cost_row(o: &mut String, s: &Series) {
    let ok = s.ok();
    // µs with one decimal, counts per request with two (0.04 context switches).
    let per = |f: fn(&RunResult) -> Option<f64>, digits: usize| {
        median(&ok.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
            .map_or("-".into(), |v| format!("{v:.digits$}"))
    };
    let rss = ok
        .iter()
        .filter_map(|r| r.server.as_ref().map(|s| s.rss_max_bytes))
        .max();
    let threads = ok
        .iter()
        .filter_map(|r| r.server.as_ref().map(|s| s.threads_max))
        .max();
    let _ = writeln!(
        o,
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        esc(&s.server),
        per(|r| r.server.as_ref()?.per_request.cpu_us, 1),
        per(|r| r.server.as_ref()?.per_request.user_us, 1),
        per(|r| r.server.as_ref()?.per_request.sys_us, 1),
        per(|r| r.server.as_ref()?.per_request.syscalls, 2),
        per(|r| r.server.as_ref()?.per_request.ctx_switches, 2),
        rss.map_or("-".into(), bytes),
        threads.map_or("-".into(), |t| t.to_string()),
    );
}

/// `closed loop, 50 connections, 4 s, keep-alive, GET /` and the like; a run of a requests file
/// ends with the file instead of one request (`3 requests of mix.toml (weighted, 3 named)`).
pub(crate) fn describe_load(r: &RunResult) -> String {
    let l = &r.load;
    let mut parts = Vec::new();
    parts.push(match l.mode.as_str() {
        "open" => match l.stages_text() {
            Some(stages) => format!(
                "open loop in rate stages {stages} (mean {} req/s) over {} connections",
                rate(l.rate_rps.unwrap_or(0.0)),
                l.connections
            ),
            None => format!(
                "open loop at {} req/s over {} connections",
                rate(l.rate_rps.unwrap_or(0.0)),
                l.connections
            ),
        },
        "ramp" => format!(
            "{} users{}",
            l.users.unwrap_or(l.connections),
            l.spawn_rate
                .map(|s| format!(" ramping at {s}/s"))
                .unwrap_or_default()
        ),
        _ => format!("closed loop, {} connections", l.connections),
    });
    if let Some(d) = l.duration_s {
        parts.push(format!("{d} s"));
    }
    if l.warmup_s > 0.0 {
        parts.push(format!("{} s warm-up", l.warmup_s));
    }
    parts.push(
        if l.keepalive {
            "keep-alive"
        } else {
            "new connection per request"
        }
        .into(),
    );
    if l.think_time_s > 0.0 {
        parts.push(format!("{} s think time", l.think_time_s));
    }
    if let Some(f) = &r.target.requests_file {
        parts.push(format!(
            "{} request{} of {} ({}, {} named)",
            f.requests,
            if f.requests == 1 { "" } else { "s" },
            f.path,
            f.order,
            f.names
        ));
        return parts.join(", ");
    }
    let path = r
        .target
        .url
        .splitn(4, '/')
        .nth(3)
        .map(|p| format!("/{p}"))
        .unwrap_or_else(|| "/".into());
    let body = if r.target.body_bytes > 0 {
        format!(" with a {} body", bytes(r.target.body_bytes))
    } else {
        String::new()
    };
    parts.push(format!("{} {path}{body}", r.target.method));
    parts.join(", ")
}

/// One line on where it ran.
pub(crate) fn environment(report: &Report) -> String {
    let first = report.cells.iter().find_map(|c| c.result.as_ref());
    // A capacity search alone: the environment of its first measurement.
    let searched = report.capacity.iter().find_map(|e| {
        e.result
            .as_ref()
            .and_then(|r| Some((r.env.as_ref()?, &r.volley_version)))
    });
    let run_env = first.map(|r| (&r.env, &r.volley_version)).or(searched);
    let (cpu, cores, kernel) = match (report.suites.first(), run_env) {
        (Some(s), _) => (s.env.cpu_model.clone(), s.env.cores, s.env.kernel.clone()),
        (None, Some((e, _))) => (e.cpu_model.clone(), e.cores, e.kernel.clone()),
        (None, None) => (None, 0, None),
    };
    let pin = match (report.suites.first(), run_env) {
        (Some(s), _) => (
            s.env.pinning.server_cpus.clone(),
            s.env.pinning.client_cpus.clone(),
        ),
        (None, Some((e, _))) => (
            e.pinning.server_cpus.clone(),
            Some(e.pinning.client_cpus.clone()),
        ),
        _ => (None, None),
    };
    let version = run_env.map_or(env!("CARGO_PKG_VERSION").to_string(), |(_, v)| v.clone());
    format!(
        "Environment: {}, {cores} CPUs, Linux {}; server {}, volley {}; volley {version}{}.",
        cpu.as_deref().unwrap_or("unknown CPU"),
        kernel.as_deref().unwrap_or("?"),
        pin.0.map_or("not pinned".into(), |c| format!("on CPU {c}")),
        pin.1.map_or("not pinned".into(), |c| format!("on CPU {c}")),
        protocols_clause(report),
    )
}

/// `; protocols: http/1.1, https: TLSv1.3 …` when any run was not plain HTTP/1.1 over TCP.
pub(crate) fn protocols_clause(report: &Report) -> String {
    let p = report.protocols();
    if p.iter().all(|d| d == "http/1.1") {
        String::new()
    } else {
        format!("; protocols: {}", p.join("; "))
    }
}

/// Escapes what Markdown (and HTML inside it) would interpret in a table cell.
pub(crate) fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '|' => o.push_str("\\|"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '&' => o.push_str("&amp;"),
            '`' | '*' | '_' | '[' | ']' | '\\' => {
                o.push('\\');
                o.push(ch);
            }
            '\n' | '\r' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

pub(crate) use crate::escape::code_span as code;

#[cfg(test)]
mod tests {
    use super::code;

    #[test]
    fn a_code_span_keeps_its_text_and_cannot_be_closed_early() {
        assert_eq!(code("p99<10ms"), "`p99<10ms`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`x"), "`` `x ``");
        assert_eq!(code("a\nb"), "`a b`");
    }
}

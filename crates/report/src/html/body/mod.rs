//! The page's HTML: header (the verdict: thresholds and headline warnings; a summary,
//! environment and settings), one section per scenario group (verdict, main table, chart
//! slots, the named requests of a requests file, efficiency table, other warnings,
//! thresholds), the cells that did not finish, and the suite files. Every string that came
//! from a config, a server or a response goes through `escape_html`; numbers sort by a
//! `data-v` attribute holding the raw value, so the display can be rounded and carry units.
//!
//! This file assembles the page and holds the table-cell helpers every section uses; each
//! section is a file of its own.

mod charts;
mod efficiency;
mod endpoints;
mod gc;
mod glance;
mod main_table;
mod notes;
mod runs;
mod setup;
mod suite;
mod verdict;
mod versus;

use std::fmt::Write;

use super::{escape_html as esc, Group, GroupData, Page, Row};
use crate::markdown::describe_load;
use crate::model::{median, Cell, Report};
use volley_model::result::{CellStatus, RunResult, SuiteRow};

use charts::charts;
use efficiency::efficiency;
use endpoints::{endpoints, journey};
use gc::gc_table;
use glance::{summary, verdict};
use main_table::main_table;
use notes::{cell_table, noted, thresholds, warnings};
use runs::{all_percentiles, every_run};
use setup::{environment, settings};
use suite::suite_files;
use verdict::verdict as page_verdict;
use versus::versus;

/// The page body (everything inside `<body>` but the scripts); `capacity` is the capacity
/// searches' sections (`report::capacity::html`) and the profiles' flame graphs
/// (`report::flame`), after the scenario groups.
pub fn render(report: &Report, page: &Page, capacity: &str) -> String {
    let mut o = String::new();
    if report.cells.is_empty() && !report.capacity.is_empty() {
        capacity_header(&mut o, report);
    } else {
        header(&mut o, report, page);
    }
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
    o.push_str(capacity);
    noted(&mut o, report);
    suite_files(&mut o, report);
    o.push_str(
        "<footer><p>req/s, latency percentiles and per-request costs are medians over the \
         repetitions that finished (min and max: the range of req/s); RSS and threads are peaks. \
         Latency runs from each request's due time in open loop (corrected for coordinated \
         omission) and from its send in closed loop. The percentile plot adds up the repetitions' \
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

/// Opens a row with the server's cell: its colour swatch and name, sorting by the name.
fn server_cell(o: &mut String, row: &Row) {
    let _ = write!(
        o,
        "<tr><td class=\"server\" data-v=\"{0}\"><span class=\"swatch s{1}\"></span>{0}</td>",
        esc(&row.series.server),
        row.server % 10
    );
}

/// A status cell, green when `good`, red otherwise.
fn status_cell(o: &mut String, good: bool, status: impl std::fmt::Display) {
    let _ = write!(
        o,
        "<td class=\"{}\">{}</td>",
        if good { "good" } else { "bad" },
        status
    );
}

/// Closes a table opened by `thead`.
fn tend(o: &mut String) {
    o.push_str("</tbody></table></div>\n");
}

/// The text of a value that may be missing: a dash without one.
fn opt_f(v: Option<f64>, f: impl Fn(f64) -> String) -> String {
    v.map_or_else(|| "–".into(), f)
}

/// The median of a figure over the repetitions that have it.
fn med(rs: &[&RunResult], f: impl Fn(&RunResult) -> Option<f64>) -> Option<f64> {
    median(&rs.iter().filter_map(|r| f(r)).collect::<Vec<_>>())
}

/// The volley version the report is from: its first suite's, its first run's, or this one's.
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

/// The title, the scenario index, the answer (at a glance), and where and how it ran.
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
    // The answer first — what broke and what cannot be trusted, then who is fastest — then
    // where and how it was measured.
    page_verdict(o, page);
    summary(o, page);
    versus(o, report);
    environment(o, report);
    settings(o, report, page);
    o.push_str("</header>\n");
}

/// The header of a page of capacity searches alone (`volley capacity`, `volley report` of its
/// folder): the title, what was searched and where.
fn capacity_header(o: &mut String, report: &Report) {
    let first = report.capacity.iter().find_map(|e| e.result.as_ref());
    let _ = writeln!(
        o,
        "<header><h1>{}</h1><p class=\"sub\">volley {} · capacity search{} · {} server{}</p>",
        esc(&report.title),
        esc(&first.map_or_else(
            || env!("CARGO_PKG_VERSION").to_string(),
            |r| r.volley_version.clone()
        )),
        if report.capacity.len() == 1 { "" } else { "es" },
        {
            let mut s: Vec<&str> = report.capacity.iter().map(|e| e.server.as_str()).collect();
            s.dedup();
            s.len()
        },
        if report.capacity.len() == 1 { "" } else { "s" },
    );
    if let Some(r) = first {
        let how = match &r.sweep {
            None => format!(
                "Open-loop steps (latency corrected for coordinated omission) of {} s after a warm-up, over {} connection{}; a geometric ramp, then bisection until the bracket is within {} % of its low end; {}",
                r.step_duration_s,
                r.connections,
                if r.connections == 1 { "" } else { "s" },
                r.precision_pct,
                r.repeat_rule
            ),
            Some(sw) => format!(
                "One open-loop run (latency corrected for coordinated omission) over {} connection{} whose rate rose linearly from {} to {} req/s over {} s after a warm-up, judged window by window ({} s each, as steps are judged)",
                r.connections,
                if r.connections == 1 { "" } else { "s" },
                sw.from_rps,
                sw.to_rps,
                sw.duration_s,
                sw.window_s
            ),
        };
        let _ = write!(
            o,
            "<p class=\"load\">{}. Started {}{}.</p>",
            esc(&how),
            esc(&r.started_at),
            r.env.as_ref().map_or(String::new(), |e| esc(&format!(
                " on {} ({} CPU{}, volley on CPUs {}), Linux {}",
                e.cpu_model.as_deref().unwrap_or("an unknown CPU"),
                e.cores,
                if e.cores == 1 { "" } else { "s" },
                e.pinning.client_cpus,
                e.kernel.as_deref().unwrap_or("?")
            )))
        );
        // One search's command line; a suite's cells each have their own (in their files).
        if report.capacity.len() == 1 {
            let _ = write!(
                o,
                "<p class=\"load\"><code>{}</code></p>",
                esc(&r.argv.join(" "))
            );
        }
    }
    o.push_str("</header>\n");
}

/// A scenario group's section: load, verdict, tables, charts, warnings, thresholds and the
/// cells that did not finish.
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
    endpoints(o, i, g, data);
    journey(o, g);
    efficiency(o, g);
    gc_table(o, g);
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

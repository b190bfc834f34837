//! The named requests of a requests file (`endpoints[]`): a percentile plot with one line per
//! server and request, their repetitions' histograms merged, and a sortable table of each
//! request's share, throughput, latency, failures and checks, medians over the repetitions
//! (with a journey, its steps skipped too), and a line per server on what a journey's users
//! met.

use std::fmt::Write;

use super::{num, opt_f, server_cell, tend, thead, txt};
use crate::endpoints::{figures, EndpointFigures};
use crate::html::{escape_html as esc, Group, GroupData};
use volley_model::units::{micros, rate, thousands};

/// The table's columns; a journey's runs add `skipped`.
const COLUMNS: [&str; 13] = [
    "server",
    "name",
    "request",
    "share",
    "req/s",
    "p50",
    "p99",
    "p99.9",
    "p99.99",
    "max",
    "failed",
    "errors",
    "checks failed",
];

/// The group's "By request" part; nothing when no run of it has named requests.
pub(super) fn endpoints(o: &mut String, i: usize, g: &Group, d: &GroupData) {
    let rows: Vec<_> = g
        .rows
        .iter()
        .map(|row| (row, figures(&row.results())))
        .filter(|(_, f)| !f.is_empty())
        .collect();
    if rows.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<h3 id=\"g{i}-requests\">By request</h3><p class=\"muted\">The named requests of the \
         requests file; the tables above are the whole mix.</p>"
    );
    if d.endpoints.iter().any(|l| l.x.len() >= 2) {
        let servers = {
            let mut s: Vec<usize> = d.endpoints.iter().map(|l| l.server).collect();
            s.dedup();
            s.len()
        };
        let how = if servers > 1 {
            "a colour per server, a dash per request"
        } else {
            "a colour per request"
        };
        let _ = writeln!(
            o,
            "<div class=\"charts\"><figure><figcaption>Latency by percentile per request, \
             repetitions merged ({how})</figcaption><div class=\"chart\" \
             data-chart=\"endpoints\" data-group=\"{i}\"></div></figure></div>"
        );
    }
    let journey = rows
        .iter()
        .any(|(_, f)| f.iter().any(|e| e.skipped.is_some()));
    let mut cols = COLUMNS.to_vec();
    if journey {
        cols.push("skipped");
    }
    thead(o, &cols);
    for (row, fs) in &rows {
        for e in fs {
            server_cell(o, row);
            request_cells(o, e, journey);
        }
    }
    tend(o);
    note(o, journey);
}

/// What the table's numbers are; with `journey`, its capture check and steps skipped too.
fn note(o: &mut String, journey: bool) {
    let _ = writeln!(
        o,
        "<p class=\"muted\">share: of the requests sent; req/s: completed responses over the \
         run's time; latency from the send (corrected in open loop); medians over the \
         repetitions that have the request, failed (status ≥ 400 or a failed check), errors and \
         checks summed.{}</p>",
        if journey {
            " A capture check fails when a value to capture is not found; skipped: the steps \
             not sent because a value they need was not captured, summed."
        } else {
            ""
        }
    );
}

/// A paragraph per server whose runs had a journey: what its users met (the terminal's
/// words); nothing without one.
pub(super) fn journey(o: &mut String, g: &Group) {
    let lines = crate::journey::lines(
        g.rows
            .iter()
            .map(|row| (row.series.server.as_str(), row.results())),
    );
    for l in &lines {
        let _ = writeln!(
            o,
            "<p class=\"journey\"><b>Journey</b>{}: {}</p>",
            esc(&l.label(g.rows.len() > 1)),
            esc(&l.text())
        );
    }
}

/// A request's cells after its server's, closing the row; with `journey`, its steps skipped.
fn request_cells(o: &mut String, e: &EndpointFigures, journey: bool) {
    txt(o, &e.name);
    txt(o, &e.request());
    num(
        o,
        e.share.map(|v| v * 100.0),
        &opt_f(e.share, |v| format!("{:.1}%", v * 100.0)),
    );
    num(o, e.rps, &opt_f(e.rps, rate));
    let at_least = if e.lower_bound { "≥ " } else { "" };
    for v in e.latency {
        num(
            o,
            v,
            &opt_f(v, |v| format!("{at_least}{}", micros(v.round() as u64))),
        );
    }
    count_cell(o, e.failed);
    count_cell(o, e.errors);
    let checks = e.checks_failed();
    let text = e.checks_text();
    let _ = write!(
        o,
        "<td class=\"{}\" data-v=\"{checks}\">{}</td>",
        if checks > 0 { "bad" } else { "" },
        if text.is_empty() {
            "0".to_string()
        } else {
            esc(&text)
        }
    );
    if journey {
        match e.skipped {
            Some(n) => count_cell(o, n),
            None => num(o, None, ""),
        }
    }
    o.push_str("</tr>\n");
}

/// A count's cell, red when not 0.
fn count_cell(o: &mut String, n: u64) {
    let _ = write!(
        o,
        "<td class=\"n{}\" data-v=\"{n}\">{}</td>",
        if n > 0 { " bad" } else { "" },
        thousands(n)
    );
}

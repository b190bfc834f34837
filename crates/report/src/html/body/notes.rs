//! What went wrong or needs a second look: warnings, thresholds, cells that did not finish and
//! the harness's notes on cells that did.

use std::fmt::Write;

use super::{num, opt_f, row_of, status_cell, tend, thead, txt};
use crate::html::{escape_html as esc, Group};
use crate::model::{Cell, Report};
use volley_model::result::{CellStatus, WarningKind};

/// Each distinct warning once, with the servers it came from; the headline ones are in the
/// page's verdict at the top, and the closed-loop one is left out, as the footer says what
/// closed-loop latency measures.
pub(super) fn warnings(o: &mut String, g: &Group) {
    let mut list: Vec<(String, Vec<String>)> = Vec::new();
    for row in &g.rows {
        for r in row.results() {
            for w in r
                .warnings
                .iter()
                .filter(|w| !w.kind().is_headline() && w.kind() != WarningKind::ClosedLoop)
            {
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

/// Every threshold of every finished repetition, with what was measured.
pub(super) fn thresholds(o: &mut String, g: &Group) {
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
                let shown = volley_model::metric::threshold::parse(&t.threshold)
                    .map(|th| th.show(t.actual))
                    .unwrap_or_else(|_| opt_f(t.actual, |v| format!("{v}")));
                num(o, t.actual, &esc(&shown));
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
pub(super) fn cell_table(o: &mut String, report: &Report, cells: &[&Cell]) {
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
        status_cell(o, c.status == CellStatus::Ok, c.status);
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
pub(super) fn noted(o: &mut String, report: &Report) {
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

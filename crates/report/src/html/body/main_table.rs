//! A group's main table: one row per server with throughput, latency percentiles, errors,
//! status codes, server cost, runs and notes — the columns that say something for this group
//! only (a single run has no range, no "vs fastest" and no runs column).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::glance::{by_speed, cpu_per_req, peak_rss};
use super::{med, num, opt_f, tend, thead};
use crate::html::{escape_html as esc, Group, Row};
use volley_model::metric::Stat;
use volley_model::result::RunResult;
use volley_model::units::{bytes, micros, rate, thousands};

/// Which of the optional columns a group's main table has: each only when it can say
/// something (one run has no range, one server no "vs fastest").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Shown {
    /// `min` and `max` req/s: some server has several finished repetitions.
    range: bool,
    /// `vs fastest`: at least two servers compete.
    vs_fastest: bool,
    /// `runs`: some server has several repetitions or one that did not finish.
    runs: bool,
    /// `notes`: some server has a note or a failure.
    notes: bool,
}

impl Shown {
    fn of(g: &Group) -> Shown {
        Shown {
            range: g.rows.iter().any(|r| r.ok.len() > 1),
            vs_fastest: by_speed(g).len() > 1,
            runs: g
                .rows
                .iter()
                .any(|r| r.series.cells.len() != 1 || r.ok.len() != 1),
            notes: g
                .rows
                .iter()
                .any(|r| !name_and_notes(r, &r.results()).1.is_empty() || !r.failures().is_empty()),
        }
    }

    /// The header of the table.
    fn columns(self) -> Vec<&'static str> {
        let mut c = vec!["server", "req/s"];
        if self.range {
            c.extend(["min", "max"]);
        }
        if self.vs_fastest {
            c.push("vs fastest");
        }
        c.extend([
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
        ]);
        if self.runs {
            c.push("runs");
        }
        if self.notes {
            c.push("notes");
        }
        c
    }
}

/// A group's main table, one row per server; "vs fastest" is relative to the fastest
/// contender.
pub(super) fn main_table(o: &mut String, g: &Group) {
    let fastest = by_speed(g).first().map(|(_, s)| s.median);
    let shown = Shown::of(g);
    thead(o, &shown.columns());
    for row in &g.rows {
        server_row(o, row, fastest, shown);
    }
    tend(o);
}

/// One server's row: its name and badges, then either the measurements or, when no
/// repetition finished, one wide cell with the reasons.
fn server_row(o: &mut String, row: &Row, fastest: Option<f64>, shown: Shown) {
    let rs = row.results();
    let (name, notes) = name_and_notes(row, &rs);
    let fail_reasons = fail_reasons(row);
    let failed = if rs.is_empty() {
        " class=\"failed\""
    } else {
        ""
    };
    let _ = write!(
        o,
        "<tr{failed}><td class=\"server\" data-v=\"{}\"><span class=\"swatch s{}\"></span>{name}</td>",
        esc(&row.series.server),
        row.server % 10
    );
    if rs.is_empty() {
        nothing_finished(o, row, &fail_reasons, shown.columns().len() - 1);
        return;
    }
    throughput_cells(o, row, fastest, shown);
    latency_cells(o, &rs);
    errors_cell(o, &rs);
    status_cell(o, &rs);
    let cpu = cpu_per_req(row);
    num(o, cpu, &opt_f(cpu, |v| format!("{v:.1} µs")));
    let rss = peak_rss(row);
    num(o, rss, &opt_f(rss, |v| bytes(v as u64)));
    if shown.runs {
        let ok = rs.len();
        let all = row.series.cells.len();
        let _ = write!(
            o,
            "<td class=\"n{}\" data-v=\"{ok}\">{ok}/{all}</td>",
            if ok < all { " bad" } else { "" }
        );
    }
    if shown.notes {
        o.push_str("<td class=\"notes\">");
        for f in &fail_reasons {
            let _ = write!(o, "<div class=\"bad\">{}</div>", esc(f));
        }
        for n in &notes {
            let _ = write!(o, "<div>{}</div>", esc(n));
        }
        o.push_str("</td>");
    }
    o.push_str("</tr>\n");
}

/// The server's name (escaped) with its badges, and the notes the badges stand for.
fn name_and_notes(row: &Row, rs: &[&RunResult]) -> (String, Vec<String>) {
    let mut name = esc(&row.series.server);
    let mut notes: Vec<String> = Vec::new();
    if row.series.control() {
        name.push_str(" <span class=\"badge control\">control</span>");
    }
    if rs.iter().any(|r| r.client.saturated) {
        name.push_str(" <span class=\"badge warn\">client saturated</span>");
        notes.push(
            "the client was saturated: these numbers may describe volley, not the server".into(),
        );
    }
    if rs.iter().any(|r| r.interrupted) {
        notes.push("interrupted".into());
    }
    let broken = rs
        .iter()
        .flat_map(|r| r.thresholds.iter())
        .filter(|t| !t.pass)
        .count();
    let total_t: usize = rs.iter().map(|r| r.thresholds.len()).sum();
    if total_t > 0 {
        notes.push(format!("thresholds: {broken} of {total_t} broken"));
    }
    (name, notes)
}

/// Each distinct status and reason once, with the repetitions it happened in.
fn fail_reasons(row: &Row) -> Vec<String> {
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
    fail_reasons
        .into_iter()
        .map(|(why, reps)| {
            let reps: Vec<String> = reps.iter().map(u32::to_string).collect();
            format!(
                "{why} (rep{} {})",
                if reps.len() > 1 { "s" } else { "" },
                reps.join(", ")
            )
        })
        .collect()
}

/// Nothing to measure: one wide cell with the reasons (the sorter keeps such rows at the
/// bottom).
fn nothing_finished(o: &mut String, row: &Row, fail_reasons: &[String], span: usize) {
    let _ = write!(
        o,
        "<td colspan=\"{span}\" class=\"bad\">0 of {} runs finished",
        row.series.cells.len()
    );
    for f in fail_reasons {
        let _ = write!(o, "<div>{}</div>", esc(f));
    }
    o.push_str("</td></tr>\n");
}

/// Median req/s, min and max when shown, and the median as a share of the fastest when shown
/// (none for a control).
fn throughput_cells(o: &mut String, row: &Row, fastest: Option<f64>, shown: Shown) {
    let s = row.rps;
    num(o, s.map(|s| s.median), &opt_f(s.map(|s| s.median), rate));
    if shown.range {
        num(o, s.map(|s| s.min), &opt_f(s.map(|s| s.min), rate));
        num(o, s.map(|s| s.max), &opt_f(s.map(|s| s.max), rate));
    }
    if !shown.vs_fastest {
        return;
    }
    let rel = match (s, fastest) {
        (Some(s), Some(f)) if f > 0.0 && !row.series.control() => Some(s.median / f * 100.0),
        _ => None,
    };
    num(o, rel, &opt_f(rel, |v| format!("{v:.0}%")));
}

/// The latency percentiles of the table, medians over the repetitions.
fn latency_cells(o: &mut String, rs: &[&RunResult]) {
    for s in [
        Stat::P50,
        Stat::P90,
        Stat::P99,
        Stat::P99_9,
        Stat::P99_99,
        Stat::Max,
    ] {
        let v = med(rs, |r| s.of(&r.latency_us));
        num(o, v, &opt_f(v, |v| micros(v.round() as u64)));
    }
}

/// Errors summed over the repetitions, with the kinds that happened.
fn errors_cell(o: &mut String, rs: &[&RunResult]) {
    let mut kinds: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rs {
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
}

/// Status codes summed over the repetitions; anything but 2xx marks the cell.
fn status_cell(o: &mut String, rs: &[&RunResult]) {
    let mut codes: BTreeMap<&str, u64> = BTreeMap::new();
    for r in rs {
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
}

//! The answer first: the "At a glance" table of every scenario group and the verdict
//! sentences at the top of each group — who is fastest, by how much, and who is cheapest.

use std::fmt::Write;

use super::{med, num, tend, thead, txt};
use crate::html::{escape_html as esc, Group, Page, Row, Spread};
use volley_model::units::{bytes, micros, rate};

/// Rows that compete: not controls, with finished repetitions.
fn contenders<'g, 'a>(g: &'g Group<'a>) -> Vec<&'g Row<'a>> {
    g.rows
        .iter()
        // A row whose responses mostly failed measured error pages: never fastest.
        .filter(|r| !r.series.control() && r.rps.is_some())
        .filter(|r| !r.results().iter().any(|x| x.mostly_failed()))
        .collect()
}

/// The row with the lowest value of `f`, with the value; rows without one are skipped.
fn best_by<'g, 'a>(
    rows: &[&'g Row<'a>],
    f: impl Fn(&Row) -> Option<f64>,
) -> Option<(&'g Row<'a>, f64)> {
    rows.iter()
        .filter_map(|r| f(r).map(|v| (*r, v)))
        .min_by(|a, b| a.1.total_cmp(&b.1))
}

/// Median p99 latency over the repetitions.
fn p99(r: &Row) -> Option<f64> {
    med(&r.results(), |x| x.latency_us.p99.map(|v| v as f64))
}

/// Median server CPU per request over the repetitions.
pub(super) fn cpu_per_req(r: &Row) -> Option<f64> {
    med(&r.results(), |x| x.server.as_ref()?.per_request.cpu_us)
}

/// The largest server RSS of any repetition.
pub(super) fn peak_rss(r: &Row) -> Option<f64> {
    r.results()
        .iter()
        .filter_map(|x| x.server.as_ref().map(|s| s.rss_max_bytes as f64))
        .reduce(f64::max)
}

/// Rows by median throughput, fastest first.
pub(super) fn by_speed<'g, 'a>(g: &'g Group<'a>) -> Vec<(&'g Row<'a>, Spread)> {
    let mut v: Vec<(&Row, Spread)> = contenders(g)
        .into_iter()
        .filter_map(|r| r.rps.map(|s| (r, s)))
        .collect();
    v.sort_by(|a, b| b.1.median.total_cmp(&a.1.median));
    v
}

/// One line per scenario group: who is fastest, by how much, and who is cheapest.
pub(super) fn summary(o: &mut String, page: &Page) {
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
        glance_row(o, i, g);
    }
    tend(o);
    o.push_str("</section>\n");
}

/// A group's line: the fastest two and the lead, who is cheapest by each measure, and how
/// many cells finished.
fn glance_row(o: &mut String, i: usize, g: &Group) {
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
    cheapest_cells(o, &rows);
    let (ok, all) = g.rows.iter().fold((0, 0), |(a, b), r| {
        (a + r.ok.len(), b + r.series.cells.len())
    });
    num(o, Some(ok as f64), &format!("{ok} of {all}"));
    o.push_str("</tr>\n");
}

/// Who has the lowest p99, CPU per request and peak RSS, with the value.
fn cheapest_cells(o: &mut String, rows: &[&Row]) {
    for (f, fmt) in [
        (
            p99 as fn(&Row) -> Option<f64>,
            (|v| micros(v.round() as u64)) as fn(f64) -> String,
        ),
        (cpu_per_req, |v| format!("{v:.1} µs")),
        (peak_rss, |v| bytes(v as u64)),
    ] {
        match best_by(rows, f) {
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
}

/// The verdict sentences of a group.
pub(super) fn verdict(g: &Group) -> Vec<String> {
    let mut out: Vec<String> = speed_sentence(g).into_iter().collect();
    out.extend(saturated_sentence(g));
    out.extend(cheapest_sentences(g));
    out
}

/// Who is fastest and by how much, and whether the repetitions can tell.
fn speed_sentence(g: &Group) -> Option<String> {
    let speed = by_speed(g);
    match speed.as_slice() {
        [] => None,
        [(r, s)] => Some(match r.ok.len() {
            1 => format!("{}: {} req/s.", r.series.server, rate(s.median)),
            n => format!(
                "{}: {} req/s (median of {n}).",
                r.series.server,
                rate(s.median)
            ),
        }),
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
            Some(line)
        }
    }
}

/// The servers against which the client was saturated, whose numbers describe volley.
fn saturated_sentence(g: &Group) -> Option<String> {
    let saturated: Vec<&str> = g
        .rows
        .iter()
        .filter(|r| r.results().iter().any(|x| x.client.saturated))
        .map(|r| r.series.server.as_str())
        .collect();
    if saturated.is_empty() {
        return None;
    }
    Some(format!(
        "The client was saturated against {}: those numbers may describe volley rather than the server.",
        saturated.join(", ")
    ))
}

/// Lowest p99, least CPU per request and smallest peak memory, when there is a choice.
fn cheapest_sentences(g: &Group) -> Vec<String> {
    let mut out = Vec::new();
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

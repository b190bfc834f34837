//! Capacity searches as Markdown: per scenario, the servers ranked by the rate they sustain
//! within the SLO beside their closed-loop maximum; for a single search, its steps too.

use std::fmt::Write;

use super::text::{self, rps};
use super::{rankings, CapacityEntry, Ranking};
use crate::markdown::{code, esc};
use volley_model::units::{micros, rate};

/// The capacity part of a report: a ranking per scenario (`###` headings when `headings`),
/// and the steps of each search when there is only one.
pub fn render(o: &mut String, entries: &[CapacityEntry], headings: bool) {
    for r in rankings(entries) {
        if headings {
            let _ = writeln!(o, "### {} (capacity)\n", esc(&r.label));
        }
        ranking(o, &r);
    }
    if let [e] = entries {
        if let Some(r) = &e.result {
            let _ = writeln!(o, "{}\n", esc(&text::summary(r)));
            if let Some(line) = text::versus_closed_loop(r) {
                let _ = writeln!(o, "{}\n", esc(&line));
            }
            steps(o, e);
        }
    }
}

/// The ranking table of one scenario.
pub(crate) fn ranking(o: &mut String, r: &Ranking) {
    let _ = writeln!(
        o,
        "Highest open-loop rate within the SLO {}, beside the closed-loop maximum over the same connections:\n",
        code(&r.slo.join(", "))
    );
    let _ = writeln!(
        o,
        "| # | server | sustainable req/s | limited by | p99 at it | closed-loop req/s | share | server CPU/req at it |"
    );
    let _ = writeln!(o, "|--:|---|--:|---|--:|--:|--:|--:|");
    for (i, p) in r.places.iter().enumerate() {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            if p.max_rate_rps.is_some() {
                (i + 1).to_string()
            } else {
                "–".into()
            },
            esc(&p.server),
            p.rate_text(),
            p.limit_text(),
            p.p99_at_max_us
                .map_or("–".into(), |v| micros(v.round() as u64)),
            p.closed_loop_text(),
            p.share_text(),
            p.cpu_us_at_max.map_or("–".into(), |v| format!("{v:.1} µs")),
        );
    }
    let _ = writeln!(o);
    for p in r.places.iter().filter(|p| p.max_rate_rps.is_none()) {
        if let Some(why) = p.reason() {
            let _ = writeln!(o, "- {}: {}", esc(&p.server), esc(&why));
        }
    }
    if r.places.iter().any(|p| p.max_rate_rps.is_none()) {
        let _ = writeln!(o);
    }
}

/// Every run of one search.
fn steps(o: &mut String, e: &CapacityEntry) {
    let Some(r) = &e.result else { return };
    let _ = writeln!(
        o,
        "| step | target req/s | achieved req/s | verdict | p50 | p99 | p99.9 | errors | server CPU | reason |"
    );
    let _ = writeln!(o, "|--:|--:|--:|---|--:|--:|--:|--:|--:|---|");
    let lat = |v: Option<u64>| v.map_or("–".into(), micros);
    for (n, s) in r.steps.iter().enumerate() {
        let _ = writeln!(
            o,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            s.window.map_or((n + 1).to_string(), |w| format!(
                "window at {} s",
                w.start_s
            )),
            rps(s.target_rps),
            s.achieved_rps.map_or("–".into(), rate),
            s.verdict.as_str(),
            lat(s.latency_us.p50),
            lat(s.latency_us.p99),
            lat(s.latency_us.p99_9),
            s.errors,
            s.server_cpu_pct.map_or("–".into(), |v| format!("{v:.0}%")),
            esc(&text::reason(s))
        );
    }
    if let Some(line) = text::sweep_line(r) {
        let _ = writeln!(o, "\n{}", esc(&line));
    }
    // A sweep without --confirm ran no step of its own: no rule of steps to state.
    if r.sweep.is_none() || r.steps.iter().any(|s| s.window.is_none()) {
        let _ = writeln!(
            o,
            "\nRepeat rule: {}; steps of {} s, precision {} %.",
            esc(&r.repeat_rule),
            r.step_duration_s,
            r.precision_pct
        );
    }
    o.push('\n');
}

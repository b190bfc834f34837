//! The page's verdict, at the top before any number or chart: which thresholds broke and which
//! held, and the warnings that say a headline number cannot be taken at face value
//! (`WarningKind::is_headline`), each with its sentence and the runs it came from.

use std::fmt::Write;

use crate::html::{escape_html as esc, Page};
use volley_model::metric::threshold;
use volley_model::result::{Checked, RunResult, WarningKind};

/// At most this many runs are named after a threshold or warning; the rest are counted.
const NAMED: usize = 6;

/// A finished run and how to name it (empty for the only run of a page).
struct Run<'a> {
    who: String,
    result: &'a RunResult,
}

/// The finished runs of the page, named by server, scenario and repetition when there are
/// several.
fn runs<'a>(page: &'a Page<'a>) -> Vec<Run<'a>> {
    let all: Vec<(String, u32, &str, &RunResult)> = page
        .groups
        .iter()
        .flat_map(|g| {
            g.rows.iter().flat_map(move |row| {
                row.ok
                    .iter()
                    .map(move |(rep, r)| (g.label.clone(), *rep, row.series.server.as_str(), *r))
            })
        })
        .collect();
    let one = all.len() == 1;
    let several_groups = page.groups.len() > 1;
    all.into_iter()
        .map(|(label, rep, server, result)| Run {
            who: if one {
                String::new()
            } else if several_groups {
                format!("{server} · {label} · rep {rep}")
            } else {
                format!("{server} · rep {rep}")
            },
            result,
        })
        .collect()
}

/// The verdict block: thresholds, then headline warnings; a line saying there are none when
/// there are none.
pub(super) fn verdict(o: &mut String, page: &Page) {
    let runs = runs(page);
    if runs.is_empty() {
        return;
    }
    o.push_str("<section id=\"verdict\" class=\"verdict-top\"><h2>Verdict</h2>");
    let t = thresholds(o, &runs);
    let w = headline_warnings(o, &runs);
    if !t && !w {
        o.push_str(
            "<p class=\"good\">No threshold was set, and no warning says a headline number \
             cannot be taken at face value.</p>",
        );
    } else if !w {
        o.push_str("<p class=\"good\">No warning says a headline number cannot be taken at face value.</p>");
    }
    o.push_str("</section>\n");
}

/// One line per threshold (in order of first appearance): broken or held, in how many runs,
/// what was measured and where. False when no run had a threshold.
fn thresholds(o: &mut String, runs: &[Run]) -> bool {
    let mut by_text: Vec<(&str, Vec<(&Run, &Checked)>)> = Vec::new();
    for run in runs {
        for t in &run.result.thresholds {
            match by_text.iter_mut().find(|(text, _)| *text == t.threshold) {
                Some((_, v)) => v.push((run, t)),
                None => by_text.push((&t.threshold, vec![(run, t)])),
            }
        }
    }
    if by_text.is_empty() {
        return false;
    }
    let checks: usize = by_text.iter().map(|(_, v)| v.len()).sum();
    let broken: usize = by_text
        .iter()
        .map(|(_, v)| v.iter().filter(|(_, t)| !t.pass).count())
        .sum();
    let _ = write!(
        o,
        "<p class=\"{}\"><b>Thresholds: {}</b></p><ul class=\"checks\">",
        if broken > 0 { "bad" } else { "good" },
        if broken > 0 {
            format!("{broken} of {checks} broken")
        } else {
            format!("all {checks} held")
        }
    );
    for (text, v) in &by_text {
        threshold_line(o, text, v);
    }
    o.push_str("</ul>\n");
    true
}

/// A threshold's line: FAIL or pass, and the measured values of the runs that broke it (of
/// every run when it held everywhere).
fn threshold_line(o: &mut String, text: &str, v: &[(&Run, &Checked)]) {
    let parsed = threshold::parse(text).ok();
    let show = |t: &Checked| match &parsed {
        Some(th) => th.show(t.actual),
        None => t.actual.map_or("no data".into(), |a| a.to_string()),
    };
    let bad: Vec<&(&Run, &Checked)> = v.iter().filter(|(_, t)| !t.pass).collect();
    let shown: Vec<&(&Run, &Checked)> = if bad.is_empty() {
        v.iter().collect()
    } else {
        bad.clone()
    };
    let measured: Vec<String> = shown
        .iter()
        .take(NAMED)
        .map(|(run, t)| {
            if run.who.is_empty() {
                format!("measured {}", show(t))
            } else {
                format!("{} {}", run.who, show(t))
            }
        })
        .collect();
    let more = shown.len().saturating_sub(NAMED);
    let _ = write!(
        o,
        "<li><span class=\"{}\">{}</span> <code>{}</code>{}{}: {}{}</li>",
        if bad.is_empty() { "good" } else { "bad" },
        if bad.is_empty() { "held" } else { "broken" },
        esc(text),
        if v.iter().any(|(_, t)| t.implied) {
            " (implied by the checks)"
        } else {
            ""
        },
        if v.len() > 1 {
            format!(
                " ({} in {} of {} runs)",
                if bad.is_empty() { "held" } else { "broken" },
                shown.len(),
                v.len()
            )
        } else {
            String::new()
        },
        esc(&measured.join(", ")),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    );
}

/// The headline warnings, one line per kind: the first run's sentence and the runs that had
/// it. False when there are none.
fn headline_warnings(o: &mut String, runs: &[Run]) -> bool {
    let mut by_kind: Vec<(WarningKind, &str, Vec<&Run>)> = Vec::new();
    for run in runs {
        for w in run
            .result
            .warnings
            .iter()
            .filter(|w| w.kind().is_headline())
        {
            match by_kind.iter_mut().find(|(k, _, _)| *k == w.kind()) {
                Some((_, _, who)) => who.push(run),
                None => by_kind.push((w.kind(), w.text(), vec![run])),
            }
        }
    }
    if by_kind.is_empty() {
        return false;
    }
    let _ = write!(
        o,
        "<p class=\"bad\"><b>{} that {} numbers below cannot be taken at face value:</b></p><ul class=\"headline\">",
        if by_kind.len() == 1 {
            "A warning"
        } else {
            "Warnings"
        },
        if by_kind.len() == 1 { "says the" } else { "say the" },
    );
    for (_, text, who) in &by_kind {
        let _ = write!(o, "<li>{}", esc(text));
        let named: Vec<&str> = who
            .iter()
            .map(|r| r.who.as_str())
            .filter(|w| !w.is_empty())
            .collect();
        if !named.is_empty() {
            let more = named.len().saturating_sub(NAMED);
            let _ = write!(
                o,
                " <small>({} of {} runs{}: {}{})</small>",
                who.len(),
                runs.len(),
                if who.len() > 1 {
                    ", the first one's words"
                } else {
                    ""
                },
                esc(&named[..named.len().min(NAMED)].join(", ")),
                if more > 0 {
                    format!(" and {more} more")
                } else {
                    String::new()
                }
            );
        }
        o.push_str("</li>");
    }
    o.push_str("</ul>\n");
    true
}

#[cfg(test)]
mod tests {
    use super::super::super::tests::fixture;
    use super::*;
    use volley_model::result::Warning;

    fn render(report: &crate::model::Report) -> String {
        let series = report.series();
        let page = Page::of(&series);
        let mut o = String::new();
        verdict(&mut o, &page);
        o
    }

    #[test]
    fn thresholds_and_headline_warnings_of_one_run() {
        let mut report = fixture("open-loop.json");
        let r = report.cells[0].result.as_mut().unwrap();
        r.thresholds = vec![
            Checked {
                threshold: "p99<1ms".into(),
                actual: Some(2500.0),
                pass: false,
                implied: false,
            },
            Checked {
                threshold: "errors<1".into(),
                actual: Some(0.0),
                pass: true,
                implied: false,
            },
        ];
        r.warnings = vec![Warning::from_text(
            "corrected percentiles are lower bounds: they include 12 requests due but never sent, each at its wait until the end of the send window",
        )];
        let html = render(&report);
        assert!(html.contains("Thresholds: 1 of 2 broken"), "{html}");
        assert!(
            html.contains("broken</span> <code>p99&lt;1ms</code>: measured 2.50 ms"),
            "{html}"
        );
        assert!(
            html.contains("held</span> <code>errors&lt;1</code>: measured 0"),
            "{html}"
        );
        assert!(
            html.contains("corrected percentiles are lower bounds"),
            "{html}"
        );
        assert!(!html.contains("rep 1"), "one run is not named: {html}");
    }

    #[test]
    fn a_suite_names_the_runs_and_says_when_nothing_qualifies() {
        let report = fixture("quick");
        let html = render(&report);
        assert!(html.contains("No threshold was set"), "{html}");
        let mut report = fixture("quick");
        for c in &mut report.cells {
            if let Some(r) = &mut c.result {
                r.thresholds = vec![Checked {
                    threshold: "rps>50000".into(),
                    actual: Some(r.throughput_rps),
                    pass: r.throughput_rps > 50000.0,
                    implied: false,
                }];
            }
        }
        let html = render(&report);
        assert!(html.contains("class=\"bad\"><b>Thresholds: "), "{html}");
        assert!(html.contains(" · get · rep 1 "), "runs are named: {html}");
    }
}

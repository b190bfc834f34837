//! The comparison as a table: one line per pair, then the notes, a legend, the unpaired series
//! and the regressions (docs/contract.md, "Comparisons"). By default it fits 100 columns: the
//! headline metric only, each side's range under its median, long names and verdicts wrapped;
//! `--wide` gives one line per pair with every detail.

use super::text::{self, Align};
use super::{
    stats, worse_pct, Comparison, EndpointPair, Endpoints, MetricDiff, Pair, Verdict, ALPHA,
    MIN_REPETITIONS,
};
use volley_model::metric::Metric;

/// The width the default layout fits, table and prose.
pub(crate) const FIT_COLUMNS: usize = 100;

/// How the table is laid out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Layout {
    /// Fits 100 columns: pair, (metric), A, B, B/A, change, verdict.
    #[default]
    Fitted,
    /// `--wide`: one line per pair with the direction, ranges, the test's U and the
    /// secondary metrics (p50, p99, errors, CPU/req) of both sides.
    Wide,
}

/// The columns of `--wide`: header and alignment.
const WIDE_COLUMNS: [(&str, Align); 13] = [
    ("scenario", Align::Left),
    ("server", Align::Left),
    ("metric", Align::Left),
    ("better", Align::Left),
    ("A", Align::Right),
    ("B", Align::Right),
    ("B/A", Align::Right),
    ("change", Align::Right),
    ("verdict", Align::Left),
    ("p50 A → B", Align::Right),
    ("p99 A → B", Align::Right),
    ("errors A → B", Align::Right),
    ("CPU/req A → B", Align::Right),
];

/// The comparison as a table, one line per pair, then the notes, a legend, the unpaired series
/// and, with `--fail-if-slower`, the regressions and the differences that were not called.
pub fn render(c: &Comparison, layout: Layout) -> String {
    let max = match layout {
        Layout::Fitted => Some(FIT_COLUMNS),
        Layout::Wide => None,
    };
    let para = |t: &str, indent: usize| match max {
        Some(w) => text::paragraph(t, w, indent),
        None => format!("{t}\n"),
    };
    let mut notes: Vec<String> = Vec::new();
    let mut out = para(&format!("A: {} ({})", c.a, c.a_title), 3);
    out += &para(&format!("B: {} ({})", c.b, c.b_title), 3);
    out.push('\n');
    let one_metric = single_metric(c).filter(|_| layout == Layout::Fitted);
    if let Some(m) = one_metric {
        out += &para(
            &format!("metric: {}, {} is better", m.label(), m.better()),
            2,
        );
    }
    let rows: Vec<Vec<String>> = c
        .pairs
        .iter()
        .map(|p| row(p, layout, one_metric.is_none(), &mut notes))
        .collect();
    out += &match layout {
        Layout::Fitted => {
            let cols = fitted_columns(one_metric.is_none());
            text::table(&cols, &rows, max)
        }
        Layout::Wide => text::table(&WIDE_COLUMNS, &rows, None),
    };
    for (i, n) in notes.iter().enumerate() {
        out += &para(&format!("[{}] {n}", i + 1), 4);
    }
    for p in &c.pairs {
        if let Some(e) = &p.endpoints {
            out.push('\n');
            out += &by_request(p, e, layout, &para);
        }
    }
    out.push('\n');
    for l in legend(c, layout) {
        out += &para(&l, 2);
    }
    for l in unpaired(c) {
        out += &para(&l, 2);
    }
    if let Some(limit) = c.fail_if_slower_pct {
        out.push('\n');
        for l in fail_lines(c, limit) {
            out += &para(&l, 2);
        }
    }
    out
}

/// The metric every pair shares, when they do.
fn single_metric(c: &Comparison) -> Option<Metric> {
    let first = c.pairs.first()?.judged.headline.metric;
    c.pairs
        .iter()
        .all(|p| p.judged.headline.metric == first)
        .then_some(first)
}

/// The columns of the fitted layout; `metric` when the pairs' metrics differ.
fn fitted_columns(metric: bool) -> Vec<(&'static str, Align)> {
    let mut cols = vec![("pair", Align::Left)];
    if metric {
        cols.push(("metric", Align::Left));
    }
    cols.extend([
        ("A", Align::Right),
        ("B", Align::Right),
        ("B/A", Align::Right),
        ("change", Align::Right),
        ("verdict", Align::Left),
    ]);
    cols
}

/// The cells of one pair; its notes are appended to `notes` and referred to by number.
fn row(p: &Pair, layout: Layout, metric_column: bool, notes: &mut Vec<String>) -> Vec<String> {
    let m = p.judged.headline.metric;
    let mut verdict = verdict_text(&Call::of_pair(p), layout);
    for note in &p.notes {
        notes.push(note.clone());
        let tag = if p.loads_differ && note.starts_with("loads differ") {
            "; loads differ"
        } else {
            ""
        };
        verdict += &format!("{tag} [{}]", notes.len());
    }
    if p.regression {
        verdict += " REGRESSION";
    }
    let ratio = p
        .judged
        .headline
        .ratio
        .map_or("-".into(), |r| format!("{r:.3}"));
    let change = p
        .judged
        .headline
        .change_pct
        .map_or("-".into(), |c| format!("{c:+.1}%"));
    match layout {
        Layout::Fitted => {
            let mut row = vec![pair_name(p)];
            if metric_column {
                row.push(m.label().to_string());
            }
            row.extend([
                side(m, p.judged.headline.a, p.judged.a_range, p.judged.n_a, "\n"),
                side(m, p.judged.headline.b, p.judged.b_range, p.judged.n_b, "\n"),
                ratio,
                change,
                verdict,
            ]);
            row
        }
        Layout::Wide => {
            let mut row = vec![
                both(&p.label, p.b_label.as_deref()),
                both(&p.server, p.b_server.as_deref()),
                m.label().to_string(),
                p.judged.headline.better.to_string(),
                side(m, p.judged.headline.a, p.judged.a_range, p.judged.n_a, " "),
                side(m, p.judged.headline.b, p.judged.b_range, p.judged.n_b, " "),
                ratio,
                change,
                verdict,
            ];
            row.extend(p.secondary.iter().map(a_to_b));
            row
        }
    }
}

/// A pair's named requests: a heading, a line per name on both sides with the pair's metric
/// judged alike, and the names one side only has.
fn by_request(
    p: &Pair,
    e: &Endpoints,
    layout: Layout,
    para: &dyn Fn(&str, usize) -> String,
) -> String {
    let m = p.judged.headline.metric;
    let mut out = para(
        &format!(
            "By request, {}: {}, {} is better",
            pair_name(p),
            m.label(),
            m.better()
        ),
        2,
    );
    if !e.endpoints.is_empty() {
        let sep = if layout == Layout::Wide { " " } else { "\n" };
        let rows: Vec<Vec<String>> = e
            .endpoints
            .iter()
            .map(|x| {
                let mut row = vec![x.name.clone()];
                if layout == Layout::Wide {
                    row.push(format!("{} {}", x.method, x.path));
                }
                row.extend([
                    side(m, x.judged.headline.a, x.judged.a_range, x.judged.n_a, sep),
                    side(m, x.judged.headline.b, x.judged.b_range, x.judged.n_b, sep),
                    x.judged
                        .headline
                        .ratio
                        .map_or("-".into(), |r| format!("{r:.3}")),
                    x.judged
                        .headline
                        .change_pct
                        .map_or("-".into(), |c| format!("{c:+.1}%")),
                    verdict_text(&Call::of_endpoint(x), layout),
                ]);
                row
            })
            .collect();
        let mut cols = vec![("request", Align::Left)];
        if layout == Layout::Wide {
            cols.push(("method and path", Align::Left));
        }
        cols.extend([
            ("A", Align::Right),
            ("B", Align::Right),
            ("B/A", Align::Right),
            ("change", Align::Right),
            ("verdict", Align::Left),
        ]);
        out += &text::table(
            &cols,
            &rows,
            (layout == Layout::Fitted).then_some(FIT_COLUMNS),
        );
    }
    for (side, list) in [("A", &e.endpoints_only_in_a), ("B", &e.endpoints_only_in_b)] {
        for u in list {
            out += &para(
                &format!(
                    "only in {side}: request {} ({} {}, {} run{})",
                    u.name,
                    u.method,
                    u.path,
                    u.runs,
                    if u.runs == 1 { "" } else { "s" }
                ),
                2,
            );
        }
    }
    out
}

/// `a`, or `a vs b` when B's differs.
fn both(a: &str, b: Option<&str>) -> String {
    match b {
        Some(b) => format!("{a} vs {b}"),
        None => a.to_string(),
    }
}

/// `scenario axes · server`, with B's where they differ.
fn pair_name(p: &Pair) -> String {
    format!(
        "{} · {}",
        both(&p.label, p.b_label.as_deref()),
        both(&p.server, p.b_server.as_deref())
    )
}

/// A side's median, with its min–max after `sep` when it has more than one repetition.
fn side(m: Metric, v: Option<f64>, r: Option<[f64; 2]>, n: usize, sep: &str) -> String {
    match v {
        None => "-".to_string(),
        Some(v) if n > 1 => {
            let r = r.unwrap_or([v, v]);
            let range = format!("{}–{}", m.format(r[0]), m.format(r[1]));
            if sep == " " {
                format!("{} ({range})", m.format(v))
            } else {
                format!("{}{sep}{range}", m.format(v))
            }
        }
        Some(v) => m.format(v),
    }
}

/// A secondary metric as `A → B` (`-` when neither side has it).
fn a_to_b(d: &MetricDiff) -> String {
    let m = d.metric;
    let f = |v: Option<f64>| v.map_or("-".to_string(), |v| m.format(v));
    if d.a.is_none() && d.b.is_none() {
        "-".to_string()
    } else {
        format!("{} → {}", f(d.a), f(d.b))
    }
}

/// `0.012`, `0.40`, `<0.0001`.
pub fn format_p(p: f64) -> String {
    if p < 0.0001 {
        "p<0.0001".into()
    } else if p < 0.01 {
        format!("p={p:.4}")
    } else if p < 0.1 {
        format!("p={p:.3}")
    } else {
        format!("p={p:.2}")
    }
}

/// What a verdict is made of: a pair's headline, or one of its named requests.
pub(super) struct Call {
    metric: Metric,
    verdict: Verdict,
    n_a: usize,
    n_b: usize,
    u: Option<f64>,
    p_value: Option<f64>,
    effect: Option<stats::Effect>,
}

impl Call {
    /// The call on a pair's headline.
    pub(super) fn of_pair(p: &Pair) -> Call {
        Call {
            metric: p.judged.headline.metric,
            verdict: p.judged.verdict,
            n_a: p.judged.n_a,
            n_b: p.judged.n_b,
            u: p.judged.u,
            p_value: p.judged.p_value,
            effect: effect(
                p.judged.effect_pct,
                p.judged.ci_low_pct,
                p.judged.ci_high_pct,
            ),
        }
    }

    /// The call on one of a pair's named requests.
    pub(super) fn of_endpoint(e: &EndpointPair) -> Call {
        Call {
            metric: e.judged.headline.metric,
            verdict: e.judged.verdict,
            n_a: e.judged.n_a,
            n_b: e.judged.n_b,
            u: e.judged.u,
            p_value: e.judged.p_value,
            effect: effect(
                e.judged.effect_pct,
                e.judged.ci_low_pct,
                e.judged.ci_high_pct,
            ),
        }
    }
}

/// The verdict column: the call with its test, or why there is none.
pub(super) fn verdict_text(p: &Call, layout: Layout) -> String {
    let n = format!("n={}/{}", p.n_a, p.n_b);
    let wide = layout == Layout::Wide;
    match p.verdict {
        Verdict::TooFew if wide => {
            format!("cannot be called: too few repetitions ({n}; need {MIN_REPETITIONS} a side)")
        }
        Verdict::TooFew => format!("cannot be called ({n})"),
        Verdict::NotMeasured => "not measured".into(),
        v => {
            let word = match v {
                Verdict::Faster => "faster",
                Verdict::Slower => "slower",
                _ => "no significant difference",
            };
            let test = format_p(p.p_value.unwrap_or(1.0));
            // A call states its size: the shift and its interval (no size for no difference).
            let said = match (v, p.effect) {
                (Verdict::Faster | Verdict::Slower, Some(e)) => {
                    stats::effect_words(&e, p.metric.higher_is_better(), ALPHA)
                }
                _ => word.to_string(),
            };
            if wide {
                let ci = p.effect.map_or(String::new(), |e| {
                    format!(
                        ", shift {}",
                        stats::effect_words(&e, p.metric.higher_is_better(), ALPHA)
                    )
                });
                let ci = if matches!(v, Verdict::NoDifference) {
                    ci
                } else {
                    String::new()
                };
                format!("{said} ({test}, U={}, {n}{ci})", p.u.unwrap_or(0.0))
            } else {
                format!("{said} ({test})")
            }
        }
    }
}

/// An effect, when there is one.
fn effect(pct: Option<f64>, low_pct: Option<f64>, high_pct: Option<f64>) -> Option<stats::Effect> {
    Some(stats::Effect {
        pct: pct?,
        low_pct,
        high_pct,
    })
}

/// What the numbers are and how the verdicts are made, a paragraph per line.
fn legend(c: &Comparison, layout: Layout) -> Vec<String> {
    let mut out = vec![format!(
        "A and B are medians over the finished repetitions ({}); B/A above 1 means B is higher.",
        match layout {
            Layout::Fitted => "min–max under them with more than one",
            Layout::Wide => "min–max with more than one",
        }
    )];
    let mut verdicts = format!(
        "Verdicts need {MIN_REPETITIONS}+ repetitions a side: two-sided Mann-Whitney U test, \
         α = {ALPHA}; \"faster\" means better in the metric's direction. A call gives the \
         shift (Hodges-Lehmann: median of every B − A, in % of A's median) and its 95% CI."
    );
    if c.pairs.iter().any(|p| p.judged.verdict == Verdict::TooFew) {
        verdicts += " \"cannot be called\": too few repetitions to call, so no test was made \
                     and B/A is the ratio of the medians alone, not a finding.";
    }
    out.push(verdicts);
    let metric = match c.metric {
        Some(m) => format!("Metric: {} (--metric).", m.label()),
        None => "Metric: req/s in closed loop and ramp, corrected p99 in open loop (--metric \
                 chooses)."
            .into(),
    };
    out.push(match layout {
        Layout::Fitted => format!(
            "{metric} --wide: one line per pair with U and both sides' p50, p99, errors and \
             CPU/req; --json: everything."
        ),
        Layout::Wide => metric,
    });
    if c.pairs.iter().any(|p| p.endpoints.is_some()) {
        let mut l = "By request: the named requests of the requests files, paired by name, \
                     each by its pair's metric (req/s: its completed responses over its run's \
                     time) and judged as the pair is."
            .to_string();
        if c.fail_if_slower_pct.is_some() {
            l += " --fail-if-slower judges the pairs' whole runs, not their requests.";
        }
        out.push(l);
    }
    out
}

/// `only in A: …` and `only in B: …` lines.
fn unpaired(c: &Comparison) -> Vec<String> {
    let mut out = Vec::new();
    for (side, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        for u in list {
            out.push(format!(
                "only in {side}: {} · {} ({} finished)",
                u.label, u.server, u.finished
            ));
        }
    }
    out
}

/// What `--fail-if-slower limit` judged: the rule in force, the regressions, and the pairs
/// worse than the limit by their medians that are not regressions, with the reason.
fn fail_lines(c: &Comparison, limit: f64) -> Vec<String> {
    let mut out = vec![if c.allow_single {
        format!(
            "--fail-if-slower {limit}% --allow-single: a pair fails when the test calls it \
             slower, or, with fewer than {MIN_REPETITIONS} repetitions a side, on its medians \
             alone."
        )
    } else {
        format!(
            "--fail-if-slower {limit}%: a pair fails only when the test calls it slower \
             ({MIN_REPETITIONS}+ repetitions a side); --allow-single also fails pairs with fewer \
             on their medians alone."
        )
    }];
    for p in c.pairs.iter().filter(|p| p.beyond_limit) {
        let m = p.judged.headline.metric;
        let worse = match (p.judged.headline.a, p.judged.headline.b) {
            (Some(a), Some(b)) => worse_pct(m, a, b),
            _ => f64::NAN,
        };
        let by = if worse.is_finite() {
            format!("{worse:.1}%")
        } else {
            "infinitely".into()
        };
        let n = format!("n={}/{}", p.judged.n_a, p.judged.n_b);
        let what = format!(
            "{}: {} {by} worse than A (limit {limit}%)",
            pair_name(p),
            m.label()
        );
        out.push(match (p.regression, p.judged.verdict) {
            (true, Verdict::TooFew) => {
                format!("regression: {what}, by the medians alone ({n}; --allow-single)")
            }
            (true, _) => format!(
                "regression: {what}, called slower ({})",
                format_p(p.judged.p_value.unwrap_or(1.0))
            ),
            (false, Verdict::TooFew) => format!(
                "not a regression: {what} by the medians, but {n} is too few repetitions to \
                 call (--allow-single would fail it)"
            ),
            (false, v) => format!(
                "not a regression: {what} by the medians, but the test finds {} ({})",
                match v {
                    Verdict::Faster => "B faster",
                    _ => "no significant difference",
                },
                format_p(p.judged.p_value.unwrap_or(1.0))
            ),
        });
    }
    if !c.regression {
        out.push(format!("no regression beyond {limit}%"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_formatting() {
        assert_eq!(format_p(0.012185), "p=0.012");
        assert_eq!(format_p(0.40339), "p=0.40");
        assert_eq!(format_p(0.0079), "p=0.0079");
        assert_eq!(format_p(0.00001), "p<0.0001");
    }
}

//! The comparison as a table: one line per pair, then the notes, a legend, the unpaired series
//! and the regressions (docs/contract.md, "Comparisons").

use super::{worse_pct, Comparison, MetricDiff, Pair, Verdict, ALPHA, MIN_REPETITIONS};

/// How a column's cells line up.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Align {
    /// Text.
    Left,
    /// Numbers.
    Right,
}

/// The columns: header and alignment.
const COLUMNS: [(&str, Align); 13] = [
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
/// and, with `--fail-if-slower`, the regressions.
pub fn render(c: &Comparison) -> String {
    let mut notes: Vec<String> = Vec::new();
    let rows: Vec<Vec<String>> = c.pairs.iter().map(|p| row(p, &mut notes)).collect();
    let mut out = format!("A: {} ({})\nB: {} ({})\n\n", c.a, c.a_title, c.b, c.b_title);
    out += &table(&rows);
    for (i, n) in notes.iter().enumerate() {
        out += &format!("[{}] {n}\n", i + 1);
    }
    out += &legend(c);
    out += &unpaired(c);
    if let Some(limit) = c.fail_if_slower_pct {
        out += &regressions(c, limit);
    }
    out
}

/// The cells of one pair; its notes are appended to `notes` and referred to by number.
fn row(p: &Pair, notes: &mut Vec<String>) -> Vec<String> {
    let m = p.headline.metric;
    let side = |v: Option<f64>, r: Option<[f64; 2]>, n: usize| match v {
        None => "-".to_string(),
        Some(v) if n > 1 => {
            let r = r.unwrap_or([v, v]);
            format!("{} ({}–{})", m.format(v), m.format(r[0]), m.format(r[1]))
        }
        Some(v) => m.format(v),
    };
    let mut verdict = verdict_text(p);
    for note in &p.notes {
        notes.push(note.clone());
        verdict += &format!(" [{}]", notes.len());
    }
    if p.regression {
        verdict += " REGRESSION";
    }
    let mut row = vec![
        match &p.b_label {
            Some(b) => format!("{} vs {b}", p.label),
            None => p.label.clone(),
        },
        match &p.b_server {
            Some(b) => format!("{} vs {b}", p.server),
            None => p.server.clone(),
        },
        m.label().to_string(),
        p.headline.better.to_string(),
        side(p.headline.a, p.a_range, p.n_a),
        side(p.headline.b, p.b_range, p.n_b),
        p.headline.ratio.map_or("-".into(), |r| format!("{r:.3}")),
        p.headline
            .change_pct
            .map_or("-".into(), |c| format!("{c:+.1}%")),
        verdict,
    ];
    row.extend(p.secondary.iter().map(a_to_b));
    row
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

/// The verdict column: the call with its test, or why there is none.
fn verdict_text(p: &Pair) -> String {
    let n = format!("n={}/{}", p.n_a, p.n_b);
    match p.verdict {
        Verdict::TooFew => {
            format!("too few repetitions to call ({n}; need {MIN_REPETITIONS} a side)")
        }
        Verdict::NotMeasured => "not measured".into(),
        v => {
            let word = match v {
                Verdict::Faster => "faster",
                Verdict::Slower => "slower",
                _ => "no significant difference",
            };
            format!(
                "{word} ({}, U={}, {n})",
                format_p(p.p_value.unwrap_or(1.0)),
                p.u.unwrap_or(0.0)
            )
        }
    }
}

/// The header, a rule and the rows, each column as wide as its widest cell.
fn table(rows: &[Vec<String>]) -> String {
    let header: Vec<String> = COLUMNS.iter().map(|(h, _)| h.to_string()).collect();
    let mut width: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, cell) in width.iter_mut().zip(r) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = line(&header, &width);
    out += &line(
        &width.iter().map(|w| "-".repeat(*w)).collect::<Vec<_>>(),
        &width,
    );
    for r in rows {
        out += &line(r, &width);
    }
    out
}

/// One line of the table, its cells padded to `width` by their column's alignment.
fn line(cells: &[String], width: &[usize]) -> String {
    let mut s = String::new();
    for ((cell, w), (_, align)) in cells.iter().zip(width).zip(&COLUMNS) {
        let pad = " ".repeat(w - cell.chars().count());
        match align {
            Align::Left => {
                s += cell;
                s += &pad;
            }
            Align::Right => {
                s += &pad;
                s += cell;
            }
        }
        s += "  ";
    }
    s.trim_end().to_string() + "\n"
}

/// What the numbers are and how the verdicts are made.
fn legend(c: &Comparison) -> String {
    format!(
        "\nA and B are medians over the finished repetitions (min–max with more than one); B/A above 1 means B is higher.\n\
         Metric: {}. Verdicts with {MIN_REPETITIONS}+ repetitions a side: two-sided Mann-Whitney U test, α = {ALPHA}; \"faster\" means better in the metric's direction.\n",
        match c.metric {
            Some(m) => format!("{} (--metric)", m.label()),
            None => "req/s in closed loop and ramp, corrected p99 in open loop".into(),
        }
    )
}

/// `only in A: …` and `only in B: …` lines.
fn unpaired(c: &Comparison) -> String {
    let mut out = String::new();
    for (side, list) in [("A", &c.only_in_a), ("B", &c.only_in_b)] {
        for u in list {
            out += &format!(
                "only in {side}: {} · {} ({} finished)\n",
                u.label, u.server, u.finished
            );
        }
    }
    out
}

/// The regressions beyond `--fail-if-slower limit`, or a line saying there is none.
fn regressions(c: &Comparison, limit: f64) -> String {
    let bad: Vec<&Pair> = c.pairs.iter().filter(|p| p.regression).collect();
    if bad.is_empty() {
        return format!("\nno regression beyond {limit}%\n");
    }
    let mut out = String::new();
    for p in bad {
        let m = p.headline.metric;
        let worse = match (p.headline.a, p.headline.b) {
            (Some(a), Some(b)) => worse_pct(m, a, b),
            _ => f64::NAN,
        };
        out += &format!(
            "\nregression: {} · {}: {} {} worse than A (limit {limit}%)\n",
            p.label,
            p.server,
            m.label(),
            if worse.is_finite() {
                format!("{worse:.1}%")
            } else {
                "infinitely".into()
            }
        );
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

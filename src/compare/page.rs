//! `volley compare … --html PATH`: the verdict page. The A-vs-B answer comes first — per pair
//! the metric, both medians, the change and the call — then the report's own sections over the
//! paired runs of both sides, A's and B's series side by side in each scenario: percentile
//! plots overlaid (each side's repetitions' histograms added up), req/s with its range over
//! the repetitions, the settings and every number.
//!
//! Sides are named `A: <server>` and `B: <server>`; a single run file is named by its file
//! name (`A: v1`), not by the address it loaded, which changes from run to run.

use std::fmt::Write;
use std::path::Path;

use super::{format_p, Comparison, Pair, Verdict};
use crate::report::html::{escape_html as esc, render_with_lead};
use crate::report::model::{Cell, Report};

/// The verdict page of comparison `c` of reports `a` and `b` (as loaded from `c.a`, `c.b`).
pub fn render(c: &Comparison, a: &Report, b: &Report) -> String {
    let combined = combined(c, a, b);
    render_with_lead(&combined, &lead(c))
}

/// One report holding, for every pair, A's and B's series under the pair's label, each
/// server named by its side.
fn combined(c: &Comparison, a: &Report, b: &Report) -> Report {
    let (sa, sb) = (a.series(), b.series());
    let mut cells: Vec<Cell> = Vec::new();
    for p in &c.pairs {
        let b_label = p.b_label.as_deref().unwrap_or(&p.label);
        let b_server = p.b_server.as_deref().unwrap_or(&p.server);
        let sides = [
            ("A", &c.a, &sa, p.label.as_str(), p.server.as_str()),
            ("B", &c.b, &sb, b_label, b_server),
        ];
        for (side, path, series, label, server) in sides {
            let Some(s) = series
                .iter()
                .find(|s| s.label == label && s.server == server)
            else {
                continue;
            };
            let name = side_name(side, path, server, s.cells.len() == 1 && is_file(path));
            for &cell in &s.cells {
                let mut cell = cell.clone();
                cell.server = name.clone();
                cell.scenario = p.label.clone();
                cell.axes.clear();
                cells.push(cell);
            }
        }
    }
    Report {
        title: format!("{} vs {}", c.a, c.b),
        suites: Vec::new(),
        cells,
    }
}

/// `A: go`, or for a single run file `A: v1` (the file's name without `.json`).
fn side_name(side: &str, path: &str, server: &str, single_file: bool) -> String {
    if single_file {
        let stem = Path::new(path)
            .file_stem()
            .map(|s| s.to_string_lossy().to_string())
            .unwrap_or_else(|| server.to_string());
        format!("{side}: {stem}")
    } else {
        format!("{side}: {server}")
    }
}

fn is_file(path: &str) -> bool {
    Path::new(path).is_file() && !path.ends_with("suite.json")
}

/// The answer: one sentence per pair, then the table of calls.
fn lead(c: &Comparison) -> String {
    let mut o = String::new();
    o.push_str("<section id=\"ab-verdict\" class=\"verdict-top\"><h2>A vs B</h2>");
    let _ = write!(
        o,
        "<p>A: <code>{}</code> ({}) · B: <code>{}</code> ({})</p><ul>",
        esc(&c.a),
        esc(&c.a_title),
        esc(&c.b),
        esc(&c.b_title)
    );
    for p in &c.pairs {
        let _ = write!(o, "<li>{}</li>", esc(&sentence(p)));
    }
    o.push_str("</ul><table><thead><tr>");
    for h in ["pair", "metric", "A", "B", "B/A", "change", "verdict"] {
        let _ = write!(o, "<th>{h}</th>");
    }
    o.push_str("</tr></thead><tbody>");
    for p in &c.pairs {
        let m = p.headline.metric;
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| m.format(v));
        let _ = write!(
            o,
            "<tr><td>{} · {}</td><td>{} ({} is better)</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.label),
            esc(&p.server),
            esc(m.label()),
            p.headline.better,
            esc(&fmt(p.headline.a)),
            esc(&fmt(p.headline.b)),
            p.headline.ratio.map_or("-".into(), |r| format!("{r:.3}")),
            p.headline
                .change_pct
                .map_or("-".into(), |v| format!("{v:+.1}%")),
            esc(&call(p)),
        );
    }
    o.push_str("</tbody></table></section>\n");
    o
}

/// `B is slower on get · go: req/s −19.0 % (p=0.0079, n=5/5)`.
fn sentence(p: &Pair) -> String {
    let what = format!("{} · {}: {}", p.label, p.server, p.headline.metric.label());
    let change = p
        .headline
        .change_pct
        .map_or(String::new(), |v| format!(" {v:+.1} %"));
    let n = format!("n={}/{}", p.n_a, p.n_b);
    match p.verdict {
        Verdict::Slower => format!("B is slower on {what}{change} ({}, {n})", p_text(p)),
        Verdict::Faster => format!("B is faster on {what}{change} ({}, {n})", p_text(p)),
        Verdict::NoDifference => {
            format!(
                "No significant difference on {what}{change} ({}, {n})",
                p_text(p)
            )
        }
        Verdict::TooFew => format!(
            "{what}{change} by the medians: cannot be called ({n}; 5 repetitions a side are needed)"
        ),
        Verdict::NotMeasured => format!("{what}: not measured on a side"),
    }
}

fn p_text(p: &Pair) -> String {
    p.p_value.map_or("no test".into(), format_p)
}

/// The verdict column: the call, with the p-value where a test was made.
fn call(p: &Pair) -> String {
    match p.verdict {
        Verdict::Slower => format!("slower ({})", p_text(p)),
        Verdict::Faster => format!("faster ({})", p_text(p)),
        Verdict::NoDifference => format!("no significant difference ({})", p_text(p)),
        Verdict::TooFew => format!("cannot be called (n={}/{})", p.n_a, p.n_b),
        Verdict::NotMeasured => "not measured".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare, Options};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/report")
            .join(name)
    }

    #[test]
    fn the_answer_comes_first_and_the_sides_keep_their_names() {
        let path = fixture("quick");
        let a = Report::load(std::slice::from_ref(&path)).unwrap();
        let name = path.display().to_string();
        let c = compare((&name, &a), (&name, &a), Options::default()).unwrap();
        let html = render(&c, &a, &a);
        let lead = html.find("id=\"ab-verdict\"").expect("the verdict section");
        let first_chart = html.find("class=\"chart\"").expect("charts of both sides");
        assert!(lead < first_chart, "the answer before any chart");
        assert!(
            html.contains("A: go") && html.contains("B: go"),
            "sides by server"
        );
        assert!(html.contains("cannot be called (n=1/1)"));
    }

    #[test]
    fn single_run_files_are_named_by_their_file() {
        assert_eq!(
            side_name("A", "/r/v1.json", "127.0.0.1:8080", true),
            "A: v1"
        );
        assert_eq!(side_name("B", "/r/out", "go", false), "B: go");
    }
}

//! The trend page (`volley history trend --html PATH`): the report's look (its CSS and the
//! vendored uPlot), a chart and a table per series, change points marked, each commit linking
//! to its runs. Self-contained and offline, under the report's Content-Security-Policy.

use std::fmt::Write;

use serde::Serialize;

use super::measure::Measure;
use super::trend::{Trend, TrendPoint};
use volley_report::html::{escape_html, fill, script_json, CSS, UPLOT_CSS, UPLOT_JS};

const TEMPLATE: &str = include_str!("assets/trend.html");
const JS: &str = include_str!("assets/trend.js");

/// What the page is about.
#[derive(Debug, Clone)]
pub struct About {
    /// The history file, as given.
    pub db: String,
    /// The metric's name.
    pub metric: String,
    /// When it was made, RFC 3339.
    pub generated: String,
}

#[derive(Serialize)]
struct Data<'a> {
    trends: &'a [Trend],
}

/// The page.
pub fn render(trends: &[Trend], about: &About) -> String {
    let mut body = String::new();
    let _ = writeln!(
        body,
        "<header><h1>Trend of {}</h1><p class=\"sub\">{} series from {} · made {} · \
         change points: E-divisive with the t-test (Otava's), band: each level's mean ± 2σ of \
         the {}</p></header>",
        escape_html(&about.metric),
        trends.len(),
        escape_html(&about.db),
        escape_html(&about.generated),
        banded(trends)
    );
    if trends.is_empty() {
        body += "<p>No saved run has this metric.</p>\n";
    }
    for (n, t) in trends.iter().enumerate() {
        section(&mut body, n, t);
    }
    body += "<footer><p class=\"muted\">volley history</p><div id=\"selftest\" hidden></div></footer>\n";
    fill(
        TEMPLATE,
        &[
            ("title", &escape_html(&format!("Trend of {}", about.metric))),
            ("uplot_css", UPLOT_CSS),
            ("css", CSS),
            ("body", &body),
            ("data", &script_json(&Data { trends })),
            ("uplot_js", UPLOT_JS),
            ("js", JS),
        ],
    )
}

/// What the noise bands are made of: the commits' medians, or for runs saved without a commit
/// (each a point of its own) their values.
fn banded(trends: &[Trend]) -> &'static str {
    let points = || trends.iter().flat_map(|t| &t.points);
    match (
        points().any(|p| p.commit.is_some()),
        points().any(|p| p.commit.is_none()),
    ) {
        (true, true) => "commits' medians and the values of runs without a commit",
        (false, true) => "runs' values",
        _ => "commits' medians",
    }
}

/// What a series' points are, counted, and the heading of their column: `3 commits`
/// (`commit`), `3 runs` when none has a commit (each run is a point of its own: `run`), or
/// `2 commits and 1 run without a commit` (`commit or run`).
fn counted(points: &[TrendPoint]) -> (String, &'static str) {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let runs = points.iter().filter(|p| p.commit.is_none()).count();
    let commits = points.len() - runs;
    match (commits, runs) {
        (c, 0) => (format!("{c} commit{}", plural(c)), "commit"),
        (0, r) => (format!("{r} run{}", plural(r)), "run"),
        (c, r) => (
            format!(
                "{c} commit{} and {r} run{} without a commit",
                plural(c),
                plural(r)
            ),
            "commit or run",
        ),
    }
}

fn section(out: &mut String, n: usize, t: &Trend) {
    let changes = t.points.iter().filter(|p| p.change.is_some()).count();
    let (count, column) = counted(&t.points);
    let _ = write!(
        out,
        "<section id=\"s-{n}\"><h2>{}</h2><p class=\"sub\">{} ({} is better) · {count} · \
         {} change point{} · load <code>{}</code> · host <code>{}</code>{} · {}</p>\n\
         <div class=\"chart\" id=\"chart-{n}\"></div>\n<div class=\"wide\"><table class=\"trend-table\">\
         <thead><tr><th>{column}</th><th>time</th><th>subject</th><th>{}</th><th>runs</th>\
         <th>change</th></tr></thead><tbody>\n",
        escape_html(&t.name),
        escape_html(&t.metric),
        if t.higher_is_better { "higher" } else { "lower" },
        changes,
        if changes == 1 { "" } else { "s" },
        escape_html(&t.load_id),
        escape_html(&t.host_id),
        t.cpu_model
            .as_deref()
            .map(|c| format!(" ({})", escape_html(c)))
            .unwrap_or_default(),
        t.mode.as_str(),
        escape_html(&t.metric)
    );
    for (i, p) in t.points.iter().enumerate() {
        let class = match p.change {
            Some(c) if c.regression => " class=\"change regression\"",
            Some(_) => " class=\"change improvement\"",
            None => "",
        };
        let change = p
            .change
            .map(|c| {
                format!(
                    "<span class=\"{}\">{:+.1}%</span> <small>p={:.1e}</small>",
                    if c.regression { "bad" } else { "good" },
                    c.pct,
                    c.p_value
                )
            })
            .unwrap_or_default();
        let show = |v: f64| match Measure::parse(&t.metric) {
            Some(m) => m.show(v),
            None => format!("{v}"),
        };
        let runs: Vec<String> = p
            .runs
            .iter()
            .zip(&p.values)
            .zip(&p.files)
            .map(|((id, v), file)| run_link(*id, &show(*v), file.as_deref()))
            .collect();
        let subject = p.subject.as_deref().unwrap_or("");
        let cut: String = subject.chars().take(90).collect();
        let cut = if cut.len() < subject.len() {
            format!("{cut}…")
        } else {
            cut
        };
        let _ = writeln!(
            out,
            "<tr id=\"p-{n}-{i}\"{class}><td><code title=\"{}\">{}</code></td><td class=\"nowrap\">{}</td>\
             <td title=\"{}\">{}</td><td class=\"num nowrap\">{}</td><td class=\"nowrap\">{}</td><td class=\"nowrap\">{}</td></tr>",
            escape_html(p.commit.as_deref().unwrap_or("")),
            escape_html(&p.label),
            escape_html(&p.time.get(..16).unwrap_or(&p.time).replace('T', " ")),
            escape_html(subject),
            escape_html(&cut),
            escape_html(&show(p.median)),
            runs.join("<br>"),
            change
        );
    }
    out.push_str("</tbody></table></div></section>\n");
}

/// A run in a row: `#12: 48,120` linking to its result file when one is known; its id is the
/// one `volley history show` takes.
fn run_link(id: i64, shown: &str, file: Option<&str>) -> String {
    let text = escape_html(&format!("#{id}: {shown}"));
    match file.filter(|f| f.starts_with('/')) {
        Some(f) => format!(
            "<a href=\"{}\" title=\"volley history show {id}\">{text}</a>",
            escape_html(&file_url(f))
        ),
        None => format!("<span title=\"volley history show {id}\">{text}</span>"),
    }
}

/// `file://` URL of an absolute path, its bytes outside the unreserved set percent-encoded.
fn file_url(path: &str) -> String {
    let mut out = String::from("file://");
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(b as char);
        } else {
            out += &format!("%{b:02X}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(commit: Option<&str>) -> TrendPoint {
        TrendPoint {
            label: String::new(),
            commit: commit.map(str::to_string),
            subject: None,
            branch: None,
            time: String::new(),
            median: 1.0,
            values: vec![1.0],
            runs: vec![1],
            files: vec![None],
            change: None,
        }
    }

    #[test]
    fn points_are_counted_as_what_they_are() {
        let c = || point(Some("1a2b3c4"));
        let r = || point(None);
        assert_eq!(counted(&[c(), c(), c()]), ("3 commits".into(), "commit"));
        assert_eq!(counted(&[r(), r(), r()]), ("3 runs".into(), "run"));
        assert_eq!(counted(&[r()]), ("1 run".into(), "run"));
        assert_eq!(
            counted(&[c(), c(), r()]),
            (
                "2 commits and 1 run without a commit".into(),
                "commit or run"
            )
        );
    }

    #[test]
    fn runs_link_to_their_files_percent_encoded() {
        assert_eq!(file_url("/tmp/a b/#1.json"), "file:///tmp/a%20b/%231.json");
        let l = run_link(7, "1,234.0 req/s", Some("/r/\"x\".json"));
        assert!(l.starts_with("<a href=\"file:///r/%22x%22.json\""), "{l}");
        assert!(run_link(7, "1.5", Some("relative.json")).starts_with("<span"));
        assert!(run_link(7, "<b>", None).contains("#7: &lt;b&gt;"));
    }
}

//! Self-contained HTML report: one page that answers "which server is faster, by how much, at
//! what tail latency, and at what CPU and memory cost", for one run or whole suites (what it
//! shows: docs/contract.md, "Reports"). The Rust side computes every number into [`PageData`],
//! JSON in a `<script type="application/json">` block, and renders the tables as escaped HTML;
//! `crates/report/src/assets/report.js` draws the charts with the vendored uPlot and sorts the
//! tables. All is inlined and a Content-Security-Policy forbids every request: the file opens
//! offline and cannot send anything it shows anywhere.
//!
//! One file per concept: `page` (scenario groups and rows), `data` (what the charts draw),
//! `nines` (percentile curves of merged histograms), `body` (the HTML, a file per section).

mod body;
mod data;

mod nines;
mod page;

pub use crate::escape::{escape_html, fill, script_json};
pub use data::{
    EndpointLine, GcSeries, GroupData, HdrLine, OverTime, PageData, Resources, Spread,
    ThroughputBar,
};
pub use nines::{merged, merged_encoded, percentile_points};
pub use page::{Group, Page, Row};

use super::model::Report;
use super::Reporter;

/// The page skeleton; `{{name}}` placeholders are filled by [`fill`].
const TEMPLATE: &str = include_str!("../assets/report.html");
/// The page's own style.
pub const CSS: &str = include_str!("../assets/report.css");
/// Charts, sorting and the self-test; then the flame graphs.
const JS: &str = concat!(
    include_str!("../assets/report.js"),
    "\n",
    include_str!("../assets/flame.js")
);
/// uPlot, vendored unchanged (see `crates/report/src/assets/uplot/README.md`).
pub const UPLOT_JS: &str = include_str!("../assets/uplot/uPlot.iife.min.js");
/// uPlot's style.
pub const UPLOT_CSS: &str = include_str!("../assets/uplot/uPlot.min.css");

/// HTML reporter.
pub(crate) struct HtmlReporter;

impl Reporter for HtmlReporter {
    fn render(&self, report: &Report) -> String {
        render_with_lead(report, "")
    }
}

/// The page of `report` with `lead` (trusted HTML, already escaped) before everything else:
/// how a page built on the report's sections (`volley compare --html`) puts its answer first.
pub fn render_with_lead(report: &Report, lead: &str) -> String {
    render_with(report, lead, &mut |_| {})
}

/// [`render_with_lead`], with flame graph sections `more` adds after the runs' own (a
/// comparison's differential ones).
pub fn render_with(
    report: &Report,
    lead: &str,
    more: &mut dyn FnMut(&mut crate::flame::Sections),
) -> String {
    let series = report.series();
    let mut page = Page::of(&series);
    // Capacity searches: their servers join the page's (one colour per server everywhere).
    let mut capacity = String::new();
    if !report.capacity.is_empty() {
        for e in &report.capacity {
            if !page.data.servers.contains(&e.server) {
                page.data.servers.push(e.server.clone());
            }
        }
        let servers = page.data.servers.clone();
        let index = |n: &str| servers.iter().position(|s| s == n).unwrap_or(0);
        page.data.capacity =
            crate::capacity::html::sections(&mut capacity, &report.capacity, &index);
    }
    // Profiled runs: where the server's CPU went, as flame graphs.
    let mut sections = crate::flame::of_report(report);
    more(&mut sections);
    let (flames, data) = sections.into_parts();
    page.data.flames = data;
    capacity.push_str(&flames);
    let body = format!("{lead}{}", body::render(report, &page, &capacity));
    fill_page(&report.title, &body, &page.data)
}

/// A page of flame graphs alone: `title` and the sections, on the report's template (its style,
/// script, self-test and Content-Security-Policy).
pub fn flame_page(title: &str, sections: crate::flame::Sections) -> String {
    let (html, flames) = sections.into_parts();
    let body = format!(
        "<h1>{}</h1>\n{html}<footer><p>CPU per request: each sample × the sampling \
         period ÷ the requests completed.</p><div id=\"selftest\" hidden></div></footer>\n",
        escape_html(title)
    );
    let data = PageData {
        servers: Vec::new(),
        groups: Vec::new(),
        capacity: Vec::new(),
        flames,
    };
    fill_page(title, &body, &data)
}

/// The whole page: the template with `title` (text), `body` (trusted HTML, already escaped,
/// holding the `#selftest` element) and `data` (the JSON the script reads), the style and
/// the scripts.
pub(crate) fn fill_page(title: &str, body: &str, data: &PageData) -> String {
    fill(
        TEMPLATE,
        &[
            ("title", &escape_html(title)),
            ("uplot_css", UPLOT_CSS),
            ("css", CSS),
            ("body", body),
            ("data", &script_json(data)),
            ("uplot_js", UPLOT_JS),
            ("js", JS),
        ],
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_flame_page_keeps_hostile_names_text() {
        let evil = "</script><img src=x onerror=alert(1)>";
        let f = crate::flame::Folded::parse(&format!("srv;{evil} 5\nsrv;ok 3\n")).unwrap();
        let mut s = crate::flame::Sections::new();
        s.profile(evil, crate::flame::Profile::new(&f, 1000.0, 10));
        let html = flame_page(evil, s);
        assert!(!html.contains("<img"), "a name became markup");
        assert_eq!(
            html.matches("<script").count(),
            4,
            "the template's four only"
        );
        assert_eq!(html.matches("</script").count(), 4);
        assert!(html.contains("<h1>&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</h1>"));
    }

    use super::*;
    use std::path::Path;
    use volley_model::result::{CellStatus, Warning};

    /// A report of `tests/fixtures/report/NAME`, for the tests of every file of the page.
    pub(super) fn fixture(name: &str) -> Report {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/fixtures/report");
        Report::load(&[dir.join(name)]).expect("fixture loads")
    }

    #[test]
    fn vendored_scripts_cannot_end_their_element_early() {
        for (name, text) in [("uPlot", UPLOT_JS), ("report.js", JS)] {
            assert!(
                !text.to_ascii_lowercase().contains("</script"),
                "{name} contains </script"
            );
        }
        for (name, text) in [("uPlot css", UPLOT_CSS), ("report.css", CSS)] {
            assert!(
                !text.to_ascii_lowercase().contains("</style"),
                "{name} contains </style"
            );
        }
    }

    /// A suite whose names, reasons and stderr are all markup.
    fn hostile() -> Report {
        let mut report = fixture("faults");
        let evil = "<script>alert(1)</script>";
        let img = "\"><img src=x onerror=alert(2)>";
        for c in &mut report.cells {
            if c.server == "volley-serve" {
                c.server = evil.into();
            }
            if c.server == "dies" {
                c.reason = Some(format!("{img} </script>"));
            }
            c.scenario = format!("get{img}");
            if let Some(r) = &mut c.result {
                r.warnings
                    .push(Warning::from_text(format!("warned {evil}")));
            }
        }
        for row in &mut report.suites[0].rows {
            row.stderr_tail.push(format!("stderr {evil}"));
        }
        report.title = evil.into();
        report
    }

    #[test]
    fn hostile_strings_appear_only_escaped() {
        let html = HtmlReporter.render(&hostile());
        assert!(
            !html.contains("<script>alert(1)"),
            "raw script tag in output"
        );
        assert!(!html.contains("<img src=x"), "raw img tag in output");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
        assert!(html.contains("&quot;&gt;&lt;img src=x onerror=alert(2)&gt;"));
        // The only </script> are the page's own: one per script element.
        let opens = html.matches("<script").count();
        let closes = html.matches("</script").count();
        assert_eq!(opens, 4, "the page has four script elements");
        assert_eq!(closes, opens);
        let start = html
            .find(r#"<script type="application/json" id="data">"#)
            .unwrap();
        let json = &html[start..];
        let json = &json[json.find('>').unwrap() + 1..json.find("</script>").unwrap()];
        assert!(!json.contains('<'));
        let v: serde_json::Value = serde_json::from_str(json).unwrap();
        assert!(v["servers"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "<script>alert(1)</script>"));
    }

    #[test]
    fn quick_suite_page_is_complete_and_small() {
        let report = fixture("quick");
        let html = HtmlReporter.render(&report);
        assert!(html.len() < 400_000, "{} bytes", html.len());
        assert!(html.contains("Content-Security-Policy"));
        for server in ["go", "java", "nginx", "node", "python", "rust"] {
            assert!(html.contains(&format!(">{server}<")), "{server} missing");
        }
        let series = report.series();
        let page = Page::of(&series);
        assert_eq!(page.groups.len(), 2);
        for g in &page.data.groups {
            assert_eq!(g.hdr.len(), 6);
            assert_eq!(g.throughput.len(), 6);
            assert_eq!(g.over_time.len(), 6);
            assert_eq!(g.resources.len(), 6);
        }
        // Every chart placeholder is backed by data.
        assert!(html.matches("class=\"chart\"").count() >= 2 * 5);
    }

    #[test]
    fn a_report_without_results_renders() {
        let mut report = fixture("faults");
        for c in &mut report.cells {
            c.result = None;
            c.status = CellStatus::Failed;
        }
        let html = HtmlReporter.render(&report);
        assert!(html.contains("failed"));
        assert!(!html.contains("class=\"chart\""));
    }
}

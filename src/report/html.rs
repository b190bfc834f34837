//! Self-contained HTML report: one page that answers "which server is faster, by how much, at
//! what tail latency, and at what CPU and memory cost", for one run or whole suites.
//!
//! The Rust side computes every number (medians over repetitions, merged histograms, percentile
//! curves) into [`PageData`], which travels as JSON in a `<script type="application/json">`
//! block, and renders the tables as escaped HTML (`html/body.rs`). `assets/report.js` draws the
//! charts with the vendored uPlot (`assets/uplot/`) and makes the tables sortable. Everything is
//! inlined and a Content-Security-Policy forbids every request, so the file opens offline and
//! cannot send anything it shows anywhere.

mod body;

use serde::Serialize;

use super::model::{Cell, Report, Series};
use super::Reporter;
use crate::result::{CellStatus, RunResult};
use crate::stats::histogram::{self, decode, Hist};

/// The page skeleton; `{{name}}` placeholders are filled by [`fill`].
const TEMPLATE: &str = include_str!("assets/report.html");
/// The page's own style.
const CSS: &str = include_str!("assets/report.css");
/// Charts, sorting and the self-test.
const JS: &str = include_str!("assets/report.js");
/// uPlot, vendored unchanged (see `assets/uplot/README.md`).
const UPLOT_JS: &str = include_str!("assets/uplot/uPlot.iife.min.js");
/// uPlot's style.
const UPLOT_CSS: &str = include_str!("assets/uplot/uPlot.min.css");

/// HTML reporter.
pub struct HtmlReporter;

impl Reporter for HtmlReporter {
    fn render(&self, report: &Report) -> String {
        let series = report.series();
        let page = Page::of(&series);
        let body = body::render(report, &page);
        fill(
            TEMPLATE,
            &[
                ("title", &escape_html(&report.title)),
                ("uplot_css", UPLOT_CSS),
                ("css", CSS),
                ("body", &body),
                ("data", &script_json(&page.data)),
                ("uplot_js", UPLOT_JS),
                ("js", JS),
            ],
        )
    }
}

/// What the page's script draws: serialized into the page's JSON block.
#[derive(Debug, Clone, Serialize)]
pub struct PageData {
    /// Every server in order of first appearance; the index is the server's colour everywhere.
    pub servers: Vec<String>,
    /// One entry per scenario group, in page order.
    pub groups: Vec<GroupData>,
}

/// The charts of one scenario group (a scenario and its axis values), one line or bar per
/// server.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GroupData {
    /// Percentile curves of the repetitions' merged histograms.
    pub hdr: Vec<HdrLine>,
    /// Throughput across repetitions.
    pub throughput: Vec<ThroughputBar>,
    /// Per-second throughput and latency of one representative repetition.
    pub over_time: Vec<OverTime>,
    /// The server's CPU and memory over time, same repetition as `over_time`.
    pub resources: Vec<Resources>,
}

/// One line of the percentile plot.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HdrLine {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// Service time (from the write) rather than corrected latency (from the due time).
    pub service: bool,
    /// Responses in the merged histogram.
    pub count: u64,
    /// Repetitions merged.
    pub runs: usize,
    /// Nines-scale positions: x = −log10(1 − q).
    pub x: Vec<f64>,
    /// Latency at each x, µs.
    pub y_us: Vec<u64>,
}

/// One bar of the throughput chart.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThroughputBar {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// Median, smallest and largest req/s over the repetitions that finished.
    pub rps: Spread,
    /// Repetitions that finished.
    pub runs: usize,
}

/// Per-second series of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OverTime {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetition shown (the one with the median throughput).
    pub rep: u32,
    /// Start of each one-second bucket, seconds from t0.
    pub t_s: Vec<f64>,
    /// Completed responses per second (completed / interval_s); null for a last bucket
    /// shorter than `MIN_RATE_INTERVAL_S` (the drain), whose rate would be noise.
    pub rps: Vec<Option<f64>>,
    /// Median latency of the bucket, µs (null without responses).
    pub p50_us: Vec<Option<u64>>,
    /// 99th percentile of the bucket, µs.
    pub p99_us: Vec<Option<u64>>,
}

/// The server monitor's samples of one repetition.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Resources {
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetition shown.
    pub rep: u32,
    /// End of each sample's interval, seconds from t0.
    pub t_s: Vec<f64>,
    /// User CPU, percent of one core.
    pub user_pct: Vec<f64>,
    /// System CPU, percent of one core.
    pub sys_pct: Vec<f64>,
    /// Σ RSS of the process tree.
    pub rss_bytes: Vec<u64>,
    /// Threads of the process tree.
    pub threads: Vec<u64>,
}

/// Median, smallest and largest of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Spread {
    /// Smallest.
    pub min: f64,
    /// Median (mean of the two middle values for an even count).
    pub median: f64,
    /// Largest.
    pub max: f64,
}

impl Spread {
    /// The spread of `v`; None when it is empty.
    pub fn of(v: &[f64]) -> Option<Spread> {
        let median = super::model::median(v)?;
        Some(Spread {
            min: v.iter().copied().fold(f64::INFINITY, f64::min),
            median,
            max: v.iter().copied().fold(f64::NEG_INFINITY, f64::max),
        })
    }

    /// Whether two ranges overlap: then repetitions cannot tell the two apart.
    pub fn overlaps(&self, other: &Spread) -> bool {
        self.min <= other.max && other.min <= self.max
    }
}

/// One server's line of a scenario group, with everything the tables and charts need.
pub struct Row<'a> {
    /// The cells (every repetition).
    pub series: &'a Series<'a>,
    /// Index into `PageData::servers`.
    pub server: usize,
    /// The repetitions that finished, with their numbers.
    pub ok: Vec<(u32, &'a RunResult)>,
    /// req/s over `ok` (None when nothing finished).
    pub rps: Option<Spread>,
}

impl Row<'_> {
    /// The results that finished.
    pub fn results(&self) -> Vec<&RunResult> {
        self.ok.iter().map(|(_, r)| *r).collect()
    }

    /// The repetition with the median throughput: the one the over-time charts show.
    pub fn representative(&self) -> Option<(u32, &RunResult)> {
        let mut v = self.ok.clone();
        v.sort_by(|a, b| a.1.throughput_rps.total_cmp(&b.1.throughput_rps));
        v.get(v.len().saturating_sub(1) / 2).copied()
    }

    /// Cells that did not finish (failed, skipped, pending, interrupted).
    pub fn failures(&self) -> Vec<&Cell> {
        self.series
            .cells
            .iter()
            .copied()
            .filter(|c| c.status != CellStatus::Ok)
            .collect()
    }
}

/// A scenario group: its label and one row per server.
pub struct Group<'a> {
    /// `scenario axes`.
    pub label: String,
    /// One row per server.
    pub rows: Vec<Row<'a>>,
}

/// The report's groups and the data the charts draw.
pub struct Page<'a> {
    /// Scenario groups in order of first appearance.
    pub groups: Vec<Group<'a>>,
    /// The JSON the script reads.
    pub data: PageData,
}

impl<'a> Page<'a> {
    /// Groups a report's series (`Report::series`) by scenario and computes the chart data.
    pub fn of(series: &'a [Series<'a>]) -> Page<'a> {
        let mut servers: Vec<String> = Vec::new();
        let mut groups: Vec<Group> = Vec::new();
        for s in series {
            let server = match servers.iter().position(|n| *n == s.server) {
                Some(i) => i,
                None => {
                    servers.push(s.server.clone());
                    servers.len() - 1
                }
            };
            let ok: Vec<(u32, &RunResult)> = s
                .cells
                .iter()
                .filter(|c| c.status == CellStatus::Ok)
                .filter_map(|c| c.result.as_ref().map(|r| (c.rep, r)))
                .collect();
            let rps = Spread::of(&ok.iter().map(|(_, r)| r.throughput_rps).collect::<Vec<_>>());
            let row = Row {
                series: s,
                server,
                ok,
                rps,
            };
            match groups.iter_mut().find(|g| g.label == s.label) {
                Some(g) => g.rows.push(row),
                None => groups.push(Group {
                    label: s.label.clone(),
                    rows: vec![row],
                }),
            }
        }
        let data = PageData {
            servers,
            groups: groups.iter().map(group_data).collect(),
        };
        Page { groups, data }
    }
}

fn group_data(g: &Group) -> GroupData {
    let mut d = GroupData::default();
    for row in &g.rows {
        let results = row.results();
        if results.is_empty() {
            continue;
        }
        let corrected = merged(&results, |r| &r.latency_hdr);
        let service = merged(&results, |r| &r.service_time_hdr);
        if let Some((h, runs)) = &corrected {
            let pts = percentile_points(h);
            if !pts.is_empty() {
                d.hdr
                    .push(hdr_line(row.server, false, h.len(), *runs, &pts));
                // Closed loop with keep-alive records the same histogram twice: draw it once.
                if let Some((sh, sruns)) = &service {
                    let spts = percentile_points(sh);
                    if !spts.is_empty() && spts != pts {
                        d.hdr
                            .push(hdr_line(row.server, true, sh.len(), *sruns, &spts));
                    }
                }
            }
        }
        if let Some(rps) = row.rps {
            d.throughput.push(ThroughputBar {
                server: row.server,
                rps,
                runs: results.len(),
            });
        }
        if let Some((rep, r)) = row.representative() {
            if !r.timeseries.is_empty() {
                d.over_time.push(OverTime {
                    server: row.server,
                    rep,
                    t_s: r.timeseries.iter().map(|p| p.t_s as f64).collect(),
                    rps: r
                        .timeseries
                        .iter()
                        .map(|p| {
                            (p.interval_s >= MIN_RATE_INTERVAL_S)
                                .then(|| round1(p.completed as f64 / p.interval_s))
                        })
                        .collect(),
                    p50_us: r.timeseries.iter().map(|p| p.latency_p50_us).collect(),
                    p99_us: r.timeseries.iter().map(|p| p.latency_p99_us).collect(),
                });
            }
            // One sample is no line: a run shorter than two seconds gets the tables only.
            if let Some(s) = r.server.as_ref().filter(|s| s.samples.len() >= 2) {
                d.resources.push(Resources {
                    server: row.server,
                    rep,
                    t_s: s.samples.iter().map(|p| p.t_s).collect(),
                    user_pct: s.samples.iter().map(|p| p.cpu_user_pct).collect(),
                    sys_pct: s.samples.iter().map(|p| p.cpu_sys_pct).collect(),
                    rss_bytes: s.samples.iter().map(|p| p.rss_bytes).collect(),
                    threads: s.samples.iter().map(|p| p.threads).collect(),
                });
            }
        }
    }
    d
}

fn hdr_line(server: usize, service: bool, count: u64, runs: usize, pts: &[(f64, u64)]) -> HdrLine {
    HdrLine {
        server,
        service,
        count,
        runs,
        x: pts.iter().map(|p| p.0).collect(),
        y_us: pts.iter().map(|p| p.1).collect(),
    }
}

/// Adds up the histograms of several repetitions (lossless: counts per bucket add). A
/// histogram that cannot be decoded is left out; the number merged is returned with the sum.
pub fn merged(results: &[&RunResult], hdr: impl Fn(&RunResult) -> &str) -> Option<(Hist, usize)> {
    let decoded: Vec<Hist> = results.iter().filter_map(|r| decode(hdr(r)).ok()).collect();
    (!decoded.is_empty()).then(|| (histogram::sum(&decoded), decoded.len()))
}

/// Buckets shorter than this (the drain after the send window) get no rate: a few responses
/// in a few milliseconds would plot as a spike or a cliff.
const MIN_RATE_INTERVAL_S: f64 = 0.5;

/// Points per nine on the percentile plot's x axis (x = 1 is 90%, x = 2 is 99%, ...).
const STEPS_PER_NINE: u32 = 20;
/// The fixed grid stops at six nines (99.9999%); a longer tail is one segment to the max.
const GRID_NINES: f64 = 6.0;

/// The percentile curve of `h` on the "nines" scale: points (x, value µs) with
/// x = −log10(1 − q) on a fixed grid of `STEPS_PER_NINE` points per nine, ending with the max.
///
/// A histogram of n values cannot tell quantiles above 1 − 1/n apart from the max, so the grid
/// stops below x = log10(n) and the max is placed there, where it belongs on this scale.
pub fn percentile_points(h: &Hist) -> Vec<(f64, u64)> {
    let n = h.len();
    if n == 0 {
        return Vec::new();
    }
    let resolvable = (n as f64).log10();
    let mut pts = Vec::new();
    for i in 0.. {
        // Division rather than repeated addition keeps x = 1, 2, ... exact.
        let x = f64::from(i) / f64::from(STEPS_PER_NINE);
        // Compared as rounded, so a grid point never lands on the max's x.
        if round3(x) >= round3(resolvable) || x > GRID_NINES {
            break;
        }
        let q = 1.0 - 10f64.powf(-x);
        pts.push((round3(x), h.value_at_quantile(q)));
    }
    pts.push((round3(resolvable), h.max()));
    pts
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

/// Escapes text for HTML element content and quoted attribute values.
pub fn escape_html(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c => o.push(c),
        }
    }
    o
}

/// JSON safe inside a `<script>` element: `<`, `>` and `&` become `\u003c`-style escapes, so
/// neither `</script>` nor `<!--` can end or change the element, and U+2028/U+2029 are escaped
/// for older JavaScript parsers. JSON.parse reads the escapes back to the same text.
pub fn script_json<T: Serialize>(v: &T) -> String {
    let text = serde_json::to_string(v).expect("the page data serializes");
    let mut o = String::with_capacity(text.len() + 64);
    for ch in text.chars() {
        match ch {
            '<' => o.push_str("\\u003c"),
            '>' => o.push_str("\\u003e"),
            '&' => o.push_str("\\u0026"),
            '\u{2028}' => o.push_str("\\u2028"),
            '\u{2029}' => o.push_str("\\u2029"),
            c => o.push(c),
        }
    }
    o
}

/// Replaces each `{{name}}` of `template` with its value, in one pass: values are never scanned
/// for placeholders, so data that happens to contain `{{js}}` stays text.
///
/// Panics on an unknown or unclosed placeholder: the template is compiled in, so that is a bug
/// every test catches.
pub fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out =
        String::with_capacity(template.len() + values.iter().map(|v| v.1.len()).sum::<usize>());
    let mut rest = template;
    while let Some(start) = rest.find("{{") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let end = after
            .find("}}")
            .expect("unclosed placeholder in the template");
        let name = &after[..end];
        let value = values
            .iter()
            .find(|(k, _)| *k == name)
            .unwrap_or_else(|| panic!("no value for placeholder {{{{{name}}}}}"));
        out.push_str(value.1);
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::result::Warning;
    use crate::stats::histogram::new_hist;
    use std::path::Path;

    fn fixture(name: &str) -> Report {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/report");
        Report::load(&[dir.join(name)]).expect("fixture loads")
    }

    fn hist(values: impl IntoIterator<Item = u64>) -> Hist {
        let mut h = new_hist();
        for v in values {
            h.record(v).unwrap();
        }
        h
    }

    #[test]
    fn percentile_points_on_the_nines_scale() {
        let h = hist(1..=1000);
        let pts = percentile_points(&h);
        // 1000 values resolve three nines: 60 grid points below x = 3, then the max at 3.
        assert_eq!(pts.len(), 61);
        assert_eq!(pts[0], (0.0, 1));
        assert_eq!(pts[20], (1.0, 900));
        assert_eq!(pts[40], (2.0, 990));
        assert_eq!(*pts.last().unwrap(), (3.0, 1000));
        for w in pts.windows(2) {
            assert!(w[0].0 < w[1].0, "x increases: {w:?}");
            assert!(w[0].1 <= w[1].1, "latency never falls: {w:?}");
        }
        // q = 1 − 10^−1.5 ≈ 0.9684
        assert_eq!(pts[30].0, 1.5);
        assert_eq!(pts[30].1, h.value_at_quantile(1.0 - 10f64.powf(-1.5)));
    }

    #[test]
    fn percentile_points_edge_cases() {
        assert!(percentile_points(&new_hist()).is_empty());
        assert_eq!(percentile_points(&hist([42])), vec![(0.0, 42)]);
        // log10(31_643) = 4.50030: the grid point 4.5 would round onto the max's x.
        let pts = percentile_points(&hist(1..=31_643));
        assert_eq!(pts[pts.len() - 2].0, 4.45);
        assert_eq!(*pts.last().unwrap(), (4.5, 31_647));
        // Ten million values: the grid stops at six nines and the max sits at x = 7.
        let mut h = new_hist();
        h.record_n(100, 10_000_000 - 1).unwrap();
        h.record(5_000).unwrap();
        let pts = percentile_points(&h);
        assert_eq!(pts.len(), 6 * 20 + 2);
        assert_eq!(pts[pts.len() - 2], (6.0, 100));
        assert_eq!(pts.last().unwrap().0, 7.0);
        assert_eq!(pts.last().unwrap().1, h.max());
    }

    #[test]
    fn repetitions_merge_by_adding_histograms() {
        let report = fixture("faults");
        let series = report.series();
        let page = Page::of(&series);
        let g = &page.groups[0];
        let row = g
            .rows
            .iter()
            .find(|r| r.series.server == "volley-serve")
            .unwrap();
        assert_eq!(row.ok.len(), 2);
        let (h, runs) = merged(&row.results(), |r| &r.latency_hdr).unwrap();
        assert_eq!(runs, 2);
        let completed: u64 = row.results().iter().map(|r| r.requests.completed).sum();
        assert_eq!(h.len(), completed, "counts add up");
        let line = page.data.groups[0]
            .hdr
            .iter()
            .find(|l| l.server == row.server && !l.service)
            .unwrap();
        assert_eq!(line.count, completed);
        assert_eq!(*line.y_us.last().unwrap(), h.max());
        // Closed loop with keep-alive: the service time is the same curve and is not repeated.
        assert!(page.data.groups[0].hdr.iter().all(|l| !l.service));
    }

    #[test]
    fn spread_median_min_max() {
        let s = Spread::of(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        let s = Spread::of(&[4.0, 1.0, 2.0, 10.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 3.0, 10.0));
        assert!(Spread::of(&[]).is_none());
        let a = Spread::of(&[1.0, 2.0]).unwrap();
        assert!(a.overlaps(&Spread::of(&[2.0, 5.0]).unwrap()));
        assert!(!a.overlaps(&Spread::of(&[2.5, 5.0]).unwrap()));
    }

    #[test]
    fn representative_repetition_has_the_median_throughput() {
        let report = fixture("faults");
        let series = report.series();
        let page = Page::of(&series);
        for g in &page.groups {
            for row in g.rows.iter().filter(|r| r.ok.len() == 2) {
                let (rep, r) = row.representative().unwrap();
                let lower = row
                    .ok
                    .iter()
                    .map(|(_, r)| r.throughput_rps)
                    .fold(f64::INFINITY, f64::min);
                assert_eq!(r.throughput_rps, lower, "even count: the lower middle");
                assert!(row.ok.iter().any(|(n, _)| *n == rep));
            }
        }
    }

    #[test]
    fn script_json_cannot_close_the_script_element() {
        let data = vec!["</script><script>alert(1)</script>", "<!--", "a\u{2028}b&c"];
        let s = script_json(&data);
        assert!(!s.contains('<') && !s.contains('>') && !s.contains('&'));
        assert!(!s.contains('\u{2028}'));
        let back: Vec<String> = serde_json::from_str(&s).unwrap();
        assert_eq!(back, data, "the escapes read back to the same text");
    }

    #[test]
    fn escape_html_escapes_all_five() {
        assert_eq!(
            escape_html(r#"<a href="x" title='y'>&</a>"#),
            "&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;"
        );
    }

    #[test]
    fn fill_does_not_expand_placeholders_inside_values() {
        let out = fill("<{{a}}|{{b}}>", &[("a", "{{b}}"), ("b", "x")]);
        assert_eq!(out, "<{{b}}|x>");
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

//! `volley compare … --html PATH`: the verdict page. The A-vs-B answer comes first — per pair
//! the metric, both medians, the change and the call, and per named request of a requests
//! file the same — then the report's own sections over the paired runs of both sides, A's and
//! B's series side by side in each scenario: percentile plots overlaid (each side's
//! repetitions' histograms added up), req/s with its range over the repetitions, the settings
//! and every number.
//!
//! Sides are named `A: <server>` and `B: <server>`; a single run file is named by its file
//! name (`A: v1`), not by the address it loaded, which changes from run to run.

use std::fmt::Write;
use std::path::Path;

use super::{Comparison, Endpoints, Pair};
use volley_model::result::identity::LoadKey;
use volley_report::html::{escape_html as esc, render_with};
use volley_report::model::{Cell, Report};

/// The verdict page of comparison `c` of reports `a` and `b` (as loaded from `c.a`, `c.b`).
pub fn render(c: &Comparison, a: &Report, b: &Report) -> String {
    let combined = combined(c, a, b);
    let mut lead = lead(c);
    lead += &repetitions(c, &combined);
    lead += &settings(&combined);
    // Where both sides were profiled: B's stacks against A's, per request.
    render_with(&combined, &lead, &mut |s| {
        super::profiles::sections(s, c, a, b)
    })
}

/// Per pair, each repetition's headline value as a dot, A above B on one axis: the noise is
/// visible next to the difference (inline SVG, no script).
fn repetitions(c: &Comparison, combined: &Report) -> String {
    let mut o = String::from(
        "<section id=\"ab-repetitions\"><h2>Every repetition</h2>\
         <p class=\"muted\">One dot per repetition that finished; the line is the median.</p>",
    );
    for p in &c.pairs {
        let m = p.judged.headline.metric;
        let side = |tag: &str| -> Vec<f64> {
            combined
                .cells
                .iter()
                .filter(|cell| cell.scenario == p.label && cell.server.starts_with(tag))
                .filter(|cell| cell.status == volley_model::result::CellStatus::Ok)
                .filter_map(|cell| cell.result.as_ref().and_then(|r| m.value(r)))
                .collect()
        };
        let (va, vb) = (side("A: "), side("B: "));
        let all: Vec<f64> = va.iter().chain(&vb).copied().collect();
        let (Some(lo), Some(hi)) = (
            all.iter().copied().reduce(f64::min),
            all.iter().copied().reduce(f64::max),
        ) else {
            continue;
        };
        let _ = write!(
            o,
            "<h3>{}: A {} · B {}: {} ({} is better; {} … {})</h3>",
            esc(&p.label),
            esc(&p.a_name),
            esc(&p.b_name),
            esc(m.label()),
            p.judged.headline.better,
            esc(&m.format(lo)),
            esc(&m.format(hi))
        );
        o += &dots(
            &[
                ("A", &va, p.judged.headline.a),
                ("B", &vb, p.judged.headline.b),
            ],
            lo,
            hi,
        );
    }
    o.push_str("</section>\n");
    o
}

/// An SVG strip: one row per side, a dot per value, a tick at the median.
fn dots(rows: &[(&str, &[f64], Option<f64>)], lo: f64, hi: f64) -> String {
    const W: f64 = 600.0;
    const ROW: f64 = 22.0;
    let x = |v: f64| 40.0 + (W - 60.0) * if hi > lo { (v - lo) / (hi - lo) } else { 0.5 };
    let mut o = format!(
        "<svg role=\"img\" width=\"{W}\" height=\"{}\" viewBox=\"0 0 {W} {}\">",
        ROW * rows.len() as f64 + 6.0,
        ROW * rows.len() as f64 + 6.0
    );
    for (k, (name, values, median)) in rows.iter().enumerate() {
        let y = ROW * k as f64 + 14.0;
        let colour = if k == 0 { "var(--c0)" } else { "var(--c1)" };
        let _ = write!(o, "<text x=\"4\" y=\"{}\">{name}</text>", y + 4.0);
        for v in values.iter() {
            let _ = write!(
                o,
                "<circle cx=\"{:.1}\" cy=\"{y}\" r=\"4\" fill=\"{colour}\" fill-opacity=\"0.7\"/>",
                x(*v)
            );
        }
        if let Some(m) = median {
            let _ = write!(
                o,
                "<line x1=\"{0:.1}\" x2=\"{0:.1}\" y1=\"{1}\" y2=\"{2}\" stroke=\"{colour}\" stroke-width=\"2\"/>",
                x(*m),
                y - 9.0,
                y + 9.0
            );
        }
    }
    o.push_str("</svg>");
    o
}

/// The settings of A's and B's first finished runs side by side, differences marked.
fn settings(combined: &Report) -> String {
    let first = |tag: &str| {
        combined
            .cells
            .iter()
            .filter(|c| c.server.starts_with(tag))
            .find_map(|c| c.result.as_ref())
    };
    let (Some(ra), Some(rb)) = (first("A: "), first("B: ")) else {
        return String::new();
    };
    let fields = |r: &volley_model::result::RunResult| -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = LoadKey::of_result(r)
            .fields()
            .iter()
            .map(|(n, v)| (n.to_string(), v.clone()))
            .collect();
        v.push(("volley".into(), r.volley_version.clone()));
        v.push(("cpu".into(), r.env.cpu_model.clone().unwrap_or_default()));
        v.push(("cores".into(), r.env.cores.to_string()));
        v.push(("client_cpus".into(), r.env.pinning.client_cpus.clone()));
        v.push((
            "server_cpus".into(),
            r.env.pinning.server_cpus.clone().unwrap_or_default(),
        ));
        v.push(("kernel".into(), r.env.kernel.clone().unwrap_or_default()));
        v
    };
    let (fa, fb) = (fields(ra), fields(rb));
    let mut o = String::from(
        "<section id=\"ab-settings\"><h2>Settings side by side</h2>\
         <table><thead><tr><th>setting</th><th>A</th><th>B</th></tr></thead><tbody>",
    );
    for (name, va) in &fa {
        let vb = fb
            .iter()
            .find(|(n, _)| n == name)
            .map_or("", |(_, v)| v.as_str());
        if va.is_empty() && vb.is_empty() {
            continue; // not set on either side (no rate in closed loop, ...)
        }
        let class = if va != vb { " class=\"bad\"" } else { "" };
        let _ = write!(
            o,
            "<tr{class}><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(name),
            esc(va),
            esc(vb)
        );
    }
    o.push_str("</tbody></table></section>\n");
    o
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
        capacity: Vec::new(),
    }
}

/// `A: go`, or for a single run file outside a results folder `A: v1` (the file's name
/// without `.json`).
fn side_name(side: &str, path: &str, server: &str, single_file: bool) -> String {
    // A run file outside a results folder is named after the address it loaded: the file's
    // name says more.
    if single_file && server.parse::<std::net::SocketAddr>().is_ok() {
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
        let m = p.judged.headline.metric;
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| m.format(v));
        let _ = write!(
            o,
            "<tr><td>{} · {}</td><td>{} ({} is better)</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&p.label),
            esc(&p.server),
            esc(m.label()),
            p.judged.headline.better,
            esc(&fmt(p.judged.headline.a)),
            esc(&fmt(p.judged.headline.b)),
            p.judged.headline.ratio.map_or("-".into(), |r| format!("{r:.3}")),
            p.judged.headline
                .change_pct
                .map_or("-".into(), |v| format!("{v:+.1}%")),
            esc(&call(p)),
        );
    }
    o.push_str("</tbody></table>");
    for p in &c.pairs {
        if let Some(e) = &p.endpoints {
            by_request(&mut o, p, e);
        }
    }
    o.push_str("</section>\n");
    o
}

/// A pair's named requests: a table of the pair's metric per request, with the call, and the
/// names one side only has.
fn by_request(o: &mut String, p: &Pair, e: &Endpoints) {
    let m = p.judged.headline.metric;
    let _ = write!(
        o,
        "<h3>By request: {} · {} vs {} ({}, {} is better)</h3>",
        esc(&p.label),
        esc(&p.a_name),
        esc(&p.b_name),
        esc(m.label()),
        p.judged.headline.better
    );
    if !e.endpoints.is_empty() {
        o.push_str("<table class=\"ab-requests\"><thead><tr>");
        for h in [
            "request",
            "method and path",
            "A",
            "B",
            "B/A",
            "change",
            "verdict",
        ] {
            let _ = write!(o, "<th>{h}</th>");
        }
        o.push_str("</tr></thead><tbody>");
        for x in &e.endpoints {
            let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| m.format(v));
            let _ = write!(
                o,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&x.name),
                esc(&format!("{} {}", x.method, x.path)),
                esc(&fmt(x.judged.headline.a)),
                esc(&fmt(x.judged.headline.b)),
                x.judged.headline.ratio.map_or("-".into(), |r| format!("{r:.3}")),
                x.judged.headline
                    .change_pct
                    .map_or("-".into(), |v| format!("{v:+.1}%")),
                esc(&super::table::verdict_text(
                    &super::table::Call::of_endpoint(x),
                    super::Layout::Fitted
                )),
            );
        }
        o.push_str("</tbody></table>");
    }
    let only: Vec<String> = [("A", &e.endpoints_only_in_a), ("B", &e.endpoints_only_in_b)]
        .iter()
        .flat_map(|(side, list)| {
            list.iter().map(move |u| {
                format!(
                    "<li>only in {side}: {} ({})</li>",
                    esc(&u.name),
                    esc(&format!("{} {}", u.method, u.path))
                )
            })
        })
        .collect();
    if !only.is_empty() {
        let _ = write!(o, "<ul>{}</ul>", only.concat());
    }
}

/// `get · go: req/s −19.0 %: 19.0% slower, 95% CI 12.0–25.0% (p=0.0079)`.
fn sentence(p: &Pair) -> String {
    let change = p
        .judged
        .headline
        .change_pct
        .map_or(String::new(), |v| format!(" {v:+.1} % by the medians"));
    format!(
        "{} · {} vs {}: {}{change}: {}",
        p.label,
        p.a_name,
        p.b_name,
        p.judged.headline.metric.label(),
        call(p)
    )
}

/// The verdict column: the call with the shift, its interval and the p-value, as the table
/// of `volley compare` says it.
fn call(p: &Pair) -> String {
    super::table::verdict_text(&super::table::Call::of_pair(p), super::Layout::Fitted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{compare, Options};
    use std::path::PathBuf;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../tests/fixtures/report")
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
        assert!(html.contains("<circle"), "a dot per repetition");
        assert!(html.contains("id=\"ab-settings\""));
        assert!(
            !html.contains("<tr class=\"bad\">"),
            "the same results: nothing differs"
        );
    }

    #[test]
    fn named_requests_are_called_in_the_answer() {
        let a = Report::load(&[fixture("mix.json")]).unwrap();
        let mut b = a.clone();
        let r = b.cells[0].result.as_mut().unwrap();
        r.endpoints[1].requests.completed /= 2;
        r.endpoints[2].name = "<b>gone</b>".into();
        let c = compare(("a.json", &a), ("b.json", &b), Options::default()).unwrap();
        let html = render(&c, &a, &b);
        let answer = &html[..html.find("id=\"ab-repetitions\"").unwrap()];
        assert!(
            answer.contains("<h3>By request: run · 127.0.0.1:18383 vs 127.0.0.1:18383 (req/s, higher is better)</h3>"),
            "{answer}"
        );
        assert!(
            answer.contains("<tr><td>post</td><td>POST /</td><td>16,835.6</td><td>8,417.5</td><td>0.500</td><td>-50.0%</td><td>cannot be called (n=1/1)</td></tr>"),
            "{answer}"
        );
        assert!(answer.contains("<li>only in A: missing (GET /nope/{rand:1..5})</li>"));
        assert!(
            answer.contains("<li>only in B: &lt;b&gt;gone&lt;/b&gt; (GET /nope/{rand:1..5})</li>")
        );
        assert!(!html.contains("<b>gone"), "names are escaped");
        // Both sides' requests are drawn on the report's sections.
        assert_eq!(html.matches("data-chart=\"endpoints\"").count(), 1);
    }

    #[test]
    fn single_run_files_are_named_by_their_file() {
        assert_eq!(
            side_name("A", "/r/v1.json", "127.0.0.1:8080", true),
            "A: v1"
        );
        assert_eq!(side_name("B", "/r/out", "go", false), "B: go");
        assert_eq!(
            side_name("A", "/r/runs/go__get__r1.json", "go", true),
            "A: go"
        );
    }
}

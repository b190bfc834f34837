//! Flame graphs on the HTML page. The Rust side computes the bounded call tree into
//! [`FlameData`] (names interned in a string table, the nodes as flat rows), which travels in
//! the page's JSON block (`PageData::flames`), and writes each section's markup: title,
//! search box, reset button, the graph's container, a caption, a table. The page's script
//! (`assets/flame.js`) draws the boxes as positioned `<div>`s whose names are their text.
//!
//! A profile's section: the graph and the functions with the most self CPU per request. An
//! off-CPU profile's (`--profile-off-cpu`): the same graph over µs of waiting instead of
//! samples, and the functions the threads blocked in. A diff's: the graph of B, each box coloured by its change against A on the same call path,
//! and the largest changes per function.

use std::fmt::Write;

use serde::Serialize;

use super::diff::{diff, FunctionDiff};
use super::top::{top, FunctionCost};
use super::tree::Tree;
use super::{signed_us, us, Profile};
use crate::escape::escape_html as esc;
use volley_model::units::thousands;

/// The share of the samples under which a call path is merged into its caller's `[other]`
/// box, per mille: 0.1 %.
pub const MIN_PER_MILLE: u64 = 1;

/// Rows of a section's table.
const TABLE_ROWS: usize = 15;

/// What an off-CPU graph counts.
const OFF_CPU_UNIT: &str = "µs of waiting";

/// What the page's script draws for one flame graph.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlameData {
    /// Every name the nodes use, once; node 0's is `all`.
    pub names: Vec<String>,
    /// `[name, parent, total, self]` per node: an index into `names`, the caller's node (the
    /// root, node 0, is its own), samples on the path and below it, samples ending on it.
    /// Parents come before their children, siblings in the order drawn.
    pub nodes: Vec<[u64; 4]>,
    /// CPU µs per request one sample stands for (period ÷ requests; 0 without requests).
    pub us_per_sample: f64,
    /// Call paths merged into `[other]` boxes.
    pub merged: u64,
    /// A diff's: per node, its total CPU µs per request in B less A's on the same call path
    /// (absent for a profile).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change_us: Option<Vec<f64>>,
    /// What a count is when not a sample (an off-CPU graph's: `µs of waiting`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unit: Option<String>,
}

impl FlameData {
    /// The graph of one profile.
    pub fn profile(p: Profile) -> FlameData {
        FlameData::of(Tree::build(p.folded, MIN_PER_MILLE), p, None)
    }

    /// The graph of `b`, each node with its change against `a` per request.
    pub fn diff(a: Profile, b: Profile) -> FlameData {
        let tree = Tree::build(b.folded, MIN_PER_MILLE);
        let in_a = tree.totals_of(a.folded);
        let change = tree
            .nodes
            .iter()
            .zip(&in_a)
            .map(|(n, &was)| round4(b.us_per_request(n.total) - a.us_per_request(was)))
            .collect();
        FlameData::of(tree, b, Some(change))
    }

    /// The data of `tree`, a tree of `p`.
    fn of(tree: Tree, p: Profile, change_us: Option<Vec<f64>>) -> FlameData {
        FlameData {
            nodes: rows(&tree),
            us_per_sample: p.us_per_request(1),
            merged: tree.merged,
            names: tree.names,
            change_us,
            unit: None,
        }
    }
}

/// The tree's nodes as the rows the script reads.
fn rows(t: &Tree) -> Vec<[u64; 4]> {
    t.nodes
        .iter()
        .map(|n| [n.name as u64, n.parent as u64, n.total, n.own])
        .collect()
}

/// Four decimals of a µs: the page never shows more, and the JSON stays short.
fn round4(v: f64) -> f64 {
    (v * 1e4).round() / 1e4
}

/// Flame graph sections for one page and their data, kept in step: the `i`-th section draws
/// `data()[i]`, which must be the page's `PageData::flames` exactly.
#[derive(Debug, Clone, Default)]
pub struct Sections {
    html: String,
    data: Vec<FlameData>,
}

impl Sections {
    /// No sections yet.
    pub fn new() -> Sections {
        Sections::default()
    }

    /// Adds the section of one profile: its graph and the functions with the most self CPU.
    pub fn profile(&mut self, title: &str, p: Profile) -> &mut Sections {
        let d = FlameData::profile(p);
        let k = self.data.len();
        open(&mut self.html, k, title);
        let _ = writeln!(
            self.html,
            "<p class=\"flame-caption\">Each box is a function on the stack, its callers \
             above it; the top box is every sample. Width = share of the {} samples = CPU µs \
             per request (the whole width: {} µs/req over {} requests). {}</p>",
            thousands(p.folded.total()),
            us(p.us_per_request(p.folded.total())),
            thousands(p.requests),
            how_to_read(&d)
        );
        top_table(
            &mut self.html,
            "Functions with the most CPU of their own per request",
            &top(p.folded, p.period_us, p.requests, TABLE_ROWS),
        );
        self.html.push_str("</section>\n");
        self.data.push(d);
        self
    }

    /// Adds the section of an off-CPU profile (counts: µs of waiting, so `p.period_us` 1):
    /// its graph and `top`, the functions the threads blocked in (the RunResult's
    /// `server.profile.off_cpu.top`).
    pub fn off_cpu(&mut self, title: &str, p: Profile, top: &[FunctionCost]) -> &mut Sections {
        let mut d = FlameData::profile(p);
        d.unit = Some(OFF_CPU_UNIT.into());
        let k = self.data.len();
        open(&mut self.html, k, title);
        let _ = writeln!(
            self.html,
            "<p class=\"flame-caption\">Each box is a function on the stack a thread waited \
             with (it switched off the CPU there: blocked, or under <code>[preempted]</code> \
             when it was runnable but another thread ran), its callers above it; the top box \
             is every wait. Width = share of the {} ms waited = µs of waiting per request (the \
             whole width: {} µs/req over {} requests). Counts are µs of waiting, not samples. \
             {}</p>",
            us(p.folded.total() as f64 / 1000.0),
            us(p.us_per_request(p.folded.total())),
            thousands(p.requests),
            how_to_read(&d)
        );
        top_table(
            &mut self.html,
            "Functions the threads blocked in most, µs of waiting per request (kernel frames left out)",
            top,
        );
        self.html.push_str("</section>\n");
        self.data.push(d);
        self
    }

    /// Adds the section of a diff: the graph of `b` coloured by its change against `a` per
    /// request, and the functions whose CPU per request changed the most.
    pub fn diff(&mut self, title: &str, a: Profile, b: Profile) -> &mut Sections {
        let d = FlameData::diff(a, b);
        let k = self.data.len();
        open(&mut self.html, k, title);
        let _ = writeln!(
            self.html,
            "<p class=\"flame-caption\">The flame graph of B, each box coloured by how its CPU \
             per request (its own and its callees') changed against A on the same call path: \
             <span class=\"flame-grew\">red grew</span>, <span class=\"flame-shrank\">blue \
             shrank</span>, the deeper the colour the larger the change. Width = B's share of \
             its {} samples = CPU µs per request in B ({} µs/req in A, {} in B); call paths \
             only A had are not drawn, the table counts them. {}</p>",
            thousands(b.folded.total()),
            us(a.us_per_request(a.folded.total())),
            us(b.us_per_request(b.folded.total())),
            how_to_read(&d)
        );
        let changes: Vec<FunctionDiff> = diff(a, b).largest(TABLE_ROWS).cloned().collect();
        diff_table(&mut self.html, &changes);
        self.html.push_str("</section>\n");
        self.data.push(d);
        self
    }

    /// The sections' markup.
    pub fn html(&self) -> &str {
        &self.html
    }

    /// What the sections draw, in order: the page's `PageData::flames`.
    pub fn data(&self) -> &[FlameData] {
        &self.data
    }

    /// The markup and the data.
    pub fn into_parts(self) -> (String, Vec<FlameData>) {
        (self.html, self.data)
    }
}

/// The section's title, tools and the graph's container.
fn open(o: &mut String, k: usize, title: &str) {
    let _ = write!(
        o,
        "<section class=\"flame-section\" id=\"flame{k}\"><h3>{}</h3>\n\
         <div class=\"flame-tools\"><label>Search <input type=\"search\" class=\"flame-search\" \
         placeholder=\"function name\" autocomplete=\"off\"></label>\
         <button type=\"button\" class=\"flame-reset\" disabled>Reset zoom</button>\
         <span class=\"flame-matched\" aria-live=\"polite\"></span></div>\n\
         <div class=\"flame\" data-flame=\"{k}\"></div>\n",
        esc(title)
    );
}

/// The caption's second half: how to use the graph, and what was merged.
fn how_to_read(d: &FlameData) -> String {
    let merged = if d.merged == 0 {
        String::new()
    } else {
        format!(
            " ({} paths merged here; the search sees only the boxes drawn)",
            thousands(d.merged)
        )
    };
    format!(
        "Click a box to zoom into it, <em>Reset zoom</em> to go back; hover for its samples, \
         µs/request and share; the search box highlights the functions whose name holds the \
         text and states their share of the samples. Call paths under {} % of the samples \
         are merged into one <code>[other]</code> box per caller{merged}.",
        MIN_PER_MILLE as f64 / 10.0
    )
}

/// A sortable table's head.
fn thead(o: &mut String, caption: &str, cols: &[&str]) {
    let _ = write!(
        o,
        "<div class=\"wide\"><table class=\"sortable flame-table\"><caption>{caption}</caption><thead><tr>"
    );
    for c in cols {
        let _ = write!(o, "<th>{c}</th>");
    }
    o.push_str("</tr></thead><tbody>\n");
}

/// A number cell sorting by `v`.
fn num(o: &mut String, v: f64, text: &str) {
    let _ = write!(o, "<td class=\"n\" data-v=\"{v}\">{text}</td>");
}

/// The functions with the most self cost per request, under `caption`.
fn top_table(o: &mut String, caption: &str, costs: &[FunctionCost]) {
    thead(
        o,
        caption,
        &[
            "function",
            "self µs/req",
            "self %",
            "total µs/req",
            "total %",
        ],
    );
    for c in costs {
        let _ = write!(o, "<tr><td><code>{}</code></td>", esc(&c.name));
        let per = |v: Option<f64>| (v.unwrap_or(0.0), v.map_or("-".into(), us));
        let (v, t) = per(c.self_us_per_request);
        num(o, v, &t);
        num(o, c.self_pct, &format!("{:.1} %", c.self_pct));
        let (v, t) = per(c.total_us_per_request);
        num(o, v, &t);
        num(o, c.total_pct, &format!("{:.1} %", c.total_pct));
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}

/// The functions whose CPU per request changed the most.
fn diff_table(o: &mut String, changes: &[FunctionDiff]) {
    thead(
        o,
        "The largest changes of CPU per request, B against A",
        &[
            "function",
            "total change µs/req",
            "A total",
            "B total",
            "self change µs/req",
        ],
    );
    for f in changes {
        let class = match f.total_change_us_per_request {
            v if v > 0.0 => "bad",
            v if v < 0.0 => "good",
            _ => "",
        };
        let _ = write!(
            o,
            "<tr class=\"{class}\"><td><code>{}</code></td>",
            esc(&f.name)
        );
        let t = f.total_change_us_per_request;
        num(o, t, &signed_us(t));
        num(o, f.a_total_us_per_request, &us(f.a_total_us_per_request));
        num(o, f.b_total_us_per_request, &us(f.b_total_us_per_request));
        let s = f.self_change_us_per_request;
        num(o, s, &signed_us(s));
        o.push_str("</tr>\n");
    }
    o.push_str("</tbody></table></div>\n");
}

/// The flame graph of every profiled run of `report` whose stacks were read (a file that
/// does not parse is left out: its summary still has the functions).
pub(crate) fn of_report(report: &crate::Report) -> Sections {
    let mut s = Sections::new();
    for c in &report.cells {
        let (Some(text), Some(r)) = (&c.folded, &c.result) else {
            continue;
        };
        let Some(p) = r.server.as_ref().and_then(|s| s.profile.as_ref()) else {
            continue;
        };
        let Ok(f) = super::Folded::parse(text) else {
            continue;
        };
        // The CPU one sample stood for, from the sampled total when there is one.
        let period_us = match p.cpu_us_per_request {
            Some(per) if p.samples > 0 => per * r.requests.completed as f64 / p.samples as f64,
            _ => 1e6 / p.frequency_hz.max(1) as f64,
        };
        let rep = if c.rep > 1 {
            format!(" (repetition {})", c.rep)
        } else {
            String::new()
        };
        let title = format!("Where {}'s CPU went{rep}", c.server);
        s.profile(&title, Profile::new(&f, period_us, r.requests.completed));
        let off = p.off_cpu.as_ref().zip(c.off_cpu_folded.as_ref());
        let Some((f, off)) = off.and_then(|(o, t)| Some((super::Folded::parse(t).ok()?, o))) else {
            continue;
        };
        let title = format!("Where {}'s threads waited (off-CPU){rep}", c.server);
        s.off_cpu(
            &title,
            Profile::new(&f, 1.0, r.requests.completed),
            &off.top,
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use super::super::Folded;
    use super::*;

    const EVIL: &str = "</script><img src=x onerror=alert(1)>";

    fn folded(text: &str) -> Folded {
        Folded::parse(text).unwrap()
    }

    #[test]
    fn a_huge_profile_is_drawn_bounded() {
        // 5,000 distinct leaves of 1 sample beside one of 95,000: each leaf is 0.001 %.
        let mut text = String::from("srv;main;burn 95000\n");
        for i in 0..5000 {
            let _ = writeln!(text, "srv;main;leaf_{i};deeper 1");
        }
        let f = folded(&text);
        let d = FlameData::profile(Profile::new(&f, 2004.0, 1000));
        let names: Vec<&str> = d
            .nodes
            .iter()
            .map(|n| d.names[n[0] as usize].as_str())
            .collect();
        assert_eq!(
            names,
            ["all", "srv", "main", "burn", "[other: 5000 below 0.1 %]"]
        );
        assert_eq!(d.nodes[4], [4, 2, 5000, 5000]);
        assert_eq!(d.merged, 5000);
        assert!((d.us_per_sample - 2.004).abs() < 1e-12);
        let mut s = Sections::new();
        s.profile("burn", Profile::new(&f, 2004.0, 1000));
        assert!(s
            .html()
            .contains("(5,000 paths merged here; the search sees only the boxes drawn)"));
        assert!(s
            .html()
            .contains("merged into one <code>[other]</code> box per caller"));
    }

    #[test]
    fn hostile_names_stay_text_in_the_markup_and_the_data() {
        let text = format!("srv;{EVIL} 5\nsrv;a|b 3\nsrv;say \"hi\" 'there' 2\n");
        let f = folded(&text);
        let mut s = Sections::new();
        s.profile(EVIL, Profile::new(&f, 1000.0, 10));
        s.diff(
            "a|b \"quoted\"",
            Profile::new(&f, 1000.0, 10),
            Profile::new(&f, 1000.0, 20),
        );
        // The sections' markup (the page around it: `html::flame_page`'s own test).
        let html = s.html().to_string();
        let data = serde_json::json!({ "flames": s.data() });
        assert!(!html.contains("<img"), "a name became markup");
        assert!(html
            .contains("<td><code>&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;</code></td>"));
        assert!(html.contains("<h3>a|b &quot;quoted&quot;</h3>"));
        assert!(html.contains("<code>say &quot;hi&quot; &#39;there&#39;</code>"));
        let names = &data["flames"][0]["names"];
        for want in [EVIL, "a|b", "say \"hi\" 'there'"] {
            assert!(
                names.as_array().unwrap().iter().any(|n| n == want),
                "{want} in {names}"
            );
        }
    }

    #[test]
    fn a_diff_colours_each_path_by_its_change_per_request() {
        let a = folded("srv;main;burn 600\nsrv;main;serialize_json 120\nsrv;main;gone 80\n");
        let b = folded("srv;main;burn 1200\nsrv;main;serialize_json 322\n");
        let d = FlameData::diff(
            Profile::new(&a, 1000.0, 10_000),
            Profile::new(&b, 1000.0, 20_000),
        );
        let change = d.change_us.as_ref().unwrap();
        let by_name = |n: &str| {
            let i = d
                .nodes
                .iter()
                .position(|r| d.names[r[0] as usize] == n)
                .unwrap();
            change[i]
        };
        assert_eq!(by_name("serialize_json"), 4.1);
        assert_eq!(by_name("burn"), 0.0);
        // `gone` (8 µs/req in A) is not drawn: its callers carry its loss.
        assert_eq!(by_name("main"), -3.9);
        assert_eq!(by_name("all"), -3.9);
        let mut s = Sections::new();
        s.diff(
            "v1 → v2",
            Profile::new(&a, 1000.0, 10_000),
            Profile::new(&b, 1000.0, 20_000),
        );
        let html = s.html();
        let first = &html[html.find("<tbody>").unwrap()..];
        let first = &first[..first.find("</tr>").unwrap()];
        assert!(
            first.contains("<code>gone</code>"),
            "the largest change leads: {first}"
        );
        assert!(
            html.contains("<td class=\"n\" data-v=\"4.1"),
            "serialize_json's change"
        );
        assert!(html.contains(">+4.1</td>"));
        assert_eq!(s.data().len(), 1);
        assert!(html.contains("data-flame=\"0\""));
    }

    #[test]
    fn an_off_cpu_graph_counts_microseconds_of_waiting() {
        // 3 ms waited over 1,000 requests: 3 µs a request.
        let f =
            folded("srv;main;wait_io;schedule_[k] 2500\nsrv;[preempted];main;schedule_[k] 500\n");
        let wait_io = FunctionCost {
            name: "wait_io".into(),
            self_samples: 2500,
            total_samples: 2500,
            self_us_per_request: Some(2.5),
            total_us_per_request: Some(2.5),
            self_pct: 100.0,
            total_pct: 100.0,
        };
        let mut s = Sections::new();
        s.off_cpu("waits", Profile::new(&f, 1.0, 1000), &[wait_io]);
        let d = &s.data()[0];
        assert_eq!(d.unit.as_deref(), Some("µs of waiting"));
        assert!((d.us_per_sample - 0.001).abs() < 1e-12);
        let json = serde_json::to_string(d).unwrap();
        assert!(json.contains("\"unit\":\"µs of waiting\""));
        let html = s.html();
        assert!(
            html.contains("the whole width: 3.0 µs/req over 1,000 requests"),
            "{html}"
        );
        assert!(html.contains("<td><code>wait_io</code></td><td class=\"n\" data-v=\"2.5\">"));
        // A CPU profile's data says nothing of units: the script's default, samples.
        let mut s = Sections::new();
        s.profile("cpu", Profile::new(&f, 1.0, 1000));
        assert!(!serde_json::to_string(&s.data()[0])
            .unwrap()
            .contains("unit"));
    }

    #[test]
    fn sections_and_data_stay_in_step() {
        let f = folded("srv;burn 1\n");
        let mut s = Sections::new();
        s.profile("one", Profile::new(&f, 1.0, 1))
            .diff("two", Profile::new(&f, 1.0, 1), Profile::new(&f, 1.0, 1))
            .profile("three", Profile::new(&f, 1.0, 1));
        for k in 0..3 {
            assert_eq!(s.html().matches(&format!("data-flame=\"{k}\"")).count(), 1);
        }
        let (html, data) = s.into_parts();
        assert_eq!(data.len(), 3);
        assert!(data[1].change_us.is_some() && data[2].change_us.is_none());
        assert_eq!(html.matches("class=\"flame-search\"").count(), 3);
        assert_eq!(html.matches("class=\"flame-reset\"").count(), 3);
    }
}

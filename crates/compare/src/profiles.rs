//! Why B differs from A, where both sides were profiled (`--profile`): per pair, the first
//! run of each side whose folded stacks were read, compared per request (`report::flame`:
//! the functions whose own CPU per request changed the most first) — a table after the
//! verdict's, and a differential flame graph on the verdict page.

use volley_report::flame::{self, Folded, Profile, Sections};
use volley_report::model::{Cell, Report};

use super::{Comparison, Pair};

/// Functions the terminal lists per pair.
const SHOWN: usize = 8;

/// One pair's two profiles, parsed.
pub(crate) struct Profiled {
    /// The pair's label and server (A's).
    pub title: String,
    a: (Folded, f64, u64),
    b: (Folded, f64, u64),
}

impl Profiled {
    fn side(&self, b: bool) -> Profile<'_> {
        let (f, period, requests) = if b { &self.b } else { &self.a };
        Profile::new(f, *period, *requests)
    }
}

/// The first cell of the series `label`/`server` of `r` with readable stacks: the folded
/// stacks, the CPU one sample stood for (µs) and the completed requests.
fn profiled(r: &Report, label: &str, server: &str) -> Option<(Folded, f64, u64)> {
    let series = r.series();
    let s = series
        .iter()
        .find(|s| s.label == label && s.server == server)?;
    s.cells.iter().find_map(|c: &&Cell| {
        let result = c.result.as_ref()?;
        let p = result.server.as_ref()?.profile.as_ref()?;
        let f = Folded::parse(c.folded.as_ref()?).ok()?;
        let requests = result.requests.completed;
        let period = match p.cpu_us_per_request {
            Some(per) if p.samples > 0 => per * requests as f64 / p.samples as f64,
            _ => 1e6 / p.frequency_hz.max(1) as f64,
        };
        Some((f, period, requests))
    })
}

/// Every pair of `c` whose both sides were profiled.
pub(crate) fn pairs(c: &Comparison, a: &Report, b: &Report) -> Vec<Profiled> {
    c.pairs
        .iter()
        .filter_map(|p: &Pair| {
            let b_label = p.b_label.as_deref().unwrap_or(&p.label);
            let b_server = p.b_server.as_deref().unwrap_or(&p.server);
            Some(Profiled {
                title: format!("{} · {}", p.label, p.server),
                a: profiled(a, &p.label, &p.server)?,
                b: profiled(b, b_label, b_server)?,
            })
        })
        .collect()
}

/// The terminal's account: per profiled pair, the functions whose CPU per request changed
/// the most (empty without profiles on both sides).
pub fn why_text(c: &Comparison, a: &Report, b: &Report) -> String {
    let mut o = String::new();
    for p in pairs(c, a, b) {
        let d = flame::diff(p.side(false), p.side(true));
        o.push_str(&format!(
            "\nWhere the server's CPU per request changed, {} (profiles: {:.1} → {:.1} µs/req):\n",
            p.title, d.a_us_per_request, d.b_us_per_request
        ));
        o.push_str(&flame::diff_text(&d, SHOWN));
    }
    o
}

/// The verdict page's differential flame graphs, one per profiled pair.
pub(crate) fn sections(s: &mut Sections, c: &Comparison, a: &Report, b: &Report) {
    for p in pairs(c, a, b) {
        let title = format!("Where the CPU per request changed: {}", p.title);
        s.diff(&title, p.side(false), p.side(true));
    }
}

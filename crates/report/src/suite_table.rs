//! The table `volley bench` ends with: per scenario cell and server, the median over
//! repetitions of throughput, latency and server cost, with the throughput range.

use super::model::{median, Report, Series};
use volley_model::result::suite::SKIPPED_BY_INTERRUPT;
use volley_model::result::{CellStatus, Headline};
use volley_model::units::{bytes, micros, rate};

/// Columns of the table.
const HEADER: [&str; 10] = [
    "scenario", "server", "req/s", "min-max", "p50", "p99", "errors", "CPU/req", "RSS", "runs",
];

/// One line of the table, a cell per column.
type Line = [String; 10];

/// Renders the cells of a report as an aligned text table (empty when there are none).
pub fn render(report: &Report) -> String {
    let mut lines: Vec<Line> = Vec::new();
    let mut notes: Vec<(String, String)> = Vec::new();
    let mut unreached = Unreached::default();
    for series in report.series() {
        let skipped = series
            .cells
            .iter()
            .filter(|c| skipped_by_interrupt(c))
            .count();
        if skipped > 0 {
            unreached.cells += skipped;
            unreached
                .series
                .push(format!("{}×{}", series.server, series.label));
        }
        if skipped == series.cells.len() {
            continue;
        }
        let ok: Vec<Headline> = series.ok().into_iter().map(Headline::of).collect();
        let runs = format!("{}/{}", ok.len(), series.cells.len());
        lines.push(if ok.is_empty() {
            failed_line(&series, runs, &mut notes)
        } else {
            finished_line(&series, &ok, runs)
        });
    }
    let capacity = super::capacity::text::rankings_table(&report.capacity);
    if lines.is_empty() && unreached.cells == 0 {
        if capacity.is_empty() {
            return String::new();
        }
        return format!("\n{}\n{capacity}", environment(report));
    }
    let skipped = if unreached.cells > 0 {
        unreached.line()
    } else {
        String::new()
    };
    table(report, &lines, &notes, &skipped) + &capacity
}

/// Cells that Ctrl-C kept from running: one line under the table, not a row each.
#[derive(Default)]
struct Unreached {
    cells: usize,
    /// `server×scenario axes` of each series with such a cell.
    series: Vec<String>,
}

impl Unreached {
    /// Series named before the rest are counted.
    const NAMED: usize = 6;

    /// `skipped 84 cells (interrupted): go×get, go×post, … and 12 more`.
    fn line(&self) -> String {
        let named = self
            .series
            .iter()
            .take(Self::NAMED)
            .cloned()
            .collect::<Vec<_>>();
        let more = self.series.len().saturating_sub(Self::NAMED);
        format!(
            "skipped {} cell{} (interrupted): {}{}\n",
            self.cells,
            if self.cells == 1 { "" } else { "s" },
            named.join(", "),
            if more > 0 {
                format!(", … and {more} more")
            } else {
                String::new()
            }
        )
    }
}

/// A cell Ctrl-C kept from running.
fn skipped_by_interrupt(c: &super::model::Cell) -> bool {
    c.status == CellStatus::Skipped && c.reason.as_deref() == Some(SKIPPED_BY_INTERRUPT)
}

/// A series with no finished repetition: its status and a note number in the req/s column.
fn failed_line(series: &Series, runs: String, notes: &mut Vec<(String, String)>) -> Line {
    let server = series.server.clone();
    // The reason goes under the table, once per server and reason.
    let why = series
        .reason()
        .unwrap_or_else(|| series.cells[0].status.to_string());
    let n = match notes.iter().position(|(s, w)| *s == server && *w == why) {
        Some(i) => i + 1,
        None => {
            notes.push((server.clone(), why));
            notes.len()
        }
    };
    [
        series.label.clone(),
        server,
        format!("{} [{n}]", series.cells[0].status),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        String::new(),
        runs,
    ]
}

/// Medians over the repetitions that finished, with the range of req/s when there are several.
fn finished_line(series: &Series, ok: &[Headline], runs: String) -> Line {
    let server = series.server.clone();
    let tput: Vec<f64> = ok.iter().map(|h| h.throughput_rps).collect();
    let (lo, hi) = (
        tput.iter().cloned().fold(f64::INFINITY, f64::min),
        tput.iter().cloned().fold(0.0, f64::max),
    );
    let med_u = |f: &dyn Fn(&Headline) -> Option<u64>| {
        median(
            &ok.iter()
                .filter_map(|h| f(h).map(|v| v as f64))
                .collect::<Vec<_>>(),
        )
    };
    let saturated = ok.iter().any(|h| h.client_saturated);
    // Unsent requests made some repetition's percentiles lower bounds: so is their median.
    let at_least = if ok.iter().any(|h| h.latency_lower_bound) {
        "≥ "
    } else {
        ""
    };
    let latency = |v: Option<f64>| {
        v.map_or("-".into(), |v| {
            format!("{at_least}{}", micros(v.round() as u64))
        })
    };
    [
        series.label.clone(),
        if series.control() {
            format!("{server} (control)")
        } else {
            server
        },
        format!(
            "{}{}",
            median(&tput).map_or("-".into(), rate),
            if saturated { " (client saturated)" } else { "" }
        ),
        if ok.len() > 1 {
            format!("{}-{}", rate(lo), rate(hi))
        } else {
            String::new()
        },
        latency(med_u(&|h| h.latency_p50_us)),
        latency(med_u(&|h| h.latency_p99_us)),
        ok.iter().map(|h| h.errors).sum::<u64>().to_string(),
        median(
            &ok.iter()
                .filter_map(|h| h.server_cpu_us_per_request)
                .collect::<Vec<_>>(),
        )
        .map_or("-".into(), |v| format!("{v:.1} µs")),
        ok.iter()
            .filter_map(|h| h.server_rss_max_bytes)
            .max()
            .map_or("-".into(), bytes),
        runs,
    ]
}

/// The environment line, the aligned table (a scenario named once for its servers), the notes
/// on failures, the cells Ctrl-C kept from running (`skipped`, a line) and what the numbers are.
fn table(report: &Report, lines: &[Line], notes: &[(String, String)], skipped: &str) -> String {
    let width = widths(lines);
    let mut out = format!("\n{}\n\n", environment(report));
    out += &fmt_line(&HEADER.map(String::from), &width);
    out += &fmt_line(&width.map(|w| "-".repeat(w)), &width);
    let mut last = String::new();
    for l in lines {
        let mut l = l.clone();
        if l[0] == last {
            l[0] = String::new();
        } else {
            last = l[0].clone();
        }
        out += &fmt_line(&l, &width);
    }
    for (i, (server, why)) in notes.iter().enumerate() {
        out += &format!("[{}] {server}: {why}\n", i + 1);
    }
    out += skipped;
    out += "\nreq/s, p50 and p99 (corrected latency) are medians over the repetitions that finished; CPU/req and RSS are the server's (median, peak).\n";
    out += &super::versus::text(&super::versus::lines(report));
    out
}

/// The width of each column: its widest cell or header, in characters.
fn widths(lines: &[Line]) -> [usize; 10] {
    let mut width = HEADER.map(|h| h.chars().count());
    for l in lines {
        for (w, c) in width.iter_mut().zip(l.iter()) {
            *w = (*w).max(c.chars().count());
        }
    }
    width
}

/// One line of the table, padded to `width` and without trailing spaces.
fn fmt_line(cells: &[String], width: &[usize; 10]) -> String {
    let mut s = String::new();
    for (i, (c, w)) in cells.iter().zip(width.iter()).enumerate() {
        let pad = w - c.chars().count();
        // Text columns left, numbers right.
        if i < 2 {
            s += c;
            s += &" ".repeat(pad);
        } else {
            s += &" ".repeat(pad);
            s += c;
        }
        if i + 1 < cells.len() {
            s += "  ";
        }
    }
    s.trim_end().to_string() + "\n"
}

/// `AMD EPYC, 2 CPUs, Linux 6.1; servers pinned to CPU 1, volley pinned to CPU 0`.
fn environment(report: &Report) -> String {
    let Some(index) = report.suites.first() else {
        return super::markdown::environment(report);
    };
    let e = &index.env;
    let pin = |who: &str, cpus: &Option<String>| match cpus {
        Some(c) => format!("{who} pinned to CPU {c}"),
        None => format!("{who} not pinned"),
    };
    format!(
        "{}, {} CPUs, Linux {}; {}, {}{}",
        e.cpu_model.as_deref().unwrap_or("unknown CPU"),
        e.cores,
        e.kernel.as_deref().unwrap_or("?"),
        pin("servers", &e.pinning.server_cpus),
        pin("volley", &e.pinning.client_cpus),
        super::markdown::protocols_clause(report)
    )
}

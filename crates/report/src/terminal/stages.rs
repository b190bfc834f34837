//! A rate-stage run over time: each second's target (the requests the schedule had due in it,
//! `timeseries[].target`) beside what was sent and completed, with a bar of what was sent
//! against the target's mark. A long run's seconds are grouped so the block stays short.

use std::fmt::Write as _;

use volley_model::result::RunResult;
use volley_model::stats::TimePoint;
use volley_model::units::{rate, thousands};

/// Rows at most: a longer run's seconds are added up in groups of equal length.
const MAX_ROWS: usize = 20;

/// Width of the bar, in cells.
const BAR: usize = 20;

/// Eighths of a cell, from one to eight.
const EIGHTHS: [char; 8] = ['▏', '▎', '▍', '▌', '▋', '▊', '▉', '█'];

/// One row: a second, or a group of seconds added up.
#[derive(Debug, Clone, PartialEq)]
struct Row {
    from_s: f64,
    to_s: f64,
    target: f64,
    sent: u64,
    completed: u64,
}

impl Row {
    fn of(points: &[TimePoint]) -> Row {
        let first = points.first().map_or(0.0, |p| p.t_s as f64);
        let last = points.last().map_or(first, |p| p.t_s as f64 + p.interval_s);
        Row {
            from_s: first,
            to_s: last,
            target: points.iter().filter_map(|p| p.target).sum(),
            sent: points.iter().map(|p| p.sent).sum(),
            completed: points.iter().map(|p| p.completed).sum(),
        }
    }
}

/// The block, for a run with rate stages whose time series has targets; nothing otherwise.
pub(super) fn over_time(o: &mut String, r: &RunResult) {
    if r.load.rate_stages.is_none() || !r.timeseries.iter().any(|p| p.target.is_some()) {
        return;
    }
    let per = r.timeseries.len().div_ceil(MAX_ROWS).max(1);
    let rows: Vec<Row> = r.timeseries.chunks(per).map(Row::of).collect();
    let top = rows
        .iter()
        .map(|w| w.target.max(w.sent as f64))
        .fold(0.0, f64::max);
    let each = if per == 1 {
        "each second".to_string()
    } else {
        format!("each {per} s")
    };
    let _ = writeln!(
        o,
        "  Stages       {each}: target (requests due by the stages) beside sent and completed"
    );
    let _ = writeln!(
        o,
        "    {:<12}{:>11}{:>10}{:>11}{:>9}  sent, | target",
        "seconds", "target", "sent", "completed", "sent %"
    );
    for w in &rows {
        let _ = writeln!(o, "{}", row_line(w, top).trim_end());
    }
    let _ = writeln!(o);
}

/// `    0–1           200.0       199        198   99.5 %  █████████▉|`
fn row_line(w: &Row, top: f64) -> String {
    let share = if w.target > 0.0 {
        format!("{:.1} %", w.sent as f64 / w.target * 100.0)
    } else {
        "-".to_string()
    };
    format!(
        "    {:<12}{:>11}{:>10}{:>11}{:>9}  {}",
        format!("{}–{}", secs(w.from_s), secs(w.to_s)),
        rate(w.target),
        thousands(w.sent),
        thousands(w.completed),
        share,
        bar(w.sent as f64, w.target, top)
    )
}

/// A second as the time series has it: `3`, or `2.05` for a partial bucket's end.
fn secs(s: f64) -> String {
    if (s - s.round()).abs() < 1e-9 {
        format!("{}", s.round() as u64)
    } else {
        format!("{s:.2}")
    }
}

/// `sent` as a bar of eighths of a cell, `top` filling all [`BAR`] cells, and a `|` at the
/// target when the bar stops short of it.
fn bar(sent: f64, target: f64, top: f64) -> String {
    if top <= 0.0 {
        return String::new();
    }
    let eighths = ((sent / top) * (BAR * 8) as f64).round() as usize;
    let mut out: String = std::iter::repeat_n(EIGHTHS[7], eighths / 8).collect();
    if !eighths.is_multiple_of(8) {
        out.push(EIGHTHS[eighths % 8 - 1]);
    }
    let cells = eighths.div_ceil(8);
    let mark = ((target / top) * BAR as f64).round() as usize;
    if target > 0.0 && mark > cells {
        out.extend(std::iter::repeat_n(' ', mark - cells - 1));
        out.push('|');
    }
    out
}

#[cfg(test)]
mod tests;

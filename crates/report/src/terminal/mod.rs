//! The terminal: the run summary — what a wrk user reads at a glance, plus what wrk leaves out
//! (corrected vs service time, every percentile to 99.999, errors by kind, warnings) — the
//! suite table, and the live one-line progress display ([`live`]).

mod endpoints;
pub mod live;
mod offcpu;
mod profile;
mod server;
mod shards;
mod stages;
mod summary;

pub use live::LiveLine;
pub use server::{gc_line, server_lines};
pub use summary::summary;

use super::model::Report;
use super::Reporter;

/// Terminal summary reporter.
pub(crate) struct TerminalReporter;

impl Reporter for TerminalReporter {
    fn render(&self, report: &Report) -> String {
        // Capacity searches alone (`volley capacity`'s results): each as the command printed
        // it. In a suite, its table ranks them instead.
        if report.cells.is_empty() && report.suites.is_empty() && !report.capacity.is_empty() {
            return super::capacity::text::render(&report.capacity);
        }
        match report.single_run() {
            Some(r) => summary(r),
            None => super::suite_table::render(report),
        }
    }
}

/// The plural ending for a count: "1 thread", "2 threads".
fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// A length of time in seconds, as the summary and the server block both print it.
fn format_elapsed(s: f64) -> String {
    format!("{s:.2} s")
}

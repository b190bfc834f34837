//! JSON: the RunResult of a single run; the suite index(es) otherwise.

use super::model::Report;
use super::Reporter;

/// JSON reporter.
pub(crate) struct JsonReporter;

impl Reporter for JsonReporter {
    fn render(&self, report: &Report) -> String {
        let mut s = match (report.single_run(), report.suites.as_slice()) {
            (Some(r), _) => serde_json::to_string_pretty(r),
            (None, [one]) => serde_json::to_string_pretty(one),
            (None, many) => serde_json::to_string_pretty(many),
        }
        .expect("results always serialize");
        s.push('\n');
        s
    }
}

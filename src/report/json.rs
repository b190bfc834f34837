//! RunResult as pretty-printed JSON.

use super::Reporter;
use crate::result::RunResult;

/// JSON reporter.
pub struct JsonReporter;

impl Reporter for JsonReporter {
    fn render(&self, result: &RunResult) -> String {
        let mut s = serde_json::to_string_pretty(result).expect("RunResult always serializes");
        s.push('\n');
        s
    }
}

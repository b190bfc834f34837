//! Reporters: one format per file behind one trait (terminal summary, JSON; CSV, Markdown and
//! HTML join here).

pub mod format;
pub mod json;
pub mod suite_table;
pub mod terminal;

use crate::result::RunResult;

/// Renders a RunResult in one format.
pub trait Reporter {
    /// The rendered text.
    fn render(&self, result: &RunResult) -> String;
}

/// The formats volley writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The human summary.
    Terminal,
    /// RunResult JSON.
    Json,
}

impl Format {
    /// The reporter for this format.
    pub fn reporter(self) -> Box<dyn Reporter> {
        match self {
            Format::Terminal => Box::new(terminal::TerminalReporter),
            Format::Json => Box::new(json::JsonReporter),
        }
    }

    /// The table `volley bench` ends with.
    pub fn suite_table(index: &crate::result::SuiteIndex) -> String {
        suite_table::render(index)
    }
}

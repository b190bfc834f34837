//! Reporters: one format per file behind one trait (hyperfine's exporters are the model):
//! terminal, JSON, CSV, Markdown, HTML. Each renders a `Report`: one run, or the cells of one
//! or more suites. `flame` turns a server's sampled stacks into tables and flame graphs.

pub mod capacity;
pub mod csv;
pub mod endpoints;
pub(crate) mod escape;
pub mod flame;
pub mod hdr_log;
pub mod html;
pub(crate) mod journey;
pub mod json;
pub(crate) mod markdown;
pub mod model;
pub(crate) mod suite_table;
pub mod terminal;
pub mod versus;

pub use model::Report;

/// Renders a report in one format.
pub trait Reporter {
    /// The rendered text.
    fn render(&self, report: &Report) -> String;
}

/// The formats volley writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// The human summary (one run) or the suite table.
    Terminal,
    /// RunResult JSON (one run) or the suite index.
    Json,
    /// One row per cell, every scalar.
    Csv,
    /// Tables to paste into a README.
    Markdown,
    /// One self-contained page with charts and sortable tables.
    Html,
}

impl Format {
    /// The reporter for this format.
    pub fn reporter(self) -> Box<dyn Reporter> {
        match self {
            Format::Terminal => Box::new(terminal::TerminalReporter),
            Format::Json => Box::new(json::JsonReporter),
            Format::Csv => Box::new(csv::CsvReporter),
            Format::Markdown => Box::new(markdown::MarkdownReporter),
            Format::Html => Box::new(html::HtmlReporter),
        }
    }

    /// Renders one run.
    pub fn render_run(self, r: &volley_model::result::RunResult) -> String {
        self.reporter().render(&Report::single(r.clone()))
    }
}

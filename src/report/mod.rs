//! Reporters: one format per file behind one trait (hyperfine's exporters are the model):
//! terminal, JSON, CSV, Markdown, HTML. Each renders a `Report`: one run, or the cells of one
//! or more suites.

pub mod csv;
pub mod html;
pub mod json;
pub mod markdown;
pub mod model;
pub mod suite_table;
pub mod terminal;

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
    pub fn render_run(self, r: &crate::result::RunResult) -> String {
        self.reporter().render(&Report::single(r.clone()))
    }
}

/// `volley report INPUT... [--html P] [--markdown P] [--csv P]`: re-renders saved results.
/// Without an output flag the terminal rendering goes to stdout.
pub fn execute(args: &crate::cli::ReportArgs) -> crate::ExitCode {
    use crate::ExitCode;
    let report = match Report::load(&args.inputs) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("volley report: {e}");
            return ExitCode::Usage;
        }
    };
    let paths = crate::config::ReportPaths {
        csv: args.csv.clone(),
        markdown: args.markdown.clone(),
        html: args.html.clone(),
    };
    let outputs = paths.each();
    if outputs.is_empty() {
        crate::sys::files::stdout(&Format::Terminal.reporter().render(&report));
        return ExitCode::Ok;
    }
    let mut code = ExitCode::Ok;
    for (flag, path, format) in outputs {
        let text = format.reporter().render(&report);
        if let Err(e) = crate::sys::files::write_atomically(path, text.as_bytes()) {
            eprintln!("volley report: {flag} {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        } else {
            eprintln!("volley report: wrote {}", path.display());
        }
    }
    code
}

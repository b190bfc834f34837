//! `volley report INPUT... [--html P] [--markdown P] [--csv P]`: re-renders saved results.
//! Without an output flag the terminal rendering goes to stdout.

use std::path::PathBuf;

use clap::Args;

use super::{ExitCode, ReportPaths};
use crate::report::{Format, Report};
use crate::sys::files;

/// `volley report` flags.
#[derive(Debug, Args, Clone)]
pub struct ReportArgs {
    /// RunResult JSON files, suite.json files or `volley bench` results folders.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,

    /// `--csv`, `--markdown`, `--html`.
    #[command(flatten)]
    pub reports: ReportPaths,
}

/// Runs `volley report`: 0 written, 2 an input cannot be read, 3 an output cannot be written.
pub(crate) fn execute(args: &ReportArgs) -> ExitCode {
    let report = match Report::load(&args.inputs) {
        Ok(r) => r,
        Err(e) => {
            stderrln!("volley report: {e}");
            return ExitCode::Usage;
        }
    };
    let outputs = args.reports.each();
    if outputs.is_empty() {
        files::stdout(&Format::Terminal.reporter().render(&report));
        return ExitCode::Ok;
    }
    let mut code = ExitCode::Ok;
    for (flag, path, format) in outputs {
        let text = format.reporter().render(&report);
        if let Err(e) = files::write_atomically(path, text.as_bytes()) {
            stderrln!("volley report: {flag} {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        } else {
            stderrln!("volley report: wrote {}", path.display());
        }
    }
    code
}

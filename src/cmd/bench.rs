//! `volley bench SUITE.toml [--only NAME...] [--out DIR]`: run a suite, progress on stderr, the
//! table and where the results are on stdout. Exit 0 (servers whose required programs are not
//! installed are skipped with a note); 1 a threshold broke; 3 a cell failed, a result could not
//! be written, or nothing could run; 130 interrupted; 2 the suite could not start.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;

use clap::Args;

use super::ExitCode;
use crate::harness::{self, progress, Log};
use crate::report::Format;
use crate::sys::files;

/// `volley bench` flags. (Their doc comments are the help text, brackets and all.)
#[allow(rustdoc::broken_intra_doc_links, rustdoc::invalid_html_tags)]
#[derive(Debug, Args, Clone)]
pub struct BenchArgs {
    /// The suite file (TOML: [suite], [[server]], [[scenario]]).
    pub suite: PathBuf,

    /// Run only these servers and/or scenarios (names from the suite; repeatable).
    #[arg(long, num_args = 1..)]
    pub only: Vec<String>,

    /// Results folder [default: results/<suite>-<UTC timestamp>/]; must be new or empty.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// The harness's progress, on stderr.
struct Stderr;

impl Log for Stderr {
    fn line(&mut self, text: &str) {
        eprintln!("{text}");
    }

    fn part(&mut self, text: &str) {
        use std::io::Write;
        eprint!("{text}");
        let _ = std::io::stderr().flush();
    }
}

/// Runs `volley bench` and returns the exit code.
pub fn execute(args: &BenchArgs, interrupts: &AtomicUsize) -> ExitCode {
    let mut log = Stderr;
    let h = match harness::prepare(
        &args.suite,
        &args.only,
        args.out.clone(),
        interrupts,
        &mut log,
    ) {
        Ok(h) => h,
        Err(e) => {
            eprintln!("volley bench: {e}");
            return ExitCode::Usage;
        }
    };
    let o = h.run();
    files::stdout(&Format::Terminal.reporter().render(&o.report));
    if !o.unsaved.is_empty() {
        eprintln!(
            "volley bench: {} result(s) could not be written to {} (their numbers are in the table above):",
            o.unsaved.len(),
            o.out_dir.display()
        );
        for rel in &o.unsaved {
            eprintln!("  {rel}");
        }
    }
    let skipped = if o.unavailable.is_empty() {
        String::new()
    } else {
        format!(
            ", {} skipped ({}: not installed)",
            o.skipped,
            o.unavailable.keys().cloned().collect::<Vec<_>>().join(", ")
        )
    };
    files::stdout(&format!(
        "\n{} cells in {}: {} ok, {} failed{skipped}{}. Results: {} (report: {})\n",
        o.cells,
        progress::clock(o.wall),
        o.ok,
        o.failed,
        if o.thresholds_broken {
            ", thresholds broken"
        } else {
            ""
        },
        o.out_dir.join("suite.json").display(),
        o.out_dir.join("report.html").display()
    ));
    let mut code = ExitCode::Ok;
    if o.thresholds_broken {
        code = ExitCode::NoResponse;
    }
    // A server whose tools are missing is skipped, not failed; but a suite of which nothing
    // could run has measured nothing.
    let nothing_ran = o.ok == 0 && o.skipped > 0 && !o.interrupted;
    if nothing_ran {
        eprintln!("volley bench: no cell could run: every server it reached was skipped");
    }
    if o.failed > 0 || o.files_unwritten || !o.unsaved.is_empty() || nothing_ran {
        code = ExitCode::Failed;
    }
    if o.interrupted {
        code = code.max_precedence(ExitCode::Interrupted);
    }
    code
}

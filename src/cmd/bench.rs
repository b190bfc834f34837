//! `volley bench SUITE.toml [--only NAME...] [--out DIR] [--dry-run] [--yes]`: run a suite,
//! progress on stderr, the table and where the results are on stdout. Exit 0 (servers whose
//! required programs are not installed are skipped with a note); 1 a threshold broke; 3 a cell
//! failed, a result could not be written, or nothing could run; 130 interrupted; 2 the suite
//! could not start (or a large matrix was not confirmed). `--dry-run` lists the cells and the
//! estimated time and exits 0 without starting anything.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use clap::Args;

use super::ExitCode;
use crate::harness::estimate::{Estimate, CONFIRM_CELLS, CONFIRM_WALL};
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

    /// List the cells and the estimated wall time, then exit without starting anything.
    #[arg(long)]
    pub dry_run: bool,

    /// Run a matrix over 100 cells or 30 minutes without asking (needed when stdin is not a
    /// terminal).
    #[arg(long)]
    pub yes: bool,

    /// The live views: each cell is a run of theirs, and the dashboard shows the table of
    /// finished cells.
    #[command(flatten)]
    pub live: super::live::LiveArgs,

    /// The run history: every finished cell saved (also with `[history] save = true` in the
    /// suite file).
    #[command(flatten)]
    pub save: super::history::SaveArgs,
}

/// The harness's progress, on stderr.
struct Stderr;

impl Log for Stderr {
    fn line(&mut self, text: &str) {
        stderrln!("{text}");
    }

    fn part(&mut self, text: &str) {
        use std::io::Write;
        stderr!("{text}");
        let _ = std::io::stderr().flush();
    }
}

/// Runs `volley bench` and returns the exit code.
pub(crate) fn execute(args: &BenchArgs, argv: Vec<String>, interrupts: &AtomicUsize) -> ExitCode {
    let mut log = Stderr;
    let planned = match harness::plan(&args.suite, &args.only) {
        Ok(p) => p,
        Err(e) => {
            stderrln!("volley bench: {e}");
            return ExitCode::Usage;
        }
    };
    if args.dry_run {
        files::stdout(&planned.listing());
        return ExitCode::Ok;
    }
    let estimate = planned.estimate();
    if estimate.needs_confirmation() && !args.yes {
        if let Some(code) = confirm(&estimate, interrupts) {
            return code;
        }
    }
    // Before anything starts: a history that cannot take the results costs nothing.
    let saver = match args.save.open(Some(&planned.suite.history)) {
        Ok(s) => s,
        Err(msg) => {
            stderrln!("volley bench: {msg}");
            return ExitCode::Usage;
        }
    };
    // Before the results folder is made: a taken address costs nothing.
    let live = match super::live::start_suite(&args.live, &args.suite, &argv) {
        Ok(l) => l,
        Err(msg) => {
            stderrln!("volley bench: {msg}");
            return ExitCode::Usage;
        }
    };
    let h = match harness::prepare(planned, &args.only, args.out.clone(), interrupts, &mut log) {
        Ok(h) => h,
        Err(e) => {
            stderrln!("volley bench: {e}");
            return ExitCode::Usage;
        }
    };
    let h = match &live {
        Some(l) => h.watched_by(l),
        None => h,
    };
    let o = h.run();
    if let Some(mut live) = live {
        for w in super::live::end_push(&mut live) {
            stderrln!("volley bench: warning: {}", w.text());
        }
        // The page becomes the suite's report.
        let html = live
            .has_dashboard()
            .then(|| Format::Html.reporter().render(&o.report));
        let end = serde_json::json!({"out_dir": o.out_dir, "cells": o.cells, "ok": o.ok, "failed": o.failed});
        live.finish(Some(&end), html.as_deref());
    }
    files::stdout(&Format::Terminal.reporter().render(&o.report));
    if !o.unsaved.is_empty() {
        stderrln!(
            "volley bench: {} result(s) could not be written to {} (their numbers are in the table above):",
            o.unsaved.len(),
            o.out_dir.display()
        );
        for rel in &o.unsaved {
            stderrln!("  {rel}");
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
    let stopped = if o.interrupted {
        format!(
            ", {} interrupted, {} skipped (interrupted)",
            o.interrupted_cells, o.skipped_by_interrupt
        )
    } else {
        String::new()
    };
    files::stdout(&format!(
        "\n{} cells in {}: {} ok, {} failed{stopped}{skipped}{}. Results: {} (report: {})\n",
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
        stderrln!("volley bench: no cell could run: every server it reached was skipped");
    }
    if o.failed > 0 || o.files_unwritten || !o.unsaved.is_empty() || nothing_ran {
        code = ExitCode::Failed;
    }
    if o.interrupted {
        code = code.max_precedence(ExitCode::Interrupted);
    }
    if let Some(saver) = saver {
        code = code.max_precedence(save(saver, &o.out_dir));
    }
    code
}

/// Saves the suite's finished cells from its results folder (written by now).
fn save(saver: super::history::Saver, out: &std::path::Path) -> ExitCode {
    let index = out.join("suite.json");
    match super::history::suite_records(&index, crate::history::Source::Bench, saver.git()) {
        Ok(records) => saver.save(&records, "volley bench"),
        Err(e) => {
            stderrln!("volley bench: --save: {e}; the results folder is written, the history does not have it");
            ExitCode::Failed
        }
    }
}

/// Asks whether to run a large matrix: `None` to run, else the exit code. Without a terminal
/// on stdin nothing can be asked: exit 2, naming `--yes` and `--dry-run`.
fn confirm(e: &Estimate, interrupts: &AtomicUsize) -> Option<ExitCode> {
    let limits = format!(
        "over {CONFIRM_CELLS} cells or {}",
        progress::clock(CONFIRM_WALL)
    );
    if !std::io::stdin().is_terminal() {
        stderrln!(
            "volley bench: {} ({limits}) and stdin is not a terminal to confirm it: pass --yes to run it, or --dry-run to list the cells; nothing was started",
            e.summary()
        );
        return Some(ExitCode::Usage);
    }
    {
        use std::io::Write;
        stderr!("{} — run? [y/N] ", e.summary());
        let _ = std::io::stderr().flush();
    }
    // Read on a thread of its own, so that Ctrl-C at the prompt is not stuck in read(2).
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut line = String::new();
        let _ = tx.send(std::io::stdin().read_line(&mut line).map(|_| line));
    });
    loop {
        if interrupts.load(Ordering::SeqCst) > 0 {
            stderrln!();
            return Some(ExitCode::Interrupted);
        }
        match rx.recv_timeout(Duration::from_millis(100)) {
            Ok(Ok(answer)) if matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES") => {
                return None
            }
            Ok(_) => {
                stderrln!("volley bench: not run (answer y to run, or pass --yes)");
                return Some(ExitCode::Usage);
            }
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Some(ExitCode::Usage),
        }
    }
}

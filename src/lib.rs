//! volley: an HTTP load generator and server-benchmarking toolkit.
//!
//! The pipeline (DESIGN §1): `config` validates flags, `plan` splits the load over threads,
//! `engine` drives the connections, `stats` aggregates histograms, `result` is the versioned
//! artifact and `report` renders it. `serve` is the built-in reference server; `monitor`
//! watches volley itself, the machine and (`--pid`) the server's process tree.

// `eprintln!`/`eprint!` for every module below, shadowing std's: those panic when stderr
// cannot be written (`2>/dev/full`, a closed pipe), and a benchmark must not crash over a
// diagnostic. Failed writes to stderr are dropped.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr().lock(), $($arg)*);
    }};
}

macro_rules! eprint {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!(std::io::stderr().lock(), $($arg)*);
    }};
}

pub mod cli;
pub mod compare;
pub mod config;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod merge;
pub mod metric;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod result;
pub mod run;
pub mod serve;
pub mod stats;
pub mod sys;
pub mod units;

use std::sync::atomic::{AtomicUsize, Ordering};

/// Exit codes of DESIGN §4, with their precedence 2 > 3 > 130 > 1 > 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// At least one response.
    Ok = 0,
    /// No response at all, a broken threshold, or a `volley compare` regression.
    NoResponse = 1,
    /// Found before load started: flags, files, URL, DNS, limits.
    Usage = 2,
    /// Failure after start: output not written, server died.
    Failed = 3,
    /// Interrupted; results were still written.
    Interrupted = 130,
}

impl ExitCode {
    fn rank(self) -> u8 {
        match self {
            ExitCode::Usage => 4,
            ExitCode::Failed => 3,
            ExitCode::Interrupted => 2,
            ExitCode::NoResponse => 1,
            ExitCode::Ok => 0,
        }
    }

    /// The code that wins when both apply.
    pub fn max_precedence(self, other: ExitCode) -> ExitCode {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// Ctrl-C presses (and SIGTERM) since start; the engine drains on the first, stops on the second.
pub static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

/// Runs a parsed command line.
pub fn run(cli: cli::Cli, argv: Vec<String>) -> ExitCode {
    match cli.command {
        cli::Command::Run(args) => {
            let _ = ctrlc::set_handler(|| {
                INTERRUPTS.fetch_add(1, Ordering::SeqCst);
            });
            run::execute(&args, argv, &INTERRUPTS)
        }
        cli::Command::Monitor(args) => {
            let _ = ctrlc::set_handler(|| {
                INTERRUPTS.fetch_add(1, Ordering::SeqCst);
            });
            monitor::watch::execute(&args, &INTERRUPTS)
        }
        cli::Command::Bench(args) => {
            let _ = ctrlc::set_handler(|| {
                INTERRUPTS.fetch_add(1, Ordering::SeqCst);
            });
            harness::execute(&args, &INTERRUPTS)
        }
        cli::Command::Report(args) => report::execute(&args),
        cli::Command::Compare(args) => compare::execute(&args),
        cli::Command::Merge(args) => merge::execute(&args, argv),
        cli::Command::Serve(args) => match serve::run(&args.bind, args.port) {
            Ok(()) => ExitCode::Ok,
            Err(e) => {
                eprintln!("volley serve: --port {}: {e}", args.port);
                ExitCode::Usage
            }
        },
    }
}

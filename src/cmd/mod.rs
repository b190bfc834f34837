//! The command layer: one file per subcommand, each owning its arguments (clap), what it
//! prints and its exit code. Everything below `cmd` is a library that knows nothing of the
//! command line's exit codes or standard streams; `main.rs` only parses and dispatches here.

pub(crate) mod bench;
pub(crate) mod capacity;
pub(crate) mod compare;
pub mod habits;
pub(crate) mod history;
pub(crate) mod k8s;
pub(crate) mod live;
pub(crate) mod merge;
pub(crate) mod monitor;
pub(crate) mod report;
pub(crate) mod run;
pub(crate) mod serve;
pub(crate) mod shell;
pub(crate) mod version;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use clap::{Parser, Subcommand};

use crate::report::Format;

/// volley: HTTP load generator and server-benchmarking toolkit.
#[derive(Debug, Parser)]
#[command(
    name = "volley",
    version,
    long_version = version::LONG_VERSION,
    about,
    propagate_version = true
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Load-test one URL and report latency, throughput and errors.
    Run(Box<run::RunArgs>),
    /// Serve the reference contract (/, POST /, /hello, /delay?ms=N, /bytes?n=N) for trying volley.
    Serve(serve::ServeArgs),
    /// Watch a server process and its descendants, one vmstat-like line a second (any load tool).
    Monitor(monitor::MonitorArgs),
    /// Run a suite: build the servers, then every server × scenario cell with a fresh server
    /// process, the monitor attached, and every result saved at once.
    Bench(bench::BenchArgs),
    /// Re-render saved results (RunResult files, suite.json files or results folders).
    Report(report::ReportArgs),
    /// Compare two results (runs, suite.json files or results folders) cell by cell: B against
    /// A, with a Mann-Whitney U test when both sides have 5 repetitions or more.
    Compare(compare::CompareArgs),
    /// Merge the RunResults of shards of one load (several machines or copies) into one:
    /// histograms added losslessly, counters summed, time series aligned by wall clock.
    ///
    /// Shards that were checked (--expect-*) are judged together: more than 1 % of the merged
    /// responses failing a check exits 1 after writing (checks<=1%, implied), unless a shard's
    /// own --threshold named checks.
    Merge(merge::MergeArgs),
    /// Find the highest open-loop rate the server sustains within an SLO (`--slo 'p99<10ms'`):
    /// a geometric ramp, then bisection, every step saved.
    Capacity(Box<capacity::CapacityArgs>),
    /// Print a Kubernetes Indexed Job that runs the load as N shards on N nodes, started
    /// together (`volley k8s URL [run flags] --shards N | kubectl apply -f -`); `volley k8s
    /// collect JOB` merges their results.
    K8s(Box<k8s::K8sArgs>),
    /// The run history: saved results (`--save`) as trends across commits, and the check of a
    /// commit against a baseline's history (`volley history check`: exit 1 on a regression).
    History(history::HistoryArgs),
    /// Print the completion script of a shell: `volley completions bash > /etc/bash_completion.d/volley`
    /// (`make install` puts bash's, zsh's and fish's where those shells look).
    Completions(shell::CompletionsArgs),
    /// Print the manual page (volley.1), or write every page with `--dir DIR` (`make install`
    /// puts them in share/man/man1).
    Man(shell::ManArgs),
    /// Print the version, the commit it was built from and what it was built with; `--json`
    /// for scripts.
    Version(version::VersionArgs),
}

/// Exit codes, with their precedence 2 > 3 > 130 > 1 > 0 (docs/contract.md).
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
    pub(crate) fn max_precedence(self, other: ExitCode) -> ExitCode {
        if other.rank() > self.rank() {
            other
        } else {
            self
        }
    }
}

/// Ctrl-C presses (and SIGTERM) since start; the engine drains on the first, stops on the second.
pub(crate) static INTERRUPTS: AtomicUsize = AtomicUsize::new(0);

/// Counts Ctrl-C presses in [`INTERRUPTS`] from now on (commands that run something long).
fn count_interrupts() -> &'static AtomicUsize {
    let _ = ctrlc::set_handler(|| {
        INTERRUPTS.fetch_add(1, Ordering::SeqCst);
    });
    &INTERRUPTS
}

/// Runs a parsed command line; `argv` is kept in results.
pub fn main(cli: Cli, argv: Vec<String>) -> ExitCode {
    match cli.command {
        Command::Run(args) => run::execute(&args, argv, count_interrupts()),
        Command::Monitor(args) => monitor::execute(&args, count_interrupts()),
        Command::Bench(args) => bench::execute(&args, argv, count_interrupts()),
        Command::Report(args) => report::execute(&args),
        Command::Compare(args) => compare::execute(&args),
        Command::Merge(args) => merge::execute(&args, argv),
        Command::Serve(args) => serve::execute(&args),
        Command::Capacity(args) => capacity::execute(&args, argv, count_interrupts()),
        Command::K8s(args) => k8s::execute(&args, argv),
        Command::History(args) => history::execute(&args),
        Command::Completions(args) => shell::completions(&args),
        Command::Man(args) => shell::man(&args),
        Command::Version(args) => version::execute(&args),
    }
}

/// Report files a command writes (`--csv`, `--markdown`, `--html`): one definition, flattened
/// into `volley run`, `report`, `capacity` and `k8s collect`.
#[derive(Debug, Clone, Default, PartialEq, Eq, clap::Args)]
pub struct ReportPaths {
    /// Also write the report as CSV to PATH (a row per run, cell or capacity step; every
    /// scalar).
    #[arg(long, value_name = "PATH")]
    pub csv: Option<PathBuf>,
    /// Also write the report as Markdown tables to PATH.
    #[arg(long, value_name = "PATH")]
    pub markdown: Option<PathBuf>,
    /// Also write the report as self-contained HTML (opens offline) to PATH.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
}

impl ReportPaths {
    /// (flag, path, format) of each requested file.
    pub(crate) fn each(&self) -> Vec<(&'static str, &PathBuf, Format)> {
        let mut v = Vec::new();
        if let Some(p) = &self.csv {
            v.push(("--csv", p, Format::Csv));
        }
        if let Some(p) = &self.markdown {
            v.push(("--markdown", p, Format::Markdown));
        }
        if let Some(p) = &self.html {
            v.push(("--html", p, Format::Html));
        }
        v
    }
}

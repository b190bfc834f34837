//! volley: an HTTP load generator and server-benchmarking toolkit.
//!
//! The pipeline: `config` checks flags and suite files into a load spec (`plan`), the
//! `engine` drives the connections and aggregates per-thread histograms (`stats`), `measure`
//! assembles the versioned artifact (`result`) with the server `monitor`'s figures, and
//! `report` renders it; `harness`, `compare`, `merge` and `serve` orchestrate and analyse, and
//! `cmd` is the command line. Imports point down that list only (docs/architecture.md has the
//! map; `tests/architecture.rs` enforces it); docs/contract.md is what users may rely on.

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

pub mod capacity;
pub mod cmd;
pub mod compare;
pub mod config;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod history;
pub mod live;
pub mod measure;
pub mod merge;
pub mod metric;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod result;
pub mod serve;
pub mod shard;
pub mod stats;
pub mod sys;
pub mod units;

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

pub mod cmd;
pub mod compare;
pub mod config;
pub mod engine;
#[doc(hidden)]
pub mod fuzzing;
pub mod harness;
pub mod measure;
pub mod merge;
pub mod metric;
pub mod monitor;
pub mod plan;
pub mod report;
pub mod result;
pub mod serve;
pub mod stats;
pub mod sys;
pub mod units;

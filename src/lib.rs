//! volley: an HTTP load generator and server-benchmarking toolkit.
//!
//! The pipeline: `config` checks flags and suite files into a load spec (`plan`), the
//! `engine` drives the connections and aggregates per-thread histograms (`stats`), `measure`
//! assembles the versioned artifact (`result`) with the server `monitor`'s figures, and
//! `report` renders it; `harness`, `compare`, `merge` and `serve` orchestrate and analyse, and
//! `cmd` is the command line. Imports point down that list only (docs/architecture.md has the
//! map; `tests/quick/architecture.rs` enforces it); docs/contract.md is what users may rely on.

// `eprintln!`/`eprint!` for every module below: volley-model's, which drop a failed write to
// stderr instead of panicking as std's do.
macro_rules! eprintln {
    ($($arg:tt)*) => { volley_model::eprintln!($($arg)*) };
}

macro_rules! eprint {
    ($($arg:tt)*) => { volley_model::eprint!($($arg)*) };
}

pub mod capacity;
pub mod cmd;
pub mod compare;
pub mod harness;
pub mod history;
pub mod live;
pub mod merge;
pub mod serve;
pub mod shard;

// The lower crates under their old paths, for the layers still in this crate.
pub use volley_config as config;
pub use volley_engine as engine;
pub use volley_measure as measure;
pub use volley_model::{metric, result, stats, sys, units};
pub use volley_monitor as monitor;
pub use volley_plan as plan;
pub use volley_report as report;

//! volley: an HTTP load generator and server-benchmarking toolkit.
//!
//! The pipeline: `config` checks flags and suite files into a load spec (`plan`), the
//! `engine` drives the connections and aggregates per-thread histograms (`stats`), `measure`
//! assembles the versioned artifact (`result`) with the server `monitor`'s figures, and
//! `report` renders it; `harness`, `compare`, `merge` and `serve` orchestrate and analyse, and
//! `cmd` is the command line. Imports point down that list only (docs/architecture.md has the
//! map; `tests/quick/architecture.rs` enforces it); docs/contract.md is what users may rely on.

// volley-model's `stderrln!`/`stderr!` (a failed write to stderr dropped, not a panic) and
// `words!`, for every module below.
#[macro_use]
extern crate volley_model;

pub mod cmd;
pub mod serve;

// The workspace's crates under their module names (docs/architecture.md, "Crates").
pub use volley_capacity as capacity;
pub use volley_compare as compare;
pub use volley_config as config;
pub use volley_engine as engine;
pub use volley_harness as harness;
pub use volley_history as history;
pub use volley_live as live;
pub use volley_measure as measure;
pub use volley_merge as merge;
pub use volley_model::{metric, result, stats, sys, units};
pub use volley_monitor as monitor;
pub use volley_plan as plan;
pub use volley_report as report;
pub use volley_shard as shard;

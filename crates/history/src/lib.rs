//! Run history: every saved result in one SQLite file (`.volley/history.db`), trends across
//! commits with their change points, and the check of a commit against a baseline's history,
//! like with like only (docs/contract.md, "Run history").
//!
//! - `record`: what one saved run is (labels, load and host identity, commit, scalars, HDR);
//! - `store` and `schema`: the file, its checks and migrations, saving and reading;
//! - `git`, `host`, `measure`: the commit, the machine's fingerprint, a run's metrics from scalars;
//! - `series`: like-with-like grouping and per-commit points;
//! - `changepoint`: E-divisive with the t-test, as Apache Otava computes it;
//! - `check`, `trend`, `page`, `export`: what the `volley history` commands print and write.

pub mod changepoint;
pub mod check;
pub mod export;
pub mod git;
pub mod host;
pub mod measure;
pub mod page;
pub mod record;
pub mod schema;
pub mod series;
pub(crate) mod store;
pub mod trend;

use std::path::PathBuf;

pub use record::{Kind, Labels, Origin, Record, Source};
pub use store::{Filter, Mode, Store, Stored};

/// The default file: `.volley/history.db` at the top of the current repository, or in the
/// current directory outside one.
pub fn default_path() -> PathBuf {
    git::toplevel()
        .unwrap_or_else(|| PathBuf::from("."))
        .join(".volley")
        .join("history.db")
}

/// What can go wrong with a history file.
#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    /// It could not be opened or created.
    #[error("{}: cannot open: {reason}", .path.display())]
    Open {
        /// The file.
        path: PathBuf,
        /// The system's or SQLite's words.
        reason: String,
    },
    /// There is none yet.
    #[error("{}: no history there yet (save runs with --save)", .0.display())]
    Missing(PathBuf),
    /// It is not a volley history.
    #[error("{}: not a volley history: {why}", .path.display())]
    NotHistory {
        /// The file.
        path: PathBuf,
        /// What it is instead.
        why: String,
    },
    /// Written by a newer volley.
    #[error("{}: schema version {found} was written by a newer volley (this one reads up to {supported})", .path.display())]
    Newer {
        /// The file.
        path: PathBuf,
        /// Its version.
        found: i64,
        /// Ours.
        supported: i64,
    },
    /// Saving (or migrating) failed.
    #[error("{}: cannot save: {reason}", .path.display())]
    Save {
        /// The file.
        path: PathBuf,
        /// SQLite's words.
        reason: String,
    },
    /// Reading failed.
    #[error("{}: cannot read: {reason}", .path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// SQLite's words.
        reason: String,
    },
}

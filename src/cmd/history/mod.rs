//! `volley history …` and the `--save`/`--history PATH` flags of `run`, `bench` and
//! `capacity`: the file is opened (created, checked, migrated) before any load, and a run is
//! saved after its result files are written, so the database never costs a measurement
//! (docs/contract.md, "Run history").

mod check;
mod export;
mod read;
mod select;
mod trend;

pub use read::{absolute, capacity_record, suite_records};

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::ExitCode;
use crate::config::suite::HistoryTable;
use crate::history::git::{self, GitInfo};
use crate::history::{self, Mode, Record, Store};

/// `--save` and `--history PATH` of the commands that measure.
#[derive(Debug, Args, Clone, Default)]
pub struct SaveArgs {
    /// Save the result in the run history (`.volley/history.db` at the top of the current git
    /// repository, or in the current directory), with the commit, the host and every number.
    #[arg(long)]
    pub save: bool,

    /// The history file (SQLite); implies --save.
    #[arg(long, value_name = "PATH")]
    pub history: Option<PathBuf>,
}

/// An open history to save into, with the commit measured.
pub(crate) struct Saver {
    store: Store,
    git: Option<GitInfo>,
    /// Opening it made the file.
    created: bool,
}

impl SaveArgs {
    /// Opens the history when asked (here or by a suite's `[history]`), before any load: a bad
    /// path, a foreign or damaged file, or one of a newer volley is an error naming the flag
    /// (exit 2).
    pub(crate) fn open(&self, suite: Option<&HistoryTable>) -> Result<Option<Saver>, String> {
        let table = suite.cloned().unwrap_or_default();
        if !(self.save || self.history.is_some() || table.save) {
            return Ok(None);
        }
        let name = if self.history.is_none() && table.path.is_some() {
            "[history] path"
        } else {
            "--history"
        };
        let path = select::history_path(self.history.as_deref(), &table);
        let (store, created) = create(&path, name)?;
        Ok(Some(Saver {
            store,
            git: git::current(),
            created,
        }))
    }
}

impl Saver {
    /// The commit measured (read when the history was opened, before the load).
    pub(crate) fn git(&self) -> Option<&GitInfo> {
        self.git.as_ref()
    }

    /// Saves `records` and says so on stderr, with the tip on a history just made in a git
    /// work tree; 3 when it fails (the result files are written by then: only the history
    /// lacks them).
    pub(crate) fn save(mut self, records: &[Record], who: &str) -> ExitCode {
        let code = self.save_records(records, who);
        if self.created {
            tip_if_untracked(who, self.store.path());
        }
        code
    }

    fn save_records(&mut self, records: &[Record], who: &str) -> ExitCode {
        if records.is_empty() {
            return ExitCode::Ok;
        }
        match self.store.save(records) {
            Ok(ids) => {
                said(who, &ids, records.len(), self.store.path());
                ExitCode::Ok
            }
            Err(e) => {
                stderrln!("{who}: --save: {e}; the result files are written, the history does not have this run");
                ExitCode::Failed
            }
        }
    }
}

/// Opens the history to save into, creating it when missing (errors name `flag`); whether
/// this made the file.
fn create(path: &Path, flag: &str) -> Result<(Store, bool), String> {
    let created = !path.exists();
    let store = Store::open(path, Mode::Create).map_err(|e| format!("{flag} {e}"))?;
    Ok((store, created))
}

/// Once, when a history file was just made where git would list it as untracked: the advice
/// to ignore it. The history is this machine's runs (like with like: its host fingerprint) in
/// a binary file git cannot merge, and a branch's runs must not become main's baseline, so it
/// is kept out of commits (in CI, in a cache: examples/history/).
fn tip_if_untracked(who: &str, path: &Path) {
    if !git::unignored(path) {
        return;
    }
    let in_folder = path
        .parent()
        .and_then(Path::file_name)
        .is_some_and(|d| d == ".volley");
    let name = if in_folder {
        ".volley/".to_string()
    } else {
        path.display().to_string()
    };
    stderrln!(
        "{who}: tip: add {name} to .gitignore: the history holds this machine's runs in a binary \
         file git cannot merge (CI keeps it in a cache: examples/history/)"
    );
}

/// Says on stderr what a save wrote: `saved 3 results to PATH as runs #4–#6 (1 already there)`.
fn said(who: &str, ids: &[i64], offered: usize, path: &Path) {
    let kept = offered - ids.len();
    let ids_text = match (ids.first(), ids.last()) {
        (Some(a), Some(b)) if a == b => format!(" as run #{a}"),
        (Some(a), Some(b)) => format!(" as runs #{a}–#{b}"),
        _ => String::new(),
    };
    let already = if kept > 0 {
        format!(" ({kept} already there)")
    } else {
        String::new()
    };
    stderrln!(
        "{who}: saved {} result{} to {}{ids_text}{already}",
        ids.len(),
        if ids.len() == 1 { "" } else { "s" },
        path.display(),
    );
}

/// `volley history`: the saved runs.
#[derive(Debug, Args, Clone)]
pub struct HistoryArgs {
    /// The history file [default: .volley/history.db at the top of the current git
    /// repository, or in the current directory].
    #[arg(long, global = true, value_name = "PATH")]
    pub history: Option<PathBuf>,

    /// What to do.
    #[command(subcommand)]
    pub command: HistoryCommand,
}

/// The `volley history` subcommands.
#[derive(Debug, Subcommand, Clone)]
pub enum HistoryCommand {
    /// Load results already written (RunResult and capacity files, suite results folders).
    Import(read::ImportArgs),
    /// One line per saved run, oldest first.
    List(read::ListArgs),
    /// One saved run: where and when it ran, every percentile (from its histogram).
    Show(read::ShowArgs),
    /// Each series' metric across commits, with its change points and noise band.
    Trend(trend::TrendArgs),
    /// This commit's runs against the baseline's history, like with like: exit 1 on a called
    /// regression.
    Check(check::CheckArgs),
    /// Export for bencher (BMF JSON) or Apache Otava (CSV).
    Export(export::ExportArgs),
}

/// Runs `volley history …`.
pub(crate) fn execute(args: &HistoryArgs) -> ExitCode {
    let explicit = args.history.as_deref();
    let path = args.history.clone().unwrap_or_else(history::default_path);
    let result = match &args.command {
        HistoryCommand::Import(a) => read::import(a, &path),
        HistoryCommand::List(a) => read::list(a, &path),
        HistoryCommand::Show(a) => read::show(a, &path),
        HistoryCommand::Trend(a) => trend::trend(a, explicit),
        HistoryCommand::Check(a) => check::check(a, explicit),
        HistoryCommand::Export(a) => export::export(a, &path),
    };
    match result {
        Ok(code) => code,
        Err(msg) => {
            stderrln!("volley history: {msg}");
            ExitCode::Usage
        }
    }
}

/// Opens an existing history for reading; the message names `--history`.
fn open_existing(path: &Path) -> Result<Store, String> {
    Store::open(path, Mode::Existing).map_err(|e| format!("--history {e}"))
}

/// `--since`: a duration back from now (`7d`, `12h`), a date (`2026-11-01`) or an RFC 3339
/// time; the RFC 3339 UTC text runs are compared with.
fn since(text: &str) -> Result<String, String> {
    let t = text.trim();
    let when = if let Ok(d) = humantime::parse_duration(t) {
        std::time::SystemTime::now()
            .checked_sub(d)
            .ok_or_else(|| format!("--since {text}: too far back"))?
    } else if let Ok(at) = humantime::parse_rfc3339_weak(t) {
        at
    } else if let Ok(at) = humantime::parse_rfc3339_weak(&format!("{t} 00:00:00")) {
        at
    } else {
        return Err(format!(
            "--since {text}: not a duration (7d, 12h), a date (2026-11-01) or a time (2026-11-01T12:00:00Z)"
        ));
    };
    Ok(humantime::format_rfc3339_seconds(when).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn since_takes_durations_dates_and_times() {
        assert_eq!(since("2026-11-01").unwrap(), "2026-11-01T00:00:00Z");
        assert_eq!(
            since("2026-11-01T12:30:00Z").unwrap(),
            "2026-11-01T12:30:00Z"
        );
        assert!(since("7d").unwrap().ends_with('Z'));
        assert!(since("last tuesday")
            .unwrap_err()
            .contains("--since last tuesday"));
    }
}

//! What `trend`, `check` and `export` share: metric names, the runs they read, the commit a
//! revision names, where their output goes.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use crate::config::suite::HistoryTable;
use crate::history::changepoint::Settings as CpSettings;
use crate::history::check::Settings;

use super::read::FilterArgs;
use crate::history::git;
use crate::history::measure::Measure;
use crate::history::series::Series;
use crate::history::Stored;
use crate::metric::{Metric, Stat};
use crate::sys::files;

pub(super) fn measure(flag: &str, name: &str) -> Result<Measure, String> {
    measure_arg(name).map_err(|e| format!("{flag} {name}: {e}"))
}

/// clap's reading of a metric flag (`--metric`, `--warn`): a name [`Measure::parse`] takes.
pub(super) fn measure_arg(name: &str) -> Result<Measure, String> {
    Measure::parse(name).ok_or_else(|| format!("unknown metric (known: {})", Measure::names()))
}

/// The runs a trend, a check or an export reads: finished ones (an interrupted run's numbers
/// are partial) that got at least one response.
pub(super) fn usable(store: &crate::history::Store, f: &FilterArgs) -> Result<Vec<Stored>, String> {
    let runs = store.runs(&f.filter()?).map_err(|e| e.to_string())?;
    // A run with no response at all measured nothing about the server (a dead server, a
    // wrong port): it is kept, but never a point of a trend or a check.
    let answered = |r: &Stored| {
        r.record.kind == crate::history::Kind::Capacity
            || r.record
                .scalars
                .get("requests.completed")
                .is_some_and(|n| *n > 0.0)
    };
    Ok(runs
        .into_iter()
        .filter(|r| !r.record.interrupted && answered(r))
        .collect())
}

/// Writes `text` to `target` (`-`: stdout); the message names `flag`.
pub(super) fn write_to(flag: &str, target: &str, text: &str) -> Result<(), String> {
    if target == "-" {
        files::stdout(text);
        return Ok(());
    }
    std::fs::write(target, text).map_err(|e| format!("{flag} {target}: {e}"))
}

pub(super) fn headline(s: &Series<'_>) -> Measure {
    if s.key.capacity {
        Measure::MaxRate
    } else if s.mode().is_open() {
        Measure::Run(Metric::Latency(Stat::P99))
    } else {
        Measure::Run(Metric::Throughput)
    }
}

/// The commit `--commit` names, else `HEAD`'s. Without `--commit` where `HEAD` names no commit
/// (outside a repository, or before its first commit), the message says what to do instead and
/// names no flag the user did not give as the culprit.
pub(super) fn commit_of(given: Option<&str>, runs: &[Stored]) -> Result<String, String> {
    if let Some(rev) = given {
        return resolve_commit("--commit", rev, runs);
    }
    git::describe("HEAD")
        .map(|info| info.commit)
        .ok_or_else(|| no_head(runs))
}

/// Why there is no `HEAD` to read, and what to do: name a saved commit, or give runs one.
fn no_head(runs: &[Stored]) -> String {
    let why = if git::toplevel().is_none() {
        "not in a git repository"
    } else {
        "this git repository has no commit yet"
    };
    let newest = runs.iter().rev().find_map(|r| r.record.git.as_ref());
    match newest {
        Some(g) => format!(
            "{why}, so HEAD names no commit: name a saved one with --commit HASH (the newest saved: {})",
            crate::history::series::short(&g.commit, 12)
        ),
        None => format!(
            "{why}, and no saved run has a commit: save runs in a git repository, or import result \
             files with `volley history import --commit HASH --branch NAME`; `volley history \
             trend` shows runs without a commit"
        ),
    }
}

/// The full hash of `rev`: from git, or outside a repository the one saved commit it prefixes.
fn resolve_commit(flag: &str, rev: &str, runs: &[Stored]) -> Result<String, String> {
    if let Some(info) = git::describe(rev) {
        return Ok(info.commit);
    }
    let found: BTreeSet<&str> = runs
        .iter()
        .filter_map(|r| r.record.git.as_ref())
        .map(|g| g.commit.as_str())
        .filter(|c| c.starts_with(&rev.to_ascii_lowercase()))
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap_or_default().to_string()),
        0 if git::toplevel().is_none() => Err(format!(
            "{flag} {rev}: no saved run has such a commit (not in a git repository: give a saved hash)"
        )),
        0 => Err(format!(
            "{flag} {rev}: not a revision of this repository, and no saved run has such a commit"
        )),
        n => Err(format!(
            "{flag} {rev}: {n} saved commits start so; give more of the hash"
        )),
    }
}

/// A percentage as written (`5%`, `5`), 0 to 100.
pub(super) fn percent(flag: &str, text: &str) -> Result<f64, String> {
    crate::config::suite::history_table::parse_percent(text)
        .ok_or_else(|| format!("{flag} {text}: not a percentage from 0% to below 100% (like 5%)"))
}

/// The `[history]` table of `--suite FILE`, or none.
pub(super) fn table(suite: Option<&Path>) -> Result<HistoryTable, String> {
    match suite {
        Some(p) => HistoryTable::load(p).map_err(|e| e.to_string()),
        None => Ok(HistoryTable::default()),
    }
}

/// The history file: `--history`, else the suite's `[history] path`, else the default.
pub(super) fn history_path(explicit: Option<&Path>, table: &HistoryTable) -> PathBuf {
    explicit
        .map(Path::to_path_buf)
        .or_else(|| table.path.clone())
        .unwrap_or_else(crate::history::default_path)
}

/// The change points' settings a suite's `[history]` asks for (`max_pvalue`, `window`), with
/// the minimum effect as the smallest change marked.
pub(super) fn changepoints(table: &HistoryTable, min_effect_pct: f64) -> CpSettings {
    let d = Settings::default().changepoint;
    CpSettings {
        window: table.window.unwrap_or(d.window),
        max_pvalue: table.max_pvalue.unwrap_or(d.max_pvalue),
        min_magnitude: min_effect_pct / 100.0,
    }
}

//! The suite harness behind `volley bench SUITE.toml`: build every server once; then for each
//! repetition, server and cell: start a fresh server, wait until it is ready, warm up and
//! measure with the monitor on its process tree, stop it, and save the RunResult at once.
//! `suite.json` is rewritten after every cell, so a failure later loses nothing
//! (docs/contract.md, "Suites").

mod build;
mod cell;
pub(crate) mod certificate;
pub mod estimate;
mod folder;
mod index;
pub(crate) mod lifecycle;
pub(crate) mod matrix;
pub(crate) mod pinning;
pub mod progress;
pub(crate) mod ready;
mod record;
pub(crate) mod runtime;
mod search;
mod shards;
pub mod tools;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use build::FailedBuild;
use cell::CellOutcome;
use matrix::PlannedCell;
use volley_config::suite::{SuiteConfig, SuiteError};
use volley_model::result::suite::SKIPPED_BY_INTERRUPT;
use volley_model::result::{CellStatus, RunResult, SuiteIndex, SuiteState};
use volley_model::sys::{cpus, limits};
use volley_report::Report;

/// Why a suite cannot start (exit code 2); nothing was built or run.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// The suite file cannot be read or is wrong.
    #[error(transparent)]
    Suite(#[from] SuiteError),
    /// `--only` names nothing in the suite.
    #[error("--only: {0}")]
    Only(String),
    /// The filter left no cell.
    #[error("{0}: no cell to run (no scenario runs on the servers left)")]
    NoCells(String),
    /// The descriptor limit cannot be raised for the largest cell.
    #[error("{suite}: {source}")]
    Limits {
        /// The suite file.
        suite: String,
        /// What is needed.
        source: limits::NofileError,
    },
    /// The results folder cannot be used.
    #[error("--out {dir}: {message}")]
    Out {
        /// The folder.
        dir: String,
        /// Why.
        message: String,
    },
}

/// Where the harness tells people how the suite goes (stderr in `volley bench`).
pub trait Log {
    /// A whole line.
    fn line(&mut self, text: &str);
    /// The start of a line that a later `line` finishes (a build, then its outcome).
    fn part(&mut self, text: &str);
}

/// How a suite ended.
pub struct Outcome {
    /// The suite's report: every cell, with results still waiting to be written.
    pub report: Report,
    /// Cells run.
    pub cells: usize,
    /// Cells measured.
    pub ok: usize,
    /// Cells that failed (controls excluded).
    pub failed: usize,
    /// Servers skipped because a program they require is not installed, with the reason.
    pub unavailable: BTreeMap<String, String>,
    /// Their cells.
    pub skipped: usize,
    /// Cells Ctrl-C stopped while they ran (their measurement up to then is kept).
    pub interrupted_cells: usize,
    /// Cells Ctrl-C kept from running.
    pub skipped_by_interrupt: usize,
    /// A threshold broke in some cell.
    pub thresholds_broken: bool,
    /// `suite.json` or a report could not be written in the end.
    pub files_unwritten: bool,
    /// Results that could not be written (their numbers are in the report).
    pub unsaved: Vec<String>,
    /// Ctrl-C ended the suite.
    pub interrupted: bool,
    /// Wall time of the whole suite.
    pub wall: Duration,
    /// The results folder.
    pub out_dir: PathBuf,
}

/// A suite read, checked and planned; nothing started, no folder made.
pub struct Planned {
    /// The suite, filtered by `--only`.
    pub suite: SuiteConfig,
    /// Its cells in run order.
    pub cells: Vec<PlannedCell>,
}

impl Planned {
    /// How many cells and about how long (docs/contract.md, "Suites").
    pub fn estimate(&self) -> estimate::Estimate {
        estimate::Estimate::of(&self.cells)
    }

    /// The `--dry-run` listing: cells per server and scenario, and the estimated time.
    pub fn listing(&self) -> String {
        let path = std::env::var_os("PATH");
        let missing = tools::unavailable(&self.suite, path.as_deref());
        let skipped: Vec<String> = missing.into_keys().collect();
        estimate::listing(&self.suite, &self.cells, &skipped)
    }
}

/// Reads and checks a suite and plans its cells (`only`: server and scenario names).
pub fn plan(suite_path: &Path, only: &[String]) -> Result<Planned, StartError> {
    let (cores, _) = cpus::allowed();
    let mut suite = SuiteConfig::load(suite_path, cores)?;
    matrix::apply_only(&mut suite, only).map_err(StartError::Only)?;
    let cells = matrix::plan(&suite);
    if cells.is_empty() {
        return Err(StartError::NoCells(suite_path.display().to_string()));
    }
    Ok(Planned { suite, cells })
}

/// Prepares a planned suite to run: the descriptor limit for its largest cell and the results
/// folder (`out`, or `results/<suite>-<UTC timestamp>/`). `only` is recorded in `suite.json`.
pub fn prepare<'a>(
    planned: Planned,
    only: &[String],
    out: Option<PathBuf>,
    interrupts: &'a AtomicUsize,
    log: &'a mut dyn Log,
) -> Result<Harness<'a>, StartError> {
    let Planned { suite, cells } = planned;
    let max_conns = cells
        .iter()
        .map(|c| c.cell.config.load.most_connections() as u64)
        .max()
        .unwrap_or(1);
    limits::ensure_nofile(max_conns).map_err(|source| StartError::Limits {
        suite: suite.path.display().to_string(),
        source,
    })?;
    let out_dir = out.unwrap_or_else(|| folder::default_out(&suite.name));
    let dir = out_dir.display().to_string();
    let out_err = |message: String| StartError::Out {
        dir: dir.clone(),
        message,
    };
    folder::check_space(&out_dir, cells.len()).map_err(out_err)?;
    folder::prepare_out(&out_dir).map_err(out_err)?;
    let mut h = Harness {
        index: index::new_index(&suite, only, &cells),
        suite,
        out_dir,
        cells,
        interrupts,
        log,
        unwritten: Default::default(),
        thresholds_broken: false,
        unsaved: BTreeMap::new(),
        unsaved_capacity: BTreeMap::new(),
        wrong_port: BTreeMap::new(),
        live: None,
    };
    h.save_index().map_err(|e| out_err(e.to_string()))?;
    Ok(h)
}

/// A suite ready to run: its cells planned, its results folder made.
pub struct Harness<'a> {
    suite: SuiteConfig,
    index: SuiteIndex,
    out_dir: PathBuf,
    cells: Vec<PlannedCell>,
    interrupts: &'a AtomicUsize,
    log: &'a mut dyn Log,
    /// Files whose last write failed (`suite.json`, reports).
    unwritten: BTreeSet<&'static str>,
    thresholds_broken: bool,
    /// Results a failed write left in memory: row -> (path, JSON, result).
    unsaved: BTreeMap<usize, (String, String, RunResult)>,
    /// Capacity searches a failed write left in memory, the same way.
    unsaved_capacity: BTreeMap<
        usize,
        (
            String,
            String,
            volley_model::result::capacity::CapacityResult,
        ),
    >,
    /// Servers seen listening on other ports than `$PORT`, with the reason: their later cells
    /// fail at once instead of waiting again.
    wrong_port: BTreeMap<String, String>,
    /// The live views watching the suite (`volley bench --dashboard`, …): each measured cell
    /// is a run of theirs.
    live: Option<&'a volley_live::Live>,
}

impl<'a> Harness<'a> {
    /// Lets `live` watch the suite: each measured cell is a run of its views, and the table
    /// of finished cells is its progress.
    pub fn watched_by(mut self, live: &'a volley_live::Live) -> Self {
        self.live = Some(live);
        self
    }

    /// Ctrl-C was pressed (once is enough to stop before the next cell).
    fn interrupted(&self) -> bool {
        self.interrupts.load(Ordering::SeqCst) > 0
    }

    /// Builds every server once, then runs every cell in order (rep -> server -> scenario ->
    /// cell), saving each result at once, until the end or Ctrl-C.
    pub fn run(mut self) -> Outcome {
        let t_start = Instant::now();
        let mut prog = progress::Progress::new(&self.cells);
        let path = std::env::var_os("PATH");
        let missing = tools::unavailable(&self.suite, path.as_deref());
        for (i, c) in self.cells.iter().enumerate() {
            if missing.contains_key(&c.server) {
                prog.skip(i);
            }
        }
        let header = prog.header(&self.suite, &self.out_dir);
        self.log.line(&header);
        for note in matrix::unspoken(&self.suite) {
            self.log.line(&note);
        }
        self.skip_unavailable(&missing);
        let failed_builds = self.build_all(&missing);
        // After the builds: a version command may need what they made (a venv's python).
        self.record_versions(&missing);
        self.save_index_or_warn();
        self.pin_client();
        for i in 0..self.cells.len() {
            if self.interrupted() {
                break;
            }
            if !missing.contains_key(&self.cells[i].server) {
                self.run_one(i, &mut prog, &failed_builds, t_start);
            }
        }
        let interrupted = self.interrupted();
        self.finish(interrupted);
        self.outcome(interrupted, t_start, missing)
    }

    /// Pins volley to `client_cpus`; when that fails the suite runs unpinned and says so.
    fn pin_client(&mut self) {
        let Some(c) = &self.suite.client_cpus else {
            return;
        };
        if let Err(e) = pinning::pin_current_thread(&c.cpus) {
            let line = format!("volley bench: client_cpus {}: {e}; not pinned", c.text);
            self.log.line(&line);
            self.index.env.pinning.client_cpus = None;
        }
    }

    /// Runs cell `i` (or fails it at once when its server did not build) and records it.
    fn run_one(
        &mut self,
        i: usize,
        prog: &mut progress::Progress,
        failed_builds: &BTreeMap<String, FailedBuild>,
        t_start: Instant,
    ) {
        let cell = self.cells[i].clone();
        self.log.line(&prog.starting(i, &cell, t_start.elapsed()));
        let t_cell = Instant::now();
        let outcome = match failed_builds.get(&cell.server) {
            Some(f) => CellOutcome::failed(format!("build failed: {}", f.reason), f.tail.clone()),
            None => self.run_cell(&cell),
        };
        let wall = t_cell.elapsed();
        self.record(i, &cell, outcome, wall);
        if let Some(live) = self.live {
            let rows: Vec<_> = self
                .index
                .rows
                .iter()
                .filter(|r| r.status != CellStatus::Pending)
                .collect();
            let json =
                serde_json::json!({"kind": "suite", "total": self.index.rows.len(), "rows": rows});
            live.progress(&json.to_string());
        }
        prog.finished(i, wall);
        self.log.line(&progress::outcome_line(&self.index.rows[i]));
    }

    /// Closes the index: cells not reached are skipped, the suite is done or interrupted, and
    /// the results, `suite.json` and reports get a last write.
    fn finish(&mut self, interrupted: bool) {
        for row in self
            .index
            .rows
            .iter_mut()
            .filter(|r| r.status == CellStatus::Pending)
        {
            row.status = CellStatus::Skipped;
            row.reason = Some(SKIPPED_BY_INTERRUPT.into());
        }
        self.index.state = if interrupted {
            SuiteState::Interrupted
        } else {
            SuiteState::Done
        };
        self.index.finished_at =
            Some(humantime::format_rfc3339_seconds(SystemTime::now()).to_string());
        self.retry_unsaved();
        self.save_index_or_warn();
        self.write_reports();
    }

    /// How the suite ended, counted from its rows.
    fn outcome(
        &self,
        interrupted: bool,
        t_start: Instant,
        unavailable: BTreeMap<String, String>,
    ) -> Outcome {
        let rows = &self.index.rows;
        Outcome {
            skipped: rows
                .iter()
                .filter(|r| r.status == CellStatus::Skipped && unavailable.contains_key(&r.server))
                .count(),
            unavailable,
            interrupted_cells: rows
                .iter()
                .filter(|r| r.status == CellStatus::Interrupted)
                .count(),
            skipped_by_interrupt: rows
                .iter()
                .filter(|r| {
                    r.status == CellStatus::Skipped
                        && r.reason.as_deref() == Some(SKIPPED_BY_INTERRUPT)
                })
                .count(),
            report: self.report(),
            cells: rows.len(),
            ok: rows.iter().filter(|r| r.status == CellStatus::Ok).count(),
            failed: rows
                .iter()
                .filter(|r| !r.control && r.status == CellStatus::Failed)
                .count(),
            thresholds_broken: self.thresholds_broken,
            files_unwritten: !self.unwritten.is_empty(),
            unsaved: self
                .unsaved
                .values()
                .map(|(rel, _, _)| rel.clone())
                .chain(
                    self.unsaved_capacity
                        .values()
                        .map(|(rel, _, _)| rel.clone()),
                )
                .collect(),
            interrupted,
            wall: t_start.elapsed(),
            out_dir: self.out_dir.clone(),
        }
    }
}

/// Seconds to the millisecond, as `suite.json` keeps them.
fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

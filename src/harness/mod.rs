//! The suite harness behind `volley bench SUITE.toml`: build every server once; then for each
//! repetition, server and cell: start a fresh server, wait until it is ready, warm up and
//! measure with the monitor on its process tree, stop it, and save the RunResult at once.
//! `suite.json` is rewritten after every cell, so a failure later loses nothing
//! (docs/contract.md, "Suites").

pub mod lifecycle;
pub mod matrix;
pub mod pinning;
pub mod progress;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::config::suite::{ServerKind, SuiteConfig, SuiteError};
use crate::config::{parse_url, MonitorConfig, DEFAULT_MONITOR_INTERVAL};
use crate::engine::Observers;
use crate::measure::{self, MeasureError};
use crate::monitor::procfs;
use crate::report::{Format, Report};
use crate::result::*;
use crate::sys::{cpus, limits};
use matrix::PlannedCell;

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
    #[error("{suite}: {message}")]
    Limits {
        /// The suite file.
        suite: String,
        /// What is needed.
        message: String,
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

/// Reads and checks a suite, plans its cells (`only`: server and scenario names) and prepares
/// the results folder (`out`, or `results/<suite>-<UTC timestamp>/`).
pub fn prepare<'a>(
    suite_path: &Path,
    only: &[String],
    out: Option<PathBuf>,
    interrupts: &'a AtomicUsize,
    log: &'a mut dyn Log,
) -> Result<Harness<'a>, StartError> {
    let (cores, _) = cpus::allowed();
    let mut suite = SuiteConfig::load(suite_path, cores)?;
    matrix::apply_only(&mut suite, only).map_err(StartError::Only)?;
    let cells = matrix::plan(&suite);
    if cells.is_empty() {
        return Err(StartError::NoCells(suite_path.display().to_string()));
    }
    let max_conns = cells
        .iter()
        .map(|c| c.cell.config.load.connections as u64)
        .max()
        .unwrap_or(1);
    limits::ensure_nofile(max_conns).map_err(|message| StartError::Limits {
        suite: suite_path.display().to_string(),
        message,
    })?;
    let out_dir = out.unwrap_or_else(|| default_out(&suite.name));
    let dir = out_dir.display().to_string();
    let out_err = |message: String| StartError::Out {
        dir: dir.clone(),
        message,
    };
    check_space(&out_dir, cells.len()).map_err(out_err)?;
    prepare_out(&out_dir).map_err(out_err)?;
    let mut h = Harness {
        index: new_index(&suite, only, &cells),
        suite,
        out_dir,
        cells,
        interrupts,
        log,
        unwritten: Default::default(),
        thresholds_broken: false,
        unsaved: BTreeMap::new(),
    };
    h.save_index().map_err(|e| out_err(e.to_string()))?;
    Ok(h)
}

/// `results/<suite>-<UTC timestamp>/`.
fn default_out(name: &str) -> PathBuf {
    let now = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = now.chars().filter(|c| c.is_ascii_alphanumeric()).collect();
    PathBuf::from("results").join(format!("{name}-{stamp}"))
}

/// Creates the results folder; an existing non-empty one is refused (its results stay).
fn prepare_out(dir: &Path) -> Result<(), String> {
    if dir.exists() {
        let empty = std::fs::read_dir(dir)
            .map_err(|e| e.to_string())?
            .next()
            .is_none();
        if !empty {
            return Err(
                "exists and is not empty (results are never overwritten; choose another folder)"
                    .into(),
            );
        }
    }
    for sub in ["", "runs", "logs"] {
        std::fs::create_dir_all(dir.join(sub)).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Space a suite needs, roughly: a RunResult and logs per cell, and the reports (rewritten
/// through a temporary copy after every cell).
fn space_needed(cells: usize) -> u64 {
    16 * 1024 * 1024 + cells as u64 * 128 * 1024
}

/// Refuses to start when the results folder's file system cannot hold the suite's results.
fn check_space(dir: &Path, cells: usize) -> Result<(), String> {
    // The folder may not exist yet: its nearest existing ancestor is on the same file system.
    let existing = dir
        .ancestors()
        .find(|a| a.exists())
        .unwrap_or(Path::new("."));
    let Some(free) = free_bytes(existing) else {
        return Ok(());
    };
    let need = space_needed(cells);
    if free < need {
        return Err(format!(
            "only {} free; {cells} cells need about {} for their results and reports",
            crate::units::bytes(free),
            crate::units::bytes(need)
        ));
    }
    Ok(())
}

/// Bytes available to an unprivileged writer on `dir`'s file system.
fn free_bytes(dir: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: statvfs fills the struct we own from a valid C string.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    Some(st.f_bavail as u64 * st.f_frsize as u64)
}

fn new_index(suite: &SuiteConfig, only: &[String], cells: &[PlannedCell]) -> SuiteIndex {
    let text = |p: &str| std::fs::read_to_string(p).ok();
    let mut tools = BTreeMap::new();
    tools.insert("volley".to_string(), env!("CARGO_PKG_VERSION").to_string());
    SuiteIndex {
        schema: SUITE_SCHEMA.to_string(),
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        suite_file: suite.path.display().to_string(),
        suite: suite.raw.clone(),
        only: only.to_vec(),
        env: SuiteEnv {
            cpu_model: text("/proc/cpuinfo").and_then(|t| procfs::parse_cpu_model(&t)),
            cores: cpus::online(),
            kernel: text("/proc/sys/kernel/osrelease").map(|s| s.trim().to_string()),
            pinning: SuitePinning {
                client_cpus: suite.client_cpus.as_ref().map(|c| c.text.clone()),
                server_cpus: suite.server_cpus.as_ref().map(|c| c.text.clone()),
            },
            tools,
        },
        started_at: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        finished_at: None,
        state: SuiteState::Running,
        builds: suite
            .servers
            .iter()
            .filter_map(|s| match &s.kind {
                ServerKind::Managed(m) if m.build.is_some() => Some(BuildRow {
                    server: s.name.clone(),
                    status: BuildStatus::Pending,
                    reason: None,
                    log: format!("logs/{}.build.log", s.name),
                    wall_s: None,
                }),
                _ => None,
            })
            .collect(),
        rows: cells.iter().map(|c| c.pending_row(suite)).collect(),
    }
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
    unwritten: std::collections::BTreeSet<&'static str>,
    thresholds_broken: bool,
    /// Results a failed write left in memory: row -> (path, JSON, result).
    unsaved: BTreeMap<usize, (String, String, RunResult)>,
}

/// Start of the note on a row whose result is not on disk yet.
const UNSAVED: &str = "result not written yet (kept in memory, retried after every cell): ";

/// What one cell came to.
struct CellOutcome {
    status: CellStatus,
    reason: Option<String>,
    stderr_tail: Vec<String>,
    notes: Vec<String>,
    result: Option<RunResult>,
}

impl CellOutcome {
    fn failed(reason: String, stderr_tail: Vec<String>) -> Self {
        CellOutcome {
            status: CellStatus::Failed,
            reason: Some(reason),
            stderr_tail,
            notes: Vec::new(),
            result: None,
        }
    }
}

impl Harness<'_> {
    fn interrupted(&self) -> bool {
        self.interrupts.load(Ordering::SeqCst) > 0
    }

    /// Writes `suite.json` atomically (a reader never sees half a file).
    fn save_index(&mut self) -> std::io::Result<()> {
        let mut json = serde_json::to_string_pretty(&self.index).map_err(std::io::Error::other)?;
        json.push('\n');
        crate::sys::files::write_atomically(&self.out_dir.join("suite.json"), json.as_bytes())
    }

    fn save_index_or_warn(&mut self) {
        let r = self.save_index();
        self.wrote("suite.json", r);
    }

    /// Keeps track of the files whose last write failed (warning once per failure, and when
    /// one is written again); the suite exits 3 if any is still unwritten at the end.
    fn wrote(&mut self, name: &'static str, r: std::io::Result<()>) {
        match r {
            Ok(()) => {
                if self.unwritten.remove(name) {
                    let line = format!(
                        "volley bench: wrote {} again",
                        self.out_dir.join(name).display()
                    );
                    self.log.line(&line);
                }
            }
            Err(e) => {
                if self.unwritten.insert(name) {
                    let line = format!(
                        "volley bench: cannot write {}: {e}",
                        self.out_dir.join(name).display()
                    );
                    self.log.line(&line);
                }
            }
        }
    }

    /// Builds every server once, then runs every cell in order (rep -> server -> scenario ->
    /// cell), saving each result at once, until the end or Ctrl-C.
    pub fn run(mut self) -> Outcome {
        let t_start = Instant::now();
        let mut prog = progress::Progress::new(&self.cells);
        let header = prog.header(&self.suite, &self.out_dir);
        self.log.line(&header);
        let failed_builds = self.build_all();
        // After the builds: a version command may need what they made (a venv's python).
        self.record_versions();
        self.save_index_or_warn();

        if let Some(c) = &self.suite.client_cpus {
            if let Err(e) = pinning::pin_current_thread(&c.cpus) {
                let line = format!("volley bench: client_cpus {}: {e}; not pinned", c.text);
                self.log.line(&line);
                self.index.env.pinning.client_cpus = None;
            }
        }

        for i in 0..self.cells.len() {
            if self.interrupted() {
                break;
            }
            let cell = self.cells[i].clone();
            self.log.line(&prog.starting(i, &cell, t_start.elapsed()));
            let t_cell = Instant::now();
            let outcome = match failed_builds.get(&cell.server) {
                Some((reason, tail)) => {
                    CellOutcome::failed(format!("build failed: {reason}"), tail.clone())
                }
                None => self.run_cell(&cell),
            };
            let wall = t_cell.elapsed();
            self.record(i, &cell, outcome, wall);
            prog.finished(i, wall);
            self.log.line(&progress::outcome_line(&self.index.rows[i]));
        }

        let interrupted = self.interrupted();
        for row in self
            .index
            .rows
            .iter_mut()
            .filter(|r| r.status == CellStatus::Pending)
        {
            row.status = CellStatus::Skipped;
            row.reason = Some("interrupted before this cell".into());
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
        let failed = self
            .index
            .rows
            .iter()
            .filter(|r| !r.control && r.status == CellStatus::Failed)
            .count();
        Outcome {
            report: self.report(),
            cells: self.index.rows.len(),
            ok: self
                .index
                .rows
                .iter()
                .filter(|r| r.status == CellStatus::Ok)
                .count(),
            failed,
            thresholds_broken: self.thresholds_broken,
            files_unwritten: !self.unwritten.is_empty(),
            unsaved: self
                .unsaved
                .values()
                .map(|(rel, _, _)| rel.clone())
                .collect(),
            interrupted,
            wall: t_start.elapsed(),
            out_dir: self.out_dir.clone(),
        }
    }

    /// First output line of each server's `version` command (10 s at most).
    fn record_versions(&mut self) {
        for s in &self.suite.servers {
            let Some(cmd) = &s.version else { continue };
            let dir = match &s.kind {
                ServerKind::Managed(m) => m.dir.clone(),
                _ => PathBuf::from("."),
            };
            let v = version_of(cmd, &dir).unwrap_or_else(|e| format!("unknown ({e})"));
            self.index.env.tools.insert(s.name.clone(), v);
        }
    }

    /// Builds every managed server once; returns the failed ones with their reason and the
    /// last lines of the build's output.
    fn build_all(&mut self) -> BTreeMap<String, (String, Vec<String>)> {
        let mut failed = BTreeMap::new();
        for s in self.suite.servers.clone() {
            let ServerKind::Managed(m) = &s.kind else {
                continue;
            };
            let Some(line) = &m.build else { continue };
            let Some(bi) = self.index.builds.iter().position(|b| b.server == s.name) else {
                continue;
            };
            if self.interrupted() {
                failed.insert(s.name.clone(), ("interrupted".to_string(), Vec::new()));
                continue;
            }
            self.log.part(&format!("build {}: {line} ... ", s.name));
            let log = self.out_dir.join(&self.index.builds[bi].log);
            let t = Instant::now();
            let r = lifecycle::build(&m.dir, line, &log, self.interrupts);
            let b = &mut self.index.builds[bi];
            b.wall_s = Some(round3(t.elapsed().as_secs_f64()));
            match r {
                Ok(()) => {
                    b.status = BuildStatus::Ok;
                    self.log
                        .line(&format!("ok ({:.1} s)", t.elapsed().as_secs_f64()));
                }
                Err(reason) => {
                    b.status = BuildStatus::Failed;
                    b.reason = Some(reason.clone());
                    self.log.line(&format!("FAILED: {reason}"));
                    let tail = lifecycle::tail(&log, lifecycle::TAIL_LINES);
                    for l in &tail {
                        self.log.line(&format!("  | {l}"));
                    }
                    failed.insert(
                        s.name.clone(),
                        (
                            format!("{reason} (see {})", self.index.builds[bi].log),
                            tail,
                        ),
                    );
                }
            }
            self.save_index_or_warn();
        }
        failed
    }

    fn run_cell(&mut self, cell: &PlannedCell) -> CellOutcome {
        let spec = self.suite.servers[cell.server_idx].clone();
        let cores = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().0, |c| c.cpus.len());
        match &spec.kind {
            ServerKind::Managed(m) => {
                let port = match lifecycle::free_port() {
                    Ok(p) => p,
                    Err(e) => return CellOutcome::failed(format!("no free port: {e}"), Vec::new()),
                };
                let logs = (
                    self.out_dir.join(format!("logs/{}.stdout", cell.id)),
                    self.out_dir.join(format!("logs/{}.stderr", cell.id)),
                );
                let mut running = match lifecycle::start(
                    m,
                    port,
                    self.suite.server_cpus.as_ref(),
                    (&logs.0, &logs.1),
                ) {
                    Ok(r) => r,
                    Err(e) => return CellOutcome::failed(e, Vec::new()),
                };
                let mut outcome = match lifecycle::wait_ready(
                    &mut running,
                    &m.ready_path,
                    m.ready_timeout,
                    self.interrupts,
                ) {
                    Err(reason) => {
                        let mut o = CellOutcome::failed(reason, Vec::new());
                        if self.interrupted() {
                            o.status = CellStatus::Interrupted;
                        }
                        o
                    }
                    Ok(_ready) => {
                        let url = format!("http://127.0.0.1:{port}{}", cell.cell.path);
                        self.measure_cell(cell, &url, cores, Some(running.pgid()))
                    }
                };
                // A server that died during the run fails its cell; the measurement is kept.
                let died = running.child.try_wait().ok().flatten();
                let stopped = lifecycle::stop(&mut running);
                outcome.notes.extend(stopped.notes());
                if outcome.status == CellStatus::Ok {
                    if let Some(status) = died {
                        outcome.status = CellStatus::Failed;
                        outcome.reason = Some(format!(
                            "the server {} during the run",
                            lifecycle::describe(status)
                        ));
                    } else if !stopped.left.is_empty() {
                        outcome.status = CellStatus::Failed;
                        outcome.reason = Some(format!(
                            "processes left running after SIGKILL: {:?}",
                            stopped.left
                        ));
                    }
                }
                if outcome.status != CellStatus::Ok {
                    outcome.stderr_tail = running.stderr_tail();
                }
                // Most servers print nothing to stdout: no empty files in the results.
                if std::fs::metadata(&logs.0).is_ok_and(|m| m.len() == 0) {
                    let _ = std::fs::remove_file(&logs.0);
                }
                outcome
            }
            ServerKind::Url(t) => {
                let url = format!(
                    "http://{}{}",
                    t.host_header,
                    if cell.cell.path == "/" && t.path != "/" {
                        &t.path
                    } else {
                        &cell.cell.path
                    }
                );
                self.measure_cell(cell, &url, cores, None)
            }
            ServerKind::ClosedPort => {
                let port = match lifecycle::free_port() {
                    Ok(p) => p,
                    Err(e) => return CellOutcome::failed(format!("no free port: {e}"), Vec::new()),
                };
                let url = format!("http://127.0.0.1:{port}{}", cell.cell.path);
                self.measure_cell(cell, &url, cores, None)
            }
        }
    }

    /// Measures a cell's load against `url`, monitoring the server's process group `pid`.
    fn measure_cell(
        &mut self,
        cell: &PlannedCell,
        url: &str,
        cores: usize,
        pid: Option<i32>,
    ) -> CellOutcome {
        let mut cfg = cell.cell.config.clone();
        match parse_url(url) {
            Ok(t) => cfg.load.target = t,
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        }
        cfg.monitor = pid.map(|pid| MonitorConfig {
            pid,
            interval: DEFAULT_MONITOR_INTERVAL,
        });
        let prepared = match measure::prepare(&cfg) {
            Ok(p) => p,
            Err(e @ MeasureError::Monitor(_)) => {
                return CellOutcome::failed(format!("monitor: {e}"), Vec::new())
            }
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        };
        let cpu_list = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().1, |c| c.text.clone());
        let argv = cell_argv(url, &cell.cell.flags, pid);
        let ctx = measure::Context {
            argv: &argv,
            cores,
            client_cpus: &cpu_list,
            server_cpus: self.suite.server_cpus.as_ref().map(|c| c.text.as_str()),
        };
        let m = match measure::run(
            &cfg,
            prepared,
            &ctx,
            self.interrupts,
            &mut Observers(vec![]),
        ) {
            Ok(m) => m,
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        };
        let result = m.result;
        let control = cell.control;
        let (status, reason) = if m.interrupted {
            (
                CellStatus::Interrupted,
                Some("interrupted (the measurement up to then is kept)".to_string()),
            )
        } else if result.requests.completed == 0 && !control {
            (
                CellStatus::Failed,
                Some(format!(
                    "no response ({} errors: {} connect, {} timeout, {} reset, {} protocol, {} closed)",
                    result.requests.errors,
                    result.errors.connect,
                    result.errors.timeout,
                    result.errors.reset,
                    result.errors.protocol,
                    result.errors.closed
                )),
            )
        } else {
            (CellStatus::Ok, None)
        };
        CellOutcome {
            status,
            reason,
            stderr_tail: Vec::new(),
            notes: Vec::new(),
            result: Some(result),
        }
    }

    /// Saves the cell's RunResult at once and updates its row and `suite.json`.
    fn record(&mut self, i: usize, cell: &PlannedCell, o: CellOutcome, wall: Duration) {
        self.retry_unsaved();
        let status = o.status;
        let reason = o.reason;
        let mut path = None;
        let mut headline = None;
        let mut unsaved_note = None;
        if let Some(r) = &o.result {
            let rel = format!("runs/{}.json", cell.id);
            let json = Format::Json.render_run(r);
            match crate::sys::files::write_atomically(&self.out_dir.join(&rel), json.as_bytes()) {
                Ok(()) => path = Some(rel),
                Err(e) => {
                    // A full disk must not lose the measurement: it stays in memory, is tried
                    // again after every cell, and is in the final table either way.
                    self.log.line(&format!("volley bench: cannot write {rel}: {e}; kept in memory, retried after every cell"));
                    unsaved_note = Some(format!("{UNSAVED}{e}"));
                    self.unsaved.insert(i, (rel, json, r.clone()));
                }
            }
            headline = Some(Headline::of(r));
        }
        let row = &mut self.index.rows[i];
        row.status = status;
        row.reason = reason;
        row.stderr_tail = o.stderr_tail;
        row.notes = o.notes;
        if let Some(r) = &o.result {
            row.notes.extend(
                r.warnings
                    .iter()
                    .filter(|w| w.kind() != WarningKind::ClosedLoop)
                    .map(|w| w.text().to_string()),
            );
        }
        row.path = path;
        row.headline = headline;
        if let Some(r) = &o.result {
            for t in r.thresholds.iter().filter(|t| !t.pass) {
                row.notes.push(format!(
                    "threshold broken: {} (measured {})",
                    t.threshold,
                    t.actual.map_or("nothing".into(), |a| a.to_string())
                ));
                self.thresholds_broken = true;
            }
        }
        row.notes.extend(unsaved_note);
        row.wall_s = Some(round3(wall.as_secs_f64()));
        let log = format!("logs/{}.stderr", cell.id);
        if self.out_dir.join(&log).is_file() {
            row.log = Some(log);
        }
        self.save_index_or_warn();
        self.write_reports();
    }

    /// Tries again to write the results a full disk refused.
    fn retry_unsaved(&mut self) {
        let pending: Vec<usize> = self.unsaved.keys().copied().collect();
        for i in pending {
            let (rel, json, _) = &self.unsaved[&i];
            if crate::sys::files::write_atomically(&self.out_dir.join(rel), json.as_bytes()).is_ok()
            {
                let row = &mut self.index.rows[i];
                row.path = Some(rel.clone());
                row.notes.retain(|n| !n.starts_with(UNSAVED));
                self.log
                    .line(&format!("volley bench: wrote {rel} (it failed before)"));
                self.unsaved.remove(&i);
            }
        }
    }

    /// The report of everything so far, with the results still waiting to be written.
    fn report(&self) -> Report {
        let mut report = Report::suite(self.index.clone(), &self.out_dir);
        for (i, (_, _, r)) in &self.unsaved {
            if let Some(c) = report.cells.get_mut(*i) {
                c.result = Some(r.clone());
            }
        }
        report
    }

    /// `report.html`, `report.md` and `results.csv` of everything so far, after every cell, so
    /// a crash still leaves a report.
    fn write_reports(&mut self) {
        let report = self.report();
        for (name, format) in [
            ("report.html", Format::Html),
            ("report.md", Format::Markdown),
            ("results.csv", Format::Csv),
        ] {
            let text = format.reporter().render(&report);
            let r = crate::sys::files::write_atomically(&self.out_dir.join(name), text.as_bytes());
            self.wrote(name, r);
        }
    }
}

/// The `volley run` command line a cell amounts to (the RunResult's `argv`): its flags, and
/// the ones the harness adds.
fn cell_argv(url: &str, flags: &[String], pid: Option<i32>) -> Vec<String> {
    let mut argv = vec!["volley".to_string(), "run".to_string(), url.to_string()];
    argv.extend(flags.iter().cloned());
    argv.push("--quiet".into());
    if let Some(pid) = pid {
        argv.extend(["--pid".to_string(), pid.to_string()]);
    }
    argv
}

fn version_of(cmd: &str, dir: &Path) -> Result<String, String> {
    let mut child = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{cmd} 2>&1"))
        .current_dir(dir)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(20)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return Err("timed out".into());
            }
        }
    }
    let mut out = String::new();
    if let Some(mut so) = child.stdout.take() {
        let _ = std::io::Read::read_to_string(&mut so, &mut out);
    }
    out.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(|l| l.chars().take(200).collect())
        .ok_or_else(|| "no output".to_string())
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

//! `volley bench SUITE.toml`: build every server once; then for each repetition, server and
//! cell: start a fresh server, wait until it is ready, warm up and measure with the monitor on
//! its process tree, stop it, and save the RunResult at once. `suite.json` is rewritten after
//! every cell, so a failure later loses nothing (DESIGN §1, §4).

pub mod lifecycle;
pub mod matrix;
pub mod pinning;
pub mod progress;

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime};

use crate::cli::BenchArgs;
use crate::config::suite::{ServerKind, SuiteConfig};
use crate::engine::transport;
use crate::monitor::{procfs, server};
use crate::report::{Format, Report};
use crate::result::*;
use crate::sys::cpus;
use crate::sys::limits;
use crate::ExitCode;
use matrix::PlannedCell;

/// Runs `volley bench` and returns the exit code.
pub fn execute(args: &BenchArgs, interrupts: &AtomicUsize) -> ExitCode {
    let (cores, _) = cpus::allowed();
    let mut suite = match SuiteConfig::load(&args.suite, cores) {
        Ok(s) => s,
        Err(e) => return usage(&e.to_string()),
    };
    if let Err(e) = matrix::apply_only(&mut suite, &args.only) {
        return usage(&format!("--only: {e}"));
    }
    let cells = matrix::plan(&suite);
    if cells.is_empty() {
        return usage(&format!(
            "{}: no cell to run (no scenario runs on the servers left)",
            args.suite.display()
        ));
    }
    let max_conns = cells
        .iter()
        .map(|c| c.connections_hint(&suite))
        .max()
        .unwrap_or(1);
    if let Err(e) = limits::ensure_nofile(max_conns) {
        return usage(&format!("{}: {e}", args.suite.display()));
    }
    let out_dir = args.out.clone().unwrap_or_else(|| default_out(&suite.name));
    if let Err(e) = check_space(&out_dir, cells.len()) {
        return usage(&format!("--out {}: {e}", out_dir.display()));
    }
    if let Err(e) = prepare_out(&out_dir) {
        return usage(&format!("--out {}: {e}", out_dir.display()));
    }
    let mut h = Harness {
        index: new_index(&suite, &args.only, &cells),
        suite,
        out_dir,
        cells,
        interrupts,
        unwritten: Default::default(),
        thresholds_broken: false,
        unsaved: BTreeMap::new(),
    };
    if let Err(e) = h.save_index() {
        return usage(&format!("--out {}: {e}", h.out_dir.display()));
    }
    h.run()
}

fn usage(msg: &str) -> ExitCode {
    eprintln!("volley bench: {msg}");
    ExitCode::Usage
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

struct Harness<'a> {
    suite: SuiteConfig,
    index: SuiteIndex,
    out_dir: PathBuf,
    cells: Vec<PlannedCell>,
    interrupts: &'a AtomicUsize,
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
                    eprintln!(
                        "volley bench: wrote {} again",
                        self.out_dir.join(name).display()
                    );
                }
            }
            Err(e) => {
                if self.unwritten.insert(name) {
                    eprintln!(
                        "volley bench: cannot write {}: {e}",
                        self.out_dir.join(name).display()
                    );
                }
            }
        }
    }

    fn run(&mut self) -> ExitCode {
        let t_start = Instant::now();
        let mut prog = progress::Progress::new(&self.cells);
        eprintln!("{}", prog.header(&self.suite, &self.out_dir));
        let failed_builds = self.build_all();
        // After the builds: a version command may need what they made (a venv's python).
        self.record_versions();
        self.save_index_or_warn();

        if let Some(c) = &self.suite.client_cpus {
            if let Err(e) = pinning::pin_current_thread(&c.cpus) {
                eprintln!("volley bench: client_cpus {}: {e}; not pinned", c.text);
                self.index.env.pinning.client_cpus = None;
            }
        }

        for i in 0..self.cells.len() {
            if self.interrupted() {
                break;
            }
            let cell = self.cells[i].clone();
            eprintln!("{}", prog.starting(i, &cell, t_start.elapsed()));
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
            eprintln!("{}", progress::outcome_line(&self.index.rows[i]));
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
        crate::sys::files::stdout(&Format::Terminal.reporter().render(&self.report()));
        if !self.unsaved.is_empty() {
            eprintln!(
                "volley bench: {} result(s) could not be written to {} (their numbers are in the table above):",
                self.unsaved.len(),
                self.out_dir.display()
            );
            for (rel, _, _) in self.unsaved.values() {
                eprintln!("  {rel}");
            }
        }
        let failed = self
            .index
            .rows
            .iter()
            .filter(|r| !r.control && r.status == CellStatus::Failed)
            .count();
        crate::sys::files::stdout(&format!(
            "\n{} cells in {}: {} ok, {failed} failed{}. Results: {} (report: {})\n",
            self.index.rows.len(),
            progress::clock(t_start.elapsed()),
            self.index
                .rows
                .iter()
                .filter(|r| r.status == CellStatus::Ok)
                .count(),
            if self.thresholds_broken {
                ", thresholds broken"
            } else {
                ""
            },
            self.out_dir.join("suite.json").display(),
            self.out_dir.join("report.html").display()
        ));
        let mut code = ExitCode::Ok;
        if self.thresholds_broken {
            code = ExitCode::NoResponse;
        }
        if failed > 0 || !self.unwritten.is_empty() || !self.unsaved.is_empty() {
            code = ExitCode::Failed;
        }
        if interrupted {
            code = code.max_precedence(ExitCode::Interrupted);
        }
        code
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
            eprint!("build {}: {line} ... ", s.name);
            let _ = std::io::stderr().flush();
            let log = self.out_dir.join(&self.index.builds[bi].log);
            let t = Instant::now();
            let r = lifecycle::build(&m.dir, line, &log, self.interrupts);
            let b = &mut self.index.builds[bi];
            b.wall_s = Some(round3(t.elapsed().as_secs_f64()));
            match r {
                Ok(()) => {
                    b.status = BuildStatus::Ok;
                    eprintln!("ok ({:.1} s)", t.elapsed().as_secs_f64());
                }
                Err(reason) => {
                    b.status = BuildStatus::Failed;
                    b.reason = Some(reason.clone());
                    eprintln!("FAILED: {reason}");
                    let tail = lifecycle::tail(&log, lifecycle::TAIL_LINES);
                    for l in &tail {
                        eprintln!("  | {l}");
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
                        let pid = running.pgid();
                        let extra = vec!["--quiet".into(), "--pid".into(), pid.to_string()];
                        self.measure_cell(cell, &url, &extra, cores, Some(pid))
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
                self.measure_cell(cell, &url, &["--quiet".into()], cores, None)
            }
            ServerKind::ClosedPort => {
                let port = match lifecycle::free_port() {
                    Ok(p) => p,
                    Err(e) => return CellOutcome::failed(format!("no free port: {e}"), Vec::new()),
                };
                let url = format!("http://127.0.0.1:{port}{}", cell.cell.path);
                self.measure_cell(cell, &url, &["--quiet".into()], cores, None)
            }
        }
    }

    fn measure_cell(
        &mut self,
        cell: &PlannedCell,
        url: &str,
        extra: &[String],
        cores: usize,
        pid: Option<i32>,
    ) -> CellOutcome {
        let cfg = match cell.cell.load_config(url, extra, cores) {
            Ok(c) => c,
            Err(e) => return CellOutcome::failed(e.message, Vec::new()),
        };
        let sampler = match (pid, cfg.monitor) {
            (Some(_), Some(m)) => {
                let budget = server::perf_fd_budget(cfg.connections as u64);
                match server::attach(m.pid, m.interval, budget) {
                    Ok(s) => Some(s),
                    Err(e) => return CellOutcome::failed(format!("monitor: {e}"), Vec::new()),
                }
            }
            _ => None,
        };
        let addr: SocketAddr = match transport::resolve(&cfg.target.host, cfg.target.port) {
            Ok(a) => transport::pick_address(&a, Duration::from_secs(1)).unwrap_or(a[0]),
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        };
        let cpu_list = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().1, |c| c.text.clone());
        let m = match crate::run::measure(
            &cfg,
            addr,
            sampler,
            (cores, &cpu_list),
            self.interrupts,
            None,
            false,
        ) {
            Ok(m) => m,
            Err(e) => return CellOutcome::failed(e, Vec::new()),
        };
        let mut result = m.result;
        result.env.pinning.server_cpus = self.suite.server_cpus.as_ref().map(|c| c.text.clone());
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
                    eprintln!("volley bench: cannot write {rel}: {e}; kept in memory, retried after every cell");
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
                eprintln!("volley bench: wrote {rel} (it failed before)");
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

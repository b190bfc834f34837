//! Running one cell: start its server (managed servers only), wait until it is ready, measure
//! with the monitor on the server's process group, stop it and check that nothing of it is
//! left (docs/contract.md, "Suites").

use std::path::PathBuf;

use super::lifecycle::{self, Running};
use super::matrix::PlannedCell;
use super::ready::{self, NotReady};
use super::shards::Monitored;
use super::Harness;
use volley_config::suite::{Managed, ServerKind};
use volley_config::{parse_url, GcLogConfig, MonitorConfig, RunConfig, DEFAULT_MONITOR_INTERVAL};
use volley_engine::Observers;
use volley_measure::{self as measure, MeasureError};
use volley_model::result::{CellStatus, RunResult, WarningKind};
use volley_model::sys::cpus;

/// What one cell came to.
pub(super) struct CellOutcome {
    /// The row's status.
    pub status: CellStatus,
    /// Why it is not `ok`.
    pub reason: Option<String>,
    /// The server's last stderr lines, for a failure.
    pub stderr_tail: Vec<String>,
    /// Remarks on the row (a server that needed SIGKILL, say).
    pub notes: Vec<String>,
    /// The measurement, kept even when the cell failed.
    pub result: Option<RunResult>,
    /// A capacity cell's search (its steps are on disk already).
    pub capacity: Option<volley_model::result::capacity::CapacityResult>,
    /// `profile = true`: the server's folded stacks, written beside its RunResult.
    pub folded: Option<String>,
}

impl CellOutcome {
    /// A cell that failed without a measurement.
    pub(super) fn failed(reason: String, stderr_tail: Vec<String>) -> Self {
        CellOutcome {
            status: CellStatus::Failed,
            reason: Some(reason),
            stderr_tail,
            notes: Vec::new(),
            result: None,
            capacity: None,
            folded: None,
        }
    }
}

impl Harness<'_> {
    /// Runs one cell against its server, whatever kind it is.
    pub(super) fn run_cell(&mut self, cell: &PlannedCell) -> CellOutcome {
        let spec = self.suite.servers[cell.server_idx].clone();
        let cores = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().0, |c| c.cpus.len());
        match &spec.kind {
            ServerKind::Managed(m) => self.run_managed(cell, m, cores),
            ServerKind::Url(t) => {
                let scheme = t.scheme.as_str();
                let protocol = cell.cell.protocol;
                if scheme != protocol.scheme() {
                    return CellOutcome::failed(
                        format!(
                            "the server's url is {scheme}:// but the cell's protocol is {}: set protocol = {} in the scenario, or leave this server out of it (servers = [...])",
                            protocol.as_str(),
                            match scheme {
                                "https" => "\"https\", \"h2\" or \"h3\"",
                                "ws" => "\"ws\"",
                                "wss" => "\"wss\"",
                                _ => "\"http/1.1\" or \"h2c\"",
                            }
                        ),
                        Vec::new(),
                    );
                }
                let url = format!(
                    "{scheme}://{}{}",
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
                let url = format!(
                    "{}://127.0.0.1:{port}{}",
                    cell.cell.protocol.scheme(),
                    cell.cell.path
                );
                self.measure_cell(cell, &url, cores, None)
            }
        }
    }

    /// A managed server's cell: a fresh server on a free port, measured once ready, stopped.
    fn run_managed(&mut self, cell: &PlannedCell, m: &Managed, cores: usize) -> CellOutcome {
        // A server that listened on the wrong port will again: no second wait for it.
        if let Some(reason) = self.wrong_port.get(&cell.server) {
            return CellOutcome::failed(
                format!("not started: {reason} (seen in an earlier cell of this server)"),
                Vec::new(),
            );
        }
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
            cell.cell.protocol,
            profiled(cell),
        ) {
            Ok(r) => r,
            Err(e) => return CellOutcome::failed(e, Vec::new()),
        };
        let mut outcome = self.measure_when_ready(cell, m, &mut running, cores);
        stop_and_check(&mut running, &mut outcome);
        remove_perf_maps(&outcome);
        // Most servers print nothing to stdout: no empty files in the results.
        if std::fs::metadata(&logs.0).is_ok_and(|m| m.len() == 0) {
            let _ = std::fs::remove_file(&logs.0);
        }
        outcome
    }

    /// Waits until the started server is ready, then measures it.
    fn measure_when_ready(
        &mut self,
        cell: &PlannedCell,
        m: &Managed,
        running: &mut Running,
        cores: usize,
    ) -> CellOutcome {
        match ready::wait_ready(running, &m.ready_path, m.ready_timeout, self.interrupts) {
            Err(e) => {
                let mut reason = e.to_string();
                match e {
                    NotReady::WrongPort { .. } => {
                        self.wrong_port.insert(cell.server.clone(), reason.clone());
                    }
                    NotReady::Exited(_) | NotReady::Timeout { .. }
                        if ready::backgrounds(&m.start) =>
                    {
                        reason = format!("{reason}; {}", ready::background_hint(&m.start));
                    }
                    _ => {}
                }
                let mut o = CellOutcome::failed(reason, Vec::new());
                if self.interrupted() {
                    o.status = CellStatus::Interrupted;
                }
                o
            }
            Ok(_ready) => {
                let url = format!(
                    "{}://127.0.0.1:{}{}",
                    cell.cell.protocol.scheme(),
                    running.port,
                    cell.cell.path
                );
                let given = Given {
                    pid: running.pgid(),
                    cacert: running.tls.as_ref().map(|f| f.cert.clone()),
                    gc_log: running.gc_log.clone(),
                };
                self.measure_cell(cell, &url, cores, Some(given))
            }
        }
    }

    /// Measures a cell's load against `url`, monitoring the server the harness started when
    /// there is one (`given`).
    fn measure_cell(
        &mut self,
        cell: &PlannedCell,
        url: &str,
        cores: usize,
        given: Option<Given>,
    ) -> CellOutcome {
        if let Some(spec) = &cell.cell.capacity {
            return self.search_cell(cell, spec, url, cores, given);
        }
        let pid = given.as_ref().map(|g| g.pid);
        let gc_log = given.as_ref().and_then(|g| g.gc_log.clone());
        let (cfg, flags) = match cell_config(cell, url, given) {
            Ok(c) => c,
            Err(reason) => return CellOutcome::failed(reason, Vec::new()),
        };
        let argv = cell_argv(url, &flags, pid, gc_log.as_ref());
        if cell.cell.shards > 1 {
            // --verify once, here, without the monitor (shard 0 of the processes has it).
            if cfg.load.verify {
                let here = RunConfig {
                    monitor: None,
                    ..cfg.clone()
                };
                let failed = match measure::prepare(&here) {
                    Ok(p) => verify_first(&here, &p),
                    Err(e) => Some(CellOutcome::failed(e.to_string(), Vec::new())),
                };
                if let Some(failed) = failed {
                    return failed;
                }
            }
            let monitored = Monitored {
                pid,
                gc_log: gc_log.as_ref(),
            };
            return self.sharded_cell(cell, url, (&cfg, &flags, &argv), monitored);
        }
        let prepared = match measure::prepare(&cfg) {
            Ok(p) => p,
            Err(e @ MeasureError::Monitor(_)) => {
                return CellOutcome::failed(format!("monitor: {e}"), Vec::new())
            }
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        };
        if let Some(failed) = verify_first(&cfg, &prepared) {
            return failed;
        }
        let cpu_list = self
            .suite
            .client_cpus
            .as_ref()
            .map_or_else(|| cpus::allowed().1, |c| c.text.clone());
        let ctx = measure::Context {
            argv: &argv,
            cores,
            client_cpus: &cpu_list,
            server_cpus: self.suite.server_cpus.as_ref().map(|c| c.text.as_str()),
            server_latest: self.live.map(|l| l.server_watch()),
        };
        let mut observer = self.live.map(|live| {
            let title = format!(
                "{} · {} (repetition {})",
                cell.server, cell.scenario, cell.rep
            );
            let names = volley_live::Names {
                scenario: cell.scenario.clone(),
                endpoint: cfg.load.target.path.clone(),
            };
            let index = self.cells.iter().position(|c| c.id == cell.id).unwrap_or(0);
            live.begin_run(index, &title, names, cfg.load.rate_rps);
            live.observer(cfg.load.rate_rps, cores)
        });
        let mut observers = Observers(vec![]);
        if let Some(o) = observer.as_mut() {
            observers.0.push(o);
        }
        let m = match measure::run(&cfg, prepared, &ctx, self.interrupts, &mut observers) {
            Ok(m) => m,
            Err(e) => return CellOutcome::failed(e.to_string(), Vec::new()),
        };
        let mut outcome = self.judged(cell, m.result, m.interrupted);
        outcome.folded = m.folded;
        if profiled(cell) && pid.is_none() {
            outcome.notes.push(
                "not profiled: the harness did not start this server (a `url` server has no process to sample)".into(),
            );
        }
        outcome
    }

    /// The row of a measured cell, the same whether it was measured in this process or merged
    /// from its shards: no response fails it (not a control), a shortfall is a note, and a
    /// cell of error pages fails or is noted as `fail_on_status` says.
    pub(super) fn judged(
        &self,
        cell: &PlannedCell,
        result: RunResult,
        interrupted: bool,
    ) -> CellOutcome {
        let (mut status, mut reason) = measured_status(&result, interrupted, cell.control);
        // A cell's shortfall is a note: the suite goes on, and its table says it.
        let mut notes: Vec<String> = result
            .warnings
            .iter()
            .filter(|w| w.kind() == WarningKind::Shortfall)
            .map(|w| w.text().to_string())
            .collect();
        // Mostly error pages: the numbers do not describe the service.
        if status == CellStatus::Ok && !cell.control && result.mostly_failed() {
            let what = result.failed_description().unwrap_or_default();
            if self.suite.fail_on_status {
                status = CellStatus::Failed;
                reason = Some(what);
            } else {
                notes.push(format!("{what} (fail_on_status = false: kept as ok)"));
            }
        }
        CellOutcome {
            status,
            reason,
            stderr_tail: Vec::new(),
            notes,
            result: Some(result),
            capacity: None,
            folded: None,
        }
    }
}

/// `--verify`: the cell's requests once each before the load; a cell that would measure
/// error pages fails with what came back instead of being measured.
fn verify_first(cfg: &RunConfig, prepared: &measure::Prepared) -> Option<CellOutcome> {
    if !cfg.load.verify {
        return None;
    }
    let vs = measure::verify::verify(cfg, &prepared.route, cfg.load.seed.unwrap_or(0));
    let bad = vs.iter().filter(|v| !v.ok()).count();
    if bad == 0 {
        return None;
    }
    let shown: Vec<String> = measure::verify::report(&vs)
        .lines()
        .map(str::to_string)
        .collect();
    Some(CellOutcome::failed(
        format!(
            "--verify: {bad} of {} requests failed; not measured",
            vs.len()
        ),
        shown,
    ))
}

/// What the harness gave a server it started, which the cell's run needs.
pub(super) struct Given {
    /// Its process group (the monitor's root).
    pub pid: i32,
    /// The certificate it was given (https and h2 cells).
    pub cacert: Option<PathBuf>,
    /// The GC log its runtime writes (`runtime` of its `[[server]]`).
    pub gc_log: Option<GcLogConfig>,
}

/// The cell's run configuration aimed at `url`, with the monitor on the server the harness
/// started (and its GC log), and its flags. An https cell trusts the certificate its server
/// was given unless the scenario turned verification off (`insecure`) or named its own
/// `cacert`.
pub(super) fn cell_config(
    cell: &PlannedCell,
    url: &str,
    given: Option<Given>,
) -> Result<(RunConfig, Vec<String>), String> {
    let mut cfg = cell.cell.config.clone();
    let mut flags = cell.cell.flags.clone();
    cfg.load.target = parse_url(url).map_err(|e| e.to_string())?;
    // A gRPC call's path is its method's: the URL names the server only.
    if let Some(g) = &cfg.load.grpc {
        cfg.load.target.path = g.path.clone();
    }
    let cacert = given.as_ref().and_then(|g| g.cacert.clone());
    // The scenario's `monitor_interval`, if it set one, on the server the harness started.
    let interval = cfg
        .monitor
        .as_ref()
        .map_or(DEFAULT_MONITOR_INTERVAL, |m| m.interval);
    let profile_hz = cfg.monitor.as_ref().and_then(|m| m.profile_hz);
    cfg.monitor = given.map(|g| MonitorConfig {
        pid: g.pid,
        interval,
        gc_log: g.gc_log,
        profile_hz,
        profile_off_cpu: false,
    });
    if let (Some(tls), Some(cert)) = (cfg.load.tls.as_mut(), cacert) {
        if tls.verify && tls.cacert.is_none() {
            flags.push(format!("--cacert={}", cert.display()));
            tls.cacert = Some(cert);
        }
    }
    // `reflect = true`: the call's definition asked of the server, now up.
    measure::reflect::complete_alone(&mut cfg).map_err(|e| e.to_string())?;
    Ok((cfg, flags))
}

/// Whether the cell samples its server's stacks (`profile = true`).
fn profiled(cell: &PlannedCell) -> bool {
    cell.cell.flags.iter().any(|f| f == "--profile")
}

/// Flags that mean nothing without a server to monitor (a `url` server's cell).
fn monitor_only(flag: &str) -> bool {
    flag == "--profile"
        || flag.starts_with("--monitor-interval=")
        || flag.starts_with("--profile-frequency=")
}

/// The perf maps the server's runtimes wrote for the profile (`/tmp/perf-PID.map`: a Node
/// server writes one all along, a JVM when volley asked): the server is gone, so are they.
fn remove_perf_maps(outcome: &CellOutcome) {
    let procs = outcome
        .result
        .as_ref()
        .and_then(|r| r.server.as_ref()?.profile.as_ref())
        .map_or(&[][..], |p| p.processes.as_slice());
    for p in procs {
        let _ = std::fs::remove_file(format!("/tmp/perf-{}.map", p.pid));
    }
}

/// The status of a measured cell: a cell without a single response failed, unless it is a
/// control (a closed port is meant to answer nothing).
fn measured_status(
    result: &RunResult,
    interrupted: bool,
    control: bool,
) -> (CellStatus, Option<String>) {
    if interrupted {
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
    }
}

/// Stops a managed server. A server that died during the run, or left processes behind after
/// SIGKILL, fails its cell (the measurement is kept); a failed cell gets the server's last
/// stderr lines.
fn stop_and_check(running: &mut Running, outcome: &mut CellOutcome) {
    // Asked before the stop, which ends the server either way.
    let died = running.child.try_wait().ok().flatten();
    let stopped = lifecycle::stop(running);
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
}

/// The `volley run` command line a cell amounts to (the RunResult's `argv`): its flags, and
/// the ones the harness adds.
pub(super) fn cell_argv(
    url: &str,
    flags: &[String],
    pid: Option<i32>,
    gc_log: Option<&GcLogConfig>,
) -> Vec<String> {
    let mut argv = vec!["volley".to_string(), "run".to_string(), url.to_string()];
    // Without a server to monitor (a url server) the monitor's interval means nothing.
    argv.extend(
        flags
            .iter()
            .filter(|f| pid.is_some() || !monitor_only(f))
            .cloned(),
    );
    argv.push("--quiet".into());
    if let Some(pid) = pid {
        argv.extend(["--pid".to_string(), pid.to_string()]);
    }
    if let Some(log) = gc_log {
        argv.extend(["--gc-log".to_string(), log.path.display().to_string()]);
    }
    argv
}

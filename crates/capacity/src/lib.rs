//! `volley capacity` and suite `capacity = {…}` scenarios: the highest open-loop rate a server
//! sustains within an SLO. The search is pure ([`search`]), a step's verdict is pure
//! ([`verdict`]); [`Steps`] is the real [`StepRunner`]: one `measure::run` per step of a base
//! `RunConfig` at `-R rate -d step`, each RunResult saved at once in the output folder; it
//! also measures the closed-loop reference ([`Steps::closed_loop`]). Prints nothing: the
//! caller (`cmd::capacity`, the harness) hears of each step through `on_step`.

pub mod idle;
pub mod search;
pub mod session;
pub mod sweep;
pub mod verdict;

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

pub use search::{Found, Search, StepError, StepOutcome, StepRunner};
use volley_config::threshold::Threshold;
use volley_config::RunConfig;
use volley_engine::Observers;
use volley_measure::{self as measure, Context};
use volley_model::result::capacity::{CapacityStep, ClosedLoopStep, Phase, Verdict};
use volley_model::result::RunResult;
use volley_report::Format;

/// Runs real steps: a base load (the user's flags, or a suite cell) at `-R rate` for `step`,
/// measured one at a time.
pub struct Steps<'a> {
    /// The load of every step; its rate, duration and request count are set per step, its
    /// thresholds are not applied (the SLO judges a step).
    pub base: RunConfig,
    /// The `volley run` command line the base load amounts to; each step's RunResult gets it
    /// with `-R RATE -d STEP` added, so one step can be run again by hand.
    pub argv: Vec<String>,
    /// Measured seconds per step.
    pub step: Duration,
    /// The SLO.
    pub slo: Vec<Threshold>,
    /// CPUs volley may use.
    pub cores: usize,
    /// Their list, e.g. "0-1".
    pub cpu_list: String,
    /// The server's CPU list when volley pinned it (suites).
    pub server_cpus: Option<String>,
    /// Ctrl-C presses.
    pub interrupts: &'a AtomicUsize,
    /// Where each step's RunResult goes.
    pub out: PathBuf,
    /// How `out` is named in the result's `path`s (a suite keeps paths relative to its folder).
    pub shown_out: PathBuf,
    /// Every finished step, in order.
    pub done: Vec<CapacityStep>,
    /// Things worth saying that are not verdicts (a server that stayed busy between steps).
    pub notes: Vec<String>,
    /// Called once per finished step.
    pub on_step: Box<dyn FnMut(&CapacityStep) + 'a>,
    /// The environment of the first measurement.
    pub env: Option<volley_model::result::Env>,
    /// The live views watching the search (`--dashboard`, `--metrics-addr`, …): each step is
    /// a run of theirs.
    pub live: Option<&'a volley_live::Live>,
    /// The search's phase: recorded with each step (set by the search).
    pub phase: Phase,
}

/// `step-NN-<rate>rps.json`.
pub(crate) fn step_file(n: usize, rate: f64) -> String {
    format!("step-{n:02}-{}rps.json", rate.round() as u64)
}

/// The file of the closed-loop reference step.
pub(crate) const CLOSED_LOOP_FILE: &str = "closed-loop.json";

/// The file of the closed loop measured again (an answer well above the first).
pub(crate) const CLOSED_LOOP_AGAIN_FILE: &str = "closed-loop-again.json";

/// The CPUs `pid` may run on (`Cpus_allowed_list` of its status): the 100 % of its
/// utilisation. None when it cannot be read.
pub(crate) fn server_cores(pid: i32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let list = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))?;
    let n = volley_model::sys::cpus::parse_list(list.trim())
        .ok()?
        .cpus
        .len();
    (n > 0).then_some(n as f64)
}

/// The server's mean CPU over the measured window, percent of one core.
pub(crate) fn server_cpu_pct(r: &RunResult) -> Option<f64> {
    let s = r.server.as_ref()?;
    (s.window_s > 0.0).then(|| round1((s.cpu_user_s + s.cpu_sys_s) / s.window_s * 100.0))
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}

/// Why the closed-loop reference gave no number.
#[derive(Debug)]
pub enum ClosedLoopError {
    /// Ctrl-C.
    Interrupted,
    /// It could not run (the message says why).
    Failed(String),
}

impl Steps<'_> {
    /// Waits for the monitored server to be idle (see [`idle`]); the seconds waited.
    fn wait_idle(&mut self, before: &str) -> f64 {
        let Some(pid) = self.base.monitor.as_ref().map(|m| m.pid) else {
            return 0.0;
        };
        let (waited, idle) = idle::wait(pid);
        if !idle {
            self.notes.push(format!(
                "the server was still busy after {waited:.0} s before {before}"
            ));
        }
        (waited * 100.0).round() / 100.0
    }

    /// One measurement of `cfg` (its argv with `extra` added), written to `file` in `out`.
    fn measure(
        &mut self,
        cfg: &RunConfig,
        extra: &[String],
        file: &str,
    ) -> Result<(RunResult, String), StepError> {
        let m = self.measure_watched(cfg, extra, None)?;
        if m.interrupted {
            // An interrupted step is not a finished one: it gives no verdict.
            return Err(StepError::Interrupted);
        }
        if m.server_died {
            return Err(StepError::Failed("the monitored server exited".into()));
        }
        let path = self.save(&m.result, file)?;
        Ok((m.result, path))
    }

    /// Writes `r` to `file` in `out`; the path as results name it.
    fn save(&self, r: &RunResult, file: &str) -> Result<String, StepError> {
        let path = self.out.join(file);
        volley_model::sys::files::write_atomically(&path, Format::Json.render_run(r).as_bytes())
            .map_err(|e| StepError::Failed(format!("{}: {e}", path.display())))?;
        Ok(self.shown_out.join(file).display().to_string())
    }

    /// One measurement of `cfg` (its argv with `extra` added), watched by the live views and
    /// by `watch`, whatever its end (interrupted, the server gone).
    fn measure_watched(
        &mut self,
        cfg: &RunConfig,
        extra: &[String],
        watch: Option<&mut dyn volley_model::stats::observer::Observer>,
    ) -> Result<measure::Measured, StepError> {
        let prepared = measure::prepare(cfg).map_err(|e| StepError::Failed(e.to_string()))?;
        let mut argv = self.argv.clone();
        argv.extend(extra.iter().cloned());
        let ctx = Context {
            argv: &argv,
            cores: self.cores,
            client_cpus: &self.cpu_list,
            server_cpus: self.server_cpus.as_deref(),
            server_latest: self.live.map(|l| l.server_watch()),
        };
        let mut observer = self.live.map(|live| {
            let title = match cfg.load.rate_rps {
                Some(_) if cfg.load.rate_stages.is_some() => "the sweep".to_string(),
                Some(r) => format!(
                    "step {}: -R {}",
                    self.done.len() + 1,
                    volley_model::units::thousands(r.round() as u64)
                ),
                None => "the closed-loop reference".to_string(),
            };
            let names = volley_live::Names {
                scenario: "capacity".into(),
                endpoint: cfg.load.target.path.clone(),
            };
            live.begin_run(self.done.len(), &title, names, cfg.load.rate_rps);
            live.observer(cfg.load.rate_rps, self.cores)
        });
        let mut observers = Observers(Vec::new());
        if let Some(o) = observer.as_mut() {
            observers.0.push(o);
        }
        if let Some(w) = watch {
            observers.0.push(w);
        }
        let m = measure::run(cfg, prepared, &ctx, self.interrupts, &mut observers)
            .map_err(|e| StepError::Failed(e.to_string()))?;
        if self.env.is_none() {
            self.env = Some(m.result.env.clone());
        }
        Ok(m)
    }

    /// The closed-loop reference: the base load without a rate for one step's duration, after
    /// the idle wait, written to `file`.
    pub fn closed_loop(&mut self, file: &str) -> Result<ClosedLoopStep, ClosedLoopError> {
        if self.interrupts.load(Ordering::SeqCst) > 0 {
            return Err(ClosedLoopError::Interrupted);
        }
        self.wait_idle("the closed-loop step");
        let mut cfg = self.base.clone();
        cfg.load.rate_rps = None;
        cfg.load.duration = Some(self.step);
        cfg.load.requests = None;
        cfg.thresholds.clear();
        let extra = vec![
            "-d".to_string(),
            volley_model::units::duration_flag(self.step),
        ];
        let (r, path) = match self.measure(&cfg, &extra, file) {
            Ok(x) => x,
            Err(StepError::Interrupted) => return Err(ClosedLoopError::Interrupted),
            Err(StepError::Failed(m) | StepError::Busy(m)) => {
                return Err(ClosedLoopError::Failed(m))
            }
        };
        Ok(ClosedLoopStep {
            throughput_rps: round1(r.throughput_rps),
            connections: r.load.connections,
            latency_us: r.latency_us.clone(),
            errors: r.requests.errors,
            server_cpu_pct: server_cpu_pct(&r),
            client_saturated: r.client.saturated,
            path,
        })
    }
}

/// Runs of one rate that may be starved by other processes before the search stops.
pub(crate) const MACHINE_ATTEMPTS: usize = 3;

impl StepRunner for Steps<'_> {
    fn phase(&mut self, phase: Phase) {
        self.phase = phase;
    }

    /// One step at `rate`; a step that other processes starved (`machine`) runs again once
    /// the machine is idle, and the third in a row stops the search (no answer).
    fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
        for attempt in 1..=MACHINE_ATTEMPTS {
            let o = self.once(rate)?;
            if o.verdict != Verdict::Machine {
                return Ok(o);
            }
            if attempt == MACHINE_ATTEMPTS {
                return Err(StepError::Busy(format!(
                    "the machine was too busy to measure {} req/s: other processes starved volley in {MACHINE_ATTEMPTS} runs in a row ({})",
                    volley_model::units::thousands(rate.round() as u64),
                    o.reason
                )));
            }
            let (waited, idle) = idle::wait_machine();
            if !idle {
                self.notes.push(format!(
                    "the machine was still busy after {waited:.0} s before {rate} req/s ran again"
                ));
            }
        }
        unreachable!("the last attempt returns")
    }
}

impl Steps<'_> {
    /// One measurement of `rate`, judged and recorded.
    fn once(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
        if self.interrupts.load(Ordering::SeqCst) > 0 {
            return Err(StepError::Interrupted);
        }
        let rate = rate.round();
        let idle_wait_s = self.wait_idle(&format!("the {rate} req/s step"));
        let mut cfg = self.base.clone();
        cfg.load.rate_rps = Some(rate);
        cfg.load.duration = Some(self.step);
        cfg.load.requests = None;
        cfg.thresholds.clear();
        // The verdict judges a shortfall; the run must not add its own failure for it.
        cfg.allow_shortfall = true;
        let extra = vec![
            "-R".to_string(),
            format!("{rate}"),
            "-d".to_string(),
            volley_model::units::duration_flag(self.step),
        ];
        let file = step_file(self.done.len() + 1, rate);
        let (r, path) = self.measure(&cfg, &extra, &file)?;
        let (verdict, reason) = verdict::judge(&r, rate, &self.slo);
        let step = CapacityStep {
            target_rps: rate,
            achieved_rps: r.achieved_rps.map(|a| (a * 10.0).round() / 10.0),
            verdict,
            reason: reason.clone(),
            latency_us: r.latency_us.clone(),
            server_cpu_us_per_request: r.server.as_ref().and_then(|s| s.per_request.cpu_us),
            path,
            idle_wait_s,
            completed: r.requests.completed,
            errors: r.requests.errors,
            failed: r.requests.failed,
            schedule_lag_p99_us: r.schedule_lag_us.as_ref().and_then(|l| l.p99),
            server_cpu_pct: server_cpu_pct(&r),
            phase: Some(self.phase),
            window: None,
        };
        (self.on_step)(&step);
        self.done.push(step);
        if let Some(live) = self.live {
            let json = serde_json::json!({"kind": "capacity", "steps": self.done});
            live.progress(&json.to_string());
        }
        Ok(StepOutcome { verdict, reason })
    }
}

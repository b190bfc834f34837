//! `volley capacity`: the highest open-loop rate a server sustains within an SLO. The search
//! is pure ([`search`]), a step's verdict is pure ([`verdict`]); [`Steps`] is the real
//! [`StepRunner`]: one `measure::run` per step at `-R rate`, built from the user's run flags,
//! each RunResult saved at once in the output folder. Prints nothing; the command layer
//! (`cmd::capacity`) prints through the `on_step` callback.

pub mod idle;
pub mod search;
pub mod verdict;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::config::threshold::Threshold;
use crate::config::{RunConfig, RunFlags};
use crate::engine::Observers;
use crate::measure::{self, Context};
use crate::report::Format;
use crate::result::capacity::CapacityStep;
pub use search::{Found, Search, StepError, StepOutcome, StepRunner};

/// Runs real steps: the user's run flags with `-R rate` and `-d step`, measured one at a time.
pub struct Steps<'a> {
    /// The user's run flags (`rate` and `duration` are set per step).
    pub flags: RunFlags,
    /// Measured seconds per step.
    pub step: Duration,
    /// The SLO.
    pub slo: Vec<Threshold>,
    /// CPUs volley may use and their list.
    pub cores: usize,
    /// Their list, e.g. "0-1".
    pub cpu_list: String,
    /// The command line, kept in every RunResult.
    pub argv: Vec<String>,
    /// Ctrl-C presses.
    pub interrupts: &'a AtomicUsize,
    /// Where each step's RunResult goes.
    pub out: PathBuf,
    /// Every finished step, in order.
    pub done: Vec<CapacityStep>,
    /// Things worth saying that are not verdicts (a server that stayed busy between steps).
    pub notes: Vec<String>,
    /// Called once per finished step.
    pub on_step: Box<dyn FnMut(&CapacityStep) + 'a>,
}

/// `step-NN-<rate>rps.json`.
pub fn step_file(dir: &Path, n: usize, rate: f64) -> PathBuf {
    dir.join(format!("step-{n:02}-{}rps.json", rate.round() as u64))
}

impl StepRunner for Steps<'_> {
    fn run(&mut self, rate: f64) -> Result<StepOutcome, StepError> {
        if self.interrupts.load(Ordering::SeqCst) > 0 {
            return Err(StepError::Interrupted);
        }
        let idle_wait_s = match self.flags.pid {
            Some(pid) => {
                let (waited, idle) = idle::wait(pid as i32);
                if !idle {
                    self.notes.push(format!(
                        "the server was still busy after {:.0} s before the {} req/s step",
                        waited,
                        rate.round()
                    ));
                }
                (waited * 100.0).round() / 100.0
            }
            None => 0.0,
        };
        let mut flags = self.flags.clone();
        flags.rate = Some(format!("{}", rate.round() as u64));
        flags.duration = Some(self.step);
        let cfg = RunConfig::from_flags(&flags, self.cores)
            .map_err(|e| StepError::Failed(e.to_string()))?;
        let prepared = measure::prepare(&cfg).map_err(|e| StepError::Failed(e.to_string()))?;
        let ctx = Context {
            argv: &self.argv,
            cores: self.cores,
            client_cpus: &self.cpu_list,
            server_cpus: None,
        };
        let m = measure::run(
            &cfg,
            prepared,
            &ctx,
            self.interrupts,
            &mut Observers(Vec::new()),
        )
        .map_err(|e| StepError::Failed(e.to_string()))?;
        if m.interrupted {
            // An interrupted step is not a finished one: it gives no verdict.
            return Err(StepError::Interrupted);
        }
        if m.server_died {
            return Err(StepError::Failed("the monitored server exited".into()));
        }
        let path = step_file(&self.out, self.done.len() + 1, rate);
        crate::sys::files::write_atomically(&path, Format::Json.render_run(&m.result).as_bytes())
            .map_err(|e| StepError::Failed(format!("{}: {e}", path.display())))?;
        let (verdict, reason) = verdict::judge(&m.result, rate, &self.slo);
        let step = CapacityStep {
            target_rps: rate,
            achieved_rps: m.result.achieved_rps.map(|a| (a * 10.0).round() / 10.0),
            verdict,
            reason: reason.clone(),
            latency_us: m.result.latency_us.clone(),
            server_cpu_us_per_request: m.result.server.as_ref().and_then(|s| s.per_request.cpu_us),
            path: path.display().to_string(),
            idle_wait_s,
        };
        (self.on_step)(&step);
        self.done.push(step);
        Ok(StepOutcome { verdict, reason })
    }
}

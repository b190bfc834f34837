//! `volley capacity --sweep`: the knee in one run. The rate rises linearly from the start rate
//! to the top over the sweep (`--rate-stages "0s:FROM,DUR:TO"`), each window of the run is
//! judged as a step is (`sweep::window`), and the windows are read for where the SLO broke and
//! stayed broken (`sweep::reading`). The rules, the resolution and the bias are docs/contract.md,
//! "Capacity", "Sweep"; `session::sweep` runs the whole (closed loop, `--confirm`).

pub(crate) mod reading;
pub(crate) mod window;

use std::sync::Arc;
use std::time::Duration;

use super::{server_cpu_pct, StepError, Steps};
use crate::verdict;
use reading::Reading;
use volley_model::result::capacity::{CapacityStep, Phase, Sweep, SweepTop, Verdict, Window};
use volley_model::result::RunResult;
use volley_model::stats::aggregate::FinishedBucket;
use volley_model::stats::observer::Observer;
use volley_model::units::{duration_flag, RateStageSpec};
use volley_plan::rate::RateStages;
use window::{Part, Second};

/// A sweep's settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SweepPlan {
    /// The rate at the start, req/s (`--start-rate`; also the warm-up's).
    pub from_rps: f64,
    /// The rate at the end, req/s.
    pub to_rps: f64,
    /// Where `to_rps` came from.
    pub top: SweepTop,
    /// The ramp's length (`--sweep-duration`).
    pub duration: Duration,
    /// Each window's length (`--sweep-window`), whole seconds.
    pub window: Duration,
}

/// The top a sweep takes from the closed-loop maximum when `--max-rate` is not given.
pub const TOP_OVER_CLOSED_LOOP: f64 = 1.5;

impl SweepPlan {
    /// How much the rate rises over one window, req/s.
    pub fn resolution_rps(&self) -> f64 {
        (self.to_rps - self.from_rps) / self.duration.as_secs_f64() * self.window.as_secs_f64()
    }

    /// The stages of the run.
    fn stages(&self) -> RateStages {
        RateStages::new(vec![
            RateStageSpec {
                duration: Duration::ZERO,
                rate_rps: self.from_rps,
            },
            RateStageSpec {
                duration: self.duration,
                rate_rps: self.to_rps,
            },
        ])
    }

    /// `--rate-stages` as `volley run` takes it.
    fn stages_flag(&self) -> String {
        format!(
            "0s:{},{}:{}",
            self.from_rps.round(),
            duration_flag(self.duration),
            self.to_rps.round()
        )
    }

    /// The bias in words (docs/contract.md, "Sweep").
    fn bias(&self) -> String {
        let res = self.resolution_rps();
        format!(
            "the knee errs high: the rate rises {:.0} req/s a second, so a window reaches a rate before the server's queue has settled at it, \
             and the queue rule fails a window only once the server falls {:.0} % behind: the knee may lie up to {:.0} % plus one window ({:.0} req/s) above the capacity; \
             the answer, the last window that passed, lies up to one window below the knee; --confirm measures the bracket with steps of their own",
            (self.to_rps - self.from_rps) / self.duration.as_secs_f64(),
            window::BEHIND_SHARE * 100.0,
            window::BEHIND_SHARE * 100.0,
            res
        )
    }
}

/// A sweep read: its windows (as steps of phase `sweep`), what they say, and the record of it.
pub struct Swept {
    /// One per window, in order.
    pub windows: Vec<CapacityStep>,
    /// What they say.
    pub(crate) reading: Reading,
    /// The record of the run (`sweep` of the capacity result).
    pub sweep: Sweep,
    /// The run ended early (Ctrl-C).
    pub interrupted: bool,
}

/// Keeps each finished second of the run.
#[derive(Default)]
struct Seconds(Vec<Second>);

impl Observer for Seconds {
    fn second(&mut self, b: &FinishedBucket, _elapsed_s: f64) {
        self.0.push(Second::of(b));
    }
}

impl Steps<'_> {
    /// Runs the sweep once, judges its windows and reads them; `file` is its RunResult.
    pub fn sweep(&mut self, plan: &SweepPlan, file: &str) -> Result<Swept, StepError> {
        if self.interrupts.load(std::sync::atomic::Ordering::SeqCst) > 0 {
            return Err(StepError::Interrupted);
        }
        self.phase = Phase::Sweep;
        let idle_wait_s = self.wait_idle("the sweep");
        let stages = plan.stages();
        let mut cfg = self.base.clone();
        cfg.load.rate_rps = Some(stages.mean_rps());
        cfg.load.duration = Some(plan.duration);
        cfg.load.rate_stages = Some(Arc::new(stages.clone()));
        cfg.load.requests = None;
        cfg.thresholds.clear();
        cfg.allow_shortfall = true;
        let extra = vec!["--rate-stages".to_string(), plan.stages_flag()];
        let mut seconds = Seconds::default();
        let m = self.measure_watched(&cfg, &extra, Some(&mut seconds))?;
        let path = self.save(&m.result, file)?;
        let cores = cfg.load.threads.min(self.cores).max(1) as f64;
        let seconds = window::laid_out(std::mem::take(&mut seconds.0));
        let parts = parts(plan, &stages, &seconds, &m.client_samples, cores);
        let mut windows = Vec::new();
        for part in &parts {
            let mut w = self.judge_window(part, &m.result, &path);
            if windows.is_empty() {
                w.idle_wait_s = idle_wait_s;
            }
            (self.on_step)(&w);
            windows.push(w);
        }
        self.done.extend(windows.iter().cloned());
        if let Some(live) = self.live {
            let json = serde_json::json!({"kind": "capacity", "steps": self.done});
            live.progress(&json.to_string());
        }
        let verdicts: Vec<(f64, Verdict)> =
            windows.iter().map(|w| (w.target_rps, w.verdict)).collect();
        let reading = reading::read(&verdicts);
        let cut_short = m.interrupted || m.server_died;
        let sweep = Sweep {
            from_rps: plan.from_rps,
            to_rps: plan.to_rps,
            top: plan.top,
            duration_s: plan.duration.as_secs_f64(),
            window_s: plan.window.as_secs_f64(),
            resolution_rps: (plan.resolution_rps() * 10.0).round() / 10.0,
            knee_rps: reading.knee_rps,
            bias: plan.bias(),
            path,
            cut_short,
        };
        if m.server_died {
            return Err(StepError::Failed("the monitored server exited".into()));
        }
        Ok(Swept {
            windows,
            reading,
            sweep,
            interrupted: m.interrupted,
        })
    }

    /// One window judged as a step is, then by the queue rule.
    fn judge_window(&self, part: &Part, whole: &RunResult, path: &str) -> CapacityStep {
        let r = part.result(whole);
        let target = part.target_rps();
        // Two requests due at a second's edge are not a shortfall.
        let floor = 2.0 / part.duration_s();
        let (mut verdict, mut reason) = verdict::judge_part(&r, target, &self.slo, floor);
        if verdict == Verdict::Pass {
            if let Some((v, why)) = window::behind(&r) {
                (verdict, reason) = (v, why);
            }
        }
        CapacityStep {
            target_rps: target.round(),
            achieved_rps: r.achieved_rps.map(|a| (a * 10.0).round() / 10.0),
            verdict,
            reason,
            latency_us: r.latency_us.clone(),
            server_cpu_us_per_request: r.server.as_ref().and_then(|s| s.per_request.cpu_us),
            path: path.to_string(),
            idle_wait_s: 0.0,
            completed: r.requests.completed,
            errors: r.requests.errors,
            failed: r.requests.failed,
            schedule_lag_p99_us: r.schedule_lag_us.as_ref().and_then(|l| l.p99),
            server_cpu_pct: server_cpu_pct(&r),
            phase: Some(Phase::Sweep),
            window: Some(Window {
                start_s: part.start_s as f64,
                duration_s: part.duration_s(),
                due: (part.due * 10.0).round() / 10.0,
                sent: r.requests.sent,
            }),
        }
    }
}

/// The run's whole windows: `plan.window` seconds each, from t0, as far as the seconds go
/// (a partial last window, or one cut by Ctrl-C, is left out).
fn parts<'a>(
    plan: &SweepPlan,
    stages: &RateStages,
    seconds: &'a [Second],
    samples: &'a [volley_monitor::client::ClientSample],
    capacity_cores: f64,
) -> Vec<Part<'a>> {
    let w = plan.window.as_secs().max(1) as usize;
    let full = plan.duration.as_secs() as usize;
    let seconds = &seconds[..seconds.len().min(full)];
    seconds
        .chunks_exact(w)
        .enumerate()
        .map(|(k, chunk)| {
            let start = (k * w) as u64;
            let from = (k * w).min(samples.len());
            let to = ((k + 1) * w).min(samples.len());
            let due = stages.shape.integral((start as usize + w) as f64)
                - stages.shape.integral(start as f64);
            Part {
                start_s: start,
                seconds: chunk,
                samples: &samples[from..to],
                due,
                capacity_cores,
            }
        })
        .collect()
}

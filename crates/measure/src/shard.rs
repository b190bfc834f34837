//! A shard's start (docs/contract.md, "Shards"): the wall clock's error bound checked against
//! `--clock-budget` before any load, the wait for `--start-at` on the wall clock, the refusal
//! of a shard that could only start later than `--max-late`, and the `shard` block of its
//! result.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use super::MeasureError;
use volley_config::RunConfig;
use volley_model::result::ShardInfo;
use volley_model::sys::clock::{self, ClockStatus};

/// With `--shard` or `--start-at`: the clock's status, refused when it is not synchronised or
/// its error bound is over the budget (unless the budget is `off`).
pub(super) fn check_clock(cfg: &RunConfig) -> Result<Option<ClockStatus>, MeasureError> {
    if cfg.load.shard.is_none() && cfg.start.at.is_none() {
        return Ok(None);
    }
    let status = clock::status();
    let Some(budget) = cfg.start.clock_budget else {
        return Ok(status);
    };
    let Some(s) = status else {
        return Err(MeasureError::Clock(
            "--clock-budget: the kernel does not say how far off its clock may be (adjtimex failed); use --clock-budget off if the shards share one host's clock".into(),
        ));
    };
    if !s.synchronised {
        return Err(MeasureError::Clock(format!(
            "--clock-budget {}: this machine's clock is not synchronised (adjtimex: no time service keeps it; its error bound is {:.1} s), so shards on several machines would not start together; run chrony or NTP, or use --clock-budget off when the shards share one host's clock",
            volley_model::units::duration_flag(budget),
            s.maxerror_us as f64 / 1e6
        )));
    }
    if Duration::from_micros(s.maxerror_us) > budget {
        return Err(MeasureError::Clock(format!(
            "--clock-budget {}: the clock may be off by up to {:.1} ms (adjtimex maxerror), more than the budget; wait for the time service to converge or raise the budget",
            volley_model::units::duration_flag(budget),
            s.maxerror_us as f64 / 1e3
        )));
    }
    Ok(Some(s))
}

/// Waits for `--start-at` (Ctrl-C ends the wait): how late the run starts after it, µs
/// (`None` without `--start-at`). Later than `--max-late` is [`MeasureError::LateShard`].
pub(super) fn wait_for_start(
    cfg: &RunConfig,
    interrupts: &AtomicUsize,
) -> Result<Option<i64>, MeasureError> {
    let Some(at) = cfg.start.at else {
        return Ok(None);
    };
    loop {
        let now = SystemTime::now();
        match at.duration_since(now) {
            // Sleep in short slices (Ctrl-C is seen), the last milliseconds spun on the clock.
            Ok(left) if left > Duration::from_millis(3) => {
                if interrupts.load(Ordering::SeqCst) > 0 {
                    return Ok(Some(0));
                }
                std::thread::sleep(
                    (left - Duration::from_millis(2)).min(Duration::from_millis(200)),
                );
            }
            Ok(_) => std::hint::spin_loop(),
            Err(late) => {
                let late = late.duration();
                if late > cfg.start.max_late {
                    return Err(MeasureError::LateShard {
                        at: cfg.start.at_text.clone().unwrap_or_default(),
                        late_ms: late.as_secs_f64() * 1e3,
                        max_ms: cfg.start.max_late.as_secs_f64() * 1e3,
                    });
                }
                return Ok(Some(late.as_micros() as i64));
            }
        }
    }
}

/// The result's `shard` block (its `config_hash` is filled when the result is assembled).
pub(super) fn info(
    cfg: &RunConfig,
    clock: Option<ClockStatus>,
    start_late_us: Option<i64>,
) -> Option<ShardInfo> {
    if cfg.load.shard.is_none() && cfg.start.at.is_none() {
        return None;
    }
    let s = cfg.load.shard;
    Some(ShardInfo {
        index: s.map_or(0, |s| s.index),
        count: s.map_or(1, |s| s.count),
        start_at: cfg.start.at_text.clone(),
        config_hash: String::new(),
        clock_maxerror_us: clock.map(|c| c.maxerror_us),
        clock_synchronised: clock.map(|c| c.synchronised),
        clock_budget_us: cfg.start.clock_budget.map(|b| b.as_micros() as u64),
        start_late_us,
        max_late_us: cfg.start.at.map(|_| cfg.start.max_late.as_micros() as u64),
    })
}

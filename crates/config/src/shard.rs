//! `--shard I/N`, `--start-at RFC3339`, `--clock-budget DUR|off`, `--max-late DUR`: a shard of
//! a load run by several generators, and when it starts (docs/contract.md, "Shards").

use std::time::{Duration, SystemTime};

use super::{ConfigError, Flag, RunFlags};
use volley_model::units::parse_duration;
use volley_plan::shard::ShardSpec;

/// The most shards a load may have.
pub const MAX_SHARDS: u64 = 10_000;

/// The clock budget when none is given: 10 ms of error bound (adjtimex `maxerror`).
pub(crate) const DEFAULT_CLOCK_BUDGET: Duration = Duration::from_millis(10);

/// How late a shard may start before it refuses to run, when none is given.
pub(crate) const DEFAULT_MAX_LATE: Duration = Duration::from_millis(100);

/// When a shard starts and what its clock must be.
#[derive(Debug, Clone, PartialEq)]
pub struct StartSpec {
    /// `--start-at`: the wall-clock instant every shard starts its run (warm-up included).
    pub at: Option<SystemTime>,
    /// `--start-at` as written (RFC 3339), for the result.
    pub at_text: Option<String>,
    /// `--max-late`: starting later than this after `at` exits 3 instead of running.
    pub max_late: Duration,
    /// `--clock-budget`: the most clock error (adjtimex `maxerror`) allowed, none when `off`.
    pub clock_budget: Option<Duration>,
}

/// `I/N` with 0 ≤ I < N ≤ [`MAX_SHARDS`].
pub(crate) fn parse_shard(text: &str) -> Result<ShardSpec, ConfigError> {
    let bad = |why: &str| {
        ConfigError::flag(
            Flag::Shard,
            format!("`{text}`: {why} (I/N: shard I, from 0, of N; e.g. 0/4)"),
        )
    };
    let (i, n) = text.split_once('/').ok_or_else(|| bad("no `/`"))?;
    let index: u64 = i
        .trim()
        .parse()
        .map_err(|_| bad("I is not a whole number"))?;
    let count: u64 = n
        .trim()
        .parse()
        .map_err(|_| bad("N is not a whole number"))?;
    if count == 0 || count > MAX_SHARDS {
        return Err(bad(&format!("N must be 1 to {MAX_SHARDS}")));
    }
    if index >= count {
        return Err(bad("I must be below N (shards count from 0)"));
    }
    Ok(ShardSpec { index, count })
}

/// The shard and start flags, checked.
pub(crate) fn start_spec(a: &RunFlags) -> Result<StartSpec, ConfigError> {
    let at = match &a.start_at {
        None => None,
        Some(t) => Some(humantime::parse_rfc3339_weak(t.trim()).map_err(|e| {
            ConfigError::flag(
                Flag::StartAt,
                format!("`{t}`: not an RFC 3339 time ({e}); e.g. 2026-11-25T12:00:00Z"),
            )
        })?),
    };
    let clock_budget = match a.clock_budget.as_deref().map(str::trim) {
        None => Some(DEFAULT_CLOCK_BUDGET),
        Some("off") => None,
        Some(t) => Some(parse_duration(t).map_err(|e| {
            ConfigError::flag(
                Flag::ClockBudget,
                format!("{e} (a duration such as 10ms, or off)"),
            )
        })?),
    };
    let max_late = match &a.max_late {
        None => DEFAULT_MAX_LATE,
        Some(t) => parse_duration(t).map_err(|e| ConfigError::flag(Flag::MaxLate, e))?,
    };
    if a.max_late.is_some() && at.is_none() {
        return Err(ConfigError::conflict(
            Flag::MaxLate,
            &[Flag::StartAt],
            "--max-late: needs --start-at (it bounds how late a shard may start after it)",
        ));
    }
    Ok(StartSpec {
        at,
        at_text: a.start_at.clone(),
        max_late,
        clock_budget,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shards_are_i_of_n_from_zero() {
        assert_eq!(
            parse_shard("0/4").unwrap(),
            ShardSpec { index: 0, count: 4 }
        );
        assert_eq!(
            parse_shard("3/4").unwrap(),
            ShardSpec { index: 3, count: 4 }
        );
        for bad in ["4/4", "1", "a/2", "1/0", "-1/2", "1/x", "0/10001"] {
            let e = parse_shard(bad).unwrap_err().to_string();
            assert!(e.starts_with("--shard") && e.contains(bad), "{bad}: {e}");
        }
    }
}

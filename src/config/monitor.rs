//! The server monitor's settings (`--pid`, `--monitor-interval`).

use std::time::Duration;

use super::{ConfigError, Flag};

/// Shortest sampling interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest sampling interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(10);

/// The server monitor's settings (`--pid`, `--monitor-interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorConfig {
    /// The server process (its descendants are monitored too).
    pub pid: i32,
    /// Sampling interval.
    pub interval: Duration,
}

/// Default `--monitor-interval`: 10 Hz.
pub const DEFAULT_MONITOR_INTERVAL: Duration = Duration::from_millis(100);

/// Validates `--pid` and `--monitor-interval` (whether the process exists is checked when the
/// monitor attaches).
pub fn monitor_config(
    pid: Option<i64>,
    interval: Option<Duration>,
) -> Result<Option<MonitorConfig>, ConfigError> {
    let Some(pid) = pid else {
        return match interval {
            Some(_) => Err(ConfigError::flag(
                Flag::MonitorInterval,
                "needs --pid (the process to monitor)",
            )),
            None => Ok(None),
        };
    };
    if pid <= 0 || pid > i32::MAX as i64 {
        return Err(ConfigError::flag(
            Flag::Pid,
            format!("`{pid}` is not a process id (a number from 1 up)"),
        ));
    }
    let interval = interval.unwrap_or(DEFAULT_MONITOR_INTERVAL);
    if !(MIN_INTERVAL..=MAX_INTERVAL).contains(&interval) {
        return Err(ConfigError::flag(
            Flag::MonitorInterval,
            "must be from 10ms to 10s",
        ));
    }
    Ok(Some(MonitorConfig {
        pid: pid as i32,
        interval,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_flags() {
        let ms = Duration::from_millis;
        assert_eq!(monitor_config(None, None).unwrap(), None);
        assert_eq!(
            monitor_config(Some(42), None).unwrap(),
            Some(MonitorConfig {
                pid: 42,
                interval: ms(100)
            })
        );
        assert_eq!(
            monitor_config(Some(42), Some(ms(250)))
                .unwrap()
                .unwrap()
                .interval,
            ms(250)
        );
        let err = |p, i| monitor_config(p, i).unwrap_err().to_string();
        assert!(err(None, Some(ms(100))).starts_with("--monitor-interval: needs --pid"));
        assert!(err(Some(0), None).starts_with("--pid:"));
        assert!(err(Some(-5), None).starts_with("--pid:"));
        assert!(err(Some(1 << 40), None).starts_with("--pid:"));
        assert!(err(Some(1), Some(ms(1))).starts_with("--monitor-interval:"));
        assert!(err(Some(1), Some(ms(60_000))).starts_with("--monitor-interval:"));
    }
}

//! The server monitor's settings (`--pid`, `--monitor-interval`, `--gc-log`).

use std::path::PathBuf;
use std::time::Duration;

use super::{ConfigError, Flag};
pub use volley_monitor::settings::{
    GcLogConfig, MonitorConfig, DEFAULT_MONITOR_INTERVAL, MAX_INTERVAL, MIN_INTERVAL,
};

/// Validates `--pid` and `--monitor-interval` (whether the process exists is checked when the
/// monitor attaches).
pub fn monitor_config(
    pid: Option<i64>,
    interval: Option<Duration>,
    gc_log: Option<PathBuf>,
) -> Result<Option<MonitorConfig>, ConfigError> {
    let Some(pid) = pid else {
        if gc_log.is_some() {
            return Err(ConfigError::flag(
                Flag::GcLog,
                "needs --pid (the server whose log it is: volley places its pauses on the run's clock by that process)",
            ));
        }
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
        gc_log: gc_log.map(|path| GcLogConfig { path, format: None }),
        profile_hz: None,
        profile_off_cpu: false,
    }))
}

/// `--profile` and `--profile-frequency` into the monitor's settings: both need `--pid`.
pub fn profile_config(
    monitor: &mut Option<MonitorConfig>,
    profile: bool,
    frequency: Option<u64>,
) -> Result<(), ConfigError> {
    if frequency.is_some() && !profile {
        return Err(ConfigError::flag(Flag::ProfileFrequency, "needs --profile"));
    }
    if !profile {
        return Ok(());
    }
    let Some(m) = monitor.as_mut() else {
        return Err(ConfigError::flag(
            Flag::Profile,
            "needs --pid (the server whose stacks are sampled, with its descendants)",
        ));
    };
    m.profile_hz = Some(frequency.unwrap_or(volley_monitor::profile::DEFAULT_FREQUENCY_HZ));
    Ok(())
}

/// `--profile-off-cpu` into the monitor's settings: it needs `--profile`.
pub fn off_cpu_config(
    monitor: &mut Option<MonitorConfig>,
    profile: bool,
    off_cpu: bool,
) -> Result<(), ConfigError> {
    if !off_cpu {
        return Ok(());
    }
    match monitor.as_mut() {
        Some(m) if profile => {
            m.profile_off_cpu = true;
            Ok(())
        }
        _ => Err(ConfigError::flag(
            Flag::ProfileOffCpu,
            "needs --profile (the threads' waits are read with their stacks)",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn monitor_flags() {
        let ms = Duration::from_millis;
        assert_eq!(monitor_config(None, None, None).unwrap(), None);
        assert_eq!(
            monitor_config(Some(42), None, None).unwrap(),
            Some(MonitorConfig {
                pid: 42,
                interval: ms(100),
                gc_log: None,
                profile_hz: None,
                profile_off_cpu: false,
            })
        );
        assert_eq!(
            monitor_config(Some(42), Some(ms(250)), None)
                .unwrap()
                .unwrap()
                .interval,
            ms(250)
        );
        let err = |p, i| monitor_config(p, i, None).unwrap_err().to_string();
        assert!(err(None, Some(ms(100))).starts_with("--monitor-interval: needs --pid"));
        assert!(err(Some(0), None).starts_with("--pid:"));
        assert!(err(Some(-5), None).starts_with("--pid:"));
        assert!(err(Some(1 << 40), None).starts_with("--pid:"));
        assert!(err(Some(1), Some(ms(1))).starts_with("--monitor-interval:"));
        assert!(err(Some(1), Some(ms(60_000))).starts_with("--monitor-interval:"));
        let log = Some(PathBuf::from("gc.log"));
        let e = monitor_config(None, None, log.clone())
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--gc-log: needs --pid"), "{e}");
        let m = monitor_config(Some(7), None, log).unwrap().unwrap();
        assert_eq!(m.gc_log.unwrap().path, PathBuf::from("gc.log"));
    }
}

//! The server monitor's settings (`--pid`, `--monitor-interval`, `--gc-log`; checked into
//! these by `config`).

use std::path::PathBuf;
use std::time::Duration;

use volley_model::result::GcSource;

/// Shortest sampling interval.
pub const MIN_INTERVAL: Duration = Duration::from_millis(10);
/// Longest sampling interval.
pub const MAX_INTERVAL: Duration = Duration::from_secs(10);

/// The server monitor's settings (`--pid`, `--monitor-interval`, `--gc-log`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MonitorConfig {
    /// The server process (its descendants are monitored too).
    pub pid: i32,
    /// Sampling interval.
    pub interval: Duration,
    /// The server runtime's GC log, read at the end of the window.
    pub gc_log: Option<GcLogConfig>,
    /// `--profile`: sample the tree's stacks at this many samples a second per CPU.
    pub profile_hz: Option<u64>,
    /// `--profile-off-cpu`: also where the tree's threads waited (with `profile_hz`).
    pub profile_off_cpu: bool,
}

/// A GC log to read (`--gc-log`, or the one a suite cell's runtime writes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GcLogConfig {
    /// The file.
    pub path: PathBuf,
    /// Its format; `None`: recognized from its lines.
    pub format: Option<GcSource>,
}

/// Default `--monitor-interval`: 10 Hz.
pub const DEFAULT_MONITOR_INTERVAL: Duration = Duration::from_millis(100);

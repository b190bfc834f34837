//! Before a step with `--pid`: wait (at most [`MAX_WAIT`]) until the monitored server's process
//! tree is idle — its CPU over [`WINDOW`] below [`IDLE_PCT`] % of one core — so the backlog of
//! an overloaded step does not leak into the next. Read from /proc as the monitor does. Before
//! a step runs again because other processes starved volley, the whole machine is waited for
//! ([`wait_machine`]).

use std::time::{Duration, Instant};

use volley_monitor::procfs;
use volley_monitor::read::{read_tree, Units};
use volley_monitor::tree::ProcKey;

/// The longest wait before a step.
pub const MAX_WAIT: Duration = Duration::from_secs(10);
/// One reading's window.
pub const WINDOW: Duration = Duration::from_millis(200);
/// Idle: the tree's CPU over the window below this share of one core, percent.
pub const IDLE_PCT: f64 = 5.0;

/// The tree's CPU ticks so far (user + system, reaped children included); none when `pid`
/// cannot be read.
fn ticks(root: ProcKey, units: Units) -> Option<u64> {
    let snap = read_tree(&[root], units, false);
    if snap.procs.is_empty() {
        return None;
    }
    Some(
        snap.procs
            .iter()
            .map(|p| p.cumulative.user_ticks + p.cumulative.sys_ticks)
            .sum(),
    )
}

/// Waits until `pid`'s tree is idle or [`MAX_WAIT`] has passed; returns the seconds waited and
/// whether it was idle at the end. A pid that cannot be read is not waited for.
pub(crate) fn wait(pid: i32) -> (f64, bool) {
    let started = Instant::now();
    let units = Units::detect();
    let Some(start) = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|t| procfs::parse_pid_stat(&t))
        .map(|s| s.starttime_ticks)
    else {
        return (0.0, true);
    };
    let root = ProcKey {
        pid,
        starttime_ticks: start,
    };
    loop {
        let Some(before) = ticks(root, units) else {
            return (started.elapsed().as_secs_f64(), true);
        };
        let t = Instant::now();
        std::thread::sleep(WINDOW);
        let Some(after) = ticks(root, units) else {
            return (started.elapsed().as_secs_f64(), true);
        };
        let cpu_s = after.saturating_sub(before) as f64 / units.ticks_per_s;
        let pct = cpu_s / t.elapsed().as_secs_f64() * 100.0;
        if pct < IDLE_PCT {
            return (started.elapsed().as_secs_f64(), true);
        }
        if started.elapsed() >= MAX_WAIT {
            return (started.elapsed().as_secs_f64(), false);
        }
    }
}

/// The longest wait for the whole machine before a step run again after a busy machine
/// starved volley.
pub const MACHINE_MAX_WAIT: Duration = Duration::from_secs(30);
/// The machine is idle enough when its busy share of all CPUs over [`WINDOW`] is below this,
/// percent (the server resting, nothing else to speak of).
pub const MACHINE_BUSY_PCT: f64 = 20.0;

/// Waits until the whole machine is idle ([`MACHINE_BUSY_PCT`], from /proc/stat) or
/// [`MACHINE_MAX_WAIT`] has passed; returns the seconds waited and whether it was idle.
pub fn wait_machine() -> (f64, bool) {
    let started = Instant::now();
    let read = || procfs::parse_proc_stat(&std::fs::read_to_string("/proc/stat").ok()?);
    loop {
        let Some(a) = read() else {
            return (0.0, true);
        };
        std::thread::sleep(WINDOW);
        let Some(b) = read() else {
            return (0.0, true);
        };
        let total = b.total().saturating_sub(a.total()).max(1) as f64;
        let idle = (b.idle + b.iowait).saturating_sub(a.idle + a.iowait) as f64;
        if (1.0 - idle / total) * 100.0 < MACHINE_BUSY_PCT {
            return (started.elapsed().as_secs_f64(), true);
        }
        if started.elapsed() >= MACHINE_MAX_WAIT {
            return (started.elapsed().as_secs_f64(), false);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_idle_process_is_not_waited_for_and_a_missing_one_neither() {
        // A sleeping child is idle: one window, well under the limit.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let (waited, idle) = wait(child.id() as i32);
        let _ = child.kill();
        let _ = child.wait();
        assert!(idle);
        assert!(waited < 2.0, "{waited}");
        assert_eq!(wait(i32::MAX), (0.0, true));
    }
}

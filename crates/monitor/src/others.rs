//! The other processes on the machine: which ones used the CPU during a window, so that a
//! starved client can name who took its CPUs (docs/contract.md, "Time series, histograms,
//! client check"). Two scans of /proc, one at each edge of the window.

use std::collections::HashMap;
use std::time::Instant;

use super::procfs;
use super::read::Units;
use volley_model::result::OtherProcess;

/// How many of the busiest processes are named.
pub(crate) const SHOWN: usize = 3;
/// Processes below this CPU use over the window (percent of one core) are not named.
const MIN_PCT: f64 = 5.0;

/// Every process's CPU ticks at one instant (volley's own left out).
#[derive(Debug)]
pub(crate) struct Snapshot {
    at: Instant,
    /// pid → (start time, command, user + system ticks).
    procs: HashMap<i32, (u64, String, u64)>,
}

/// Reads /proc now.
pub(crate) fn snapshot() -> Snapshot {
    let me = std::process::id() as i32;
    let mut procs = HashMap::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for e in dir.flatten() {
            let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<i32>().ok()) else {
                continue;
            };
            let Ok(text) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                continue;
            };
            if let (Some(st), Some(comm)) = (procfs::parse_pid_stat(&text), command(&text)) {
                if st.pid != me {
                    let ticks = st.utime_ticks + st.stime_ticks;
                    procs.insert(st.pid, (st.starttime_ticks, comm, ticks));
                }
            }
        }
    }
    Snapshot {
        at: Instant::now(),
        procs,
    }
}

/// The command name of a /proc/PID/stat line (between the first `(` and the last `)`).
fn command(stat: &str) -> Option<String> {
    let open = stat.find('(')?;
    let close = stat.rfind(')')?;
    (open < close).then(|| stat[open + 1..close].to_string())
}

/// The processes that used the most CPU between `a` and `b` (at least 5 % of a core), the
/// busiest first, at most [`SHOWN`]. A pid reused in between (another start time) counts from
/// zero.
pub(crate) fn busiest(a: &Snapshot, b: &Snapshot) -> Vec<OtherProcess> {
    let mut used = every_busy(a, b);
    used.truncate(SHOWN);
    used
}

/// Every process that used at least 5 % of a core between `a` and `b`, the busiest first.
fn every_busy(a: &Snapshot, b: &Snapshot) -> Vec<OtherProcess> {
    let secs = b.at.duration_since(a.at).as_secs_f64();
    if secs <= 0.0 {
        return Vec::new();
    }
    let ticks_per_s = Units::detect().ticks_per_s;
    let mut used: Vec<OtherProcess> = b
        .procs
        .iter()
        .filter_map(|(pid, (start, comm, ticks))| {
            let before = match a.procs.get(pid) {
                Some((s, _, t)) if s == start => *t,
                _ => 0,
            };
            let cpu_pct = ticks.saturating_sub(before) as f64 / ticks_per_s / secs * 100.0;
            (cpu_pct >= MIN_PCT).then(|| OtherProcess {
                pid: *pid,
                command: comm.clone(),
                cpu_pct: (cpu_pct * 10.0).round() / 10.0,
            })
        })
        .collect();
    used.sort_by(|x, y| y.cpu_pct.total_cmp(&x.cpu_pct).then(x.pid.cmp(&y.pid)));
    used
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_busy_child_is_named_and_volley_is_not() {
        let mut a = snapshot();
        assert!(!a.procs.contains_key(&(std::process::id() as i32)));
        // A child that spins (`yes` writes as fast as it can).
        let mut child = std::process::Command::new("yes")
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pid = child.id() as i32;
        let ticks = |s: &Snapshot| s.procs.get(&pid).map_or(0, |p| p.2);
        // The child is busy in a window only when the machine let it run: a window of 300 ms
        // in which other work held it under 5 % of a core (3 ticks at 100 Hz) says nothing of
        // the code, so the window moves on, at most 20 times (6 s), each one reported.
        let ticks_per_s = Units::detect().ticks_per_s;
        let next = || {
            std::thread::sleep(std::time::Duration::from_millis(300));
            snapshot()
        };
        let mut b = next();
        for window in 1..=20 {
            let secs = b.at.duration_since(a.at).as_secs_f64();
            let pct = ticks(&b).saturating_sub(ticks(&a)) as f64 / ticks_per_s / secs * 100.0;
            if pct >= 2.0 * MIN_PCT {
                break;
            }
            eprintln!("window {window}: the machine let `yes` use only {pct:.1} % of a core");
            a = std::mem::replace(&mut b, next());
        }
        let _ = child.kill();
        let _ = child.wait();
        // Among every busy process (a busy machine may have three busier ones).
        let every = every_busy(&a, &b);
        assert!(
            every
                .iter()
                .any(|p| p.pid == child.id() as i32 && p.command == "yes"),
            "{every:?}"
        );
        let named = busiest(&a, &b);
        assert!(named.len() <= SHOWN);
        assert!(every.starts_with(&named), "{named:?} of {every:?}");
        assert_eq!(command("42 (a (b) c) S 1"), Some("a (b) c".into()));
    }
}

//! Reading a process tree from /proc: one process (CPU, I/O, RSS, threads, descriptors, each
//! thread's context switches, its children) and the whole tree under the known roots, found
//! by children files or, where the kernel has none, by parent links. The parsers are pure
//! ([`super::procfs`]); this is the I/O around them.

use std::collections::HashSet;
use std::fs;

use super::procfs;
use super::tree::{Cumulative, ProcKey, ProcReading, Snapshot, TaskReading};

/// Kernel constants the readings are converted with.
#[derive(Debug, Clone, Copy)]
pub struct Units {
    /// Clock ticks per second (utime/stime are in ticks).
    pub ticks_per_s: f64,
    /// Bytes per page (RSS is in pages).
    pub page_bytes: u64,
    /// /proc/PID/task/TID/children exists (CONFIG_PROC_CHILDREN); otherwise all of /proc is
    /// scanned for parents.
    pub children_files: bool,
}

impl Units {
    /// Reads them from this kernel.
    pub fn detect() -> Self {
        // SAFETY: sysconf has no preconditions.
        let tck = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        // SAFETY: as above.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
        let me = std::process::id();
        Units {
            ticks_per_s: if tck > 0 { tck as f64 } else { 100.0 },
            page_bytes: if page > 0 { page as u64 } else { 4096 },
            children_files: fs::metadata(format!("/proc/{me}/task/{me}/children")).is_ok(),
        }
    }
}

/// The inodes of the sockets process `pid` holds open (`/proc/PID/fd/N -> socket:[INODE]`);
/// empty when its descriptors cannot be read (another user's process, or gone).
pub fn socket_inodes(pid: i32) -> Vec<u64> {
    let Ok(dir) = fs::read_dir(format!("/proc/{pid}/fd")) else {
        return Vec::new();
    };
    dir.filter_map(|e| fs::read_link(e.ok()?.path()).ok())
        .filter_map(|target| {
            let t = target.to_str()?;
            t.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
        })
        .collect()
}

fn count_fds(pid: i32) -> Option<u64> {
    let dir = format!("/proc/{pid}/fd");
    // Since Linux 6.2 the size of /proc/PID/fd is the number of open descriptors.
    let size = fs::metadata(&dir).ok()?.len();
    if size > 0 {
        return Some(size);
    }
    Some(fs::read_dir(&dir).ok()?.count() as u64)
}

/// Reads one process (and the pids of its children) or `None` when it is gone, or when its pid
/// now belongs to a process that started at another time than `expect_start`.
fn read_process(
    pid: i32,
    expect_start: Option<u64>,
    units: Units,
    with_fds: bool,
    children: &mut Vec<i32>,
) -> Option<ProcReading> {
    let stat = procfs::parse_pid_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)?;
    if expect_start.is_some_and(|s| s != stat.starttime_ticks) {
        return None;
    }
    let io = fs::read_to_string(format!("/proc/{pid}/io"))
        .map(|t| procfs::parse_io(&t))
        .unwrap_or_default();
    let mut tasks = Vec::new();
    if let Ok(dir) = fs::read_dir(format!("/proc/{pid}/task")) {
        for e in dir.flatten() {
            let Some(tid) = e.file_name().to_str().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let ctx = fs::read_to_string(format!("/proc/{pid}/task/{tid}/status"))
                .ok()
                .and_then(|t| procfs::parse_status_ctx(&t));
            tasks.push(TaskReading { tid, ctx });
            if units.children_files {
                if let Ok(t) = fs::read_to_string(format!("/proc/{pid}/task/{tid}/children")) {
                    children.extend(procfs::parse_children(&t));
                }
            }
        }
    }
    let exited = stat.exited();
    Some(ProcReading {
        key: ProcKey {
            pid,
            starttime_ticks: stat.starttime_ticks,
        },
        ppid: stat.ppid,
        exited,
        cumulative: Cumulative {
            user_ticks: stat.utime_ticks + stat.cutime_ticks,
            sys_ticks: stat.stime_ticks + stat.cstime_ticks,
            io,
        },
        rss_bytes: stat.rss_pages * units.page_bytes,
        threads: if exited { 0 } else { stat.threads },
        fds: if with_fds && !exited {
            count_fds(pid)
        } else {
            None
        },
        tasks,
    })
}

/// Reads the processes in `known` that still exist and all their descendants.
pub fn read_tree(known: &[ProcKey], units: Units, with_fds: bool) -> Snapshot {
    let mut queue: Vec<(i32, Option<u64>)> = known
        .iter()
        .rev()
        .map(|k| (k.pid, Some(k.starttime_ticks)))
        .collect();
    let mut seen = HashSet::new();
    let mut procs = Vec::new();
    let mut children = Vec::new();
    loop {
        while let Some((pid, start)) = queue.pop() {
            if !seen.insert(pid) {
                continue;
            }
            children.clear();
            if let Some(r) = read_process(pid, start, units, with_fds, &mut children) {
                procs.push(r);
                queue.extend(
                    children
                        .iter()
                        .filter(|c| !seen.contains(*c))
                        .map(|c| (*c, None)),
                );
            }
        }
        if units.children_files {
            break;
        }
        // No children files: find processes whose parent is in the tree, until none is new.
        let parents: HashSet<i32> = procs.iter().map(|r| r.key.pid).collect();
        if let Ok(dir) = fs::read_dir("/proc") {
            for e in dir.flatten() {
                let Some(pid) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
                    continue;
                };
                if seen.contains(&pid) {
                    continue;
                }
                let ppid = fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|t| procfs::parse_pid_stat(&t))
                    .map(|s| s.ppid);
                if ppid.is_some_and(|p| parents.contains(&p)) {
                    queue.push((pid, None));
                }
            }
        }
        if queue.is_empty() {
            break;
        }
    }
    Snapshot { procs }
}

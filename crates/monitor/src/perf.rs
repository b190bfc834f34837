//! Syscall counting with perf tracepoints (docs/contract.md, "Server monitor"): one
//! `raw_syscalls:sys_enter` counter per thread of the server's process tree, opened with
//! `inherit` so threads and processes created later are counted into their creator's counter,
//! plus per-name counters on `syscalls:sys_enter_<name>` for the top list. This is `strace -c`
//! without ptrace: the kernel bumps a counter on each syscall entry and volley reads the totals
//! at the window edges.
//!
//! The tracepoint ids come from tracefs (`crate::tracefs`: where it is not mounted, from one a
//! short-lived child mounts in a private mount namespace). Where counting cannot work the count
//! is null and the reason says why and what would fix it.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

pub use super::tracefs::{tracepoints, Tracepoints};

/// Perf descriptors volley allows itself for syscall counting; per-name counters are dropped
/// (the least common first) when `threads × (1 + names)` would exceed it.
pub(crate) const DEFAULT_FD_BUDGET: usize = 4096;

/// One reading of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SyscallReading {
    /// All syscalls entered by the counted threads and their descendants.
    pub total: u64,
    /// Per name, in the order of `SyscallCounters::names`.
    pub by_name: Vec<u64>,
}

/// Open perf counters over a set of threads.
#[derive(Debug)]
pub(crate) struct SyscallCounters {
    raw: Vec<OwnedFd>,
    names: Vec<(String, Vec<OwnedFd>)>,
}

/// `struct perf_event_attr` up to PERF_ATTR_SIZE_VER5 (112 bytes); the kernel accepts any
/// published size.
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) type_: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_events: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) branch_sample_type: u64,
    pub(crate) sample_regs_user: u64,
    pub(crate) sample_stack_user: u32,
    pub(crate) clockid: i32,
    pub(crate) sample_regs_intr: u64,
    pub(crate) aux_watermark: u32,
    pub(crate) sample_max_stack: u16,
    pub(crate) reserved_2: u16,
}

const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `inherit` is bit 1 of the flags bitfield (bit 0 is `disabled`).
const FLAG_INHERIT: u64 = 1 << 1;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Opens a counting (never sampling) tracepoint counter on thread `tid`, inherited by the
/// threads and processes it creates from now on.
fn open_counter(tracepoint_id: u64, tid: i32) -> io::Result<OwnedFd> {
    let attr = PerfEventAttr {
        type_: PERF_TYPE_TRACEPOINT,
        size: size_of::<PerfEventAttr>() as u32,
        config: tracepoint_id,
        flags: FLAG_INHERIT,
        ..Default::default()
    };
    open(&attr, tid, -1)
}

/// `perf_event_open(attr, pid, cpu)` without a group, closed on exec.
pub(crate) fn open(attr: &PerfEventAttr, pid: i32, cpu: i32) -> io::Result<OwnedFd> {
    // SAFETY: perf_event_open reads `attr` (correctly sized, `size` set) and returns a new
    // descriptor or -1; the descriptor is owned below.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid as libc::pid_t,
            cpu as libc::c_int,
            -1 as libc::c_int,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

fn read_counter(fd: &OwnedFd) -> u64 {
    let mut v = 0u64;
    // SAFETY: reading 8 bytes into a u64 we own; a counting event returns exactly its value
    // (the sum over inherited children included).
    let n = unsafe { libc::read(fd.as_raw_fd(), &mut v as *mut u64 as *mut libc::c_void, 8) };
    if n == 8 {
        v
    } else {
        0
    }
}

/// Why `perf_event_open` failed, in words a user can act on.
pub(crate) fn open_error_reason(e: &io::Error) -> String {
    let paranoid = fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "unknown".into());
    match e.raw_os_error() {
        Some(libc::EACCES) | Some(libc::EPERM) => format!(
            "perf_event_open was refused ({e}; kernel.perf_event_paranoid = {paranoid}): counting another process's syscalls needs root or CAP_PERFMON, or perf_event_paranoid <= 1 and permission to trace the process"
        ),
        Some(libc::ENOSYS) => format!("perf_event_open is not available ({e}): a kernel without perf events, or a seccomp filter (containers often block it)"),
        Some(libc::ENOENT) | Some(libc::ENODEV) | Some(libc::EINVAL) | Some(libc::EOPNOTSUPP) => {
            format!("this kernel does not support counting tracepoints with perf_event_open ({e})")
        }
        Some(libc::EMFILE) | Some(libc::ENFILE) => {
            format!("out of file descriptors for perf counters ({e})")
        }
        _ => format!("perf_event_open failed: {e}"),
    }
}

/// How many per-name counters fit `budget` descriptors over `threads` threads (each thread
/// also needs its total counter). `None` when not even the totals fit.
pub(crate) fn names_within_budget(
    threads: usize,
    available_names: usize,
    budget: usize,
) -> Option<usize> {
    let per_thread = budget.checked_div(threads.max(1))?;
    if per_thread == 0 {
        return None;
    }
    Some((per_thread - 1).min(available_names))
}

impl SyscallCounters {
    /// Opens counters on `tids` (every thread of the process tree at attach time). Threads that
    /// exit in the meantime are skipped; any other failure is the reason the count is null.
    #[cfg(test)]
    pub fn open(tp: &Tracepoints, tids: &[i32], fd_budget: usize) -> Result<Self, String> {
        let mut c = Self::open_totals(tp, tids, fd_budget)?;
        c.open_names(tp, tids, fd_budget)?;
        Ok(c)
    }

    /// Opens the totals' counters (one per thread: quick, so that few threads can start
    /// meanwhile), without the per-name ones ([`SyscallCounters::open_names`]).
    pub fn open_totals(tp: &Tracepoints, tids: &[i32], fd_budget: usize) -> Result<Self, String> {
        names_within_budget(tids.len(), tp.by_name.len(), fd_budget).ok_or_else(|| {
            format!(
                "{} threads are more than the {fd_budget} perf counters volley allows itself (one per thread)",
                tids.len()
            )
        })?;
        let mut raw = Vec::with_capacity(tids.len());
        for &tid in tids {
            match open_counter(tp.raw_sys_enter, tid) {
                Ok(fd) => raw.push(fd),
                // The thread exited between the listing and now.
                Err(e) if e.raw_os_error() == Some(libc::ESRCH) => continue,
                Err(e) => return Err(open_error_reason(&e)),
            }
        }
        if raw.is_empty() {
            return Err("every thread of the process exited before its counter was opened".into());
        }
        Ok(SyscallCounters {
            raw,
            names: Vec::new(),
        })
    }

    /// Opens the per-name counters of the top list on `tids`, as many names as the budget
    /// allows.
    pub fn open_names(
        &mut self,
        tp: &Tracepoints,
        tids: &[i32],
        fd_budget: usize,
    ) -> Result<(), String> {
        let n_names = names_within_budget(tids.len(), tp.by_name.len(), fd_budget).unwrap_or(0);
        let mut names: Vec<(String, Vec<OwnedFd>)> = tp.by_name[..n_names]
            .iter()
            .map(|(n, _)| (n.clone(), Vec::with_capacity(tids.len())))
            .collect();
        for &tid in tids {
            for (k, (_, id)) in tp.by_name[..n_names].iter().enumerate() {
                match open_counter(*id, tid) {
                    Ok(fd) => names[k].1.push(fd),
                    Err(e) if e.raw_os_error() == Some(libc::ESRCH) => break,
                    Err(e) => return Err(open_error_reason(&e)),
                }
            }
        }
        self.names = names;
        Ok(())
    }

    /// The names counted one by one, in reading order.
    pub fn names(&self) -> Vec<&str> {
        self.names.iter().map(|(n, _)| n.as_str()).collect()
    }

    /// Reads the totals (one read per thread) and, with `by_name`, the per-name counters.
    pub fn read(&self, by_name: bool) -> SyscallReading {
        SyscallReading {
            total: self.raw.iter().map(read_counter).sum(),
            by_name: if by_name {
                self.names
                    .iter()
                    .map(|(_, fds)| fds.iter().map(read_counter).sum())
                    .collect()
            } else {
                Vec::new()
            },
        }
    }
}

impl Drop for SyscallCounters {
    /// Closes the counters without making volley wait for the kernel.
    ///
    /// Closing the last perf event of a tracepoint unregisters the kernel's probe and waits
    /// for an RCU grace period under a global mutex: about 35 ms per tracepoint on this
    /// machine, 2.6 s for the 74 counted ones, serialized whichever thread closes them (and at
    /// exit too). So a detached grandchild process takes over the last references and closes
    /// them at its own pace; volley's own closes then only drop a reference. The grandchild
    /// keeps nothing else open (not volley's stdout or sockets), leaves volley's session and
    /// ends by itself. Where fork fails, the counters are closed here, slowly.
    fn drop(&mut self) {
        let mut fds: Vec<OwnedFd> = std::mem::take(&mut self.raw);
        fds.extend(self.names.drain(..).flat_map(|(_, fds)| fds));
        if fds.is_empty() {
            return;
        }
        let mut keep: Vec<libc::c_int> = fds.iter().map(|fd| fd.as_raw_fd()).collect();
        let mut pipe = [0 as libc::c_int; 2];
        // SAFETY: pipe2 fills the two-element array we own.
        if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
            return;
        }
        let (rd, wr) = (pipe[0], pipe[1]);
        keep.push(rd);
        keep.sort_unstable();
        // Everything the children need is computed before fork: after it, in a multithreaded
        // process, they may only make async-signal-safe calls (fork, close, read, _exit...).
        // SAFETY: see above; the children never return into Rust code.
        let child = unsafe { libc::fork() };
        if child == 0 {
            // SAFETY: async-signal-safe calls only, ending in _exit.
            unsafe {
                if libc::fork() == 0 {
                    libc::setsid();
                    close_all_except(&keep);
                    let mut b = 0u8;
                    // Wait until volley has dropped its references (EOF), then exit: the
                    // kernel closes the counters, taking its time.
                    while libc::read(rd, &mut b as *mut u8 as *mut libc::c_void, 1) < 0
                        && *libc::__errno_location() == libc::EINTR
                    {}
                }
                libc::_exit(0);
            }
        }
        if child > 0 {
            let mut status = 0;
            // SAFETY: reaping the child we just forked (it exits at once).
            unsafe { libc::waitpid(child, &mut status, 0) };
        }
        drop(fds);
        // SAFETY: closing the pipe ends we created; the grandchild sees EOF.
        unsafe {
            libc::close(wr);
            libc::close(rd);
        }
    }
}

/// Closes every descriptor except the sorted `keep` ones. Async-signal-safe (no allocation).
///
/// # Safety
/// Closes descriptors other code may own; only for a process about to `_exit`.
unsafe fn close_all_except(keep: &[libc::c_int]) {
    unsafe {
        let mut from: libc::c_uint = 0;
        for &k in keep {
            if (k as libc::c_uint) > from {
                close_range(from, k as libc::c_uint - 1);
            }
            from = k as libc::c_uint + 1;
        }
        close_range(from, libc::c_uint::MAX);
    }
}

/// close_range(2) (Linux 5.9), or one close(2) per descriptor up to the limit before it.
unsafe fn close_range(first: libc::c_uint, last: libc::c_uint) {
    unsafe {
        if libc::syscall(libc::SYS_close_range, first, last, 0) == 0 {
            return;
        }
        let mut lim = libc::rlimit {
            rlim_cur: 0,
            rlim_max: 0,
        };
        let max = if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 {
            lim.rlim_cur.min(1 << 20) as libc::c_uint
        } else {
            1024
        };
        let mut fd = first;
        while fd <= last && fd < max {
            libc::close(fd as libc::c_int);
            fd += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tracefs::{errno_words, has_cap_sys_admin, tracepoints_in, TRACEFS_DIRS};
    use super::*;
    use std::path::Path;

    #[test]
    fn attr_has_a_published_size() {
        // PERF_ATTR_SIZE_VER5
        assert_eq!(size_of::<PerfEventAttr>(), 112);
    }

    #[test]
    fn names_are_dropped_before_totals() {
        assert_eq!(names_within_budget(2, 70, 4096), Some(70));
        assert_eq!(names_within_budget(100, 70, 4096), Some(39));
        assert_eq!(names_within_budget(4096, 70, 4096), Some(0));
        assert_eq!(names_within_budget(5000, 70, 4096), None);
        assert_eq!(names_within_budget(1, 70, 0), None);
    }

    fn tracefs_mounts() -> Vec<String> {
        fs::read_to_string("/proc/self/mountinfo")
            .unwrap()
            .lines()
            .filter(|l| l.contains("tracefs") || l.contains("debugfs"))
            .map(String::from)
            .collect()
    }

    #[test]
    fn missing_tracefs_is_mounted_in_a_private_namespace() {
        // Locations that do not exist stand for an unmounted tracefs, so the fallback runs
        // whether or not this machine has tracefs mounted.
        let missing = [Path::new("/nonexistent/volley-test/tracing")];
        if !has_cap_sys_admin() {
            println!(
                "skipped: mounting tracefs in a private namespace needs root or CAP_SYS_ADMIN"
            );
            let reason = tracepoints_in(&missing, Path::new(TRACEFS_DIRS[0])).unwrap_err();
            assert!(
                reason.contains("tracefs is not mounted at /nonexistent"),
                "{reason}"
            );
            assert!(reason.contains("CAP_SYS_ADMIN"), "{reason}");
            return;
        }
        let before = tracefs_mounts();
        let tp = tracepoints_in(&missing, Path::new(TRACEFS_DIRS[0]))
            .unwrap_or_else(|reason| panic!("as root the namespace mount must work: {reason}"));
        assert!(tp.raw_sys_enter > 0);
        assert!(
            tp.by_name.iter().any(|(n, _)| n == "futex")
                && tp.by_name.iter().any(|(n, _)| n == "write"),
            "{:?}",
            tp.by_name
        );
        // The same ids as tracefs itself shows, where it is mounted.
        if let Ok(direct) = tracepoints_in(&TRACEFS_DIRS.map(Path::new), Path::new("/nonexistent"))
        {
            assert_eq!(direct.raw_sys_enter, tp.raw_sys_enter);
            assert_eq!(direct.by_name, tp.by_name);
        }
        // Any directory serves as the mountpoint (the temporary one where sysfs has none).
        let elsewhere = tracepoints_in(&missing, &std::env::temp_dir())
            .unwrap_or_else(|reason| panic!("{reason}"));
        assert_eq!(elsewhere.raw_sys_enter, tp.raw_sys_enter);
        assert_eq!(elsewhere.by_name, tp.by_name);
        // Nothing leaked into volley's (the host's) mount namespace.
        assert_eq!(tracefs_mounts(), before);

        // The ids count: this thread's getppid calls show up.
        let tid = unsafe { libc::gettid() };
        let only_getpid = Tracepoints {
            raw_sys_enter: tp.raw_sys_enter,
            by_name: tp
                .by_name
                .into_iter()
                .filter(|(n, _)| n == "getpid")
                .collect(),
        };
        let c = SyscallCounters::open(&only_getpid, &[tid], DEFAULT_FD_BUDGET)
            .unwrap_or_else(|reason| panic!("{reason}"));
        let a = c.read(true);
        for _ in 0..100 {
            // SAFETY: getpid has no preconditions; a real syscall each time.
            unsafe { libc::syscall(libc::SYS_getpid) };
        }
        let b = c.read(true);
        assert!(b.total >= a.total + 100, "{a:?} -> {b:?}");
        assert!(b.by_name[0] >= a.by_name[0] + 100, "{a:?} -> {b:?}");
    }

    #[test]
    fn a_failing_step_is_named_with_its_errno() {
        assert_eq!(errno_words(libc::EPERM), "EPERM (Operation not permitted)");
        if !has_cap_sys_admin() {
            println!("skipped: needs root or CAP_SYS_ADMIN to reach the mount step");
            return;
        }
        // A mountpoint that does not exist fails at the mount, inside the child.
        let reason = tracepoints_in(
            &[Path::new("/nonexistent/volley-test/tracing")],
            Path::new("/nonexistent/volley-test/mnt"),
        )
        .unwrap_err();
        assert!(
            reason.contains(
                "mounting it in a private mount namespace failed: mount -t tracefs: ENOENT"
            ),
            "{reason}"
        );
    }

    #[test]
    fn own_thread_is_counted_or_the_reason_is_given() {
        // Works where perf is permitted (root here); elsewhere a reason must come back.
        let tid = unsafe { libc::gettid() };
        let tp = match tracepoints() {
            Ok(tp) => tp,
            Err(reason) => {
                assert!(!reason.is_empty());
                return;
            }
        };
        match SyscallCounters::open(&tp, &[tid], DEFAULT_FD_BUDGET) {
            Ok(c) => {
                let a = c.read(true);
                for _ in 0..100 {
                    // SAFETY: getppid has no preconditions; a real syscall each time.
                    unsafe { libc::syscall(libc::SYS_getppid) };
                }
                let b = c.read(true);
                assert!(b.total >= a.total + 100, "{a:?} -> {b:?}");
                assert_eq!(b.by_name.len(), c.names().len());
                // Releasing does not wait for the kernel's per-tracepoint grace periods.
                let t = std::time::Instant::now();
                drop(c);
                assert!(t.elapsed() < std::time::Duration::from_millis(500));
            }
            Err(reason) => assert!(!reason.is_empty()),
        }
    }
}

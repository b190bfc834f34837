//! The tracepoint ids perf counts syscalls with (docs/contract.md, "Server monitor"): which
//! syscalls are counted by name, and their ids read from tracefs. Where tracefs is not mounted,
//! a short-lived child mounts it in a private mount namespace of its own and reports the ids
//! (root or CAP_SYS_ADMIN), so the rest of the system, volley included, never sees the mount.

use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::Path;

/// Where tracefs usually lives; the second is the old debugfs location.
pub(crate) const TRACEFS_DIRS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

/// Syscalls counted by name, most important first. Counting every one of the ~360
/// `sys_enter_*` tracepoints would mean ~360 perf events per thread, and the kernel switches
/// each of them in and out with the thread: on this machine a context-switch-heavy benchmark ran
/// about 1.5x slower with all of them, against a few percent with this list. What the list
/// misses shows up as the difference between `syscalls` and the sum of the top list.
pub(crate) const COUNTED_SYSCALLS: &[&str] = &[
    "futex",
    "epoll_wait",
    "epoll_pwait",
    "read",
    "write",
    "recvfrom",
    "sendto",
    "writev",
    "readv",
    "recvmsg",
    "sendmsg",
    "accept4",
    "accept",
    "close",
    "epoll_ctl",
    "io_uring_enter",
    "poll",
    "ppoll",
    "select",
    "pselect6",
    "epoll_pwait2",
    "sendfile64",
    "splice",
    "openat",
    "newfstatat",
    "newfstat",
    "statx",
    "lseek",
    "pread64",
    "pwrite64",
    "preadv",
    "pwritev",
    "recvmmsg",
    "sendmmsg",
    "shutdown",
    "setsockopt",
    "getsockopt",
    "getsockname",
    "getpeername",
    "socket",
    "connect",
    "ioctl",
    "fcntl",
    "sched_yield",
    "nanosleep",
    "clock_nanosleep",
    "clock_gettime",
    "gettimeofday",
    "getpid",
    "gettid",
    "getrandom",
    "getrusage",
    "mmap",
    "munmap",
    "mremap",
    "madvise",
    "mprotect",
    "brk",
    "rt_sigprocmask",
    "rt_sigaction",
    "rt_sigreturn",
    "tgkill",
    "eventfd2",
    "timerfd_settime",
    "getdents64",
    "access",
    "clone",
    "clone3",
    "wait4",
    "execve",
    "exit",
    "prctl",
    "sched_getaffinity",
];

/// Tracepoint ids found in tracefs.
#[derive(Debug, Clone)]
pub struct Tracepoints {
    /// `raw_syscalls:sys_enter`.
    pub raw_sys_enter: u64,
    /// `syscalls:sys_enter_<name>` for the names of `COUNTED_SYSCALLS` this kernel has.
    pub by_name: Vec<(String, u64)>,
}

/// Finds the tracepoint ids, or says why they cannot be read.
///
/// Where tracefs is mounted at neither usual place, the ids are read from a tracefs mounted in
/// a short-lived child's private mount namespace (as `perf` mounts it when it is missing):
/// nothing changes for the rest of the system, volley's own mount namespace included. That
/// needs root or `CAP_SYS_ADMIN`; otherwise the reason says what was tried.
pub fn tracepoints() -> Result<Tracepoints, String> {
    let dirs = TRACEFS_DIRS.map(Path::new);
    // Any existing directory will do as the mountpoint, since the mount covers it only inside
    // the child's namespace; the temporary directory where sysfs lacks the usual one.
    let mountpoint = if dirs[0].is_dir() {
        dirs[0].to_path_buf()
    } else {
        std::env::temp_dir()
    };
    tracepoints_in(&dirs, &mountpoint)
}

/// Where an id file sits under the root of tracefs.
const RAW_SYS_ENTER_ID: &str = "events/raw_syscalls/sys_enter/id";

fn name_id_path(name: &str) -> String {
    format!("events/syscalls/sys_enter_{name}/id")
}

/// `tracepoints` over the given tracefs locations; `mountpoint` is where the private-namespace
/// fallback mounts tracefs (inside the child's namespace only). Tests pass locations that do
/// not exist to exercise the fallback without unmounting anything.
pub(crate) fn tracepoints_in(dirs: &[&Path], mountpoint: &Path) -> Result<Tracepoints, String> {
    let mut reasons = Vec::new();
    for dir in dirs {
        let id_path = dir.join(RAW_SYS_ENTER_ID);
        match fs::read_to_string(&id_path) {
            Ok(t) => {
                let raw_sys_enter = parse_id(&t).ok_or_else(|| {
                    format!("{} does not hold a tracepoint id", id_path.display())
                })?;
                let by_name = COUNTED_SYSCALLS
                    .iter()
                    .filter_map(|name| {
                        let t = fs::read_to_string(dir.join(name_id_path(name))).ok()?;
                        Some((name.to_string(), parse_id(&t)?))
                    })
                    .collect();
                return Ok(Tracepoints {
                    raw_sys_enter,
                    by_name,
                });
            }
            Err(e) if e.kind() == io::ErrorKind::PermissionDenied => {
                return Err(format!(
                    "cannot read {}: permission denied (tracefs is usually readable by root only; run volley as root)",
                    id_path.display()
                ));
            }
            Err(_) => reasons.push(dir.display().to_string()),
        }
    }
    if dirs.iter().any(|d| d.join("events").is_dir()) {
        return Err(NO_RAW_SYSCALLS.to_string());
    }
    let not_mounted = format!("tracefs is not mounted at {}", reasons.join(" or "));
    if !has_cap_sys_admin() {
        return Err(format!(
            "{not_mounted}, and volley can mount it in a private mount namespace only as root or with CAP_SYS_ADMIN (run volley as root, or as root: `mount -t tracefs nodev /sys/kernel/tracing`)"
        ));
    }
    tracepoints_in_private_namespace(mountpoint).map_err(|e| {
        format!(
            "{not_mounted}, and mounting it in a private mount namespace failed: {e} (as root: `mount -t tracefs nodev /sys/kernel/tracing`)"
        )
    })
}

const NO_RAW_SYSCALLS: &str =
    "the kernel has no raw_syscalls:sys_enter tracepoint (built without CONFIG_FTRACE_SYSCALLS)";

fn parse_id(t: &str) -> Option<u64> {
    t.trim().parse().ok()
}

/// Whether the effective capabilities include CAP_SYS_ADMIN (needed for `unshare(CLONE_NEWNS)`
/// and mounting). Unknown counts as yes: the child then finds out.
pub(crate) fn has_cap_sys_admin() -> bool {
    const CAP_SYS_ADMIN: u32 = 21;
    let Ok(status) = fs::read_to_string("/proc/self/status") else {
        return true;
    };
    status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .and_then(|hex| u64::from_str_radix(hex.trim(), 16).ok())
        .is_none_or(|caps| caps & (1 << CAP_SYS_ADMIN) != 0)
}

/// How long the child may take before it is killed.
const NAMESPACE_CHILD_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(2);

/// One id file's content in the child's report: a length byte, then up to 31 bytes.
const SLOT: usize = 32;

/// What the child failed at, the first byte of its report (then the errno, 4 bytes).
#[derive(Clone, Copy)]
#[repr(u8)]
enum Step {
    Done = 0,
    Unshare = 1,
    MakePrivate = 2,
    Mount = 3,
    OpenMountpoint = 4,
}

/// Reads the ids from a tracefs mounted in a forked child's private mount namespace.
///
/// volley is multithreaded, so after fork the child may only make async-signal-safe calls:
/// every path is a `CString` and the report buffer is allocated before fork, and the child only
/// calls unshare, mount, open, read, write, close and `_exit`. It makes every mount in its new
/// namespace private before mounting, so the mount does not propagate back to the namespace
/// volley (and the rest of the system) lives in, and the namespace with its mount goes away
/// when the child exits.
fn tracepoints_in_private_namespace(mountpoint: &Path) -> Result<Tracepoints, String> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;

    let cstr = |s: &[u8]| CString::new(s).map_err(|_| "a path holds a NUL byte".to_string());
    let mnt = cstr(mountpoint.as_os_str().as_bytes())?;
    let root = cstr(b"/")?;
    let nodev = cstr(b"nodev")?;
    let tracefs = cstr(b"tracefs")?;
    let debugfs = cstr(b"debugfs")?;
    let tracing = cstr(b"tracing")?;
    // The raw tracepoint first, then one per name, relative to tracefs' root.
    let mut rel = vec![cstr(RAW_SYS_ENTER_ID.as_bytes())?];
    for name in COUNTED_SYSCALLS {
        rel.push(cstr(name_id_path(name).as_bytes())?);
    }
    let rel_ptrs: Vec<*const libc::c_char> = rel.iter().map(|c| c.as_ptr()).collect();
    let mut report = vec![0u8; 5 + SLOT * rel.len()];

    let mut pipe = [0 as libc::c_int; 2];
    // SAFETY: pipe2 fills the two-element array we own.
    if unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(format!("pipe: {}", io::Error::last_os_error()));
    }
    // SAFETY: both descriptors are fresh and owned here from now on.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(pipe[0]), OwnedFd::from_raw_fd(pipe[1])) };

    // SAFETY: the child makes async-signal-safe calls only, on memory prepared before fork,
    // and never returns into Rust code (it ends in `_exit`).
    let child = unsafe { libc::fork() };
    if child < 0 {
        return Err(format!("fork: {}", io::Error::last_os_error()));
    }
    if child == 0 {
        // SAFETY: see above.
        unsafe {
            libc::close(rd.as_raw_fd());
            let (step, errno) = namespace_child(
                mnt.as_ptr(),
                root.as_ptr(),
                nodev.as_ptr(),
                tracefs.as_ptr(),
                debugfs.as_ptr(),
                tracing.as_ptr(),
                &rel_ptrs,
                &mut report,
            );
            report[0] = step as u8;
            report[1..5].copy_from_slice(&errno.to_ne_bytes());
            let len = if matches!(step, Step::Done) {
                report.len()
            } else {
                5
            };
            let mut off = 0;
            while off < len {
                let n = libc::write(
                    wr.as_raw_fd(),
                    report[off..].as_ptr() as *const libc::c_void,
                    len - off,
                );
                if n <= 0 {
                    if n < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    break;
                }
                off += n as usize;
            }
            libc::_exit(0);
        }
    }
    drop(wr);
    let got = read_with_deadline(&rd, &mut report, NAMESPACE_CHILD_TIMEOUT);
    drop(rd);
    reap(child, got.is_err());
    let n = got?;
    if n < 5 {
        return Err("the child ended without a report".into());
    }
    let errno = i32::from_ne_bytes([report[1], report[2], report[3], report[4]]);
    let what = match report[0] {
        x if x == Step::Done as u8 => "",
        x if x == Step::Unshare as u8 => "unshare(CLONE_NEWNS)",
        x if x == Step::MakePrivate as u8 => "making / private in the new namespace",
        x if x == Step::Mount as u8 => "mount -t tracefs",
        x if x == Step::OpenMountpoint as u8 => "opening the mounted tracefs",
        _ => "the child",
    };
    if !what.is_empty() {
        return Err(format!("{what}: {}", errno_words(errno)));
    }
    if n < report.len() {
        return Err("the child's report was cut short".into());
    }
    let slot = |i: usize| -> Option<u64> {
        let s = &report[5 + SLOT * i..5 + SLOT * (i + 1)];
        let len = s[0] as usize;
        if len == 0 || len >= SLOT {
            return None;
        }
        parse_id(std::str::from_utf8(&s[1..1 + len]).ok()?)
    };
    let raw_sys_enter = slot(0).ok_or_else(|| NO_RAW_SYSCALLS.to_string())?;
    let by_name = COUNTED_SYSCALLS
        .iter()
        .enumerate()
        .filter_map(|(i, name)| Some((name.to_string(), slot(i + 1)?)))
        .collect();
    Ok(Tracepoints {
        raw_sys_enter,
        by_name,
    })
}

/// The forked child's work: a private mount namespace, tracefs mounted in it (debugfs, whose
/// `tracing` directory is tracefs, on kernels without tracefs), and each id file copied into its
/// slot of `report`. Returns the step that failed, with its errno.
///
/// # Safety
/// Only for a freshly forked child: async-signal-safe calls only, no allocation.
#[allow(clippy::too_many_arguments)]
unsafe fn namespace_child(
    mnt: *const libc::c_char,
    root: *const libc::c_char,
    nodev: *const libc::c_char,
    tracefs: *const libc::c_char,
    debugfs: *const libc::c_char,
    tracing: *const libc::c_char,
    rel: &[*const libc::c_char],
    report: &mut [u8],
) -> (Step, i32) {
    unsafe {
        let errno = || *libc::__errno_location();
        // Die with volley rather than outlive it.
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
        if libc::unshare(libc::CLONE_NEWNS) != 0 {
            return (Step::Unshare, errno());
        }
        // The copied mounts may share propagation with the original namespace: make them all
        // private first, or the mount below would show up there too.
        if libc::mount(
            std::ptr::null(),
            root,
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        ) != 0
        {
            return (Step::MakePrivate, errno());
        }
        let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
        let dir = if libc::mount(nodev, mnt, tracefs, flags, std::ptr::null()) == 0 {
            libc::open(mnt, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC)
        } else {
            let e = errno();
            if libc::mount(nodev, mnt, debugfs, flags, std::ptr::null()) != 0 {
                return (Step::Mount, e);
            }
            let d = libc::open(mnt, libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC);
            if d < 0 {
                return (Step::OpenMountpoint, errno());
            }
            let t = libc::openat(
                d,
                tracing,
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            );
            if t < 0 {
                return (Step::Mount, e);
            }
            t
        };
        if dir < 0 {
            return (Step::OpenMountpoint, errno());
        }
        for (i, path) in rel.iter().enumerate() {
            let s = &mut report[5 + SLOT * i..5 + SLOT * (i + 1)];
            s[0] = 0;
            let fd = libc::openat(dir, *path, libc::O_RDONLY | libc::O_CLOEXEC);
            if fd < 0 {
                continue;
            }
            let mut len = 0usize;
            loop {
                let n = libc::read(
                    fd,
                    s[1 + len..].as_mut_ptr() as *mut libc::c_void,
                    SLOT - 1 - len,
                );
                if n < 0 && errno() == libc::EINTR {
                    continue;
                }
                if n <= 0 {
                    break;
                }
                len += n as usize;
                if len == SLOT - 1 {
                    // Longer than any id: not one.
                    len = 0;
                    break;
                }
            }
            libc::close(fd);
            s[0] = len as u8;
        }
        (Step::Done, 0)
    }
}

/// Reads the child's report until EOF or `timeout`; `Err` when it took too long.
fn read_with_deadline(
    fd: &OwnedFd,
    buf: &mut [u8],
    timeout: std::time::Duration,
) -> Result<usize, String> {
    let deadline = std::time::Instant::now() + timeout;
    let mut n = 0;
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        if left.is_zero() {
            return Err(format!(
                "the child did not finish within {} s and was killed",
                timeout.as_secs()
            ));
        }
        let mut pfd = libc::pollfd {
            fd: fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one pollfd we own.
        let r = unsafe { libc::poll(&mut pfd, 1, left.as_millis().max(1) as libc::c_int) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("poll: {e}"));
        }
        if r == 0 {
            continue;
        }
        if n == buf.len() {
            // Full: the child has nothing more to say; EOF follows its exit.
            return Ok(n);
        }
        // SAFETY: reading into the unfilled tail of `buf`.
        let k = unsafe {
            libc::read(
                fd.as_raw_fd(),
                buf[n..].as_mut_ptr() as *mut libc::c_void,
                buf.len() - n,
            )
        };
        if k < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(format!("reading the child's report: {e}"));
        }
        if k == 0 {
            return Ok(n);
        }
        n += k as usize;
    }
}

/// Waits for the child; when `kill`, kills it first. A child that does not die within a short
/// while (stuck in the kernel) is left for the kernel to reap with volley rather than waited
/// for.
fn reap(child: libc::pid_t, kill: bool) {
    if kill {
        // SAFETY: signalling our own child, not yet reaped so its pid is still ours.
        unsafe { libc::kill(child, libc::SIGKILL) };
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_millis(500);
    loop {
        let mut status = 0;
        // SAFETY: reaping our own child.
        let r = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if r != 0 || std::time::Instant::now() >= deadline {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// "EPERM (Operation not permitted)" for the errnos the child can meet.
pub(crate) fn errno_words(errno: i32) -> String {
    let name = match errno {
        libc::EPERM => "EPERM",
        libc::EACCES => "EACCES",
        libc::ENODEV => "ENODEV",
        libc::ENOENT => "ENOENT",
        libc::ENOTDIR => "ENOTDIR",
        libc::EBUSY => "EBUSY",
        libc::EINVAL => "EINVAL",
        libc::ENOSYS => "ENOSYS",
        libc::ENOMEM => "ENOMEM",
        _ => "",
    };
    let words = io::Error::from_raw_os_error(errno).to_string();
    let words = words
        .split(" (os error")
        .next()
        .unwrap_or(&words)
        .to_string();
    if name.is_empty() {
        format!("{words} (errno {errno})")
    } else {
        format!("{name} ({words})")
    }
}

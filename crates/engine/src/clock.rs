//! The run clock (nanoseconds of CLOCK_MONOTONIC since the run began) and a timerfd for
//! microsecond-precise open-loop pacing where `epoll_pwait2` is missing: epoll_wait's
//! millisecond timeout is too coarse (wrk2's 1 ms sleeps inflate low latencies), so there the
//! due times are armed as absolute timerfd deadlines.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU64, Ordering};

/// Monotonic nanoseconds since `base`.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    base_ns: u64,
    /// A clock that reads this value instead of CLOCK_MONOTONIC (see [`Clock::manual`]).
    manual: Option<&'static AtomicU64>,
}

fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

impl Clock {
    /// A clock whose zero is now.
    pub fn start() -> Self {
        Clock {
            base_ns: monotonic_ns(),
            manual: None,
        }
    }

    /// A clock that reads `now` (run-clock ns) and moves only when its owner sets it: the
    /// `h2_worker` fuzz target drives a worker in time chosen by its input, so each input
    /// replays the same way. Not for runs.
    #[doc(hidden)]
    pub fn manual(now: &'static AtomicU64) -> Self {
        Clock {
            base_ns: 0,
            manual: Some(now),
        }
    }

    /// Nanoseconds since the clock started.
    #[inline]
    pub(crate) fn now_ns(&self) -> u64 {
        if let Some(now) = self.manual {
            return now.load(Ordering::Relaxed);
        }
        monotonic_ns().saturating_sub(self.base_ns)
    }

    /// CLOCK_MONOTONIC value of run time `t_ns`.
    pub(crate) fn to_monotonic(self, t_ns: u64) -> u64 {
        self.base_ns + t_ns
    }
}

/// Asks the kernel to fire timers of this thread within 1 µs of their deadline (default: 50 µs).
pub(crate) fn tighten_timer_slack() {
    // SAFETY: PR_SET_TIMERSLACK takes a plain integer; failure only leaves the default slack.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1u64, 0u64, 0u64, 0u64) };
}

/// The calling thread's CPU time (user + system), ns.
pub(crate) fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid timespec to write to.
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

/// A one-shot absolute CLOCK_MONOTONIC timer, readable through epoll when it fires.
#[derive(Debug)]
pub(crate) struct TimerFd {
    fd: OwnedFd,
    armed_at: Option<u64>,
}

impl TimerFd {
    /// A disarmed non-blocking timer.
    pub fn new() -> io::Result<Self> {
        // SAFETY: plain syscall; the returned descriptor is owned below.
        let fd = unsafe {
            libc::timerfd_create(
                libc::CLOCK_MONOTONIC,
                libc::TFD_NONBLOCK | libc::TFD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is a fresh descriptor we own.
        Ok(TimerFd {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            armed_at: None,
        })
    }

    /// Arms the timer for CLOCK_MONOTONIC time `deadline_ns`, unless it already is.
    pub(crate) fn arm(&mut self, deadline_ns: u64) {
        if self.armed_at == Some(deadline_ns) {
            return;
        }
        let deadline_ns = deadline_ns.max(1);
        let spec = libc::itimerspec {
            it_interval: libc::timespec {
                tv_sec: 0,
                tv_nsec: 0,
            },
            it_value: libc::timespec {
                tv_sec: (deadline_ns / 1_000_000_000) as _,
                tv_nsec: (deadline_ns % 1_000_000_000) as libc::c_long,
            },
        };
        // SAFETY: valid descriptor and itimerspec.
        unsafe {
            libc::timerfd_settime(
                self.fd.as_raw_fd(),
                libc::TFD_TIMER_ABSTIME,
                &spec,
                std::ptr::null_mut(),
            )
        };
        self.armed_at = Some(deadline_ns);
    }

    /// Consumes the expiration (called when epoll reports the timer readable).
    pub(crate) fn clear(&mut self) {
        let mut buf = [0u8; 8];
        // SAFETY: reading 8 bytes into our buffer; EAGAIN is fine.
        unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), 8) };
        self.armed_at = None;
    }
}

impl AsRawFd for TimerFd {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

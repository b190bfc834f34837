//! Waiting for socket events with a nanosecond deadline. `epoll_pwait2` (Linux ≥ 5.11) takes
//! the open-loop due time directly, so pacing costs no timer syscalls; where it is missing
//! (ENOSYS), the worker falls back to mio's millisecond `epoll_wait` plus a timerfd.
//! Registration always goes through mio; only the wait is done here.
//!
//! Under `--io uring` the wait is the ring's (`engine::ring`): one `io_uring_enter` submits the
//! iteration's sends and waits with the same nanosecond deadline; its completions come out as
//! [`Event::Ring`].

use std::io;
use std::os::fd::AsRawFd;
use std::time::Duration;

use mio::{Events, Poll, Token};

use super::ring::{self, RingEvent};
use super::stream::Socket;

/// What the worker is told after a wait.
#[derive(Debug, Clone, Copy)]
pub enum Event {
    /// epoll: a registration is ready.
    Ready(Ready),
    /// io_uring: an operation completed.
    Ring(RingEvent),
}

/// One readiness event, in the shape the worker needs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Ready {
    /// The registration's token.
    pub token: Token,
    /// Data (or a connect result) to read.
    pub readable: bool,
    /// Room to write, or a connect finished.
    pub writable: bool,
    /// The peer closed its side or the socket failed: read to the end.
    pub hangup: bool,
}

/// The worker's event source.
pub(crate) struct Poller {
    poll: Poll,
    raw: Vec<libc::epoll_event>,
    events: Events,
    precise: bool,
    /// Waits on this thread's io_uring instead of epoll.
    ring: bool,
    ring_events: Vec<RingEvent>,
}

impl Poller {
    /// Wraps `poll`; probes once whether `epoll_pwait2` is available.
    pub fn new(poll: Poll, capacity: usize) -> Self {
        let mut p = Poller {
            poll,
            raw: vec![libc::epoll_event { events: 0, u64: 0 }; capacity],
            events: Events::with_capacity(capacity),
            precise: true,
            ring: false,
            ring_events: Vec::with_capacity(capacity),
        };
        // A zero-timeout call tells whether the kernel has the syscall. VOLLEY_EPOLL_WAIT=1
        // forces the fallback (to compare, and so tests cover it).
        let forced = std::env::var_os("VOLLEY_EPOLL_WAIT").is_some_and(|v| v == "1");
        if forced || p.pwait2(Some(0)).is_err() {
            p.precise = false;
        }
        p
    }

    /// Moves this thread to an io_uring (see `engine::ring`); the waker stays registered with
    /// epoll, whose instance the ring polls.
    pub(crate) fn use_ring(&mut self, connections: usize) -> Result<(), ring::Unavailable> {
        ring::install(self.poll.as_raw_fd(), connections)?;
        self.ring = true;
        self.precise = true;
        Ok(())
    }

    /// Whether this thread waits on an io_uring.
    pub(crate) fn is_ring(&self) -> bool {
        self.ring
    }

    /// A freshly connecting socket, in the form this backend drives.
    pub(crate) fn adopt(&self, socket: Socket) -> Socket {
        if self.ring {
            socket.into_ring()
        } else {
            socket
        }
    }

    /// Tells the backend of connection `token`'s new stream (epoll: registers it for both
    /// directions, edge-triggered; io_uring: waits for its connect).
    pub fn add(&self, s: &mut super::stream::Stream, token: Token) -> io::Result<()> {
        match s.ring_mut() {
            Some(r) => r.start(token.0),
            None => self.poll.registry().register(
                s,
                token,
                mio::Interest::READABLE | mio::Interest::WRITABLE,
            ),
        }
    }

    /// Empties epoll's ready list after the ring saw the waker (so its next wake is seen).
    pub(crate) fn clear_waker(&mut self) {
        let _ = self.poll.poll(&mut self.events, Some(Duration::ZERO));
    }

    /// The registry for (de)registering sources.
    pub(crate) fn registry(&self) -> &mio::Registry {
        self.poll.registry()
    }

    /// True when deadlines are honoured to the nanosecond (no timerfd needed).
    pub(crate) fn is_precise(&self) -> bool {
        self.precise
    }

    /// Waits up to `timeout_ns` (None: forever) and appends the events to `out`.
    pub(crate) fn wait(&mut self, timeout_ns: Option<u64>, out: &mut Vec<Event>) -> io::Result<()> {
        out.clear();
        if self.ring {
            let events = &mut self.ring_events;
            ring::with_core(|c| c.wait(timeout_ns, events))
                .unwrap_or_else(|| Err(io::Error::other("the io_uring is gone")))?;
            out.extend(self.ring_events.iter().map(|&e| Event::Ring(e)));
            return Ok(());
        }
        if self.precise {
            let n = self.pwait2(timeout_ns)?;
            for ev in &self.raw[..n] {
                let flags = ev.events as i32;
                let u = ev.u64;
                out.push(Event::Ready(Ready {
                    token: Token(u as usize),
                    readable: flags & (libc::EPOLLIN | libc::EPOLLPRI) != 0,
                    writable: flags & libc::EPOLLOUT != 0,
                    hangup: flags & (libc::EPOLLHUP | libc::EPOLLRDHUP | libc::EPOLLERR) != 0,
                }));
            }
            return Ok(());
        }
        self.poll
            .poll(&mut self.events, timeout_ns.map(Duration::from_nanos))?;
        for ev in self.events.iter() {
            out.push(Event::Ready(Ready {
                token: ev.token(),
                readable: ev.is_readable(),
                writable: ev.is_writable(),
                hangup: ev.is_read_closed() || ev.is_error(),
            }));
        }
        Ok(())
    }

    fn pwait2(&mut self, timeout_ns: Option<u64>) -> io::Result<usize> {
        let ts = timeout_ns.map(|ns| libc::timespec {
            tv_sec: (ns / 1_000_000_000) as _,
            tv_nsec: (ns % 1_000_000_000) as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: the buffer holds `raw.len()` events; the timespec outlives the call; no signal mask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                self.poll.as_raw_fd(),
                self.raw.as_mut_ptr(),
                self.raw.len() as libc::c_int,
                ts_ptr,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                return Ok(0);
            }
            return Err(e);
        }
        Ok(n as usize)
    }
}

impl Drop for Poller {
    /// The ring goes once the kernel holds nothing of this thread's (its sockets are gone).
    fn drop(&mut self) {
        if self.ring {
            ring::uninstall();
        }
    }
}

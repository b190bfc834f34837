//! A connection's socket under the ring ([`RingSocket`]). It reads and writes like a
//! non-blocking socket, so the worker's HTTP, TLS and HTTP/2 code runs on it unchanged: a read
//! takes the bytes of the receive completion being handled ([`RingSocket::read`]), a write
//! queues them for one send submitted with the loop's next wait ([`RingSocket::write`]).
//!
//! A request counts as written when its bytes are queued, in the same loop iteration that
//! submits them (docs/contract.md, "I/O backends").

use std::io;
use std::os::fd::{BorrowedFd, FromRawFd, IntoRawFd, OwnedFd, RawFd};

use io_uring::{opcode, types};

use super::{tag, with_core, Op};

/// Bytes a connection may have queued and in flight before writes are refused: on top of
/// the socket's own buffer, as little as keeps a pipelined window or a body moving.
const QUEUE_BYTES: usize = 64 * 1024;

/// Bytes a socket copied to send.
#[derive(Debug, Default)]
struct Copies {
    /// Queued behind the send in flight.
    queued: Vec<u8>,
    /// The send in flight (the kernel reads it until its completion).
    sending: Vec<u8>,
}

/// A socket driven by the thread's ring.
#[derive(Debug)]
pub struct RingSocket {
    /// Owned: closed by `Drop`, after the ring's next submission.
    fd: RawFd,
    slot: u32,
    gen: u32,
    /// The receive is armed (the connect ended).
    receiving: bool,
    /// A connect poll is in flight.
    connecting: bool,
    /// The receive ended: the end of stream (0) or an error, returned once the bytes are read.
    ended: Option<i32>,
    /// Bytes of the completion being handled: (address, length) inside the ring's buffers.
    lent: (usize, usize),
    /// What the worker did not read of a lent piece (rare: kept for its next read; boxed so
    /// that the socket holds 8 bytes for it, not 24).
    #[allow(clippy::box_collection)]
    kept: Option<Box<Vec<u8>>>,
    /// Bytes copied to send (boxed: a run of one request sends from its shared stream and
    /// never needs them, and 10,000 connections hold 10,000 sockets).
    copies: Option<Box<Copies>>,
    /// How much of the send in flight went.
    sent: u32,
    /// Bytes of the run's request stream to send as they are (no copy): (address, length),
    /// queued ahead of `queued`; `stable_in_flight` once submitted.
    stable: (usize, usize),
    stable_in_flight: bool,
    /// Registered as dirty since the last wait.
    dirty: bool,
    /// A write was refused: its room coming back is a writable event.
    blocked: bool,
    /// A send failed (errno): writes fail with it.
    send_error: Option<i32>,
}

impl RingSocket {
    /// Takes over a socket whose non-blocking connect was started.
    pub fn new(fd: impl IntoRawFd) -> RingSocket {
        RingSocket {
            fd: fd.into_raw_fd(),
            slot: 0,
            gen: 0,
            receiving: false,
            connecting: false,
            ended: None,
            lent: (0, 0),
            kept: None,
            copies: None,
            sent: 0,
            stable: (0, 0),
            stable_in_flight: false,
            dirty: false,
            blocked: false,
            send_error: None,
        }
    }

    /// The socket's generation: a completion for another one is not for it.
    pub(crate) fn gen(&self) -> u32 {
        self.gen
    }

    /// Belongs to connection `slot` from now on; waits for its connect to end.
    pub fn start(&mut self, slot: usize) -> io::Result<()> {
        let fd = self.fd;
        let gen = with_core(|c| c.open(slot, fd)).ok_or_else(no_ring)?;
        self.slot = slot as u32;
        self.gen = gen;
        self.await_connect();
        Ok(())
    }

    fn await_connect(&mut self) {
        if self.connecting {
            return;
        }
        let poll = libc::POLLOUT | libc::POLLERR | libc::POLLHUP;
        let sqe = opcode::PollAdd::new(types::Fd(self.fd), poll as u32)
            .build()
            .user_data(tag(Op::Connect, self.slot, self.gen));
        with_core(|c| c.push(sqe));
        self.connecting = true;
    }

    /// The connect poll completed.
    pub(crate) fn connect_polled(&mut self) {
        self.connecting = false;
    }

    /// Takes the pending error of the connect, like `SO_ERROR`.
    pub(crate) fn take_error(&self) -> io::Result<Option<io::Error>> {
        socket2::SockRef::from(&self.borrow()).take_error()
    }

    fn borrow(&self) -> BorrowedFd<'_> {
        // SAFETY: the fd is open while the socket lives.
        unsafe { BorrowedFd::borrow_raw(self.fd) }
    }

    /// Whether the connect finished; once it has, the receive is armed. While it has not
    /// (`NotConnected`), the connect is polled again.
    pub(crate) fn check_connected(&mut self) -> io::Result<()> {
        let peer = socket2::SockRef::from(&self.borrow()).peer_addr();
        match peer {
            Ok(_) => {
                if !self.receiving && self.ended.is_none() {
                    self.receiving = true;
                    let (fd, slot, gen) = (self.fd, self.slot, self.gen);
                    with_core(|c| c.arm_recv(fd, slot, gen));
                }
                Ok(())
            }
            Err(e) => {
                if e.kind() == io::ErrorKind::NotConnected {
                    self.await_connect();
                }
                Err(e)
            }
        }
    }

    /// Bytes of a receive completion for the reads that follow (until [`RingSocket::unlend`]).
    pub(crate) fn lend(&mut self, addr: usize, len: usize) {
        self.lent = (addr, len);
    }

    /// Keeps what the reads left of the lent bytes: the buffer is reused after the wait.
    pub(crate) fn unlend(&mut self) {
        let (addr, len) = std::mem::take(&mut self.lent);
        if len > 0 {
            // SAFETY: lent by the ring, valid until the next wait.
            let rest = unsafe { std::slice::from_raw_parts(addr as *const u8, len) };
            self.kept.get_or_insert_default().extend_from_slice(rest);
        }
    }

    /// The receive ended: `errno` 0 is the end of stream. Nothing is left to cancel.
    pub(crate) fn ended(&mut self, errno: i32) {
        self.ended = Some(errno);
        self.receiving = false;
    }

    /// Reads what arrived: the bytes of the receive completion being handled (lent from the
    /// provided buffer, see [`RingSocket::lend`]), then `WouldBlock`, then the end of stream or
    /// the error once the receive ended.
    pub fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut n = 0;
        if let Some(kept) = self.kept.as_mut() {
            n = buf.len().min(kept.len());
            buf[..n].copy_from_slice(&kept[..n]);
            kept.drain(..n);
            if kept.is_empty() {
                self.kept = None;
            }
        }
        let (addr, len) = self.lent;
        let more = (buf.len() - n).min(len);
        if more > 0 {
            // SAFETY: lent by the ring, valid until the next wait; `more` ≤ its length.
            let src = unsafe { std::slice::from_raw_parts(addr as *const u8, more) };
            buf[n..n + more].copy_from_slice(src);
            self.lent = (addr + more, len - more);
            n += more;
        }
        if n > 0 {
            return Ok(n);
        }
        match self.ended {
            Some(0) => Ok(0),
            Some(errno) => Err(io::Error::from_raw_os_error(errno)),
            None => Err(io::ErrorKind::WouldBlock.into()),
        }
    }

    /// Like [`RingSocket::read`], leaving the bytes for the next read.
    pub(crate) fn peek(&self, buf: &mut [u8]) -> io::Result<usize> {
        let kept = self.kept.as_deref().map_or(&[][..], |k| &k[..]);
        let n = buf.len().min(kept.len());
        buf[..n].copy_from_slice(&kept[..n]);
        let (addr, len) = self.lent;
        let more = (buf.len() - n).min(len);
        if more > 0 {
            // SAFETY: lent by the ring, valid until the next wait; `more` ≤ its length.
            let src = unsafe { std::slice::from_raw_parts(addr as *const u8, more) };
            buf[n..n + more].copy_from_slice(src);
        }
        match (n + more, self.ended) {
            (0, Some(0)) => Ok(0),
            (0, Some(errno)) => Err(io::Error::from_raw_os_error(errno)),
            (0, None) => Err(io::ErrorKind::WouldBlock.into()),
            (n, _) => Ok(n),
        }
    }

    /// Queues bytes to send: copies them into the socket's queue and returns at once; the queue
    /// leaves in one send submitted with the loop's next wait, or after the send in flight
    /// completes. A full queue (`QUEUE_BYTES`) is `WouldBlock`, and its send's completion is the
    /// writable event.
    pub(crate) fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if let Some(errno) = self.send_error {
            return Err(io::Error::from_raw_os_error(errno));
        }
        let (queued, sending) = self.copied();
        let held = queued + sending + self.stable.1 - self.sent as usize;
        let n = buf.len().min(QUEUE_BYTES.saturating_sub(held));
        if n == 0 && !buf.is_empty() {
            self.blocked = true;
            return Err(io::ErrorKind::WouldBlock.into());
        }
        let copies = self.copies.get_or_insert_default();
        if copies.queued.capacity() == 0 {
            copies.queued = with_core(|c| c.buffer()).unwrap_or_default();
        }
        copies.queued.extend_from_slice(&buf[..n]);
        self.mark_dirty();
        Ok(n)
    }

    /// Like [`RingSocket::write`], without copying when nothing else is queued or in flight:
    /// the send reads `buf` itself. The hot path of a run of one request: every connection
    /// sends the same bytes, so a copy per request (and a buffer per connection, 1 MB at
    /// 10,000 users) is saved.
    ///
    /// # Safety
    /// `buf` must stay valid and unchanged until this thread's ring is gone (the run's shared
    /// request stream, which the engine holds until its workers have ended).
    pub(crate) unsafe fn write_stable(&mut self, buf: &[u8]) -> io::Result<usize> {
        let idle = self.copied() == (0, 0) && self.stable.1 == 0;
        if !idle || self.send_error.is_some() || buf.is_empty() {
            return self.write(buf);
        }
        let n = buf.len().min(QUEUE_BYTES);
        self.stable = (buf.as_ptr() as usize, n);
        self.mark_dirty();
        Ok(n)
    }

    /// Bytes copied and queued, and copied and in flight.
    fn copied(&self) -> (usize, usize) {
        self.copies
            .as_ref()
            .map_or((0, 0), |c| (c.queued.len(), c.sending.len()))
    }

    fn in_flight(&self) -> bool {
        self.copied().1 > 0 || self.stable_in_flight
    }

    fn mark_dirty(&mut self) {
        if !self.dirty && !self.in_flight() {
            self.dirty = true;
            let (slot, gen) = (self.slot, self.gen);
            with_core(|c| c.dirty.push((slot, gen)));
        }
    }

    /// Sends what is queued unless a send is in flight (called before the loop waits).
    pub(crate) fn submit(&mut self) {
        self.dirty = false;
        if self.in_flight() {
            return;
        }
        self.sent = 0;
        if self.stable.1 > 0 {
            self.stable_in_flight = true;
        } else {
            match self.copies.as_deref_mut() {
                Some(c) if !c.queued.is_empty() => std::mem::swap(&mut c.sending, &mut c.queued),
                _ => return,
            }
        }
        self.send_rest();
    }

    /// The bytes of the send in flight not sent yet.
    fn rest(&self) -> (*const u8, usize) {
        let sent = self.sent as usize;
        match self.copies.as_deref() {
            _ if self.stable_in_flight => {
                ((self.stable.0 + sent) as *const u8, self.stable.1 - sent)
            }
            Some(c) => {
                let rest = &c.sending[sent.min(c.sending.len())..];
                (rest.as_ptr(), rest.len())
            }
            None => (std::ptr::null(), 0),
        }
    }

    fn send_rest(&mut self) {
        let (ptr, len) = self.rest();
        let sqe = opcode::Send::new(types::Fd(self.fd), ptr, len as u32)
            .flags(libc::MSG_NOSIGNAL)
            .build()
            .user_data(tag(Op::Send, self.slot, self.gen));
        with_core(|c| c.push(sqe));
    }

    /// The send in flight completed with `res`. True when a refused write may now go (the
    /// worker's writable event).
    pub fn sent(&mut self, res: i32) -> bool {
        if res < 0 {
            self.send_error = Some(-res);
            self.give_back();
            return true;
        }
        self.sent += res as u32;
        if self.rest().1 > 0 {
            // A short send (the socket's buffer filled): the rest goes when it completes.
            self.send_rest();
            return false;
        }
        self.give_back();
        self.submit();
        std::mem::take(&mut self.blocked)
    }

    /// The send in flight is over: its buffer goes back to the pool.
    fn give_back(&mut self) {
        self.sent = 0;
        if std::mem::take(&mut self.stable_in_flight) {
            self.stable = (0, 0);
            return;
        }
        let Some(copies) = self.copies.as_deref_mut() else {
            return;
        };
        let buf = std::mem::take(&mut copies.sending);
        if copies.queued.capacity() == 0 {
            // Nothing else copied: the socket goes back to holding no buffers.
            self.copies = None;
        }
        with_core(|c| c.give_back(buf));
    }
}

impl Drop for RingSocket {
    /// The receive (and a connect poll) are cancelled and the socket is closed after the next
    /// submission; what was queued still leaves first (a TLS close_notify); a send in flight
    /// keeps its buffer until it completes.
    fn drop(&mut self) {
        self.submit();
        // SAFETY: the socket owned the fd; nothing uses it after this.
        let fd = unsafe { OwnedFd::from_raw_fd(self.fd) };
        let sending = self
            .copies
            .as_deref_mut()
            .map(|c| std::mem::take(&mut c.sending))
            .unwrap_or_default();
        let (slot, gen) = (self.slot, self.gen);
        let (receiving, connecting) = (self.receiving, self.connecting);
        // The run's request stream outlives the ring: a send from it needs no graveyard.
        let stable_in_flight = self.stable_in_flight;
        let mut left = Some((fd, sending));
        with_core(|c| {
            let (fd, sending) = left.take().expect("taken once");
            if let Some(s) = c.slots.get_mut(slot as usize).filter(|s| s.gen == gen) {
                s.live = false;
            }
            // A send the peer does not take would otherwise hold the socket open (no FIN)
            // until the run ends.
            let send_in_flight = !sending.is_empty() || stable_in_flight;
            for (on, op) in [
                (receiving, Op::Recv),
                (connecting, Op::Connect),
                (send_in_flight, Op::Send),
            ] {
                if on {
                    let cancel = opcode::AsyncCancel::new(tag(op, slot, gen))
                        .build()
                        .user_data(tag(Op::Cancel, slot, gen));
                    c.push(cancel);
                }
            }
            if !sending.is_empty() {
                c.graveyard.push((tag(Op::Send, slot, gen), sending));
            }
            c.to_close.push(fd);
        });
        if let Some((fd, sending)) = left {
            // The ring is gone (the worker is ending): close now; a send buffer the kernel
            // may not have finished with is leaked rather than freed.
            drop(fd);
            std::mem::forget(sending);
        }
    }
}

fn no_ring() -> io::Error {
    io::Error::other("this thread has no io_uring")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_socket_stays_small_for_ten_thousand_connections() {
        // Every connection holds one on the heap: 88 bytes are one 96-byte allocation, about
        // 1 MB at 10,000 connections, where the copy buffers inline made them 160.
        assert!(size_of::<RingSocket>() <= 88, "{}", size_of::<RingSocket>());
    }
}

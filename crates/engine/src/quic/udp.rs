//! Batched UDP reads for [`super::conn::QuicConn`]: one `recvmmsg(2)` takes every datagram
//! waiting on a connected socket (up to a budget), where `recv` takes one per system call and
//! needs one more to learn that the socket is empty.
//!
//! Hand-written rather than taken from a library: std has no `recvmmsg`, and quinn's
//! `quinn-udp` would be slower here — each of its reads asks for and parses control
//! messages (the source address, ECN, the GRO segment size, the destination address) that a
//! connected socket whose datagrams all come from one peer does not need, through socket
//! state of its own. A bare `recvmmsg` into fixed slots of one buffer is the whole of it.
//! Errors: `EAGAIN` ends a read (nothing waiting), `EINTR` is read again, and any other
//! (an ICMP unreachable reported as `ECONNREFUSED`) goes to the caller.

use std::io;
use std::os::fd::RawFd;

/// Room for one datagram in the read buffer. volley's transport parameters let a server send
/// datagrams of at most 1,472 bytes (quinn's `max_udp_payload_size`), so none is cut; a
/// longer one (a server that ignores the limit) arrives truncated and is dropped as lost.
pub const SLOT: usize = 2048;

/// The most datagrams one call reads: a readiness brings a few, and the call's headers are
/// set up anew each time (a larger batch is more of them to clear for nothing).
const MAX_BATCH: usize = 16;

/// What one [`recv_batch`] read.
pub struct Batch {
    /// Datagrams read (those cut short included).
    pub count: usize,
    /// The socket held at least as many datagrams as the call could take: it may hold more.
    pub full: bool,
}

/// Reads up to `max` datagrams (at most 16, and as many [`SLOT`]s as `buf` holds) from the
/// connected, non-blocking socket `fd`, and hands each whole one to `each`. `Ok` with a count
/// of 0 when none was waiting; an error (an ICMP unreachable reported on the socket, say)
/// only when nothing was read.
pub fn recv_batch(
    fd: RawFd,
    buf: &mut [u8],
    max: usize,
    mut each: impl FnMut(&[u8]),
) -> io::Result<Batch> {
    let n = max.min(MAX_BATCH).min(buf.len() / SLOT);
    assert!(n > 0, "a read buffer of at least {SLOT} bytes");
    // SAFETY: iovec and mmsghdr are plain C structures for which all-zero is valid.
    let mut iov: [libc::iovec; MAX_BATCH] = unsafe { std::mem::zeroed() };
    let mut msgs: [libc::mmsghdr; MAX_BATCH] = unsafe { std::mem::zeroed() };
    for (k, chunk) in buf.chunks_exact_mut(SLOT).take(n).enumerate() {
        iov[k].iov_base = chunk.as_mut_ptr().cast();
        iov[k].iov_len = SLOT;
        // No source address (the socket is connected) and no control messages.
        msgs[k].msg_hdr.msg_iov = &mut iov[k];
        msgs[k].msg_hdr.msg_iovlen = 1;
    }
    // SAFETY: `msgs[..n]` point at `iov[..n]`, which point at distinct SLOT-byte chunks of
    // `buf`; all outlive the call. A non-blocking socket returns what it holds, up to `n`.
    let got = unsafe { libc::recvmmsg(fd, msgs.as_mut_ptr(), n as u32, 0, std::ptr::null_mut()) };
    if got < 0 {
        let e = io::Error::last_os_error();
        return match e.kind() {
            io::ErrorKind::WouldBlock => Ok(Batch {
                count: 0,
                full: false,
            }),
            io::ErrorKind::Interrupted => Ok(Batch {
                count: 0,
                full: true,
            }),
            _ => Err(e),
        };
    }
    let got = got as usize;
    for (k, m) in msgs[..got].iter().enumerate() {
        if m.msg_hdr.msg_flags & libc::MSG_TRUNC == 0 {
            let len = m.msg_len as usize;
            each(&buf[k * SLOT..k * SLOT + len]);
        }
    }
    Ok(Batch {
        count: got,
        full: got == n,
    })
}

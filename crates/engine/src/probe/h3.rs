//! One request over the engine's own HTTP/3 session ([`H3Session`]) on a QUIC connection of
//! its own: `--verify` over `--http3`, so that verification speaks what the run will speak
//! (the same frames, QPACK, checks and rules for a malformed response). The datagrams wait
//! in `poll(2)` until they come or QUIC's next timer is due.

use std::net::SocketAddr;
use std::os::fd::RawFd;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::session::{answered, H2Answer};
use crate::h3::response::Limits;
use crate::h3::session::{H3Session, StreamOpts};
use crate::quic::conn::{QuicConn, MAX_DATAGRAM};
use crate::quic::{self, QuicClient};
use volley_plan::workload::Checks;

/// One request's parts in HTTP/3.
pub struct H3Request<'a> {
    /// Its frames (HEADERS with the QPACK field section, DATA with a body), as the run sends.
    pub frames: &'a Bytes,
    /// A HEAD request (its response has no content).
    pub head: bool,
}

/// Connects to `addr` over QUIC, sends `req` once the handshake is done, and reads its
/// response whole within `timeout`, checking it against `checks` and keeping its first `keep`
/// body bytes.
pub fn exchange_h3(
    client: &QuicClient,
    addr: SocketAddr,
    req: &H3Request,
    checks: Arc<Checks>,
    keep: usize,
    timeout: Duration,
) -> Result<H2Answer, String> {
    let mut ep = quic::endpoint();
    let now = Instant::now();
    let conn = QuicConn::connect(&mut ep, client, addr, None, now)
        .map_err(|e| format!("connect {addr}: {e}"))?;
    let mut s = H3Session::new(conn, req.head, Limits::default());
    let deadline = now + timeout;
    let mut buf = vec![0u8; MAX_DATAGRAM];
    let mut stream = None;
    let mut answer = H2Answer::default();
    let mut events = Vec::new();
    loop {
        if stream.is_none() && (s.connected() || s.early()) {
            let opts = StreamOpts {
                head: req.head,
                checks: Some(&checks),
                record: Some(keep),
            };
            stream = s.open_stream_with(req.frames, opts);
        }
        s.quic
            .transmit(Instant::now())
            .map_err(|e| format!("send: {e}"))?;
        let now = Instant::now();
        if now >= deadline {
            let what = if s.connected() {
                "no complete response"
            } else {
                "the QUIC handshake did not finish"
            };
            return Err(format!("{what} within {} s", timeout.as_secs_f64()));
        }
        let until = s.quic.timeout().map_or(deadline, |t| t.min(deadline));
        wait_readable(s.quic.fd(), until.saturating_duration_since(now));
        let now = Instant::now();
        s.quic
            .receive(&mut ep, &mut buf, now)
            .map_err(|e| format!("receive: {e}"))?;
        s.quic.on_timeout(&mut ep, now);
        s.poll(&mut |e| events.push(e)).map_err(|e| e.to_string())?;
        for e in events.drain(..) {
            if answered(e, stream, &mut answer, true)? == Some(true) {
                answer.recorded = s.take_recorded().unwrap_or_default();
                s.close(crate::h3::Code::NoError, Instant::now());
                let _ = s.quic.transmit(Instant::now());
                return Ok(answer);
            }
        }
    }
}

/// Waits up to `d` for `fd` to have a datagram (a signal or a timeout just ends the wait).
fn wait_readable(fd: RawFd, d: Duration) {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let ms = d.as_millis().clamp(1, i32::MAX as u128) as i32;
    // SAFETY: one valid pollfd for the duration of the call.
    unsafe {
        libc::poll(&mut p, 1, ms);
    }
}

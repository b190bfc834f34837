//! One request over the engine's own HTTP/2 session ([`H2Conn`]) on a blocking connection:
//! `--verify` over h2 and h2c, so that verification speaks what the run will speak (the same
//! header block, flow control, checks, and the same rules for a malformed response).

use std::io::{ErrorKind, Read, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::Probe;
use crate::h2::conn::{Event, H2Conn, Recorded, RECEIVE_WINDOW};
use crate::h2::frame::error_name;
use volley_plan::workload::Checks;

/// What one HTTP/2 request got.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct H2Answer {
    /// `:status`.
    pub status: u16,
    /// Body bytes.
    pub body_bytes: u64,
    /// The header and body checks it failed (`check::FAILED_*` bits).
    pub content_failed: u8,
    /// Its head's fields and its body's first bytes.
    pub recorded: Recorded,
    /// What it offered a journey's captures and cookie jar (when the request captures or
    /// reads cookies).
    pub offered: Option<Box<crate::check::CheckState>>,
}

/// One request's parts in HTTP/2.
pub struct H2Request<'a> {
    /// Its header block (HPACK, as the run sends it).
    pub block: &'a [u8],
    /// Its body.
    pub body: Arc<[u8]>,
    /// A HEAD request (its response has no content).
    pub head: bool,
}

impl Probe {
    /// Speaks HTTP/2 on this fresh connection (after TLS chose `h2`, or h2c with prior
    /// knowledge), sends `req` once the server's SETTINGS came, and reads its response whole
    /// within `timeout`, checking it against `checks` and keeping its first `keep` body bytes.
    pub fn exchange_h2(
        &mut self,
        req: &H2Request,
        checks: Arc<Checks>,
        keep: usize,
        timeout: Duration,
    ) -> Result<H2Answer, String> {
        let mut conn = H2Conn::new(Arc::clone(&req.body), RECEIVE_WINDOW);
        let deadline = Instant::now() + timeout;
        let mut stream = None;
        let mut answer = H2Answer::default();
        let mut buf = vec![0u8; 64 * 1024];
        let mut events = Vec::new();
        loop {
            if stream.is_none() && conn.can_open() {
                let body = Some(Arc::clone(&req.body));
                let id =
                    conn.open_stream_recorded(req.block, body, req.head, Arc::clone(&checks), keep);
                stream = Some(id);
            }
            conn.fill_bodies();
            if !conn.out.is_empty() {
                self.write_all(&conn.out)
                    .and_then(|()| self.flush())
                    .map_err(|e| format!("write: {e}"))?;
                conn.out.clear();
            }
            let late = || format!("no complete response within {} s", timeout.as_secs_f64());
            if Instant::now() > deadline {
                return Err(late());
            }
            let n = match self.read(&mut buf) {
                Ok(0) => return Err("the connection closed before a complete response".into()),
                Ok(n) => n,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                // The socket's read timeout (the same as the exchange's) ran out.
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    return Err(late())
                }
                Err(e) => return Err(format!("read: {e}")),
            };
            conn.feed(&buf[..n], &mut |e| events.push(e))
                .map_err(|e| e.to_string())?;
            for e in events.drain(..) {
                if let Some(done) = answered(e, stream, &mut answer, false)? {
                    if done {
                        answer.recorded = conn.take_recorded().unwrap_or_default();
                        return Ok(answer);
                    }
                }
            }
        }
    }
}

/// What event `e` means for the request on `stream`: `Some(true)` when its response ended,
/// an error when it cannot end.
/// `h3`: the stream is HTTP/3's (its reset and GOAWAY named as HTTP/3's).
pub(super) fn answered(
    e: Event,
    stream: Option<u32>,
    a: &mut H2Answer,
    h3: bool,
) -> Result<Option<bool>, String> {
    let ours = |s: u32| Some(s) == stream;
    match e {
        Event::Head { stream: s, status } if ours(s) => a.status = status,
        Event::Data { stream: s, len } if ours(s) => a.body_bytes += len as u64,
        Event::Checked {
            stream: s,
            failed,
            offered,
        } if ours(s) => {
            a.content_failed = failed;
            a.offered = offered;
        }
        Event::End { stream: s } if ours(s) => return Ok(Some(true)),
        Event::Reset { stream: s, code } if ours(s) => {
            return Err(format!(
                "the server reset the stream ({})",
                reset_name(code, h3)
            ))
        }
        Event::Malformed { stream: s, reason } if ours(s) => {
            return Err(format!("a malformed response: {reason}"))
        }
        Event::GoAway { last_stream, code } if stream.is_none_or(|s| s > last_stream) => {
            let code = if h3 {
                "GOAWAY".into()
            } else {
                error_name(code).to_string()
            };
            return Err(format!("the server went away ({code}) before answering"));
        }
        _ => {}
    }
    Ok(None)
}

/// A stream reset's code as its protocol names it: `RST_STREAM CANCEL`, `RESET_STREAM
/// H3_REQUEST_REJECTED`.
fn reset_name(code: u32, h3: bool) -> String {
    if !h3 {
        return format!("RST_STREAM {}", error_name(code));
    }
    match crate::h3::Code::from_value(code.into()) {
        Some(c) => format!("RESET_STREAM {}", c.name()),
        None => format!("RESET_STREAM {code:#x}"),
    }
}

//! The HTTP/2 side of a worker: a connection that speaks HTTP/2 writes from its session's
//! queue instead of the repeated request, feeds what it reads to the session, and turns the
//! session's events into completed, failed or resent requests. Streams complete in any order;
//! the in-flight list keeps the order they were opened in (then the requests waiting for a
//! stream), so the write bookkeeping of HTTP/1.1 (`stream_pos`, `mark_written`) holds as is.

use super::failure::error_kind;
use super::journey;
use super::*;
use crate::h2::conn::{Event, H2Conn, H2Error};
use crate::h2::frame::code::REFUSED_STREAM;
use crate::h2::frame::error_name;
use crate::h3::Code as H3Code;
use crate::SetupFailure;

impl Worker {
    /// The connection just opened speaks HTTP/2: its session starts (the preface and SETTINGS
    /// go out with the next write), and the requests already queued on it wait for streams.
    pub(super) fn start_h2(&mut self, i: usize) {
        let h2 = H2Conn::new(Arc::clone(&self.shared.body), self.shared.h2_window);
        self.transport.h2_connections += 1;
        let c = &mut self.conns[i];
        c.queue_as_streams(h2.out.len());
        c.h2 = Some(Box::new(h2));
        if self.shared.ws.is_some() {
            self.start_ws_h2(i);
        }
    }

    /// Opens streams for the requests waiting on connection `i`, as far as the server allows.
    fn open_streams(&mut self, i: usize) {
        if self.shared.mix.is_some() {
            self.open_mix_streams(i);
            return;
        }
        let head = self.shared.template.is_head();
        let checks = &self.shared.checks;
        let c = &mut self.conns[i];
        let Some(h2) = c.h2.as_mut() else { return };
        while c.h2_queued > 0 && h2.can_open() {
            let at = c.inflight.len() - c.h2_queued;
            let pos = c.write_pos + h2.out.len() as u64;
            let r = &mut c.inflight[at];
            r.stream_pos = pos;
            r.stream = h2.open_stream_with(&self.shared.h2_block, None, head, checks.clone());
            c.h2_queued -= 1;
        }
        c.write_end = c.write_pos + h2.out.len() as u64;
    }

    /// `--requests-file`: each waiting request opens its stream with its own header block
    /// (encoded once when nothing in it is templated) and body.
    fn open_mix_streams(&mut self, i: usize) {
        let Some(mix) = self.shared.mix.clone() else {
            return;
        };
        loop {
            let c = &self.conns[i];
            let Some(h2) = c.h2.as_ref() else { return };
            if c.h2_queued == 0 || !h2.can_open() {
                break;
            }
            let at = c.inflight.len() - c.h2_queued;
            let req = c.inflight[at];
            let r = &mix.requests[req.entry as usize];
            self.journey_cookie(i, &req);
            let ids = (self.id, self.shared.threads);
            let ctx =
                journey::context_for(ids, &mix, i, &req, self.users.as_ref(), &self.cookie_buf);
            let (block, body) = match &r.h2_block {
                Some(b) => (std::borrow::Cow::Borrowed(&b[..]), None),
                None => {
                    let body = r.body_for(&ctx);
                    let block =
                        crate::h2::request::for_mix(r, &ctx, self.shared.tls.is_some(), body.len());
                    (std::borrow::Cow::Owned(block), Some(body))
                }
            };
            let body = body.unwrap_or_else(|| Arc::clone(&r.body_bytes));
            let head = r.head_request;
            let checks = r.checks.clone();
            let c = &mut self.conns[i];
            let h2 = c.h2.as_mut().expect("checked above");
            let pos = c.write_pos + h2.out.len() as u64;
            let r = &mut c.inflight[at];
            r.stream_pos = pos;
            r.stream = h2.open_stream_with(&block, Some(body), head, checks);
            c.h2_queued -= 1;
        }
        let c = &mut self.conns[i];
        if let Some(h2) = c.h2.as_ref() {
            c.write_end = c.write_pos + h2.out.len() as u64;
        }
    }

    /// Writes what the session has queued (new streams first opened) as far as the socket
    /// takes it.
    pub(super) fn write_h2(&mut self, i: usize, now: u64) {
        if self.shared.ws.is_some() {
            self.ws_h2_hand_off(i, now);
        } else {
            self.open_streams(i);
        }
        loop {
            let c = &mut self.conns[i];
            if c.state != ConnState::Open {
                return;
            }
            let (Some(s), Some(h2)) = (c.stream.as_mut(), c.h2.as_mut()) else {
                return;
            };
            // Request bodies are queued a few frames ahead of what the socket takes.
            h2.fill_bodies();
            c.write_end = c.write_pos + h2.out.len() as u64;
            if h2.out.is_empty() {
                match s.flush() {
                    Err(e) if e.kind() != io::ErrorKind::WouldBlock => {
                        self.fail(i, error_kind(&e), now, true);
                    }
                    _ => {}
                }
                return;
            }
            match s.write(&h2.out) {
                Ok(0) => {
                    self.fail(i, ErrorKind::Closed, now, true);
                    return;
                }
                Ok(n) => {
                    h2.out.drain(..n);
                    c.write_end = c.write_pos + n as u64 + h2.out.len() as u64;
                    self.wrote(i, n, now);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(i, error_kind(&e), now, true);
                    return;
                }
            }
        }
    }

    /// Feeds `n` bytes of the read buffer to connection `i`'s session and acts on what they
    /// meant. False when the connection was closed meanwhile.
    pub(super) fn on_h2_bytes(&mut self, i: usize, n: usize, now: u64) -> bool {
        let mut events = std::mem::take(&mut self.h2_events);
        let Some(h2) = self.conns[i].h2.as_mut() else {
            return true;
        };
        let settings_seen = h2.settings_seen();
        let fed = h2.feed(&self.read_buf[..n], &mut |e| events.push(e));
        // The clock after decoding: what the header blocks cost is in the latency.
        let now = self.shared.clock.now_ns().max(now);
        self.conns[i].last_read_ns = now;
        let mut alive = true;
        if self.conns[i].ws.is_some() {
            alive = self.ws_h2_events(i, &mut events, now);
        }
        for e in events.drain(..) {
            if alive {
                alive = self.on_h2_event(i, e, now);
            }
        }
        self.h2_events = events;
        if !alive {
            return false;
        }
        if let Err(e) = fed {
            self.h2_failed(i, e, settings_seen, n, now);
            return false;
        }
        // Acknowledgements, window updates and new streams go out with the next flush.
        let c = &self.conns[i];
        if c.h2.as_ref().is_some_and(|h| !h.out.is_empty()) || c.h2_queued > 0 {
            self.flush_soon(i);
        }
        true
    }

    /// Queues connection `i` for the write at the end of the next dispatch.
    pub(super) fn flush_soon(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.flush_pending {
            c.flush_pending = true;
            self.to_flush.push(i);
        }
    }

    /// One event of the session. False when the connection was closed.
    pub(super) fn on_h2_event(&mut self, i: usize, e: Event, now: u64) -> bool {
        match e {
            Event::Settings { max_streams } => {
                self.transport.h2_settings(max_streams);
                self.h2_settings(i, now);
            }
            Event::Head { stream, status } => {
                let c = &mut self.conns[i];
                if let Some(r) = c.inflight.iter_mut().find(|r| r.stream == stream) {
                    r.status = status;
                }
            }
            Event::Data { stream, len } => {
                let c = &mut self.conns[i];
                if let Some(r) = c.inflight.iter_mut().find(|r| r.stream == stream) {
                    r.body_bytes += len as u64;
                }
            }
            Event::Checked {
                stream,
                failed,
                offered,
            } => {
                let c = &mut self.conns[i];
                let Some(r) = c.inflight.iter_mut().find(|r| r.stream == stream) else {
                    return true;
                };
                r.content_failed = failed;
                let req = *r;
                if self.shared.grpc {
                    if let Some(s) = offered.as_deref() {
                        self.transport
                            .grpc
                            .ended(s.grpc_status, s.grpc_message.as_deref());
                    }
                }
                // (The checks are looked up only for a journey's response: `offered` is None
                // otherwise, or a gRPC call's.)
                let journey = offered
                    .and_then(|s| Some((s, self.checks_of(&req)?)))
                    .filter(|(_, c)| !c.captures.is_empty() || c.set_cookies);
                if let Some((state, checks)) = journey {
                    // The user takes its values before the stream's end lets it go on.
                    if self.journey_absorb(&req, &checks, &state) {
                        let c = &mut self.conns[i];
                        if let Some(r) = c.inflight.iter_mut().find(|r| r.stream == stream) {
                            r.content_failed |= check::FAILED_CAPTURE;
                        }
                    }
                }
            }
            Event::End { stream } => return self.h2_end(i, stream, now),
            Event::Malformed { stream, reason } => {
                return self.h2_malformed(i, stream, reason, now)
            }
            Event::Reset { stream, code } => self.h2_reset(i, stream, code, now),
            Event::GoAway { last_stream, code } => {
                return self.h2_goaway(i, last_stream, code, now)
            }
        }
        true
    }

    /// The server's SETTINGS: requests queued beyond its stream limit go to other
    /// connections; the first SETTINGS makes the connection ready, so the wait for it is
    /// the connection's set-up, not the client's lag.
    fn h2_settings(&mut self, i: usize, now: u64) {
        let (pipeline, streams) = (self.shared.pipeline, self.shared.streams);
        let c = &mut self.conns[i];
        let cap = c.capacity(pipeline, streams);
        let mut back = Vec::new();
        while c.inflight.len() > cap && c.h2_queued > 0 {
            back.extend(c.inflight.pop_back());
            c.h2_queued -= 1;
        }
        for r in back {
            self.requeue.push_front(r);
        }
        let c = &mut self.conns[i];
        if c.responses == 0 {
            for r in c.inflight.iter_mut().filter(|r| r.stream == 0) {
                r.lag_origin_ns = r.lag_origin_ns.max(now);
            }
        }
        self.flush_soon(i);
        if self.shared.keepalive {
            self.mark_free(i);
        }
    }

    /// A stream ended: its request is complete (a response without a status is a
    /// `protocol` error), and the connection has a free stream.
    fn h2_end(&mut self, i: usize, stream: u32, now: u64) -> bool {
        let c = &mut self.conns[i];
        let Some(at) = c.inflight.iter().position(|r| r.stream == stream) else {
            return true;
        };
        let req = c.inflight.remove(at).expect("found above");
        if req.status == 0 {
            let (p, id) = self.named(i, stream);
            self.sample_protocol(|| format!("{p}: stream {id} ended without a response"));
            self.count_request_error(&req, ErrorKind::Protocol, now);
        } else {
            // The session judged the header and body checks as the response arrived.
            let failed = self.checks_of(&req).map_or_else(Vec::new, |ch| {
                check::failed_with(&ch, req.status, req.body_bytes, req.content_failed)
            });
            self.request_done(i, req, req.status, &failed, now);
        }
        self.after_h2_stream(i, now)
    }

    /// After a stream ended or was reset: close the connection when it is done (no
    /// keep-alive, a retired user, GOAWAY), or offer its free stream.
    fn after_h2_stream(&mut self, i: usize, now: u64) -> bool {
        let c = &self.conns[i];
        let opened = c.inflight.len() - c.h2_queued;
        let going_away = c.going_away();
        if !self.shared.keepalive && c.inflight.is_empty() {
            self.close_and_replace(i, now, false);
            return false;
        }
        if going_away && opened == 0 {
            // The graceful GOAWAY's last stream finished: reconnect.
            self.close_and_replace(i, now, true);
            return false;
        }
        if i >= self.active && c.inflight.is_empty() {
            self.retire(i);
            return false;
        }
        if self.shared.keepalive {
            self.mark_free(i);
        }
        true
    }

    /// The server reset a stream: REFUSED_STREAM (HTTP/3: H3_REQUEST_REJECTED), not
    /// processed, goes again once; any other code ends the request as a `protocol` error.
    fn h2_reset(&mut self, i: usize, stream: u32, code: u32, now: u64) {
        let c = &mut self.conns[i];
        let Some(at) = c.inflight.iter().position(|r| r.stream == stream) else {
            return;
        };
        let req = c.inflight.remove(at).expect("found above");
        let (p, id) = self.named(i, stream);
        let (frame, name, refused) = if self.conns[i].h3.is_some() {
            let name = H3Code::from_value(code.into())
                .map_or_else(|| format!("0x{code:x}"), |c| c.name().to_string());
            let refused = code == H3Code::RequestRejected.value() as u32;
            ("RESET_STREAM", name, refused)
        } else {
            ("RST_STREAM", error_name(code), code == REFUSED_STREAM)
        };
        if refused {
            self.not_processed(i, vec![req], &format!("{frame} {name}"), now);
        } else {
            self.sample_protocol(|| format!("{p}: the server reset stream {id} ({frame} {name})"));
            self.count_request_error(&req, ErrorKind::Protocol, now);
        }
        self.after_h2_stream(i, now);
    }

    /// GOAWAY: the streams above `last` were not processed and go again on another
    /// connection (once: a request the server turns away twice is a `protocol` error), as
    /// do requests still waiting for a stream. A graceful one (code 0) lets the others
    /// finish, then the connection is replaced; one with an error ends them as `protocol`
    /// errors now. Before any request was written the connection was of no use: a failed
    /// connect.
    fn h2_goaway(&mut self, i: usize, last: u32, code: u32, now: u64) -> bool {
        self.transport.h2_goaways += 1;
        let name = error_name(code);
        // HTTP/3's GOAWAY has no code; it names the first request stream not processed.
        let (goaway, what) = match self.conns[i].h3.is_some() {
            true => (
                "a GOAWAY".to_string(),
                format!("GOAWAY, streams from {} on", u64::from(last) * 4),
            ),
            false => (
                format!("{name} (GOAWAY)"),
                format!("GOAWAY {name}, last stream {last}"),
            ),
        };
        if !self.h2_used(i) {
            let why = format!("the server went away with {goaway} before any request");
            self.h2_unusable(i, why, now);
            return false;
        }
        let c = &mut self.conns[i];
        let mut back = Vec::new();
        let mut kept = VecDeque::with_capacity(c.inflight.len());
        for r in c.inflight.drain(..) {
            if r.stream == 0 || r.stream > last {
                back.push(r);
            } else {
                kept.push_back(r);
            }
        }
        c.inflight = kept;
        c.h2_queued = 0;
        self.not_processed(i, back, &what, now);
        if code != 0 {
            self.sample_protocol(|| {
                format!("HTTP/2: the server went away with {name} (GOAWAY, last stream {last})")
            });
            self.fail(i, ErrorKind::Protocol, now, false);
            return false;
        }
        if self.conns[i].inflight.is_empty() {
            self.close_and_replace(i, now, true);
            return false;
        }
        true
    }

    /// Requests the server says it did not process (`how`: REFUSED_STREAM, above a GOAWAY's
    /// last stream): those never written go again; a written one goes again once if its
    /// method is idempotent, and is a `protocol` error after that, so a server that turns
    /// everything away is not sent the same requests without end.
    fn not_processed(&mut self, i: usize, reqs: Vec<InFlight>, how: &str, now: u64) {
        let ends = reqs
            .iter()
            .find(|r| r.sent_counted && (r.resent || !self.idempotent(r)));
        if let Some(r) = ends {
            let (p, stream) = self.named(i, r.stream);
            let again = if r.resent {
                "again"
            } else {
                "(not idempotent: not sent again)"
            };
            self.sample_protocol(|| {
                format!("{p}: the server did not process the request on stream {stream} {again} ({how})")
            });
        }
        self.retry_or_end(reqs, true, ErrorKind::Protocol, now);
    }

    /// Whether connection `i` was of use: a request was written on it, or a response came.
    fn h2_used(&self, i: usize) -> bool {
        let c = &self.conns[i];
        c.responses > 0 || c.request_written()
    }

    /// The server broke off HTTP/2 on connection `i` before any request was written on it
    /// (`why`): no request was lost there, so it is a failed connect (one `connect` error,
    /// the connect's back-off, the reason in the warning) and, before any response of the
    /// run, the end of the run (exit 2).
    pub(super) fn h2_unusable(&mut self, i: usize, why: String, now: u64) {
        self.setup_failed(|| SetupFailure::H2Unusable(why.clone()));
        self.connect_sample
            .get_or_insert_with(|| format!("HTTP/2: {why}"));
        if self.shared.keepalive {
            // The requests waiting for its streams were not written here: those never sent
            // go on another connection, and the failed attempt itself is the one `connect`
            // error (as a keep-alive connect that fails), not each of them; one sent before
            // (going again) is `closed`, as when its new connect fails.
            self.send_waiting_elsewhere(i, now);
        }
        self.connect_failed(i, now, io::Error::other(why));
    }

    /// Connection `i` will not carry the requests waiting on it: those never sent go first on
    /// another connection, one sent before (going again) is a `closed` error.
    pub(super) fn send_waiting_elsewhere(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        c.h2_queued = 0;
        let waiting: Vec<InFlight> = c.inflight.drain(..).collect();
        let (fresh, sent): (Vec<InFlight>, Vec<InFlight>) =
            waiting.into_iter().partition(|r| !r.sent_counted);
        for r in sent {
            self.count_request_error(&r, ErrorKind::Closed, now);
        }
        for r in fresh.into_iter().rev() {
            self.requeue.push_front(r);
        }
    }

    /// The session failed (a connection error): before the server's SETTINGS, a server that
    /// answered in HTTP/1.1 does not speak HTTP/2 here and, before any response, ends the
    /// run; before any request was written, the connection was of no use (`h2_unusable`);
    /// otherwise the requests on it end as `protocol` errors.
    fn h2_failed(&mut self, i: usize, e: H2Error, settings_seen: bool, n: usize, now: u64) {
        let head = &self.read_buf[..n.min(64)];
        if !settings_seen && head.starts_with(b"HTTP/") {
            let line = head
                .split(|b| *b == b'\r' || *b == b'\n')
                .next()
                .unwrap_or(head);
            let line = String::from_utf8_lossy(line).into_owned();
            let reason = match self.shared.http {
                HttpVersion::H2c => format!(
                    "in cleartext (--h2c): it answered the HTTP/2 connection preface with \
                     \"{line}\"; drop --h2c to speak HTTP/1.1"
                ),
                _ => format!(
                    "over TLS although it chose h2 by ALPN: it answered the HTTP/2 connection \
                     preface with \"{line}\"; use --http1.1"
                ),
            };
            self.setup_failed(|| SetupFailure::NoH2(reason));
            self.sample_protocol(|| format!("HTTP/2: the server answered in HTTP/1.1: {line}"));
        } else if !self.h2_used(i) {
            let why = e.0.clone();
            self.h2_unusable(i, why, now);
            return;
        } else {
            self.sample_protocol(|| e.to_string());
        }
        self.fail(i, ErrorKind::Protocol, now, false);
    }

    /// A stream's response was malformed (RFC 9113 §8.1.1): a `protocol` error, named.
    fn h2_malformed(&mut self, i: usize, stream: u32, reason: String, now: u64) -> bool {
        let c = &mut self.conns[i];
        let Some(at) = c.inflight.iter().position(|r| r.stream == stream) else {
            return true;
        };
        let req = c.inflight.remove(at).expect("found above");
        let (p, id) = self.named(i, stream);
        self.sample_protocol(|| format!("{p}: a malformed response on stream {id}: {reason}"));
        self.count_request_error(&req, ErrorKind::Protocol, now);
        self.flush_soon(i);
        self.after_h2_stream(i, now)
    }

    /// HTTP/2 times streams out one by one (RST_STREAM CANCEL), so one stalled stream does
    /// not end the others; a connection on which nothing arrived for `--timeout` ends with
    /// all its requests, as an HTTP/1.1 one does.
    pub(super) fn h2_timeouts(&mut self, i: usize, now: u64) {
        if self.conns[i].ws.is_some() {
            self.ws_h2_timeouts(i, now);
            return;
        }
        let timeout = self.shared.timeout_ns;
        let expired =
            move |r: &InFlight| r.write_ns > 0 && now.saturating_sub(r.write_ns) > timeout;
        if self.h3_without_streams(i, now) {
            return;
        }
        let c = &self.conns[i];
        if !c.inflight.iter().any(expired) {
            return;
        }
        if now.saturating_sub(c.last_read_ns) > timeout {
            self.fail(i, ErrorKind::Timeout, now, false);
            return;
        }
        let mut k = 0;
        while k < self.conns[i].inflight.len() {
            let c = &mut self.conns[i];
            if !expired(&c.inflight[k]) {
                k += 1;
                continue;
            }
            let r = c.inflight.remove(k).expect("in range");
            c.cancel_stream(r.stream);
            self.count_request_error(&r, ErrorKind::Timeout, now);
        }
        self.flush_soon(i);
        self.after_h2_stream(i, now);
    }

    /// How warnings name connection `i`'s protocol and its stream `stream`: HTTP/2's stream
    /// number, or HTTP/3's QUIC stream ID (a request stream's number is its index + 1).
    fn named(&self, i: usize, stream: u32) -> (&'static str, u64) {
        if self.conns[i].h3.is_some() {
            ("HTTP/3", u64::from(stream.saturating_sub(1)) * 4)
        } else {
            ("HTTP/2", u64::from(stream))
        }
    }

    pub(super) fn sample_protocol(&mut self, reason: impl FnOnce() -> String) {
        if self.protocol_sample.is_none() {
            self.protocol_sample = Some(ProtocolSample {
                reason: reason(),
                bytes: Vec::new(),
            });
        }
    }
}

//! When a connection fails or the server closes it: which requests end with which error,
//! which go again on a new connection, and the back-off after failed connects.

use super::*;

impl Worker {
    /// The server sent bytes on a fresh connection before any request: drop it, count it, and
    /// reconnect after a back-off that grows while it keeps happening.
    pub(super) fn unsolicited(&mut self, i: usize, now: u64) {
        let measured = self.stage != Stage::Warmup;
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.unsolicited_streak += 1;
        c.state = ConnState::Backoff {
            until_ns: now + Conn::backoff_ns(c.unsolicited_streak),
        };
        if measured {
            self.rec.counts(now).unsolicited += 1;
        }
    }

    pub(super) fn connect_failed(&mut self, i: usize, now: u64, e: io::Error) {
        if let Some(why) = timed_out(self.conns[i].state, &e) {
            self.connect_sample.get_or_insert_with(|| why.to_string());
        }
        let phase = self.phase();
        self.count_quic(i);
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.connect_failures += 1;
        c.state = ConnState::Backoff {
            until_ns: now + Conn::backoff_ns(c.connect_failures),
        };
        // Without keep-alive the connect belongs to a request: that request is lost to `connect`.
        // With keep-alive no request was on the socket yet; the failed attempt itself is counted.
        let lost: Vec<InFlight> = c.inflight.drain(..).collect();
        if lost.is_empty() {
            self.count_error(phase, ErrorKind::Connect, now);
        }
        for r in lost {
            if r.sent_counted {
                // A resend whose new connection failed: it was sent once, so it is `closed`.
                self.count_request_error(&r, ErrorKind::Closed, now);
            } else {
                self.count_request_error(&r, ErrorKind::Connect, now);
            }
        }
    }

    pub(super) fn count_error(&mut self, phase: Phase, kind: ErrorKind, now: u64) {
        self.rec.counters_for(phase, now).errors.add(kind);
    }

    /// Request `r` ended with an error of `kind` (also in its named request's numbers).
    pub(super) fn count_request_error(&mut self, r: &InFlight, kind: ErrorKind, now: u64) {
        if self.users.is_some() {
            let think_ns = self.think_after(r);
            self.journey_done(r, think_ns, now);
        }
        self.count_error(r.phase, kind, now);
        if r.phase == Phase::Measured {
            if let Some(e) = self.endpoint_of(r) {
                self.rec.endpoints.error(e, kind);
            }
        }
    }

    /// The connection failed with requests on it. A silent close of a reused connection before
    /// any byte of the next response lets idempotent requests go once more on a new connection
    /// (latency still from their original start); everything else ends with `kind`.
    pub(super) fn fail(&mut self, i: usize, kind: ErrorKind, now: u64, by_server: bool) {
        let c = &mut self.conns[i];
        // A WebSocket's messages never go again: the server may have read them.
        let silent = by_server
            && c.ws.is_none()
            && c.responses > 0
            && c.parser.is_idle()
            && matches!(kind, ErrorKind::Closed | ErrorKind::Reset);
        let reqs: Vec<InFlight> = c.inflight.drain(..).collect();
        self.retry_or_end(reqs, silent, kind, now);
        self.close_and_replace(i, now, by_server);
    }

    /// Requests taken off a connection that is going away: those never written go again
    /// first (in order); written ones go again once if `may_resend` and their method is
    /// idempotent, otherwise end with `kind`.
    pub(super) fn retry_or_end(
        &mut self,
        reqs: Vec<InFlight>,
        may_resend: bool,
        kind: ErrorKind,
        now: u64,
    ) {
        let mut back = Vec::new();
        for mut r in reqs {
            if !r.sent_counted {
                back.push(r);
            } else if may_resend && !r.resent && self.idempotent(&r) {
                r.resent = true;
                back.push(r);
            } else {
                self.count_request_error(&r, kind, now);
            }
        }
        for r in back.into_iter().rev() {
            self.requeue.push_front(r);
        }
    }

    /// Closes the socket and, with keep-alive, opens a new one at once.
    pub(super) fn close_and_replace(&mut self, i: usize, now: u64, by_server: bool) {
        let phase = self.phase();
        self.count_quic(i);
        let c = &mut self.conns[i];
        let had_socket = c.stream.is_some() || c.h3.is_some();
        let unanswered = had_socket && c.responses == 0;
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        // Requests still queued behind a response that closed the connection go again.
        let rest: Vec<InFlight> = c.inflight.drain(..).collect();
        c.reset_socket();
        c.state = ConnState::Closed;
        c.ready_ns = c.ready_ns.max(now);
        if had_socket && by_server && self.shared.keepalive {
            self.rec.counters_for(phase, now).closed_by_server += 1;
        }
        self.retry_or_end(rest, true, ErrorKind::Closed, now);
        if i >= self.active {
            return; // a retired user's slot stays closed
        }
        if unanswered {
            // It ended before any response: opening the next one at once would loop as fast
            // as the server turns connections away, so it backs off like a failed connect.
            let c = &mut self.conns[i];
            c.connect_failures += 1;
            c.state = ConnState::Backoff {
                until_ns: now + Conn::backoff_ns(c.connect_failures),
            };
            return;
        }
        if self.shared.keepalive {
            if !self.is_draining() || !self.requeue.is_empty() {
                self.connect(i, now);
            }
        } else {
            self.mark_free(i);
        }
    }
}

/// Why a connect that ended with `e` in `state` failed, when it ran out of time (a refusal says
/// nothing more than "refused or unreachable"). Only `--timeout` ends a TLS handshake so.
fn timed_out(state: ConnState, e: &io::Error) -> Option<&'static str> {
    match state {
        _ if e.kind() != io::ErrorKind::TimedOut => None,
        ConnState::Connecting { tunnel_ns, .. } if tunnel_ns > 0 => {
            Some("the proxy did not answer CONNECT within --timeout")
        }
        ConnState::Connecting { upgrade_ns, .. } if upgrade_ns > 0 => {
            Some("the server did not answer the WebSocket upgrade within --timeout")
        }
        ConnState::Connecting { tcp_ns: 0, .. } => Some("the connect timed out"),
        ConnState::Connecting { .. } => Some("the TLS handshake did not finish within --timeout"),
        _ => None,
    }
}

/// How a failed read or write ends the requests on the connection.
pub(super) fn error_kind(e: &io::Error) -> ErrorKind {
    match e.kind() {
        io::ErrorKind::ConnectionReset
        | io::ErrorKind::ConnectionAborted
        | io::ErrorKind::BrokenPipe => ErrorKind::Reset,
        // TLS refused what the server sent (an alert, a corrupt record).
        io::ErrorKind::InvalidData => ErrorKind::Protocol,
        _ => ErrorKind::Closed,
    }
}

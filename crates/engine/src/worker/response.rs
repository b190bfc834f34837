//! The response side of a worker on HTTP/1.1: the bytes read parsed into responses, their
//! checks and a journey's captures, and what a completed (or failed) request does — its user's
//! think time and next step, the counters and histograms. HTTP/2's streams complete through
//! `h2.rs`, which ends here too (`request_done`).

use super::*;
use crate::SetupFailure;
use volley_model::result::warning;
use volley_model::stats::recorder::SAMPLE_BYTES;

impl Worker {
    /// Parses `n` bytes from the read buffer. False when the connection was closed meanwhile.
    pub(super) fn on_bytes(&mut self, i: usize, n: usize, now: u64) -> bool {
        if self.conns[i].h2.is_some() {
            return self.on_h2_bytes(i, n, now);
        }
        if self.conns[i].ws.is_some() {
            return self.on_ws_bytes(i, n, now);
        }
        let mut off = 0;
        while off < n {
            let c = &mut self.conns[i];
            if c.inflight.is_empty() {
                if c.responses == 0 {
                    // A fresh connection on which the server spoke first: replacing it at once
                    // would loop as fast as the server accepts, so back off like a failed
                    // connect.
                    if self.unsolicited_sample.is_none() {
                        let end = n.min(off + SAMPLE_BYTES);
                        self.unsolicited_sample = Some(self.read_buf[off..end].to_vec());
                    }
                    self.unsolicited(i, now);
                } else {
                    // Bytes nobody asked for on a used connection (e.g. a 408 after an idle
                    // timeout): it is no longer trustworthy; replace it.
                    self.close_and_replace(i, now, true);
                }
                return false;
            }
            let mut asks_close = self.shared.template.asks_close;
            let mut checks = self.shared.checks.as_deref();
            if let Some(mix) = self.shared.mix.as_deref() {
                // Each request of a mix has its own method (a HEAD's response has no body).
                let r = &mix.requests[c.inflight[0].entry as usize];
                if c.parser.is_idle() {
                    c.parser.set_head_request(r.head_request);
                }
                asks_close = r.asks_close;
                checks = r.checks.as_deref();
            }
            let input = &self.read_buf[off..n];
            let fed = match checks {
                None => c.parser.feed(input),
                Some(ch) => {
                    let state = c.check.get_or_insert_with(Default::default);
                    if c.parser.is_idle() {
                        state.reset(ch);
                    }
                    let mut watch = check::Watch { state, checks: ch };
                    c.parser.feed_with(input, &mut watch)
                }
            };
            match fed {
                Ok((used, done)) => {
                    off += used;
                    if let Some(resp) = done {
                        let mut failed = match (checks, c.check.as_deref()) {
                            (Some(ch), Some(st)) => st.failed(ch, resp.status, resp.body_bytes),
                            _ => Vec::new(),
                        };
                        let captures =
                            checks.is_some_and(|ch| !ch.captures.is_empty() || ch.set_cookies);
                        if captures && self.capture_failed(i) {
                            failed.push(check::CAPTURE);
                        }
                        self.response_done(i, resp.status, &failed, now);
                        if !resp.keep_alive || !self.shared.keepalive {
                            self.close_and_replace(i, now, !asks_close);
                            return false;
                        }
                        if i >= self.active && self.conns[i].inflight.is_empty() {
                            self.retire(i);
                            return false;
                        }
                        // A pipelined window is refilled once half of it is free, so refills
                        // go out several requests per write instead of one write per response.
                        if self.conns[i].inflight.len() <= self.shared.pipeline / 2 {
                            self.mark_free(i);
                        }
                    }
                }
                Err(e) => {
                    if c.responses == 0
                        && self.shared.tls.is_none()
                        && warning::looks_like_tls(&self.read_buf[off..n])
                    {
                        // TLS records in answer to an http:// request.
                        self.setup_failed(|| SetupFailure::SpeaksTls);
                    }
                    let c = &mut self.conns[i];
                    if self.protocol_sample.is_none() {
                        let bytes = c.parser.failed_bytes(&self.read_buf[off..n], SAMPLE_BYTES);
                        self.protocol_sample = Some(ProtocolSample {
                            reason: e.to_string(),
                            bytes: bytes.to_vec(),
                        });
                    }
                    self.fail(i, ErrorKind::Protocol, now, false);
                    return false;
                }
            }
        }
        true
    }

    /// The checks the complete response at the front of HTTP/1.1 connection `i` failed; a
    /// journey's user takes its captures and cookies first (a capture that found no value
    /// fails `capture`).
    /// A journey's user takes what the complete response at the front of HTTP/1.1
    /// connection `i` offers its captures and cookie jar; true when a capture found no value
    /// (the `capture` check failed).
    fn capture_failed(&mut self, i: usize) -> bool {
        let Some(req) = self.conns[i].inflight.front().copied() else {
            return false;
        };
        let (Some(checks), Some(state)) = (self.checks_of(&req), self.conns[i].check.take()) else {
            return false;
        };
        let missed = self.users.is_some() && self.journey_absorb(&req, &checks, &state);
        self.conns[i].check = Some(state);
        missed
    }

    /// A response ended on connection `i` (by its length, its last chunk, or the close that
    /// delimits it): the request at the front is complete, and its user thinks before the next.
    pub(super) fn response_done(
        &mut self,
        i: usize,
        status: u16,
        failed: &[&'static str],
        now: u64,
    ) {
        let Some(req) = self.conns[i].inflight.pop_front() else {
            return;
        };
        self.request_done(i, req, status, failed, now);
    }

    /// Request `req`, taken off connection `i`, got its whole response (which failed the
    /// checks named in `failed`).
    pub(super) fn request_done(
        &mut self,
        i: usize,
        req: InFlight,
        status: u16,
        failed: &[&'static str],
        now: u64,
    ) {
        // Only a journey's steps have think times of their own.
        let think_ns = match self.users {
            Some(_) => self.think_after(&req),
            None => self.shared.think_ns,
        };
        let c = &mut self.conns[i];
        c.responses += 1;
        c.unsolicited_streak = 0;
        c.connect_failures = 0;
        if c.responses == 1 {
            self.shared.setup_gate.pass();
        }
        // In the open loop a journey's think time is its user's, not the connection's.
        let conn_think = if self.shared.open_loop { 0 } else { think_ns };
        c.ready_ns = now + conn_think;
        if conn_think > 0 && self.users.is_none() {
            // Think times are all equal, so wake-ups come in completion order.
            self.thinking.push_back((c.ready_ns, i));
        } else if conn_think > 0 {
            // A journey's steps may each have their own: kept in order of wake-up.
            let at = self.thinking.partition_point(|&(t, _)| t <= c.ready_ns);
            self.thinking.insert(at, (c.ready_ns, i));
        }
        if self.users.is_some() {
            self.journey_done(&req, think_ns, now);
        }
        self.complete(req, status, failed, now);
    }

    /// The think time after `req`'s response: its journey step's own, else `--think-time`.
    pub(super) fn think_after(&self, req: &InFlight) -> u64 {
        match self.shared.mix.as_deref() {
            Some(mix) if req.entry != NO_ENTRY => mix.workload.entries[req.entry as usize]
                .step
                .think_ns
                .unwrap_or(self.shared.think_ns),
            _ => self.shared.think_ns,
        }
    }

    pub(super) fn complete(
        &mut self,
        req: InFlight,
        status: u16,
        failed: &[&'static str],
        now: u64,
    ) {
        match req.phase {
            Phase::Warmup => {
                self.rec.warmup.completed += 1;
            }
            Phase::Measured => {
                let latency = ns_to_us(now.saturating_sub(req.start_ns));
                let write = if req.write_ns == 0 { now } else { req.write_ns };
                let service = ns_to_us(now.saturating_sub(write));
                self.rec.response(now, latency, service, status);
                self.rec.checked(now, status, failed);
                if let Some(e) = self.endpoint_of(&req) {
                    self.rec.endpoints.response(e, latency, service, status);
                    self.rec.endpoints.checked(e, status, failed);
                }
                self.last_response_ns = now;
            }
        }
    }

    pub(super) fn on_eof(&mut self, i: usize, now: u64) {
        let c = &mut self.conns[i];
        match c.parser.eof() {
            Ok(Some(resp)) => {
                // A close-delimited body ends here.
                let front = c.inflight.front().copied();
                let asks_close = self.asks_close(front.as_ref());
                let checks = front.as_ref().and_then(|r| self.checks_of(r));
                let mut failed = match (checks.as_deref(), self.conns[i].check.as_deref()) {
                    (Some(ch), Some(st)) => st.failed(ch, resp.status, resp.body_bytes),
                    _ => Vec::new(),
                };
                let captures = checks.is_some_and(|ch| !ch.captures.is_empty() || ch.set_cookies);
                if captures && self.capture_failed(i) {
                    failed.push(check::CAPTURE);
                }
                self.response_done(i, resp.status, &failed, now);
                self.close_and_replace(i, now, !asks_close);
            }
            Ok(None) => self.fail(i, ErrorKind::Closed, now, true),
            Err(_) => self.fail(i, ErrorKind::Closed, now, true),
        }
    }
}

impl Worker {
    /// Whether request `r` asks the server to close (the run's request, or its workload
    /// request).
    pub(super) fn asks_close(&self, r: Option<&InFlight>) -> bool {
        match (self.shared.mix.as_deref(), r) {
            (Some(mix), Some(r)) if r.entry != NO_ENTRY => {
                mix.requests[r.entry as usize].asks_close
            }
            _ => self.shared.template.asks_close,
        }
    }

    /// The checks request `r`'s response must pass (`None`: none).
    pub(super) fn checks_of(&self, r: &InFlight) -> Option<Arc<volley_plan::workload::Checks>> {
        match self.shared.mix.as_deref() {
            Some(mix) if r.entry != NO_ENTRY => mix.requests[r.entry as usize].checks.clone(),
            _ => self.shared.checks.clone(),
        }
    }

    /// Whether request `r` may go again after a silent close (an idempotent method).
    pub(super) fn idempotent(&self, r: &InFlight) -> bool {
        if self.shared.ws.is_some() {
            // A WebSocket message: not a request to repeat after a close.
            return false;
        }
        match self.shared.mix.as_deref() {
            Some(mix) if r.entry != NO_ENTRY => mix.requests[r.entry as usize].idempotent,
            _ => self.shared.template.idempotent,
        }
    }
}

//! Handing requests to connections: which slot may take one now, the schedule's due requests
//! (and those waiting to go again) to free slots, and virtual users arriving and leaving.

use super::journey;
use super::*;

impl Worker {
    pub(super) fn mark_free(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if !c.in_free {
            c.in_free = true;
            self.free.push(i);
        }
    }

    /// Whether slot `i` can take another request now.
    pub(super) fn can_take(&self, i: usize, now: u64) -> bool {
        // A closed slot takes a request too: its connect then belongs to that request, so a
        // server that refuses connections ends requests with `connect` (and `-n` terminates).
        let c = &self.conns[i];
        if i >= self.active || now < c.ready_ns {
            return false; // a retired user, or one thinking
        }
        match c.state {
            ConnState::Open => {
                self.shared.keepalive
                    && c.inflight.len() < c.capacity(self.shared.pipeline, self.shared.streams)
            }
            ConnState::Closed => c.inflight.is_empty(),
            _ => false,
        }
    }

    /// Hands due requests to free connections: first anything waiting to be (re)sent, then
    /// the schedule. In the open loop a request waiting for a connection is late, and that counts.
    pub(super) fn dispatch(&mut self, now: u64) {
        self.follow_due(now);
        while let Some(&(ready, i)) = self.thinking.front() {
            if ready > now {
                break;
            }
            self.thinking.pop_front();
            if self.can_take(i, now) {
                self.mark_free(i);
            }
        }
        // Open loop with a batch window: the schedule's next batch (the requests due within
        // the window of the first) goes once its last request is due, all of it in this
        // wake-up; none goes before its own due time. The last batch of the send window goes
        // as its requests fall due.
        let window = self.shared.batch_window_ns;
        let release = window == 0
            || self
                .pacer
                .batch_end(window)
                .is_none_or(|end| end <= now || end >= self.window_end_ns);
        loop {
            let Some(&i) = self.free.last() else {
                if self.grow_for_due(now) {
                    continue;
                }
                break;
            };
            if !self.can_take(i, now) {
                self.free.pop();
                self.conns[i].in_free = false;
                continue;
            }
            // A resend waits for a new connection while one is on its way: it goes on a reused
            // one only when none is.
            let waits = self.waits_for_new(i);
            if waits {
                // A new connection that is free takes it first.
                let fresh = self.free.iter().rposition(|&k| {
                    let c = &self.conns[k];
                    c.responses == 0 && !c.multiplexed() && self.can_take(k, now)
                });
                if let Some(pos) = fresh {
                    let last = self.free.len() - 1;
                    self.free.swap(pos, last);
                    continue;
                }
            }
            let from_requeue = !self.requeue.is_empty() && !waits;
            let req = if from_requeue {
                let r = self.requeue.pop_front().expect("not empty");
                if self.is_draining() && !r.sent_counted {
                    // Taken before the window closed but never written: it is unsent.
                    if r.phase == Phase::Measured {
                        self.unsent_request(r.start_ns);
                    }
                    continue;
                }
                r
            } else {
                if self.is_draining() {
                    break;
                }
                // Nothing due at or after the end of the send window is taken.
                let start = match self.pacer.peek() {
                    Due::Now if now < self.window_end_ns => now,
                    Due::At(t) if release && t <= now && t < self.window_end_ns => t,
                    _ => break,
                };
                self.pacer.advance();
                let mut r = InFlight::new(start, self.phase());
                // Thread k of T takes requests k, k + T, k + 2T, …: an index without a counter
                // shared between threads.
                r.index = self.taken * self.shared.threads as u64 + self.id as u64;
                self.taken += 1;
                r
            };
            self.assign(i, req, now);
        }
        self.flush(now);
    }

    /// One write per connection for everything just queued on it: a pipelined window
    /// refilled by a batch of responses goes out in a single syscall (an HTTP/3 one in a
    /// single QUIC packet, with the acknowledgement of those responses).
    pub(super) fn flush(&mut self, now: u64) {
        while let Some(i) = self.to_flush.pop() {
            self.conns[i].flush_pending = false;
            self.write(i, now);
        }
    }

    /// Whether the request at the front of the requeue, going again after a silent close
    /// (docs/contract.md, "HTTP/1.1": "once more on a new connection"), should not go on HTTP/1.1
    /// connection `i`, reused, because a new one is open and free or opening (it takes it then).
    /// A server that closes after every response without saying so would close `i` on it too.
    fn waits_for_new(&self, i: usize) -> bool {
        let Some(r) = self.requeue.front() else {
            return false;
        };
        let c = &self.conns[i];
        if !r.resent || c.multiplexed() || c.responses == 0 {
            return false;
        }
        self.conns[..self.active].iter().any(|o| {
            o.responses == 0
                && o.inflight.is_empty()
                && matches!(o.state, ConnState::Connecting { .. } | ConnState::Open)
        })
    }

    /// `--max-connections`: with every connection busy and a request due, one more slot comes
    /// into use (closed: the request's assignment connects it). True when it did.
    fn grow_for_due(&mut self, now: u64) -> bool {
        if !self.shared.grow || self.is_draining() || self.active >= self.conns.len() {
            return false;
        }
        let due = !self.requeue.is_empty()
            || matches!(self.pacer.peek(), Due::At(t) if t <= now && t < self.window_end_ns);
        // A connection still connecting with nothing queued is free in a moment: the request
        // waits for it rather than opening one more (the first connects of a run, a
        // replacement after a close).
        let about_free = || {
            self.conns[..self.active]
                .iter()
                .any(|c| c.inflight.is_empty() && matches!(c.state, ConnState::Connecting { .. }))
        };
        if !due || about_free() {
            return false;
        }
        self.active += 1;
        self.max_active = self.max_active.max(self.active);
        self.mark_free(self.active - 1);
        true
    }

    pub(super) fn assign(&mut self, i: usize, mut req: InFlight, now: u64) {
        if self.shared.mix.is_some() && self.choose(i, &mut req) == journey::Chosen::Nothing {
            return; // the arrival's user skipped every step it had
        }
        let len = self.shared.template.bytes.len() as u64;
        let c = &mut self.conns[i];
        req.write_ns = 0;
        // The pacer's own lag counts from when both the request was due and a connection was
        // free for it: waiting for a busy server's connection is latency, not client lag.
        req.lag_origin_ns = req.start_ns.max(c.ready_ns).min(now);
        req.stream = 0;
        req.status = 0;
        req.body_bytes = 0;
        if c.multiplexed() {
            // It waits for a stream, opened when the connection is written.
            req.stream_pos = u64::MAX;
            c.h2_queued += 1;
        } else if self.shared.ws.is_some() {
            req.stream_pos = c.write_end;
            self.write_ws_message(i, &req);
        } else if self.shared.mix.is_some() {
            req.stream_pos = c.write_end;
            let before = c.out.len();
            self.journey_cookie(i, &req);
            let mix = self.shared.mix.as_deref().expect("checked above");
            let ids = (self.id, self.shared.threads);
            let ctx =
                journey::context_for(ids, mix, i, &req, self.users.as_ref(), &self.cookie_buf);
            let c = &mut self.conns[i];
            mix.requests[req.entry as usize].render_http1(&ctx, &mut c.out, &mut self.scratch);
            c.write_end += (c.out.len() - before) as u64;
        } else {
            req.stream_pos = c.write_end;
            c.write_end += len;
        }
        let c = &mut self.conns[i];
        c.inflight.push_back(req);
        if c.state == ConnState::Open {
            if !c.flush_pending {
                c.flush_pending = true;
                self.to_flush.push(i);
            }
        } else {
            self.connect(i, now);
        }
    }

    /// `--requests-file`: the workload's request for `req`, unless it has one (a request that
    /// goes again stays the same request): by its index in a weighted mix, by the connection's
    /// walk in a sequence, by its user's place in a journey.
    fn choose(&mut self, i: usize, req: &mut InFlight) -> journey::Chosen {
        if req.entry != NO_ENTRY {
            return journey::Chosen::Step;
        }
        if self.users.is_some() {
            return self.journey_choose(i, req);
        }
        let Some(mix) = self.shared.mix.as_deref() else {
            return journey::Chosen::Step;
        };
        let c = &mut self.conns[i];
        // The index is this worker's count × threads + its number: the count is its turn.
        let turn = req.index / self.shared.threads as u64;
        req.entry = mix.workload.pick(turn, c.walked) as u32;
        c.walked += 1;
        journey::Chosen::Step
    }

    /// Brings slots `from..to` into use: with keep-alive they connect at once.
    pub(super) fn activate(&mut self, from: usize, to: usize, now: u64) {
        self.active = self.active.max(to);
        self.max_active = self.max_active.max(self.active);
        for i in from..to {
            if let Some(users) = self.users.as_mut() {
                // A user arriving is a new one: it logs in again.
                users.restart_slot(i);
            }
            if self.shared.keepalive && self.conns[i].state == ConnState::Closed {
                self.connect(i, now);
            } else {
                self.mark_free(i);
            }
        }
    }

    /// A user leaves (ramp down): its connection closes once it has nothing in flight.
    pub(super) fn retire(&mut self, i: usize) {
        self.count_quic(i);
        let c = &mut self.conns[i];
        if let Some(mut s) = c.stream.take() {
            let _ = self.poll.registry().deregister(&mut s);
        }
        c.reset_socket();
        c.state = ConnState::Closed;
    }

    /// Follows the ramp: this thread's share of the users active now.
    pub(super) fn update_users(&mut self, now: u64) {
        let Some(ramp) = self.shared.ramp.as_ref() else {
            return;
        };
        let users = ramp.users_at(now.saturating_sub(self.shared.t0_ns));
        let target = (share_of_indices(users, self.id as u64, self.shared.threads as u64) as usize)
            .min(self.conns.len());
        if target > self.active {
            self.activate(self.active, target, now);
        } else if target < self.active {
            let old = self.active;
            self.active = target;
            for i in target..old {
                if self.conns[i].inflight.is_empty() {
                    self.retire(i);
                }
            }
        }
        self.rec.users = target as u64;
    }
}

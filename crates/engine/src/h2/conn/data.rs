//! Request bodies and response DATA: bodies sent as the server's windows allow and a few
//! frames ahead of the socket; DATA received against the windows given (credited once an
//! update is written), content-length checked, streams ended or found malformed.

use super::*;

impl H2Conn {
    /// Queues more of the waiting request bodies, when the caller has written enough of
    /// [`H2Conn::out`] to leave room (call it after each write).
    pub fn fill_bodies(&mut self) {
        if self.pending.is_empty() || self.out.len() >= BODY_AHEAD {
            return;
        }
        self.sync_written();
        self.send_bodies();
        self.seen_len = self.out.len();
    }

    /// Whether request bodies wait for window or for room in `out`.
    #[cfg(test)]
    pub(crate) fn bodies_waiting(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Queues as much of the waiting request bodies as the windows allow, and no more than
    /// [`BODY_AHEAD`] bytes ahead of what the socket took: a server that opens its windows
    /// wide and never reads would otherwise have the whole body copied into `out`.
    pub(super) fn send_bodies(&mut self) {
        let conn_body = Arc::clone(&self.body);
        let mut i = 0;
        while i < self.pending.len() && self.out.len() < BODY_AHEAD {
            let p = &mut self.pending[i];
            let body: &[u8] = p.body.as_deref().unwrap_or(&conn_body);
            while p.sent < body.len()
                && self.send_window > 0
                && p.window > 0
                && self.out.len() < BODY_AHEAD
            {
                let n = (body.len() - p.sent)
                    .min(DATA_FRAME)
                    .min(self.send_window as usize)
                    .min(p.window as usize);
                let end = if p.sent + n == body.len() {
                    flags::END_STREAM
                } else {
                    0
                };
                let chunk = &body[p.sent..p.sent + n];
                frame::write(&mut self.out, Kind::Data, end, p.stream, chunk);
                p.sent += n;
                p.window -= n as i64;
                self.send_window -= n as i64;
            }
            if p.sent == body.len() {
                self.pending.swap_remove(i);
            } else {
                i += 1;
            }
        }
    }

    pub(super) fn data(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        self.on_client_stream(&h)?;
        // Padding counts against the windows too.
        let len = p.len() as u64;
        self.recv_credit -= len as i64;
        if self.recv_credit < 0 {
            return Err(fail(
                code::FLOW_CONTROL_ERROR,
                format_args!(
                    "the server sent {} bytes of DATA beyond the connection's window of {}",
                    -self.recv_credit, self.window
                ),
            ));
        }
        self.recv_unacked += len;
        if self.recv_unacked >= self.update_at {
            self.grant(0, self.recv_unacked as u32);
            self.recv_unacked = 0;
        }
        let body = unpad(h, p)?;
        let Some(i) = self.index(h.stream) else {
            // A stream the server already ended: its bytes are ignored.
            return Ok(());
        };
        let end = h.has(flags::END_STREAM);
        self.stream_window(i, len, end)?;
        let s = &mut self.open[i];
        s.received += body.len() as u64;
        if let Some(w) = s.watch.as_mut() {
            w.body(body);
        }
        if s.tunnel {
            self.tunnel_in.extend_from_slice(body);
        }
        if !body.is_empty() {
            on(Event::Data {
                stream: h.stream,
                len: body.len(),
            });
        }
        if let Length::Declared(n) = s.length.filter_over(s.received) {
            let why = format!("more DATA than its content-length of {n}");
            self.malformed(i, end, why, on);
        } else if end {
            self.end_stream(i, on);
        }
        Ok(())
    }

    /// Takes `len` DATA bytes from the window of the `i`th open stream, tops it up when half
    /// is used (unless the stream `ends`), and checks the server stays within it and sent
    /// the response head first.
    pub(super) fn stream_window(&mut self, i: usize, len: u64, ends: bool) -> Result<(), H2Error> {
        let s = &mut self.open[i];
        if !s.head {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("DATA before the response head on stream {}", s.id),
            ));
        }
        s.credit -= len as i64;
        if s.credit < 0 {
            return Err(fail(
                code::FLOW_CONTROL_ERROR,
                format_args!(
                    "the server sent {} bytes of DATA beyond stream {}'s window of {}",
                    -s.credit, s.id, self.window
                ),
            ));
        }
        s.unacked += len;
        if !ends && s.unacked >= self.update_at {
            let (id, inc) = (s.id, s.unacked as u32);
            s.unacked = 0;
            self.grant(id, inc);
        }
        Ok(())
    }

    /// The server ended the `i`th open stream: the response is complete, unless its DATA
    /// disagrees with its content-length.
    pub(super) fn end_stream(&mut self, i: usize, on: &mut impl FnMut(Event)) {
        let s = &self.open[i];
        match s.length {
            Length::Declared(n) if n != s.received => {
                let why = format!("a content-length of {n} and {} bytes of DATA", s.received);
                self.malformed(i, true, why, on);
            }
            _ => {
                let stream = s.id;
                if let Some(w) = self.open[i].watch.take() {
                    let (failed, offered, recorded) = w.finish();
                    self.recorded = recorded;
                    on(Event::Checked {
                        stream,
                        failed,
                        offered,
                    });
                }
                self.close(stream);
                on(Event::End { stream });
            }
        }
    }

    /// The `i`th open stream's response is malformed: the stream is reset unless the server
    /// `ended` it, and forgotten.
    pub(super) fn malformed(
        &mut self,
        i: usize,
        ended: bool,
        reason: String,
        on: &mut impl FnMut(Event),
    ) {
        let stream = self.open[i].id;
        if !ended {
            frame::rst_stream(&mut self.out, stream, code::PROTOCOL_ERROR);
        }
        self.close(stream);
        on(Event::Malformed { stream, reason });
    }
}

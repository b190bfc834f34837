//! Connection control frames: the server's SETTINGS (stream limit, windows, frame size),
//! PING, RST_STREAM, GOAWAY and WINDOW_UPDATE, with acknowledgements queued in `out` and
//! bounded (SETTINGS and PING floods).

use super::*;

impl H2Conn {
    pub(super) fn settings(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        if h.has(flags::ACK) {
            return Self::on_connection(&h, p, Some(0));
        }
        Self::on_connection(&h, p, None)?;
        if !p.len().is_multiple_of(6) {
            return Err(fail(
                code::FRAME_SIZE_ERROR,
                format_args!("a SETTINGS frame of {} bytes, not a multiple of 6", p.len()),
            ));
        }
        let mut initial_window = None;
        for s in p.chunks(6) {
            let id = u16::from_be_bytes([s[0], s[1]]);
            let v = u32::from_be_bytes([s[2], s[3], s[4], s[5]]);
            self.setting(id, v, &mut initial_window)?;
        }
        if let Some(v) = initial_window {
            self.initial_window(v)?;
        }
        self.settings_seen = true;
        self.queue_ack(Kind::Settings, &[])?;
        on(Event::Settings {
            max_streams: self.max_streams,
        });
        self.send_bodies();
        self.send_tunnel();
        Ok(())
    }

    /// One setting; SETTINGS_INITIAL_WINDOW_SIZE is only noted (applied once per frame, so
    /// a frame full of them costs no more than one).
    pub(super) fn setting(
        &mut self,
        id: u16,
        v: u32,
        initial: &mut Option<u32>,
    ) -> Result<(), H2Error> {
        match id {
            setting::ENABLE_PUSH if v > 1 => Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("SETTINGS_ENABLE_PUSH {v}, not 0 or 1"),
            )),
            setting::MAX_CONCURRENT_STREAMS => {
                self.max_streams = v;
                Ok(())
            }
            setting::INITIAL_WINDOW_SIZE if v > frame::MAX_WINDOW => Err(fail(
                code::FLOW_CONTROL_ERROR,
                format_args!("SETTINGS_INITIAL_WINDOW_SIZE {v}, over 2^31 - 1"),
            )),
            setting::INITIAL_WINDOW_SIZE => {
                *initial = Some(v);
                Ok(())
            }
            setting::MAX_FRAME_SIZE
                if !(frame::DEFAULT_MAX_FRAME..=frame::MAX_FRAME_LIMIT).contains(&v) =>
            {
                Err(fail(
                    code::PROTOCOL_ERROR,
                    format_args!("SETTINGS_MAX_FRAME_SIZE {v}, outside 16,384 to 2^24 - 1"),
                ))
            }
            setting::MAX_FRAME_SIZE => {
                self.max_frame = v as usize;
                Ok(())
            }
            setting::ENABLE_CONNECT_PROTOCOL if v > 1 => Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("SETTINGS_ENABLE_CONNECT_PROTOCOL {v}, not 0 or 1"),
            )),
            setting::ENABLE_CONNECT_PROTOCOL => {
                self.connect_protocol = v == 1;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The server's new initial stream window: the windows of streams still sending change
    /// by the difference (RFC 9113 §6.9.2).
    pub(super) fn initial_window(&mut self, v: u32) -> Result<(), H2Error> {
        let delta = i64::from(v) - self.peer_initial_window;
        self.peer_initial_window = i64::from(v);
        let tunnel = self.tunnel.as_mut().map(|t| (t.stream, &mut t.window));
        let pending = self.pending.iter_mut().map(|p| (p.stream, &mut p.window));
        for (stream, window) in pending.chain(tunnel) {
            *window += delta;
            if *window > i64::from(frame::MAX_WINDOW) {
                return Err(fail(
                    code::FLOW_CONTROL_ERROR,
                    format_args!(
                        "SETTINGS_INITIAL_WINDOW_SIZE {v} takes stream {stream}'s window over 2^31 - 1"
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn ping(&mut self, h: Header, p: &[u8]) -> Result<(), H2Error> {
        Self::on_connection(&h, p, Some(8))?;
        if h.has(flags::ACK) {
            return Ok(());
        }
        self.queue_ack(Kind::Ping, p)
    }

    /// Queues an acknowledgement, refusing a server that makes them pile up faster than
    /// they are written.
    pub(super) fn queue_ack(&mut self, kind: Kind, payload: &[u8]) -> Result<(), H2Error> {
        frame::write(&mut self.out, kind, flags::ACK, 0, payload);
        while self.acks.front().is_some_and(|end| *end <= self.written) {
            self.acks.pop_front();
        }
        self.acks.push_back(self.written + self.out.len() as u64);
        if self.acks.len() > MAX_QUEUED_ACKS {
            return Err(fail(
                code::ENHANCE_YOUR_CALM,
                format_args!(
                    "a SETTINGS or PING flood: over {MAX_QUEUED_ACKS} acknowledgements wait to be written"
                ),
            ));
        }
        Ok(())
    }

    pub(super) fn rst_stream(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        self.on_client_stream(&h)?;
        let code = u32_at(p, 0).filter(|_| p.len() == 4).ok_or_else(|| {
            fail(
                code::FRAME_SIZE_ERROR,
                format_args!("an RST_STREAM frame of {} bytes, not 4", p.len()),
            )
        })?;
        if self.close(h.stream) {
            on(Event::Reset {
                stream: h.stream,
                code,
            });
        }
        Ok(())
    }

    /// GOAWAY: no new streams; the open ones above its last stream were not processed and
    /// are forgotten here (the caller sends them again elsewhere), so no event names them.
    pub(super) fn goaway(
        &mut self,
        h: Header,
        p: &[u8],
        on: &mut impl FnMut(Event),
    ) -> Result<(), H2Error> {
        Self::on_connection(&h, p, None)?;
        let (Some(last), Some(code)) = (u32_at(p, 0), u32_at(p, 4)) else {
            return Err(fail(
                code::FRAME_SIZE_ERROR,
                format_args!("a GOAWAY frame of {} bytes, under 8", p.len()),
            ));
        };
        let last_stream = last & frame::MAX_WINDOW;
        self.goaway = true;
        self.open.retain(|s| s.id <= last_stream);
        self.pending.retain(|p| p.stream <= last_stream);
        if let Some(t) = self.tunnel.as_mut().filter(|t| t.stream > last_stream) {
            t.close();
        }
        on(Event::GoAway { last_stream, code });
        Ok(())
    }

    pub(super) fn window_update(&mut self, h: Header, p: &[u8]) -> Result<(), H2Error> {
        if h.stream != 0 {
            self.on_client_stream(&h)?;
        }
        let inc = u32_at(p, 0).filter(|_| p.len() == 4).ok_or_else(|| {
            fail(
                code::FRAME_SIZE_ERROR,
                format_args!("a WINDOW_UPDATE frame of {} bytes, not 4", p.len()),
            )
        })? & frame::MAX_WINDOW;
        if inc == 0 {
            return Err(fail(
                code::PROTOCOL_ERROR,
                format_args!("a WINDOW_UPDATE of 0 on stream {}", h.stream),
            ));
        }
        let window = if h.stream == 0 {
            Some(&mut self.send_window)
        } else if let Some(t) = self.tunnel.as_mut().filter(|t| t.stream == h.stream) {
            Some(&mut t.window)
        } else {
            self.pending
                .iter_mut()
                .find(|p| p.stream == h.stream)
                .map(|p| &mut p.window)
        };
        if let Some(w) = window {
            *w += i64::from(inc);
            if *w > i64::from(frame::MAX_WINDOW) {
                return Err(fail(
                    code::FLOW_CONTROL_ERROR,
                    format_args!(
                        "a WINDOW_UPDATE of {inc} takes stream {}'s send window over 2^31 - 1",
                        h.stream
                    ),
                ));
            }
        }
        self.send_bodies();
        self.send_tunnel();
        Ok(())
    }
}

//! What opening connections cost and what TLS negotiated, per worker and merged: the connect
//! and handshake times as histograms of their own (never inside request latency), and how many
//! handshakes resumed a session. Every connection of the run counts, warm-up included: with
//! keep-alive the connections are opened before the measured window.

use super::histogram::{new_hist, record, Hist};

/// What a TLS handshake settled (the first one seen stands for the run).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TlsSeen {
    /// `TLSv1.3`, `TLSv1.2`.
    pub version: Option<String>,
    /// The cipher suite, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: Option<String>,
    /// The ALPN protocol the server chose, if any.
    pub alpn: Option<String>,
}

/// Connection set-up of one worker, or of the run once merged.
#[derive(Debug, Default, Clone)]
pub struct TransportStats {
    /// µs from `connect()` to the socket being connected.
    pub connect: Option<Hist>,
    /// µs from the socket being connected (or its proxy tunnel open) to the TLS handshake's
    /// end.
    pub handshake: Option<Hist>,
    /// Through a proxy: µs from the `CONNECT` written to the proxy's 2xx answer (the proxy
    /// connecting to the target).
    pub tunnel: Option<Hist>,
    /// Finished TLS handshakes.
    pub handshakes: u64,
    /// Those that resumed a session.
    pub resumed: u64,
    /// What the first finished handshake negotiated.
    pub tls: Option<TlsSeen>,
    /// Connections that spoke HTTP/2.
    pub h2_connections: u64,
    /// The smallest SETTINGS_MAX_CONCURRENT_STREAMS a server sent (`None`: it set no limit).
    pub h2_max_streams: Option<u32>,
    /// GOAWAY frames received.
    pub h2_goaways: u64,
    /// Connections that spoke HTTP/3 (QUIC handshakes done).
    pub h3_connections: u64,
    /// Packets QUIC declared lost, and sent, on those connections (counted as each closes).
    pub quic_lost_packets: u64,
    /// Packets QUIC sent on them.
    pub quic_sent_packets: u64,
    /// `--0rtt`: QUIC handshakes whose requests went as early data, and those the server
    /// accepted it on.
    pub zero_rtt_offered: u64,
    /// Of those, the ones whose early data the server accepted.
    pub zero_rtt_accepted: u64,
    /// `ws://`, `wss://`: what the WebSocket connections met.
    pub ws: WsCounts,
    /// `--grpc`: the calls' `grpc-status` codes.
    pub grpc: GrpcCounts,
}

/// The `grpc-status` of a run's gRPC calls that ended (docs/contract.md, "gRPC"), warm-up
/// included.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct GrpcCounts {
    /// Calls by code (RFC-less: gRPC's `Code`, 0 OK); a response without one counts as 2,
    /// UNKNOWN.
    pub codes: std::collections::BTreeMap<u16, u64>,
    /// The first call that did not end OK: its code and message, for the summary.
    pub first_error: Option<String>,
}

impl GrpcCounts {
    /// A call ended with `code` (`None`: no `grpc-status` came) and `message`.
    pub fn ended(&mut self, code: Option<u16>, message: Option<&[u8]>) {
        let c = code.unwrap_or(2);
        *self.codes.entry(c).or_default() += 1;
        if c != 0 && self.first_error.is_none() {
            let text = match (code, message) {
                (None, _) => "a response without grpc-status".to_string(),
                (Some(_), Some(m)) => String::from_utf8_lossy(m).into_owned(),
                (Some(_), None) => String::new(),
            };
            self.first_error = Some(match text.as_str() {
                "" => format!("{c} {}", code_name(c)),
                t => format!("{c} {}: {t}", code_name(c)),
            });
        }
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, o: &GrpcCounts) {
        for (code, n) in &o.codes {
            *self.codes.entry(*code).or_default() += n;
        }
        if self.first_error.is_none() {
            self.first_error = o.first_error.clone();
        }
    }
}

/// gRPC's name of status `code` (grpc/doc/statuscodes.md).
pub fn code_name(code: u16) -> &'static str {
    const NAMES: [&str; 17] = [
        "OK",
        "CANCELLED",
        "UNKNOWN",
        "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED",
        "NOT_FOUND",
        "ALREADY_EXISTS",
        "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED",
        "FAILED_PRECONDITION",
        "ABORTED",
        "OUT_OF_RANGE",
        "UNIMPLEMENTED",
        "INTERNAL",
        "UNAVAILABLE",
        "DATA_LOSS",
        "UNAUTHENTICATED",
    ];
    NAMES
        .get(code as usize)
        .copied()
        .unwrap_or("(not a gRPC code)")
}

/// What a run's WebSocket connections met (docs/contract.md, "WebSocket"), warm-up included.
#[derive(Debug, Default, Clone)]
pub struct WsCounts {
    /// Upgrades the server accepted (101).
    pub upgrades: u64,
    /// µs from the upgrade request written to its 101 (the handshake of the WebSocket).
    pub upgrade: Option<Hist>,
    /// Messages the server sent that answered none of volley's (none was waiting).
    pub server_messages: u64,
    /// Pings the server sent (each answered with a pong).
    pub pings: u64,
    /// Close frames the server sent, by status code (1005: a close without a code).
    pub close_codes: std::collections::BTreeMap<u16, u64>,
    /// The first close frame's code and reason, for the summary.
    pub close_sample: Option<String>,
}

impl WsCounts {
    /// An upgrade that took `us` µs.
    pub fn upgraded(&mut self, us: u64) {
        self.upgrades += 1;
        record(self.upgrade.get_or_insert_with(new_hist), us);
    }

    /// Adds another worker's counts.
    pub fn merge(&mut self, o: &WsCounts) {
        self.upgrades += o.upgrades;
        if let Some(t) = &o.upgrade {
            match &mut self.upgrade {
                Some(m) => {
                    let _ = m.add(t);
                }
                None => self.upgrade = Some(t.clone()),
            }
        }
        self.server_messages += o.server_messages;
        self.pings += o.pings;
        for (code, n) in &o.close_codes {
            *self.close_codes.entry(*code).or_default() += n;
        }
        if self.close_sample.is_none() {
            self.close_sample = o.close_sample.clone();
        }
    }
}

impl TransportStats {
    /// A connect that took `us` µs.
    pub fn connected(&mut self, us: u64) {
        record(self.connect.get_or_insert_with(new_hist), us);
    }

    /// A proxy's `CONNECT` that took `us` µs to open its tunnel.
    pub fn tunneled(&mut self, us: u64) {
        record(self.tunnel.get_or_insert_with(new_hist), us);
    }

    /// A TLS handshake that took `us` µs and negotiated `seen`.
    pub fn handshake_done(&mut self, us: u64, resumed: bool, seen: impl FnOnce() -> TlsSeen) {
        record(self.handshake.get_or_insert_with(new_hist), us);
        self.handshakes += 1;
        self.resumed += u64::from(resumed);
        if self.tls.is_none() {
            self.tls = Some(seen());
        }
    }

    /// The server's SETTINGS on an HTTP/2 connection, with its stream limit (`u32::MAX`: none).
    pub fn h2_settings(&mut self, max_streams: u32) {
        if max_streams != u32::MAX {
            let m = self.h2_max_streams.get_or_insert(max_streams);
            *m = (*m).min(max_streams);
        }
    }

    /// Adds another worker's numbers.
    pub fn merge(&mut self, o: &TransportStats) {
        for (mine, theirs) in [
            (&mut self.connect, &o.connect),
            (&mut self.handshake, &o.handshake),
            (&mut self.tunnel, &o.tunnel),
        ] {
            if let Some(t) = theirs {
                match mine {
                    Some(m) => {
                        let _ = m.add(t);
                    }
                    None => *mine = Some(t.clone()),
                }
            }
        }
        self.handshakes += o.handshakes;
        self.resumed += o.resumed;
        self.h2_connections += o.h2_connections;
        self.h3_connections += o.h3_connections;
        self.quic_lost_packets += o.quic_lost_packets;
        self.quic_sent_packets += o.quic_sent_packets;
        self.zero_rtt_offered += o.zero_rtt_offered;
        self.zero_rtt_accepted += o.zero_rtt_accepted;
        self.h2_goaways += o.h2_goaways;
        self.ws.merge(&o.ws);
        self.grpc.merge(&o.grpc);
        if let Some(m) = o.h2_max_streams {
            self.h2_settings(m);
        }
        if self.tls.is_none() {
            self.tls = o.tls.clone();
        }
    }

    /// Share of handshakes that resumed a session; `None` without handshakes.
    pub fn resumed_fraction(&self) -> Option<f64> {
        (self.handshakes > 0).then(|| self.resumed as f64 / self.handshakes as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn workers_merge_into_one_run() {
        let mut a = TransportStats::default();
        a.connected(100);
        a.handshake_done(900, false, || TlsSeen {
            version: Some("TLSv1.3".into()),
            ..TlsSeen::default()
        });
        let mut b = TransportStats::default();
        b.connected(300);
        b.handshake_done(200, true, TlsSeen::default);
        b.handshake_done(250, true, TlsSeen::default);
        let mut run = TransportStats::default();
        run.merge(&a);
        run.merge(&b);
        assert_eq!(run.connect.as_ref().unwrap().len(), 2);
        assert_eq!(run.handshake.as_ref().unwrap().len(), 3);
        assert_eq!(run.resumed_fraction(), Some(2.0 / 3.0));
        assert_eq!(run.tls.unwrap().version.as_deref(), Some("TLSv1.3"));
        assert_eq!(TransportStats::default().resumed_fraction(), None);
    }
}

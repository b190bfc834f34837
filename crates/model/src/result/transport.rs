//! What a result records of the transport (docs/contract.md, "HTTPS and Unix sockets"): the
//! negotiated TLS parameters in `target.tls`, and the connect and TLS handshake times as
//! blocks of their own beside the request latencies.

use serde::{Deserialize, Serialize};

use crate::stats::histogram::{decode, encode, sum, Hist};
use crate::stats::Percentiles;

/// `target.tls`: what the run's TLS handshakes negotiated (the first one stands for all).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TlsInfo {
    /// `TLSv1.3` or `TLSv1.2`.
    pub version: Option<String>,
    /// The cipher suite, e.g. `TLS13_AES_256_GCM_SHA384`.
    pub cipher: Option<String>,
    /// The protocol the server chose by ALPN (`http/1.1`), null when it chose none.
    pub alpn: Option<String>,
    /// Share of the handshakes that resumed a session (null without handshakes).
    pub resumed_fraction: Option<f64>,
    /// Handshakes made (warm-up included).
    #[serde(default)]
    pub handshakes: u64,
    /// `-k/--insecure`: the server's certificate was not verified.
    #[serde(default)]
    pub insecure: bool,
    /// Sessions were resumed on reconnects (false with `--no-tls-resume`).
    #[serde(default = "yes")]
    pub resumption: bool,
    /// A client certificate was presented (`--cert`).
    #[serde(default)]
    pub client_cert: bool,
}

fn yes() -> bool {
    true
}

/// How long opening connections took, kept apart from request latency: `connect_us` (TCP or
/// Unix connect) and `tls_handshake_us` (from the connected socket to the handshake's end),
/// null when there were none; their histograms make `merge` exact.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SetupTimes {
    /// Connect times.
    #[serde(default)]
    pub connect_us: Option<Percentiles>,
    /// TLS handshake times.
    #[serde(default)]
    pub tls_handshake_us: Option<Percentiles>,
    /// `connect_us`'s histogram (HdrHistogram V2 compressed, base64).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connect_hdr: Option<String>,
    /// `tls_handshake_us`'s histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_handshake_hdr: Option<String>,
    /// Through a proxy's tunnel: from the `CONNECT` written to its 2xx answer (absent
    /// without a tunnel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_connect_us: Option<Percentiles>,
    /// `proxy_connect_us`'s histogram.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy_connect_hdr: Option<String>,
}

/// `target.proxy`: the proxy a run went through (docs/contract.md, "Proxies").
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProxyInfo {
    /// Its URL, user information redacted.
    pub url: String,
    /// `tunnel` (`CONNECT`) or `forward` (HTTP/1.1 requests in absolute form).
    pub mode: String,
    /// `flag` (`--proxy`) or `env` (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`).
    pub source: String,
}

impl SetupTimes {
    /// From the run's histograms.
    pub fn of(connect: Option<&Hist>, handshake: Option<&Hist>) -> Self {
        SetupTimes {
            connect_us: connect.map(Percentiles::of),
            tls_handshake_us: handshake.map(Percentiles::of),
            connect_hdr: connect.map(encode),
            tls_handshake_hdr: handshake.map(encode),
            proxy_connect_us: None,
            proxy_connect_hdr: None,
        }
    }

    /// With the proxy tunnels' times.
    pub fn with_tunnel(mut self, tunnel: Option<&Hist>) -> Self {
        self.proxy_connect_us = tunnel.map(Percentiles::of);
        self.proxy_connect_hdr = tunnel.map(encode);
        self
    }

    /// Several runs' set-up times added (`merge`): exact when every input kept the histogram;
    /// when some did not (results written before HTTPS, or with nothing to measure: a `None`
    /// cannot tell them apart), the block is left out rather than shown for part of the load.
    pub fn add(all: &[&SetupTimes]) -> Self {
        let added = |get: fn(&SetupTimes) -> Option<&String>| -> Option<Hist> {
            let present: Vec<&String> = all.iter().filter_map(|s| get(s)).collect();
            if present.is_empty() || present.len() < all.len() {
                return None;
            }
            let hists: Result<Vec<Hist>, _> = present.iter().map(|h| decode(h)).collect();
            hists.ok().map(|h| sum(&h))
        };
        let connect = added(|s| s.connect_hdr.as_ref());
        let handshake = added(|s| s.tls_handshake_hdr.as_ref());
        let tunnel = added(|s| s.proxy_connect_hdr.as_ref());
        Self::of(connect.as_ref(), handshake.as_ref()).with_tunnel(tunnel.as_ref())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::new_hist;

    #[test]
    fn merged_setup_times_are_exact() {
        let mut a = new_hist();
        a.record(100).unwrap();
        let mut b = new_hist();
        b.record(300).unwrap();
        let sa = SetupTimes::of(Some(&a), None);
        let sb = SetupTimes::of(Some(&b), None);
        let m = SetupTimes::add(&[&sa, &sb]);
        let c = m.connect_us.unwrap();
        assert_eq!((c.min, c.max), (Some(100), Some(300)));
        assert!(m.tls_handshake_us.is_none());
        assert_eq!(SetupTimes::add(&[]), SetupTimes::default());
        // A shard without the histogram: no block, not a block for part of the load.
        let old = SetupTimes::default();
        assert!(SetupTimes::add(&[&sa, &old]).connect_us.is_none());
    }
}

/// `target.quic`: the QUIC connections of an HTTP/3 run (`--http3`; docs/contract.md, "HTTP/3").
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuicInfo {
    /// The QUIC version (1, RFC 9000).
    pub version: u32,
    /// Connections whose handshake finished (warm-up and reconnects included).
    pub connections: u64,
    /// Request streams in flight per connection at most (`--streams`).
    pub streams_per_connection: u64,
    /// Packets volley sent on them.
    pub sent_packets: u64,
    /// Of those, packets QUIC declared lost (and sent again what they carried).
    pub lost_packets: u64,
    /// GOAWAY frames the server sent on its control streams (absent in older results).
    #[serde(default)]
    pub goaways: u64,
    /// `--0rtt`: how the early data went (null without the flag).
    #[serde(default)]
    pub zero_rtt: Option<ZeroRtt>,
}

/// `target.quic.zero_rtt`: QUIC handshakes that sent their requests as early data (0-RTT), of
/// all the run's handshakes (`target.tls.handshakes`; the first ones have no session to resume).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ZeroRtt {
    /// Handshakes whose requests went as early data (on a resumed session).
    pub offered: u64,
    /// Of those, the ones whose early data the server accepted; on the others the requests went
    /// again after the handshake (their latency includes the refused round trip).
    pub accepted: u64,
}

/// `target.websocket`: the WebSocket connections of a `ws://` or `wss://` run (docs/contract.md,
/// "WebSocket"); each of the run's requests is a message, its response the server's next one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct WsInfo {
    /// Frames of the messages: `text` or `binary` (`--ws-binary`).
    pub message_type: String,
    /// Each message's payload, in bytes.
    pub message_bytes: u64,
    /// What carries the WebSocket: `http/1.1` (an upgraded connection), or a stream of an
    /// HTTP/2 connection (RFC 8441's extended CONNECT): `h2` over TLS, `h2c` in cleartext.
    /// Results written before WebSocket over HTTP/2 read as `http/1.1`.
    #[serde(default = "http1")]
    pub over: String,
    /// Upgrades the server accepted: 101s, or over HTTP/2 2xx answers to the extended
    /// CONNECT (warm-up and reconnects included).
    pub upgrades: u64,
    /// Mean µs from the upgrade request (or CONNECT) to its 101 (or 2xx); null without one.
    pub upgrade_mean_us: Option<f64>,
    /// Messages the server sent that answered none of volley's.
    pub server_messages: u64,
    /// Pings the server sent, each answered with a pong.
    pub pings: u64,
    /// Close frames the server sent, by status code (`"1005"`: one without a code).
    pub close_codes: std::collections::BTreeMap<String, u64>,
    /// The first of them: its code and reason, e.g. `1011 (internal error)` (null: none).
    #[serde(default)]
    pub first_close: Option<String>,
}

/// What carried WebSockets before they could go over HTTP/2.
fn http1() -> String {
    "http/1.1".to_string()
}

/// `target.grpc`: the gRPC calls of a `--grpc` run (docs/contract.md, "gRPC"); each of the
/// run's requests is a unary call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GrpcInfo {
    /// `pkg.Service/Method`.
    pub method: String,
    /// The request message's encoded length, without gRPC's 5-byte prefix.
    pub message_bytes: u64,
    /// Calls by `grpc-status` code (`"0"`: OK; a response without one counts as `"2"`).
    pub status_codes: std::collections::BTreeMap<String, u64>,
    /// The first call that did not end OK: `CODE NAME: message` (null: none).
    #[serde(default)]
    pub first_error: Option<String>,
}

//! `target`: what a run loaded — the URL and address, the protocol spoken and what each
//! protocol's connections met (docs/contract.md, "RunResult keys").

use serde::{Deserialize, Serialize};

use super::{GrpcInfo, H2Info, ProxyInfo, QuicInfo, RequestsFileInfo, TlsInfo, WsInfo};

/// Target of the run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TargetInfo {
    /// URL as given.
    pub url: String,
    /// Address used for the whole run.
    pub addr: String,
    /// HTTP method.
    pub method: String,
    /// Request body size.
    pub body_bytes: u64,
    /// The HTTP protocol spoken: `http/1.1`, `h2` (over TLS), `h2c` or `h3` (absent in results
    /// written before HTTPS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// HTTP/2: what the server's SETTINGS and GOAWAYs did to the load; null on HTTP/1.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h2: Option<H2Info>,
    /// HTTP/3: its QUIC connections; absent on other protocols.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub quic: Option<QuicInfo>,
    /// `ws://`, `wss://`: its WebSocket connections; absent on other URLs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub websocket: Option<WsInfo>,
    /// `--grpc`: its calls' gRPC statuses; absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grpc: Option<GrpcInfo>,
    /// What TLS negotiated; null for cleartext (absent in results written before HTTPS).
    #[serde(default)]
    pub tls: Option<TlsInfo>,
    /// `--unix-socket`: the socket connected to (then `addr` is `unix:` and its path).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unix_socket: Option<String>,
    /// Through a proxy (`--proxy`, or the environment's): which, and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proxy: Option<ProxyInfo>,
    /// `--requests-file`: the workload loaded instead of one request (then `method` is the
    /// first request's and `body_bytes` 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_file: Option<RequestsFileInfo>,
}

//! The load spec: what to send, when, and over how many connections — everything the engine
//! needs and nothing about where results go. `config` builds it from flags or a suite cell;
//! the engine and the plan read it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use volley_model::words;

use super::proxy::{Proxy, ProxyMode};
use super::ramp::Ramp;
use volley_model::result::Arrivals;
use volley_model::units::StageSpec;

/// Where requests go: the URL split into what the socket and the request line need.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The URL as given.
    pub url: String,
    /// Host name or address literal (without brackets).
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// Path and query sent on the request line.
    pub path: String,
    /// Value of the Host header.
    pub host_header: String,
    /// `http` or `https`.
    pub scheme: Scheme,
    /// `--unix-socket`: connect to this socket instead of `host:port` (the URL still gives
    /// the Host header, the path and the scheme).
    pub unix_socket: Option<PathBuf>,
    /// `--proxy` (or the environment's): connect to the proxy instead (docs/contract.md,
    /// "Proxies").
    pub proxy: Option<Proxy>,
}

impl Target {
    /// `http://ADDR/PATH` at a socket address: a target named by a program that embeds the
    /// engine (volley's commands parse URLs in `config`).
    pub fn http(addr: std::net::SocketAddr, path: &str) -> Target {
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        Target {
            url: format!("http://{addr}{path}"),
            host: addr.ip().to_string(),
            port: addr.port(),
            path,
            host_header: addr.to_string(),
            scheme: Scheme::Http,
            unix_socket: None,
            proxy: None,
        }
    }

    /// `host:port` as a `CONNECT` names it (the port always given).
    pub fn authority(&self) -> String {
        super::proxy::authority(&self.host, self.port)
    }

    /// A proxy that forwards requests wants each request line to name the absolute URL: the
    /// `http://host[:port]` that goes before the path then.
    pub fn forward_origin(&self) -> Option<String> {
        let p = self.proxy.as_ref()?;
        (p.mode == ProxyMode::Forward)
            .then(|| format!("{}://{}", self.scheme.as_str(), self.host_header))
    }

    /// A forwarding proxy's `Proxy-Authorization` value: sent with every request (a tunnel's
    /// goes with its `CONNECT` only).
    pub fn forward_authorization(&self) -> Option<&str> {
        let p = self.proxy.as_ref()?;
        (p.mode == ProxyMode::Forward)
            .then_some(p.authorization.as_deref())
            .flatten()
    }
}

words! {
    /// The URL's scheme.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Scheme {
        /// Cleartext HTTP.
        Http = "http",
        /// HTTP over TLS.
        Https = "https",
        /// WebSocket (RFC 6455): an HTTP/1.1 upgrade, then messages.
        Ws = "ws",
        /// WebSocket over TLS.
        Wss = "wss",
    }
}

impl Scheme {
    /// The port a URL without one means.
    pub fn default_port(self) -> u16 {
        match self {
            Scheme::Http | Scheme::Ws => 80,
            Scheme::Https | Scheme::Wss => 443,
        }
    }

    /// Whether the connection is encrypted (`https://`, `wss://`).
    pub fn is_tls(self) -> bool {
        matches!(self, Scheme::Https | Scheme::Wss)
    }

    /// Whether the URL is a WebSocket's (`ws://`, `wss://`).
    pub fn is_websocket(self) -> bool {
        matches!(self, Scheme::Ws | Scheme::Wss)
    }

    /// The HTTP scheme the connection starts with (a WebSocket's upgrade is HTTP/1.1's).
    pub fn http(self) -> Scheme {
        match self {
            Scheme::Ws => Scheme::Http,
            Scheme::Wss => Scheme::Https,
            s => s,
        }
    }
}

/// `--grpc`: a unary gRPC call per request (docs/contract.md, "gRPC"); the request's path,
/// fields and framed message are the run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GrpcSpec {
    /// `pkg.Service/Method`.
    pub method: String,
    /// `/pkg.Service/Method`.
    pub path: String,
    /// The encoded message's length, without gRPC's 5-byte prefix.
    pub message_bytes: u64,
}

/// `ws://` and `wss://` URLs: what each connection sends once upgraded (docs/contract.md,
/// "WebSocket"). The message's payload is the run's body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WsSpec {
    /// `--ws-binary`: messages are binary frames (text frames otherwise).
    pub binary: bool,
}

/// Which HTTP a run speaks (docs/contract.md, "HTTP/2").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HttpVersion {
    /// HTTP/1.1: `http://` URLs, and `https://` with `--http1.1`.
    Http1,
    /// `https://` by default: HTTP/2 when the server chooses `h2` by ALPN, else HTTP/1.1.
    Negotiate,
    /// `--http2` on `https://`: HTTP/2, which the server must choose by ALPN.
    H2,
    /// `--h2c`: HTTP/2 in cleartext with prior knowledge.
    H2c,
    /// `--http3` on `https://`: HTTP/3 over QUIC (UDP).
    H3,
}

impl HttpVersion {
    /// Whether the run may (or must) speak HTTP/2.
    pub fn may_be_h2(self) -> bool {
        !matches!(self, HttpVersion::Http1 | HttpVersion::H3)
    }

    /// Whether requests may go as concurrent streams of a connection (`--streams`): HTTP/2
    /// or HTTP/3.
    pub fn multiplexed(self) -> bool {
        self.may_be_h2() || self == HttpVersion::H3
    }
}

/// HTTP/2 settings of a run that may speak it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct H2Spec {
    /// Concurrent streams per connection (`--streams`), before the server's limit.
    pub streams: usize,
    /// Receive window announced per stream and for the connection (`--h2-window`).
    pub window: u32,
}

pub use volley_model::result::DEFAULT_H2_WINDOW;

/// How an `https://` run sets up TLS (docs/contract.md, "HTTPS").
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsSpec {
    /// Verify the server's certificate (`-k/--insecure` turns it off).
    pub verify: bool,
    /// `--cacert`: more trusted roots, besides the system's.
    pub cacert: Option<PathBuf>,
    /// `--cert`: the client certificate chain.
    pub cert: Option<PathBuf>,
    /// `--key`: its private key (`None`: in the `--cert` file).
    pub key: Option<PathBuf>,
    /// Resume TLS sessions on reconnects (`--no-tls-resume` turns it off).
    pub resume: bool,
    /// `--0rtt` (HTTP/3): requests go as early data on resumed connections.
    pub early_data: bool,
}

/// A virtual-user run: the schedule and how it was asked for.
#[derive(Debug, Clone)]
pub struct RampSpec {
    /// Users over time.
    pub ramp: Ramp,
    /// `--users`, when given.
    pub users: Option<u64>,
    /// `--spawn-rate`, when given.
    pub spawn_rate: Option<f64>,
    /// `--stages`, when given.
    pub stages: Option<Vec<StageSpec>>,
}

/// One load, validated.
#[derive(Debug, Clone)]
pub struct LoadSpec {
    /// The target.
    pub target: Target,
    /// Connections (capped at `-n`; the most users with a ramp).
    pub connections: usize,
    /// Open loop: the most connections it may open on demand (`--max-connections`).
    pub max_connections: Option<usize>,
    /// Worker threads = min(-t, the most connections).
    pub threads: usize,
    /// Measured send window; `None` with `-n`.
    pub duration: Option<Duration>,
    /// Total measured requests (`-n`).
    pub requests: Option<u64>,
    /// Open-loop rate in requests per second; `None` is closed loop. With `rate_stages`, their
    /// mean (requests due ÷ their length).
    pub rate_rps: Option<f64>,
    /// `--rate-stages`: the open loop's rate changes with time (then `rate_rps` is its mean and
    /// `duration` the stages' length).
    pub rate_stages: Option<Arc<super::rate::RateStages>>,
    /// Arrival process of the open loop.
    pub arrivals: Arrivals,
    /// RNG seed for Poisson arrivals as given (`--seed`); `None`: one from the clock per run.
    pub seed: Option<u64>,
    /// Warm-up excluded from statistics.
    pub warmup: Duration,
    /// HTTP method.
    pub method: String,
    /// User headers in order, as given.
    pub headers: Vec<(String, String)>,
    /// Request body, shared: a suite's cells that send the same body hold it once, and a
    /// cell's config is cloned for every repetition without copying it.
    pub body: Arc<[u8]>,
    /// Reuse connections (default) or one connection per request.
    pub keepalive: bool,
    /// Requests outstanding per connection.
    pub pipeline: usize,
    /// Per-request timeout from the write.
    pub timeout: Duration,
    /// Pause between a response and the connection's next request.
    pub think_time: Duration,
    /// Virtual-user ramp (`--users` / `--stages`); `None` for plain closed or open loop.
    pub ramp: Option<RampSpec>,
    /// TLS settings; `Some` exactly for `https://` targets.
    pub tls: Option<TlsSpec>,
    /// Which HTTP the run speaks.
    pub http: HttpVersion,
    /// HTTP/2 streams and window (used when the run speaks HTTP/2).
    pub h2: H2Spec,
    /// `--requests-file`: the requests to mix or walk instead of `method`, path and `body`
    /// (docs/contract.md, "Workloads"); `None`: the one request of the flags.
    pub workload: Option<Arc<super::workload::Workload>>,
    /// `--expect-*`: what every response must be (a requests file's entries carry them
    /// merged with their own).
    pub checks: super::workload::Checks,
    /// `--verify`: send each request once and show what came back before the load.
    pub verify: bool,
    /// `--shard I/N`: this run is shard I of N of the load the rest describes (the whole
    /// load's numbers stay here; [`LoadSpec::shard_share`] is this shard's part).
    pub shard: Option<super::shard::ShardSpec>,
    /// How the engine waits for and moves bytes (`--io`).
    pub io: IoChoice,
    /// `ws://` and `wss://`: each request is a message on an upgraded connection.
    pub ws: Option<WsSpec>,
    /// `--grpc`: each request is a unary gRPC call.
    pub grpc: Option<GrpcSpec>,
}

/// `--io`: the engine's I/O backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum IoChoice {
    /// io_uring where this kernel and process allow it, else epoll (with a note).
    #[default]
    Auto,
    /// io_uring, or an error.
    Uring,
    /// epoll.
    Epoll,
}

pub use volley_model::result::IoBackend;

impl LoadSpec {
    /// A closed loop: `connections` keep-alive connections, on as many threads as there are
    /// CPUs (at most one per connection), each sending `GET` as soon as its last response
    /// arrived, for `duration`; every other setting is `volley run`'s default. Set the fields
    /// for the rest (`rate_rps` for an open loop, `method`, `headers`, `body`, …).
    pub fn closed_loop(target: Target, connections: usize, duration: Duration) -> LoadSpec {
        let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        LoadSpec {
            target,
            connections,
            max_connections: None,
            threads: cpus.min(connections).max(1),
            duration: Some(duration),
            requests: None,
            rate_rps: None,
            rate_stages: None,
            arrivals: Arrivals::Uniform,
            seed: None,
            warmup: Duration::ZERO,
            method: "GET".into(),
            headers: Vec::new(),
            body: Arc::from(&[][..]),
            keepalive: true,
            pipeline: 1,
            timeout: Duration::from_secs(2),
            think_time: Duration::ZERO,
            ramp: None,
            tls: None,
            http: HttpVersion::Http1,
            h2: H2Spec {
                streams: 1,
                window: DEFAULT_H2_WINDOW,
            },
            workload: None,
            checks: Default::default(),
            verify: false,
            shard: None,
            io: IoChoice::Auto,
            ws: None,
            grpc: None,
        }
    }

    /// Open loop: requests are due on a schedule.
    pub fn is_open(&self) -> bool {
        self.rate_rps.is_some()
    }

    /// How the load is driven.
    pub fn mode(&self) -> volley_model::result::Mode {
        use volley_model::result::Mode;
        match (&self.ramp, self.is_open()) {
            (Some(_), _) => Mode::Ramp,
            (None, true) => Mode::Open,
            (None, false) => Mode::Closed,
        }
    }

    /// Whether any response is checked: `--expect-*`, or a request of the requests file with
    /// checks of its own (a gRPC call's status is counted, not declared: no threshold is
    /// implied by it).
    pub fn declares_checks(&self) -> bool {
        self.checks.declares()
            || self
                .workload
                .as_ref()
                .is_some_and(|w| w.entries.iter().any(|e| e.checks.declares()))
    }

    /// The most connections the run can hold open at once (`--max-connections`, else the
    /// connections): what descriptors are needed for.
    pub fn most_connections(&self) -> usize {
        self.max_connections.unwrap_or(self.connections)
    }

    /// Warm-up plus measured time (10 s is assumed with `-n`, which has no length).
    pub fn planned(&self) -> Duration {
        let measured = self
            .duration
            .or_else(|| {
                self.ramp
                    .as_ref()
                    .map(|r| Duration::from_nanos(r.ramp.total_ns()))
            })
            .unwrap_or(Duration::from_secs(10));
        self.warmup + measured
    }
}

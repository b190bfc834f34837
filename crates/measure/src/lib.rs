//! One path from a validated run to its RunResult, shared by `volley run` and every suite
//! cell: attach the server monitor, resolve the target and pick its address ([`prepare`]),
//! then run the engine with volley's own CPU sampler and the caller's observers, and assemble
//! the result ([`run`], [`assemble`]). Prints nothing.

pub mod assemble;
pub mod client_check;
pub mod reflect;
mod shard;
pub mod verify;
mod warnings;

use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, SystemTime};

use volley_config::RunConfig;
use volley_engine::proxy::Tunnel;
use volley_engine::tls::{self, TlsSetupError};
use volley_engine::transport::{self, Endpoint, ResolveError};
use volley_engine::{self as engine, Observer, Observers, Route, SetupFailure};
use volley_model::result::RunResult;
use volley_monitor::client::ClientMonitor;
use volley_monitor::profile::Profiler;
use volley_monitor::server::{self, MonitorError, ServerMonitor, TreeSampler};
use volley_plan::HttpVersion;
use volley_plan::{Plan, ProxyMode};

/// Why a measurement could not be made (before any load, except `Engine`).
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// `--pid` names no process volley can monitor.
    #[error(transparent)]
    Monitor(#[from] MonitorError),
    /// `--profile` cannot sample (perf events refused or missing).
    #[error(transparent)]
    Profile(#[from] volley_monitor::profile::ProfileError),
    /// The target's host does not resolve.
    #[error(transparent)]
    Resolve(#[from] ResolveError),
    /// The proxy's host does not resolve.
    #[error("{0}")]
    ProxyResolve(String),
    /// `--unix-socket` names no socket.
    #[error("{0}")]
    UnixSocket(String),
    /// The TLS settings cannot be used (a PEM file, the server name).
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The TLS settings cannot carry QUIC (`--http3`).
    #[error(transparent)]
    Quic(#[from] volley_engine::quic::QuicSetupError),
    /// The run's first TLS handshakes failed on the server's set-up (its certificate, its TLS
    /// settings, or no TLS at all): no request was written.
    #[error("TLS handshake with {host} failed: {reason}")]
    Handshake {
        /// `host:port` (or the Unix socket).
        host: String,
        /// Why, in words a user can act on.
        reason: String,
    },
    /// An `http://` run whose server answered with TLS records.
    #[error("{host} speaks TLS: it answered the request with a TLS record; use https://")]
    SpeaksTls {
        /// `host:port` (or the Unix socket).
        host: String,
    },
    /// HTTP/2 was asked for (`--http2`, `--h2c`) and the server does not speak it there.
    #[error("{host} does not speak HTTP/2 {reason}")]
    NoH2 {
        /// `host:port` (or the Unix socket).
        host: String,
        /// What it did instead, and what to do.
        reason: String,
    },
    /// The server's first HTTP/2 frames broke the protocol before any request was written.
    #[error("HTTP/2 with {host} failed before any request was sent: {reason}")]
    H2Unusable {
        /// `host:port` (or the Unix socket).
        host: String,
        /// The frame, setting or error code, or the first bytes.
        reason: String,
    },
    /// The server refused the WebSocket upgrade (or answered it wrongly) before any message
    /// was answered.
    #[error("WebSocket upgrade of {url} failed: the server {reason}")]
    WebSocket {
        /// The URL (credentials redacted).
        url: String,
        /// Its status line, or what was wrong with its answer.
        reason: String,
    },
    /// The proxy refused the tunnel to the target (or did not answer in HTTP) before any
    /// response: no request reached the target.
    #[error("{reason} (proxy {proxy}, a tunnel to {target})")]
    Proxy {
        /// The proxy's URL (credentials redacted).
        proxy: String,
        /// `host:port` the tunnel was asked for.
        target: String,
        /// Its status and what to do.
        reason: String,
    },
    /// `--reflect`: the server's descriptors could not be had, or used (exit 2).
    #[error(transparent)]
    Reflect(#[from] reflect::ReflectError),
    /// `--io uring` where io_uring cannot be set up (found before any load, exit 2).
    #[error("--io uring: io_uring cannot be used here: {0} (--io epoll works everywhere)")]
    Io(String),
    /// The monitor's sampling thread could not start.
    #[error("could not start the server monitor: {0}")]
    MonitorThread(std::io::Error),
    /// The engine's threads or event loops could not start.
    #[error("could not start the engine: {0}")]
    Engine(std::io::Error),
    /// `--shard`/`--start-at`: the wall clock cannot be trusted to start shards together
    /// (found before any load, exit 2).
    #[error("{0}")]
    Clock(String),
    /// `--shard`: a part of the load too small to share (the config checks it first).
    #[error("{0}")]
    Share(String),
    /// `--start-at`: this shard could start only later than `--max-late` after it (exit 3:
    /// running would skew the merged result).
    #[error("late shard: it could start only {late_ms:.1} ms after --start-at {at}, more than --max-late {max_ms:.0} ms; nothing was sent (give the shards more lead time)")]
    LateShard {
        /// `--start-at` as given.
        at: String,
        /// How late it was, ms.
        late_ms: f64,
        /// `--max-late`, ms.
        max_ms: f64,
    },
}

/// A run ready to start: where to connect, with TLS when the URL is `https://`, and the
/// attached monitor.
pub struct Prepared {
    /// Where the whole run connects, and how.
    pub route: Route,
    /// Every address the host resolved to, in the order tried.
    pub tried: Vec<SocketAddr>,
    /// False when nothing listens at any of them (the run goes on with the first, and its
    /// failures count as connect errors); true when one listens or it was not checked.
    pub reachable: bool,
    sampler: Option<TreeSampler>,
    /// The wall clock's error bound when the run is a shard or starts at a time.
    clock: Option<volley_model::sys::clock::ClockStatus>,
}

/// Attaches the server monitor (first: a bad `--pid` costs nothing), resolves the host once and
/// picks the address ([`transport::pick_address`]: no connection for loopback targets or a
/// single address; a name with several remote addresses is probed within the request timeout,
/// 2 s at most — the same for `volley run` and suite cells, which both come here).
pub fn prepare(cfg: &RunConfig) -> Result<Prepared, MeasureError> {
    let load = &cfg.load;
    // Before the monitor is armed and the engine's clock starts: probing takes a moment.
    // HTTP/3's UDP sockets run on epoll.
    let io_choice = if load.http == HttpVersion::H3 {
        volley_plan::IoChoice::Epoll
    } else {
        load.io
    };
    let io_load = match (load.keepalive, load.tls.is_some(), load.http) {
        (false, _, _) => engine::IoLoad::ConnectionPerRequest,
        (true, true, HttpVersion::H2) => engine::IoLoad::TlsHttp2,
        _ => engine::IoLoad::KeepAlive,
    };
    let io = engine::choose_io(io_choice, io_load).map_err(MeasureError::Io)?;
    let clock = shard::check_clock(cfg)?;
    let sampler = match &cfg.monitor {
        Some(m) => {
            let budget = server::perf_fd_budget(load.most_connections() as u64);
            Some(server::attach(m, budget)?)
        }
        None => None,
    };
    let tls = match &load.tls {
        Some(spec) => Some(tls::client(
            spec,
            &load.target.host,
            load.most_connections(),
            load.http,
        )?),
        None => None,
    };
    let quic = match (&tls, load.http) {
        (Some(t), HttpVersion::H3) => Some(volley_engine::quic::QuicClient::new(
            t,
            &load.target.host,
            u32::try_from(load.h2.streams).unwrap_or(u32::MAX),
            load.tls.as_ref().is_some_and(|s| s.early_data),
        )?),
        _ => None,
    };
    if let Some(path) = &load.target.unix_socket {
        transport::check_unix_socket(path).map_err(MeasureError::UnixSocket)?;
        return Ok(Prepared {
            route: Route {
                endpoint: Endpoint::Unix(path.clone()),
                tls,
                tunnel: None,
                io,
                quic: None,
            },
            tried: Vec::new(),
            reachable: true,
            sampler,
            clock,
        });
    }
    // Through a proxy the sockets connect to it, and it resolves the target's name.
    let (host, port) = match &load.target.proxy {
        Some(p) => (p.host.as_str(), p.port),
        None => (load.target.host.as_str(), load.target.port),
    };
    let tried = transport::resolve(host, port).map_err(|e| match &load.target.proxy {
        Some(p) => {
            let ResolveError::Dns { host, reason } = e;
            let shown = &p.shown;
            MeasureError::ProxyResolve(format!(
                "-x/--proxy {shown}: cannot resolve host `{host}`: {reason}"
            ))
        }
        None => MeasureError::Resolve(e),
    })?;
    let picked = if load.http == HttpVersion::H3 {
        transport::pick_udp_address(&tried)
    } else {
        transport::pick_address(&tried, load.timeout.min(Duration::from_secs(2)))
    };
    Ok(Prepared {
        route: Route {
            endpoint: Endpoint::Tcp(picked.addr),
            tls,
            tunnel: tunnel(&load.target),
            io,
            quic,
        },
        reachable: picked.listening != Some(false),
        tried,
        sampler,
        clock,
    })
}

/// The `CONNECT` tunnel a proxied run opens on each connection (`None`: no proxy, or one that
/// forwards requests).
fn tunnel(target: &volley_plan::Target) -> Option<Tunnel> {
    let p = target.proxy.as_ref()?;
    (p.mode == ProxyMode::Tunnel).then(|| Tunnel {
        request: p.connect_request(&target.authority()).into(),
    })
}

/// What a result says about where and how it was made.
pub struct Context<'a> {
    /// The command line (the result's `argv`).
    pub argv: &'a [String],
    /// CPUs volley may use.
    pub cores: usize,
    /// Their list, e.g. "0-1".
    pub client_cpus: &'a str,
    /// The server's CPU list when volley pinned it (suites).
    pub server_cpus: Option<&'a str>,
    /// Where the server monitor keeps its latest second for live views (`None`: nobody
    /// watches).
    pub server_latest: Option<server::LatestTick>,
}

/// What one measurement produced.
pub struct Measured {
    /// The artifact.
    pub result: RunResult,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
    /// The monitored server exited during the measured window.
    pub server_died: bool,
    /// Why the first failed connect failed, when known (see
    /// [`volley_engine::EngineOutput::first_connect_failure`]).
    pub connect_failure: Option<String>,
    /// `--profile`: the folded stacks of the server's tree (`server.profile` summarises them).
    pub folded: Option<String>,
    /// `--profile-off-cpu`: the folded off-CPU stacks, counts in µs of waiting
    /// (`server.profile.off_cpu` summarises them).
    pub folded_off_cpu: Option<String>,
    /// volley's own CPU, one sample per second of the measured window (sample *k* ends
    /// about *k* + 1 s after t0): what a part of the run is judged by (`capacity --sweep`).
    pub client_samples: Vec<volley_monitor::client::ClientSample>,
}

/// Runs the load of `cfg` as prepared and assembles the RunResult; `observer` watches the run
/// (the live line, an interval log). `interrupts` counts Ctrl-C presses.
pub fn run(
    cfg: &RunConfig,
    prepared: Prepared,
    ctx: &Context,
    interrupts: &AtomicUsize,
    observer: &mut dyn Observer,
) -> Result<Measured, MeasureError> {
    // A call still waiting for the server's descriptors would send an empty message.
    if cfg.reflect.is_some() {
        return Err(reflect::ReflectError::NotAsked.into());
    }
    // A shard runs its own part of the whole load (the whole stays in `cfg` for its id).
    let share = cfg.load.shard_share().map_err(|e| {
        MeasureError::Share(format!(
            "{} {}: too small to share among the shards",
            e.what, e.total
        ))
    })?;
    let load = &share;
    let seed = load.seed.unwrap_or_else(clock_seed);
    let plan = Plan::new(load, seed);
    let monitor = prepared
        .sampler
        .map(|s| ServerMonitor::spawn_watched(s, ctx.server_latest.clone()))
        .transpose()
        .map_err(MeasureError::MonitorThread)?;
    let profiler = match cfg
        .monitor
        .as_ref()
        .and_then(|m| Some((m.pid, m.profile_hz?, m.profile_off_cpu)))
    {
        Some((pid, hz, off_cpu)) => match Profiler::start(pid, hz, off_cpu) {
            Ok(p) => Some(p),
            Err(e) => {
                if let Some(m) = monitor {
                    m.finish(0);
                }
                return Err(e.into());
            }
        },
        None => None,
    };
    let mut client = ClientMonitor::default();
    // `--start-at`: wait for it on the wall clock (then the engine runs on the monotonic one);
    // a shard that cannot make it in time sends nothing.
    let start_late_us = match shard::wait_for_start(cfg, interrupts) {
        Ok(late) => late,
        Err(e) => {
            if let Some(m) = monitor {
                m.finish(0);
            }
            return Err(e);
        }
    };
    let out = {
        // The monitor reads its first edge at the engine's own t0 (`warmup` after the engine
        // starts its clock), on its own thread: nothing on the hot path.
        let mut arm = ArmMonitor(monitor.as_ref(), profiler.as_ref());
        let mut all = Observers(vec![&mut arm, observer, &mut client]);
        engine::run(load, plan, prepared.route.clone(), interrupts, &mut all)
            .map_err(MeasureError::Engine)?
    };
    if let Some(failure) = &out.setup_failure {
        if let Some(m) = monitor {
            m.finish(0);
        }
        let host = match &prepared.route.endpoint {
            Endpoint::Tcp(_) if load.target.host.contains(':') => {
                format!("[{}]:{}", load.target.host, load.target.port)
            }
            Endpoint::Tcp(_) => format!("{}:{}", load.target.host, load.target.port),
            unix => unix.to_string(),
        };
        return Err(match failure {
            SetupFailure::Handshake(reason) => MeasureError::Handshake {
                host,
                reason: reason.clone(),
            },
            SetupFailure::SpeaksTls => MeasureError::SpeaksTls { host },
            SetupFailure::NoH2(reason) => MeasureError::NoH2 {
                host,
                reason: reason.clone(),
            },
            SetupFailure::H2Unusable(reason) => MeasureError::H2Unusable {
                host,
                reason: reason.clone(),
            },
            SetupFailure::Proxy(reason) => MeasureError::Proxy {
                proxy: load.target.proxy.as_ref().map_or(host, |p| p.shown.clone()),
                target: load.target.authority(),
                reason: reason.clone(),
            },
            SetupFailure::WebSocket(reason) => MeasureError::WebSocket {
                url: volley_model::result::redact::url(&load.target.url).into_owned(),
                reason: reason.clone(),
            },
        });
    }
    // The last edge is read as soon as the engine returns: right after the last response (or
    // timeout) of the drain.
    let server = monitor.map(|m| m.finish(out.agg.counts.completed));
    let profile = profiler.map(|p| p.finish(out.agg.counts.completed));
    let server_died = server.as_ref().is_some_and(|s| s.exited_at_s.is_some());
    let shard_cfg = RunConfig {
        load: share.clone(),
        ..cfg.clone()
    };
    let client = client.report();
    let client_samples = client.samples.clone();
    let parts = assemble::Parts {
        cfg: &shard_cfg,
        whole: cfg.load.shard.map(|_| &cfg.load),
        shard: shard::info(cfg, prepared.clock, start_late_us),
        route: &prepared.route,
        seed,
        ctx,
        engine: &out,
        client,
        server,
    };
    let mut result = parts.result();
    let folded_off_cpu = profile
        .as_ref()
        .and_then(|p| p.off_cpu.as_ref())
        .map(|o| volley_monitor::profile::folded_text(&o.folded));
    let folded = profile.map(|p| {
        if let Some(s) = result.server.as_mut() {
            s.profile = Some(p.info.clone());
        }
        p.folded_text()
    });
    Ok(Measured {
        result,
        folded,
        folded_off_cpu,
        interrupted: out.interrupted,
        server_died,
        connect_failure: out.first_connect_failure().map(str::to_string),
        client_samples,
    })
}

/// A seed for Poisson arrivals when none was given: the clock's nanoseconds.
fn clock_seed() -> u64 {
    SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
}

/// Arms the server monitor when the engine starts, at the engine's t0 (`started_at`): the
/// first edge and the GC events are then on the clock of the latency series, however long
/// the engine took to start on a busy machine. The profiler starts sampling when the measured
/// window begins.
struct ArmMonitor<'a>(Option<&'a ServerMonitor>, Option<&'a Profiler>);

impl Observer for ArmMonitor<'_> {
    fn start(&mut self, started_at: SystemTime) {
        if let Some(m) = self.0 {
            m.arm_at(started_at);
        }
    }

    fn measuring(&mut self, _now_ns: u64) {
        if let Some(p) = self.1 {
            p.enable();
        }
    }
}

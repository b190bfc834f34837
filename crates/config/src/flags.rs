//! The flags that say what a run is — the load, the server to monitor, the thresholds — and
//! their checks. `volley run` takes them on the command line (its output flags live with the
//! command), and a suite's scenario keys are their long names in snake_case, so the definition
//! here is the one both read: a suite accepts exactly what the command line accepts.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use clap::{Args, ValueEnum};

use super::http::{h2_spec, http_version};
use super::ramp::ramp_from_flags;
use super::request::{request, Request};
use super::shape::{max_connections, shape};
use super::tls::{tls_spec, unix_socket};
use super::{checks, requests};
use super::{monitor_config, parse_url, threshold, ConfigError, Flag, RunConfig};
use volley_model::result::Arrivals;
use volley_model::units;
use volley_plan::{IoChoice, LoadSpec, Target};

/// How request arrivals are spread in an open-loop (`-R`) run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ArrivalsFlag {
    /// Evenly spaced: request i is due at t0 + i/R (wrk2).
    Uniform,
    /// Exponential gaps (a Poisson process) from a seeded per-thread generator.
    Poisson,
}

impl From<ArrivalsFlag> for Arrivals {
    fn from(a: ArrivalsFlag) -> Self {
        match a {
            ArrivalsFlag::Uniform => Arrivals::Uniform,
            ArrivalsFlag::Poisson => Arrivals::Poisson,
        }
    }
}

/// `--io`: how the engine moves bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum IoFlag {
    /// io_uring where the kernel (6.12 or later) and the process allow it, else epoll.
    Auto,
    /// io_uring; an error where it cannot be set up.
    Uring,
    /// epoll.
    Epoll,
}

impl From<IoFlag> for IoChoice {
    fn from(f: IoFlag) -> Self {
        match f {
            IoFlag::Auto => IoChoice::Auto,
            IoFlag::Uring => IoChoice::Uring,
            IoFlag::Epoll => IoChoice::Epoll,
        }
    }
}

/// `--io`, or else `VOLLEY_IO` (auto, uring or epoll), or else auto.
fn io_choice(flag: Option<IoFlag>) -> Result<IoChoice, ConfigError> {
    if let Some(f) = flag {
        return Ok(f.into());
    }
    match std::env::var("VOLLEY_IO") {
        Err(_) => Ok(IoChoice::Auto),
        Ok(v) => IoFlag::from_str(v.trim(), true)
            .map(IoChoice::from)
            .map_err(|_| {
                ConfigError::flag(
                    Flag::Io,
                    format!("VOLLEY_IO={v:?} is not one of auto, uring, epoll"),
                )
            }),
    }
}

/// `VOLLEY_WAKE_QUANTUM_US` (docs/contract.md, "Phases and time"), when set, must be a whole
/// number of microseconds up to 1 s; the engine reads it as the run starts.
fn check_wake_quantum() -> Result<(), ConfigError> {
    let name = volley_plan::WAKE_QUANTUM_VAR;
    match std::env::var(name) {
        Err(_) => Ok(()),
        Ok(v) => match v.trim().parse::<u64>() {
            Ok(us) if us <= 1_000_000 => Ok(()),
            _ => Err(ConfigError::Env {
                name,
                message: format!(
                    "{v:?} is not a whole number of microseconds up to 1000000 (0 turns the \
                     spacing of wake-ups off)"
                ),
            }),
        },
    }
}

/// What a run is: the `volley run` flags other than where its results go (wrk spellings where
/// wrk has the flag).
#[derive(Debug, Args, Clone)]
pub struct RunFlags {
    /// Target URL, e.g. http://127.0.0.1:8080/
    pub url: String,

    /// Connections to keep open (closed loop: requests in flight) [default: 10].
    #[arg(short = 'c', long = "connections")]
    pub connections: Option<u64>,

    /// Worker threads, each with its own event loop [default: cores volley may use].
    #[arg(short = 't', long = "threads", value_parser = threads)]
    pub threads: Option<u64>,

    /// Measured duration, e.g. 10s, 1m [default: 10s unless -n is given].
    // `-z` is oha's and hey's spelling.
    #[arg(short = 'd', long = "duration", short_alias = 'z', value_parser = run_duration, allow_hyphen_values = true)]
    pub duration: Option<Duration>,

    /// Total measured requests instead of a duration, e.g. 100000 or 100k.
    #[arg(short = 'n', long = "requests", value_parser = count)]
    pub requests: Option<u64>,

    /// Open loop: constant request rate in requests per second (coordinated-omission corrected).
    #[arg(short = 'R', long = "rate", allow_negative_numbers = true)]
    pub rate: Option<String>,

    /// Open loop whose rate ramps: k6-style stages "DUR:RATE,...", each from the previous
    /// rate (the first from 0) to its own, e.g. "10s:1000,60s:20k" (excludes -R, -d, -n).
    #[arg(long, value_name = "STAGES")]
    pub rate_stages: Option<String>,

    /// Arrival process for -R and --rate-stages.
    #[arg(long, value_enum, default_value_t = ArrivalsFlag::Uniform)]
    pub arrivals: ArrivalsFlag,

    /// Seed for --arrivals poisson [default: from the clock; recorded in the JSON].
    #[arg(long)]
    pub seed: Option<u64>,

    /// Virtual users, each holding a connection and looping (locust-style); -d includes the ramp.
    // `--vus`/`-u` are k6's spellings.
    #[arg(long, alias = "vus", short_alias = 'u', value_parser = count)]
    pub users: Option<u64>,

    /// Users added per second with --users [default: all at once].
    #[arg(long, allow_negative_numbers = true)]
    pub spawn_rate: Option<String>,

    /// k6-style stages "DUR:USERS,...", e.g. "30s:1000,60s:1000,10s:0" (excludes -d and -n).
    #[arg(long, alias = "stage")]
    pub stages: Option<String>,

    /// Pause of each user (or connection) between a response and its next request.
    #[arg(long, value_parser = duration, allow_hyphen_values = true)]
    pub think_time: Option<Duration>,

    /// Warm-up before measuring, excluded from every statistic, e.g. 2s.
    #[arg(long, value_parser = duration, allow_hyphen_values = true)]
    pub warmup: Option<Duration>,

    /// HTTP method [default: GET, or POST when a body is given].
    #[arg(short = 'm', long = "method")]
    pub method: Option<String>,

    /// Extra request header "Name: value" (repeatable; overrides a default header).
    #[arg(short = 'H', long = "header")]
    pub headers: Vec<String>,

    /// Request body as a string (--grpc: the message as JSON; ghz's --data).
    #[arg(long, group = "body_source", alias = "data")]
    pub body: Option<String>,

    /// Request body read from a file (ghz's --data-file).
    #[arg(long, group = "body_source", alias = "data-file")]
    pub body_file: Option<PathBuf>,

    /// Request body of this many generated bytes, e.g. 1KiB.
    #[arg(long, group = "body_source", value_parser = size)]
    pub body_size: Option<u64>,

    /// Requests to mix by weight or walk in sequence instead of one (TOML, or vegeta's
    /// targets format); the URL names the host, the file the paths.
    #[arg(long, value_name = "PATH")]
    pub requests_file: Option<PathBuf>,

    /// Statuses a response must have: 200, 200-299, 2xx, or a list such as 200,204,3xx.
    /// Any --expect-* implies --threshold 'checks<=1%': more than 1 % of the responses failing
    /// a check exits 1 (name checks in a --threshold to set another bound).
    #[arg(long, value_name = "LIST")]
    pub expect_status: Option<String>,

    /// Text the response body must contain (repeatable: all of them).
    #[arg(long, value_name = "TEXT")]
    pub expect_body_contains: Vec<String>,

    /// Pattern the first 64 KiB of the response body must match (Rust regex syntax).
    #[arg(long, value_name = "REGEX")]
    pub expect_body_regex: Option<String>,

    /// Header the response must have, NAME or NAME:VALUE (repeatable; the name in any case,
    /// the value exactly).
    #[arg(long, value_name = "NAME[:VALUE]")]
    pub expect_header: Vec<String>,

    /// Length the response body must have, e.g. 1KiB or 512.
    #[arg(long, value_name = "SIZE", value_parser = size)]
    pub expect_size: Option<u64>,

    /// Field the response body's JSON must have, POINTER or POINTER=VALUE (repeatable; a JSON
    /// pointer such as /data/id or a path such as $.data.id; --grpc: the decoded reply).
    #[arg(long, value_name = "POINTER[=VALUE]")]
    pub expect_json: Vec<String>,

    /// Send each request once and show what came back before the load.
    #[arg(long)]
    pub verify: bool,

    /// Run shard I (from 0) of N generators that act as one load: this one takes its exact
    /// share of the connections, users, requests and rate (merge the N results with
    /// `volley merge`).
    #[arg(long, value_name = "I/N")]
    pub shard: Option<String>,

    /// Start at this wall-clock time (RFC 3339, e.g. 2026-11-25T12:00:00Z), as every shard of
    /// the load does; a shard that cannot start within --max-late of it exits 3.
    #[arg(long, value_name = "RFC3339")]
    pub start_at: Option<String>,

    /// With --shard or --start-at: the most clock error allowed (the kernel's maxerror, what
    /// chrony or NTP keeps); an unsynchronised clock exits 2. `off` for shards that share one
    /// host's clock [default: 10ms].
    #[arg(long, value_name = "DUR|off")]
    pub clock_budget: Option<String>,

    /// With --start-at: how late after it a shard may still start [default: 100ms].
    #[arg(long, value_name = "DUR")]
    pub max_late: Option<String>,

    /// Open a new connection per request and send `Connection: close` (connect time counts).
    // `--disable-keepalive` is oha's spelling.
    #[arg(long, alias = "disable-keepalive")]
    pub no_keepalive: bool,

    /// How the engine moves bytes: io_uring (multishot receives, sends batched with the wait)
    /// or epoll. `auto` takes io_uring where the kernel (6.12+) and the process (a seccomp
    /// policy, limits) allow it, else epoll with a note; VOLLEY_IO sets the default.
    #[arg(long, value_enum, value_name = "auto|uring|epoll")]
    pub io: Option<IoFlag>,

    /// Requests kept outstanding per connection (HTTP/1.1 pipelining).
    #[arg(long, default_value_t = 1)]
    pub pipeline: u64,

    /// Per-request timeout, counted from the write.
    #[arg(long, value_parser = duration, default_value = "2s", allow_hyphen_values = true)]
    pub timeout: Duration,

    /// Monitor this server process and all its descendants over the measured window: CPU
    /// user/sys, memory, threads, context switches, syscalls, and their cost per request.
    #[arg(long, allow_negative_numbers = true)]
    pub pid: Option<i64>,

    /// Sampling interval of the server monitor [default: 100ms].
    #[arg(long, value_parser = duration, allow_hyphen_values = true)]
    pub monitor_interval: Option<Duration>,

    /// The monitored server's GC log (JVM -Xlog:gc, Go GODEBUG=gctrace=1, Node --trace-gc;
    /// recognized by its lines), read at the end: its pauses in the window go into the result
    /// and the summary. Needs --pid. A JVM's counters are read without it.
    #[arg(long, value_name = "PATH")]
    pub gc_log: Option<PathBuf>,

    /// Sample the monitored server's on-CPU stacks (kernel and user) over the measured window:
    /// the functions that cost the most per request in the summary, the folded stacks beside
    /// the JSON (--json r.json writes r.folded; or --profile-out), a flame graph in the HTML
    /// report. Needs --pid; off by default (see its cost in docs/contract.md, "Profile").
    #[arg(long)]
    pub profile: bool,

    /// Samples a second per CPU with --profile.
    #[arg(long, value_name = "HZ", value_parser = clap::value_parser!(u64).range(1..=20_000))]
    pub profile_frequency: Option<u64>,

    /// With --profile, also where the server's threads waited off the CPU (blocked, or
    /// preempted): folded stacks in µs of waiting beside the on-CPU ones (r.offcpu.folded), an
    /// Off-CPU block in the summary, a second flame graph. Off by default: it costs the server
    /// a sample at every context switch (docs/contract.md, "Profile").
    #[arg(long)]
    pub profile_off_cpu: bool,

    /// Pass/fail criterion, repeatable: 'p99<10ms', 'errors<0.1%', 'failed<1%', 'checks<5%',
    /// 'rps>5000' (a broken one exits 1). Without thresholds, 4xx/5xx responses alone do not
    /// change the exit code: use 'failed<1%' to fail on them. Declared checks (--expect-*, a
    /// requests file's expect_*) imply 'checks<=1%' unless a threshold names checks.
    #[arg(long)]
    pub threshold: Vec<String>,

    /// Open loop: open more connections on demand, up to N in all, when every connection is
    /// busy and a request is due (like vegeta's workers or k6's maxVUs).
    #[arg(long, value_parser = count)]
    pub max_connections: Option<u64>,

    /// Open loop: a run that sent less than 99 % of -R still exits 0 (the shortfall stays in
    /// the summary's headline).
    #[arg(long)]
    pub allow_shortfall: bool,

    /// https: do not verify the server's certificate (curl's -k).
    #[arg(short = 'k', long)]
    pub insecure: bool,

    /// https: also trust the CA certificates in this PEM file (besides the system's).
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,

    /// https: client certificate chain (PEM), for servers that ask for one.
    #[arg(long, value_name = "FILE")]
    pub cert: Option<PathBuf>,

    /// https: the client certificate's private key (PEM) [default: in the --cert file].
    #[arg(long, value_name = "FILE")]
    pub key: Option<PathBuf>,

    /// https: a full handshake on every connection instead of resuming the TLS session.
    #[arg(long)]
    pub no_tls_resume: bool,

    /// Connect to this Unix domain socket instead of the URL's host and port; the URL still
    /// gives the Host header and the path (curl's spelling).
    #[arg(long, value_name = "PATH")]
    pub unix_socket: Option<PathBuf>,

    /// Send the requests through this HTTP proxy, http://user:password@host:port (the
    /// credentials optional, port 1080 by default; curl's -x). https://, --h2c and
    /// --proxytunnel go through a CONNECT tunnel; http:// requests are forwarded. Without it,
    /// HTTPS_PROXY, HTTP_PROXY and ALL_PROXY name the proxy, except for loopback targets.
    #[arg(short = 'x', long, value_name = "URL")]
    pub proxy: Option<String>,

    /// Hosts to reach without the proxy: names (with their subdomains), addresses, CIDR
    /// ranges, comma-separated; * for every host [default: NO_PROXY].
    #[arg(long, value_name = "LIST")]
    pub noproxy: Option<String>,

    /// http://: go through the proxy in a CONNECT tunnel instead of having it forward each
    /// request.
    #[arg(long, requires = "proxy")]
    pub proxytunnel: bool,

    /// The proxy variables of the environment (`volley run` reads them; a suite's cells are
    /// never proxied).
    #[arg(skip)]
    pub proxy_env: super::ProxyEnv,

    /// Speak HTTP/1.1 only (https: offer only http/1.1 by ALPN).
    #[arg(long = "http1.1")]
    pub http1_1: bool,

    /// https: speak HTTP/2; a server that does not choose h2 by ALPN ends the run (exit 2).
    /// Without a version flag an https:// run speaks HTTP/2 when the server offers it. wss:
    /// each WebSocket on an HTTP/2 stream (RFC 8441).
    #[arg(long)]
    pub http2: bool,

    /// http: speak HTTP/2 in cleartext with prior knowledge (curl's --http2-prior-knowledge).
    /// ws: each WebSocket on an HTTP/2 stream (RFC 8441).
    #[arg(long, alias = "http2-prior-knowledge")]
    pub h2c: bool,

    /// https: speak HTTP/3 over QUIC (UDP), as curl's --http3-only; --streams requests per
    /// connection at once.
    #[arg(long, alias = "http3-only")]
    pub http3: bool,

    /// --http3: send requests as 0-RTT early data on connections that resume a session the
    /// server allowed it for (their first requests go with the handshake's first flight).
    #[arg(long = "0rtt")]
    pub zero_rtt: bool,

    /// HTTP/2 and HTTP/3: concurrent streams per connection (h2load's -m) [default: 1];
    /// HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS caps it.
    #[arg(long, value_parser = count, value_name = "N")]
    pub streams: Option<u64>,

    /// HTTP/2: receive window per stream and per connection, e.g. 1MiB
    /// [default: 2GiB-1, the largest].
    #[arg(long, value_parser = size, value_name = "BYTES")]
    pub h2_window: Option<u64>,

    /// ws:// and wss://: send each message (--body, default "hello") as a binary frame
    /// instead of a text frame.
    #[arg(long)]
    pub ws_binary: bool,

    /// Call this gRPC method, unary or server-streaming (SERVICE/METHOD, e.g.
    /// helloworld.Greeter/SayHello; ghz's --call): each request is a call whose message is
    /// --body as JSON, over HTTP/2 (h2c for http://).
    #[arg(long, alias = "call", value_name = "SERVICE/METHOD")]
    pub grpc: Option<String>,

    /// --grpc: the .proto file that defines the method (compiled by volley, no protoc).
    #[arg(long, value_name = "FILE")]
    pub proto: Option<PathBuf>,

    /// --grpc: a folder the .proto's imports are looked up in (repeatable; the file's own
    /// folder is always one).
    #[arg(long, value_name = "DIR")]
    pub import_path: Vec<PathBuf>,

    /// --grpc: ask the server for the method's definition (gRPC server reflection, as grpcurl
    /// and ghz do) instead of reading a --proto file.
    #[arg(long)]
    pub reflect: bool,
}

impl RunConfig {
    /// Checks the flags. `cores` is how many CPUs volley may use (the default thread count).
    pub fn from_flags(a: &RunFlags, cores: usize) -> Result<Self, ConfigError> {
        let load = load_spec(a, cores)?;
        let mut monitor = monitor_config(a.pid, a.monitor_interval, a.gc_log.clone())?;
        super::monitor::profile_config(&mut monitor, a.profile, a.profile_frequency)?;
        super::monitor::off_cpu_config(&mut monitor, a.profile, a.profile_off_cpu)?;
        let given = a
            .threshold
            .iter()
            .map(|t| threshold::parse(t).map_err(|m| ConfigError::flag(Flag::Threshold, m)))
            .collect::<Result<Vec<_>, _>>()?;
        // A shard's checks are judged on the merged result, not on its share.
        let thresholds =
            threshold::with_implied(given, load.declares_checks() && load.shard.is_none());
        let start = super::shard::start_spec(a)?;
        Ok(RunConfig {
            load,
            monitor,
            thresholds,
            allow_shortfall: a.allow_shortfall,
            start,
            reflect: super::grpc::pending(a)?,
        })
    }
}

/// The load the flags describe: its target, shape (connections, rate, ramp, window) and request.
fn load_spec(a: &RunFlags, cores: usize) -> Result<LoadSpec, ConfigError> {
    let mut target = parse_url(&a.url)?;
    target.unix_socket = unix_socket(a)?;
    let tls = tls_spec(a, target.scheme)?;
    let http = http_version(a, target.scheme)?;
    target.proxy = super::proxy::proxy_for(a, &target, http)?;
    let h2 = h2_spec(a, http, target.scheme)?;
    let ramp = ramp_from_flags(a)?;
    let shape = shape(a)?;
    requests_file_conflicts(a, &target)?;
    let ws = super::ws::ws_spec(a, target.scheme)?;
    let grpc = super::grpc::calls(a, target.scheme)?;
    let call = grpc.as_ref().map(|g| g.call(a)).transpose()?.flatten();
    let mut req = request(a)?;
    if let Some(g) = &grpc {
        g.apply(call.as_ref(), &mut target, &mut req)?;
    }
    if ws.is_some() {
        super::ws::apply(a, &mut req);
    }
    let Request {
        method,
        headers,
        body,
    } = req;
    let mut connections = match &ramp {
        Some(r) => r.ramp.max_users() as usize,
        None => shape.connections as usize,
    };
    if let Some(n) = a.requests {
        connections = connections.min(n.min(usize::MAX as u64) as usize);
    }
    if a.think_time.is_some() && shape.rate_rps.is_some() {
        return Err(ConfigError::flag(
            Flag::ThinkTime,
            "applies to users and closed loop, not to -R",
        ));
    }
    let max_connections = max_connections(a, &shape, connections)?;
    let threads = (a.threads.map(|t| t as usize).unwrap_or(cores.max(1)))
        .min(max_connections.unwrap_or(connections))
        .max(1);
    let duration = match (&ramp, a.duration, a.requests) {
        _ if shape.rate_stages.is_some() => shape.rate_stages.as_ref().map(|s| s.duration()),
        (Some(r), _, _) => Some(Duration::from_nanos(r.ramp.total_ns())),
        (None, None, None) => Some(Duration::from_secs(10)),
        (None, d, _) => d,
    };
    let mut checks = checks::from_flags(a)?;
    checks.grpc = grpc.is_some();
    // `--expect-json` and `--verify` read a reply through its descriptor.
    checks.reply = grpc.as_ref().and_then(|g| g.reply_decoder());
    // Last: the file may be large, and every cheaper mistake is said first.
    let workload = match &a.requests_file {
        Some(path) => Some(Arc::new(requests::load(
            path,
            requests::Run {
                target: &target,
                checks: &checks,
                grpc: grpc.as_ref(),
                ws: ws.is_some(),
            },
        )?)),
        None => None,
    };
    if let Some(w) = workload
        .as_deref()
        .filter(|w| w.is_journey() && shape.rate_rps.is_some())
    {
        open_loop_journey(a, w)?;
    }
    let shard = a
        .shard
        .as_deref()
        .map(super::shard::parse_shard)
        .transpose()?;
    let grpc = match (call, &workload) {
        (Some(c), _) => Some(c.spec),
        (None, Some(w)) if grpc.is_some() => Some(super::grpc::file_spec(w)),
        _ => None,
    };
    let spec = LoadSpec {
        target,
        connections,
        max_connections,
        threads,
        duration,
        requests: a.requests,
        rate_rps: shape.rate_rps,
        rate_stages: shape.rate_stages.clone(),
        arrivals: a.arrivals.into(),
        seed: a.seed,
        warmup: a.warmup.unwrap_or(Duration::ZERO),
        method,
        headers,
        body,
        keepalive: !a.no_keepalive,
        pipeline: a.pipeline as usize,
        timeout: a.timeout,
        think_time: a.think_time.unwrap_or(Duration::ZERO),
        ramp,
        tls,
        http,
        h2,
        workload,
        checks,
        verify: a.verify,
        shard,
        io: {
            check_wake_quantum()?;
            io_choice(a.io)?
        },
        ws,
        grpc,
    };
    // Each shard's part of the whole must be something to run.
    spec.shard_share().map_err(|e| {
        let flag = match e.what {
            "-c/--connections" => Flag::Connections,
            "--max-connections" => Flag::MaxConnections,
            "-n/--requests" => Flag::Requests,
            _ => Flag::Users,
        };
        ConfigError::conflict(
            flag,
            &[Flag::Shard],
            format!(
                "{} over {} shards leaves a shard with none: give each shard at least one",
                e.total,
                shard.map_or(1, |s| s.count)
            ),
        )
    })?;
    Ok(spec)
}

/// A journey in the open loop: each arrival is a new user who walks it once, so `-n` (which
/// counts requests, not arrivals) does not say how much to send, and a step needing a value
/// no earlier step of that walk captures would never be sent.
fn open_loop_journey(a: &RunFlags, w: &volley_plan::workload::Workload) -> Result<(), ConfigError> {
    if a.requests.is_some() {
        return Err(ConfigError::conflict(
            Flag::Requests,
            &[Flag::RequestsFile, Flag::Rate],
            "cannot be combined with -R and a journey (each arrival is a user walking several requests): give -d",
        ));
    }
    if let Some((k, var)) = w.open_loop_gap() {
        let e = &w.entries[k];
        let name = e.endpoint.map_or("?", |n| w.endpoints[n as usize].as_str());
        return Err(ConfigError::conflict(
            Flag::RequestsFile,
            &[Flag::Rate],
            format!(
                "with -R each arrival is a new user who walks the journey once, and `{name}` needs `{{var.{var}}}`, which no once step or earlier step captures: it would never be sent (capture it in a once step, or before it in the sequence)"
            ),
        ));
    }
    Ok(())
}

/// `--requests-file` says what each request is, so the flags that say it for the one request
/// cannot go with it; and the URL names only the host (its path must be `/`).
fn requests_file_conflicts(a: &RunFlags, target: &Target) -> Result<(), ConfigError> {
    if a.requests_file.is_none() {
        return Ok(());
    }
    let given = [
        (a.method.is_some(), Flag::Method),
        (a.body.is_some(), Flag::Body),
        (a.body_file.is_some(), Flag::BodyFile),
        (a.body_size.is_some(), Flag::BodySize),
    ];
    if let Some((_, other)) = given.iter().find(|(g, _)| *g) {
        return Err(ConfigError::conflict(
            Flag::RequestsFile,
            &[*other],
            format!("cannot be combined with {other} (each request in the file has its own)"),
        ));
    }
    if target.path != "/" && !target.scheme.is_websocket() {
        return Err(ConfigError::conflict(
            Flag::RequestsFile,
            &[Flag::Url],
            format!(
                "the URL's path is `{}`, not `/`: the URL names the host; the file names the paths",
                target.path
            ),
        ));
    }
    Ok(())
}

fn duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s)
}

/// `-d`: a duration, as in wrk; oha's and hey's `-d` is the request body, so a value that is
/// not a duration says where the body goes.
fn run_duration(s: &str) -> Result<Duration, String> {
    units::parse_duration(s).map_err(|e| {
        format!(
            "{e}; volley's -d is the measured duration (a request body, or ghz's -d gRPC \
             message, is --body)"
        )
    })
}

fn threads(s: &str) -> Result<u64, String> {
    s.parse::<u64>().map_err(|_| {
        format!(
            "`{s}` is not a number of threads; volley's -t is its worker threads (a timeout, \
             ghz's -t, is --timeout)"
        )
    })
}

fn count(s: &str) -> Result<u64, String> {
    units::parse_count(s)
}

fn size(s: &str) -> Result<u64, String> {
    units::parse_size(s)
}

#[cfg(test)]
mod tests {

    use crate::{ConfigError, Flag, RunConfig, RunFlags};
    use volley_plan::workload::{Body, Order};
    use volley_plan::LoadSpec;

    const MIX: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/requests/mix.toml"
    );

    fn load(args: &[&str]) -> Result<LoadSpec, ConfigError> {
        RunConfig::from_flags(&crate::args_from::<RunFlags, _, _>(args).unwrap(), 2).map(|c| c.load)
    }

    #[test]
    fn a_requests_file_becomes_the_workload_with_the_flags_checks_first() {
        let l = load(&[
            "http://127.0.0.1:8080",
            "--requests-file",
            MIX,
            "--expect-body-contains",
            "ok",
            "--expect-status",
            "2xx,404",
            "--verify",
            "-H",
            "X-Run: 1",
        ])
        .unwrap();
        assert!(l.verify);
        assert_eq!(l.checks.status, [(200, 299), (404, 404)]);
        assert_eq!(l.headers, [("X-Run".to_string(), "1".to_string())]);
        let w = l.workload.as_ref().unwrap();
        assert_eq!(w.order, Order::Weighted);
        assert_eq!(w.endpoints, ["item", "order", "GET /health"]);
        assert_eq!(
            w.entries.iter().map(|e| e.weight).collect::<Vec<_>>(),
            [16, 3, 1]
        );
        assert_eq!(w.source, MIX);
        // The file's own status wins; the body checks add up.
        assert_eq!(w.entries[0].checks.status, [(200, 200)]);
        assert_eq!(w.entries[2].checks.status, [(200, 299), (404, 404)]);
        assert!(w
            .entries
            .iter()
            .all(|e| e.checks.body_contains == [b"ok".to_vec()]));
        // The body file is next to the requests file.
        assert_eq!(
            w.entries[1].body,
            Body::Bytes(b"{\"item\": 42, \"count\": 1}\n".to_vec().into())
        );
        assert_eq!(w.data.as_ref().unwrap().rows.len(), 2);
        // Without a requests file: no workload, the checks still apply.
        let l = load(&["http://127.0.0.1:8080/x", "--expect-size", "2KiB"]).unwrap();
        assert!(l.workload.is_none() && !l.verify);
        assert_eq!(l.checks.size, Some(2048));
    }

    #[test]
    fn a_requests_file_excludes_the_flags_of_the_one_request() {
        for (flag, value, named) in [
            ("-m", "PUT", Flag::Method),
            ("--body", "x", Flag::Body),
            ("--body-file", "/etc/hostname", Flag::BodyFile),
            ("--body-size", "1KiB", Flag::BodySize),
        ] {
            let e = load(&[
                "http://127.0.0.1:8080/",
                "--requests-file",
                MIX,
                flag,
                value,
            ])
            .unwrap_err();
            assert_eq!(e.flags(), [Flag::RequestsFile, named], "{flag}");
            assert!(
                e.to_string().starts_with(&format!(
                    "--requests-file: cannot be combined with {named} (each request in the file has its own)"
                )),
                "{e}"
            );
        }
        let e = load(&["http://127.0.0.1:8080/api", "--requests-file", MIX]).unwrap_err();
        assert_eq!(e.flags(), [Flag::RequestsFile, Flag::Url]);
        assert_eq!(
            e.to_string(),
            "--requests-file: the URL's path is `/api`, not `/`: the URL names the host; the file names the paths"
        );
    }

    #[test]
    fn a_bad_requests_file_names_the_flag_the_file_and_the_line() {
        let bad = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/requests/bad_weight.toml"
        );
        let e = load(&["http://127.0.0.1:8080/", "--requests-file", bad]).unwrap_err();
        assert_eq!(e.flags(), [Flag::RequestsFile]);
        assert_eq!(
            e.to_string(),
            format!("--requests-file {bad}:6:10: [[request]] 2: weight: must be a number above 0 (80, or 0.8), not 0")
        );
        let e = load(&["http://127.0.0.1:8080/", "--requests-file", "/no/such.toml"]).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--requests-file /no/such.toml: No such file"),
            "{e}"
        );
    }

    #[test]
    fn vegeta_targets_are_read_too() {
        let t = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../tests/fixtures/requests/targets.txt"
        );
        let w = load(&["http://127.0.0.1:8080/", "--requests-file", t])
            .unwrap()
            .workload
            .unwrap();
        assert_eq!(w.entries.len(), 2);
        assert_eq!(w.entries[1].method, "POST");
        assert!(matches!(w.entries[1].body, Body::Bytes(_)));
        let e = load(&["http://localhost:8080/", "--requests-file", t]).unwrap_err();
        assert!(
            e.to_string().contains(":2:1: target 1: `http://127.0.0.1:8080/path/to/dragon?item=ball` is not on the run's http://localhost:8080"),
            "{e}"
        );
    }

    #[test]
    fn a_regex_that_does_not_compile_names_the_flag() {
        let e = load(&["http://127.0.0.1:8080/", "--expect-body-regex", "a{2,1}"]).unwrap_err();
        assert_eq!(e.flags(), [Flag::ExpectBodyRegex]);
        assert!(
            e.to_string()
                .starts_with("--expect-body-regex: `a{2,1}` is not a regex"),
            "{e}"
        );
    }
}

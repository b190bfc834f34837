//! Validated configuration: `LoadConfig` is what `volley run` flags mean once checked.
//! Every error names the flag or file it came from (exit code 2).

pub mod suite;
pub mod threshold;

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{Arrivals, RunArgs};
use crate::plan::ramp::Ramp;
use crate::units::{self, StageSpec};

/// A configuration problem found before any load is sent.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A flag has a value that cannot be used.
    #[error("{flag}: {message}")]
    Flag {
        /// The flag as the user typed it, e.g. `-c/--connections`.
        flag: &'static str,
        /// What is wrong and, where it helps, what would be right.
        message: String,
    },
    /// A file named by a flag cannot be read or written.
    #[error("{flag} {path}: {source}")]
    File {
        /// The flag that named the file.
        flag: &'static str,
        /// The file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
}

impl ConfigError {
    fn flag(flag: &'static str, message: impl Into<String>) -> Self {
        ConfigError::Flag {
            flag,
            message: message.into(),
        }
    }
}

/// Where the parsed URL points.
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
}

/// Parses an `http://` URL. `https://` is refused until TLS exists.
pub fn parse_url(url: &str) -> Result<Target, ConfigError> {
    let bad = |m: String| ConfigError::flag("URL", m);
    let (scheme, rest) = url.split_once("://").ok_or_else(|| {
        bad(format!(
            "`{url}` is not a URL (expected http://host[:port]/path)"
        ))
    })?;
    match scheme.to_ascii_lowercase().as_str() {
        "http" => {}
        "https" => {
            return Err(bad(format!(
                "`{url}`: https is not supported yet (TLS is planned); use http://"
            )))
        }
        other => {
            return Err(bad(format!(
                "`{url}`: unsupported scheme `{other}` (use http://)"
            )))
        }
    }
    let split = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(split);
    if authority.contains('@') {
        return Err(bad(format!(
            "`{url}`: user information in URLs is not supported"
        )));
    }
    let (host, port) = if let Some(stripped) = authority.strip_prefix('[') {
        let end = stripped
            .find(']')
            .ok_or_else(|| bad(format!("`{url}`: unterminated IPv6 address")))?;
        let host = &stripped[..end];
        let after = &stripped[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(p),
            None if after.is_empty() => None,
            None => {
                return Err(bad(format!(
                    "`{url}`: unexpected `{after}` after the address"
                )))
            }
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        return Err(bad(format!("`{url}` has no host")));
    }
    if host.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(bad(format!("`{url}`: the host contains whitespace")));
    }
    let port = match port {
        None | Some("") => 80,
        Some(p) => p
            .parse::<u16>()
            .ok()
            .filter(|p| *p != 0)
            .ok_or_else(|| bad(format!("`{url}`: `{p}` is not a port (1-65535)")))?,
    };
    let mut path = tail.split('#').next().unwrap_or("").to_string();
    if path.is_empty() || path.starts_with('?') {
        path.insert(0, '/');
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad(format!(
            "`{url}`: the path contains spaces or control characters (percent-encode them)"
        )));
    }
    let host_literal = if host.contains(':') {
        format!("[{host}]")
    } else {
        host.clone()
    };
    let host_header = if port == 80 {
        host_literal
    } else {
        format!("{host_literal}:{port}")
    };
    Ok(Target {
        url: url.to_string(),
        host,
        port,
        path,
        host_header,
    })
}

/// Where `--json` goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JsonOut {
    /// Standard output (the summary moves to stderr).
    Stdout,
    /// A file.
    File(PathBuf),
}

/// The server monitor's settings (`--pid`, `--monitor-interval`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MonitorConfig {
    /// The server process (its descendants are monitored too).
    pub pid: i32,
    /// Sampling interval.
    pub interval: Duration,
}

/// Default `--monitor-interval`: 10 Hz.
pub const DEFAULT_MONITOR_INTERVAL: Duration = Duration::from_millis(100);

/// Validates `--pid` and `--monitor-interval` (whether the process exists is checked when the
/// monitor attaches).
pub fn monitor_config(
    pid: Option<i64>,
    interval: Option<Duration>,
) -> Result<Option<MonitorConfig>, ConfigError> {
    let Some(pid) = pid else {
        return match interval {
            Some(_) => Err(ConfigError::flag(
                "--monitor-interval",
                "needs --pid (the process to monitor)",
            )),
            None => Ok(None),
        };
    };
    if pid <= 0 || pid > i32::MAX as i64 {
        return Err(ConfigError::flag(
            "--pid",
            format!("`{pid}` is not a process id (a number from 1 up)"),
        ));
    }
    let interval = interval.unwrap_or(DEFAULT_MONITOR_INTERVAL);
    if interval < crate::monitor::server::MIN_INTERVAL
        || interval > crate::monitor::server::MAX_INTERVAL
    {
        return Err(ConfigError::flag(
            "--monitor-interval",
            "must be from 10ms to 10s",
        ));
    }
    Ok(Some(MonitorConfig {
        pid: pid as i32,
        interval,
    }))
}

/// Everything a `volley run` needs, validated.
#[derive(Debug, Clone)]
pub struct LoadConfig {
    /// The target.
    pub target: Target,
    /// Connections (capped at `-n`).
    pub connections: usize,
    /// Worker threads = min(-t, connections).
    pub threads: usize,
    /// Measured send window; `None` with `-n`.
    pub duration: Option<Duration>,
    /// Total measured requests (`-n`).
    pub requests: Option<u64>,
    /// Open-loop rate in requests per second; `None` is closed loop.
    pub rate_rps: Option<f64>,
    /// Arrival process of the open loop.
    pub arrivals: Arrivals,
    /// RNG seed for Poisson arrivals.
    pub seed: u64,
    /// Warm-up excluded from statistics.
    pub warmup: Duration,
    /// HTTP method.
    pub method: String,
    /// User headers in order, as given.
    pub headers: Vec<(String, String)>,
    /// Request body.
    pub body: Vec<u8>,
    /// Reuse connections (default) or one connection per request.
    pub keepalive: bool,
    /// Requests outstanding per connection.
    pub pipeline: usize,
    /// Per-request timeout from the write.
    pub timeout: Duration,
    /// `--json` destination.
    pub json: Option<JsonOut>,
    /// `--hdr-log` destination.
    pub hdr_log: Option<PathBuf>,
    /// Suppress the live progress line.
    pub quiet: bool,
    /// Server monitor (`--pid`).
    pub monitor: Option<MonitorConfig>,
    /// The command line, for the result.
    pub argv: Vec<String>,
    /// Pause between a response and the connection's next request.
    pub think_time: Duration,
    /// Virtual-user ramp (`--users` / `--stages`); `None` for plain closed or open loop.
    pub ramp: Option<RampConfig>,
    /// Pass/fail criteria (`--threshold`).
    pub thresholds: Vec<threshold::Threshold>,
    /// Report files to write (`--csv`, `--markdown`, `--html`).
    pub reports: ReportPaths,
}

/// Where the report files go (`--csv`, `--markdown`, `--html`, also of `volley report`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReportPaths {
    /// CSV, one row per cell.
    pub csv: Option<PathBuf>,
    /// Markdown tables.
    pub markdown: Option<PathBuf>,
    /// Self-contained HTML.
    pub html: Option<PathBuf>,
}

impl ReportPaths {
    /// (flag, path, format) of each requested file.
    pub fn each(&self) -> Vec<(&'static str, &PathBuf, crate::report::Format)> {
        use crate::report::Format;
        let mut v = Vec::new();
        if let Some(p) = &self.csv {
            v.push(("--csv", p, Format::Csv));
        }
        if let Some(p) = &self.markdown {
            v.push(("--markdown", p, Format::Markdown));
        }
        if let Some(p) = &self.html {
            v.push(("--html", p, Format::Html));
        }
        v
    }
}

/// A virtual-user run: the schedule and how it was asked for.
#[derive(Debug, Clone)]
pub struct RampConfig {
    /// Users over time.
    pub ramp: Ramp,
    /// `--users`, when given.
    pub users: Option<u64>,
    /// `--spawn-rate`, when given.
    pub spawn_rate: Option<f64>,
    /// `--stages`, when given.
    pub stages: Option<Vec<StageSpec>>,
}

/// DESIGN §3's flag rules for ramps: `--users` takes `-d` (which includes the ramp and may not
/// be shorter than it); `--stages` excludes `-d`, `-n` and `--users`; neither mixes with `-R`,
/// `-c`, `-n`, `--pipeline` or `--warmup`.
fn ramp_from_args(a: &RunArgs) -> Result<Option<RampConfig>, ConfigError> {
    if a.users.is_none() && a.stages.is_none() {
        if a.spawn_rate.is_some() {
            return Err(ConfigError::flag("--spawn-rate", "needs --users"));
        }
        return Ok(None);
    }
    let flag = if a.stages.is_some() {
        "--stages"
    } else {
        "--users"
    };
    let conflict =
        |other: &str| ConfigError::flag(flag, format!("cannot be combined with {other}"));
    if a.rate.is_some() {
        return Err(conflict(
            "-R/--rate (virtual users are closed loop; use -c with -R for open loop)",
        ));
    }
    if a.connections.is_some() {
        return Err(conflict(
            "-c/--connections (each user holds one connection)",
        ));
    }
    if a.requests.is_some() {
        return Err(conflict("-n/--requests"));
    }
    if a.warmup.is_some() {
        return Err(conflict("--warmup (make the first stage the warm-up)"));
    }
    if a.pipeline > 1 {
        return Err(conflict("--pipeline"));
    }
    if let Some(spec) = &a.stages {
        if a.users.is_some() || a.spawn_rate.is_some() {
            return Err(conflict(
                "--users/--spawn-rate (the stages say how many users, when)",
            ));
        }
        if a.duration.is_some() {
            return Err(conflict(
                "-d/--duration (the stages' durations add up to the run)",
            ));
        }
        let stages = units::parse_stages(spec).map_err(|m| ConfigError::flag("--stages", m))?;
        let ramp = Ramp::from_stages(&stages);
        if ramp.max_users() == 0 {
            return Err(ConfigError::flag("--stages", "no stage has any users"));
        }
        check_users(ramp.max_users(), "--stages")?;
        return Ok(Some(RampConfig {
            ramp,
            users: None,
            spawn_rate: None,
            stages: Some(stages),
        }));
    }
    let users = a.users.unwrap_or(0);
    if users == 0 {
        return Err(ConfigError::flag("--users", "must be at least 1"));
    }
    check_users(users, "--users")?;
    let spawn_rate = match &a.spawn_rate {
        Some(r) => {
            let v = units::parse_decimal(r).map_err(|m| ConfigError::flag("--spawn-rate", m))?;
            if v <= 0.0 {
                return Err(ConfigError::flag(
                    "--spawn-rate",
                    "must be above 0 users per second",
                ));
            }
            Some(v)
        }
        None => None,
    };
    // Without a spawn rate every user starts at once (like k6's --vus).
    let ramp_s = spawn_rate.map_or(0.0, |r| users as f64 / r);
    let total = match a.duration {
        Some(d) if d.as_secs_f64() + 1e-9 < ramp_s => {
            return Err(ConfigError::flag(
                "-d/--duration",
                format!(
                    "{} s is shorter than the ramp: {users} users at {} per second take {ramp_s:.1} s (-d includes the ramp)",
                    d.as_secs_f64(),
                    spawn_rate.unwrap_or(0.0)
                ),
            ))
        }
        Some(d) => d,
        // No -d: the ramp plus 10 s at full strength.
        None => Duration::from_secs_f64(ramp_s + 10.0),
    };
    let ramp = Ramp::spawn(
        users,
        spawn_rate.unwrap_or(f64::INFINITY),
        total.as_nanos() as u64,
    );
    Ok(Some(RampConfig {
        ramp,
        users: Some(users),
        spawn_rate,
        stages: None,
    }))
}

fn check_users(users: u64, flag: &'static str) -> Result<(), ConfigError> {
    if users > 1_000_000 {
        return Err(ConfigError::flag(flag, "more than 1,000,000 users"));
    }
    Ok(())
}

/// Largest request body volley builds in memory.
pub const MAX_BODY_BYTES: u64 = 1 << 30;

impl LoadConfig {
    /// Validates `volley run` flags. `cores` is how many CPUs volley may use.
    pub fn from_args(a: &RunArgs, cores: usize, argv: Vec<String>) -> Result<Self, ConfigError> {
        let target = parse_url(&a.url)?;
        let ramp = ramp_from_args(a)?;
        let connections_flag = a.connections.unwrap_or(10);
        if connections_flag == 0 {
            return Err(ConfigError::flag("-c/--connections", "must be at least 1"));
        }
        if connections_flag > 1_000_000 {
            return Err(ConfigError::flag(
                "-c/--connections",
                "more than 1,000,000 connections",
            ));
        }
        if a.threads == Some(0) {
            return Err(ConfigError::flag("-t/--threads", "must be at least 1"));
        }
        if a.duration.is_some() && a.requests.is_some() {
            return Err(ConfigError::flag(
                "-d/--duration",
                "cannot be combined with -n/--requests (pick one)",
            ));
        }
        if a.duration == Some(Duration::ZERO) {
            return Err(ConfigError::flag("-d/--duration", "must be longer than 0"));
        }
        if a.requests == Some(0) {
            return Err(ConfigError::flag("-n/--requests", "must be at least 1"));
        }
        let rate_rps = match &a.rate {
            None => None,
            Some(r) => {
                let v = units::parse_decimal(r).map_err(|m| ConfigError::flag("-R/--rate", m))?;
                if v <= 0.0 {
                    return Err(ConfigError::flag(
                        "-R/--rate",
                        "must be above 0 requests per second",
                    ));
                }
                if v > 100_000_000.0 {
                    return Err(ConfigError::flag(
                        "-R/--rate",
                        "more than 100M requests per second",
                    ));
                }
                Some(v)
            }
        };
        if a.arrivals == Arrivals::Poisson && rate_rps.is_none() {
            return Err(ConfigError::flag(
                "--arrivals",
                "poisson needs an open-loop rate (-R)",
            ));
        }
        if a.pipeline == 0 {
            return Err(ConfigError::flag("--pipeline", "must be at least 1"));
        }
        if a.pipeline > 1024 {
            return Err(ConfigError::flag(
                "--pipeline",
                "more than 1024 requests outstanding per connection",
            ));
        }
        if a.pipeline > 1 && a.no_keepalive {
            return Err(ConfigError::flag(
                "--pipeline",
                "needs keep-alive (drop --no-keepalive)",
            ));
        }
        if a.timeout.is_zero() {
            return Err(ConfigError::flag("--timeout", "must be longer than 0"));
        }
        let body = if let Some(b) = &a.body {
            b.clone().into_bytes()
        } else if let Some(p) = &a.body_file {
            std::fs::read(p).map_err(|e| ConfigError::File {
                flag: "--body-file",
                path: p.display().to_string(),
                source: e,
            })?
        } else if let Some(n) = a.body_size {
            if n > MAX_BODY_BYTES {
                return Err(ConfigError::flag(
                    "--body-size",
                    format!("{n} bytes is more than the 1 GiB volley holds in memory"),
                ));
            }
            generated_body(n as usize)
        } else {
            Vec::new()
        };
        let has_body = a.body.is_some() || a.body_file.is_some() || a.body_size.is_some();
        let method = match &a.method {
            Some(m) => {
                if m.is_empty() || !m.bytes().all(is_token_byte) {
                    return Err(ConfigError::flag(
                        "-m/--method",
                        format!("`{m}` is not an HTTP method"),
                    ));
                }
                m.clone()
            }
            None if has_body => "POST".to_string(),
            None => "GET".to_string(),
        };
        let mut headers = Vec::new();
        for h in &a.headers {
            let (name, value) = h.split_once(':').ok_or_else(|| {
                ConfigError::flag("-H/--header", format!("`{h}` is not \"Name: value\""))
            })?;
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(is_token_byte) {
                return Err(ConfigError::flag(
                    "-H/--header",
                    format!("`{h}`: `{name}` is not a header name"),
                ));
            }
            let value = value.trim();
            if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
                return Err(ConfigError::flag(
                    "-H/--header",
                    format!("`{name}`: the value contains a line break"),
                ));
            }
            headers.push((name.to_string(), value.to_string()));
        }
        let mut connections = match &ramp {
            Some(r) => r.ramp.max_users() as usize,
            None => connections_flag as usize,
        };
        if let Some(n) = a.requests {
            connections = connections.min(n.min(usize::MAX as u64) as usize);
        }
        if a.think_time.is_some() && rate_rps.is_some() {
            return Err(ConfigError::flag(
                "--think-time",
                "applies to users and closed loop, not to -R",
            ));
        }
        let threads = (a.threads.map(|t| t as usize).unwrap_or(cores.max(1)))
            .min(connections)
            .max(1);
        let duration = match (&ramp, a.duration, a.requests) {
            (Some(r), _, _) => Some(Duration::from_nanos(r.ramp.total_ns())),
            (None, None, None) => Some(Duration::from_secs(10)),
            (None, d, _) => d,
        };
        let json = a.json.as_ref().map(|j| {
            if j == "-" {
                JsonOut::Stdout
            } else {
                JsonOut::File(PathBuf::from(j))
            }
        });
        let monitor = monitor_config(a.pid, a.monitor_interval)?;
        let thresholds = a
            .threshold
            .iter()
            .map(|t| threshold::parse(t).map_err(|m| ConfigError::flag("--threshold", m)))
            .collect::<Result<Vec<_>, _>>()?;
        let reports = ReportPaths {
            csv: a.csv.clone(),
            markdown: a.markdown.clone(),
            html: a.html.clone(),
        };
        let seed = a.seed.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(1)
        });
        Ok(LoadConfig {
            target,
            connections,
            threads,
            duration,
            requests: a.requests,
            rate_rps,
            arrivals: a.arrivals,
            seed,
            warmup: a.warmup.unwrap_or(Duration::ZERO),
            method,
            headers,
            body,
            keepalive: !a.no_keepalive,
            pipeline: a.pipeline as usize,
            timeout: a.timeout,
            json,
            hdr_log: a.hdr_log.clone(),
            quiet: a.quiet,
            monitor,
            argv,
            think_time: a.think_time.unwrap_or(Duration::ZERO),
            ramp,
            thresholds,
            reports,
        })
    }
}

/// RFC 9110 token characters (method and header names).
fn is_token_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// A deterministic printable body for `--body-size` (a repeating alphabet, easy to spot in captures).
pub fn generated_body(n: usize) -> Vec<u8> {
    const PATTERN: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    PATTERN.iter().copied().cycle().take(n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let t = parse_url("http://127.0.0.1:8080/a?b=1").unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.path.as_str()),
            ("127.0.0.1", 8080, "/a?b=1")
        );
        assert_eq!(t.host_header, "127.0.0.1:8080");
        let t = parse_url("http://localhost").unwrap();
        assert_eq!(
            (t.port, t.path.as_str(), t.host_header.as_str()),
            (80, "/", "localhost")
        );
        let t = parse_url("http://[::1]:9000?x").unwrap();
        assert_eq!(
            (t.host.as_str(), t.path.as_str(), t.host_header.as_str()),
            ("::1", "/?x", "[::1]:9000")
        );
        assert!(parse_url("https://x/")
            .unwrap_err()
            .to_string()
            .contains("https is not supported"));
        assert!(parse_url("ftp://x/").is_err());
        assert!(parse_url("127.0.0.1:8080").is_err());
        assert!(parse_url("http://:80/").is_err());
        assert!(parse_url("http://h:99999/").is_err());
        assert!(parse_url("http://h:0/").is_err());
        assert!(parse_url("http://h/a b").is_err());
    }

    #[test]
    fn monitor_flags() {
        let ms = Duration::from_millis;
        assert_eq!(monitor_config(None, None).unwrap(), None);
        assert_eq!(
            monitor_config(Some(42), None).unwrap(),
            Some(MonitorConfig {
                pid: 42,
                interval: ms(100)
            })
        );
        assert_eq!(
            monitor_config(Some(42), Some(ms(250)))
                .unwrap()
                .unwrap()
                .interval,
            ms(250)
        );
        let err = |p, i| monitor_config(p, i).unwrap_err().to_string();
        assert!(err(None, Some(ms(100))).starts_with("--monitor-interval: needs --pid"));
        assert!(err(Some(0), None).starts_with("--pid:"));
        assert!(err(Some(-5), None).starts_with("--pid:"));
        assert!(err(Some(1 << 40), None).starts_with("--pid:"));
        assert!(err(Some(1), Some(ms(1))).starts_with("--monitor-interval:"));
        assert!(err(Some(1), Some(ms(60_000))).starts_with("--monitor-interval:"));
    }
}

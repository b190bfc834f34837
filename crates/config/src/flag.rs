//! Typed flag ids: every check of a `volley run` flag names its flag with one of these, so a
//! message says `-c/--connections: …` on the command line and a suite error points at the
//! scenario key `connections` — found by the id, not by searching the message.

/// A flag of `volley run` that a check can name (also a suite scenario key, see [`Flag::key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Flag {
    /// The URL argument.
    Url,
    /// `-c/--connections`.
    Connections,
    /// `-t/--threads`.
    Threads,
    /// `-d/--duration`.
    Duration,
    /// `-n/--requests`.
    Requests,
    /// `-R/--rate`.
    Rate,
    /// `--arrivals`.
    Arrivals,
    /// `--seed`.
    Seed,
    /// `--users`.
    Users,
    /// `--spawn-rate`.
    SpawnRate,
    /// `--stages`.
    Stages,
    /// `--think-time`.
    ThinkTime,
    /// `--warmup`.
    Warmup,
    /// `-m/--method`.
    Method,
    /// `-H/--header`.
    Header,
    /// `--body`.
    Body,
    /// `--body-file`.
    BodyFile,
    /// `--body-size`.
    BodySize,
    /// `--no-keepalive`.
    NoKeepalive,
    /// `--pipeline`.
    Pipeline,
    /// `--io`.
    Io,
    /// `--timeout`.
    Timeout,
    /// `--pid`.
    Pid,
    /// `--monitor-interval`.
    MonitorInterval,
    /// `--gc-log`.
    GcLog,
    /// `--threshold`.
    Threshold,
    /// `--max-connections`.
    MaxConnections,
    /// `--allow-shortfall`.
    AllowShortfall,
    /// `-k/--insecure`.
    Insecure,
    /// `--cacert`.
    Cacert,
    /// `--cert`.
    Cert,
    /// `--key`.
    Key,
    /// `--no-tls-resume`.
    NoTlsResume,
    /// `--unix-socket`.
    UnixSocket,
    /// `--http1.1`.
    Http1,
    /// `--http2`.
    Http2,
    /// `--h2c`.
    H2c,
    /// `--streams`.
    Streams,
    /// `--h2-window`.
    H2Window,
    /// `--requests-file`.
    RequestsFile,
    /// `--expect-status`.
    ExpectStatus,
    /// `--expect-body-contains`.
    ExpectBodyContains,
    /// `--expect-body-regex`.
    ExpectBodyRegex,
    /// `--expect-header`.
    ExpectHeader,
    /// `--expect-size`.
    ExpectSize,
    /// `--verify`.
    Verify,
    /// `--shard`.
    Shard,
    /// `--start-at`.
    StartAt,
    /// `--clock-budget`.
    ClockBudget,
    /// `--max-late`.
    MaxLate,
}

/// (flag, as messages spell it, long name, suite scenario key).
const FLAGS: &[(Flag, &str, &str, &str)] = &[
    (Flag::Url, "URL", "", "path"),
    (
        Flag::Connections,
        "-c/--connections",
        "connections",
        "connections",
    ),
    (Flag::Threads, "-t/--threads", "threads", "threads"),
    (Flag::Duration, "-d/--duration", "duration", "duration"),
    (Flag::Requests, "-n/--requests", "requests", "requests"),
    (Flag::Rate, "-R/--rate", "rate", "rate"),
    (Flag::Arrivals, "--arrivals", "arrivals", "arrivals"),
    (Flag::Seed, "--seed", "seed", "seed"),
    (Flag::Users, "--users", "users", "users"),
    (Flag::SpawnRate, "--spawn-rate", "spawn-rate", "spawn_rate"),
    (Flag::Stages, "--stages", "stages", "stages"),
    (Flag::ThinkTime, "--think-time", "think-time", "think_time"),
    (Flag::Warmup, "--warmup", "warmup", "warmup"),
    (Flag::Method, "-m/--method", "method", "method"),
    (Flag::Header, "-H/--header", "header", "headers"),
    (Flag::Body, "--body", "body", "body"),
    (Flag::BodyFile, "--body-file", "body-file", "body_file"),
    (Flag::BodySize, "--body-size", "body-size", "body_size"),
    (
        Flag::NoKeepalive,
        "--no-keepalive",
        "no-keepalive",
        "keepalive",
    ),
    (Flag::Pipeline, "--pipeline", "pipeline", "pipeline"),
    (Flag::Io, "--io", "io", "io"),
    (Flag::Timeout, "--timeout", "timeout", "timeout"),
    (Flag::Pid, "--pid", "pid", "pid"),
    (
        Flag::MonitorInterval,
        "--monitor-interval",
        "monitor-interval",
        "monitor_interval",
    ),
    (Flag::GcLog, "--gc-log", "gc-log", "gc_log"),
    (Flag::Threshold, "--threshold", "threshold", "thresholds"),
    (
        Flag::MaxConnections,
        "--max-connections",
        "max-connections",
        "max_connections",
    ),
    (
        Flag::AllowShortfall,
        "--allow-shortfall",
        "allow-shortfall",
        "allow_shortfall",
    ),
    (Flag::Insecure, "-k/--insecure", "insecure", "insecure"),
    (Flag::Cacert, "--cacert", "cacert", "cacert"),
    (Flag::Cert, "--cert", "cert", "cert"),
    (Flag::Key, "--key", "key", "key"),
    (
        Flag::NoTlsResume,
        "--no-tls-resume",
        "no-tls-resume",
        "no_tls_resume",
    ),
    (
        Flag::UnixSocket,
        "--unix-socket",
        "unix-socket",
        "unix_socket",
    ),
    (Flag::Http1, "--http1.1", "http1.1", "protocol"),
    (Flag::Http2, "--http2", "http2", "protocol"),
    (Flag::H2c, "--h2c", "h2c", "protocol"),
    (Flag::Streams, "--streams", "streams", "streams"),
    (Flag::H2Window, "--h2-window", "h2-window", "h2_window"),
    (
        Flag::RequestsFile,
        "--requests-file",
        "requests-file",
        "requests_file",
    ),
    (
        Flag::ExpectStatus,
        "--expect-status",
        "expect-status",
        "expect_status",
    ),
    (
        Flag::ExpectBodyContains,
        "--expect-body-contains",
        "expect-body-contains",
        "expect_body_contains",
    ),
    (
        Flag::ExpectBodyRegex,
        "--expect-body-regex",
        "expect-body-regex",
        "expect_body_regex",
    ),
    (
        Flag::ExpectHeader,
        "--expect-header",
        "expect-header",
        "expect_header",
    ),
    (
        Flag::ExpectSize,
        "--expect-size",
        "expect-size",
        "expect_size",
    ),
    (Flag::Verify, "--verify", "verify", "verify"),
    (Flag::Shard, "--shard", "shard", "shard"),
    (Flag::StartAt, "--start-at", "start-at", "start_at"),
    (
        Flag::ClockBudget,
        "--clock-budget",
        "clock-budget",
        "clock_budget",
    ),
    (Flag::MaxLate, "--max-late", "max-late", "max_late"),
];

impl Flag {
    fn entry(self) -> &'static (Flag, &'static str, &'static str, &'static str) {
        FLAGS
            .iter()
            .find(|e| e.0 == self)
            .expect("every flag is listed")
    }

    /// As messages spell it: `-c/--connections`, `--warmup`, `URL`.
    pub(crate) fn spelling(self) -> &'static str {
        self.entry().1
    }

    /// The suite scenario key that sets it (`connections`, `keepalive`, `headers`, `path`).
    pub fn key(self) -> &'static str {
        self.entry().3
    }

    /// The flag whose long name is `long` (`connections`, `body-size`); the URL has none.
    pub(crate) fn from_long(long: &str) -> Option<Flag> {
        FLAGS
            .iter()
            .find(|e| !e.2.is_empty() && e.2 == long)
            .map(|e| e.0)
    }
}

impl std::fmt::Display for Flag {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.spelling())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_and_spellings_agree() {
        for (flag, spelling, long, _) in FLAGS {
            if !long.is_empty() {
                assert_eq!(Flag::from_long(long), Some(*flag));
                assert!(spelling.ends_with(&format!("--{long}")), "{spelling}");
            }
        }
        assert_eq!(Flag::from_long("json"), None);
        assert_eq!(Flag::NoKeepalive.key(), "keepalive");
    }
}

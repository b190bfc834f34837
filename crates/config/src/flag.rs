//! Typed flag ids: every check of a `volley run` flag names its flag with one of these, so a
//! message says `-c/--connections: …` on the command line and a suite error points at the
//! scenario key `connections` — found by the id, not by searching the message. Each flag is
//! one line of the list below (its `RunFlags` field and its suite key); how it is spelled
//! comes from clap's definition of `RunFlags`, so the two cannot drift.

use std::sync::OnceLock;

use clap::Args;

use crate::RunFlags;

/// Defines [`Flag`] from one list: `Variant: "RunFlags field" => "suite scenario key"`.
macro_rules! flags {
    ($($variant:ident: $id:literal => $key:literal,)*) => {
        /// A flag of `volley run` that a check can name (also a suite scenario key, see
        /// [`Flag::key`]); it prints as the command line spells it (`-c/--connections`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum Flag {
            $(
                #[doc = concat!("The `", $id, "` flag (suite key `", $key, "`).")]
                $variant,
            )*
        }

        impl Flag {
            /// Every flag, in the order of the list.
            const ALL: &'static [Flag] = &[$(Flag::$variant),*];

            /// Its id in clap's `RunFlags` (the field's name).
            fn id(self) -> &'static str {
                match self {
                    $(Flag::$variant => $id,)*
                }
            }

            /// The suite scenario key that sets it (`connections`, `keepalive`, `headers`,
            /// `path`).
            pub fn key(self) -> &'static str {
                match self {
                    $(Flag::$variant => $key,)*
                }
            }
        }
    };
}

flags! {
    Url: "url" => "path",
    Connections: "connections" => "connections",
    Threads: "threads" => "threads",
    Duration: "duration" => "duration",
    Requests: "requests" => "requests",
    Rate: "rate" => "rate",
    RateStages: "rate_stages" => "rate_stages",
    Arrivals: "arrivals" => "arrivals",
    Seed: "seed" => "seed",
    Users: "users" => "users",
    SpawnRate: "spawn_rate" => "spawn_rate",
    Stages: "stages" => "stages",
    ThinkTime: "think_time" => "think_time",
    Warmup: "warmup" => "warmup",
    Method: "method" => "method",
    Header: "headers" => "headers",
    Body: "body" => "body",
    BodyFile: "body_file" => "body_file",
    BodySize: "body_size" => "body_size",
    NoKeepalive: "no_keepalive" => "keepalive",
    Pipeline: "pipeline" => "pipeline",
    Io: "io" => "io",
    Timeout: "timeout" => "timeout",
    Pid: "pid" => "pid",
    MonitorInterval: "monitor_interval" => "monitor_interval",
    GcLog: "gc_log" => "gc_log",
    Profile: "profile" => "profile",
    ProfileFrequency: "profile_frequency" => "profile_frequency",
    ProfileOffCpu: "profile_off_cpu" => "profile_off_cpu",
    Threshold: "threshold" => "thresholds",
    MaxConnections: "max_connections" => "max_connections",
    AllowShortfall: "allow_shortfall" => "allow_shortfall",
    Insecure: "insecure" => "insecure",
    Cacert: "cacert" => "cacert",
    Cert: "cert" => "cert",
    Key: "key" => "key",
    NoTlsResume: "no_tls_resume" => "no_tls_resume",
    UnixSocket: "unix_socket" => "unix_socket",
    Proxy: "proxy" => "proxy",
    Noproxy: "noproxy" => "noproxy",
    Proxytunnel: "proxytunnel" => "proxytunnel",
    Http1: "http1_1" => "protocol",
    Http2: "http2" => "protocol",
    H2c: "h2c" => "protocol",
    Http3: "http3" => "protocol",
    ZeroRtt: "zero_rtt" => "0rtt",
    Streams: "streams" => "streams",
    H2Window: "h2_window" => "h2_window",
    WsBinary: "ws_binary" => "ws_binary",
    Grpc: "grpc" => "grpc",
    Proto: "proto" => "proto",
    ImportPath: "import_path" => "import_path",
    Reflect: "reflect" => "reflect",
    RequestsFile: "requests_file" => "requests_file",
    ExpectStatus: "expect_status" => "expect_status",
    ExpectBodyContains: "expect_body_contains" => "expect_body_contains",
    ExpectBodyRegex: "expect_body_regex" => "expect_body_regex",
    ExpectHeader: "expect_header" => "expect_header",
    ExpectSize: "expect_size" => "expect_size",
    ExpectJson: "expect_json" => "expect_json",
    Verify: "verify" => "verify",
    Shard: "shard" => "shard",
    StartAt: "start_at" => "start_at",
    ClockBudget: "clock_budget" => "clock_budget",
    MaxLate: "max_late" => "max_late",
}

/// What clap says of each flag, in [`Flag::ALL`]'s order: (spelling, long name).
fn spellings() -> &'static [(String, Option<String>)] {
    static SPELLINGS: OnceLock<Vec<(String, Option<String>)>> = OnceLock::new();
    SPELLINGS.get_or_init(|| {
        let cmd = RunFlags::augment_args(clap::Command::new("run"));
        Flag::ALL
            .iter()
            .map(|f| {
                let arg = cmd
                    .get_arguments()
                    .find(|a| a.get_id() == f.id())
                    .unwrap_or_else(|| panic!("RunFlags has no argument `{}`", f.id()));
                let long = arg.get_long().map(str::to_string);
                let spelling = match (arg.get_short(), &long) {
                    (Some(s), Some(l)) => format!("-{s}/--{l}"),
                    (None, Some(l)) => format!("--{l}"),
                    _ => arg
                        .get_value_names()
                        .and_then(|n| n.first())
                        .map_or_else(|| f.id().to_uppercase(), |n| n.to_string()),
                };
                (spelling, long)
            })
            .collect()
    })
}

impl Flag {
    fn index(self) -> usize {
        Flag::ALL
            .iter()
            .position(|f| *f == self)
            .expect("every flag is in ALL")
    }

    /// As messages spell it: `-c/--connections`, `--warmup`, `URL`.
    pub(crate) fn spelling(self) -> &'static str {
        &spellings()[self.index()].0
    }

    /// The flag whose long name is `long` (`connections`, `body-size`); the URL has none.
    pub(crate) fn from_long(long: &str) -> Option<Flag> {
        let i = spellings()
            .iter()
            .position(|(_, l)| l.as_deref() == Some(long))?;
        Some(Flag::ALL[i])
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
    fn spellings_come_from_clap() {
        assert_eq!(Flag::Url.spelling(), "URL");
        assert_eq!(Flag::Connections.spelling(), "-c/--connections");
        assert_eq!(Flag::Threads.spelling(), "-t/--threads");
        assert_eq!(Flag::Duration.spelling(), "-d/--duration");
        assert_eq!(Flag::Requests.spelling(), "-n/--requests");
        assert_eq!(Flag::Rate.spelling(), "-R/--rate");
        assert_eq!(Flag::Arrivals.spelling(), "--arrivals");
        assert_eq!(Flag::Seed.spelling(), "--seed");
        assert_eq!(Flag::Users.spelling(), "--users");
        assert_eq!(Flag::SpawnRate.spelling(), "--spawn-rate");
        assert_eq!(Flag::Stages.spelling(), "--stages");
        assert_eq!(Flag::ThinkTime.spelling(), "--think-time");
        assert_eq!(Flag::Warmup.spelling(), "--warmup");
        assert_eq!(Flag::Method.spelling(), "-m/--method");
        assert_eq!(Flag::Header.spelling(), "-H/--header");
        assert_eq!(Flag::Body.spelling(), "--body");
        assert_eq!(Flag::BodyFile.spelling(), "--body-file");
        assert_eq!(Flag::BodySize.spelling(), "--body-size");
        assert_eq!(Flag::NoKeepalive.spelling(), "--no-keepalive");
        assert_eq!(Flag::Pipeline.spelling(), "--pipeline");
        assert_eq!(Flag::Io.spelling(), "--io");
        assert_eq!(Flag::Timeout.spelling(), "--timeout");
        assert_eq!(Flag::Pid.spelling(), "--pid");
        assert_eq!(Flag::MonitorInterval.spelling(), "--monitor-interval");
        assert_eq!(Flag::GcLog.spelling(), "--gc-log");
        assert_eq!(Flag::Threshold.spelling(), "--threshold");
        assert_eq!(Flag::MaxConnections.spelling(), "--max-connections");
        assert_eq!(Flag::AllowShortfall.spelling(), "--allow-shortfall");
        assert_eq!(Flag::Insecure.spelling(), "-k/--insecure");
        assert_eq!(Flag::Cacert.spelling(), "--cacert");
        assert_eq!(Flag::Cert.spelling(), "--cert");
        assert_eq!(Flag::Key.spelling(), "--key");
        assert_eq!(Flag::NoTlsResume.spelling(), "--no-tls-resume");
        assert_eq!(Flag::UnixSocket.spelling(), "--unix-socket");
        assert_eq!(Flag::Proxy.spelling(), "-x/--proxy");
        assert_eq!(Flag::Noproxy.spelling(), "--noproxy");
        assert_eq!(Flag::Proxytunnel.spelling(), "--proxytunnel");
        assert_eq!(Flag::Http1.spelling(), "--http1.1");
        assert_eq!(Flag::Http2.spelling(), "--http2");
        assert_eq!(Flag::H2c.spelling(), "--h2c");
        assert_eq!(Flag::Streams.spelling(), "--streams");
        assert_eq!(Flag::H2Window.spelling(), "--h2-window");
        assert_eq!(Flag::Reflect.spelling(), "--reflect");
        assert_eq!(Flag::RequestsFile.spelling(), "--requests-file");
        assert_eq!(Flag::ExpectStatus.spelling(), "--expect-status");
        assert_eq!(
            Flag::ExpectBodyContains.spelling(),
            "--expect-body-contains"
        );
        assert_eq!(Flag::ExpectBodyRegex.spelling(), "--expect-body-regex");
        assert_eq!(Flag::ExpectHeader.spelling(), "--expect-header");
        assert_eq!(Flag::ExpectSize.spelling(), "--expect-size");
        assert_eq!(Flag::Verify.spelling(), "--verify");
        assert_eq!(Flag::Shard.spelling(), "--shard");
        assert_eq!(Flag::StartAt.spelling(), "--start-at");
        assert_eq!(Flag::ClockBudget.spelling(), "--clock-budget");
        assert_eq!(Flag::MaxLate.spelling(), "--max-late");
        assert_eq!(Flag::from_long("connections"), Some(Flag::Connections));
        assert_eq!(Flag::from_long("http1.1"), Some(Flag::Http1));
        assert_eq!(Flag::from_long("json"), None);
        assert_eq!(Flag::NoKeepalive.key(), "keepalive");
    }
}

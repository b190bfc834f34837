//! Warnings a result carries (`warnings` in a RunResult): typed where they are made and read,
//! sentences in the JSON, as they have always been.
//!
//! Each warning is made by one constructor that takes its numbers as numbers, so every place
//! that warns is checked by the compiler, and code that reacts to a warning (the suite table
//! leaves out the closed-loop note) matches on [`WarningKind`] rather than on words. A file
//! read back recognises its sentences by the patterns next to the constructors; a sentence
//! volley does not know (a newer version's) is kept as [`WarningKind::Other`].
//! Warnings that make a headline number untrustworthy are [`WarningKind::is_headline`]; their
//! constructors are in `headline`; those of `volley merge` in `merge`.

mod headline;
mod merge;

pub use headline::{SharedCpu, Shortfall};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::result::OtherProcess;
use crate::units::{quoted_bytes, thousands};

/// Bytes of what a server sent that a warning shows (the engine keeps one more, to tell a cut
/// sample).
pub const SAMPLE_SHOWN: usize = crate::stats::recorder::SAMPLE_BYTES - 1;

/// What a warning is about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum WarningKind {
    /// Closed-loop latency hides queueing (coordinated omission).
    ClosedLoop,
    /// Volley used (nearly) all the CPU it had: the numbers may describe the client.
    ClientSaturated,
    /// Other processes took volley's CPUs (its threads waited on run queues): the numbers
    /// describe a busy machine (headline).
    ClientStarved,
    /// The open loop sent requests late (schedule lag p99 above 1 ms).
    SendLag,
    /// Some connections could never be opened.
    NeverConnected,
    /// Connection attempts failed (all connections were opened at some point).
    ConnectFailures,
    /// Responses with a 4xx/5xx status (completed, not errors).
    FailedStatuses,
    /// Errors are not in the latency statistics.
    ErrorsExcluded,
    /// The server spoke first on fresh connections.
    Unsolicited,
    /// Requests were due but never sent.
    Unsent,
    /// The monitored server exited during the window.
    ServerExited,
    /// Something the server monitor noticed (processes of the tree that exited).
    ServerNote,
    /// The server's syscalls could not be counted.
    SyscallsNotCounted,
    /// `merge`: shards differ in a setting; the first shard's is shown.
    ShardsDiffer,
    /// `merge`: the shards' stages differ in length.
    StagesDiffer,
    /// `merge`: schedule lag cannot be merged exactly.
    LagNotMerged,
    /// `merge`: per-second percentiles are null where several shards had responses.
    SeriesPercentilesNulled,
    /// `merge --force`: the shards started far apart.
    ForcedMerge,
    /// `merge`: one shard monitored the server.
    ServerFromOneShard,
    /// `merge`: several shards monitored a server; no server block.
    ServerNotMerged,
    /// `merge`: the shards' thresholds are not carried over.
    ThresholdsNotCarried,
    /// Open loop: the achieved rate fell more than 1 % short of `-R` (headline; exit 1 unless
    /// `--allow-shortfall`).
    Shortfall,
    /// Open loop: the corrected percentiles include unsent requests at their lower bounds.
    LowerBound,
    /// More than 1 % of the responses had a status of 400 or more (headline).
    FailedResponses,
    /// More than 1 % of the responses failed a check (`--expect-*`) (headline).
    FailedChecks,
    /// The machine had no idle CPU and volley and the server were not pinned apart (headline).
    SharedMachine,
    /// Keep-alive was asked for, but the server closed (nearly) every connection after one
    /// response.
    ServerClosedEach,
    /// The first bytes of what the server sent that volley could not use: a response it could
    /// not parse, or bytes before any request.
    ServerBytes,
    /// `--io auto` chose io_uring but it could not be used (on every thread or some): epoll
    /// moved the bytes there. Not a headline: the numbers are right, the client may have spent
    /// more CPU on them.
    IoFallback,
    /// `--prometheus-remote-write`: pushes failed. Not a headline: the run's numbers are
    /// its own, whatever the metrics endpoint did.
    RemoteWrite,
    /// `--otlp-endpoint`: pushes failed. Not a headline, likewise.
    OtlpExport,
    /// A sentence this version of volley does not know.
    Other,
}

impl WarningKind {
    /// Whether the summary leads with it: it makes a headline number untrustworthy.
    pub fn is_headline(self) -> bool {
        matches!(
            self,
            WarningKind::Shortfall
                | WarningKind::LowerBound
                | WarningKind::FailedResponses
                | WarningKind::FailedChecks
                | WarningKind::SharedMachine
                | WarningKind::ClientSaturated
                | WarningKind::ClientStarved
                | WarningKind::ServerExited
        )
    }
}

/// One warning: its kind and the sentence people read.
#[derive(Debug, Clone, PartialEq)]
pub struct Warning {
    kind: WarningKind,
    text: String,
}

/// Each kind's sentence with `*` where its values go: what a file's sentences are recognised
/// by. The order matters where one pattern is the start of another (the more specific first).
const PATTERNS: &[(WarningKind, &str)] = &[
    (WarningKind::ClosedLoop, "closed loop: *"),
    (WarningKind::ClientSaturated, "client saturated: *"),
    (WarningKind::ClientStarved, "volley starved: *"),
    (WarningKind::SendLag, "send lag p99 is *"),
    (
        WarningKind::NeverConnected,
        "* of * connections could not be opened at all (* connect errors*)",
    ),
    (
        WarningKind::ConnectFailures,
        "* connection attempts failed*",
    ),
    (
        WarningKind::FailedStatuses,
        "* responses had a 4xx/5xx status *",
    ),
    (
        WarningKind::ErrorsExcluded,
        "* errors are not in the latency statistics",
    ),
    (
        WarningKind::Unsolicited,
        "* fresh connections received bytes before any request was sent*",
    ),
    (
        WarningKind::ServerClosedEach,
        "the server closed * for * response*: keep-alive was asked for*",
    ),
    (
        WarningKind::ServerBytes,
        "the server sent what is not a valid HTTP response (*): \"*",
    ),
    (
        WarningKind::ServerBytes,
        "the server sent bytes before any request: \"*",
    ),
    (WarningKind::ServerBytes, "* protocol errors (the first: *)"),
    (
        WarningKind::Unsent,
        "* requests were due but never sent (the connections were busy or down)",
    ),
    (
        WarningKind::ServerExited,
        "the monitored server (pid *) exited *",
    ),
    (
        WarningKind::ServerFromOneShard,
        "server: monitored by one shard (*",
    ),
    (WarningKind::ServerNotMerged, "server is null: *"),
    (WarningKind::ServerNote, "server: *"),
    (WarningKind::IoFallback, "io_uring not used (*): *"),
    (WarningKind::RemoteWrite, "remote write: *"),
    (WarningKind::OtlpExport, "OTLP export: *"),
    (
        WarningKind::SyscallsNotCounted,
        "server syscalls not counted: *",
    ),
    (WarningKind::StagesDiffer, "the shards' --stages differ *"),
    (WarningKind::ShardsDiffer, "the shards differ in *"),
    (WarningKind::LagNotMerged, "schedule_lag_us is null: *"),
    (
        WarningKind::SeriesPercentilesNulled,
        "timeseries: latency_p50_us and latency_p99_us are null *",
    ),
    (WarningKind::ForcedMerge, "merged with --force: *"),
    (
        WarningKind::ThresholdsNotCarried,
        "the shards' --threshold results are not carried over*",
    ),
    (WarningKind::Shortfall, "target rate not reached: *"),
    (
        WarningKind::LowerBound,
        "corrected percentiles are lower bounds: *",
    ),
    (
        WarningKind::FailedChecks,
        "* of the responses failed a check *",
    ),
    (WarningKind::FailedResponses, "all * responses were *"),
    (WarningKind::FailedResponses, "* of the responses were *"),
    (WarningKind::SharedMachine, "shared machine: *"),
];

impl Warning {
    fn new(kind: WarningKind, text: String) -> Self {
        Warning { kind, text }
    }

    /// What the warning is about.
    pub fn kind(&self) -> WarningKind {
        self.kind
    }

    /// The sentence.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// A sentence read from a file, recognised by its pattern.
    pub fn from_text(text: impl Into<String>) -> Self {
        let text = text.into();
        Warning {
            kind: recognise(&text),
            text,
        }
    }

    /// Every closed-loop run (virtual users and pipelining too): latency runs from each send
    /// (a pipelined request's includes its wait behind the others on its connection), and the
    /// time a request would have waited before it could be sent is not counted.
    pub fn closed_loop() -> Self {
        Self::new(
            WarningKind::ClosedLoop,
            "closed loop: latency runs from each send, hiding any wait to send (coordinated omission); -R corrects it".into(),
        )
    }

    /// The client self-check found volley busy in `fraction` of the seconds.
    pub fn client_saturated(capacity_cores: f64, fraction: f64) -> Self {
        Self::new(WarningKind::ClientSaturated, format!(
            "client saturated: volley used ≥90% of its {capacity_cores} core(s), or one worker ≥95% of a core, in {:.0}% of seconds; these numbers may describe volley, not the server (give volley more cores, or a lighter share of the load)",
            fraction * 100.0
        ))
    }

    /// volley's worker threads waited for a CPU while volley was not busy, in `starved` of
    /// `seconds` seconds (up to `wait_pct` of a second, volley at most `cpu_pct` of a core):
    /// `others` took its CPUs. Those in `server_pids` (the monitored server's, `--pid`) are
    /// named as the server: then volley and the server shared CPUs, which pinning them apart
    /// cures.
    pub fn client_starved(
        (starved, seconds): (usize, usize),
        wait_pct: f64,
        cpu_pct: f64,
        others: &[OtherProcess],
        server_pids: &[i32],
    ) -> Self {
        let is_server = |p: &OtherProcess| server_pids.contains(&p.pid);
        let who = if others.is_empty() {
            "other processes took its CPUs".to_string()
        } else {
            let named: Vec<String> = others
                .iter()
                .map(|p| {
                    let what = if is_server(p) { "the server " } else { "" };
                    format!(
                        "{what}{} (pid {}) {:.0} % of a core",
                        p.command, p.pid, p.cpu_pct
                    )
                })
                .collect();
            format!(
                "other processes took its CPUs, the busiest {}",
                named.join(", ")
            )
        };
        let what = if others.iter().any(is_server) {
            "volley and the server sharing CPUs, not the server alone (pin them to different CPUs: taskset -c 0 <server>, taskset -c 1 volley …)"
        } else {
            "a busy machine, not the server (run where nothing else runs, or pin volley to CPUs of its own)"
        };
        Self::new(WarningKind::ClientStarved, format!(
            "volley starved: its worker threads waited up to {wait_pct:.0} % of a second for a CPU in {starved} of {seconds} seconds while volley used at most {cpu_pct:.0} % of a core; {who}; these numbers describe {what}"
        ))
    }

    /// The open loop's schedule lag p99 was above 1 ms.
    pub fn send_lag(p99_us: u64) -> Self {
        Self::new(WarningKind::SendLag, format!(
            "send lag p99 is {:.2} ms (> 1 ms): volley itself sent requests late, so the client, not the server, shaped part of the latency",
            p99_us as f64 / 1000.0
        ))
    }

    /// `never` of `connections` connections were never opened; `first`: why the first connect
    /// failed, when known (a TLS handshake's reason, a reset, a timeout).
    pub fn never_connected(
        never: u64,
        connections: u64,
        connect_errors: u64,
        first: Option<&str>,
    ) -> Self {
        let why = first.map_or(String::new(), |r| format!("; the first: {r}"));
        Self::new(
            WarningKind::NeverConnected,
            format!(
                "{} of {} connections could not be opened at all ({} connect errors{why})",
                thousands(never),
                thousands(connections),
                thousands(connect_errors)
            ),
        )
    }

    /// Connection attempts failed, though every connection opened at some point; `first`:
    /// why the first of them failed, when known (a TLS handshake's reason, a reset, a timeout).
    pub fn connect_failures(count: u64, first: Option<&str>) -> Self {
        let why = first.map_or(String::new(), |r| format!(" (the first: {r})"));
        Self::new(
            WarningKind::ConnectFailures,
            format!("{} connection attempts failed{why}", thousands(count)),
        )
    }

    /// Responses with a status of 400 or more.
    pub fn failed_statuses(count: u64) -> Self {
        Self::new(
            WarningKind::FailedStatuses,
            format!(
                "{} responses had a 4xx/5xx status (counted as completed, not as errors)",
                thousands(count)
            ),
        )
    }

    /// Errors are kept out of the latency histograms.
    pub fn errors_excluded(count: u64) -> Self {
        Self::new(
            WarningKind::ErrorsExcluded,
            format!(
                "{} errors are not in the latency statistics",
                thousands(count)
            ),
        )
    }

    /// Fresh connections on which the server spoke first.
    pub fn unsolicited(count: u64) -> Self {
        Self::new(WarningKind::Unsolicited, format!(
            "{} fresh connections received bytes before any request was sent (a server that speaks first); each was dropped and replaced after a back-off",
            thousands(count)
        ))
    }

    /// Keep-alive runs where the server ended `closed` connections for `completed` responses,
    /// (nearly) one each: every request paid for a new connection.
    pub fn server_closed_each(closed: u64, completed: u64) -> Self {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        Self::new(WarningKind::ServerClosedEach, format!(
            "the server closed {} connection{} for {} response{}: keep-alive was asked for, but nearly every request needed a new connection",
            thousands(closed),
            s(closed),
            thousands(completed),
            s(completed)
        ))
    }

    /// The first response that could not be parsed: the parser's `reason` and the start of the
    /// `bytes`, escaped (a sample of [`SAMPLE_SHOWN`] bytes; longer ones end with `…`).
    pub fn not_http(reason: &str, bytes: &[u8]) -> Self {
        Self::new(
            WarningKind::ServerBytes,
            format!(
                "the server sent what is not a valid HTTP response ({reason}): {}{}",
                quoted_bytes(bytes, SAMPLE_SHOWN),
                tls_hint(bytes)
            ),
        )
    }

    /// Protocol errors with no bytes to quote (an HTTP/2 or TLS failure, a refused or
    /// malformed HTTP/2 response): how many, and why the first one happened.
    pub fn protocol_errors(count: u64, first: &str) -> Self {
        Self::new(
            WarningKind::ServerBytes,
            format!("{} protocol errors (the first: {first})", thousands(count)),
        )
    }

    /// The first bytes a server sent on a fresh connection before any request, escaped.
    pub fn sent_first(bytes: &[u8]) -> Self {
        Self::new(
            WarningKind::ServerBytes,
            format!(
                "the server sent bytes before any request: {}{}",
                quoted_bytes(bytes, SAMPLE_SHOWN),
                tls_hint(bytes)
            ),
        )
    }

    /// Requests due but never written.
    pub fn unsent(count: u64) -> Self {
        Self::new(
            WarningKind::Unsent,
            format!(
                "{} requests were due but never sent (the connections were busy or down)",
                thousands(count)
            ),
        )
    }

    /// The monitored server exited `at_s` seconds into the window.
    pub fn server_exited(pid: i32, at_s: f64) -> Self {
        Self::new(WarningKind::ServerExited, format!(
            "the monitored server (pid {pid}) exited {at_s:.2} s into the measured window; its figures stop there"
        ))
    }

    /// A remark of the server monitor.
    pub fn server_note(note: &str) -> Self {
        Self::new(WarningKind::ServerNote, format!("server: {note}"))
    }

    /// `--io auto`: io_uring could not be used (`why`), so epoll was.
    pub fn io_fallback(why: &str) -> Self {
        Self::new(
            WarningKind::IoFallback,
            format!("io_uring not used ({why}): epoll moved the bytes, at more client CPU per request (--io epoll says so without this note)"),
        )
    }

    /// `--prometheus-remote-write` pushes that failed.
    pub fn remote_write(failed: u64, pushes: u64, last: &str, final_accepted: bool) -> Self {
        let end = "the last values and stale markers";
        let text = pushes_failed("remote write", end, final_accepted, (failed, pushes), last);
        Self::new(WarningKind::RemoteWrite, text)
    }

    /// `--otlp-endpoint` pushes that failed.
    pub fn otlp_export(failed: u64, pushes: u64, last: &str, final_accepted: bool) -> Self {
        let text = pushes_failed(
            "OTLP export",
            "the last values",
            final_accepted,
            (failed, pushes),
            last,
        );
        Self::new(WarningKind::OtlpExport, text)
    }

    /// Why the server's syscalls are null.
    pub fn syscalls_not_counted(reason: &str) -> Self {
        Self::new(
            WarningKind::SyscallsNotCounted,
            format!("server syscalls not counted: {reason}"),
        )
    }
}

impl std::fmt::Display for Warning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl From<&str> for Warning {
    fn from(text: &str) -> Self {
        Warning::from_text(text)
    }
}

/// The sentence of failed metrics pushes: `push: F of N pushes failed (END went|did not go; …)`.
fn pushes_failed(
    push: &str,
    end: &str,
    went: bool,
    (failed, pushes): (u64, u64),
    last: &str,
) -> String {
    let went = if went { "went" } else { "did not go" };
    format!("{push}: {failed} of {pushes} pushes failed ({end} {went}; the last failure: {last}); the run's numbers are unaffected")
}

impl Serialize for Warning {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Warning {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Warning::from_text(String::deserialize(d)?))
    }
}

/// The kind of a sentence; a merged result's `shard a.json: …` has the kind of what follows.
fn recognise(text: &str) -> WarningKind {
    if let Some(k) = PATTERNS
        .iter()
        .find(|(_, p)| glob(p.as_bytes(), text.as_bytes()))
        .map(|(k, _)| *k)
    {
        return k;
    }
    if let Some(rest) = text.strip_prefix("shard ") {
        for (i, _) in rest.match_indices(": ") {
            let k = recognise(&rest[i + 2..]);
            if k != WarningKind::Other {
                return k;
            }
        }
    }
    WarningKind::Other
}

/// `*` matches any run of characters (greedy with backtracking; patterns hold a few stars).
fn glob(p: &[u8], t: &[u8]) -> bool {
    match p.split_first() {
        None => t.is_empty(),
        Some((b'*', rest)) => (0..=t.len()).any(|i| glob(rest, &t[i..])),
        Some((c, rest)) => t.first() == Some(c) && glob(rest, &t[1..]),
    }
}

/// Bytes that start like a TLS record (a handshake or an alert, version 3.x): a server that
/// speaks TLS on this port.
pub fn looks_like_tls(bytes: &[u8]) -> bool {
    matches!(bytes, [0x15 | 0x16, 0x03, ..])
}

fn tls_hint(bytes: &[u8]) -> &'static str {
    if looks_like_tls(bytes) {
        " — TLS records: the server speaks HTTPS on this port (use https://)"
    } else {
        ""
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_starved_client_names_the_monitored_server_as_the_server() {
        let server = OtherProcess {
            pid: 43,
            command: "volley".into(),
            cpu_pct: 180.0,
        };
        let w = Warning::client_starved((2, 3), 40.0, 16.0, std::slice::from_ref(&server), &[43]);
        assert!(
            w.text
                .contains("the busiest the server volley (pid 43) 180 % of a core"),
            "{}",
            w.text
        );
        assert!(
            w.text.contains("volley and the server sharing CPUs"),
            "{}",
            w.text
        );
        let other = Warning::client_starved((2, 3), 40.0, 16.0, &[server], &[7]);
        assert!(
            other.text.contains("the busiest volley (pid 43)"),
            "{}",
            other.text
        );
        assert!(
            other.text.contains("a busy machine, not the server"),
            "{}",
            other.text
        );
    }

    /// One warning of every kind, as volley makes them.
    fn every_kind() -> Vec<Warning> {
        vec![
            Warning::closed_loop(),
            Warning::client_saturated(1.0, 0.75),
            Warning::send_lag(1500),
            Warning::never_connected(3, 10, 40, None),
            Warning::never_connected(1_500, 20_000, 497_995, None),
            Warning::never_connected(1, 1, 56, Some("reset by the server during the TLS handshake")),
            Warning::never_connected(2, 2, 7, Some("HTTP/2: the server's first frame is PING, not SETTINGS (a reason with (parentheses))")),
            Warning::connect_failures(5, None),
            Warning::connect_failures(5, Some("TLS: certificate expired")),
            Warning::connect_failures(12_345, None),
            Warning::failed_statuses(7),
            Warning::failed_statuses(1_000),
            Warning::errors_excluded(9),
            Warning::errors_excluded(497_995),
            Warning::unsolicited(2),
            Warning::unsolicited(16_676),
            Warning::server_closed_each(4_686, 4_700),
            Warning::server_closed_each(1, 1),
            Warning::not_http(
                "malformed response head: invalid HTTP version",
                b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n",
            ),
            Warning::sent_first(&[b'x'; 100]),
            Warning::client_starved(
                (2, 3),
                40.0,
                16.0,
                &[OtherProcess {
                    pid: 42,
                    command: "yes".into(),
                    cpu_pct: 97.5,
                }],
                &[],
            ),
            Warning::client_starved(
                (2, 3),
                40.0,
                16.0,
                &[OtherProcess {
                    pid: 43,
                    command: "volley".into(),
                    cpu_pct: 180.0,
                }],
                &[43],
            ),
            Warning::client_starved((3, 3), 25.0, 5.0, &[], &[]),
            Warning::protocol_errors(240, "HTTP/2: the server did not process the request on stream 1 again (GOAWAY NO_ERROR, last stream 0)"),
            Warning::unsent(11),
            Warning::unsent(1_000_000),
            Warning::server_exited(42, 1.5),
            Warning::server_note("2 processes of the tree exited"),
            Warning::syscalls_not_counted("perf_event_paranoid is 3"),
            Warning::io_fallback("io_uring_setup: Operation not permitted (os error 1)"),
            Warning::remote_write(2, 5, "HTTP 500: down", false),
            Warning::otlp_export(1, 4, "HTTP 503: busy", true),
            Warning::shards_differ("the request body"),
            Warning::stages_differ(),
            Warning::lag_not_merged(),
            Warning::series_percentiles_nulled(4),
            Warning::forced_merge(0.25),
            Warning::server_from_one_shard("a.json", "127.0.0.1:80"),
            Warning::server_from_one_shard_elsewhere("a.json"),
            Warning::server_not_merged(&["a.json", "b.json"]),
            Warning::thresholds_not_carried(),
            Warning::shortfall(&Shortfall {
                achieved_rps: 25.0,
                target_rps: 100.0,
                connections: 5,
                mean_latency_s: Some(0.2),
                accepted: false,
            }),
            Warning::lower_bound(225),
            Warning::failed_responses(&[(404, 10)], 10),
            Warning::failed_responses(&[(500, 10), (200, 90)], 100),
            Warning::failed_checks(&[("body_contains", 12), ("status", 3)], 13, 100),
            Warning::shared_machine(&SharedCpu {
                idle_pct: 0.8,
                client_cores: 0.82,
                server_cores: Some(1.18),
                busy_cores: 1.98,
            }),
        ]
    }

    #[test]
    fn tls_records_on_a_cleartext_url_are_named() {
        let alert = [0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x46];
        let w = Warning::not_http("invalid HTTP version", &alert);
        assert!(w.text().ends_with("(use https://)"), "{}", w.text());
        assert_eq!(w.kind(), WarningKind::ServerBytes);
        assert!(!Warning::sent_first(b"220 smtp").text().contains("https"));
    }

    #[test]
    fn every_sentence_is_recognised_as_its_own_kind() {
        for w in every_kind() {
            assert_eq!(recognise(w.text()), w.kind(), "{}", w.text());
            let back: Warning = serde_json::from_str(&serde_json::to_string(&w).unwrap()).unwrap();
            assert_eq!(back, w);
        }
    }

    #[test]
    fn shard_prefixes_keep_the_kind_and_unknown_sentences_are_kept() {
        let w = Warning::of_shards(&["a: b.json", "c.json"], &Warning::unsent(3));
        assert_eq!(w.text(), "shard a: b.json, c.json: 3 requests were due but never sent (the connections were busy or down)");
        assert_eq!(Warning::from_text(w.text()).kind(), WarningKind::Unsent);
        let other = Warning::from_text("something a newer volley says");
        assert_eq!(other.kind(), WarningKind::Other);
        assert_eq!(
            serde_json::to_string(&other).unwrap(),
            "\"something a newer volley says\""
        );
    }

    #[test]
    fn the_wording_of_old_files_is_recognised() {
        // Sentences exactly as volley 0.1 wrote them into RunResults.
        assert_eq!(
            recognise("12 requests were due but never sent (the connections were busy or down)"),
            WarningKind::Unsent
        );
        assert_eq!(
            recognise("send lag p99 is 1.20 ms (> 1 ms): volley itself sent requests late, so the client, not the server, shaped part of the latency"),
            WarningKind::SendLag
        );
        assert_eq!(
            recognise("server: 1 process of the tree exited"),
            WarningKind::ServerNote
        );
        assert_eq!(
            recognise("8 of 8 connections could not be opened at all (144 connect errors)"),
            WarningKind::NeverConnected
        );
        assert_eq!(
            recognise("closed loop: each connection waits for its previous response, so latency is service time and queueing behind slow responses is hidden (coordinated omission); use -R RATE for open-loop latency"),
            WarningKind::ClosedLoop
        );
    }

    #[test]
    fn counts_are_written_as_the_summary_writes_them() {
        assert_eq!(
            Warning::errors_excluded(497_995).text(),
            "497,995 errors are not in the latency statistics"
        );
        assert_eq!(
            Warning::never_connected(1_500, 20_000, 497_995, None).text(),
            "1,500 of 20,000 connections could not be opened at all (497,995 connect errors)"
        );
        assert_eq!(
            Warning::never_connected(1, 1, 56, Some("reset by the server during the TLS handshake")).text(),
            "1 of 1 connections could not be opened at all (56 connect errors; the first: reset by the server during the TLS handshake)"
        );
        for w in every_kind() {
            // No run of four digits or more is left unseparated.
            let digits = w.text().split(|c: char| !c.is_ascii_digit());
            assert!(digits.into_iter().all(|d| d.len() < 4), "{}", w.text());
        }
    }

    #[test]
    fn the_closed_loop_warning_is_one_short_line_true_of_pipelining() {
        let w = Warning::closed_loop();
        let text = w.text();
        assert!(text.chars().count() <= 110, "{} chars: {text}", text.len());
        assert!(!text.contains('\n'));
        // Pipelined connections do not wait for each response, and their latency includes the
        // wait behind earlier requests: "service time" and "waits for its previous response"
        // would be untrue there.
        assert!(!text.contains("service time"), "{text}");
        assert!(!text.contains("previous response"), "{text}");
        assert!(text.contains("coordinated omission") && text.contains("-R"));
    }
}

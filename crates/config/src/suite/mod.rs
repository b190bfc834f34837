//! `SuiteConfig`: a suite TOML file (docs/contract.md, "Suites") checked and expanded into its
//! matrix before anything is built or started. Every error names the file, line, column and key.
//! Scenario keys are the `volley run` long flags in snake_case; a list is a matrix axis, except a
//! list of strings under `headers`, `thresholds`, `expect_body_contains`, `expect_header` or `expect_json`
//! (several flags of one cell). Each cell is validated by the same code as `volley run`, so a
//! suite accepts exactly what the command line accepts.
//!
//! The parts, in the order a file is read: `toml_reader` (typed values with `file:line:column`
//! errors), `suite_table` (`[suite]`), `server` (`[[server]]`), `scenario` (`[[scenario]]` keys
//! to `volley run` flags) and `matrix` (the cells of a scenario and their checks).

pub mod capacity;
pub mod history_table;
mod matrix;
mod scenario;
mod server;
mod suite_table;
mod toml_reader;

use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::de::DeTable;

use super::{Flag, RunConfig};
pub use history_table::HistoryTable;
use suite_table::SuiteTable;
use toml_reader::TomlReader;
use volley_model::sys::cpus::CpuList;
use volley_model::words;
use volley_plan::Target;

/// A suite file that cannot be used (exit code 2): unreadable, or wrong at a place in it.
pub type SuiteError = crate::FileError;

/// The whole suite, validated and expanded.
#[derive(Debug, Clone)]
pub struct SuiteConfig {
    /// The suite file.
    pub path: PathBuf,
    /// `[suite] name`.
    pub name: String,
    /// Repetitions of the whole matrix (rep -> server -> cell).
    pub repetitions: u32,
    /// CPUs for the servers (`sched_setaffinity` in the child before it runs the start line).
    pub server_cpus: Option<CpuList>,
    /// CPUs for volley itself during the measurements.
    pub client_cpus: Option<CpuList>,
    /// `fail_on_status`: a cell whose responses mostly had a status of 400 or more fails.
    pub fail_on_status: bool,
    /// `baseline`: the server every other is compared with in the reports (one of `servers`).
    pub baseline: Option<String>,
    /// Servers in file order.
    pub servers: Vec<ServerSpec>,
    /// Scenarios in file order, each expanded into its cells.
    pub scenarios: Vec<Scenario>,
    /// `[history]`: saving to the run history and the check's rules.
    pub history: HistoryTable,
    /// The file as JSON, kept in `suite.json`.
    pub raw: serde_json::Value,
}

/// One `[[server]]`.
#[derive(Debug, Clone)]
pub struct ServerSpec {
    /// Unique name.
    pub name: String,
    /// What volley does with it.
    pub kind: ServerKind,
    /// A shell command whose first output line is the stack's version (kept in `suite.json`).
    pub version: Option<String>,
    /// `protocols`: the protocols it speaks (default: all); cells of any other protocol are
    /// not run on it.
    pub protocols: Vec<Protocol>,
}

impl ServerSpec {
    /// Whether it speaks `p` (its `protocols` list it).
    pub fn speaks(&self, p: Protocol) -> bool {
        self.protocols.contains(&p)
    }
}

/// How a server is obtained.
#[derive(Debug, Clone)]
pub enum ServerKind {
    /// Built once, started fresh for every cell, stopped after it.
    Managed(Managed),
    /// Already running: benchmark what is there (no lifecycle, no monitor).
    Url(Target),
    /// `control = "closed-port"`: a port nothing listens on; every request is refused.
    ClosedPort,
}

/// The lifecycle of a managed server.
#[derive(Debug, Clone)]
pub struct Managed {
    /// Working directory of build and start (relative paths are from the current directory).
    pub dir: PathBuf,
    /// Shell command run once per suite, before any cell.
    pub build: Option<String>,
    /// Shell command that runs the server in the foreground; `{port}` is substituted and
    /// `PORT` is in the environment.
    pub start: String,
    /// Extra environment.
    pub env: Vec<(String, String)>,
    /// Path polled until the server answers.
    pub ready_path: String,
    /// How long to poll before giving up.
    pub ready_timeout: Duration,
    /// Programs build and start need (`requires`): when one is missing the server's cells are
    /// skipped with a note instead of failing.
    pub requires: Vec<String>,
    /// `runtime`: whose GC log the harness turns on (through the environment) and reads.
    pub runtime: Option<Runtime>,
}

/// A server's runtime (`runtime` of `[[server]]`): how its GC log is turned on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Runtime {
    /// HotSpot: `-Xlog:gc` to a file, through `JAVA_TOOL_OPTIONS`.
    Jvm,
    /// Go: `GODEBUG=gctrace=1`, on stderr.
    Go,
    /// Node.js: `--trace-gc` set by a preload (`NODE_OPTIONS=--require`), on stdout.
    Node,
}

impl Runtime {
    /// The `runtime` value naming it.
    pub(crate) fn from_key(value: &str) -> Option<Runtime> {
        match value {
            "jvm" => Some(Runtime::Jvm),
            "go" => Some(Runtime::Go),
            "node" => Some(Runtime::Node),
            _ => None,
        }
    }
}

/// One `[[scenario]]`, expanded.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// Unique name.
    pub name: String,
    /// `servers = [...]`: the servers this scenario runs on (default: every server).
    pub servers: Option<Vec<String>>,
    /// The matrix of this scenario (one cell when it has no list).
    pub cells: Vec<Cell>,
}

impl Scenario {
    /// Whether this scenario runs on server `name`.
    pub fn runs_on(&self, name: &str) -> bool {
        self.servers
            .as_ref()
            .is_none_or(|list| list.iter().any(|s| s == name))
    }
}

words! {
    /// A cell's `protocol` (docs/contract.md, "Suites"): how the harness reaches its server;
    /// `ALL` is in the order of the docs.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Default, PartialOrd, Ord)]
    pub enum Protocol {
        /// `http/1.1` (the default): cleartext.
        #[default]
        Http1 = "http/1.1",
        /// `https`: HTTP/1.1 over TLS; a managed server gets a certificate (`TLS_CERT`,
        /// `TLS_KEY`).
        Https = "https",
        /// `h2`: HTTP/2 over TLS, chosen by ALPN (`--http2`); a certificate as for `https`.
        H2 = "h2",
        /// `h2c`: cleartext HTTP/2 with prior knowledge (`--h2c`); a managed server gets
        /// `H2C=1`.
        H2c = "h2c",
        /// `h3`: HTTP/3 over QUIC (`--http3`); a certificate as for `https`.
        H3 = "h3",
        /// `ws`: WebSocket messages on upgraded cleartext connections (a `ws://` URL).
        Ws = "ws",
        /// `wss`: WebSocket over TLS (`wss://`); a certificate as for `https`.
        Wss = "wss",
    }
}

impl Protocol {
    /// The URL scheme of its cells (`http`, `https`, `ws`, `wss`).
    pub fn scheme(self) -> &'static str {
        match self {
            Protocol::Ws => "ws",
            Protocol::Wss => "wss",
            p if p.tls() => "https",
            _ => "http",
        }
    }

    /// Whether it runs over TLS (a managed server gets `TLS_CERT` and `TLS_KEY`).
    pub fn tls(self) -> bool {
        matches!(
            self,
            Protocol::Https | Protocol::H2 | Protocol::H3 | Protocol::Wss
        )
    }

    /// Whether a server speaks it without saying so: HTTP/3 needs a UDP listener, and
    /// WebSocket an endpoint, a server has only when its `protocols` say so.
    pub fn by_default(self) -> bool {
        !matches!(self, Protocol::H3 | Protocol::Ws | Protocol::Wss)
    }

    /// The `volley run` flag its cells get: `--http1.1` for https (which would otherwise
    /// speak HTTP/2 with a server offering h2), `--http2`, `--h2c`, `--http3`; plain HTTP/1.1
    /// needs none.
    pub(crate) fn flag(self) -> Option<&'static str> {
        match self {
            Protocol::Http1 => None,
            Protocol::Https => Some("--http1.1"),
            Protocol::H2 => Some("--http2"),
            Protocol::H2c => Some("--h2c"),
            Protocol::H3 => Some("--http3"),
            Protocol::Ws | Protocol::Wss => None,
        }
    }

    /// `"http/1.1", "https", "h2", "h2c", "h3", "ws" or "wss"`, for messages.
    pub(crate) fn expected() -> String {
        let quoted: Vec<String> = Self::ALL
            .iter()
            .map(|p| format!("\"{}\"", p.as_str()))
            .collect();
        format!(
            "{} or {}",
            quoted[..quoted.len() - 1].join(", "),
            quoted[quoted.len() - 1]
        )
    }
}

/// One point of a scenario's matrix: the `volley run` flags it stands for, and what they mean.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The axis values of this cell, in file order (`connections = "3"`), for names and tables.
    pub axes: Vec<(String, String)>,
    /// Request path (and query).
    pub path: String,
    /// `protocol`: the scheme of the cell's URL.
    pub protocol: Protocol,
    /// `volley run` flags, without URL and without the flags the harness sets.
    pub flags: Vec<String>,
    /// The run the flags describe, checked as `volley run` checks it. Its target is a
    /// placeholder (`http://127.0.0.1:1` + `path`, `https://` for https cells) until the harness knows the server's port.
    /// A capacity cell's is its first step's load (open loop at the start rate).
    pub config: RunConfig,
    /// A capacity cell (`capacity = {…}`): the search to run instead of one measurement.
    pub capacity: Option<capacity::CapacitySpec>,
    /// `shards`: 1 runs the cell in volley's own process; N > 1 as N `volley run --shard i/N`
    /// processes started together, their results merged.
    pub shards: u32,
}

impl Cell {
    /// `connections=3,rate=500` (empty without axes).
    pub fn axes_label(&self) -> String {
        axes_label(self.axes.iter().map(|(k, v)| (k, v)))
    }

    /// Warm-up plus measured time, for the progress estimate (a sharded cell's processes
    /// start [`shard_lead`] later). A capacity cell's is a guess: the closed-loop step and
    /// [`CAPACITY_STEPS_GUESS`] steps, each with its warm-up (a sweep's: the sweep, and
    /// [`CONFIRM_STEPS_GUESS`] steps with `confirm`).
    pub fn planned(&self) -> Duration {
        match &self.capacity {
            None => self.config.load.planned() + shard_lead(self.shards),
            Some(c) => {
                let step = self.config.load.warmup + self.step_duration();
                let closed = step * u32::from(c.closed_loop);
                match (c.sweep, c.confirm) {
                    // A sweep with --confirm: a guess of its bisection and confirmation.
                    (true, confirm) => {
                        let sweep = self.config.load.warmup + c.sweep_duration;
                        sweep + closed + step * (CONFIRM_STEPS_GUESS * u32::from(confirm))
                    }
                    (false, _) => step * CAPACITY_STEPS_GUESS + closed,
                }
            }
        }
    }

    /// A capacity cell's measured time per step: `capacity.step_duration`, else the cell's
    /// `duration`, else 10 s.
    pub fn step_duration(&self) -> Duration {
        self.capacity
            .as_ref()
            .and_then(|c| c.step_duration)
            .or(self.config.load.duration)
            .unwrap_or(Duration::from_secs(10))
    }
}

pub use volley_model::result::axes_label;

/// How far ahead of now a cell of `shards` processes is told to start (`--start-at`), so that
/// every process is spawned and ready by then: 1 s, and 5 ms more per process; none for a cell
/// run in volley's own process.
pub fn shard_lead(shards: u32) -> Duration {
    if shards <= 1 {
        return Duration::ZERO;
    }
    Duration::from_secs(1) + Duration::from_millis(5) * shards
}

/// How many steps a capacity search is guessed to take, for estimates: a ramp of about eight
/// doublings and a bisection of a few rates, some repeated.
pub const CAPACITY_STEPS_GUESS: u32 = 14;

/// The steps a sweep's `confirm` is guessed to run (its bisection and confirmation).
pub const CONFIRM_STEPS_GUESS: u32 = 5;

/// A cell's flags rejected by `volley run`'s own checks.
#[derive(Debug, Clone)]
pub(crate) struct CellError {
    /// The flags the check named, the checked one first (empty when it named none).
    pub flags: Vec<Flag>,
    /// The check's message.
    pub message: String,
}

/// The most cells one scenario may expand to (far more than a day of measurements).
pub const MAX_CELLS_PER_SCENARIO: usize = 10_000;

impl SuiteConfig {
    /// Reads, checks and expands a suite file. `cores` is how many CPUs volley may use (for the
    /// per-cell checks that depend on it).
    pub fn load(path: &Path, cores: usize) -> Result<SuiteConfig, SuiteError> {
        let text = std::fs::read_to_string(path).map_err(|e| SuiteError::Read {
            path: path.display().to_string(),
            source: e,
        })?;
        Self::parse(&text, path, cores)
    }

    /// Checks and expands suite text; `path` is only used in messages and for `path`.
    pub fn parse(text: &str, path: &Path, cores: usize) -> Result<SuiteConfig, SuiteError> {
        let reader = TomlReader::new(text, path);
        let (doc, raw) = reader.document()?;
        let doc = doc.get_ref();
        check_top_level(&reader, doc)?;
        let suite = SuiteTable::read(&reader, doc)?;
        // The per-cell checks size threads by the CPUs volley will be pinned to.
        let cell_cores = suite.client_cpus.as_ref().map_or(cores, |l| l.cpus.len());
        let servers = server::read_servers(&reader, doc)?;
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        let baseline = suite_table::check_baseline(&reader, &suite.baseline, &names)?;
        let scenarios = scenario::read_scenarios(&reader, doc, &suite, &servers, cell_cores)?;
        let history = HistoryTable::read(&reader, doc)?;
        Ok(SuiteConfig {
            path: path.to_path_buf(),
            name: suite.name,
            repetitions: suite.repetitions,
            server_cpus: suite.server_cpus,
            client_cpus: suite.client_cpus,
            fail_on_status: suite.fail_on_status,
            baseline,
            servers,
            scenarios,
            history,
            raw,
        })
    }

    /// Cells of one repetition: each scenario's cells on each of its servers.
    pub fn cells_per_rep(&self) -> usize {
        self.servers
            .iter()
            .map(|sv| {
                self.scenarios
                    .iter()
                    .filter(|sc| sc.runs_on(&sv.name))
                    .map(|sc| sc.cells.iter().filter(|c| sv.speaks(c.protocol)).count())
                    .sum::<usize>()
            })
            .sum()
    }
}

/// Refuses a top-level key other than the four tables.
fn check_top_level(r: &TomlReader, doc: &DeTable) -> Result<(), SuiteError> {
    for (k, _) in doc.iter() {
        if !["suite", "server", "scenario", "history"].contains(&k.get_ref().as_ref()) {
            return Err(r.err(
                k.span(),
                Some(k.get_ref()),
                format!(
                    "unknown top-level key `{}` (expected [suite], [[server]], [[scenario]], [history])",
                    k.get_ref()
                ),
            ));
        }
    }
    Ok(())
}

/// What the tests of every part of the suite parser share.
#[cfg(test)]
mod testing {
    use std::path::Path;

    use super::{SuiteConfig, SuiteError};

    /// A suite file up to its first `[[scenario]]`.
    pub(super) const BASE: &str = r#"[suite]
name = "t"
duration = "2s"
[[server]]
name = "a"
start = "./a"
"#;

    /// Parses `text` as `s.toml` for 2 cores.
    pub(super) fn parse(text: &str) -> Result<SuiteConfig, SuiteError> {
        SuiteConfig::parse(text, Path::new("s.toml"), 2)
    }

    /// The line, column, key and message of the error `text` must cause.
    pub(super) fn err(text: &str) -> (usize, usize, Option<String>, String) {
        match parse(text).unwrap_err() {
            SuiteError::At {
                line,
                column,
                key,
                message,
                ..
            } => (line, column, key, message),
            e => panic!("unexpected {e}"),
        }
    }
}

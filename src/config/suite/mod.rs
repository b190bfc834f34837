//! `SuiteConfig`: a suite TOML file (DESIGN §4 "Suite TOML") checked and expanded into its
//! matrix before anything is built or started. Every error names the file, line, column and key.
//!
//! Scenario keys are the `volley run` long flags in snake_case; a list is a matrix axis, except
//! `headers`, where a list of strings is several headers of one cell and a list of lists (or of
//! tables) is an axis. Each cell is validated by the same code as `volley run`, so a suite
//! accepts exactly what the command line accepts.

mod server;
mod suite_table;
mod toml_reader;

use std::collections::BTreeSet;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Args, FromArgMatches};
use toml::de::DeValue;
use toml::Spanned;

use super::{ConfigError, Flag, RunConfig, RunFlags};
use crate::plan::Target;
use crate::sys::cpus::CpuList;
use suite_table::SuiteTable;
use toml_reader::{ArrayTable, TomlReader, Val};

/// A suite file that cannot be used (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    /// The file cannot be read.
    #[error("{path}: {source}")]
    Read {
        /// The suite file.
        path: String,
        /// The operating system's reason.
        source: std::io::Error,
    },
    /// Something at a place in the file is wrong.
    #[error("{file}:{line}:{column}: {message}")]
    At {
        /// The suite file.
        file: String,
        /// 1-based line.
        line: usize,
        /// 1-based column (in characters).
        column: usize,
        /// The key concerned, when there is one.
        key: Option<String>,
        /// What is wrong, starting with where in the suite (`[[scenario]] "x": key: ...`).
        message: String,
    },
}

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
    /// Servers in file order.
    pub servers: Vec<ServerSpec>,
    /// Scenarios in file order, each expanded into its cells.
    pub scenarios: Vec<Scenario>,
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

/// One point of a scenario's matrix: the `volley run` flags it stands for, and what they mean.
#[derive(Debug, Clone)]
pub struct Cell {
    /// The axis values of this cell, in file order (`connections = "3"`), for names and tables.
    pub axes: Vec<(String, String)>,
    /// Request path (and query).
    pub path: String,
    /// `volley run` flags, without URL and without the flags the harness sets.
    pub flags: Vec<String>,
    /// The run the flags describe, checked as `volley run` checks it. Its target is a
    /// placeholder (`http://127.0.0.1:1` + `path`) until the harness knows the server's port.
    pub config: RunConfig,
}

impl Cell {
    /// `connections=3,rate=500` (empty without axes).
    pub fn axes_label(&self) -> String {
        axes_label(self.axes.iter().map(|(k, v)| (k, v)))
    }

    /// Warm-up plus measured time, for the progress estimate.
    pub fn planned(&self) -> Duration {
        self.config.load.planned()
    }
}

/// Checks a cell's flags exactly as `volley run` would, against `url`.
fn check_flags(flags: &[String], url: &str, cores: usize) -> Result<RunConfig, CellError> {
    let mut argv = vec![url.to_string()];
    argv.extend(flags.iter().cloned());
    let cmd = RunFlags::augment_args(clap::Command::new("run").no_binary_name(true));
    let parsed = cmd
        .try_get_matches_from(&argv)
        .and_then(|m| RunFlags::from_arg_matches(&m));
    let run_flags = parsed.map_err(|e| CellError {
        flags: clap_flag(&e).into_iter().collect(),
        message: e.kind().to_string() + &clap_detail(&e),
    })?;
    RunConfig::from_flags(&run_flags, cores).map_err(|e: ConfigError| CellError {
        flags: e.flags(),
        message: e.to_string(),
    })
}

/// The flag a clap error is about (`--connections <CONNECTIONS>`, `<URL>`).
fn clap_flag(e: &clap::Error) -> Option<Flag> {
    let arg = e.get(clap::error::ContextKind::InvalidArg)?.to_string();
    if arg.starts_with("<URL") {
        return Some(Flag::Url);
    }
    arg.split(['/', ' ', '='])
        .find_map(|part| part.strip_prefix("--").and_then(Flag::from_long))
}

fn clap_detail(e: &clap::Error) -> String {
    use clap::error::ContextKind;
    let mut s = String::new();
    if let Some(v) = e.get(ContextKind::InvalidValue) {
        s += &format!(": `{v}`");
    }
    if let Some(v) = e.get(ContextKind::InvalidArg) {
        s += &format!(" for {v}");
    }
    if let Some(v) = e.get(ContextKind::ValidValue) {
        s += &format!(" (valid: {v})");
    }
    s
}

pub use crate::result::axes_label;

/// A cell's flags rejected by `volley run`'s own checks.
#[derive(Debug, Clone)]
pub struct CellError {
    /// The flags the check named, the checked one first (empty when it named none).
    pub flags: Vec<Flag>,
    /// The check's message.
    pub message: String,
}

/// The most cells one scenario may expand to (far more than a day of measurements).
pub const MAX_CELLS_PER_SCENARIO: usize = 10_000;

/// `volley run` flags a scenario may not set: the harness sets them per cell.
const HARNESS_FLAGS: &[&str] = &[
    "url", "json", "hdr_log", "pid", "quiet", "csv", "markdown", "html",
];

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
        let p = TomlReader::new(text, path);
        let (doc, raw) = p.document()?;
        let doc = doc.get_ref();

        for (k, v) in doc.iter() {
            if !["suite", "server", "scenario"].contains(&k.get_ref().as_ref()) {
                return Err(p.err(
                    k.span(),
                    Some(k.get_ref()),
                    format!(
                        "unknown top-level key `{}` (expected [suite], [[server]], [[scenario]])",
                        k.get_ref()
                    ),
                ));
            }
            let _ = v;
        }

        let suite = SuiteTable::read(&p, doc)?;
        let cell_cores = suite.client_cpus.as_ref().map_or(cores, |l| l.cpus.len());
        let servers = server::read_servers(&p, doc)?;

        // [[scenario]]
        let run_flags = run_long_flags();
        let scen_v = p.array_of_tables(doc.get("scenario"), ArrayTable::Scenario)?;
        if scen_v.is_empty() {
            return Err(p.err(p.end(), None, "the suite has no [[scenario]]".into()));
        }
        let mut scenarios: Vec<Scenario> = Vec::new();
        for sv in &scen_v {
            let t = p.table(sv, "[[scenario]]", "scenario")?;
            let taken: Vec<&str> = scenarios.iter().map(|s| s.name.as_str()).collect();
            let name = p.name(t, sv, ArrayTable::Scenario, &taken)?;
            let at = format!("[[scenario]] \"{name}\"");
            // Each key becomes one or more alternatives; a list is an axis.
            struct Axis<'a> {
                key: String,
                span: Range<usize>,
                choices: Vec<(String, Vec<String>)>, // (label, flags)
                is_axis: bool,
                value: &'a Spanned<DeValue<'a>>,
            }
            let mut axes: Vec<Axis> = Vec::new();
            let mut path = "/".to_string();
            let mut only_servers = None;
            for (k, v) in t.iter() {
                let key = k.get_ref().to_string();
                if key == "name" {
                    continue;
                }
                if key == "servers" {
                    only_servers = Some(p.server_names(v, &at, &servers)?);
                    continue;
                }
                let flag_name = key.replace('_', "-");
                if HARNESS_FLAGS.contains(&key.as_str()) {
                    return Err(p.err(
                        k.span(),
                        Some(&key),
                        format!("{at}: `{key}` is set by the harness for every cell and cannot be a scenario key"),
                    ));
                }
                let known = key == "path"
                    || key == "keepalive"
                    || key == "headers"
                    || key == "thresholds"
                    || (!["no_keepalive", "header", "threshold"].contains(&key.as_str())
                        && run_flags.contains(&flag_name));
                if !known {
                    let mut keys: Vec<String> = run_flags
                        .iter()
                        .filter(|f| {
                            ![
                                "json",
                                "hdr-log",
                                "pid",
                                "quiet",
                                "header",
                                "no-keepalive",
                                "threshold",
                                "csv",
                                "markdown",
                                "html",
                            ]
                            .contains(&f.as_str())
                        })
                        .map(|f| f.replace('-', "_"))
                        .collect();
                    keys.extend([
                        "path".into(),
                        "keepalive".into(),
                        "headers".into(),
                        "thresholds".into(),
                        "servers".into(),
                    ]);
                    keys.sort();
                    return Err(p.err(
                        k.span(),
                        Some(&key),
                        format!("{at}: unknown key `{key}` (scenario keys are `volley run` long flags in snake_case: {})", keys.join(", ")),
                    ));
                }
                // A list is an axis, except a list of strings under `headers` or `thresholds`
                // (several headers or thresholds of one cell).
                let list = match v.get_ref() {
                    DeValue::Array(a)
                        if !(key == "headers" || key == "thresholds")
                            || a.iter().any(|e| !matches!(e.get_ref(), DeValue::String(_))) =>
                    {
                        if a.is_empty() {
                            return Err(p.err(
                                v.span(),
                                Some(&key),
                                format!("{at}: {key}: an empty list leaves no cell to run"),
                            ));
                        }
                        Some(a.iter().collect::<Vec<_>>())
                    }
                    _ => None,
                };
                let is_axis = list.is_some();
                let mut choices = Vec::new();
                for item in list.unwrap_or_else(|| vec![v]) {
                    choices.push(p.flags_for(&key, item, &at)?);
                }
                if key == "path" && !is_axis {
                    path = choices[0].0.clone();
                }
                axes.push(Axis {
                    key,
                    span: v.span(),
                    choices,
                    is_axis,
                    value: v,
                });
            }
            // Suite-level defaults, unless the scenario says otherwise or they cannot apply.
            let keys: BTreeSet<String> = axes.iter().map(|a| a.key.clone()).collect();
            let has = |k: &str| keys.contains(k);
            for d in &suite.defaults {
                if d.applies(has) {
                    axes.push(Axis {
                        key: d.key.to_string(),
                        span: d.value.span(),
                        choices: vec![(d.text.clone(), vec![format!("--{}={}", d.key, d.text)])],
                        is_axis: false,
                        value: d.value,
                    });
                }
            }
            // Refuse a matrix too large to run before building it: every cell is expanded and
            // checked here, so a few long lists (10 keys of 10 values: 10^10 cells) would
            // otherwise take all memory and time before a message could say why.
            let planned = axes
                .iter()
                .try_fold(1usize, |n, a| n.checked_mul(a.choices.len()))
                .filter(|n| *n <= MAX_CELLS_PER_SCENARIO);
            if planned.is_none() {
                return Err(p.err(
                    sv.span(),
                    None,
                    format!(
                        "{at}: its lists make more than {MAX_CELLS_PER_SCENARIO} cells ({}); split it or shorten the lists",
                        axes.iter()
                            .filter(|a| a.is_axis)
                            .map(|a| format!("{} × {}", a.key, a.choices.len()))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            // The cartesian product, first key outermost.
            let mut cells = vec![(
                Vec::<(String, String)>::new(),
                Vec::<String>::new(),
                path.clone(),
                Vec::<usize>::new(),
            )];
            for axis in &axes {
                let mut next = Vec::new();
                for (labels, flags, cpath, picks) in &cells {
                    for (ci, (label, f)) in axis.choices.iter().enumerate() {
                        let mut labels = labels.clone();
                        if axis.is_axis {
                            labels.push((axis.key.clone(), label.clone()));
                        }
                        let mut flags = flags.clone();
                        flags.extend(f.iter().cloned());
                        let cpath = if axis.key == "path" {
                            label.clone()
                        } else {
                            cpath.clone()
                        };
                        let mut picks = picks.clone();
                        picks.push(ci);
                        next.push((labels, flags, cpath, picks));
                    }
                }
                cells = next;
            }
            let mut out = Vec::new();
            for (labels, flags, cpath, picks) in cells {
                let url = format!("http://127.0.0.1:1{cpath}");
                match check_flags(&flags, &url, cell_cores) {
                    Ok(config) => out.push(Cell {
                        axes: labels,
                        path: cpath,
                        flags,
                        config,
                    }),
                    Err(e) => {
                        // Point at the key of the flag the check named; when it names several
                        // (a conflict), at the later of them in the file.
                        let key = axes
                            .iter()
                            .enumerate()
                            .filter(|(_, a)| e.flags.iter().any(|f| f.key() == a.key))
                            .max_by_key(|(_, a)| a.span.start)
                            .map(|(i, _)| i);
                        let (span, key_name) = match key {
                            Some(i) => {
                                let a = &axes[i];
                                let span = if a.is_axis {
                                    match a.value.get_ref() {
                                        DeValue::Array(arr) => arr
                                            .get(picks[i])
                                            .map(|e| e.span())
                                            .unwrap_or(a.span.clone()),
                                        _ => a.span.clone(),
                                    }
                                } else {
                                    a.span.clone()
                                };
                                (span, Some(a.key.clone()))
                            }
                            None => (sv.span(), None),
                        };
                        let cell_label = if labels.is_empty() {
                            String::new()
                        } else {
                            format!(" (cell {})", axes_label(labels.iter().map(|(k, v)| (k, v))))
                        };
                        return Err(p.err(
                            span,
                            key_name.as_deref(),
                            format!(
                                "{at}{cell_label}: {}{}",
                                key_name
                                    .as_deref()
                                    .map(|k| format!("{k}: "))
                                    .unwrap_or_default(),
                                e.message
                            ),
                        ));
                    }
                }
            }
            scenarios.push(Scenario {
                name,
                servers: only_servers,
                cells: out,
            });
        }
        Ok(SuiteConfig {
            path: path.to_path_buf(),
            name: suite.name,
            repetitions: suite.repetitions,
            server_cpus: suite.server_cpus,
            client_cpus: suite.client_cpus,
            servers,
            scenarios,
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
                    .map(|sc| sc.cells.len())
                    .sum::<usize>()
            })
            .sum()
    }
}

/// Long names of every `volley run` flag, from the clap definition (so the suite keys never
/// drift from the command line).
fn run_long_flags() -> Vec<String> {
    let cmd = RunFlags::augment_args(clap::Command::new("run"));
    cmd.get_arguments()
        .filter_map(|a| a.get_long().map(str::to_string))
        .collect()
}

/// The scenario keys that still read through the TOML reader here.
impl TomlReader<'_> {
    /// `servers = ["a", "b"]` of a scenario: names of servers defined above.
    fn server_names(
        &self,
        v: &Val,
        at: &str,
        servers: &[ServerSpec],
    ) -> Result<Vec<String>, SuiteError> {
        let DeValue::Array(a) = v.get_ref() else {
            return Err(self.err(
                v.span(),
                Some("servers"),
                format!("{at}: servers: must be a list of server names"),
            ));
        };
        let mut out = Vec::new();
        for e in a.iter() {
            let name = self.str(e, at, "servers")?;
            if !servers.iter().any(|s| s.name == name) {
                let known: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
                return Err(self.err(
                    e.span(),
                    Some("servers"),
                    format!(
                        "{at}: servers: no [[server]] is named `{name}` (there are: {})",
                        known.join(", ")
                    ),
                ));
            }
            out.push(name);
        }
        if out.is_empty() {
            return Err(self.err(
                v.span(),
                Some("servers"),
                format!("{at}: servers: an empty list runs nothing"),
            ));
        }
        Ok(out)
    }

    /// One value of scenario key `key` as (label, `volley run` flags).
    fn flags_for(&self, key: &str, v: &Val, at: &str) -> Result<(String, Vec<String>), SuiteError> {
        let bad = |what: &str| {
            self.err(
                v.span(),
                Some(key),
                format!("{at}: {key}: {what}, not a {}", v.get_ref().type_str()),
            )
        };
        match key {
            "path" => {
                let s = match v.get_ref() {
                    DeValue::String(s) => s.to_string(),
                    _ => return Err(bad("must be a string such as \"/\"")),
                };
                if !s.starts_with('/') {
                    return Err(self.err(
                        v.span(),
                        Some(key),
                        format!("{at}: path must start with `/`"),
                    ));
                }
                Ok((s, Vec::new()))
            }
            "keepalive" => match v.get_ref() {
                DeValue::Boolean(true) => Ok(("true".into(), Vec::new())),
                DeValue::Boolean(false) => Ok(("false".into(), vec!["--no-keepalive".into()])),
                _ => Err(bad("must be true or false")),
            },
            "thresholds" => {
                let mut flags = Vec::new();
                let mut label = Vec::new();
                let items: Vec<&Val> = match v.get_ref() {
                    DeValue::String(_) => vec![v],
                    DeValue::Array(a) => a.iter().collect(),
                    _ => {
                        return Err(bad(
                            "must be a string such as \"p99<10ms\" or a list of them",
                        ))
                    }
                };
                for e in items {
                    let t = self.str(e, at, key)?;
                    label.push(t.clone());
                    flags.push(format!("--threshold={t}"));
                }
                Ok((label.join("; "), flags))
            }
            "headers" => {
                let mut flags = Vec::new();
                let mut label = Vec::new();
                let mut push = |h: String| {
                    label.push(h.clone());
                    flags.push(format!("--header={h}"));
                };
                match v.get_ref() {
                    DeValue::String(s) => push(s.to_string()),
                    DeValue::Array(a) => {
                        for e in a.iter() {
                            match e.get_ref() {
                                DeValue::String(s) => push(s.to_string()),
                                _ => {
                                    return Err(self.err(
                                        e.span(),
                                        Some(key),
                                        format!(
                                        "{at}: headers: each header is a string \"Name: value\""
                                    ),
                                    ))
                                }
                            }
                        }
                    }
                    DeValue::Table(t) => {
                        for (k, e) in t.iter() {
                            match e.get_ref() {
                                DeValue::String(s) => push(format!("{}: {s}", k.get_ref())),
                                _ => {
                                    return Err(self.err(
                                        e.span(),
                                        Some(key),
                                        format!("{at}: headers.{}: must be a string", k.get_ref()),
                                    ))
                                }
                            }
                        }
                    }
                    _ => {
                        return Err(bad(
                            "must be a string \"Name: value\", a list of them, or a table",
                        ))
                    }
                }
                Ok((label.join("; "), flags))
            }
            _ => {
                let flag = format!("--{}", key.replace('_', "-"));
                let text = match v.get_ref() {
                    DeValue::String(s) => s.to_string(),
                    DeValue::Integer(i) => i.as_str().replace('_', ""),
                    DeValue::Float(f) => f.as_str().replace('_', ""),
                    DeValue::Boolean(_) if key == "no_keepalive" => unreachable!(),
                    _ => return Err(bad("must be a string or a number")),
                };
                // rate = 0 is the closed loop (DESIGN §4).
                if key == "rate" && text.parse::<f64>() == Ok(0.0) {
                    return Ok(("0".into(), Vec::new()));
                }
                // `--flag=value`, so a value starting with `-` is not read as a flag.
                Ok((text.clone(), vec![format!("{flag}={text}")]))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use super::testing::{err, parse, BASE};

    #[test]
    fn a_matrix_too_large_to_run_is_refused_before_it_is_built() {
        let list = |n: u32| {
            format!(
                "[{}]",
                (1..=n).map(|i| i.to_string()).collect::<Vec<_>>().join(",")
            )
        };
        let ten = list(10);
        // 10^4 cells is the limit; one more list of two doubles it.
        let ok = format!("{BASE}[[scenario]]\nname = \"x\"\nconnections = {ten}\npipeline = {ten}\nseed = {ten}\nthreads = {ten}\n");
        assert_eq!(parse(&ok).unwrap().scenarios[0].cells.len(), 10_000);
        let huge = format!("{BASE}[[scenario]]\nname = \"x\"\nconnections = {ten}\npipeline = {ten}\nseed = {ten}\nthreads = {ten}\nrate = {ten}\nbody_size = {ten}\nrequests = {ten}\n");
        let (line, _, key, msg) = err(&huge);
        assert_eq!((line, key), (7, None));
        assert!(
            msg.contains("more than 10000 cells (connections × 10, pipeline × 10"),
            "{msg}"
        );
    }

    #[test]
    fn lists_are_axes_in_file_order() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = [3, 100]\nkeepalive = [true, false]\nrate = [0, 500]\nbody_size = \"1KiB\"\n"
        ))
        .unwrap();
        let cells = &s.scenarios[0].cells;
        assert_eq!(cells.len(), 8);
        assert_eq!(cells[0].axes_label(), "connections=3,keepalive=true,rate=0");
        assert_eq!(
            cells[7].axes_label(),
            "connections=100,keepalive=false,rate=500"
        );
        assert_eq!(
            cells[0].flags,
            vec!["--connections=3", "--body-size=1KiB", "--duration=2s"]
        );
        assert!(cells[7].flags.contains(&"--no-keepalive".to_string()));
        assert!(cells[7].flags.contains(&"--rate=500".to_string()));
        assert_eq!(cells[0].planned(), Duration::from_secs(2));
    }

    #[test]
    fn headers_list_is_one_cell_and_list_of_lists_an_axis() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"h\"\nheaders = [\"A: 1\", \"B: 2\"]\n[[scenario]]\nname = \"h2\"\nheaders = [[\"A: 1\"], {{ B = \"2\" }}]\n"
        ))
        .unwrap();
        assert_eq!(s.scenarios[0].cells.len(), 1);
        assert_eq!(
            s.scenarios[0].cells[0].flags[..2],
            ["--header=A: 1", "--header=B: 2"]
        );
        assert_eq!(s.scenarios[1].cells.len(), 2);
        assert_eq!(s.scenarios[1].cells[1].flags[..1], ["--header=B: 2"]);
    }

    #[test]
    fn scenarios_may_name_their_servers() {
        let s = parse(&format!(
            "{BASE}[[server]]\nname = \"b\"\nstart = \"./b\"\n[[scenario]]\nname = \"p\"\nservers = [\"b\"]\n[[scenario]]\nname = \"q\"\n"
        ))
        .unwrap();
        assert!(s.scenarios[0].runs_on("b") && !s.scenarios[0].runs_on("a"));
        assert!(s.scenarios[1].runs_on("a"));
        assert_eq!(s.cells_per_rep(), 3);
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nservers = [\"a\", \"c\"]\n"
        ));
        assert_eq!((line, col, key.as_deref()), (9, 17, Some("servers")));
        assert!(msg.contains("no [[server]] is named `c`"), "{msg}");
    }

    #[test]
    fn thresholds_are_several_flags_of_one_cell() {
        let s = parse(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nthresholds = [\"p99<10ms\", \"errors<1%\"]\n"
        ))
        .unwrap();
        assert_eq!(s.scenarios[0].cells.len(), 1);
        assert_eq!(
            s.scenarios[0].cells[0].flags[..2],
            ["--threshold=p99<10ms", "--threshold=errors<1%"]
        );
        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nthresholds = [\"p99<10ms\", \"p98<1s\"]\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("thresholds")));
        assert!(msg.contains("unknown metric `p98`"), "{msg}");
    }

    #[test]
    fn bad_values_point_at_their_key() {
        let (line, col, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconnections = [3, 0]\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("connections")));
        assert_eq!(col, 19, "the 0 in the list");
        assert!(
            msg.contains("connections: ") && msg.contains("at least 1"),
            "{msg}"
        );

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nconections = 3\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("conections")));
        assert!(msg.contains("unknown key `conections`"), "{msg}");

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nduration = \"fast\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("duration")));
        assert!(msg.contains("duration"), "{msg}");

        let (_, _, key, msg) = err(&format!("{BASE}[[scenario]]\nname = \"p\"\npid = 3\n"));
        assert_eq!(key.as_deref(), Some("pid"));
        assert!(msg.contains("set by the harness"), "{msg}");

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nusers = 10\nwarmup = \"1s\"\n"
        ));
        assert_eq!(line, 10);
        assert_eq!(key.as_deref(), Some("warmup"));
        assert!(msg.contains("--warmup"), "{msg}");

        let (line, _, key, _) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\nkeepalive = \"no\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("keepalive")));

        let (line, _, key, msg) = err(&format!(
            "{BASE}[[scenario]]\nname = \"p\"\narrivals = \"bursty\"\n"
        ));
        assert_eq!((line, key.as_deref()), (9, Some("arrivals")), "{msg}");
    }
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

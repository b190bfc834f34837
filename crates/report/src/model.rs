//! What a report is about: one run, or the cells of one or more suites, as loaded from the
//! results on disk (`volley report`) or handed over by `volley run` / `volley bench`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::capacity::CapacityEntry;
use volley_model::result::capacity::{CapacityResult, CAPACITY_SCHEMA};
use volley_model::result::identity::{self, load_id, LoadKey};
use volley_model::result::{CellStatus, RunResult, SuiteIndex, SuiteRow, SUITE_SCHEMA};

/// Everything a reporter renders.
#[derive(Debug, Clone)]
pub struct Report {
    /// The suite's name, or `METHOD URL` (`FILE → URL`) of a single run.
    pub title: String,
    /// The suite indexes the cells came from (empty for plain runs).
    pub suites: Vec<SuiteIndex>,
    /// Cells in run order.
    pub cells: Vec<Cell>,
    /// Capacity searches (`volley capacity`, suite `capacity = {…}` cells), in run order.
    pub capacity: Vec<CapacityEntry>,
}

/// One measured (or failed) cell.
#[derive(Debug, Clone)]
pub struct Cell {
    /// Server name (a single run: the target's `host:port`).
    pub server: String,
    /// Scenario name (a single run: `run`).
    pub scenario: String,
    /// Axis values of the cell.
    pub axes: BTreeMap<String, String>,
    /// Repetition, from 1.
    pub rep: u32,
    /// `ok`, `failed`, `interrupted`, `skipped` or `pending`.
    pub status: CellStatus,
    /// Why it failed.
    pub reason: Option<String>,
    /// A control cell (never a failure).
    pub control: bool,
    /// The RunResult, when one was measured and could be read.
    pub result: Option<RunResult>,
    /// `--profile`'s folded stacks (`server.profile.path`), when they could be read.
    pub folded: Option<String>,
    /// `--profile-off-cpu`'s folded waits (`server.profile.off_cpu.path`), when they could be
    /// read.
    pub off_cpu_folded: Option<String>,
}

impl Cell {
    /// `scenario axes` as shown in tables (`post-1k connections=3`).
    pub fn label(&self) -> String {
        let axes = self.axes_label();
        if axes.is_empty() {
            self.scenario.clone()
        } else {
            format!("{} {axes}", self.scenario)
        }
    }

    /// `connections=3,rate=500`.
    pub fn axes_label(&self) -> String {
        volley_model::result::axes_label(&self.axes)
    }
}

/// Cells that differ only by repetition: one line of a comparison table.
#[derive(Debug, Clone)]
pub struct Series<'a> {
    /// Scenario and axes, and what differs when one label holds several loads.
    pub label: String,
    /// Scenario and axes alone (what pairs cells across results).
    pub base_label: String,
    /// The `load_id` of the finished repetitions (None when none finished).
    pub load_id: Option<String>,
    /// Server.
    pub server: String,
    /// Every repetition, in order.
    pub cells: Vec<&'a Cell>,
}

impl Series<'_> {
    /// The results of the repetitions that finished.
    pub fn ok(&self) -> Vec<&RunResult> {
        self.cells
            .iter()
            .filter(|c| c.status == CellStatus::Ok)
            .filter_map(|c| c.result.as_ref())
            .collect()
    }

    /// Whether any cell is a control.
    pub(crate) fn control(&self) -> bool {
        self.cells.iter().any(|c| c.control)
    }

    /// The first failure reason, for cells that never finished.
    pub(crate) fn reason(&self) -> Option<String> {
        self.cells.iter().find_map(|c| c.reason.clone())
    }
}

/// A result file or folder that cannot be used.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct LoadError {
    /// The file or folder.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// One run's protocol in words (see [`Report::protocols`]).
pub(crate) fn protocol_of(r: &RunResult) -> String {
    let http = r.target.protocol.as_deref().unwrap_or("http/1.1");
    let mut d = match &r.target.tls {
        None => http.to_string(),
        Some(t) => {
            let mut d = format!(
                "https: {} {}",
                t.version.as_deref().unwrap_or("no handshake"),
                t.cipher.as_deref().unwrap_or("")
            )
            .trim_end()
            .to_string();
            if let Some(a) = &t.alpn {
                d.push_str(&format!(", ALPN {a}"));
            }
            if t.insecure {
                d.push_str(", not verified (-k)");
            }
            d
        }
    };
    if let Some(h) = &r.target.h2 {
        let n = h.streams_per_connection;
        d.push_str(&format!(
            ", HTTP/2 {n} stream{} per connection",
            if n == 1 { "" } else { "s" }
        ));
    }
    if r.target.unix_socket.is_some() {
        d.push_str(" over a Unix socket");
    }
    if let Some(p) = &r.target.proxy {
        d.push_str(&format!(" through proxy {}", p.url));
    }
    d
}

impl Report {
    /// How the runs spoke to their servers, each description once in order of appearance:
    /// `http/1.1`, `https: TLSv1.3 TLS13_AES_256_GCM_SHA384, ALPN http/1.1`, `http/1.1 over a
    /// Unix socket` (results written before HTTPS count as `http/1.1`).
    pub(crate) fn protocols(&self) -> Vec<String> {
        let mut seen: Vec<String> = Vec::new();
        for r in self.cells.iter().filter_map(|c| c.result.as_ref()) {
            let d = protocol_of(r);
            if !seen.contains(&d) {
                seen.push(d);
            }
        }
        seen
    }

    /// A report of one run, titled `METHOD URL`, or `FILE → URL` for a requests file (whose
    /// requests have methods of their own).
    pub fn single(r: RunResult) -> Report {
        let server = r.target.addr.clone();
        let title = match &r.target.requests_file {
            Some(f) => format!("{} → {}", f.path, r.target.url),
            None => format!("{} {}", r.target.method, r.target.url),
        };
        Report {
            title,
            suites: Vec::new(),
            cells: vec![Cell {
                server,
                scenario: "run".into(),
                axes: BTreeMap::new(),
                rep: 1,
                status: if r.interrupted {
                    CellStatus::Interrupted
                } else {
                    CellStatus::Ok
                },
                reason: None,
                control: false,
                result: Some(r),
                folded: None,
                off_cpu_folded: None,
            }],
            capacity: Vec::new(),
        }
    }

    /// The report with `folded` (`--profile`'s stacks) as its only run's.
    pub fn with_folded(mut self, folded: Option<String>) -> Report {
        if let Some(c) = self.cells.first_mut() {
            c.folded = folded;
        }
        self
    }

    /// The report with `folded` (`--profile-off-cpu`'s waits) as its only run's.
    pub fn with_off_cpu_folded(mut self, folded: Option<String>) -> Report {
        if let Some(c) = self.cells.first_mut() {
            c.off_cpu_folded = folded;
        }
        self
    }

    /// A report of one capacity search (`volley capacity`): the server is the target's
    /// `host:port` as the URL names it.
    pub fn capacity(r: CapacityResult) -> Report {
        let server = capacity_server(&r.url);
        Report {
            title: format!("capacity of {}", r.url),
            suites: Vec::new(),
            cells: Vec::new(),
            capacity: vec![CapacityEntry {
                server,
                scenario: "capacity".into(),
                axes: BTreeMap::new(),
                rep: 1,
                status: if r.interrupted {
                    CellStatus::Interrupted
                } else {
                    CellStatus::Ok
                },
                reason: r.error.clone(),
                result: Some(r),
            }],
        }
    }

    /// A report of a suite whose RunResults are in `dir` (rows whose file is missing or
    /// unreadable keep their status and lose their numbers).
    pub fn suite(index: SuiteIndex, dir: &Path) -> Report {
        let file = |row: &SuiteRow| row.path.as_ref().and_then(|p| row_file(dir, p));
        let read = |row: &SuiteRow| file(row).and_then(|f| std::fs::read_to_string(f).ok());
        let (capacity_rows, run_rows): (Vec<&SuiteRow>, Vec<&SuiteRow>) =
            index.rows.iter().partition(|r| r.capacity.is_some());
        let cells = run_rows
            .into_iter()
            .map(|row| {
                let result = read(row).and_then(|t| RunResult::from_json(&t).ok());
                let json = file(row);
                let beside = |named: fn(&RunResult) -> Option<&String>| {
                    let r = result.as_ref()?;
                    read_beside(json.as_deref()?, named(r)?)
                };
                let folded = beside(folded_path);
                let off_cpu_folded = beside(off_cpu_path);
                Cell {
                    server: row.server.clone(),
                    scenario: row.scenario.clone(),
                    axes: row.axes.clone(),
                    rep: row.rep,
                    status: row.status,
                    reason: row.reason.clone(),
                    control: row.control,
                    result,
                    folded,
                    off_cpu_folded,
                }
            })
            .collect();
        let capacity = capacity_rows
            .into_iter()
            .map(|row| CapacityEntry {
                server: row.server.clone(),
                scenario: row.scenario.clone(),
                axes: row.axes.clone(),
                rep: row.rep,
                status: row.status,
                reason: row.reason.clone(),
                result: read(row).and_then(|t| CapacityResult::from_json(&t).ok()),
            })
            .collect();
        let title = index
            .suite
            .get("suite")
            .and_then(|s| s.get("name"))
            .and_then(|n| n.as_str())
            .unwrap_or("suite")
            .to_string();
        Report {
            title,
            suites: vec![index],
            cells,
            capacity,
        }
    }

    /// Loads RunResult files, `suite.json` and `capacity.json` files and results folders
    /// (holding either) into one report.
    pub fn load(paths: &[PathBuf]) -> Result<Report, LoadError> {
        let mut parts = Vec::new();
        for p in paths {
            parts.push(load_one(p)?);
        }
        let mut it = parts.into_iter();
        let Some(mut report) = it.next() else {
            return Err(LoadError {
                path: String::new(),
                message: "no result given".into(),
            });
        };
        let mut n = 1;
        for r in it {
            n += 1;
            report.suites.extend(r.suites);
            report.cells.extend(r.cells);
            report.capacity.extend(r.capacity);
        }
        if n > 1 {
            report.title = format!("{n} results");
        }
        Ok(report)
    }

    /// The only run of a single-run report.
    pub fn single_run(&self) -> Option<&RunResult> {
        match (self.suites.is_empty(), self.cells.as_slice()) {
            (true, [c]) => c.result.as_ref(),
            _ => None,
        }
    }

    /// Cells grouped by scenario+axes, then server, in order of first appearance. Runs are
    /// repetitions only when their load is the same (`load_id` of the finished runs): runs of
    /// different loads under one label (single runs are all labelled `run`) become separate
    /// series, labelled by what differs. Cells that did not finish join their label's first
    /// series.
    pub fn series(&self) -> Vec<Series<'_>> {
        let mut out: Vec<Series> = Vec::new();
        for c in &self.cells {
            let label = c.label();
            let id = c
                .result
                .as_ref()
                .filter(|_| c.status == CellStatus::Ok)
                .map(load_id);
            let same = |s: &Series| {
                s.base_label == label
                    && s.server == c.server
                    && (id.is_none() || s.load_id.is_none() || s.load_id == id)
            };
            match out.iter_mut().find(|s| same(s)) {
                Some(s) => {
                    s.cells.push(c);
                    if s.load_id.is_none() {
                        s.load_id = id;
                    }
                }
                None => out.push(Series {
                    label: label.clone(),
                    base_label: label,
                    load_id: id,
                    server: c.server.clone(),
                    cells: vec![c],
                }),
            }
        }
        label_by_load(&mut out);
        // Keep each scenario's servers together even when repetitions interleave them.
        let mut order: Vec<String> = Vec::new();
        for s in &out {
            if !order.contains(&s.base_label) {
                order.push(s.base_label.clone());
            }
        }
        out.sort_by_key(|s| order.iter().position(|l| *l == s.base_label));
        out
    }
}

/// Series that share a label but not a load get the fields in which their loads differ
/// added to the label: `run (/delay?ms=1, open loop, -c 5)`.
fn label_by_load(series: &mut [Series]) {
    let mut labels: Vec<String> = series.iter().map(|s| s.base_label.clone()).collect();
    labels.sort();
    labels.dedup();
    for label in labels {
        // Series without a finished run say nothing about their load.
        let members: Vec<usize> = (0..series.len())
            .filter(|&i| series[i].base_label == label && series[i].load_id.is_some())
            .collect();
        let mut ids: Vec<&Option<String>> = members.iter().map(|&i| &series[i].load_id).collect();
        ids.sort();
        ids.dedup();
        if ids.len() < 2 {
            continue;
        }
        let keys: Vec<LoadKey> = members
            .iter()
            .map(|&i| {
                series[i].ok().first().map_or_else(LoadKey::new, |r| {
                    let mut k = LoadKey::of_result(r);
                    k.push("load_id", load_id(r));
                    k
                })
            })
            .collect();
        let diffs = labels_of(&keys);
        for (&i, diff) in members.iter().zip(diffs) {
            if !diff.is_empty() {
                series[i].label = format!("{label} ({diff})");
            }
        }
    }
}

/// What differs between loads, leaving out the id itself except where two loads would read
/// alike (they differ in headers or body content, which results do not record).
fn labels_of(keys: &[LoadKey]) -> Vec<String> {
    let without_id: Vec<LoadKey> = keys
        .iter()
        .map(|k| {
            let mut out = LoadKey::new();
            for (n, v) in k.fields().iter().filter(|(n, _)| *n != "load_id") {
                out.push(n, v);
            }
            out
        })
        .collect();
    let mut labels = identity::labels(&without_id);
    let ids: Vec<&str> = keys
        .iter()
        .map(|k| k.get("load_id").unwrap_or(""))
        .collect();
    let alike: Vec<bool> = (0..labels.len())
        .map(|i| (0..labels.len()).any(|j| j != i && labels[j] == labels[i] && ids[j] != ids[i]))
        .collect();
    for (i, label) in labels.iter_mut().enumerate() {
        if alike[i] {
            let id = format!("load {}", ids[i]);
            *label = if label.is_empty() {
                id
            } else {
                format!("{label}, {id}")
            };
        }
    }
    labels
}

/// The RunResult file of a suite row: `rows[].path` is relative to the results folder (the
/// harness writes `runs/<cell>.json`). A suite.json copied from another machine is not trusted
/// to name anything else: an absolute path or `..` could point anywhere, and a device such as
/// /dev/zero or /dev/stdin would make `volley report` read forever. Such rows lose their
/// numbers like rows whose file is missing.
/// `host:port` of a URL (the whole URL when it has none), naming a capacity search's server.
fn capacity_server(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    let host = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if host.is_empty() {
        url.to_string()
    } else {
        host.to_string()
    }
}

/// Where `--profile` wrote the on-CPU stacks (`server.profile.path`).
fn folded_path(r: &RunResult) -> Option<&String> {
    r.server.as_ref()?.profile.as_ref()?.path.as_ref()
}

/// Where `--profile-off-cpu` wrote the waits (`server.profile.off_cpu.path`).
fn off_cpu_path(r: &RunResult) -> Option<&String> {
    r.server
        .as_ref()?
        .profile
        .as_ref()?
        .off_cpu
        .as_ref()?
        .path
        .as_ref()
}

/// A file a RunResult at `json` names: relative to the JSON's folder (and kept inside it), or
/// absolute (`--profile-out` elsewhere).
fn read_beside(json: &Path, named: &str) -> Option<String> {
    let named = Path::new(named);
    let file = if named.is_absolute() {
        named.to_path_buf()
    } else {
        row_file(json.parent().unwrap_or(Path::new(".")), named.to_str()?)?
    };
    std::fs::read_to_string(file).ok()
}

fn row_file(dir: &Path, rel: &str) -> Option<PathBuf> {
    use std::path::Component;
    let rel = Path::new(rel);
    if !rel
        .components()
        .all(|c| matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return None;
    }
    let file = dir.join(rel);
    std::fs::metadata(&file).ok()?.is_file().then_some(file)
}

/// One input: a results folder (its `suite.json`), a suite index or a RunResult, told apart by
/// the `schema` key.
fn load_one(p: &Path) -> Result<Report, LoadError> {
    let err = |m: String| LoadError {
        path: p.display().to_string(),
        message: m,
    };
    let file = if p.is_dir() {
        let f = p.join("suite.json");
        let c = p.join("capacity.json");
        if f.is_file() {
            f
        } else if c.is_file() {
            c
        } else {
            return Err(err(
                "a folder without suite.json or capacity.json (not a volley bench or volley capacity results folder)".into(),
            ));
        }
    } else {
        p.to_path_buf()
    };
    let text = std::fs::read_to_string(&file).map_err(|e| err(e.to_string()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| err(format!("not JSON: {e}")))?;
    match v.get("schema").and_then(|s| s.as_str()) {
        Some(SUITE_SCHEMA) => {
            let index = SuiteIndex::from_json(&text).map_err(|e| err(e.to_string()))?;
            let dir = file.parent().unwrap_or(Path::new(".")).to_path_buf();
            Ok(Report::suite(index, &dir))
        }
        Some(s) if s.starts_with("volley.run/") => {
            let r = RunResult::from_json(&text).map_err(|e| err(e.to_string()))?;
            let folded = folded_path(&r).and_then(|f| read_beside(&file, f));
            let off_cpu = off_cpu_path(&r).and_then(|f| read_beside(&file, f));
            let mut report = Report::single(r)
                .with_folded(folded)
                .with_off_cpu_folded(off_cpu);
            // A run out of a results folder keeps its server's name and its cell.
            if let Some(row) = suite_row_of(&file) {
                let cell = &mut report.cells[0];
                cell.server = row.server;
                cell.scenario = row.scenario;
                cell.axes = row.axes;
                cell.rep = row.rep;
                cell.control = row.control;
            }
            Ok(report)
        }
        Some(CAPACITY_SCHEMA) => {
            let r = CapacityResult::from_json(&text).map_err(|e| err(e.to_string()))?;
            Ok(Report::capacity(r))
        }
        Some(s) => Err(err(format!(
            "unknown schema `{s}` (expected volley.run/1, volley.suite/1 or volley.capacity/1)"
        ))),
        None => Err(err("no `schema` key: not a volley result".into())),
    }
}

/// The `suite.json` row of a RunResult file kept in a results folder (`<dir>/runs/<file>`,
/// with `<dir>/suite.json`), when there is one.
fn suite_row_of(file: &Path) -> Option<SuiteRow> {
    let runs = file.parent()?;
    if runs.file_name()? != "runs" {
        return None;
    }
    let dir = runs.parent()?;
    let index =
        SuiteIndex::from_json(&std::fs::read_to_string(dir.join("suite.json")).ok()?).ok()?;
    let name = file.file_name()?.to_str()?;
    index.rows.into_iter().find(|r| {
        r.path
            .as_deref()
            .is_some_and(|p| Path::new(p).file_name().and_then(|f| f.to_str()) == Some(name))
    })
}

/// A server's GC figures over the repetitions that have `server.gc` (the long-tail study's
/// table): medians, the longest pause of all, the first note. Markdown and HTML share it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct GcFigures {
    /// Where the collections were read (`jvm-log`, `hsperfdata`, …; the first repetition's).
    pub source: String,
    /// Collections (median).
    pub collections: f64,
    /// Pause p50, ms (median).
    pub p50_ms: f64,
    /// Pause p99, ms (median).
    pub p99_ms: f64,
    /// Longest pause of every repetition, ms.
    pub max_ms: f64,
    /// Bytes allocated in the window, GB (10^9; median), when the source tells.
    pub alloc_gb: Option<f64>,
    /// Allocation rate, MB/s (median), when the source tells.
    pub alloc_mb_s: Option<f64>,
    /// Share of the requests at or above p99.9 that overlapped a pause, 0–1 (median).
    pub slow_overlap: Option<f64>,
    /// Those slowest requests checked (median).
    pub slow_checked: Option<f64>,
    /// What the source cannot see (the first repetition's note).
    pub note: Option<String>,
    /// Repetitions with a GC block.
    pub runs: usize,
}

impl GcFigures {
    /// The figures of `results` that have `server.gc`; None when none has.
    pub fn of(results: &[&RunResult]) -> Option<GcFigures> {
        let gcs: Vec<&volley_model::result::ServerGc> = results
            .iter()
            .filter_map(|r| r.server.as_ref()?.gc.as_ref())
            .collect();
        let first = gcs.first()?;
        let med = |f: &dyn Fn(&volley_model::result::ServerGc) -> Option<f64>| {
            median(&gcs.iter().filter_map(|g| f(g)).collect::<Vec<_>>())
        };
        Some(GcFigures {
            source: first.source.as_str().to_string(),
            collections: med(&|g| Some(g.collections as f64)).unwrap_or(0.0),
            p50_ms: med(&|g| Some(g.pause_ms.p50)).unwrap_or(0.0),
            p99_ms: med(&|g| Some(g.pause_ms.p99)).unwrap_or(0.0),
            max_ms: gcs.iter().map(|g| g.pause_max_ms).fold(0.0, f64::max),
            alloc_gb: med(&|g| g.alloc_bytes.map(|b| b as f64 / 1e9)),
            alloc_mb_s: med(&|g| g.alloc_rate_mb_s),
            slow_overlap: med(&|g| g.slow_overlap_fraction),
            slow_checked: med(&|g| {
                g.slow_overlap_fraction?;
                g.slow_requests_checked.map(|n| n as f64)
            }),
            note: gcs.iter().find_map(|g| g.note.clone()),
            runs: gcs.len(),
        })
    }

    /// `71% of 120` (requests ≥ p99.9 that overlapped a pause), or a dash.
    pub(crate) fn overlap_text(&self) -> String {
        match self.slow_overlap {
            None => "–".into(),
            Some(f) => match self.slow_checked {
                Some(n) => format!("{:.0}% of {}", f * 100.0, n.round()),
                None => format!("{:.0}%", f * 100.0),
            },
        }
    }
}

/// A pause length in ms with the precision its size deserves: 0.42, 4.1, 17.
pub(crate) fn pause_ms(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Median of values (None when empty).
pub fn median(v: &[f64]) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    let n = s.len();
    Some(if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE: &str = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../tests/fixtures/report/quick"
    );

    #[test]
    fn gc_figures_are_medians_over_the_repetitions_that_have_them() {
        let text = include_str!("../../../tests/fixtures/report/gc-run.json");
        let a = RunResult::from_json(text).unwrap();
        let mut b = a.clone();
        let g = b.server.as_mut().unwrap().gc.as_mut().unwrap();
        g.pause_ms.p99 = 20.0;
        g.pause_max_ms = 40.0;
        g.alloc_rate_mb_s = None;
        g.slow_overlap_fraction = Some(0.5);
        g.note = None;
        let mut none = a.clone();
        none.server.as_mut().unwrap().gc = None;
        assert_eq!(GcFigures::of(&[&none]), None);
        let f = GcFigures::of(&[&a, &b, &none]).unwrap();
        assert_eq!(f.runs, 2);
        assert_eq!(f.source, "jvm-log");
        assert_eq!(f.collections, 38.0);
        assert!((f.p99_ms - (14.429 + 20.0) / 2.0).abs() < 1e-9);
        assert_eq!(f.max_ms, 40.0, "the longest of them all");
        assert_eq!(
            f.alloc_mb_s,
            Some(464.0),
            "only the repetitions that have it"
        );
        assert_eq!(f.overlap_text(), "60% of 20");
        assert!(f.note.unwrap().starts_with("from the JVM's GC log"));
        assert_eq!(
            [pause_ms(0.42), pause_ms(14.43), pause_ms(123.4)],
            ["0.42", "14.4", "123"]
        );
    }

    #[test]
    fn loads_that_read_alike_are_told_apart_by_their_id() {
        let key = |path: &str, id: &str| {
            let mut k = LoadKey::new();
            k.push("path", path).push("load_id", id);
            k
        };
        // x and y differ only in what results do not record (headers, body content).
        let labels = labels_of(&[key("/", "x"), key("/", "y"), key("/a", "z")]);
        assert_eq!(labels, ["/, load x", "/, load y", "/a"]);
        assert_eq!(
            labels_of(&[key("/", "x"), key("/", "y")]),
            ["load x", "load y"]
        );
    }

    #[test]
    fn suite_rows_read_only_files_inside_the_results_folder() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("results");
        std::fs::create_dir_all(dir.join("runs")).unwrap();
        let run = std::fs::read_to_string(format!("{FIXTURE}/runs/go__get__r1.json")).unwrap();
        std::fs::write(dir.join("runs/a.json"), &run).unwrap();
        std::fs::write(tmp.path().join("outside.json"), &run).unwrap();
        let mut index = SuiteIndex::from_json(
            &std::fs::read_to_string(format!("{FIXTURE}/suite.json")).unwrap(),
        )
        .unwrap();
        let outside = tmp.path().join("outside.json").display().to_string();
        let paths = [
            ("runs/a.json", true),
            ("./runs/a.json", true),
            (outside.as_str(), false),
            ("../outside.json", false),
            ("runs/../runs/a.json", false),
            ("runs", false),
        ];
        index.rows.truncate(paths.len());
        for (row, (p, _)) in index.rows.iter_mut().zip(paths) {
            row.path = Some(p.to_string());
        }
        let report = Report::suite(index, &dir);
        for (cell, (p, readable)) in report.cells.iter().zip(paths) {
            assert_eq!(cell.result.is_some(), readable, "row path {p}");
        }
    }
}

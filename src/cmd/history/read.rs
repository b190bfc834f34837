//! `volley history import`, `list` and `show`, and the records of a results folder or a
//! capacity search that `bench --save` and `capacity --save` hand to the history.

use std::path::{Path, PathBuf};

use clap::Args;

use super::{open_existing, since, ExitCode};
use crate::history::git::{self, GitInfo};
use crate::history::{Filter, Labels, Origin, Record, Source, Stored};
use crate::metric::Stat;
use crate::result::capacity::CapacityResult;
use crate::result::suite::SuiteIndex;
use crate::result::{CellStatus, RunResult};
use crate::sys::files;

/// `volley history import`.
#[derive(Debug, Args, Clone)]
pub struct ImportArgs {
    /// RunResult files, capacity files (`capacity.json`), `suite.json` files or results
    /// folders.
    #[arg(required = true, value_name = "PATH")]
    pub paths: Vec<PathBuf>,

    /// The commit they measured (a revision git knows, or a full hash) [default: none].
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,

    /// The branch to record with them.
    #[arg(long, value_name = "NAME", requires = "commit")]
    pub branch: Option<String>,
}

/// Filters of `list`, `trend`, `check` and `export`.
#[derive(Debug, Args, Clone, Default)]
pub struct FilterArgs {
    /// Only this suite (its `[suite] name`).
    #[arg(long)]
    pub suite_name: Option<String>,
    /// Only this scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// Only this server.
    #[arg(long)]
    pub server: Option<String>,
    /// Only runs recorded on this branch.
    #[arg(long)]
    pub branch: Option<String>,
    /// Only runs started since: a duration back (`7d`, `12h`), a date or an RFC 3339 time.
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
}

impl FilterArgs {
    /// The store's filter.
    pub(crate) fn filter(&self) -> Result<Filter, String> {
        Ok(Filter {
            suite: self.suite_name.clone(),
            scenario: self.scenario.clone(),
            server: self.server.clone(),
            branch: self.branch.clone(),
            since: self.since.as_deref().map(since).transpose()?,
        })
    }
}

/// `volley history list`.
#[derive(Debug, Args, Clone)]
pub struct ListArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The newest N [default: 50; 0 for all].
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
    /// One JSON object per run instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `volley history show`.
#[derive(Debug, Args, Clone)]
pub struct ShowArgs {
    /// The run's id (the first column of `volley history list`).
    pub id: i64,
    /// Everything saved, as JSON (every scalar by its RunResult path).
    #[arg(long)]
    pub json: bool,
}

/// The commit to record for imports.
fn import_git(a: &ImportArgs) -> Result<Option<GitInfo>, String> {
    let Some(rev) = &a.commit else {
        return Ok(None);
    };
    let full_hash =
        |r: &str| matches!(r.len(), 40 | 64) && r.chars().all(|c| c.is_ascii_hexdigit());
    let mut info = match git::describe(rev) {
        Some(i) => i,
        None if git::toplevel().is_none() && full_hash(rev) => GitInfo {
            commit: rev.to_ascii_lowercase(),
            ..GitInfo::default()
        },
        None if git::toplevel().is_some() => {
            return Err(format!("--commit {rev}: not a revision of this repository"))
        }
        None => {
            return Err(format!(
                "--commit {rev}: outside a git repository give the full hash (40 hex digits)"
            ))
        }
    };
    info.branch = a.branch.clone();
    Ok(Some(info))
}

pub(super) fn import(a: &ImportArgs, path: &Path) -> Result<ExitCode, String> {
    let git = import_git(a)?;
    let mut records = Vec::new();
    for p in &a.paths {
        records.extend(records_of(p, Source::Import, git.as_ref())?);
    }
    if records.is_empty() {
        return Err("nothing to import: no finished run in the paths given".into());
    }
    let (mut store, created) = super::create(path, "--history")?;
    let ids = store.save(&records).map_err(|e| e.to_string())?;
    super::said("volley history import", &ids, records.len(), store.path());
    if created {
        super::tip_if_untracked("volley history import", store.path());
    }
    Ok(ExitCode::Ok)
}

/// The records of a path: a RunResult, a capacity file, a `suite.json`, or a folder holding
/// one (a folder of neither: each of its `.json` files).
pub(crate) fn records_of(
    p: &Path,
    source: Source,
    git: Option<&GitInfo>,
) -> Result<Vec<Record>, String> {
    if p.is_dir() {
        for index in ["suite.json", "capacity.json"] {
            if p.join(index).is_file() {
                return records_of(&p.join(index), source, git);
            }
        }
        let mut files: Vec<PathBuf> = std::fs::read_dir(p)
            .map_err(|e| format!("{}: {e}", p.display()))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|f| f.extension().is_some_and(|x| x == "json"))
            .collect();
        files.sort();
        let mut out = Vec::new();
        for f in files {
            out.extend(records_of(&f, source, git)?);
        }
        return Ok(out);
    }
    let text = std::fs::read_to_string(p).map_err(|e| format!("{}: {e}", p.display()))?;
    let value: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{}: not JSON: {e}", p.display()))?;
    let schema = value.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    let ctx = |labels: Labels| Origin {
        source,
        git,
        labels,
        path: Some(absolute(p)),
    };
    if schema.starts_with("volley.run/") {
        let r = RunResult::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        return Ok(vec![Record::of_run(&r, ctx(Labels::default()))]);
    }
    if schema == crate::result::capacity::CAPACITY_SCHEMA {
        let c = CapacityResult::from_json(&text).map_err(|e| format!("{}: {e}", p.display()))?;
        let dir = p.parent().unwrap_or(Path::new("."));
        return Ok(vec![capacity_record(&c, &[dir], ctx(Labels::default()))]);
    }
    if schema == crate::result::suite::SUITE_SCHEMA {
        return suite_records(p, source, git);
    }
    Err(format!(
        "{}: not a volley result (schema `{schema}`; expected a RunResult, volley.capacity/1 or volley.suite/1)",
        p.display()
    ))
}

/// A capacity search's record; its first step's RunResult (looked for in `dirs`) gives the load.
pub fn capacity_record(c: &CapacityResult, dirs: &[&Path], ctx: Origin<'_>) -> Record {
    let first = c.steps.first().and_then(|s| {
        dirs.iter().find_map(|d| {
            let text = std::fs::read_to_string(d.join(&s.path)).ok()?;
            RunResult::from_json(&text).ok()
        })
    });
    Record::of_capacity(c, first.as_ref(), ctx)
}

/// The finished cells of a suite's results folder (`suite.json` at `index_path`).
pub fn suite_records(
    index_path: &Path,
    source: Source,
    git: Option<&GitInfo>,
) -> Result<Vec<Record>, String> {
    let text = std::fs::read_to_string(index_path)
        .map_err(|e| format!("{}: {e}", index_path.display()))?;
    let index =
        SuiteIndex::from_json(&text).map_err(|e| format!("{}: {e}", index_path.display()))?;
    let dir = index_path.parent().unwrap_or(Path::new("."));
    let suite = index
        .suite
        .pointer("/suite/name")
        .and_then(|v| v.as_str())
        .map(str::to_string)
        .unwrap_or_default();
    let mut out = Vec::new();
    for row in index
        .rows
        .iter()
        .filter(|r| r.status == CellStatus::Ok && !r.control)
    {
        let Some(rel) = &row.path else { continue };
        let file = dir.join(rel);
        let text =
            std::fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
        let ctx = Origin {
            source,
            git,
            labels: Labels {
                suite: suite.clone(),
                scenario: row.scenario.clone(),
                server: row.server.clone(),
                axes: crate::result::axes_label(&row.axes),
                rep: Some(row.rep),
            },
            path: Some(absolute(&file)),
        };
        if row.capacity.is_some() {
            let c =
                CapacityResult::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            let here = file.parent().unwrap_or(dir);
            out.push(capacity_record(&c, &[here, dir], ctx));
        } else {
            let r = RunResult::from_json(&text).map_err(|e| format!("{}: {e}", file.display()))?;
            out.push(Record::of_run(&r, ctx));
        }
    }
    Ok(out)
}

/// A result file's path as recorded: absolute, so that the trend page can link it from
/// anywhere.
pub fn absolute(p: &Path) -> String {
    std::path::absolute(p)
        .unwrap_or_else(|_| p.to_path_buf())
        .display()
        .to_string()
}

/// The test's name as `list` shows it.
fn test_name(s: &Stored) -> String {
    let l = &s.record.labels;
    let mut t = if l.scenario.is_empty() && l.server.is_empty() {
        s.record.url.clone()
    } else {
        format!("{} on {}", l.scenario, l.server)
    };
    if !l.axes.is_empty() {
        t += &format!(" [{}]", l.axes);
    }
    t
}

pub(super) fn list(a: &ListArgs, path: &Path) -> Result<ExitCode, String> {
    let store = open_existing(path)?;
    let runs = store.runs(&a.filter.filter()?).map_err(|e| e.to_string())?;
    let skip = if a.limit == 0 {
        0
    } else {
        runs.len().saturating_sub(a.limit)
    };
    let runs = &runs[skip..];
    if a.json {
        let mut out = String::new();
        for s in runs {
            out += &serde_json::to_string(&run_json(s, false)).unwrap_or_default();
            out.push('\n');
        }
        files::stdout(&out);
        return Ok(ExitCode::Ok);
    }
    let mut out = format!(
        "{:>5}  {:<16}  {:<8}  {:<12}  {:<6}  {:>12}  {:>10}  {:>10}  {:<8}  {:<12}  test\n",
        "id", "started (UTC)", "commit", "branch", "mode", "req/s", "p50", "p99", "load", "host"
    );
    for s in runs {
        let r = &s.record;
        let v = |k: &str| r.scalars.get(k).copied();
        let us = |k: &str| v(k).map_or("-".into(), |x| crate::units::micros(x as u64));
        let rate = v("throughput_rps")
            .or(v("max_rate_rps"))
            .map_or("-".into(), crate::units::rate);
        out +=
            &format!(
            "{:>5}  {:<16}  {:<8}  {:<12}  {:<6}  {:>12}  {:>10}  {:>10}  {:<8}  {:<12}  {}{}\n",
            s.id,
            r.started_at.get(..16).unwrap_or(&r.started_at).replace('T', " "),
            r.git.as_ref().map_or("-".into(), |g| format!(
                "{}{}",
                crate::history::series::short(&g.commit, 7),
                if g.dirty { "+" } else { "" }
            )),
            r.git.as_ref().and_then(|g| g.branch.clone()).unwrap_or_else(|| "-".into()),
            if r.kind == crate::history::Kind::Capacity { "capac." } else { r.mode.as_str() },
            rate,
            us("latency_us.p50"),
            us("latency_us.p99"),
            r.load_id.chars().take(8).collect::<String>(),
            r.host.id(),
            test_name(s),
            if r.interrupted { " (interrupted)" } else { "" }
        );
    }
    if runs.is_empty() {
        out += "(no saved run matches)\n";
    }
    files::stdout(&out);
    Ok(ExitCode::Ok)
}

fn run_json(s: &Stored, everything: bool) -> serde_json::Value {
    let r = &s.record;
    let mut v = serde_json::json!({
        "id": s.id,
        "recorded_at": s.recorded_at,
        "started_at": r.started_at,
        "kind": r.kind.as_str(),
        "source": r.source.as_str(),
        "git": r.git.as_ref().map(|g| serde_json::json!({"commit": g.commit, "branch": g.branch,
            "dirty": g.dirty, "time": g.time, "subject": g.subject})),
        "host": {"id": r.host.id(), "cpu_model": r.host.cpu_model, "cores": r.host.cores,
            "client_cpus": r.host.client_cpus, "server_cpus": r.host.server_cpus,
            "kernel": r.host.kernel},
        "volley_version": r.volley_version,
        "load_id": r.load_id,
        "suite": r.labels.suite, "scenario": r.labels.scenario, "server": r.labels.server,
        "axes": r.labels.axes, "rep": r.labels.rep,
        "mode": r.mode.as_str(),
        "url": r.url,
        "interrupted": r.interrupted,
        "result_path": r.result_path,
        "warnings": r.warnings,
    });
    if everything {
        v["scalars"] = serde_json::json!(r.scalars);
        v["latency_hdr"] = serde_json::json!(r.latency_hdr);
        v["service_time_hdr"] = serde_json::json!(r.service_time_hdr);
    } else {
        for k in [
            "throughput_rps",
            "max_rate_rps",
            "latency_us.p50",
            "latency_us.p99",
        ] {
            if let Some(x) = r.scalars.get(k) {
                v[k] = serde_json::json!(x);
            }
        }
    }
    v
}

pub(super) fn show(a: &ShowArgs, path: &Path) -> Result<ExitCode, String> {
    let store = open_existing(path)?;
    let Some(s) = store.run(a.id).map_err(|e| e.to_string())? else {
        return Err(format!(
            "no run #{} in {} (volley history list shows the ids)",
            a.id,
            path.display()
        ));
    };
    if a.json {
        let text = serde_json::to_string_pretty(&run_json(&s, true)).unwrap_or_default();
        files::stdout(&format!("{text}\n"));
        return Ok(ExitCode::Ok);
    }
    files::stdout(&show_text(&s));
    Ok(ExitCode::Ok)
}

fn show_text(s: &Stored) -> String {
    let r = &s.record;
    let mut out = format!("run #{}: {}\n", s.id, test_name(s));
    let line = |k: &str, v: String| format!("  {k:<14} {v}\n");
    out += &line("started", r.started_at.clone());
    out += &line(
        "saved",
        format!("{} by volley {}", s.recorded_at, r.source.as_str()),
    );
    if let Some(g) = &r.git {
        out += &line(
            "commit",
            format!(
                "{}{}{}{}",
                g.commit,
                if g.dirty {
                    " (uncommitted changes)"
                } else {
                    ""
                },
                g.branch
                    .as_deref()
                    .map(|b| format!(" on {b}"))
                    .unwrap_or_default(),
                g.subject
                    .as_deref()
                    .map(|x| format!(" — {x}"))
                    .unwrap_or_default()
            ),
        );
    }
    let h = &r.host;
    out += &line(
        "host",
        format!(
            "{} — {}, {} CPUs, client on {}, server on {}; kernel {} (not matched)",
            h.id(),
            h.cpu_model.as_deref().unwrap_or("unknown CPU"),
            h.cores,
            h.client_cpus,
            h.server_cpus.as_deref().unwrap_or("any CPU"),
            h.kernel.as_deref().unwrap_or("unknown")
        ),
    );
    out += &line(
        "load",
        format!("{} ({}, volley {})", r.load_id, r.mode, r.volley_version),
    );
    out += &line("url", r.url.clone());
    if let Some(p) = &r.result_path {
        out += &line("file", p.clone());
    }
    for (k, label) in [
        ("throughput_rps", "throughput"),
        ("max_rate_rps", "max rate"),
    ] {
        if let Some(v) = r.scalars.get(k) {
            out += &line(label, format!("{} req/s", crate::units::rate(*v)));
        }
    }
    for (name, hdr) in [
        ("latency", &r.latency_hdr),
        ("service time", &r.service_time_hdr),
    ] {
        let Some(h) = hdr
            .as_deref()
            .and_then(|t| crate::stats::histogram::decode(t).ok())
        else {
            continue;
        };
        let p = crate::stats::Percentiles::of(&h);
        let cells: Vec<String> = Stat::PERCENTILES
            .iter()
            .chain([&Stat::Max])
            .filter_map(|st| {
                Some(format!(
                    "{} {}",
                    st.name(),
                    crate::units::micros(st.of(&p)? as u64)
                ))
            })
            .collect();
        out += &line(
            name,
            format!(
                "{} (from its histogram, {} values)",
                cells.join(" · "),
                h.len()
            ),
        );
    }
    for w in &r.warnings {
        out += &line("warning", w.clone());
    }
    if r.interrupted {
        out += &line(
            "interrupted",
            "yes: partial numbers; trends and checks leave it out".into(),
        );
    }
    out
}

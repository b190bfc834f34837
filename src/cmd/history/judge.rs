//! `volley history trend`, `check` and `export`: the saved runs as series, judged.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use clap::Args;

use super::read::FilterArgs;
use super::{open_existing, ExitCode};
use crate::config::suite::HistoryTable;
use crate::history::check::{self, Call, Entry, Settings, Test};
use crate::history::export::{self, Format};
use crate::history::git;
use crate::history::measure::Measure;
use crate::history::page::{self, About};
use crate::history::series::{self, Series};
use crate::history::trend::{self, Trend};
use crate::history::Stored;
use crate::metric::{Metric, Stat};
use crate::sys::files;

/// `volley history trend`.
#[derive(Debug, Args, Clone)]
pub struct TrendArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The metric [default: each series' headline: throughput in closed loop, p99 in open
    /// loop, max_rate for capacity searches].
    #[arg(long, value_name = "M")]
    pub metric: Option<String>,
    /// Write the trend page (self-contained HTML) to PATH.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Write the trends as JSON to PATH, or to stdout with `-`.
    #[arg(long, value_name = "PATH")]
    pub json: Option<String>,
    /// The smallest change marked as a change point, percent of the level before [default:
    /// 5%; 0% marks every significant one, as Otava does].
    #[arg(long, value_name = "PCT")]
    pub min_effect: Option<String>,
}

/// `volley history check`.
#[derive(Debug, Args, Clone)]
pub struct CheckArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// The revision whose history is the baseline: a branch, tag or commit [default: the suite
    /// file's `[history] baseline`, else main].
    #[arg(long, value_name = "REV")]
    pub baseline: Option<String>,
    /// The commit whose runs are judged [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,
    /// A metric whose regression fails the check (repeatable) [default: throughput, p50,
    /// max_rate]. Tail percentiles given here gate too.
    #[arg(long, value_name = "M")]
    pub metric: Vec<String>,
    /// A metric whose regression is only reported (repeatable) [default: p99].
    #[arg(long, value_name = "M")]
    pub warn: Vec<String>,
    /// The smallest change called a regression, percent of the baseline [default: 5%].
    #[arg(long, value_name = "PCT")]
    pub min_effect: Option<String>,
    /// The Mann-Whitney test's level (5 repetitions a side or more) [default: 0.01].
    #[arg(long, value_name = "A")]
    pub alpha: Option<f64>,
    /// Read the rules of a suite file's `[history]` table (flags win).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
    /// Write the findings as JSON to PATH, or to stdout with `-`.
    #[arg(long, value_name = "PATH")]
    pub json: Option<String>,
}

/// `volley history export`.
#[derive(Debug, Args, Clone)]
pub struct ExportArgs {
    /// Which runs.
    #[command(flatten)]
    pub filter: FilterArgs,
    /// bmf (bencher's JSON, one commit's runs) or otava-csv (a CSV per series and otava.yaml).
    #[arg(long, value_enum)]
    pub format: Format,
    /// bmf: the commit whose runs are exported [default: HEAD].
    #[arg(long, value_name = "REV")]
    pub commit: Option<String>,
    /// otava-csv: the metric columns (repeatable) [default: throughput, p50, p99; max_rate].
    #[arg(long, value_name = "M")]
    pub metric: Vec<String>,
    /// bmf: the file [default: stdout]; otava-csv: the folder to write (stdout when one series).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

fn measure(flag: &str, name: &str) -> Result<Measure, String> {
    Measure::parse(name).ok_or_else(|| {
        format!(
            "{flag} {name}: unknown metric (known: {})",
            Measure::names()
        )
    })
}

/// The runs a trend or a check reads: finished ones (an interrupted run's numbers are partial).
fn usable(store: &crate::history::Store, f: &FilterArgs) -> Result<Vec<Stored>, String> {
    let runs = store.runs(&f.filter()?).map_err(|e| e.to_string())?;
    Ok(runs.into_iter().filter(|r| !r.record.interrupted).collect())
}

/// Writes `text` to `target` (`-`: stdout); the message names `flag`.
fn write_to(flag: &str, target: &str, text: &str) -> Result<(), String> {
    if target == "-" {
        files::stdout(text);
        return Ok(());
    }
    std::fs::write(target, text).map_err(|e| format!("{flag} {target}: {e}"))
}

fn headline(s: &Series<'_>) -> Measure {
    if s.key.capacity {
        Measure::MaxRate
    } else if s.mode() == "open" {
        Measure::Run(Metric::Latency(Stat::P99))
    } else {
        Measure::Run(Metric::Throughput)
    }
}

pub(super) fn trend(a: &TrendArgs, path: &Path) -> Result<ExitCode, String> {
    let chosen = a
        .metric
        .as_deref()
        .map(|m| measure("--metric", m))
        .transpose()?;
    let store = open_existing(path)?;
    let runs = usable(&store, &a.filter)?;
    let all = series::group(&runs);
    let mut cp = Settings::default().changepoint;
    if let Some(text) = &a.min_effect {
        cp.min_magnitude = percent("--min-effect", text)? / 100.0;
    }
    let trends: Vec<(Trend, Measure)> = all
        .iter()
        .filter_map(|s| {
            let m = chosen.unwrap_or_else(|| headline(s));
            m.applies_to(s.key.capacity)
                .then(|| trend::trend(s, m, &cp).map(|t| (t, m)))
                .flatten()
        })
        .collect();
    let metric = a
        .metric
        .clone()
        .unwrap_or_else(|| "each series' headline".into());
    if let Some(j) = &a.json {
        let only: Vec<&Trend> = trends.iter().map(|(t, _)| t).collect();
        let v = serde_json::json!({"schema": "volley.history-trend/1", "metric": metric, "trends": only});
        write_to(
            "--json",
            j,
            &format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()),
        )?;
    }
    if let Some(h) = &a.html {
        let about = About {
            db: path.display().to_string(),
            metric: metric.clone(),
            generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        };
        let only: Vec<Trend> = trends.iter().map(|(t, _)| t.clone()).collect();
        std::fs::write(h, page::render(&only, &about))
            .map_err(|e| format!("--html {}: {e}", h.display()))?;
    }
    if a.json.as_deref() != Some("-") {
        let mut out = String::new();
        for (t, m) in &trends {
            out += &trend::text(t, *m);
            out.push('\n');
        }
        if trends.is_empty() {
            out += "No saved run has this metric.\n";
        }
        files::stdout(&out);
    }
    Ok(ExitCode::Ok)
}

/// The full hash of `rev`: from git, or outside a repository the one saved commit it prefixes.
fn resolve_commit(flag: &str, rev: &str, runs: &[Stored]) -> Result<String, String> {
    if let Some(info) = git::describe(rev) {
        return Ok(info.commit);
    }
    let found: BTreeSet<&str> = runs
        .iter()
        .filter_map(|r| r.record.git.as_ref())
        .map(|g| g.commit.as_str())
        .filter(|c| c.starts_with(&rev.to_ascii_lowercase()))
        .collect();
    match found.len() {
        1 => Ok(found.into_iter().next().unwrap_or_default().to_string()),
        0 => Err(format!(
            "{flag} {rev}: not a revision of this repository, and no saved run has such a commit"
        )),
        n => Err(format!(
            "{flag} {rev}: {n} saved commits start so; give more of the hash"
        )),
    }
}

/// A percentage as written (`5%`, `5`), 0 to 100.
fn percent(flag: &str, text: &str) -> Result<f64, String> {
    let p: f64 = text
        .trim()
        .trim_end_matches('%')
        .trim()
        .parse()
        .map_err(|_| format!("{flag} {text}: not a percentage (like 5%)"))?;
    if !(0.0..100.0).contains(&p) {
        return Err(format!("{flag} {text}: must be from 0% to 100%"));
    }
    Ok(p)
}

fn settings(a: &CheckArgs) -> Result<(Settings, Option<String>), String> {
    let table = match &a.suite {
        Some(p) => HistoryTable::load(p).map_err(|e| e.to_string())?,
        None => HistoryTable::default(),
    };
    let mut s = Settings::default();
    let names = |flag: &str, v: &[String]| -> Result<Vec<Measure>, String> {
        v.iter().map(|n| measure(flag, n)).collect()
    };
    if !a.metric.is_empty() {
        s.gate = names("--metric", &a.metric)?;
    } else if let Some(g) = &table.gate {
        s.gate = names("[history] gate:", g)?;
    }
    if !a.warn.is_empty() {
        s.warn = names("--warn", &a.warn)?;
    } else if let Some(w) = &table.warn {
        s.warn = names("[history] warn:", w)?;
    }
    if let Some(text) = &a.min_effect {
        let p: f64 = text
            .trim()
            .trim_end_matches('%')
            .trim()
            .parse()
            .map_err(|_| format!("--min-effect {text}: not a percentage (like 5%)"))?;
        if !(0.0..100.0).contains(&p) {
            return Err(format!("--min-effect {text}: must be from 0% to 100%"));
        }
        s.min_effect_pct = p;
    } else if let Some(p) = table.min_effect_pct {
        s.min_effect_pct = p;
    }
    match a.alpha {
        Some(x) if !(x > 0.0 && x < 1.0) => {
            return Err(format!("--alpha {x}: must be between 0 and 1 (exclusive)"))
        }
        Some(x) => s.alpha = x,
        None => s.alpha = table.alpha.unwrap_or(s.alpha),
    }
    s.changepoint.max_pvalue = table.max_pvalue.unwrap_or(s.changepoint.max_pvalue);
    s.changepoint.window = table.window.unwrap_or(s.changepoint.window);
    let baseline = a.baseline.clone().or(table.baseline);
    Ok((s, baseline))
}

pub(super) fn check(a: &CheckArgs, path: &Path) -> Result<ExitCode, String> {
    let (s, baseline) = settings(a)?;
    let baseline = baseline.unwrap_or_else(|| "main".to_string());
    let store = open_existing(path)?;
    let runs = usable(&store, &a.filter)?;
    let rev = a.commit.as_deref().unwrap_or("HEAD");
    let commit = resolve_commit("--commit", rev, &runs)?;
    let is = |r: &Stored, c: &str| r.record.git.as_ref().is_some_and(|g| g.commit == c);
    let current: Vec<&Stored> = runs.iter().filter(|r| is(r, &commit)).collect();
    if current.is_empty() {
        return Err(format!(
            "no saved run of commit {} ({rev}) in {}: run the suite with --save first",
            &commit[..commit.len().min(12)],
            path.display()
        ));
    }
    let history: BTreeSet<String> = git::history_of(&baseline, 100_000)
        .unwrap_or_default()
        .into_iter()
        .collect();
    let on_branch = |r: &Stored| {
        r.record
            .git
            .as_ref()
            .is_some_and(|g| g.branch.as_deref() == Some(baseline.as_str()))
    };
    if history.is_empty() && !runs.iter().any(on_branch) {
        return Err(format!(
            "--baseline {baseline}: not a revision of this repository, and no saved run was recorded on a branch of that name"
        ));
    }
    let base: Vec<&Stored> = runs
        .iter()
        .filter(|r| {
            r.record.git.as_ref().is_some_and(|g| {
                g.commit != commit && !g.dirty && (history.contains(&g.commit) || on_branch(r))
            })
        })
        .collect();
    if base.is_empty() {
        return Err(format!(
            "--baseline {baseline}: no saved run of its history in {} to compare with (save runs of {baseline} with --save first)",
            path.display()
        ));
    }
    let cur_series = series::group(current.iter().copied());
    let base_series = series::group(base.iter().copied());
    let entries = check::check(&cur_series, &base_series, &s);
    let base_commits: BTreeSet<&str> = base
        .iter()
        .filter_map(|r| r.record.git.as_ref().map(|g| g.commit.as_str()))
        .collect();
    let head = format!(
        "volley history check: {} ({rev}) against {baseline} ({} commit{}, {} run{}) in {}\n",
        &commit[..commit.len().min(7)],
        base_commits.len(),
        if base_commits.len() == 1 { "" } else { "s" },
        base.len(),
        if base.len() == 1 { "" } else { "s" },
        path.display()
    );
    let regressions = entries.iter().filter(|e| e.regressed()).count();
    let compared = entries.iter().filter(|e| e.refused.is_none()).count();
    if let Some(j) = &a.json {
        let v = check_json(&entries, &commit, &baseline, &s, regressions);
        write_to(
            "--json",
            j,
            &format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default()),
        )?;
    }
    let mut out = head;
    for e in &entries {
        out += &entry_text(e, &s);
    }
    out += &format!(
        "\n{regressions} regression{} called; {compared} of {} series compared (gates: {}; warns: {}; min effect {}%)\n",
        if regressions == 1 { "" } else { "s" },
        entries.len(),
        s.gate.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        s.warn.iter().map(|m| m.name()).collect::<Vec<_>>().join(", "),
        s.min_effect_pct
    );
    if a.json.as_deref() == Some("-") {
        eprint!("{out}");
    } else {
        files::stdout(&out);
    }
    if compared == 0 {
        eprintln!(
            "volley history check: no series of this commit could be compared (reasons above)"
        );
        return Ok(ExitCode::Usage);
    }
    Ok(if regressions > 0 {
        ExitCode::NoResponse
    } else {
        ExitCode::Ok
    })
}

fn entry_text(e: &Entry, s: &Settings) -> String {
    let mut out = format!("\n{}\n", e.name);
    if let Some(why) = &e.refused {
        out += &format!("  {why}\n");
        return out;
    }
    for f in &e.findings {
        let m = f.measure;
        let effect = f.effect_pct.map_or("—".into(), |p| format!("{p:+.1}%"));
        let ci = f
            .ci_pct
            .map(|(l, h)| format!(" (CI {l:+.1}…{h:+.1}%)"))
            .unwrap_or_default();
        let test = match f.test {
            Test::MannWhitney => format!("Mann-Whitney p={:.3}", f.p_value),
            Test::TTest => format!("t-test p={:.1e}", f.p_value),
        };
        let verdict = match (f.call, f.gating) {
            (Call::Regression, true) => "REGRESSION".to_string(),
            (Call::Regression, false) => format!(
                "slower (warns only: {} is a tail, noisy run to run; --metric {} to gate)",
                m.name(),
                m.name()
            ),
            (Call::Improvement, _) => "improvement".into(),
            (Call::NoChange, _) if f.baseline_n + f.current_n <= 2 => "too few runs to tell".into(),
            (Call::NoChange, _) => format!("no change of {}% or more", s.min_effect_pct),
        };
        out += &format!(
            "  {:<12} {} (n={}, {} commit{}{}) → {} (n={})  {effect}{ci}  {test}  {verdict}\n",
            if f.gating {
                m.name().to_string()
            } else {
                format!("{} (warn)", m.name())
            },
            m.show(f.baseline_median),
            f.baseline_n,
            f.baseline_commits,
            if f.baseline_commits == 1 { "" } else { "s" },
            f.level_since
                .as_deref()
                .map(|c| format!(" since the change at {c}"))
                .unwrap_or_default(),
            m.show(f.current_median),
            f.current_n,
        );
    }
    if e.findings.is_empty() {
        out += "  no metric of this series has values on both sides\n";
    }
    out
}

fn check_json(
    entries: &[Entry],
    commit: &str,
    baseline: &str,
    s: &Settings,
    regressions: usize,
) -> serde_json::Value {
    let call = |c: Call| match c {
        Call::Regression => "regression",
        Call::Improvement => "improvement",
        Call::NoChange => "no_change",
    };
    let items: Vec<serde_json::Value> = entries
        .iter()
        .map(|e| {
            let findings: Vec<serde_json::Value> = e
                .findings
                .iter()
                .map(|f| {
                    serde_json::json!({
                        "metric": f.measure.name(), "gating": f.gating, "call": call(f.call),
                        "baseline_median": f.baseline_median, "baseline_n": f.baseline_n,
                        "baseline_commits": f.baseline_commits, "level_since": f.level_since,
                        "current_median": f.current_median, "current_n": f.current_n,
                        "effect_pct": f.effect_pct,
                        "ci_low_pct": f.ci_pct.map(|c| c.0), "ci_high_pct": f.ci_pct.map(|c| c.1),
                        "p_value": f.p_value,
                        "test": match f.test { Test::MannWhitney => "mann-whitney", Test::TTest => "t-test" },
                    })
                })
                .collect();
            serde_json::json!({
                "name": e.name, "suite": e.key.suite, "scenario": e.key.scenario,
                "server": e.key.server, "axes": e.key.axes, "load_id": e.key.load_id,
                "host_id": e.key.host_id, "refused": e.refused, "regressed": e.regressed(),
                "findings": findings,
            })
        })
        .collect();
    serde_json::json!({
        "schema": "volley.history-check/1",
        "commit": commit,
        "baseline": baseline,
        "min_effect_pct": s.min_effect_pct,
        "alpha": s.alpha,
        "max_pvalue": s.changepoint.max_pvalue,
        "regressions": regressions,
        "series": items,
    })
}

pub(super) fn export(a: &ExportArgs, path: &Path) -> Result<ExitCode, String> {
    let metrics: Vec<Measure> = a
        .metric
        .iter()
        .map(|n| measure("--metric", n))
        .collect::<Result<_, _>>()?;
    let store = open_existing(path)?;
    let runs = usable(&store, &a.filter)?;
    let all = series::group(&runs);
    match a.format {
        Format::Bmf => {
            let commit = resolve_commit("--commit", a.commit.as_deref().unwrap_or("HEAD"), &runs)?;
            let v = export::bmf(&all, &commit);
            if v.as_object().is_some_and(|o| o.is_empty()) {
                return Err(format!(
                    "no saved run of commit {} to export",
                    &commit[..commit.len().min(12)]
                ));
            }
            let text = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
            match &a.out {
                Some(p) => {
                    std::fs::write(p, text).map_err(|e| format!("--out {}: {e}", p.display()))?
                }
                None => {
                    files::stdout(&text);
                }
            }
        }
        Format::OtavaCsv => otava(a, &all, &metrics)?,
    }
    Ok(ExitCode::Ok)
}

fn otava(a: &ExportArgs, all: &[Series<'_>], metrics: &[Measure]) -> Result<(), String> {
    let mut files_out: Vec<(String, String, Vec<Measure>)> = Vec::new();
    for s in all {
        let ms: Vec<Measure> = if metrics.is_empty() {
            if s.key.capacity {
                vec![Measure::MaxRate]
            } else {
                vec![
                    Measure::Run(Metric::Throughput),
                    Measure::Run(Metric::Latency(Stat::P50)),
                    Measure::Run(Metric::Latency(Stat::P99)),
                ]
            }
        } else {
            metrics
                .iter()
                .copied()
                .filter(|m| m.applies_to(s.key.capacity))
                .collect()
        };
        if let Some((csv, used)) = export::otava_csv(s, &ms) {
            files_out.push((s.slug(), csv, used));
        }
    }
    if files_out.is_empty() {
        return Err("nothing to export: no saved run has these metrics".into());
    }
    let Some(dir) = &a.out else {
        if let [(_, csv, _)] = files_out.as_slice() {
            files::stdout(csv);
            return Ok(());
        }
        return Err(format!(
            "{} series to export: name a folder with --out (or narrow with --scenario/--server)",
            files_out.len()
        ));
    };
    std::fs::create_dir_all(dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
    for (slug, csv, _) in &files_out {
        let f = dir.join(format!("{slug}.csv"));
        std::fs::write(&f, csv).map_err(|e| format!("--out {}: {e}", f.display()))?;
    }
    let tests: Vec<(String, Vec<Measure>)> = files_out
        .into_iter()
        .map(|(slug, _, m)| (slug, m))
        .collect();
    let yaml = dir.join("otava.yaml");
    std::fs::write(&yaml, export::otava_yaml(&tests))
        .map_err(|e| format!("--out {}: {e}", yaml.display()))?;
    eprintln!(
        "volley history export: {} series in {} (OTAVA_CONFIG={} otava analyze …)",
        tests.len(),
        dir.display(),
        yaml.display()
    );
    Ok(())
}

//! `volley history export`: BMF JSON for bencher, CSV files for Apache Otava.

use std::path::{Path, PathBuf};

use clap::Args;

use super::read::FilterArgs;
use super::select::{commit_of, measure_arg, usable};
use super::{open_existing, ExitCode};
use crate::history::export::{self, Format};
use crate::history::measure::Measure;
use crate::history::series::{self, Series};
use crate::metric::{Metric, Stat};
use crate::sys::files;

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
    #[arg(value_parser = measure_arg)]
    pub metric: Vec<Measure>,
    /// bmf: the file [default: stdout]; otava-csv: the folder to write (stdout when one series).
    #[arg(short = 'o', long, value_name = "PATH")]
    pub out: Option<PathBuf>,
}

pub(super) fn export(a: &ExportArgs, path: &Path) -> Result<ExitCode, String> {
    let metrics = &a.metric;
    let store = open_existing(path)?;
    let runs = usable(&store, &a.filter)?;
    let all = series::group(&runs);
    match a.format {
        Format::Bmf => {
            let commit = commit_of(a.commit.as_deref(), &runs)?;
            let v = export::bmf(&all, &commit);
            if v.as_object().is_some_and(|o| o.is_empty()) {
                return Err(format!(
                    "no saved run of commit {} to export",
                    series::short(&commit, 12)
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
        Format::OtavaCsv => otava(a, &all, metrics)?,
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
    stderrln!(
        "volley history export: {} series in {} (OTAVA_CONFIG={} otava analyze …)",
        tests.len(),
        dir.display(),
        yaml.display()
    );
    Ok(())
}

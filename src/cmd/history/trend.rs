//! `volley history trend`: each series across commits, as text, JSON or a page.

use std::path::{Path, PathBuf};

use clap::Args;

use super::read::FilterArgs;
use super::select::{
    changepoints, headline, history_path, measure_arg, percent, table, usable, write_to,
};
use super::{open_existing, ExitCode};
use crate::history::check::Settings;
use crate::history::measure::Measure;
use crate::history::page::{self, About};
use crate::history::series::{self};
use crate::history::trend::{self, Trend};
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
    #[arg(value_parser = measure_arg)]
    pub metric: Option<Measure>,
    /// Write the trend page (self-contained HTML) to PATH.
    #[arg(long, value_name = "PATH")]
    pub html: Option<PathBuf>,
    /// Write the trends as JSON to PATH, or to stdout with `-`.
    #[arg(long, value_name = "PATH")]
    pub json: Option<String>,
    /// The smallest change marked as a change point, percent of the level before [default:
    /// the suite's `[history] min_effect`, else 5%; 0% marks every significant one, as Otava
    /// does].
    #[arg(long, value_name = "PCT")]
    pub min_effect: Option<String>,
    /// Read a suite file's `[history]` table: its path, min_effect, max_pvalue and window, so
    /// that the trend splits levels where the check does (flags win).
    #[arg(long, value_name = "FILE")]
    pub suite: Option<PathBuf>,
}

pub(super) fn trend(a: &TrendArgs, explicit: Option<&Path>) -> Result<ExitCode, String> {
    let chosen = a.metric;
    let table = table(a.suite.as_deref())?;
    let min_effect = match &a.min_effect {
        Some(text) => percent("--min-effect", text)?,
        None => table
            .min_effect_pct
            .unwrap_or(Settings::default().min_effect_pct),
    };
    let cp = changepoints(&table, min_effect);
    let path = &history_path(explicit, &table);
    let store = open_existing(path)?;
    let runs = usable(&store, &a.filter)?;
    let all = series::group(&runs);
    let trends: Vec<(Trend, Measure)> = all
        .iter()
        .filter_map(|s| {
            let m = chosen.unwrap_or_else(|| headline(s));
            m.applies_to(s.key.capacity)
                .then(|| trend::trend(s, m, &cp).map(|t| (t, m)))
                .flatten()
        })
        .collect();
    let metric = a.metric.map_or("each series' headline", Measure::name);
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
            metric: metric.to_string(),
            generated: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        };
        let only: Vec<Trend> = trends.iter().map(|(t, _)| t.clone()).collect();
        std::fs::write(h, page::render(&only, &about))
            .map_err(|e| format!("--html {}: {e}", h.display()))?;
        stderrln!("volley history trend: wrote {}", h.display());
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

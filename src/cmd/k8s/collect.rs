//! `volley k8s collect JOB [-o OUT.json] [--wait DUR]`: every shard's RunResult from the Job's
//! pod logs, each kept on disk; the merged RunResult and its report when all N are there, and
//! exit 3 naming each missing one when not (the run is incomplete, never merged partially).

use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::Args;

use super::super::{ExitCode, ReportPaths};
use crate::config::threshold;
use crate::merge;
use crate::report::{Format, Report};
use crate::result::{RunResult, WarningKind};
use crate::shard::collect::{self, CollectError, Collected, Kubectl};
use crate::shard::manifest::{self, MAX_NAME};
use crate::units::parse_duration;

/// `volley k8s collect` flags.
#[derive(Debug, Args, Clone)]
pub struct CollectArgs {
    /// The Job's name (as `volley k8s` printed it).
    pub job: String,

    /// The Job's namespace [default: kubectl's current one].
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,

    /// Where to write the merged RunResult [default: JOB.json]; each shard's own goes to
    /// the folder OUT.shards/ beside it.
    #[arg(short = 'o', long = "output", value_name = "OUT.json")]
    pub output: Option<PathBuf>,

    /// Wait up to DUR for the Job to finish (polling every 2 s).
    #[arg(long, value_name = "DUR", default_value = "0s", value_parser = parse_duration)]
    pub wait: Duration,

    /// `--csv`, `--markdown`, `--html`.
    #[command(flatten)]
    pub reports: ReportPaths,
}

/// Runs `volley k8s collect`: 0 merged, 1 merged but a threshold broke (or the rate was not
/// reached, or nothing answered), 2 bad flags or kubectl failed or shards that do not merge,
/// 3 the Job unfinished or a shard missing or an output not written.
pub(crate) fn execute(args: &CollectArgs, argv: Vec<String>) -> ExitCode {
    if let Err(e) = manifest::dns_label("JOB", &args.job, MAX_NAME) {
        return fail(ExitCode::Usage, &e.to_string());
    }
    if let Some(ns) = &args.namespace {
        if let Err(e) = manifest::dns_label("--namespace", ns, 63) {
            return fail(ExitCode::Usage, &e.to_string());
        }
    }
    let kubectl = Kubectl {
        program: std::env::var("KUBECTL").unwrap_or_else(|_| "kubectl".into()),
        namespace: args.namespace.clone(),
    };
    let found = match collect::collect(&kubectl, &args.job, args.wait) {
        Ok(c) => c,
        Err(e @ CollectError::Running { .. }) => return fail(ExitCode::Failed, &e.to_string()),
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    let output = args
        .output
        .clone()
        .unwrap_or_else(|| PathBuf::from(format!("{}.json", args.job)));
    let dir = shards_dir(&output);
    let saved = match save_shards(&found, &dir) {
        Ok(s) => s,
        Err(m) => return fail(ExitCode::Failed, &m),
    };
    if !found.missing.is_empty() {
        for m in &found.missing {
            let pod = m
                .pod
                .as_deref()
                .map_or(String::new(), |p| format!(" (pod {p})"));
            stderrln!("volley k8s collect: shard {}{pod}: {}", m.index, m.why);
        }
        return fail(
            ExitCode::Failed,
            &format!(
                "incomplete: {} of {} shards have a result, so nothing was merged (a partial merge would understate the load); what was found is in {}",
                found.shards.len(),
                found.count,
                dir.display()
            ),
        );
    }
    merge_and_report(args, &found, saved, &output, argv)
}

/// `OUT.shards/` beside `OUT.json`.
fn shards_dir(output: &Path) -> PathBuf {
    let stem = output.file_stem().map_or_else(
        || "volley".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    output.with_file_name(format!("{stem}.shards"))
}

/// Writes every shard's JSON (and an interrupted one's partial JSON) as `shard-I.json`;
/// the paths of the complete ones, by index.
fn save_shards(found: &Collected, dir: &Path) -> Result<Vec<PathBuf>, String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |index: u32, json: &str, suffix: &str| {
        let p = dir.join(format!("shard-{index}{suffix}.json"));
        crate::sys::files::write_atomically(&p, json.as_bytes())
            .map(|_| p.clone())
            .map_err(|e| format!("{}: {e}", p.display()))
    };
    for m in &found.missing {
        if let Some(json) = &m.json {
            write(m.index, json, ".incomplete")?;
        }
    }
    found
        .shards
        .iter()
        .map(|s| write(s.index, &s.json, ""))
        .collect()
}

fn merge_and_report(
    args: &CollectArgs,
    found: &Collected,
    saved: Vec<PathBuf>,
    output: &Path,
    argv: Vec<String>,
) -> ExitCode {
    let inputs: Vec<(String, _)> = found
        .shards
        .iter()
        .zip(&saved)
        .map(|(s, p)| (p.display().to_string(), s.result.clone()))
        .collect();
    let mut merged = match merge::merge(&inputs, crate::result::redact::argv(&argv), false) {
        Ok(m) => m,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    // The load's thresholds, on the whole load: the pods did not judge their shares, nor the
    // bound their checks imply.
    let mut given = Vec::new();
    for text in &found.thresholds {
        match threshold::parse(text) {
            Ok(t) => given.push(t),
            Err(e) => return fail(ExitCode::Usage, &format!("--threshold {text}: {e}")),
        }
    }
    given.extend(threshold::implied_for(&merged, &given));
    merged.thresholds = given.iter().map(|t| t.check(&merged)).collect();
    let mut code = verdict(&merged, found.allow_shortfall);
    let json = Format::Json.render_run(&merged);
    if let Err(e) = crate::sys::files::write_atomically(output, json.as_bytes()) {
        stderrln!("volley k8s collect: -o {}: {e}", output.display());
        code = code.max_precedence(ExitCode::Failed);
    }
    crate::sys::files::stdout(&Format::Terminal.render_run(&merged));
    let report = Report::single(merged.clone());
    for (flag, path, format) in args.reports.each() {
        let text = format.reporter().render(&report);
        if let Err(e) = crate::sys::files::write_atomically(path, text.as_bytes()) {
            stderrln!("volley k8s collect: {flag} {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    stderrln!(
        "volley k8s collect: {} shards merged; wrote {} (each shard's result is in {})",
        found.count,
        output.display(),
        shards_dir(output).display()
    );
    code
}

/// As `volley run` judges a run: 1 with no response, a broken threshold, or (without
/// `--allow-shortfall`) a rate not reached; else 0.
fn verdict(merged: &RunResult, allow_shortfall: bool) -> ExitCode {
    let short = !allow_shortfall
        && merged
            .warnings
            .iter()
            .any(|w| w.kind() == WarningKind::Shortfall);
    let broken = merged.thresholds.iter().any(|t| !t.pass);
    if merged.requests.completed == 0 || short || broken {
        ExitCode::NoResponse
    } else {
        ExitCode::Ok
    }
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    stderrln!("volley k8s collect: {msg}");
    code
}

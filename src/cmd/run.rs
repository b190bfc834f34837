//! `volley run URL [flags]`: check the flags, measure, write the summary and the requested
//! files, and exit with the contract's code (docs/contract.md, "Exit codes").

use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;

use clap::Args;

use super::{ExitCode, ReportPaths};
use crate::config::{ProxyEnv, RunConfig, RunFlags};
use crate::engine::{Observer, Observers};
use crate::history::{Labels, Origin, Record, Source};
use crate::measure::{self, Context, MeasureError, Measured};
use crate::report::hdr_log::HdrLogWriter;
use crate::report::terminal::LiveLine;
use crate::report::{Format, Report};
use crate::result::WarningKind;
use crate::sys::{cpus, limits};

/// `volley run` flags: what the run is, and where its results go.
#[derive(Debug, Args, Clone)]
pub struct RunArgs {
    /// What the run is.
    #[command(flatten)]
    pub flags: RunFlags,

    /// Write the RunResult JSON to PATH, or to stdout with `-` (the summary then goes to stderr).
    #[arg(long)]
    pub json: Option<String>,

    /// With `--json -`: the JSON between `-----BEGIN VOLLEY RUNRESULT-----` and
    /// `-----END VOLLEY RUNRESULT-----` lines, to be found in a log that holds other output
    /// (`kubectl logs`; `volley k8s` pods print their result so).
    #[arg(long, requires = "json")]
    pub json_markers: bool,

    /// With --profile: write the folded stacks to PATH [default: beside --json, its name with
    /// `.folded`]; --profile-off-cpu's go beside them, the stem with `.offcpu.folded`.
    #[arg(long, value_name = "PATH", requires = "profile")]
    pub profile_out: Option<PathBuf>,

    /// Stream per-second latency histograms to PATH in HdrHistogram's interval log format.
    #[arg(long)]
    pub hdr_log: Option<PathBuf>,

    /// `--csv`, `--markdown`, `--html`.
    #[command(flatten)]
    pub reports: ReportPaths,

    /// The live views.
    #[command(flatten)]
    pub live: super::live::LiveArgs,

    /// The run history.
    #[command(flatten)]
    pub save: super::history::SaveArgs,

    /// No live progress line.
    // `--no-tui` is oha's spelling.
    #[arg(short = 'q', long, alias = "no-tui")]
    pub quiet: bool,

    /// wrk's `--latency` (wrk2's `-L`): every percentile is always shown, so it is accepted and
    /// changes nothing. Hidden from --help.
    #[arg(short = 'L', long, hide = true)]
    pub latency: bool,
}

/// `--verify`: each request once, what came back on stderr; an error naming how many failed
/// when any did (the load does not start).
fn verify_first(cfg: &RunConfig, prepared: &measure::Prepared) -> Result<(), String> {
    let vs = measure::verify::verify(cfg, &prepared.route, cfg.load.seed.unwrap_or(0));
    stderr!("{}", measure::verify::report(&vs));
    let bad = vs.iter().filter(|v| !v.ok()).count();
    if bad > 0 {
        return Err(format!(
            "--verify: {bad} of {} request{} failed (above); the load did not start",
            vs.len(),
            if vs.len() == 1 { "" } else { "s" }
        ));
    }
    stderrln!(
        "volley: --verify: {} request{} answered as expected; the load starts",
        vs.len(),
        if vs.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

/// The files a run writes, opened before the load so a bad path costs nothing.
struct Outputs {
    json: Option<(PathBuf, File)>,
    json_stdout: bool,
    json_markers: bool,
    reports: Vec<(&'static str, PathBuf, Format, File)>,
    hdr_log: Option<Box<dyn Write + Send>>,
}

/// Runs `volley run` and returns the exit code. `interrupts` counts Ctrl-C presses.
pub(crate) fn execute(args: &RunArgs, argv: Vec<String>, interrupts: &AtomicUsize) -> ExitCode {
    let (cores, cpu_list) = cpus::allowed();
    let flags = RunFlags {
        proxy_env: ProxyEnv::from_process(),
        ..args.flags.clone()
    };
    let mut cfg = match RunConfig::from_flags(&flags, cores) {
        Ok(c) => c,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    if let Err(e) = limits::ensure_nofile(cfg.load.most_connections() as u64) {
        let flag = if cfg.load.max_connections.is_some() {
            "--max-connections"
        } else {
            "-c/--connections"
        };
        return fail(ExitCode::Usage, &format!("{flag}: {e}"));
    }
    let prepared = match measure::prepare(&cfg) {
        Ok(p) => p,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    // `--reflect`: the call's definition is the server's, asked before anything else is sent.
    if let Err(e) = measure::reflect::complete(&mut cfg, &prepared.route) {
        return fail(ExitCode::Usage, &e.to_string());
    }
    if !prepared.reachable {
        let tried: Vec<String> = prepared.tried.iter().map(|a| a.to_string()).collect();
        let at = match &cfg.load.target.proxy {
            Some(p) => format!("the proxy {}", p.shown),
            None => cfg.load.target.url.clone(),
        };
        stderrln!("volley: warning: nothing accepts connections at {at} (tried {}); running anyway, failures count as connect errors", tried.join(", "));
    }
    let mut outputs = match open_outputs(args) {
        Ok(o) => o,
        Err(msg) => return fail(ExitCode::Usage, &msg),
    };
    // Before the load: a history that cannot take the run costs nothing.
    let saver = match args.save.open(None) {
        Ok(s) => s,
        Err(msg) => {
            outputs.discard();
            return fail(ExitCode::Usage, &msg);
        }
    };
    if cfg.load.verify {
        if let Err(msg) = verify_first(&cfg, &prepared) {
            outputs.discard();
            return fail(ExitCode::Usage, &msg);
        }
    }
    let live_views = match super::live::start(&args.live, &cfg, &argv, "run") {
        Ok(l) => l,
        Err(msg) => {
            outputs.discard();
            return fail(ExitCode::Usage, &msg);
        }
    };
    let mut live_observer = live_views
        .as_ref()
        .map(|l| l.observer(cfg.load.rate_rps, cores));
    let live = !args.quiet && std::io::stderr().is_terminal();
    let mut live_line = LiveLine::new(live, cfg.load.duration.map(|d| d.as_secs_f64()));
    let mut hdr_log = outputs.hdr_log.take().map(|out| {
        let shown = crate::result::redact::argv(&argv).join(" ");
        let comment = format!("volley {} {shown}", env!("CARGO_PKG_VERSION"));
        HdrLogWriter::new(out, comment)
    });
    let ctx = Context {
        argv: &argv,
        cores,
        client_cpus: &cpu_list,
        server_cpus: None,
        server_latest: live_views.as_ref().map(|l| l.server_watch()),
    };
    let measured = {
        let mut observers: Vec<&mut dyn Observer> = vec![&mut live_line];
        if let Some(h) = hdr_log.as_mut() {
            observers.push(h);
        }
        if let Some(o) = live_observer.as_mut() {
            observers.push(o);
        }
        measure::run(&cfg, prepared, &ctx, interrupts, &mut Observers(observers))
    };
    let mut measured = measured;
    if let Some(live) = live_views {
        super::live::finish(live, measured.as_mut().ok().map(|m| &mut m.result));
    }
    let m = match measured {
        Ok(m) => m,
        Err(e) => {
            // Nothing was measured: no empty files are left behind for a script to read.
            outputs.discard();
            return match e {
                // Found before any request was written: the server's TLS cannot be used.
                MeasureError::Handshake { .. }
                | MeasureError::SpeaksTls { .. }
                | MeasureError::NoH2 { .. }
                | MeasureError::H2Unusable { .. }
                | MeasureError::Proxy { .. }
                | MeasureError::WebSocket { .. }
                | MeasureError::Reflect(_) => fail(ExitCode::Usage, &e.to_string()),
                _ => fail(ExitCode::Failed, &e.to_string()),
            };
        }
    };
    let json_path = outputs
        .json
        .as_ref()
        .map(|(p, _)| super::history::absolute(p));
    let mut m = m;
    let folded_code = write_folded(
        args,
        outputs.json.as_ref().map(|(p, _)| p.as_path()),
        &mut m,
    );
    let mut code = write_outputs(&m, outputs, outcome_code(&m, cfg.allow_shortfall));
    code = code.max_precedence(folded_code);
    // After the files: a history that fails now costs the history only (exit 3).
    if let Some(saver) = saver {
        let record = Record::of_run(
            &m.result,
            Origin {
                source: Source::Run,
                git: saver.git(),
                labels: Labels::default(),
                path: json_path,
            },
        );
        code = code.max_precedence(saver.save(&[record], "volley"));
    }
    if let Some(e) = hdr_log.as_ref().and_then(HdrLogWriter::error) {
        stderrln!("volley: --hdr-log: {e}");
        code = code.max_precedence(ExitCode::Failed);
    }
    if m.result.requests.completed == 0 && !m.interrupted {
        stderrln!(
            "volley: no response from {} ({})",
            cfg.load.target.url,
            no_response_why(&m)
        );
    }
    code
}

/// `--profile`: the folded stacks to `--profile-out`, or beside `--json` (`r.json` →
/// `r.folded`), named in `server.profile.path`; `--profile-off-cpu`'s beside them, the same
/// stem with `.offcpu.folded` (`r.offcpu.folded`), named in `server.profile.off_cpu.path`;
/// without either flag, none are written (the summary still has the top functions). A file
/// that cannot be written is exit 3.
fn write_folded(args: &RunArgs, json: Option<&std::path::Path>, m: &mut Measured) -> ExitCode {
    let Some(folded) = m.folded.as_ref() else {
        return ExitCode::Ok;
    };
    let path = match (&args.profile_out, json) {
        (Some(p), _) => p.clone(),
        (None, Some(j)) => j.with_extension("folded"),
        (None, None) => return ExitCode::Ok,
    };
    let Some(shown) = write_stacks(args, json, &path, folded) else {
        return ExitCode::Failed;
    };
    let profile = m.result.server.as_mut().and_then(|s| s.profile.as_mut());
    if let Some(p) = profile {
        p.path = Some(shown);
    }
    let Some(off) = m.folded_off_cpu.as_ref() else {
        return ExitCode::Ok;
    };
    let base = args.profile_out.as_deref().or(json).unwrap_or(&path);
    let Some(shown) = write_stacks(args, json, &base.with_extension("offcpu.folded"), off) else {
        return ExitCode::Failed;
    };
    let profile = m.result.server.as_mut().and_then(|s| s.profile.as_mut());
    if let Some(o) = profile.and_then(|p| p.off_cpu.as_mut()) {
        o.path = Some(shown);
    }
    ExitCode::Ok
}

/// Writes folded stacks to `path`; the name the result gives it (beside the JSON: as the
/// JSON's folder sees it), or `None` (said) when it cannot be written.
fn write_stacks(
    args: &RunArgs,
    json: Option<&std::path::Path>,
    path: &std::path::Path,
    text: &str,
) -> Option<String> {
    if let Err(e) = crate::sys::files::write_atomically(path, text.as_bytes()) {
        // Name the flag that chose the path: --profile-out, or --json beside which it goes.
        let flag = if args.profile_out.is_some() {
            "--profile-out"
        } else {
            "--profile (beside --json)"
        };
        stderrln!("volley: {flag} {}: {e}", path.display());
        return None;
    }
    let shown = match (json.and_then(|j| j.parent()), path.file_name()) {
        (Some(dir), Some(name)) if path.parent() == Some(dir) => PathBuf::from(name),
        _ => path.to_path_buf(),
    };
    Some(shown.display().to_string())
}

/// Why a run got no response, as far as volley knows: the first failed connect's reason when a
/// worker knew it, a refusal (or an unreachable host) when connects failed without one.
fn no_response_why(m: &Measured) -> &str {
    match m.connect_failure.as_deref() {
        _ if m.result.errors.connect == 0 => "see errors above",
        Some(reason) => reason,
        None => "connection refused or unreachable",
    }
}

/// 0 with a response, no broken threshold and (open loop) the target rate reached or the
/// shortfall accepted, else 1; 130 when interrupted; 3 when the monitored server died (results
/// are still written).
fn outcome_code(m: &Measured, allow_shortfall: bool) -> ExitCode {
    let short = !allow_shortfall
        && m.result
            .warnings
            .iter()
            .any(|w| w.kind() == WarningKind::Shortfall);
    let broken = short || m.result.thresholds.iter().any(|t| !t.pass);
    let mut code = if m.result.requests.completed > 0 && !broken {
        ExitCode::Ok
    } else {
        ExitCode::NoResponse
    };
    if m.interrupted {
        code = ExitCode::Interrupted;
    }
    if m.server_died {
        code = code.max_precedence(ExitCode::Failed);
    }
    code
}

impl Outputs {
    /// Removes the files opened for a run that measured nothing (a late shard, a refused
    /// handshake, a failed --verify): they are still empty.
    fn discard(self) {
        if let Some((path, _)) = self.json {
            let _ = std::fs::remove_file(path);
        }
        for (_, path, _, _) in self.reports {
            let _ = std::fs::remove_file(path);
        }
    }
}

fn open_outputs(args: &RunArgs) -> Result<Outputs, String> {
    let json = match args.json.as_deref() {
        Some("-") | None => None,
        Some(p) => {
            let path = PathBuf::from(p);
            let f = File::create(&path).map_err(|e| format!("--json {}: {e}", path.display()))?;
            Some((path, f))
        }
    };
    let mut reports = Vec::new();
    for (flag, path, format) in args.reports.each() {
        let f = File::create(path).map_err(|e| format!("{flag} {}: {e}", path.display()))?;
        reports.push((flag, path.clone(), format, f));
    }
    let hdr_log: Option<Box<dyn Write + Send>> = match &args.hdr_log {
        Some(p) => {
            let f = File::create(p).map_err(|e| format!("--hdr-log {}: {e}", p.display()))?;
            Some(Box::new(BufWriter::new(f)))
        }
        None => None,
    };
    Ok(Outputs {
        json,
        json_stdout: args.json.as_deref() == Some("-"),
        json_markers: args.json_markers,
        reports,
        hdr_log,
    })
}

/// The summary (stdout, or stderr when the JSON goes to stdout), the JSON and the report
/// files; a write that fails makes the code 3.
fn write_outputs(m: &Measured, outputs: Outputs, mut code: ExitCode) -> ExitCode {
    let result = &m.result;
    let summary = Format::Terminal.render_run(result);
    if outputs.json_stdout {
        stderr!("{summary}");
        let mut json = Format::Json.render_run(result);
        if outputs.json_markers {
            json = crate::shard::markers::frame(&json);
        }
        if !crate::sys::files::stdout(&json) {
            code = code.max_precedence(ExitCode::Failed);
        }
    } else {
        // A closed pipe (`volley run ... | head`) must not turn into a panic.
        crate::sys::files::stdout(&summary);
    }
    if let Some((path, mut f)) = outputs.json {
        let json = Format::Json.render_run(result);
        if let Err(e) = crate::sys::files::write_output(&mut f, json.as_bytes()) {
            stderrln!("volley: --json {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    let report = Report::single(result.clone())
        .with_folded(m.folded.clone())
        .with_off_cpu_folded(m.folded_off_cpu.clone());
    for (flag, path, format, mut f) in outputs.reports {
        let text = format.reporter().render(&report);
        if let Err(e) = crate::sys::files::write_output(&mut f, text.as_bytes()) {
            stderrln!("volley: {flag} {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    code
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    stderrln!("volley: {msg}");
    code
}

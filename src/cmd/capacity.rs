//! `volley capacity URL --slo 'p99<10ms' [run flags]`: the highest open-loop rate the server
//! sustains within the SLO (docs/contract.md, "Capacity"). Checks the flags, runs the search
//! (`capacity::Search`) — or with `--sweep` one ramping run read window by window
//! (`capacity::session::sweep`) — over real steps (`capacity::Steps`), then the closed-loop reference,
//! prints one line per step and the answer, writes `capacity.json`, `capacity.csv` and
//! `report.html` (and `--json`, `--csv`, `--html`), and exits 0 found, 1 none, 3 a step could
//! not run (or the client was the limit at every rate), 130 Ctrl-C.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, SystemTime};

use clap::Args;

use super::{ExitCode, ReportPaths};
use crate::capacity::session::{self, Searched};
use crate::capacity::{Found, Search, Steps};
use crate::config::threshold::{self, Threshold};
use crate::config::{RunConfig, RunFlags};
use crate::history::{Labels, Origin, Source};
use crate::measure;
use crate::report::capacity::text;
use crate::report::{Format, Report};
use crate::result::capacity::{CapacityResult, CapacityStep, LimitedBy, Phase};
use crate::sys::cpus;
use crate::units::{self, parse_count, parse_duration, parse_percent};

/// `volley capacity` flags. The `volley run` flags a search sets itself (or judges by `--slo`)
/// are refused with a reason ([`check`]) and left out of the help, the manual page and the
/// completions.
#[derive(Debug, Args, Clone)]
#[command(
    mut_arg("rate", |a| a.hide(true)),
    mut_arg("rate_stages", |a| a.hide(true)),
    mut_arg("duration", |a| a.hide(true)),
    mut_arg("requests", |a| a.hide(true)),
    mut_arg("users", |a| a.hide(true)),
    mut_arg("stages", |a| a.hide(true)),
    mut_arg("threshold", |a| a.hide(true))
)]
pub struct CapacityArgs {
    /// The load of each step (URL, -c, headers, --pid, ...); -R and -d are set per step.
    #[command(flatten)]
    pub flags: RunFlags,

    /// The live views: each step is a run of theirs, and the dashboard draws the curve as
    /// steps finish.
    #[command(flatten)]
    pub live: super::live::LiveArgs,

    /// The run history: the search's answer saved (`max_rate`).
    #[command(flatten)]
    pub save: super::history::SaveArgs,

    /// The service-level objective, in `--threshold` syntax, e.g. 'p99<10ms', 'errors<0.1%'
    /// (repeatable; every one must hold). Declared checks (--expect-*) add 'checks<=1%'
    /// unless one names checks.
    #[arg(long, required = true)]
    pub slo: Vec<String>,

    /// Measured duration of each step.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub step_duration: Duration,

    /// First rate of the ramp, req/s (doubled until a step does not pass).
    #[arg(long, default_value = "100", value_parser = parse_count)]
    pub start_rate: u64,

    /// Highest rate tried, req/s; reaching it ends the search (the server may take more).
    #[arg(long, value_parser = parse_count)]
    pub max_rate: Option<u64>,

    /// Stop when the bracket is this narrow relative to its low end, e.g. 5%.
    #[arg(long, default_value = "5%", value_parser = parse_percent)]
    pub precision: f64,

    /// Runs of each bisection rate; a majority of passes makes it pass.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub repeat: u32,

    /// Folder for the steps' RunResults and capacity.json
    /// [default: results/capacity-<UTC timestamp>].
    // The help text shows `<…>` as written; rustdoc would read it as an HTML tag.
    #[allow(rustdoc::invalid_html_tags)]
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Also write the capacity JSON to PATH, or to stdout with `-` (the lines then go to stderr).
    #[arg(long)]
    pub json: Option<String>,

    /// `--csv`, `--markdown`, `--html` (the results folder always has capacity.csv and
    /// report.html, the latency–throughput curve).
    #[command(flatten)]
    pub reports: ReportPaths,

    /// Skip the closed-loop reference step measured before the search.
    #[arg(long)]
    pub no_closed_loop: bool,

    /// Find the knee in one run: ramp the rate linearly from --start-rate to --max-rate (or
    /// 1.5 × the closed-loop maximum, measured first) and read each window for where the SLO
    /// breaks and stays broken.
    #[arg(long)]
    pub sweep: bool,

    /// The sweep's length (the ramp's).
    #[arg(long, default_value = "30s", value_parser = parse_duration, requires = "sweep")]
    pub sweep_duration: Duration,

    /// Each window the sweep is judged by, whole seconds.
    #[arg(long, default_value = "1s", value_parser = parse_duration, requires = "sweep")]
    pub sweep_window: Duration,

    /// Confirm the sweep's answer with steps of their own: bisection of its bracket to
    /// --precision, then the answer and the rate above it run again (--repeat, --step-duration).
    #[arg(long, requires = "sweep")]
    pub confirm: bool,
}

/// The capacity flags that are not `volley run` flags: a step's RunResult gets the command
/// line without them (the ones taking a value, then the switches).
const OWN_FLAGS: [&str; 13] = [
    "--slo",
    "--sweep-duration",
    "--sweep-window",
    "--step-duration",
    "--start-rate",
    "--max-rate",
    "--precision",
    "--repeat",
    "--out",
    "--json",
    "--csv",
    "--markdown",
    "--html",
];
const OWN_SWITCHES: [&str; 3] = ["--no-closed-loop", "--sweep", "--confirm"];

/// `volley capacity URL …` as the `volley run URL …` of its steps: the subcommand renamed,
/// capacity's own flags left out (secrets redacted).
pub(crate) fn run_argv(argv: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = argv.iter().enumerate().peekable();
    while let Some((i, a)) = it.next() {
        if i == 1 && a == "capacity" {
            out.push("run".to_string());
            continue;
        }
        let name = a.split('=').next().unwrap_or(a);
        if OWN_SWITCHES.contains(&name) {
            continue;
        }
        if OWN_FLAGS.contains(&name) {
            if !a.contains('=') {
                it.next();
            }
            continue;
        }
        out.push(a.clone());
    }
    crate::result::redact::argv(&out)
}

/// The output files, created before any load so a bad path costs nothing.
struct Outputs {
    dir: PathBuf,
    json: Option<PathBuf>,
    reports: ReportPaths,
}

fn open_outputs(args: &CapacityArgs, started_at: SystemTime) -> Result<Outputs, String> {
    let dir = args.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(started_at)
            .to_string()
            .replace(':', "");
        PathBuf::from("results").join(format!("capacity-{stamp}"))
    });
    std::fs::create_dir_all(&dir).map_err(|e| format!("--out {}: {e}", dir.display()))?;
    let check = |flag: &str, p: &PathBuf| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .map(|_| ())
            .map_err(|e| format!("{flag} {}: {e}", p.display()))
    };
    let json = match args.json.as_deref() {
        None | Some("-") => None,
        Some(p) => Some(PathBuf::from(p)),
    };
    if let Some(p) = &json {
        check("--json", p)?;
    }
    for (flag, p, _) in args.reports.each() {
        check(flag, p)?;
    }
    Ok(Outputs {
        dir,
        json,
        reports: args.reports.clone(),
    })
}

/// Runs `volley capacity` and returns the exit code.
pub(crate) fn execute(
    args: &CapacityArgs,
    argv: Vec<String>,
    interrupts: &AtomicUsize,
) -> ExitCode {
    let started_at = SystemTime::now();
    let (slo, base) = match check(args) {
        Ok(x) => x,
        Err(msg) => return fail(ExitCode::Usage, &msg),
    };
    let outputs = match open_outputs(args, started_at) {
        Ok(o) => o,
        Err(msg) => return fail(ExitCode::Usage, &msg),
    };
    // Before any step: a history that cannot take the answer costs nothing.
    let saver = match args.save.open(None) {
        Ok(s) => s,
        Err(msg) => return fail(ExitCode::Usage, &msg),
    };
    let to_stderr = args.json.as_deref() == Some("-");
    let say = move |line: &str| {
        if to_stderr {
            stderrln!("{line}");
        } else {
            crate::sys::files::stdout(&format!("{line}\n"));
        }
    };
    say(&format!(
        "volley capacity {} — SLO {}; {}; results in {}",
        crate::result::redact::url(&args.flags.url),
        args.slo.join(", "),
        how(args, base.load.connections),
        outputs.dir.display()
    ));
    let live = match super::live::start(&args.live, &base, &argv, "capacity") {
        Ok(l) => l,
        Err(msg) => return fail(ExitCode::Usage, &msg),
    };
    let (cores, cpu_list) = cpus::allowed();
    let mut n = 0;
    let mut steps = Steps {
        base,
        argv: run_argv(&argv),
        step: args.step_duration,
        slo,
        cores,
        cpu_list,
        server_cpus: None,
        interrupts,
        out: outputs.dir.clone(),
        shown_out: outputs.dir.clone(),
        done: Vec::new(),
        notes: Vec::new(),
        on_step: Box::new(move |s: &CapacityStep| {
            n += 1;
            say(&text::step_line(n, s));
        }),
        env: None,
        live: live.as_ref(),
        phase: Phase::Ramp,
    };
    let search = Search {
        start_rps: args.start_rate as f64,
        max_rps: args.max_rate.map(|m| m as f64),
        precision: args.precision,
        repeat: args.repeat,
    };
    let about = session::About {
        argv: crate::result::redact::argv(&argv),
        url: crate::result::redact::url(&args.flags.url).into_owned(),
        slo: args.slo.clone(),
        started_at,
    };
    let mut said = |c: &crate::result::capacity::ClosedLoopStep| say(&text::closed_loop_line(c));
    let Searched { found, result } = match sweep_setup(args) {
        Some(setup) => session::sweep::run(
            &mut steps,
            &setup,
            &search,
            !args.no_closed_loop,
            about,
            &mut said,
        ),
        None => session::run(&mut steps, &search, !args.no_closed_loop, about, &mut said),
    };
    drop(steps);
    for note in &result.notes {
        stderrln!("volley: warning: {note}");
    }
    if let Some(line) = text::sweep_line(&result) {
        say(&line);
    }
    say(&text::summary(&result));
    if let Some(line) = text::versus_closed_loop(&result) {
        say(&line);
    }
    let code = exit_code(&found);
    if let Some(mut live) = live {
        for w in super::live::end_push(&mut live) {
            stderrln!("volley: warning: {}", w.text());
        }
        let html = live.has_dashboard().then(|| {
            Format::Html
                .reporter()
                .render(&Report::capacity(result.clone()))
        });
        live.finish(Some(&result), html.as_deref());
    }
    let code = code.max_precedence(write_outputs(
        &result,
        &outputs,
        args.json.as_deref() == Some("-"),
    ));
    match saver {
        Some(saver) => {
            let origin = Origin {
                source: Source::Capacity,
                git: saver.git(),
                labels: Labels::default(),
                path: Some(super::history::absolute(&outputs.dir.join("capacity.json"))),
            };
            let record = super::history::capacity_record(&result, &[&outputs.dir], origin);
            code.max_precedence(saver.save(&[record], "volley"))
        }
        None => code,
    }
}

/// The head line's account of what runs: `steps of 10 s over 50 connections, precision 5%`, or
/// `a sweep from 100 to 20,000 req/s over 30 s in windows of 1 s (resolution 663 req/s) over 50
/// connections`.
fn how(args: &CapacityArgs, connections: usize) -> String {
    let over = format!(
        "over {connections} connection{}",
        if connections == 1 { "" } else { "s" }
    );
    let step = units::seconds(args.step_duration.as_secs_f64());
    let precision = pct(args.precision);
    if !args.sweep {
        return format!("steps of {step} {over}, precision {precision}");
    }
    let steps = format!("steps of {step}, precision {precision}");
    let to = match args.max_rate {
        Some(m) => format!("{} req/s", units::thousands(m)),
        None => "1.5 × the closed-loop maximum".into(),
    };
    let resolution = args.max_rate.map_or(String::new(), |m| {
        let r = (m - args.start_rate.min(m)) as f64 / args.sweep_duration.as_secs_f64()
            * args.sweep_window.as_secs_f64();
        format!(" (resolution {} req/s)", units::thousands(r.round() as u64))
    });
    format!(
        "a sweep from {} req/s to {to} over {} in windows of {}{resolution} {over}{}",
        units::thousands(args.start_rate),
        units::seconds(args.sweep_duration.as_secs_f64()),
        units::seconds(args.sweep_window.as_secs_f64()),
        if args.confirm {
            format!(", confirmed by {steps}")
        } else {
            String::new()
        }
    )
}

/// `--sweep`'s settings, checked already ([`check_sweep`]).
fn sweep_setup(args: &CapacityArgs) -> Option<session::sweep::SweepSetup> {
    args.sweep.then(|| session::sweep::SweepSetup {
        from_rps: args.start_rate as f64,
        to_rps: args.max_rate.map(|m| m as f64),
        duration: args.sweep_duration,
        window: args.sweep_window,
        confirm: args.confirm,
    })
}

/// `--sweep`'s flags, by the rules a suite's `capacity = { sweep = true }` has too
/// (`config::suite::capacity::sweep_problem`): the error names the flag.
fn check_sweep(args: &CapacityArgs) -> Result<(), String> {
    if !args.sweep {
        return Ok(());
    }
    let problem = crate::config::suite::capacity::sweep_problem(
        args.start_rate,
        args.max_rate,
        (args.sweep_duration, args.sweep_window),
        !args.no_closed_loop,
    );
    match problem {
        Some(("sweep", _)) => Err(
            "--sweep: needs --max-rate for its top, or the closed loop (drop --no-closed-loop) to take 1.5 × its maximum"
                .into(),
        ),
        Some((key, why)) => Err(format!("--{}: {why}", key.replace('_', "-"))),
        None => Ok(()),
    }
}

/// The exit code of a search (docs/contract.md, "Capacity").
fn exit_code(found: &Found) -> ExitCode {
    if let Some(e) = &found.error {
        if found.limited_by == Some(LimitedBy::Machine) {
            stderrln!("volley: no answer: {e}");
        } else {
            stderrln!("volley: a step could not run: {e}");
        }
        ExitCode::Failed
    } else if found.interrupted {
        ExitCode::Interrupted
    } else if found.max_rps.is_some() {
        ExitCode::Ok
    } else if found.limited_by == Some(LimitedBy::Client) {
        // Nothing was measured about the server: no answer, not "no rate".
        ExitCode::Failed
    } else {
        ExitCode::NoResponse
    }
}

/// Writes `capacity.json`, `capacity.csv` and `report.html` in the results folder, and the
/// files the flags ask for; the exit code when one cannot be written.
fn write_outputs(result: &CapacityResult, o: &Outputs, json_stdout: bool) -> ExitCode {
    let mut code = ExitCode::Ok;
    let json = serde_json::to_string_pretty(result).unwrap_or_default() + "\n";
    let report = Report::capacity(result.clone());
    let csv = Format::Csv.reporter().render(&report);
    let html = Format::Html.reporter().render(&report);
    let mut files: Vec<(String, PathBuf, &str)> = vec![
        (String::new(), o.dir.join("capacity.json"), &json),
        (String::new(), o.dir.join("capacity.csv"), &csv),
        (String::new(), o.dir.join("report.html"), &html),
    ];
    if let Some(p) = &o.json {
        files.push(("--json".to_string(), p.clone(), &json));
    }
    // --csv and --html are the folder's files again; only --markdown renders anew.
    let markdown = o
        .reports
        .markdown
        .as_ref()
        .map(|_| Format::Markdown.reporter().render(&report));
    for (flag, p, format) in o.reports.each() {
        let text = match format {
            Format::Csv => &csv,
            Format::Html => &html,
            _ => markdown.as_deref().unwrap_or_default(),
        };
        files.push((flag.to_string(), p.clone(), text));
    }
    for (flag, path, text) in files {
        if let Err(e) = crate::sys::files::write_atomically(&path, text.as_bytes()) {
            let flag = if flag.is_empty() {
                String::new()
            } else {
                format!("{flag} ")
            };
            stderrln!("volley: {flag}{}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    if json_stdout && !crate::sys::files::stdout(&json) {
        code = code.max_precedence(ExitCode::Failed);
    }
    code
}

/// Checks the flags before any load: the SLO, the search's settings, and the step's load at
/// the start rate. The SLO and the base load of every step.
fn check(args: &CapacityArgs) -> Result<(Vec<Threshold>, RunConfig), String> {
    let f = &args.flags;
    for (set, flag) in [
        (f.rate.is_some(), "-R/--rate"),
        (f.rate_stages.is_some(), "--rate-stages"),
        (f.duration.is_some(), "-d/--duration"),
        (f.requests.is_some(), "-n/--requests"),
        (f.users.is_some(), "--users"),
        (f.stages.is_some(), "--stages"),
    ] {
        if set {
            return Err(format!("{flag}: volley capacity sets the load of each step itself (use --start-rate, --max-rate, --step-duration)"));
        }
    }
    let mut slo: Vec<Threshold> = Vec::new();
    for s in &args.slo {
        slo.push(threshold::parse(s).map_err(|e| format!("--slo {e}"))?);
    }
    if !f.threshold.is_empty() {
        return Err(
            "--threshold: a capacity search judges each step by --slo (same syntax)".into(),
        );
    }
    if args.step_duration.is_zero() {
        return Err("--step-duration: must be above 0".into());
    }
    if args.start_rate == 0 || args.max_rate == Some(0) {
        return Err("--start-rate/--max-rate: must be above 0".into());
    }
    check_sweep(args)?;
    let mut probe = f.clone();
    probe.proxy_env = volley_config::ProxyEnv::from_process();
    probe.warmup = probe.warmup.or(Some(Duration::from_secs(2)));
    probe.rate = Some(args.start_rate.to_string());
    probe.duration = Some(args.step_duration);
    let (cores, _) = cpus::allowed();
    let mut cfg = RunConfig::from_flags(&probe, cores).map_err(|e| e.to_string())?;
    let prepared = measure::prepare(&cfg).map_err(|e| e.to_string())?;
    measure::reflect::complete(&mut cfg, &prepared.route).map_err(|e| e.to_string())?;
    Ok((slo, cfg))
}

fn pct(f: f64) -> String {
    format!("{}%", (f * 1000.0).round() / 10.0)
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    stderrln!("volley: {msg}");
    code
}

#[cfg(test)]
mod tests {
    use super::run_argv;

    #[test]
    fn a_step_carries_the_run_command_line_without_the_search_flags() {
        let argv: Vec<String> = [
            "volley",
            "capacity",
            "http://127.0.0.1:8080/",
            "--slo",
            "p99<1ms",
            "-c",
            "10",
            "--step-duration=2s",
            "--out",
            "dir",
            "--no-closed-loop",
            "--json",
            "-",
            "--markdown",
            "capacity.md",
            "-H",
            "Authorization: Bearer x",
            "--warmup",
            "1s",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            run_argv(&argv),
            [
                "volley",
                "run",
                "http://127.0.0.1:8080/",
                "-c",
                "10",
                "-H",
                "Authorization: <redacted>",
                "--warmup",
                "1s"
            ]
        );
    }
}

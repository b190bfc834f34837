//! `volley capacity URL --slo 'p99<10ms' [run flags]`: the highest open-loop rate the server
//! sustains within the SLO (docs/contract.md, "Capacity"). Checks the flags, runs the search
//! (`capacity::Search`) over real steps (`capacity::Steps`), prints one line per step and the
//! answer, writes `capacity.json` (and `--json`), and exits 0 found, 1 none, 3 a step could not
//! run, 130 Ctrl-C.

use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::time::{Duration, Instant, SystemTime};

use clap::Args;

use super::ExitCode;
use crate::capacity::{Found, Search, Steps};
use crate::config::threshold::{self, Threshold};
use crate::config::{RunConfig, RunFlags};
use crate::measure;
use crate::result::capacity::{CapacityResult, CapacityStep, LimitedBy, Verdict, CAPACITY_SCHEMA};
use crate::sys::cpus;
use crate::units::{self, parse_count, parse_decimal, parse_duration};

/// `volley capacity` flags.
#[derive(Debug, Args, Clone)]
pub struct CapacityArgs {
    /// The load of each step (URL, -c, headers, --pid, ...); -R and -d are set per step.
    #[command(flatten)]
    pub flags: RunFlags,

    /// The service-level objective, in `--threshold` syntax, e.g. 'p99<10ms', 'errors<0.1%'
    /// (repeatable; every one must hold).
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
    #[arg(long, default_value = "5%", value_parser = percent)]
    pub precision: f64,

    /// Runs of each bisection rate; a majority of passes makes it pass.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=9))]
    pub repeat: u32,

    /// Folder for the steps' RunResults and capacity.json
    /// [default: results/capacity-<UTC timestamp>].
    #[arg(long)]
    pub out: Option<PathBuf>,

    /// Also write the capacity JSON to PATH, or to stdout with `-` (the lines then go to stderr).
    #[arg(long)]
    pub json: Option<String>,
}

fn percent(text: &str) -> Result<f64, String> {
    let v = parse_decimal(text.trim().trim_end_matches('%'))?;
    if v <= 0.0 || v >= 100.0 {
        return Err(format!("`{text}`: a percentage above 0 and below 100"));
    }
    Ok(v / 100.0)
}

/// Runs `volley capacity` and returns the exit code.
pub fn execute(args: &CapacityArgs, argv: Vec<String>, interrupts: &AtomicUsize) -> ExitCode {
    let started = Instant::now();
    let started_at = SystemTime::now();
    let f = &args.flags;
    for (set, flag) in [
        (f.rate.is_some(), "-R/--rate"),
        (f.duration.is_some(), "-d/--duration"),
        (f.requests.is_some(), "-n/--requests"),
        (f.users.is_some(), "--users"),
        (f.stages.is_some(), "--stages"),
    ] {
        if set {
            return fail(
                ExitCode::Usage,
                &format!("{flag}: volley capacity sets the load of each step itself (use --start-rate, --max-rate, --step-duration)"),
            );
        }
    }
    let mut slo: Vec<Threshold> = Vec::new();
    for s in &args.slo {
        match threshold::parse(s) {
            Ok(t) => slo.push(t),
            Err(e) => return fail(ExitCode::Usage, &format!("--slo {e}")),
        }
    }
    if args.step_duration.is_zero() {
        return fail(ExitCode::Usage, "--step-duration: must be above 0");
    }
    if args.start_rate == 0 || args.max_rate == Some(0) {
        return fail(ExitCode::Usage, "--start-rate/--max-rate: must be above 0");
    }
    let mut flags = f.clone();
    flags.warmup = flags.warmup.or(Some(Duration::from_secs(2)));
    // The flags are checked once before any load, at the start rate.
    let (cores, cpu_list) = cpus::allowed();
    let mut probe = flags.clone();
    probe.rate = Some(args.start_rate.to_string());
    probe.duration = Some(args.step_duration);
    let cfg = match RunConfig::from_flags(&probe, cores) {
        Ok(c) => c,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    if let Err(e) = measure::prepare(&cfg) {
        return fail(ExitCode::Usage, &e.to_string());
    }
    let out = args.out.clone().unwrap_or_else(|| {
        let stamp = humantime::format_rfc3339_seconds(started_at)
            .to_string()
            .replace(':', "");
        PathBuf::from("results").join(format!("capacity-{stamp}"))
    });
    if let Err(e) = std::fs::create_dir_all(&out) {
        return fail(ExitCode::Usage, &format!("--out {}: {e}", out.display()));
    }
    let to_stderr = args.json.as_deref() == Some("-");
    let say = move |line: &str| {
        if to_stderr {
            eprintln!("{line}");
        } else {
            crate::sys::files::stdout(&format!("{line}\n"));
        }
    };
    say(&format!(
        "volley capacity {} — SLO {}; steps of {}, precision {}, results in {}",
        f.url,
        args.slo.join(", "),
        units::seconds(args.step_duration.as_secs_f64()),
        pct(args.precision),
        out.display()
    ));
    let mut n = 0;
    let mut steps = Steps {
        flags,
        step: args.step_duration,
        slo: slo.clone(),
        cores,
        cpu_list,
        argv: crate::result::redact::argv(&argv),
        interrupts,
        out: out.clone(),
        done: Vec::new(),
        notes: Vec::new(),
        on_step: Box::new(move |s: &CapacityStep| {
            n += 1;
            say(&step_line(n, s));
        }),
    };
    let search = Search {
        start_rps: args.start_rate as f64,
        max_rps: args.max_rate.map(|m| m as f64),
        precision: args.precision,
        repeat: args.repeat,
    };
    let found = search.run(&mut steps);
    let done = std::mem::take(&mut steps.done);
    for note in std::mem::take(&mut steps.notes) {
        eprintln!("volley: warning: {note}");
    }
    drop(steps);
    let wall_s = started.elapsed().as_secs_f64();
    let result = CapacityResult {
        schema: CAPACITY_SCHEMA.into(),
        volley_version: env!("CARGO_PKG_VERSION").into(),
        argv: crate::result::redact::argv(&argv),
        started_at: humantime::format_rfc3339_seconds(started_at).to_string(),
        wall_s: (wall_s * 10.0).round() / 10.0,
        url: f.url.clone(),
        slo: args.slo.clone(),
        precision_pct: args.precision * 100.0,
        step_duration_s: args.step_duration.as_secs_f64(),
        max_rate_rps: found.max_rps,
        limited_by: found.limited_by,
        bracket: found.bracket,
        interrupted: found.interrupted,
        steps: done,
    };
    say(&summary(&found, &result, wall_s));
    let mut code = if let Some(e) = &found.error {
        eprintln!("volley: a step could not run: {e}");
        ExitCode::Failed
    } else if found.interrupted {
        ExitCode::Interrupted
    } else if found.max_rps.is_some() {
        ExitCode::Ok
    } else {
        ExitCode::NoResponse
    };
    let json = serde_json::to_string_pretty(&result).unwrap_or_default() + "\n";
    let file = out.join("capacity.json");
    if let Err(e) = crate::sys::files::write_atomically(&file, json.as_bytes()) {
        eprintln!("volley: {}: {e}", file.display());
        code = code.max_precedence(ExitCode::Failed);
    }
    match args.json.as_deref() {
        Some("-") if !crate::sys::files::stdout(&json) => {
            code = code.max_precedence(ExitCode::Failed);
        }
        Some("-") => {}
        Some(p) => {
            if let Err(e) =
                crate::sys::files::write_atomically(std::path::Path::new(p), json.as_bytes())
            {
                eprintln!("volley: --json {p}: {e}");
                code = code.max_precedence(ExitCode::Failed);
            }
        }
        None => {}
    }
    code
}

fn pct(f: f64) -> String {
    format!("{}%", (f * 1000.0).round() / 10.0)
}

fn rps(v: f64) -> String {
    units::thousands(v.round() as u64)
}

/// `step 3: 800 req/s → pass (achieved 800.0, p99 4.1 ms): within the SLO: p99 4.1 ms`
fn step_line(n: usize, s: &CapacityStep) -> String {
    format!(
        "step {n:>2}: {:>9} req/s  {:<8} achieved {:>11}, p99 {:>9}  {}",
        rps(s.target_rps),
        s.verdict.as_str(),
        s.achieved_rps.map_or("-".into(), units::rate),
        units::opt_micros(s.latency_us.p99),
        s.reason
    )
}

/// The step's reason at a rate (the last run there), for the summary.
fn reason_at(r: &CapacityResult, rate: Option<f64>, verdict: Option<Verdict>) -> Option<String> {
    let rate = rate?;
    r.steps
        .iter()
        .rev()
        .find(|s| s.target_rps == rate && verdict.is_none_or(|v| s.verdict == v))
        .map(|s| s.reason.clone())
}

fn summary(found: &Found, r: &CapacityResult, wall_s: f64) -> String {
    let b = found.bracket;
    let wall = if wall_s >= 60.0 {
        format!(
            "{} min {} s",
            (wall_s / 60.0).floor(),
            (wall_s % 60.0).round()
        )
    } else {
        format!("{} s", wall_s.round())
    };
    let tail = format!(
        "{} after {} steps, {wall}.",
        match (b.low_rps, b.high_rps) {
            (Some(l), Some(h)) => format!("Bracket {}–{}", rps(l), rps(h)),
            (Some(l), None) => format!("Bracket {}–?", rps(l)),
            (None, Some(h)) => format!("Bracket ?–{}", rps(h)),
            (None, None) => "No bracket".into(),
        },
        r.steps.len()
    );
    let at_low = reason_at(r, b.low_rps, Some(Verdict::Pass))
        .map(|s| s.trim_start_matches("within the SLO: ").to_string());
    let at_high = reason_at(r, b.high_rps, None);
    let mut head = match (found.max_rps, found.limited_by) {
        (Some(m), _) if found.interrupted => format!(
            "Interrupted: the highest rate that passed so far is {} req/s ({} at {}).",
            rps(m),
            at_low.clone().unwrap_or_default(),
            rps(m)
        ),
        (Some(m), Some(LimitedBy::Client)) => format!(
            "Max sustainable rate: at least {} req/s: the client is the limit here ({}).",
            rps(m),
            r.steps.last().map(|s| s.reason.clone()).unwrap_or_default()
        ),
        (Some(m), Some(LimitedBy::MaxRate)) => format!(
            "Max sustainable rate: at least {} req/s: --max-rate reached ({} at {}).",
            rps(m),
            at_low.clone().unwrap_or_default(),
            rps(m)
        ),
        (Some(m), _) => format!(
            "Max sustainable rate: {} req/s ({} at {}{}).",
            rps(m),
            at_low.clone().unwrap_or_default(),
            rps(m),
            match (b.high_rps, &at_high) {
                (Some(h), Some(why)) => format!("; not at {}: {why}", rps(h)),
                _ => String::new(),
            }
        ),
        (None, Some(LimitedBy::Client)) => format!(
            "No rate measured: the client is the limit from the first step, {} req/s ({}).",
            found.lowest_tried_rps.map_or("-".into(), rps),
            reason_at(r, found.lowest_tried_rps, None).unwrap_or_default()
        ),
        (None, _) if found.error.is_some() || found.interrupted => {
            "Max sustainable rate: not found.".to_string()
        }
        (None, _) => format!(
            "No rate meets the SLO: the lowest tried, {} req/s, did not pass ({}).",
            found.lowest_tried_rps.map_or("-".into(), rps),
            at_high.clone().unwrap_or_default()
        ),
    };
    if found.interrupted && found.max_rps.is_none() {
        head = format!("Interrupted. {head}");
    }
    format!("{head} {tail}")
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    eprintln!("volley: {msg}");
    code
}

//! `volley run`: flags -> config -> plan -> engine -> RunResult -> reporters, with the exit
//! codes of DESIGN §4.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, IsTerminal, Write};
use std::sync::atomic::AtomicUsize;

use crate::cli::RunArgs;
use crate::config::{JsonOut, LoadConfig};
use crate::engine::{self, transport, EngineOutput};
use crate::monitor::client::saturation;
use crate::monitor::procfs;
use crate::monitor::server::{self, ServerMonitor};
use crate::plan::Plan;
use crate::report::{Format, Report};
use crate::result::*;
use crate::stats::histogram::encode;
use crate::stats::Percentiles;
use crate::sys::cpus;
use crate::sys::limits;
use crate::ExitCode;

/// Runs `volley run` and returns the exit code. `interrupts` counts Ctrl-C presses.
pub fn execute(args: &RunArgs, argv: Vec<String>, interrupts: &AtomicUsize) -> ExitCode {
    let (cores, cpu_list) = cpus::allowed();
    let cfg = match LoadConfig::from_args(args, cores, argv) {
        Ok(c) => c,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    if let Err(e) = limits::ensure_nofile(cfg.connections as u64) {
        return fail(ExitCode::Usage, &format!("-c/--connections: {e}"));
    }
    // The server monitor attaches before anything is probed or written: a bad --pid costs nothing.
    let sampler = match cfg.monitor {
        Some(m) => {
            let budget = server::perf_fd_budget(cfg.connections as u64);
            match server::attach(m.pid, m.interval, budget) {
                Ok(s) => Some(s),
                Err(e) => return fail(ExitCode::Usage, &e.to_string()),
            }
        }
        None => None,
    };
    let addrs = match transport::resolve(&cfg.target.host, cfg.target.port) {
        Ok(a) => a,
        Err(e) => return fail(ExitCode::Usage, &e.to_string()),
    };
    let probe = transport::pick_address(&addrs, cfg.timeout.min(std::time::Duration::from_secs(2)));
    let addr = probe.unwrap_or(addrs[0]);
    if probe.is_none() {
        let tried: Vec<String> = addrs.iter().map(|a| a.to_string()).collect();
        eprintln!("volley: warning: nothing accepts connections at {} (tried {}); running anyway, failures count as connect errors", cfg.target.url, tried.join(", "));
    }
    // Output files are opened before the load, so a bad path costs nothing.
    let json_file = match &cfg.json {
        Some(JsonOut::File(p)) => match File::create(p) {
            Ok(f) => Some(f),
            Err(e) => return fail(ExitCode::Usage, &format!("--json {}: {e}", p.display())),
        },
        _ => None,
    };
    let mut report_files = Vec::new();
    for (flag, path, _) in cfg.reports.each() {
        match File::create(path) {
            Ok(f) => report_files.push(f),
            Err(e) => return fail(ExitCode::Usage, &format!("{flag} {}: {e}", path.display())),
        }
    }
    let hdr_log: Option<Box<dyn Write + Send>> = match &cfg.hdr_log {
        Some(p) => match File::create(p) {
            Ok(f) => Some(Box::new(BufWriter::new(f))),
            Err(e) => return fail(ExitCode::Usage, &format!("--hdr-log {}: {e}", p.display())),
        },
        None => None,
    };
    let live = !cfg.quiet && std::io::stderr().is_terminal();
    let m = match measure(
        &cfg,
        addr,
        sampler,
        (cores, &cpu_list),
        interrupts,
        hdr_log,
        live,
    ) {
        Ok(m) => m,
        Err(e) => return fail(ExitCode::Failed, &e),
    };
    let Measured {
        result,
        interrupted,
        server_died,
        hdr_log_error,
    } = m;
    let summary = Format::Terminal.render_run(&result);
    let broken = result.thresholds.iter().any(|t| !t.pass);
    let mut code = if result.requests.completed > 0 && !broken {
        ExitCode::Ok
    } else {
        ExitCode::NoResponse
    };
    if interrupted {
        code = ExitCode::Interrupted;
    }
    if server_died {
        // DESIGN §4: 3 = failure after the start, such as the server dying; results are
        // still written.
        code = code.max_precedence(ExitCode::Failed);
    }
    match &cfg.json {
        Some(JsonOut::Stdout) => {
            eprint!("{summary}");
            let json = Format::Json.render_run(&result);
            let mut so = std::io::stdout().lock();
            if so
                .write_all(json.as_bytes())
                .and_then(|_| so.flush())
                .is_err()
            {
                code = code.max_precedence(ExitCode::Failed);
            }
        }
        _ => {
            // A closed pipe (`volley run ... | head`) must not turn into a panic.
            let mut so = std::io::stdout().lock();
            let _ = so.write_all(summary.as_bytes()).and_then(|_| so.flush());
        }
    }
    if let (Some(mut f), Some(JsonOut::File(p))) = (json_file, &cfg.json) {
        let json = Format::Json.render_run(&result);
        if let Err(e) = f.write_all(json.as_bytes()).and_then(|_| f.sync_all()) {
            eprintln!("volley: --json {}: {e}", p.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    let report = Report::single(result.clone());
    for ((flag, path, format), file) in cfg.reports.each().into_iter().zip(report_files) {
        let text = format.reporter().render(&report);
        let mut f = file;
        if let Err(e) = f.write_all(text.as_bytes()).and_then(|_| f.sync_all()) {
            eprintln!("volley: {flag} {}: {e}", path.display());
            code = code.max_precedence(ExitCode::Failed);
        }
    }
    if let Some(e) = &hdr_log_error {
        eprintln!("volley: --hdr-log: {e}");
        code = code.max_precedence(ExitCode::Failed);
    }
    if result.requests.completed == 0 && !interrupted {
        eprintln!(
            "volley: no response from {} ({})",
            cfg.target.url,
            if result.errors.connect > 0 {
                "connection refused or unreachable"
            } else {
                "see errors above"
            }
        );
    }
    code
}

/// What one measurement produced.
pub struct Measured {
    /// The artifact.
    pub result: RunResult,
    /// Ctrl-C ended the run early.
    pub interrupted: bool,
    /// The monitored server exited during the measured window.
    pub server_died: bool,
    /// Writing `--hdr-log` failed part-way.
    pub hdr_log_error: Option<String>,
}

/// Runs the load of a validated `cfg` against `addr` (with the server monitor when `sampler`
/// is attached) and assembles the RunResult. `cpus` is (cores volley may use, their list).
/// Prints nothing but the live line (`live`); `volley run` and the suite harness share it.
pub fn measure(
    cfg: &LoadConfig,
    addr: std::net::SocketAddr,
    sampler: Option<server::TreeSampler>,
    cpus: (usize, &str),
    interrupts: &AtomicUsize,
    hdr_log: Option<Box<dyn Write + Send>>,
    live: bool,
) -> Result<Measured, String> {
    let (cores, cpu_list) = cpus;
    let plan = Plan::new(cfg);
    let mut progress =
        crate::report::terminal::LiveLine::new(live, cfg.duration.map(|d| d.as_secs_f64()));
    let monitor = sampler
        .map(ServerMonitor::spawn)
        .transpose()
        .map_err(|e| format!("could not start the server monitor: {e}"))?;
    // The engine's t0 is `warmup` after it starts its clock, the first thing engine::run does;
    // the monitor reads its first edge then, on its own thread (nothing on the hot path).
    if let Some(m) = &monitor {
        m.arm(std::time::Instant::now() + cfg.warmup);
    }
    let out = engine::run(cfg, plan, addr, interrupts, hdr_log, &mut progress)
        .map_err(|e| format!("could not start the engine: {e}"))?;
    // The last edge is read as soon as the engine returns: right after the last response (or
    // timeout) of the drain.
    let server_info = monitor.map(|m| m.finish(out.agg.counts.completed));
    let server_died = server_info
        .as_ref()
        .is_some_and(|s| s.exited_at_s.is_some());
    let result = build_result(cfg, addr, cores, cpu_list, &out, server_info);
    Ok(Measured {
        result,
        interrupted: out.interrupted,
        server_died,
        hdr_log_error: out.hdr_log_error.clone(),
    })
}

fn fail(code: ExitCode, msg: &str) -> ExitCode {
    eprintln!("volley: {msg}");
    code
}

/// Assembles the RunResult from the engine's output.
pub fn build_result(
    cfg: &LoadConfig,
    addr: std::net::SocketAddr,
    cores: usize,
    cpu_list: &str,
    out: &EngineOutput,
    server: Option<ServerInfo>,
) -> RunResult {
    let agg = &out.agg;
    let c = &agg.counts;
    let unfinished: u64 = out.ends.iter().map(|e| e.unfinished).sum();
    let unsent: u64 = out.ends.iter().map(|e| e.unsent).sum();
    let never_connected: u64 = out.ends.iter().map(|e| e.never_connected).sum();
    let open = cfg.rate_rps.is_some();
    let mode = match (&cfg.ramp, open) {
        (Some(_), _) => Mode::Ramp,
        (None, true) => Mode::Open,
        (None, false) => Mode::Closed,
    };
    let lag = open.then(|| Percentiles::of(&agg.lag));
    let threads = cfg.threads;
    let capacity = threads.min(cores).max(1) as f64;
    let samples = out
        .sampler
        .as_ref()
        .map(|s| s.samples.clone())
        .unwrap_or_default();
    let (frac, sat_cpu) = saturation(&samples, capacity);
    let lag_hot = lag.as_ref().and_then(|l| l.p99).is_some_and(|p| p > 1000);
    let saturated = sat_cpu || lag_hot;
    // Runs shorter than a sample still get their average as the peak.
    let window_avg_pct = if out.elapsed_s > 0.0 {
        (out.client_rusage.0 + out.client_rusage.1) / out.elapsed_s * 100.0
    } else {
        0.0
    };
    let cpu_pct_max = samples.iter().map(|s| s.cpu_pct).fold(
        if samples.is_empty() {
            window_avg_pct
        } else {
            0.0
        },
        f64::max,
    );
    let elapsed_s = out.elapsed_s;
    let throughput = if elapsed_s > 0.0 {
        c.completed as f64 / elapsed_s
    } else {
        0.0
    };

    let mut warnings = Vec::new();
    if !open {
        // Virtual users are closed loop too.
        warnings.push(Warning::closed_loop());
    }
    if sat_cpu {
        warnings.push(Warning::client_saturated(capacity, frac));
    }
    if lag_hot {
        let p99 = lag.as_ref().and_then(|l| l.p99).unwrap_or(0);
        warnings.push(Warning::send_lag(p99));
    }
    if never_connected > 0 {
        warnings.push(Warning::never_connected(
            never_connected,
            cfg.connections as u64,
            c.errors.connect,
        ));
    } else if c.errors.connect > 0 {
        warnings.push(Warning::connect_failures(c.errors.connect));
    }
    let bad: u64 = c
        .status_codes()
        .iter()
        .filter(|(s, _)| *s >= 400)
        .map(|(_, n)| n)
        .sum();
    if bad > 0 {
        warnings.push(Warning::failed_statuses(bad));
    }
    if c.errors.total() > 0 {
        warnings.push(Warning::errors_excluded(c.errors.total()));
    }
    if c.unsolicited > 0 {
        warnings.push(Warning::unsolicited(c.unsolicited));
    }
    if unsent > 0 {
        warnings.push(Warning::unsent(unsent));
    }
    if let Some(s) = &server {
        if let Some(t) = s.exited_at_s {
            warnings.push(Warning::server_exited(
                cfg.monitor.map(|m| m.pid).unwrap_or_default(),
                t,
            ));
        } else if let Some(note) = &s.note {
            warnings.push(Warning::server_note(note));
        }
        if let Some(reason) = &s.syscalls_unavailable_reason {
            warnings.push(Warning::syscalls_not_counted(reason));
        }
    }
    let status_codes: BTreeMap<String, u64> = c
        .status_codes()
        .into_iter()
        .map(|(s, n)| (s.to_string(), n))
        .collect();
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|s| s.trim().to_string());
    let cpu_model = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|t| procfs::parse_cpu_model(&t));
    let warm = &agg.warmup;
    let mut result = RunResult {
        schema: RUN_SCHEMA.to_string(),
        volley_version: env!("CARGO_PKG_VERSION").to_string(),
        argv: cfg.argv.clone(),
        started_at: humantime::format_rfc3339_micros(out.started_at).to_string(),
        interrupted: out.interrupted,
        env: Env {
            cpu_model,
            cores: cpus::online(),
            kernel,
            pinning: Pinning {
                client_cpus: cpu_list.to_string(),
                server_cpus: None,
            },
        },
        target: TargetInfo {
            url: cfg.target.url.clone(),
            addr: addr.to_string(),
            method: cfg.method.clone(),
            body_bytes: cfg.body.len() as u64,
        },
        load: LoadInfo {
            mode,
            connections: cfg.connections as u64,
            threads: threads as u64,
            rate_rps: cfg.rate_rps,
            arrivals: open.then(|| cfg.arrivals.into()),
            seed: (open && cfg.arrivals == crate::cli::Arrivals::Poisson).then_some(cfg.seed),
            duration_s: cfg.duration.map(|d| d.as_secs_f64()),
            requests: cfg.requests,
            warmup_s: cfg.warmup.as_secs_f64(),
            keepalive: cfg.keepalive,
            pipeline: cfg.pipeline as u64,
            timeout_s: cfg.timeout.as_secs_f64(),
            users: cfg.ramp.as_ref().map(|r| r.ramp.max_users()),
            spawn_rate: cfg.ramp.as_ref().and_then(|r| r.spawn_rate),
            stages: cfg.ramp.as_ref().and_then(|r| r.stages.as_ref()).map(|st| {
                st.iter()
                    .map(|s| StageInfo {
                        duration_s: s.duration.as_secs_f64(),
                        users: s.users,
                    })
                    .collect()
            }),
            think_time_s: cfg.think_time.as_secs_f64(),
        },
        elapsed_s: (elapsed_s * 1e6).round() / 1e6,
        throughput_rps: (throughput * 100.0).round() / 100.0,
        requests: Requests {
            sent: c.sent,
            completed: c.completed,
            errors: c.errors.total(),
            unfinished,
            unsent,
        },
        bytes: Bytes {
            sent: c.bytes_sent,
            received: c.bytes_received,
        },
        status_codes,
        errors: c.errors,
        connections: Connections {
            opened: c.connections_opened,
            closed_by_server: c.closed_by_server,
            unsolicited: c.unsolicited,
        },
        latency_us: Percentiles::of(&agg.latency),
        service_time_us: Percentiles::of(&agg.service),
        schedule_lag_us: lag,
        latency_hdr: encode(&agg.latency),
        service_time_hdr: encode(&agg.service),
        timeseries: agg.series.clone(),
        client: ClientInfo {
            cpu_user_s: round3(out.client_rusage.0),
            cpu_sys_s: round3(out.client_rusage.1),
            rss_max_bytes: out.client_rusage.2,
            cpu_pct_max: (cpu_pct_max * 10.0).round() / 10.0,
            saturated,
            saturated_fraction: (frac * 1000.0).round() / 1000.0,
        },
        machine: Machine {
            samples: out
                .sampler
                .as_ref()
                .map(|s| s.machine.clone())
                .unwrap_or_default(),
        },
        server,
        warmup: (cfg.warmup.as_nanos() > 0).then(|| Warmup {
            duration_s: cfg.warmup.as_secs_f64(),
            sent: warm.sent,
            completed: warm.completed,
            errors: warm.errors.total(),
            connections_opened: warm.connections_opened,
        }),
        warnings,
        thresholds: Vec::new(),
        shards: Vec::new(),
    };
    result.thresholds = cfg.thresholds.iter().map(|t| t.check(&result)).collect();
    result
}

fn round3(v: f64) -> f64 {
    (v * 1000.0).round() / 1000.0
}

//! The warnings a run's summary leads with: what makes its numbers less than they seem.

use super::assemble::ClientCheck;
use super::Context;
use volley_config::RunConfig;
use volley_engine::EngineOutput;
use volley_model::result::redact;
use volley_model::result::warning::{SharedCpu, Shortfall};
use volley_model::result::{Mode, RunResult, ServerInfo, Warning};
use volley_model::stats::Percentiles;
use volley_model::sys::cpus;
use volley_monitor::procfs;

/// Below this share of the target rate an open-loop run fell short (DESIGN: 99 %).
const SHORTFALL_BELOW: f64 = 0.99;
/// A machine with less idle CPU than this (percent) had none to spare.
const NO_IDLE_PCT: f64 = 5.0;
/// Failed responses above this share of the completed ones make a headline.
const FAILED_HEADLINE_FRACTION: f64 = 0.01;

/// Every warning that applies to a run, in the order the summary shows them.
pub fn of(
    cfg: &RunConfig,
    out: &EngineOutput,
    check: &ClientCheck,
    lag: Option<&Percentiles>,
    server: Option<&ServerInfo>,
) -> Vec<Warning> {
    let c = &out.agg.counts;
    let mut w = Vec::new();
    if !cfg.load.is_open() {
        // Virtual users are closed loop too.
        w.push(Warning::closed_loop());
    }
    if check.by_cpu {
        w.push(Warning::client_saturated(check.capacity, check.fraction));
    }
    if check.starved {
        w.push(starved(check, server));
    }
    if let Some(why) = out.io_note.as_deref() {
        w.push(Warning::io_fallback(why));
    }
    if check.lag_hot {
        w.push(Warning::send_lag(lag.and_then(|l| l.p99).unwrap_or(0)));
    }
    let never_connected: u64 = out.ends.iter().map(|e| e.never_connected).sum();
    let first = out.first_connect_failure();
    if never_connected > 0 {
        // Slots opened on demand (--max-connections) count too.
        let slots: u64 = out.ends.iter().map(|e| e.max_active).sum();
        w.push(Warning::never_connected(
            never_connected,
            slots.max(cfg.load.connections as u64),
            c.errors.connect,
            first,
        ));
    } else if c.errors.connect > 0 {
        w.push(Warning::connect_failures(c.errors.connect, first));
    }
    let failed: u64 = c
        .status_codes()
        .iter()
        .filter(|(s, _)| *s >= 400)
        .map(|(_, n)| n)
        .sum();
    // Above 1 % it is a headline instead (`headlines`).
    if failed > 0 && !above_headline(failed, c.completed) {
        w.push(Warning::failed_statuses(failed));
    }
    if c.errors.total() > 0 {
        w.push(Warning::errors_excluded(c.errors.total()));
    }
    if c.unsolicited > 0 {
        w.push(Warning::unsolicited(c.unsolicited));
    }
    let unsent: u64 = out.ends.iter().map(|e| e.unsent).sum();
    if unsent > 0 && !out.latency_lower_bound {
        // In the open loop the lower-bound headline says it.
        w.push(Warning::unsent(unsent));
    }
    w.extend(server_behaviour(cfg, out));
    if let Some(s) = server {
        w.extend(server_warnings(cfg, s));
    }
    w
}

/// The starved client's headline: how often, how long it waited, how little it used, and
/// who took its CPUs (the monitored server named as such).
fn starved(check: &ClientCheck, server: Option<&ServerInfo>) -> Warning {
    let starved = (check.starved_fraction * check.seconds as f64).round() as usize;
    Warning::client_starved(
        (starved, check.seconds),
        check.wait_pct_max,
        check.cpu_pct_max,
        &check.busiest_others,
        server.map_or(&[][..], |s| &s.pids[..]),
    )
}

/// What the server did that the counters show but do not explain: what it sent that was not
/// HTTP (once: the first unparsable response, else the first bytes it sent unasked), closing
/// (nearly) every keep-alive connection after one response.
fn server_behaviour(cfg: &RunConfig, out: &EngineOutput) -> Vec<Warning> {
    let c = &out.agg.counts;
    let mut w = Vec::new();
    let protocol = out.ends.iter().find_map(|e| e.protocol_sample.as_ref());
    let unasked = out.ends.iter().find_map(|e| e.unsolicited_sample.as_ref());
    match (protocol, unasked) {
        (Some(p), _) if c.errors.protocol > 0 && p.bytes.is_empty() => {
            w.push(Warning::protocol_errors(c.errors.protocol, &p.reason));
        }
        // A server's session cookie is a secret as a request's Cookie is.
        (Some(p), _) if c.errors.protocol > 0 => {
            w.push(Warning::not_http(&p.reason, &redact::head_bytes(&p.bytes)));
        }
        (_, Some(b)) if c.unsolicited > 0 => w.push(Warning::sent_first(&redact::head_bytes(b))),
        _ => {}
    }
    // 90%: a few requests of a run end with the window rather than with a close.
    if cfg.load.keepalive && c.completed > 0 && c.closed_by_server * 10 >= c.completed * 9 {
        w.push(Warning::server_closed_each(c.closed_by_server, c.completed));
    }
    w
}

fn server_warnings(cfg: &RunConfig, s: &ServerInfo) -> Vec<Warning> {
    let mut w = Vec::new();
    if let Some(t) = s.exited_at_s {
        let pid = cfg.monitor.as_ref().map(|m| m.pid).unwrap_or_default();
        w.push(Warning::server_exited(pid, t));
    } else if let Some(note) = &s.note {
        w.push(Warning::server_note(note));
    }
    if let Some(reason) = &s.syscalls_unavailable_reason {
        w.push(Warning::syscalls_not_counted(reason));
    }
    w
}

/// The warnings that make a headline number untrustworthy, judged on the assembled result:
/// an open loop short of its rate, percentiles that are lower bounds, failed responses, a
/// machine shared without pinning.
pub(crate) fn headlines(cfg: &RunConfig, r: &RunResult, ctx: &Context) -> Vec<Warning> {
    let mut w = Vec::new();
    if let Some(s) = shortfall(r, cfg.allow_shortfall) {
        w.push(Warning::shortfall(&s));
    }
    if r.latency_lower_bound {
        w.push(Warning::lower_bound(r.requests.unsent));
    }
    let completed = r.requests.completed;
    if above_headline(r.requests.failed, completed) {
        let statuses: Vec<(u16, u64)> = r
            .status_codes
            .iter()
            .filter_map(|(s, n)| Some((s.parse().ok()?, *n)))
            .collect();
        let by_status: u64 = statuses
            .iter()
            .filter(|(s, _)| *s >= 400)
            .map(|(_, n)| n)
            .sum();
        if above_headline(by_status, completed) {
            w.push(Warning::failed_responses(&statuses, completed));
        }
        // Responses of a status below 400 that failed a check.
        let by_check = r.requests.failed.saturating_sub(by_status);
        if above_headline(by_check, completed) {
            let checks: Vec<(&str, u64)> = r.checks.iter().map(|(k, n)| (k.as_str(), *n)).collect();
            w.push(Warning::failed_checks(&checks, by_check, completed));
        }
    }
    if let Some(c) = shared_cpu(r, ctx, cfg.monitor.as_ref().map(|m| m.pid)) {
        w.push(Warning::shared_machine(&c));
    }
    w
}

/// More than [`FAILED_HEADLINE_FRACTION`] of the completed responses: the rule of the
/// failed-responses and failed-checks headlines, which the bound declared checks imply
/// (`checks<=1%`) breaks exactly when it holds.
fn above_headline(count: u64, completed: u64) -> bool {
    count as f64 > completed as f64 * FAILED_HEADLINE_FRACTION
}

/// An open-loop run (not interrupted) that sent less than 99 % of the requests due in its
/// send window — of its target rate with uniform arrivals. (With Poisson arrivals the number
/// due is itself random, about 1/√(R·d) around R·d: judging against R would fail healthy runs.)
fn shortfall(r: &RunResult, accepted: bool) -> Option<Shortfall> {
    let target = r.load.rate_rps.filter(|_| r.load.mode == Mode::Open)?;
    let achieved = r.achieved_rps?;
    // A journey's rate is of arrivals: judged by those that started.
    let (sent, unsent) = match r
        .journey
        .as_ref()
        .and_then(|j| j.arrivals.zip(j.arrivals_unsent))
    {
        Some((a, u)) => (a as f64, u as f64),
        None => (r.requests.sent as f64, r.requests.unsent as f64),
    };
    let due = sent + unsent;
    if r.interrupted || due == 0.0 || sent >= due * SHORTFALL_BELOW {
        return None;
    }
    // What one connection holds at once: its pipeline window, or its HTTP/2 streams.
    let per_connection = (r.load.pipeline.max(1) * r.load.streams.max(1)) as f64;
    Some(Shortfall {
        achieved_rps: achieved,
        target_rps: target,
        connections: r.connections.max_open.unwrap_or(r.load.connections),
        mean_latency_s: r.service_time_us.mean.map(|us| us / 1e6 / per_connection),
        accepted,
    })
}

/// The machine had (almost) no idle CPU and volley and the server could run on the same
/// CPUs. A correctly pinned run is busy too, and does not warn.
fn shared_cpu(r: &RunResult, ctx: &Context, server_pid: Option<i32>) -> Option<SharedCpu> {
    let samples = &r.machine.samples;
    // volley's CPU runs from the start to the end of the drain; over a window this short
    // (a few requests) dividing it by the window would claim more cores than the machine has.
    if samples.is_empty() || r.elapsed_s < SHARED_MIN_WINDOW_S {
        return None;
    }
    let idle_pct = samples.iter().map(|s| s.idle_pct).sum::<f64>() / samples.len() as f64;
    if idle_pct >= NO_IDLE_PCT {
        return None;
    }
    let client = cpus::parse_list(ctx.client_cpus).ok()?;
    let server = ctx.server_cpus.map(str::to_string).or_else(|| {
        let pid = server_pid?;
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        procfs::parse_cpus_allowed(&status)
    });
    let apart = match server.and_then(|s| cpus::parse_list(&s).ok()) {
        Some(server) => !server.cpus.iter().any(|c| client.cpus.contains(c)),
        // Volley pinned to part of the machine: the user chose where it runs.
        None => client.cpus.len() < ctx.cores.max(cpus::online()),
    };
    if apart {
        return None;
    }
    let cores = cpus::online() as f64;
    let busy_cores = (100.0 - idle_pct) / 100.0 * cores;
    Some(SharedCpu {
        idle_pct,
        client_cores: ((r.client.cpu_user_s + r.client.cpu_sys_s) / r.elapsed_s).min(busy_cores),
        server_cores: r
            .server
            .as_ref()
            .filter(|s| s.window_s > 0.0)
            .map(|s| (s.cpu_user_s + s.cpu_sys_s) / s.window_s),
        busy_cores,
    })
}

/// The shortest measured window the shared-machine check judges (see [`shared_cpu`]).
const SHARED_MIN_WINDOW_S: f64 = 0.5;

#[cfg(test)]
mod tests {
    use super::*;
    use volley_model::result::MachineSample;

    /// A real run (volley pinned to CPU 0, the server to CPU 1) on a machine `idle_pct` idle.
    fn run(idle_pct: f64) -> RunResult {
        let text = include_str!("../../../tests/fixtures/report/quick/runs/rust__get__r1.json");
        let mut r = RunResult::from_json(text).unwrap();
        r.machine.samples = (0..3)
            .map(|t| MachineSample {
                t_s: t as f64,
                user_pct: 60.0,
                system_pct: 39.0,
                softirq_pct: 0.0,
                iowait_pct: 0.0,
                idle_pct,
                ..Default::default()
            })
            .collect();
        r
    }

    fn ctx<'a>(client: &'a str, server: Option<&'a str>) -> Context<'a> {
        Context {
            argv: &[],
            cores: 2,
            client_cpus: client,
            server_cpus: server,
            server_latest: None,
        }
    }

    #[test]
    fn a_busy_machine_warns_only_when_volley_and_the_server_share_cpus() {
        let all = cpus::list(&(0..cpus::online()).collect::<Vec<_>>());
        let busy = run(0.8);
        let c = shared_cpu(&busy, &ctx(&all, None), None).expect("unpinned, no idle: warn");
        assert!((c.idle_pct - 0.8).abs() < 1e-9);
        assert!(c.client_cores > 0.0 && c.server_cores.is_some());
        let text = Warning::shared_machine(&c).to_string();
        assert!(
            text.contains("taskset") && text.contains("client_cpus"),
            "{text}"
        );
        // A window of a few milliseconds is not judged (its cores would be volley's start-up
        // and drain divided by almost nothing).
        let mut short = run(0.8);
        short.elapsed_s = 0.01;
        assert!(shared_cpu(&short, &ctx(&all, None), None).is_none());
        // volley cannot have used more cores than were busy.
        let mut heavy = run(0.8);
        heavy.client.cpu_user_s = 100.0;
        let c = shared_cpu(&heavy, &ctx(&all, None), None).unwrap();
        assert!(
            c.client_cores <= c.busy_cores,
            "{} > {}",
            c.client_cores,
            c.busy_cores
        );
        // A correctly pinned suite cell is just as busy, and does not warn.
        assert!(shared_cpu(&busy, &ctx("0", Some("1")), None).is_none());
        // Pinned to overlapping CPUs: warn.
        assert!(shared_cpu(&busy, &ctx("0", Some("0-1")), None).is_some());
        // Idle CPU to spare: no warning.
        assert!(shared_cpu(&run(40.0), &ctx(&all, None), None).is_none());
    }

    #[test]
    fn the_implied_checks_bound_breaks_exactly_where_the_headline_warns() {
        let implied = volley_config::threshold::Threshold::implied_checks();
        let mut r = run(50.0);
        r.checks.insert("status".into(), 0);
        for completed in (1..=3000).chain([99_999, 100_000, 100_001, 12_345_678]) {
            r.requests.completed = completed;
            let at = completed / 100;
            for failed in at.saturating_sub(1)..=at + 1 {
                r.requests.failed_checks = Some(failed);
                assert_eq!(
                    above_headline(failed, completed),
                    !implied.check(&r).pass,
                    "{failed} of {completed}"
                );
            }
        }
    }

    #[test]
    fn the_connections_a_shortfall_needs_count_streams_and_pipelines() {
        // 1,000 req/s at 24 ms is 24 requests in flight: 24 connections of one request, or 3
        // of 8 HTTP/2 streams.
        let mut r = run(50.0);
        r.load.mode = Mode::Open;
        r.load.rate_rps = Some(1000.0);
        r.achieved_rps = Some(645.0);
        r.requests.sent = 645;
        r.requests.unsent = 355;
        r.interrupted = false;
        r.service_time_us.mean = Some(24_000.0);
        r.load.pipeline = 1;
        r.load.streams = 1;
        assert_eq!(shortfall(&r, false).unwrap().connections_needed(), Some(24));
        r.load.streams = 8;
        assert_eq!(shortfall(&r, false).unwrap().connections_needed(), Some(3));
        r.load.streams = 1;
        r.load.pipeline = 4;
        assert_eq!(shortfall(&r, false).unwrap().connections_needed(), Some(6));
    }

    #[test]
    fn a_monitored_servers_affinity_is_read_from_proc() {
        // This test process stands in for the server: its affinity holds CPU 0 (and more).
        let (n, allowed) = cpus::allowed();
        if n < 2 || cpus::online() < 2 || !allowed.starts_with('0') {
            return; // volley pinned to "0" would be the whole machine
        }
        let me = std::process::id() as i32;
        let busy = run(0.5);
        // Volley on CPU 0 alone counts as pinned when nothing is known of the server...
        assert!(shared_cpu(&busy, &ctx("0", None), None).is_none());
        // ...and shares CPU 0 with it once its affinity is read from /proc.
        assert!(shared_cpu(&busy, &ctx("0", None), Some(me)).is_some());
    }
}

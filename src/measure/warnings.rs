//! The warnings a run's summary leads with: what makes its numbers less than they seem.

use super::assemble::ClientCheck;
use crate::config::RunConfig;
use crate::engine::EngineOutput;
use crate::result::{ServerInfo, Warning};
use crate::stats::Percentiles;

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
    if check.lag_hot {
        w.push(Warning::send_lag(lag.and_then(|l| l.p99).unwrap_or(0)));
    }
    let never_connected: u64 = out.ends.iter().map(|e| e.never_connected).sum();
    if never_connected > 0 {
        w.push(Warning::never_connected(
            never_connected,
            cfg.load.connections as u64,
            c.errors.connect,
        ));
    } else if c.errors.connect > 0 {
        w.push(Warning::connect_failures(c.errors.connect));
    }
    let failed: u64 = c
        .status_codes()
        .iter()
        .filter(|(s, _)| *s >= 400)
        .map(|(_, n)| n)
        .sum();
    if failed > 0 {
        w.push(Warning::failed_statuses(failed));
    }
    if c.errors.total() > 0 {
        w.push(Warning::errors_excluded(c.errors.total()));
    }
    if c.unsolicited > 0 {
        w.push(Warning::unsolicited(c.unsolicited));
    }
    let unsent: u64 = out.ends.iter().map(|e| e.unsent).sum();
    if unsent > 0 {
        w.push(Warning::unsent(unsent));
    }
    w.extend(server_behaviour(cfg, out));
    if let Some(s) = server {
        w.extend(server_warnings(cfg, s));
    }
    w
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
        (Some(p), _) if c.errors.protocol > 0 => w.push(Warning::not_http(&p.reason, &p.bytes)),
        (_, Some(b)) if c.unsolicited > 0 => w.push(Warning::sent_first(b)),
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
        let pid = cfg.monitor.map(|m| m.pid).unwrap_or_default();
        w.push(Warning::server_exited(pid, t));
    } else if let Some(note) = &s.note {
        w.push(Warning::server_note(note));
    }
    if let Some(reason) = &s.syscalls_unavailable_reason {
        w.push(Warning::syscalls_not_counted(reason));
    }
    w
}

//! The warnings a summary leads with: each says which headline number cannot be taken at
//! face value, and what to do about it.

use super::{Warning, WarningKind};
use crate::units::{micros_f, rate, thousands};

/// An open-loop run that did not send at its target rate.
#[derive(Debug, Clone, Copy)]
pub struct Shortfall {
    /// Requests written in the send window ÷ its length.
    pub achieved_rps: f64,
    /// `-R`.
    pub target_rps: f64,
    /// Connections the run had (the most open with `--max-connections`).
    pub connections: u64,
    /// Mean service time, when any response came back.
    pub mean_latency_s: Option<f64>,
    /// `--allow-shortfall` was given.
    pub accepted: bool,
}

impl Shortfall {
    /// Connections the target rate needs at the observed latency (Little's law: rate ×
    /// latency), when that is known.
    pub fn connections_needed(&self) -> Option<u64> {
        self.mean_latency_s
            .map(|l| (self.target_rps * l).ceil().max(1.0) as u64)
    }
}

/// How the machine's CPU was shared during a run.
#[derive(Debug, Clone, Copy)]
pub struct SharedCpu {
    /// Mean idle share of the machine's CPUs, percent.
    pub idle_pct: f64,
    /// Cores volley used.
    pub client_cores: f64,
    /// Cores the monitored server used (`None`: not monitored).
    pub server_cores: Option<f64>,
    /// Cores busy on the whole machine.
    pub busy_cores: f64,
}

impl Warning {
    /// Open loop: the target rate was not reached.
    pub fn shortfall(s: &Shortfall) -> Self {
        let mut text = format!(
            "target rate not reached: {} of {} req/s sent ({:.0} %)",
            rate(s.achieved_rps),
            rate(s.target_rps),
            s.achieved_rps / s.target_rps * 100.0
        );
        match s.connections_needed() {
            Some(n) if n > s.connections => text.push_str(&format!(
                "; at the observed mean latency of {} the rate needs about {} connections (rate × latency), the run had {}: raise -c, or let the open loop open them on demand with --max-connections {}",
                micros_f(s.mean_latency_s.unwrap_or(0.0) * 1e6),
                thousands(n),
                thousands(s.connections),
                thousands(n.saturating_mul(2)),
            )),
            _ => text.push_str("; the connections were not the limit: the server (or volley, see the client check) could not keep up"),
        }
        if s.accepted {
            text.push_str(" (accepted with --allow-shortfall)");
        }
        Self::new(WarningKind::Shortfall, text)
    }

    /// Open loop: `unsent` requests are in the corrected percentiles at their lower bounds.
    pub fn lower_bound(unsent: u64) -> Self {
        Self::new(WarningKind::LowerBound, format!(
            "corrected percentiles are lower bounds: they include {} requests due but never sent, each at its wait until the end of the send window",
            thousands(unsent)
        ))
    }

    /// More than 1 % of the `completed` responses had a status of 400 or more; `failed` holds
    /// those statuses and their counts.
    pub fn failed_responses(failed: &[(u16, u64)], completed: u64) -> Self {
        let failed: Vec<(u16, u64)> = failed.iter().copied().filter(|(s, _)| *s >= 400).collect();
        let count: u64 = failed.iter().map(|(_, n)| n).sum();
        let tail = "; they count as requests.failed (threshold `failed<1%`), not as errors";
        let text = if let ([(status, _)], true) = (failed.as_slice(), count == completed) {
            format!("all {} responses were {status}{tail}", thousands(completed))
        } else {
            let class = if failed.iter().all(|(s, _)| *s >= 500) {
                "5xx"
            } else if failed.iter().all(|(s, _)| *s < 500) {
                "4xx"
            } else {
                "4xx/5xx"
            };
            let pct = count as f64 / completed.max(1) as f64 * 100.0;
            format!(
                "{pct:.1} % of the responses were {class} ({} of {}){tail}",
                thousands(count),
                thousands(completed)
            )
        };
        Self::new(WarningKind::FailedResponses, text)
    }

    /// More than 1 % of the completed responses failed a check: `checks` counts each check's
    /// failures, `failed` the responses (each once).
    pub fn failed_checks(checks: &[(&str, u64)], failed: u64, completed: u64) -> Self {
        let which: Vec<String> = checks
            .iter()
            .filter(|(_, n)| *n > 0)
            .map(|(name, n)| format!("{name} {}", thousands(*n)))
            .collect();
        let pct = failed as f64 / completed.max(1) as f64 * 100.0;
        Self::new(
            WarningKind::FailedChecks,
            format!(
                "{pct:.1} % of the responses failed a check ({} of {}: {}); their latency is real, they count as requests.failed (threshold `failed<1%`), not as errors",
                thousands(failed),
                thousands(completed),
                which.join(", ")
            ),
        )
    }

    /// The machine had no idle CPU and volley and the server were not pinned apart.
    pub fn shared_machine(c: &SharedCpu) -> Self {
        let server = c.server_cores.unwrap_or(0.0);
        let others = (c.busy_cores - c.client_cores - server).max(0.0);
        let who = match c.server_cores {
            Some(s) => format!(
                "volley used {:.2} cores, the server {s:.2}, other processes {others:.2}",
                c.client_cores
            ),
            None => format!(
                "volley used {:.2} cores, other processes (the server among them) {others:.2}",
                c.client_cores
            ),
        };
        Self::new(WarningKind::SharedMachine, format!(
            "shared machine: the CPUs were {:.1} % idle and volley and the server were not pinned to separate CPUs ({who}), so the numbers move with how they shared the cores; pin them apart (taskset -c 0 <server>, taskset -c 1 volley …; in a suite client_cpus and server_cpus)",
            c.idle_pct
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shortfall_names_the_connections_needed() {
        let s = Shortfall {
            achieved_rps: 25.0,
            target_rps: 100.0,
            connections: 5,
            mean_latency_s: Some(0.2),
            accepted: false,
        };
        assert_eq!(s.connections_needed(), Some(20));
        assert_eq!(
            Warning::shortfall(&s).text(),
            "target rate not reached: 25.0 of 100.0 req/s sent (25 %); at the observed mean latency of 200.00 ms the rate needs about 20 connections (rate × latency), the run had 5: raise -c, or let the open loop open them on demand with --max-connections 40"
        );
    }

    #[test]
    fn failed_responses_say_all_or_a_share() {
        assert_eq!(
            Warning::failed_responses(&[(404, 120_903)], 120_903).text(),
            "all 120,903 responses were 404; they count as requests.failed (threshold `failed<1%`), not as errors"
        );
        assert!(Warning::failed_responses(&[(200, 88), (503, 12)], 100)
            .text()
            .starts_with("12.0 % of the responses were 5xx (12 of 100)"));
        assert!(Warning::failed_responses(&[(404, 1), (503, 1)], 2)
            .text()
            .starts_with("100.0 % of the responses were 4xx/5xx"));
    }
}

//! The words of a capacity search: one line per step as it finishes, the closed-loop line, and
//! the answer ("Max sustainable rate: …"), shared by `volley capacity` and the suite's table.

use std::fmt::Write;

use super::CapacityEntry;
use volley_model::result::capacity::{
    CapacityResult, CapacityStep, ClosedLoopStep, LimitedBy, Phase, Verdict,
};
use volley_model::units;

/// `41,200` (a rate in whole requests per second).
pub(crate) fn rps(v: f64) -> String {
    units::thousands(v.round() as u64)
}

/// `step  3:       800 req/s  pass     achieved       800.0, p99   4.10 ms  within the SLO: …`
pub fn step_line(n: usize, s: &CapacityStep) -> String {
    // A sweep's window is named by where it lies in the run: `window at  12 s:`.
    let head = match s.window {
        Some(w) => format!("window at {:>3} s", w.start_s),
        None => format!("step {n:>2}"),
    };
    format!(
        "{head}: {:>9} req/s  {:<8} achieved {:>11}, p99 {:>9}  {}",
        rps(s.target_rps),
        s.verdict.as_str(),
        s.achieved_rps.map_or("-".into(), units::rate),
        units::opt_micros(s.latency_us.p99),
        reason(s)
    )
}

/// A step's reason as shown: a confirmation run says so first (`[confirm] within the SLO: …`).
pub(crate) fn reason(s: &CapacityStep) -> String {
    if s.phase == Some(Phase::Confirm) {
        format!("[confirm] {}", s.reason)
    } else {
        s.reason.clone()
    }
}

/// `closed loop over 50 connections: 52,014.2 req/s, p99 2.10 ms (the most these connections
/// carry when nothing paces them)`.
pub fn closed_loop_line(c: &ClosedLoopStep) -> String {
    format!(
        "closed loop over {} connection{}: {} req/s, p99 {}{}",
        c.connections,
        if c.connections == 1 { "" } else { "s" },
        units::rate(c.throughput_rps),
        units::opt_micros(c.latency_us.p99),
        if c.client_saturated {
            " (the client saturated: the server may take more)"
        } else {
            ""
        }
    )
}

/// `2 min 10 s`, `18 s`.
pub(crate) fn wall(wall_s: f64) -> String {
    if wall_s >= 60.0 {
        let m = (wall_s / 60.0).floor();
        format!("{m} min {} s", (wall_s - m * 60.0).round())
    } else {
        format!("{} s", wall_s.round())
    }
}

/// What a non-passing step's reason says at its rate: `SLO broken at 43,500: p99 31.00 ms
/// (p99<10ms)`, or `not at 43,500: the rate was not kept …`.
fn why_not(s: &CapacityStep) -> String {
    match s.reason.strip_prefix("SLO broken: ") {
        Some(rest) => format!("SLO broken at {}: {rest}", rps(s.target_rps)),
        None => format!("not at {}: {}", rps(s.target_rps), s.reason),
    }
}

/// What the passing step at the answer measured: `p99 8.70 ms at 41,200`.
fn at_max(r: &CapacityResult) -> String {
    match r.step_at_max() {
        Some(s) => format!(
            "{} at {}",
            s.reason.trim_start_matches("within the SLO: "),
            rps(s.target_rps)
        ),
        None => String::new(),
    }
}

/// The answer in one sentence, then the bracket, the steps and the wall time:
/// `Max sustainable rate: 41,200 req/s (p99 8.70 ms at 41,200; SLO broken at 43,500: p99 31.00
/// ms (p99<10ms)). Bracket 41,200–43,500 after 9 steps, 2 min 10 s.`
pub fn summary(r: &CapacityResult) -> String {
    let b = r.bracket;
    let tail = format!(
        "{} {}, {}.",
        match (b.low_rps, b.high_rps) {
            (Some(l), Some(h)) => format!("Bracket {}–{}", rps(l), rps(h)),
            (Some(l), None) => format!("Bracket {}–?", rps(l)),
            (None, Some(h)) => format!("Bracket ?–{}", rps(h)),
            (None, None) => "No bracket".into(),
        },
        runs(r),
        wall(r.wall_s)
    );
    let lowest = r.lowest_tried_rps.map_or("-".into(), rps);
    let head = match (r.max_rate_rps, r.limited_by) {
        (Some(m), _) if r.interrupted => format!(
            "Interrupted: the highest rate that passed so far is {} req/s ({}).",
            rps(m),
            at_max(r)
        ),
        (Some(m), Some(LimitedBy::Client)) => format!(
            "Max sustainable rate: at least {} req/s: the client is the limit here ({}; above it: {}).",
            rps(m),
            at_max(r),
            r.steps
                .iter()
                .rev()
                .find(|s| s.verdict == Verdict::Client)
                .map_or(String::new(), |s| s.reason.clone())
        ),
        (Some(m), Some(LimitedBy::MaxRate)) => format!(
            "Max sustainable rate: at least {} req/s: --max-rate reached ({}).",
            rps(m),
            at_max(r)
        ),
        (Some(m), _) => format!(
            "Max sustainable rate: {} req/s ({}{}).",
            rps(m),
            at_max(r),
            r.step_above()
                .map_or(String::new(), |s| format!("; {}", why_not(s)))
        ),
        (None, Some(LimitedBy::Client)) => format!(
            "No rate measured: the client was the limit at every rate tried, down to {lowest} req/s ({}).",
            r.steps.last().map_or(String::new(), |s| s.reason.clone())
        ),
        (_, Some(LimitedBy::Machine)) => format!(
            "No answer: the machine was too busy to measure ({}).",
            r.error.as_deref().unwrap_or("volley was starved of CPU")
        ),
        (None, _) if r.interrupted => "Interrupted before any rate passed.".to_string(),
        (None, _) if r.error.is_some() => "Max sustainable rate: not found.".to_string(),
        (None, _) => format!(
            "No rate meets the SLO: the lowest tried, {lowest} req/s, did not pass ({}).",
            r.steps
                .iter()
                .rev()
                .find(|s| Some(s.target_rps) == r.lowest_tried_rps)
                .map_or(String::new(), |s| s.reason.clone())
        ),
    };
    let head = if super::reproduce::not_reproduced(r) && !r.interrupted {
        head.replacen(
            "Max sustainable rate:",
            "Max sustainable rate (not reproduced):",
            1,
        )
    } else {
        head
    };
    match super::reproduce::confirmation(r) {
        Some(c) => format!("{head} {tail} {c}"),
        None => format!("{head} {tail}"),
    }
}

/// `after 9 steps`; a sweep's: `from a sweep of 30 windows (resolution 37 req/s), then 4
/// steps`.
fn runs(r: &CapacityResult) -> String {
    let plural = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
    let windows = r.steps.iter().filter(|s| s.window.is_some()).count();
    let steps = r.steps.len() - windows;
    match &r.sweep {
        None => format!("after {}", plural(steps, "step")),
        Some(sw) => {
            let then = match steps {
                0 => String::new(),
                n => format!(", then {}", plural(n, "step")),
            };
            format!(
                "from a sweep of {} (resolution {} req/s){then}",
                plural(windows, "window"),
                rps(sw.resolution_rps)
            )
        }
    }
}

/// What a sweep was and which way its reading errs: `Sweep: 100 → 1,200 req/s over 30 s in
/// windows of 1 s; the SLO broke and stayed broken from 840 req/s. Its bias: …`. None for a
/// search.
pub fn sweep_line(r: &CapacityResult) -> Option<String> {
    let sw = r.sweep.as_ref()?;
    let top = match sw.top {
        volley_model::result::capacity::SweepTop::ClosedLoop => " (1.5 × the closed loop)",
        volley_model::result::capacity::SweepTop::MaxRate => "",
    };
    let knee = match sw.knee_rps {
        Some(k) => format!("the SLO broke and stayed broken from {} req/s", rps(k)),
        None => "no window broke the SLO for good".into(),
    };
    Some(format!(
        "Sweep: {} → {} req/s{top} over {} in windows of {}{}; {knee}. Its bias: {}.",
        rps(sw.from_rps),
        rps(sw.to_rps),
        units::seconds(sw.duration_s),
        units::seconds(sw.window_s),
        if sw.cut_short { " (cut short)" } else { "" },
        sw.bias
    ))
}

/// The sustainable rate beside the closed-loop maximum: `Closed-loop maximum over 50
/// connections: 52,014 req/s; the sustainable rate is 79 % of it (…).` None without both
/// numbers. Where either is volley's limit rather than the server's, it says so instead of a
/// share that would compare two numbers about the client.
pub fn versus_closed_loop(r: &CapacityResult) -> Option<String> {
    let c = r.closed_loop_reference()?;
    let share = r.share_of_closed_loop()?;
    if let Some(finding) = super::reproduce::closed_loop_finding(r) {
        return Some(format!("{} {finding}", versus(r, c, share)));
    }
    Some(versus(r, c, share))
}

/// The closed-loop maximum `c` and the answer's `share` of it, in words.
fn versus(r: &CapacityResult, c: &ClosedLoopStep, share: f64) -> String {
    let head = format!(
        "Closed-loop maximum over {} connection{}: {} req/s",
        c.connections,
        if c.connections == 1 { "" } else { "s" },
        rps(c.throughput_rps),
    );
    let lower = matches!(r.limited_by, Some(LimitedBy::Client | LimitedBy::MaxRate));
    if c.client_saturated && r.limited_by == Some(LimitedBy::Client) {
        format!(
            "{head}, but the client saturated there too: both numbers are volley's limits on this machine, not the server's."
        )
    } else if c.client_saturated && lower {
        format!(
            "{head} (the client saturated: at least that much); the search stopped at --max-rate, {:.0} % of it.",
            share * 100.0
        )
    } else if c.client_saturated {
        format!(
            "{head} (the client saturated: at least that much); the sustainable rate is at most {:.0} % of it.",
            share * 100.0
        )
    } else if lower {
        format!(
            "{head}; the sustainable rate is at least {:.0} % of it.",
            share * 100.0
        )
    } else {
        format!(
            "{head}; the sustainable rate is {:.0} % of it{}.",
            share * 100.0,
            if share < 0.9 {
                " (a closed loop waits for each response, so it never meets the queue an open \
                 loop builds: its req/s is no rate the server sustains within an SLO)"
            } else {
                ""
            }
        )
    }
}

/// The suite table's capacity part: per scenario, the servers by the rate they sustain within
/// the SLO beside their closed-loop maximum (medians over repetitions), with why a server has
/// no rate underneath. Empty without capacity searches.
pub(crate) fn rankings_table(entries: &[CapacityEntry]) -> String {
    let mut out = String::new();
    for r in super::rankings(entries) {
        out += &format!(
            "\n{}: highest open-loop rate within {} (closed loop: the same connections, unpaced)\n\n",
            r.label,
            r.slo.join(", ")
        );
        let head = [
            "#",
            "server",
            "sustainable req/s",
            "limited by",
            "p99 at it",
            "closed-loop req/s",
            "share",
            "steps",
        ];
        let mut rows: Vec<Vec<String>> = vec![head.iter().map(|s| s.to_string()).collect()];
        for (i, p) in r.places.iter().enumerate() {
            let steps: usize = p
                .entries
                .iter()
                .filter_map(|e| e.result.as_ref())
                .map(|c| c.steps.len())
                .sum();
            rows.push(vec![
                if p.max_rate_rps.is_some() {
                    (i + 1).to_string()
                } else {
                    "-".into()
                },
                p.server.clone(),
                p.rate_text(),
                p.limit_text(),
                p.p99_at_max_us
                    .map_or("-".into(), |v| units::micros(v.round() as u64)),
                p.closed_loop_text(),
                p.share_text(),
                steps.to_string(),
            ]);
        }
        out += &aligned(&rows);
        for p in r.places.iter().filter(|p| p.max_rate_rps.is_none()) {
            if let Some(why) = p.reason() {
                out += &format!("  {}: {why}\n", p.server);
            }
        }
    }
    out
}

/// Rows as columns padded to their widest cell; the first two columns left, the rest right.
fn aligned(rows: &[Vec<String>]) -> String {
    let n = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut width = vec![0; n];
    for r in rows {
        for (w, c) in width.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in rows {
        let mut line = String::new();
        for (i, (c, w)) in r.iter().zip(&width).enumerate() {
            let pad = " ".repeat(w - c.chars().count());
            if i < 2 || i == 3 {
                line += &format!("{c}{pad}  ");
            } else {
                line += &format!("{pad}{c}  ");
            }
        }
        out += line.trim_end();
        out += "\n";
    }
    out
}

/// Capacity searches in the terminal (`volley report` without an output flag): each as `volley
/// capacity` printed it, the closed loop and step lines, the answer and the closed-loop
/// comparison; several searches (a suite's) each under its server, scenario and repetition.
pub fn render(entries: &[CapacityEntry]) -> String {
    let mut o = String::new();
    for e in entries {
        if entries.len() > 1 {
            let rep = if e.rep > 1 {
                format!(", repetition {}", e.rep)
            } else {
                String::new()
            };
            let _ = writeln!(o, "{} — {}{rep}:", e.server, e.label());
        }
        let Some(r) = &e.result else {
            let _ = writeln!(o, "{}\n", e.reason.as_deref().unwrap_or("no result"));
            continue;
        };
        if let Some(c) = &r.closed_loop {
            let _ = writeln!(o, "{}", closed_loop_line(c));
        }
        for (n, s) in r.steps.iter().enumerate() {
            let _ = writeln!(o, "{}", step_line(n + 1, s));
        }
        if let Some(line) = sweep_line(r) {
            let _ = writeln!(o, "{line}");
        }
        let _ = writeln!(o, "{}", summary(r));
        if let Some(line) = versus_closed_loop(r) {
            let _ = writeln!(o, "{line}");
        }
        o.push('\n');
    }
    o
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use volley_model::result::capacity::{Bracket, CAPACITY_SCHEMA};
    use volley_model::stats::Percentiles;

    pub(crate) fn step(rate: f64, verdict: Verdict, reason: &str, p99: u64) -> CapacityStep {
        CapacityStep {
            target_rps: rate,
            achieved_rps: Some(rate),
            verdict,
            reason: reason.into(),
            latency_us: Percentiles {
                p99: Some(p99),
                ..Default::default()
            },
            server_cpu_us_per_request: None,
            path: String::new(),
            idle_wait_s: 0.0,
            completed: 0,
            errors: 0,
            failed: 0,
            schedule_lag_p99_us: None,
            server_cpu_pct: None,
            phase: None,
            window: None,
        }
    }

    pub fn result(steps: Vec<CapacityStep>, b: Bracket, by: Option<LimitedBy>) -> CapacityResult {
        CapacityResult {
            schema: CAPACITY_SCHEMA.into(),
            volley_version: "0.1.0".into(),
            argv: vec!["volley".into()],
            started_at: "2026-11-25T00:00:00Z".into(),
            wall_s: 130.0,
            url: "http://127.0.0.1:8080/".into(),
            slo: vec!["p99<10ms".into()],
            precision_pct: 5.0,
            step_duration_s: 10.0,
            max_rate_rps: b.low_rps,
            limited_by: by,
            bracket: b,
            interrupted: false,
            steps,
            connections: 50,
            lowest_tried_rps: Some(100.0),
            error: None,
            repeat_rule: "2 of 3 runs pass".into(),
            server_cores: None,
            closed_loop: None,
            closed_loop_again: None,
            closed_loop_finding: None,
            confirmation: None,
            notes: Vec::new(),
            env: None,
            sweep: None,
        }
    }

    #[test]
    fn the_answer_reads_as_the_contract_shows_it() {
        let r = result(
            vec![
                step(
                    41_200.0,
                    Verdict::Pass,
                    "within the SLO: p99 8.70 ms",
                    8_700,
                ),
                step(
                    43_500.0,
                    Verdict::Fail,
                    "SLO broken: p99 31.00 ms (p99<10ms)",
                    31_000,
                ),
            ],
            Bracket {
                low_rps: Some(41_200.0),
                high_rps: Some(43_500.0),
            },
            Some(LimitedBy::Slo),
        );
        assert_eq!(
            summary(&r),
            "Max sustainable rate: 41,200 req/s (p99 8.70 ms at 41,200; SLO broken at 43,500: \
             p99 31.00 ms (p99<10ms)). Bracket 41,200–43,500 after 2 steps, 2 min 10 s."
        );
    }

    #[test]
    fn a_client_limit_is_a_lower_bound_and_says_so() {
        let r = result(
            vec![
                step(1_600.0, Verdict::Pass, "within the SLO: p99 1.00 ms", 1_000),
                step(
                    3_200.0,
                    Verdict::Client,
                    "the client fell behind its schedule",
                    1_000,
                ),
            ],
            Bracket {
                low_rps: Some(1_600.0),
                high_rps: None,
            },
            Some(LimitedBy::Client),
        );
        let s = summary(&r);
        assert!(
            s.starts_with(
                "Max sustainable rate: at least 1,600 req/s: the client is the limit here"
            ),
            "{s}"
        );
        assert!(s.contains("fell behind"), "{s}");
        let mut none = result(vec![], Bracket::default(), Some(LimitedBy::Client));
        none.lowest_tried_rps = Some(1.0);
        assert!(summary(&none).starts_with("No rate measured: the client was the limit"));
    }

    #[test]
    fn no_rate_names_the_lowest_tried() {
        let mut r = result(
            vec![step(
                1.0,
                Verdict::Fail,
                "SLO broken: p99 2 s (p99<10ms)",
                2_000_000,
            )],
            Bracket {
                low_rps: None,
                high_rps: Some(1.0),
            },
            None,
        );
        r.lowest_tried_rps = Some(1.0);
        let s = summary(&r);
        assert!(
            s.starts_with(
                "No rate meets the SLO: the lowest tried, 1 req/s, did not pass (SLO broken"
            ),
            "{s}"
        );
    }
}

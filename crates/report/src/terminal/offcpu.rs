//! The "Off-CPU" block (`--profile-off-cpu`) of the run summary: how long the server's threads
//! waited, blocked and preempted, and the functions they blocked in most (µs of waiting per
//! request).

use volley_model::result::profile::OffCpuInfo;
use volley_model::units::thousands;

/// Functions the summary lists (the JSON keeps up to 20).
const SHOWN: usize = 10;

/// The block's lines, its first to be labelled `Off-CPU`.
pub fn off_cpu_lines(o: &OffCpuInfo) -> Vec<String> {
    let per_request = o
        .blocked_us_per_request
        .map_or(String::new(), |v| format!(" ({v:.1} µs a request)"));
    let file = o.path.as_ref().map_or(
        " (--profile-out or --json keeps the stacks)".to_string(),
        |f| format!("; stacks in {f}"),
    );
    let mut lines = vec![format!(
        "{} waits of {} thread{}: blocked {:.1} ms{per_request}, preempted {:.1} ms{file}",
        thousands(o.switches),
        thousands(o.threads),
        if o.threads == 1 { "" } else { "s" },
        o.blocked_ms,
        o.preempted_ms,
    )];
    if !o.top.is_empty() {
        lines.push(format!(
            "{:>12} {:>13}  function (blocked in, kernel frames left out)",
            "self µs/req", "total µs/req"
        ));
    }
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for f in o.top.iter().take(SHOWN) {
        lines.push(format!(
            "{:>12} {:>13}  {}",
            num(f.self_us_per_request),
            num(f.total_us_per_request),
            f.name
        ));
    }
    if o.lost > 0 || o.dropped > 0 || o.unpaired > 0 {
        lines.push(format!(
            "note: {} records lost by the kernel, {} waits of stacks past the limit, {} waits without their stack or end: the times above leave them out",
            thousands(o.lost),
            thousands(o.dropped),
            thousands(o.unpaired)
        ));
    }
    if o.threads_unfollowed > 0 {
        lines.push(format!(
            "note: {} threads of the server beyond the first {} were not followed",
            thousands(o.threads_unfollowed),
            thousands(o.threads)
        ));
    }
    lines
}

//! The "Profile" block (`--profile`) of the run summary: what was sampled, the CPU per request
//! the stacks add up to, and the functions that cost the most per request.

use volley_model::result::profile::{JvmProfiling, ProfileInfo, Unwinding};
use volley_model::units::thousands;

/// Functions the summary lists (the JSON keeps up to 20).
const SHOWN: usize = 10;

/// A process whose median user stack is this shallow was walked without frame pointers.
const SHALLOW: u32 = 2;

/// The block's lines, its first to be labelled `Profile`.
pub fn profile_lines(p: &ProfileInfo) -> Vec<String> {
    let procs: Vec<String> = p
        .processes
        .iter()
        .take(3)
        .map(|q| format!("{} {}", q.command, thousands(q.samples)))
        .collect();
    let more = p.processes.len().saturating_sub(3);
    let per_request = p
        .cpu_us_per_request
        .map_or(String::new(), |v| format!(": {v:.1} µs of CPU a request"));
    let file = p.path.as_ref().map_or(
        " (--profile-out or --json keeps the stacks)".to_string(),
        |f| format!("; stacks in {f}"),
    );
    let mut lines = vec![format!(
        "{} samples of {} at {} Hz ({}{}){per_request}{file}",
        thousands(p.samples),
        p.event,
        p.frequency_hz,
        procs.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        }
    )];
    if !p.top.is_empty() {
        lines.push(format!(
            "{:>12} {:>7} {:>13} {:>8}  function",
            "self µs/req", "self %", "total µs/req", "total %"
        ));
    }
    let num = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.2}"));
    for f in p.top.iter().take(SHOWN) {
        lines.push(format!(
            "{:>12} {:>7.1} {:>13} {:>8.1}  {}",
            num(f.self_us_per_request),
            f.self_pct,
            num(f.total_us_per_request),
            f.total_pct,
            f.name
        ));
    }
    lines.extend(notes(p));
    lines
}

/// What the numbers cannot show: records the kernel dropped, and processes whose stacks the
/// frame-pointer walk could not follow.
fn notes(p: &ProfileInfo) -> Vec<String> {
    let mut out = Vec::new();
    if p.lost > 0 || p.dropped > 0 {
        out.push(format!(
            "note: {} records lost by the kernel, {} samples of stacks past the limit: the shares above leave them out",
            thousands(p.lost),
            thousands(p.dropped)
        ));
    }
    for q in &p.processes {
        if q.unwinding == Unwinding::FramePointers && q.median_depth <= SHALLOW && q.samples >= 20 {
            out.push(format!(
                "note: {} (pid {}): its user stacks are shallow (median {} frame{}): built without frame pointers, its callers are not seen; its leaf functions are",
                q.command,
                q.pid,
                q.median_depth,
                if q.median_depth == 1 { "" } else { "s" }
            ));
        }
        out.extend(q.jvm.as_ref().and_then(|j| jvm_note(&q.command, q.pid, j)));
    }
    out
}

/// What a JVM's Java frames lack: names (no perf map) or callers (no frame pointers kept).
fn jvm_note(command: &str, pid: i32, j: &JvmProfiling) -> Option<String> {
    if let (false, Some(e)) = (j.perf_map, &j.perf_map_error) {
        return Some(format!(
            "note: {command} (pid {pid}): its compiled Java methods are not named ({e})"
        ));
    }
    (!j.preserve_frame_pointer).then(|| format!(
        "note: {command} (pid {pid}): a JVM without -XX:+PreserveFramePointer: its Java frames are named, their callers not walked (a suite's `profile = true` turns it on)"
    ))
}

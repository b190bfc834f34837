//! Go's `GODEBUG=gctrace=1` lines (written to stderr, one per collection):
//!
//! `gc 4 @0.081s 4%: 0.33+2.4+0.005 ms clock, 0.67+1.2/0.66/0.32+0.011 ms cpu, 3->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P (forced)`
//!
//! The wall-clock terms are sweep termination (stop-the-world), concurrent mark, and mark
//! termination (stop-the-world): the pause is the first plus the third. The heap terms are
//! the heap at the start, at the end, and the live heap marked (MB = 2^20 bytes, as the
//! runtime prints them). Lines that do not start with `gc ` are the server's own output
//! and are skipped; a `gc ` line that does not match is counted as unparsed.

use super::{GcEvent, GcLog};

const MIB: f64 = 1_048_576.0;

/// Reads every gctrace line of `text`.
pub fn parse(text: &str) -> GcLog {
    let mut log = GcLog::default();
    for line in text.lines() {
        let line = line.trim_end();
        if !line.starts_with("gc ") || line.starts_with("gc: ") {
            continue;
        }
        match parse_line(line) {
            Some(e) => log.events.push(e),
            None => log.unparsed_lines += 1,
        }
    }
    log
}

/// One `gc N @Ts P%: …` line.
pub fn parse_line(line: &str) -> Option<GcEvent> {
    let (head, rest) = line.split_once(": ")?;
    let mut head = head.split_whitespace();
    let (_gc, _n, at) = (head.next()?, head.next()?, head.next()?);
    let t_s: f64 = at.strip_prefix('@')?.strip_suffix('s')?.parse().ok()?;
    let mut parts = rest.split(", ");
    let clock = parts.next()?.strip_suffix(" ms clock")?;
    let terms: Vec<f64> = clock
        .split('+')
        .map(|t| t.parse().ok())
        .collect::<Option<_>>()?;
    let [stw1, _mark, stw2] = terms[..] else {
        return None;
    };
    let _cpu = parts.next()?.strip_suffix(" ms cpu")?;
    let heap = parts.next()?.strip_suffix(" MB")?;
    let heap: Vec<f64> = heap
        .split("->")
        .map(|h| h.parse().ok())
        .collect::<Option<_>>()?;
    let [before, _end, live] = heap[..] else {
        return None;
    };
    if !t_s.is_finite() || t_s < 0.0 || stw1 < 0.0 || stw2 < 0.0 {
        return None;
    }
    Some(GcEvent {
        t_s,
        kind: if line.ends_with("(forced)") {
            "forced"
        } else {
            "gc"
        }
        .to_string(),
        pause_ms: stw1 + stw2,
        heap_before_bytes: Some((before * MIB) as u64),
        heap_after_bytes: Some((live * MIB) as u64),
        unix_ms: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines of the installed Go 1.26 (a program allocating 300 MB in 1 KiB slices, then
    /// `runtime.GC()`), a line of the program's own, and a damaged gc line.
    const FIXTURE: &str = include_str!("../../../../tests/fixtures/gc/go-gctrace.txt");

    #[test]
    fn real_gctrace_lines_give_pauses_and_heaps() {
        let log = parse(FIXTURE);
        assert_eq!(log.events.len(), 7, "{log:#?}");
        assert_eq!(log.unparsed_lines, 1, "the damaged line is counted");
        let first = &log.events[0];
        assert_eq!(first.t_s, 0.020);
        assert!((first.pause_ms - 1.511).abs() < 1e-9, "1.5 + 0.011");
        assert_eq!(first.heap_before_bytes, Some(3 << 20));
        assert_eq!(first.heap_after_bytes, Some(1 << 20));
        assert_eq!(first.kind, "gc");
        let forced = log.events.last().unwrap();
        assert_eq!(forced.kind, "forced");
        assert!((forced.pause_ms - 0.09).abs() < 1e-9);
    }

    #[test]
    fn lines_that_are_not_gctrace_are_skipped_or_counted() {
        assert_eq!(parse("listening on :8080\n").unparsed_lines, 0);
        for bad in [
            "gc 1 @0.1s 1%: 0.1+0.2 ms clock, 0 ms cpu, 1->1->1 MB",
            "gc 1 @xs 1%: 0.1+0.2+0.3 ms clock, 0 ms cpu, 1->1->1 MB",
            "gc 1 @0.1s 1%: 0.1+0.2+0.3 ms clock, 0 ms cpu, 1->1 MB",
            "gc 1 @0.1s 1%: -1+0.2+0.3 ms clock, 0 ms cpu, 1->1->1 MB",
            "gc 2 @-.038s 4%: 0.17+1.3+0.005 ms clock, 0 ms cpu, 3->4->2 MB",
            "gc 1",
        ] {
            assert_eq!(parse_line(bad), None, "{bad}");
            assert_eq!(parse(bad).unparsed_lines, 1, "{bad}");
        }
    }
}

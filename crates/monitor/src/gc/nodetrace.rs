//! Node's `--trace-gc` lines (V8's `GCTracer::Output`, written to stdout, one per collection),
//! placed on the wall clock by the anchor line of volley's preload ([`NODE_PRELOAD_JS`]). The
//! line format is at [`parse_line`]; what a run reports of the pauses, and how the harness turns
//! the trace on, is docs/contract.md, "GC pauses".

use std::collections::HashMap;

use super::{GcEvent, GcLog};

const MIB: f64 = 1_048_576.0;
/// The start of the anchor line the preload writes.
pub(crate) const ANCHOR_PREFIX: &str = "volley-gc-anchor ";

/// The preload the harness writes to a file and passes as `NODE_OPTIONS=--require <file>`:
/// turns `--trace-gc` on and writes the anchor line (synchronously, to fd 1, so it is not held
/// in a stream buffer), never throwing into the server.
///
/// The anchor line, `volley-gc-anchor pid=16761 unix_ms=1795443756852.562 uptime_ms=22.260`,
/// is the same instant on the wall clock and on the isolate's clock, giving
/// [`GcLog::anchor_unix_ms`]. Node does not expose the isolate's clock; `uptime_ms` is
/// `performance.now()` minus `performance.nodeTiming.v8Start` (V8's start, just before the main
/// isolate is created). Measured on Node 20 against a forced collection: the isolate's 0 is 0.6
/// to 2.9 ms after `v8Start`, so `unix_ms` of an event may be that much early.
///
/// Buffering, measured on Node 20.20 with `strace`: each trace line reaches stdout in one
/// `write(2)` as it is printed, to a file and to a pipe alike; lines interleave with the
/// server's `console.log` output in order and none are lost at SIGTERM (checked with a
/// collection every 20 ms, SIGTERM after 2 s: the last line written before the signal is in
/// the output). So the preload installs no signal handler (which would change how the server
/// stops).
pub const NODE_PRELOAD_JS: &str = r#"// Written by volley: V8's --trace-gc for this process (not allowed in NODE_OPTIONS).
try {
  require('v8').setFlagsFromString('--trace-gc');
  const p = require('perf_hooks').performance;
  const now = p.now();
  const v8Start = p.nodeTiming && typeof p.nodeTiming.v8Start === 'number' ? p.nodeTiming.v8Start : 0;
  require('fs').writeSync(1, 'volley-gc-anchor pid=' + process.pid +
    ' unix_ms=' + (p.timeOrigin + now).toFixed(3) +
    ' uptime_ms=' + (now - v8Start).toFixed(3) + '\n');
} catch (e) {}
"#;

/// One parsed line, with the isolate it came from.
struct Traced<'a> {
    pid: &'a str,
    isolate: &'a str,
    event: GcEvent,
}

/// Reads every trace-gc line and anchor line of `text`.
///
/// Lines that are not trace-gc lines (see [`parse_line`]) are the server's own output (or other
/// V8 tracing) and are skipped; a trace-gc line that does not match is counted as unparsed.
/// When the heap is exhausted V8 prints its last collections again to stderr between
/// `<--- Last few GCs --->` and `<--- JS stacktrace --->`: those repeats are skipped.
///
/// Several processes (a wrapper such as `npm start` gets the preload too) or worker threads (an
/// isolate each) may write to the same output: every line is read, each on its own isolate's
/// clock; `unix_ms` is set for the first isolate seen of a process that wrote an anchor, and the
/// log's anchor is that of the process with the most collections.
pub fn parse(text: &str) -> GcLog {
    let mut log = GcLog::default();
    let mut traced: Vec<Traced> = Vec::new();
    let mut anchors: HashMap<&str, f64> = HashMap::new();
    let mut first_anchor: Option<f64> = None;
    let mut repeats = false;
    for line in text.lines() {
        let line = line.trim_end();
        if line.contains("<--- Last few GCs --->") {
            repeats = true;
        } else if line.contains("<--- JS stacktrace --->") {
            repeats = false;
        } else if let Some(rest) = line.strip_prefix(ANCHOR_PREFIX) {
            match parse_anchor(rest) {
                Some((pid, a)) => {
                    first_anchor = first_anchor.or(Some(a));
                    if let Some(pid) = pid {
                        anchors.entry(pid).or_insert(a);
                    }
                }
                None => log.unparsed_lines += 1,
            }
        } else if !repeats {
            match parse_line(line) {
                Line::Other => {}
                Line::Unparsed => log.unparsed_lines += 1,
                Line::Gc(pid, isolate, event) => traced.push(Traced {
                    pid,
                    isolate,
                    event,
                }),
            }
        }
    }
    place(&mut log, traced, &anchors, first_anchor);
    log
}

/// Sets `unix_ms` from the anchors and moves the events into the log.
fn place(log: &mut GcLog, traced: Vec<Traced>, anchors: &HashMap<&str, f64>, first: Option<f64>) {
    let mut main_isolate: HashMap<&str, &str> = HashMap::new();
    let mut counts: HashMap<&str, usize> = HashMap::new();
    for t in &traced {
        main_isolate.entry(t.pid).or_insert(t.isolate);
        *counts.entry(t.pid).or_default() += 1;
    }
    // Without an anchor of a process that collected, the first anchor is the log's.
    log.anchor_unix_ms = counts
        .iter()
        .filter_map(|(pid, n)| anchors.get(pid).map(|a| (*n, *a)))
        .max_by(|x, y| x.0.cmp(&y.0).then(y.1.total_cmp(&x.1)))
        .map(|(_, a)| a)
        .or(first);
    for t in traced {
        let mut e = t.event;
        let anchor = if anchors.is_empty() {
            first
        } else {
            anchors.get(t.pid).copied()
        };
        if main_isolate.get(t.pid) == Some(&t.isolate) {
            e.unix_ms = anchor.map(|a| a + e.t_s * 1000.0);
        }
        log.events.push(e);
    }
}

/// `pid=… unix_ms=… uptime_ms=…` → the process (if named) and the wall time of log-time 0.
fn parse_anchor(rest: &str) -> Option<(Option<&str>, f64)> {
    let (mut pid, mut unix, mut uptime) = (None, None, None);
    for field in rest.split_whitespace() {
        match field.split_once('=') {
            Some(("pid", v)) => pid = Some(v),
            Some(("unix_ms", v)) => unix = number(v),
            Some(("uptime_ms", v)) => uptime = number(v),
            _ => {}
        }
    }
    Some((pid, unix? - uptime?))
}

/// What one line is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line<'a> {
    /// Not a trace-gc line.
    Other,
    /// A trace-gc line that does not match.
    Unparsed,
    /// A collection, with the process id and isolate address it came from.
    Gc(&'a str, &'a str, GcEvent),
}

/// Reads one line:
///
/// `[16761:0xcea6170]       38 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 6.24 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure; `
///
/// Fields: the process id and the isolate's address; the time in milliseconds since the
/// isolate started (`Isolate::time_millis_since_init`, printed `%8.0f` when the collection
/// ends); the collector (`Scavenge`, `Mark-Compact`, `Minor Mark-Sweep`, … with ` (reduce)` for
/// a memory-reducing one); the objects' size and, in parentheses, the committed heap, before
/// and after, in MB of 2^20 bytes (V8 divides by its `MB` constant, `KB * KB`; newer V8 adds
/// `pooled: N MB, ` after them); then `a / b ms`: `a` is the collection's atomic pause on the
/// main thread (`duration`, from its start to its end), `b` the part of it spent in the
/// embedder's callbacks (`total_external_time`: weak-handle, prologue and epilogue callbacks),
/// already included in `a`. The pause is `a`; incremental marking steps done before it (`(+
/// 8.1 ms in 84 steps since start of marking, …)`) are spread over the run and not counted.
/// Since the line is written when the pause ends, `t_s` is the time minus the pause.
///
/// A line that does not start with `[pid:0x…]` followed by `N ms: ` is [`Line::Other`].
pub fn parse_line(line: &str) -> Line<'_> {
    let Some((pid, isolate, rest)) = prefix(line) else {
        return Line::Other;
    };
    let Some((t, body)) = rest.trim_start().split_once(" ms: ") else {
        return Line::Other;
    };
    match parse_body(t, body) {
        Some(e) => Line::Gc(pid, isolate, e),
        None => Line::Unparsed,
    }
}

/// `[16761:0xcea6170] rest` → the pid, the isolate's address and the rest.
fn prefix(line: &str) -> Option<(&str, &str, &str)> {
    let (inside, rest) = line.strip_prefix('[')?.split_once(']')?;
    let (pid, isolate) = inside.split_once(':')?;
    let hex = isolate.strip_prefix("0x")?;
    let ok = !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !hex.is_empty()
        && hex.bytes().all(|b| b.is_ascii_hexdigit());
    ok.then_some((pid, isolate, rest))
}

/// `38` and `Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 6.24 / 0.00 ms  (…) allocation failure;`.
fn parse_body(t: &str, body: &str) -> Option<GcEvent> {
    let t_ms = number(t.trim())?;
    let (heap, rest) = body.split_once(" MB, ")?;
    let (before, after) = heap.split_once(" -> ")?;
    let (kind, before) = before.rsplit_once(' ')?;
    let (kind, before) = split_last(kind, before)?;
    let (after, _after_committed) = sized(after)?;
    let rest = match rest.strip_prefix("pooled: ") {
        Some(r) => r.split_once(" MB, ")?.1,
        None => rest,
    };
    let (times, _) = rest.split_once(" ms")?;
    let (main, external) = times.split_once(" / ")?;
    let pause_ms = number(main)?;
    number(external)?;
    if kind.is_empty() {
        return None;
    }
    Some(GcEvent {
        t_s: (t_ms - pause_ms).max(0.0) / 1000.0,
        kind: kind.to_string(),
        pause_ms,
        heap_before_bytes: Some((before * MIB) as u64),
        heap_after_bytes: Some((after * MIB) as u64),
        unix_ms: None,
    })
}

/// `Scavenge 4.1` + `(4.2)` → the kind and 4.1 (checking the committed size).
fn split_last<'a>(kind_and_used: &'a str, committed: &str) -> Option<(&'a str, f64)> {
    let (kind, used) = kind_and_used.rsplit_once(' ')?;
    number(committed.strip_prefix('(')?.strip_suffix(')')?)?;
    Some((kind.trim_end(), number(used)?))
}

/// `3.4 (5.2)` → (3.4, 5.2).
fn sized(s: &str) -> Option<(f64, f64)> {
    let (used, committed) = s.split_once(' ')?;
    let committed = number(committed.strip_prefix('(')?.strip_suffix(')')?)?;
    Some((number(used)?, committed))
}

/// A plain decimal (digits and at most one dot), finite.
fn number(s: &str) -> Option<f64> {
    let ok = !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_digit() || b == b'.')
        && s.bytes().filter(|&b| b == b'.').count() <= 1
        && s != ".";
    let v: f64 = if ok { s.parse().ok()? } else { return None };
    v.is_finite().then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Node 20.20.2 with `NODE_OPTIONS=--require` the preload, `--max-old-space-size=24`, a
    /// script keeping one object in eight until the heap runs out, stdout and stderr piped
    /// together (trimmed: the anchor, scavenges, mark-compacts, memory-reducing ones, the
    /// server's own lines and V8's out-of-memory report with its repeated last collection).
    const FIXTURE: &str = include_str!("../../../../tests/fixtures/gc/node20-trace-gc.txt");

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn real_trace_gc_lines_give_pauses_heaps_and_wall_times() {
        let log = parse(FIXTURE);
        assert_eq!(log.unparsed_lines, 0, "{log:#?}");
        assert_eq!(
            log.events.len(),
            28,
            "the repeat after `Last few GCs` is skipped"
        );
        let anchor = 1795443756852.562 - 22.260;
        assert!(close(log.anchor_unix_ms.unwrap(), anchor));
        let first = &log.events[0];
        assert_eq!(first.kind, "Scavenge");
        assert!(close(first.pause_ms, 6.24));
        assert!(close(first.t_s, (38.0 - 6.24) / 1000.0));
        assert!(close(first.unix_ms.unwrap(), anchor + 38.0 - 6.24));
        assert_eq!(first.heap_before_bytes, Some((4.1 * MIB) as u64));
        assert_eq!(first.heap_after_bytes, Some((3.4 * MIB) as u64));
        let count = |k: &str| log.events.iter().filter(|e| e.kind == k).count();
        assert_eq!(count("Mark-Compact"), 4);
        assert_eq!(count("Mark-Compact (reduce)"), 2);
        assert_eq!(count("Scavenge (reduce)"), 11);
        assert_eq!(count("Scavenge"), 11);
        let total: f64 = log.events.iter().map(|e| e.pause_ms).sum();
        assert!(close(total, 270.44), "{total}");
    }

    #[test]
    fn the_server_output_is_skipped_and_damaged_lines_counted() {
        for other in [
            "server: step 1",
            "[nodemon] starting",
            "[16761:0xcea6170] Memory allocator,       used:   4232 KB",
            "volley-gc-anchored",
        ] {
            assert_eq!(parse(other), GcLog::default(), "{other}");
        }
        for bad in [
            "[1:0xa]       38 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, x / 0.00 ms",
            "[1:0xa]       38 ms: Scavenge 4.1 -> 3.4 (5.2) MB, 6.24 / 0.00 ms",
            "[1:0xa]       38 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB",
            "[1:0xa]       38 ms: 4.1 (4.2) -> 3.4 (5.2) MB, 6.24 / 0.00 ms",
            "[1:0xa]       -3 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 6.24 / 0.00 ms",
            "volley-gc-anchor pid=1 unix_ms=abc uptime_ms=1",
        ] {
            assert_eq!(parse(bad).unparsed_lines, 1, "{bad}");
        }
        let newer = "[1:0xa]       38 ms: Mark-Compact 4.1 (4.2) -> 3.4 (5.2) MB, pooled: 0 MB, 6.24 / 0.10 ms  (average mu = 1.000, current mu = 1.000) task; ";
        let Line::Gc("1", "0xa", e) = parse_line(newer) else {
            panic!("{newer}")
        };
        assert!(close(e.pause_ms, 6.24));
    }

    #[test]
    fn anchors_belong_to_their_process_and_isolate() {
        let text = "volley-gc-anchor pid=1 unix_ms=1000.5 uptime_ms=0.5\n\
            volley-gc-anchor pid=2 unix_ms=5000 uptime_ms=0\n\
            [2:0xb]       10 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 1.00 / 0.00 ms  (x) task;\n\
            [1:0xa]       10 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 1.00 / 0.00 ms  (x) task;\n\
            [1:0xc]       10 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 1.00 / 0.00 ms  (x) task;\n\
            [1:0xa]       20 ms: Scavenge 4.1 (4.2) -> 3.4 (5.2) MB, 1.00 / 0.00 ms  (x) task;\n";
        let log = parse(text);
        assert_eq!(log.anchor_unix_ms, Some(1000.0), "pid 1 collected most");
        let wall: Vec<Option<f64>> = log.events.iter().map(|e| e.unix_ms).collect();
        assert_eq!(wall, [Some(5009.0), Some(1009.0), None, Some(1019.0)]);
    }

    #[test]
    fn truncated_and_garbled_lines_never_panic() {
        for line in FIXTURE.lines() {
            for end in 0..=line.len() {
                if line.is_char_boundary(end) {
                    let _ = parse(&line[..end]);
                }
            }
        }
        for odd in [
            "[",
            "[:]",
            "[1:0x]",
            "[1:0xé] 1 ms: ",
            "[1:0xa] 1e999 ms: X 1 (1) -> 1 (1) MB, 1 / 1 ms",
            "volley-gc-anchor ",
            "[1:0xa] 1 ms: X 1 (1) -> 1 (1) MB, pooled: MB, 1 / 1 ms",
        ] {
            let _ = parse(odd);
        }
    }

    #[test]
    fn the_preload_sets_the_flag_and_writes_the_anchor() {
        assert!(NODE_PRELOAD_JS.contains("setFlagsFromString('--trace-gc')"));
        assert!(NODE_PRELOAD_JS.contains(ANCHOR_PREFIX.trim_end()));
    }
}

//! A runtime's GC log read at the end of the window: its format recognized (or given), its
//! lines parsed (never trusted: a line that does not match is counted), and its pauses
//! placed on the run's clock and cut to the window.
//!
//! Clocks: a JVM line with `timemillis` carries wall-clock time; otherwise a JVM's uptime
//! counts from the VM's creation (the counter file's `sun.rt.createVmBeginTime`, or the
//! process start). Go's `@Ts` counts from the process start (its start time in /proc, to the
//! kernel's 10 ms tick). Node's `N ms` counts from the isolate's start, which the preload's
//! anchor line ties to the wall clock.

use std::collections::BTreeMap;
use std::fs;

use super::summary::{self, Window};
use super::watch::Clocks;
use super::{gotrace, jvmlog, nodetrace, GcEvent, GcLog};
use crate::settings::GcLogConfig;
use volley_model::result::gc::{GcPause, GcPoint, GcSource, ServerGc};

/// Recognizes a log's format by its first GC line.
pub fn detect(text: &str) -> Option<GcSource> {
    text.lines().find_map(|line| {
        let l = line.trim_start();
        if l.starts_with("gc ") && l.contains(" @") && l.contains("ms clock") {
            Some(GcSource::GoGctrace)
        } else if l.starts_with('[') && l.contains(" ms: ") && is_v8_gc(l) {
            Some(GcSource::NodeTraceGc)
        } else if l.starts_with('[') && (l.contains("][gc") || l.contains("[gc")) {
            Some(GcSource::JvmLog)
        } else {
            None
        }
    })
}

fn is_v8_gc(line: &str) -> bool {
    ["Scavenge", "Mark-Compact", "Mark-sweep", "Minor Mark"]
        .iter()
        .any(|k| line.contains(k))
}

fn parse(format: GcSource, text: &str) -> GcLog {
    match format {
        GcSource::JvmLog => jvmlog::parse(text),
        GcSource::GoGctrace => gotrace::parse(text),
        GcSource::NodeTraceGc => nodetrace::parse(text),
        GcSource::Hsperfdata => GcLog::default(),
    }
}

/// A JVM pause that belongs to a collection counted by another pause (G1's remark and
/// cleanup end a concurrent cycle; ZGC's cycle is counted at its first pause).
fn counts_as_collection(format: GcSource, kind: &str) -> bool {
    format != GcSource::JvmLog
        || !["Remark", "Cleanup", "Mark End", "Relocate Start"]
            .iter()
            .any(|k| kind.contains(k))
}

/// Where an event's time 0 is on the wall clock, ms.
fn origin_unix_ms(format: GcSource, log: &GcLog, clocks: &Clocks) -> Option<f64> {
    match format {
        GcSource::NodeTraceGc => log.anchor_unix_ms,
        _ => log.anchor_unix_ms.or(clocks.process_start_unix_ms),
    }
}

/// Reads `cfg`'s log for a window of `window_s` seconds.
pub fn read(cfg: &GcLogConfig, clocks: Clocks, window_s: f64) -> ServerGc {
    let failed = |source: GcSource, why: String| {
        let w = Window {
            note: Some(why),
            ..Window::default()
        };
        let mut g = summary::summarize(source, w, window_s);
        g.unread = true;
        g
    };
    let fallback = cfg.format.unwrap_or(GcSource::JvmLog);
    let bytes = match fs::read(&cfg.path) {
        Ok(b) => b,
        Err(e) => return failed(fallback, format!("cannot read {}: {e}", cfg.path.display())),
    };
    let text = String::from_utf8_lossy(&bytes);
    let Some(format) = cfg.format.or_else(|| detect(&text)) else {
        return failed(
            fallback,
            format!(
                "{}: no GC line of a known format (JVM -Xlog:gc, Go gctrace, Node --trace-gc)",
                cfg.path.display()
            ),
        );
    };
    let log = parse(format, &text);
    let Some(origin) = origin_unix_ms(format, &log, &clocks) else {
        let mut g = failed(
            format,
            format!(
                "{}: the log's times cannot be placed on the run's clock (no anchor line)",
                cfg.path.display()
            ),
        );
        g.unparsed_lines = log.unparsed_lines;
        return g;
    };
    let w = place(format, &log, origin, &clocks, window_s);
    summary::summarize(format, w, window_s)
}

/// The events of `log` in the window, on the run's clock.
fn place(format: GcSource, log: &GcLog, origin: f64, clocks: &Clocks, window_s: f64) -> Window {
    let mut w = Window {
        unparsed_lines: log.unparsed_lines,
        ..Window::default()
    };
    let at = |e: &GcEvent| (e.unix_ms.unwrap_or(origin + e.t_s * 1e3) - clocks.t0_unix_ms) / 1e3;
    let mut by_kind: BTreeMap<String, u64> = BTreeMap::new();
    let mut before_window: Option<&GcEvent> = None;
    for e in &log.events {
        let t = at(e);
        if t + e.pause_ms / 1e3 <= 0.0 {
            before_window = Some(e);
            continue;
        }
        if t >= window_s {
            break;
        }
        if counts_as_collection(format, &e.kind) {
            *by_kind.entry(e.kind.clone()).or_default() += 1;
        }
        if let Some(after) = e.heap_after_bytes {
            w.heap_after_gc.push(GcPoint {
                t_s: round3(t),
                value: after as f64,
            });
        }
        w.pauses.push(GcPause {
            t_s: round3(t),
            kind: e.kind.clone(),
            pause_ms: e.pause_ms,
            heap_before_bytes: e.heap_before_bytes,
            heap_after_bytes: e.heap_after_bytes,
        });
    }
    w.collections_by_kind = by_kind;
    // The allocation of the window's first stretch counts from the last collection before it.
    let mut with_prev: Vec<GcPause> = Vec::with_capacity(w.pauses.len() + 1);
    if let Some(e) = before_window {
        with_prev.push(GcPause {
            t_s: 0.0,
            kind: e.kind.clone(),
            pause_ms: 0.0,
            heap_before_bytes: None,
            heap_after_bytes: e.heap_after_bytes,
        });
    }
    with_prev.extend(w.pauses.iter().cloned());
    if let Some((total, by)) = summary::alloc_from_heap(&with_prev, window_s) {
        w.alloc_bytes = Some(total);
        w.alloc_by_second = by;
    }
    w
}

fn round3(v: f64) -> f64 {
    (v * 1e3).round() / 1e3
}

#[cfg(test)]
mod tests {
    use super::*;

    const GO: &str = include_str!("../../../../tests/fixtures/gc/go-gctrace.txt");

    #[test]
    fn formats_are_recognized_by_their_lines() {
        assert_eq!(detect(GO), Some(GcSource::GoGctrace));
        assert_eq!(
            detect("[0.012s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 24M->3M(64M) 4.123ms\n"),
            Some(GcSource::JvmLog)
        );
        assert_eq!(
            detect("hello\n[4242:0x5f0e3c0]       45 ms: Scavenge 4.1 (5.8) -> 3.6 (6.8) MB, 0.75 / 0.00 ms  (average mu = 1.000, current mu = 1.000) allocation failure;\n"),
            Some(GcSource::NodeTraceGc)
        );
        assert_eq!(detect("listening on 8080\n"), None);
    }

    #[test]
    fn go_pauses_are_placed_from_the_process_start_and_cut_to_the_window() {
        let log = gotrace::parse(GO);
        let first = log.events[0].t_s;
        // t0 is 1 ms after the first collection began: it overlaps the window and counts.
        let clocks = Clocks {
            t0_unix_ms: 1_000_000.0 + first * 1e3 + 1.0,
            process_start_unix_ms: Some(1_000_000.0),
        };
        let w = place(GcSource::GoGctrace, &log, 1_000_000.0, &clocks, 3600.0);
        assert_eq!(w.pauses.len(), log.events.len());
        assert!((w.pauses[0].t_s - -0.001).abs() < 1e-9);
        // A window that starts after every collection has none.
        let late = Clocks {
            t0_unix_ms: 1_000_000.0 + 3_600_000.0,
            ..clocks
        };
        let w = place(GcSource::GoGctrace, &log, 1_000_000.0, &late, 10.0);
        assert!(w.pauses.is_empty());
        assert!(w.alloc_bytes.is_none());
    }

    #[test]
    fn a_missing_or_foreign_log_is_said_not_fatal() {
        let cfg = GcLogConfig {
            path: "/nonexistent/gc.log".into(),
            format: None,
        };
        let mut g = read(&cfg, Clocks::default(), 1.0);
        assert_eq!(g.pause_count, 0);
        assert!(g.unread, "nothing is known of its pauses");
        let slow = [volley_model::stats::slowest::SlowRequest {
            latency_us: 5_000,
            end_ns: 500_000_000,
        }];
        summary::correlate(&mut g, &slow, 1_000);
        assert_eq!(
            g.slow_overlap_fraction, None,
            "no claim about the slowest requests"
        );
        assert!(g.note.unwrap().contains("cannot read /nonexistent/gc.log"));
    }
}

/// A GC log followed while the run lasts, for live views: the pauses of the lines appended
/// since t0, as totals. Only complete lines are read; the detail (placement on the run's
/// clock, collections by kind, the window's cut) is `read`'s, at the end.
#[derive(Debug)]
pub(crate) struct Tail {
    path: std::path::PathBuf,
    format: Option<GcSource>,
    offset: u64,
    live: super::counters::LiveGc,
}

impl Tail {
    /// Follows `cfg`'s log from its present end (what is there was logged before t0).
    pub(crate) fn at_end(cfg: &GcLogConfig) -> Tail {
        let offset = fs::metadata(&cfg.path).map_or(0, |m| m.len());
        Tail {
            path: cfg.path.clone(),
            format: cfg.format,
            offset,
            live: super::counters::LiveGc::default(),
        }
    }

    /// Reads what was appended; the pauses so far.
    pub fn read(&mut self) -> super::counters::LiveGc {
        use std::io::{Read, Seek, SeekFrom};
        let Ok(mut f) = fs::File::open(&self.path) else {
            return self.live;
        };
        let len = f.metadata().map_or(0, |m| m.len());
        if len < self.offset {
            // Rotated or truncated: follow the new file from its start.
            self.offset = 0;
        }
        let mut bytes = Vec::new();
        // At most 4 MiB a read: a log that grows faster is caught up over the next reads.
        let _ = f
            .seek(SeekFrom::Start(self.offset))
            .and_then(|_| f.take(4 << 20).read_to_end(&mut bytes));
        let Some(end) = bytes.iter().rposition(|b| *b == b'\n') else {
            return self.live;
        };
        self.offset += end as u64 + 1;
        let text = String::from_utf8_lossy(&bytes[..=end]);
        let Some(format) = self.format.or_else(|| detect(&text)) else {
            return self.live;
        };
        self.format = Some(format);
        for e in parse(format, &text).events {
            self.live.pause_count += 1;
            self.live.pause_total_ms += e.pause_ms;
            self.live.pause_max_ms = self.live.pause_max_ms.max(e.pause_ms);
        }
        self.live
    }
}

#[cfg(test)]
mod tail_tests {
    use super::*;

    #[test]
    fn a_tail_counts_only_the_complete_lines_logged_after_it_began() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gc.log");
        let line = |ms: &str| {
            format!("gc 1 @0.010s 1%: 0.010+{ms}+0.020 ms clock, 0.1+0.2/0.3/0.4+0.5 ms cpu, 4->4->1 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 8 P\n")
        };
        fs::write(&path, line("1.0")).unwrap();
        let cfg = GcLogConfig {
            path: path.clone(),
            format: None,
        };
        let mut t = Tail::at_end(&cfg);
        assert_eq!(t.read().pause_count, 0, "the line before t0 is not counted");
        let mut f = fs::OpenOptions::new().append(true).open(&path).unwrap();
        use std::io::Write;
        write!(f, "{}{}", line("2.0"), &line("3.0")[..20]).unwrap();
        let live = t.read();
        assert_eq!(live.pause_count, 1, "the half line waits: {live:?}");
        write!(f, "{}", &line("3.0")[20..]).unwrap();
        let live = t.read();
        assert_eq!(live.pause_count, 2, "{live:?}");
        assert!(
            live.pause_total_ms > 0.0 && live.pause_max_ms <= live.pause_total_ms,
            "{live:?}"
        );
    }
}

//! A HotSpot JVM's unified GC log (`-Xlog:gc…`, JDK 9 and later; read on JDK 17 with G1 and
//! ZGC): every stop-the-world pause as an event, and where uptime 0 is on the wall clock when the
//! decorations tell. [`xlog_option`] is the option that writes the log; the line format, which
//! lines are pauses and which are skipped are at [`parse_line`]. What a run reports of the pauses
//! is docs/contract.md, "GC pauses".

use std::path::Path;

use super::{GcEvent, GcLog};

/// Above this, a `…ms` decoration is `timemillis` (since 1973), below it `uptimemillis`.
const EPOCH_MS_MIN: f64 = 1e11;
/// Messages of the selected tag sets that are known and are not pauses.
const SKIPPED: [&str; 7] = [
    "Using ",
    "Concurrent ",
    "Phase ",
    "To-space exhausted",
    "Garbage Collection (",
    "Allocation Stall (",
    "Relocation Stall (",
];

/// The JVM option that writes the log this module reads to `path`: the `gc` and `gc+phases`
/// tag sets at info (every pause of G1, Serial, Parallel and ZGC, one line each), decorated
/// with the uptime and the wall time in milliseconds (so events can be placed on the wall
/// clock), into one file that is never rotated (`filecount=0`; the JVM's default keeps five
/// files of 20 MB and would move the log away under a long run). The path is quoted so that
/// `:` and `,` in it are not taken as separators; it must not contain `"`.
pub fn xlog_option(path: &Path) -> String {
    format!(
        "-Xlog:gc=info,gc+phases=info:file=\"{}\":uptime,timemillis,level,tags:filecount=0",
        path.display()
    )
}

/// Reads every GC line of `text`.
pub fn parse(text: &str) -> GcLog {
    let mut log = GcLog::default();
    for line in text.lines() {
        match parse_line(line) {
            Line::Other => {}
            Line::Known(anchor) => log.anchor_unix_ms = log.anchor_unix_ms.or(anchor),
            Line::Pause(e, anchor) => {
                log.anchor_unix_ms = log.anchor_unix_ms.or(anchor);
                log.events.push(e);
            }
            Line::Unparsed => log.unparsed_lines += 1,
        }
    }
    log
}

/// What one line is. A GC line may tell where uptime 0 is on the wall clock (the anchor).
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// Not a line of the selected GC tag sets.
    Other,
    /// A known GC line that is not a pause.
    Known(Option<f64>),
    /// A pause.
    Pause(GcEvent, Option<f64>),
    /// A GC line that does not match.
    Unparsed,
}

/// What the decorations of a line say.
#[derive(Debug, Default)]
struct Decorations<'a> {
    uptime_ms: Option<f64>,
    unix_ms: Option<f64>,
    level: Option<&'a str>,
    /// The tags, when one decoration has `gc` among its tags.
    gc_tags: Option<&'a str>,
    /// Whether some decoration looked like tags (with or without `gc`).
    tag_like: bool,
}

/// Reads one line of the log. Each line is a run of bracketed decorations, then the message:
///
/// `[0.038s][1795443589565ms][info][gc       ] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M) 1.169ms`
///
/// `[0.325s][1795443600026ms][info][gc,phases] GC(0) Pause Mark Start 0.014ms`
///
/// Decorations are recognised by their form, in any order: `uptime` (`[0.038s]`),
/// `uptimemillis` (`[38ms]`), `uptimenanos` (`[38123456ns]`), `timemillis` (`[1795443589565ms]`,
/// milliseconds since the epoch: told from uptime by being 10^11 or more), `timenanos`,
/// `time`/`utctime` (`[2026-11-23T14:20:12.221+0000]`), the level (`[info]`) and the tags
/// (`[gc       ]`, padded). `pid`, `tid` and `hostname` are ignored. The default decorations
/// (`[uptime][level][tags]`) are read too.
///
/// Every stop-the-world pause is one `Pause …` line ending with its duration: G1, Serial and
/// Parallel log them under `gc` (`Pause Young (Normal) (G1 Evacuation Pause)`, `Pause Remark`,
/// `Pause Cleanup`, `Pause Full (System.gc())`, with the heap as `before->after(capacity)` in
/// B/K/M/G, binary units), ZGC under `gc+phases` (`Pause Mark Start`, `Pause Mark End`,
/// `Pause Relocate Start`, no heap). Hence [`xlog_option`] selects both tag sets. The event's
/// kind is the pause's name without the trailing cause in parentheses (`Pause Young (Normal)`,
/// `Pause Full`, `Pause Mark Start`). A pause line is written when the pause ends: the event's
/// `t_s` is the uptime minus the pause (and `unix_ms` the wall time minus the pause), so
/// events start when the application stopped.
///
/// Known lines that are not pauses are skipped without being counted: `Using G1`, G1's phase
/// sub-lines (indented, or `Phase N: …` for a full collection), concurrent phases and cycles
/// (`Concurrent Mark Cycle`, ZGC's `Concurrent Mark`), `To-space exhausted`, ZGC's cycle
/// summary (`Garbage Collection (Warmup) 14M(22%)->10M(16%)`) and its allocation and relocation
/// stalls (one thread waiting, not a pause), lines of other tag sets (`gc,init`, `gc,heap`, … of
/// a wider `-Xlog:gc*`) and of levels below info. Lines without decorations are the server's
/// own output. Any other `gc` or `gc,phases` line is counted as unparsed.
pub fn parse_line(line: &str) -> Line {
    let line = line.trim_end();
    let mut rest = line;
    let mut d = Decorations::default();
    let mut decorated = false;
    while let Some(r) = rest.strip_prefix('[') {
        let Some((token, after)) = r.split_once(']') else {
            break;
        };
        decorated = true;
        decorate(&mut d, token.trim());
        rest = after;
    }
    if !decorated {
        return Line::Other;
    }
    let time = d.uptime_ms.is_some() || d.unix_ms.is_some();
    match d.gc_tags {
        Some("gc" | "gc,phases") => {}
        Some(_) => return Line::Other,
        None if d.tag_like || !time => return Line::Other,
        None => {}
    }
    if matches!(d.level, Some("trace" | "debug")) {
        return Line::Other;
    }
    if !time {
        return Line::Unparsed;
    }
    let anchor = match (d.unix_ms, d.uptime_ms) {
        (Some(w), Some(u)) => Some(w - u),
        _ => None,
    };
    let msg = rest.strip_prefix(' ').unwrap_or(rest);
    let msg = strip_gc_id(msg);
    if msg.trim().is_empty() || msg.starts_with(' ') || SKIPPED.iter().any(|s| msg.starts_with(s)) {
        return Line::Known(anchor);
    }
    if !msg.starts_with("Pause ") {
        return Line::Unparsed;
    }
    match parse_pause(msg) {
        Some((kind, pause_ms, heap)) => {
            let start = |ms: f64| (ms - pause_ms).max(0.0);
            let t_ms = d.uptime_ms.or(d.unix_ms).map(start).unwrap_or(0.0);
            Line::Pause(
                GcEvent {
                    t_s: t_ms / 1000.0,
                    kind,
                    pause_ms,
                    heap_before_bytes: heap.map(|h| h.0),
                    heap_after_bytes: heap.map(|h| h.1),
                    unix_ms: d.unix_ms.map(start),
                },
                anchor,
            )
        }
        None => Line::Unparsed,
    }
}

/// Files one decoration under what its form says it is.
fn decorate<'a>(d: &mut Decorations<'a>, token: &'a str) {
    if matches!(token, "trace" | "debug" | "info" | "warning" | "error") {
        d.level = Some(token);
    } else if let Some(ms) = token.strip_suffix("ms").and_then(number) {
        if ms >= EPOCH_MS_MIN {
            d.unix_ms = Some(ms);
        } else {
            d.uptime_ms = Some(ms);
        }
    } else if let Some(ns) = token.strip_suffix("ns").and_then(number) {
        if ns / 1e6 >= EPOCH_MS_MIN {
            d.unix_ms = Some(ns / 1e6);
        } else {
            d.uptime_ms = Some(ns / 1e6);
        }
    } else if let Some(s) = token.strip_suffix('s').and_then(number) {
        d.uptime_ms = Some(s * 1000.0);
    } else if let Some(ms) = iso_unix_ms(token) {
        d.unix_ms = Some(ms);
    } else if token.starts_with(|c: char| c.is_ascii_lowercase())
        && token
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b',')
    {
        d.tag_like = true;
        if token.split(',').any(|t| t == "gc") {
            d.gc_tags = Some(token);
        }
    }
}

/// `GC(12) rest` → `rest`; other messages as they are.
fn strip_gc_id(msg: &str) -> &str {
    if let Some(r) = msg.strip_prefix("GC(") {
        if let Some((id, rest)) = r.split_once(')') {
            if !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()) {
                return rest.strip_prefix(' ').unwrap_or(rest);
            }
        }
    }
    msg
}

/// The heap before and after a pause, in bytes.
type Heap = (u64, u64);

/// `Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M) 1.169ms` → the kind, the pause in
/// milliseconds and the heap before and after.
fn parse_pause(msg: &str) -> Option<(String, f64, Option<Heap>)> {
    let (desc, duration) = msg.rsplit_once(' ')?;
    let pause_ms = number(duration.strip_suffix("ms")?)?;
    let desc = desc.trim_end();
    let (desc, heap) = match desc.rsplit_once(' ') {
        Some((d, h)) if h.contains("->") => (d, Some(parse_heap(h)?)),
        _ => (desc, None),
    };
    let kind = strip_cause(desc.trim_end());
    if kind
        .strip_prefix("Pause ")
        .is_none_or(|name| name.trim().is_empty())
    {
        return None;
    }
    Some((kind.to_string(), pause_ms, heap))
}

/// `Pause Young (Normal) (G1 Evacuation Pause)` → `Pause Young (Normal)`; `Pause Full
/// (System.gc())` → `Pause Full`; a name without parentheses as it is.
fn strip_cause(desc: &str) -> &str {
    if !desc.ends_with(')') {
        return desc;
    }
    let mut depth = 0usize;
    for (i, c) in desc.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return desc[..i].trim_end();
                }
            }
            _ => {}
        }
    }
    desc
}

/// `24M->3M(64M)` → (24 MiB, 3 MiB) in bytes.
fn parse_heap(h: &str) -> Option<Heap> {
    let (before, rest) = h.split_once("->")?;
    let (after, capacity) = rest.split_once('(')?;
    size(capacity.strip_suffix(')')?)?;
    Some((size(before)?, size(after)?))
}

/// `64M` → bytes (B, K, M, G, T: powers of 1024, as HotSpot prints them).
fn size(s: &str) -> Option<u64> {
    let unit = s.chars().last()?;
    let shift = match unit {
        'B' => 0,
        'K' => 10,
        'M' => 20,
        'G' => 30,
        'T' => 40,
        _ => return None,
    };
    let v = number(&s[..s.len() - 1])?;
    Some((v * (1u64 << shift) as f64) as u64)
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

/// `2026-11-23T14:20:12.221+0000` (the `time` and `utctime` decorations; `Z` and `+00:00`
/// accepted too) → milliseconds since the epoch.
fn iso_unix_ms(s: &str) -> Option<f64> {
    let num = |a: usize, b: usize| -> Option<i64> {
        let t = s.get(a..b)?;
        t.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| t.parse().ok())?
    };
    if s.get(4..5)? != "-" || s.get(7..8)? != "-" || s.get(10..11)? != "T" {
        return None;
    }
    if s.get(13..14)? != ":" || s.get(16..17)? != ":" {
        return None;
    }
    let (y, mo, d) = (num(0, 4)?, num(5, 7)?, num(8, 10)?);
    let (h, mi, sec) = (num(11, 13)?, num(14, 16)?, num(17, 19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let rest = s.get(19..)?;
    let (frac_ms, zone) = match rest.strip_prefix('.') {
        Some(r) => {
            let digits = r.bytes().take_while(|b| b.is_ascii_digit()).count();
            let frac = r.get(..digits)?;
            let ms = if frac.is_empty() {
                return None;
            } else {
                number(&format!("0.{frac}"))? * 1000.0
            };
            (ms, &r[digits..])
        }
        None => (0.0, rest),
    };
    let offset_min = match zone {
        "Z" => 0,
        _ => {
            let sign = match zone.get(..1)? {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let z = zone[1..].replace(':', "");
            if z.len() != 4 || !z.bytes().all(|c| c.is_ascii_digit()) {
                return None;
            }
            let (zh, zm): (i64, i64) = (z[..2].parse().ok()?, z[2..].parse().ok()?);
            sign * (zh * 60 + zm)
        }
    };
    let days = days_from_civil(y, mo, d);
    let secs = days * 86_400 + h * 3600 + mi * 60 + sec - offset_min * 60;
    Some(secs as f64 * 1000.0 + frac_ms)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[cfg(test)]
mod tests {
    use super::*;

    /// OpenJDK 17.0.15, G1, `-Xmx64m`, a program allocating 1-5 KiB arrays and keeping one in
    /// ten, then `System.gc()`; run with `xlog_option` (trimmed: young, concurrent start,
    /// remark, cleanup, to-space exhausted, full collections and their sub-lines).
    const G1: &str = include_str!("../../../../tests/fixtures/gc/jdk17-g1.log");
    /// The same program under ZGC: three cycles (warm-up, allocation stall, `System.gc()`).
    const ZGC: &str = include_str!("../../../../tests/fixtures/gc/jdk17-zgc.log");

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-6
    }

    #[test]
    fn g1_pauses_from_a_real_log() {
        let log = parse(G1);
        assert_eq!(log.unparsed_lines, 0, "{log:#?}");
        let kinds: Vec<&str> = log.events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            [
                "Pause Young (Normal)",
                "Pause Young (Concurrent Start)",
                "Pause Remark",
                "Pause Cleanup",
                "Pause Young (Normal)",
                "Pause Young (Normal)",
                "Pause Young (Normal)",
                "Pause Full",
                "Pause Young (Normal)",
                "Pause Full",
            ]
        );
        let total: f64 = log.events.iter().map(|e| e.pause_ms).sum();
        assert!(close(total, 22.083), "{total}");
        let first = &log.events[0];
        assert!(close(first.pause_ms, 1.169));
        assert!(close(first.t_s, (38.0 - 1.169) / 1000.0), "{}", first.t_s);
        assert!(close(first.unix_ms.unwrap(), 1795443589565.0 - 1.169));
        assert_eq!(first.heap_before_bytes, Some(6 << 20));
        assert_eq!(first.heap_after_bytes, Some(1 << 20));
        assert!(
            close(log.anchor_unix_ms.unwrap(), 1795443589530.0 - 3.0),
            "from `Using G1`"
        );
        let full = &log.events[9];
        assert!(close(full.pause_ms, 5.207));
        assert_eq!(full.heap_before_bytes, Some(60 << 20));
    }

    #[test]
    fn zgc_pauses_from_a_real_log() {
        let log = parse(ZGC);
        assert_eq!(log.unparsed_lines, 0, "{log:#?}");
        assert_eq!(log.events.len(), 9, "three pauses in each of three cycles");
        let kinds: Vec<&str> = log.events[..3].iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(
            kinds,
            ["Pause Mark Start", "Pause Mark End", "Pause Relocate Start"]
        );
        let total: f64 = log.events.iter().map(|e| e.pause_ms).sum();
        assert!(close(total, 0.078), "{total}");
        assert!(log.events.iter().all(|e| e.heap_before_bytes.is_none()));
        let last = log.events.last().unwrap();
        assert!(close(last.t_s, (1358.0 - 0.010) / 1000.0));
        assert!(close(last.unix_ms.unwrap(), 1795443601058.0 - 0.010));
    }

    #[test]
    fn decorations_in_any_order_and_the_defaults() {
        // Real lines: every time decoration at once, then the defaults, then uptimenanos.
        let all = "[2026-11-23T14:20:12.264+0000][2026-11-23T14:20:12.264+0000][0.046s][1795443612264ms][46ms][10841][10848][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M) 1.139ms";
        let Line::Pause(e, anchor) = parse_line(all) else {
            panic!("{all}")
        };
        assert!(close(e.t_s, (46.0 - 1.139) / 1000.0), "{e:?}");
        assert!(close(e.unix_ms.unwrap(), 1795443612264.0 - 1.139));
        assert_eq!(anchor, Some(1795443612264.0 - 46.0));
        assert_eq!(
            iso_unix_ms("2026-11-23T14:20:12.264+0000"),
            Some(1795443612264.0)
        );
        assert_eq!(
            iso_unix_ms("2026-11-23T15:20:12.264+0100"),
            Some(1795443612264.0)
        );
        assert_eq!(
            iso_unix_ms("2026-11-23T14:20:12.264Z"),
            Some(1795443612264.0)
        );
        let default =
            "[0.048s][info][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M) 1.2ms";
        let Line::Pause(e, None) = parse_line(default) else {
            panic!("{default}")
        };
        assert!(close(e.t_s, 0.0468) && e.unix_ms.is_none());
        let nanos = "[2026-11-23T14:20:12.651+0000][36718064ns][gc] GC(0) Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M) 1.169ms";
        let Line::Pause(e, _) = parse_line(nanos) else {
            panic!("{nanos}")
        };
        assert!(close(e.t_s, (36.718064 - 1.169) / 1000.0));
        assert!(close(e.unix_ms.unwrap(), 1795443612651.0 - 1.169));
    }

    #[test]
    fn other_lines_are_skipped_and_unknown_gc_lines_counted() {
        for other in [
            "listening on 8080",
            "[main] INFO starting",
            "[0.010s][info][gc,init] Heap Region Size: 1M",
            "[0.010s][debug][gc,phases] GC(3)   Something: 0.1ms",
            "[0.010s][info][safepoint] Safepoint \"G1CollectForAllocation\"",
        ] {
            assert_eq!(parse_line(other), Line::Other, "{other}");
        }
        for bad in [
            "[0.5s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 6M->1M(64M)",
            "[0.5s][info][gc] GC(1) Pause Young (Normal) 6X->1M(64M) 1.0ms",
            "[0.5s][info][gc] GC(1) Pause Young (Normal) 6M->1M 1.0ms",
            "[0.5s][info][gc] GC(1) Pause Young 6M->1M(64M) -1.0ms",
            "[0.5s][info][gc] GC(1) Pause 1.0ms",
            "[0.5s][info][gc] GC(1) Something new",
            "[info][gc] GC(1) Pause Remark 1M->1M(2M) 1.0ms",
            "[0.5s][info][gc] GC(1) Pause Remark 1M->1M(2M) 1e400ms",
        ] {
            assert_eq!(parse_line(bad), Line::Unparsed, "{bad}");
        }
        let log = parse(&format!(
            "{G1}\nnot a log line\n[0.9s][info][gc] GC(99) Pause\n"
        ));
        assert_eq!((log.events.len(), log.unparsed_lines), (10, 1));
    }

    #[test]
    fn truncated_and_garbled_lines_never_panic() {
        for text in [G1, ZGC] {
            for line in text.lines() {
                for end in 0..=line.len() {
                    if line.is_char_boundary(end) {
                        let _ = parse_line(&line[..end]);
                    }
                }
            }
        }
        for odd in [
            "[",
            "[]",
            "[0.1s",
            "[0.1s][gc] GC(",
            "[9999999999999999999999s][gc] Pause X 1ms",
            "[0.1s][gc] Pause (((( 1ms",
            "[0.1s][gc] Pause é(ü) 1ms",
            "[2026-13-01T00:00:00.000+0000][gc] Pause X 1ms",
            "[2026-01-01T00:00:00.é+0000][gc] Pause X 1ms",
        ] {
            let _ = parse(odd);
        }
    }

    #[test]
    fn the_option_selects_both_tag_sets_into_one_unrotated_file() {
        let opt = xlog_option(Path::new("/tmp/run 1/gc.log"));
        assert_eq!(
            opt,
            "-Xlog:gc=info,gc+phases=info:file=\"/tmp/run 1/gc.log\":uptime,timemillis,level,tags:filecount=0"
        );
    }
}

//! A JVM's collections seen through its counter file ([`super::hsperfdata`]), sampled with
//! the rest of the process tree (10 Hz by default). No flag on the JVM is needed.
//!
//! What it sees: per collector (`sun.gc.collector.N`: G1 young / full / concurrent-cycle
//! pauses, Parallel young / full, ZGC's cycle pauses) the invocations and the time spent,
//! and the generations' used and capacity bytes. What it cannot see: a single pause's
//! length when several fall in one sample (each gets the sample's average), nor when in the
//! sample it happened (its time is the sample's middle, ± half the interval). The allocation
//! is estimated from eden's occupancy (eden is taken as full at each young collection).

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::hsperfdata::{self, Snapshot};
use super::summary::Window;
use volley_model::result::gc::{CountersSpan, GcPause, GcPoint};

/// Where a JVM of the tree keeps its counter file: `/tmp/hsperfdata_USER/PID`, read through
/// `/proc/PID/root` so a JVM in another mount namespace is found too.
pub fn find(pids: &[i32]) -> Option<PathBuf> {
    pids.iter().find_map(|pid| {
        let tmp = PathBuf::from(format!("/proc/{pid}/root/tmp"));
        let ns_pid = namespace_pid(*pid).unwrap_or(*pid);
        fs::read_dir(&tmp).ok()?.flatten().find_map(|d| {
            let name = d.file_name();
            let dir = name.to_str()?;
            let file = tmp.join(dir).join(ns_pid.to_string());
            (dir.starts_with("hsperfdata_") && file.is_file()).then_some(file)
        })
    })
}

/// The pid inside the process's own pid namespace (`NSpid`'s last field).
fn namespace_pid(pid: i32) -> Option<i32> {
    let status = fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("NSpid:"))?;
    line.split_whitespace().last()?.parse().ok()
}

#[derive(Debug, Clone)]
struct Collector {
    name: String,
    invocations: i64,
    time_s: f64,
}

#[derive(Debug, Clone)]
struct Reading {
    t_s: f64,
    collectors: Vec<Collector>,
    eden_used: Option<i64>,
    eden_capacity: Option<i64>,
    heap_used: i64,
}

fn read(s: &Snapshot, t_s: f64) -> Reading {
    let collectors = (0..)
        .map_while(|k| {
            let p = format!("sun.gc.collector.{k}");
            Some(Collector {
                name: s.text(&format!("{p}.name"))?.to_string(),
                invocations: s.long(&format!("{p}.invocations"))?,
                time_s: s.seconds(&format!("{p}.time"))?,
            })
        })
        .collect();
    let heap_used = s
        .counters
        .keys()
        .filter(|k| {
            k.starts_with("sun.gc.generation.") && k.ends_with(".used") && k.contains(".space.")
        })
        .filter_map(|k| s.long(k))
        .sum();
    Reading {
        t_s,
        collectors,
        eden_used: s.long("sun.gc.generation.0.space.0.used"),
        eden_capacity: s.long("sun.gc.generation.0.space.0.capacity"),
        heap_used,
    }
}

/// A collector whose invocations are collections of their own (G1's concurrent-cycle pauses
/// are the remark and cleanup of a cycle, not collections).
fn is_collection(name: &str) -> bool {
    !name.contains("concurrent cycle pauses")
}

/// A collector whose time is stop-the-world (HotSpot names those `… pauses`).
fn is_pause(name: &str) -> bool {
    name.ends_with("pauses")
}

/// When a reading of the file began and ended, seconds from t0.
type ReadAt = (f64, f64);

/// The counter file of one JVM, sampled over the window.
#[derive(Debug)]
pub(crate) struct JvmCounters {
    path: PathBuf,
    /// t0: each reading is timed from it when it is taken, however late the sampler runs.
    origin: Instant,
    prev: Option<Reading>,
    /// The first and the latest reading that parsed (what the differences cover).
    first: Option<ReadAt>,
    last: Option<ReadAt>,
    window: Window,
    alloc: u64,
    alloc_known: bool,
    /// Wall-clock ms since the epoch when the JVM began (`sun.rt.createVmBeginTime`).
    pub vm_start_unix_ms: Option<f64>,
    failed: Option<String>,
    live: LiveGc,
}

/// A server's stop-the-world pauses since t0, as read so far (for live views): from a JVM's
/// counters or from the lines appended to its GC log.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct LiveGc {
    /// Pauses.
    pub pause_count: u64,
    /// Their total, ms.
    pub pause_total_ms: f64,
    /// The longest, ms (from counters: the mean pause of a reading's interval, as they give
    /// totals).
    pub pause_max_ms: f64,
}

impl JvmCounters {
    /// Reads the file once to check it and learn the runtime; `None` if it is not usable.
    /// Readings are timed from `origin` (t0).
    pub fn open(path: &Path, origin: Instant) -> Option<JvmCounters> {
        let snap = hsperfdata::parse(&fs::read(path).ok()?).ok()?;
        let vm = snap.text("java.property.java.vm.name").unwrap_or("JVM");
        let version = snap.text("java.property.java.vm.version").unwrap_or("");
        let policy = snap.text("sun.gc.policy.name");
        let window = Window {
            runtime: Some(match policy {
                Some(p) => format!("{vm} {version}, {p}"),
                None => format!("{vm} {version}"),
            }),
            ..Window::default()
        };
        Some(JvmCounters {
            path: path.to_path_buf(),
            origin,
            prev: None,
            first: None,
            last: None,
            window,
            alloc: 0,
            alloc_known: true,
            vm_start_unix_ms: snap.long("sun.rt.createVmBeginTime").map(|v| v as f64),
            failed: None,
            live: LiveGc::default(),
        })
    }

    /// Reads the file now (the first call is the window's first edge). A reading is placed
    /// at the middle of the read, timed as it happens: on a busy machine the sampler may run
    /// late, and the counts are those between the readings, whenever they were taken.
    pub fn sample(&mut self) {
        let began = self.origin.elapsed().as_secs_f64();
        let bytes = fs::read(&self.path);
        let ended = self.origin.elapsed().as_secs_f64();
        let snap = match bytes.map(|b| hsperfdata::parse(&b)) {
            Ok(Ok(s)) => s,
            Ok(Err(e)) => return self.fail(format!("{}: {e}", self.path.display())),
            // The JVM exited (its file is removed): the window ends at the last reading.
            Err(_) => return,
        };
        self.first.get_or_insert((began, ended));
        self.last = Some((began, ended));
        let now = read(&snap, (began + ended) / 2.0);
        if let Some(prev) = self.prev.take() {
            self.between(&prev, &now);
        }
        self.prev = Some(now);
    }

    fn fail(&mut self, why: String) {
        self.failed.get_or_insert(why);
    }

    fn between(&mut self, a: &Reading, b: &Reading) {
        let mid = ((a.t_s + b.t_s) / 2.0 * 1e3).round() / 1e3;
        let mut young = false;
        for (ca, cb) in a.collectors.iter().zip(&b.collectors) {
            let n = cb.invocations - ca.invocations;
            if n <= 0 {
                continue;
            }
            young |= ca.name.contains("young");
            if is_collection(&cb.name) {
                *self
                    .window
                    .collections_by_kind
                    .entry(cb.name.clone())
                    .or_default() += n as u64;
            }
            if is_pause(&cb.name) {
                let each = (cb.time_s - ca.time_s).max(0.0) * 1e3 / n as f64;
                let each = (each * 1e3).round() / 1e3;
                self.live.pause_count += n as u64;
                self.live.pause_total_ms += each * n as f64;
                self.live.pause_max_ms = self.live.pause_max_ms.max(each);
                for _ in 0..n.min(10_000) {
                    self.window.pauses.push(GcPause {
                        t_s: mid,
                        kind: cb.name.clone(),
                        pause_ms: each,
                        heap_before_bytes: None,
                        heap_after_bytes: None,
                    });
                }
                self.window.heap_after_gc.push(GcPoint {
                    t_s: b.t_s,
                    value: b.heap_used as f64,
                });
            }
        }
        self.add_alloc(a, b, young);
    }

    /// Eden's growth between readings; across a young collection, eden's remaining room
    /// before it (taken as filled) plus what it holds after.
    fn add_alloc(&mut self, a: &Reading, b: &Reading, young: bool) {
        let (Some(ua), Some(ub)) = (a.eden_used, b.eden_used) else {
            self.alloc_known = false;
            return;
        };
        let grown = if young {
            let cap = a.eden_capacity.unwrap_or(ua).max(ua);
            (cap - ua) + ub
        } else {
            (ub - ua).max(0)
        };
        let grown = grown.max(0) as u64;
        self.alloc += grown;
        let k = b.t_s.max(0.0) as usize;
        let by = &mut self.window.alloc_by_second;
        if by.len() <= k {
            by.resize(k + 1, 0);
        }
        by[k] += grown;
    }

    /// The pauses read so far.
    pub fn live(&self) -> LiveGc {
        self.live
    }

    /// The window's collections (after the last `sample`).
    pub fn finish(mut self) -> Window {
        if self.alloc_known && self.prev.is_some() {
            self.window.alloc_bytes = Some(self.alloc);
        } else {
            self.window.alloc_by_second.clear();
        }
        let mut note = String::from(
            "hsperfdata: per-sample totals; pauses that share a sample get its average, placed at the sample's middle",
        );
        if let Some(why) = self.failed {
            note.push_str(&format!("; some readings failed: {why}"));
        }
        self.window.note = Some(note);
        self.window.counters_span = span(self.first, self.last);
        self.window
    }
}

/// What the readings covered: from the first's start to the last's end, each edge known to
/// the longer of the two reads.
fn span(first: Option<ReadAt>, last: Option<ReadAt>) -> Option<CountersSpan> {
    let ((a0, a1), (b0, b1)) = (first?, last?);
    let us = |s: f64| (s * 1e6).round() / 1e6;
    Some(CountersSpan {
        from_s: us(a0),
        to_s: us(b1),
        edge_ms: ((a1 - a0).max(b1 - b0) * 1e6).round() / 1e3,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const JDK17_G1: &[u8] = include_bytes!("../../../../tests/fixtures/gc/hsperfdata-jdk17-g1.bin");

    #[test]
    fn a_g1_file_reads_its_collectors_and_heap() {
        let s = hsperfdata::parse(JDK17_G1).unwrap();
        let r = read(&s, 0.0);
        let names: Vec<&str> = r.collectors.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "G1 young collection pauses",
                "G1 full collection pauses",
                "G1 concurrent cycle pauses"
            ]
        );
        assert!(r.heap_used > 0 && r.eden_capacity.is_some());
        assert!(s.long("sun.rt.createVmBeginTime").unwrap() > 1_600_000_000_000);
    }

    #[test]
    fn collections_between_readings_become_pauses_at_the_sample_middle() {
        let coll = |inv: i64, t: f64| Collector {
            name: "G1 young collection pauses".into(),
            invocations: inv,
            time_s: t,
        };
        let conc = |inv: i64, t: f64| Collector {
            name: "G1 concurrent cycle pauses".into(),
            invocations: inv,
            time_s: t,
        };
        let r = |t_s, y, c, used| Reading {
            t_s,
            collectors: vec![y, c],
            eden_used: Some(used),
            eden_capacity: Some(100),
            heap_used: 500,
        };
        let mut j = JvmCounters {
            path: PathBuf::new(),
            origin: Instant::now(),
            prev: None,
            first: None,
            last: None,
            window: Window::default(),
            alloc: 0,
            alloc_known: true,
            vm_start_unix_ms: None,
            failed: None,
            live: LiveGc::default(),
        };
        j.between(
            &r(0.0, coll(3, 0.010), conc(0, 0.0), 40),
            &r(0.1, coll(5, 0.018), conc(1, 0.001), 10),
        );
        j.between(
            &r(0.1, coll(5, 0.018), conc(1, 0.001), 10),
            &r(0.2, coll(5, 0.018), conc(1, 0.001), 30),
        );
        j.prev = Some(r(0.2, coll(5, 0.018), conc(1, 0.001), 30));
        // What a live view reads meanwhile: the same pauses, as totals.
        let live = j.live();
        assert_eq!(live.pause_count, 3);
        assert!((live.pause_total_ms - 9.0).abs() < 1e-9, "{live:?}");
        assert!((live.pause_max_ms - 4.0).abs() < 1e-9, "{live:?}");
        let w = j.finish();
        assert_eq!(w.pauses.len(), 3, "two young pauses and a remark");
        assert!((w.pauses[0].pause_ms - 4.0).abs() < 1e-9);
        assert!((w.pauses[0].t_s - 0.05).abs() < 1e-9);
        assert_eq!(w.collections_by_kind["G1 young collection pauses"], 2);
        assert!(!w
            .collections_by_kind
            .contains_key("G1 concurrent cycle pauses"));
        // 60 left in eden then 10 after the collection, then 20 more.
        assert_eq!(w.alloc_bytes, Some(90));
    }
}

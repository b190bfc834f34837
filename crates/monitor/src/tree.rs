//! Window accounting over a process tree, pure: snapshots of the tree go in, totals since the
//! window's start come out ([`Accountant`]). Reading /proc is the sampler's job (`server.rs`).
//! The rules are docs/contract.md, "Server monitor": CPU and I/O counters (`utime + cutime`,
//! `stime + cstime`, /proc/PID/io) count from their baseline value (from 0 for a process born
//! later), and a child reaped inside the tree counts once, through its parent; context switches
//! count per thread (the process-level numbers are the main thread's only).

use std::collections::{BTreeSet, HashMap};

use super::procfs::{CtxSwitches, IoCounters};

/// Identity of a process: pids are reused, pid + start time is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ProcKey {
    /// Process id.
    pub pid: i32,
    /// Start time after boot, clock ticks (field 22 of /proc/PID/stat).
    pub starttime_ticks: u64,
}

/// Counters of one process that only grow while it lives (children it reaped included).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cumulative {
    /// utime + cutime, clock ticks.
    pub user_ticks: u64,
    /// stime + cstime, clock ticks.
    pub sys_ticks: u64,
    /// /proc/PID/io (zero when unreadable).
    pub io: IoCounters,
}

impl Cumulative {
    fn to_array(self) -> [u64; 6] {
        [
            self.user_ticks,
            self.sys_ticks,
            self.io.calls_read,
            self.io.calls_write,
            self.io.bytes_read,
            self.io.bytes_written,
        ]
    }

    fn from_array(a: [u64; 6]) -> Self {
        Cumulative {
            user_ticks: a[0],
            sys_ticks: a[1],
            io: IoCounters {
                calls_read: a[2],
                calls_write: a[3],
                bytes_read: a[4],
                bytes_written: a[5],
            },
        }
    }
}

/// One thread in one snapshot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TaskReading {
    /// Thread id.
    pub tid: i32,
    /// Its context switches so far (`None` on kernels that do not report them).
    pub ctx: Option<CtxSwitches>,
}

/// One process in one snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcReading {
    /// Which process.
    pub key: ProcKey,
    /// Its parent.
    pub ppid: i32,
    /// A zombie: it has exited but its parent has not reaped it yet.
    pub exited: bool,
    /// Counters so far.
    pub cumulative: Cumulative,
    /// Resident set size.
    pub rss_bytes: u64,
    /// Threads.
    pub threads: u64,
    /// Open descriptors, when read.
    pub fds: Option<u64>,
    /// Its threads.
    pub tasks: Vec<TaskReading>,
}

/// The tree at one instant.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Snapshot {
    /// Every process of the tree that could be read.
    pub procs: Vec<ProcReading>,
}

/// Point-in-time sums of one snapshot (live processes only).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Point {
    /// Live (not exited) processes.
    pub processes: u64,
    /// Threads of live processes.
    pub threads: u64,
    /// Σ RSS (pages shared between processes count once per process).
    pub rss_bytes: u64,
    /// Σ open descriptors, when every process's count was read.
    pub fds: Option<u64>,
}

/// Totals since the baseline.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WindowTotals {
    /// User CPU, clock ticks.
    pub user_ticks: u64,
    /// System CPU, clock ticks.
    pub sys_ticks: u64,
    /// /proc/PID/io deltas.
    pub io: IoCounters,
    /// Context switches over every thread seen.
    pub ctx: CtxSwitches,
}

/// A process of the tree that ended.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Exit {
    /// Its pid.
    pub pid: i32,
    /// When it was first seen exited or gone, seconds from the baseline.
    pub t_s: f64,
}

#[derive(Debug, Clone, Copy)]
struct Track {
    first: [u64; 6],
    last: [u64; 6],
    ppid: i32,
    exited: bool,
}

#[derive(Debug, Clone, Copy)]
struct ThreadTrack {
    first: CtxSwitches,
    last: CtxSwitches,
}

/// At most this many pids are listed (fork-per-request servers would grow the list forever).
pub(crate) const MAX_PIDS_LISTED: usize = 256;
/// At most this many exits are remembered one by one; the rest are only counted.
pub(crate) const MAX_EXITS_LISTED: usize = 16;

/// Window accounting over a process tree.
#[derive(Debug)]
pub struct Accountant {
    procs: HashMap<ProcKey, Track>,
    threads: HashMap<(ProcKey, i32), ThreadTrack>,
    retired: [i128; 6],
    retired_ctx: CtxSwitches,
    pids: BTreeSet<i32>,
    pids_dropped: u64,
    exits: Vec<Exit>,
    exits_total: u64,
    max: Point,
}

fn sub_ctx(a: CtxSwitches, b: CtxSwitches) -> CtxSwitches {
    CtxSwitches {
        voluntary: a.voluntary.saturating_sub(b.voluntary),
        involuntary: a.involuntary.saturating_sub(b.involuntary),
    }
}

impl Accountant {
    /// Starts the window at `baseline`: everything in it counts from its current value.
    pub fn new(baseline: &Snapshot) -> Self {
        let mut a = Accountant {
            procs: HashMap::new(),
            threads: HashMap::new(),
            retired: [0; 6],
            retired_ctx: CtxSwitches::default(),
            pids: BTreeSet::new(),
            pids_dropped: 0,
            exits: Vec::new(),
            exits_total: 0,
            max: Point::default(),
        };
        a.apply(baseline, 0.0, true);
        a
    }

    /// Adds a snapshot taken `t_s` seconds after the baseline; returns its point-in-time sums.
    pub(crate) fn update(&mut self, snap: &Snapshot, t_s: f64) -> Point {
        self.apply(snap, t_s, false)
    }

    fn note_exit(&mut self, pid: i32, t_s: f64) {
        self.exits_total += 1;
        if self.exits.len() < MAX_EXITS_LISTED {
            self.exits.push(Exit { pid, t_s });
        }
    }

    fn apply(&mut self, snap: &Snapshot, t_s: f64, baseline: bool) -> Point {
        let mut point = Point {
            fds: Some(0),
            ..Point::default()
        };
        let mut seen_threads = std::collections::HashSet::new();
        for r in &snap.procs {
            self.track_process(r, t_s, baseline, &mut point);
            self.track_threads(r, baseline, &mut seen_threads);
        }
        if snap.procs.is_empty() {
            point.fds = None;
        }
        self.retire_gone_processes(snap, t_s);
        self.retire_gone_threads(&seen_threads);
        self.max.processes = self.max.processes.max(point.processes);
        self.max.threads = self.max.threads.max(point.threads);
        self.max.rss_bytes = self.max.rss_bytes.max(point.rss_bytes);
        self.max.fds = match (self.max.fds, point.fds) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
        point
    }

    /// One process of a snapshot: its counters (from 0 when it was born in the window), its
    /// exit, and what it adds to the point's gauges while alive.
    fn track_process(&mut self, r: &ProcReading, t_s: f64, baseline: bool, point: &mut Point) {
        let now = r.cumulative.to_array();
        if !self.procs.contains_key(&r.key) {
            if self.pids.len() < MAX_PIDS_LISTED {
                self.pids.insert(r.key.pid);
            } else if !self.pids.contains(&r.key.pid) {
                self.pids_dropped += 1;
            }
        }
        let track = self.procs.entry(r.key).or_insert(Track {
            first: if baseline { now } else { [0; 6] },
            last: now,
            ppid: r.ppid,
            exited: false,
        });
        // Counters never go back; a smaller value is a read race, keep the larger one.
        for (l, n) in track.last.iter_mut().zip(now) {
            *l = (*l).max(n);
        }
        track.ppid = r.ppid;
        let newly_exited = r.exited && !track.exited;
        track.exited |= r.exited;
        if newly_exited {
            self.note_exit(r.key.pid, t_s);
        }
        if !r.exited {
            point.processes += 1;
            point.threads += r.threads;
            point.rss_bytes += r.rss_bytes;
            point.fds = match (point.fds, r.fds) {
                (Some(a), Some(b)) => Some(a + b),
                _ => None,
            };
        }
    }

    /// The context switches of every thread of a process (from 0 for threads born in the window).
    fn track_threads(
        &mut self,
        r: &ProcReading,
        baseline: bool,
        seen: &mut std::collections::HashSet<(ProcKey, i32)>,
    ) {
        for t in &r.tasks {
            let Some(ctx) = t.ctx else { continue };
            let key = (r.key, t.tid);
            seen.insert(key);
            let tt = self.threads.entry(key).or_insert(ThreadTrack {
                first: if baseline {
                    ctx
                } else {
                    CtxSwitches::default()
                },
                last: ctx,
            });
            tt.last = CtxSwitches {
                voluntary: tt.last.voluntary.max(ctx.voluntary),
                involuntary: tt.last.involuntary.max(ctx.involuntary),
            };
        }
    }

    /// Processes gone since the last snapshot: what they used moves into the retired totals.
    ///
    /// When a child is reaped, the kernel adds its lifetime totals to its parent's
    /// `cutime`/`cstime`/io: so when a child vanishes while its parent is still in the tree,
    /// its last reading is subtracted again, which leaves exactly its in-window share counted
    /// once, including what it used after its last sample.
    fn retire_gone_processes(&mut self, snap: &Snapshot, t_s: f64) {
        let present: HashMap<i32, bool> =
            snap.procs.iter().map(|r| (r.key.pid, r.exited)).collect();
        let current: BTreeSet<ProcKey> = snap.procs.iter().map(|r| r.key).collect();
        let gone: Vec<ProcKey> = self
            .procs
            .keys()
            .filter(|k| !current.contains(k))
            .copied()
            .collect();
        for k in gone {
            let t = self.procs.remove(&k).expect("listed above");
            // Reaped by a parent that is still in the tree (and alive, so able to reap): its
            // lifetime totals moved into that parent's counters.
            let reaped_inside = present.get(&t.ppid) == Some(&false);
            for i in 0..6 {
                let mut c = t.last[i] as i128 - t.first[i] as i128;
                if reaped_inside {
                    c -= t.last[i] as i128;
                }
                self.retired[i] += c;
            }
            if !t.exited {
                self.note_exit(k.pid, t_s);
            }
        }
    }

    /// Threads gone since the last snapshot: their switches move into the retired totals
    /// (each thread ever seen counts last − first), so memory follows the live threads, not
    /// their history.
    fn retire_gone_threads(&mut self, seen: &std::collections::HashSet<(ProcKey, i32)>) {
        let gone: Vec<(ProcKey, i32)> = self
            .threads
            .keys()
            .filter(|k| !seen.contains(*k))
            .copied()
            .collect();
        for k in gone {
            let t = self.threads.remove(&k).expect("listed above");
            let d = sub_ctx(t.last, t.first);
            self.retired_ctx.voluntary += d.voluntary;
            self.retired_ctx.involuntary += d.involuntary;
        }
    }

    /// Totals since the baseline.
    pub fn totals(&self) -> WindowTotals {
        let mut sum = self.retired;
        for t in self.procs.values() {
            for (i, s) in sum.iter_mut().enumerate() {
                *s += t.last[i] as i128 - t.first[i] as i128;
            }
        }
        let mut ctx = self.retired_ctx;
        for t in self.threads.values() {
            let d = sub_ctx(t.last, t.first);
            ctx.voluntary += d.voluntary;
            ctx.involuntary += d.involuntary;
        }
        let c = Cumulative::from_array(sum.map(|v| v.clamp(0, u64::MAX as i128) as u64));
        WindowTotals {
            user_ticks: c.user_ticks,
            sys_ticks: c.sys_ticks,
            io: c.io,
            ctx,
        }
    }

    /// The largest point-in-time sums seen.
    pub(crate) fn max(&self) -> Point {
        self.max
    }

    /// Every pid seen (at most `MAX_PIDS_LISTED`) and how many more there were.
    pub(crate) fn pids(&self) -> (Vec<i32>, u64) {
        (self.pids.iter().copied().collect(), self.pids_dropped)
    }

    /// Processes that ended (the first `MAX_EXITS_LISTED`) and how many in all.
    pub(crate) fn exits(&self) -> (&[Exit], u64) {
        (&self.exits, self.exits_total)
    }

    /// Processes currently tracked (alive or zombie).
    #[cfg(test)]
    pub(crate) fn tracked(&self) -> Vec<ProcKey> {
        let mut v: Vec<ProcKey> = self.procs.keys().copied().collect();
        v.sort();
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(pid: i32) -> ProcKey {
        ProcKey {
            pid,
            starttime_ticks: pid as u64 * 10,
        }
    }

    fn proc_(pid: i32, ppid: i32, user: u64, sys: u64, tasks: &[(i32, u64, u64)]) -> ProcReading {
        ProcReading {
            key: key(pid),
            ppid,
            exited: false,
            cumulative: Cumulative {
                user_ticks: user,
                sys_ticks: sys,
                io: IoCounters {
                    calls_read: user,
                    ..Default::default()
                },
            },
            rss_bytes: 1000,
            threads: tasks.len() as u64,
            fds: Some(5),
            tasks: tasks
                .iter()
                .map(|&(tid, v, i)| TaskReading {
                    tid,
                    ctx: Some(CtxSwitches {
                        voluntary: v,
                        involuntary: i,
                    }),
                })
                .collect(),
        }
    }

    fn snap(procs: Vec<ProcReading>) -> Snapshot {
        Snapshot { procs }
    }

    #[test]
    fn deltas_from_the_baseline_and_from_zero_for_newcomers() {
        let mut a = Accountant::new(&snap(vec![proc_(10, 1, 100, 50, &[(10, 7, 1)])]));
        assert_eq!(a.totals(), WindowTotals::default());
        // The process uses 5+3 ticks; a child is born and uses 2+1; a new thread switches 4 times.
        let p = a.update(
            &snap(vec![
                proc_(10, 1, 105, 53, &[(10, 9, 1), (11, 4, 0)]),
                proc_(20, 10, 2, 1, &[(20, 1, 1)]),
            ]),
            0.1,
        );
        assert_eq!(
            (p.processes, p.threads, p.rss_bytes, p.fds),
            (2, 3, 2000, Some(10))
        );
        let t = a.totals();
        assert_eq!((t.user_ticks, t.sys_ticks), (7, 4));
        assert_eq!((t.ctx.voluntary, t.ctx.involuntary), (2 + 4 + 1, 1));
        assert_eq!(t.io.calls_read, 7);
        assert_eq!(a.pids(), (vec![10, 20], 0));
    }

    #[test]
    fn a_reaped_child_counts_once_including_its_last_moments() {
        // Child 20 exists at the baseline with 40 ticks of user time (not in the window).
        let mut a = Accountant::new(&snap(vec![
            proc_(10, 1, 100, 0, &[(10, 0, 0)]),
            proc_(20, 10, 40, 0, &[(20, 0, 0)]),
        ]));
        a.update(
            &snap(vec![
                proc_(10, 1, 100, 0, &[(10, 0, 0)]),
                proc_(20, 10, 50, 0, &[(20, 3, 0)]),
            ]),
            0.1,
        );
        assert_eq!(a.totals().user_ticks, 10);
        // The child used 5 more ticks after that sample, exited and was reaped: the parent's
        // cutime grew by its lifetime total, 55.
        a.update(&snap(vec![proc_(10, 1, 155, 0, &[(10, 0, 0)])]), 0.2);
        let t = a.totals();
        assert_eq!(t.user_ticks, 15, "in-window share of the child: 55 - 40");
        // Its thread's switches stay counted.
        assert_eq!(t.ctx.voluntary, 3);
        assert_eq!(a.exits().0, &[Exit { pid: 20, t_s: 0.2 }]);
    }

    #[test]
    fn a_child_born_and_reaped_between_samples_is_still_counted() {
        let mut a = Accountant::new(&snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0)])]));
        // Never seen: only the parent's cutime tells.
        a.update(&snap(vec![proc_(10, 1, 8, 2, &[(10, 0, 0)])]), 0.1);
        assert_eq!((a.totals().user_ticks, a.totals().sys_ticks), (8, 2));
    }

    #[test]
    fn a_zombie_then_reaped_is_not_double_counted() {
        let mut a = Accountant::new(&snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0)])]));
        let mut z = proc_(20, 10, 6, 0, &[(20, 1, 0)]);
        z.exited = true;
        let p = a.update(&snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0)]), z]), 0.1);
        assert_eq!(p.processes, 1, "a zombie is not a live process");
        assert_eq!(a.totals().user_ticks, 6);
        assert_eq!(a.exits().0, &[Exit { pid: 20, t_s: 0.1 }]);
        a.update(&snap(vec![proc_(10, 1, 6, 0, &[(10, 0, 0)])]), 0.2);
        assert_eq!(a.totals().user_ticks, 6);
        assert_eq!(a.exits().1, 1, "the exit is noted once");
    }

    #[test]
    fn the_root_dying_keeps_what_it_used() {
        // Its parent (pid 1) is outside the tree: nothing moves into a tracked counter.
        let mut a = Accountant::new(&snap(vec![proc_(10, 1, 100, 100, &[(10, 5, 5)])]));
        a.update(&snap(vec![proc_(10, 1, 130, 110, &[(10, 9, 6)])]), 0.1);
        a.update(&snap(vec![]), 0.2);
        let t = a.totals();
        assert_eq!((t.user_ticks, t.sys_ticks), (30, 10));
        assert_eq!((t.ctx.voluntary, t.ctx.involuntary), (4, 1));
        assert_eq!(a.exits().0, &[Exit { pid: 10, t_s: 0.2 }]);
        assert!(a.tracked().is_empty());
        assert_eq!(a.max().processes, 1);
    }

    #[test]
    fn a_reused_pid_is_a_new_process() {
        let mut a = Accountant::new(&snap(vec![
            proc_(10, 1, 0, 0, &[]),
            proc_(20, 10, 50, 0, &[]),
        ]));
        let mut reused = proc_(20, 10, 3, 0, &[]);
        reused.key.starttime_ticks += 1;
        // Pid 20 exited (reaped by 10, whose cutime grew by 50) and a new pid 20 started.
        a.update(&snap(vec![proc_(10, 1, 50, 0, &[]), reused]), 0.1);
        assert_eq!(a.totals().user_ticks, 3);
    }

    #[test]
    fn threads_that_end_are_folded_and_forgotten() {
        let mut a = Accountant::new(&snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0)])]));
        for i in 0..1000 {
            let tid = 100 + i;
            a.update(
                &snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0), (tid, 2, 1)])]),
                i as f64,
            );
        }
        a.update(&snap(vec![proc_(10, 1, 0, 0, &[(10, 0, 0)])]), 1000.0);
        assert_eq!(a.totals().ctx.voluntary, 2000);
        assert_eq!(a.totals().ctx.involuntary, 1000);
        assert_eq!(a.threads.len(), 1, "only live threads are kept");
    }
}

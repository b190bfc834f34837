//! `--profile-off-cpu`: where the monitored tree's threads waited (docs/contract.md,
//! "Profile"). Per thread of the tree at the start and per CPU, a context-switch event
//! (`PERF_COUNT_SW_CONTEXT_SWITCHES`, a sample at every switch-out, inherited by the threads
//! and processes created later) with `PERF_RECORD_SWITCH` records; the events of one CPU write
//! into one ring. The sample's stack is where the thread blocked; the thread's next switch-in
//! says for how long. Rings are read one after another, so the records are paired per thread
//! in time order once they are old enough for every ring to have been read (`Pairer`).

use std::collections::HashMap;
use std::io;
use std::os::fd::{AsRawFd, OwnedFd};

use super::records::{Record, SAMPLE_TYPE};
use super::ring::{self, Ring};
use super::{symbols, unwind, Gathered, StackKey, MAX_STACKS, RING_PAGES};
use crate::perf::{open, PerfEventAttr};
use volley_model::result::profile::OffCpuInfo;

/// Threads followed at most from the start (each costs a descriptor per CPU); the rest, and
/// those whose events could not be opened (out of descriptors), are counted in
/// `threads_unfollowed`. Threads created later follow their creator's event.
pub(crate) const MAX_THREADS: usize = 4096;
/// Descriptors at most over all CPUs (threads × CPUs).
const MAX_FDS: usize = 16_384;
/// Records this much older than the reader's clock have been written to every ring (ns).
pub(crate) const SETTLE_NS: u64 = 200_000_000;
/// Switch records waiting for their turn at most; beyond, the older half is paired at once.
const MAX_PENDING: usize = 1_000_000;
/// Threads whose state is kept at most (threads seen beyond are counted in `unpaired`).
const MAX_TIDS: usize = 100_000;
/// The frame a wait begins with when its thread was preempted (run-queue wait, not blocking).
pub(crate) const PREEMPTED: &str = "[preempted]";

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CONTEXT_SWITCHES: u64 = 3;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const FLAG_CONTEXT_SWITCH: u64 = 1 << 26;

/// The events opened: one ring per CPU, the other descriptors writing into them.
pub(crate) struct Events {
    pub rings: Vec<Ring>,
    pub redirected: Vec<OwnedFd>,
    pub threads: u64,
    pub unfollowed: u64,
}

impl Events {
    /// Every descriptor, to enable and disable.
    pub(crate) fn raw_fds(&self) -> Vec<i32> {
        let rings = self.rings.iter().map(Ring::raw_fd);
        rings
            .chain(self.redirected.iter().map(AsRawFd::as_raw_fd))
            .collect()
    }
}

fn attr() -> PerfEventAttr {
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
    PerfEventAttr {
        type_: PERF_TYPE_SOFTWARE,
        size: size_of::<PerfEventAttr>() as u32,
        config: PERF_COUNT_SW_CONTEXT_SWITCHES,
        sample_period: 1,
        sample_type: SAMPLE_TYPE,
        flags: FLAG_DISABLED
            | FLAG_INHERIT
            | FLAG_WATERMARK
            | FLAG_SAMPLE_ID_ALL
            | FLAG_USE_CLOCKID
            | FLAG_CONTEXT_SWITCH,
        wakeup_events: (page * RING_PAGES / 4) as u32,
        sample_regs_user: unwind::REGS_MASK,
        sample_stack_user: unwind::STACK_BYTES,
        clockid: libc::CLOCK_MONOTONIC,
        ..Default::default()
    }
}

/// The threads of `pids` now, at most `max` (and how many more there were).
fn threads_of(pids: &[u32], max: usize) -> (Vec<i32>, u64) {
    let mut tids = Vec::new();
    let mut more = 0;
    for pid in pids {
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            match t.file_name().to_str().and_then(|n| n.parse().ok()) {
                Some(tid) if tids.len() < max => tids.push(tid),
                Some(_) => more += 1,
                None => {}
            }
        }
    }
    (tids, more)
}

/// Opens the context-switch events on every thread of `pids` and every CPU (disabled).
pub(crate) fn open_events(pids: &[u32], cpus: i32) -> Result<Events, String> {
    let max = MAX_THREADS.min(MAX_FDS / cpus.max(1) as usize);
    let (tids, more) = threads_of(pids, max);
    let attr = attr();
    let mut ev = Events {
        rings: Vec::new(),
        redirected: Vec::new(),
        threads: 0,
        unfollowed: more,
    };
    // Per thread: followed, exited since it was listed, or not followed (its event failed).
    let (followed, gone, failed) = (0u8, 1u8, 2u8);
    let mut state = vec![followed; tids.len()];
    for cpu in 0..cpus {
        let mut ring: Option<Ring> = None;
        for (k, &tid) in tids.iter().enumerate() {
            if state[k] != followed {
                continue;
            }
            let opened = open(&attr, tid, cpu).and_then(|fd| match &ring {
                None => Ring::map(fd, RING_PAGES).map(|r| ring = Some(r)),
                Some(r) => {
                    ring::set_output(fd.as_raw_fd(), r.raw_fd()).map(|()| ev.redirected.push(fd))
                }
            });
            let nothing_yet = ev.rings.is_empty() && ring.is_none();
            match opened.map_err(|e| (e.raw_os_error(), e)) {
                Ok(()) => {}
                Err((Some(libc::ESRCH), _)) => state[k] = gone,
                // Refused before anything opened: the kernel's answer for every thread.
                Err((Some(c), e)) if nothing_yet && c != libc::EMFILE && c != libc::ENFILE => {
                    return Err(refusal(&e))
                }
                Err(_) => state[k] = failed,
            }
        }
        ev.rings.extend(ring);
    }
    let count = |s: u8| state.iter().filter(|v| **v == s).count() as u64;
    ev.threads = count(followed);
    ev.unfollowed += count(failed);
    Ok(ev)
}

fn refusal(e: &io::Error) -> String {
    format!(
        "--profile-off-cpu: {}",
        crate::perf::open_error_reason(e)
            .replace(
                "counting another process's syscalls",
                "sampling other processes' context switches"
            )
            .replace("counting tracepoints", "context-switch events")
    )
}

/// CLOCK_MONOTONIC now, ns: the events' clock.
pub(crate) fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: writes the current time into `ts`, which we own.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// One thread's event: its stack as it switched out (an id of `OffCpu::keys`), the switch
/// out (preempted or not), the switch back in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ev {
    Stack(u32),
    Out { preempted: bool },
    In,
}

impl Ev {
    /// At the same time a sample comes before its switch-out record, which comes before an
    /// in.
    fn order(self) -> u8 {
        match self {
            Ev::Stack(_) => 0,
            Ev::Out { .. } => 1,
            Ev::In => 2,
        }
    }
}

/// A thread between its events: the stack of its last sample, the switch-out not yet paired.
#[derive(Debug, Default)]
struct Thread {
    stack: Option<u32>,
    out: Option<(u64, bool, Option<u32>)>,
}

/// Pairs each thread's switch-out (and the stack sampled with it) with its next switch-in,
/// in time order whatever order the rings were read in.
#[derive(Debug, Default)]
pub(crate) struct Pairer {
    /// (time, order, tid, event) not yet old enough to be paired.
    pending: Vec<(u64, u8, u32, Ev)>,
    threads: HashMap<u32, Thread>,
    /// (stack, preempted) → (waits, Σ ns).
    pub waits: HashMap<(u32, bool), (u64, u64)>,
    /// Waits without their stack (a sample lost or dropped), or threads beyond the bound.
    pub unpaired: u64,
}

impl Pairer {
    pub(crate) fn push(&mut self, time: u64, tid: u32, ev: Ev) {
        self.pending.push((time, ev.order(), tid, ev));
        if self.pending.len() > MAX_PENDING {
            self.pending.sort_unstable_by_key(|p| (p.0, p.1));
            let half: Vec<_> = self.pending.drain(..MAX_PENDING / 2).collect();
            half.into_iter()
                .for_each(|(t, _, tid, ev)| self.apply(t, tid, ev));
        }
    }

    /// Pairs every event up to `upto` (ns), in time order.
    pub(crate) fn settle(&mut self, upto: u64) {
        self.pending.sort_unstable_by_key(|p| (p.0, p.1));
        let n = self.pending.partition_point(|p| p.0 <= upto);
        let ready: Vec<_> = self.pending.drain(..n).collect();
        ready
            .into_iter()
            .for_each(|(t, _, tid, ev)| self.apply(t, tid, ev));
    }

    fn apply(&mut self, time: u64, tid: u32, ev: Ev) {
        if !self.threads.contains_key(&tid) && self.threads.len() >= MAX_TIDS {
            self.unpaired += u64::from(matches!(ev, Ev::In));
            return;
        }
        let t = self.threads.entry(tid).or_default();
        match ev {
            Ev::Stack(s) => t.stack = Some(s),
            Ev::Out { preempted } => {
                // An earlier switch-out never switched back in (its record was lost).
                self.unpaired += u64::from(t.out.is_some());
                t.out = Some((time, preempted, t.stack.take()));
            }
            Ev::In => {
                t.stack = None;
                match t.out.take() {
                    Some((at, preempted, Some(s))) if time >= at => {
                        let w = self.waits.entry((s, preempted)).or_default();
                        w.0 += 1;
                        w.1 += time - at;
                    }
                    Some(_) => self.unpaired += 1,
                    // Switched out before the window began.
                    None => {}
                }
            }
        }
    }
}

/// What the drain gathered of the off-CPU events.
#[derive(Default)]
pub(crate) struct OffCpu {
    /// The stacks threads switched out with, each once; `Ev::Stack` holds the index.
    keys: Vec<StackKey>,
    ids: HashMap<StackKey, u32>,
    pub pairer: Pairer,
    lost: u64,
    dropped: u64,
    pub threads: u64,
    pub unfollowed: u64,
}

impl Gathered {
    /// A record of an off-CPU ring.
    pub(super) fn take_off(&mut self, r: Record) {
        match r {
            Record::Sample {
                pid,
                tid,
                time,
                mut chain,
                user,
                ..
            } => {
                if let Some(u) = user {
                    self.unwind(pid, &mut chain, &u);
                }
                let off = &mut self.off;
                let key = (pid, chain.into_boxed_slice());
                let id = match off.ids.get(&key) {
                    Some(id) => *id,
                    None if off.keys.len() >= MAX_STACKS => {
                        off.dropped += 1;
                        return;
                    }
                    None => {
                        let id = off.keys.len() as u32;
                        off.ids.insert(key.clone(), id);
                        off.keys.push(key);
                        id
                    }
                };
                off.pairer.push(time, tid, Ev::Stack(id));
            }
            Record::Switch {
                tid,
                time,
                out,
                preempted,
                ..
            } => {
                let ev = if out { Ev::Out { preempted } } else { Ev::In };
                self.off.pairer.push(time, tid, ev);
            }
            Record::Lost { lost } => self.off.lost += lost,
            _ => {}
        }
    }
}

/// The off-CPU stacks named and folded (counts in µs of waiting), with their summary.
pub struct OffCpuProfile {
    /// `command;frame;…;leaf` → µs, root first, sorted; preempted waits begin `command;[preempted]`.
    pub folded: Vec<(String, u64)>,
    /// The summary (its `path` unset: the caller writes the folded file).
    pub info: OffCpuInfo,
}

/// A stack's waits: its callchain, whether preempted, Σ ns.
type Wait<'a> = (&'a [u64], bool, u64);

/// Names and folds the waits.
pub(super) fn fold(g: &Gathered, names: &symbols::Names, completed: u64) -> OffCpuProfile {
    let off = &g.off;
    let mut by_pid: HashMap<u32, Vec<Wait>> = HashMap::new();
    for ((id, preempted), (_, ns)) in &off.pairer.waits {
        let (pid, chain) = &off.keys[*id as usize];
        by_pid
            .entry(*pid)
            .or_default()
            .push((chain, *preempted, *ns));
    }
    let mut folded: HashMap<String, u64> = HashMap::new();
    let (mut blocked_ns, mut preempted_ns) = (0u64, 0u64);
    for (pid, stacks) in by_pid {
        let maps = g.maps.get(&pid).map_or(&[][..], Vec::as_slice);
        let chains: super::ProcStacks = stacks.iter().map(|s| (s.0, 1, s.2)).collect();
        let named = names.of(pid, maps, &super::lookups(&chains));
        let command = g.comms.get(&pid).cloned().unwrap_or(pid.to_string());
        for (chain, preempted, ns) in stacks {
            let (mut line, _) = super::stack_line(&command, chain, &named);
            if preempted {
                preempted_ns += ns;
                let at = line.find(';').unwrap_or(line.len());
                line.insert_str(at, &format!(";{PREEMPTED}"));
            } else {
                blocked_ns += ns;
            }
            *folded.entry(line).or_default() += ns;
        }
    }
    let mut folded: Vec<(String, u64)> = folded
        .into_iter()
        .map(|(s, ns)| (s, (ns + 500) / 1000))
        .filter(|(_, us)| *us > 0)
        .collect();
    folded.sort();
    let info = info(off, &folded, blocked_ns, preempted_ns, completed);
    OffCpuProfile { folded, info }
}

fn info(
    off: &OffCpu,
    folded: &[(String, u64)],
    blocked_ns: u64,
    preempted_ns: u64,
    completed: u64,
) -> OffCpuInfo {
    let blocked: Vec<(String, u64)> = folded
        .iter()
        .filter(|(s, _)| s.split(';').nth(1) != Some(PREEMPTED))
        .map(|(s, n)| (user_part(s), *n))
        .collect();
    let ms = |ns: u64| (ns as f64 / 1e4).round() / 100.0;
    OffCpuInfo {
        path: None,
        switches: off.pairer.waits.values().map(|w| w.0).sum(),
        blocked_ms: ms(blocked_ns),
        preempted_ms: ms(preempted_ns),
        blocked_us_per_request: (completed > 0)
            .then(|| super::round2(blocked_ns as f64 / 1000.0 / completed as f64)),
        threads: off.threads,
        threads_unfollowed: off.unfollowed,
        lost: off.lost,
        dropped: off.dropped,
        unpaired: off.pairer.unpaired,
        top: volley_model::result::profile::top(
            blocked.iter().map(|(s, n)| (s.as_str(), *n)),
            1.0,
            completed,
            super::TOP,
        ),
    }
}

/// A folded stack without its kernel frames (every wait ends in the scheduler, so the leaf
/// that tells waits apart is the program's last function before the kernel); a stack of
/// kernel frames alone keeps its last.
fn user_part(stack: &str) -> String {
    let frames: Vec<&str> = stack.split(';').collect();
    let user: Vec<&str> = frames
        .iter()
        .copied()
        .filter(|f| !f.ends_with("_[k]"))
        .collect();
    match user.len() {
        1 if frames.len() > 1 => format!("{};{}", frames[0], frames[frames.len() - 1]),
        _ => user.join(";"),
    }
}

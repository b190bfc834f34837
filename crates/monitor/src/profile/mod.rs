//! `--profile`: the monitored process tree's on-CPU stacks over the measured window
//! (docs/contract.md, "Profile"). One `cpu-clock` sampling event per CPU (`profile::ring`) opened
//! before the load and enabled at t0; a thread drains the rings into stacks counted per
//! process (`profile::records`); after the run the tree's stacks are named (`profile::symbols`) and folded
//! (Brendan Gregg's format: `command;root;…;leaf count`), with the functions that cost the most
//! per request. Stacks come from the kernel's frame-pointer walk: a binary built without frame
//! pointers gives shallow user stacks, which its process's `median_depth` shows. With
//! `--profile-off-cpu`, the same drain also reads where the tree's threads waited
//! (`profile::offcpu`).

pub(crate) mod jvm;
pub(crate) mod offcpu;
pub(crate) mod records;
pub(crate) mod ring;
mod spacing;
pub(crate) mod symbols;
pub(crate) mod unwind;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use records::{Record, CONTEXT_MAX};
use ring::Ring;
use spacing::Spacing;
use volley_model::result::profile::{JvmProfiling, ProfileInfo, ProfiledProcess, Unwinding};

pub use offcpu::OffCpuProfile;

/// Samples a second per CPU by default: odd, so it does not beat with timers of round
/// periods, and light (a sample costs the sampled thread a few µs).
pub const DEFAULT_FREQUENCY_HZ: u64 = 499;
/// Data pages of each CPU's ring (4 MiB at 4 KiB pages): some 500 samples with their 8 KiB
/// stack copies, a second at the default frequency when the reader is late.
const RING_PAGES: usize = 1024;
/// Distinct stacks kept; samples of further ones are counted as dropped (a bound on memory
/// whatever the server does).
const MAX_STACKS: usize = 200_000;
/// Side records (mappings, names, forks) of processes outside the tree kept at most.
const MAX_SIDE_RECORDS: usize = 100_000;
/// Functions in the result's top list.
const TOP: usize = 20;

/// A process's stack (its pid and its callchain, leaf first).
type StackKey = (u32, Box<[u64]>);
/// A stack's samples and the CPU time they stand for (Σ period, ns).
type Weight = (u64, u64);
/// One process's stacks: the callchain and its weight.
type ProcStacks<'a> = Vec<(&'a [u64], u64, u64)>;

/// What the drain thread gathered.
#[derive(Default)]
struct Gathered {
    /// (pid, callchain) → (samples, Σ period ns).
    stacks: HashMap<StackKey, Weight>,
    maps: HashMap<u32, Vec<symbols::Map>>,
    comms: HashMap<u32, String>,
    forks: Vec<(u32, u32)>,
    /// The tree at the start.
    initial: Vec<u32>,
    /// The tree as known so far (the start's, and what it forked): whose stacks are unwound.
    tree: HashSet<u32>,
    /// volley itself: its samples are left out at once.
    own: u32,
    unwinders: unwind::Unwinders,
    /// Per process: samples whose user stack came from the call-frame information, and from
    /// frame pointers.
    walks: HashMap<u32, (u64, u64)>,
    lost: u64,
    dropped: u64,
    /// Side records kept of processes outside the tree as known when they came.
    others: usize,
    /// `--profile-off-cpu`: the waits.
    off: offcpu::OffCpu,
}

impl Gathered {
    /// Replaces the user part of `chain` by the call-frame unwind of `u` when that goes deeper
    /// than the frame pointers did; whether it did.
    fn unwind(&mut self, pid: u32, chain: &mut Vec<u64>, u: &records::UserRegs) -> bool {
        let maps = self.maps.get(&pid).map_or(&[][..], Vec::as_slice);
        let stack = unwind::UserStack {
            ip: u.ip,
            sp: u.sp,
            bp: u.bp,
            stack: &u.stack,
        };
        let dwarf = self.unwinders.unwind(pid, maps, &stack);
        let user_at = chain.iter().position(|a| *a == records::CONTEXT_USER);
        let fp_depth = user_at.map_or(0, |i| chain.len() - i - 1);
        let deeper = dwarf.len() > fp_depth;
        if deeper {
            chain.truncate(user_at.unwrap_or(chain.len()));
            chain.push(records::CONTEXT_USER);
            chain.extend(dwarf);
        }
        deeper
    }

    /// Whether a side record of `pid` is kept: always for the tree as known so far; for other
    /// processes (whose records may precede the fork that makes them the tree's, from another
    /// CPU's ring) only up to [`MAX_SIDE_RECORDS`], so a busy machine cannot grow them without
    /// bound; the rest are counted in `dropped`.
    fn keep(&mut self, pid: u32) -> bool {
        if self.tree.contains(&pid) {
            return true;
        }
        self.others += 1;
        if self.others > MAX_SIDE_RECORDS {
            self.dropped += 1;
            return false;
        }
        true
    }

    /// Adds each process's unsampled CPU time (`Spacing`) to its stacks in proportion to their
    /// weights.
    fn spread(&mut self, unsampled: &HashMap<u32, u64>) {
        let mut sampled: HashMap<u32, u64> = HashMap::new();
        for ((pid, _), (_, p)) in &self.stacks {
            *sampled.entry(*pid).or_default() += p;
        }
        for ((pid, _), (_, p)) in self.stacks.iter_mut() {
            let (Some(&extra), Some(&total)) = (unsampled.get(pid), sampled.get(pid)) else {
                continue;
            };
            if total > 0 {
                *p += (*p as u128 * extra as u128 / total as u128) as u64;
            }
        }
    }

    fn take(&mut self, r: Record) {
        match r {
            Record::Sample {
                pid,
                mut chain,
                period,
                user,
                ..
            } if pid != 0 && pid != self.own => {
                if let Some(u) = user.filter(|_| self.tree.contains(&pid)) {
                    let dwarf = self.unwind(pid, &mut chain, &u);
                    let walks = self.walks.entry(pid).or_default();
                    *(if dwarf { &mut walks.0 } else { &mut walks.1 }) += 1;
                }
                let full = self.stacks.len() >= MAX_STACKS;
                let key = (pid, chain.into_boxed_slice());
                match self.stacks.get_mut(&key) {
                    Some(e) => {
                        e.0 += 1;
                        e.1 += period;
                    }
                    None if full => self.dropped += 1,
                    None => {
                        self.stacks.insert(key, (1, period));
                    }
                }
            }
            Record::Mmap {
                pid,
                addr,
                len,
                pgoff,
                path,
            } if self.keep(pid) => self.maps.entry(pid).or_default().push(symbols::Map {
                start: addr,
                end: addr.saturating_add(len),
                pgoff,
                path,
            }),
            Record::Comm { pid, tid, comm } if pid == tid && self.keep(pid) => {
                self.comms.insert(pid, comm);
            }
            Record::Fork { pid, ppid } if pid != ppid => {
                if self.tree.contains(&ppid) {
                    self.tree.insert(pid);
                }
                if self.keep(ppid) {
                    self.forks.push((pid, ppid))
                }
            }
            Record::Lost { lost } => self.lost += lost,
            _ => {}
        }
    }
}

/// A profiler of one process tree, running.
pub struct Profiler {
    root: u32,
    fds: Vec<i32>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Gathered>>,
    frequency_hz: u64,
    /// `--profile-off-cpu`'s descriptors that write into another's ring (kept open).
    _off_fds: Vec<std::os::fd::OwnedFd>,
    off_cpu: bool,
}

/// Why profiling cannot start, in words a user can act on.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProfileError(String);

impl Profiler {
    /// Opens a sampling event on every CPU (disabled) and starts draining them; the tree of
    /// `root` as it is now is noted (its mappings, its commands). `off_cpu` also opens the
    /// context-switch events of the tree's threads (`--profile-off-cpu`).
    pub fn start(root: i32, frequency_hz: u64, off_cpu: bool) -> Result<Profiler, ProfileError> {
        let cpus = online_cpus();
        let mut rings = Vec::new();
        for cpu in 0..cpus {
            let ring = Ring::open(cpu, frequency_hz, RING_PAGES).map_err(|e| {
                ProfileError(format!(
                    "--profile: {}",
                    crate::perf::open_error_reason(&e).replace(
                        "counting another process's syscalls",
                        "sampling other processes' stacks"
                    )
                ))
            })?;
            rings.push(ring);
        }
        let mut fds: Vec<i32> = rings.iter().map(Ring::raw_fd).collect();
        let initial = tree_now(root as u32);
        let off = match off_cpu {
            true => Some(offcpu::open_events(&initial, cpus).map_err(ProfileError)?),
            false => None,
        };
        fds.extend(off.iter().flat_map(offcpu::Events::raw_fds));
        let mut gathered = Gathered {
            tree: initial.iter().copied().collect(),
            initial,
            // volley's own samples are left out (unless it profiles itself, as a test does).
            own: Some(std::process::id())
                .filter(|me| *me != root as u32)
                .unwrap_or(0),
            ..Gathered::default()
        };
        let (off_rings, off_fds) = match off {
            Some(ev) => {
                gathered.off.threads = ev.threads;
                gathered.off.unfollowed = ev.unfollowed;
                (ev.rings, ev.redirected)
            }
            None => (Vec::new(), Vec::new()),
        };
        for &pid in &gathered.initial {
            let maps = symbols::proc_maps(pid);
            gathered.unwinders.add_modules(pid, &maps);
            gathered.maps.insert(pid, maps);
            if let Ok(c) = std::fs::read_to_string(format!("/proc/{pid}/comm")) {
                gathered.comms.insert(pid, c.trim().to_string());
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = std::thread::Builder::new()
            .name("volley-profile".into())
            .spawn(move || drain(rings, off_rings, flag, gathered))
            .map_err(|e| ProfileError(format!("--profile: no thread for it: {e}")))?;
        Ok(Profiler {
            root: root as u32,
            fds,
            stop,
            thread: Some(thread),
            frequency_hz,
            _off_fds: off_fds,
            off_cpu,
        })
    }

    /// Starts sampling (the window's start).
    pub fn enable(&self) {
        self.fds.iter().for_each(|fd| ring::set_enabled(*fd, true));
    }

    /// Stops sampling, then names and folds the tree's stacks; `completed` requests give the
    /// costs per request.
    pub fn finish(mut self, completed: u64) -> Profile {
        self.fds.iter().for_each(|fd| ring::set_enabled(*fd, false));
        self.stop.store(true, Ordering::SeqCst);
        let g = self
            .thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default();
        let mut p = fold(self.root, self.frequency_hz, &g, completed);
        if self.off_cpu {
            let off = offcpu::fold(&g, &symbols::Names::new(), completed);
            p.info.off_cpu = Some(off.info.clone());
            p.off_cpu = Some(off);
        }
        p
    }
}

impl Drop for Profiler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// The drain loop: every ring, whenever one has data (or every 50 ms), until stopped, then
/// once more; the off-CPU waits are paired once every ring has been read past them.
fn drain(
    mut rings: Vec<Ring>,
    mut off_rings: Vec<Ring>,
    stop: Arc<AtomicBool>,
    mut g: Gathered,
) -> Gathered {
    let mut spacing = Spacing::new(rings.len());
    let mut polls: Vec<libc::pollfd> = rings
        .iter()
        .chain(&off_rings)
        .map(|r| libc::pollfd {
            fd: r.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        let done = stop.load(Ordering::SeqCst);
        let read_at = offcpu::now_ns();
        for (cpu, r) in rings.iter_mut().enumerate() {
            r.drain(&mut |bytes| {
                if let Some(rec) = records::parse(bytes) {
                    spacing.follow(cpu, &rec);
                    g.take(rec);
                }
            });
        }
        for r in &mut off_rings {
            r.drain(&mut |bytes| {
                if let Some(rec) = records::parse(bytes) {
                    g.take_off(rec);
                }
            });
        }
        if done {
            g.off.pairer.settle(u64::MAX);
            g.spread(&spacing.unsampled);
            return g;
        }
        g.off
            .pairer
            .settle(read_at.saturating_sub(offcpu::SETTLE_NS));
        // SAFETY: `polls` is a valid array of pollfd for the ring descriptors we own.
        unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, 50) };
    }
}

/// CPUs to open an event on: those configured (an offline one fails to open and is left out
/// by the caller's error).
fn online_cpus() -> i32 {
    // SAFETY: sysconf has no preconditions.
    (unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }).max(1) as i32
}

/// `root` and its descendants now, from /proc.
fn tree_now(root: u32) -> Vec<u32> {
    let mut out = vec![root];
    let mut k = 0;
    while k < out.len() && out.len() < 4096 {
        let pid = out[k];
        let tasks = std::fs::read_dir(format!("/proc/{pid}/task"))
            .into_iter()
            .flatten()
            .flatten();
        for t in tasks {
            let path = t.path().join("children");
            let text = std::fs::read_to_string(path).unwrap_or_default();
            out.extend(
                crate::procfs::parse_children(&text)
                    .into_iter()
                    .map(|c| c as u32),
            );
        }
        k += 1;
    }
    out
}

/// A finished profile: the folded stacks and the summary the RunResult carries.
pub struct Profile {
    /// `command;frame;…;leaf` → samples, root first, sorted by stack.
    pub folded: Vec<(String, u64)>,
    /// The summary (its `path` unset: the caller writes the folded file).
    pub info: ProfileInfo,
    /// `--profile-off-cpu`: where the threads waited.
    pub off_cpu: Option<OffCpuProfile>,
}

impl Profile {
    /// The folded stacks as text, one `stack count` a line.
    pub fn folded_text(&self) -> String {
        folded_text(&self.folded)
    }
}

/// Folded stacks as text, one `stack count` a line.
pub fn folded_text(folded: &[(String, u64)]) -> String {
    let mut s = String::new();
    for (stack, n) in folded {
        s.push_str(stack);
        s.push(' ');
        s.push_str(&n.to_string());
        s.push('\n');
    }
    s
}

/// The processes of the tree by the end: its pids and those forked from them.
fn tree_members(root: u32, g: &Gathered) -> HashSet<u32> {
    let mut members: HashSet<u32> = tree_now(root).into_iter().collect();
    members.extend(g.initial.iter().copied());
    members.insert(root);
    // Forks in any order: repeat until nothing joins.
    loop {
        let before = members.len();
        for (pid, ppid) in &g.forks {
            if members.contains(ppid) {
                members.insert(*pid);
            }
        }
        if members.len() == before {
            return members;
        }
    }
}

/// Names and folds the tree's stacks.
fn fold(root: u32, frequency_hz: u64, g: &Gathered, completed: u64) -> Profile {
    let members = tree_members(root, g);
    let names = symbols::Names::new();
    let mut folded: HashMap<String, u64> = HashMap::new();
    let mut procs: HashMap<u32, ProcAcc> = HashMap::new();
    let (mut samples, mut period_ns) = (0u64, 0u64);
    let mut by_pid: HashMap<u32, ProcStacks> = HashMap::new();
    for ((pid, chain), (n, p)) in &g.stacks {
        if members.contains(pid) {
            by_pid.entry(*pid).or_default().push((chain, *n, *p));
        }
    }
    // Before naming: a JVM's perf map is written when asked.
    let mut jvms: HashMap<u32, JvmProfiling> = by_pid
        .keys()
        .filter(|pid| g.maps.get(pid).is_some_and(|m| jvm::is_jvm(m)))
        .map(|pid| (*pid, jvm::profile(*pid)))
        .collect();
    for (pid, stacks) in by_pid {
        let maps = g.maps.get(&pid).map_or(&[][..], Vec::as_slice);
        let addrs = lookups(&stacks);
        let named = names.of(pid, maps, &addrs);
        let command = g
            .comms
            .get(&pid)
            .cloned()
            .unwrap_or_else(|| pid.to_string());
        let acc = procs.entry(pid).or_insert_with(|| ProcAcc::new(&command));
        for (chain, n, p) in stacks {
            let (line, user_depth) = stack_line(&command, chain, &named);
            *folded.entry(line).or_default() += n;
            acc.add(n, user_depth);
            samples += n;
            period_ns += p;
        }
    }
    let mut folded: Vec<(String, u64)> = folded.into_iter().collect();
    folded.sort();
    let mean_period_us = if samples > 0 {
        period_ns as f64 / samples as f64 / 1000.0
    } else {
        1e6 / frequency_hz as f64
    };
    let info = ProfileInfo {
        path: None,
        event: "cpu-clock".into(),
        frequency_hz,
        samples,
        lost: g.lost,
        dropped: g.dropped,
        cpu_us_per_request: (completed > 0)
            .then(|| round2(period_ns as f64 / 1000.0 / completed as f64)),
        processes: procs_of(procs, &g.walks, &mut jvms),
        top: volley_model::result::profile::top(
            folded.iter().map(|(s, n)| (s.as_str(), *n)),
            mean_period_us,
            completed,
            TOP,
        ),
        off_cpu: None,
    };
    Profile {
        folded,
        info,
        off_cpu: None,
    }
}

/// The addresses to name, once each: a frame after the first of its context is a return
/// address, so the call is the byte before it.
fn lookups(stacks: &ProcStacks) -> Vec<u64> {
    let mut set = HashSet::new();
    for (chain, _, _) in stacks {
        for a in frames(chain) {
            set.insert(a);
        }
    }
    set.into_iter().collect()
}

/// A callchain's frames, leaf first, context markers left out and return addresses moved
/// back into their call.
fn frames(chain: &[u64]) -> impl Iterator<Item = u64> + '_ {
    let mut first = true;
    chain.iter().filter_map(move |&a| {
        if a >= CONTEXT_MAX {
            first = true;
            return None;
        }
        let a = if first { a } else { a.saturating_sub(1) };
        first = false;
        Some(a)
    })
}

/// `command;root;…;leaf` and how many user frames the stack had.
fn stack_line(command: &str, chain: &[u64], named: &HashMap<u64, String>) -> (String, usize) {
    let names: Vec<&str> = frames(chain)
        .map(|a| named.get(&a).map_or("[unknown]", String::as_str))
        .collect();
    let user = names.iter().filter(|n| !n.ends_with("_[k]")).count();
    let mut line = sanitize(command);
    for n in names.iter().rev() {
        line.push(';');
        line.push_str(&sanitize(n));
    }
    (line, user)
}

/// A frame name as the folded format can hold it: no `;` (the separator) and no newline.
fn sanitize(name: &str) -> String {
    name.replace([';', '\n', '\r'], ":")
}

/// One process's samples and the depths of its user stacks.
struct ProcAcc {
    command: String,
    samples: u64,
    depths: Vec<(usize, u64)>,
}

impl ProcAcc {
    fn new(command: &str) -> ProcAcc {
        ProcAcc {
            command: command.to_string(),
            samples: 0,
            depths: Vec::new(),
        }
    }

    fn add(&mut self, n: u64, depth: usize) {
        self.samples += n;
        self.depths.push((depth, n));
    }

    /// The median user-stack depth over the samples.
    fn median_depth(&mut self) -> u32 {
        self.depths.sort();
        let half = self.samples.div_ceil(2);
        let mut seen = 0;
        for (d, n) in &self.depths {
            seen += n;
            if seen >= half {
                return *d as u32;
            }
        }
        0
    }
}

/// The processes, most samples first; each walked by the call-frame information when most of
/// its samples were.
fn procs_of(
    procs: HashMap<u32, ProcAcc>,
    walks: &HashMap<u32, (u64, u64)>,
    jvms: &mut HashMap<u32, JvmProfiling>,
) -> Vec<ProfiledProcess> {
    let mut v: Vec<ProfiledProcess> = procs
        .into_iter()
        .map(|(pid, mut a)| ProfiledProcess {
            pid: pid as i32,
            median_depth: a.median_depth(),
            command: a.command,
            samples: a.samples,
            unwinding: match walks.get(&pid) {
                Some((dwarf, fp)) if dwarf > fp => Unwinding::Dwarf,
                _ => Unwinding::FramePointers,
            },
            jvm: jvms.remove(&pid),
        })
        .collect();
    v.sort_by(|a, b| b.samples.cmp(&a.samples).then(a.pid.cmp(&b.pid)));
    v
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

#[cfg(test)]
mod tests;

//! `server.profile` of a RunResult (`--profile`): where the monitored process tree's CPU went
//! during the measured window, sampled from its on-CPU stacks (docs/contract.md, "Profile").

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};

/// The profile's summary; the stacks themselves are the folded file at `path`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfileInfo {
    /// The folded stacks (Brendan Gregg's format), as written; null when none was written.
    pub path: Option<String>,
    /// The sampled event: `cpu-clock` (a software event: no hardware PMU needed).
    pub event: String,
    /// Samples a second per CPU asked for.
    pub frequency_hz: u64,
    /// Samples of the tree in the window.
    pub samples: u64,
    /// Records the kernel dropped because volley's reader fell behind (0 normally).
    pub lost: u64,
    /// Samples of stacks beyond the 200,000 distinct ones kept, and side records (mappings,
    /// names, forks) of other processes beyond the 100,000 kept (0 normally).
    #[serde(default)]
    pub dropped: u64,
    /// The sampled CPU time ÷ completed requests, µs: what the stacks below add up to (near
    /// `per_request.cpu_us`, which the kernel's counters give).
    pub cpu_us_per_request: Option<f64>,
    /// Each process of the tree that was sampled, most samples first.
    pub processes: Vec<ProfiledProcess>,
    /// The functions that cost the most, by self time (at most 20).
    pub top: Vec<FunctionCost>,
    /// `--profile-off-cpu`: where the tree's threads waited; absent without the flag.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<OffCpuInfo>,
}

/// Where the tree's threads waited off the CPU (`--profile-off-cpu`): each wait from a thread's
/// switch out to its switch back in, by the stack it switched out with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OffCpuInfo {
    /// The folded off-CPU stacks, counts in µs of waiting; null when none was written.
    pub path: Option<String>,
    /// Waits measured (switch-outs paired with their switch-in).
    pub switches: u64,
    /// Time the threads spent blocked (sleeping, waiting for I/O or a lock), ms.
    pub blocked_ms: f64,
    /// Time the threads spent preempted while runnable (waiting for a CPU), ms: apart from
    /// blocking, under `[preempted]` in the folded stacks.
    pub preempted_ms: f64,
    /// Blocked µs ÷ completed requests (null when nothing completed).
    pub blocked_us_per_request: Option<f64>,
    /// Threads of the tree followed from the start (threads created later follow them).
    pub threads: u64,
    /// Threads at the start not followed: beyond the bound (4,096, fewer above 4 CPUs), or
    /// their events could not be opened (out of descriptors).
    pub threads_unfollowed: u64,
    /// Records the kernel dropped because volley's reader fell behind.
    pub lost: u64,
    /// Waits of stacks beyond the 200,000 distinct ones kept.
    pub dropped: u64,
    /// Waits whose stack or switch-in was lost.
    pub unpaired: u64,
    /// The functions threads waited in most, blocked waits only, kernel frames left out (every
    /// wait ends in the scheduler: self is the program's last function before the kernel, a
    /// stack of kernel frames alone keeps its last): `top`'s shape, with µs of waiting for
    /// samples (`self_samples`, `total_samples`) and waiting µs per request.
    pub top: Vec<FunctionCost>,
}

/// One sampled process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProfiledProcess {
    /// Its pid.
    pub pid: i32,
    /// Its command name.
    pub command: String,
    /// Its samples.
    pub samples: u64,
    /// How its user stacks were walked.
    pub unwinding: Unwinding,
    /// The median depth of its user stacks: 1 or 2 for a binary built without frame
    /// pointers, whose stacks the frame-pointer walk cannot follow.
    pub median_depth: u32,
    /// A Java virtual machine: how its compiled Java code was named and walked (absent for
    /// other processes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jvm: Option<JvmProfiling>,
}

/// How a JVM's Java frames were seen: its compiled methods are named from the perf map volley
/// asks it for at the window's end (`jcmd PID Compiler.perfmap`), and their callers are walked
/// only when it runs with `-XX:+PreserveFramePointer`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JvmProfiling {
    /// Whether its command line or `JAVA_TOOL_OPTIONS` has `-XX:+PreserveFramePointer`.
    pub preserve_frame_pointer: bool,
    /// Whether `jcmd PID Compiler.perfmap` wrote its perf map.
    pub perf_map: bool,
    /// Why it did not (jcmd missing, refused, timed out), in its words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub perf_map_error: Option<String>,
}

crate::words! {
    /// How a process's user stacks were walked.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum Unwinding {
        /// The kernel followed the frame pointers.
        FramePointers = "frame_pointers",
        /// The user stack was copied and unwound with the binary's DWARF call-frame information.
        Dwarf = "dwarf",
    }
}

/// What one function cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCost {
    /// The function (`[file]` where no symbol names it; a kernel function ends in `_[k]`).
    pub name: String,
    /// Samples with it as the leaf.
    pub self_samples: u64,
    /// Samples with it anywhere on the stack (a recursion counted once).
    pub total_samples: u64,
    /// Self CPU µs per completed request (null when nothing completed).
    pub self_us_per_request: Option<f64>,
    /// Total CPU µs per completed request.
    pub total_us_per_request: Option<f64>,
    /// Self share of the tree's samples, percent.
    pub self_pct: f64,
    /// Total share, percent.
    pub total_pct: f64,
}

/// The `n` functions that cost the most, by self samples (then total, then name), from folded
/// stacks (`command;root;…;leaf`, the first frame the process, which is no function): each
/// function's samples as the leaf (self) and anywhere on the stack (total, a recursion counted
/// once), made µs per request by `period_us` (the CPU time one sample stands for) and
/// `requests` (null without any).
pub fn top<'a>(
    stacks: impl Iterator<Item = (&'a str, u64)>,
    period_us: f64,
    requests: u64,
    n: usize,
) -> Vec<FunctionCost> {
    let mut costs: HashMap<&str, (u64, u64)> = HashMap::new();
    let mut all = 0u64;
    let mut seen = HashSet::new();
    for (stack, count) in stacks {
        all += count;
        let frames: Vec<&str> = stack.split(';').skip(1).collect();
        if let Some(leaf) = frames.last() {
            costs.entry(leaf).or_default().0 += count;
        }
        seen.clear();
        for f in frames {
            if seen.insert(f) {
                costs.entry(f).or_default().1 += count;
            }
        }
    }
    let round2 = |v: f64| (v * 100.0).round() / 100.0;
    let per_request =
        |s: u64| (requests > 0).then(|| round2(s as f64 * period_us / requests as f64));
    let pct = |s: u64| {
        if all > 0 {
            round2(s as f64 / all as f64 * 100.0)
        } else {
            0.0
        }
    };
    let mut v: Vec<FunctionCost> = costs
        .into_iter()
        .map(|(name, (own, total))| FunctionCost {
            name: name.to_string(),
            self_samples: own,
            total_samples: total,
            self_us_per_request: per_request(own),
            total_us_per_request: per_request(total),
            self_pct: pct(own),
            total_pct: pct(total),
        })
        .collect();
    v.sort_by(|a, b| {
        (b.self_samples, b.total_samples)
            .cmp(&(a.self_samples, a.total_samples))
            .then_with(|| a.name.cmp(&b.name))
    });
    v.truncate(n);
    v
}

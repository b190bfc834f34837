//! Pure parsers for the /proc files volley reads. They take the file's text, so they are
//! tested on fixtures; reading the files is the sampler's job.

/// Aggregate CPU time from the first `cpu` line of /proc/stat, in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// user + nice.
    pub user: u64,
    /// system.
    pub system: u64,
    /// idle.
    pub idle: u64,
    /// iowait.
    pub iowait: u64,
    /// irq.
    pub irq: u64,
    /// softirq.
    pub softirq: u64,
    /// steal.
    pub steal: u64,
}

impl CpuTimes {
    /// Sum of every field.
    pub fn total(&self) -> u64 {
        self.user + self.system + self.idle + self.iowait + self.irq + self.softirq + self.steal
    }
}

/// Parses the aggregate `cpu ` line of /proc/stat. Older kernels have fewer fields: missing ones are 0.
pub fn parse_proc_stat(text: &str) -> Option<CpuTimes> {
    let line = text.lines().find(|l| l.starts_with("cpu "))?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    let f = |i: usize| v.get(i).copied().unwrap_or(0);
    if v.len() < 4 {
        return None;
    }
    Some(CpuTimes {
        user: f(0) + f(1),
        system: f(2),
        idle: f(3),
        iowait: f(4),
        irq: f(5),
        softirq: f(6),
        steal: f(7),
    })
}

/// The first two fields of /proc/PID/task/TID/schedstat: nanoseconds the thread ran on a
/// CPU, and nanoseconds it was runnable but waited on a run queue (another task had the CPU).
pub(crate) fn parse_schedstat(text: &str) -> Option<(u64, u64)> {
    let mut f = text.split_whitespace();
    Some((f.next()?.parse().ok()?, f.next()?.parse().ok()?))
}

/// The `total=` of the `some` line of /proc/pressure/cpu: microseconds in which at least one
/// runnable task waited for a CPU.
pub(crate) fn parse_cpu_pressure(text: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with("some "))?;
    line.split_whitespace()
        .find_map(|f| f.strip_prefix("total="))?
        .parse()
        .ok()
}

/// `model name` of /proc/cpuinfo.
pub fn parse_cpu_model(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

/// The fields volley uses from /proc/PID/stat (or /proc/PID/task/TID/stat), man proc(5).
/// CPU times are in clock ticks (`sysconf(_SC_CLK_TCK)`, usually 100 per second); the kernel
/// scales them so that user + system equals the precisely measured run time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PidStat {
    /// Process id (field 1).
    pub pid: i32,
    /// State letter (field 3): R, S, D, Z (zombie), X (dead), T, t, I ...
    pub state: char,
    /// Parent process id (field 4).
    pub ppid: i32,
    /// Process group id (field 5).
    pub pgrp: i32,
    /// User time of the whole thread group, exited threads included (field 14), ticks.
    pub utime_ticks: u64,
    /// System time, same scope (field 15), ticks.
    pub stime_ticks: u64,
    /// User time of children this process has waited for (field 16), ticks.
    pub cutime_ticks: u64,
    /// System time of children this process has waited for (field 17), ticks.
    pub cstime_ticks: u64,
    /// Threads (field 20).
    pub threads: u64,
    /// Start time after boot (field 22), ticks: with the pid, it tells a process from a later
    /// one that reused its pid.
    pub starttime_ticks: u64,
    /// Resident set size (field 24), pages.
    pub rss_pages: u64,
}

impl PidStat {
    /// The process has exited (zombie or dead) and uses no CPU or memory any more.
    pub fn exited(&self) -> bool {
        matches!(self.state, 'Z' | 'X' | 'x')
    }
}

/// Parses /proc/PID/stat. The command name (field 2) may contain spaces and parentheses, so
/// the fields are counted from its last `)`. Needs the first 24 fields (every kernel since
/// 2.6 has them); returns `None` for anything shorter or unparsable.
pub fn parse_pid_stat(text: &str) -> Option<PidStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    if close < open {
        return None;
    }
    let pid = text[..open].trim().parse().ok()?;
    // Fields from 3 (state) on.
    let f: Vec<&str> = text[close + 1..].split_whitespace().collect();
    let n = |field: usize| -> Option<u64> { f.get(field - 3)?.parse().ok() };
    let state = f.first()?.chars().next()?;
    Some(PidStat {
        pid,
        state,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        utime_ticks: n(14)?,
        stime_ticks: n(15)?,
        cutime_ticks: f.get(16 - 3)?.parse::<i64>().ok()?.max(0) as u64,
        cstime_ticks: f.get(17 - 3)?.parse::<i64>().ok()?.max(0) as u64,
        threads: n(20)?,
        starttime_ticks: n(22)?,
        rss_pages: f.get(24 - 3)?.parse::<i64>().ok()?.max(0) as u64,
    })
}

/// The `Cpus_allowed_list:` of /proc/PID/status (the process's affinity, e.g. `"0-1"`).
pub fn parse_cpus_allowed(status: &str) -> Option<String> {
    status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .map(|v| v.trim().to_string())
}

/// A `Name:   1234 kB` line of /proc/PID/status, in KiB.
pub(crate) fn parse_status_kib(text: &str, name: &str) -> Option<u64> {
    text.lines().find_map(|l| {
        let rest = l.strip_prefix(name)?.strip_prefix(':')?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// Context switches of one thread from /proc/PID/task/TID/status. (In /proc/PID/status these
/// are the main thread's only, not the process's.) `None` where the kernel does not report
/// them (before 2.6.23).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CtxSwitches {
    /// The thread gave up the CPU (blocked, slept, waited).
    pub voluntary: u64,
    /// The thread was preempted.
    pub involuntary: u64,
}

/// Parses `voluntary_ctxt_switches` / `nonvoluntary_ctxt_switches` of a status file.
pub fn parse_status_ctx(text: &str) -> Option<CtxSwitches> {
    let mut vol = None;
    let mut invol = None;
    for line in text.lines() {
        if let Some(v) = line.strip_prefix("voluntary_ctxt_switches:") {
            vol = v.trim().parse().ok();
        } else if let Some(v) = line.strip_prefix("nonvoluntary_ctxt_switches:") {
            invol = v.trim().parse().ok();
        }
    }
    Some(CtxSwitches {
        voluntary: vol?,
        involuntary: invol?,
    })
}

/// /proc/PID/io: I/O through read/write-type calls of the whole process (exited threads and
/// waited-for children included). `syscr`/`syscw` count read/write/pread/readv/sendfile...
/// calls but not recv/send/epoll/accept/futex, so they are never "syscalls".
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct IoCounters {
    /// `syscr`: read-type calls.
    pub calls_read: u64,
    /// `syscw`: write-type calls.
    pub calls_write: u64,
    /// `rchar`: bytes passed to read-type calls (including page cache and sockets).
    pub bytes_read: u64,
    /// `wchar`: bytes passed to write-type calls.
    pub bytes_written: u64,
}

/// Parses /proc/PID/io. Keys the kernel does not report count as 0 (a kernel without
/// CONFIG_TASK_IO_ACCOUNTING has no file at all: the caller gets `None` from the read).
pub(crate) fn parse_io(text: &str) -> IoCounters {
    let mut io = IoCounters::default();
    for line in text.lines() {
        let Some((k, v)) = line.split_once(':') else {
            continue;
        };
        let v: u64 = v.trim().parse().unwrap_or(0);
        match k.trim() {
            "syscr" => io.calls_read = v,
            "syscw" => io.calls_write = v,
            "rchar" => io.bytes_read = v,
            "wchar" => io.bytes_written = v,
            _ => {}
        }
    }
    io
}

/// Parses /proc/PID/task/TID/children: the child process ids of that thread.
pub(crate) fn parse_children(text: &str) -> Vec<i32> {
    text.split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn status_kib_lines() {
        let t = "Name:\tvolley\nVmPeak:\t  20000 kB\nVmHWM:\t    9728 kB\n";
        assert_eq!(parse_status_kib(t, "VmHWM"), Some(9728));
        assert_eq!(parse_status_kib(t, "VmRSS"), None);
    }

    use super::*;

    #[test]
    fn proc_stat() {
        let text = "cpu  100 5 50 1000 10 1 4 0 0 0\ncpu0 50 2 25 500 5 0 2 0 0 0\nintr 1 2\n";
        let t = parse_proc_stat(text).unwrap();
        assert_eq!(
            t,
            CpuTimes {
                user: 105,
                system: 50,
                idle: 1000,
                iowait: 10,
                irq: 1,
                softirq: 4,
                steal: 0
            }
        );
        assert_eq!(t.total(), 1170);
        // An old kernel with only four fields.
        let t = parse_proc_stat("cpu 1 2 3 4\n").unwrap();
        assert_eq!((t.user, t.system, t.idle, t.iowait), (3, 3, 4, 0));
        assert!(parse_proc_stat("intr 1\n").is_none());
    }

    #[test]
    fn schedstat_and_cpuinfo() {
        assert_eq!(
            parse_schedstat("123456789 2000 15\n"),
            Some((123_456_789, 2000))
        );
        assert_eq!(parse_schedstat(""), None);
        assert_eq!(parse_schedstat("5"), None);
        let psi = "some avg10=1.50 avg60=0.40 avg300=0.10 total=123456\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n";
        assert_eq!(parse_cpu_pressure(psi), Some(123_456));
        assert_eq!(parse_cpu_pressure("full total=1\n"), None);
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpu_model(info).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
    }

    fn fixture(path: &str) -> String {
        let p = format!(
            "{}/../../tests/fixtures/proc/{path}",
            env!("CARGO_MANIFEST_DIR")
        );
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p}: {e}"))
    }

    #[test]
    fn pid_stat_of_nginx_master_and_worker() {
        let m = parse_pid_stat(&fixture("nginx-master/stat")).unwrap();
        assert_eq!((m.pid, m.state, m.ppid, m.threads), (20657, 'S', 1, 1));
        let w = parse_pid_stat(&fixture("nginx-worker/stat")).unwrap();
        assert_eq!((w.pid, w.ppid, w.threads), (20658, 20657, 1));
        assert_eq!((w.utime_ticks, w.stime_ticks), (3, 39));
        assert_eq!((w.cutime_ticks, w.cstime_ticks), (0, 0));
        assert_eq!((w.starttime_ticks, w.rss_pages), (247032, 1034));
        assert!(!w.exited());
        assert_eq!(
            parse_children(&fixture("nginx-master/children")),
            vec![20658]
        );
        assert!(parse_children(&fixture("nginx-worker/children")).is_empty());
    }

    #[test]
    fn pid_stat_with_parentheses_in_the_name_and_threads() {
        // comm is "srv (x) 1": naive splitting on spaces or the first ')' would shift fields.
        let t = parse_pid_stat(&fixture("threaded/stat")).unwrap();
        assert_eq!((t.pid, t.state, t.ppid, t.threads), (30728, 'S', 30723, 4));
        assert_eq!((t.utime_ticks, t.stime_ticks), (20, 2));
        assert_eq!((t.cutime_ticks, t.cstime_ticks), (5, 1));
        assert_eq!(t.rss_pages, 3478);
        assert_eq!(
            parse_children(&fixture("threaded/children")),
            vec![30773, 30774]
        );
    }

    #[test]
    fn zombie() {
        let z = parse_pid_stat(&fixture("zombie/stat")).unwrap();
        assert_eq!(
            (z.pid, z.state, z.ppid, z.rss_pages),
            (30773, 'Z', 30728, 0)
        );
        assert!(z.exited());
        // A zombie still reports its final context switches, but no memory lines.
        let status = fixture("zombie/status");
        assert!(!status.contains("VmRSS"));
        assert_eq!(
            parse_status_ctx(&status),
            Some(CtxSwitches {
                voluntary: 1,
                involuntary: 0
            })
        );
        assert_eq!(parse_io(&fixture("zombie/io")), IoCounters::default());
    }

    #[test]
    fn context_switches_are_per_thread() {
        let main = parse_status_ctx(&fixture("threaded/status")).unwrap();
        let other = parse_status_ctx(&fixture("threaded/task-status")).unwrap();
        assert_eq!((main.voluntary, main.involuntary), (81, 11));
        assert_eq!((other.voluntary, other.involuntary), (40, 28));
        let w = parse_status_ctx(&fixture("nginx-worker/status")).unwrap();
        assert_eq!((w.voluntary, w.involuntary), (8738, 6181));
    }

    #[test]
    fn io_counters() {
        let io = parse_io(&fixture("nginx-worker/io"));
        assert_eq!(
            io,
            IoCounters {
                calls_read: 6,
                calls_write: 38796,
                bytes_read: 3108,
                bytes_written: 5741618
            }
        );
    }

    #[test]
    fn a_kernel_with_missing_fields() {
        // stat cut after field 44 still has everything volley reads.
        let s = parse_pid_stat(&fixture("old-kernel/stat")).unwrap();
        assert_eq!((s.utime_ticks, s.stime_ticks, s.rss_pages), (3, 39, 1034));
        // No context switch lines: unknown, not zero.
        assert_eq!(parse_status_ctx(&fixture("old-kernel/status")), None);
        // io without syscr/syscw: the calls count as 0.
        let io = parse_io(&fixture("old-kernel/io"));
        assert_eq!((io.calls_read, io.bytes_written), (0, 5741618));
        // Too short or garbage: refused rather than misread.
        assert_eq!(parse_pid_stat("1 (init) S 0 1 1"), None);
        assert_eq!(parse_pid_stat(""), None);
        assert_eq!(parse_pid_stat("x (a) S"), None);
    }
}

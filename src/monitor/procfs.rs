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

/// First field of /proc/PID/task/TID/schedstat: nanoseconds the thread ran on a CPU.
pub fn parse_schedstat(text: &str) -> Option<u64> {
    text.split_whitespace().next()?.parse().ok()
}

/// `model name` of /proc/cpuinfo.
pub fn parse_cpu_model(text: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split_once(':'))
        .map(|(_, v)| v.trim().to_string())
}

#[cfg(test)]
mod tests {
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
        assert_eq!(parse_schedstat("123456789 2000 15\n"), Some(123_456_789));
        assert_eq!(parse_schedstat(""), None);
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n";
        assert_eq!(
            parse_cpu_model(info).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
    }
}

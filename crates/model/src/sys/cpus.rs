//! CPUs: how many are online, which ones volley may run on, and CPU lists in the `taskset -c`
//! syntax. "Cores" means one thing everywhere in volley: CPUs online
//! (`sysconf(_SC_NPROCESSORS_ONLN)`) for the machine, and the affinity mask for what volley
//! itself may use.

use std::collections::BTreeSet;

/// CPUs online on the machine (volley may be allowed fewer: see [`allowed`]).
pub fn online() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    if n > 0 {
        n as usize
    } else {
        1
    }
}

/// CPUs this process may run on: their number and a list string like "0-1" or "0,2".
pub fn allowed() -> (usize, String) {
    // SAFETY: sched_getaffinity fills the set we own.
    let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::sched_getaffinity(0, size_of::<libc::cpu_set_t>(), &mut set) } == 0;
    if !ok {
        let n = online();
        return (n, format!("0-{}", n - 1));
    }
    let cpus: Vec<usize> = (0..libc::CPU_SETSIZE as usize)
        .filter(|c| unsafe { libc::CPU_ISSET(*c, &set) })
        .collect();
    (cpus.len().max(1), list(&cpus))
}

/// Formats CPU numbers as a kernel-style list ("0-3,6").
pub fn list(cpus: &[usize]) -> String {
    let mut out = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            i += 1;
            end = cpus[i];
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

/// A CPU set such as `"0"`, `"1-3"` or `"0,2-3"`, as `taskset -c` takes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CpuList {
    /// The text as written (shown in reports).
    pub text: String,
    /// The CPUs, ascending.
    pub cpus: Vec<usize>,
}

/// Parses a CPU list (`taskset -c` syntax: numbers and ranges separated by commas).
pub fn parse_list(text: &str) -> Result<CpuList, String> {
    let mut cpus = BTreeSet::new();
    for part in text.split(',').map(str::trim) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (a.trim(), b.trim()),
            None => (part, part),
        };
        let num = |s: &str| {
            s.parse::<usize>()
                .map_err(|_| format!("`{text}` is not a CPU list (e.g. \"0\", \"1-3\", \"0,2\")"))
        };
        let (a, b) = (num(a)?, num(b)?);
        if a > b || b >= 1024 {
            return Err(format!(
                "`{part}` is not a CPU range (from ≤ to, below 1024)"
            ));
        }
        cpus.extend(a..=b);
    }
    Ok(CpuList {
        text: text.to_string(),
        cpus: cpus.into_iter().collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_both_ways() {
        assert_eq!(list(&[0, 1, 2, 5, 7, 8]), "0-2,5,7-8");
        assert_eq!(list(&[3]), "3");
        assert_eq!(list(&[]), "");
        assert_eq!(parse_list("0,2-3").unwrap().cpus, vec![0, 2, 3]);
        assert_eq!(parse_list("1").unwrap().cpus, vec![1]);
        assert!(parse_list("3-1").is_err());
        assert!(parse_list("x").is_err());
        assert!(parse_list("0-2000").is_err());
    }

    #[test]
    fn online_and_allowed_agree_on_this_machine() {
        let (n, text) = allowed();
        assert!(n >= 1 && n <= online().max(n));
        assert_eq!(parse_list(&text).unwrap().cpus.len(), n);
    }
}

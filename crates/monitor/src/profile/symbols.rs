//! Addresses to function names, after the run (processes may have exited by then, so nothing
//! here reads a live process): kernel addresses from /proc/kallsyms; user addresses through
//! the mappings recorded during the run (`/proc/PID/maps` at the start, `MMAP2` records after)
//! to a file and an offset in it, symbolized by blazesym from the ELF's symbols and debug
//! information; code that runtimes generate (a JVM's, Node's) from the perf map the runtime
//! writes, `/tmp/perf-PID.map`.

use std::collections::HashMap;
use std::path::Path;

use blazesym::symbolize::source::{Elf, Source};
use blazesym::symbolize::{Input, Symbolized, Symbolizer};

/// Kernel addresses start here on x86-64 (the canonical upper half).
pub(crate) const KERNEL_START: u64 = 0xffff_8000_0000_0000;

/// One executable mapping of a process.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Map {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub path: String,
}

impl Map {
    /// It maps a file (not anonymous memory, which the kernel names `//anon` in its records
    /// and `[anon:…]` or nothing in /proc).
    pub(crate) fn is_file(&self) -> bool {
        self.path.starts_with('/') && !self.path.starts_with("//")
    }
}

/// Reads the executable mappings of `pid` from /proc.
pub(crate) fn proc_maps(pid: u32) -> Vec<Map> {
    std::fs::read_to_string(format!("/proc/{pid}/maps"))
        .map(|t| parse_maps(&t))
        .unwrap_or_default()
}

/// `/proc/PID/maps` lines `start-end perms offset dev inode path`, executable ones only.
pub(crate) fn parse_maps(text: &str) -> Vec<Map> {
    text.lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let range = f.next()?;
            let perms = f.next()?;
            let off = f.next()?;
            let path = f.nth(2).unwrap_or("").to_string();
            let (a, b) = range.split_once('-')?;
            perms.contains('x').then_some(())?;
            Some(Map {
                start: u64::from_str_radix(a, 16).ok()?,
                end: u64::from_str_radix(b, 16).ok()?,
                pgoff: u64::from_str_radix(off, 16).ok()?,
                path,
            })
        })
        .collect()
}

/// A sorted table of (address, name): kallsyms, or a runtime's perf map.
#[derive(Debug, Default)]
pub(crate) struct Table(Vec<(u64, u64, String)>);

impl Table {
    /// `/proc/kallsyms`: text symbols (`T`, `t`, `W`, `w`), each up to the next.
    pub(crate) fn kallsyms(text: &str) -> Table {
        let mut v: Vec<(u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.split_whitespace();
                let addr = u64::from_str_radix(f.next()?, 16).ok()?;
                let kind = f.next()?;
                let name = f.next()?;
                (addr != 0 && matches!(kind, "T" | "t" | "W" | "w"))
                    .then(|| (addr, name.to_string()))
            })
            .collect();
        v.sort_by_key(|e| e.0);
        let ends: Vec<u64> = v.iter().skip(1).map(|e| e.0).chain([u64::MAX]).collect();
        Table(
            v.into_iter()
                .zip(ends)
                .map(|((a, n), e)| (a, e, n))
                .collect(),
        )
    }

    /// A perf map (`START SIZE NAME`, hex, one symbol a line).
    pub(crate) fn perf_map(text: &str) -> Table {
        let mut v: Vec<(u64, u64, String)> = text
            .lines()
            .filter_map(|l| {
                let mut f = l.splitn(3, ' ');
                let start = u64::from_str_radix(f.next()?.trim_start_matches("0x"), 16).ok()?;
                let size = u64::from_str_radix(f.next()?.trim_start_matches("0x"), 16).ok()?;
                Some((
                    start,
                    start.saturating_add(size),
                    f.next()?.trim().to_string(),
                ))
            })
            .collect();
        v.sort_by_key(|e| e.0);
        Table(v)
    }

    /// The name covering `addr`.
    pub(crate) fn find(&self, addr: u64) -> Option<&str> {
        let i = self.0.partition_point(|e| e.0 <= addr).checked_sub(1)?;
        let (start, end, name) = &self.0[i];
        (addr >= *start && addr < *end).then_some(name.as_str())
    }
}

/// Names the addresses of every process: `names[(pid, addr)]`.
pub(crate) struct Names {
    kernel: Table,
    symbolizer: Symbolizer,
}

impl Names {
    pub(crate) fn new() -> Names {
        let kernel = std::fs::read_to_string("/proc/kallsyms")
            .map(|t| Table::kallsyms(&t))
            .unwrap_or_default();
        Names {
            kernel,
            symbolizer: Symbolizer::builder()
                .enable_code_info(false)
                .enable_inlined_fns(false)
                .build(),
        }
    }

    /// The name of each of `addrs` (kernel or user) in process `pid` with mappings `maps`.
    pub(crate) fn of(&self, pid: u32, maps: &[Map], addrs: &[u64]) -> HashMap<u64, String> {
        let mut out = HashMap::new();
        let mut by_file: HashMap<&str, Vec<(u64, u64)>> = HashMap::new();
        let mut anon = Vec::new();
        for &a in addrs {
            if a >= KERNEL_START {
                let n = self.kernel.find(a).unwrap_or("[kernel]");
                out.insert(a, format!("{n}_[k]"));
                continue;
            }
            match maps.iter().rev().find(|m| a >= m.start && a < m.end) {
                Some(m) if m.is_file() => by_file
                    .entry(m.path.as_str())
                    .or_default()
                    .push((a, a - m.start + m.pgoff)),
                _ => anon.push(a),
            }
        }
        for (path, list) in by_file {
            self.in_file(path, &list, &mut out);
        }
        if !anon.is_empty() {
            let map = std::fs::read_to_string(format!("/tmp/perf-{pid}.map"))
                .map(|t| Table::perf_map(&t))
                .unwrap_or_default();
            for a in anon {
                let n = map.find(a).map_or("[unknown]".to_string(), str::to_string);
                out.insert(a, n);
            }
        }
        out
    }

    /// Symbolizes offsets into the ELF file `path`; what it cannot name is `[file]`.
    fn in_file(&self, path: &str, list: &[(u64, u64)], out: &mut HashMap<u64, String>) {
        let short = Path::new(path)
            .file_name()
            .map_or(path.to_string(), |f| f.to_string_lossy().into_owned());
        let offsets: Vec<u64> = list.iter().map(|e| e.1).collect();
        // Debug information first (a binary built with it names more); where reading it fails
        // (Debian's libc.so.6 has a section blazesym cannot read), the ELF symbols alone.
        let syms = [true, false]
            .into_iter()
            .find_map(|debug| {
                let mut elf = Elf::new(path);
                elf.debug_syms = debug;
                self.symbolizer
                    .symbolize(&Source::Elf(elf), Input::FileOffset(&offsets))
                    .ok()
            })
            .unwrap_or_default();
        for (k, (addr, _)) in list.iter().enumerate() {
            let name = match syms.get(k) {
                Some(Symbolized::Sym(s)) => s.name.to_string(),
                _ => format!("[{short}]"),
            };
            out.insert(*addr, name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_find_the_symbol_covering_an_address() {
        let k = Table::kallsyms(
            "ffffffff81000000 T _stext\nffffffff81000100 t do_sys_poll\n0000000000000000 A zero\nffffffff81000200 D data\nffffffff81000300 T schedule\n",
        );
        assert_eq!(k.find(0xffff_ffff_8100_0150), Some("do_sys_poll"));
        assert_eq!(k.find(0xffff_ffff_8100_0000), Some("_stext"));
        assert_eq!(k.find(0xffff_ffff_8000_0000), None);
        let p = Table::perf_map(
            "7f0000001000 40 Interpreter\n7f0000002000 100 LMain;::hot (compiled)\n",
        );
        assert_eq!(p.find(0x7f00_0000_2010), Some("LMain;::hot (compiled)"));
        assert_eq!(p.find(0x7f00_0000_1040), None, "past its size");
    }

    #[test]
    fn executable_mappings_only() {
        let maps = parse_maps(
            "00400000-00452000 r-xp 00001000 08:02 173521 /usr/sbin/nginx\n\
             00651000-00652000 rw-p 00051000 08:02 173521 /usr/sbin/nginx\n\
             7f0000000000-7f0000100000 rwxp 00000000 00:00 0 \n",
        );
        assert_eq!(maps.len(), 2);
        assert_eq!(maps[0].pgoff, 0x1000);
        assert_eq!(maps[0].path, "/usr/sbin/nginx");
        assert_eq!(maps[1].path, "", "anonymous: a JIT's code");
    }

    #[test]
    fn functions_of_this_binary_and_of_libc_are_named() {
        // This test's own code and libc's, through their mappings as the profiler sees them.
        let own = a_function_of_this_binary as *const () as u64;
        let write = libc::write as *const () as u64;
        let maps = proc_maps(std::process::id());
        let names = Names::new().of(std::process::id(), &maps, &[own, write + 3]);
        assert!(
            names[&own].contains("a_function_of_this_binary"),
            "{names:?}"
        );
        assert!(names[&(write + 3)].contains("write"), "{names:?}");
    }

    #[inline(never)]
    fn a_function_of_this_binary() -> u64 {
        std::hint::black_box(7)
    }
}

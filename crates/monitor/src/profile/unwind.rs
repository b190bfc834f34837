//! User stacks of binaries built without frame pointers (Debian's nginx, most distribution
//! libraries): each sample carries a copy of the top of the user stack and the registers an
//! unwinder starts from, and framehop walks it with the binaries' DWARF call-frame information
//! (`.eh_frame`), in the drain thread while the mappings are known. ELF files are read once
//! (their sections shared between the processes that map them).

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection, ObjectSegment, SegmentFlags};

use super::symbols::Map;

/// Bytes of user stack each sample copies: deep enough for a server's event loop (perf's own
/// default for `--call-graph dwarf`).
pub(crate) const STACK_BYTES: u32 = 8 * 1024;
/// `PERF_REG_X86_BP`, `SP`, `IP`: the registers an unwinder starts from, in this order.
pub(crate) const REGS_MASK: u64 = (1 << 6) | (1 << 7) | (1 << 8);
/// Frames an unwind follows at most.
const MAX_DEPTH: usize = 128;

/// A section's bytes, shared.
#[derive(Clone, Default)]
pub(crate) struct Bytes(Arc<Vec<u8>>);

impl Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

/// What unwinding needs of one ELF file.
struct Elf {
    /// `p_offset` and `p_vaddr` of its executable segments.
    exec: Vec<(u64, u64, u64)>,
    info: ExplicitModuleSectionInfo<Bytes>,
}

/// Reads the unwind sections of `path` (none when it is not a readable ELF file): only its
/// headers and those sections are read (`ReadCache`), never the whole file, which may be a
/// binary of gigabytes with its debug information.
fn read_elf(path: &str) -> Option<Elf> {
    let cache = object::ReadCache::new(std::fs::File::open(path).ok()?);
    let file = object::File::parse(&cache).ok()?;
    let range = |name: &str| {
        let s = file.section_by_name(name)?;
        Some(s.address()..s.address() + s.size())
    };
    let section = |name: &str| {
        let s = file.section_by_name(name)?;
        let bytes = s.data().ok()?.to_vec();
        Some((range(name)?, Bytes(Arc::new(bytes))))
    };
    let (text_svma, text) = section(".text").unzip();
    let (eh_frame_svma, eh_frame) = section(".eh_frame").unzip();
    let (eh_frame_hdr_svma, eh_frame_hdr) = section(".eh_frame_hdr").unzip();
    let got_svma = range(".got");
    let exec = file
        .segments()
        .filter(|s| matches!(s.flags(), SegmentFlags::Elf { p_flags, .. } if p_flags.0 & 1 != 0))
        .map(|s| {
            let (off, size) = s.file_range();
            (off, size, s.address())
        })
        .collect();
    Some(Elf {
        exec,
        info: ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma,
            text,
            got_svma,
            eh_frame_svma,
            eh_frame,
            eh_frame_hdr_svma,
            eh_frame_hdr,
            ..Default::default()
        },
    })
}

/// One process's unwinder, its modules added as their mappings become known.
#[derive(Default)]
struct Process {
    unwinder: UnwinderX86_64<Bytes>,
    cache: Option<Box<CacheX86_64>>,
    /// Mapping starts already added (or found not to be an ELF file).
    added: std::collections::HashSet<u64>,
}

/// The unwinders of every process seen, and the ELF files they map.
#[derive(Default)]
pub(crate) struct Unwinders {
    files: HashMap<String, Option<Arc<Elf>>>,
    procs: HashMap<u32, Process>,
}

/// One sample's registers and stack copy.
pub(crate) struct UserStack<'a> {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
    pub stack: &'a [u8],
}

impl Unwinders {
    /// The user frames of a sample of `pid` (leaf first: the instruction pointer, then return
    /// addresses), with `maps` its executable mappings known so far; empty when nothing could
    /// be walked.
    pub(crate) fn unwind(&mut self, pid: u32, maps: &[Map], s: &UserStack) -> Vec<u64> {
        self.add_modules(pid, maps);
        let p = self.procs.entry(pid).or_default();
        let cache = p.cache.get_or_insert_with(|| Box::new(CacheX86_64::new()));
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = addr.checked_sub(s.sp).ok_or(())? as usize;
            let b = s.stack.get(off..off + 8).ok_or(())?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
        };
        let regs = UnwindRegsX86_64::new(s.ip, s.sp, s.bp);
        let mut it = p.unwinder.iter_frames(s.ip, regs, cache, &mut read);
        let mut out = Vec::new();
        while let Ok(Some(frame)) = it.next() {
            out.push(match frame {
                FrameAddress::InstructionPointer(a) => a,
                FrameAddress::ReturnAddress(a) => a.get(),
            });
            if out.len() >= MAX_DEPTH {
                break;
            }
        }
        out
    }

    /// Adds a module per executable file mapping of `pid` not added yet (before sampling, so
    /// reading the files does not hold up the rings).
    pub(crate) fn add_modules(&mut self, pid: u32, maps: &[Map]) {
        let p = self.procs.entry(pid).or_default();
        for m in maps.iter().filter(|m| m.is_file()) {
            if !p.added.insert(m.start) {
                continue;
            }
            let elf = self
                .files
                .entry(m.path.clone())
                .or_insert_with(|| read_elf(&m.path).map(Arc::new))
                .clone();
            if let Some(module) = elf.and_then(|e| module(&e, m)) {
                p.unwinder.add_module(module);
            }
        }
    }
}

/// The module for mapping `m` of `elf`: its addresses, and where its svma 0 lands (the
/// executable segment holding the mapping's file offset says).
fn module(elf: &Elf, m: &Map) -> Option<Module<Bytes>> {
    let (off, _, vaddr) = *elf
        .exec
        .iter()
        // The mapping starts at the segment's offset rounded down to its page.
        .find(|(off, size, _)| m.pgoff >= off & !0xfff && m.pgoff < off + size.max(&1))?;
    let base_avma = (m.start + off).saturating_sub(m.pgoff + vaddr);
    let range: Range<u64> = m.start..m.end;
    Some(Module::new(
        m.path.clone(),
        range,
        base_avma,
        elf.info.clone(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// This thread's registers and the top of its stack, then an unwind of them: the frames
    /// must reach the test's own callers (this crate is built without frame pointers in
    /// tests, so only the call-frame information can find them).
    #[inline(never)]
    fn unwind_here(u: &mut Unwinders) -> Vec<u64> {
        let (ip, sp, bp): (u64, u64, u64);
        // SAFETY: reads three registers, touches nothing.
        unsafe {
            std::arch::asm!("lea {0}, [rip]", "mov {1}, rsp", "mov {2}, rbp", out(reg) ip, out(reg) sp, out(reg) bp);
        }
        let len = (stack_top() - sp).min(STACK_BYTES as u64) as usize;
        // SAFETY: `len` bytes above the stack pointer are this thread's stack, below its top.
        let stack = unsafe { std::slice::from_raw_parts(sp as *const u8, len) };
        let maps = super::super::symbols::proc_maps(std::process::id());
        u.unwind(std::process::id(), &maps, &UserStack { ip, sp, bp, stack })
    }

    /// The highest address of this thread's stack.
    fn stack_top() -> u64 {
        let mut attr = std::mem::MaybeUninit::<libc::pthread_attr_t>::uninit();
        let (mut addr, mut size) = (std::ptr::null_mut(), 0usize);
        // SAFETY: fills an attribute object for this thread, reads its stack, frees it.
        unsafe {
            assert_eq!(
                libc::pthread_getattr_np(libc::pthread_self(), attr.as_mut_ptr()),
                0
            );
            libc::pthread_attr_getstack(attr.as_ptr(), &mut addr, &mut size);
            libc::pthread_attr_destroy(attr.as_mut_ptr());
        }
        addr as u64 + size as u64
    }

    #[inline(never)]
    fn caller_one(u: &mut Unwinders) -> Vec<u64> {
        std::hint::black_box(unwind_here(u))
    }

    #[test]
    fn a_stack_is_walked_by_its_call_frame_information() {
        let mut u = Unwinders::default();
        let frames = std::hint::black_box(caller_one(&mut u));
        assert!(frames.len() >= 3, "{frames:x?}");
        let maps = super::super::symbols::proc_maps(std::process::id());
        let names = super::super::symbols::Names::new().of(
            std::process::id(),
            &maps,
            &frames[1..].iter().map(|a| a - 1).collect::<Vec<_>>(),
        );
        let all: Vec<&String> = names.values().collect();

        assert!(
            all.iter().any(|n| n.contains("caller_one")),
            "the caller is found: {all:?}"
        );
        assert!(
            all.iter().any(|n| n.contains("a_stack_is_walked")),
            "and its caller: {all:?}"
        );
    }
}

//! One CPU's sampling event and its ring buffer: `cpu-clock` (a software event: this works
//! without a hardware PMU) at a frequency, with kernel and user callchains (the kernel walks
//! frame pointers) and a copy of the top of the user stack for unwinding without them, plus the side-band records of every task on that CPU (mappings, command
//! names, forks). Opened disabled; enabled at the window's start. Written by hand on
//! `perf_event_open` and `mmap`: the ring protocol is a head the kernel moves and a tail the
//! reader gives back.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{fence, AtomicU64, Ordering};

use super::records::SAMPLE_TYPE;
use super::unwind;
use crate::perf::{open, PerfEventAttr};

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_COUNT_SW_CPU_CLOCK: u64 = 0;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_MMAP: u64 = 1 << 8;
const FLAG_COMM: u64 = 1 << 9;
const FLAG_FREQ: u64 = 1 << 10;
const FLAG_TASK: u64 = 1 << 13;
/// `wakeup_events` is a byte count (`wakeup_watermark`).
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_MMAP2: u64 = 1 << 23;
const FLAG_SAMPLE_ID_ALL: u64 = 1 << 18;
/// CPU-wide events: a `SWITCH_CPU_WIDE` record at each context switch of the CPU.
const FLAG_CONTEXT_SWITCH: u64 = 1 << 26;
const IOC_ENABLE: libc::c_ulong = 0x2400;
const IOC_DISABLE: libc::c_ulong = 0x2401;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
/// Offsets in the ring's first page (`struct perf_event_mmap_page`).
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;

/// A CPU's event and its mapped ring.
pub(crate) struct Ring {
    fd: OwnedFd,
    base: *mut u8,
    mapped: usize,
    page: usize,
    data: usize,
    scratch: Vec<u8>,
}

// SAFETY: the mapping belongs to this value alone; one thread at a time reads it.
unsafe impl Send for Ring {}

impl Ring {
    /// Opens the event on `cpu` sampling at `frequency_hz`, with a ring of `pages` data pages
    /// (a power of two).
    pub(crate) fn open(cpu: i32, frequency_hz: u64, pages: usize) -> io::Result<Ring> {
        let attr = PerfEventAttr {
            type_: PERF_TYPE_SOFTWARE,
            size: size_of::<PerfEventAttr>() as u32,
            config: PERF_COUNT_SW_CPU_CLOCK,
            sample_period: frequency_hz,
            sample_type: SAMPLE_TYPE,
            flags: FLAG_DISABLED
                | FLAG_MMAP
                | FLAG_COMM
                | FLAG_FREQ
                | FLAG_TASK
                | FLAG_WATERMARK
                | FLAG_MMAP2
                | FLAG_SAMPLE_ID_ALL
                | FLAG_CONTEXT_SWITCH,
            sample_regs_user: unwind::REGS_MASK,
            sample_stack_user: unwind::STACK_BYTES,
            ..Default::default()
        };
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        // Woken when a quarter of the ring is full (stack copies fill it fast).
        let attr = PerfEventAttr {
            wakeup_events: (page * pages / 4) as u32,
            ..attr
        };
        Ring::map(open(&attr, -1, cpu)?, pages)
    }

    /// Maps the ring of the event `fd` with `pages` data pages (a power of two).
    pub(crate) fn map(fd: OwnedFd, pages: usize) -> io::Result<Ring> {
        // SAFETY: sysconf has no preconditions.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let mapped = page * (1 + pages);
        // SAFETY: maps the event's ring (the kernel's layout: a metadata page, then `pages`
        // data pages) read-write, as perf requires for giving the tail back.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                mapped,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Ring {
            fd,
            base: base as *mut u8,
            mapped,
            page,
            data: page * pages,
            scratch: Vec::new(),
        })
    }

    /// The event's descriptor (to poll, and to enable from another thread).
    pub(crate) fn raw_fd(&self) -> i32 {
        self.fd.as_raw_fd()
    }

    fn word(&self, at: usize) -> &AtomicU64 {
        // SAFETY: `at` is an aligned u64 of the metadata page, which lives as long as `self`.
        unsafe { &*(self.base.add(at) as *const AtomicU64) }
    }

    /// Hands every whole record written since the last call to `f`, in order, and gives the
    /// space back to the kernel.
    pub(crate) fn drain(&mut self, f: &mut dyn FnMut(&[u8])) {
        let head = self.word(DATA_HEAD).load(Ordering::Acquire);
        let mut tail = self.word(DATA_TAIL).load(Ordering::Relaxed);
        // SAFETY: the data area starts one page in and is `self.data` bytes long.
        let data = unsafe { std::slice::from_raw_parts(self.base.add(self.page), self.data) };
        while head.wrapping_sub(tail) >= 8 {
            let at = (tail % self.data as u64) as usize;
            let size = self.copy(data, at, 8);
            let size = u16::from_le_bytes([size[6], size[7]]) as usize;
            if size < 8 || head.wrapping_sub(tail) < size as u64 {
                break;
            }
            let rec = self.copy(data, at, size).to_vec();
            f(&rec);
            tail = tail.wrapping_add(size as u64);
        }
        fence(Ordering::Release);
        self.word(DATA_TAIL).store(tail, Ordering::Release);
    }

    /// `len` bytes of the ring from `at`, across its end when they wrap.
    fn copy(&mut self, data: &[u8], at: usize, len: usize) -> &[u8] {
        self.scratch.clear();
        let first = len.min(data.len() - at);
        self.scratch.extend_from_slice(&data[at..at + first]);
        self.scratch.extend_from_slice(&data[..len - first]);
        &self.scratch
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `open` mapped.
        unsafe { libc::munmap(self.base as *mut libc::c_void, self.mapped) };
    }
}

/// Starts (`true`) or stops the event behind `fd`.
pub(crate) fn set_enabled(fd: i32, on: bool) {
    let req = if on { IOC_ENABLE } else { IOC_DISABLE };
    // SAFETY: an ioctl on a perf descriptor the caller keeps open; a failure changes nothing.
    unsafe { libc::ioctl(fd, req as _, 0) };
}

/// Sends the records of the event `fd` into the ring of `target` (an event on the same CPU).
pub(crate) fn set_output(fd: i32, target: i32) -> io::Result<()> {
    // SAFETY: an ioctl on perf descriptors the caller keeps open.
    if unsafe { libc::ioctl(fd, IOC_SET_OUTPUT as _, target) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

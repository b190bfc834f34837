//! The receive buffers the kernel picks from (a provided-buffer ring), consumed incrementally
//! (`IOU_PBUF_RING_INC`, Linux 6.12): many small responses of many connections are packed one
//! after another into one large buffer, so a few buffers serve thousands of connections (the
//! memory of a 10,000-user run stays that of epoll's), and a large body still arrives in large
//! pieces. A buffer goes back to the ring once the kernel moved past it and the worker has
//! read what it held (at the next wait).

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::io;

use io_uring::types::BufRingEntry;
use io_uring::IoUring;

/// `IOU_PBUF_RING_INC`: buffers are consumed a piece at a time (not in the crate's bindings).
const IOU_PBUF_RING_INC: u16 = 2;
/// `IORING_CQE_F_BUF_MORE`: the kernel goes on filling this buffer after this completion.
pub(crate) const CQE_F_BUF_MORE: u32 = 1 << 4;
/// The buffer group receives pick from.
pub(crate) const GROUP: u16 = 0;
/// Buffers in the ring (a power of two).
const COUNT: u16 = 16;
/// Bytes per buffer.
const BYTES: usize = 32 * 1024;

/// The ring of buffers and the memory behind it.
pub(crate) struct BufRing {
    entries: *mut BufRingEntry,
    entries_layout: Layout,
    /// The buffers' memory, zeroed lazily by the allocator: pages count as resident only once
    /// the kernel wrote them.
    mem: *mut u8,
    mem_layout: Layout,
    /// How far the kernel has consumed each buffer.
    consumed: [u32; COUNT as usize],
    /// Buffers the kernel is done with whose bytes the worker may still be reading.
    done: Vec<u16>,
    tail: u16,
}

impl BufRing {
    /// Allocates the buffers and registers them with `ring` as [`GROUP`].
    pub(crate) fn register(ring: &IoUring) -> io::Result<BufRing> {
        let entries_layout =
            Layout::from_size_align(COUNT as usize * size_of::<BufRingEntry>(), 4096)
                .map_err(io::Error::other)?;
        let mem_layout =
            Layout::from_size_align(COUNT as usize * BYTES, 4096).map_err(io::Error::other)?;
        // SAFETY: both layouts have a non-zero size.
        let (entries, mem) = unsafe {
            (
                alloc_zeroed(entries_layout) as *mut BufRingEntry,
                alloc_zeroed(mem_layout),
            )
        };
        if entries.is_null() || mem.is_null() {
            return Err(io::ErrorKind::OutOfMemory.into());
        }
        let mut b = BufRing {
            entries,
            entries_layout,
            mem,
            mem_layout,
            consumed: [0; COUNT as usize],
            done: Vec::with_capacity(COUNT as usize),
            tail: 0,
        };
        for id in 0..COUNT {
            b.push(id);
        }
        b.publish();
        // SAFETY: the entries are page-aligned, COUNT long, and outlive the registration (the
        // ring is dropped first, and the kernel pins the pages it uses).
        unsafe {
            ring.submitter().register_buf_ring_with_flags(
                entries as u64,
                COUNT,
                GROUP,
                IOU_PBUF_RING_INC,
            )?;
        }
        Ok(b)
    }

    fn push(&mut self, id: u16) {
        let at = (self.tail & (COUNT - 1)) as usize;
        // SAFETY: `at` < COUNT; the kernel reads an entry only once the tail covers it.
        let e = unsafe { &mut *self.entries.add(at) };
        // SAFETY: id < COUNT, so the offset is inside `mem`.
        e.set_addr(unsafe { self.mem.add(id as usize * BYTES) } as u64);
        e.set_len(BYTES as u32);
        e.set_bid(id);
        self.consumed[id as usize] = 0;
        self.tail = self.tail.wrapping_add(1);
    }

    fn publish(&mut self) {
        // SAFETY: the tail field overlays the first entry's reserved field.
        let tail =
            unsafe { BufRingEntry::tail(self.entries) } as *const std::sync::atomic::AtomicU16;
        // SAFETY: aligned and alive; the kernel reads it with acquire semantics.
        unsafe { (*tail).store(self.tail, std::sync::atomic::Ordering::Release) };
    }

    /// The bytes a receive put in buffer `id` (`len` of them, after what the kernel put there
    /// before), as an address; `flags` are the completion's. The address stays valid until
    /// [`BufRing::recycle`].
    pub(crate) fn take(&mut self, id: u16, len: u32, flags: u32) -> usize {
        let i = (id % COUNT) as usize;
        let start = self.consumed[i] as usize;
        self.consumed[i] += len;
        if flags & CQE_F_BUF_MORE == 0 {
            self.done.push(id % COUNT);
        }
        // SAFETY: the kernel wrote `len` bytes from `start`, inside buffer `i`.
        unsafe { self.mem.add(i * BYTES + start) as usize }
    }

    /// Moves the buffers the kernel left so far to `held` (their events wait for the worker).
    pub(crate) fn take_done(&mut self, held: &mut Vec<u16>) {
        held.append(&mut self.done);
    }

    /// Buffers held back until now go back with the next [`BufRing::recycle`].
    pub(crate) fn hold_back(&mut self, held: &mut Vec<u16>) {
        self.done.append(held);
    }

    /// Buffers the kernel left (no more bytes will be put there) go back to it: the worker has
    /// read them.
    pub(crate) fn recycle(&mut self) {
        if self.done.is_empty() {
            return;
        }
        let done = std::mem::take(&mut self.done);
        for &id in &done {
            self.push(id);
        }
        self.done = done;
        self.done.clear();
        self.publish();
    }
}

impl Drop for BufRing {
    fn drop(&mut self) {
        // SAFETY: allocated in `register` with these layouts; the ring that used them is gone.
        unsafe {
            dealloc(self.entries as *mut u8, self.entries_layout);
            dealloc(self.mem, self.mem_layout);
        }
    }
}

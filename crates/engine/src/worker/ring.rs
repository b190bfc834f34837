//! The worker's side of the io_uring backend: completions become the readable and writable
//! calls epoll's readiness makes, and the sends queued in an iteration are submitted before the
//! wait.

use super::*;
use crate::ring::{self, RingEvent, RingSocket};

impl Worker {
    /// Handles one completion.
    pub(super) fn on_ring(&mut self, ev: RingEvent) {
        match ev {
            RingEvent::Wake => self.poll.clear_waker(),
            RingEvent::Connected { slot, gen } => {
                if let Some(s) = self.ring_socket(slot, gen) {
                    s.connect_polled();
                    self.on_writable(slot);
                }
            }
            RingEvent::Data {
                slot,
                gen,
                addr,
                len,
            } => {
                let Some(s) = self.ring_socket(slot, gen) else {
                    return;
                };
                s.lend(addr, len);
                self.on_readable(slot, false);
                // The buffer is reused after the wait: what was not read is kept.
                if let Some(s) = self.ring_socket(slot, gen) {
                    s.unlend();
                }
            }
            RingEvent::Ended { slot, gen, errno } => {
                if let Some(s) = self.ring_socket(slot, gen) {
                    s.ended(errno);
                    self.on_readable(slot, true);
                }
            }
            RingEvent::Sent { slot, gen, res } => match self.ring_socket(slot, gen) {
                Some(s) => {
                    if s.sent(res) {
                        self.on_writable(slot);
                    }
                }
                // Dropped after this completion was reaped: its buffer is free now.
                None => {
                    ring::with_core(|c| c.send_done_unclaimed(slot, gen));
                }
            },
        }
    }

    /// Submits (with the wait) what sockets queued since the last wait.
    pub(super) fn flush_ring(&mut self) {
        let dirty = ring::with_core(|c| std::mem::take(&mut c.dirty)).unwrap_or_default();
        for &(slot, gen) in &dirty {
            if let Some(s) = self.ring_socket(slot as usize, gen) {
                s.submit();
            }
        }
        // The list's allocation is kept for the next iteration.
        ring::with_core(|c| {
            if c.dirty.is_empty() {
                let mut d = dirty;
                d.clear();
                c.dirty = d;
            }
        });
    }

    /// Connection `slot`'s socket if it is still the one of generation `gen`.
    fn ring_socket(&mut self, slot: usize, gen: u32) -> Option<&mut RingSocket> {
        let s = self.conns.get_mut(slot)?.stream.as_mut()?.ring_mut()?;
        (s.gen() == gen).then_some(s)
    }
}

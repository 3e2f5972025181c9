//! A reserved, not yet committed event.

use crate::cpu_buffer::{CpuBuffer, Placement};

/// Room for one event in a CPU buffer, between reserve and commit.
///
/// Write the payload with [`write`](Reservation::write) (or piecewise with
/// [`write_at`](Reservation::write_at)), then [`commit`](Reservation::commit).
/// Dropped without commit (an early return, a panic unwinding), it becomes a
/// discard record: the page is never left waiting for it.
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// use ringtrace_clock::Counter;
/// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
/// let ring = RingBuffer::new(config, Counter::new()).unwrap();
/// let mut r = ring.reserve(5).unwrap();
/// r.write(b"hello");
/// r.commit();
/// assert_eq!(ring.stats().hit, 1);
/// ```
#[must_use = "a reservation not committed becomes a discard record"]
#[derive(Debug)]
pub struct Reservation<'a> {
    buffer: &'a CpuBuffer,
    placement: Placement,
}

impl<'a> Reservation<'a> {
    #[inline]
    pub(crate) fn new(buffer: &'a CpuBuffer, placement: Placement) -> Self {
        Reservation { buffer, placement }
    }

    /// The payload length reserved.
    #[inline]
    pub fn len(&self) -> usize {
        self.buffer.payload_len(&self.placement)
    }

    /// Whether the payload is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The event's timestamp, in clock ticks.
    #[inline]
    pub fn timestamp(&self) -> u64 {
        self.placement.ts
    }

    /// The CPU buffer the event went to.
    #[inline]
    pub fn cpu(&self) -> usize {
        self.buffer.cpu()
    }

    /// Writes the whole payload. `bytes` longer than the reservation are cut
    /// to it; shorter ones leave the rest zero.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        let len = self.len();
        let n = bytes.len().min(len);
        let (phys, at) = (self.placement.phys(), self.placement.payload_at());
        self.buffer.words.write_bytes(phys, at, &bytes[..n]);
        if n < len {
            self.zero_from(n);
        }
    }

    /// Zeroes the payload from `n`: the page may hold an older lap's bytes,
    /// and they must never show.
    #[cold]
    fn zero_from(&mut self, n: usize) {
        let (phys, at) = (self.placement.phys(), self.placement.payload_at());
        for off in (n.next_multiple_of(4)..self.len().next_multiple_of(4)).step_by(4) {
            self.buffer.words.store(phys, at + off, 0);
        }
    }

    /// Writes `bytes` at `offset` into the payload; `offset` must be a
    /// multiple of 4 (pieces are whole words). Bytes past the reservation are
    /// cut off; returns how many were written.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> usize {
        if offset % 4 != 0 || offset >= self.len() {
            return 0;
        }
        let n = bytes.len().min(self.len() - offset);
        self.buffer.words.write_bytes(
            self.placement.phys(),
            self.placement.payload_at() + offset,
            &bytes[..n],
        );
        n
    }

    /// Commits the event: once every reservation of its page is committed,
    /// the page is readable as a whole.
    #[inline]
    pub fn commit(self) {
        // No Drop: it would turn the event into a discard record.
        let this = std::mem::ManuallyDrop::new(self);
        this.buffer.finish(&this.placement, true);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        self.buffer.finish(&self.placement, false);
    }
}

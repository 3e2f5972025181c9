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
/// let ring = RingBuffer::new(RingConfig::default().cpus(1), Counter::new()).unwrap();
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
    committed: bool,
}

impl<'a> Reservation<'a> {
    pub(crate) fn new(buffer: &'a CpuBuffer, placement: Placement) -> Self {
        Reservation {
            buffer,
            placement,
            committed: false,
        }
    }

    /// The payload length reserved.
    pub fn len(&self) -> usize {
        self.placement.len
    }

    /// Whether the payload is empty.
    pub fn is_empty(&self) -> bool {
        self.placement.len == 0
    }

    /// The event's timestamp, in clock ticks.
    pub fn timestamp(&self) -> u64 {
        self.placement.ts
    }

    /// The CPU buffer the event went to.
    pub fn cpu(&self) -> usize {
        self.buffer.cpu()
    }

    /// Writes the whole payload. `bytes` longer than the reservation are cut
    /// to it; shorter ones leave the rest zero.
    #[inline]
    pub fn write(&mut self, bytes: &[u8]) {
        let n = bytes.len().min(self.placement.len);
        self.buffer.words.write_bytes(
            self.placement.phys,
            self.placement.payload_at(),
            &bytes[..n],
        );
    }

    /// Writes `bytes` at `offset` into the payload; `offset` must be a
    /// multiple of 4 (pieces are whole words). Bytes past the reservation are
    /// cut off; returns how many were written.
    pub fn write_at(&mut self, offset: usize, bytes: &[u8]) -> usize {
        if offset % 4 != 0 || offset >= self.placement.len {
            return 0;
        }
        let n = bytes.len().min(self.placement.len - offset);
        self.buffer.words.write_bytes(
            self.placement.phys,
            self.placement.payload_at() + offset,
            &bytes[..n],
        );
        n
    }

    /// Commits the event: once every reservation of its page is committed,
    /// the page is readable as a whole.
    #[inline]
    pub fn commit(mut self) {
        self.committed = true;
        self.buffer.finish(&self.placement, true);
    }
}

impl Drop for Reservation<'_> {
    fn drop(&mut self) {
        if !self.committed {
            self.buffer.finish(&self.placement, false);
        }
    }
}

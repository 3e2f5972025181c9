//! A writer bound to one CPU's buffer.

use crate::cpu_buffer::CpuBuffer;
use crate::ring::RingBuffer;
use crate::write::error::ReserveError;
use crate::write::reservation::Reservation;
use ringtrace_clock::Clock;

/// Writes to one CPU's buffer of a ring, whatever CPU the caller is on:
/// the way to write to a chosen CPU's buffer, whole or in pieces, with the
/// buffer looked up once, when the writer was made
/// ([`RingBuffer::cpu_writer`]).
///
/// For a thread that writes many events to one buffer, as a thread pinned
/// to a CPU does (`ringtrace hammer`'s producers, a per-CPU worker): each
/// event then skips the CPU number's range check and the buffer's address.
/// Any thread may use it, on any CPU: off the buffer's CPU its writes are
/// remote updates on the rseq path, as any write to another CPU's
/// buffer is (system calls, half a microsecond or more an event, until
/// the buffer goes into shared mode: see [`RingBuffer::cpu_writer`]). Copy it freely; it is two references.
///
/// ```
/// use ringtrace_clock::Counter;
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// let ring = RingBuffer::new(RingConfig::default().cpus(1).per_cpu_bytes(64 * 1024), Counter::new())?;
/// let writer = ring.cpu_writer(0);
/// assert_eq!(writer.cpu(), 0);
/// for i in 0..3u32 {
///     writer.write(&i.to_le_bytes())?;
/// }
/// let mut r = writer.reserve(4)?;
/// r.write(b"four");
/// r.commit();
/// assert_eq!(ring.stats().hit, 4);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct CpuWriter<'a, C: Clock> {
    ring: &'a RingBuffer<C>,
    buffer: &'a CpuBuffer,
}

// Two references: copied whatever C is (a derive would ask C: Copy).
impl<C: Clock> Clone for CpuWriter<'_, C> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<C: Clock> Copy for CpuWriter<'_, C> {}

impl<'a, C: Clock> CpuWriter<'a, C> {
    pub(crate) fn new(ring: &'a RingBuffer<C>, buffer: &'a CpuBuffer) -> Self {
        CpuWriter { ring, buffer }
    }

    /// The CPU whose buffer this writes.
    pub fn cpu(&self) -> usize {
        self.buffer.cpu()
    }

    /// Records `payload` as one event on this writer's CPU's buffer;
    /// returns its timestamp. As [`RingBuffer::write`] does on the
    /// caller's CPU: on the rseq path with a bare-rdtsc clock, written
    /// whole.
    #[inline]
    pub fn write(&self, payload: &[u8]) -> Result<u64, ReserveError> {
        // Inline, as `RingBuffer::write` does it.
        match self.ring.write_in(self.buffer, payload) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.ring.blocks() =>
            {
                self.ring.write_blocking(self.buffer, payload, e)
            }
            r => r,
        }
    }

    /// Reserves `len` payload bytes on this writer's CPU's buffer, as
    /// [`RingBuffer::reserve`] does on the caller's CPU.
    #[inline]
    pub fn reserve(&self, len: usize) -> Result<Reservation<'a>, ReserveError> {
        match self.ring.reserve_in(self.buffer, len) {
            Err(e @ (ReserveError::Full | ReserveError::Busy | ReserveError::Preparing))
                if self.ring.blocks() =>
            {
                self.ring.reserve_blocking(self.buffer, len, e)
            }
            r => r,
        }
    }
}

//! The ring: one [`CpuBuffer`] per CPU, written on the CPU the writer is on.

use crate::config::{ConfigError, Geometry, RingConfig};
use crate::cpu_buffer::{CpuBuffer, ReserveError};
use crate::iter::CpuIter;
use crate::merge::MergedReader;
use crate::reservation::Reservation;
use crate::stats::Stats;
use ringtrace_clock::{Clock, ClockInfo};

/// Per-CPU lock-free ring buffers stamped by one clock.
///
/// ```
/// use ringtrace_clock::Counter;
/// use ringtrace_ring::{RingBuffer, RingConfig};
///
/// // Any clock: Tsc, Mono, a ClockSpec built from a name, or a Counter.
/// let ring = RingBuffer::new(RingConfig::default().per_cpu_bytes(64 * 1024), Counter::new())?;
/// let mut r = ring.reserve(8)?;
/// r.write(&42u64.to_le_bytes());
/// r.commit();
/// let events: Vec<_> = ring.merged().collect();
/// assert_eq!(events[0].payload, 42u64.to_le_bytes());
/// assert_eq!(ring.stats().hit, ring.stats().accounted());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct RingBuffer<C: Clock> {
    clock: C,
    buffers: Box<[CpuBuffer]>,
    geometry: Geometry,
}

impl<C: Clock> RingBuffer<C> {
    /// Builds a ring; a bad configuration is an error naming what is valid.
    pub fn new(config: RingConfig, clock: C) -> Result<Self, ConfigError> {
        let geometry = config.validate()?;
        crate::cpu::init();
        let buffers = (0..geometry.cpus)
            .map(|cpu| CpuBuffer::new(cpu, geometry))
            .collect::<Result<_, _>>()?;
        Ok(RingBuffer {
            clock,
            buffers,
            geometry,
        })
    }

    /// The validated shape of the ring.
    pub fn geometry(&self) -> Geometry {
        self.geometry
    }

    /// The clock events are stamped with.
    pub fn clock(&self) -> &C {
        &self.clock
    }

    /// What the clock is, to convert timestamps.
    pub fn clock_info(&self) -> ClockInfo {
        self.clock.info()
    }

    /// Number of CPU buffers.
    pub fn cpus(&self) -> usize {
        self.buffers.len()
    }

    /// All CPU buffers.
    pub fn cpu_buffers(&self) -> &[CpuBuffer] {
        &self.buffers
    }

    /// The buffer of `cpu`, if there is one.
    pub fn cpu_buffer(&self, cpu: usize) -> Option<&CpuBuffer> {
        self.buffers.get(cpu)
    }

    #[inline(always)]
    fn buffer_for(&self, cpu: usize) -> &CpuBuffer {
        let n = self.buffers.len();
        // No division on the fast path: a CPU number is almost always below
        // the number of possible CPUs.
        let index = if cpu < n { cpu } else { cpu % n };
        &self.buffers[index]
    }

    /// Reserves `len` payload bytes on the caller's CPU buffer.
    ///
    /// Lock-free, no system call, no allocation; async-signal-safe.
    #[inline]
    pub fn reserve(&self, len: usize) -> Result<Reservation<'_>, ReserveError> {
        self.reserve_on(crate::cpu::current_cpu(), len)
    }

    /// Reserves on the buffer of `cpu` (taken modulo the buffer count),
    /// whatever CPU the caller is on.
    #[inline(always)]
    pub fn reserve_on(&self, cpu: usize, len: usize) -> Result<Reservation<'_>, ReserveError> {
        self.buffer_for(cpu).reserve(&self.clock, len)
    }

    /// Records `payload` as one event on the caller's CPU; returns its
    /// timestamp.
    #[inline]
    pub fn write(&self, payload: &[u8]) -> Result<u64, ReserveError> {
        self.write_on(crate::cpu::current_cpu(), payload)
    }

    /// Records `payload` on the buffer of `cpu`; returns its timestamp.
    #[inline]
    pub fn write_on(&self, cpu: usize, payload: &[u8]) -> Result<u64, ReserveError> {
        let mut r = self.reserve_on(cpu, payload.len())?;
        r.write(payload);
        let ts = r.timestamp();
        r.commit();
        Ok(ts)
    }

    /// Counters summed over every CPU buffer.
    pub fn stats(&self) -> Stats {
        let mut total = Stats::default();
        for b in self.buffers.iter() {
            total.add(&b.stats());
        }
        total
    }

    /// A consuming reader over every CPU, in timestamp order.
    pub fn merged(&self) -> MergedReader<'_, C> {
        MergedReader::new(self)
    }

    /// A non-consuming iterator over the unread events of `cpu`.
    pub fn iter(&self, cpu: usize) -> Option<CpuIter<'_>> {
        self.buffers.get(cpu).map(CpuIter::new)
    }

    /// Closes every CPU's open page, so all committed events can be read as
    /// whole pages.
    pub fn flush(&self) {
        for b in self.buffers.iter() {
            b.flush();
        }
    }
}

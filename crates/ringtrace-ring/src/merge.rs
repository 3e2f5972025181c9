//! A consuming reader that yields every CPU's events in timestamp order.

use crate::event::Event;
use crate::ring::RingBuffer;
use ringtrace_clock::Clock;

/// Merges the CPU buffers of a ring by timestamp, consuming as it goes: it
/// peeks at each CPU's next timestamp and consumes only the earliest event,
/// so dropping it part-way leaves every event it did not yield in its
/// buffer. It yields what is readable now and ends when every buffer is
/// empty; call it again later for more.
///
/// Order across CPUs is as good as the clock's cross-CPU guarantee; within
/// a CPU buffer it is exact.
///
/// ```
/// use ringtrace_ring::{RingBuffer, RingConfig};
/// use ringtrace_clock::Counter;
/// let config = RingConfig::default().cpus(2).per_cpu_bytes(16 * 1024);
/// let ring = RingBuffer::new(config, Counter::new()).unwrap();
/// ring.write_on(1, b"first").unwrap();
/// ring.write_on(0, b"second").unwrap();
/// let order: Vec<usize> = ring.merged().map(|e| e.cpu).collect();
/// assert_eq!(order, vec![1, 0]);
/// ```
#[derive(Debug)]
pub struct MergedReader<'a, C: Clock> {
    ring: &'a RingBuffer<C>,
}

impl<'a, C: Clock> MergedReader<'a, C> {
    pub(crate) fn new(ring: &'a RingBuffer<C>) -> Self {
        MergedReader { ring }
    }
}

impl<C: Clock> Iterator for MergedReader<'_, C> {
    type Item = Event;

    /// Peeks at each CPU's next timestamp and consumes only the earliest
    /// event, so that a merge dropped part-way holds nothing back: every
    /// event it did not yield is still in its buffer.
    fn next(&mut self) -> Option<Event> {
        let buffers = self.ring.cpu_buffers();
        loop {
            let (_, cpu) = buffers
                .iter()
                .enumerate()
                .filter_map(|(cpu, b)| b.peek_timestamp().map(|ts| (ts, cpu)))
                .min()?;
            // None only if a writer overwrote it since the peek: look again.
            if let Some(event) = buffers[cpu].read_event() {
                return Some(event);
            }
        }
    }
}

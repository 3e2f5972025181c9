//! A consuming reader that yields every CPU's events in timestamp order.

use crate::event::Event;
use crate::ring::RingBuffer;
use ringtrace_clock::Clock;

/// Merges the CPU buffers of a ring by timestamp, consuming as it goes: a
/// k-way merge over each CPU's next event. It yields what is readable now
/// and ends when every buffer is empty; call it again later for more.
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
    heads: Vec<Option<Event>>,
}

impl<'a, C: Clock> MergedReader<'a, C> {
    pub(crate) fn new(ring: &'a RingBuffer<C>) -> Self {
        MergedReader {
            ring,
            heads: vec![None; ring.cpus()],
        }
    }
}

impl<C: Clock> Iterator for MergedReader<'_, C> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        for (cpu, head) in self.heads.iter_mut().enumerate() {
            if head.is_none() {
                *head = self.ring.cpu_buffers()[cpu].read_event();
            }
        }
        let (_, cpu) = self
            .heads
            .iter()
            .enumerate()
            .filter_map(|(cpu, h)| h.as_ref().map(|e| (e.ts, cpu)))
            .min()?;
        self.heads[cpu].take()
    }
}

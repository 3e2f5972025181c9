//! A consuming reader that yields every CPU's events in timestamp order.

use super::consume::{peek_timestamp, read_event_with};
use super::state::ReaderState;
use crate::event::Event;
use crate::shared::SharedState;
use crate::sync::Mutex;
use ringtrace_clock::Clock;
use std::marker::PhantomData;

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
/// ring.cpu_writer(1).write(b"first").unwrap();
/// ring.cpu_writer(0).write(b"second").unwrap();
/// let order: Vec<usize> = ring.merged().map(|e| e.cpu).collect();
/// assert_eq!(order, vec![1, 0]);
/// ```
#[derive(Debug)]
pub struct MergedReader<'a, C: Clock> {
    buffers: Vec<Buffer<'a>>,
    _clock: PhantomData<&'a C>,
}

/// One CPU buffer as the merge reads it.
#[derive(Debug)]
struct Buffer<'a> {
    shared: &'a SharedState,
    reader: &'a Mutex<ReaderState>,
}

impl<'a, C: Clock> MergedReader<'a, C> {
    pub(crate) fn new(
        buffers: impl Iterator<Item = (&'a SharedState, &'a Mutex<ReaderState>)>,
    ) -> Self {
        MergedReader {
            buffers: buffers
                .map(|(shared, reader)| Buffer { shared, reader })
                .collect(),
            _clock: PhantomData,
        }
    }
}

impl<C: Clock> Iterator for MergedReader<'_, C> {
    type Item = Event;

    fn next(&mut self) -> Option<Event> {
        loop {
            let (_, b) = self
                .buffers
                .iter()
                .filter_map(|b| peek_timestamp(b.shared, &mut b.reader.lock()).map(|ts| (ts, b)))
                .min_by_key(|(ts, b)| (*ts, b.shared.cpu()))?;
            let cpu = b.shared.cpu();
            let event =
                read_event_with(b.shared, &mut b.reader.lock(), |ts, payload, lost| Event {
                    cpu,
                    ts,
                    payload: payload.to_vec(),
                    lost_before: lost,
                });
            if let Some(event) = event {
                return Some(event);
            }
        }
    }
}

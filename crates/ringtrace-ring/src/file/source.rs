//! Events read a piece at a time: a container of pages too large to hold
//! in memory at once (a session directory of hours) gives each CPU
//! buffer's events a batch at a time, so that a reader that goes through
//! them once, in order (a streaming export), holds one batch per CPU
//! buffer, whatever the trace's size.

use super::{FillSample, LossNote};
use crate::Event;

/// One batch of a CPU buffer's events (in the order recorded), with the
/// fill samples read with them.
#[derive(Debug, Clone, Default, PartialEq)]
#[non_exhaustive]
pub struct EventBatch {
    /// The events.
    pub events: Vec<Event>,
    /// How full the buffer was when drained, in time order
    /// ([`CpuRecovery::fill`](super::CpuRecovery::fill)).
    pub fill: Vec<FillSample>,
    /// Why events were lost, where the source records it
    /// ([`CpuRecovery::loss_notes`](super::CpuRecovery::loss_notes)), with
    /// `before` counted within this batch's events: a note with `before`
    /// equal to their count is for losses after the batch's last event,
    /// carried by the next batch's first.
    pub loss_notes: Vec<LossNote>,
}

impl EventBatch {
    /// A batch of `events`, no fill samples and no loss notes.
    pub fn new(events: Vec<Event>) -> EventBatch {
        EventBatch {
            events,
            fill: Vec::new(),
            loss_notes: Vec::new(),
        }
    }

    /// The same batch with `fill`.
    pub fn with_fill(mut self, fill: Vec<FillSample>) -> EventBatch {
        self.fill = fill;
        self
    }

    /// The same batch with `notes` (see [`EventBatch::loss_notes`]).
    pub fn with_loss_notes(mut self, notes: Vec<LossNote>) -> EventBatch {
        self.loss_notes = notes;
        self
    }
}

/// A reader that gives the events of each process's CPU buffers a batch
/// at a time, with `lost_before` counted as [`Recovery`](super::Recovery)
/// counts it. `process` indexes the reader's processes (its recoveries,
/// in order).
///
/// ```
/// use ringtrace_ring::file::{EventBatch, EventSource};
/// use ringtrace_ring::Event;
///
/// /// Two batches of one event each, on every CPU.
/// struct Two;
/// impl EventSource for Two {
///     fn batches(&self, _process: usize, cpu: usize) -> Box<dyn Iterator<Item = EventBatch> + '_> {
///         let event = |ts| Event { cpu, ts, payload: vec![1], lost_before: 0 };
///         Box::new(vec![EventBatch::new(vec![event(1)]), EventBatch::new(vec![event(2)])].into_iter())
///     }
/// }
/// let all: Vec<u64> = Two.batches(0, 1).flat_map(|b| b.events).map(|e| e.ts).collect();
/// assert_eq!(all, [1, 2]);
/// ```
pub trait EventSource {
    /// CPU buffer `cpu` of process `process`: its events in the order
    /// recorded, a batch at a time (none for a process or CPU it does not
    /// have).
    fn batches(&self, process: usize, cpu: usize) -> Box<dyn Iterator<Item = EventBatch> + '_>;
}

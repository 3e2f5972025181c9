//! A trace's events (and its buffers' fill samples) one at a time, in
//! time order, whether the recoveries hold them or a source gives them a
//! batch at a time: a merge of each process's CPU buffers by their next
//! item's time on the timeline (ties by pid, then CPU), holding one batch
//! per buffer.

use crate::trace::Trace;
use ringtrace_ring::file::{EventBatch, FillSample, LossNote};
use ringtrace_ring::Event;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One item of a trace, in time order: an event, or a buffer's fill
/// sample (see [`CpuRecovery::fill`](ringtrace_ring::file::CpuRecovery::fill)).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Item<'a> {
    /// An event of the `process`-th process, at `ts` on the timeline.
    Event {
        /// The process's place in [`Trace::processes`].
        process: usize,
        /// The event.
        event: &'a Event,
        /// Its time on the timeline.
        ts: u64,
    },
    /// How full CPU buffer `cpu` of the `process`-th process was, at `ts`
    /// on the timeline.
    Fill {
        /// The process's place in [`Trace::processes`].
        process: usize,
        /// The CPU buffer.
        cpu: usize,
        /// The sample.
        sample: &'a FillSample,
        /// Its time on the timeline.
        ts: u64,
    },
}

/// An event with why the events its CPU buffer lost just before it were
/// lost, as [`Trace::for_each_event_with_causes`] gives it.
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct CausedEvent<'a> {
    /// The process's place in [`Trace::processes`].
    pub process: usize,
    /// The event.
    pub event: &'a Event,
    /// Its time on the timeline.
    pub ts: u64,
    /// Why the events lost just before it (its `lost_before`) were lost,
    /// where the trace records it, each note with its count; their sum
    /// may be less than `lost_before` (the rest's cause is not recorded).
    /// Empty when nothing was lost before it.
    pub causes: &'a [LossNote],
}

/// What [`Trace::for_each_item`]'s walk calls: an item, and an event's
/// loss notes.
type ItemSink<'f, E> = dyn FnMut(Item<'_>, &[LossNote]) -> Result<(), E> + 'f;

/// One CPU buffer's items not yet given.
struct Stream<'s> {
    process: usize,
    cpu: usize,
    batches: Box<dyn Iterator<Item = EventBatch> + 's>,
    next: VecDeque<Event>,
    fill: VecDeque<FillSample>,
    /// The loss notes of the batch being given, `before` counted within
    /// it, and the notes the one before left after its last event.
    notes: Vec<LossNote>,
    /// Events in the batch being given, and how many have been given.
    batch_len: usize,
    given: usize,
}

/// What a stream gives next.
enum Head {
    Event(u64),
    Fill(u64),
}

impl Stream<'_> {
    /// The time of the next item (a fill sample before an event of its
    /// time), a new batch read when the last is used up.
    fn head(&mut self) -> Option<Head> {
        while self.next.is_empty() && self.fill.is_empty() {
            let batch = self.batches.next()?;
            // Losses after the last batch's last event are carried by this
            // batch's first.
            let mut notes: Vec<LossNote> = std::mem::take(&mut self.notes)
                .into_iter()
                .filter(|n| n.before >= self.batch_len)
                .map(|mut n| {
                    n.before = 0;
                    n
                })
                .collect();
            notes.extend(batch.loss_notes);
            self.notes = notes;
            self.batch_len = batch.events.len();
            self.given = 0;
            self.next = batch.events.into();
            self.fill = batch.fill.into();
        }
        match (self.next.front(), self.fill.front()) {
            (Some(e), Some(f)) if f.ts <= e.ts => Some(Head::Fill(f.ts)),
            (Some(e), _) => Some(Head::Event(e.ts)),
            (None, Some(f)) => Some(Head::Fill(f.ts)),
            (None, None) => None,
        }
    }
}

impl Stream<'_> {
    /// Its next event, and why the events its CPU lost just before it
    /// were lost, where the source says (only looked at when some were).
    fn pop_event(&mut self) -> Option<(Event, Vec<LossNote>)> {
        let e = self.next.pop_front()?;
        let at = self.given;
        self.given += 1;
        let notes = if e.lost_before > 0 {
            self.notes
                .iter()
                .filter(|n| n.before == at)
                .cloned()
                .collect()
        } else {
            Vec::new()
        };
        Some((e, notes))
    }
}

/// The loss notes of `e`, one of `events` (by address), that say why the
/// events lost just before it were lost.
fn notes_of(events: &[Event], notes: &[LossNote], e: &Event) -> Vec<LossNote> {
    let range = events.as_ptr_range();
    let at: *const Event = e;
    if !range.contains(&at) {
        return Vec::new();
    }
    let index = (at as usize - range.start as usize) / std::mem::size_of::<Event>();
    notes
        .iter()
        .filter(|n| n.before == index)
        .cloned()
        .collect()
}

impl<'r> Trace<'r> {
    /// Calls `f` with each event (its process's index, the event, its time
    /// on the timeline) in time order, stopping at the first error.
    ///
    /// From the recoveries, it is [`Trace::events`]' order. From a source
    /// ([`Trace::with_source`]), each CPU buffer's events are taken in the
    /// order recorded and the buffers merged by their next event's time,
    /// ties by pid then CPU: the same order where each buffer's times
    /// never go back, and one batch per buffer in memory.
    ///
    /// ```
    /// use ringtrace_export::Trace;
    /// use ringtrace_ring::{file, RingBuffer, RingConfig};
    /// let dir = std::env::temp_dir().join(format!("ringtrace-merge-doc-{}", std::process::id()));
    /// std::fs::create_dir_all(&dir)?;
    /// let path = dir.join("a.ring");
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(8192).file(&path);
    /// let ring = RingBuffer::new(config, ringtrace_clock::Counter::new())?;
    /// ring.write(b"one")?;
    /// ring.write(b"two")?;
    /// drop(ring);
    /// let recovery = file::recover(&path)?;
    /// let mut seen = Vec::new();
    /// Trace::single(&recovery).for_each_event::<std::io::Error>(&mut |_, e, _| {
    ///     seen.push(e.payload.clone());
    ///     Ok(())
    /// })?;
    /// assert_eq!(seen, [b"one".to_vec(), b"two".to_vec()]);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn for_each_event<E>(
        &self,
        f: &mut dyn FnMut(usize, &Event, u64) -> Result<(), E>,
    ) -> Result<(), E> {
        self.for_each_item(&mut |item| match item {
            Item::Event { process, event, ts } => f(process, event, ts),
            Item::Fill { .. } => Ok(()),
        })
    }

    /// [`Trace::for_each_event`] with, for each event, why the events its
    /// CPU buffer lost just before it (its `lost_before`) were lost, where
    /// the trace records it: a session's loss notes, from its recoveries
    /// or, streamed, from each batch ([`CausedEvent::causes`]).
    pub fn for_each_event_with_causes<E>(
        &self,
        f: &mut dyn FnMut(CausedEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        self.walk_items(&mut |item, causes| match item {
            Item::Event { process, event, ts } => f(CausedEvent {
                process,
                event,
                ts,
                causes,
            }),
            Item::Fill { .. } => Ok(()),
        })
    }

    /// [`Trace::for_each_event`] with the buffers' fill samples among the
    /// events, in time order (a sample before an event of its time).
    pub fn for_each_item<E>(&self, f: &mut dyn FnMut(Item<'_>) -> Result<(), E>) -> Result<(), E> {
        self.walk_items(&mut |item, _| f(item))
    }

    /// [`Trace::for_each_item`], with each event's loss notes (see
    /// [`Trace::for_each_event_with_causes`]).
    fn walk_items<E>(&self, f: &mut ItemSink<'_, E>) -> Result<(), E> {
        let processes = self.processes();
        let Some(source) = self.source() else {
            let mut fills: Vec<(u64, u32, usize, usize, &FillSample)> = Vec::new();
            for (i, p) in processes.iter().enumerate() {
                for c in &p.recovery.cpus {
                    fills.extend(
                        c.fill
                            .iter()
                            .map(|s| (p.timeline(s.ts), p.pid(), c.cpu, i, s)),
                    );
                }
            }
            fills.sort_by_key(|(ts, pid, cpu, _, _)| (*ts, *pid, *cpu));
            let mut fills = fills.into_iter().peekable();
            let events = self.events();
            let mut events = events.iter().peekable();
            // A fill sample before an event of its time.
            loop {
                let fill_first = match (fills.peek(), events.peek()) {
                    (Some(fill), Some(t)) => fill.0 <= t.ts,
                    (Some(_), None) => true,
                    (None, Some(_)) => false,
                    (None, None) => return Ok(()),
                };
                if fill_first {
                    let Some((ts, _, cpu, process, sample)) = fills.next() else {
                        continue;
                    };
                    let item = Item::Fill {
                        process,
                        cpu,
                        sample,
                        ts,
                    };
                    f(item, &[])?;
                } else {
                    let Some(t) = events.next() else { continue };
                    let notes: Vec<LossNote> = if t.event.lost_before > 0 {
                        processes[t.process]
                            .recovery
                            .cpus
                            .iter()
                            .find(|c| c.cpu == t.event.cpu)
                            .map(|c| notes_of(&c.events, &c.loss_notes, t.event))
                            .unwrap_or_default()
                    } else {
                        Vec::new()
                    };
                    let item = Item::Event {
                        process: t.process,
                        event: t.event,
                        ts: t.ts,
                    };
                    f(item, &notes)?;
                }
            }
        };
        let mut streams: Vec<Stream<'_>> = Vec::new();
        for (i, p) in processes.iter().enumerate() {
            for cpu in 0..p.recovery.cpus.len() {
                streams.push(Stream {
                    process: i,
                    cpu,
                    batches: source.batches(i, cpu),
                    next: VecDeque::new(),
                    fill: VecDeque::new(),
                    notes: Vec::new(),
                    batch_len: 0,
                    given: 0,
                });
            }
        }
        let key = |s: &mut Stream<'_>, at: usize| {
            let p = &processes[s.process];
            let (ts, fill) = match s.head()? {
                Head::Event(ts) => (ts, 1u8),
                Head::Fill(ts) => (ts, 0u8),
            };
            Some(Reverse((p.timeline(ts), fill, p.pid(), s.cpu, at)))
        };
        let mut heap = BinaryHeap::new();
        for (at, s) in streams.iter_mut().enumerate() {
            heap.extend(key(s, at));
        }
        while let Some(Reverse((ts, fill, _, _, at))) = heap.pop() {
            let s = &mut streams[at];
            if fill == 0 {
                if let Some(sample) = s.fill.pop_front() {
                    let item = Item::Fill {
                        process: s.process,
                        cpu: s.cpu,
                        sample: &sample,
                        ts,
                    };
                    f(item, &[])?;
                }
            } else if let Some((e, notes)) = s.pop_event() {
                let item = Item::Event {
                    process: s.process,
                    event: &e,
                    ts,
                };
                f(item, &notes)?;
            }
            heap.extend(key(s, at));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringtrace_ring::file::EventSource;
    use ringtrace_ring::{RingBuffer, RingConfig};

    /// One CPU: a batch of one event whose notes end after it, then a
    /// batch whose first event carries those losses and a note of its own.
    struct Batches;
    impl EventSource for Batches {
        fn batches(&self, _: usize, cpu: usize) -> Box<dyn Iterator<Item = EventBatch> + '_> {
            let event = |ts, lost_before| Event {
                cpu,
                ts,
                payload: vec![1],
                lost_before,
            };
            Box::new(
                vec![
                    EventBatch::new(vec![event(1, 0)])
                        .with_loss_notes(vec![LossNote::new(1, 2, "refused")]),
                    EventBatch::new(vec![event(2, 3), event(3, 4)]).with_loss_notes(vec![
                        LossNote::new(0, 1, "overwritten"),
                        LossNote::new(1, 4, "writer died"),
                    ]),
                ]
                .into_iter(),
            )
        }
    }

    #[test]
    fn a_streamed_events_causes_are_those_before_it_even_across_batches() {
        let config = RingConfig::default().cpus(1).per_cpu_bytes(8192);
        let ring = RingBuffer::new(config, ringtrace_clock::Counter::new()).unwrap();
        let recovery = ring.snapshot(Vec::new());
        let trace = Trace::single(&recovery).with_source(&Batches);
        let mut seen: Vec<(u64, Vec<(u64, String)>)> = Vec::new();
        trace
            .for_each_event_with_causes::<()>(&mut |e| {
                let notes = e.causes.iter().map(|n| (n.count, n.why.clone())).collect();
                seen.push((e.event.ts, notes));
                Ok(())
            })
            .unwrap();
        assert_eq!(
            seen,
            [
                (1, vec![]),
                (2, vec![(2, "refused".into()), (1, "overwritten".into())]),
                (3, vec![(4, "writer died".into())]),
            ]
        );
        let whole = trace.materialized();
        let notes: Vec<(usize, u64)> = whole[0].cpus[0]
            .loss_notes
            .iter()
            .map(|n| (n.before, n.count))
            .collect();
        assert_eq!(notes, [(1, 2), (1, 1), (2, 4)], "placed among all events");
    }
}

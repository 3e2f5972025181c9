//! A trace's events (and its buffers' fill samples) one at a time, in
//! time order, whether the recoveries hold them or a source gives them a
//! batch at a time: a merge of each process's CPU buffers by their next
//! item's time on the timeline (ties by pid, then CPU), holding one batch
//! per buffer.

use crate::trace::Trace;
use ringtrace_ring::file::{EventBatch, FillSample};
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

/// One CPU buffer's items not yet given.
struct Stream<'s> {
    process: usize,
    cpu: usize,
    batches: Box<dyn Iterator<Item = EventBatch> + 's>,
    next: VecDeque<Event>,
    fill: VecDeque<FillSample>,
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

    /// [`Trace::for_each_event`] with the buffers' fill samples among the
    /// events, in time order (a sample before an event of its time).
    pub fn for_each_item<E>(&self, f: &mut dyn FnMut(Item<'_>) -> Result<(), E>) -> Result<(), E> {
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
                let item = if fill_first {
                    let Some((ts, _, cpu, process, sample)) = fills.next() else {
                        continue;
                    };
                    Item::Fill {
                        process,
                        cpu,
                        sample,
                        ts,
                    }
                } else {
                    let Some(t) = events.next() else { continue };
                    Item::Event {
                        process: t.process,
                        event: t.event,
                        ts: t.ts,
                    }
                };
                f(item)?;
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
                    f(Item::Fill {
                        process: s.process,
                        cpu: s.cpu,
                        sample: &sample,
                        ts,
                    })?;
                }
            } else if let Some(e) = s.next.pop_front() {
                f(Item::Event {
                    process: s.process,
                    event: &e,
                    ts,
                })?;
            }
            heap.extend(key(s, at));
        }
        Ok(())
    }
}

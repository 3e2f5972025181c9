//! A trace's events one at a time, in time order, whether the
//! recoveries hold them or a source gives them a batch at a time: a
//! merge of each process's CPU buffers by their next event's time on the
//! timeline (ties by pid, then CPU), holding one batch per buffer.

use crate::trace::Trace;
use ringtrace_ring::Event;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// One CPU buffer's events not yet given.
struct Stream<'s> {
    process: usize,
    batches: Box<dyn Iterator<Item = Vec<Event>> + 's>,
    next: VecDeque<Event>,
}

impl Stream<'_> {
    /// The next event, a new batch read when the last is used up.
    fn head(&mut self) -> Option<&Event> {
        while self.next.is_empty() {
            self.next = self.batches.next()?.into();
        }
        self.next.front()
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
        let Some(source) = self.source() else {
            for t in self.events() {
                f(t.process, t.event, t.ts)?;
            }
            return Ok(());
        };
        let processes = self.processes();
        let mut streams: Vec<Stream<'_>> = Vec::new();
        for (i, p) in processes.iter().enumerate() {
            for cpu in 0..p.recovery.cpus.len() {
                streams.push(Stream {
                    process: i,
                    batches: source.batches(i, cpu),
                    next: VecDeque::new(),
                });
            }
        }
        let key = |s: &mut Stream<'_>, at: usize| {
            let p = &processes[s.process];
            s.head()
                .map(|e| Reverse((p.timeline(e.ts), p.pid(), e.cpu, at)))
        };
        let mut heap = BinaryHeap::new();
        for (at, s) in streams.iter_mut().enumerate() {
            heap.extend(key(s, at));
        }
        while let Some(Reverse((ts, _, _, at))) = heap.pop() {
            let s = &mut streams[at];
            if let Some(e) = s.next.pop_front() {
                f(s.process, &e, ts)?;
            }
            heap.extend(key(s, at));
        }
        Ok(())
    }
}

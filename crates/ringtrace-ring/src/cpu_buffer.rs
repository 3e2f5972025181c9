//! A CPU buffer: one CPU's ring of pages as the public API sees it. It is
//! two things: the state writers and readers share
//! ([`SharedState`](crate::shared::SharedState)), and the reader's own
//! state behind the reader lock (the kernel's `reader_lock`), which writers
//! never take. What it does is done by `write` and `read`; this is where
//! the two meet.

use crate::config::{ConfigError, Geometry};
use crate::event::{Event, PageBuf};
#[cfg(not(loom))]
use crate::page::memory::CpuMemory;
use crate::read::state::ReaderState;
use crate::read::{consume, count, drain, fixup};
use crate::shared::{Fresh, SharedState};
use crate::stats::Stats;
use crate::sync::Mutex;
use crate::write::claim;

/// One CPU's ring of pages.
#[derive(Debug)]
pub struct CpuBuffer {
    shared: SharedState,
    reader: Mutex<ReaderState>,
}

impl CpuBuffer {
    fn from_fresh(fresh: Fresh) -> Self {
        CpuBuffer {
            shared: fresh.state,
            reader: Mutex::new(ReaderState::new(fresh.reader_pages)),
        }
    }

    /// A buffer in `memory`, which is all zero.
    #[cfg(not(loom))]
    pub(crate) fn new(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Self {
        Self::from_fresh(SharedState::fresh(cpu, geometry, memory))
    }

    /// A buffer in anonymous memory; `zero_on_claim` as a file ring's
    /// (loom models a file ring so).
    pub(crate) fn anonymous(
        cpu: usize,
        geometry: Geometry,
        zero_on_claim: bool,
    ) -> Result<Self, ConfigError> {
        SharedState::anonymous(cpu, geometry, zero_on_claim).map(Self::from_fresh)
    }

    /// A buffer over a ring file's `memory` as its dead writer left it,
    /// checked and repaired (see `file::adopt`), or what is wrong with it.
    #[cfg(not(loom))]
    pub(crate) fn adopt(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Result<Self, String> {
        crate::file::adopt::adopt(cpu, geometry, memory).map(Self::from_fresh)
    }

    /// A reader over a ring file another process writes (see
    /// `file::LiveFile`): the words as they are, no page of its own, no
    /// zeroed pool (it never claims).
    #[cfg(not(loom))]
    pub(crate) fn drainer(cpu: usize, geometry: Geometry, memory: CpuMemory) -> Self {
        Self::from_fresh(Fresh {
            state: SharedState::assemble(
                cpu,
                geometry,
                memory,
                crate::page::zero_pool::ZeroPool::new([]),
            ),
            reader_pages: Vec::new(),
        })
    }

    /// The state writers and readers share.
    #[inline(always)]
    pub(crate) fn shared(&self) -> &SharedState {
        &self.shared
    }

    /// Pages overwrite claims stepped over in this buffer, as
    /// [`Stats::pages_stepped_over`](crate::Stats::pages_stepped_over)
    /// counts them, read with one load instead of the whole of
    /// [`stats`](Self::stats).
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let ring = RingBuffer::new(RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024), Counter::new())?;
    /// let sleeper = ring.cpu_writer(0).reserve(8)?; // a writer preempted here
    /// for i in 0..100u64 {
    ///     ring.cpu_writer(0).write(&i.to_le_bytes())?; // never refused
    /// }
    /// assert_eq!(ring.cpu_buffer(0).unwrap().pages_stepped_over(), 1);
    /// sleeper.commit(); // counted as overrun
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pages_stepped_over(&self) -> u64 {
        self.shared.stepped_over()
    }

    /// The shared state, before the buffer is shared (to choose its write
    /// path).
    pub(crate) fn shared_mut(&mut self) -> &mut SharedState {
        &mut self.shared
    }

    /// The reader's state, behind the reader lock.
    pub(crate) fn reader(&self) -> &Mutex<ReaderState> {
        &self.reader
    }

    /// The CPU this buffer belongs to.
    pub fn cpu(&self) -> usize {
        self.shared.cpu()
    }

    /// Consumes the next event of this CPU buffer, if one is readable.
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// ring.cpu_writer(0).write(b"abc").unwrap();
    /// let ev = ring.cpu_buffer(0).unwrap().read_event().unwrap();
    /// assert_eq!(ev.payload, b"abc");
    /// assert!(ring.cpu_buffer(0).unwrap().read_event().is_none());
    /// ```
    pub fn read_event(&self) -> Option<Event> {
        let cpu = self.shared.cpu();
        self.read_event_with(|ts, payload, lost_before| Event {
            cpu,
            ts,
            payload: payload.to_vec(),
            lost_before,
        })
    }

    /// Consumes the next event and hands it to `f` as (timestamp, payload,
    /// events lost just before it) without allocating.
    pub fn read_event_with<R>(&self, f: impl FnOnce(u64, &[u8], u64) -> R) -> Option<R> {
        consume::read_event_with(&self.shared, &mut self.reader.lock(), f)
    }

    /// The timestamp of the event [`read_event`](CpuBuffer::read_event)
    /// would return now, without consuming it. (A writer may overwrite that
    /// event before it is read, in overwrite mode: the event read is then a
    /// later one, never an earlier one. A peek that races a writer reusing
    /// the open page returns `None`, as a read would at that moment.)
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).per_cpu_bytes(16 * 1024);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// let ts = ring.cpu_writer(0).write(b"abc").unwrap();
    /// let b = ring.cpu_buffer(0).unwrap();
    /// assert_eq!(b.peek_timestamp(), Some(ts));
    /// assert_eq!(b.read_event().unwrap().ts, ts); // still there
    /// assert_eq!(b.peek_timestamp(), None);
    /// ```
    pub fn peek_timestamp(&self) -> Option<u64> {
        consume::peek_timestamp(&self.shared, &mut self.reader.lock())
    }

    /// Consumes a whole page: the oldest complete page, swapped out of the
    /// ring, or what is left of a page already being read by event. `None`
    /// when no complete page is ready; [`flush`](CpuBuffer::flush) closes the
    /// open page early.
    pub fn read_page(&self) -> Option<PageBuf> {
        consume::read_page(&self.shared, &mut self.reader.lock())
    }

    /// Consumes the committed records of the oldest page that has unread
    /// ones, in place, without taking the page out of the ring: what a
    /// reader that owns no pages does (one in another process, draining a
    /// ring file: see [`file::LiveFile`](crate::file::LiveFile)). The
    /// records come back page-shaped (docs/format.md): the header's
    /// `base_ts` is the time just before them, `commit` where they end,
    /// `events` how many, `lost` the losses since the last page handed
    /// out; a page still being written comes in pieces, each with its
    /// page's `seq`. `None` when nothing is readable now, including while
    /// the oldest page waits for a writer inside its reservation (this
    /// reader never fixes a page up). In a discard-mode ring, a page whose
    /// records are all consumed is free for writers again.
    ///
    /// ```
    /// use ringtrace_ring::{Mode, RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024).mode(Mode::Discard);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// let w = ring.cpu_writer(0);
    /// w.write(b"one!").unwrap();
    /// let b = ring.cpu_buffer(0).unwrap();
    /// let piece = b.read_committed().unwrap(); // the open page, so far
    /// assert_eq!(piece.events().map(|(_, p)| p.to_vec()).collect::<Vec<_>>(), [b"one!".to_vec()]);
    /// assert!(b.read_committed().is_none());
    /// w.write(b"two!").unwrap();
    /// let next = b.read_committed().unwrap(); // only what is new
    /// assert_eq!((next.header().seq, next.events().count()), (piece.header().seq, 1));
    /// // Consumed pages are free again: a discard ring drained as it
    /// // fills never refuses.
    /// for i in 0..1000u32 {
    ///     w.write(&i.to_le_bytes()).unwrap();
    ///     while b.read_committed().is_some() {}
    /// }
    /// assert_eq!(ring.stats().missed, 0);
    /// ```
    pub fn read_committed(&self) -> Option<PageBuf> {
        drain::read_committed(&self.shared, &mut self.reader.lock())
    }

    /// [`read_committed`](Self::read_committed) into `page`, whose
    /// allocation is kept from one call to the next (what a recorder
    /// draining all the time wants): on `Some`, `page` holds the records
    /// read and the result says what the copy found of them (their count,
    /// first and last times, the losses before them), so that they need
    /// not be walked again. On `None`, `page` is left as it was.
    ///
    /// ```
    /// use ringtrace_ring::{PageBuf, RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let ring = RingBuffer::new(RingConfig::default().cpus(1), Counter::new()).unwrap();
    /// let b = ring.cpu_buffer(0).unwrap();
    /// let mut page = PageBuf { cpu: 0, bytes: Vec::new() };
    /// assert!(b.read_committed_into(&mut page).is_none());
    /// let first = ring.cpu_writer(0).write(b"one!").unwrap();
    /// let last = ring.cpu_writer(0).write(b"two!").unwrap();
    /// let got = b.read_committed_into(&mut page).unwrap();
    /// assert_eq!((got.events, got.first_ts, got.last_ts), (2, first, last));
    /// assert_eq!(page.events().count(), 2);
    /// ```
    pub fn read_committed_into(&self, page: &mut PageBuf) -> Option<crate::DrainedPage> {
        drain::read_committed_into(&self.shared, &mut self.reader.lock(), page)
    }

    /// Takes the oldest closed page that is waiting for a commit out of the
    /// ring now, instead of after the bounded wait: its committed, unread
    /// events are counted as lost, and later commits to it as well. The
    /// page is quarantined until those commits land (see
    /// [`RingConfig::quarantine_pages`](crate::RingConfig::quarantine_pages)).
    /// Returns whether a page was taken: false when none is stuck, and also
    /// when the quarantine is full, which
    /// [`Stats::fixups_refused`](crate::Stats::fixups_refused) counts.
    ///
    /// ```
    /// use ringtrace_ring::{RingBuffer, RingConfig};
    /// use ringtrace_clock::Counter;
    /// let config = RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024);
    /// let ring = RingBuffer::new(config, Counter::new()).unwrap();
    /// std::mem::forget(ring.cpu_writer(0).reserve(8).unwrap()); // its writer dies
    /// for i in 0..20u64 {
    ///     ring.cpu_writer(0).write(&i.to_le_bytes()).unwrap(); // the page closes
    /// }
    /// let b = ring.cpu_buffer(0).unwrap();
    /// assert!(b.fixup());
    /// let next = b.read_event().unwrap();
    /// assert_eq!(next.lost_before, 17); // the dead writer's page-mates
    /// let s = ring.stats();
    /// assert_eq!((s.pages_quarantined, s.hit), (1, s.accounted()));
    /// ```
    pub fn fixup(&self) -> bool {
        fixup::fixup(&self.shared, &mut self.reader.lock())
    }

    /// This buffer's loss counters alone: a few loads, no lock, nothing
    /// walked (what a drainer reads every round; [`stats`](Self::stats)
    /// walks every page).
    pub fn losses(&self) -> crate::stats::Losses {
        let rare = self.shared.rare();
        // Relaxed: statistics, as in `stats`.
        crate::stats::Losses {
            missed: rare.missed.load(crate::sync::Ordering::Relaxed),
            timed_out: rare.timed_out.load(crate::sync::Ordering::Relaxed),
            overrun: rare.overrun.load(crate::sync::Ordering::Relaxed),
            lost: rare.lost.load(crate::sync::Ordering::Relaxed),
        }
    }

    /// This buffer's counters; `entries` is computed under the reader lock.
    pub fn stats(&self) -> Stats {
        count::stats(&self.shared, &mut self.reader.lock())
    }

    /// Closes the current page early (the kernel's and LTTng's "switch"), so
    /// that its events become readable as a whole page once committed. A
    /// no-op on an empty or unopened page. Returns whether a page was closed.
    pub fn flush(&self) -> bool {
        claim::flush(&self.shared)
    }

    /// The write path this buffer's writers take.
    pub fn write_path(&self) -> crate::WritePath {
        self.shared.path().path()
    }

    /// Updates of this buffer's per-CPU words that came from off its CPU
    /// on the rseq path (a writer that migrated between reserve and
    /// commit, a `CpuWriter` of another CPU, a flush or fixup from a reader):
    /// each costs a membarrier system call. Always 0 on the CAS path.
    /// Those made in shared mode make none and are not counted here (see
    /// [`shared_updates`](Self::shared_updates)).
    pub fn remote_updates(&self) -> u64 {
        self.shared.path().remote_updates()
    }

    /// Times this buffer went into shared mode on the rseq path: when it
    /// gets remote updates often (64 system calls within 10 ms), its gate
    /// is held shut, every writer on its CPU uses locked instructions (the
    /// CAS path's cost) and remote updates make no system call; it goes
    /// back once 16 pages in a row, over 50 ms or more, have opened without
    /// a remote update.
    /// So a design that writes to other CPUs' buffers all the time costs
    /// about what the CAS path costs, not a system call an event. Always 0
    /// on the CAS path.
    pub fn shared_mode_entries(&self) -> u64 {
        self.shared.path().shared_mode_entries()
    }

    /// Remote updates made in shared mode (see
    /// [`shared_mode_entries`](Self::shared_mode_entries)), which made no
    /// system call.
    pub fn shared_updates(&self) -> u64 {
        self.shared.path().shared_updates()
    }
}

//! Counters of a CPU buffer and their sum over the ring.

use crate::sync::{AtomicU64, Ordering};

/// What happened to the events of one CPU buffer (or, summed, of a ring).
///
/// At any quiescent point (no reservation between reserve and its commit
/// or drop; a reservation whose writer died never ends, and is in no
/// count): `hit == read + overrun + lost + entries + discarded`.
/// `missed` counts reservations that failed and so never reached `hit`,
/// whatever the cause: `missed == full() + busy + too_large`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Stats {
    /// Reservations that ended: committed, or dropped and turned into a
    /// discard record. Counted when they end, as the kernel counts
    /// `entries` at commit, so that a reservation whose writer died (it
    /// never ends) leaves every count as if it had never been made.
    pub hit: u64,
    /// Refused reservations and writes, every cause, from any writer of
    /// this ring: the buffer full in discard mode ([`ReserveError::Full`],
    /// [`Stats::full`]), the page to reuse not free yet
    /// ([`ReserveError::Busy`], [`Stats::busy`]), or an event too large
    /// for a page ([`ReserveError::TooLarge`], [`Stats::too_large`],
    /// counted in the buffer it was asked of). Tracepoints recording into
    /// this ring count their share of these in
    /// `ringtrace_tracepoint::Dropped`, by the same causes; their
    /// `dropped()` also counts events fired with no ring set, which are in
    /// no ring count.
    ///
    /// [`ReserveError::Full`]: crate::ReserveError::Full
    /// [`ReserveError::Busy`]: crate::ReserveError::Busy
    /// [`ReserveError::TooLarge`]: crate::ReserveError::TooLarge
    pub missed: u64,
    /// Of `missed`: refused because the page to reuse was not free yet (an
    /// uncommitted reservation in it, or, in a file ring, its claimer
    /// still zeroing it): [`ReserveError::Busy`](crate::ReserveError::Busy).
    /// Zero in a file written by a build that did not count it apart
    /// (its busy refusals are in `missed` only).
    pub busy: u64,
    /// Of `missed`: events larger than a page holds,
    /// [`ReserveError::TooLarge`](crate::ReserveError::TooLarge). Zero in a
    /// file written by a build that did not count them.
    pub too_large: u64,
    /// Committed events overwritten before they were read (overwrite mode).
    pub overrun: u64,
    /// Events consumed by readers.
    pub read: u64,
    /// Committed events in the buffer, not yet read.
    pub entries: u64,
    /// Reservations dropped without commit, turned into discard records.
    pub discarded: u64,
    /// Committed events skipped with a page a fixup took out of the ring
    /// (a writer vanished between reserve and commit), and commits that
    /// arrived after their page was taken.
    pub lost: u64,
    /// Timestamps raised to keep the buffer's time from going back.
    pub ts_fixups: u64,
    /// Pages a fixup took out of the ring.
    pub pages_reclaimed: u64,
    /// Pages a fixup took out that are still waiting for a late commit (a
    /// writer that died, or stalled, between reserve and commit), now. At
    /// [`RingConfig::quarantine_pages`](crate::RingConfig::quarantine_pages)
    /// no further stuck page is taken out.
    pub pages_quarantined: u64,
    /// Stuck pages a reader could not take out because the quarantine was
    /// full: from then on that CPU buffer's reader waits at the page, and in
    /// overwrite mode writers get `Busy` when they come round to it.
    pub fixups_refused: u64,
}

impl Stats {
    /// `read + overrun + lost + entries + discarded`: what `hit` must equal
    /// at a quiescent point.
    pub fn accounted(&self) -> u64 {
        self.read + self.overrun + self.lost + self.entries + self.discarded
    }

    /// Of `missed`: refused because the buffer was full in discard mode
    /// ([`ReserveError::Full`](crate::ReserveError::Full)), what the other
    /// causes leave of it.
    ///
    /// ```
    /// use ringtrace_clock::Counter;
    /// use ringtrace_ring::{Mode, RingBuffer, RingConfig, ReserveError};
    /// let config = RingConfig::default().cpus(1).page_size(256).per_cpu_bytes(1024).mode(Mode::Discard);
    /// let ring = RingBuffer::new(config, Counter::new())?;
    /// let full = (0..100).filter(|_| ring.write(&[0; 32]) == Err(ReserveError::Full)).count();
    /// assert!(matches!(ring.write(&[0; 300]), Err(ReserveError::TooLarge { .. })));
    /// let s = ring.stats();
    /// assert_eq!((s.full(), s.busy, s.too_large), (full as u64, 0, 1));
    /// assert_eq!(s.missed, s.full() + s.busy + s.too_large);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn full(&self) -> u64 {
        // Saturating: read while writers run, a refusal may be in its
        // cause's count and not yet in `missed`.
        self.missed
            .saturating_sub(self.busy)
            .saturating_sub(self.too_large)
    }

    pub(crate) fn add(&mut self, other: &Stats) {
        self.hit += other.hit;
        self.missed += other.missed;
        self.busy += other.busy;
        self.too_large += other.too_large;
        self.overrun += other.overrun;
        self.read += other.read;
        self.entries += other.entries;
        self.discarded += other.discarded;
        self.lost += other.lost;
        self.ts_fixups += other.ts_fixups;
        self.pages_reclaimed += other.pages_reclaimed;
        self.pages_quarantined += other.pages_quarantined;
        self.fixups_refused += other.fixups_refused;
    }
}

/// Counters bumped off the fast path, kept on their own cache line. In a
/// file ring they live in the file (their order is the file format's: see
/// `file::layout`), so that a recovered file gives real counts.
#[derive(Debug)]
#[repr(C)]
pub(crate) struct RareCounters {
    pub missed: AtomicU64,
    pub overrun: AtomicU64,
    pub discarded: AtomicU64,
    pub lost: AtomicU64,
    pub ts_fixups: AtomicU64,
    pub pages_reclaimed: AtomicU64,
    pub read: AtomicU64,
    pub fixups_refused: AtomicU64,
    /// Claims that may overrun unread events, started and finished: while
    /// they differ, an overrun the slot words already show may not be in
    /// `overrun` yet. See `CpuBuffer::loss_mark`.
    pub overrun_claims_started: AtomicU64,
    pub overrun_claims_done: AtomicU64,
    /// The page the reader holds out of the ring, for recovery: 0 for none,
    /// else `(phys + 1) | consumed << 32`, where `consumed` counts its
    /// events consumed so far (in place before it was taken, and handed
    /// out since). Written by the reader, under its lock.
    pub reader_page: AtomicU64,
    /// Of `missed`, the refusals for a busy page and for an event too
    /// large: after `reader_page`, in what older builds left as the line's
    /// padding (zero), so that their files read as "not counted apart".
    pub busy: AtomicU64,
    pub too_large: AtomicU64,
}

// SAFETY: every field is an integer atomic, valid for any bits, zero for
// `new(0)`, and without Drop; repr(C) fixes the layout.
unsafe impl crate::zeroed::Zeroable for RareCounters {
    fn zero() -> Self {
        RareCounters {
            missed: AtomicU64::new(0),
            overrun: AtomicU64::new(0),
            discarded: AtomicU64::new(0),
            lost: AtomicU64::new(0),
            ts_fixups: AtomicU64::new(0),
            pages_reclaimed: AtomicU64::new(0),
            read: AtomicU64::new(0),
            fixups_refused: AtomicU64::new(0),
            overrun_claims_started: AtomicU64::new(0),
            overrun_claims_done: AtomicU64::new(0),
            reader_page: AtomicU64::new(0),
            busy: AtomicU64::new(0),
            too_large: AtomicU64::new(0),
        }
    }
}

impl RareCounters {
    /// Relaxed: every counter is a statistic read on its own; exactness at a
    /// quiescent point comes from the happens-before of whatever made the
    /// point quiescent (joining the writers).
    #[inline]
    pub(crate) fn bump(counter: &AtomicU64, by: u64) {
        counter.fetch_add(by, Ordering::Relaxed);
    }

    /// Counts a refusal: in `missed`, and in `cause` (`busy`, `too_large`;
    /// `None` for a full buffer, which is what the others leave of
    /// `missed`). Two Relaxed adds, as every counter here: read while
    /// writers run, the two may differ by the refusals in flight (hence
    /// `Stats::full` saturates); at a quiescent point they agree.
    #[inline]
    pub(crate) fn refused(&self, cause: Option<&AtomicU64>) {
        if let Some(cause) = cause {
            Self::bump(cause, 1);
        }
        Self::bump(&self.missed, 1);
    }
}

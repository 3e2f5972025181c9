//! Counters of a CPU buffer and their sum over the ring.

use crate::sync::{AtomicU64, Ordering};

/// What happened to the events of one CPU buffer (or, summed, of a ring).
///
/// At any quiescent point (no reservation between reserve and its commit
/// or drop; a reservation whose writer died never ends, and is in no
/// count): `hit == read + overrun + lost + entries + discarded`.
/// `missed` counts reservations that failed and so never reached `hit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Stats {
    /// Reservations that ended: committed, or dropped and turned into a
    /// discard record. Counted when they end, as the kernel counts
    /// `entries` at commit, so that a reservation whose writer died (it
    /// never ends) leaves every count as if it had never been made.
    pub hit: u64,
    /// Failed reservations: buffer full (discard mode), or the page to reuse
    /// still had an open reservation (`ReserveError::Full` and `Busy`), from
    /// any writer of this ring. An event too large for a page
    /// (`ReserveError::TooLarge`) is refused before any buffer is touched
    /// and is not counted. Tracepoints recording into this ring count their
    /// share of these as `ringtrace_tracepoint::Dropped::refused`; their
    /// `dropped()` also counts events with no ring set or too large, which
    /// are in no ring count.
    pub missed: u64,
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

    pub(crate) fn add(&mut self, other: &Stats) {
        self.hit += other.hit;
        self.missed += other.missed;
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
}

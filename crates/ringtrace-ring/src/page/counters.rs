//! The counters a CPU buffer bumps off its fast path, on their own cache
//! line (in a file ring, in the file).

use crate::sync::{AtomicU64, Ordering};

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
    /// `overrun` yet. See `read::count::loss_mark`.
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
    /// Writes that waited for room in a full buffer (a blocking ring) and
    /// got in; and, of `missed`, those refused after their whole wait.
    /// In the line's padding too, after `too_large`.
    pub blocked: AtomicU64,
    pub timed_out: AtomicU64,
    /// Of `missed`, the refusals for a page being prepared (a file ring's
    /// pool of zeroed pages empty, or its claimer zeroing): the last word
    /// of the line. Older builds counted these in `busy`.
    pub preparing: AtomicU64,
}

// SAFETY: every field is an integer atomic, valid for any bits, zero for
// `new(0)`, and without Drop; repr(C) fixes the layout.
unsafe impl crate::page::zeroed::Zeroable for RareCounters {
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
            blocked: AtomicU64::new(0),
            timed_out: AtomicU64::new(0),
            preparing: AtomicU64::new(0),
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

    /// Counts a refusal: in `missed`, and in `cause` (`busy`, `preparing`, `too_large`;
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

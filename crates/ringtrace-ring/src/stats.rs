//! Counters of a CPU buffer and their sum over the ring.

/// What happened to the events of one CPU buffer (or, summed, of a ring).
///
/// At any quiescent point (no reservation between reserve and its commit
/// or drop; a reservation whose writer died never ends, and is in no
/// count): `hit == read + overrun + lost + entries + discarded`.
/// `missed` counts reservations that failed and so never reached `hit`,
/// whatever the cause: `missed == full() + busy + preparing + too_large +
/// timed_out`.
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
    /// [`Stats::full`]), the page to reuse still being written
    /// ([`ReserveError::Busy`], [`Stats::busy`]) or being prepared
    /// ([`ReserveError::Preparing`], [`Stats::preparing`]), or an event too large
    /// for a page ([`ReserveError::TooLarge`], [`Stats::too_large`],
    /// counted in the buffer it was asked of). Tracepoints recording into
    /// this ring count their share of these in
    /// `ringtrace_tracepoint::Dropped`, by the same causes; their
    /// `dropped()` also counts events fired with no ring set, which are in
    /// no ring count.
    ///
    /// [`ReserveError::Full`]: crate::ReserveError::Full
    /// [`ReserveError::Busy`]: crate::ReserveError::Busy
    /// [`ReserveError::Preparing`]: crate::ReserveError::Preparing
    /// [`ReserveError::TooLarge`]: crate::ReserveError::TooLarge
    pub missed: u64,
    /// Of `missed`: refused because the page to reuse was still being
    /// written (an uncommitted reservation in it, and, in overwrite mode,
    /// no spare page left to step over it):
    /// [`ReserveError::Busy`](crate::ReserveError::Busy). Zero in a file
    /// written by a build that did not count it apart (its busy refusals
    /// are in `missed` only); in a file written by a build that did not
    /// count [`preparing`](Stats::preparing) apart, those are in here.
    pub busy: u64,
    /// Of `missed`: refused because the page to reuse was being prepared
    /// (a file ring's zeroed pages all taken by claimers still zeroing):
    /// [`ReserveError::Preparing`](crate::ReserveError::Preparing).
    pub preparing: u64,
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
    /// Pages an overwrite-mode claim stepped over because a writer had not
    /// committed a reservation in them (preempted between reserve and
    /// commit), putting a spare page in their place instead of refusing
    /// its own write; the sleeper's event counts as overrun when it lands.
    /// Counted by this process: zero for a recovered file.
    pub pages_stepped_over: u64,
    /// Stuck pages a reader could not take out because the quarantine was
    /// full: from then on that CPU buffer's reader waits at the page, and in
    /// overwrite mode writers get `Busy` when they come round to it.
    pub fixups_refused: u64,
    /// Writes that found their buffer full (or the page they needed busy),
    /// waited for a reader to make room or the other thread to finish
    /// ([`RingConfig::block_for`](crate::RingConfig::block_for)), and got
    /// in: in `hit`, never in `missed`.
    pub blocked: u64,
    /// Of `missed`: writes refused after waiting their whole
    /// [`RingConfig::block_for`](crate::RingConfig::block_for) for room.
    /// Not in [`full`](Stats::full), `busy` nor `preparing`.
    pub timed_out: u64,
}

/// The counts a drainer needs each round, read without the reader lock
/// and without walking the buffer's pages ([`CpuBuffer::losses`]), so
/// that reading them costs a few loads.
///
/// [`CpuBuffer::losses`]: crate::CpuBuffer::losses
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Losses {
    /// As [`Stats::missed`]: every refused write.
    pub missed: u64,
    /// As [`Stats::timed_out`]: of `missed`, blocking writes that gave up.
    pub timed_out: u64,
    /// As [`Stats::overrun`].
    pub overrun: u64,
    /// As [`Stats::lost`].
    pub lost: u64,
}

impl From<&Stats> for Losses {
    fn from(s: &Stats) -> Losses {
        Losses {
            missed: s.missed,
            timed_out: s.timed_out,
            overrun: s.overrun,
            lost: s.lost,
        }
    }
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
    /// assert_eq!((s.full(), s.busy, s.preparing, s.too_large), (full as u64, 0, 0, 1));
    /// assert_eq!(s.missed, s.full() + s.busy + s.preparing + s.too_large);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn full(&self) -> u64 {
        // Saturating: read while writers run, a refusal may be in its
        // cause's count and not yet in `missed`.
        self.missed
            .saturating_sub(self.busy)
            .saturating_sub(self.preparing)
            .saturating_sub(self.too_large)
            .saturating_sub(self.timed_out)
    }

    pub(crate) fn add(&mut self, other: &Stats) {
        self.hit += other.hit;
        self.missed += other.missed;
        self.busy += other.busy;
        self.preparing += other.preparing;
        self.pages_stepped_over += other.pages_stepped_over;
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
        self.blocked += other.blocked;
        self.timed_out += other.timed_out;
    }
}

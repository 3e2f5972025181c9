//! Why a reservation fails.

use thiserror::Error;

/// Why a reservation failed.
///
/// Closed on purpose (not `#[non_exhaustive]`): each cause is the counter
/// of [`Stats`](crate::Stats) a refusal is in (`missed` is their sum:
/// `full`, `busy`, `preparing`, `too_large`, `timed_out`), so a program
/// may match them all, and another would change the counts' meaning, not
/// only add a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ReserveError {
    /// Discard mode, and the next page is not yet read.
    #[error("buffer full: the next page has not been read (discard mode)")]
    Full,
    /// The page to reuse is still being written: a reservation in it was
    /// never committed. In overwrite mode a claim steps over such a page
    /// with a spare one (the sleeping writer's event is counted as overrun
    /// when it lands), so this is refused only when every spare page of the
    /// CPU buffer is held by sleeping writers already (as many as
    /// [`RingConfig::quarantine_pages`](crate::RingConfig::quarantine_pages)
    /// lends the pool, up to 64), or the quarantine lends none. In discard
    /// mode, a page with unread events is `Full`; one whose events were all
    /// read but whose writer has not committed is `Busy`.
    #[error("the page to reuse is still being written: a reservation in it is not committed, and no spare page is left to step over it")]
    Busy,
    /// The page to reuse is being prepared (a file ring): every page of the
    /// CPU buffer's pool of zeroed pages is held by a claimer that sleeps
    /// while it zeroes, or, with fewer than two quarantine pages (no pool),
    /// the writer that claimed the page is zeroing it.
    #[error("the page to reuse is being prepared: no zeroed page is ready for it (file ring)")]
    Preparing,
    /// The payload cannot fit in a page.
    #[error("an event of {len} bytes cannot fit in a page; the largest is {max} bytes")]
    TooLarge {
        /// The payload length asked for.
        len: usize,
        /// The largest payload a page holds.
        max: usize,
    },
    /// A blocking ring ([`RingConfig::block_for`](crate::RingConfig::block_for)):
    /// the write waited its whole timeout for room (the buffer full, or the
    /// page to reuse busy or being prepared, all that time) and gave up.
    /// Counted in [`Stats::timed_out`](crate::Stats::timed_out), not in
    /// `full`, `busy` nor `preparing`.
    #[error("timed out: the buffer stayed full (or the page to reuse busy) for the whole blocking timeout")]
    TimedOut,
}

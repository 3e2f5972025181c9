//! Why a reservation fails.

use thiserror::Error;

/// Why a reservation failed.
///
/// Closed on purpose (not `#[non_exhaustive]`): the three causes are what
/// [`Stats`](crate::Stats) counts a refusal by (`missed` is their sum), so
/// a program may match them all, and a fourth would change the counts'
/// meaning, not only add a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum ReserveError {
    /// Discard mode, and the next page is not yet read.
    #[error("buffer full: the next page has not been read (discard mode)")]
    Full,
    /// The page to reuse is not free yet: it still holds a reservation that
    /// was never committed (overwrite mode; in discard mode a page with
    /// unread events is `Full`). In a file ring, also when every page of
    /// the buffer's pool of zeroed pages is held by a claimer that sleeps
    /// while it zeroes (16 at once), or, with fewer than two quarantine
    /// pages (no pool), while the writer that claimed the page zeroes it.
    #[error("the page to reuse is not free yet: it holds an uncommitted reservation, or (file ring) no zeroed page is ready for it")]
    Busy,
    /// The payload cannot fit in a page.
    #[error("an event of {len} bytes cannot fit in a page; the largest is {max} bytes")]
    TooLarge {
        /// The payload length asked for.
        len: usize,
        /// The largest payload a page holds.
        max: usize,
    },
}

//! The [`Clock`] trait: what the ring buffer stamps events with.

use crate::ClockInfo;
use std::sync::Arc;

/// A source of timestamps.
///
/// `read` is the hot path: it is inlined where the type is known, takes no
/// lock, allocates nothing and is async-signal-safe, so a signal handler that
/// interrupted another read may read too. Everything else (names,
/// calibration, conversion to nanoseconds) is in [`Clock::info`], which is
/// called off the hot path.
///
/// ```
/// use ringtrace_clock::{Clock, Counter};
/// let clock = Counter::new();
/// let a = clock.read();
/// let b = clock.read();
/// assert!(b > a);
/// assert!(clock.info().conversion.is_none()); // counter ticks are not time
/// ```
pub trait Clock: Send + Sync {
    /// One reading, in raw ticks of this clock.
    fn read(&self) -> u64;

    /// What the clock is and promises.
    fn info(&self) -> ClockInfo;
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn read(&self) -> u64 {
        (**self).read()
    }
    fn info(&self) -> ClockInfo {
        (**self).info()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    #[inline]
    fn read(&self) -> u64 {
        (**self).read()
    }
    fn info(&self) -> ClockInfo {
        (**self).info()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    #[inline]
    fn read(&self) -> u64 {
        (**self).read()
    }
    fn info(&self) -> ClockInfo {
        (**self).info()
    }
}

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

    /// Whether a reading of this clock is exactly an instruction the ring
    /// can issue itself ([`InlineRead`]). A ring asks once, when it is
    /// built, so that a clock chosen by name at run time (an
    /// [`AnyClock`](crate::AnyClock), which otherwise dispatches on its kind
    /// at every read) costs per event what the concrete clock costs.
    /// `Call` (the default) is always correct.
    fn inline_read(&self) -> InlineRead {
        InlineRead::Call
    }
}

/// How a ring may read a clock on its write path (see
/// [`Clock::inline_read`]).
///
/// ```
/// use ringtrace_clock::{Clock, ClockSpec, Counter, InlineRead};
/// assert_eq!(Counter::new().inline_read(), InlineRead::Call);
/// if let Ok(tsc) = "tsc".parse::<ClockSpec>().unwrap().build() {
///     // Built from its name, the raw TSC is still a bare rdtsc.
///     assert_eq!(tsc.inline_read(), InlineRead::Rdtsc);
///     let t = InlineRead::Rdtsc.read(&tsc);
///     assert!(t > 0);
/// }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum InlineRead {
    /// Call the clock's `read`.
    Call,
    /// A bare `rdtsc` (x86_64 only; [`Tsc`](crate::Tsc)'s reading).
    Rdtsc,
}

impl InlineRead {
    /// Reads `clock` as this says: the instruction itself, or a call.
    #[inline(always)]
    pub fn read<C: Clock + ?Sized>(self, clock: &C) -> u64 {
        match self {
            #[cfg(target_arch = "x86_64")]
            InlineRead::Rdtsc => crate::source::tsc_read(),
            _ => clock.read(),
        }
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    #[inline]
    fn read(&self) -> u64 {
        (**self).read()
    }
    fn info(&self) -> ClockInfo {
        (**self).info()
    }
    fn inline_read(&self) -> InlineRead {
        (**self).inline_read()
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
    fn inline_read(&self) -> InlineRead {
        (**self).inline_read()
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
    fn inline_read(&self) -> InlineRead {
        (**self).inline_read()
    }
}

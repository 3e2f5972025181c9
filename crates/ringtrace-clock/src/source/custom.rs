//! A clock the program brings: any [`Clock`] implementation, carried
//! where a clock chosen by name goes.
//!
//! A simulation's virtual time, a hardware counter read through a driver,
//! a replayed recording's timestamps: whatever the program can read as a
//! `u64` that does not go back. The ring, the readers and the exporters
//! use the clock's [`ClockInfo`] (name, frequency, guarantee) exactly as
//! they use a built-in source's.

use crate::{Clock, ClockInfo};
use std::fmt;
use std::sync::Arc;

/// A user-defined clock behind one pointer, so that it fits in
/// [`BaseSource`](crate::BaseSource) beside the built-in sources and can
/// be protected, clamped by `global` and handed to a ring like them.
///
/// Each read is one indirect call on top of the clock's own cost.
///
/// ```
/// use ringtrace_clock::{AnyClock, Clock, ClockInfo, CustomClock, Guarantee};
/// use std::sync::atomic::{AtomicU64, Ordering};
///
/// /// A simulation's virtual time, in nanoseconds, advanced by the program.
/// struct SimTime(AtomicU64);
///
/// impl Clock for SimTime {
///     fn read(&self) -> u64 {
///         // Relaxed: a reading; the program orders its own advances.
///         self.0.load(Ordering::Relaxed)
///     }
///     fn info(&self) -> ClockInfo {
///         ClockInfo::nanosecond("sim-time", Guarantee::Global, 1.0)
///     }
/// }
///
/// let clock = AnyClock::custom(SimTime(AtomicU64::new(42)));
/// assert_eq!(clock.read(), 42);
/// assert_eq!(clock.info().name, "sim-time");
/// assert_eq!(CustomClock::new(SimTime(AtomicU64::new(7))).read(), 7);
/// ```
#[derive(Clone)]
pub struct CustomClock(Arc<dyn Clock>);

impl CustomClock {
    /// Wraps `clock`.
    pub fn new(clock: impl Clock + 'static) -> CustomClock {
        CustomClock(Arc::new(clock))
    }

    /// Wraps a clock already shared with the rest of the program.
    pub fn from_arc(clock: Arc<dyn Clock>) -> CustomClock {
        CustomClock(clock)
    }
}

impl Clock for CustomClock {
    #[inline]
    fn read(&self) -> u64 {
        self.0.read()
    }

    fn info(&self) -> ClockInfo {
        self.0.info()
    }
}

impl fmt::Debug for CustomClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CustomClock")
            .field(&self.0.info().name)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnyClock, Global, Guarantee, Protection};
    use std::sync::atomic::{AtomicU64, Ordering};

    struct Steps(AtomicU64);

    impl Clock for Steps {
        fn read(&self) -> u64 {
            // Relaxed: a counter whose own order is all that matters.
            self.0.fetch_add(10, Ordering::Relaxed)
        }
        fn info(&self) -> ClockInfo {
            ClockInfo::counter("steps", Guarantee::Global, 100)
        }
    }

    #[test]
    fn a_custom_clock_keeps_its_info_under_protection_and_global() {
        let clock = AnyClock::custom_protected(Steps(AtomicU64::new(0)), Protection::Preempt);
        assert_eq!(clock.info().name, "steps@preempt");
        assert_eq!(clock.info().ticks_to_ns(100), Some(1_000_000_000));
        assert_eq!((clock.read(), clock.read()), (0, 10));

        let clamped = Global::new(crate::BaseSource::Custom(CustomClock::new(Steps(
            AtomicU64::new(5),
        ))));
        assert_eq!(clamped.read(), 5);
        assert!(format!("{:?}", CustomClock::new(Steps(AtomicU64::new(0)))).contains("steps"));
    }
}

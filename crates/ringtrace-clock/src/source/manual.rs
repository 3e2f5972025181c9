//! `ManualClock`: a clock set by hand, for a simulation's virtual time or
//! a test that wants events at chosen times.

use crate::{ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A clock that reads what it was last set to: the same value for this
/// value and its clones, until [`set`](ManualClock::set) or
/// [`advance`](ManualClock::advance) moves it. Its ticks are time at the
/// frequency it was made with (ns for [`ManualClock::ns`]), so exporters
/// convert them as they would a real clock's.
///
/// ```
/// use ringtrace_clock::{Clock, ManualClock};
/// let clock = ManualClock::ns(1_000);
/// let shared = clock.clone();
/// shared.advance(500);
/// assert_eq!(clock.read(), 1_500);
/// assert!(clock.info().ticks_are_ns);
/// assert!(ManualClock::with_frequency(0, 0).is_none());
/// ```
#[derive(Debug, Clone)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    frequency_hz: u64,
}

impl ManualClock {
    /// A clock whose ticks are ns, at `at`.
    pub fn ns(at: u64) -> ManualClock {
        ManualClock {
            now: Arc::new(AtomicU64::new(at)),
            frequency_hz: 1_000_000_000,
        }
    }

    /// A clock of `frequency_hz` ticks a second, at `at`; `None` for a
    /// frequency of 0.
    pub fn with_frequency(frequency_hz: u64, at: u64) -> Option<ManualClock> {
        (frequency_hz != 0).then(|| ManualClock {
            now: Arc::new(AtomicU64::new(at)),
            frequency_hz,
        })
    }

    /// Sets it to `ticks` (backwards too: it is the caller's time).
    pub fn set(&self, ticks: u64) {
        // SeqCst: a set on one thread is seen by every later read, in one
        // order for all threads; nothing else is published through it.
        self.now.store(ticks, Ordering::SeqCst);
    }

    /// Moves it on by `ticks` (wrapping at 2^64).
    pub fn advance(&self, ticks: u64) {
        // SeqCst: as in `set`.
        self.now.fetch_add(ticks, Ordering::SeqCst);
    }
}

impl crate::Clock for ManualClock {
    #[inline]
    fn read(&self) -> u64 {
        // SeqCst: pairs with `set` and `advance` (see there).
        self.now.load(Ordering::SeqCst)
    }

    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "manual".to_owned(),
            frequency_hz: Some(self.frequency_hz),
            ticks_are_ns: self.frequency_hz == 1_000_000_000,
            guarantee: Guarantee::Global,
            precision_ns: Some(1e9 / self.frequency_hz as f64),
            conversion: TickConversion::from_frequency(self.frequency_hz),
        }
    }
}

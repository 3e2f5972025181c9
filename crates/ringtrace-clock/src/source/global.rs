//! `global`: a source clamped to a process-wide maximum, the kernel's
//! `trace_clock_global()`.

use crate::{Clock, ClockInfo, Guarantee};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Any clock made monotonic across threads: every read returns at least the
/// largest value any read of this clock (or of its clones) has returned.
///
/// The kernel's `trace_clock_global()` does the same with a `cmpxchg` on a
/// shared `prev_time`. Readers whose own reading is behind the maximum return
/// the maximum and write nothing, so only a reader that moves time forward
/// bounces the shared cache line.
///
/// ```
/// use ringtrace_clock::{Clock, Global, Guarantee, Mono};
/// let clock = Global::new(Mono::new());
/// let a = clock.read();
/// let b = clock.clone().read(); // clones share the maximum
/// assert!(b >= a);
/// assert_eq!(clock.info().guarantee, Guarantee::Global);
/// ```
#[derive(Debug, Clone)]
pub struct Global<C> {
    clock: C,
    max: Arc<CachePadded<AtomicU64>>,
}

impl<C: Clock> Global<C> {
    /// Clamps `clock` to a maximum shared by this value and its clones.
    pub fn new(clock: C) -> Self {
        Global {
            clock,
            max: Arc::new(CachePadded::new(AtomicU64::new(0))),
        }
    }

    /// The clamped clock.
    pub fn inner(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> Clock for Global<C> {
    #[inline]
    fn read(&self) -> u64 {
        let now = self.clock.read();
        // Relaxed is enough for monotonicity. If read A happens before read
        // B, A's access to `max` precedes B's in max's modification order
        // (coherence), and max only grows in that order, so B observes at
        // least what A returned. No other memory is published through `max`.
        let seen = self.max.load(Ordering::Relaxed);
        if now <= seen {
            return seen;
        }
        let before = self.max.fetch_max(now, Ordering::Relaxed);
        before.max(now)
    }

    fn info(&self) -> ClockInfo {
        let mut info = self.clock.info();
        info.name = if info.name == "local" {
            "global".to_owned()
        } else {
            format!("global:{}", info.name)
        };
        info.guarantee = Guarantee::Global;
        info
    }
}

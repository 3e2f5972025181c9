//! A clock that reads what the script says: steps back, repeats, jumps far
//! ahead, wraps past `u64::MAX`, and tears as `sched_clock()` did when a
//! tick landed between its loads of the conversion data.
//!
//! ```
//! use ringtrace_check::script_clock::{ClockStep, ScriptClock};
//! use ringtrace_clock::Clock;
//! let clock = ScriptClock::at(100);
//! clock.apply(ClockStep::Back(30));
//! assert_eq!(clock.read(), 70);
//! clock.apply(ClockStep::TornTick { period: 5_000 });
//! assert_eq!(clock.read(), 5_070); // one tick period ahead...
//! clock.after_reserve();
//! assert_eq!(clock.read(), 71); // ...then true time again
//! ```

use arbitrary::Arbitrary;
use ringtrace_clock::{Clock, ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// One change to the scripted clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Arbitrary)]
pub enum ClockStep {
    /// Forward by this many ticks (wrapping past `u64::MAX`).
    Advance(u16),
    /// Back by this many ticks (wrapping below 0).
    Back(u32),
    /// Nothing: the next reading repeats the last.
    Repeat,
    /// Forward by `2^(20 + n % 44)`: past the 26-bit header delta, the
    /// 58-bit TIME_EXTEND, and up to 2^63.
    Jump(u8),
    /// To `u64::MAX - n`: the next advance wraps to a small value.
    NearMax(u16),
    /// A `sched_clock()` read torn by a tick: the next reading is one tick
    /// period ahead (new offset, old anchor); after the reservation that
    /// takes it, the clock reads true time again, so it steps back.
    TornTick {
        /// The tick period, in ticks.
        period: u32,
    },
}

/// Every access is Relaxed: one thread drives the script, reads the clock
/// (through the ring it stamps) and checks the results, so program order is
/// all the order there is; the atomics only make the clock `Sync`, as
/// `Clock` requires.
#[derive(Debug, Default)]
struct State {
    now: AtomicU64,
    /// True time to return to after a torn reading, plus one; 0 for none.
    after_torn: AtomicU64,
}

/// The scripted clock; clones share one time.
#[derive(Debug, Clone, Default)]
pub struct ScriptClock(Arc<State>);

impl ScriptClock {
    /// A clock reading `t`.
    pub fn at(t: u64) -> ScriptClock {
        let c = ScriptClock::default();
        c.set(t);
        c
    }

    /// Sets the reading.
    pub fn set(&self, t: u64) {
        // Relaxed: see State.
        self.0.now.store(t, Ordering::Relaxed);
    }

    /// Applies one step.
    pub fn apply(&self, step: ClockStep) {
        let now = self.read();
        match step {
            ClockStep::Advance(by) => self.set(now.wrapping_add(u64::from(by))),
            ClockStep::Back(by) => self.set(now.wrapping_sub(u64::from(by))),
            ClockStep::Repeat => {}
            ClockStep::Jump(n) => self.set(now.wrapping_add(1u64 << (20 + u32::from(n) % 44))),
            ClockStep::NearMax(n) => self.set(u64::MAX - u64::from(n)),
            ClockStep::TornTick { period } => {
                // Relaxed: see State.
                self.0
                    .after_torn
                    .store(now.wrapping_add(1).max(1), Ordering::Relaxed);
                self.set(now.wrapping_add(u64::from(period)));
            }
        }
    }

    /// Called after each reservation attempt: a torn reading is over, and
    /// the clock goes back to true time.
    pub fn after_reserve(&self) {
        // Relaxed: see State.
        let t = self.0.after_torn.swap(0, Ordering::Relaxed);
        if t != 0 {
            self.set(t);
        }
    }
}

impl Clock for ScriptClock {
    fn read(&self) -> u64 {
        // Relaxed: see State.
        self.0.now.load(Ordering::Relaxed)
    }

    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "script".into(),
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee: Guarantee::None,
            precision_ns: Some(1.0),
            conversion: Some(TickConversion::NANOSECONDS),
        }
    }
}

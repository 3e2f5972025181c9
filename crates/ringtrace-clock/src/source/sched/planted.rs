//! Planted tears: a `sched` read that raises the update's signal on its own
//! thread at a chosen point, so a test knows, reading by reading, whether
//! an update landed between the loads, and can hold the checker to it.
//!
//! Raised with irqs unmasked, the handler runs at once (tgkill to the
//! calling thread is delivered before the system call returns): between
//! the loads it tears the reading, before the counter read it does not.
//! Raised under an emulated irq mask it is deferred, or blocked, to the
//! unmask: no tear. Raised during a latched read, the latch retries: no
//! tear. A planted read never raises from inside a handler.

use super::data::{base, with_data, Base, Data};
use crate::emulation::{interrupt, signals};
use crate::{Clock, ClockError, ClockInfo, Guarantee, TickConversion};
use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering};

/// Where a [`PlantedRead`] raises its signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Plant {
    /// Between the load of the offset and the load of the scale: a tear,
    /// unless irqs are masked.
    BetweenLoads,
    /// Before the counter read: the reading uses the new data whole.
    BeforeRead,
}

/// A `sched` (or `sched-latch`) read that raises `signal` on its thread at
/// [`Plant`] every `every`-th read, and knows whether each reading it
/// returned was torn. A test aid: the update's handler must be installed
/// on `signal` ([`install_irq_handler`](crate::emulation::interrupt::install_irq_handler)),
/// and no other source of updates may run on the thread meanwhile.
///
/// ```
/// use ringtrace_clock::emulation::interrupt;
/// use ringtrace_clock::sched::{self, Plant, PlantedRead};
/// use ringtrace_clock::Clock;
/// fn on_update(_: i32) { sched::update(); }
/// let signal = libc::SIGRTMIN() + 9;
/// interrupt::install_irq_handler(signal, on_update).unwrap();
/// let clock = PlantedRead::new(signal, Plant::BetweenLoads, 1, false).unwrap();
/// let first = sched::updates();
/// let value = clock.read();
/// assert!(clock.last_was_torn());
/// let cycles = sched::last_reading().cycles;
/// assert!(!sched::check_since(first, cycles, value).unwrap().is_right());
/// interrupt::uninstall_irq_handler(signal).unwrap();
/// ```
#[derive(Debug)]
pub struct PlantedRead {
    base: &'static Base,
    signal: i32,
    plant: Plant,
    every: u64,
    latched: bool,
    /// Reads so far (Relaxed: this thread's own count).
    reads: AtomicU64,
    /// Readings returned torn.
    torn: AtomicU64,
    last_torn: AtomicBool,
}

impl PlantedRead {
    /// A planted read raising `signal` at `plant` on reads 0, `every`,
    /// 2·`every`, ... (`every` at least 1); `latched` reads the latch's
    /// copies as `sched-latch` does. `signal` must be one the irq
    /// emulation can route, else [`ClockError::FaultSignal`] or
    /// [`ClockError::BadSignal`].
    pub fn new(
        signal: i32,
        plant: Plant,
        every: u64,
        latched: bool,
    ) -> Result<PlantedRead, ClockError> {
        signals::check_routable(signal)?;
        Ok(PlantedRead {
            base: base("sched")?,
            signal,
            plant,
            every: every.max(1),
            latched,
            reads: AtomicU64::new(0),
            torn: AtomicU64::new(0),
            last_torn: AtomicBool::new(false),
        })
    }

    /// Whether the last reading returned was torn: an update ran between
    /// its two loads.
    pub fn last_was_torn(&self) -> bool {
        // Relaxed: written and read by the same thread.
        self.last_torn.load(Ordering::Relaxed)
    }

    /// Readings returned torn so far.
    pub fn torn(&self) -> u64 {
        self.torn.load(Ordering::Relaxed)
    }

    fn raise(&self, now: bool) {
        if now {
            // A refusal (no handler) only means nothing was planted.
            let _ = interrupt::raise_on_current_thread(self.signal);
        }
    }
}

impl Clock for PlantedRead {
    fn read(&self) -> u64 {
        let b = self.base;
        let n = self.reads.fetch_add(1, Ordering::Relaxed);
        let plant = n % self.every == 0 && !interrupt::in_irq();
        with_data(b, |t| {
            self.raise(plant && self.plant == Plant::BeforeRead);
            let (cycles, value, torn) = if self.latched {
                let mut raise = plant && self.plant == Plant::BetweenLoads;
                loop {
                    let seq = t.latch_seq.load(Ordering::Relaxed);
                    compiler_fence(Ordering::SeqCst);
                    let cycles = b.counter.read();
                    let copy = &t.latch[(seq & 1) as usize];
                    let offset = copy.offset.load(Ordering::Relaxed);
                    self.raise(std::mem::take(&mut raise));
                    let mult = copy.mult.load(Ordering::Relaxed);
                    compiler_fence(Ordering::SeqCst);
                    if t.latch_seq.load(Ordering::Relaxed) == seq {
                        break (cycles, Data { offset, mult }.ns(cycles), false);
                    }
                }
            } else {
                let cycles = b.counter.read();
                compiler_fence(Ordering::SeqCst);
                let offset = t.live.offset.load(Ordering::Relaxed);
                let before = t.generation.load(Ordering::Relaxed);
                self.raise(plant && self.plant == Plant::BetweenLoads);
                let after = t.generation.load(Ordering::Relaxed);
                let mult = t.live.mult.load(Ordering::Relaxed);
                (cycles, Data { offset, mult }.ns(cycles), before != after)
            };
            t.record(cycles, value);
            if !interrupt::in_irq() {
                self.last_torn.store(torn, Ordering::Relaxed);
                self.torn.fetch_add(u64::from(torn), Ordering::Relaxed);
            }
            value
        })
    }

    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: if self.latched {
                "sched-latch-planted".to_owned()
            } else {
                "sched-planted".to_owned()
            },
            frequency_hz: Some(1_000_000_000),
            ticks_are_ns: true,
            guarantee: Guarantee::None,
            precision_ns: Some(1.0),
            conversion: Some(TickConversion::NANOSECONDS),
        }
    }
}

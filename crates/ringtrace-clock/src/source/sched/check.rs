//! The checker: every reading of a `sched` source compared with an exact
//! reference, the values each generation of the thread's data the reading
//! could have used gives for the reading's own counter value.
//!
//! The reference is per reading: [`check_since`] takes the reading's
//! counter value and returned value (from [`last_reading`](super::last_reading),
//! loaded as one value) and the generation current just before the read,
//! and looks the generations up in a history the updates write before any
//! reading can use them. A handler's own readings never touch it: a handler
//! that reads holds a [`SavedReading`](super::SavedReading).

use super::data::{base, updates, with_data, HISTORY};
use crate::emulation::soft_irq;
use crate::Clock;
use std::sync::atomic::Ordering;

/// How a reading compares with the exact reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the values consistent data gives for its cycle count.
    Right,
    /// Later than any of them, by this many ns.
    Ahead(u64),
    /// Earlier than any of them, by this many ns.
    Behind(u64),
}

impl Verdict {
    /// Whether the reading was right.
    pub fn is_right(self) -> bool {
        self == Verdict::Right
    }
}

/// Checks `value`, read at `cycles` on the calling thread, against the
/// exact reference: what each generation of the thread's data still kept
/// (the last 64) gives for `cycles`, read with irqs masked so no update
/// interleaves. Any consistent generation is right; a torn reading is off
/// by the change of scale times the counter value. When more than a few updates may have passed
/// since the read, prefer [`check_since`], which leaves out generations
/// older than the read (their extrapolation drifts by the mult nudge).
pub fn check(cycles: u64, value: u64) -> Verdict {
    let first = updates().saturating_sub(HISTORY as u64 - 1);
    check_since(first, cycles, value).unwrap_or(Verdict::Right)
}

/// Checks `value`, read at `cycles` on the calling thread when the data's
/// generation was `first` (what [`updates`](super::updates) said just before the read),
/// against generations `first` to now: exactly the data the read could
/// have used. `None` when generation `first` has left the history (more
/// than 63 updates since), so the reading cannot be checked.
///
/// ```
/// use ringtrace_clock::{sched, Clock, Sched};
/// let clock = Sched::new().unwrap();
/// let first = sched::updates();
/// let value = clock.read();
/// let cycles = sched::last_reading().cycles;
/// assert_eq!(sched::check_since(first, cycles, value), Some(sched::Verdict::Right));
/// ```
pub fn check_since(first: u64, cycles: u64, value: u64) -> Option<Verdict> {
    let Ok(b) = base("sched") else {
        return Some(Verdict::Right);
    };
    let flags = soft_irq::save();
    let range = with_data(b, |t| {
        let newest = t.generation.load(Ordering::Relaxed);
        if first > newest || newest - first >= HISTORY as u64 {
            return None;
        }
        Some(
            (first..=newest)
                .map(|g| t.history[(g % HISTORY as u64) as usize].load().ns(cycles))
                .fold((u64::MAX, 0), |(lo, hi), v| (lo.min(v), hi.max(v))),
        )
    });
    soft_irq::restore(flags);
    let (lo, hi) = range?;
    Some(if value > hi {
        Verdict::Ahead(value - hi)
    } else if value < lo {
        Verdict::Behind(lo - value)
    } else {
        Verdict::Right
    })
}

/// Wrong readings of a clock found by [`measure_wrong`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct WrongReadings {
    /// Readings checked.
    pub reads: u64,
    /// Readings later than the exact reference.
    pub ahead: u64,
    /// Readings not checked: so many updates passed between the read and its
    /// check that the generation it used had left the history.
    pub unchecked: u64,
    /// Readings earlier than the exact reference.
    pub behind: u64,
    /// The largest error seen, in ns.
    pub max_error_ns: u64,
    /// Updates applied to this thread's data meanwhile.
    pub updates: u64,
}

impl WrongReadings {
    /// Wrong readings in either direction.
    pub fn wrong(&self) -> u64 {
        self.ahead + self.behind
    }

    /// Counts one verdict of [`check_since`] (`None`: unchecked).
    pub fn count_checked(&mut self, verdict: Option<Verdict>) {
        match verdict {
            Some(v) => self.count(v),
            None => self.unchecked += 1,
        }
    }

    /// Counts one verdict.
    pub fn count(&mut self, verdict: Verdict) {
        self.reads += 1;
        match verdict {
            Verdict::Right => {}
            Verdict::Ahead(by) => {
                self.ahead += 1;
                self.max_error_ns = self.max_error_ns.max(by);
            }
            Verdict::Behind(by) => {
                self.behind += 1;
                self.max_error_ns = self.max_error_ns.max(by);
            }
        }
    }
}

/// Reads `clock` (a `sched` or `sched-latch` source, under any protection)
/// on the calling thread for `run`, and checks every reading against the
/// exact reference. Reads go in batches of 64, each between two loads of
/// the generation; each batch is then checked ([`check_since`]) against
/// the generations its reading could have used. Updates also land during
/// the checks (each masks irqs alone), which the generation bounds allow
/// for; a reading whose generation left the history is counted unchecked,
/// never wrong.
pub fn measure_wrong(clock: &dyn Clock, run: std::time::Duration) -> WrongReadings {
    let mut found = WrongReadings::default();
    let updates_before = updates();
    let until = std::time::Instant::now() + run;
    let mut batch = [(0u64, 0u64, 0u64); 64];
    while std::time::Instant::now() < until {
        for slot in batch.iter_mut() {
            let first = updates();
            std::hint::black_box(clock.read());
            let super::Reading { cycles, value } = super::last_reading();
            *slot = (first, cycles, value);
        }
        for &(first, cycles, value) in &batch {
            found.count_checked(check_since(first, cycles, value));
        }
    }
    found.updates = updates() - updates_before;
    found
}

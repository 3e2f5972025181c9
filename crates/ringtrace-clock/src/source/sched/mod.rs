//! `sched`, `sched-wide` and `sched-latch`: x86 `sched_clock()` as it was
//! when trace_clock_local stopped disabling interrupts (2009), the same
//! read with an amplified window, and as the kernel later fixed it.
//!
//! `sched_clock()` turned TSC cycles into nanoseconds with two per-CPU
//! words, `cyc2ns_offset` and `cyc2ns`, that `set_cyc2ns_scale()` rewrote
//! with plain stores on a frequency change. Read with interrupts enabled,
//! an update landing between the reader's two loads gave a value mixing
//! two generations: "if a timer interrupt comes in, sched_clock may report
//! a wrong time" (Peter Zijlstra, quoted in the trace_clock_local patch). The kernel
//! later put the data behind a seqcount latch (`cyc2ns_read_begin()`),
//! whose readers retry.
//!
//! Here:
//!
//! ```text
//!   ns = offset + (cycles * mult) >> 32
//! ```
//!
//! with `{offset, mult}` per thread (the update is a signal aimed at a
//! thread, as the kernel's interrupt lands on a CPU). [`update`] is
//! `set_cyc2ns_scale()`'s work; [`Sched`] loads the offset and the scale
//! back to back after the counter, as 2009's code did (the window is
//! pinned in machine code on x86_64: [`SCHED_READ`]); [`SchedWide`] puts
//! the multiply between the loads, an amplified window; [`SchedLatch`]
//! reads a copy of the same data behind a seqcount latch and never tears.
//! The kernel lines each part follows are cited in the `data` module
//! (docs/clocks.md quotes them).
//!
//! Wrong readings are counted against an exact reference, [`check_since`]:
//! the values every generation of the data the read could have used gives
//! for the same cycle count. A reading outside that range mixed
//! generations. [`PlantedRead`] plants a tear, or a non-tear, at a known
//! point, so tests hold the checker to the truth.
//!
//! ```
//! use ringtrace_clock::{Clock, Sched, SchedLatch};
//! let sched = Sched::new().unwrap();
//! let first = ringtrace_clock::sched::updates();
//! let t0 = sched.read();
//! ringtrace_clock::sched::update(); // what the frequency change does
//! let t1 = sched.read();
//! assert!(t1 + 1_000 >= t0);
//! let reading = ringtrace_clock::sched::last_reading();
//! assert_eq!(reading.value, t1);
//! let verdict = ringtrace_clock::sched::check_since(first, reading.cycles, reading.value);
//! assert!(verdict.unwrap().is_right());
//! assert!(SchedLatch::new().unwrap().read() > 0);
//! ```

mod check;
mod data;
mod planted;
mod read;

pub use check::{check, check_since, measure_wrong, Verdict, WrongReadings};
pub use data::{last_reading, update, updates, Reading, SavedReading};
pub use planted::{Plant, PlantedRead};
pub use read::{window, Sched, SchedLatch, SchedWide, Window, SCHED_READ, SCHED_WIDE_READ};

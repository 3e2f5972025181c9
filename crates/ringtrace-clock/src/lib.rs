//! Clock sources for ringtrace, and the irq/preempt emulation they are
//! protected by.
//!
//! Every event ringtrace records is stamped by a [`Clock`] chosen at run
//! time, by name (`tsc`, `mono-raw@preempt`, `global:mono@irq-hard`; see
//! [`ClockSpec`]) or by type ([`Tsc`], [`Protected`]`<`[`Mono`]`>`, ...).
//! The hot path is [`Clock::read`]: raw ticks, inlined, no lock, no
//! allocation, async-signal-safe. Names, calibration and conversion to
//! nanoseconds live in [`ClockInfo`], off that path, as the kernel converts
//! on the read side.
//!
//! [`Protection`] is the trace_clock_local patch's trade-off in userspace: a
//! read can run bare, inside an emulated `preempt_disable_notrace()`, or
//! inside an emulated `local_irq_save()`, soft (lazy masking) or hard
//! (`pthread_sigmask`). The emulation itself is in [`emulation`], the one
//! place it lives; the tracepoint crate builds its traced variants on it.
//!
//! ```
//! use ringtrace_clock::{Clock, ClockSpec};
//!
//! let clock = "mono-raw@preempt".parse::<ClockSpec>()?.build()?;
//! let t0 = clock.read();
//! let t1 = clock.read();
//! let info = clock.info();
//! assert!(t1 >= t0);
//! assert_eq!(info.name, "mono-raw@preempt");
//! assert_eq!(info.ticks_to_ns(t1 - t0), Some(t1 - t0)); // ticks are ns
//! # Ok::<(), ringtrace_clock::ClockError>(())
//! ```

mod calibrate;
mod clock;
mod cost;
pub mod emulation;
mod error;
mod info;
mod protection;
mod source;
mod spec;

pub use calibrate::{calibrate_frequency, monotonic_ns};
pub use clock::{Clock, InlineRead};
pub use cost::{measure_read_cost, ReadCost, MAX_BATCHES, MAX_READS_PER_BATCH};
pub use error::ClockError;
pub use info::{ClockInfo, Guarantee, TickConversion};
pub use protection::{Protected, Protection};
pub use source::sched;
pub use source::{
    BaseSource, Boot, Cntvct, Counter, CustomClock, Global, Local, ManualClock, Mono, MonoRaw,
    PosixClock, QuantaClock, Sched, SchedLatch, SchedWide, Source, SourceName, Tsc, TscOrdered,
};
pub use spec::{AnyClock, ClockSpec};

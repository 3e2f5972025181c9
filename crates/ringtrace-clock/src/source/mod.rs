//! The clock sources, each a type and each selectable by name.
//!
//! | name          | reads                                     | kernel analog      |
//! |---------------|-------------------------------------------|--------------------|
//! | `tsc`         | `rdtsc`                                   | x86-tsc            |
//! | `tsc-ordered` | `rdtscp`, or `lfence; rdtsc`              | rdtsc_ordered      |
//! | `cntvct`      | `CNTVCT_EL0` after `isb`                  | arm64 counter      |
//! | `mono`        | `CLOCK_MONOTONIC`                         | mono               |
//! | `mono-raw`    | `CLOCK_MONOTONIC_RAW`                     | mono_raw           |
//! | `boot`        | `CLOCK_BOOTTIME`                          | boot               |
//! | `quanta`      | quanta's raw ticks, scaled on read        | -                  |
//! | `counter`     | an atomic increment                       | counter            |
//! | `local`       | the fastest per-CPU counter here          | local              |
//! | `global`      | `local` clamped to a process-wide maximum | global             |
//! | `sched`       | `local` through per-thread cyc2ns data a tick rewrites, unlatched | 2009 x86 `sched_clock()` |
//! | `sched-latch` | the same data behind a seqcount latch     | `sched_clock()` with `cyc2ns_read_begin()` |
//!
//! `global:SOURCE` clamps any other source instead of `local`. A program's
//! own [`Clock`] goes in as a [`CustomClock`], which has no name to select
//! it by: it is handed over as a value.

mod cntvct;
mod counter;
mod custom;
mod global;
mod local;
mod manual;
mod posix;
mod quanta;
pub mod sched;
mod tsc;

pub use self::quanta::QuantaClock;
pub use cntvct::Cntvct;
pub use counter::Counter;
pub use custom::CustomClock;
pub use global::Global;
pub use local::Local;
pub use manual::ManualClock;
pub use posix::{Boot, Mono, MonoRaw, PosixClock};
pub use sched::{Sched, SchedLatch, SchedWide};
#[cfg(target_arch = "x86_64")]
pub(crate) use tsc::rdtsc as tsc_read;
pub use tsc::{Tsc, TscOrdered};

use crate::{Clock, ClockError, ClockInfo};
use std::fmt;

/// The name of a base source (every source but `global`, which wraps one).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SourceName {
    /// [`Tsc`].
    Tsc,
    /// [`TscOrdered`].
    TscOrdered,
    /// [`Cntvct`].
    Cntvct,
    /// [`Mono`].
    Mono,
    /// [`MonoRaw`].
    MonoRaw,
    /// [`Boot`].
    Boot,
    /// [`QuantaClock`].
    Quanta,
    /// [`Counter`].
    Counter,
    /// [`Local`].
    Local,
    /// [`Sched`].
    Sched,
    /// [`SchedLatch`].
    SchedLatch,
    /// [`SchedWide`]: amplified.
    SchedWide,
}

impl SourceName {
    /// Every base source, in the order listings show them.
    pub const ALL: [SourceName; 12] = [
        SourceName::Tsc,
        SourceName::TscOrdered,
        SourceName::Cntvct,
        SourceName::Mono,
        SourceName::MonoRaw,
        SourceName::Boot,
        SourceName::Quanta,
        SourceName::Counter,
        SourceName::Local,
        SourceName::Sched,
        SourceName::SchedLatch,
        SourceName::SchedWide,
    ];

    /// Whether the source is an amplified setting (`sched-wide`: a wider
    /// window than the kernel's), whose figures are to be labelled so.
    ///
    /// ```
    /// use ringtrace_clock::SourceName;
    /// assert!(SourceName::SchedWide.is_amplified());
    /// assert!(!SourceName::Sched.is_amplified());
    /// ```
    pub fn is_amplified(self) -> bool {
        self == SourceName::SchedWide
    }

    /// The name the source is selected by.
    pub fn name(self) -> &'static str {
        match self {
            SourceName::Tsc => "tsc",
            SourceName::TscOrdered => "tsc-ordered",
            SourceName::Cntvct => "cntvct",
            SourceName::Mono => Mono::NAME,
            SourceName::MonoRaw => MonoRaw::NAME,
            SourceName::Boot => Boot::NAME,
            SourceName::Quanta => "quanta",
            SourceName::Counter => "counter",
            SourceName::Local => "local",
            SourceName::Sched => "sched",
            SourceName::SchedLatch => "sched-latch",
            SourceName::SchedWide => "sched-wide",
        }
    }

    /// Builds the source, or says why it cannot work here.
    pub fn build(self) -> Result<BaseSource, ClockError> {
        Ok(match self {
            SourceName::Tsc => BaseSource::Tsc(Tsc::new()?),
            SourceName::TscOrdered => BaseSource::TscOrdered(TscOrdered::new()?),
            SourceName::Cntvct => BaseSource::Cntvct(Cntvct::new()?),
            SourceName::Mono => BaseSource::Mono(Mono::try_new()?),
            SourceName::MonoRaw => BaseSource::MonoRaw(MonoRaw::try_new()?),
            SourceName::Boot => BaseSource::Boot(Boot::try_new()?),
            SourceName::Quanta => BaseSource::Quanta(QuantaClock::new()),
            SourceName::Counter => BaseSource::Counter(Counter::new()),
            SourceName::Local => BaseSource::Local(Local::new()?),
            SourceName::Sched => BaseSource::Sched(Sched::new()?),
            SourceName::SchedLatch => BaseSource::SchedLatch(SchedLatch::new()?),
            SourceName::SchedWide => BaseSource::SchedWide(SchedWide::new()?),
        })
    }
}

impl fmt::Display for SourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Any base source, chosen at run time, or one the program brings
/// ([`BaseSource::Custom`]).
#[derive(Debug, Clone)]
#[allow(missing_docs)] // each variant holds the source its name says
pub enum BaseSource {
    Tsc(Tsc),
    TscOrdered(TscOrdered),
    Cntvct(Cntvct),
    Mono(Mono),
    MonoRaw(MonoRaw),
    Boot(Boot),
    Quanta(QuantaClock),
    Counter(Counter),
    Local(Local),
    Sched(Sched),
    SchedLatch(SchedLatch),
    SchedWide(SchedWide),
    /// A user-defined clock.
    Custom(CustomClock),
}

/// Calls `$body` with `$c` bound to the source inside a [`BaseSource`].
macro_rules! with_source {
    ($source:expr, $c:ident => $body:expr) => {
        match $source {
            BaseSource::Tsc($c) => $body,
            BaseSource::TscOrdered($c) => $body,
            BaseSource::Cntvct($c) => $body,
            BaseSource::Mono($c) => $body,
            BaseSource::MonoRaw($c) => $body,
            BaseSource::Boot($c) => $body,
            BaseSource::Quanta($c) => $body,
            BaseSource::Counter($c) => $body,
            BaseSource::Local($c) => $body,
            BaseSource::Sched($c) => $body,
            BaseSource::SchedLatch($c) => $body,
            BaseSource::SchedWide($c) => $body,
            BaseSource::Custom($c) => $body,
        }
    };
}

impl Clock for BaseSource {
    #[inline]
    fn read(&self) -> u64 {
        with_source!(self, c => c.read())
    }

    fn info(&self) -> ClockInfo {
        with_source!(self, c => c.info())
    }

    fn inline_read(&self) -> crate::InlineRead {
        with_source!(self, c => c.inline_read())
    }
}

/// A base source, or one clamped by [`Global`].
#[derive(Debug, Clone)]
pub enum Source {
    /// A source read as it is.
    Base(BaseSource),
    /// A source clamped to a process-wide maximum.
    Global(Global<BaseSource>),
}

impl Source {
    /// A user-defined clock, read as it is.
    pub fn custom(clock: impl Clock + 'static) -> Source {
        Source::Base(BaseSource::Custom(CustomClock::new(clock)))
    }
}

impl Clock for Source {
    #[inline]
    fn read(&self) -> u64 {
        match self {
            Source::Base(c) => c.read(),
            Source::Global(c) => c.read(),
        }
    }

    fn inline_read(&self) -> crate::InlineRead {
        match self {
            Source::Base(c) => c.inline_read(),
            // Clamped to a process-wide maximum: more than the instruction.
            Source::Global(_) => crate::InlineRead::Call,
        }
    }

    fn info(&self) -> ClockInfo {
        match self {
            Source::Base(c) => c.info(),
            Source::Global(c) => c.info(),
        }
    }
}

//! Protections: what a clock read is wrapped in, the trace_clock_local
//! trade-off of the trace_clock_local patch ("tracing: do not disable interrupts for
//! trace_clock_local").
//!
//! The kernel's `trace_clock_local()` once read `sched_clock()` with irqs
//! disabled; Steven Rostedt's patch changed that to preemption
//! disabled, 210 ns to 179 ns per recorded event, accepting "a seldom
//! incorrect timestamp" when an interrupt lands mid-read. Each protection
//! here is one side of that trade: `irq` is the kernel's
//! `local_irq_save()` at its cost, `irq-soft` and `irq-hard` bound it from
//! below and above, and `preempt` is the patch's choice.

use crate::emulation::{flags_irq, hard_irq, preempt, soft_irq};
use crate::{Clock, ClockError, ClockInfo};
use std::fmt;

/// What a clock read runs inside.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Protection {
    /// A bare read.
    Raw,
    /// Inside `preempt_disable_notrace()` / `preempt_enable_notrace()`.
    Preempt,
    /// Inside a soft (lazy-masking) `local_irq_save()` / `restore()`: a
    /// per-thread flag. The lower bound of what disabling irqs costs.
    IrqSoft,
    /// Inside `local_irq_save()` / `restore()` at the kernel's cost: the
    /// soft mask with x86's `pushfq`/`popfq` around it (the soft mask
    /// alone elsewhere). The kernel's side of the trace_clock_local patch's trade.
    Irq,
    /// Inside a hard (`pthread_sigmask`) `local_irq_save()` / `restore()`:
    /// two system calls. The upper bound.
    IrqHard,
}

impl Protection {
    /// Every protection, cheapest first.
    pub const ALL: [Protection; 5] = [
        Protection::Raw,
        Protection::Preempt,
        Protection::IrqSoft,
        Protection::Irq,
        Protection::IrqHard,
    ];

    /// The name after `@`: `raw`, `preempt`, `irq-soft`, `irq` or
    /// `irq-hard`.
    pub fn name(self) -> &'static str {
        match self {
            Protection::Raw => "raw",
            Protection::Preempt => "preempt",
            Protection::IrqSoft => "irq-soft",
            Protection::Irq => "irq",
            Protection::IrqHard => "irq-hard",
        }
    }

    /// Parses a protection name.
    ///
    /// ```
    /// use ringtrace_clock::Protection;
    /// assert_eq!(Protection::parse("irq-soft").unwrap(), Protection::IrqSoft);
    /// let err = Protection::parse("irqs").unwrap_err().to_string();
    /// assert!(err.contains("raw, preempt, irq-soft, irq, irq-hard"));
    /// ```
    pub fn parse(name: &str) -> Result<Protection, ClockError> {
        Protection::ALL
            .into_iter()
            .find(|p| p.name() == name)
            .ok_or_else(|| ClockError::UnknownProtection {
                given: name.to_owned(),
                valid: Protection::ALL.map(Protection::name).join(", "),
            })
    }

    /// Runs `f` inside this protection.
    #[inline(always)]
    pub fn run<R>(self, f: impl FnOnce() -> R) -> R {
        match self {
            Protection::Raw => f(),
            Protection::Preempt => {
                preempt::preempt_disable_notrace();
                let r = f();
                preempt::preempt_enable_notrace();
                r
            }
            Protection::IrqSoft => {
                let flags = soft_irq::save();
                let r = f();
                soft_irq::restore(flags);
                r
            }
            Protection::Irq => {
                let flags = flags_irq::save();
                let r = f();
                flags_irq::restore(flags);
                r
            }
            Protection::IrqHard => {
                let flags = hard_irq::save();
                let r = f();
                hard_irq::restore(flags);
                r
            }
        }
    }
}

impl fmt::Display for Protection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A clock whose every read runs inside a [`Protection`].
///
/// ```
/// use ringtrace_clock::{Clock, Mono, Protected, Protection};
/// let clock = Protected::new(Mono::new(), Protection::Preempt);
/// assert_eq!(clock.info().name, "mono@preempt");
/// assert!(clock.read() > 0);
/// ```
#[derive(Debug, Clone)]
pub struct Protected<C> {
    clock: C,
    protection: Protection,
}

impl<C: Clock> Protected<C> {
    /// Wraps `clock` so that each read runs inside `protection`.
    pub fn new(clock: C, protection: Protection) -> Self {
        Protected { clock, protection }
    }

    /// The protection each read runs inside.
    pub fn protection(&self) -> Protection {
        self.protection
    }

    /// The wrapped clock.
    pub fn inner(&self) -> &C {
        &self.clock
    }
}

impl<C: Clock> Clock for Protected<C> {
    #[inline]
    fn read(&self) -> u64 {
        self.protection.run(|| self.clock.read())
    }

    fn inline_read(&self) -> crate::InlineRead {
        // Only an unprotected read is the bare instruction.
        if self.protection == Protection::Raw {
            self.clock.inline_read()
        } else {
            crate::InlineRead::Call
        }
    }

    fn info(&self) -> ClockInfo {
        let mut info = self.clock.info();
        if self.protection != Protection::Raw {
            info.name = format!("{}@{}", info.name, self.protection);
        }
        info
    }
}

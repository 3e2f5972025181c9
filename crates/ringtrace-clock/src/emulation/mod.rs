//! The userspace emulation of the kernel's irq and preempt disabling.
//!
//! In userspace a signal is the interrupt, and the scheduler's preemption
//! cannot be turned off, only tracked. This module is the one place where
//! that emulation lives; the clock protections ([`crate::Protection`]) and
//! the tracepoint crate's traced `local_irq_*` / `preempt_*` build on it.
//!
//! - [`preempt`]: a per-thread preempt count, as `preempt_count()` is in the
//!   kernel, with a reschedule requested meanwhile honoured at the outermost
//!   enable.
//! - [`soft_irq`]: lazy masking, as powerpc masks interrupts: disabling sets
//!   a per-thread flag; the signal handlers ringtrace installs
//!   ([`interrupt`]) check it and, when masked, record the signal as pending
//!   instead of running; the pending signal is replayed at enable or restore.
//! - [`flags_irq`]: the soft mask with the x86 `pushfq`/`popfq` round trip
//!   of the kernel's `local_irq_save()`/`restore()` around it, so that it
//!   costs what the kernel's does.
//! - [`hard_irq`]: all asynchronous signals blocked with `pthread_sigmask`,
//!   two system calls per pair: the expensive, always-correct side.
//! - [`signals`]: which signals can be interrupts. Synchronous fault
//!   signals (SIGSEGV and its kind) never are: the faulting instruction runs
//!   again after the handler, so deferring one would spin forever.
//! - [`timer`]: a periodic interrupt, a signal sent to one thread at a fixed
//!   rate, to provoke interrupted sections.
//!
//! All per-thread state is in `const`-initialised thread locals of atomic
//! types without destructors, so it is reachable from a signal handler
//! without allocation or lazy registration. Only the owning thread and the
//! signal handlers that interrupt it touch that state; a handler runs to
//! completion between two instructions of the thread it interrupted. That is
//! why plain relaxed loads and stores suffice where a cross-thread protocol
//! would need read-modify-writes, and why the only ordering needed is against
//! the compiler, given by `compiler_fence` (the kernel's `barrier()`).

pub mod flags_irq;
pub mod hard_irq;
pub mod interrupt;
pub mod preempt;
pub mod signals;
pub mod soft_irq;
pub mod timer;

use std::fmt;

/// Which kind of irq masking the emulation uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IrqBackend {
    /// Lazy masking with a per-thread flag; deferred signals are replayed.
    Soft,
    /// `pthread_sigmask` blocking every asynchronous signal.
    Hard,
}

impl IrqBackend {
    /// Both backends, soft first.
    pub const ALL: [IrqBackend; 2] = [IrqBackend::Soft, IrqBackend::Hard];

    /// `soft` or `hard`.
    pub fn name(self) -> &'static str {
        match self {
            IrqBackend::Soft => "soft",
            IrqBackend::Hard => "hard",
        }
    }

    /// `local_irq_save()` with this backend.
    #[inline]
    pub fn save(self) -> IrqFlags {
        match self {
            IrqBackend::Soft => IrqFlags::Soft(soft_irq::save()),
            IrqBackend::Hard => IrqFlags::Hard(hard_irq::save()),
        }
    }

    /// `local_irq_disable()` with this backend.
    #[inline]
    pub fn disable(self) {
        match self {
            IrqBackend::Soft => soft_irq::disable(),
            IrqBackend::Hard => hard_irq::disable(),
        }
    }

    /// `local_irq_enable()` with this backend.
    #[inline]
    pub fn enable(self) {
        match self {
            IrqBackend::Soft => soft_irq::enable(),
            IrqBackend::Hard => hard_irq::enable(),
        }
    }
}

impl fmt::Display for IrqBackend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for IrqBackend {
    type Err = crate::ClockError;

    /// Parses `soft` or `hard`, the names [`Display`](std::fmt::Display)
    /// writes.
    ///
    /// ```
    /// use ringtrace_clock::emulation::IrqBackend;
    /// assert_eq!("hard".parse::<IrqBackend>()?, IrqBackend::Hard);
    /// let err = "medium".parse::<IrqBackend>().unwrap_err().to_string();
    /// assert!(err.contains("`medium`") && err.contains("soft, hard"), "{err}");
    /// # Ok::<(), ringtrace_clock::ClockError>(())
    /// ```
    fn from_str(name: &str) -> Result<IrqBackend, crate::ClockError> {
        IrqBackend::ALL
            .into_iter()
            .find(|b| b.name() == name)
            .ok_or_else(|| crate::ClockError::UnknownIrqBackend {
                given: name.to_owned(),
                valid: IrqBackend::ALL.map(IrqBackend::name).join(", "),
            })
    }
}

/// The state saved by `local_irq_save()`, to give back to
/// [`IrqFlags::restore`].
#[derive(Clone, Copy)]
#[must_use = "irq flags must be given back to restore()"]
pub enum IrqFlags {
    /// Saved by the soft backend.
    Soft(soft_irq::SoftIrqFlags),
    /// Saved by the hard backend.
    Hard(hard_irq::HardIrqFlags),
}

impl IrqFlags {
    /// `local_irq_restore(flags)`.
    #[inline]
    pub fn restore(self) {
        match self {
            IrqFlags::Soft(f) => soft_irq::restore(f),
            IrqFlags::Hard(f) => hard_irq::restore(f),
        }
    }

    /// Whether irqs were disabled when these flags were saved
    /// (`irqs_disabled_flags()`).
    pub fn were_disabled(&self) -> bool {
        match self {
            IrqFlags::Soft(f) => f.was_masked(),
            IrqFlags::Hard(f) => f.was_disabled(),
        }
    }
}

impl fmt::Debug for IrqFlags {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IrqFlags")
            .field("were_disabled", &self.were_disabled())
            .finish()
    }
}

/// Whether the calling thread has irqs disabled by either backend
/// (`irqs_disabled()`).
#[inline]
pub fn irqs_disabled() -> bool {
    soft_irq::is_masked() || hard_irq::is_disabled()
}

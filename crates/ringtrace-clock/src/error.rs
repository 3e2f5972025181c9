//! Errors of the clock crate: each names the bad value and what is valid.

use thiserror::Error;

/// Every way that choosing or building a clock can fail.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ClockError {
    /// The source part of a clock name is not one ringtrace knows.
    #[error("unknown clock source `{}`; valid sources: {valid}", .given.escape_debug())]
    UnknownSource {
        /// What was asked for.
        given: String,
        /// The valid source names, comma-separated.
        valid: String,
    },
    /// The part after `@` is not a protection ringtrace knows.
    #[error("unknown clock protection `{}`; valid protections: {valid}", .given.escape_debug())]
    UnknownProtection {
        /// What was asked for.
        given: String,
        /// The valid protection names, comma-separated.
        valid: String,
    },
    /// The name is not an irq emulation backend
    /// ([`IrqBackend`](crate::emulation::IrqBackend)).
    #[error("unknown irq backend `{}`; valid backends: {valid}", .given.escape_debug())]
    UnknownIrqBackend {
        /// What was asked for.
        given: String,
        /// The valid backend names, comma-separated.
        valid: String,
    },
    /// The clock name is malformed (empty, or more than one `@`, say).
    #[error("malformed clock name `{}`: {reason}; expected SOURCE or SOURCE@PROTECTION, e.g. `tsc@preempt`", .given.escape_debug())]
    Malformed {
        /// What was asked for.
        given: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The source exists but cannot work on this machine.
    #[error("clock source `{source_name}` is unavailable here: {reason}")]
    Unavailable {
        /// The source asked for.
        source_name: &'static str,
        /// Why it cannot work here.
        reason: String,
    },
    /// A system call needed to set up a clock or the emulation failed.
    #[error("{call} failed: {message}")]
    Os {
        /// The call that failed.
        call: &'static str,
        /// The system's explanation (strerror).
        message: String,
    },
    /// A signal number the irq emulation cannot route: not a signal at all
    /// (0, negative, above SIGRTMAX), one no handler can catch (SIGKILL,
    /// SIGSTOP), or one the C library keeps for itself (32 up to SIGRTMIN).
    #[error(
        "signal {signal} ({name}) cannot be routed through the irq emulation: {reason}; {valid}"
    )]
    BadSignal {
        /// The signal asked for.
        signal: i32,
        /// Its name, e.g. `SIGKILL`, or `not a signal`.
        name: String,
        /// Why it cannot be routed.
        reason: &'static str,
        /// What is valid instead.
        valid: String,
    },
    /// A synchronous fault signal (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP,
    /// SIGSYS) asked to be an interrupt. The kernel sends one for a fault of
    /// the running instruction, which runs again when the handler returns:
    /// deferred while irqs are masked, the fault would repeat forever.
    #[error("{name} ({signal}) is a synchronous fault signal: the kernel sends it for a fault of the running instruction, which runs again when the handler returns, so deferring it as a masked interrupt would hang the process instead of crashing it; {valid}")]
    FaultSignal {
        /// The signal asked for.
        signal: i32,
        /// Its name, e.g. `SIGSEGV`.
        name: String,
        /// What is valid instead.
        valid: String,
    },
    /// A signal would be sent that no handler catches: its default action
    /// would end (or stop) the process, or ignoring it would make the
    /// interrupts silently vanish.
    #[error("signal {signal} has no handler installed (its disposition is {disposition}); sending it would {consequence}; route it first with interrupt::install_irq_handler (or install your own handler with sigaction)")]
    NoHandler {
        /// The signal asked for.
        signal: i32,
        /// `default` or `ignored`.
        disposition: &'static str,
        /// What sending it would do.
        consequence: &'static str,
    },
    /// A measurement asked for more samples than can be held.
    #[error("{what} = {given} is too many; valid values are 1..={max}")]
    TooManySamples {
        /// The parameter.
        what: &'static str,
        /// What was asked for.
        given: usize,
        /// The largest valid value.
        max: usize,
    },
}

impl ClockError {
    /// Builds [`ClockError::Os`] from the calling thread's `errno`.
    pub(crate) fn last_os(call: &'static str) -> Self {
        ClockError::Os {
            call,
            message: std::io::Error::last_os_error().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_bad_clock_name_is_shown_escaped() {
        let err = "mono\0\x1b[31m".parse::<crate::ClockSpec>().unwrap_err();
        let said = err.to_string();
        assert!(said.contains("mono\\0\\u{1b}[31m"), "{said}");
        assert!(!said.contains('\x1b') && !said.contains('\0'), "{said}");
    }
}

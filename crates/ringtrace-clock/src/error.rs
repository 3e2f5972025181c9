//! Errors of the clock crate: each names the bad value and what is valid.

use thiserror::Error;

/// Every way that choosing or building a clock can fail.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ClockError {
    /// The source part of a clock name is not one ringtrace knows.
    #[error("unknown clock source `{given}`; valid sources: {valid}")]
    UnknownSource {
        /// What was asked for.
        given: String,
        /// The valid source names, comma-separated.
        valid: String,
    },
    /// The part after `@` is not a protection ringtrace knows.
    #[error("unknown clock protection `{given}`; valid protections: {valid}")]
    UnknownProtection {
        /// What was asked for.
        given: String,
        /// The valid protection names, comma-separated.
        valid: String,
    },
    /// The clock name is malformed (empty, or more than one `@`, say).
    #[error("malformed clock name `{given}`: {reason}; expected SOURCE or SOURCE@PROTECTION, e.g. `tsc@preempt`")]
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
    /// A signal number outside what the irq emulation can route.
    #[error("signal {signal} cannot be routed through the irq emulation; valid signals are 1..={max} except SIGKILL (9), SIGSTOP (19) and 32..{rtmin}, which the C library keeps for itself (SIGRTMIN is {rtmin})")]
    BadSignal {
        /// The signal asked for.
        signal: i32,
        /// The largest valid signal number.
        max: i32,
        /// The C library's SIGRTMIN: 32 up to it are reserved.
        rtmin: i32,
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

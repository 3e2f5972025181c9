//! Which signals can be interrupts: the checks every API that routes or
//! sends a signal makes, and the names its errors use.
//!
//! An interrupt is asynchronous: whatever the thread was doing can wait
//! until irqs are enabled again, which is what soft masking does with it.
//! A synchronous fault signal is the opposite. The kernel sends SIGSEGV,
//! SIGBUS, SIGFPE, SIGILL, SIGTRAP or SIGSYS because the instruction that
//! was running faulted; when a handler returns, that instruction runs
//! again. Deferred as a masked interrupt, the fault repeats forever and the
//! process spins instead of crashing. So these signals are refused, by name,
//! as are the ones no handler can catch (SIGKILL, SIGSTOP), the ones the C
//! library keeps for itself (32 up to SIGRTMIN) and numbers that are not
//! signals at all.
//!
//! ```
//! use ringtrace_clock::emulation::signals;
//! use ringtrace_clock::ClockError;
//!
//! assert!(signals::check_routable(libc::SIGUSR1).is_ok());
//! let err = signals::check_routable(libc::SIGSEGV).unwrap_err();
//! assert!(matches!(err, ClockError::FaultSignal { signal: libc::SIGSEGV, .. }));
//! assert!(err.to_string().starts_with("SIGSEGV (11) is a synchronous fault signal"));
//! assert_eq!(signals::name(libc::SIGRTMIN() + 2), format!("SIGRTMIN+2"));
//! ```

use crate::ClockError;
use std::mem::MaybeUninit;

/// The synchronous fault signals: sent for a fault of the running
/// instruction, which runs again when a handler returns. Never routed as
/// interrupts, and never blocked by the hard irq emulation (a fault with
/// its signal blocked kills the process).
pub const SYNCHRONOUS_FAULT_SIGNALS: [i32; 6] = [
    libc::SIGSEGV,
    libc::SIGBUS,
    libc::SIGFPE,
    libc::SIGILL,
    libc::SIGTRAP,
    libc::SIGSYS,
];

/// The highest signal the emulation can hold pending: the per-thread
/// pending mask is 64 bits. SIGRTMAX on Linux.
pub(crate) const MAX_SIGNAL: i32 = 64;

/// SIGRTMAX, capped by what the pending mask holds.
fn rtmax() -> i32 {
    libc::SIGRTMAX().min(MAX_SIGNAL)
}

/// The classic signals and their names, from the C library's numbering.
const CLASSIC: [(i32, &str); 31] = [
    (libc::SIGHUP, "SIGHUP"),
    (libc::SIGINT, "SIGINT"),
    (libc::SIGQUIT, "SIGQUIT"),
    (libc::SIGILL, "SIGILL"),
    (libc::SIGTRAP, "SIGTRAP"),
    (libc::SIGABRT, "SIGABRT"),
    (libc::SIGBUS, "SIGBUS"),
    (libc::SIGFPE, "SIGFPE"),
    (libc::SIGKILL, "SIGKILL"),
    (libc::SIGUSR1, "SIGUSR1"),
    (libc::SIGSEGV, "SIGSEGV"),
    (libc::SIGUSR2, "SIGUSR2"),
    (libc::SIGPIPE, "SIGPIPE"),
    (libc::SIGALRM, "SIGALRM"),
    (libc::SIGTERM, "SIGTERM"),
    (libc::SIGSTKFLT, "SIGSTKFLT"),
    (libc::SIGCHLD, "SIGCHLD"),
    (libc::SIGCONT, "SIGCONT"),
    (libc::SIGSTOP, "SIGSTOP"),
    (libc::SIGTSTP, "SIGTSTP"),
    (libc::SIGTTIN, "SIGTTIN"),
    (libc::SIGTTOU, "SIGTTOU"),
    (libc::SIGURG, "SIGURG"),
    (libc::SIGXCPU, "SIGXCPU"),
    (libc::SIGXFSZ, "SIGXFSZ"),
    (libc::SIGVTALRM, "SIGVTALRM"),
    (libc::SIGPROF, "SIGPROF"),
    (libc::SIGWINCH, "SIGWINCH"),
    (libc::SIGIO, "SIGIO"),
    (libc::SIGPWR, "SIGPWR"),
    (libc::SIGSYS, "SIGSYS"),
];

/// The name of `signal` as `kill -l` spells it: `SIGSEGV`, `SIGRTMIN+3`,
/// `SIGRTMAX`; `signal 33` for a number the C library reserves, and
/// `not a signal` for one outside 1..=SIGRTMAX.
pub fn name(signal: i32) -> String {
    let (rtmin, rtmax) = (libc::SIGRTMIN(), rtmax());
    if let Some((_, known)) = CLASSIC.iter().find(|(s, _)| *s == signal) {
        return known.to_string();
    }
    match signal {
        s if s == rtmin => "SIGRTMIN".to_string(),
        s if s == rtmax => "SIGRTMAX".to_string(),
        s if (rtmin..rtmax).contains(&s) => format!("SIGRTMIN+{}", s - rtmin),
        s if (1..rtmin).contains(&s) => format!("signal {s}"),
        _ => "not a signal".to_string(),
    }
}

/// What a valid interrupt signal is, for the errors' text.
fn valid() -> String {
    format!(
        "valid signals are asynchronous ones, such as SIGUSR1 (10), SIGUSR2 (12), SIGALRM (14) \
         or SIGRTMIN..=SIGRTMAX ({}..={})",
        libc::SIGRTMIN(),
        rtmax()
    )
}

/// Whether `signal` can be routed and sent as an interrupt.
///
/// Refused with [`ClockError::FaultSignal`]: the synchronous fault signals
/// ([`SYNCHRONOUS_FAULT_SIGNALS`]). Refused with [`ClockError::BadSignal`]:
/// 0, negative numbers and numbers above SIGRTMAX (not signals), SIGKILL
/// and SIGSTOP (no handler can catch them), and 32 up to SIGRTMIN (the C
/// library's own; `sigaction` refuses them).
pub fn check_routable(signal: i32) -> Result<(), ClockError> {
    let bad = |reason: &'static str| ClockError::BadSignal {
        signal,
        name: name(signal),
        reason,
        valid: valid(),
    };
    if !(1..=rtmax()).contains(&signal) {
        Err(bad("it is not a signal number (1..=SIGRTMAX)"))
    } else if signal == libc::SIGKILL || signal == libc::SIGSTOP {
        Err(bad("no handler can catch it"))
    } else if (32..libc::SIGRTMIN()).contains(&signal) {
        Err(bad("the C library keeps it for itself"))
    } else if SYNCHRONOUS_FAULT_SIGNALS.contains(&signal) {
        Err(ClockError::FaultSignal {
            signal,
            name: name(signal),
            valid: valid(),
        })
    } else {
        Ok(())
    }
}

/// Whether `signal` is caught by a handler, so that sending it neither kills
/// the process (the default action of most signals) nor vanishes (ignored).
///
/// Any handler counts: one routed by
/// [`install_irq_handler`](super::interrupt::install_irq_handler) or the
/// program's own. The check is made when a sender starts; uninstalling the
/// handler while a timer still runs is the caller's mistake.
pub(crate) fn check_handled(signal: i32) -> Result<(), ClockError> {
    let mut current = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a null new action only queries; `current` is valid to write.
    if unsafe { libc::sigaction(signal, std::ptr::null(), current.as_mut_ptr()) } != 0 {
        return Err(ClockError::last_os("sigaction"));
    }
    // SAFETY: sigaction succeeded, so it filled `current`.
    let handler = unsafe { current.assume_init() }.sa_sigaction;
    let (disposition, consequence) = if handler == libc::SIG_DFL {
        // The signals whose default action is to do nothing.
        let harmless = [libc::SIGCHLD, libc::SIGURG, libc::SIGWINCH, libc::SIGCONT];
        if harmless.contains(&signal) {
            ("default", "discard it, so no interrupt would ever run")
        } else {
            ("default", "terminate or stop the process")
        }
    } else if handler == libc::SIG_IGN {
        ("ignored", "discard it, so no interrupt would ever run")
    } else {
        return Ok(());
    };
    Err(ClockError::NoHandler {
        signal,
        disposition,
        consequence,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_signal_number_has_a_name() {
        let (rtmin, rtmax) = (libc::SIGRTMIN(), rtmax());
        assert_eq!(name(libc::SIGSEGV), "SIGSEGV");
        assert_eq!(name(libc::SIGSYS), "SIGSYS");
        assert_eq!(name(rtmin), "SIGRTMIN");
        assert_eq!(name(rtmin + 1), "SIGRTMIN+1");
        assert_eq!(name(rtmax), "SIGRTMAX");
        assert_eq!(name(32), "signal 32");
        for bad in [i32::MIN, -1, 0, rtmax + 1, i32::MAX] {
            assert_eq!(name(bad), "not a signal");
        }
        for signal in 1..=31 {
            assert!(
                name(signal).starts_with("SIG"),
                "{signal}: {}",
                name(signal)
            );
        }
    }
}

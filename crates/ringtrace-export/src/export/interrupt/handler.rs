//! The handler of SIGINT, SIGTERM and SIGHUP while a temporary output is
//! registered: it removes every registered path, then restores the
//! signal's default action and raises it again, so that the process ends
//! as killed by it.
//!
//! Installed when the first path is registered ([`arm`]) and the previous
//! actions put back when the last is released ([`disarm`]). Only over a
//! signal's default action, which ends the process anyway: a signal the
//! process ignores (`nohup`'s SIGHUP, a background job's SIGINT) stays
//! ignored, and one the program handles itself stays its own (it may stop
//! gracefully, and its export then fails and cleans up as any error
//! does). Re-raising the default action is then exactly what the signal
//! would have done without this handler.

use super::registry::REGISTRY;
use std::sync::{Mutex, PoisonError};

/// The signals that end an export with a temporary output removed.
const SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// The registered paths and, for each of [`SIGNALS`], the action this
/// handler replaced (`None`: not installed for it).
struct Armed {
    users: usize,
    previous: [Option<libc::sigaction>; SIGNALS.len()],
}

/// Taken only by [`arm`] and [`disarm`], never by the handler.
static ARMED: Mutex<Armed> = Mutex::new(Armed {
    users: 0,
    previous: [None; SIGNALS.len()],
});

/// One more path registered: installs the handler if it is the first.
pub(super) fn arm() {
    // Nothing panics while it is held; if something did, the counts are
    // still whole, so a poisoned lock is used as it is.
    let mut armed = ARMED.lock().unwrap_or_else(PoisonError::into_inner);
    armed.users += 1;
    if armed.users == 1 {
        for (previous, signal) in armed.previous.iter_mut().zip(SIGNALS) {
            *previous = install(signal);
        }
    }
}

/// One path fewer: puts back the previous actions after the last.
pub(super) fn disarm() {
    let mut armed = ARMED.lock().unwrap_or_else(PoisonError::into_inner);
    armed.users = armed.users.saturating_sub(1);
    if armed.users == 0 {
        for (previous, signal) in armed.previous.iter_mut().zip(SIGNALS) {
            if let Some(previous) = previous.take() {
                restore(signal, &previous);
            }
        }
    }
}

/// `signal`'s action now.
fn current(signal: libc::c_int) -> Option<libc::sigaction> {
    // SAFETY: a zeroed sigaction is a valid value to overwrite; with a
    // null new action, sigaction only reads the current one into it.
    unsafe {
        let mut now: libc::sigaction = std::mem::zeroed();
        (libc::sigaction(signal, std::ptr::null(), &mut now) == 0).then_some(now)
    }
}

/// Installs the handler for `signal` if its action is the default, and
/// returns that action; `None`, and nothing changed, otherwise.
fn install(signal: libc::c_int) -> Option<libc::sigaction> {
    if current(signal)?.sa_sigaction != libc::SIG_DFL {
        return None;
    }
    // SAFETY: a zeroed sigaction with a handler and a filled mask is
    // valid. The handler is async-signal-safe (see `on_signal`), and the
    // three signals are blocked while it runs, so it never nests on a
    // thread.
    unsafe {
        let mut action: libc::sigaction = std::mem::zeroed();
        action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
        libc::sigemptyset(&mut action.sa_mask);
        for s in SIGNALS {
            libc::sigaddset(&mut action.sa_mask, s);
        }
        let mut replaced: libc::sigaction = std::mem::zeroed();
        if libc::sigaction(signal, &action, &mut replaced) != 0 {
            return None;
        }
        // Another thread set an action between the look and the swap:
        // it is put back, as it would have been left.
        if replaced.sa_sigaction != libc::SIG_DFL {
            libc::sigaction(signal, &replaced, std::ptr::null_mut());
            return None;
        }
        Some(replaced)
    }
}

/// Puts `previous` back for `signal`, if the action is still this
/// handler (not one the program set since).
fn restore(signal: libc::c_int, previous: &libc::sigaction) {
    let ours = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
    if current(signal).is_some_and(|now| now.sa_sigaction == ours) {
        // SAFETY: `previous` is the action sigaction returned for
        // `signal`; putting it back is valid.
        unsafe { libc::sigaction(signal, previous, std::ptr::null_mut()) };
    }
}

/// Removes the registered paths, then ends the process by `signal`.
/// Async-signal-safe: the registry's atomics, its removal's system
/// calls, sigaction and raise; no allocation, no lock, no panic.
extern "C" fn on_signal(signal: libc::c_int) {
    REGISTRY.remove_all();
    // SAFETY: a zeroed sigaction with SIG_DFL is the default action.
    // raise sends `signal` to this thread, where it stays blocked (the
    // handler's mask) until the handler returns; it is then delivered,
    // with the default action, ending the process as killed by it.
    unsafe {
        let mut default: libc::sigaction = std::mem::zeroed();
        default.sa_sigaction = libc::SIG_DFL;
        libc::sigaction(signal, &default, std::ptr::null_mut());
        libc::raise(signal);
    }
}

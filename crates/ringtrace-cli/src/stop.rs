//! Ctrl-C for the long-running commands: the first SIGINT or SIGTERM asks
//! for a graceful stop, so that what was measured so far is still printed
//! (and written, for `report`).
//!
//! A second signal often follows the first at once without anyone meaning
//! "now": `timeout -s INT` sends one to the command and one to its process
//! group, and an impatient user presses Ctrl-C twice. So the signals that
//! arrive within [`GRACE`] of the first are absorbed (counted, nothing
//! else); only one after that ends the process at once, by the signal's
//! default action, for a run whose graceful stop does not come.
//!
//! ```no_run
//! use ringtrace_cli::stop;
//!
//! stop::install()?;
//! while !stop::requested() {
//!     // one step of the run
//! #   break;
//! }
//! if let Some(signal) = stop::first_signal() {
//!     eprintln!("stopped by signal {signal}; the result above is partial");
//! }
//! # Ok::<(), stop::InstallError>(())
//! ```

use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, Ordering};
use std::time::Duration;
use thiserror::Error;

/// How long after the first stop signal further ones are absorbed.
pub const GRACE: Duration = Duration::from_secs(3);

/// Set by the first stop signal, with Release after [`FIRST_SIGNAL`]; read
/// with Acquire, so that whoever sees the stop also sees which signal it
/// was. `report::run` polls it Relaxed: it needs only the flag.
static STOP: AtomicBool = AtomicBool::new(false);
/// CLOCK_MONOTONIC of the first stop signal, in ns (at least 1); 0 before.
static FIRST_NS: AtomicU64 = AtomicU64::new(0);
/// The first stop signal's number; 0 before.
static FIRST_SIGNAL: AtomicI32 = AtomicI32::new(0);
/// Stop signals absorbed within [`GRACE`] of the first.
static ABSORBED: AtomicU64 = AtomicU64::new(0);

/// What the handler does with a stop signal.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The first: ask the run to stop.
    Stop,
    /// Within [`GRACE`] of the first: ignore it.
    Absorb,
    /// Later: end the process at once.
    End,
}

/// What a stop signal arriving at `now_ns` does, the first having come at
/// `first_ns` (`None`: this is the first).
pub fn action(first_ns: Option<u64>, now_ns: u64) -> Action {
    match first_ns {
        None => Action::Stop,
        Some(first) if now_ns.saturating_sub(first) < GRACE.as_nanos() as u64 => Action::Absorb,
        Some(_) => Action::End,
    }
}

/// A stop signal that could not be routed to the graceful stop.
#[derive(Debug, Error)]
#[error("cannot catch signal {signal} (SIGINT is 2, SIGTERM 15; both must be catchable): {source}")]
#[non_exhaustive]
pub struct InstallError {
    /// The signal number.
    pub signal: i32,
    /// What `sigaction` said.
    pub source: std::io::Error,
}

/// Routes SIGINT and SIGTERM to the graceful stop. Idempotent.
pub fn install() -> Result<(), InstallError> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: a zeroed sigaction is valid; the handler only uses
        // async-signal-safe calls (clock_gettime, write, sigaction, raise)
        // and atomics. Both stop signals are blocked while it runs, so it
        // never nests on one thread.
        let rc = unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop as extern "C" fn(libc::c_int) as usize;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            libc::sigaddset(&mut action.sa_mask, libc::SIGINT);
            libc::sigaddset(&mut action.sa_mask, libc::SIGTERM);
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if rc != 0 {
            return Err(InstallError {
                signal,
                source: std::io::Error::last_os_error(),
            });
        }
    }
    Ok(())
}

/// Whether a stop was asked for.
pub fn requested() -> bool {
    // Acquire: pairs with the handler's Release.
    STOP.load(Ordering::Acquire)
}

/// The flag a stop sets, for runs that poll an `AtomicBool`.
pub fn flag() -> &'static AtomicBool {
    &STOP
}

/// The signal that asked for the stop, if one did.
pub fn first_signal() -> Option<i32> {
    if !requested() {
        return None;
    }
    // Relaxed: ordered after the Acquire in `requested`.
    match FIRST_SIGNAL.load(Ordering::Relaxed) {
        0 => None,
        s => Some(s),
    }
}

/// How many stop signals were absorbed after the first.
pub fn absorbed() -> u64 {
    // Relaxed: a count, read on its own.
    ABSORBED.load(Ordering::Relaxed)
}

/// The exit code of a stopped run: 128 + the signal, as a shell reports a
/// program the signal ended (130 for SIGINT, 143 for SIGTERM).
pub fn exit_code() -> Option<u8> {
    first_signal().and_then(|s| u8::try_from(128 + s).ok())
}

/// Never 0, which marks no signal yet.
fn monotonic_ns() -> u64 {
    ringtrace_clock::monotonic_ns().max(1)
}

const STOPPING: &[u8] = b"\nringtrace: stopping; what was measured or recorded so far follows \
(another signal more than 3 s from now ends the run at once)\n";

extern "C" fn on_stop(signal: libc::c_int) {
    let now = monotonic_ns();
    // Relaxed: only this word's own value matters; the compare-exchange
    // makes one handler the first even when two threads take a signal each.
    let first = FIRST_NS
        .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed)
        .err();
    match action(first, now) {
        Action::Stop => {
            // Relaxed, then Release: published by the store to STOP.
            FIRST_SIGNAL.store(signal, Ordering::Relaxed);
            STOP.store(true, Ordering::Release);
            // SAFETY: write to stderr from a static buffer is
            // async-signal-safe; a failed write is of no consequence.
            unsafe {
                libc::write(
                    libc::STDERR_FILENO,
                    STOPPING.as_ptr().cast(),
                    STOPPING.len(),
                )
            };
        }
        Action::Absorb => {
            // Relaxed: a count.
            ABSORBED.fetch_add(1, Ordering::Relaxed);
        }
        Action::End => {
            // SAFETY: a zeroed sigaction with SIG_DFL restores the default
            // action; raise sends the signal to this thread, where it is
            // blocked until the handler returns and then ends the process.
            unsafe {
                let mut default: libc::sigaction = std::mem::zeroed();
                default.sa_sigaction = libc::SIG_DFL;
                libc::sigaction(signal, &default, std::ptr::null_mut());
                libc::raise(signal);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_stops_later_ones_are_absorbed_then_one_ends_the_run() {
        let grace = GRACE.as_nanos() as u64;
        assert_eq!(action(None, 5), Action::Stop);
        assert_eq!(action(Some(100), 100), Action::Absorb);
        assert_eq!(action(Some(100), 100 + grace - 1), Action::Absorb);
        assert_eq!(action(Some(100), 100 + grace), Action::End);
        // A clock that seems to go back never ends the run early.
        assert_eq!(action(Some(100), 50), Action::Absorb);
    }

    #[test]
    fn the_message_names_the_grace_period() {
        let text = String::from_utf8_lossy(STOPPING);
        assert!(text.contains(&format!("{} s", GRACE.as_secs())), "{text}");
    }
}

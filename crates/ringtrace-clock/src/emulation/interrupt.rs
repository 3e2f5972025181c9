//! Signals as interrupts: handlers installed through ringtrace run as the
//! emulation's interrupt handlers.
//!
//! [`install_irq_handler`] routes a signal through one trampoline. The
//! trampoline is the interrupt entry: if the interrupted thread has irqs
//! soft-masked it records the signal as pending and returns at once;
//! otherwise it runs the handler with irqs soft-masked (handlers run with
//! interrupts off, as in the kernel), then replays whatever became pending
//! meanwhile. `errno` is saved and restored around it all.
//!
//! Pending signals coalesce, as standard signals do: a signal that arrives
//! twice while masked is replayed once. Both deferrals and coalescings are
//! counted in [`InterruptStats`].
//!
//! ```
//! use ringtrace_clock::emulation::{interrupt, soft_irq};
//! use std::sync::atomic::{AtomicU32, Ordering};
//!
//! static HITS: AtomicU32 = AtomicU32::new(0);
//! fn on_usr2(_signal: i32) {
//!     HITS.fetch_add(1, Ordering::Relaxed);
//! }
//!
//! interrupt::install_irq_handler(libc::SIGUSR2, on_usr2).unwrap();
//! let flags = soft_irq::save();
//! interrupt::raise_on_current_thread(libc::SIGUSR2).unwrap();
//! assert_eq!(HITS.load(Ordering::Relaxed), 0); // deferred while masked
//! soft_irq::restore(flags);
//! assert_eq!(HITS.load(Ordering::Relaxed), 1); // replayed at restore
//! interrupt::uninstall_irq_handler(libc::SIGUSR2).unwrap();
//! ```

use super::signals::{check_handled, check_routable, MAX_SIGNAL};
use super::soft_irq::SOFT_IRQ;
use crate::ClockError;
use std::mem::MaybeUninit;
use std::sync::atomic::{compiler_fence, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::Mutex;

/// An interrupt handler: called with the signal number.
pub type IrqHandler = fn(i32);

/// `HANDLERS[n]` holds the handler of signal `n` as a `usize`, 0 for none.
///
/// Written by install/uninstall with Release, read by the trampoline with
/// Acquire: a handler is published before `sigaction` makes the trampoline
/// reachable for its signal, and the Acquire load sees a fully written
/// pointer (a `fn` pointer has no pointee state to publish, so this is
/// belt and braces).
static HANDLERS: [AtomicUsize; MAX_SIGNAL as usize + 1] =
    [const { AtomicUsize::new(0) }; MAX_SIGNAL as usize + 1];

/// The actions that were in place before install, restored by uninstall.
static PREVIOUS: Mutex<Vec<(i32, libc::sigaction)>> = Mutex::new(Vec::new());

static DELIVERED: AtomicU64 = AtomicU64::new(0);
static DEFERRED: AtomicU64 = AtomicU64::new(0);
static COALESCED: AtomicU64 = AtomicU64::new(0);
static REPLAYED: AtomicU64 = AtomicU64::new(0);

thread_local! {
    /// Nesting depth of interrupt handlers on this thread (`in_irq()`).
    static IRQ_DEPTH: AtomicU32 = const { AtomicU32::new(0) };
}

/// Process-wide counts of what the interrupt entry did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct InterruptStats {
    /// Handlers run directly, on arrival.
    pub delivered: u64,
    /// Arrivals recorded as pending because irqs were soft-masked.
    pub deferred: u64,
    /// Arrivals that found their signal already pending.
    pub coalesced: u64,
    /// Pending handlers run at enable or restore.
    pub replayed: u64,
}

/// The process-wide [`InterruptStats`].
pub fn stats() -> InterruptStats {
    // Relaxed: statistics, each read on its own.
    InterruptStats {
        delivered: DELIVERED.load(Ordering::Relaxed),
        deferred: DEFERRED.load(Ordering::Relaxed),
        coalesced: COALESCED.load(Ordering::Relaxed),
        replayed: REPLAYED.load(Ordering::Relaxed),
    }
}

/// Whether the calling thread is running an interrupt handler (`in_irq()`).
pub fn in_irq() -> bool {
    IRQ_DEPTH.with(|d| d.load(Ordering::Relaxed) > 0)
}

/// Routes `signal` through the interrupt emulation, calling `handler` for it.
///
/// The signal must be an asynchronous one: a synchronous fault signal
/// (SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGTRAP, SIGSYS) is refused with
/// [`ClockError::FaultSignal`], since a real fault deferred while irqs are
/// masked would repeat forever; SIGKILL, SIGSTOP, the C library's own
/// signals and numbers that are not signals with [`ClockError::BadSignal`]
/// (see [`check_routable`]).
///
/// ```
/// use ringtrace_clock::emulation::interrupt;
/// use ringtrace_clock::ClockError;
///
/// let err = interrupt::install_irq_handler(libc::SIGSEGV, |_| {}).unwrap_err();
/// assert!(matches!(err, ClockError::FaultSignal { .. }));
/// assert!(err.to_string().contains("SIGSEGV"));
/// ```
///
/// The handler must be async-signal-safe. Installing again replaces the
/// handler and keeps the action saved by the first install.
pub fn install_irq_handler(signal: i32, handler: IrqHandler) -> Result<(), ClockError> {
    check_routable(signal)?;
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    HANDLERS[signal as usize].store(handler as usize, Ordering::Release);
    let mut action = MaybeUninit::<libc::sigaction>::zeroed();
    let mut old = MaybeUninit::<libc::sigaction>::zeroed();
    // SAFETY: a zeroed sigaction is valid (empty mask, no flags); we set the
    // handler to the trampoline, whose signature matches a non-SA_SIGINFO
    // handler, and pass valid pointers for both actions.
    let rc = unsafe {
        let a = action.as_mut_ptr();
        (*a).sa_sigaction = trampoline as extern "C" fn(libc::c_int) as usize;
        (*a).sa_flags = libc::SA_RESTART;
        libc::sigemptyset(&mut (*a).sa_mask);
        libc::sigaction(signal, a, old.as_mut_ptr())
    };
    if rc != 0 {
        HANDLERS[signal as usize].store(0, Ordering::Release);
        return Err(ClockError::last_os("sigaction"));
    }
    if !previous.iter().any(|(s, _)| *s == signal) {
        // SAFETY: sigaction succeeded, so it filled `old`.
        previous.push((signal, unsafe { old.assume_init() }));
    }
    Ok(())
}

/// Gives `signal` back the action it had before [`install_irq_handler`].
pub fn uninstall_irq_handler(signal: i32) -> Result<(), ClockError> {
    check_routable(signal)?;
    let mut previous = PREVIOUS.lock().unwrap_or_else(|e| e.into_inner());
    let Some(at) = previous.iter().position(|(s, _)| *s == signal) else {
        return Ok(());
    };
    let (_, old) = previous.swap_remove(at);
    // SAFETY: `old` is the action the kernel gave back at install.
    if unsafe { libc::sigaction(signal, &old, std::ptr::null_mut()) } != 0 {
        return Err(ClockError::last_os("sigaction"));
    }
    HANDLERS[signal as usize].store(0, Ordering::Release);
    Ok(())
}

/// Sends `signal` to the calling thread (tgkill), so it is delivered to this
/// thread and no other. Meant for tests and demonstrations.
///
/// The signal must have a handler ([`install_irq_handler`] or the
/// program's own): one without is refused with [`ClockError::NoHandler`]
/// rather than sent to end the process.
pub fn raise_on_current_thread(signal: i32) -> Result<(), ClockError> {
    check_routable(signal)?;
    check_handled(signal)?;
    // SAFETY: getpid and gettid cannot fail; tgkill with our own ids and a
    // valid signal only fails if that signal is invalid.
    let rc = unsafe { libc::syscall(libc::SYS_tgkill, libc::getpid(), libc::gettid(), signal) };
    if rc != 0 {
        return Err(ClockError::last_os("tgkill"));
    }
    Ok(())
}

/// The interrupt entry for every routed signal.
extern "C" fn trampoline(signal: libc::c_int) {
    // SAFETY: __errno_location returns this thread's errno slot, valid for
    // the life of the thread.
    let errno = unsafe { *libc::__errno_location() };
    let masked = SOFT_IRQ.with(|s| s.masked.load(Ordering::Relaxed));
    if masked {
        defer(signal);
    } else {
        // Relaxed: a statistic.
        DELIVERED.fetch_add(1, Ordering::Relaxed);
        run_handler(signal);
        replay_pending();
    }
    // SAFETY: as above.
    unsafe { *libc::__errno_location() = errno };
}

fn defer(signal: i32) {
    let bit = 1u64 << (signal - 1);
    // An RMW, though only this thread writes the mask: a single instruction
    // cannot be split by a nested signal, which a load/store pair could be.
    let before = SOFT_IRQ.with(|s| s.pending.fetch_or(bit, Ordering::Relaxed));
    // Relaxed: statistics.
    if before & bit != 0 {
        COALESCED.fetch_add(1, Ordering::Relaxed);
    } else {
        DEFERRED.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs the handler of `signal` with irqs soft-masked and `in_irq()` true.
fn run_handler(signal: i32) {
    // Acquire pairs with the Release in install_irq_handler.
    let handler = HANDLERS[signal as usize].load(Ordering::Acquire);
    if handler == 0 {
        return; // uninstalled after it was raised
    }
    // SAFETY: non-zero entries are only ever stored from an `IrqHandler`
    // (a `fn(i32)`) cast to usize, so this transmute restores that pointer.
    let handler: IrqHandler = unsafe { std::mem::transmute::<usize, IrqHandler>(handler) };
    SOFT_IRQ.with(|s| s.masked.store(true, Ordering::Relaxed));
    IRQ_DEPTH.with(|d| d.store(d.load(Ordering::Relaxed) + 1, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
    handler(signal);
    compiler_fence(Ordering::SeqCst);
    IRQ_DEPTH.with(|d| d.store(d.load(Ordering::Relaxed) - 1, Ordering::Relaxed));
    SOFT_IRQ.with(|s| s.masked.store(false, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
}

/// Runs every pending handler, lowest signal first, while irqs stay
/// unmasked. Called with irqs unmasked.
#[cold]
#[inline(never)]
pub(crate) fn replay_pending() {
    loop {
        let pending = SOFT_IRQ.with(|s| s.pending.load(Ordering::Relaxed));
        if pending == 0 {
            return;
        }
        let signal = pending.trailing_zeros() as i32 + 1;
        let bit = 1u64 << (signal - 1);
        // Clear before running, so an arrival during the handler is pending
        // anew. An RMW: a nested arrival may set another bit concurrently.
        SOFT_IRQ.with(|s| s.pending.fetch_and(!bit, Ordering::Relaxed));
        // Relaxed: a statistic.
        REPLAYED.fetch_add(1, Ordering::Relaxed);
        run_handler(signal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_outside_the_routable_range_are_rejected_by_number() {
        for bad in [0, -1, 65, libc::SIGKILL, libc::SIGSTOP] {
            let err = install_irq_handler(bad, |_| {}).unwrap_err();
            assert!(err.to_string().contains(&bad.to_string()), "{err}");
        }
    }
}

//! Hard irq masking: every asynchronous signal blocked with
//! `pthread_sigmask`.
//!
//! This is the always-correct side of the trace_clock_local patch's trade-off: nothing can
//! interrupt the masked section, at the price of two system calls per
//! save/restore pair. Synchronous fault signals (SIGSEGV, SIGBUS, SIGILL,
//! SIGFPE, SIGTRAP, SIGSYS) are left unblocked, as a fault with its signal
//! blocked kills the process; glibc's internal signals are left alone by
//! `pthread_sigmask` itself.
//!
//! ```
//! use ringtrace_clock::emulation::hard_irq;
//! let flags = hard_irq::save();
//! assert!(hard_irq::is_disabled());
//! hard_irq::restore(flags);
//! assert!(!hard_irq::is_disabled());
//! ```

use super::signals::SYNCHRONOUS_FAULT_SIGNALS;
use std::mem::MaybeUninit;
use std::ptr;
use std::sync::atomic::{compiler_fence, AtomicBool, Ordering};
use std::sync::OnceLock;

thread_local! {
    /// Tracks whether this thread's asynchronous signals are blocked by the
    /// emulation, so `irqs_disabled()` needs no system call.
    static HARD_DISABLED: AtomicBool = const { AtomicBool::new(false) };
}

/// What [`save`] returns: the previous signal mask and tracked state.
#[derive(Clone, Copy)]
#[must_use = "hard irq flags must be given back to restore()"]
pub struct HardIrqFlags {
    old_mask: libc::sigset_t,
    was_disabled: bool,
}

impl HardIrqFlags {
    /// Whether irqs were hard-disabled when the flags were saved.
    pub fn was_disabled(&self) -> bool {
        self.was_disabled
    }
}

/// The set blocked by the emulation: everything but the fault signals.
fn asynchronous_signals() -> &'static libc::sigset_t {
    static SET: OnceLock<libc::sigset_t> = OnceLock::new();
    SET.get_or_init(|| {
        let mut set = MaybeUninit::<libc::sigset_t>::uninit();
        // SAFETY: sigfillset initialises the whole set it is given; the
        // sigdelset calls then operate on that initialised set with valid
        // signal numbers, so none can fail.
        unsafe {
            libc::sigfillset(set.as_mut_ptr());
            for sig in SYNCHRONOUS_FAULT_SIGNALS {
                libc::sigdelset(set.as_mut_ptr(), sig);
            }
            set.assume_init()
        }
    })
}

/// `local_irq_save()`: blocks asynchronous signals, returns the old mask.
#[inline]
pub fn save() -> HardIrqFlags {
    let mut old = MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: both pointers are valid for a sigset_t; with SIG_BLOCK and a
    // valid set pthread_sigmask cannot fail, and it fills `old` before
    // returning.
    let old_mask = unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, asynchronous_signals(), old.as_mut_ptr());
        old.assume_init()
    };
    // Set after blocking: a signal arriving before the block saw irqs on,
    // which they were.
    // A load/store pair, not an RMW: only this thread and its handlers touch
    // the flag, and a handler leaves it as it found it.
    let was_disabled = HARD_DISABLED.with(|d| {
        let was = d.load(Ordering::Relaxed);
        d.store(true, Ordering::Relaxed);
        was
    });
    compiler_fence(Ordering::SeqCst);
    HardIrqFlags {
        old_mask,
        was_disabled,
    }
}

/// `local_irq_restore(flags)`: reinstates the saved mask; signals that
/// arrived meanwhile are delivered by the kernel as it returns.
#[inline]
pub fn restore(flags: HardIrqFlags) {
    compiler_fence(Ordering::SeqCst);
    // Cleared before unblocking, so the handlers the unblock lets run see
    // irqs enabled.
    HARD_DISABLED.with(|d| d.store(flags.was_disabled, Ordering::Relaxed));
    // SAFETY: old_mask was filled by pthread_sigmask in save(); SIG_SETMASK
    // with a valid set cannot fail.
    unsafe {
        libc::pthread_sigmask(libc::SIG_SETMASK, &flags.old_mask, ptr::null_mut());
    }
}

/// `local_irq_disable()`: blocks asynchronous signals.
#[inline]
pub fn disable() {
    // SAFETY: a valid set and SIG_BLOCK; the old mask is not wanted.
    unsafe {
        libc::pthread_sigmask(libc::SIG_BLOCK, asynchronous_signals(), ptr::null_mut());
    }
    HARD_DISABLED.with(|d| d.store(true, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
}

/// `local_irq_enable()`: unblocks every asynchronous signal, whatever was
/// blocked before, as the kernel's enable is unconditional.
#[inline]
pub fn enable() {
    compiler_fence(Ordering::SeqCst);
    HARD_DISABLED.with(|d| d.store(false, Ordering::Relaxed));
    // SAFETY: a valid set and SIG_UNBLOCK; the old mask is not wanted.
    unsafe {
        libc::pthread_sigmask(libc::SIG_UNBLOCK, asynchronous_signals(), ptr::null_mut());
    }
}

/// Whether the emulation has the calling thread's signals blocked.
#[inline]
pub fn is_disabled() -> bool {
    HARD_DISABLED.with(|d| d.load(Ordering::Relaxed))
}

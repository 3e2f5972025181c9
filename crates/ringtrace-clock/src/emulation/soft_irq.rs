//! Lazy (soft) irq masking, as powerpc does it.
//!
//! Disabling sets a per-thread flag and nothing else: no system call. The
//! signal handlers that ringtrace installs ([`super::interrupt`]) check the
//! flag first; when it is set they record the signal in a per-thread pending
//! mask and return. Enabling, or restoring to an enabled state, clears the
//! flag and replays what is pending, as powerpc's `arch_local_irq_restore`
//! replays interrupts that arrived while soft-masked.
//!
//! Signals whose handlers ringtrace did not install are not deferred: lazy
//! masking covers only the interrupts whose entry code checks the flag.
//!
//! ```
//! use ringtrace_clock::emulation::soft_irq;
//! let flags = soft_irq::save();
//! assert!(soft_irq::is_masked());
//! soft_irq::restore(flags);
//! assert!(!soft_irq::is_masked());
//! ```

use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU64, Ordering};

/// The per-thread soft irq state (the `paca->irq_soft_mask` and
/// `irq_happened` of powerpc).
pub(crate) struct SoftIrqState {
    /// Irqs are soft-disabled.
    pub(crate) masked: AtomicBool,
    /// Bit `n - 1` set: signal `n` arrived while masked and waits for replay.
    pub(crate) pending: AtomicU64,
}

thread_local! {
    pub(crate) static SOFT_IRQ: SoftIrqState = const {
        SoftIrqState { masked: AtomicBool::new(false), pending: AtomicU64::new(0) }
    };
}

/// What [`save`] returns: whether irqs were soft-masked before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use = "soft irq flags must be given back to restore()"]
pub struct SoftIrqFlags {
    was_masked: bool,
}

impl SoftIrqFlags {
    /// Whether irqs were soft-masked when the flags were saved.
    pub fn was_masked(&self) -> bool {
        self.was_masked
    }
}

/// `local_irq_save()`: masks and returns the previous state.
#[inline]
pub fn save() -> SoftIrqFlags {
    let was_masked = SOFT_IRQ.with(|s| {
        // Relaxed load and store: only this thread and its handlers touch
        // the flag, and a handler leaves it as it found it.
        let was = s.masked.load(Ordering::Relaxed);
        s.masked.store(true, Ordering::Relaxed);
        was
    });
    // barrier(): the masked section may not be moved above the store.
    compiler_fence(Ordering::SeqCst);
    SoftIrqFlags { was_masked }
}

/// `local_irq_restore(flags)`: back to the saved state, replaying pending
/// signals if that state is enabled.
#[inline]
pub fn restore(flags: SoftIrqFlags) {
    if !flags.was_masked {
        enable();
    }
}

/// `local_irq_disable()`.
#[inline]
pub fn disable() {
    SOFT_IRQ.with(|s| s.masked.store(true, Ordering::Relaxed));
    compiler_fence(Ordering::SeqCst);
}

/// `local_irq_enable()`: unmasks and replays what is pending.
#[inline]
pub fn enable() {
    // barrier(): the masked section may not be moved below the unmask.
    compiler_fence(Ordering::SeqCst);
    let pending = SOFT_IRQ.with(|s| {
        s.masked.store(false, Ordering::Relaxed);
        // The fence keeps the pending load after the unmask. A signal that
        // arrives before the unmask was recorded and is seen by this load; one
        // that arrives after it runs its handler directly. None is stranded.
        compiler_fence(Ordering::SeqCst);
        s.pending.load(Ordering::Relaxed)
    });
    if pending != 0 {
        super::interrupt::replay_pending();
    }
}

/// Whether the calling thread has irqs soft-masked.
#[inline]
pub fn is_masked() -> bool {
    SOFT_IRQ.with(|s| s.masked.load(Ordering::Relaxed))
}

/// The calling thread's pending mask: bit `n - 1` for signal `n`.
pub fn pending() -> u64 {
    SOFT_IRQ.with(|s| s.pending.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_save_restore_unmasks_only_at_the_outermost() {
        let outer = save();
        let inner = save();
        assert!(!outer.was_masked() && inner.was_masked());
        restore(inner);
        assert!(is_masked(), "an inner restore must keep irqs masked");
        restore(outer);
        assert!(!is_masked());
        assert_eq!(pending(), 0);
    }

    #[test]
    fn each_thread_has_its_own_mask() {
        let flags = save();
        let other = std::thread::spawn(is_masked).join().unwrap();
        assert!(!other, "masking on one thread masked another");
        restore(flags);
    }
}

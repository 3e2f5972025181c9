//! `StaticKey`: the switch a disabled tracepoint costs.

use std::sync::atomic::{AtomicBool, Ordering};

/// A switch checked on the hot path and flipped rarely, as the kernel's
/// `static_key`.
///
/// Off, a check is one relaxed load and a branch predicted not taken; the
/// code behind an enabled key belongs out of line (`#[cold]`), which is what
/// [`tracepoint!`](crate::tracepoint) generates. With the crate's
/// `static-keys` feature, tracepoints declared by the macro use the
/// static-keys crate's code patching instead of this type (see
/// [`crate::registry`] for the rule that comes with it).
///
/// ```
/// use ringtrace_tracepoint::StaticKey;
/// static VERBOSE: StaticKey = StaticKey::new(false);
/// assert!(!VERBOSE.is_enabled());
/// VERBOSE.enable();
/// assert!(VERBOSE.is_enabled());
/// ```
#[derive(Debug)]
pub struct StaticKey {
    enabled: AtomicBool,
}

impl StaticKey {
    /// A key that starts in the given state.
    pub const fn new(enabled: bool) -> Self {
        StaticKey {
            enabled: AtomicBool::new(enabled),
        }
    }

    /// Whether the key is on.
    #[inline(always)]
    pub fn is_enabled(&self) -> bool {
        // Relaxed: the key gates whether to record, and publishes nothing.
        // A thread may see a flip a little late, as a CPU may run the old
        // instruction for a moment after the kernel patches a jump label.
        self.enabled.load(Ordering::Relaxed)
    }

    /// Turns the key on.
    pub fn enable(&self) {
        self.set(true);
    }

    /// Turns the key off.
    pub fn disable(&self) {
        self.set(false);
    }

    /// Sets the key.
    pub fn set(&self, on: bool) {
        // Relaxed: see is_enabled.
        self.enabled.store(on, Ordering::Relaxed);
    }
}

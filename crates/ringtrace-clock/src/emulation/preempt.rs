//! The per-thread preempt count: `preempt_disable_notrace()` and
//! `preempt_enable_notrace()`.
//!
//! The scheduler cannot be stopped from userspace, so "preemption disabled"
//! means what the kernel's count means to code that reads it: the thread is
//! inside a section that must not be rescheduled. A reschedule requested
//! meanwhile ([`request_resched`], from a timer signal handler say) is not
//! acted on until the outermost enable, which then yields the CPU
//! (`sched_yield`), as `preempt_enable()` calls `preempt_schedule()` when
//! `need_resched` is set.
//!
//! ```
//! use ringtrace_clock::emulation::preempt;
//! assert!(preempt::preemptible());
//! preempt::preempt_disable_notrace();
//! preempt::preempt_disable_notrace();
//! assert_eq!(preempt::preempt_count(), 2);
//! preempt::preempt_enable_notrace();
//! preempt::preempt_enable_notrace();
//! assert!(preempt::preemptible());
//! ```

use std::sync::atomic::{compiler_fence, AtomicBool, AtomicU32, AtomicU64, Ordering};

/// The emulated `thread_info` preemption fields of one thread.
struct PreemptState {
    /// Nesting depth of preempt_disable.
    count: AtomicU32,
    /// A reschedule was requested while the count was non-zero.
    need_resched: AtomicBool,
}

thread_local! {
    static PREEMPT: PreemptState = const {
        PreemptState { count: AtomicU32::new(0), need_resched: AtomicBool::new(false) }
    };
}

/// Process-wide counts of what the emulation did; see [`stats`].
static DEFERRED: AtomicU64 = AtomicU64::new(0);
static HONOURED: AtomicU64 = AtomicU64::new(0);
static IMMEDIATE: AtomicU64 = AtomicU64::new(0);
static UNDERFLOWS: AtomicU64 = AtomicU64::new(0);

/// Counts of the emulation's reschedules and misuse, summed over threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PreemptStats {
    /// Reschedules requested while preemption was disabled.
    pub deferred: u64,
    /// Deferred reschedules honoured at an outermost enable.
    pub honoured: u64,
    /// Reschedules requested while preemptible, honoured at once.
    pub immediate: u64,
    /// `preempt_enable` calls with a zero count (ignored, as a
    /// DEBUG_PREEMPT kernel warns and ignores them).
    pub underflows: u64,
}

/// The process-wide [`PreemptStats`].
pub fn stats() -> PreemptStats {
    // Relaxed: these are statistics; each counter is read on its own.
    PreemptStats {
        deferred: DEFERRED.load(Ordering::Relaxed),
        honoured: HONOURED.load(Ordering::Relaxed),
        immediate: IMMEDIATE.load(Ordering::Relaxed),
        underflows: UNDERFLOWS.load(Ordering::Relaxed),
    }
}

/// Enters a non-preemptible section (nests).
#[inline]
pub fn preempt_disable_notrace() {
    PREEMPT.with(|p| {
        // Relaxed load and store, not an RMW: only this thread and the signal
        // handlers interrupting it touch the count, and a handler leaves it
        // balanced, so no update can be lost between the two.
        p.count
            .store(p.count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    });
    // barrier(): the protected code may not be moved above the increment.
    compiler_fence(Ordering::SeqCst);
}

/// Leaves a non-preemptible section; at the outermost one, honours a
/// reschedule requested meanwhile.
#[inline]
pub fn preempt_enable_notrace() {
    // barrier(): the protected code may not be moved below the decrement.
    compiler_fence(Ordering::SeqCst);
    let resched = PREEMPT.with(|p| {
        let count = p.count.load(Ordering::Relaxed);
        if count == 0 {
            underflow();
            return false;
        }
        // See preempt_disable_notrace for why a load/store pair is enough.
        p.count.store(count - 1, Ordering::Relaxed);
        // The fence keeps the need_resched load after the store: a handler
        // that runs before the store defers its request, and it is seen
        // here; one that runs after it finds the thread preemptible and
        // reschedules at once. No request is missed.
        compiler_fence(Ordering::SeqCst);
        count == 1 && p.need_resched.load(Ordering::Relaxed)
    });
    if resched {
        preempt_schedule();
    }
}

#[cold]
#[inline(never)]
fn underflow() {
    // Relaxed: a statistic.
    UNDERFLOWS.fetch_add(1, Ordering::Relaxed);
}

/// The deferred reschedule, out of line.
#[cold]
#[inline(never)]
fn preempt_schedule() {
    PREEMPT.with(|p| p.need_resched.store(false, Ordering::Relaxed));
    // Relaxed: a statistic.
    HONOURED.fetch_add(1, Ordering::Relaxed);
    // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
    unsafe { libc::sched_yield() };
}

/// The calling thread's preempt count.
#[inline]
pub fn preempt_count() -> u32 {
    PREEMPT.with(|p| p.count.load(Ordering::Relaxed))
}

/// Whether the calling thread is outside every preempt-disabled section.
#[inline]
pub fn preemptible() -> bool {
    preempt_count() == 0
}

/// Whether a deferred reschedule is waiting for the outermost enable.
pub fn need_resched() -> bool {
    PREEMPT.with(|p| p.need_resched.load(Ordering::Relaxed))
}

/// Asks the calling thread to reschedule, as a timer interrupt sets
/// `TIF_NEED_RESCHED`. Async-signal-safe: meant to be called from a signal
/// handler.
///
/// When the thread is preemptible the CPU is yielded at once (the kernel's
/// preemption on irq exit); otherwise the request waits for the outermost
/// `preempt_enable_notrace`.
pub fn request_resched() {
    let preemptible = PREEMPT.with(|p| {
        if p.count.load(Ordering::Relaxed) == 0 {
            true
        } else {
            p.need_resched.store(true, Ordering::Relaxed);
            false
        }
    });
    // Relaxed: statistics.
    if preemptible {
        IMMEDIATE.fetch_add(1, Ordering::Relaxed);
        // SAFETY: sched_yield takes no arguments and cannot fail on Linux.
        unsafe { libc::sched_yield() };
    } else {
        DEFERRED.fetch_add(1, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reschedule_requested_inside_is_deferred_to_outermost_enable() {
        let before = stats();
        preempt_disable_notrace();
        preempt_disable_notrace();
        request_resched();
        assert!(need_resched());
        preempt_enable_notrace();
        assert!(need_resched(), "an inner enable must not reschedule");
        preempt_enable_notrace();
        assert!(!need_resched());
        let after = stats();
        assert!(after.deferred > before.deferred);
        assert!(after.honoured > before.honoured);
    }

    #[test]
    fn unbalanced_enable_is_counted_not_wrapped() {
        let before = stats().underflows;
        preempt_enable_notrace();
        assert_eq!(preempt_count(), 0);
        assert!(stats().underflows > before);
    }
}

//! Which process, of a parent and the children it forks, made a piece of
//! process memory: a count of forks, raised in each child as it starts
//! (by a `pthread_atfork` handler). Memory a process made reads the count
//! it had then; a child, which starts with a copy of that memory, reads a
//! higher one.
//!
//! A file ring's pool of zeroed pages (`zero_pool`) lives in the process
//! while the pages it names live in the shared file: after a fork, parent
//! and child each hold a copy of the pool, and the same page taken from
//! both copies would go into two slots at once. Only the process that
//! made a pool uses it.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

/// Forks on the way from the first process to this one.
static FORKS: AtomicU32 = AtomicU32::new(0);

/// The handler's registration, once per process (a child inherits it).
static REGISTERED: Once = Once::new();

/// Runs in the child of every fork, before `fork` returns there: one
/// thread, nothing else running. Relaxed: the child's own later loads see
/// its own store.
extern "C" fn in_child() {
    FORKS.fetch_add(1, Ordering::Relaxed);
}

/// This process's count of forks, the handler registered first: memory
/// that records it, made now, is this process's own.
pub(crate) fn generation() -> u32 {
    #[cfg(not(any(loom, miri)))]
    REGISTERED.call_once(|| {
        // SAFETY: registers a plain extern "C" function taking nothing,
        // which only raises an atomic; no prepare or parent handler.
        unsafe { libc::pthread_atfork(None, None, Some(in_child)) };
    });
    #[cfg(any(loom, miri))]
    REGISTERED.call_once(|| {});
    // Relaxed: the count changes only in a child, before any of its
    // threads exists.
    FORKS.load(Ordering::Relaxed)
}

#[cfg(all(test, not(any(loom, miri))))]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_reads_a_generation_its_parent_does_not() {
        let parent = generation();
        // SAFETY: the child only reads an atomic and exits with _exit;
        // the parent waits for it.
        let pid = unsafe { libc::fork() };
        assert!(pid >= 0, "fork failed");
        if pid == 0 {
            let code = if generation() == parent + 1 { 0 } else { 1 };
            // SAFETY: leaves the child at once, running no destructors.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: waits for our own child, writing its status to a local.
        unsafe { libc::waitpid(pid, &mut status, 0) };
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_eq!(generation(), parent, "the parent's is unchanged");
    }
}

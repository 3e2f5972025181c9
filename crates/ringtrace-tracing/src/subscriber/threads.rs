//! Each thread's state in a subscriber: its entered spans, innermost
//! last (a new span's contextual parent, `Span::current()`), and its
//! count of records written. One lookup of the thread's entry serves
//! both.
//!
//! An entry per thread (the `thread_local` crate's `ThreadLocal`). The
//! stack is touched only by the entry's own thread, through [`Mine`],
//! which only [`Threads::mine`] makes and which cannot leave the thread;
//! other threads read only the count, summing every entry.
//!
//! Entering a span already on the stack pushes it again, as the
//! registry does; its exit removes one entry.
//!
//! `ThreadLocal` hands an exited thread's entry to the next thread given
//! its id. Its count goes on (the sum stays exact), but its stack must
//! not: spans a thread left entered (an `Entered` guard forgotten, or
//! exited during teardown, when the stack cannot be reached) would become
//! the next thread's current spans, and the parents of its new spans. An
//! entry keeps the token of the thread it serves
//! ([`crate::thread_exit::token`]); a thread that finds another's token
//! there empties the stack and takes the entry.
//!
//! A thread past the point of its teardown where its entry can be
//! reached ([`crate::thread_exit`]: a `Drop` of a thread-local that logs)
//! has no stack (its spans have no contextual parent) and counts its
//! records in a word shared by such threads.

use crate::stats::Tally;
use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, Ordering};
use thread_local::ThreadLocal;

/// One thread's entry.
#[derive(Debug)]
struct ThreadState {
    /// Records this thread wrote: written by it alone, read by any.
    recorded: AtomicU64,
    /// The token of the thread the entry serves.
    owner: Cell<u64>,
    /// The entered spans; only the entry's own thread touches it.
    stack: RefCell<Vec<u64>>,
}

// SAFETY: other threads reach an entry only through `ThreadLocal::iter`
// (in `Threads::recorded`), which reads `recorded`, an atomic. `stack` (a
// `RefCell`, whose borrow flag is not atomic) and `owner` are reached only
// by the thread `ThreadLocal` gives the entry to (through `Mine`, made
// from the calling thread's own entry and `!Send`, or `Threads::current`),
// so only that thread touches them. An entry passes to another thread
// only once its thread has exited, and `ThreadLocal` hands its id on
// under a lock, which orders the two threads' accesses.
unsafe impl Sync for ThreadState {}

/// Every thread's state.
#[derive(Debug, Default)]
pub(crate) struct Threads {
    /// Boxed: each thread's `&ThreadState` is then a shared borrow of
    /// the box's own allocation, which the entry never writes again,
    /// rather than of `ThreadLocal`'s slot (Miri's borrow models reject
    /// the write of one borrow of a slot while another is held).
    states: ThreadLocal<Box<ThreadState>>,
    /// Records written by threads being torn down.
    exiting: AtomicU64,
}

impl Threads {
    /// The calling thread's state.
    #[inline]
    pub(crate) fn mine(&self) -> Mine<'_> {
        let state = crate::thread_exit::token().map(|token| {
            let state = &**self.states.get_or(|| {
                Box::new(ThreadState {
                    recorded: AtomicU64::new(0),
                    owner: Cell::new(token),
                    stack: RefCell::new(Vec::with_capacity(16)),
                })
            });
            // After the lookup, which may have taken the thread's id (and
            // an exited thread's entry with it) for the first time.
            crate::thread_exit::arm();
            if state.owner.get() != token {
                state.adopt(token);
            }
            state
        });
        Mine {
            state,
            exiting: &self.exiting,
            _not_send: PhantomData,
        }
    }

    /// The innermost span entered on the calling thread, if it has a state
    /// of its own.
    #[inline]
    pub(crate) fn current(&self) -> Option<u64> {
        let token = crate::thread_exit::token()?;
        let state = self.states.get()?;
        crate::thread_exit::arm();
        if state.owner.get() != token {
            // An exited thread's: this thread has entered nothing.
            return None;
        }
        Mine {
            state: Some(state),
            exiting: &self.exiting,
            _not_send: PhantomData,
        }
        .current()
    }

    /// Records written by every thread so far.
    pub(crate) fn recorded(&self) -> u64 {
        // Relaxed: statistics, ordered with nothing.
        self.states
            .iter()
            .map(|s| s.recorded.load(Ordering::Relaxed))
            .sum::<u64>()
            + self.exiting.load(Ordering::Relaxed)
    }
}

impl ThreadState {
    /// Takes an exited thread's entry for the thread of `token`: its
    /// count goes on, its entered spans are not this thread's.
    #[cold]
    #[inline(never)]
    fn adopt(&self, token: u64) {
        self.owner.set(token);
        self.stack.borrow_mut().clear();
    }
}

/// The calling thread's own state.
pub(crate) struct Mine<'a> {
    /// `None` on a thread being torn down.
    state: Option<&'a ThreadState>,
    /// Where such a thread counts its records.
    exiting: &'a AtomicU64,
    /// Keeps it on the thread whose entry it is.
    _not_send: PhantomData<*const ()>,
}

impl Mine<'_> {
    /// The stack, for the length of one call that calls out to nothing
    /// (so the borrow never fails).
    #[inline]
    /// (`None` on a thread being torn down: it has no stack.)
    fn with_stack<R>(&self, f: impl FnOnce(&mut Vec<u64>) -> R) -> Option<R> {
        self.state.map(|s| f(&mut s.stack.borrow_mut()))
    }

    /// `span` entered on this thread.
    #[inline]
    pub(crate) fn push(&self, span: u64) {
        let _ = self.with_stack(|stack| stack.push(span));
    }

    /// `span` exited on this thread: its innermost entry removed, if any
    /// (an exit without its enter changes nothing).
    #[inline]
    pub(crate) fn pop(&self, span: u64) {
        let _ = self.with_stack(|stack| {
            if stack.last() == Some(&span) {
                stack.pop();
            } else if let Some(at) = stack.iter().rposition(|&s| s == span) {
                stack.remove(at);
            }
        });
    }

    /// The innermost span entered on this thread.
    #[inline]
    pub(crate) fn current(&self) -> Option<u64> {
        self.with_stack(|stack| stack.last().copied()).flatten()
    }
}

impl Tally for Mine<'_> {
    #[inline]
    fn recorded(&self) {
        match self.state {
            Some(state) => {
                let count = &state.recorded;
                // Only this thread writes its count: a load and a store
                // are an exact add (Relaxed: read by `Threads::recorded`,
                // ordered with nothing).
                count.store(count.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
            }
            // Shared by the threads being torn down: an RMW (Relaxed:
            // statistics, ordered with nothing).
            None => {
                self.exiting.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_out_of_order_remove_the_innermost_entry_of_that_span() {
        let t = Threads::default();
        let mine = t.mine();
        for id in [1, 2, 1, 3] {
            mine.push(id);
        }
        mine.pop(1);
        assert_eq!(t.current(), Some(3));
        mine.pop(3);
        assert_eq!(t.current(), Some(2));
        mine.pop(9);
        assert_eq!(t.current(), Some(2));
        mine.pop(2);
        assert_eq!(t.current(), Some(1));
    }

    #[test]
    fn a_thread_given_an_exited_threads_entry_starts_with_no_span_entered() {
        let t = Threads::default();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                t.mine().push(7);
                t.mine().recorded();
            });
        });
        std::thread::scope(|scope| {
            scope.spawn(|| {
                // `ThreadLocal` gives the exited thread's id, and its
                // entry, to the next thread: nothing of its stack shows.
                assert_eq!(t.current(), None);
                let mine = t.mine();
                assert_eq!(mine.current(), None);
                mine.push(8);
                assert_eq!(t.current(), Some(8));
                mine.recorded();
            });
        });
        assert_eq!(t.recorded(), 2);
    }

    #[test]
    fn each_thread_has_its_own_stack_and_counts_sum() {
        let t = Threads::default();
        t.mine().push(5);
        t.mine().recorded();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                assert_eq!(t.current(), None);
                t.mine().recorded();
                t.mine().recorded();
            });
        });
        assert_eq!(t.current(), Some(5));
        assert_eq!(t.recorded(), 3);
    }
}

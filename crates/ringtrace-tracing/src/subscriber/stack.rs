//! Each thread's entered spans, innermost last: what a new span's
//! contextual parent is, and what `Span::current()` returns.
//!
//! A stack per thread per subscriber (the `thread_local` crate's
//! `ThreadLocal`), written only by its thread: an enter pushes, an exit
//! removes the innermost entry of that span. Entering a span already on
//! the stack pushes it again, as the registry does; its exit removes one
//! entry.

use std::cell::RefCell;
use thread_local::ThreadLocal;

/// The entered spans of every thread.
#[derive(Debug, Default)]
pub(crate) struct Stacks {
    stacks: ThreadLocal<RefCell<Vec<u64>>>,
}

impl Stacks {
    fn mine(&self) -> &RefCell<Vec<u64>> {
        self.stacks.get_or(|| RefCell::new(Vec::with_capacity(16)))
    }

    /// `span` entered on this thread.
    #[inline]
    pub(crate) fn push(&self, span: u64) {
        self.mine().borrow_mut().push(span);
    }

    /// `span` exited on this thread: its innermost entry removed, if any
    /// (an exit without its enter changes nothing).
    #[inline]
    pub(crate) fn pop(&self, span: u64) {
        let mut stack = self.mine().borrow_mut();
        if stack.last() == Some(&span) {
            stack.pop();
        } else if let Some(at) = stack.iter().rposition(|&s| s == span) {
            stack.remove(at);
        }
    }

    /// The innermost span entered on this thread.
    #[inline]
    pub(crate) fn current(&self) -> Option<u64> {
        self.stacks.get()?.borrow().last().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exits_out_of_order_remove_the_innermost_entry_of_that_span() {
        let s = Stacks::default();
        for id in [1, 2, 1, 3] {
            s.push(id);
        }
        s.pop(1);
        assert_eq!(s.current(), Some(3));
        s.pop(3);
        assert_eq!(s.current(), Some(2));
        s.pop(9);
        assert_eq!(s.current(), Some(2));
        s.pop(2);
        assert_eq!(s.current(), Some(1));
    }

    #[test]
    fn each_thread_has_its_own_stack() {
        let s = Stacks::default();
        s.push(5);
        std::thread::scope(|scope| {
            scope.spawn(|| assert_eq!(s.current(), None));
        });
        assert_eq!(s.current(), Some(5));
    }
}

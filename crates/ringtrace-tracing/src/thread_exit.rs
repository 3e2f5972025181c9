//! Whether the calling thread is being torn down past the point where a
//! `thread_local::ThreadLocal` entry can be reached.
//!
//! A `tracing` event or span made in a thread-local's destructor (a
//! `Drop` that logs) reaches the subscriber while the thread's
//! thread-locals are being destroyed. `ThreadLocal` finds the thread's
//! entry through a thread id that its own thread-local guard gives back
//! when destroyed; asked again after that, it panics, and a panic in a
//! thread-local's destructor aborts the process.
//!
//! A guard of ours, made just after the thread's first `ThreadLocal`
//! entry (so after `ThreadLocal`'s own guard), is destroyed before that
//! one: thread-local destructors run in the reverse order of their
//! registration. Its destructor marks the thread exiting, and from then
//! on callers keep away from their `ThreadLocal` entries (and count what
//! they would have counted there in a shared word instead).

use std::cell::Cell;

thread_local! {
    /// Set when [`GUARD`] is destroyed. Const, with no destructor: it
    /// can be read at any point of the thread's teardown.
    static EXITING: Cell<bool> = const { Cell::new(false) };
    /// Registered by [`arm`]; its destruction sets [`EXITING`].
    static GUARD: Guard = const { Guard };
}

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = EXITING.try_with(|e| e.set(true));
    }
}

/// Whether the calling thread's `ThreadLocal` entries must no longer be
/// reached.
#[inline(always)]
pub(crate) fn exiting() -> bool {
    EXITING.try_with(Cell::get).unwrap_or(true)
}

/// Called when the calling thread's first entry of a `ThreadLocal` has
/// just been made: registers the guard (once per thread), after
/// `ThreadLocal`'s own.
#[cold]
pub(crate) fn arm() {
    let _ = GUARD.try_with(|_| ());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_is_exiting_once_its_guard_is_destroyed() {
        struct Probe(std::sync::mpsc::Sender<bool>);
        impl Drop for Probe {
            fn drop(&mut self) {
                let _ = self.0.send(exiting());
            }
        }
        thread_local! { static PROBE: Cell<Option<Probe>> = const { Cell::new(None) }; }
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // Registered before the guard: destroyed after it.
            PROBE.with(|p| p.set(Some(Probe(tx))));
            assert!(!exiting());
            arm();
            assert!(!exiting());
        })
        .join()
        .unwrap();
        assert_eq!(rx.recv().ok(), Some(true));
    }
}

//! Which thread is calling, and whether it is being torn down past the
//! point where a `thread_local::ThreadLocal` entry can be reached.
//!
//! A `tracing` event or span made in a thread-local's destructor (a
//! `Drop` that logs) reaches the subscriber while the thread's
//! thread-locals are being destroyed. `ThreadLocal` finds the thread's
//! entry through a thread id that its own thread-local guard gives back
//! when destroyed; asked again after that, it panics, and a panic in a
//! thread-local's destructor aborts the process.
//!
//! A guard of ours, registered just after the thread's first use of a
//! `ThreadLocal` (so after `ThreadLocal`'s own guard), is destroyed before
//! that one: thread-local destructors run in the reverse order of their
//! registration. Its destructor marks the thread exiting, and from then
//! on callers keep away from their `ThreadLocal` entries (and count what
//! they would have counted there in a shared word instead).
//!
//! `ThreadLocal` gives an exited thread's id, and so its entries, to the
//! next thread it sees: an entry found is not proof that the calling
//! thread made it. Each thread has a token of its own, never reused, which
//! entries that must not pass from one thread to the next (a stack of
//! entered spans) keep and compare ([`token`]), and the guard is armed
//! after every `ThreadLocal` lookup ([`arm`]), not only after one that
//! made an entry.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bit of [`THREAD`] set once [`GUARD`] is registered.
const ARMED: u64 = 1;
/// Bit of [`THREAD`] set when [`GUARD`] is destroyed.
const EXITING: u64 = 2;
/// [`THREAD`]'s token is above these bits (0: none given yet).
const TOKEN_SHIFT: u32 = 2;

/// The next thread's token (tokens start at 1).
static NEXT_TOKEN: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The thread's token and its [`ARMED`] and [`EXITING`] bits. Const,
    /// with no destructor: it can be read at any point of the thread's
    /// teardown.
    static THREAD: Cell<u64> = const { Cell::new(0) };
    /// Registered by [`arm`]; its destruction sets [`EXITING`].
    static GUARD: Guard = const { Guard };
}

struct Guard;

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = THREAD.try_with(|t| t.set(t.get() | EXITING));
    }
}

/// The calling thread's word, or `EXITING` where it cannot be read.
#[inline(always)]
fn word() -> u64 {
    THREAD.try_with(Cell::get).unwrap_or(EXITING)
}

/// Whether the calling thread's `ThreadLocal` entries must no longer be
/// reached.
#[inline(always)]
pub(crate) fn exiting() -> bool {
    word() & EXITING != 0
}

/// The calling thread's token, unique in the process for its life and
/// never given to another thread; `None` once it is [`exiting`].
#[inline(always)]
pub(crate) fn token() -> Option<u64> {
    let word = word();
    match (word & EXITING, word >> TOKEN_SHIFT) {
        (0, 0) => Some(new_token()),
        (0, token) => Some(token),
        _ => None,
    }
}

#[cold]
#[inline(never)]
fn new_token() -> u64 {
    // Relaxed: only uniqueness matters, which the RMW gives.
    let token = NEXT_TOKEN.fetch_add(1, Ordering::Relaxed);
    let _ = THREAD.try_with(|t| t.set(t.get() | token << TOKEN_SHIFT));
    token
}

/// Called after each lookup of the calling thread's `ThreadLocal` entry
/// (which registers `ThreadLocal`'s own guard, the first time): registers
/// ours after it, once per thread.
#[inline(always)]
pub(crate) fn arm() {
    if word() & ARMED == 0 {
        arm_now();
    }
}

#[cold]
#[inline(never)]
fn arm_now() {
    if GUARD.try_with(|_| ()).is_ok() {
        let _ = THREAD.try_with(|t| t.set(t.get() | ARMED));
    }
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

    #[test]
    fn every_thread_has_its_own_token_for_its_whole_life() {
        let here = token().unwrap();
        assert_eq!(token(), Some(here));
        let others: Vec<u64> = (0..4)
            .map(|_| std::thread::spawn(|| token().unwrap()).join().unwrap())
            .collect();
        let mut all = others.clone();
        all.push(here);
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), 5, "{others:?} and {here}");
    }
}

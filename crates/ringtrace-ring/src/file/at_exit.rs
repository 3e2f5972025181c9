//! The file's status word, and its close at a normal process exit.
//!
//! A ring dropped by its program marks its file `CLOSED`. But a ring that
//! lives to the end of the process is never dropped: one installed as the
//! tracepoints' sink (leaked on purpose), or held by a global `tracing`
//! subscriber, which Rust never tears down. Without more, its file would
//! read as the trace of a program that crashed. So every file ring's
//! status is also reachable from a process-wide registry (weak references,
//! which do not keep a ring alive), and an exit handler (`atexit`,
//! registered once, when the first file ring is made) marks each still
//! alive `CLOSED` when the process exits normally: a return from `main`
//! or `std::process::exit`. A crash, a signal's default action, `abort()`
//! (a `panic = "abort"` panic) or `_exit` run no exit handler and leave
//! the file `OPEN`, which recovery reads as a writer that died. A panic
//! that unwinds out of `main` ends the process by `exit(101)`, the normal
//! path, and reads as closed (the handler is not told the exit code).
//!
//! Closing is idempotent, and safe against a ring being dropped at the
//! same moment on another thread: the exit handler holds a strong
//! reference to what it closes, so the mapping it writes stays mapped, and
//! both only store the same word. Only the process that made the ring
//! closes it: a forked child shares the parent's mapping, and its exit
//! must not mark the parent's ring closed under the parent's writers.
//!
//! Other threads may still be writing when the process exits, and go on
//! until the kernel ends them. Closing does not stop them and touches only
//! the status word, so their events committed after it are in the file
//! and recovered as any others, and an event one of them had reserved but
//! not committed when the process ended is skipped and counted as pending,
//! as after a crash. `CLOSED` thus says the program ended normally, not
//! that no writer was mid-event at the very end.

use super::{STATUS_CLOSED, STATUS_OPEN};
use crate::order;
use crate::page::zeroed::ZeroedBox;
use crate::sync::AtomicU64;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, Once, Weak};

/// A file ring's status word, and whether it may be marked closed.
#[derive(Debug)]
pub(crate) struct StatusWord {
    /// The word in the mapped file (its box keeps the mapping alive).
    word: ZeroedBox<AtomicU64>,
    /// Set once writers may be active: only then does a close mark the
    /// file closed (a ring that failed while set up stays `SETTING_UP`).
    opened: AtomicBool,
    /// The process that made the ring.
    pid: u32,
}

/// Every file ring's status word, weakly: what the exit handler closes.
static LIVE: Mutex<Vec<Weak<StatusWord>>> = Mutex::new(Vec::new());

/// Registers [`close_all`] with `atexit`, once per process.
static AT_EXIT: Once = Once::new();

impl StatusWord {
    /// The status of a ring being made in this process, registered to be
    /// closed at exit.
    pub(crate) fn new(word: ZeroedBox<AtomicU64>) -> Arc<StatusWord> {
        let status = Arc::new(StatusWord {
            word,
            opened: AtomicBool::new(false),
            pid: std::process::id(),
        });
        AT_EXIT.call_once(|| {
            // SAFETY: `close_all` is an `extern "C" fn()` that never
            // unwinds; atexit only records it. A failure (no room) leaves
            // rings to be closed by their drop alone.
            unsafe { libc::atexit(close_all) };
        });
        let mut live = LIVE.lock().unwrap_or_else(|e| e.into_inner());
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&status));
        status
    }

    /// Marks the file open for writers: from now on a crash leaves a ring.
    pub(crate) fn set_open(&self) {
        // Release: the buffers' setup is in the file before the mark.
        self.word.store(STATUS_OPEN, order::FILE_STATUS);
        // Relaxed: `close` needs only this flag, no data it would publish.
        self.opened
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }

    /// Marks the file closed, if writers were let in and this is the
    /// process that made the ring. Idempotent.
    pub(crate) fn close(&self) {
        if !self.opened.load(std::sync::atomic::Ordering::Relaxed) || self.pid != std::process::id()
        {
            return;
        }
        // Release: every commit this thread made, and every one it saw,
        // is in the file before the mark. (Commits of threads still
        // running may follow; see the module's documentation.)
        self.word.store(STATUS_CLOSED, order::FILE_STATUS);
    }
}

/// The exit handler: closes every file ring still alive.
extern "C" fn close_all() {
    // Taken out under the lock, closed outside it: a ring dropped on
    // another thread meanwhile waits for nothing.
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(|e| e.into_inner()));
    for status in live.iter().filter_map(Weak::upgrade) {
        status.close();
    }
}

//! The file's status word, and its mark at a normal process exit.
//!
//! A ring dropped by its program marks its file `CLOSED`. But a ring that
//! lives to the end of the process is never dropped: one installed as the
//! tracepoints' sink (leaked on purpose), or held by a global `tracing`
//! subscriber, which Rust never tears down. Without more, its file would
//! read as the trace of a program that crashed. So every file ring's
//! status is also reachable from a process-wide registry (weak references,
//! which do not keep a ring alive), and an exit handler (`atexit`,
//! registered once, when the first file ring is made) marks each still
//! alive `EXITED` when the process exits normally: a return from `main`
//! or `std::process::exit`. A crash, a signal's default action, `abort()`
//! (a `panic = "abort"` panic) or `_exit` run no exit handler and leave
//! the file `OPEN`, which recovery reads as a writer that died. A panic
//! that unwinds out of `main` ends the process by `exit(101)`, the normal
//! path, and reads as exited, with its code: with glibc the handler is
//! registered by `on_exit`, which hands it the exit status, and the exit
//! record keeps it (101 for such a panic). Elsewhere it is `atexit`, and
//! the code is unknown.
//!
//! Before the mark, the handler stores the exit record after the status
//! word (`layout::EXIT_OFFSET`): a reading of the ring's clock between two
//! readings of `CLOCK_REALTIME`, as the header's wall-clock anchor is
//! taken, and which of them it got. It must read the ring's own clock, not
//! another of its kind: a `counter` or a `global` clock keeps state. So the
//! ring hands its clock over once it is built ([`StatusWord::set_clock`]),
//! as a reference with its type and lifetime erased, valid until the
//! ring's file is dropped. The drop takes it back under the lock the
//! handler reads it under, so the handler never reads a clock that is
//! gone.
//!
//! Every mark (open, closed, exited) is made under that lock, and `CLOSED`
//! and `EXITED` only over `OPEN`: of a drop on another thread and the exit
//! handler at the same moment, the first marks the file and the other
//! leaves it. Only the process that made the ring marks it: a forked child
//! shares the parent's mapping, and its exit must not mark the parent's
//! ring under the parent's writers (nor may it take a lock the fork may
//! have copied held).
//!
//! Other threads may still be writing when the process exits, and go on
//! until the kernel ends them. The mark does not stop them and touches
//! only the status area, so their events committed after it are in the
//! file and recovered as any others, and an event one of them had reserved
//! but not committed when the process ended is skipped and counted as
//! pending, as after a crash: recovery counts those (the PENDING headers
//! its walk steps over), not the handler, which could only count the
//! reservations open at its own moment, and some of those commit after
//! it. `EXITED` thus says the program ended normally, and when; the
//! pending count says whether a writer was mid-event at the very end.

use super::layout::{EXIT_CODE_SHIFT, EXIT_HAS_CODE, EXIT_HAS_TICKS, EXIT_HAS_WALL, EXIT_WORDS};
use super::{STATUS_CLOSED, STATUS_EXITED, STATUS_OPEN};
use crate::order;
use crate::page::zeroed::ZeroedSlice;
use crate::sync::AtomicU64;
use crate::{register_exit_handler, ExitHandler};
use ringtrace_clock::Clock;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError, Weak};

/// A file ring's status word and exit record, and whether it may be
/// marked.
#[derive(Debug)]
pub(crate) struct StatusWord {
    /// The status word, then the exit record's [`EXIT_WORDS`] words, in the
    /// mapped file (the slice keeps the mapping alive).
    words: ZeroedSlice<AtomicU64>,
    /// Set once writers may be active: only then does a mark change the
    /// file (a ring that failed while set up stays `SETTING_UP`).
    opened: AtomicBool,
    /// The process that made the ring.
    pid: u32,
    /// The ring's clock, for the exit record: `None` until the ring hands
    /// it over and once its file is dropped. Every mark is made holding
    /// this lock.
    clock: Mutex<Option<ExitClock>>,
}

/// The ring's clock as the exit handler reads it: a `&C` with its type
/// and lifetime erased.
#[derive(Clone, Copy)]
struct ExitClock {
    /// The clock, a `*const C`.
    clock: *const (),
    /// Reads it: `read_as::<C>`.
    read: unsafe fn(*const ()) -> u64,
}

impl std::fmt::Debug for ExitClock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExitClock")
    }
}

// SAFETY: an ExitClock stands for a `&C` with `C: Clock`, and every Clock
// is Sync, so the reference may be sent to (and read on) any thread; it is
// read only under the status's lock, while the clock is alive (see
// `set_clock`).
unsafe impl Send for ExitClock {}

/// Reads the clock at `clock`.
///
/// # Safety
///
/// - `clock` is a `*const C` to a `C` that is alive and not moved for the
///   whole call.
unsafe fn read_as<C: Clock>(clock: *const ()) -> u64 {
    // SAFETY: the caller's promise: `clock` points to a live `C`.
    unsafe { (*clock.cast::<C>()).read() }
}

/// Every file ring's status word, weakly: what the exit handler marks.
static LIVE: Mutex<Vec<Weak<StatusWord>>> = Mutex::new(Vec::new());

/// Registers the exit handler ([`MarkAll`]), once per process.
static AT_EXIT: Once = Once::new();

impl StatusWord {
    /// The status of a ring being made in this process, over `words` (the
    /// status word, then the exit record), registered to be marked at
    /// exit.
    pub(crate) fn new(words: ZeroedSlice<AtomicU64>) -> Arc<StatusWord> {
        debug_assert_eq!(words.len(), 1 + EXIT_WORDS);
        let status = Arc::new(StatusWord {
            words,
            opened: AtomicBool::new(false),
            pid: std::process::id(),
            clock: Mutex::new(None),
        });
        AT_EXIT.call_once(|| {
            // By `on_exit` where glibc has it (the exit code is then known),
            // else by `atexit`. A failure (no room) leaves rings to be
            // closed by their drop alone.
            register_exit_handler::<MarkAll>();
        });
        let mut live = LIVE.lock().unwrap_or_else(PoisonError::into_inner);
        live.retain(|w| w.strong_count() > 0);
        live.push(Arc::downgrade(&status));
        status
    }

    /// The lock every mark is made under, with the clock it guards.
    fn lock(&self) -> MutexGuard<'_, Option<ExitClock>> {
        self.clock.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The status word, as this process last stored it. Relaxed: called
    /// under the lock, and every store to the word after the ring was
    /// shared is made under it too, so the lock orders them.
    fn status(&self) -> u64 {
        self.words[0].load(Relaxed)
    }

    /// Hands the exit handler the ring's clock, to stamp the exit record
    /// with.
    ///
    /// # Safety
    ///
    /// - `clock` stays alive, at its address, until the ring file this
    ///   status belongs to is dropped (its drop calls [`close`](Self::close),
    ///   which takes the clock back before it returns).
    pub(crate) unsafe fn set_clock<C: Clock>(&self, clock: &C) {
        *self.lock() = Some(ExitClock {
            clock: (clock as *const C).cast(),
            read: read_as::<C>,
        });
    }

    /// Marks the file open for writers: from now on a crash leaves a ring.
    /// The exit record of an earlier run (a file appended to) is cleared
    /// first.
    pub(crate) fn set_open(&self) {
        let _marking = self.lock();
        for word in &self.words[1..] {
            // Relaxed: the Release store of the status below publishes it.
            word.store(0, Relaxed);
        }
        // Release: the buffers' setup is in the file before the mark.
        self.words[0].store(STATUS_OPEN, order::FILE_STATUS);
        // Relaxed: read under the lock taken here.
        self.opened.store(true, Relaxed);
    }

    /// Marks the file closed, if writers were let in, it is still open
    /// (not marked exited already) and this is the process that made the
    /// ring; and takes the ring's clock back from the exit handler.
    /// Idempotent.
    pub(crate) fn close(&self) {
        if self.pid != std::process::id() {
            // A forked child never marks, nor reads the clock (see
            // `exit`), and its copy of the lock may be held.
            return;
        }
        let mut clock = self.lock();
        *clock = None;
        if self.opened.load(Relaxed) && self.status() == STATUS_OPEN {
            // Release: every commit this thread made, and every one it saw,
            // is in the file before the mark.
            self.words[0].store(STATUS_CLOSED, order::FILE_STATUS);
        }
    }

    /// Marks the file exited, with the exit record, if writers were let
    /// in, it is still open (not closed by a drop already) and this is the
    /// process that made the ring. Idempotent.
    fn exit(&self, code: Option<u8>) {
        if self.pid != std::process::id() {
            return;
        }
        let clock = self.lock();
        if !self.opened.load(Relaxed) || self.status() != STATUS_OPEN {
            return;
        }
        let (wall_ns, ticks) = super::read_with_wall(|| {
            let clock = (*clock)?;
            // A clock that panics loses the ticks, not the exit: a panic
            // out of an exit handler would abort the process.
            std::panic::catch_unwind(|| {
                // SAFETY: the clock was handed over by `set_clock`, whose
                // caller keeps it alive until the ring's file drops, and
                // that drop takes it back under this lock, held here.
                unsafe { (clock.read)(clock.clock) }
            })
            .ok()
        });
        let read = ticks.map_or(0, |_| EXIT_HAS_TICKS)
            | wall_ns.map_or(0, |_| EXIT_HAS_WALL)
            | code.map_or(0, |c| EXIT_HAS_CODE | (u64::from(c) << EXIT_CODE_SHIFT));
        for (word, value) in
            self.words[1..]
                .iter()
                .zip([ticks.unwrap_or(0), wall_ns.unwrap_or(0), read])
        {
            // Relaxed: the mark's Release store below publishes them.
            word.store(value, Relaxed);
        }
        // Release: the record above is in the file before the mark.
        self.words[0].store(STATUS_EXITED, order::FILE_EXITED);
    }
}

/// The exit handler: marks every file ring still alive exited.
struct MarkAll;

impl ExitHandler for MarkAll {
    /// It never unwinds: it catches a clock's panic.
    fn exited(code: Option<u8>) {
        mark_all(code);
    }
}

/// Marks every file ring still alive exited, with `code` if known.
fn mark_all(code: Option<u8>) {
    // Taken out under the lock, marked outside it: a ring dropped on
    // another thread meanwhile waits for nothing.
    let live = std::mem::take(&mut *LIVE.lock().unwrap_or_else(PoisonError::into_inner));
    for status in live.iter().filter_map(Weak::upgrade) {
        status.exit(code);
    }
}

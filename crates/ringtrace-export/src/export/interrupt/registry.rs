//! The temporary paths in use, in a table a signal handler reads without
//! allocating or locking: [`SLOTS`] atomic pointers, each null or a boxed
//! [`Entry`] (its kind and its NUL-terminated path).
//!
//! Only [`Registry::release`] frees an entry, and only if no handler has
//! begun reading the table (its `state` still [`IDLE`]); otherwise the
//! entry is leaked, the process about to end. Release's "swap the slot to
//! null, then read `state`" and the handler's "set `state`, then read the
//! slots" are the two halves of Dekker's pattern: all four are SeqCst, so
//! in their single total order either the release read `state` before the
//! handler set it (and the handler, reading the slot after that, finds it
//! null) or the release sees the handler and does not free. So the
//! handler never reads a freed entry, even on another thread.
//!
//! tests/loom_interrupt.rs model-checks this with loom: it compiles this
//! file into itself under `cfg(loom)`, where the atomics are loom's, the
//! table has no process-wide instance, and the handler's removal and
//! release's free become a read and a write of a cell loom tracks (see
//! `Model`): loom reports a read that is not ordered before the free.
// Under loom the library has no table (`REGISTRY` needs const atomics):
// only the model uses this file then.
#![cfg_attr(loom, allow(dead_code))]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

#[cfg(not(loom))]
use super::remove;
#[cfg(not(loom))]
use std::hint::spin_loop;
#[cfg(not(loom))]
use std::sync::atomic::{AtomicPtr, AtomicU8, Ordering};

// Under loom: its atomics, and a yield to its scheduler where a handler
// waits (a spin loop loom would otherwise run for ever).
#[cfg(loom)]
use loom::sync::atomic::{AtomicPtr, AtomicU8, Ordering};
#[cfg(loom)]
use loom::thread::yield_now as spin_loop;

/// The temporary paths registered at once, at most: far more than an
/// export uses (one), enough for a program running a few side by side.
pub const SLOTS: usize = 16;

/// No handler has read the table.
const IDLE: u8 = 0;
/// A handler is removing the registered paths.
const BUSY: u8 = 1;
/// A handler has removed them.
const DONE: u8 = 2;

/// The process's table.
#[cfg(not(loom))]
pub(super) static REGISTRY: Registry = Registry::new();

/// What a registered path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// A file: unlinked.
    File,
    /// A directory: emptied, then removed.
    Dir,
}

/// One registered path.
#[cfg_attr(not(loom), derive(Debug))]
pub(super) struct Entry {
    kind: Kind,
    #[cfg(not(loom))]
    path: CString,
    /// Under loom, in a cell loom tracks: a handler reads it where it
    /// would remove the path, `release` writes it where it would free the
    /// entry.
    #[cfg(loom)]
    path: loom::cell::UnsafeCell<CString>,
}

impl Entry {
    /// `path` made absolute (as given if the current directory is gone);
    /// `None` for a path holding a NUL byte, which no file has.
    pub(super) fn new(path: &Path, kind: Kind) -> Option<Entry> {
        let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_owned());
        let path = CString::new(absolute.as_os_str().as_bytes()).ok()?;
        #[cfg(loom)]
        let path = loom::cell::UnsafeCell::new(path);
        Some(Entry { kind, path })
    }

    /// Removes the path, async-signal-safely.
    #[cfg(not(loom))]
    fn remove(&self) {
        match self.kind {
            Kind::File => remove::file(&self.path),
            Kind::Dir => remove::dir(&self.path),
        }
    }
}

/// A table of registered paths.
pub(super) struct Registry {
    slots: [AtomicPtr<Entry>; SLOTS],
    /// [`IDLE`], [`BUSY`] or [`DONE`]: whether a handler has begun.
    state: AtomicU8,
    /// Under loom: what the model checks in place of system calls.
    #[cfg(loom)]
    model: Model,
}

impl Registry {
    #[cfg(not(loom))]
    pub(super) const fn new() -> Registry {
        Registry {
            slots: [const { AtomicPtr::new(std::ptr::null_mut()) }; SLOTS],
            state: AtomicU8::new(IDLE),
        }
    }

    /// Under loom, whose atomics are not const: a table for one run of
    /// a model.
    #[cfg(loom)]
    pub(super) fn new() -> Registry {
        Registry {
            slots: std::array::from_fn(|_| AtomicPtr::new(std::ptr::null_mut())),
            state: AtomicU8::new(IDLE),
            model: Model::default(),
        }
    }

    /// Puts `entry` in a free slot and says which; `None` (and `entry`
    /// dropped) when every slot is taken.
    pub(super) fn insert(&self, entry: Entry) -> Option<usize> {
        let entry = Box::into_raw(Box::new(entry));
        for (i, slot) in self.slots.iter().enumerate() {
            // Release on success: publishes the entry's bytes to the
            // handler's SeqCst (so also Acquire) load of the slot. Relaxed
            // on failure: the slot's value is not used.
            let null = std::ptr::null_mut();
            if slot
                .compare_exchange(null, entry, Ordering::Release, Ordering::Relaxed)
                .is_ok()
            {
                return Some(i);
            }
        }
        // SAFETY: `entry` came from `Box::into_raw` above and was stored in
        // no slot, so nothing else holds it.
        drop(unsafe { Box::from_raw(entry) });
        None
    }

    /// Empties slot `i`, which [`Registry::insert`] returned, freeing its
    /// entry unless a handler may be reading it (see the module's docs).
    pub(super) fn release(&self, i: usize) {
        // SeqCst: the first half of the Dekker pattern (module docs).
        const SWAP: Ordering = Ordering::SeqCst;
        // SeqCst: the second half; ordered after the swap.
        const LOAD: Ordering = Ordering::SeqCst;
        let Some(slot) = self.slots.get(i) else {
            return;
        };
        let entry = slot.swap(std::ptr::null_mut(), SWAP);
        seq_cst_between(SWAP, LOAD);
        if entry.is_null() || self.state.load(LOAD) != IDLE {
            return;
        }
        // SAFETY: `entry` came from `Box::into_raw` in `insert`; the swap
        // took it out of the table, so no later reader finds it, and no
        // handler began before (state IDLE), so none holds it.
        let entry = unsafe { Box::from_raw(entry) };
        #[cfg(not(loom))]
        drop(entry);
        // Under loom: a write loom checks against every handler's read.
        #[cfg(loom)]
        self.model.free(entry);
    }

    /// From a signal handler: removes every registered path. A second
    /// handler (another signal, on another thread) waits for the first
    /// to finish, so that neither ends the process half-way.
    /// Async-signal-safe: atomics and [`remove`]'s calls only.
    pub(super) fn remove_all(&self) {
        // SeqCst on success: the handler's half of the Dekker pattern,
        // before the slots are read. Relaxed on failure: the value only
        // says another handler came first, waited for below.
        const CAS: Ordering = Ordering::SeqCst;
        // SeqCst: ordered after the state's change (module docs); as an
        // Acquire, sees the entry `insert` published.
        const LOAD: Ordering = Ordering::SeqCst;
        let first = self
            .state
            .compare_exchange(IDLE, BUSY, CAS, Ordering::Relaxed);
        if first.is_err() {
            // Acquire: pairs with the Release store of DONE below.
            while self.state.load(Ordering::Acquire) == BUSY {
                spin_loop();
            }
            // Under loom: the process ends, observing the removals.
            #[cfg(loom)]
            self.model.end();
            return;
        }
        seq_cst_between(CAS, LOAD);
        for slot in &self.slots {
            let entry = slot.load(LOAD);
            // SAFETY: non-null, the pointer is a live `Box<Entry>`: only
            // `release` frees one, and not once `state` is BUSY, nor one
            // it swapped out before this load, which then reads null.
            if let Some(entry) = unsafe { entry.as_ref() } {
                #[cfg(not(loom))]
                entry.remove();
                // Under loom: a read loom checks against release's write.
                #[cfg(loom)]
                self.model.remove(entry);
            }
        }
        // Release: the paths are removed before a waiting handler ends
        // the process.
        self.state.store(DONE, Ordering::Release);
    }
}

/// What the SeqCst total order gives a thread's SeqCst write followed by
/// its SeqCst read (one half of the Dekker pattern): nothing to add
/// natively, where the accesses themselves give it.
///
/// loom models SeqCst accesses only as AcqRel (its README's unsupported
/// features), which lets both halves read the old values, a false alarm;
/// it does model SeqCst fences. So under loom a SeqCst fence stands
/// between the two accesses, but only when both are SeqCst: with either
/// weakened the model loses the order, as the code would.
#[inline(always)]
fn seq_cst_between(first: Ordering, second: Ordering) {
    #[cfg(loom)]
    if first == Ordering::SeqCst && second == Ordering::SeqCst {
        loom::sync::atomic::fence(Ordering::SeqCst);
    }
    #[cfg(not(loom))]
    let _ = (first, second);
}

/// Under loom: what the model checks in place of the handler's system
/// calls and release's free.
#[cfg(loom)]
#[derive(Default)]
struct Model {
    /// The paths the handler removed, in a cell loom tracks: written by
    /// the handler that runs, read by one that waited for it (the process
    /// ending) and by the test once its threads are joined.
    removed: loom::cell::UnsafeCell<Vec<(Kind, CString)>>,
    /// The entries `release` freed. Kept, boxes and all, so that a
    /// handler reading one after that is a loom report, not a read of
    /// freed memory in the model itself. Bookkeeping loom does not see:
    /// loom runs one thread at a time, and the lock is held across no
    /// atomic, so it is never contended.
    // Boxed: the allocation a late reader would point into must live.
    #[allow(clippy::vec_box)]
    freed: std::sync::Mutex<Vec<Box<Entry>>>,
}

#[cfg(loom)]
impl Model {
    /// A handler's removal of `entry`: a read of its path.
    fn remove(&self, entry: &Entry) {
        // SAFETY: the cell holds a CString; what may race this read is
        // release's write, which loom checks against it.
        let path = entry.path.with(|path| unsafe { (*path).clone() });
        // SAFETY: only the handler that moved `state` from IDLE writes
        // the log; the others read it after DONE (loom checks it).
        self.removed
            .with_mut(|removed| unsafe { (*removed).push((entry.kind, path)) });
    }

    /// Release's free of `entry`: a write of its path.
    fn free(&self, entry: Box<Entry>) {
        // SAFETY: the cell holds a CString; what may race this write is a
        // handler's read, which loom checks against it.
        entry
            .path
            .with_mut(|path| unsafe { *path = CString::default() });
        self.freed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(entry);
    }

    /// A handler that waited for another: the process ends, after the
    /// removals.
    fn end(&self) {
        // SAFETY: the log is written only by the handler waited for, before
        // its Release store of DONE (loom checks it).
        self.removed.with(|removed| unsafe { (*removed).len() });
    }
}

/// The model's observations, for tests/loom_interrupt.rs.
#[cfg(loom)]
impl Registry {
    /// The paths a handler removed. Once the model's threads are joined.
    pub(super) fn removed(&self) -> Vec<(Kind, CString)> {
        // SAFETY: read after the threads that write it are joined.
        self.model
            .removed
            .with(|removed| unsafe { (*removed).clone() })
    }

    /// How many entries `release` freed.
    pub(super) fn freed(&self) -> usize {
        self.model
            .freed
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir =
            std::env::temp_dir().join(format!("ringtrace-interrupt-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_full_registry_refuses_and_a_released_slot_is_reused() {
        let registry = Registry::new();
        let entry = || Entry::new(Path::new("/nonexistent/x"), Kind::File);
        let taken: Vec<usize> = (0..SLOTS)
            .map(|_| registry.insert(entry().unwrap()).unwrap())
            .collect();
        assert_eq!(taken, (0..SLOTS).collect::<Vec<_>>());
        assert_eq!(registry.insert(entry().unwrap()), None);
        registry.release(3);
        assert_eq!(registry.insert(entry().unwrap()), Some(3));
        for i in taken {
            registry.release(i);
        }
        // Twice, and out of range: nothing.
        registry.release(0);
        registry.release(SLOTS);
    }

    #[test]
    fn a_path_with_a_nul_byte_is_not_registered() {
        let path = std::ffi::OsStr::from_bytes(b"/tmp/a\0b");
        assert!(Entry::new(Path::new(path), Kind::File).is_none());
    }

    #[test]
    fn removing_all_removes_registered_files_and_directories_and_nothing_else() {
        let dir = scratch("remove-all");
        let (file, tmp, kept) = (dir.join(".f.tmp"), dir.join(".d.tmp"), dir.join("kept"));
        std::fs::write(&file, b"half").unwrap();
        std::fs::create_dir(&tmp).unwrap();
        for name in ["metadata", "stream0", "stream1"] {
            std::fs::write(tmp.join(name), b"half").unwrap();
        }
        std::fs::write(&kept, b"whole").unwrap();
        let registry = Registry::new();
        let released = registry.insert(Entry::new(&kept, Kind::File).unwrap());
        registry.release(released.unwrap());
        let f = registry.insert(Entry::new(&file, Kind::File).unwrap());
        let d = registry.insert(Entry::new(&tmp, Kind::Dir).unwrap());
        registry.remove_all();
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(left, ["kept"]);
        // Released after a handler ran: leaked, never freed under it.
        registry.release(f.unwrap());
        registry.release(d.unwrap());
        // A second handler returns at once.
        registry.remove_all();
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

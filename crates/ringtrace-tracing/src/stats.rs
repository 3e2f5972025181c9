//! What a layer recorded and what it could not.

use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use thread_local::ThreadLocal;

/// A layer's counts since it was built ([`RingLayer::stats`](crate::RingLayer::stats)).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LayerStats {
    /// Records written: events, and span creations, records, enters,
    /// exits and closes.
    pub recorded: u64,
    /// Records the ring refused (full in discard mode, the page to reuse
    /// still being written, or larger than a page; the ring counts each
    /// in its `missed` too, and by cause).
    pub dropped: u64,
    /// String and `Debug` values cut at the string limit.
    pub strings_cut: u64,
    /// Fields left out of records written: those past a record's 128th,
    /// and those past their callsite's 256th (a record names a field by
    /// one byte).
    pub fields_dropped: u64,
    /// Callsites described in the ring's metadata annex.
    pub callsites_registered: u64,
    /// Callsite descriptions refused: once per callsite the metadata
    /// annex had no room for, and once when the layer's callsite table
    /// filled (the callsites met after that are not told apart). Their
    /// records are not written, and each is counted in `unregistered`.
    pub callsites_refused: u64,
    /// Records not written because their callsite could not be described.
    pub unregistered: u64,
}

/// What counts the records written.
pub(crate) trait Tally {
    /// One record written.
    fn recorded(&self);
}

impl Tally for Counters {
    #[inline]
    fn recorded(&self) {
        Counters::recorded(self);
    }
}

/// The counters behind [`LayerStats`]. Relaxed throughout: they are
/// statistics, ordered with nothing.
///
/// `recorded` changes on every record, from every thread: one shared
/// word would bounce between the CPUs' caches on each of them, and even
/// a word per CPU would take a locked add each time. It is kept per
/// thread instead, a word only its thread writes (a load and a store, no
/// locked instruction), summed when read. A thread that exits leaves its
/// word, which a later thread given the same slot goes on adding to: the
/// sum stays exact.
#[derive(Debug)]
pub(crate) struct Counters {
    recorded: ThreadLocal<CachePadded<AtomicU64>>,
    /// Records written by threads being torn down
    /// ([`crate::thread_exit`]), whose `recorded` word cannot be reached.
    recorded_exiting: AtomicU64,
    dropped: AtomicU64,
    strings_cut: AtomicU64,
    fields_dropped: AtomicU64,
    callsites_registered: AtomicU64,
    callsites_refused: AtomicU64,
    unregistered: AtomicU64,
}

impl Counters {
    /// Counters at zero.
    pub(crate) fn new() -> Counters {
        Counters {
            recorded: ThreadLocal::new(),
            recorded_exiting: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            strings_cut: AtomicU64::new(0),
            fields_dropped: AtomicU64::new(0),
            callsites_registered: AtomicU64::new(0),
            callsites_refused: AtomicU64::new(0),
            unregistered: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(crate) fn recorded(&self) {
        if crate::thread_exit::exiting() {
            // Relaxed: statistics, ordered with nothing.
            self.recorded_exiting.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let mine = self.recorded.get_or(|| CachePadded::new(AtomicU64::new(0)));
        // After the lookup, which may have taken the thread's id (and an
        // exited thread's entry with it) for the first time.
        crate::thread_exit::arm();
        // Only this thread writes its word: a load and a store are an
        // exact add (Relaxed: read by `snapshot`, ordered with nothing).
        mine.store(mine.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
    }
    #[cold]
    pub(crate) fn dropped(&self) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
    }
    #[cold]
    pub(crate) fn strings_cut(&self, n: u64) {
        self.strings_cut.fetch_add(n, Ordering::Relaxed);
    }
    #[cold]
    pub(crate) fn fields_dropped(&self, n: u64) {
        self.fields_dropped.fetch_add(n, Ordering::Relaxed);
    }
    pub(crate) fn callsite_registered(&self) {
        self.callsites_registered.fetch_add(1, Ordering::Relaxed);
    }
    pub(crate) fn callsite_refused(&self) {
        self.callsites_refused.fetch_add(1, Ordering::Relaxed);
    }
    #[cold]
    pub(crate) fn unregistered(&self) {
        self.unregistered.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> LayerStats {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        LayerStats {
            recorded: self.recorded.iter().map(|c| get(c)).sum::<u64>()
                + get(&self.recorded_exiting),
            dropped: get(&self.dropped),
            strings_cut: get(&self.strings_cut),
            fields_dropped: get(&self.fields_dropped),
            callsites_registered: get(&self.callsites_registered),
            callsites_refused: get(&self.callsites_refused),
            unregistered: get(&self.unregistered),
        }
    }
}

//! Callsite ids: each callsite's metadata is described once, in a record
//! appended to the ring's metadata annex, and named by its id in every
//! record after that.
//!
//! The ids of one layer are kept in a fixed open-addressing table keyed
//! by the address of the callsite's `&'static Metadata` (one per
//! callsite, for the life of the process): a lookup hashes that address
//! (a multiply and a shift), loads a slot and compares; no lock, no
//! string hashing, no allocation. A miss takes a lock, describes the
//! callsite (which allocates, once), and publishes the id.

use crate::stats::Counters;
use parking_lot::Mutex;
use ringtrace_clock::Clock;
use ringtrace_ring::RingBuffer;
use ringtrace_tracepoint::tracing_record::{Callsite, CallsiteKind, Level};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use tracing_core::Metadata;

/// Callsite ids for the whole process: callsites described by different
/// layers (and local spans) on one ring never share an id.
static NEXT_ID: AtomicU32 = AtomicU32::new(1);

/// Where a fork child's callsite ids start: past any its parent gives
/// (a process never describes 2^31 callsites), with 2^30 draws apart.
const CHILD_FIRST_ID: u32 = 1 << 31;

/// In a fork child (from its fork handler, `crate::forks`): takes its
/// callsite ids from a range drawn from `value`, so that a callsite it
/// describes in a ring it shares with its parent (a file ring) never
/// takes an id its parent gives another.
pub(crate) fn start_afresh(value: u64) {
    let start = CHILD_FIRST_ID + (value % (1 << 30)) as u32;
    // Relaxed: the child's only thread runs the handler, before any
    // record.
    NEXT_ID.store(start, Ordering::Relaxed);
}

/// A fresh callsite id.
pub(crate) fn next_id() -> u32 {
    // Relaxed: only uniqueness matters.
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// What a slot's id is when the annex refused the callsite: its records
/// are not written (they could not be decoded).
pub(crate) const REFUSED: u32 = 0;

struct Slot {
    /// The callsite's `&'static Metadata` address; 0 while free.
    key: AtomicUsize,
    /// Its id ([`REFUSED`] if the annex had no room).
    id: AtomicU32,
}

/// Where a callsite is in a [`CallsiteTable`], and its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Site {
    /// Its slot: fixed for the table's life.
    pub(crate) slot: u32,
    /// Its id ([`REFUSED`] if the annex had no room).
    pub(crate) id: u32,
}

/// A layer's callsite ids.
pub(crate) struct CallsiteTable {
    slots: Box<[Slot]>,
    /// `64 - log2(slots.len())`: the hash's top bits index the table.
    shift: u32,
    /// Callsites described; at most `limit`.
    used: Mutex<usize>,
    /// The callsites asked for: under 3/4 of the slots, so probes stay
    /// short and a free slot always ends a probe.
    limit: usize,
    /// Set once `used` reaches the capacity: from then on a callsite not
    /// in the table is refused without taking the lock, so a full table
    /// puts no lock on the write path.
    full: AtomicBool,
}

impl CallsiteTable {
    /// A table for `capacity` callsites (at least 1).
    pub(crate) fn new(capacity: usize) -> CallsiteTable {
        let limit = capacity.max(1);
        let slots = (limit.saturating_mul(4) / 3 + 1).next_power_of_two();
        CallsiteTable {
            slots: (0..slots)
                .map(|_| Slot {
                    key: AtomicUsize::new(0),
                    id: AtomicU32::new(REFUSED),
                })
                .collect(),
            shift: 64 - slots.trailing_zeros(),
            used: Mutex::new(0),
            limit,
            full: AtomicBool::new(false),
        }
    }

    /// Callsites the table holds: the number asked for, exactly.
    pub(crate) fn capacity(&self) -> usize {
        self.limit
    }

    #[inline]
    fn home(&self, key: usize) -> usize {
        // Fibonacci hashing of the address (its low bits are alignment).
        ((key as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize
    }

    /// The id of `meta`'s callsite, if described (or refused) before.
    #[inline]
    pub(crate) fn get(&self, meta: &'static Metadata<'static>) -> Option<u32> {
        self.find(meta).map(|site| site.id)
    }

    /// The slot and id of `meta`'s callsite, if described (or refused)
    /// before.
    #[inline]
    pub(crate) fn find(&self, meta: &'static Metadata<'static>) -> Option<Site> {
        let key = meta as *const Metadata<'static> as usize;
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        for _ in 0..self.slots.len() {
            let slot = &self.slots[at];
            // Acquire: pairs with the Release store of the key in
            // `describe`, so the id stored before it is seen.
            match slot.key.load(Ordering::Acquire) {
                k if k == key => {
                    return Some(Site {
                        slot: at as u32,
                        id: slot.id.load(Ordering::Relaxed),
                    })
                }
                0 => return None,
                _ => at = (at + 1) & mask,
            }
        }
        None
    }

    /// Slots in the table: a [`Site::slot`] is below it.
    pub(crate) fn slots(&self) -> usize {
        self.slots.len()
    }

    /// The callsite in `slot` (a [`Site::slot`] this table gave): its
    /// metadata and id, or `None` for a slot out of range or free.
    #[inline]
    pub(crate) fn at(&self, slot: usize) -> Option<(&'static Metadata<'static>, u32)> {
        let entry = self.slots.get(slot)?;
        // Acquire: as in `find`, the id stored before the key is seen.
        let key = entry.key.load(Ordering::Acquire);
        if key == 0 {
            return None;
        }
        let meta = key as *const Metadata<'static>;
        // SAFETY: a key is only ever stored (in `describe`) from a
        // `&'static Metadata<'static>`, which lives, unmoved, for the
        // rest of the process.
        Some((unsafe { &*meta }, entry.id.load(Ordering::Relaxed)))
    }

    /// The slot and id of `meta`'s callsite, describing it first if this
    /// is its first sight; its id is [`REFUSED`] when the annex or the
    /// table had no room, and it has no slot when the table is full.
    #[inline]
    pub(crate) fn site<C: Clock>(
        &self,
        meta: &'static Metadata<'static>,
        ring: &RingBuffer<C>,
        counters: &Counters,
    ) -> Option<Site> {
        match self.find(meta) {
            Some(site) => Some(site),
            None => {
                self.id(meta, ring, counters);
                self.find(meta)
            }
        }
    }

    /// The id of `meta`'s callsite, describing it in `ring`'s metadata
    /// annex first if this is its first sight; [`REFUSED`] when the annex
    /// or the table has no room.
    #[inline]
    pub(crate) fn id<C: Clock>(
        &self,
        meta: &'static Metadata<'static>,
        ring: &RingBuffer<C>,
        counters: &Counters,
    ) -> u32 {
        match self.get(meta) {
            Some(id) => id,
            // Relaxed: a stale `false` only takes the lock, which decides.
            // Not counted refused again: the caller counts the record.
            None if self.full.load(Ordering::Relaxed) => REFUSED,
            None => self.describe(meta, ring, counters),
        }
    }

    #[cold]
    #[inline(never)]
    fn describe<C: Clock>(
        &self,
        meta: &'static Metadata<'static>,
        ring: &RingBuffer<C>,
        counters: &Counters,
    ) -> u32 {
        let mut used = self.used.lock();
        // Another thread may have described it while this one waited.
        if let Some(id) = self.get(meta) {
            return id;
        }
        if *used >= self.capacity() {
            // Not kept: every later record of a callsite the table has
            // no room for is refused without the lock from now on, and
            // counted unregistered by the caller.
            // Relaxed: a hint; see `id`.
            self.full.store(true, Ordering::Relaxed);
            counters.callsite_refused();
            return REFUSED;
        }
        let id = next_id();
        let record = callsite_of(id, meta).to_record();
        let id = match ring.append_metadata(&record) {
            Ok(()) => {
                counters.callsite_registered();
                id
            }
            Err(_) => {
                counters.callsite_refused();
                REFUSED
            }
        };
        let key = meta as *const Metadata<'static> as usize;
        let mask = self.slots.len() - 1;
        let mut at = self.home(key);
        // A free slot exists: fewer than 3/4 of them are used. Relaxed: keys
        // are stored only here, under the lock this thread holds.
        while self.slots[at].key.load(Ordering::Relaxed) != 0 {
            at = (at + 1) & mask;
        }
        // Relaxed: published by the Release store of the key below.
        self.slots[at].id.store(id, Ordering::Relaxed);
        // Release: a reader that sees the key sees the id.
        self.slots[at].key.store(key, Ordering::Release);
        *used += 1;
        id
    }
}

/// The level as the wire format numbers it.
pub(crate) fn level_of(level: &tracing_core::Level) -> Level {
    Level(match *level {
        tracing_core::Level::TRACE => 1,
        tracing_core::Level::DEBUG => 2,
        tracing_core::Level::INFO => 3,
        tracing_core::Level::WARN => 4,
        tracing_core::Level::ERROR => 5,
    })
}

/// `meta`'s description under `id`.
pub(crate) fn callsite_of(id: u32, meta: &'static Metadata<'static>) -> Callsite {
    Callsite {
        id,
        kind: if meta.is_span() {
            CallsiteKind::Span
        } else {
            CallsiteKind::Event
        },
        level: level_of(meta.level()),
        name: meta.name().to_owned(),
        target: meta.target().to_owned(),
        file: meta.file().map(str::to_owned),
        line: meta.line(),
        fields: meta.fields().iter().map(|f| f.name().to_owned()).collect(),
    }
}

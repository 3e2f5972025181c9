//! Which spans have more than one handle: a span closes when its last
//! handle is dropped, not its first.
//!
//! `tracing` tells a subscriber of each handle cloned (`clone_span`) and
//! each dropped (`try_close`); a span closes at the drop that leaves it
//! no handle. The registry keeps a reference count in every span's slot,
//! two read-modify-writes of a shared word per span. Most spans are
//! never cloned (`#[instrument]`, `span.enter()`, `.instrument(span)`
//! move their one handle), so this table holds only the spans that are:
//! each one's count of clones not yet dropped, in a map under one of
//! [`SHARDS`] locks, and a process-wide count of all of them.
//!
//! A drop first reads that total. When it is 0, no span has a clone
//! alive, so the handle dropped is its span's last and the span closes,
//! with no lock taken and nothing written. Otherwise the drop looks the
//! span up under its shard's lock: a clone is counted off and the span
//! stays open, or there is none and it closes.
//!
//! Why a total of 0 is enough: the total is changed only under a shard's
//! lock, by read-modify-writes, so every value in its modification order
//! is the number of clones not yet dropped at that point of the order. A
//! thread dropping a handle has seen (happens-after) the clone that made
//! it, if it is one, and any drop of a clone before it in the order, since
//! it reads the total with Acquire against their AcqRel writes. A clone
//! of the same span made concurrently would be made from another handle,
//! which is then alive and was itself made by a clone the total still
//! counts, or is the span's first handle, whose clone's count the thread
//! read. So a total of 0 means the handle dropped is the span's only one.

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Locks over the map of cloned spans.
const SHARDS: usize = 16;

/// One shard: cloned spans by id, each with its clones not yet dropped.
type Shard = CachePadded<Mutex<HashMap<u64, u64>>>;

/// Cloned spans and their clones not yet dropped.
#[derive(Debug)]
pub(crate) struct Clones {
    /// Clones not yet dropped, of every span (see the module's text).
    total: CachePadded<AtomicU64>,
    shards: Box<[Shard]>,
}

impl Default for Clones {
    fn default() -> Self {
        Clones {
            total: CachePadded::new(AtomicU64::new(0)),
            // Room from the start: a span cloned allocates nothing until
            // a shard holds more cloned spans at once than this.
            shards: (0..SHARDS)
                .map(|_| CachePadded::new(Mutex::new(HashMap::with_capacity(8))))
                .collect(),
        }
    }
}

impl Clones {
    fn shard(&self, span: u64) -> &Mutex<HashMap<u64, u64>> {
        // Fibonacci hashing: serials differ in the id's high bits.
        let at = span.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SHARDS.trailing_zeros());
        &self.shards[at as usize]
    }

    /// A handle of `span` cloned.
    pub(crate) fn cloned(&self, span: u64) {
        let mut shard = self.shard(span).lock();
        *shard.entry(span).or_insert(0) += 1;
        // AcqRel: a drop that reads this count has seen the clone (see
        // the module's text).
        self.total.fetch_add(1, Ordering::AcqRel);
    }

    /// A handle of `span` dropped: whether it was the span's last (the
    /// span closes) or one of its clones (it stays open).
    #[inline]
    pub(crate) fn dropped_last(&self, span: u64) -> bool {
        // Acquire: pairs with the AcqRel writes in `cloned` and below.
        if self.total.load(Ordering::Acquire) == 0 {
            return true;
        }
        self.dropped_under_lock(span)
    }

    #[cold]
    fn dropped_under_lock(&self, span: u64) -> bool {
        let mut shard = self.shard(span).lock();
        let Some(count) = shard.get_mut(&span) else {
            return true;
        };
        *count -= 1;
        if *count == 0 {
            shard.remove(&span);
        }
        // AcqRel: as in `cloned`.
        self.total.fetch_sub(1, Ordering::AcqRel);
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_closes_at_the_drop_of_its_last_handle() {
        let c = Clones::default();
        assert!(c.dropped_last(7), "one handle, never cloned");
        c.cloned(8);
        c.cloned(8);
        c.cloned(9);
        assert!(!c.dropped_last(8));
        assert!(!c.dropped_last(8));
        assert!(c.dropped_last(8));
        assert!(!c.dropped_last(9));
        assert!(c.dropped_last(9));
        assert_eq!(c.total.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn handles_cloned_and_dropped_on_many_threads_close_each_span_once() {
        let c = Clones::default();
        let closes = AtomicU64::new(0);
        let spans = if cfg!(miri) { 40 } else { 2000u64 };
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (c, closes) = (&c, &closes);
                s.spawn(move || {
                    for i in 0..spans {
                        let span = (t << 32) | i;
                        // Three handles: two clones, then three drops.
                        c.cloned(span);
                        c.cloned(span);
                        for _ in 0..3 {
                            if c.dropped_last(span) {
                                closes.fetch_add(1, Ordering::Relaxed);
                            }
                        }
                    }
                });
            }
        });
        assert_eq!(closes.load(Ordering::Relaxed), 4 * spans);
    }
}

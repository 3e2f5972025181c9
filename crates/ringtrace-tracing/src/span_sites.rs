//! Which callsite each span has, kept by the layer so that a span's
//! enter, exit and close records need not ask the registry: a registry
//! lookup takes the span's slot and gives it back (two read-modify-writes
//! on a shared word), about half of what an enter and an exit cost.
//!
//! A table of [`SLOTS`] entries, each a span id and its callsite id under
//! a sequence word (a seqlock): a span's creation sets its entry (waiting
//! for another setter of the same entry, for two stores), an edge reads it
//! without waiting, and a read that overlaps a set, or finds another span
//! there, is a miss, which asks the registry as before. An entry is never
//! cleared: a span id the registry hands out again (after the first span's
//! close) is set again at its creation, before any edge of the new span,
//! which replaces the old callsite.
//!
//! The table belongs to one installed layer (see `RingLayer::on_layer`):
//! span ids are only unique within one registry. It holds the registry's
//! ids; what the ring gets is `span_namespace`'s.

use std::sync::atomic::{fence, AtomicU32, AtomicU64, Ordering};

/// Entries in a table.
pub(crate) const SLOTS: usize = 1024;

struct Entry {
    /// Even: stable; odd: a setter is storing.
    seq: AtomicU32,
    span: AtomicU64,
    callsite: AtomicU32,
}

/// Span ids and their callsites (see the module's text).
pub(crate) struct SpanSites {
    entries: Box<[Entry]>,
}

impl std::fmt::Debug for SpanSites {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SpanSites").field("slots", &SLOTS).finish()
    }
}

impl SpanSites {
    pub(crate) fn new() -> SpanSites {
        SpanSites {
            entries: (0..SLOTS)
                .map(|_| Entry {
                    seq: AtomicU32::new(0),
                    span: AtomicU64::new(0),
                    callsite: AtomicU32::new(0),
                })
                .collect(),
        }
    }

    #[inline(always)]
    fn entry(&self, span: u64) -> &Entry {
        // Fibonacci hashing: registry ids differ in their low bits.
        let at =
            (span.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - SLOTS.trailing_zeros())) as usize;
        &self.entries[at]
    }

    /// The callsite set for `span`, or `None` (ask the registry).
    #[inline]
    pub(crate) fn get(&self, span: u64) -> Option<u32> {
        let e = self.entry(span);
        // Acquire: the id and callsite stored before the setter's Release
        // store of this even value are seen.
        let before = e.seq.load(Ordering::Acquire);
        if before & 1 == 1 {
            return None;
        }
        // Relaxed: checked by the sequence word below.
        let found = e.span.load(Ordering::Relaxed);
        let callsite = e.callsite.load(Ordering::Relaxed);
        // Acquire fence: the loads above happen before the load below, so
        // an unchanged sequence means no setter stored in between.
        fence(Ordering::Acquire);
        let after = e.seq.load(Ordering::Relaxed);
        (before == after && found == span).then_some(callsite)
    }

    /// Sets `span`'s callsite, replacing whatever the entry held.
    pub(crate) fn set(&self, span: u64, callsite: u32) {
        let e = self.entry(span);
        let mut spins = 0u32;
        let seq = loop {
            // Relaxed: the compare-and-swap below decides.
            let seq = e.seq.load(Ordering::Relaxed);
            // Acquire on success: our stores below stay after it.
            if seq & 1 == 0
                && e.seq
                    .compare_exchange_weak(
                        seq,
                        seq.wrapping_add(1),
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                break seq;
            }
            // Another setter holds the entry for two stores; if it was
            // preempted there, let it run.
            spins += 1;
            if spins % 64 == 0 {
                std::thread::yield_now();
            } else {
                std::hint::spin_loop();
            }
        };
        // Release fence: a reader that sees either store below also sees
        // the odd sequence, and misses.
        fence(Ordering::Release);
        // Relaxed: published by the Release store of the sequence.
        e.span.store(span, Ordering::Relaxed);
        e.callsite.store(callsite, Ordering::Relaxed);
        // Release: a reader that loads this value sees both stores.
        e.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn a_set_span_reads_back_and_another_misses() {
        let sites = SpanSites::new();
        assert_eq!(sites.get(7), None);
        sites.set(7, 3);
        assert_eq!(sites.get(7), Some(3));
        sites.set(7, 4);
        assert_eq!(sites.get(7), Some(4), "set again, as a reused id is");
        // Another id in the same entry evicts it: a miss, never its value.
        let other = (1..u64::MAX)
            .find(|&s| s != 7 && std::ptr::eq(sites.entry(s), sites.entry(7)))
            .unwrap();
        sites.set(other, 9);
        assert_eq!(sites.get(7), None);
        assert_eq!(sites.get(other), Some(9));
    }

    #[test]
    fn readers_beside_setters_never_see_another_spans_callsite() {
        // Spans whose callsite is a function of their id, set and read
        // from several threads over the same few entries: a read is right
        // or a miss.
        let sites = Arc::new(SpanSites::new());
        let rounds = if cfg!(miri) { 200 } else { 200_000 };
        let threads: Vec<_> = (0..3u64)
            .map(|t| {
                let sites = Arc::clone(&sites);
                std::thread::spawn(move || {
                    let mut hits = 0u64;
                    for i in 0..rounds {
                        let span = 1 + (i * 7 + t) % 4096;
                        if i % 3 == t % 3 {
                            sites.set(span, (span * 31) as u32);
                        }
                        if let Some(c) = sites.get(span) {
                            assert_eq!(c, (span * 31) as u32, "span {span}");
                            hits += 1;
                        }
                    }
                    hits
                })
            })
            .collect();
        let hits: u64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
        assert!(hits > 0);
    }
}

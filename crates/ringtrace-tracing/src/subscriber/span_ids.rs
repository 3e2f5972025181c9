//! Span ids that are unique in the process without a word shared by the
//! threads on each span, and that carry their callsite.
//!
//! A span id is a serial number above the callsite's slot in the
//! subscriber's callsite table:
//!
//! ```text
//!   63                         slot_bits   slot_bits-1        0
//!  +------------------------------------+---------------------+
//!  |  serial (1 .. 2^(64 - slot_bits))  |  slot + 1, or 0     |
//!  +------------------------------------+---------------------+
//! ```
//!
//! so an enter, an exit or a close finds the span's callsite from its id
//! alone, with no table of live spans. A slot field of 0 marks a span
//! whose callsite could not be described (its records are not written).
//!
//! Serials are handed out in blocks of [`BLOCK`]: a thread takes a block
//! from the process-wide counter once every [`BLOCK`] spans and numbers
//! its spans from it in a thread-local word; serials are never reused,
//! so an id is unique in the process for 2^(64 - slot_bits) spans (2^50
//! with the default callsite capacity).

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

/// Serials a thread takes at a time.
pub(crate) const BLOCK: u64 = 1024;

/// The next block's first serial, for the whole process (blocks start
/// at [`BLOCK`]: serial 0 is never given, so no id is 0).
static NEXT_BLOCK: AtomicU64 = AtomicU64::new(BLOCK);

thread_local! {
    /// This thread's next serial and the end of its block.
    static SERIALS: Cell<(u64, u64)> = const { Cell::new((0, 0)) };
}

/// A serial no other span of the process has.
#[inline]
fn next_serial() -> u64 {
    SERIALS.with(|serials| {
        let (next, end) = serials.get();
        let (next, end) = if next < end {
            (next, end)
        } else {
            // Relaxed: only uniqueness matters, which the RMW gives.
            let start = NEXT_BLOCK.fetch_add(BLOCK, Ordering::Relaxed);
            (start, start + BLOCK)
        };
        serials.set((next + 1, end));
        next
    })
}

/// Where a fork child's serials start: at least this far past its
/// parent's first (a parent never makes 2^32 spans)...
const CHILD_FIRST: u64 = 1 << 32;
/// ...and below this, so that 2^41 more fit under the widest slot field
/// (21 bits, for the largest callsite table).
const CHILD_END: u64 = 1 << 41;

/// In a fork child (from its fork handler, `crate::forks`): numbers its
/// spans from a block of its own, drawn from `value`, rather than from
/// the parent's next, which the parent goes on numbering from.
pub(crate) fn start_afresh(value: u64) {
    let start = child_start(value);
    // Relaxed: the child's only thread runs the handler, before any span.
    NEXT_BLOCK.store(start, Ordering::Relaxed);
    // Const, no destructor: reachable in a fork child.
    SERIALS.with(|serials| serials.set((0, 0)));
}

/// The first serial of a fork child that drew `value`.
fn child_start(value: u64) -> u64 {
    CHILD_FIRST + (value % (CHILD_END - CHILD_FIRST)) / BLOCK * BLOCK
}

/// How a subscriber packs slots into ids.
#[derive(Debug, Clone, Copy)]
pub(crate) struct IdLayout {
    /// Bits of the slot field: enough for `slots + 1` values.
    slot_bits: u32,
}

impl IdLayout {
    /// The layout for a callsite table of `slots` slots (a power of two).
    pub(crate) fn for_slots(slots: usize) -> IdLayout {
        IdLayout {
            slot_bits: slots.trailing_zeros() + 1,
        }
    }

    /// A new span's id, for a callsite in `slot` (`None`: not described).
    #[inline]
    pub(crate) fn new_id(self, slot: Option<u32>) -> u64 {
        let field = slot.map_or(0, |s| u64::from(s) + 1);
        (next_serial() << self.slot_bits) | field
    }

    /// The callsite slot `id` carries, or `None` for a span whose
    /// callsite was not described.
    #[inline]
    pub(crate) fn slot(self, id: u64) -> Option<usize> {
        let field = id & ((1u64 << self.slot_bits) - 1);
        (field as usize).checked_sub(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_their_slot_and_are_never_zero_or_repeated() {
        let layout = IdLayout::for_slots(8);
        let mut seen = std::collections::HashSet::new();
        let ids = if cfg!(miri) { BLOCK + 8 } else { 3 * BLOCK };
        for i in 0..ids {
            let slot = (i % 9 != 8).then_some((i % 8) as u32);
            let id = layout.new_id(slot);
            assert_ne!(id, 0);
            assert_eq!(layout.slot(id), slot.map(|s| s as usize));
            assert!(seen.insert(id >> 4), "serial repeated");
        }
    }

    #[test]
    fn a_fork_child_numbers_from_a_block_of_its_own_under_every_layout() {
        // The widest slot field, for the largest callsite table.
        let widest = IdLayout::for_slots(1 << 20).slot_bits;
        for value in [0, 1, u64::MAX, 0x1234_5678_9abc_def0] {
            let start = child_start(value);
            assert!((CHILD_FIRST..CHILD_END).contains(&start), "{start:#x}");
            assert_eq!(start % BLOCK, 0);
            // 2^40 serials on, the id still keeps every serial bit.
            let last = start + (1 << 40);
            assert_eq!((last << widest) >> widest, last);
        }
    }

    #[test]
    fn threads_never_share_a_serial() {
        let layout = IdLayout::for_slots(4096);
        // Past a block each, so every thread takes a second.
        let each = BLOCK + if cfg!(miri) { 8 } else { BLOCK };
        let ids: Vec<Vec<u64>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| s.spawn(move || (0..each).map(|_| layout.new_id(Some(1))).collect()))
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all: std::collections::HashSet<u64> = ids.iter().flatten().copied().collect();
        assert_eq!(all.len(), 4 * each as usize);
    }
}

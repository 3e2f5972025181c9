//! The writers' hot cache line of a CPU buffer: the (write, last timestamp)
//! state and what writers keep beside it. Storage only: the reserve
//! protocol that changes it is in `write`.

use crate::sync::{AtomicPair, AtomicU64};

/// The writers' hot cache line: one per CPU buffer, so writers on different
/// CPUs share no line on the fast path. In a file ring it lives in the
/// file (its order is the file format's: see `file::layout`).
#[derive(Debug)]
#[repr(C)]
pub(crate) struct WriterHot {
    /// (write offset, last timestamp), changed together by CAS.
    pub state: AtomicPair,
    /// A recent `state`, read without a 128-bit load. Possibly stale or torn;
    /// a stale guess only costs a failed CAS, which returns the true value.
    pub write_hint: AtomicU64,
    pub ts_hint: AtomicU64,
    /// Reservations that ended (committed or dropped); bumped by the
    /// commit, as the kernel counts `entries`, so that a reservation whose
    /// writer died is in no count.
    pub hit: AtomicU64,
    /// The open page as `seq << 16 | phys`, so writers need not divide to
    /// find its slot. A page's physical index never changes while it is
    /// open (swaps need it complete, fixups need it closed), and seq is
    /// never reused, so a matching entry is right whenever it is read.
    pub open_page: AtomicU64,
}

// SAFETY: every field is an integer atomic (the pair a 128-bit one), valid
// for any bits, zero for `new(0)`, without Drop; repr(C) fixes the layout.
// (Under loom the pair is a model built only by `zero()`, for the boxed
// backing.)
unsafe impl crate::page::zeroed::Zeroable for WriterHot {
    fn zero() -> Self {
        WriterHot {
            state: AtomicPair::new(0, 0),
            write_hint: AtomicU64::new(0),
            ts_hint: AtomicU64::new(0),
            hit: AtomicU64::new(0),
            open_page: AtomicU64::new(0),
        }
    }
}

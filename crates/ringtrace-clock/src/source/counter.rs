//! `counter`: an atomic increment, the kernel's `trace_clock_counter()`.

use crate::{ClockInfo, Guarantee};
use crossbeam_utils::CachePadded;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// A strictly increasing event counter shared by this value and its clones.
/// Its ticks are not time: it orders events exactly across threads, and
/// nothing more.
#[derive(Debug, Clone, Default)]
pub struct Counter {
    next: Arc<CachePadded<AtomicU64>>,
}

impl Counter {
    /// A counter whose first read returns 1.
    pub fn new() -> Counter {
        Counter::default()
    }
}

impl crate::Clock for Counter {
    #[inline]
    fn read(&self) -> u64 {
        // Relaxed: each fetch_add returns a distinct value, and reads ordered
        // by happens-before see increasing ones by coherence of this single
        // location. No other memory is published through it.
        self.next.fetch_add(1, Ordering::Relaxed) + 1
    }

    fn info(&self) -> ClockInfo {
        ClockInfo {
            name: "counter".to_owned(),
            frequency_hz: None,
            ticks_are_ns: false,
            guarantee: Guarantee::Global,
            precision_ns: None,
            conversion: None,
        }
    }
}

//! Measuring what one clock read costs.

use crate::calibrate::monotonic_raw_ns;
use crate::Clock;
use std::hint::black_box;

/// The cost of one read, from batches of back-to-back reads.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReadCost {
    /// Median over batches of (batch time / reads per batch), in ns.
    pub median_ns: f64,
    /// The cheapest batch, per read, in ns.
    pub min_ns: f64,
    /// How many batches were timed.
    pub batches: usize,
    /// Reads in each batch.
    pub reads_per_batch: usize,
}

/// Times `batches` batches of `reads_per_batch` reads of `clock`.
///
/// Each batch is timed with `CLOCK_MONOTONIC_RAW`; the two reference reads
/// are spread over the whole batch, so with 256 reads per batch their cost is
/// well under a tenth of a nanosecond per read. The median is robust to
/// batches that were preempted or interrupted.
///
/// ```
/// use ringtrace_clock::{measure_read_cost, Mono};
/// let cost = measure_read_cost(&Mono::new(), 50, 64);
/// assert!(cost.median_ns > 0.0 && cost.min_ns <= cost.median_ns);
/// ```
pub fn measure_read_cost<C: Clock + ?Sized>(
    clock: &C,
    batches: usize,
    reads_per_batch: usize,
) -> ReadCost {
    let batches = batches.max(1);
    let reads_per_batch = reads_per_batch.max(1);
    // Warm up: fault in the vDSO page, thread locals, caches.
    for _ in 0..reads_per_batch {
        black_box(clock.read());
    }
    let mut per_read: Vec<f64> = (0..batches)
        .map(|_| {
            let start = monotonic_raw_ns();
            for _ in 0..reads_per_batch {
                black_box(clock.read());
            }
            let end = monotonic_raw_ns();
            end.saturating_sub(start) as f64 / reads_per_batch as f64
        })
        .collect();
    per_read.sort_by(f64::total_cmp);
    ReadCost {
        median_ns: per_read[per_read.len() / 2],
        min_ns: per_read[0],
        batches,
        reads_per_batch,
    }
}

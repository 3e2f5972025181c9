//! Measuring what one clock read costs.

use crate::calibrate::monotonic_raw_ns;
use crate::{Clock, ClockError};
use std::hint::black_box;

/// The most batches [`measure_read_cost`] takes: a million medians is far
/// past any use, and bounds the memory the per-batch results need.
pub const MAX_BATCHES: usize = 1 << 20;
/// The most reads in one batch [`measure_read_cost`] takes: a million
/// reads of the slowest clock is well under a second.
pub const MAX_READS_PER_BATCH: usize = 1 << 20;

/// The cost of one read, from batches of back-to-back reads.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
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
/// Zero batches or reads count as one. More than [`MAX_BATCHES`] batches or
/// [`MAX_READS_PER_BATCH`] reads is refused with
/// [`ClockError::TooManySamples`].
///
/// ```
/// use ringtrace_clock::{measure_read_cost, Mono};
/// let cost = measure_read_cost(&Mono::new(), 50, 64)?;
/// assert!(cost.median_ns > 0.0 && cost.min_ns <= cost.median_ns);
/// assert!(measure_read_cost(&Mono::new(), usize::MAX, 64).is_err());
/// # Ok::<(), ringtrace_clock::ClockError>(())
/// ```
pub fn measure_read_cost<C: Clock + ?Sized>(
    clock: &C,
    batches: usize,
    reads_per_batch: usize,
) -> Result<ReadCost, ClockError> {
    for (what, given, max) in [
        ("batches", batches, MAX_BATCHES),
        ("reads_per_batch", reads_per_batch, MAX_READS_PER_BATCH),
    ] {
        if given > max {
            return Err(ClockError::TooManySamples { what, given, max });
        }
    }
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
    Ok(ReadCost {
        median_ns: per_read[per_read.len() / 2],
        min_ns: per_read[0],
        batches,
        reads_per_batch,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Counter;

    #[test]
    fn too_many_batches_or_reads_is_an_error_naming_the_parameter_not_a_panic() {
        let clock = Counter::new();
        let err = measure_read_cost(&clock, usize::MAX, 1).unwrap_err();
        assert_eq!(
            err,
            ClockError::TooManySamples {
                what: "batches",
                given: usize::MAX,
                max: MAX_BATCHES
            }
        );
        let err = measure_read_cost(&clock, 1, MAX_READS_PER_BATCH + 1).unwrap_err();
        assert!(err.to_string().contains("reads_per_batch"), "{err}");
    }
}

//! The timed loops of `ringtrace pairs`, and what is measured about the
//! timer before them: its step, its overhead and the batch size K.
//!
//! A strategy, a mask and a pair are types and a closure here, matched
//! once outside the timed loop, so each combination compiles to its own
//! loop with the pair inlined in it: no dispatch inside a timed sample.

use super::Pair;
use ringtrace_clock::emulation::IrqBackend;
use ringtrace_clock::Clock;
use ringtrace_tracepoint::preemptirq::{
    self, Baseline, CallAlways, EarlyKey, Hard, IrqMask, Soft, Strategy, StrategyKind,
};
use ringtrace_tracepoint::SourceLocation;
use std::hint::black_box;
use std::panic::Location;

/// A batch spans at least this many timer steps.
pub(super) const TARGET_STEPS: u64 = 50;

/// The largest batch: 65536 pairs, some tens of microseconds for a soft
/// pair. A timer so coarse that this is not enough gets a shorter span,
/// which the result reports (`batch_span_steps`).
pub const MAX_BATCH: usize = 1 << 16;

static IP: SourceLocation = SourceLocation {
    file: "ringtrace pairs",
    line: 0,
    column: 0,
};

/// How many pairs one sample times.
#[derive(Debug, Clone, Copy)]
pub(super) enum Per {
    /// One pair between two reads (the patch's method).
    Single,
    /// K pairs back to back between two reads.
    Batch(usize),
}

/// Times `n` samples of `pair` under `strategy` and mask `irq` into `out`
/// (cleared first), in ticks of `clock` per sample.
pub(super) fn sample<C: Clock>(
    clock: &C,
    strategy: StrategyKind,
    irq: IrqBackend,
    pair: Pair,
    per: Per,
    n: usize,
    out: &mut Vec<u64>,
) {
    match (strategy, irq) {
        (StrategyKind::Baseline, IrqBackend::Soft) => {
            by_pair::<Baseline, Soft, C>(clock, pair, per, n, out)
        }
        (StrategyKind::Baseline, IrqBackend::Hard) => {
            by_pair::<Baseline, Hard, C>(clock, pair, per, n, out)
        }
        (StrategyKind::CallAlways, IrqBackend::Soft) => {
            by_pair::<CallAlways, Soft, C>(clock, pair, per, n, out)
        }
        (StrategyKind::CallAlways, IrqBackend::Hard) => {
            by_pair::<CallAlways, Hard, C>(clock, pair, per, n, out)
        }
        (StrategyKind::EarlyKey, IrqBackend::Soft) => {
            by_pair::<EarlyKey, Soft, C>(clock, pair, per, n, out)
        }
        (StrategyKind::EarlyKey, IrqBackend::Hard) => {
            by_pair::<EarlyKey, Hard, C>(clock, pair, per, n, out)
        }
    }
}

fn by_pair<S: Strategy, M: IrqMask, C: Clock>(
    clock: &C,
    pair: Pair,
    per: Per,
    n: usize,
    out: &mut Vec<u64>,
) {
    let parent = Location::caller();
    match pair {
        Pair::Irq => timed(clock, per, n, out, || {
            preemptirq::local_irq_disable_at::<S, M>(&IP, parent);
            preemptirq::local_irq_enable_at::<S, M>(&IP, parent);
        }),
        Pair::IrqSave => timed(clock, per, n, out, || {
            let f = preemptirq::local_irq_save_at::<S, M>(&IP, parent);
            preemptirq::local_irq_restore_at::<S, M>(f, &IP, parent);
        }),
        Pair::Preempt => timed(clock, per, n, out, || {
            preemptirq::preempt_disable_at::<S>(&IP, parent);
            preemptirq::preempt_enable_at::<S>(&IP, parent);
        }),
    }
}

/// The timed loop, one copy per (strategy, mask, pair, clock): out of line
/// so that the layout of one combination's loop does not depend on the
/// others', with the pair inlined into it.
#[inline(never)]
fn timed<C: Clock, F: Fn()>(clock: &C, per: Per, n: usize, out: &mut Vec<u64>, pair: F) {
    out.clear();
    match per {
        Per::Single => {
            for _ in 0..n {
                let t0 = clock.read();
                pair();
                out.push(clock.read().wrapping_sub(t0));
            }
        }
        Per::Batch(k) => {
            for _ in 0..n {
                let t0 = clock.read();
                // black_box: the compiler may not fold the batch into a
                // count it knows.
                for _ in 0..black_box(k) {
                    pair();
                }
                out.push(clock.read().wrapping_sub(t0));
            }
        }
    }
}

/// Consecutive reads looked at for the step and the overhead.
const TIMER_READS: usize = 100_001;

/// The timer's step, in ticks: the smallest nonzero difference between two
/// consecutive reads. It is the larger of the counter's tick and the time a
/// read takes, so it is what one sample can resolve.
pub(super) fn timer_step<C: Clock>(clock: &C) -> u64 {
    let mut step = u64::MAX;
    let mut last = clock.read();
    for _ in 0..TIMER_READS {
        let now = black_box(clock.read());
        // A step back (another CPU's counter after a migration) is no step.
        if now > last {
            step = step.min(now - last);
        }
        last = now;
    }
    if step == u64::MAX {
        1
    } else {
        step
    }
}

/// The timer's own cost, in ticks: the median of back-to-back reads. It is
/// not subtracted from anything; it says how much of a sample is timer.
pub(super) fn timer_overhead<C: Clock>(clock: &C) -> u64 {
    let mut s: Vec<u64> = (0..TIMER_READS)
        .map(|_| {
            let t0 = clock.read();
            black_box(clock.read()).wrapping_sub(t0)
        })
        .collect();
    s.sort_unstable();
    s[s.len() / 2]
}

/// Blocks timed per batch size tried: the fastest of these decides.
const CALIBRATION_BLOCKS: usize = 15;

/// Before calibrating a strategy, this many blocks of this many pairs.
const WARM_UP_BLOCKS: usize = 32;
const WARM_UP_BATCH: usize = 1024;

/// The batch size K for `pair`: the smallest power of two for which the
/// fastest of a few samples of every strategy, after a warm-up, spans at
/// least [`TARGET_STEPS`] steps and a quarter, at most [`MAX_BATCH`]. The
/// fastest rather than the median, so that a cold block or a slow moment
/// does not make K too small for the warm run (the run checks the span
/// again). Every strategy of a pair shares its K, so that they carry the
/// same share of timer and loop.
pub(super) fn batch_size<C: Clock>(clock: &C, irq: IrqBackend, pair: Pair, step: u64) -> usize {
    // A quarter more than the target, for a run that goes faster than the
    // calibration did.
    let target = step.saturating_mul(TARGET_STEPS + TARGET_STEPS / 4);
    let mut blocks = Vec::with_capacity(WARM_UP_BLOCKS);
    StrategyKind::ALL
        .into_iter()
        .map(|strategy| {
            // Warm the code, the data and the CPU's clock speed first.
            sample(
                clock,
                strategy,
                irq,
                pair,
                Per::Batch(WARM_UP_BATCH),
                WARM_UP_BLOCKS,
                &mut blocks,
            );
            let mut k = 1;
            while k < MAX_BATCH {
                sample(
                    clock,
                    strategy,
                    irq,
                    pair,
                    Per::Batch(k),
                    CALIBRATION_BLOCKS,
                    &mut blocks,
                );
                if blocks.iter().min().is_some_and(|&b| b >= target) {
                    break;
                }
                k *= 2;
            }
            k
        })
        .max()
        .unwrap_or(1)
}

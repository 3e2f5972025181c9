//! The preemptirq patch's comparison as ratios of paired samples taken in one run: per
//! irq, irq save/restore, preempt and bh pair with the soft backend and
//! every tracepoint off, `early-key` and `call-always` against `baseline`.
//!
//! `cargo bench -p ringtrace-benches --bench preemptirq_ratio`, and with
//! `--features static-keys` for patched key checks.
//!
//! A soft pair costs well under a nanosecond, so criterion's two means,
//! taken seconds apart on a shared machine, differ by more than the 5 %
//! this is about. Here each round times a block of pairs under each
//! strategy back to back, in rotating order, and the ratio is taken within
//! the round; the median over rounds is the figure docs/results.md quotes,
//! with its 10th and 90th percentiles.

use ringtrace_benches::pin;
use ringtrace_tracepoint::preemptirq::{self, Baseline, CallAlways, EarlyKey, Soft, Strategy};
use ringtrace_tracepoint::SourceLocation;
use std::hint::black_box;
use std::panic::Location;
use std::time::Instant;

static IP: SourceLocation = SourceLocation {
    file: "benches/preemptirq_ratio.rs",
    line: 1,
    column: 1,
};

/// Pairs per timed block: some tens of microseconds.
const PAIRS: u64 = 20_000;
/// Rounds: each times one block per strategy.
const ROUNDS: usize = 401;

/// Which pair a block runs.
#[derive(Clone, Copy)]
enum Pair {
    Irq,
    IrqSave,
    Preempt,
    Bh,
}

impl Pair {
    const ALL: [Pair; 4] = [Pair::Irq, Pair::IrqSave, Pair::Preempt, Pair::Bh];

    fn name(self) -> &'static str {
        match self {
            Pair::Irq => "irq",
            Pair::IrqSave => "irq_save",
            Pair::Preempt => "preempt",
            Pair::Bh => "bh",
        }
    }
}

/// Nanoseconds per pair over one block of `PAIRS` pairs under `S`.
#[inline(never)]
fn block<S: Strategy>(pair: Pair) -> f64 {
    let parent = Location::caller();
    let t = Instant::now();
    match pair {
        Pair::Irq => {
            for _ in 0..black_box(PAIRS) {
                preemptirq::local_irq_disable_at::<S, Soft>(&IP, parent);
                preemptirq::local_irq_enable_at::<S, Soft>(&IP, parent);
            }
        }
        Pair::IrqSave => {
            for _ in 0..black_box(PAIRS) {
                let f = preemptirq::local_irq_save_at::<S, Soft>(&IP, parent);
                preemptirq::local_irq_restore_at::<S, Soft>(f, &IP, parent);
            }
        }
        Pair::Preempt => {
            for _ in 0..black_box(PAIRS) {
                preemptirq::preempt_disable_at::<S>(&IP, parent);
                preemptirq::preempt_enable_at::<S>(&IP, parent);
            }
        }
        Pair::Bh => {
            for _ in 0..black_box(PAIRS) {
                preemptirq::local_bh_disable_at::<S, Soft>(&IP, parent);
                preemptirq::local_bh_enable_at::<S, Soft>(&IP, parent);
            }
        }
    }
    t.elapsed().as_nanos() as f64 / PAIRS as f64
}

/// The 10th, 50th and 90th percentiles of `values`.
fn percentiles(mut values: Vec<f64>) -> [f64; 3] {
    values.sort_by(f64::total_cmp);
    let at = |q: f64| values[((values.len() - 1) as f64 * q).round() as usize];
    [at(0.1), at(0.5), at(0.9)]
}

fn main() {
    // Every tracepoint starts off; nothing here turns one on.
    let cpu = ringtrace_ring::cpu::current_cpu();
    pin(cpu);
    let keys = if cfg!(feature = "static-keys") {
        "patched"
    } else {
        "atomic"
    };
    println!("soft backend, keys off ({keys} keys), {ROUNDS} rounds of {PAIRS} pairs, CPU {cpu}");
    println!(
        "{:<9} {:>9} {:>9} {:>9}   {:<22} {:<22}",
        "pair", "base ns", "early ns", "call ns", "early/base p10 p50 p90", "call/base p10 p50 p90"
    );
    for pair in Pair::ALL {
        let (mut base, mut early, mut call) = (Vec::new(), Vec::new(), Vec::new());
        let (mut early_ratio, mut call_ratio) = (Vec::new(), Vec::new());
        for round in 0..ROUNDS {
            // Rotate the order so no strategy always runs first or last.
            let (b, e, c) = match round % 3 {
                0 => {
                    let b = block::<Baseline>(pair);
                    let e = block::<EarlyKey>(pair);
                    (b, e, block::<CallAlways>(pair))
                }
                1 => {
                    let e = block::<EarlyKey>(pair);
                    let c = block::<CallAlways>(pair);
                    (block::<Baseline>(pair), e, c)
                }
                _ => {
                    let c = block::<CallAlways>(pair);
                    let b = block::<Baseline>(pair);
                    (b, block::<EarlyKey>(pair), c)
                }
            };
            base.push(b);
            early.push(e);
            call.push(c);
            early_ratio.push(e / b);
            call_ratio.push(c / b);
        }
        let [_, b50, _] = percentiles(base);
        let [_, e50, _] = percentiles(early);
        let [_, c50, _] = percentiles(call);
        let [e10, er50, e90] = percentiles(early_ratio);
        let [c10, cr50, c90] = percentiles(call_ratio);
        println!(
            "{:<9} {b50:>9.3} {e50:>9.3} {c50:>9.3}   {e10:>6.2} {er50:>6.2} {e90:>6.2}   {c10:>7.2} {cr50:>6.2} {c90:>6.2}",
            pair.name()
        );
    }
    println!("bound: early/base p50 <= 1.05 for the irq and preempt pairs");
}

//! "tracing/preemptirq: Optimize disabled tracepoint overhead" in one run:
//! an irq disable/enable pair, an irq save/restore
//! pair, a preempt disable/enable pair and a bh disable/enable pair, each
//! under the three instrumentation strategies with every tracepoint off.
//!
//! `cargo bench -p ringtrace-benches --bench preemptirq`, and with
//! `--features static-keys` for patched key checks.

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringtrace_tracepoint::preemptirq::{
    self, Baseline, CallAlways, EarlyKey, Hard, IrqMask, Soft, Strategy,
};
use ringtrace_tracepoint::SourceLocation;
use std::panic::Location;

static IP: SourceLocation = SourceLocation {
    file: "benches/preemptirq.rs",
    line: 1,
    column: 1,
};

/// Pairs per measured iteration. One: unrolled runs of pairs chain each
/// pair's per-thread count through memory and measure store-forwarding
/// latency rather than the pair (seen at 16).
pub const PAIRS: usize = 1;

fn pairs<S: Strategy, M: IrqMask>(c: &mut Criterion) {
    let parent = Location::caller();
    let mut group = c.benchmark_group(format!("pair/{}", M::NAME));
    group.bench_function(format!("irq/{}", S::NAME), |b| {
        b.iter(|| {
            for _ in 0..PAIRS {
                preemptirq::local_irq_disable_at::<S, M>(&IP, parent);
                preemptirq::local_irq_enable_at::<S, M>(&IP, parent);
            }
        })
    });
    group.bench_function(format!("irq_save/{}", S::NAME), |b| {
        b.iter(|| {
            for _ in 0..PAIRS {
                let f = preemptirq::local_irq_save_at::<S, M>(&IP, parent);
                preemptirq::local_irq_restore_at::<S, M>(f, &IP, parent);
            }
        })
    });
    group.bench_function(format!("preempt/{}", S::NAME), |b| {
        b.iter(|| {
            for _ in 0..PAIRS {
                preemptirq::preempt_disable_at::<S>(&IP, parent);
                preemptirq::preempt_enable_at::<S>(&IP, parent);
            }
        })
    });
    group.bench_function(format!("bh/{}", S::NAME), |b| {
        b.iter(|| {
            for _ in 0..PAIRS {
                preemptirq::local_bh_disable_at::<S, M>(&IP, parent);
                preemptirq::local_bh_enable_at::<S, M>(&IP, parent);
            }
        })
    });
    group.finish();
}

fn soft(c: &mut Criterion) {
    // Every tracepoint starts off; nothing here turns one on.
    pairs::<Baseline, Soft>(c);
    pairs::<CallAlways, Soft>(c);
    pairs::<EarlyKey, Soft>(c);
}

fn hard(c: &mut Criterion) {
    pairs::<Baseline, Hard>(c);
    pairs::<CallAlways, Hard>(c);
    pairs::<EarlyKey, Hard>(c);
}

criterion_group!(benches, soft, hard);
criterion_main!(benches);

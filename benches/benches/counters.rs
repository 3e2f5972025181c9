//! Seeds 002 and 003: a per-CPU event counter increment, plain and with
//! DEBUG_PREEMPT's check (in and out of a preempt-disabled section).
//!
//! `cargo bench -p ringtrace-benches --bench counters`

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringtrace_clock::emulation::preempt;
use ringtrace_tracepoint::EventCounters;
use std::hint::black_box;

fn counters(c: &mut Criterion) {
    let counters = EventCounters::new(["a", "b", "c", "d"]);
    let mut group = c.benchmark_group("counter");
    group.bench_function("inc", |b| b.iter(|| counters.inc(black_box(1))));
    preempt::preempt_disable_notrace();
    group.bench_function("inc_checked/preempt_off", |b| {
        b.iter(|| counters.inc_checked(black_box(1)))
    });
    preempt::preempt_enable_notrace();
    group.bench_function("inc_checked/preemptible", |b| {
        b.iter(|| counters.inc_checked(black_box(1)))
    });
    group.finish();
}

criterion_group!(benches, counters);
criterion_main!(benches);

//! One clock read under each source and protection.
//!
//! `cargo bench -p ringtrace-benches --bench clock_read`

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringtrace_clock::{Clock, ClockSpec};
use std::hint::black_box;

fn clock_read(c: &mut Criterion) {
    let mut group = c.benchmark_group("clock_read");
    for spec in ClockSpec::all() {
        let Ok(clock) = spec.build() else {
            continue; // unavailable here; the clocks example says why
        };
        group.bench_function(spec.to_string(), |b| b.iter(|| black_box(clock.read())));
    }
    group.finish();
}

criterion_group!(benches, clock_read);
criterion_main!(benches);

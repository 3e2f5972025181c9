//! A tracepoint that is off, under each instrumentation strategy: nothing
//! at all (baseline), an out-of-line call that checks the key inside
//! (call-always), and the key checked inline before any call (early-key).
//!
//! `cargo bench -p ringtrace-benches --bench tracepoint_off`

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringtrace_tracepoint::{trace, tracepoint};
use std::hint::black_box;

tracepoint! {
    /// The benchmark's tracepoint; never enabled here.
    pub fn bench_site(value: u64) = "value={}";
}

/// The call-always shape: always called, checks the key inside.
#[inline(never)]
fn probe(value: u64) {
    if bench_site::is_enabled() {
        bench_site::emit(value);
    }
}

fn tracepoint_off(c: &mut Criterion) {
    let mut group = c.benchmark_group("tracepoint_off");
    group.bench_function("baseline", |b| b.iter(|| black_box(black_box(7u64) + 1)));
    group.bench_function("call-always", |b| {
        b.iter(|| {
            let v = black_box(7u64) + 1;
            probe(v);
            v
        })
    });
    group.bench_function("early-key", |b| {
        b.iter(|| {
            let v = black_box(7u64) + 1;
            trace!(bench_site(v));
            v
        })
    });
    group.finish();
}

criterion_group!(benches, tracepoint_off);
criterion_main!(benches);

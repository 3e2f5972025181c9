//! A `tracing` event through ringtrace's layer, against tracing-subscriber's
//! fmt layer and against no subscriber; and ringtrace's local spans
//! against fastrace's. All in one run.
//!
//! `cargo bench -p ringtrace-benches --bench tracing_layer`
//!
//! - `event/ringtrace_layer`: `info!(a, b, "event")` (two integer fields
//!   and a literal message) through `RingLayer` on a `tsc` ring (`mono`
//!   where there is no usable TSC), overwrite mode, never full.
//! - `event/ringtrace_layer_mono`: the same on a `mono` ring (the
//!   tracer's default clock: a vDSO `clock_gettime` per record).
//! - `event/fmt_layer_sink`: the same event through `fmt::layer()`
//!   writing to `io::sink()` (its default format: time, level, target,
//!   fields).
//! - `event/no_subscriber`: the same event with the no-op subscriber, the
//!   floor (the callsite's interest check and the dispatcher lookup).
//! - `event/ring_write_same_bytes`: the ring alone writing a payload as
//!   long as the layer's record (42 bytes), `tsc`: what of the layer's
//!   time is the ring's.
//! - `local_span/ringtrace`: `local_span!` entered and dropped (a clock
//!   read, then one ring record at its end, `tsc`).
//! - `local_span/fastrace`: `LocalSpan::enter_with_local_parent` entered
//!   and dropped, under a root span's local parent renewed every 1000
//!   spans outside the timing (fastrace collects the spans when the root's
//!   guard drops), a reporter that discards them.
//!
//! Each event bench runs inside `tracing::subscriber::with_default`, so
//! the three pay the same dispatcher lookup.

// criterion_group! generates an undocumented pub fn.
#![allow(missing_docs)]

use criterion::{criterion_group, criterion_main, Criterion};
use ringtrace_tracing::{local_span, set_local_span_ring, RingLayer};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt;

use ringtrace_benches::named_clock_ring as ring;

#[inline(never)]
fn event(a: u64, b: u64) {
    tracing::info!(a, b, "event");
}

fn events(c: &mut Criterion) {
    let mut group = c.benchmark_group("event");
    let r = ring("tsc");
    for (name, ring) in [
        ("ringtrace_layer", r.clone()),
        ("ringtrace_layer_mono", ring("mono")),
    ] {
        let layer = RingLayer::new(ring);
        tracing::subscriber::with_default(
            tracing_subscriber::registry().with(layer.clone()),
            || {
                group.bench_function(name, |b| {
                    let mut i = 0u64;
                    b.iter(|| {
                        i += 1;
                        event(black_box(i), black_box(2));
                    })
                });
            },
        );
        assert_eq!(layer.stats().dropped, 0, "the ring refused records");
    }
    let fmt = tracing_subscriber::fmt::layer().with_writer(std::io::sink);
    tracing::subscriber::with_default(tracing_subscriber::registry().with(fmt), || {
        group.bench_function("fmt_layer_sink", |b| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                event(black_box(i), black_box(2));
            })
        });
    });
    tracing::subscriber::with_default(tracing::subscriber::NoSubscriber::default(), || {
        group.bench_function("no_subscriber", |b| {
            let mut i = 0u64;
            b.iter(|| {
                i += 1;
                event(black_box(i), black_box(2));
            })
        });
    });
    let payload = [0x5Au8; 42];
    group.bench_function("ring_write_same_bytes", |b| {
        b.iter(|| r.write(black_box(&payload)))
    });
    group.finish();
}

/// A fastrace reporter that drops what it is given.
struct Discard;

impl fastrace::collector::Reporter for Discard {
    fn report(&mut self, spans: Vec<fastrace::collector::SpanRecord>) {
        black_box(spans);
    }
}

fn local_spans(c: &mut Criterion) {
    let mut group = c.benchmark_group("local_span");
    set_local_span_ring(ring("tsc")).unwrap();
    group.bench_function("ringtrace", |b| {
        b.iter(|| {
            let _span = local_span!("work");
        })
    });
    fastrace::set_reporter(Discard, fastrace::collector::Config::default());
    group.bench_function("fastrace", |b| {
        b.iter_custom(|iters| {
            let mut timed = Duration::ZERO;
            let mut left = iters;
            while left > 0 {
                let n = left.min(1000);
                let root = fastrace::Span::root("root", fastrace::collector::SpanContext::random());
                let guard = root.set_local_parent();
                let start = Instant::now();
                for _ in 0..n {
                    let _span = fastrace::local::LocalSpan::enter_with_local_parent("work");
                }
                timed += start.elapsed();
                drop(guard);
                drop(root);
                left -= n;
            }
            timed
        })
    });
    group.finish();
    fastrace::flush();
}

criterion_group!(benches, events, local_spans);
criterion_main!(benches);

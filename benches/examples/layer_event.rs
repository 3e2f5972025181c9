//! One `tracing` event, `info!(a, b, "event")`, through ringtrace's layer,
//! a given number of times: a program for callgrind or `perf stat` to
//! count what an event costs, instruction by instruction.
//!
//! ```text
//! cargo build --release -p ringtrace-benches --example layer_event
//! valgrind --tool=callgrind --toggle-collect='layer_event::event' \
//!     target/release/examples/layer_event 100000
//! ```
//!
//! On a VM without a PMU, `perf` still samples by its software clock,
//! which shows where the time goes, not only the instructions:
//!
//! ```text
//! perf record -F 20000 -e cpu-clock -- target/release/examples/layer_event 5000000
//! perf report --no-children --sort sym
//! ```
//!
//! CLOCK (environment) picks the ring's clock (`mono` by default: the
//! tracer's default); NONE=1 runs with no subscriber (the floor); WHAT
//! picks what is timed: `event` (the default), `span` (a span entered and
//! exited: `--toggle-collect='layer_event::enter_exit'`), `nomsg` (the
//! event without its message), `six` (the event with six fields of every
//! kind, one a `Debug` value), `instrument` (an `#[instrument]`ed call)
//! or `request` (the spans bench's request: two spans made, entered,
//! exited and closed, one event inside them:
//! `--toggle-collect='layer_event::request'`). FRONT=subscriber records
//! through `RingSubscriber` instead of the layer on the registry.

use ringtrace_ring::{RingBuffer, RingConfig};
use std::sync::Arc;
use tracing_subscriber::layer::SubscriberExt;

#[inline(never)]
fn event(a: u64, b: u64) {
    tracing::info!(a, b, "event");
}

/// The event without its message (what=nomsg).
#[inline(never)]
fn event_nomsg(a: u64, b: u64) {
    tracing::info!(a, b);
}

/// A span entered and exited (what=span).
#[inline(never)]
fn enter_exit(span: &tracing::Span) {
    let _entered = span.enter();
}

/// The backends bench's event with six fields (what=six).
#[inline(never)]
fn event_six(a: u64, b: u64) {
    tracing::info!(a, b, c = 1.5f64, d = true, e = "name", f = ?Some(3), "event");
}

/// The spans bench's request (what=request): 2 spans, 1 event, 9 records.
#[inline(never)]
fn request(i: u64) {
    let request = tracing::info_span!("request", id = i, status = 200u64);
    let _request = request.enter();
    let db = tracing::info_span!("db", rows = i);
    let _db = db.enter();
    tracing::info!(a = i, b = 2u64, "queried");
}

/// An `#[instrument]`ed call (what=instrument): a span made, entered,
/// exited and closed.
#[inline(never)]
#[tracing::instrument(level = "info")]
fn instrumented(a: u64) -> u64 {
    a + 1
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let clock = std::env::var("CLOCK").unwrap_or_else(|_| "mono".into());
    let clock = clock
        .parse::<ringtrace_clock::ClockSpec>()
        .expect("a clock name")
        .build()
        .expect("a clock this machine has");
    let ring =
        Arc::new(RingBuffer::new(RingConfig::default().per_cpu_bytes(4 << 20), clock).unwrap());
    let subscriber = ringtrace_tracing::RingSubscriber::new(ring.clone());
    let layer = ringtrace_tracing::RingLayer::new(ring);
    let what = std::env::var("WHAT").unwrap_or_else(|_| "event".into());
    let run = || {
        let span = tracing::info_span!("work", id = 7u64);
        let start = std::time::Instant::now();
        match what.as_str() {
            "span" => (0..n).for_each(|_| enter_exit(&span)),
            "nomsg" => (0..n).for_each(|i| event_nomsg(std::hint::black_box(i), 2)),
            "six" => (0..n).for_each(|i| event_six(std::hint::black_box(i), 2)),
            "request" => (0..n).for_each(|i| request(std::hint::black_box(i))),
            "instrument" => (0..n).for_each(|i| {
                std::hint::black_box(instrumented(std::hint::black_box(i)));
            }),
            _ => (0..n).for_each(|i| event(std::hint::black_box(i), 2)),
        }
        start.elapsed()
    };
    let took = if std::env::var_os("NONE").is_some() {
        run()
    } else if std::env::var("FRONT").as_deref() == Ok("subscriber") {
        tracing::subscriber::with_default(subscriber, run)
    } else {
        tracing::subscriber::with_default(tracing_subscriber::registry().with(layer.clone()), run)
    };
    println!(
        "{n} x {what}, {:.1} ns each, {:?}",
        took.as_nanos() as f64 / n as f64,
        layer.stats()
    );
}
